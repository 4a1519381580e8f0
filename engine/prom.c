/*
 * prom.c -- the Prometheus text format 0.0.4: its writer and its strict
 * parser (see prom.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"
#include "prom.h"

static int name_ok(const char *s, int metric) {
    if (!s || !*s) return 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (metric && c == ':') ||
                 (p > s && c >= '0' && c <= '9');
        if (!ok) return 0;
    }
    return metric || strncmp(s, "__", 2);
}

static const char *const types[] = {"counter", "gauge", "histogram", "summary", "untyped", NULL};

static int type_ok(const char *t) {
    for (int i = 0; types[i]; i++)
        if (!strcmp(t, types[i])) return 1;
    return 0;
}

/* s escaped: '\' and newline, and '"' too when quote. */
static int put_escaped(ebuf *b, const char *s, int quote) {
    for (; *s; s++) {
        const char *e = *s == '\\' ? "\\\\" : *s == '\n' ? "\\n" : quote && *s == '"' ? "\\\"" : NULL;
        if (e ? ebuf_append(b, e, 2) : ebuf_append(b, s, 1)) return -1;
    }
    return 0;
}

static int put_s(ebuf *b, const char *s) { return ebuf_append(b, s, strlen(s)); }

int prom_family(ebuf *b, const char *name, const char *type, const char *help) {
    if (!name_ok(name, 1)) return em__seterr(EM_EINVAL, "prometheus: \"%s\" is not a metric name", name ? name : "");
    if (!type || !type_ok(type)) return em__seterr(EM_EINVAL, "prometheus: \"%s\" is not a type", type ? type : "");
    size_t start = b->len;
    int rc = 0;
    if (help) rc = put_s(b, "# HELP ") || put_s(b, name) || put_s(b, " ") || put_escaped(b, help, 0) || put_s(b, "\n");
    rc = rc || put_s(b, "# TYPE ") || put_s(b, name) || put_s(b, " ") || put_s(b, type) || put_s(b, "\n");
    if (rc) {
        b->len = start;
        return em__seterr(EM_ENOMEM, "prometheus: out of memory");
    }
    return 0;
}

int prom_sample(ebuf *b, const char *name, const prom_label *labels, int n, double value) {
    if (!name_ok(name, 1)) return em__seterr(EM_EINVAL, "prometheus: \"%s\" is not a metric name", name ? name : "");
    for (int i = 0; i < n; i++)
        if (!name_ok(labels[i].name, 0))
            return em__seterr(EM_EINVAL, "prometheus: \"%s\" is not a label name", labels[i].name ? labels[i].name : "");
    size_t start = b->len;
    int rc = put_s(b, name);
    for (int i = 0; i < n && !rc; i++)
        rc = put_s(b, i ? "," : "{") || put_s(b, labels[i].name) || put_s(b, "=\"") ||
             put_escaped(b, labels[i].value ? labels[i].value : "", 1) || put_s(b, "\"");
    if (!rc && n) rc = put_s(b, "}");
    char num[40];
    if (isnan(value)) snprintf(num, sizeof num, "NaN");
    else if (isinf(value)) snprintf(num, sizeof num, value > 0 ? "+Inf" : "-Inf");
    else if (value == floor(value) && fabs(value) < 9007199254740992.0) snprintf(num, sizeof num, "%.0f", value);
    else snprintf(num, sizeof num, "%.17g", value);
    rc = rc || put_s(b, " ") || put_s(b, num) || put_s(b, "\n");
    if (rc) {
        b->len = start;
        return em__seterr(EM_ENOMEM, "prometheus: out of memory");
    }
    return 0;
}

int prom_gauge(ebuf *b, const char *name, const char *help, const prom_label *labels, int n, double value) {
    size_t start = b->len;
    int rc = prom_family(b, name, "gauge", help);
    if (!rc && (rc = prom_sample(b, name, labels, n, value))) b->len = start;
    return rc;
}

