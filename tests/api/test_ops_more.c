/*
 * test_ops_more.c -- Spark's RDD operations beyond the basic ones, and
 * Spark's semantics at their edges: repartition's argument and spread, a
 * text_file over an empty directory, cogroup of three and four RDDs, the
 * numeric actions (sum, mean, variance, stats, histogram, max, min), the
 * set operations (intersection, subtract, subtract_by_key), count_by_value,
 * sort_by, group_by, zip_with_unique_id, take_sample, random_split,
 * cartesian, zip, zip_partitions, count_approx_distinct, whole_text_files,
 * pipe and compressed save_as_text_file.  Every expected value is worked
 * out by hand (or by a plain loop in the test) and the inputs include empty
 * RDDs and empty partitions.  They use only the public API and run
 * unchanged under EMBER_TEST_MASTER=local-cluster[2,1,1024].
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

/* The values of a pair batch's records whose key is the int64 k. */
static int64_t count_key(em_batch *b, int64_t k) {
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(b, &pos, &r))
        if (r.key && r.klen == 8 && em_i64_dec(r.key) == k) return em_i64_dec(r.val);
    return -1;
}

/* Per-partition record counts of rdd, through glom. */
static int part_sizes(em_rdd *rdd, int64_t *sizes, int n) {
    em_batch *b = NULL;
    em_rdd *g = em_glom(rdd);
    int rc = g ? em_collect(g, &b) : -1;
    if (rc) return rc;
    if ((int)em_batch_count(b) != n) rc = -1;
    for (size_t i = 0; !rc && i < em_batch_count(b); i++) {
        em_rec r, x;
        size_t pos = 0;
        em_batch_get(b, i, &r);
        sizes[i] = 0;
        while (em_list_next_rec(r.val, r.vlen, &pos, &x) == 1) sizes[i]++;
    }
    em_batch_free(b);
    return rc;
}

/* ------------------------------------------------------ section 2: edges */

TEST(ops_repartition_zero_rejected) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t v[] = {1, 2, 3};
    em_rdd *r = em_parallelize_i64(c, v, 3, 2);
    CHECK(em_repartition(r, 0) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "partition count 0 < 1");
    CHECK(em_repartition(r, -3) == NULL);
    CHECK(em_coalesce(r, 0) == NULL);
    /* Where the header says "<= 0: the parent's count", it is so. */
    em_rdd *pb = em_partition_by(em_map(r, fn_pair_x10, NULL, 0), 0);
    CHECK(pb);
    CHECK_EQ_I64(em_num_partitions(pb), 2);
    em_close(c);
}

/* 100 records in 10 partitions of 10 into 20: every output partition gets
 * some (Spark's seeded starts), and all records arrive once. */
TEST(ops_repartition_spreads_evenly) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t v[100], sizes[20], total = 0;
    for (int i = 0; i < 100; i++) v[i] = i;
    em_rdd *rp = em_repartition(em_parallelize_i64(c, v, 100, 10), 20);
    CHECK(rp);
    CHECK_OK(part_sizes(rp, sizes, 20));
    for (int i = 0; i < 20; i++) {
        CHECK(sizes[i] >= 1);
        CHECK(sizes[i] <= 10); /* at most one record per input partition */
        total += sizes[i];
    }
    CHECK_EQ_I64(total, 100);
    em_batch *b;
    CHECK_OK(em_collect(rp, &b));
    int64_t sum = batch_sum_i64(b);
    em_batch_free(b);
    CHECK_EQ_I64(sum, 4950);
    /* Deterministic: the same spread again. */
    int64_t again[20];
    CHECK_OK(part_sizes(rp, again, 20));
    CHECK(!memcmp(sizes, again, sizeof sizes));
    em_close(c);
}

TEST(ops_text_file_empty_dir) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    CHECK(mkdir(tmp_path("nothing"), 0700) == 0);
    CHECK(write_file(tmp_path("nothing/_SUCCESS"), "", 0) == 0); /* skipped, as Spark */
    em_rdd *t = em_text_file(c, tmp_path("nothing"), 3);
    CHECK(t);
    CHECK_EQ_I64(em_num_partitions(t), 0);
    em_batch *b;
    CHECK_OK(em_collect(t, &b));
    CHECK_EQ_I64(em_batch_count(b), 0);
    em_batch_free(b);
    em_rdd *counts = em_reduce_by_key(em_flat_map(t, fn_split_words, NULL, 0), em_sum_i64, NULL, 0, 0);
    CHECK(counts);
    CHECK_OK(em_collect(counts, &b));
    CHECK_EQ_I64(em_batch_count(b), 0);
    em_batch_free(b);
    int64_t n = -1;
    CHECK_OK(em_count(t, &n));
    CHECK_EQ_I64(n, 0);
    em_close(c);
}

static em_rdd *pairs(em_ctx *c, const int64_t *kv, size_t n, int parts) {
    em_rec r[16];
    static uint8_t enc[16][16];
    for (size_t i = 0; i < n; i++) {
        em_i64_enc(kv[2 * i], enc[i]);
        em_i64_enc(kv[2 * i + 1], enc[i] + 8);
        r[i] = (em_rec){enc[i], 8, enc[i] + 8, 8};
    }
    return em_parallelize(c, r, n, parts);
}

/* The sum of a list of int64 values, and its length. */
static int64_t list_sum(const void *l, size_t len, int64_t *count) {
    size_t pos = 0, il;
    const void *it;
    int64_t s = 0;
    *count = 0;
    while (em_list_next(l, len, &pos, &it, &il) == 1) {
        s += em_i64_dec(it);
        (*count)++;
    }
    return s;
}

