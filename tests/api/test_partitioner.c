/*
 * test_partitioner.c -- partitioner awareness (issue 11 section 1, the
 * by-key half): reduce_by_key, aggregate_by_key, fold_by_key,
 * combine_by_key and group_by_key over an RDD already hash-partitioned
 * into as many partitions run with no new shuffle (counted with
 * em_get_stats and seen in em_lineage), with the same answers as through
 * a shuffle, in memory and spilling.  And the join half: join, the outer
 * joins and cogroup of two RDDs hash-partitioned alike read both as narrow
 * parents (no shuffle), with one so partitioned only the other shuffles,
 * and em_lineage draws one cogroup node with no helper nodes.
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

/* ------------------------------------------------ co-partitioned joins */

static int fn_one_value(const em_rec *in, em_emitter *out, const void *arg) { return em_emit_i64(out, 1); }

static int64_t stages(em_ctx *c) {
    em_stats s;
    em_get_stats(c, &s);
    return s.stages_run;
}

/* The join's tuples (k, (a, b)) summed as sum of k * 1000000 + a + b:
 * one number that any missing, extra or wrong tuple changes. */
static int64_t join_digest(em_rdd *j, int64_t *count) {
    em_batch *b = NULL;
    if (em_collect(j, &b)) return -1;
    int64_t d = 0;
    size_t pos = 0;
    em_rec r;
    *count = 0;
    while (em_batch_next(b, &pos, &r) == 1) {
        em_tuple t;
        int64_t a = 0, v = 0;
        if (em_tuple_unpack(r.val, r.vlen, &t) == 0) {
            if (t.a_present && t.alen == 8) a = em_i64_dec(t.a);
            if (t.b_present && t.blen == 8) v = em_i64_dec(t.b);
        }
        d += em_i64_dec(r.key) * 1000000 + a + v;
        (*count)++;
    }
    em_batch_free(b);
    return d;
}

TEST(part_join_copartitioned_is_narrow) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t m10 = 10, m7 = 7;
    /* a: (i % 10, i) for i < 60 in 3 partitions; b: (i % 7, i) for i < 21 in 2 */
    em_rdd *a = em_map(em_range(c, 0, 60, 1, 3), fn_mod_key, &m10, sizeof m10);
    em_rdd *b = em_map(em_range(c, 0, 21, 1, 2), fn_mod_key, &m7, sizeof m7);
    /* The answer through plain shuffles, and by hand: keys 0..6 match,
     * 6 a-values times 3 b-values each. */
    int64_t n_plain = 0, d_plain = join_digest(em_join(a, b, 4), &n_plain);
    CHECK_EQ_I64(n_plain, 7 * 6 * 3);
    int64_t want = 0;
    for (int64_t k = 0; k < 7; k++)
        for (int64_t x = k; x < 60; x += 10)
            for (int64_t y = k; y < 21; y += 7) want += k * 1000000 + x + y;
    CHECK_EQ_I64(d_plain, want);

    em_rdd *pa = em_partition_by(a, 4), *pb = em_partition_by(b, 4), *pc = em_partition_by(b, 3);
    int64_t n = 0;
    CHECK_OK(em_count(pa, &n));
    CHECK_OK(em_count(pb, &n));
    CHECK_OK(em_count(pc, &n));
    /* Both partitioned alike: no shuffle at all, one stage. */
    int64_t t0 = map_tasks(c), s0 = stages(c), cnt = 0;
    em_rdd *j = em_join(pa, pb, 0);
    CHECK_EQ_I64(em_num_partitions(j), 4);
    CHECK_EQ_I64(join_digest(j, &cnt), want);
    CHECK_EQ_I64(map_tasks(c) - t0, 0);
    CHECK_EQ_I64(stages(c) - s0, 1);
    /* One side partitioned: only the other side's 2 map tasks. */
    t0 = map_tasks(c);
    CHECK_EQ_I64(join_digest(em_join(pa, b, 0), &cnt), want);
    CHECK_EQ_I64(map_tasks(c) - t0, 2);
    t0 = map_tasks(c);
    CHECK_EQ_I64(join_digest(em_join(a, pb, 0), &cnt), want);
    CHECK_EQ_I64(map_tasks(c) - t0, 3);
    /* Partitioned into different counts: the largest wins, the other shuffles. */
    t0 = map_tasks(c);
    em_rdd *j43 = em_join(pa, pc, 0);
    CHECK_EQ_I64(em_num_partitions(j43), 4);
    CHECK_EQ_I64(join_digest(j43, &cnt), want);
    CHECK_EQ_I64(map_tasks(c) - t0, 3); /* pc's own 3 partitions, shuffled again */
    /* A count asked for that is not theirs: both shuffle. */
    t0 = map_tasks(c);
    CHECK_EQ_I64(join_digest(em_join(pa, pb, 5), &cnt), want);
    CHECK_EQ_I64(map_tasks(c) - t0, 8);
    /* Neither partitioned: both shuffle, one map stage each (as Spark). */
    t0 = map_tasks(c);
    s0 = stages(c);
    CHECK_EQ_I64(join_digest(em_join(a, b, 4), &cnt), want);
    CHECK_EQ_I64(map_tasks(c) - t0, 3 + 2);
    CHECK_EQ_I64(stages(c) - s0, 3);
    /* The join is partitioned: a reduce_by_key after it does not shuffle. */
    em_rdd *ones = em_map_values(j, fn_one_value, NULL, 0);
    t0 = map_tasks(c);
    em_batch *bb = NULL;
    CHECK_OK(em_collect(em_reduce_by_key(ones, fn_sum_i64, NULL, 0, 4), &bb));
    CHECK_EQ_I64(map_tasks(c) - t0, 0);
    CHECK_EQ_I64(em_batch_count(bb), 7);
    em_batch_free(bb);
    /* The lineage: one cogroup node over both partition_by's, no helpers. */
    char *lin = em_lineage(j);
    CHECK(lin && strstr(lin, "cogroup[") && !strstr(lin, "cogroup_tag") && !strstr(lin, "union"));
    CHECK(lin && strstr(lin, "|  partition_by[") && !strstr(lin, "+-(4) partition_by"));
    free(lin);
    lin = em_lineage(em_join(pa, b, 0));
    /* b's shuffle is drawn as an edge from the cogroup, not as a node */
    CHECK(lin && strstr(lin, " +-(2) map[") && !strstr(lin, "cogroup_tag"));
    free(lin);
    em_close(c);
}

