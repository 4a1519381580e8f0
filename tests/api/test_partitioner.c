/*
 * test_partitioner.c -- partitioner awareness (issue 11 section 1, the
 * by-key half): reduce_by_key, aggregate_by_key, fold_by_key,
 * combine_by_key and group_by_key over an RDD already hash-partitioned
 * into as many partitions run with no new shuffle (counted with
 * em_get_stats and seen in em_lineage), with the same answers as through
 * a shuffle, in memory and spilling.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

/* The same records, in any order: sorted by key first. */
static int same_by_key(em_rdd *a, em_rdd *b) {
    em_batch *x = NULL, *y = NULL;
    int ok = !em_collect(em_sort_by_key(a, 1, 1), &x) && !em_collect(em_sort_by_key(b, 1, 1), &y) &&
             batches_equal(x, y);
    em_batch_free(x);
    em_batch_free(y);
    return ok;
}

static int64_t map_tasks(em_ctx *c) {
    em_stats s;
    em_get_stats(c, &s);
    return s.map_tasks_run;
}

static int fn_count_values(const em_rec *in, em_emitter *out, const void *arg) {
    size_t pos = 0, n = 0;
    const void *item;
    size_t ilen;
    while (em_list_next(in->val, in->vlen, &pos, &item, &ilen) == 1) n++;
    return em_emit_i64(out, (int64_t)n);
}

TEST(part_reduce_after_partition_by_no_shuffle) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t m = 100;
    em_rdd *pairs = em_map(em_range(c, 0, 20000, 1, 6), fn_mod_key, &m, sizeof m);
    em_rdd *parted = em_partition_by(pairs, 4);
    int64_t n = 0, t0 = map_tasks(c);
    CHECK_OK(em_count(parted, &n));
    CHECK_EQ_I64(map_tasks(c) - t0, 6); /* partition_by's own shuffle */
    /* Same partitioner, same count: no shuffle, so no map task. */
    em_rdd *sums = em_reduce_by_key(parted, fn_sum_i64, NULL, 0, 4);
    CHECK_EQ_I64(em_num_partitions(sums), 4);
    em_batch *b = NULL;
    t0 = map_tasks(c);
    CHECK_OK(em_collect(sums, &b));
    CHECK_EQ_I64(map_tasks(c) - t0, 0); /* partition_by's shuffle reused, none new */
    CHECK(check_mod_sums(b, 20000, 100));
    em_batch_free(b);
    char *lin = em_lineage(sums);
    CHECK(lin && strstr(lin, "reduce_by_key") && !strstr(lin, "+-(4) partition_by")); /* one stage boundary, below partition_by */
    free(lin);
    /* partitions <= 0 takes the partitioned parent's count (Spark's
     * defaultPartitioner): still no shuffle; the result is partitioned the
     * same way, so a second aggregation over it needs none either. */
    em_rdd *sums2 = em_reduce_by_key(parted, em_sum_i64, NULL, 0, 0);
    em_rdd *groups = em_group_by_key(sums2, 0);
    CHECK_EQ_I64(em_num_partitions(groups), 4);
    t0 = map_tasks(c);
    CHECK_OK(em_collect(em_map_values(groups, fn_count_values, NULL, 0), &b));
    CHECK_EQ_I64(map_tasks(c) - t0, 0);
    CHECK_EQ_I64(em_batch_count(b), 100);
    CHECK_EQ_I64(batch_sum_i64(b), 100); /* one value per key */
    em_batch_free(b);
    CHECK(same_by_key(sums2, em_reduce_by_key(pairs, fn_sum_i64, NULL, 0, 3)));
    /* Another count: a shuffle (4 map tasks, one per partition). */
    em_rdd *five = em_reduce_by_key(parted, fn_sum_i64, NULL, 0, 5);
    t0 = map_tasks(c);
    CHECK_OK(em_count(five, &n));
    CHECK_EQ_I64(n, 100);
    CHECK_EQ_I64(map_tasks(c) - t0, 4);
    em_close(c);
}

