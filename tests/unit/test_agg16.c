/*
 * test_agg16.c -- the word table (agg16.h) against a plain array of sums:
 * keys of every length from 0 to 16 bytes, many differing in one byte,
 * through growth from empty and after a reserve; agg16_each gives every
 * key once, as its bytes; agg16_clear empties it for reuse.
 */
#include <string.h>

#include "../test.h"
#include "agg16.h"

/* Key number i: i % 17 bytes, i / 17 written into them in base 26 ('a'
 * for 0, the last byte lowest), so keys of one length differ in one or a
 * few bytes.  A number too big for its length wraps: canon gives the
 * number the key's bytes spell, the one the sums are kept under. */
static size_t key_of(uint32_t i, uint8_t *k) {
    size_t n = i % 17;
    uint32_t x = i / 17;
    memset(k, 'a', n);
    for (size_t j = 0; j < n && x; j++, x /= 26) k[n - 1 - j] = (uint8_t)('a' + x % 26);
    return n;
}
static uint32_t canon(const uint8_t *k, size_t n) {
    uint32_t x = 0;
    for (size_t j = 0; j < n; j++) x = x * 26 + (uint32_t)(k[j] - 'a');
    return x * 17 + (uint32_t)n;
}

enum { K = 60000 };
static int64_t sums[K], seen[K];

static int each_key(void *ctx, const em_rec *r) {
    (void)ctx;
    uint32_t i = canon(r->key, r->klen);
    uint64_t c;
    if (r->vlen != 8 || i >= K) return -1;
    memcpy(&c, r->val, 8);
    seen[i] += (int64_t)c;
    return 0;
}

TEST(agg16_sums_match_an_array) {
    for (int reserve = 0; reserve < 2; reserve++) {
        agg16 t;
        agg16_init(&t);
        if (reserve) CHECK_OK(agg16_reserve(&t, 20000));
        for (int round = 0; round < 2; round++) {
            memset(sums, 0, sizeof sums);
            memset(seen, 0, sizeof seen);
            uint64_t x = 88172645463325252ull;
            size_t distinct = 0;
            for (int step = 0; step < 300000; step++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                uint8_t k[16];
                size_t n = key_of((uint32_t)(x % K), k);
                uint32_t i = canon(k, n);
                uint64_t a, b;
                sk_load(k, n, &a, &b);
                agg16_slot *s;
                int rc = agg16_upsert(&t, a, b, n, sk_hash(a, b, n), &s);
                CHECK(rc >= 0);
                if (!rc) {
                    CHECK(s->comb == 0);
                    CHECK(!sums[i]);
                    distinct++;
                }
                s->comb += i + 1;
                sums[i] += (int64_t)i + 1;
            }
            /* Keys that share bytes are distinct keys: the count is the
             * array's. */
            size_t held = 0;
            for (int i = 0; i < K; i++) held += sums[i] != 0;
            CHECK_EQ_I64((int64_t)agg16_count(&t), (int64_t)held);
            CHECK_EQ_I64((int64_t)distinct, (int64_t)held);
            CHECK_OK(agg16_each(&t, 8, each_key, NULL));
            for (int i = 0; i < K; i++) CHECK_EQ_I64(seen[i], sums[i]);
            agg16_clear(&t);
            CHECK_EQ_I64((int64_t)agg16_count(&t), 0);
            agg16_slot *s;
            uint64_t a, b;
            uint8_t k[16];
            size_t n = key_of(5, k);
            sk_load(k, n, &a, &b);
            CHECK_EQ_I64(agg16_find(&t, a, b, n, sk_hash(a, b, n), &s), 0);
        }
        agg16_free(&t);
    }
}