TEST(ops_cogroup_three_and_four) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    /* a: 1->10, 1->11, 2->20   b: 2->200, 3->300   c: 4->4000 (2 parts,
     * one empty)   d: empty */
    int64_t ka[] = {1, 10, 1, 11, 2, 20}, kb[] = {2, 200, 3, 300}, kc[] = {4, 4000};
    em_rdd *in[4] = {pairs(c, ka, 3, 2), pairs(c, kb, 2, 3), pairs(c, kc, 1, 2), em_empty(c)};
    for (int n = 3; n <= 4; n++) {
        em_rdd *cg = em_cogroup_n(in, n, 0);
        CHECK(cg);
        CHECK_EQ_I64(em_num_partitions(cg), 3); /* the largest input's */
        em_batch *b;
        CHECK_OK(em_collect(cg, &b));
        CHECK_EQ_I64(em_batch_count(b), 4); /* keys 1, 2, 3, 4 */
        /* expected per key: sums and counts per side */
        const int64_t want[5][4][2] = {{{0}},
                                       {{21, 2}, {0, 0}, {0, 0}, {0, 0}},
                                       {{20, 1}, {200, 1}, {0, 0}, {0, 0}},
                                       {{0, 0}, {300, 1}, {0, 0}, {0, 0}},
                                       {{0, 0}, {0, 0}, {4000, 1}, {0, 0}}};
        size_t pos = 0;
        em_rec r;
        int seen = 0;
        while (em_batch_next(b, &pos, &r)) {
            const void *l[4];
            size_t ll[4];
            int64_t k = em_i64_dec(r.key);
            CHECK(k >= 1 && k <= 4);
            CHECK_OK(em_cogroup_unpack_n(r.val, r.vlen, n, l, ll));
            for (int s = 0; s < n; s++) {
                int64_t cnt, sum = list_sum(l[s], ll[s], &cnt);
                CHECK_EQ_I64(sum, want[k][s][0]);
                CHECK_EQ_I64(cnt, want[k][s][1]);
            }
            seen |= 1 << k;
        }
        em_batch_free(b);
        CHECK_EQ_I64(seen, 0x1e);
    }
    CHECK(em_cogroup_n(in, 1, 0) == NULL);
    CHECK(em_cogroup_n(in, 17, 0) == NULL);
    em_rdd *bad[3] = {in[0], NULL, in[1]};
    CHECK(em_cogroup_n(bad, 3, 0) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "NULL RDD (RDD 1)");
    /* Two sides: the value em_cogroup_unpack reads, as before. */
    em_rdd *two = em_cogroup_n(in, 2, 2);
    em_batch *b;
    CHECK_OK(em_collect(two, &b));
    CHECK_EQ_I64(em_batch_count(b), 3);
    em_rec r;
    CHECK_OK(em_batch_get(b, 0, &r));
    const void *la, *lb;
    size_t lal, lbl;
    CHECK_OK(em_cogroup_unpack(r.val, r.vlen, &la, &lal, &lb, &lbl));
    em_batch_free(b);
    CHECK(em_cogroup_unpack_n("\x05", 1, 2, (const void *[2]){0}, (size_t[2]){0}) == EM_ECORRUPT);
    (void)count_key;
    em_close(c);
}

/* ------------------------------------------------------- numeric actions */

static em_rdd *f64s(em_ctx *c, const double *v, size_t n, int parts) {
    em_rec r[64];
    static uint8_t enc[64][8];
    for (size_t i = 0; i < n; i++) {
        em_f64_enc(v[i], enc[i]);
        r[i] = (em_rec){NULL, 0, enc[i], 8};
    }
    return em_parallelize(c, r, n, parts);
}

static int near(double a, double b) { return fabs(a - b) <= 1e-12 * fmax(1, fabs(b)); }

TEST(ops_stats_i64_f64_and_empty) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    /* 1, 2, 3, 4 in 6 partitions (two empty): mean 2.5, deviations
     * +-1.5, +-0.5, population variance 5/4, sample 5/3. */
    int64_t v[] = {1, 2, 3, 4};
    em_rdd *r = em_parallelize_i64(c, v, 4, 6);
    em_stat_counter s;
    CHECK_OK(em_num_stats(r, EM_NUM_I64, &s));
    CHECK_EQ_I64(s.count, 4);
    CHECK(s.sum == 10 && s.mean == 2.5 && s.max == 4 && s.min == 1);
    CHECK(near(s.variance, 1.25) && near(s.sample_variance, 5.0 / 3) && near(s.stdev, sqrt(1.25)));
    CHECK(near(s.sample_stdev, sqrt(5.0 / 3)));
    double x;
    CHECK_OK(em_sum(r, EM_NUM_I64, &x));
    CHECK(x == 10);
    CHECK_OK(em_mean(r, EM_NUM_I64, &x));
    CHECK(x == 2.5);
    CHECK_OK(em_variance(r, EM_NUM_I64, &x));
    CHECK(near(x, 1.25));
    CHECK_OK(em_stdev(r, EM_NUM_I64, &x));
    CHECK(near(x, sqrt(1.25)));
    /* Doubles -1.5, 0.5, 2, 10: sum 11, mean 2.75, squared deviations
     * 18.0625 + 5.0625 + 0.5625 + 52.5625 = 76.25, variance 19.0625. */
    double d[] = {-1.5, 0.5, 2.0, 10.0};
    CHECK_OK(em_num_stats(f64s(c, d, 4, 3), EM_NUM_F64, &s));
    CHECK(s.count == 4 && s.sum == 11 && s.mean == 2.75 && s.max == 10 && s.min == -1.5);
    CHECK(near(s.variance, 19.0625));
    /* Stable: 1e9 + {4, 7, 13, 16} one per partition, with empty ones
     * between: mean 1e9 + 10, variance (36 + 9 + 9 + 36) / 4 = 22.5. */
    double big[] = {1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16};
    CHECK_OK(em_num_stats(f64s(c, big, 4, 7), EM_NUM_F64, &s));
    CHECK(s.mean == 1e9 + 10);
    CHECK(fabs(s.variance - 22.5) < 1e-6);
    /* Empty: count 0, sum 0, mean NaN, max -inf, min +inf (Spark's). */
    CHECK_OK(em_num_stats(em_empty(c), EM_NUM_F64, &s));
    CHECK(s.count == 0 && s.sum == 0 && isnan(s.mean) && isnan(s.variance) && s.max == -INFINITY && s.min == INFINITY);
    CHECK_OK(em_num_stats(em_parallelize_i64(c, v, 0, 3), EM_NUM_I64, &s));
    CHECK_EQ_I64(s.count, 0);
    CHECK_OK(em_sum(em_empty(c), EM_NUM_I64, &x));
    CHECK(x == 0);
    /* A record that is not 8 bytes fails the job, saying so. */
    const char *words[] = {"abc"};
    CHECK(em_num_stats(em_parallelize_str(c, words, 1, 1), EM_NUM_F64, &s) == EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "a record of 3 bytes, not an 8-byte double");
    CHECK(em_num_stats(r, 7, &s) == EM_EINVAL);
    em_close(c);
}