/* Every by-key form in place, against the same through a shuffle. */
TEST(part_by_key_forms_in_place) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t m = 37;
    em_rdd *pairs = em_map(em_range(c, -5000, 15000, 1, 5), fn_mod_key, &m, sizeof m);
    em_rdd *parted = em_partition_by(pairs, 3);
    uint8_t zero[8];
    em_i64_enc(10, zero);
    int64_t n = 0, t0;
    CHECK_OK(em_count(parted, &n));
    t0 = map_tasks(c);
    CHECK(same_by_key(em_fold_by_key(parted, zero, 8, fn_sum_i64, NULL, 0, 3),
                      em_fold_by_key(parted, zero, 8, fn_sum_i64, NULL, 0, 2)));
    CHECK(same_by_key(em_aggregate_by_key(parted, zero, 8, fn_sum_i64, fn_sum_i64, NULL, 0, 3),
                      em_aggregate_by_key(parted, zero, 8, fn_sum_i64, fn_sum_i64, NULL, 0, 2)));
    CHECK(same_by_key(em_reduce_by_key(parted, em_max_i64, NULL, 0, 3),
                      em_reduce_by_key(parted, em_max_i64, NULL, 0, 2)));
    CHECK(same_by_key(em_map_values(em_group_by_key(parted, 3), fn_count_values, NULL, 0),
                      em_map_values(em_group_by_key(parted, 2), fn_count_values, NULL, 0)));
    /* The 2-partition forms shuffled (3 map tasks each, 4 of them), and
     * the sorts of the comparison 8 more shuffles of 3 or 2 maps; the
     * in-place forms added none. */
    CHECK_EQ_I64(map_tasks(c) - t0, 4 * 3 + 4 * (3 + 2));
    em_close(c);
}

/* In place under a small memory budget: the aggregation and the grouping
 * spill sorted runs and merge them, with exact results. */
TEST(part_in_place_spills) {
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.shuffle.memoryBytes", "256k"));
    CHECK_OK(em_conf_set(conf, "ember.local.dir", test_scratchdir()));
    em_ctx *c = em_open(test_master(), conf);
    em_conf_free(conf);
    CHECK(c);
    int64_t m = 60000;
    em_rdd *pairs = em_map(em_range(c, 0, 240000, 1, 4), fn_mod_key, &m, sizeof m);
    em_rdd *parted = em_persist(em_partition_by(pairs, 2), EM_MEMORY_ONLY);
    int64_t n;
    CHECK_OK(em_count(parted, &n));
    em_stats s0, s1;
    em_get_stats(c, &s0);
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_reduce_by_key(parted, fn_sum_i64, NULL, 0, 2), &b));
    em_get_stats(c, &s1);
    CHECK(check_mod_sums(b, 240000, 60000));
    CHECK(s1.spills > s0.spills);
    CHECK_EQ_I64(s1.map_tasks_run - s0.map_tasks_run, 0);
    em_batch_free(b);
    CHECK_OK(em_collect(em_map_values(em_group_by_key(parted, 2), fn_count_values, NULL, 0), &b));
    CHECK_EQ_I64(em_batch_count(b), 60000);
    CHECK_EQ_I64(batch_sum_i64(b), 240000);
    em_batch_free(b);
    em_close(c);
}

/* ------------------------------------------------ co-partitioned joins
 * (issue 11 section 1, the second half): cogroup and the joins read an
 * input already hash-partitioned into their count one-to-one (a narrow
 * dependency, in the cogroup's own task) and shuffle only the others.
 *
 * The inputs: L = (v % 8, v) for v in [0, 40) (keys 0..7, five values
 * each), R = (v % 12, v) for v in [0, 24) (keys 0..11, two values each). */

#define L_N 40
#define L_M 8
#define R_N 24
#define R_M 12

