/*
 * test_agg8.c -- the 8-byte key table (agg8.h) against a plain array of
 * sums: growth from empty through many doublings, the key equal to the
 * empty marker kept aside, the byte order of agg8_sort, reuse after
 * agg8_clear, and the seeds that keep one table's walk out of another's
 * order.
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

/* Walked in slot order, a table's keys come sorted by their homes in a
 * smaller table of the same hash (so the reduce side, growing from small,
 * would pile them up past each other); a table of another seed sees them
 * in no order.  Counts the homes that fall below the one before them. */
static int agg8_keys_of(void *ctx, const em_rec *r) {
    uint64_t **at = ctx;
    memcpy(*at, r->key, 8);
    (*at)++;
    return 0;
}

TEST(agg8_seeds_walk_in_no_order) {
    enum { N = 20000 };
    static uint64_t walk[N];
    agg8 a, same, other;
    agg8_init(&a);
    agg8_init(&same);
    agg8_init(&other);
    agg8_seed(&a, AGG8_SEED(AGG8_MAP_SIDE, 3));
    agg8_seed(&same, AGG8_SEED(AGG8_MAP_SIDE, 3));
    agg8_seed(&other, AGG8_SEED(AGG8_REDUCE_SIDE, 3));
    CHECK(a.mult & 1);
    CHECK(other.mult & 1);
    CHECK(a.mult != other.mult);
    for (uint64_t k = 0; k < N; k++) {
        agg8_slot *s;
        CHECK_EQ_I64(agg8_upsert(&a, k, &s), 0);
        s->comb = k;
    }
    uint64_t *at = walk;
    CHECK_EQ_I64(agg8_each(&a, 8, 8, agg8_keys_of, &at), 0);
    CHECK_EQ_I64(at - walk, N);
    CHECK_EQ_I64(agg8_grow(&same), 0); /* the first size, far smaller than a */
    CHECK_EQ_I64(agg8_grow(&other), 0);
    CHECK(same.mask < a.mask);
    int down_same = 0, down_other = 0;
    for (int i = 1; i < N; i++) {
        down_same += agg8_home(&same, walk[i]) < agg8_home(&same, walk[i - 1]);
        down_other += agg8_home(&other, walk[i]) < agg8_home(&other, walk[i - 1]);
    }
    CHECK_EQ_I64(down_same, 0);
    CHECK(down_other > N / 3);
    /* Freed, a table keeps its seed; the seeds of the roles differ. */
    uint64_t mult = other.mult;
    agg8_free(&other);
    CHECK(other.mult == mult);
    agg8 c;
    agg8_init(&c);
    agg8_seed(&c, AGG8_SEED(AGG8_LOCAL, 3));
    CHECK(c.mult != a.mult && c.mult != mult);
    agg8_free(&a);
    agg8_free(&same);
    agg8_free(&c);
}
