/*
 * test_prefixcodec.c -- the prefix codec (executor/prefixcodec.h) on its
 * own: round trips of every record shape (pairs of 8-byte numbers, which
 * take the word path, mixed lengths, plain records, empty fields, long
 * shared prefixes), its sizes, and the decoder refusing every kind of bad
 * input without reading or writing past its buffers.
 */
#include <stdlib.h>
#include <string.h>

#include "prefixcodec.h"
#include "recfmt.h"
#include "../test.h"

/* Encode then decode raw[0, n): 1 when the bytes come back exactly (and
 * *zlen is the encoded size), 0 otherwise. */
static int round_trip(const ebuf *raw, size_t *zlen) {
    size_t cap = 2 * raw->len + 1;
    uint8_t *z = malloc(cap), *out = malloc(raw->len + 1);
    int ok = z && out;
    size_t n = ok ? prefix_encode(raw->p, raw->len, z, cap) : 0;
    ok = ok && (n || !raw->len) && !prefix_decode(z, n, out, raw->len) &&
         (!raw->len || !memcmp(out, raw->p, raw->len));
    if (zlen) *zlen = n;
    free(z);
    free(out);
    return ok;
}

static void put_rec(ebuf *b, const void *k, size_t kl, const void *v, size_t vl) {
    em_rec r = {k, kl, v, vl};
    if (rec_append(b, &r)) abort();
}

TEST(prefixcodec_number_pairs) {
    /* bench/shuffle's shape: keys below 1M and values below 100 as 8-byte
     * order-preserving numbers; 18 bytes a record become 8 or so. */
    ebuf raw = EBUF_INIT;
    uint64_t x = 12345;
    for (int i = 0; i < 5000; i++) {
        uint8_t k[8], v[8];
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        em_i64_enc((int64_t)(x >> 44), k);
        em_i64_enc(1 + (int64_t)(x % 100), v);
        put_rec(&raw, k, 8, v, 8);
    }
    size_t zlen;
    CHECK(round_trip(&raw, &zlen));
    CHECK_EQ_I64(raw.len, 5000 * 18);
    CHECK(zlen < 5000 * 9);
    /* Equal neighbours share the whole word; negative numbers too. */
    ebuf_reset(&raw);
    for (int i = 0; i < 100; i++) {
        uint8_t k[8], v[8];
        em_i64_enc(i / 10 - 5, k);
        em_i64_enc(-1000000000000ll * (i % 3), v);
        put_rec(&raw, k, 8, v, 8);
    }
    CHECK(round_trip(&raw, &zlen));
    ebuf_free(&raw);
}

TEST(prefixcodec_mixed_records) {
    /* Every shape in one block: plain records between pairs (the key to
     * share with stays the last pair's), empty keys and values, lengths
     * of 1 to 300 bytes, fields longer and shorter than their neighbours,
     * 8-byte fields after longer ones. */
    ebuf raw = EBUF_INIT;
    uint8_t k[300], v[300];
    for (int i = 0; i < 3000; i++) {
        size_t kl = (size_t)(i * 7) % 300, vl = (size_t)(i * 13) % 300;
        if (i % 5 == 0) kl = 8;
        if (i % 3 == 0) vl = 8;
        for (size_t j = 0; j < kl; j++) k[j] = (uint8_t)(j < 20 ? 'a' + j : i + j);
        for (size_t j = 0; j < vl; j++) v[j] = (uint8_t)(j < 5 ? 0 : i * j);
        if (i % 11 == 4) {
            em_rec r = {NULL, 0, v, vl};
            if (rec_append(&raw, &r)) abort();
        } else {
            put_rec(&raw, k, kl, v, vl);
        }
    }
    CHECK(round_trip(&raw, NULL));
    ebuf_free(&raw);
    /* The empty block, and one empty record. */
    CHECK(round_trip(&raw, NULL));
    put_rec(&raw, "", 0, "", 0);
    CHECK(round_trip(&raw, NULL));
    ebuf_free(&raw);
}

/* The format as prefixcodec.h states it, field by field, for comparing
 * the encoder's words with: returns the encoded length. */