static em_rdd *make_l(em_ctx *c) {
    int64_t m = L_M;
    return em_map(em_range(c, 0, L_N, 1, 5), fn_mod_key, &m, sizeof m);
}
static em_rdd *make_r(em_ctx *c) {
    int64_t m = R_M;
    return em_map(em_range(c, 0, R_N, 1, 3), fn_mod_key, &m, sizeof m);
}

/* A join tuple (a, b) as 1000 * a + b, a missing side as -1. */
static int fn_tuple_code(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    em_tuple t;
    int rc = em_tuple_unpack(in->val, in->vlen, &t);
    if (rc) return rc;
    int64_t a = t.a_present ? em_i64_dec(t.a) : -1, b = t.b_present ? em_i64_dec(t.b) : -1;
    return em_emit_i64(out, 1000 * a + b);
}

/* The join of L and R by the definition: kind 0 inner, 1 left, 2 right,
 * 3 full outer; *n gets the tuples, the result is the sum of their codes. */
static int64_t want_join(int kind, int64_t *n) {
    int64_t sum = 0;
    *n = 0;
    for (int64_t k = 0; k < R_M; k++) {
        int in_l = k < L_M, in_r = 1;
        for (int64_t a = k; in_l && a < L_N; a += L_M)
            for (int64_t b = k; b < R_N; b += R_M) {
                sum += 1000 * a + b;
                ++*n;
            }
        if (!in_l && in_r && (kind == 2 || kind == 3))
            for (int64_t b = k; b < R_N; b += R_M) {
                sum += -1000 + b;
                ++*n;
            }
    }
    return sum; /* every key of L is in R: left = inner, full = right */
}

/* The inner join of L and R as want_join counts it, record by record:
 * (k, 1000 a + b) for every a of L and b of R under key k. */
static want_set *want_inner_join(void) {
    want_set *w = want_new();
    for (int64_t k = 0; k < L_M; k++)
        for (int64_t a = k; a < L_N; a += L_M)
            for (int64_t b = k; b < R_N; b += R_M) want_pair_i64(w, k, 1000 * a + b);
    return w;
}

/* count and sum of the codes of a join's result */
static int join_sum(em_rdd *j, int64_t *n, int64_t *sum) {
    em_batch *b = NULL;
    int rc = em_collect(em_map_values(j, fn_tuple_code, NULL, 0), &b);
    if (rc) return rc;
    *n = (int64_t)em_batch_count(b);
    *sum = batch_sum_i64(b);
    em_batch_free(b);
    return 0;
}

static em_rdd *join_of(int kind, em_rdd *a, em_rdd *b, int parts) {
    switch (kind) {
    case 0: return em_join(a, b, parts);
    case 1: return em_left_outer_join(a, b, parts);
    case 2: return em_right_outer_join(a, b, parts);
    }
    return em_full_outer_join(a, b, parts);
}

static int count_str(const char *s, const char *what) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

/* Both inputs partition_by(4): every join kind runs in one stage with no
 * map task beyond the two partition_by shuffles, which it reuses; the
 * result remembers the partitioner, so a reduce_by_key after it does not
 * shuffle either. */