int prom_spark_gauge(ebuf *b, const char *source, const char *name, const char *help, double v) {
    static const prom_label gauges[] = {{"type", "gauges"}};
    char n[256];
    size_t start = b->len;
    snprintf(n, sizeof n, "metrics_%s_%s_Number", source, name);
    int rc = prom_gauge(b, n, help, gauges, 1, v);
    snprintf(n, sizeof n, "metrics_%s_%s_Value", source, name);
    if (!rc && (rc = prom_gauge(b, n, help, gauges, 1, v))) b->len = start;
    return rc;
}

/* ------------------------------------------------------------- parser */

/* What the parser knows of each family seen: its name, TYPE and HELP, and
 * whether its samples are over (another family's came after them). */
typedef struct fam {
    char name[PROM_NAME_MAX + 1];
    char type[16];
    char help[PROM_VALUE_MAX + 1];
    int has_type, has_help, has_samples, closed;
} fam;

typedef struct parser {
    const char *p, *end; /* the line being read, without its '\n' */
    int line;
    fam *f;
    size_t nf, capf;
    fam *cur; /* the family whose samples came last */
} parser;

static int bad(parser *ps, const char *what) {
    return em__seterr(EM_ECORRUPT, "prometheus text, line %d: %s", ps->line, what);
}

static void skip_blanks(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t')) ps->p++;
}

/* A name at ps->p into out; 0 or -1. */
static int read_name(parser *ps, char *out, int metric) {
    size_t n = 0;
    while (ps->p + n < ps->end) {
        char c = ps->p[n];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (metric && c == ':') ||
                 (n && c >= '0' && c <= '9');
        if (!ok) break;
        n++;
    }
    if (!n || n > PROM_NAME_MAX) return -1;
    memcpy(out, ps->p, n);
    out[n] = 0;
    ps->p += n;
    return metric || strncmp(out, "__", 2) ? 0 : -1;
}

static fam *fam_find(parser *ps, const char *name) {
    for (size_t i = 0; i < ps->nf; i++)
        if (!strcmp(ps->f[i].name, name)) return &ps->f[i];
    return NULL;
}

static fam *fam_get(parser *ps, const char *name) {
    fam *f = fam_find(ps, name);
    if (f) return f;
    if (ps->nf == ps->capf) {
        size_t cap = ps->capf ? ps->capf * 2 : 16;
        fam *v = realloc(ps->f, cap * sizeof *v);
        if (!v) return NULL;
        ps->f = v;
        ps->capf = cap;
    }
    f = &ps->f[ps->nf++];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    return f;
}

/* The family a sample name belongs to: a histogram's or summary's
 * name_bucket, _sum, _count belong to name. */
static fam *family_of(parser *ps, const char *name) {
    static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(name), s = strlen(suffixes[i]);
        if (n <= s || strcmp(name + n - s, suffixes[i])) continue;
        char base[PROM_NAME_MAX + 1];
        memcpy(base, name, n - s);
        base[n - s] = 0;
        fam *f = fam_find(ps, base);
        if (f && (!strcmp(f->type, "histogram") || !strcmp(f->type, "summary"))) return f;
    }
    return fam_get(ps, name);
}

/* An escaped text up to the line's end (HELP) or to '"' (a label value),
 * unescaped into out. */
static int read_escaped(parser *ps, char *out, int quoted) {
    size_t k = 0;
    for (;;) {
        if (ps->p >= ps->end) return quoted ? -1 : (out[k] = 0, 0);
        char c = *ps->p++;
        if (quoted && c == '"') break;
        if (c == '\\') {
            if (ps->p >= ps->end) return -1;
            char e = *ps->p++;
            if (e == 'n') c = '\n';
            else if (e == '\\') c = '\\';
            else if (e == '"' && quoted) c = '"';
            else return -1;
        }
        if (k >= PROM_VALUE_MAX) return -1;
        out[k++] = c;
    }
    out[k] = 0;
    return 0;
}