TEST(ops_histogram_both_forms) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    /* Spark's documented example: buckets [1, 10, 20, 50] are [1, 10),
     * [10, 20), [20, 50]; the values 1 and 50 give 1, 0, 1. */
    int64_t v[] = {1, 50}, counts[10];
    double b[] = {1, 10, 20, 50};
    CHECK_OK(em_histogram_buckets(em_parallelize_i64(c, v, 2, 3), EM_NUM_I64, b, 4, counts));
    CHECK(counts[0] == 1 && counts[1] == 0 && counts[2] == 1);
    /* Outside values and NaN are not counted; 9.99 and 10 part ways. */
    double d[] = {0.5, 9.99, 10, 19, 20, 49.9, 50, 50.5, NAN};
    CHECK_OK(em_histogram_buckets(f64s(c, d, 9, 4), EM_NUM_F64, b, 4, counts));
    CHECK(counts[0] == 1 && counts[1] == 2 && counts[2] == 3);
    /* Empty RDD: zero counts. */
    counts[0] = counts[1] = counts[2] = 7;
    CHECK_OK(em_histogram_buckets(em_empty(c), EM_NUM_F64, b, 4, counts));
    CHECK(counts[0] == 0 && counts[1] == 0 && counts[2] == 0);
    double bad[] = {1, 1, 2};
    CHECK(em_histogram_buckets(em_empty(c), EM_NUM_F64, bad, 3, counts) == EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "not ascending");
    CHECK(em_histogram_buckets(em_empty(c), EM_NUM_F64, b, 1, counts) == EM_EINVAL);
    /* bucket count: 0..10 into 2 even buckets [0, 5), [5, 10]: 5 and 6. */
    double bounds[11];
    int nb;
    CHECK_OK(em_histogram(em_range(c, 0, 11, 1, 3), EM_NUM_I64, 2, bounds, counts, &nb));
    CHECK(nb == 2 && bounds[0] == 0 && bounds[1] == 5 && bounds[2] == 10);
    CHECK(counts[0] == 5 && counts[1] == 6);
    /* 0..9 into 10 buckets of width 0.9: [0, 0.9) holds 0, [0.9, 1.8) 1,
     * ..., [7.2, 8.1) 8 and the closed [8.1, 9] 9: one each. */
    CHECK_OK(em_histogram(em_range(c, 0, 10, 1, 4), EM_NUM_I64, 10, bounds, counts, &nb));
    CHECK_EQ_I64(nb, 10);
    CHECK(bounds[10] == 9 && near(bounds[9], 8.1));
    for (int i = 0; i < 10; i++) CHECK_EQ_I64(counts[i], 1);
    /* All equal: one bucket [3, 3]. */
    int64_t same[] = {3, 3, 3};
    CHECK_OK(em_histogram(em_parallelize_i64(c, same, 3, 2), EM_NUM_I64, 4, bounds, counts, &nb));
    CHECK(nb == 1 && bounds[0] == 3 && bounds[1] == 3 && counts[0] == 3);
    CHECK(em_histogram(em_empty(c), EM_NUM_I64, 4, bounds, counts, &nb) == EM_EEMPTY);
    double inf[] = {1, INFINITY};
    CHECK(em_histogram(f64s(c, inf, 2, 1), EM_NUM_F64, 4, bounds, counts, &nb) == EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "infinity or NaN");
    em_close(c);
}

TEST(ops_max_min) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    double d[] = {0.5, -1.5, 10, 2};
    em_batch *b;
    em_rec r;
    CHECK_OK(em_max(f64s(c, d, 4, 3), &b));
    CHECK_OK(em_batch_get(b, 0, &r));
    CHECK(em_f64_dec(r.val) == 10);
    em_batch_free(b);
    CHECK_OK(em_min(f64s(c, d, 4, 6), &b));
    CHECK_OK(em_batch_get(b, 0, &r));
    CHECK(em_f64_dec(r.val) == -1.5);
    em_batch_free(b);
    int64_t v[] = {-7, 3, -100, 42};
    CHECK_OK(em_min(em_parallelize_i64(c, v, 4, 2), &b));
    CHECK_EQ_I64(batch_i64_at(b, 0), -100);
    em_batch_free(b);
    CHECK(em_max(em_empty(c), &b) == EM_EEMPTY);
    CHECK(b == NULL);
    CHECK(em_min(em_parallelize_i64(c, v, 0, 2), &b) == EM_EEMPTY);
    em_close(c);
}

/* ---------------------------------------- set operations and key functions */

/* Sorted int64 values of a batch of plain records into v; their count. */
static size_t sorted_i64(em_batch *b, int64_t *v, size_t cap) {
    size_t n = 0, pos = 0;
    em_rec r;
    while (em_batch_next(b, &pos, &r) && n < cap) v[n++] = em_i64_dec(r.val);
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int64_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n;
}

TEST(ops_intersection_subtract) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t a[] = {1, 2, 2, 3, 3, 3, 5}, b[] = {3, 2, 4, 3}, got[16];
    em_rdd *ra = em_parallelize_i64(c, a, 7, 3), *rb = em_parallelize_i64(c, b, 4, 5);
    em_batch *out;
    /* intersection: distinct common records: 2, 3 */
    em_rdd *i = em_intersection(ra, rb, 0);
    CHECK(i);
    CHECK_EQ_I64(em_num_partitions(i), 5); /* the larger input's */
    CHECK_OK(em_collect(i, &out));
    CHECK(sorted_i64(out, got, 16) == 2 && got[0] == 2 && got[1] == 3);
    em_batch_free(out);
    /* subtract keeps a's duplicates: 1, 5 */
    em_rdd *s = em_subtract(ra, rb, 0);
    CHECK_EQ_I64(em_num_partitions(s), 3); /* a's */
    CHECK_OK(em_collect(s, &out));
    CHECK(sorted_i64(out, got, 16) == 2 && got[0] == 1 && got[1] == 5);
    em_batch_free(out);
    /* b - a: 4; a - empty: all of a; empty - a: nothing */
    CHECK_OK(em_collect(em_subtract(rb, ra, 2), &out));
    CHECK(sorted_i64(out, got, 16) == 1 && got[0] == 4);
    em_batch_free(out);
    CHECK_OK(em_collect(em_subtract(ra, em_empty(c), 0), &out));
    CHECK(sorted_i64(out, got, 16) == 7 && got[0] == 1 && got[2] == 2 && got[5] == 3 && got[6] == 5);
    em_batch_free(out);
    CHECK_OK(em_collect(em_intersection(em_empty(c), ra, 0), &out));
    CHECK_EQ_I64(em_batch_count(out), 0);
    em_batch_free(out);
    /* subtract_by_key: pairs of a whose key b lacks */
    int64_t ka[] = {1, 10, 1, 11, 2, 20, 3, 30}, kb[] = {2, 0, 9, 0};
    em_rdd *sk = em_subtract_by_key(pairs(c, ka, 4, 2), pairs(c, kb, 2, 1), 0);
    CHECK_EQ_I64(em_num_partitions(sk), 2);
    CHECK_OK(em_collect(sk, &out));
    CHECK_EQ_I64(em_batch_count(out), 3);
    int64_t sum = 0;
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(out, &pos, &r)) {
        CHECK(em_i64_dec(r.key) != 2);
        sum += em_i64_dec(r.val);
    }
    CHECK_EQ_I64(sum, 51);
    em_batch_free(out);
    CHECK(em_intersection(ra, NULL, 0) == NULL);
    em_close(c);
}

