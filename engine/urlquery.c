/*
 * urlquery.c -- a URL query's parameters, decoded, and percent-encoding
 * (see urlquery.h).
 */
#include <string.h>

#include "ember.h"
#include "err.h"
#include "urlquery.h"

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decode s[0, n) into out (cap bytes), '+' a space when plus.  Its
 * length, or -1. */
static long decode_as(const char *s, size_t n, char *out, size_t cap, int plus) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= n) return -1;
            int a = hexval(s[i + 1]), b = hexval(s[i + 2]);
            if (a < 0 || b < 0) return -1;
            c = a * 16 + b;
            i += 2;
            if (!c) return -1;
        } else if (c == '+' && plus) {
            c = ' ';
        }
        if (k + 1 >= cap) return -1;
        out[k++] = (char)c;
    }
    if (cap) out[k] = 0;
    return (long)k;
}

static long decode(const char *s, size_t n, char *out, size_t cap) { return decode_as(s, n, out, cap, 1); }

long urlq_decode_segment(const char *s, size_t n, char *out, size_t cap) { return decode_as(s, n, out, cap, 0); }

int urlq_get(const char *q, size_t qlen, const char *name, char *out, size_t cap) {
    char key[256];
    size_t s = 0;
    while (s <= qlen) {
        size_t e = s;
        while (e < qlen && q[e] != '&') e++;
        size_t eq = s;
        while (eq < e && q[eq] != '=') eq++;
        long kl = decode(q + s, eq - s, key, sizeof key);
        if (kl >= 0 && (size_t)kl == strlen(name) && !memcmp(key, name, (size_t)kl)) {
            size_t vs = eq < e ? eq + 1 : e;
            return decode(q + vs, e - vs, out, cap) < 0 ? -1 : 1;
        }
        s = e + 1;
    }
    return 0;
}

int urlq_encode(ebuf *b, const char *s) {
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        int plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.' || c == '~';
        char e[3] = {'%', hex[c >> 4], hex[c & 15]};
        if (plain ? ebuf_append(b, s, 1) : ebuf_append(b, e, 3)) return em__seterr(EM_ENOMEM, "out of memory");
    }
    return 0;
}
