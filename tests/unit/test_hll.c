/*
 * test_hll.c -- HyperLogLog sketches (engine/hll.c): Spark's precision from
 * relative_sd, estimates within four standard deviations (1.04 / sqrt(m))
 * from 0 to a million distinct values (small counts near exact, with no
 * linear-counting switch), duplicates not counted, and merging sketches
 * equal to sketching the union.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "hll.h"

static uint64_t h64(uint64_t v) {
    uint8_t b[8];
    memcpy(b, &v, 8);
    em_rec r = {NULL, 0, b, 8};
    return hll_hash(&r);
}

TEST(hll_precision_as_spark) {
    int p;
    CHECK_OK(hll_precision(0.05, &p));
    CHECK_EQ_I64(p, 9); /* ceil(2 log2(1.054 / 0.05)) = ceil(8.80) */
    CHECK_OK(hll_precision(0.01, &p));
    CHECK_EQ_I64(p, 14);
    CHECK_OK(hll_precision(0.5, &p));
    CHECK_EQ_I64(p, 4); /* at least 4 */
    CHECK_EQ_I64(hll_precision(0.001, &p), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "relative_sd 0.001 is outside [0.0021, 1)");
    CHECK_EQ_I64(hll_precision(0, &p), EM_EINVAL);
    CHECK_EQ_I64(hll_precision(NAN, &p), EM_EINVAL);
    CHECK_EQ_I64(hll_precision(1, &p), EM_EINVAL);
}

TEST(hll_estimates_within_four_sigma) {
    const int ps[] = {9, 14};
    const uint64_t ns[] = {0, 1, 2, 10, 100, 1000, 5000, 20000, 100000, 1000000};
    for (int a = 0; a < 2; a++) {
        int p = ps[a];
        double sd = 1.04 / sqrt((double)(1u << p));
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
            uint8_t *reg = calloc((size_t)1 << p, 1);
            for (uint64_t v = 0; v < ns[i]; v++) {
                hll_add(reg, p, h64(v * 7919 + (uint64_t)p));
                hll_add(reg, p, h64(v * 7919 + (uint64_t)p)); /* a duplicate changes nothing */
            }
            double e = hll_estimate(reg, p), n = (double)ns[i];
            if (ns[i] <= 10) {
                if (fabs(e - n) > 0.5) fprintf(stderr, "  p %d n %g: %g\n", p, n, e);
                CHECK(fabs(e - n) <= 0.5); /* small counts: as good as exact */
            } else {
                if (fabs(e - n) > 4 * sd * n) fprintf(stderr, "  p %d n %g: %g\n", p, n, e);
                CHECK(fabs(e - n) <= 4 * sd * n);
            }
            free(reg);
        }
    }
}

TEST(hll_merge_equals_union) {
    int p = 10;
    size_t m = (size_t)1 << p;
    uint8_t *a = calloc(m, 1), *b = calloc(m, 1), *u = calloc(m, 1);
    for (uint64_t v = 0; v < 30000; v++) {
        uint64_t h = h64(v);
        hll_add(v % 3 ? a : b, p, h);
        hll_add(u, p, h);
    }
    hll_merge(a, b, p);
    CHECK(!memcmp(a, u, m));
    free(a);
    free(b);
    free(u);
}