TEST(ops_count_by_value) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    const char *w[] = {"a", "b", "a", "", "a", ""};
    em_batch *out;
    CHECK_OK(em_count_by_value(em_parallelize_str(c, w, 6, 4), &out));
    CHECK_EQ_I64(em_batch_count(out), 3);
    size_t pos = 0;
    em_rec r;
    int seen = 0;
    while (em_batch_next(out, &pos, &r)) {
        int64_t n = em_i64_dec(r.val);
        int which = r.klen == 0 ? 2 : r.klen == 1 && !memcmp(r.key, "a", 1) ? 0 : 1;
        CHECK_EQ_I64(n, which == 0 ? 3 : which == 1 ? 1 : 2);
        seen |= 1 << which;
    }
    CHECK_EQ_I64(seen, 7);
    em_batch_free(out);
    CHECK_OK(em_count_by_value(em_empty(c), &out));
    CHECK_EQ_I64(em_batch_count(out), 0);
    em_batch_free(out);
    int64_t kv[] = {1, 2};
    CHECK(em_count_by_value(pairs(c, kv, 1, 1), &out) == EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "count_by_value takes plain records");
    em_close(c);
}

/* key: the int64 value's last decimal digit */
static int fn_last_digit(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_i64(out, em_i64_dec(in->val) % 10);
}
/* key: minus the value */
static int fn_negate(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_i64(out, -em_i64_dec(in->val));
}

TEST(ops_sort_by_group_by) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t v[] = {5, 13, 1, 22, 9, 40, 7};
    em_rdd *r = em_parallelize_i64(c, v, 7, 3);
    em_batch *out;
    /* by minus the value, ascending: the values descending */
    CHECK_OK(em_collect(em_sort_by(r, fn_negate, NULL, 0, 1, 3), &out));
    int64_t want[] = {40, 22, 13, 9, 7, 5, 1};
    CHECK(batch_eq_i64(out, want, 7));
    em_batch_free(out);
    CHECK_OK(em_collect(em_sort_by(r, fn_negate, NULL, 0, 0, 2), &out));
    int64_t asc[] = {1, 5, 7, 9, 13, 22, 40};
    CHECK(batch_eq_i64(out, asc, 7));
    em_batch_free(out);
    CHECK_OK(em_collect(em_sort_by(em_empty(c), fn_negate, NULL, 0, 1, 2), &out));
    CHECK_EQ_I64(em_batch_count(out), 0);
    em_batch_free(out);
    /* group by last digit: 5 -> {5}, 3 -> {13}, 1 -> {1}, 2 -> {22},
     * 9 -> {9}, 0 -> {40}, 7 -> {7}; add 15 and 3 to share keys */
    int64_t more[] = {5, 15, 13, 3, 40};
    CHECK_OK(em_collect(em_group_by(em_parallelize_i64(c, more, 5, 4), fn_last_digit, NULL, 0, 2), &out));
    CHECK_EQ_I64(em_batch_count(out), 3);
    size_t pos = 0;
    em_rec g;
    while (em_batch_next(out, &pos, &g)) {
        int64_t k = em_i64_dec(g.key), cnt, sum = list_sum(g.val, g.vlen, &cnt);
        if (k == 5) CHECK(cnt == 2 && sum == 20);
        else if (k == 3) CHECK(cnt == 2 && sum == 16);
        else CHECK(k == 0 && cnt == 1 && sum == 40);
    }
    em_batch_free(out);
    em_close(c);
}

TEST(ops_zip_with_unique_id) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    /* 7 records in 3 partitions (sizes 2, 2, 3): partition k's i-th record
     * gets k + 3i: ids 0, 3 | 1, 4 | 2, 5, 8. */
    int64_t v[] = {10, 11, 12, 13, 14, 15, 16};
    em_batch *out;
    CHECK_OK(em_collect(em_zip_with_unique_id(em_parallelize_i64(c, v, 7, 3)), &out));
    int64_t ids[] = {0, 3, 1, 4, 2, 5, 8};
    CHECK_EQ_I64(em_batch_count(out), 7);
    for (size_t i = 0; i < 7; i++) {
        em_rec r;
        CHECK_OK(em_batch_get(out, i, &r));
        CHECK_EQ_I64(em_i64_dec(r.key), v[i]);
        CHECK_EQ_I64(em_i64_dec(r.val), ids[i]);
    }
    em_batch_free(out);
    /* Empty partitions take no id: 1 record in 4 partitions. */
    CHECK_OK(em_collect(em_zip_with_unique_id(em_parallelize_i64(c, v, 1, 4)), &out));
    CHECK_EQ_I64(em_batch_count(out), 1);
    em_batch_free(out);
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.jobs, 2); /* no job of its own, unlike zip_with_index */
    em_close(c);
}

