/*
 * test_extsort.c -- the external sorter on keys the prefix alone cannot
 * order: lengths 0 to 20 over a two-letter alphabet (so many keys share
 * their first 8 bytes, and short keys are prefixes of long ones), pairs
 * and plain records, both directions, in memory (radix sort with its
 * comparison fix-up, and the comparison sort below its size) and with
 * spilled runs merged.  The expected order is qsort's with rec_key_cmp.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "extsort.h"
#include "recfmt.h"

typedef struct key { uint8_t b[24]; size_t len; int plain; } key;

static int key_cmp(const void *x, const void *y) {
    const key *a = x, *b = y;
    return bytes_cmp(a->b, a->len, b->b, b->len);
}

static void make_keys(key *k, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t r = seed >> 11;
        k[i].len = (size_t)(r % 21);
        for (size_t j = 0; j < k[i].len; j++) k[i].b[j] = (uint8_t)('a' + ((r >> (5 + j)) & 1));
        if (k[i].len > 3 && (r >> 40) % 4 == 0) k[i].b[k[i].len - 1] = 0; /* zero bytes, as the padding */
        k[i].plain = (r >> 50) % 5 == 0;
    }
}

/* Sort n keys with the given budget; checks the order and the count. */
static int sort_keys(size_t n, size_t budget, int descending, int64_t *spills) {
    key *k = malloc(n * sizeof *k), *want = malloc(n * sizeof *want);
    make_keys(k, n, n * 31 + budget + (size_t)descending);
    memcpy(want, k, n * sizeof *k);
    qsort(want, n, sizeof *want, key_cmp);
    extsort es;
    es_init(&es, test_tmpdir(), budget, descending, (bf_codec){BF_LZ4, 0}, 4096);
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        em_rec r = k[i].plain ? (em_rec){NULL, 0, k[i].b, k[i].len} : (em_rec){k[i].b, k[i].len, "v", 1};
        ok = es_add(&es, &r) == 0;
    }
    ok = ok && es_finish(&es) == 0;
    em_rec r;
    size_t got = 0;
    while (ok && es_next(&es, &r) == 1) {
        const key *w = &want[descending ? n - 1 - got : got];
        const void *kb = r.key ? r.key : r.val;
        size_t kl = r.key ? r.klen : r.vlen;
        if (bytes_cmp(kb, kl, w->b, w->len)) {
            fprintf(stderr, "  record %zu out of order (length %zu, expected length %zu)\n", got, kl, w->len);
            ok = 0;
        }
        got++;
    }
    if (got != n) ok = 0;
    *spills = es.spills;
    es_free(&es);
    free(k);
    free(want);
    return ok;
}

TEST(extsort_prefix_ties_in_memory) {
    int64_t spills;
    for (int d = 0; d < 2; d++) {
        CHECK(sort_keys(50000, 64 << 20, d, &spills)); /* radix sort, many equal prefixes */
        CHECK_EQ_I64(spills, 0);
        CHECK(sort_keys(100, 64 << 20, d, &spills));   /* comparison sort */
        CHECK(sort_keys(1, 64 << 20, d, &spills));
    }
}

TEST(extsort_prefix_ties_spilled) {
    int64_t spills;
    for (int d = 0; d < 2; d++) {
        CHECK(sort_keys(50000, 256 << 10, d, &spills));
        CHECK(spills > 1);
    }
}

/* Random int64 keys (every prefix byte varies) and a constant top byte
 * (the LSD passes skip bytes): ascending and exact. */
TEST(extsort_int64_keys) {
    for (int variant = 0; variant < 2; variant++) {
        extsort es;
        es_init(&es, test_tmpdir(), 64 << 20, 0, (bf_codec){BF_LZ4, 0}, 4096);
        uint64_t s = 12345, sum = 0;
        size_t n = 300000;
        for (size_t i = 0; i < n; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            int64_t v = variant ? (int64_t)(s >> 40) : (int64_t)s;
            uint8_t b[8];
            em_i64_enc(v, b);
            sum += (uint64_t)v;
            em_rec r = {b, 8, "", 0};
            CHECK_OK(es_add(&es, &r));
        }
        CHECK_OK(es_finish(&es));
        em_rec r;
        int64_t prev = INT64_MIN;
        size_t got = 0;
        uint64_t gsum = 0;
        while (es_next(&es, &r) == 1) {
            int64_t v = em_i64_dec(r.key);
            CHECK(v >= prev);
            prev = v;
            gsum += (uint64_t)v;
            got++;
        }
        CHECK_EQ_I64(got, n);
        CHECK(gsum == sum);
        es_free(&es);
    }
}