TEST(part_join_both_partitioned_no_shuffle) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *lp = em_partition_by(make_l(c), 4), *rp = em_partition_by(make_r(c), 4);
    int64_t n = 0, sum = 0, wn, t0 = map_tasks(c);
    CHECK_OK(em_count(lp, &n));
    CHECK_OK(em_count(rp, &n));
    CHECK_EQ_I64(map_tasks(c) - t0, 5 + 3); /* the two partition_by shuffles */
    for (int kind = 0; kind < 4; kind++) {
        em_rdd *j = join_of(kind, lp, rp, kind == 3 ? 0 : 4); /* 0: the inputs' partitioner */
        CHECK(j);
        CHECK_EQ_I64(em_num_partitions(j), 4);
        em_stats s0, s1;
        em_get_stats(c, &s0);
        CHECK_OK(join_sum(j, &n, &sum));
        em_get_stats(c, &s1);
        CHECK_EQ_I64(s1.map_tasks_run - s0.map_tasks_run, 0);
        CHECK_EQ_I64(s1.stages_run - s0.stages_run, 1); /* the result stage alone */
        int64_t want = want_join(kind, &wn);
        CHECK_EQ_I64(n, wn);
        CHECK_EQ_I64(sum, want);
    }
    CHECK_EQ_I64(want_join(0, &wn), 1560760); /* by hand: sum over k < 8 of 2000 (5k + 80) + 5 (2k + 12) */
    CHECK_EQ_I64(wn, 80);
    CHECK_EQ_I64(want_join(2, &wn), 1560760 - 8000 + 124); /* keys 8..11: b - 1000 for b in {k, k + 12} */
    CHECK_EQ_I64(wn, 88);

    /* The lineage: one cogroup node reading both partition_by RDDs
     * narrowly (no stage boundary above them), no tagging helpers. */
    em_rdd *j = em_join(lp, rp, 4);
    char *lin = em_lineage(j);
    CHECK(lin);
    CHECK(strstr(lin, "cogroup") && !strstr(lin, "cogroup_tag"));
    CHECK_EQ_I64(count_str(lin, "cogroup["), 1);
    CHECK_EQ_I64(count_str(lin, "+-"), 2);            /* the two partition_by shuffles */
    CHECK_EQ_I64(count_str(lin, "|  partition_by["), 2); /* read one-to-one */
    free(lin);

    /* A reduce_by_key after the join (map_values keeps the partitioner):
     * no shuffle; the sums per key by hand. */
    em_rdd *sums = em_reduce_by_key(em_map_values(j, fn_tuple_code, NULL, 0), fn_sum_i64, NULL, 0, 0);
    CHECK_EQ_I64(em_num_partitions(sums), 4);
    em_batch *b = NULL;
    t0 = map_tasks(c);
    CHECK_OK(em_collect(sums, &b));
    CHECK_EQ_I64(map_tasks(c) - t0, 0);
    CHECK_EQ_I64(em_batch_count(b), 8);
    size_t pos = 0;
    em_rec x;
    while (em_batch_next(b, &pos, &x) == 1) {
        int64_t k = em_i64_dec(x.key);
        CHECK_EQ_I64(em_i64_dec(x.val), 2000 * (5 * k + 80) + 5 * (2 * k + 12));
    }
    em_batch_free(b);
    em_close(c);
}

/* One side partitioned into the join's count: only the other side
 * shuffles (its 3 map tasks), for every join kind; the results equal the
 * unpartitioned path's and the definition's. */
