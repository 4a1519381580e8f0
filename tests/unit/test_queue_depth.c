/*
 * test_queue_depth.c -- the adaptive queues' depth per core
 * (scheduler/tasksched.c, ts_queue_depth): the round trip over a task's
 * run, as a power of two, halved while the whole cluster would queue more
 * than 4,096 attempts beyond its cores; and the cores alive the executor
 * table counts.
 */
#include "../test.h"
#include "placement.h"
#include "tasksched.h"

TEST(queue_depth_covers_the_round_trip) {
    /* Tasks as long as the trip: one queued per core. */
    CHECK_EQ_I64(ts_queue_depth(100, 100, 2), 2);
    CHECK_EQ_I64(ts_queue_depth(100, 1000, 2), 1);
    /* Short tasks: 300 us over 5 us, 61, rounds up to 64. */
    CHECK_EQ_I64(ts_queue_depth(300, 5, 2), 64);
    /* No run measured (tasks that end as they start): the trip alone. */
    CHECK_EQ_I64(ts_queue_depth(300, 0, 2), 512);
    /* Never past the hard ceiling. */
    CHECK_EQ_I64(ts_queue_depth(10000000, 1, 2), 1024);
    /* No cores known: as one. */
    CHECK_EQ_I64(ts_queue_depth(300, 5, 0), 64);
}

TEST(queue_depth_bounded_over_the_cluster) {
    /* 64 a core on 8 cores, 512 queued: the trip's depth stands. */
    CHECK_EQ_I64(ts_queue_depth(300, 5, 8), 64);
    /* 64 cores at 64: exactly 4,096. */
    CHECK_EQ_I64(ts_queue_depth(300, 5, 64), 64);
    /* 65 cores: halved once. */
    CHECK_EQ_I64(ts_queue_depth(300, 5, 65), 32);
    /* 400 executors of 4 cores: 2 a core (3,200 queued). */
    CHECK_EQ_I64(ts_queue_depth(300, 5, 1600), 2);
    /* 1,000 executors of 4 cores: the floor of 1, never 0. */
    CHECK_EQ_I64(ts_queue_depth(300, 5, 4000), 1);
    /* Long tasks keep 1 whatever the cluster. */
    CHECK_EQ_I64(ts_queue_depth(100, 1000, 100000), 1);
}

TEST(queue_depth_table_counts_alive_cores) {
    exec_table t = {0};
    CHECK_OK(et_add(&t, 0, 4, 0, 64, "h1"));
    CHECK_OK(et_add(&t, 1, 2, 0, 64, "h2"));
    CHECK_EQ_I64(t.alive_cores, 6);
    et_assign(&t, et_find(&t, 0), 1);
    et_set_backlog(&t, et_find(&t, 1), 8);
    CHECK_EQ_I64(t.alive_cores, 6);
    et_set_alive(&t, et_find(&t, 1), 0);
    CHECK_EQ_I64(t.alive_cores, 4);
    CHECK_OK(et_add(&t, 1, 3, 0, 64, "h2")); /* back, with another size */
    CHECK_EQ_I64(t.alive_cores, 7);
    et_free(&t);
}
