/*
 * json.c -- JSON text: the writer with its nesting stack, and the bounded
 * parser into a node array and a string pool (see json.h).
 */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"

/* The length of the valid UTF-8 sequence at p[0, n) (1..4), 0 when the
 * bytes there are not one (overlong forms, surrogates and code points past
 * U+10FFFF are not). */
static size_t utf8_len(const uint8_t *p, size_t n) {
    uint8_t c = p[0];
    if (c < 0x80) return 1;
    size_t need;
    uint8_t lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) need = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        need = 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    } else return 0;
    if (n < need) return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < need; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    return need;
}

/* ---------------------------------------------------------------- writer */

#define JW_OBJECT 1 /* the container is an object */
#define JW_ANY 2    /* it has a member or element already */
#define JW_KEY 4    /* an object's key is written, its value not yet */

void json_w_init(json_writer *w, ebuf *out) {
    w->out = out;
    w->err = 0;
    w->depth = 0;
    w->done = false;
}

static int jw_fail(json_writer *w, int code, const char *what) {
    w->err = code;
    if (code == EM_ENOMEM) return em__seterr(code, "json: out of memory writing");
    return em__seterr(code, "json: %s", what);
}

/* Before a value: check that one may come here and write its comma. */
static int jw_value(json_writer *w) {
    if (w->err) return w->err;
    if (w->depth == 0) {
        if (w->done) return jw_fail(w, EM_EINVAL, "a second top-level value");
        return 0;
    }
    uint8_t *s = &w->st[w->depth - 1];
    if (*s & JW_OBJECT) {
        if (!(*s & JW_KEY)) return jw_fail(w, EM_EINVAL, "a value in an object without a key");
        *s &= (uint8_t)~JW_KEY;
        return 0;
    }
    if (*s & JW_ANY) {
        if (ebuf_append(w->out, ",", 1)) return jw_fail(w, EM_ENOMEM, NULL);
    }
    *s |= JW_ANY;
    return 0;
}

/* After a whole value (a scalar, or a container's end). */
static void jw_after(json_writer *w) {
    if (w->depth == 0) w->done = true;
}

static int jw_raw(json_writer *w, const char *s, size_t n) {
    if (ebuf_append(w->out, s, n)) return jw_fail(w, EM_ENOMEM, NULL);
    return 0;
}

static int jw_begin(json_writer *w, bool object) {
    int rc = jw_value(w);
    if (rc) return rc;
    if (w->depth == JSON_DEPTH_MAX) return jw_fail(w, EM_EINVAL, "nesting deeper than JSON_DEPTH_MAX");
    if ((rc = jw_raw(w, object ? "{" : "[", 1))) return rc;
    w->st[w->depth++] = object ? JW_OBJECT : 0;
    return 0;
}

static int jw_end(json_writer *w, bool object) {
    if (w->err) return w->err;
    if (w->depth == 0 || !(w->st[w->depth - 1] & JW_OBJECT) != !object)
        return jw_fail(w, EM_EINVAL, object ? "an object's end without its begin" : "an array's end without its begin");
    if (w->st[w->depth - 1] & JW_KEY) return jw_fail(w, EM_EINVAL, "an object's end after a key without its value");
    int rc = jw_raw(w, object ? "}" : "]", 1);
    if (rc) return rc;
    w->depth--;
    jw_after(w);
    return 0;
}

int json_w_begin_object(json_writer *w) { return jw_begin(w, true); }
int json_w_end_object(json_writer *w) { return jw_end(w, true); }
int json_w_begin_array(json_writer *w) { return jw_begin(w, false); }
int json_w_end_array(json_writer *w) { return jw_end(w, false); }

/* The bytes a JSON string holds as they are: printable ASCII but '"' and
 * '\\'. */
