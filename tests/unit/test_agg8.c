/*
 * test_agg8.c -- the 8-byte key table (agg8.h) against a plain array of
 * sums: growth from empty through many doublings, the key equal to the
 * empty marker kept aside, the byte order of agg8_sort, and reuse after
 * agg8_clear.
 */
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "agg8.h"
#include "ember.h"

/* Key word of index i: spread out, with i == 7 standing for the marker. */
static uint64_t key_of(uint64_t i) { return i == 7 ? AGG8_EMPTY : i * 0x10001ULL + (i << 48); }

TEST(agg8_sums_match_an_array) {
    enum { K = 50000 };
    static int64_t want[K];
    memset(want, 0, sizeof want);
    agg8 t;
    agg8_init(&t);
    uint64_t x = 88172645463325252ull;
    for (int round = 0; round < 2; round++) {
        for (int step = 0; step < 400000; step++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            uint64_t i = x % K;
            agg8_slot *s;
            int rc = agg8_upsert(&t, key_of(i), &s);
            CHECK(rc >= 0);
            CHECK(s->key == key_of(i));
            if (rc) s->comb += i + 1;
            else s->comb = i + 1;
            want[i] += (int64_t)i + 1;
        }
        size_t held = 0;
        for (uint64_t i = 0; i < K; i++) held += want[i] != 0;
        CHECK_EQ_I64(t.n, held);
        CHECK(t.has_empty); /* key 7 came up */
        /* Every key found with its sum, without inserting. */
        for (uint64_t i = 0; i < K; i++) {
            if (!want[i]) continue;
            agg8_slot *s;
            CHECK_EQ_I64(agg8_upsert(&t, key_of(i), &s), 1);
            CHECK_EQ_I64((int64_t)s->comb, want[i]);
        }
        CHECK(agg8_mem(&t) == 2 * t.n * sizeof(agg8_slot) && t.mask + 1 >= 2 * t.n);
        /* Sorted: ascending bytes, each key once. */
        size_t n = t.n;
        CHECK_OK(agg8_sort(&t));
        for (size_t j = 1; j < n; j++)
            CHECK(memcmp(&t.slot[j - 1].key, &t.slot[j].key, 8) < 0);
        int64_t total = 0, wtotal = 0;
        for (size_t j = 0; j < n; j++) total += (int64_t)t.slot[j].comb;
        for (uint64_t i = 0; i < K; i++) wtotal += want[i];
        CHECK_EQ_I64(total, wtotal);
        agg8_clear(&t);
        CHECK_EQ_I64(t.n, 0);
        CHECK(!t.has_empty);
        memset(want, 0, sizeof want);
    }
    agg8_free(&t);
}

TEST(agg8_only_the_marker) {
    agg8 t;
    agg8_init(&t);
    agg8_slot *s;
    CHECK_EQ_I64(agg8_upsert(&t, AGG8_EMPTY, &s), 0);
    s->comb = 5;
    CHECK_EQ_I64(agg8_upsert(&t, AGG8_EMPTY, &s), 1);
    CHECK_EQ_I64(t.n, 1);
    CHECK_OK(agg8_sort(&t)); /* makes room for it */
    CHECK(t.slot[0].key == AGG8_EMPTY && t.slot[0].comb == 5);
    agg8_free(&t);
}

/* A table reserved for K keys takes them all without growing, and then
 * grows past them as one that was not; a reserve after first use is
 * ignored. */
TEST(agg8_reserve_sizes_once) {
    enum { K = 30000 };
    agg8 t;
    agg8_init(&t);
    CHECK_OK(agg8_reserve(&t, K));
    size_t mask = t.mask;
    CHECK(mask + 1 >= 2 * (K + 1));
    for (uint64_t i = 0; i < K; i++) {
        agg8_slot *s;
        CHECK_EQ_I64(agg8_upsert(&t, key_of(i), &s), 0);
        s->comb = i;
    }
    CHECK_EQ_I64((int64_t)t.mask, (int64_t)mask);
    CHECK_OK(agg8_reserve(&t, 4 * K));
    CHECK_EQ_I64((int64_t)t.mask, (int64_t)mask);
    for (uint64_t i = K; i < 2 * K; i++) {
        agg8_slot *s;
        CHECK_EQ_I64(agg8_upsert(&t, key_of(i), &s), 0);
        s->comb = i;
    }
    CHECK(t.mask > mask);
    for (uint64_t i = 0; i < 2 * K; i++) {
        agg8_slot *s;
        CHECK_EQ_I64(agg8_upsert(&t, key_of(i), &s), 1);
        CHECK_EQ_I64((int64_t)s->comb, (int64_t)i);
    }
    agg8_free(&t);
}
