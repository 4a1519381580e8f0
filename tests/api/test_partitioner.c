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