TEST(part_join_one_side_partitioned) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *l = make_l(c), *r = make_r(c), *lp = em_partition_by(l, 4);
    int64_t n = 0, sum = 0, n2 = 0, sum2 = 0, wn;
    CHECK_OK(em_count(lp, &n));
    for (int kind = 0; kind < 4; kind++) {
        int64_t t0 = map_tasks(c);
        CHECK_OK(join_sum(join_of(kind, lp, r, 0), &n, &sum)); /* 0: lp's partitioner */
        CHECK_EQ_I64(map_tasks(c) - t0, 3);
        t0 = map_tasks(c);
        CHECK_OK(join_sum(join_of(kind, r, lp, 4), &n2, &sum2)); /* partitioned on the right */
        CHECK_EQ_I64(map_tasks(c) - t0, 3);
        int64_t want = want_join(kind, &wn);
        CHECK_EQ_I64(n, wn);
        CHECK_EQ_I64(sum, want);
        /* swapped sides: (b, a) -> 1000 b + a */
        int64_t n3 = 0, sum3 = 0;
        t0 = map_tasks(c);
        CHECK_OK(join_sum(join_of(kind, l, r, 4), &n3, &sum3)); /* neither: both shuffle */
        CHECK_EQ_I64(map_tasks(c) - t0, 5 + 3);
        CHECK_EQ_I64(n3, n);
        CHECK_EQ_I64(sum3, sum);
        int64_t sw = 0;
        for (int64_t k = 0; k < L_M; k++)
            for (int64_t a = k; a < L_N; a += L_M)
                for (int64_t b = k; b < R_N; b += R_M) sw += 1000 * b + a;
        if (kind == 1 || kind == 3) /* R's keys 8..11 on the left now */
            for (int64_t k = L_M; k < R_M; k++)
                for (int64_t b = k; b < R_N; b += R_M) sw += 1000 * b - 1;
        CHECK_EQ_I64(sum2, sw);
    }
    char *lin = em_lineage(em_join(lp, r, 4));
    CHECK(lin && !strstr(lin, "cogroup_tag") && count_str(lin, "cogroup[") == 1);
    CHECK(strstr(lin, "|  partition_by[")); /* lp narrow, r through a stage boundary */
    CHECK_EQ_I64(count_str(lin, "+-"), 2);
    free(lin);
    em_close(c);
}

/* Partitioned into another count than the join's: a shuffle.  With
 * partitions 0 the largest input partitioner wins (Spark's
 * defaultPartitioner): partition_by(4) narrow, partition_by(2) shuffled.
 * Partition_by(8) of eight keys into 16 leaves empty partitions. */
TEST(part_join_other_counts_shuffle) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *l4 = em_partition_by(make_l(c), 4), *r4 = em_partition_by(make_r(c), 4),
           *r2 = em_partition_by(make_r(c), 2);
    int64_t n = 0, sum = 0, wn, want = want_join(0, &wn);
    CHECK_OK(em_count(l4, &n));
    CHECK_OK(em_count(r4, &n));
    CHECK_OK(em_count(r2, &n));
    int64_t t0 = map_tasks(c);
    CHECK_OK(join_sum(em_join(l4, r4, 3), &n, &sum)); /* both partitioned, another count */
    CHECK_EQ_I64(map_tasks(c) - t0, 4 + 4);
    CHECK_EQ_I64(n, wn);
    CHECK_EQ_I64(sum, want);
    em_rdd *j = em_join(l4, r2, 0);
    CHECK_EQ_I64(em_num_partitions(j), 4);
    t0 = map_tasks(c);
    CHECK_OK(join_sum(j, &n, &sum));
    CHECK_EQ_I64(map_tasks(c) - t0, 2);
    CHECK_EQ_I64(n, wn);
    CHECK_EQ_I64(sum, want);
    /* 16 partitions, at most 12 keys: empty partitions on both sides */
    em_rdd *l16 = em_partition_by(make_l(c), 16), *r16 = em_partition_by(make_r(c), 16);
    CHECK_OK(em_count(l16, &n));
    CHECK_OK(em_count(r16, &n));
    t0 = map_tasks(c);
    CHECK_OK(join_sum(em_full_outer_join(l16, r16, 16), &n, &sum));
    CHECK_EQ_I64(map_tasks(c) - t0, 0);
    want = want_join(3, &wn);
    CHECK_EQ_I64(n, wn);
    CHECK_EQ_I64(sum, want);
    /* empty inputs, partitioned and not */
    em_rdd *e4 = em_partition_by(em_empty(c), 4);
    CHECK_OK(em_count(e4, &n));
    CHECK_EQ_I64(n, 0);
    t0 = map_tasks(c);
    CHECK_OK(join_sum(em_join(l4, e4, 0), &n, &sum));
    CHECK_EQ_I64(map_tasks(c) - t0, 0);
    CHECK_EQ_I64(n, 0);
    CHECK_OK(join_sum(em_left_outer_join(e4, em_empty(c), 0), &n, &sum));
    CHECK_EQ_I64(n, 0);
    CHECK_OK(join_sum(em_right_outer_join(e4, l4, 4), &n, &sum));
    CHECK_EQ_I64(n, L_N);
    CHECK_EQ_I64(sum, L_N * -1000 + (L_N - 1) * L_N / 2);
    em_close(c);
}