static const uint8_t plain_byte[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* Append s[0, len) quoted and escaped.  Room is reserved for the worst
 * case first (6 bytes a byte: \u00XX, and U+FFFD's 3), so the buffer is
 * unchanged on failure. */
static int jw_quoted(json_writer *w, const uint8_t *s, size_t len) {
    static const char hex[] = "0123456789abcdef";
    if (len > (SIZE_MAX - 2) / 6 || ebuf_reserve(w->out, len * 6 + 2)) return jw_fail(w, EM_ENOMEM, NULL);
    uint8_t *o = w->out->p + w->out->len, *o0 = o;
    *o++ = '"';
    for (size_t i = 0; i < len;) {
        /* a run of bytes written as they are, copied at once */
        size_t j = i;
        while (j < len && plain_byte[s[j]]) j++;
        if (j > i) {
            memcpy(o, s + i, j - i);
            o += j - i;
            i = j;
            if (i == len) break;
        }
        uint8_t c = s[i];
        if (c < 0x80) {
            *o++ = '\\';
            switch (c) {
            case '"': *o++ = '"'; break;
            case '\\': *o++ = '\\'; break;
            case '\b': *o++ = 'b'; break;
            case '\f': *o++ = 'f'; break;
            case '\n': *o++ = 'n'; break;
            case '\r': *o++ = 'r'; break;
            case '\t': *o++ = 't'; break;
            default:
                *o++ = 'u'; *o++ = '0'; *o++ = '0';
                *o++ = (uint8_t)hex[c >> 4];
                *o++ = (uint8_t)hex[c & 15];
            }
            i++;
            continue;
        }
        size_t n = utf8_len(s + i, len - i);
        if (n) {
            memcpy(o, s + i, n);
            o += n;
            i += n;
        } else {
            *o++ = 0xef; *o++ = 0xbf; *o++ = 0xbd; /* U+FFFD */
            i++;
        }
    }
    *o++ = '"';
    w->out->len += (size_t)(o - o0);
    return 0;
}

int json_w_keyn(json_writer *w, const void *k, size_t len) {
    if (w->err) return w->err;
    if (w->depth == 0 || !(w->st[w->depth - 1] & JW_OBJECT)) return jw_fail(w, EM_EINVAL, "a key outside an object");
    uint8_t *s = &w->st[w->depth - 1];
    if (*s & JW_KEY) return jw_fail(w, EM_EINVAL, "a key after a key");
    size_t mark = w->out->len;
    int rc;
    if ((*s & JW_ANY) && (rc = jw_raw(w, ",", 1))) return rc;
    if ((rc = jw_quoted(w, k, len)) || (rc = jw_raw(w, ":", 1))) {
        w->out->len = mark;
        return rc;
    }
    *s |= JW_ANY | JW_KEY;
    return 0;
}

int json_w_key(json_writer *w, const char *k) { return json_w_keyn(w, k, strlen(k)); }

int json_w_key_plain(json_writer *w, const char *k) {
    if (w->err) return w->err;
    if (w->depth == 0 || !(w->st[w->depth - 1] & JW_OBJECT)) return jw_fail(w, EM_EINVAL, "a key outside an object");
    uint8_t *s = &w->st[w->depth - 1];
    if (*s & JW_KEY) return jw_fail(w, EM_EINVAL, "a key after a key");
    size_t len = strlen(k);
    if (ebuf_reserve(w->out, len + 4)) return jw_fail(w, EM_ENOMEM, NULL);
    uint8_t *o = w->out->p + w->out->len, *o0 = o;
    if (*s & JW_ANY) *o++ = ',';
    *o++ = '"';
    memcpy(o, k, len);
    o += len;
    *o++ = '"';
    *o++ = ':';
    w->out->len += (size_t)(o - o0);
    *s |= JW_ANY | JW_KEY;
    return 0;
}

int json_w_strn(json_writer *w, const void *s, size_t len) {
    int rc = jw_value(w);
    if (rc || (rc = jw_quoted(w, s, len))) return rc;
    jw_after(w);
    return 0;
}

int json_w_str(json_writer *w, const char *s) { return json_w_strn(w, s, strlen(s)); }

static int jw_scalar(json_writer *w, const char *s, size_t n) {
    int rc = jw_value(w);
    if (rc || (rc = jw_raw(w, s, n))) return rc;
    jw_after(w);
    return 0;
}

/* v's decimal digits, ending at end (not NUL-terminated): their start. */
static char *u64_digits(uint64_t v, char *end) {
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

int json_w_i64(json_writer *w, int64_t v) {
    char b[24], *e = b + sizeof b;
    char *s = u64_digits(v < 0 ? 0 - (uint64_t)v : (uint64_t)v, e);
    if (v < 0) *--s = '-';
    return jw_scalar(w, s, (size_t)(e - s));
}

int json_w_u64(json_writer *w, uint64_t v) {
    char b[24], *e = b + sizeof b;
    char *s = u64_digits(v, e);
    return jw_scalar(w, s, (size_t)(e - s));
}

int json_w_f64(json_writer *w, double v) {
    if (!isfinite(v)) return jw_scalar(w, "null", 4);
    char b[40];
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(b, sizeof b, "%.*g", prec, v);
        if (strtod(b, NULL) == v) break;
    }
    if (!strpbrk(b, ".e")) {
        memcpy(b + n, ".0", 3);
        n += 2;
    }
    return jw_scalar(w, b, (size_t)n);
}

int json_w_bool(json_writer *w, bool v) { return v ? jw_scalar(w, "true", 4) : jw_scalar(w, "false", 5); }
int json_w_null(json_writer *w) { return jw_scalar(w, "null", 4); }

int json_w_finish(json_writer *w) {
    if (w->err) return w->err;
    if (w->depth) return em__seterr(EM_EINVAL, "json: %d containers still open", w->depth);
    if (!w->done) return em__seterr(EM_EINVAL, "json: no value written");
    return 0;
}

int json_w_node(json_writer *w, const json_doc *d, const json_node *n) {
    const char *s;
    size_t len;
    int rc;
    switch (n->type) {
    case JSON_NULL: return json_w_null(w);
    case JSON_BOOL: return json_w_bool(w, n->b);
    case JSON_INT: return json_w_i64(w, n->v.i);
    case JSON_DOUBLE: return json_w_f64(w, n->v.d);
    case JSON_STRING:
        json_as_str(d, n, &s, &len);
        return json_w_strn(w, s, len);
    case JSON_ARRAY:
    case JSON_OBJECT: {
        bool obj = n->type == JSON_OBJECT;
        if ((rc = jw_begin(w, obj))) return rc;
        for (const json_node *c = json_first(d, n); c; c = json_next(d, c)) {
            if (obj) {
                s = json_key(d, c, &len);
                if ((rc = json_w_keyn(w, s, len))) return rc;
            }
            if ((rc = json_w_node(w, d, c))) return rc;
        }
        return jw_end(w, obj);
    }
    default: return jw_fail(w, EM_EINVAL, "a node of no known type");
    }
}

/* ---------------------------------------------------------------- parser */

typedef struct jparser {
    const uint8_t *p;
    size_t len, pos;
    uint32_t max_depth, max_nodes;
    json_doc *d;
} jparser;

static int jp_bad(const jparser *jp, size_t at, const char *what) {
    return em__seterr(EM_ECORRUPT, "json: %s at byte %zu", what, at);
}

static inline void jp_ws(jparser *jp) {
    size_t i = jp->pos;
    const uint8_t *p = jp->p;
    while (i < jp->len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')) i++;
    jp->pos = i;
}

/* A new node at the end of the array; its index in *idx. */
static inline int jp_node(jparser *jp, uint8_t type, uint32_t *idx) {
    json_doc *d = jp->d;
    if (d->n >= jp->max_nodes) return jp_bad(jp, jp->pos, "more values than the limit");
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        if (cap > jp->max_nodes) cap = jp->max_nodes;
        json_node *nn = realloc(d->nodes, cap * sizeof *nn);
        if (!nn) return em__seterr(EM_ENOMEM, "json: out of memory for %zu nodes", cap);
        d->nodes = nn;
        d->cap = cap;
    }
    *idx = (uint32_t)d->n;
    json_node *n = &d->nodes[d->n++];
    memset(n, 0, sizeof *n);
    n->type = type;
    return 0;
}

static int pool_reserve(json_doc *d, size_t extra) {
    if (d->pool_cap - d->pool_len >= extra) return 0;
    size_t cap = d->pool_cap ? d->pool_cap : 256;
    while (cap - d->pool_len < extra) cap *= 2;
    char *np = realloc(d->pool, cap);
    if (!np) return em__seterr(EM_ENOMEM, "json: out of memory for %zu bytes of strings", cap);
    d->pool = np;
    d->pool_cap = cap;
    return 0;
}

static int hexval(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at p[at, at + 4); -1 when they are not. */
static long jp_hex4(const jparser *jp, size_t at) {
    if (jp->len - at < 4) return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(jp->p[at + (size_t)i]);
        if (h < 0) return -1;
        v = v << 4 | h;
    }
    return v;
}

/* Nonzero when any of the eight bytes in x (little-endian: the first in
 * the low byte) is a quote, a backslash, a control character (< 0x20) or
 * not ASCII: the bytes a string's fast path stops at.  Bytes >= 0x80 show
 * in x's own high bits; below the first of them, a bytewise subtraction
 * borrows first at a byte below what is subtracted (a quote or backslash
 * XORed to 0 is below 1).  So the lowest high bit set marks the first
 * such byte; higher ones may be spurious. */
static inline uint64_t swar_special(uint64_t x) {
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    uint64_t t = (x - ones * 0x20) | (q - ones) | (b - ones);
    return (t | x) & high;
}

/* A string at jp->pos (its opening quote), decoded into the pool. */
static int jp_string(jparser *jp, uint32_t *off, uint32_t *slen) {
    json_doc *d = jp->d;
    size_t start = jp->pos++;
    /* The decoded string is no longer than the text left, plus its NUL. */
    int rc = pool_reserve(d, jp->len - jp->pos + 1);
    if (rc) return rc;
    char *o = d->pool + d->pool_len, *o0 = o;
    for (;;) {
        /* Eight plain bytes at a time (no quote, backslash, control
         * character or byte >= 0x80): copied as they are.  The pool holds
         * the text left, so eight bytes of it fit. */
        while (jp->len - jp->pos >= 8) {
            uint64_t x;
            memcpy(&x, jp->p + jp->pos, 8);
            memcpy(o, &x, 8);
            uint64_t m = swar_special(x);
            if (!m) {
                o += 8;
                jp->pos += 8;
                continue;
            }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            /* the lowest flagged byte is the first special one: keep the
             * plain bytes before it */
            size_t k = (size_t)__builtin_ctzll(m) >> 3;
            o += k;
            jp->pos += k;
#endif
            break;
        }
        if (jp->pos >= jp->len) return jp_bad(jp, start, "unterminated string starting");
        uint8_t c = jp->p[jp->pos];
        if (c == '"') {
            jp->pos++;
            break;
        }
        if (c < 0x20) return jp_bad(jp, jp->pos, "control character in a string");
        if (c >= 0x80) {
            size_t n = utf8_len(jp->p + jp->pos, jp->len - jp->pos);
            if (!n) return jp_bad(jp, jp->pos, "invalid UTF-8");
            memcpy(o, jp->p + jp->pos, n);
            o += n;
            jp->pos += n;
            continue;
        }
        if (c != '\\') {
            *o++ = (char)c;
            jp->pos++;
            continue;
        }
        size_t esc = jp->pos;
        if (jp->len - jp->pos < 2) return jp_bad(jp, start, "unterminated string starting");
        uint8_t e = jp->p[jp->pos + 1];
        jp->pos += 2;
        switch (e) {
        case '"': *o++ = '"'; continue;
        case '\\': *o++ = '\\'; continue;
        case '/': *o++ = '/'; continue;
        case 'b': *o++ = '\b'; continue;
        case 'f': *o++ = '\f'; continue;
        case 'n': *o++ = '\n'; continue;
        case 'r': *o++ = '\r'; continue;
        case 't': *o++ = '\t'; continue;
        case 'u': break;
        default: return jp_bad(jp, esc, "bad escape");
        }
        long u = jp_hex4(jp, jp->pos);
        if (u < 0) return jp_bad(jp, esc, "bad \\u escape");
        jp->pos += 4;
        if (u >= 0xdc00 && u <= 0xdfff) return jp_bad(jp, esc, "lone low surrogate");
        if (u >= 0xd800 && u <= 0xdbff) {
            long lo = -1;
            if (jp->len - jp->pos >= 6 && jp->p[jp->pos] == '\\' && jp->p[jp->pos + 1] == 'u')
                lo = jp_hex4(jp, jp->pos + 2);
            if (lo < 0xdc00 || lo > 0xdfff) return jp_bad(jp, esc, "lone high surrogate");
            jp->pos += 6;
            u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
        }
        /* At most 4 bytes out for 6 or 12 in: the reservation holds. */
        if (u < 0x80) *o++ = (char)u;
        else if (u < 0x800) {
            *o++ = (char)(0xc0 | u >> 6);
            *o++ = (char)(0x80 | (u & 0x3f));
        } else if (u < 0x10000) {
            *o++ = (char)(0xe0 | u >> 12);
            *o++ = (char)(0x80 | (u >> 6 & 0x3f));
            *o++ = (char)(0x80 | (u & 0x3f));
        } else {
            *o++ = (char)(0xf0 | u >> 18);
            *o++ = (char)(0x80 | (u >> 12 & 0x3f));
            *o++ = (char)(0x80 | (u >> 6 & 0x3f));
            *o++ = (char)(0x80 | (u & 0x3f));
        }
    }
    *o = '\0';
    *off = (uint32_t)d->pool_len;
    *slen = (uint32_t)(o - o0);
    d->pool_len += (size_t)(o - o0) + 1;
    return 0;
}

static bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

/* A number at jp->pos into node idx. */
static int jp_number(jparser *jp, uint32_t idx) {
    const uint8_t *p = jp->p;
    size_t start = jp->pos, i = start, end = jp->len;
    bool neg = false, integer = true;
    if (i < end && p[i] == '-') neg = true, i++;
    if (i >= end || !is_digit(p[i])) return jp_bad(jp, start, "bad number");
    if (p[i] == '0') {
        i++;
        if (i < end && is_digit(p[i])) return jp_bad(jp, start, "leading zero in a number");
    } else
        while (i < end && is_digit(p[i])) i++;
    if (i < end && p[i] == '.') {
        integer = false;
        i++;
        if (i >= end || !is_digit(p[i])) return jp_bad(jp, start, "no digit after a number's point");
        while (i < end && is_digit(p[i])) i++;
    }
    if (i < end && (p[i] == 'e' || p[i] == 'E')) {
        integer = false;
        i++;
        if (i < end && (p[i] == '+' || p[i] == '-')) i++;
        if (i >= end || !is_digit(p[i])) return jp_bad(jp, start, "no digit in a number's exponent");
        while (i < end && is_digit(p[i])) i++;
    }
    jp->pos = i;
    json_node *n = &jp->d->nodes[idx];
    if (integer) {
        /* Accumulate as a negative number: int64's range is one larger there. */
        int64_t v = 0;
        bool fits = true;
        if (i - start - neg <= 18) { /* 18 digits cannot overflow */
            for (size_t k = start + neg; k < i; k++) v = v * 10 - (p[k] - '0');
            n->type = JSON_INT;
            n->v.i = neg ? v : -v;
            return 0;
        }
        for (size_t k = start + neg; k < i && fits; k++) {
            int dg = p[k] - '0';
            if (v < (INT64_MIN + dg) / 10) fits = false;
            else v = v * 10 - dg;
        }
        if (fits && (neg || v != INT64_MIN)) {
            n->type = JSON_INT;
            n->v.i = neg ? v : -v;
            return 0;
        }
    }
    char small[64], *buf = small;
    size_t nl = i - start;
    if (nl >= sizeof small && !(buf = malloc(nl + 1)))
        return em__seterr(EM_ENOMEM, "json: out of memory for a number of %zu bytes", nl);
    memcpy(buf, p + start, nl);
    buf[nl] = '\0';
    double dv = strtod(buf, NULL);
    if (buf != small) free(buf);
    if (!isfinite(dv)) return jp_bad(jp, start, "number out of a double's range");
    n->type = JSON_DOUBLE;
    n->v.d = dv;
    return 0;
}

static bool jp_word(jparser *jp, const char *w, size_t n) {
    if (jp->len - jp->pos < n || memcmp(jp->p + jp->pos, w, n)) return false;
    jp->pos += n;
    return true;
}

/* One value at jp->pos (after whitespace), at nesting depth `depth`. */
static int jp_value(jparser *jp, uint32_t depth, uint32_t *out_idx) {
    jp_ws(jp);
    if (jp->pos >= jp->len) return jp_bad(jp, jp->pos, "a value expected");
    uint8_t c = jp->p[jp->pos];
    uint32_t idx = 0;
    int rc;
    size_t at = jp->pos;
    if (c == '{' || c == '[') {
        bool obj = c == '{';
        if (depth >= jp->max_depth) return jp_bad(jp, at, "nesting deeper than the limit");
        if ((rc = jp_node(jp, obj ? JSON_OBJECT : JSON_ARRAY, &idx))) return rc;
        jp->pos++;
        jp_ws(jp);
        if (jp->pos < jp->len && jp->p[jp->pos] == (obj ? '}' : ']')) {
            jp->pos++;
            *out_idx = idx;
            return 0;
        }
        uint32_t prev = 0, count = 0;
        for (;;) {
            uint32_t koff = 0, klen = 0, child;
            if (obj) {
                jp_ws(jp);
                if (jp->pos >= jp->len) return jp_bad(jp, at, "unterminated object starting");
                if (jp->p[jp->pos] != '"') return jp_bad(jp, jp->pos, "a key expected");
                if ((rc = jp_string(jp, &koff, &klen))) return rc;
                jp_ws(jp);
                if (jp->pos >= jp->len) return jp_bad(jp, at, "unterminated object starting");
                if (jp->p[jp->pos] != ':') return jp_bad(jp, jp->pos, "':' expected");
                jp->pos++;
            }
            jp_ws(jp);
            if (jp->pos >= jp->len) return jp_bad(jp, at, obj ? "unterminated object starting" : "unterminated array starting");
            if ((rc = jp_value(jp, depth + 1, &child))) return rc;
            json_node *cn = &jp->d->nodes[child];
            cn->key_off = koff;
            cn->key_len = klen;
            if (prev) jp->d->nodes[prev].next = child;
            prev = child;
            count++;
            jp_ws(jp);
            if (jp->pos >= jp->len) return jp_bad(jp, at, obj ? "unterminated object starting" : "unterminated array starting");
            uint8_t s = jp->p[jp->pos++];
            if (s == ',') continue;
            if (s == (obj ? '}' : ']')) break;
            return jp_bad(jp, jp->pos - 1, obj ? "',' or '}' expected" : "',' or ']' expected");
        }
        jp->d->nodes[idx].n = count;
        *out_idx = idx;
        return 0;
    }
    if ((rc = jp_node(jp, JSON_NULL, &idx))) return rc;
    *out_idx = idx;
    json_node *n = &jp->d->nodes[idx];
    if (c == '"') {
        n->type = JSON_STRING;
        uint32_t off, len;
        if ((rc = jp_string(jp, &off, &len))) return rc;
        n = &jp->d->nodes[idx];
        n->v.s.off = off;
        n->v.s.len = len;
        return 0;
    }
    if (c == '-' || is_digit(c)) return jp_number(jp, idx);
    if (jp_word(jp, "null", 4)) return 0;
    n->type = JSON_BOOL;
    if (jp_word(jp, "true", 4)) return n->b = true, 0;
    if (jp_word(jp, "false", 5)) return 0;
    return jp_bad(jp, at, "not a JSON value");
}

int json_parse(const uint8_t *p, size_t len, const json_limits *lim, json_doc *out) {
    json_doc_reset(out);
    jparser jp = {p, len, 0, JSON_DEFAULT_DEPTH, JSON_DEFAULT_NODES, out};
    size_t max_bytes = JSON_DEFAULT_BYTES;
    if (lim) {
        if (lim->max_depth) jp.max_depth = lim->max_depth;
        if (lim->max_nodes) jp.max_nodes = lim->max_nodes;
        if (lim->max_bytes) max_bytes = lim->max_bytes;
    }
    if (jp.max_depth > JSON_DEPTH_MAX) jp.max_depth = JSON_DEPTH_MAX;
    if (max_bytes > JSON_BYTES_MAX) max_bytes = JSON_BYTES_MAX;
    if (len > max_bytes) return em__seterr(EM_ECORRUPT, "json: text longer than the limit of %zu bytes at byte %zu", max_bytes, max_bytes);
    uint32_t root;
    int rc = jp_value(&jp, 0, &root);
    if (!rc) {
        jp_ws(&jp);
        if (jp.pos < len) rc = jp_bad(&jp, jp.pos, "text after the value");
    }
    if (rc) json_doc_reset(out);
    return rc;
}

void json_doc_reset(json_doc *d) {
    d->n = 0;
    d->pool_len = 0;
}

void json_doc_free(json_doc *d) {
    free(d->nodes);
    free(d->pool);
    *d = (json_doc)JSON_DOC_INIT;
}

/* ---------------------------------------------------------------- lookup */

const json_node *json_root(const json_doc *d) { return d->n ? &d->nodes[0] : NULL; }

const json_node *json_first(const json_doc *d, const json_node *n) {
    (void)d; /* the first child follows its container */
    if (!n || (n->type != JSON_ARRAY && n->type != JSON_OBJECT) || !n->n) return NULL;
    return n + 1;
}

const json_node *json_next(const json_doc *d, const json_node *n) {
    return n && n->next ? &d->nodes[n->next] : NULL;
}

const char *json_key(const json_doc *d, const json_node *n, size_t *len) {
    if (len) *len = n ? n->key_len : 0;
    return n && n->key_len ? d->pool + n->key_off : "";
}

const json_node *json_get(const json_doc *d, const json_node *obj, const char *key) {
    if (!obj || obj->type != JSON_OBJECT) return NULL;
    size_t kl = strlen(key);
    for (const json_node *c = json_first(d, obj); c; c = json_next(d, c))
        if (c->key_len == kl && !memcmp(d->pool + c->key_off, key, kl)) return c;
    return NULL;
}

const json_node *json_at(const json_doc *d, const json_node *arr, size_t i) {
    if (!arr || arr->type != JSON_ARRAY || i >= arr->n) return NULL;
    const json_node *c = json_first(d, arr);
    while (i--) c = json_next(d, c);
    return c;
}

bool json_as_i64(const json_node *n, int64_t *v) {
    if (!n || n->type != JSON_INT) return false;
    *v = n->v.i;
    return true;
}

bool json_as_f64(const json_node *n, double *v) {
    if (!n || (n->type != JSON_INT && n->type != JSON_DOUBLE)) return false;
    *v = n->type == JSON_INT ? (double)n->v.i : n->v.d;
    return true;
}

bool json_as_bool(const json_node *n, bool *v) {
    if (!n || n->type != JSON_BOOL) return false;
    *v = n->b;
    return true;
}

bool json_as_str(const json_doc *d, const json_node *n, const char **v, size_t *len) {
    if (!n || n->type != JSON_STRING) return false;
    *v = d->pool + n->v.s.off;
    if (len) *len = n->v.s.len;
    return true;
}

bool json_is_null(const json_node *n) { return n && n->type == JSON_NULL; }