static int comment(parser *ps) {
    ps->p++; /* '#' */
    skip_blanks(ps);
    int help = ps->end - ps->p >= 5 && !memcmp(ps->p, "HELP", 4) && (ps->p[4] == ' ' || ps->p[4] == '\t');
    int type = ps->end - ps->p >= 5 && !memcmp(ps->p, "TYPE", 4) && (ps->p[4] == ' ' || ps->p[4] == '\t');
    if (!help && !type) return 0; /* a comment */
    ps->p += 4;
    skip_blanks(ps);
    char name[PROM_NAME_MAX + 1];
    if (read_name(ps, name, 1)) return bad(ps, "a HELP or TYPE line without a metric name");
    fam *f = fam_get(ps, name);
    if (!f) return em__seterr(EM_ENOMEM, "prometheus: out of memory");
    if (ps->p < ps->end && *ps->p != ' ' && *ps->p != '\t') return bad(ps, "a bad metric name");
    skip_blanks(ps);
    if (help) {
        if (f->has_help) return bad(ps, "a second HELP line for a metric");
        if (read_escaped(ps, f->help, 0)) return bad(ps, "a bad escape in a HELP text");
        f->has_help = 1;
        return 0;
    }
    if (f->has_type) return bad(ps, "a second TYPE line for a metric");
    if (f->has_samples) return bad(ps, "a TYPE line after the metric's samples");
    size_t n = (size_t)(ps->end - ps->p);
    while (n && (ps->p[n - 1] == ' ' || ps->p[n - 1] == '\t')) n--;
    if (n >= sizeof f->type) return bad(ps, "an unknown metric type");
    memcpy(f->type, ps->p, n);
    f->type[n] = 0;
    if (!type_ok(f->type)) return bad(ps, "an unknown metric type");
    f->has_type = 1;
    return 0;
}

