/*
 * modelfile.c -- em_ml_model_save and em_ml_model_load: the text form of
 * a model (see ember_ml.h for the layout).
 *
 * Version 2 holds binary and multinomial models alike and ends with the
 * CRC-32 (zlib's) of every byte before its last line, so a file changed
 * on disk -- a flipped digit still parses as a number -- is caught, not
 * loaded as another model.  Version 1, the binary models saved before
 * (no family, no classes, no checksum), still loads.  A model is written
 * whole into memory, then to PATH.tmp, then renamed over PATH, so a
 * reader never sees half a file.
 *
 * The parser works on the file's bytes in memory, line by line, and
 * checks a size before allocating it: the weights a header announces must
 * fit in the bytes left (each takes at least two, a digit and a newline),
 * so a corrupt count cannot make it allocate more than the file's size
 * warrants.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "err.h"
#include "modelfile.h"

#define MAX_COLS (1LL << 40)

static uint32_t crc_of(const char *p, size_t n) {
    uLong crc = crc32(0L, Z_NULL, 0);
    while (n) { /* crc32 takes a uInt length */
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        crc = crc32(crc, (const Bytef *)p, k);
        p += k;
        n -= k;
    }
    return (uint32_t)crc;
}

static int multinomial(const em_ml_model *m) { return m->classes >= 2 && m->intercepts; }

int em_ml_model_save(const em_ml_model *m, const char *path) {
    if (!m || !path || m->cols < 0 || (!m->w && m->cols) || (m->classes && !multinomial(m)) ||
        m->classes > EM_ML_MAX_CLASSES)
        return em__seterr(EM_EINVAL, "em_ml_model_save: bad argument");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return em__seterr(EM_ENOMEM, "em_ml_model_save: out of memory");
    int K = multinomial(m) ? m->classes : 2, rows = multinomial(m) ? K : 1;
    fprintf(f, "ember-logreg 2\nfamily %s\nclasses %d\ncols %lld\n", multinomial(m) ? "multinomial" : "binomial", K,
            (long long)m->cols);
    for (int k = 0; k < rows; k++) fprintf(f, "intercept %.17g\n", multinomial(m) ? m->intercepts[k] : m->b);
    for (int64_t j = 0; j < (int64_t)rows * m->cols; j++) fprintf(f, "%.17g\n", m->w[j]);
    if (fflush(f) || ferror(f)) {
        fclose(f);
        free(text);
        return em__seterr(EM_ENOMEM, "em_ml_model_save: out of memory");
    }
    fprintf(f, "crc32 %08x\n", (unsigned)crc_of(text, len));
    int bad = ferror(f);
    if (fclose(f) || bad) {
        free(text);
        return em__seterr(EM_ENOMEM, "em_ml_model_save: out of memory");
    }
    size_t plen = strlen(path) + 5;
    char *tmp = malloc(plen);
    if (!tmp) {
        free(text);
        return em__seterr(EM_ENOMEM, "em_ml_model_save: out of memory");
    }
    snprintf(tmp, plen, "%s.tmp", path);
    int rc = 0;
    FILE *o = fopen(tmp, "w");
    if (!o) {
        rc = em__seterr(errno == ENOENT ? EM_ENOENT : EM_EIO, "%s: %s", tmp, strerror(errno));
    } else {
        size_t wrote = fwrite(text, 1, len, o);
        int werr = ferror(o) || wrote != len;
        if (fclose(o) || werr)
            rc = em__seterr(EM_EIO, "%s: write failed: %s", tmp, strerror(errno));
        else if (rename(tmp, path))
            rc = em__seterr(EM_EIO, "%s: cannot rename %s: %s", path, tmp, strerror(errno));
        if (rc) remove(tmp);
    }
    free(tmp);
    free(text);
    return rc;
}

/* ------------------------------------------------------------ parsing */

typedef struct cursor {
    const char *p, *end;
    const char *line;     /* the current line, NUL-terminated copy */
    char *buf;
    size_t cap;
    int64_t lineno;
    const char *line_start; /* where the current line starts in the file */
} cursor;

/* The next line without its terminator ("\n" or "\r\n"): 1, or 0 at the
 * end; -1 when out of memory.  A NUL byte inside a line is kept, so such
 * a line fails to parse. */
static int next_line(cursor *c) {
    if (c->p >= c->end) return 0;
    const char *s = c->p, *nl = memchr(s, '\n', (size_t)(c->end - s));
    const char *e = nl ? nl : c->end;
    c->p = nl ? nl + 1 : c->end;
    c->line_start = s;
    while (e > s && e[-1] == '\r') e--;
    size_t n = (size_t)(e - s);
    if (n + 1 > c->cap) {
        char *b = realloc(c->buf, n + 1);
        if (!b) return -1;
        c->buf = b;
        c->cap = n + 1;
    }
    memcpy(c->buf, s, n);
    c->buf[n] = 0;
    if (memchr(c->buf, 0, n)) c->buf[0] = 1; /* an embedded NUL: make the line unparseable */
    c->line = c->buf;
    c->lineno++;
    return 1;
}

/* A whole string as a finite double (surrounding blanks allowed). */
static int parse_f64(const char *s, double *v) {
    char *end;
    while (*s == ' ' || *s == '\t') s++;
    if (!*s) return -1;
    errno = 0;
    *v = strtod(s, &end);
    if (end == s || errno == ERANGE || !isfinite(*v)) return -1; /* ERANGE: underflow to 0 would not round trip */
    while (*end == ' ' || *end == '\t') end++;
    return *end ? -1 : 0;
}