TEST(ops_random_split) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *src = em_range(c, 0, 1000, 1, 4), *sp[3], *again[3];
    double w[] = {1, 2, 1}; /* normalized: [0, .25), [.25, .75), [.75, 1) */
    CHECK_OK(em_random_split(src, w, 3, 42, sp));
    CHECK_OK(em_random_split(src, w, 3, 42, again));
    static uint8_t seen[1000];
    int64_t sizes[3];
    for (int s = 0; s < 3; s++) {
        em_batch *b, *b2;
        CHECK_OK(em_collect(sp[s], &b));
        CHECK_OK(em_collect(again[s], &b2));
        CHECK_EQ_I64(em_batch_count(b), em_batch_count(b2)); /* deterministic */
        CHECK(batch_sum_i64(b) == batch_sum_i64(b2));
        sizes[s] = (int64_t)em_batch_count(b);
        size_t pos = 0;
        em_rec r;
        while (em_batch_next(b, &pos, &r)) seen[em_i64_dec(r.val)]++;
        em_batch_free(b);
        em_batch_free(b2);
    }
    for (int i = 0; i < 1000; i++) CHECK_EQ_I64(seen[i], 1); /* disjoint and complete */
    /* Binomial: 250 +- 5 sd (sd 13.7), 500 +- 5 sd (15.8). */
    CHECK(sizes[0] > 180 && sizes[0] < 320 && sizes[1] > 420 && sizes[1] < 580);
    /* A different seed splits differently. */
    em_rdd *other[3];
    CHECK_OK(em_random_split(src, w, 3, 43, other));
    em_batch *b1, *b2;
    CHECK_OK(em_collect(sp[0], &b1));
    CHECK_OK(em_collect(other[0], &b2));
    CHECK(em_batch_count(b1) != em_batch_count(b2) || batch_sum_i64(b1) != batch_sum_i64(b2));
    em_batch_free(b1);
    em_batch_free(b2);
    double bad[] = {1, -1};
    CHECK(em_random_split(src, bad, 2, 1, other) == EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "weight 1 is -1");
    double zero[] = {0, 0};
    CHECK(em_random_split(src, zero, 2, 1, other) == EM_EINVAL);
    CHECK(other[0] == NULL && other[1] == NULL);
    em_close(c);
}

TEST(ops_take_sample) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *src = em_range(c, 0, 100, 1, 5);
    em_batch *b, *b2;
    /* Without replacement: exactly 10 distinct values of 0..99; the same
     * seed gives the same ones. */
    CHECK_OK(em_take_sample(src, 0, 10, 7, &b));
    CHECK_OK(em_take_sample(src, 0, 10, 7, &b2));
    CHECK_EQ_I64(em_batch_count(b), 10);
    int64_t v[200], v2[200];
    CHECK(sorted_i64(b, v, 200) == 10);
    CHECK(sorted_i64(b2, v2, 200) == 10);
    for (int i = 0; i < 10; i++) {
        CHECK(v[i] >= 0 && v[i] < 100 && v[i] == v2[i]);
        if (i) CHECK(v[i] != v[i - 1]);
    }
    em_batch_free(b);
    em_batch_free(b2);
    /* More than there are: all 100, once each. */
    CHECK_OK(em_take_sample(src, 0, 150, 1, &b));
    CHECK(sorted_i64(b, v, 200) == 100);
    for (int i = 0; i < 100; i++) CHECK_EQ_I64(v[i], i);
    em_batch_free(b);
    /* With replacement: exactly 150, all from 0..99. */
    CHECK_OK(em_take_sample(src, 1, 150, 3, &b));
    CHECK_EQ_I64(em_batch_count(b), 150);
    CHECK(sorted_i64(b, v, 200) == 150 && v[0] >= 0 && v[149] < 100);
    em_batch_free(b);
    CHECK_OK(em_take_sample(em_empty(c), 1, 5, 3, &b));
    CHECK_EQ_I64(em_batch_count(b), 0);
    em_batch_free(b);
    CHECK_OK(em_take_sample(src, 0, 0, 3, &b));
    CHECK_EQ_I64(em_batch_count(b), 0);
    em_batch_free(b);
    em_close(c);
}

/* ------------------------------------------- cartesian, zip, zip_partitions */

TEST(ops_cartesian) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t a[] = {1, 2, 3}, b[] = {10, 20};
    em_rdd *x = em_cartesian(em_parallelize_i64(c, a, 3, 2), em_parallelize_i64(c, b, 2, 3));
    CHECK(x);
    CHECK_EQ_I64(em_num_partitions(x), 6);
    em_batch *out;
    CHECK_OK(em_collect(x, &out));
    CHECK_EQ_I64(em_batch_count(out), 6);
    /* every (i, j) once: sum of 100 * i + j over the 6 pairs */
    int64_t sum = 0;
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(out, &pos, &r)) sum += 100 * em_i64_dec(r.key) + em_i64_dec(r.val);
    CHECK_EQ_I64(sum, 100 * (1 + 2 + 3) * 2 + (10 + 20) * 3);
    em_batch_free(out);
    /* with an empty side: nothing */
    int64_t n;
    CHECK_OK(em_count(em_cartesian(em_parallelize_i64(c, a, 3, 2), em_empty(c)), &n));
    CHECK_EQ_I64(n, 0);
    CHECK_OK(em_count(em_cartesian(em_parallelize_i64(c, a, 0, 2), em_parallelize_i64(c, b, 2, 3)), &n));
    CHECK_EQ_I64(n, 0);
    /* take stops early */
    CHECK_OK(em_take(em_cartesian(em_range(c, 0, 1000, 1, 2), em_range(c, 0, 1000, 1, 2)), 3, &out));
    CHECK_EQ_I64(em_batch_count(out), 3);
    em_batch_free(out);
    em_close(c);
}

static int fn_add_pairwise(int part, em_iter *a, em_iter *b, em_emitter *out, const void *arg) {
    em_rec x, y;
    int64_t sa = 0, sb = 0;
    while (em_iter_next(a, &x) == 1) sa += em_i64_dec(x.val);
    while (em_iter_next(b, &y) == 1) sb += em_i64_dec(y.val);
    return em_emit_i64(out, sa * 1000 + sb);
}

