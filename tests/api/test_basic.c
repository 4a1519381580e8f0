/*
 * test_basic.c -- the core path through the public API: sources, narrow
 * operators, count/collect/reduce, and a first shuffle.
 */
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

TEST(api_range_count) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t n = 0;
    CHECK_OK(em_count(em_range(c, 0, 1000, 1, 7), &n));
    CHECK_EQ_I64(n, 1000);
    CHECK_OK(em_count(em_range(c, 10, 0, -3, 3), &n));
    CHECK_EQ_I64(n, 4); /* 10 7 4 1 */
    em_close(c);
}

TEST(api_map_filter_collect) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *r = em_filter(em_map(em_range(c, 0, 100, 1, 4), fn_double_i64, NULL, 0), fn_even_i64, NULL, 0);
    em_batch *b;
    CHECK_OK(em_collect(r, &b));
    CHECK_EQ_I64(em_batch_count(b), 100);
    em_rec rec;
    CHECK_OK(em_batch_get(b, 99, &rec));
    CHECK_EQ_I64(rec_i64(&rec), 198);
    CHECK_EQ_I64(batch_sum_i64(b), 9900);
    em_batch_free(b);
    em_close(c);
}

TEST(api_reduce_and_empty) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_batch *b;
    CHECK_OK(em_reduce(em_range(c, 1, 101, 1, 5), fn_sum_i64, NULL, 0, &b));
    em_rec r;
    CHECK_OK(em_batch_get(b, 0, &r));
    CHECK_EQ_I64(rec_i64(&r), 5050);
    em_batch_free(b);
    int rc = em_reduce(em_range(c, 0, 0, 1, 3), fn_sum_i64, NULL, 0, &b);
    CHECK_EQ_I64(rc, EM_EEMPTY);
    CHECK_STR_CONTAINS(em_errmsg(), "empty collection");
    em_close(c);
}

TEST(api_reduce_by_key_basic) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t m = 10;
    em_rdd *pairs = em_map(em_range(c, 0, 10000, 1, 8), fn_mod_key, &m, sizeof m);
    em_rdd *sums = em_reduce_by_key(pairs, fn_sum_i64, NULL, 0, 3);
    em_batch *b;
    CHECK_OK(em_collect(sums, &b));
    CHECK_EQ_I64(em_batch_count(b), 10);
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(b, &pos, &r) == 1) {
        int64_t k = em_i64_dec(r.key), s = 0;
        for (int64_t v = k; v < 10000; v += 10) s += v;
        CHECK_EQ_I64(em_i64_dec(r.val), s);
    }
    em_batch_free(b);
    em_close(c);
}