/* A float as the format spells it. */
static int read_value(parser *ps, double *v) {
    const char *s = ps->p;
    size_t n = 0;
    while (s + n < ps->end && s[n] != ' ' && s[n] != '\t') n++;
    char buf[64];
    if (!n || n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    ps->p += n;
    if (!strcmp(buf, "NaN")) *v = NAN;
    else if (!strcmp(buf, "+Inf") || !strcmp(buf, "Inf")) *v = INFINITY;
    else if (!strcmp(buf, "-Inf")) *v = -INFINITY;
    else {
        for (size_t i = 0; i < n; i++)
            if (!strchr("0123456789+-.eE", buf[i])) return -1;
        char *end;
        errno = 0;
        *v = strtod(buf, &end);
        if (*end || end == buf) return -1;
    }
    return 0;
}

static int same_sample(const prom_metric *a, const prom_metric *b) {
    if (strcmp(a->name, b->name) || a->nlabels != b->nlabels) return 0;
    for (int i = 0; i < a->nlabels; i++) {
        int found = 0;
        for (int j = 0; j < b->nlabels && !found; j++)
            found = !strcmp(a->lname[i], b->lname[j]) && !strcmp(a->lvalue[i], b->lvalue[j]);
        if (!found) return 0;
    }
    return 1;
}

static int sample(parser *ps, prom_doc *doc) {
    if (doc->n == doc->cap) {
        size_t cap = doc->cap ? doc->cap * 2 : 16;
        prom_metric *v = realloc(doc->m, cap * sizeof *v);
        if (!v) return em__seterr(EM_ENOMEM, "prometheus: out of memory");
        doc->m = v;
        doc->cap = cap;
    }
    prom_metric *m = &doc->m[doc->n];
    memset(m, 0, sizeof *m);
    if (read_name(ps, m->name, 1)) return bad(ps, "a sample without a valid metric name");
    const char *after_name = ps->p;
    skip_blanks(ps);
    int blank = ps->p > after_name;
    if (ps->p < ps->end && *ps->p == '{') {
        ps->p++;
        for (;;) {
            skip_blanks(ps);
            if (ps->p < ps->end && *ps->p == '}') {
                ps->p++;
                break;
            }
            if (m->nlabels == PROM_LABELS_MAX) return bad(ps, "too many labels");
            int i = m->nlabels;
            if (read_name(ps, m->lname[i], 0)) return bad(ps, "a bad label name");
            for (int j = 0; j < i; j++)
                if (!strcmp(m->lname[j], m->lname[i])) return bad(ps, "a label given twice");
            skip_blanks(ps);
            if (ps->p >= ps->end || *ps->p != '=') return bad(ps, "a label without '='");
            ps->p++;
            skip_blanks(ps);
            if (ps->p >= ps->end || *ps->p != '"') return bad(ps, "a label value not in double quotes");
            ps->p++;
            if (read_escaped(ps, m->lvalue[i], 1)) return bad(ps, "a bad label value (escape, end or length)");
            m->nlabels++;
            skip_blanks(ps);
            if (ps->p < ps->end && *ps->p == ',') ps->p++;
            else if (ps->p >= ps->end || *ps->p != '}') return bad(ps, "labels not separated by ','");
        }
        const char *after_labels = ps->p;
        skip_blanks(ps);
        blank = ps->p > after_labels;
    }
    if (!blank || ps->p >= ps->end) return bad(ps, "no blank before the value");
    if (read_value(ps, &m->value)) return bad(ps, "a bad value");
    skip_blanks(ps);
    if (ps->p < ps->end) {
        char *end;
        char buf[32];
        size_t n = (size_t)(ps->end - ps->p);
        while (n && (ps->p[n - 1] == ' ' || ps->p[n - 1] == '\t')) n--;
        if (n >= sizeof buf) return bad(ps, "a bad timestamp");
        memcpy(buf, ps->p, n);
        buf[n] = 0;
        errno = 0;
        long long t = strtoll(buf, &end, 10);
        if (*end || end == buf || errno) return bad(ps, "a bad timestamp");
        m->has_ts = 1;
        m->ts = t;
    }
    fam *f = family_of(ps, m->name);
    if (!f) return em__seterr(EM_ENOMEM, "prometheus: out of memory");
    if (f->closed) return bad(ps, "a metric's samples not together");
    if (ps->cur && ps->cur != f) ps->cur->closed = 1;
    ps->cur = f;
    f->has_samples = 1;
    snprintf(m->type, sizeof m->type, "%s", f->has_type ? f->type : "untyped");
    snprintf(m->help, sizeof m->help, "%s", f->help);
    for (size_t i = 0; i < doc->n; i++)
        if (same_sample(&doc->m[i], m)) return bad(ps, "a sample given twice");
    doc->n++;
    return 0;
}

int prom_parse(const char *text, size_t len, prom_doc *doc) {
    doc->n = 0;
    parser ps = {0};
    int rc = 0;
    if (len && text[len - 1] != '\n') {
        ps.line = 1;
        for (size_t i = 0; i < len; i++) ps.line += text[i] == '\n';
        return bad(&ps, "the text does not end with a newline");
    }
    const char *s = text, *end = text + len;
    while (s < end && !rc) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        ps.line++;
        ps.p = s;
        ps.end = nl;
        for (const char *c = s; c < nl && !rc; c++)
            if ((unsigned char)*c < 0x20 && *c != '\t') rc = bad(&ps, "a control character");
        if (rc) break;
        skip_blanks(&ps);
        if (ps.p == ps.end) { /* an empty line */
        } else if (*ps.p == '#') rc = comment(&ps);
        else rc = sample(&ps, doc);
        s = nl + 1;
    }
    free(ps.f);
    return rc;
}

void prom_doc_free(prom_doc *doc) {
    free(doc->m);
    doc->m = NULL;
    doc->n = doc->cap = 0;
}

const prom_metric *prom_find(const prom_doc *doc, const char *name, const char *lname, const char *lvalue) {
    for (size_t i = 0; i < doc->n; i++) {
        const prom_metric *m = &doc->m[i];
        if (strcmp(m->name, name)) continue;
        if (!lname) return m;
        for (int j = 0; j < m->nlabels; j++)
            if (!strcmp(m->lname[j], lname) && !strcmp(m->lvalue[j], lvalue ? lvalue : "")) return m;
    }
    return NULL;
}
