/*
 * test_median.c -- the running median (scheduler/median.c) against a
 * sort of the same values after every addition: ascending, descending,
 * repeated and pseudo-random values, and after a clear.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../test.h"
#include "median.h"

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Add n values from gen and check the median after each: 1 or 0. */
static int agrees(run_median *m, int n, uint64_t (*gen)(int)) {
    uint64_t *v = malloc(sizeof *v * (size_t)n), *sorted = malloc(sizeof *v * (size_t)n);
    int ok = v && sorted;
    for (int i = 0; ok && i < n; i++) {
        v[i] = gen(i);
        ok = rm_add(m, v[i]) == 0 && rm_count(m) == i + 1;
        for (int k = 0; k <= i; k++) sorted[k] = v[k];
        qsort(sorted, (size_t)i + 1, sizeof *sorted, cmp);
        if (ok && rm_median(m) != sorted[(i + 1) / 2]) {
            fprintf(stderr, "  after %d values: median %llu, sorted says %llu\n", i + 1,
                    (unsigned long long)rm_median(m), (unsigned long long)sorted[(i + 1) / 2]);
            ok = 0;
        }
    }
    free(v);
    free(sorted);
    return ok;
}

static uint64_t up(int i) { return (uint64_t)i; }
static uint64_t down(int i) { return (uint64_t)(1000 - i); }
static uint64_t few(int i) { return (uint64_t)(i % 3); }
static uint64_t rnd(int i) { return ((uint64_t)i * 2654435761u) % 997; }

TEST(median_running_matches_sort) {
    run_median m = {0};
    CHECK_EQ_I64(rm_median(&m), 0);
    CHECK(agrees(&m, 700, up));
    rm_clear(&m);
    CHECK_EQ_I64(rm_count(&m), 0);
    CHECK(agrees(&m, 700, down));
    rm_clear(&m);
    CHECK(agrees(&m, 300, few));
    rm_clear(&m);
    CHECK(agrees(&m, 900, rnd));
    rm_free(&m);
}