static size_t shared(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
    size_t i = 0;
    while (i < al && i < bl && a[i] == b[i]) i++;
    return i;
}
static size_t ref_encode(const uint8_t *raw, size_t rlen, uint8_t *out) {
    const uint8_t *p = raw, *end = raw + rlen, *pk = NULL, *pv = NULL;
    size_t pkl = 0, pvl = 0, o = 0;
    while (p < end) {
        em_rec r;
        size_t n = rec_get(p, end, &r);
        if (!n) abort();
        if (r.key) {
            size_t ks = shared(pk, pkl, r.key, r.klen);
            o += varint_put(out + o, r.klen + 1);
            o += varint_put(out + o, ks);
            memcpy(out + o, (const uint8_t *)r.key + ks, r.klen - ks);
            o += r.klen - ks;
            pk = r.key;
            pkl = r.klen;
        } else {
            out[o++] = 0;
        }
        size_t vs = shared(pv, pvl, r.val, r.vlen);
        o += varint_put(out + o, r.vlen);
        o += varint_put(out + o, vs);
        memcpy(out + o, (const uint8_t *)r.val + vs, r.vlen - vs);
        o += r.vlen - vs;
        pv = r.val;
        pvl = r.vlen;
        p += n;
    }
    return o;
}

/* Keys and values of every pair of widths up to 8 bytes (the word paths
 * of both sides), in runs of one shape with shapes changing between
 * them, plain records among them, and blocks ending on a short record:
 * the encoding is the format's byte for byte, and decodes exactly. */
TEST(prefixcodec_narrow_fields) {
    ebuf raw = EBUF_INIT;
    uint64_t x = 99;
    for (int round = 0; round < 3; round++) {
        ebuf_reset(&raw);
        for (size_t kl = 0; kl <= 8; kl++)
            for (size_t vl = 0; vl <= 8; vl++) {
                int run = 1 + (int)((kl * 9 + vl + (size_t)round) % 40);
                for (int i = 0; i < run; i++) {
                    uint8_t k[8], v[8];
                    x = x * 6364136223846793005ull + 1442695040888963407ull;
                    for (size_t j = 0; j < 8; j++) { /* high bytes shared often */
                        k[j] = (uint8_t)(j < 3 ? (uint64_t)(i / 7) : x >> (8 * j));
                        v[j] = (uint8_t)(j + 1 < vl ? 0 : x >> (8 * (7 - j)));
                    }
                    if (round == 1 && i % 9 == 8) {
                        em_rec r = {NULL, 0, v, vl};
                        if (rec_append(&raw, &r)) abort();
                    } else {
                        put_rec(&raw, k, kl, v, vl);
                    }
                }
            }
        if (round == 2) put_rec(&raw, "ab", 2, "", 0); /* a short last record */
        size_t cap = 2 * raw.len + 1, zlen;
        uint8_t *z = malloc(cap), *want = malloc(cap);
        size_t n = prefix_encode(raw.p, raw.len, z, cap), wn = ref_encode(raw.p, raw.len, want);
        CHECK_EQ_I64(n, wn);
        CHECK(!memcmp(z, want, n));
        free(z);
        free(want);
        CHECK(round_trip(&raw, &zlen));
        /* Every prefix of records decodes too (ends at every offset). */
        size_t pos = 0, ends = 0;
        while (pos < raw.len && ends < 200) {
            em_rec r;
            pos += rec_get(raw.p + pos, raw.p + raw.len, &r);
            ebuf part = {raw.p, pos, pos};
            CHECK(round_trip(&part, NULL));
            ends++;
        }
    }
    ebuf_free(&raw);
}

TEST(prefixcodec_long_shared_prefix) {
    /* Long equal keys and values cost a few bytes each after the first. */
    ebuf raw = EBUF_INIT;
    static uint8_t big[20000];
    memset(big, 'x', sizeof big);
    for (int i = 0; i < 50; i++) {
        big[sizeof big - 1] = (uint8_t)i;
        put_rec(&raw, big, sizeof big, big, 1000 + (size_t)i);
    }
    size_t zlen;
    CHECK(round_trip(&raw, &zlen));
    CHECK(zlen < sizeof big + 1000 + 50 * 16);
    ebuf_free(&raw);
}

