/*
 * support.c -- helpers shared by the fuzz targets (see fuzz.h): failing a
 * property, one scratch directory per process, and the independent
 * reference parsers the targets compare the engine against.  The
 * references are written for clarity, not speed, and share no code with
 * the engine.
 */
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ember.h"
#include "fuzz.h"
#include "parse.h"

void fz_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s:%d: fuzz property failed: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

static char tmpdir[256];

static void rm_tmpdir(void) {
    if (!tmpdir[0]) return;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    tmpdir[0] = 0;
}

const char *fz_tmpdir(void) {
    if (!tmpdir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/ember-fuzz-%d-XXXXXX", base && *base ? base : "/tmp",
                 (int)getpid());
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            abort();
        }
        atexit(rm_tmpdir);
    }
    return tmpdir;
}

const char *fz_write_file(const char *name, const void *p, size_t n) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", fz_tmpdir(), name);
    /* A new file, not an old one truncated: ext4 flushes a file truncated
     * and rewritten on close (auto_da_alloc), 20 times slower here. */
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(path);
        abort();
    }
    const uint8_t *b = p;
    while (n) {
        ssize_t k = write(fd, b, n);
        if (k <= 0) {
            perror(path);
            abort();
        }
        b += k;
        n -= (size_t)k;
    }
    close(fd);
    return path;
}

size_t fz_split_lines(const uint8_t *p, size_t n, fz_line **out) {
    size_t count = 0, start = 0;
    *out = NULL;
    for (size_t i = 0; i < n; i++)
        if (p[i] == '\n') count++;
    if (n && p[n - 1] != '\n') count++;
    if (!count) return 0;
    fz_line *v = malloc(count * sizeof *v);
    if (!v) abort();
    size_t k = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != '\n') continue;
        if (i == n && start == n) break; /* no final unterminated line */
        size_t len = i - start;
        if (i < n && len && p[i - 1] == '\r') len--;
        v[k].p = p + start;
        v[k].len = len;
        k++;
        start = i + 1;
    }
    *out = v;
    return k;
}

static int digit(char c) { return c >= '0' && c <= '9'; }

size_t fz_number(const char *p, const char *end, double *v) {
    const char *s = p;
    size_t before = 0, after = 0;
    if (p < end && (*p == '+' || *p == '-')) p++;
    while (p < end && digit(*p)) p++, before++;
    if (p < end && *p == '.') {
        p++;
        while (p < end && digit(*p)) p++, after++;
    }
    if (!before && !after) return 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        size_t ed = 0;
        while (p < end && digit(*p)) p++, ed++;
        if (!ed) return 0;
    }
    size_t n = (size_t)(p - s);
    char *tmp = malloc(n + 1);
    if (!tmp) abort();
    memcpy(tmp, s, n);
    tmp[n] = 0;
    char *stop;
    double x = strtod(tmp, &stop);
    int ok = stop == tmp + n && isfinite(x);
    free(tmp);
    if (!ok) return 0;
    *v = x;
    return n;
}

void fz_check_numbers(const char *p, size_t n) {
    const char *end = p + n;
    for (size_t i = 0; i < n; i++) {
        if (i && !strchr(" \t:,\n", p[i - 1])) continue;
        double want = 0, got = 0;
        size_t len = fz_number(p + i, end, &want);
        const char *q = ml_parse_f64(p + i, end, &got);
        if (!len) {
            FZ_CHECK(q == NULL, "ml_parse_f64 took %zu bytes at %zu that are no number", (size_t)(q - p - i), i);
            continue;
        }
        FZ_CHECK(q != NULL, "ml_parse_f64 rejected the number \"%.*s\" at %zu", (int)len, p + i, i);
        FZ_CHECK(q == p + i + len, "ml_parse_f64 took %zu bytes of the %zu-byte number at %zu",
                 (size_t)(q - p - i), len, i);
        FZ_CHECK(!memcmp(&got, &want, sizeof got), "\"%.*s\": ml_parse_f64 gives %.17g, strtod %.17g", (int)len,
                 p + i, got, want);
    }
}

/* A context keeps every RDD made on it until it is closed, so one serves a
 * bounded number of inputs and is then replaced. */
#define CONTEXT_USES 1000

static em_ctx *ctx;
static int uses;

static void close_context(void) {
    em_close(ctx);
    ctx = NULL;
}

em_ctx *fz_context(void) {
    if (ctx && ++uses < CONTEXT_USES) return ctx;
    if (ctx) {
        close_context();
    } else {
        fz_tmpdir();
        atexit(close_context); /* after fz_tmpdir's: runs before it */
    }
    uses = 0;
    em_conf *c = em_conf_new();
    FZ_CHECK(c != NULL, "em_conf_new");
    FZ_CHECK(em_conf_set(c, "ember.local.dir", fz_tmpdir()) == 0 && em_conf_set(c, "ember.task.maxFailures", "1") == 0 &&
                 em_conf_set(c, "ember.progress", "false") == 0,
             "a setting was refused: %s", em_errmsg());
    ctx = em_open("local[1]", c);
    em_conf_free(c);
    FZ_CHECK(ctx != NULL, "em_open: %s", em_errmsg());
    return ctx;
}

/* ------------------------------------------------------------ records */

static size_t ref_varint(const uint8_t *p, size_t n, uint64_t *v) {
    uint64_t r = 0;
    for (size_t i = 0; i < n && i < 10; i++) {
        r |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            *v = r;
            return i + 1;
        }
    }
    return 0;
}

size_t fz_record(const uint8_t *p, size_t n, em_rec *r) {
    uint64_t k, v;
    size_t a = ref_varint(p, n, &k);
    if (!a) return 0;
    r->key = NULL;
    r->klen = 0;
    if (k) {
        if (k - 1 > n - a) return 0;
        r->key = p + a;
        r->klen = (size_t)(k - 1);
        a += r->klen;
    }
    size_t b = ref_varint(p + a, n - a, &v);
    if (!b) return 0;
    a += b;
    if (v > n - a) return 0;
    r->val = p + a;
    r->vlen = (size_t)v;
    return a + r->vlen;
}

static void put_bytes(uint8_t **buf, size_t *len, size_t *cap, const void *p, size_t n) {
    if (*len + n > *cap) {
        size_t c = *cap ? *cap : 256;
        while (c < *len + n) c *= 2;
        uint8_t *q = realloc(*buf, c);
        FZ_CHECK(q != NULL, "out of memory");
        *buf = q;
        *cap = c;
    }
    if (n) memcpy(*buf + *len, p, n);
    *len += n;
}

static void put_varint(uint8_t **buf, size_t *len, size_t *cap, uint64_t v) {
    uint8_t b[10];
    size_t k = 0;
    do {
        b[k] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) b[k] |= 0x80;
        k++;
    } while (v);
    put_bytes(buf, len, cap, b, k);
}

void fz_record_put(uint8_t **buf, size_t *len, size_t *cap, const em_rec *r) {
    put_varint(buf, len, cap, r->key ? (uint64_t)r->klen + 1 : 0);
    if (r->key) put_bytes(buf, len, cap, r->key, r->klen);
    put_varint(buf, len, cap, r->vlen);
    put_bytes(buf, len, cap, r->val, r->vlen);
}
