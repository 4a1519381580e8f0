/*
 * recfmt.h -- how records are laid out in batches, blocks and files.  Internal.
 *
 * A record is encoded as
 *     varint(klen + 1)  key bytes  varint(vlen)  value bytes    (a pair)
 *     varint(0)                    varint(vlen)  value bytes    (plain)
 * and a batch is such records back to back, with no per-record allocation.
 * Decoding hands out views into the encoded bytes.
 *
 * Value encodings built on records (public through em_list_next and friends):
 *   list    varint(len) bytes, repeated           (group_by_key, glom items)
 *   cogroup varint(len of list a) list a  list b; with n sides, the
 *           lists of sides 0 .. n-2 each after its varint length, then
 *           the last side's list
 *   tuple   flags (bit 0: a present, bit 1: b present) varint(alen) a  b
 */
#ifndef EM_RECFMT_H
#define EM_RECFMT_H

#include <string.h>

#include "buf.h"
#include "ember.h"

static inline size_t rec_encoded_size(const em_rec *r) {
    size_t n = varint_len(r->vlen) + r->vlen;
    n += r->key ? varint_len(r->klen + 1) + r->klen : 1;
    return n;
}

/* Encode r at p (which has rec_encoded_size bytes); returns bytes written. */
static inline size_t rec_put(uint8_t *p, const em_rec *r) {
    size_t n;
    if (r->key) {
        n = varint_put(p, (uint64_t)r->klen + 1);
        if (r->klen) memcpy(p + n, r->key, r->klen);
        n += r->klen;
    } else {
        p[0] = 0;
        n = 1;
    }
    n += varint_put(p + n, r->vlen);
    if (r->vlen) memcpy(p + n, r->val, r->vlen);
    return n + r->vlen;
}

static inline int rec_append(ebuf *b, const em_rec *r) {
    size_t n = rec_encoded_size(r);
    if (ebuf_reserve(b, n)) return EM_ENOMEM;
    b->len += rec_put(b->p + b->len, r);
    return 0;
}

/* Decode one record from [p, end).  Returns bytes consumed, 0 if malformed.
 * Views point into p. */
static inline size_t rec_get(const uint8_t *p, const uint8_t *end, em_rec *r) {
    uint64_t k, v;
    size_t n = varint_get(p, end, &k), m;
    if (!n) return 0;
    if (k) {
        if ((uint64_t)(end - p - n) < k - 1) return 0;
        r->key = p + n;
        r->klen = (size_t)(k - 1);
        n += r->klen;
    } else {
        r->key = NULL;
        r->klen = 0;
    }
    m = varint_get(p + n, end, &v);
    if (!m) return 0;
    n += m;
    if ((uint64_t)(end - p - n) < v) return 0;
    r->val = p + n;
    r->vlen = (size_t)v;
    return n + r->vlen;
}

/* A record of an 8-byte key and an 8-byte value (int64 or double pairs,
 * the common case of by-key shuffles) is REC_PAIR8 bytes: varint 9, the
 * key, varint 8, the value.  Whether one starts at p (end: the buffer's). */
#define REC_PAIR8 18
static inline int rec_is_pair8(const uint8_t *p, const uint8_t *end) {
    return end - p >= REC_PAIR8 && p[0] == 9 && p[9] == 8;
}

/* The order-preserving 8-byte number encodings: ember.h's inline copies
 * under the names the engine uses. */
static inline void enc_i64(int64_t v, void *out8) { em__i64_enc(v, out8); }
static inline int64_t dec_i64(const void *p8) { return em__i64_dec(p8); }
static inline void enc_f64(double v, void *out8) { em__f64_enc(v, out8); }
static inline double dec_f64(const void *p8) { return em__f64_dec(p8); }

/* Byte-string order: memcmp, then the shorter first. */
static inline int bytes_cmp(const void *a, size_t alen, const void *b, size_t blen) {
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c) return c;
    return alen < blen ? -1 : alen > blen;
}
/* Records by key, for sorting shuffles; plain records sort by value. */
static inline int rec_key_cmp(const em_rec *a, const em_rec *b) {
    if (a->key && b->key) return bytes_cmp(a->key, a->klen, b->key, b->klen);
    return bytes_cmp(a->key ? a->key : a->val, a->key ? a->klen : a->vlen,
                     b->key ? b->key : b->val, b->key ? b->klen : b->vlen);
}
/* Total order on records: key (plain records have none and sort first),
 * then value. */
static inline int rec_cmp(const em_rec *a, const em_rec *b) {
    if (!a->key != !b->key) return a->key ? 1 : -1;
    int c = a->key ? bytes_cmp(a->key, a->klen, b->key, b->klen) : 0;
    return c ? c : bytes_cmp(a->val, a->vlen, b->val, b->vlen);
}

/* Append an item of a list / a tuple. */
static inline int list_append(ebuf *b, const void *p, size_t n) {
    if (ebuf_put_varint(b, n)) return EM_ENOMEM;
    return ebuf_append(b, p, n) ? EM_ENOMEM : 0;
}
int tuple_pack(ebuf *b, const void *a, size_t alen, int a_present, const void *bv, size_t blen,
               int b_present);
/* The bytes of a tuple (a missing side counts as empty), and the tuple
 * written at p, which has that many: tuple_pack's form, for callers that
 * build it in a buffer of their own. */
static inline size_t tuple_size(size_t alen, int a_present, size_t blen, int b_present) {
    if (!a_present) alen = 0;
    return 1 + varint_len(alen) + alen + (b_present ? blen : 0);
}
static inline void tuple_put(uint8_t *p, const void *a, size_t alen, int a_present, const void *bv, size_t blen,
                             int b_present) {
    if (!a_present) alen = 0;
    if (!b_present) blen = 0;
    *p++ = (uint8_t)((a_present ? 1 : 0) | (b_present ? 2 : 0));
    p += varint_put(p, alen);
    if (alen) memcpy(p, a, alen);
    if (blen) memcpy(p + alen, bv, blen);
}

/* 64-bit hash of a byte string (for hash partitioning and hash tables). */
uint64_t em_hash(const void *p, size_t n);

/* Receives output records; returns 0, EM_STOP to stop early, or < 0. */
typedef int (*rec_sink_fn)(void *sctx, const em_rec *r);

#endif