/* cogroup of four inputs, mixed: A = L partition_by(4) and C =
 * partition_by(4) of (v % 8, 100 v) for v in [0, 16) narrow; B = R (3
 * partitions) and an empty RDD (2 partitions) shuffled: 3 + 2 map tasks.
 * Each key's lists by hand. */
static int fn_mod_key_x100(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t v = rec_i64(in), m = *(const int64_t *)arg;
    uint8_t k[8], x[8];
    em_i64_enc(v % m, k);
    em_i64_enc(100 * v, x);
    return em_emit_pair(out, k, 8, x, 8);
}

TEST(part_cogroup_mixed_inputs) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t m = 8;
    em_rdd *a = em_partition_by(make_l(c), 4);
    em_rdd *cc = em_partition_by(em_map(em_range(c, 0, 16, 1, 2), fn_mod_key_x100, &m, sizeof m), 4);
    em_rdd *ins[4] = {a, make_r(c), cc, em_parallelize(c, NULL, 0, 2)};
    int64_t n = 0;
    CHECK_OK(em_count(a, &n));
    CHECK_OK(em_count(cc, &n));
    em_rdd *g = em_cogroup_n(ins, 4, 0);
    CHECK(g);
    CHECK_EQ_I64(em_num_partitions(g), 4);
    char *lin = em_lineage(g);
    CHECK(lin && !strstr(lin, "cogroup_tag") && count_str(lin, "cogroup[") == 1);
    CHECK_EQ_I64(count_str(lin, "|  partition_by["), 2);
    free(lin);
    em_stats s0, s1;
    em_get_stats(c, &s0);
    em_batch *b = NULL;
    CHECK_OK(em_collect(g, &b));
    em_get_stats(c, &s1);
    CHECK_EQ_I64(s1.map_tasks_run - s0.map_tasks_run, 3 + 2);
    CHECK_EQ_I64(em_batch_count(b), R_M); /* keys 0..11 */
    size_t pos = 0;
    em_rec x;
    int seen = 0;
    while (em_batch_next(b, &pos, &x) == 1) {
        int64_t k = em_i64_dec(x.key);
        const void *lists[4];
        size_t lens[4];
        CHECK_OK(em_cogroup_unpack_n(x.val, x.vlen, 4, lists, lens));
        int64_t cnt[4] = {0}, sums[4] = {0};
        for (int s = 0; s < 4; s++) {
            size_t p = 0, ilen;
            const void *item;
            while (em_list_next(lists[s], lens[s], &p, &item, &ilen) == 1) {
                cnt[s]++;
                sums[s] += em_i64_dec(item);
            }
        }
        if (k < 8) {
            CHECK_EQ_I64(cnt[0], 5);
            CHECK_EQ_I64(sums[0], 5 * k + 80);     /* k, k+8, .., k+32 */
            CHECK_EQ_I64(cnt[2], 2);
            CHECK_EQ_I64(sums[2], 100 * (2 * k + 8)); /* 100 k, 100 (k+8) */
        } else {
            CHECK_EQ_I64(cnt[0] + cnt[2], 0);
        }
        CHECK_EQ_I64(cnt[1], 2);
        CHECK_EQ_I64(sums[1], 2 * k + 12);
        CHECK_EQ_I64(cnt[3], 0);
        seen |= 1 << k;
    }
    CHECK_EQ_I64(seen, (1 << R_M) - 1);
    em_batch_free(b);
    /* The cogroup is hash-partitioned into 4: grouping it again does not
     * shuffle. */
    int64_t t0 = map_tasks(c);
    CHECK_OK(em_count(em_group_by_key(g, 4), &n));
    CHECK_EQ_I64(n, R_M);
    CHECK_EQ_I64(map_tasks(c) - t0, 0);
    em_close(c);
}