TEST(ops_zip_and_zip_partitions) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t a[] = {1, 2, 3, 4, 5}, b[] = {10, 20, 30, 40, 50};
    em_rdd *ra = em_parallelize_i64(c, a, 5, 3), *rb = em_parallelize_i64(c, b, 5, 3);
    em_batch *out;
    CHECK_OK(em_collect(em_zip(ra, rb), &out));
    CHECK_EQ_I64(em_batch_count(out), 5);
    for (size_t i = 0; i < 5; i++) {
        em_rec r;
        CHECK_OK(em_batch_get(out, i, &r));
        CHECK_EQ_I64(em_i64_dec(r.key), a[i]);
        CHECK_EQ_I64(em_i64_dec(r.val), b[i]);
    }
    em_batch_free(out);
    /* A map keeps sizes: zip with a derived RDD works. */
    CHECK_OK(em_collect(em_zip(ra, em_map(ra, fn_double_i64, NULL, 0)), &out));
    CHECK_EQ_I64(em_batch_count(out), 5);
    em_batch_free(out);
    /* Unequal partition counts: refused here, naming both. */
    CHECK(em_zip(ra, em_parallelize_i64(c, b, 5, 2)) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "the RDDs have 3 and 2 partitions");
    /* Unequal sizes: the task fails naming the partition and both sizes
     * (partition 0 holds 1 of a's and 2 of the filtered evens... here:
     * range 0..6 in 3 partitions is 0,1 | 2,3 | 4,5; evens 0 | 2 | 4). */
    em_rdd *r6 = em_range(c, 0, 6, 1, 3);
    CHECK(em_collect(em_zip(r6, em_filter(r6, fn_even_i64, NULL, 0)), &out) == EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "has 2 records in the first RDD and 1 in the second");
    CHECK_STR_CONTAINS(em_errmsg(), "zip: partition ");
    CHECK(em_collect(em_zip(em_filter(r6, fn_even_i64, NULL, 0), r6), &out) == EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "has 1 records in the first RDD and 2 in the second");
    /* Empty both: fine. */
    CHECK_OK(em_collect(em_zip(em_empty(c), em_empty(c)), &out));
    CHECK_EQ_I64(em_batch_count(out), 0);
    em_batch_free(out);
    /* zip_partitions: per partition, 1000 * sum(a) + sum(b); partitions of
     * a: 1 | 2,3 | 4,5, of b: 10 | 20,30 | 40,50. */
    CHECK_OK(em_collect(em_zip_partitions(ra, rb, fn_add_pairwise, NULL, 0), &out));
    int64_t want[] = {1010, 5050, 9090};
    CHECK(batch_eq_i64(out, want, 3));
    em_batch_free(out);
    CHECK(em_zip_partitions(ra, rb, NULL, NULL, 0) == NULL);
    em_close(c);
}

/* --------------------------------------------- compressed save (gzip) */

static int fn_i64_line(const em_rec *in, em_emitter *out, const void *arg) {
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%lld", (long long)em_i64_dec(in->val));
    return em_emit(out, buf, (size_t)n);
}

/* The output of a command (stdout), or NULL. */
static char *run_cmd(const char *cmd, size_t *len) {
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t k;
    while (buf && (k = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (n + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    if (pclose(p) != 0) {
        free(buf);
        return NULL;
    }
    if (buf) buf[n] = 0;
    *len = n;
    return buf;
}

TEST(ops_save_gzip) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    const char *dir = tmp_path("gz-out");
    /* 1,000 lines in 4 partitions, and pairs ("key\tvalue" lines). */
    CHECK_OK(em_save_as_text_file_codec(em_map(em_range(c, 0, 1000, 1, 4), fn_i64_line, NULL, 0), dir, "gzip"));
    char path[700], cmd[1600];
    struct stat st;
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/part-%05d.gz", dir, i);
        CHECK(stat(path, &st) == 0);
    }
    snprintf(path, sizeof path, "%s/part-00000", dir);
    CHECK(stat(path, &st) != 0); /* only the .gz files */
    /* gzip itself reads them: partition 1 holds 250..499. */
    snprintf(cmd, sizeof cmd, "gzip -dc '%s/part-00001.gz'", dir);
    size_t len = 0;
    char *text = run_cmd(cmd, &len);
    CHECK(text);
    CHECK(!strncmp(text, "250\n251\n", 8));
    CHECK(len >= 4 && !strcmp(text + len - 4, "499\n"));
    int lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    CHECK_EQ_I64(lines, 250);
    free(text);
    /* And so does text_file: every line, once. */
    int64_t n = 0;
    CHECK_OK(em_count(em_text_file(c, dir, 0), &n));
    CHECK_EQ_I64(n, 1000);
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_text_file(c, dir, 0), &b));
    int64_t sum = 0;
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(b, &pos, &r) == 1) {
        char num[32];
        snprintf(num, sizeof num, "%.*s", (int)r.vlen, (const char *)r.val);
        sum += atoll(num);
    }
    CHECK_EQ_I64(sum, 999 * 1000 / 2);
    em_batch_free(b);

    /* Empty partitions (3 numbers in 5) give valid empty gzip files. */
    const char *dir2 = tmp_path("gz-empty");
    CHECK_OK(em_save_as_text_file_codec(em_map(em_range(c, 0, 3, 1, 5), fn_i64_line, NULL, 0), dir2, "gzip"));
    int empty = 0;
    for (int i = 0; i < 5; i++) {
        snprintf(cmd, sizeof cmd, "gzip -dc '%s/part-%05d.gz'", dir2, i);
        text = run_cmd(cmd, &len);
        CHECK(text);
        empty += len == 0;
        free(text);
    }
    CHECK_EQ_I64(empty, 2);
    CHECK_OK(em_count(em_text_file(c, dir2, 0), &n));
    CHECK_EQ_I64(n, 3);
    /* An empty RDD: every file empty, the directory complete. */
    const char *dir3 = tmp_path("gz-none");
    CHECK_OK(em_save_as_text_file_codec(em_map(em_range(c, 0, 0, 1, 2), fn_i64_line, NULL, 0), dir3, "gzip"));
    CHECK_OK(em_count(em_text_file(c, dir3, 0), &n));
    CHECK_EQ_I64(n, 0);
    /* "none" is the plain form; an unknown codec is refused by name. */
    const char *dir4 = tmp_path("plain-out");
    CHECK_OK(em_save_as_text_file_codec(em_map(em_range(c, 0, 10, 1, 2), fn_i64_line, NULL, 0), dir4, "none"));
    snprintf(path, sizeof path, "%s/part-00001", dir4);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ_I64(em_save_as_text_file_codec(em_range(c, 0, 10, 1, 2), tmp_path("x-out"), "snappy"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "unknown codec \"snappy\" (gzip or none)");
    CHECK(stat(tmp_path("x-out"), &st) != 0);
    em_close(c);
}

/* ------------------------------------------------------ whole_text_files */

/* The content of the pair whose key ends with name, or NULL. */
static const em_rec *find_file(em_batch *b, const char *name, em_rec *r) {
    size_t pos = 0, n = strlen(name);
    while (em_batch_next(b, &pos, r) == 1)
        if (r->key && r->klen >= n && !memcmp((const char *)r->key + r->klen - n, name, n)) return r;
    return NULL;
}

