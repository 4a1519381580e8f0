/*
 * test_lifetimes.c -- a long-lived driver stays flat: RDDs released with
 * em_rdd_release are freed with their shuffles (tracker entries, map
 * stages, files) and cached blocks; an action's internal RDDs
 * (tree_aggregate's levels, count_by_key's) are freed when it returns; an
 * RDD still read by another stays until that one goes.  Asserted by the
 * live counts of em_stats, never by time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

static em_ctx *open_quiet(void) {
    em_conf *conf = em_conf_new();
    em_ctx *c = NULL;
    if (conf && !em_conf_set(conf, "ember.progress", "false")) c = em_open("local[2]", conf);
    em_conf_free(conf);
    return c;
}

TEST(life_released_job_loop_stays_flat) {
    em_ctx *c = open_quiet();
    CHECK(c);
    em_stats st;
    for (int i = 0; i < 2000; i++) {
        int64_t m = 7, n = 0;
        em_rdd *src = em_range(c, 0, 100 + i % 50, 1, 2);
        em_rdd *keyed = em_map(src, fn_mod_key, &m, sizeof m);
        em_rdd *sums = em_reduce_by_key(keyed, fn_sum_i64, NULL, 0, 2);
        CHECK_OK(em_count(sums, &n));
        CHECK_EQ_I64(n, 7);
        em_rdd_release(sums);
        em_rdd_release(keyed);
        em_rdd_release(src);
        if (i == 9) { /* after a few rounds: nothing accumulates from here on */
            em_get_stats(c, &st);
            CHECK_EQ_I64(st.live_rdds, 0);
            CHECK_EQ_I64(st.live_shuffles, 0);
        }
    }
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.jobs, 2000);
    CHECK_EQ_I64(st.live_rdds, 0);
    CHECK_EQ_I64(st.live_shuffles, 0);
    CHECK_EQ_I64(st.live_stages, 0);
    CHECK_EQ_I64(st.scratch_bytes, 0); /* 2000 shuffles' files: all removed */
    em_close(c);
}

TEST(life_release_order_does_not_matter) {
    /* Released parent first: it stays while its child reads it. */
    em_ctx *c = open_quiet();
    CHECK(c);
    int64_t m = 5, n = 0;
    em_rdd *src = em_range(c, 0, 1000, 1, 3);
    em_rdd *sums = em_reduce_by_key(em_map(src, fn_mod_key, &m, sizeof m), fn_sum_i64, NULL, 0, 2);
    em_rdd *twice = em_map_values(sums, fn_double_i64, NULL, 0);
    CHECK_OK(em_count(twice, &n));
    em_rdd_release(src);
    em_rdd_release(sums);
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.live_rdds, 4); /* range, map, reduce_by_key, map_values */
    CHECK_EQ_I64(st.live_shuffles, 1);
    /* The shuffle's outputs are still there: the next action reuses them. */
    em_batch *b = NULL;
    CHECK_OK(em_collect(twice, &b));
    CHECK_EQ_I64(em_batch_count(b), 5);
    em_batch_free(b);
    em_stats st2;
    em_get_stats(c, &st2);
    CHECK_EQ_I64(st2.stages_skipped - st.stages_skipped, 1);
    em_rdd_release(twice); /* the whole chain goes */
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.live_rdds, 2); /* the map made inline above, never released, and the range it reads */
    CHECK_EQ_I64(st.live_shuffles, 0);
    CHECK_EQ_I64(st.scratch_bytes, 0);
    em_close(c);
}

TEST(life_action_internal_rdds_freed) {
    em_ctx *c = open_quiet();
    CHECK(c);
    em_rdd *src = em_persist(em_range(c, 0, 10000, 1, 8), EM_MEMORY_ONLY);
    CHECK(src);
    em_stats st0, st;
    em_batch *b = NULL;
    CHECK_OK(em_tree_reduce(src, fn_sum_i64, NULL, 0, 3, &b));
    em_batch_free(b);
    em_get_stats(c, &st0);
    for (int i = 0; i < 300; i++) {
        CHECK_OK(em_tree_reduce(src, fn_sum_i64, NULL, 0, 3, &b));
        CHECK_EQ_I64(batch_i64_at(b, 0), 9999 * 10000 / 2);
        em_batch_free(b);
        em_rdd *pairs = em_map(src, fn_pair_x10, NULL, 0);
        CHECK_OK(em_count_by_key(pairs, &b));
        CHECK_EQ_I64(em_batch_count(b), 10000);
        em_batch_free(b);
        em_rdd_release(pairs);
    }
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.live_rdds, st0.live_rdds);
    CHECK_EQ_I64(st.live_shuffles, st0.live_shuffles);
    CHECK_EQ_I64(st.live_stages, st0.live_stages);
    CHECK_EQ_I64(st.scratch_bytes, st0.scratch_bytes);
    em_rdd_release(src);
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.live_rdds, 0);
    em_close(c);
}

TEST(life_released_cache_blocks_removed) {
    em_ctx *c = open_quiet();
    CHECK(c);
    em_rdd *disk = em_persist(em_range(c, 0, 5000, 1, 4), EM_DISK_ONLY);
    int64_t n = 0;
    CHECK_OK(em_count(disk, &n));
    em_stats st;
    em_get_stats(c, &st);
    CHECK(st.scratch_bytes > 5000 * 8); /* four blocks on disk */
    em_rdd_release(disk);
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.scratch_bytes, 0);
    CHECK_EQ_I64(st.live_rdds, 0);
    em_rdd_release(NULL);
    em_close(c);
}