TEST(part_outer_joins_and_cogroup_copartitioned) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t m10 = 10, m7 = 7;
    em_rdd *a = em_map(em_range(c, 0, 30, 1, 3), fn_mod_key, &m10, sizeof m10); /* keys 0..9 */
    em_rdd *b = em_map(em_range(c, 0, 14, 1, 2), fn_mod_key, &m7, sizeof m7);  /* keys 0..6 */
    em_rdd *pa = em_partition_by(a, 2), *pb = em_partition_by(b, 2);
    int64_t n = 0, t0;
    CHECK_OK(em_count(pa, &n));
    CHECK_OK(em_count(pb, &n));
    /* Each form: the same records as through shuffles, no map task. */
    em_rdd *(*forms[])(em_rdd *, em_rdd *, int) = {em_join, em_left_outer_join, em_right_outer_join,
                                                     em_full_outer_join, em_cogroup};
    const int64_t counts[] = {7 * 3 * 2, 7 * 3 * 2 + 3 * 3, 7 * 3 * 2, 7 * 3 * 2 + 3 * 3, 10};
    for (int f = 0; f < 5; f++) {
        em_rdd *plain = forms[f](a, b, 2);
        t0 = map_tasks(c);
        em_rdd *narrow = forms[f](pa, pb, 0);
        CHECK_OK(em_count(narrow, &n));
        CHECK_EQ_I64(map_tasks(c) - t0, 0);
        CHECK_EQ_I64(n, counts[f]);
        CHECK(same_by_key(narrow, plain));
    }
    /* Empty sides and empty partitions. */
    em_rdd *none = em_partition_by(em_map(em_range(c, 0, 0, 1, 2), fn_mod_key, &m7, sizeof m7), 2);
    CHECK_OK(em_count(em_join(pa, none, 0), &n));
    CHECK_EQ_I64(n, 0);
    CHECK_OK(em_count(em_left_outer_join(pa, none, 0), &n));
    CHECK_EQ_I64(n, 30);
    /* A cogroup of three: keys in only one input get empty lists. */
    em_rdd *three[3] = {pa, pb, none};
    CHECK_OK(em_count(em_cogroup_n(three, 3, 0), &n));
    CHECK_EQ_I64(n, 10);
    char *lin = em_lineage(em_cogroup_n(three, 3, 0));
    CHECK(lin && strstr(lin, "cogroup[") && !strstr(lin, "cogroup_tag") && !strstr(lin, "union["));
    free(lin);
    em_close(c);
}