/* "KEY N" with N a whole decimal integer in [lo, hi]. */
static int parse_key_int(const char *line, const char *key, long long lo, long long hi, long long *v) {
    size_t k = strlen(key);
    if (strncmp(line, key, k) || line[k] != ' ') return -1;
    const char *s = line + k + 1;
    char *end;
    if (*s < '0' || *s > '9') return -1;
    errno = 0;
    long long n = strtoll(s, &end, 10);
    if (errno || *end || n < lo || n > hi) return -1;
    *v = n;
    return 0;
}

em_ml_model *ml_model_parse(const char *text, size_t len, const char *name) {
    cursor c = {text, text + len, NULL, NULL, 0, 0, text};
    em_ml_model *m = calloc(1, sizeof *m);
    const char *why = NULL;
    long long cols = -1, K = 2;
    int version = 0, multi = 0, got;
    if (!m) goto nomem;
#define NEXT()                               \
    do {                                     \
        if ((got = next_line(&c)) < 0) goto nomem; \
    } while (0)
    NEXT();
    if (got && !strcmp(c.line, "ember-logreg 1")) version = 1;
    else if (got && !strcmp(c.line, "ember-logreg 2")) version = 2;
    else {
        why = "not an ember-logreg model (expected \"ember-logreg 1\" or \"ember-logreg 2\")";
        goto fail;
    }
    if (version == 2) {
        NEXT();
        if (got && !strcmp(c.line, "family binomial")) multi = 0;
        else if (got && !strcmp(c.line, "family multinomial")) multi = 1;
        else {
            why = "expected \"family binomial\" or \"family multinomial\"";
            goto fail;
        }
        NEXT();
        if (!got || parse_key_int(c.line, "classes", 2, EM_ML_MAX_CLASSES, &K) || (!multi && K != 2)) {
            why = multi ? "expected \"classes K\", K from 2 to 65536" : "expected \"classes 2\" (binomial)";
            goto fail;
        }
    }
    NEXT();
    if (!got || parse_key_int(c.line, "cols", 0, MAX_COLS, &cols)) {
        why = "expected \"cols N\"";
        goto fail;
    }
    long long rows = multi ? K : 1;
    /* Every intercept and weight takes at least 2 bytes: check the counts
     * against the bytes left before allocating for them. */
    if ((unsigned long long)cols * (unsigned long long)rows + (unsigned long long)rows >
        (unsigned long long)(c.end - c.p) / 2 + 1) {
        why = "the file is too short for its cols and classes";
        goto fail;
    }
    if (!(m->w = malloc(sizeof(double) * (size_t)(cols * rows > 0 ? cols * rows : 1)))) goto nomem;
    if (multi && !(m->intercepts = malloc(sizeof(double) * (size_t)K))) goto nomem;
    m->cols = cols;
    m->classes = multi ? (int)K : 0;
    for (long long k = 0; k < rows; k++) {
        NEXT();
        double *b = multi ? &m->intercepts[k] : &m->b;
        if (!got || strncmp(c.line, "intercept ", 10) || parse_f64(c.line + 10, b)) {
            why = "expected \"intercept B\"";
            goto fail;
        }
    }
    for (long long j = 0; j < cols * rows; j++) {
        NEXT();
        if (!got) {
            c.lineno++;
            why = "missing weights";
            goto fail;
        }
        if (parse_f64(c.line, &m->w[j])) {
            why = "bad weight";
            goto fail;
        }
    }
    if (version == 2) {
        NEXT();
        size_t covered = got ? (size_t)(c.line_start - text) : len;
        unsigned long long want;
        char *end;
        if (!got) c.lineno++;
        if (!got || strncmp(c.line, "crc32 ", 6) || strlen(c.line + 6) != 8 ||
            (errno = 0, want = strtoull(c.line + 6, &end, 16), errno || *end)) {
            why = "expected \"crc32 XXXXXXXX\" after the weights";
            goto fail;
        }
        if ((uint32_t)want != crc_of(text, covered)) {
            why = "checksum mismatch: the file is corrupt";
            goto fail;
        }
    }
    for (;;) {
        NEXT();
        if (!got) break;
        if (c.line[strspn(c.line, " \t")]) {
            why = version == 2 ? "unexpected data after the checksum" : "unexpected data after the weights";
            goto fail;
        }
    }
#undef NEXT
    free(c.buf);
    return m;
fail:
    em__seterr(EM_ECORRUPT, "%s:%lld: %s", name, (long long)(c.lineno ? c.lineno : 1), why);
    free(c.buf);
    em_ml_model_free(m);
    return NULL;
nomem:
    em__seterr(EM_ENOMEM, "%s: out of memory", name);
    free(c.buf);
    em_ml_model_free(m);
    return NULL;
}

em_ml_model *em_ml_model_load(const char *path) {
    if (!path) {
        em__seterr(EM_EINVAL, "em_ml_model_load: NULL path");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        em__seterr(errno == ENOENT ? EM_ENOENT : EM_EIO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    char *text = NULL;
    size_t n = 0;
    if (fstat(fileno(f), &st) || st.st_size < 0) {
        em__seterr(EM_EIO, "%s: %s", path, strerror(errno));
        fclose(f);
        return NULL;
    }
    if (!(text = malloc((size_t)st.st_size + 1))) {
        em__seterr(EM_ENOMEM, "%s: out of memory (%lld bytes)", path, (long long)st.st_size);
        fclose(f);
        return NULL;
    }
    n = fread(text, 1, (size_t)st.st_size, f);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        em__seterr(EM_EIO, "%s: read error", path);
        free(text);
        return NULL;
    }
    em_ml_model *m = ml_model_parse(text, n, path);
    free(text);
    return m;
}