/* One of several parent shuffles loses a map output (corrupt on its first
 * attempt): the cogroup's task fails with a fetch failure, that map output
 * alone is recomputed, and the answer is exact.  Stage 0 is L's shuffle,
 * stage 1 R's. */
TEST(part_cogroup_fetch_failure_one_parent) {
    em_ctx *c = open_test_ctx_with("ember.test.faults", "corrupt:stage=1,part=1,attempt=0");
    CHECK(c);
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_map_values(em_join(make_l(c), make_r(c), 2), fn_tuple_code, NULL, 0), &b));
    int exact = expect_multiset_take(b, want_inner_join(), "the join after the corrupt output");
    em_batch_free(b);
    CHECK(exact);
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.faults_fired, 1);
    CHECK_EQ_I64(st.map_tasks_run, 5 + 3 + 1); /* R's map task 1 twice */
    /* The join's tasks that read the corrupt output before it was
     * forgotten: the first, and the other of the two when it was reading
     * at the same time. */
    CHECK(st.tasks_failed >= 1 && st.tasks_failed <= 2);
    em_close(c);
}

/* A checkpointed, co-partitioned input: its lineage is cut, the join still
 * reads it one-to-one (the checkpoint keeps the partitioner) with no map
 * task, and a persisted cogroup input serves from its cache. */
TEST(part_join_checkpointed_and_cached_input) {
    em_ctx *c = open_test_ctx_with("ember.checkpoint.dir", tmp_path("part-ckpt"));
    CHECK(c);
    em_rdd *lp = em_partition_by(make_l(c), 4), *rp = em_persist(em_partition_by(make_r(c), 4), EM_MEMORY_ONLY);
    CHECK_OK(em_checkpoint(lp));
    int64_t n = 0, sum = 0, wn, want = want_join(3, &wn);
    CHECK_OK(em_count(lp, &n));
    CHECK_OK(em_count(rp, &n));
    char *lin = em_lineage(lp);
    CHECK(lin && strstr(lin, "checkpoint["));
    free(lin);
    em_stats s0, s1;
    em_get_stats(c, &s0);
    CHECK_OK(join_sum(em_full_outer_join(lp, rp, 0), &n, &sum));
    em_get_stats(c, &s1);
    CHECK_EQ_I64(s1.map_tasks_run - s0.map_tasks_run, 0);
    /* One executor in local[N]: rp's 4 cached partitions all read from its
     * cache (in a cluster a task may run away from its cached partition
     * once the locality wait ends, and recompute it from the shuffle). */
    if (!strncmp(test_master(), "local[", 6)) CHECK_EQ_I64(s1.cache_hits - s0.cache_hits, 4);
    CHECK_EQ_I64(n, wn);
    CHECK_EQ_I64(sum, want);
    em_close(c);
}

/* A checkpointed cogroup: its lineage (two dependencies, one of them a
 * shuffle) is cut, that shuffle is dropped with it, and it is still
 * hash-partitioned: a join of it with a co-partitioned RDD runs no map
 * task. */
TEST(part_cogroup_checkpointed) {
    em_ctx *c = open_test_ctx_with("ember.checkpoint.dir", tmp_path("cg-ckpt"));
    CHECK(c);
    em_rdd *lp = em_partition_by(make_l(c), 4);
    em_rdd *g = em_cogroup(lp, make_r(c), 0); /* R shuffled into lp's 4 */
    CHECK_OK(em_checkpoint(g));
    int64_t n = 0;
    CHECK_OK(em_count(g, &n));
    CHECK_EQ_I64(n, R_M);
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.live_shuffles, 1); /* lp's partition_by; R's went with the lineage */
    char *lin = em_lineage(g);
    CHECK(lin && strstr(lin, "checkpoint[") && !strstr(lin, "partition_by"));
    free(lin);
    int64_t t0 = map_tasks(c);
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_join(g, lp, 0), &b));
    CHECK_EQ_I64(map_tasks(c) - t0, 0);
    CHECK_EQ_I64(em_batch_count(b), L_N); /* keys 0..7: one cogroup value times five values */
    em_batch_free(b);
    em_close(c);
}

