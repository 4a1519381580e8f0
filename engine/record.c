/*
 * record.c -- the public record helpers: order-preserving number encodings,
 * tuples, lists and cogroup values (formats in recfmt.h), and the hash used
 * for partitioning.
 */
#include <string.h>

#include "ember.h"
#include "recfmt.h"
#include "shortkey.h"

/* The library's functions; ember.h's macros of these names call the inline
 * copies, hence the parentheses. */
void(em_i64_enc)(int64_t v, void *out8) { enc_i64(v, out8); }
int64_t(em_i64_dec)(const void *p8) { return dec_i64(p8); }
void(em_f64_enc)(double v, void *out8) { enc_f64(v, out8); }
double(em_f64_dec)(const void *p8) { return dec_f64(p8); }

int tuple_pack(ebuf *b, const void *a, size_t alen, int a_present, const void *bv, size_t blen,
               int b_present) {
    size_t n = tuple_size(alen, a_present, blen, b_present);
    if (ebuf_reserve(b, n)) return EM_ENOMEM;
    tuple_put(b->p + b->len, a, alen, a_present, bv, blen, b_present);
    b->len += n;
    return 0;
}

int em_tuple_unpack(const void *v, size_t vlen, em_tuple *out) {
    const uint8_t *p = v, *end = p + vlen;
    uint64_t alen;
    size_t n;
    if (!v || !out || vlen < 2 || p[0] > 3) return EM_ECORRUPT;
    if (!(n = varint_get(p + 1, end, &alen)) || alen > (uint64_t)(end - p - 1 - n)) return EM_ECORRUPT;
    out->a_present = p[0] & 1;
    out->b_present = (p[0] >> 1) & 1;
    out->a = p + 1 + n;
    out->alen = (size_t)alen;
    out->b = p + 1 + n + alen;
    out->blen = (size_t)(end - (p + 1 + n + alen));
    if (!out->a_present && alen) return EM_ECORRUPT;
    if (!out->b_present && out->blen) return EM_ECORRUPT;
    return 0;
}

int em_list_next(const void *list, size_t len, size_t *pos, const void **item, size_t *ilen) {
    const uint8_t *p = list, *end = p + len;
    uint64_t n;
    size_t m;
    if (!pos || (!list && len) || *pos > len) return EM_EINVAL;
    if (*pos == len) return 0;
    if (!(m = varint_get(p + *pos, end, &n)) || n > (uint64_t)(len - *pos - m)) return EM_ECORRUPT;
    if (item) *item = p + *pos + m;
    if (ilen) *ilen = (size_t)n;
    *pos += m + (size_t)n;
    return 1;
}

int em_list_count(const void *list, size_t len, size_t *n) {
    const uint8_t *p = list, *end = p + len;
    if (!n || (!list && len)) return EM_EINVAL;
    *n = 0;
    size_t k = 0;
    while (p < end) {
        uint64_t ilen = *p; /* an item under 128 bytes: its length in one byte */
        size_t m = ilen < 0x80 ? 1 : varint_get(p, end, &ilen);
        if (!m || ilen > (uint64_t)(end - p - m)) return EM_ECORRUPT;
        p += m + (size_t)ilen;
        k++;
    }
    *n = k;
    return 0;
}

int em_list_next_rec(const void *list, size_t len, size_t *pos, em_rec *rec) {
    if (rec) memset(rec, 0, sizeof *rec); /* defined whatever happens */
    const void *item;
    size_t ilen;
    int rc = em_list_next(list, len, pos, &item, &ilen);
    if (rc != 1) return rc;
    if (rec_get(item, (const uint8_t *)item + ilen, rec) != ilen) return EM_ECORRUPT;
    return 1;
}

int em_cogroup_unpack(const void *v, size_t vlen, const void **la, size_t *lalen, const void **lb,
                      size_t *lblen) {
    const uint8_t *p = v;
    uint64_t n;
    size_t m;
    if (!v || !(m = varint_get(p, p + vlen, &n)) || n > vlen - m) return EM_ECORRUPT;
    if (la) *la = p + m;
    if (lalen) *lalen = (size_t)n;
    if (lb) *lb = p + m + n;
    if (lblen) *lblen = vlen - m - (size_t)n;
    return 0;
}

int em_cogroup_unpack_n(const void *v, size_t vlen, int n, const void **lists, size_t *lens) {
    const uint8_t *p = v, *end = p + vlen;
    if (!v || n < 1 || !lists || !lens) return v ? EM_EINVAL : EM_ECORRUPT;
    for (int i = 0; i < n - 1; i++) {
        uint64_t len;
        size_t m = varint_get(p, end, &len);
        if (!m || len > (uint64_t)(end - p - m)) return EM_ECORRUPT;
        lists[i] = p + m;
        lens[i] = (size_t)len;
        p += m + len;
    }
    lists[n - 1] = p;
    lens[n - 1] = (size_t)(end - p);
    return 0;
}

/* A 64-bit multiply-xorshift hash over 8-byte words (wyhash-like mixing);
 * fast for short keys, which dominate shuffles: those of up to 16 bytes
 * take one multiply (shortkey.h, which tables call inline). */
uint64_t em_hash(const void *data, size_t n) {
    const uint8_t *p = data;
    const uint64_t k1 = SK_K1, k2 = SK_K2;
    if (n <= SK_MAX) {
        uint64_t a, b;
        sk_load(p, n, &a, &b);
        return sk_hash(a, b, n);
    }
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n, w;
    while (n >= 8) {
        memcpy(&w, p, 8);
        h = sk_mix(h ^ w ^ k1, k2);
        p += 8;
        n -= 8;
    }
    w = 0;
    if (n) memcpy(&w, p, n);
    h = sk_mix(h ^ w ^ k2, k1 ^ (uint64_t)n);
    return sk_mix(h, k1);
}
