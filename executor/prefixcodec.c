/*
 * prefixcodec.c -- front coding of a shuffle block's records (format in
 * prefixcodec.h).
 *
 * The encoder trusts nothing either: its input is the writer's own block,
 * but a record it cannot parse, or whose lengths are not in their shortest
 * form (which decoding would not give back byte for byte), makes it fail
 * (the block is then stored as it is), never read astray.  The decoder checks every length against
 * both buffers before it copies: a shared prefix no longer than the field
 * it comes from, each field inside the output, each stored tail inside
 * the input, and exactly rlen bytes at the end.
 */
#include <string.h>

#include "prefixcodec.h"
#include "recfmt.h"

/* The length of the common prefix of a[0, al) and b[0, bl). */
static inline size_t shared_len(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
    size_t n = al < bl ? al : bl, i = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; i + 8 <= n; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) return i + (size_t)(__builtin_ctzll(x ^ y) >> 3);
    }
#endif
    while (i < n && a[i] == b[i]) i++;
    return i;
}

/* Write a field's length varint, its shared length and its tail at o. */
static inline uint8_t *put_field(uint8_t *o, uint64_t hdr, const uint8_t *p, size_t len, size_t s) {
    o += varint_put(o, hdr);
    o += varint_put(o, s);
    memcpy(o, p + s, len - s);
    return o + (len - s);
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PREFIX_WORDS 1
/* A field of n <= 8 bytes after one of the same length (a number's
 * encoding, the common case, or any fixed-width field) as one word: its
 * shared length is the count of equal low bytes of the two words (zero
 * padded past n), its tail the word shifted down by them.  Both fields
 * have 8 bytes readable from their starts. */
static inline uint8_t *put_word(uint8_t *o, uint8_t hdr, const uint8_t *p, const uint8_t *prev, unsigned n) {
    uint64_t x, y, m = n < 8 ? ((uint64_t)1 << (8 * n)) - 1 : ~(uint64_t)0;
    memcpy(&x, p, 8);
    memcpy(&y, prev, 8);
    x &= m;
    uint64_t d = x ^ (y & m);
    unsigned s = d ? (unsigned)__builtin_ctzll(d) >> 3 : n;
    o[0] = hdr;
    o[1] = (uint8_t)s;
    x = s < 8 ? x >> (8 * s) : 0;
    memcpy(o + 2, &x, 8); /* whole: the caller leaves room past the tail */
    return o + 2 + (n - s);
}
/* The word whose low s bytes are w's and the rest t's low 8 - s bytes. */
static inline uint64_t join_word(uint64_t w, uint64_t t, unsigned s) {
    uint64_t m = s < 8 ? ((uint64_t)1 << (8 * s)) - 1 : ~(uint64_t)0;
    return (w & m) | (s < 8 ? t << (8 * s) : 0);
}
static inline uint64_t load8(const uint8_t *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}
#else
#define PREFIX_WORDS 0
#endif

size_t prefix_encode(const uint8_t *raw, size_t rlen, uint8_t *out, size_t cap) {
    const uint8_t *p = raw, *end = raw + rlen, *pk = NULL, *pv = NULL;
    size_t pkl = 0, pvl = 0;
    uint8_t *o = out, *oend = out + cap;
    while (p < end) {
#if PREFIX_WORDS
        /* A key and a value of the previous record's widths, both at most
         * 8 bytes, seen in the record's bytes (klen + 1, key, vlen,
         * value): each goes as a word, its header written over the bytes
         * past the key's tail, the last store ending at most 20 bytes on.
         * Every load lies inside the 18 bytes ahead, which the record's
         * block holds. */
        if (pk && pkl <= 8 && pvl <= 8 && end - p >= REC_PAIR8 && p[0] == pkl + 1 && p[1 + pkl] == pvl &&
            oend - o >= REC_PAIR8 + 2) {
            if (pkl == 8 && pvl == 8) { /* the common case, with constant widths */
                o = put_word(o, 9, p + 1, pk, 8);
                o = put_word(o, 8, p + 10, pv, 8);
            } else {
                o = put_word(o, (uint8_t)(pkl + 1), p + 1, pk, (unsigned)pkl);
                o = put_word(o, (uint8_t)pvl, p + 2 + pkl, pv, (unsigned)pvl);
            }
            pk = p + 1;
            pv = p + 2 + pkl;
            p += 2 + pkl + pvl;
            continue;
        }
#endif
        em_rec r;
        size_t n = rec_get(p, end, &r);
        /* The decoder writes each length in the shortest form, so a
         * record whose lengths take more bytes could not come back as it
         * was: not coded (our writers never make one). */
        if (!n || n != rec_encoded_size(&r)) return 0;
        size_t ks = r.key ? shared_len(pk, pkl, r.key, r.klen) : 0;
        size_t vs = shared_len(pv, pvl, r.val, r.vlen);
        /* The record's bytes, less what is shared, plus the shared lengths. */
        size_t need = n - ks - vs + varint_len(vs) + (r.key ? varint_len(ks) : 0);
        if ((size_t)(oend - o) < need) return 0;
        if (r.key) {
            o = put_field(o, (uint64_t)r.klen + 1, r.key, r.klen, ks);
            pk = r.key;
            pkl = r.klen;
        } else {
            *o++ = 0;
        }
        o = put_field(o, r.vlen, r.val, r.vlen, vs);
        pv = r.val;
        pvl = r.vlen;
        p += n;
    }
    return (size_t)(o - out);
}

/* Decode one field: its shared length and tail from *zp, rebuilt at out + *o
 * after the length varint hdr, as len bytes whose first ones are those of
 * the previous field at out + *prev (*plen bytes); *prev and *plen then
 * name this one.  0, or -1 when anything runs past either buffer. */
static inline int get_field(const uint8_t **zp, const uint8_t *ze, uint8_t *out, size_t rlen, size_t *o, uint64_t hdr,
                            uint64_t len, size_t *prev, size_t *plen) {
    uint64_t s;
    size_t n = varint_get(*zp, ze, &s);
    if (!n || s > len || s > *plen) return -1;
    *zp += n;
    size_t room = rlen - *o, h = varint_len(hdr);
    if (h > room || len > room - h || len - s > (uint64_t)(ze - *zp)) return -1;
    uint8_t *d = out + *o;
    d += varint_put(d, hdr);
#if PREFIX_WORDS
    if (len == 8 && *plen == 8 && ze - *zp >= 8) {
        /* An 8-byte field after an 8-byte one (checked: it fits at d) as
         * one word: the previous word's low s bytes, then the tail. */
        uint64_t w = join_word(load8(out + *prev), load8(*zp), (unsigned)s);
        memcpy(d, &w, 8);
        *zp += 8 - s;
        *prev = (size_t)(d - out);
        *o += h + 8;
        return 0;
    }
#endif
    /* The previous field ends at or before *o: the copies never overlap. */
    memcpy(d, out + *prev, (size_t)s);
    memcpy(d + s, *zp, (size_t)(len - s));
    *zp += len - s;
    *prev = (size_t)(d - out);
    *plen = (size_t)len;
    *o += h + (size_t)len;
    return 0;
}

#if PREFIX_WORDS
/* Decode the records from zp on whose key and value have the widths kl
 * and vl (at most 8 bytes each) of the previous record's, at *pk and *pv
 * in out: each one's key header and shared length, key tail, value header
 * and shared length and value tail lie in its next 20 bytes at most, each
 * tail read as a word; it is written as two words, the value's header
 * over the bytes past the key, taking at most 18 bytes of out (bytes past
 * the record are written again by the next).  The previous words stay in
 * registers, so no record waits for the last one's stores.  Returns where
 * the first record of another shape (or too near an end) starts. */
static inline __attribute__((always_inline)) const uint8_t *
word_records(const uint8_t *zp, const uint8_t *ze, uint8_t *out, size_t rlen, size_t *op, size_t *pk, size_t *pv,
             unsigned kl, unsigned vl) {
    uint64_t kw = load8(out + *pk), vw = load8(out + *pv);
    size_t o = *op;
    while (ze - zp >= 20 && rlen - o >= 18 && zp[0] == kl + 1 && zp[1] <= kl) {
        unsigned ks = zp[1];
        const uint8_t *q = zp + 2 + (kl - ks);
        if (q[0] != vl || q[1] > vl) break;
        unsigned vs = q[1];
        kw = join_word(kw, load8(zp + 2), ks);
        vw = join_word(vw, load8(q + 2), vs);
        out[o] = (uint8_t)(kl + 1);
        memcpy(out + o + 1, &kw, 8);
        out[o + 1 + kl] = (uint8_t)vl;
        memcpy(out + o + 2 + kl, &vw, 8);
        *pk = o + 1;
        *pv = o + 2 + kl;
        o += 2 + kl + vl;
        zp = q + 2 + (vl - vs);
    }
    *op = o;
    return zp;
}
#endif

int prefix_decode(const uint8_t *z, size_t zlen, uint8_t *out, size_t rlen) {
    const uint8_t *zp = z, *ze = z + zlen;
    size_t o = 0, pk = 0, pkl = 0, pv = 0, pvl = 0;
    while (zp < ze) {
        uint64_t kh, vlen;
#if PREFIX_WORDS
        /* Records of the previous one's widths, up to 8 bytes: as words. */
        if (pkl <= 8 && pvl <= 8 && pk + 8 <= rlen && pv + 8 <= rlen && (pkl || pvl || o)) {
            if (pkl == 8 && pvl == 8) /* the common case, with constant widths */
                zp = word_records(zp, ze, out, rlen, &o, &pk, &pv, 8, 8);
            else
                zp = word_records(zp, ze, out, rlen, &o, &pk, &pv, (unsigned)pkl, (unsigned)pvl);
            if (zp >= ze) break;
        }
#endif
        size_t n = varint_get(zp, ze, &kh);
        if (!n) return -1;
        zp += n;
        if (kh) {
            if (get_field(&zp, ze, out, rlen, &o, kh, kh - 1, &pk, &pkl)) return -1;
        } else {
            if (o >= rlen) return -1;
            out[o++] = 0;
        }
        if (!(n = varint_get(zp, ze, &vlen))) return -1;
        zp += n;
        if (get_field(&zp, ze, out, rlen, &o, vlen, vlen, &pv, &pvl)) return -1;
    }
    return o == rlen ? 0 : -1;
}