TEST(prefixcodec_encode_limits) {
    ebuf raw = EBUF_INIT;
    uint8_t z[64];
    /* Records that share nothing grow by their shared lengths: with cap =
     * the raw length the encoder reports 0 (does not shrink). */
    put_rec(&raw, "a", 1, "b", 1);
    put_rec(&raw, "c", 1, "d", 1);
    CHECK_EQ_I64(prefix_encode(raw.p, raw.len, z, raw.len), 0);
    CHECK(prefix_encode(raw.p, raw.len, z, 2 * raw.len) > raw.len);
    /* Bytes that are not whole records. */
    CHECK_EQ_I64(prefix_encode(raw.p, raw.len - 1, z, sizeof z), 0);
    const uint8_t bad[] = {0x80};
    CHECK_EQ_I64(prefix_encode(bad, 1, z, sizeof z), 0);
    /* A length in more bytes than it needs (0 as 0x80 0x00) would come
     * back shorter: not coded. */
    const uint8_t long_zero[] = {0x80, 0x00, 0x01, 'v'};
    CHECK_EQ_I64(prefix_encode(long_zero, sizeof long_zero, z, sizeof z), 0);
    ebuf_free(&raw);
}

/* Decode z (n bytes) into exactly rlen bytes of a buffer that is exactly
 * rlen long (ASan would see a byte past it). */
static int decode_exact(const uint8_t *z, size_t n, size_t rlen) {
    uint8_t *zc = malloc(n ? n : 1), *out = malloc(rlen ? rlen : 1);
    if (n) memcpy(zc, z, n);
    int rc = prefix_decode(zc, n, out, rlen);
    free(zc);
    free(out);
    return rc;
}

TEST(prefixcodec_decode_refuses) {
    /* A good block first: key "ab" value "cd", then key "ax" (shares 1)
     * value "cd" (shares 2). */
    const uint8_t good[] = {3, 0, 'a', 'b', 2, 0, 'c', 'd', 3, 1, 'x', 2, 2};
    CHECK_OK(decode_exact(good, sizeof good, 12));
    /* Any other raw length. */
    CHECK_EQ_I64(decode_exact(good, sizeof good, 11), -1);
    CHECK_EQ_I64(decode_exact(good, sizeof good, 13), -1);
    /* Every cut. */
    for (size_t n = 0; n < sizeof good; n++) CHECK_EQ_I64(decode_exact(good, n, 12), -1);
    /* A shared length past the previous field, or past the field itself. */
    const uint8_t past_prev[] = {3, 1, 'a', 'b', 2, 0, 'c', 'd'};
    CHECK_EQ_I64(decode_exact(past_prev, sizeof past_prev, 6), -1);
    const uint8_t past_field[] = {3, 0, 'a', 'b', 2, 0, 'c', 'd', 2, 2, 2, 2};
    CHECK_EQ_I64(decode_exact(past_field, sizeof past_field, 11), -1);
    /* A tail running past the input; a field longer than the output. */
    const uint8_t long_tail[] = {3, 0, 'a', 'b', 0x7f, 0, 'c'};
    CHECK_EQ_I64(decode_exact(long_tail, sizeof long_tail, 200), -1);
    const uint8_t huge_len[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 'a'};
    CHECK_EQ_I64(decode_exact(huge_len, sizeof huge_len, 16), -1);
    /* A varint that never ends. */
    const uint8_t endless[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    CHECK_EQ_I64(decode_exact(endless, sizeof endless, 100), -1);
    /* After a record of two words: a shared length of 9 leaves the word
     * path, and the general one refuses it; a value of 7 bytes leaves it
     * too, and the general path decodes it. */
    uint8_t w[64] = {9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8};
    CHECK_OK(decode_exact(w, 20, 18));
    memcpy(w + 20, (const uint8_t[]){9, 9, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0}, 20);
    CHECK_EQ_I64(decode_exact(w, 40, 36), -1);
    memcpy(w + 20, (const uint8_t[]){9, 8, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 20);
    CHECK_OK(decode_exact(w, 31, 35));
    /* ... and a good one after it decodes from the previous words. */
    memcpy(w + 20, (const uint8_t[]){9, 7, 9, 8, 6, 0xaa, 0xbb, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 20);
    uint8_t out[36];
    CHECK_OK(prefix_decode(w, 27, out, 36));
    const uint8_t want[18] = {9, 1, 2, 3, 4, 5, 6, 7, 9, 8, 1, 2, 3, 4, 5, 6, 0xaa, 0xbb};
    CHECK(!memcmp(out + 18, want, 18));
}