/* A co-partitioned join under a small memory budget: the cogroup task's
 * grouping spills sorted runs and merges them; the answer is exact. */
TEST(part_join_narrow_spills) {
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.shuffle.memoryBytes", "256k"));
    CHECK_OK(em_conf_set(conf, "ember.local.dir", test_scratchdir()));
    em_ctx *c = em_open(test_master(), conf);
    em_conf_free(conf);
    CHECK(c);
    int64_t m = 50000;
    /* a: (v % 50000, v) for v in [0, 100000), two values per key; b: one
     * value per key, (k, k) for k in [0, 50000) */
    em_rdd *a = em_partition_by(em_map(em_range(c, 0, 100000, 1, 4), fn_mod_key, &m, sizeof m), 2);
    em_rdd *b = em_partition_by(em_map(em_range(c, 0, 50000, 1, 2), fn_mod_key, &m, sizeof m), 2);
    int64_t n = 0, sum = 0;
    CHECK_OK(em_count(a, &n));
    CHECK_OK(em_count(b, &n));
    em_stats s0, s1;
    em_get_stats(c, &s0);
    CHECK_OK(join_sum(em_join(a, b, 0), &n, &sum));
    em_get_stats(c, &s1);
    CHECK_EQ_I64(s1.map_tasks_run - s0.map_tasks_run, 0);
    CHECK(s1.spills > s0.spills);
    CHECK_EQ_I64(n, 100000);
    /* sum over v of 1000 v + v % 50000 */
    CHECK_EQ_I64(sum, 1000 * (99999LL * 100000 / 2) + 2 * (49999LL * 50000 / 2));
    em_close(c);
}

/* A persisted cogroup of co-partitioned inputs: the second job reads its 4
 * partitions from the cache (local[N]), with the same answer. */
static int fn_cogroup_sizes(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    const void *la, *lb, *item;
    size_t lalen, lblen, ilen, pa = 0, pb = 0;
    int64_t na = 0, nb = 0;
    int rc = em_cogroup_unpack(in->val, in->vlen, &la, &lalen, &lb, &lblen);
    if (rc) return rc;
    while (em_list_next(la, lalen, &pa, &item, &ilen) == 1) na++;
    while (em_list_next(lb, lblen, &pb, &item, &ilen) == 1) nb++;
    return em_emit_i64(out, 100 * na + nb);
}

TEST(part_cogroup_persisted) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *g = em_persist(em_cogroup(em_partition_by(make_l(c), 4), em_partition_by(make_r(c), 4), 0),
                           EM_MEMORY_ONLY);
    em_rdd *sizes = em_map_values(g, fn_cogroup_sizes, NULL, 0);
    for (int round = 0; round < 2; round++) {
        em_stats a, b;
        em_batch *out = NULL;
        em_get_stats(c, &a);
        CHECK_OK(em_collect(sizes, &out));
        em_get_stats(c, &b);
        CHECK_EQ_I64(em_batch_count(out), R_M);
        CHECK_EQ_I64(batch_sum_i64(out), 8 * (5 * 100 + 2) + 4 * 2); /* keys 0..7: 5 and 2 values; 8..11: 0 and 2 */
        em_batch_free(out);
        if (round == 1) {
            CHECK_EQ_I64(b.map_tasks_run - a.map_tasks_run, 0);
            if (!strncmp(test_master(), "local[", 6)) CHECK_EQ_I64(b.cache_hits - a.cache_hits, 4);
        }
    }
    em_close(c);
}