TEST(ops_whole_text_files) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    const char *dir = tmp_path("wtf");
    CHECK(mkdir(dir, 0755) == 0);
    char path[700];
    /* Three files (one empty, one without a final newline), a hidden one
     * and a _SUCCESS marker (skipped), and a gzip file (inflated). */
    const char *names[] = {"a.txt", "b.txt", "c.txt", ".hidden", "_SUCCESS"};
    const char *texts[] = {"one\ntwo\n", "", "three\nfour", "secret", ""};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        CHECK_OK(write_file(path, texts[i], strlen(texts[i])));
    }
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "printf 'zipped\\nlines\\n' | gzip -c > '%s/d.txt.gz'", dir);
    CHECK(system(cmd) == 0);
    em_rdd *r = em_whole_text_files(c, dir, 2);
    CHECK(r);
    CHECK_EQ_I64(em_num_partitions(r), 2);
    em_batch *b = NULL;
    CHECK_OK(em_collect(r, &b));
    CHECK_EQ_I64(em_batch_count(b), 4);
    em_rec f;
    CHECK(find_file(b, "/a.txt", &f) && f.vlen == 8 && !memcmp(f.val, "one\ntwo\n", 8));
    CHECK(find_file(b, "/b.txt", &f) && f.vlen == 0);
    CHECK(find_file(b, "/c.txt", &f) && f.vlen == 10 && !memcmp(f.val, "three\nfour", 10));
    CHECK(find_file(b, "/d.txt.gz", &f) && f.vlen == 13 && !memcmp(f.val, "zipped\nlines\n", 13));
    CHECK(!find_file(b, "hidden", &f) && !find_file(b, "_SUCCESS", &f));
    /* Keys are absolute paths, in sorted order. */
    em_batch_get(b, 0, &f);
    CHECK(f.klen > 0 && ((const char *)f.key)[0] == '/');
    em_batch_free(b);
    /* More partitions asked than files: one file each. */
    CHECK_EQ_I64(em_num_partitions(em_whole_text_files(c, dir, 10)), 4);
    /* One file by name, and a glob. */
    snprintf(path, sizeof path, "%s/a.txt", dir);
    int64_t n = 0;
    CHECK_OK(em_count(em_whole_text_files(c, path, 0), &n));
    CHECK_EQ_I64(n, 1);
    snprintf(path, sizeof path, "%s/*.txt", dir);
    CHECK_OK(em_count(em_whole_text_files(c, path, 0), &n));
    CHECK_EQ_I64(n, 3);
    /* Word count over the files' contents, through flat_map. */
    em_batch *w = NULL;
    CHECK_OK(em_collect(em_values(em_whole_text_files(c, dir, 0)), &w));
    size_t bytes = 0, pos = 0;
    while (em_batch_next(w, &pos, &f) == 1) bytes += f.vlen;
    CHECK_EQ_I64(bytes, 8 + 0 + 10 + 13);
    em_batch_free(w);
    /* An empty directory: an empty RDD. */
    const char *empty = tmp_path("wtf-empty");
    CHECK(mkdir(empty, 0755) == 0);
    CHECK_OK(em_count(em_whole_text_files(c, empty, 0), &n));
    CHECK_EQ_I64(n, 0);
    /* A missing path is named at once. */
    CHECK(em_whole_text_files(c, tmp_path("no-such-dir"), 0) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "whole_text_files: ");
    CHECK_STR_CONTAINS(em_errmsg(), "no-such-dir");
    /* A file removed before the job runs fails it, naming the file. */
    snprintf(path, sizeof path, "%s/c.txt", dir);
    r = em_whole_text_files(c, dir, 0);
    CHECK(r);
    CHECK(unlink(path) == 0);
    CHECK(em_count(r, &n) < 0);
    CHECK_STR_CONTAINS(em_errmsg(), "c.txt");
    em_close(c);
}

/* -------------------------------------------------- count_approx_distinct */

static int fn_mod_1000(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_i64(out, em_i64_dec(in->val) % 1000);
}

TEST(ops_count_approx_distinct) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t n = -1;
    /* 100,000 distinct numbers in 8 partitions; relative_sd 0.05 (2^9
     * registers): within four standard deviations. */
    CHECK_OK(em_count_approx_distinct(em_range(c, 0, 100000, 1, 8), 0.05, &n));
    CHECK(fabs((double)n - 100000) <= 4 * 0.05 * 100000);
    CHECK_OK(em_count_approx_distinct(em_range(c, 0, 100000, 1, 8), 0.01, &n));
    CHECK(fabs((double)n - 100000) <= 4 * 0.01 * 100000);
    /* Duplicates count once: 100,000 records of 1,000 values. */
    CHECK_OK(em_count_approx_distinct(em_map(em_range(c, 0, 100000, 1, 8), fn_mod_1000, NULL, 0), 0.05, &n));
    CHECK(fabs((double)n - 1000) <= 4 * 0.05 * 1000);
    /* Small counts come out exact; empty partitions add nothing. */
    CHECK_OK(em_count_approx_distinct(em_range(c, 0, 5, 1, 8), 0.05, &n));
    CHECK_EQ_I64(n, 5);
    CHECK_OK(em_count_approx_distinct(em_range(c, 0, 0, 1, 4), 0.05, &n));
    CHECK_EQ_I64(n, 0);
    /* Pairs are distinct by key and value: 20 pairs over 10 keys. */
    CHECK_OK(em_count_approx_distinct(em_map(em_range(c, 0, 20, 1, 3), fn_pair_x10, NULL, 0), 0.05, &n));
    CHECK_EQ_I64(n, 20);
    int64_t m = 10;
    CHECK_OK(em_count_approx_distinct(em_keys(em_map(em_range(c, 0, 20, 1, 3), fn_mod_key, &m, sizeof m)), 0.05, &n));
    CHECK_EQ_I64(n, 10);
    /* An accuracy no sketch reaches is refused, naming the bound. */
    CHECK_EQ_I64(em_count_approx_distinct(em_range(c, 0, 10, 1, 2), 0.0001, &n), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "relative_sd 0.0001 is outside [0.0021, 1)");
    em_close(c);
}

/* ------------------------------------------------------------------ pipe */

static int fn_line_x(const em_rec *in, em_emitter *out, const void *arg) {
    char buf[32];
    int n = snprintf(buf, sizeof buf, "x%lld", (long long)em_i64_dec(in->val));
    return em_emit(out, buf, (size_t)n);
}

/* The lines of a batch of plain records, joined by '|'. */
static void joined(em_batch *b, char *buf, size_t len) {
    size_t pos = 0, k = 0;
    em_rec r;
    buf[0] = 0;
    while (em_batch_next(b, &pos, &r) == 1 && k + r.vlen + 2 < len)
        k += (size_t)snprintf(buf + k, len - k, "%s%.*s", k ? "|" : "", (int)r.vlen, (const char *)r.val);
}

TEST(ops_pipe) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_batch *b = NULL;
    char text[4096];
    em_rdd *lines = em_map(em_range(c, 0, 6, 1, 3), fn_line_x, NULL, 0);
    /* cat gives the lines back; tr changes them. */
    const char *cat[] = {"cat", NULL}, *tr[] = {"tr", "x", "Y", NULL};
    CHECK_OK(em_collect(em_pipe(lines, cat, NULL), &b));
    joined(b, text, sizeof text);
    CHECK(!strcmp(text, "x0|x1|x2|x3|x4|x5"));
    em_batch_free(b);
    CHECK_OK(em_collect(em_pipe(lines, tr, NULL), &b));
    joined(b, text, sizeof text);
    CHECK(!strcmp(text, "Y0|Y1|Y2|Y3|Y4|Y5"));
    em_batch_free(b);
    /* One command per partition, empty ones included: 3 numbers in 5. */
    const char *wc[] = {"wc", "-l", NULL};
    CHECK_OK(em_collect(em_pipe(em_map(em_range(c, 0, 3, 1, 5), fn_line_x, NULL, 0), wc, NULL), &b));
    CHECK_EQ_I64(em_batch_count(b), 5); /* one count per partition */
    int64_t ones = 0, zeros = 0;
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(b, &pos, &r) == 1) {
        ones += r.vlen == 1 && ((const char *)r.val)[0] == '1';
        zeros += r.vlen == 1 && ((const char *)r.val)[0] == '0';
    }
    CHECK_EQ_I64(ones, 3);
    CHECK_EQ_I64(zeros, 2);
    em_batch_free(b);
    /* Pairs are "key\tvalue" lines; the environment gets the extra entries. */
    const char *env[] = {"EMBER_PIPE_TEST=hello", NULL};
    const char *sh_env[] = {"sh", "-c", "cat >/dev/null; echo \"$EMBER_PIPE_TEST\"", NULL};
    CHECK_OK(em_collect(em_pipe(em_range(c, 0, 4, 1, 2), sh_env, env), &b));
    joined(b, text, sizeof text);
    CHECK(!strcmp(text, "hello|hello"));
    em_batch_free(b);
    /* Only stdin, stdout and stderr reach the command: a descriptor the
     * program opened without O_CLOEXEC is closed in it. */
    int leak = open("/dev/null", O_RDONLY);
    CHECK(leak > 2);
    char probe[160];
    snprintf(probe, sizeof probe, "cat >/dev/null; if [ -e /proc/self/fd/%d ]; then echo open; else echo closed; fi", leak);
    const char *fds[] = {"sh", "-c", probe, NULL};
    CHECK_OK(em_collect(em_pipe(em_range(c, 0, 4, 1, 2), fds, NULL), &b));
    close(leak);
    joined(b, text, sizeof text);
    CHECK(!strcmp(text, "closed|closed"));
    em_batch_free(b);
    const char *cut[] = {"cut", "-f", "1", NULL};
    const char *kv[] = {"k", "v"};
    em_rdd *pairs = em_key_by(em_parallelize_str(c, kv, 2, 1), fn_identity, NULL, 0);
    CHECK_OK(em_collect(em_pipe(pairs, cut, NULL), &b));
    joined(b, text, sizeof text);
    CHECK(!strcmp(text, "k|v"));
    em_batch_free(b);
    /* Much output before any input is read, and much input: no deadlock. */
    const char *big[] = {"sh", "-c", "seq 1 200000; cat", NULL};
    int64_t n = 0;
    CHECK_OK(em_count(em_pipe(em_map(em_range(c, 0, 300000, 1, 2), fn_line_x, NULL, 0), big, NULL), &n));
    CHECK_EQ_I64(n, 2 * 200000 + 300000);
    /* A command that stops reading early (head) is not an error. */
    const char *head[] = {"head", "-n", "1", NULL};
    CHECK_OK(em_count(em_pipe(em_map(em_range(c, 0, 300000, 1, 2), fn_line_x, NULL, 0), head, NULL), &n));
    CHECK_EQ_I64(n, 2);
    /* take stops the command once it has enough. */
    const char *yes[] = {"yes", NULL};
    CHECK_OK(em_take(em_pipe(em_range(c, 0, 1, 1, 1), yes, NULL), 3, &b));
    CHECK_EQ_I64(em_batch_count(b), 3);
    em_batch_free(b);
    /* Failures name the command, its status and its stderr. */
    const char *fail[] = {"sh", "-c", "cat >/dev/null; echo boom >&2; exit 3", NULL};
    CHECK(em_count(em_pipe(lines, fail, NULL), &n) < 0);
    CHECK_STR_CONTAINS(em_errmsg(), "pipe: command 'sh -c cat >/dev/null; echo boom >&2; exit 3' exited with status 3");
    CHECK_STR_CONTAINS(em_errmsg(), "its stderr ends: boom");
    const char *killed[] = {"sh", "-c", "kill -9 $$", NULL};
    CHECK(em_count(em_pipe(lines, killed, NULL), &n) < 0);
    CHECK_STR_CONTAINS(em_errmsg(), "was killed by signal 9");
    const char *none[] = {"ember-no-such-command", NULL};
    CHECK(em_count(em_pipe(lines, none, NULL), &n) < 0);
    CHECK_STR_CONTAINS(em_errmsg(), "pipe: cannot run ember-no-such-command: No such file or directory");
    /* Bad arguments are refused at once. */
    const char *empty[] = {NULL};
    CHECK(em_pipe(lines, empty, NULL) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "em_pipe: no command");
    const char *badenv[] = {"NOEQUALS", NULL};
    CHECK(em_pipe(lines, cat, badenv) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "is not NAME=value");
    em_close(c);
}
