/*
 * test_queue_depth.c -- the adaptive queues' depth per core
 * (scheduler/tasksched.c, ts_queue_depth): the round trip over a task's
 * run, as a power of two, bounded by what the scheduler can feed the cores
 * alive in one round trip; and the cores alive the executor table counts.
 */
#include "../test.h"
#include "placement.h"
#include "tasksched.h"

TEST(queue_depth_covers_the_round_trip) {
    /* Tasks as long as the trip: one queued per core.  Rate unknown. */
    CHECK_EQ_I64(ts_queue_depth(100, 100, 0, 2), 2);
    CHECK_EQ_I64(ts_queue_depth(100, 1000, 0, 2), 1);
    /* Short tasks: 300 us over 5 us, 61, rounds up to 64. */
    CHECK_EQ_I64(ts_queue_depth(300, 5, 0, 2), 64);
    /* No run measured (tasks that end as they start): the trip alone. */
    CHECK_EQ_I64(ts_queue_depth(300, 0, 0, 2), 512);
    /* Never past the hard ceiling. */
    CHECK_EQ_I64(ts_queue_depth(10000000, 1, 0, 2), 1024);
}

TEST(queue_depth_bounded_by_what_the_driver_feeds) {
    /* Two cores, a scheduler that takes 300,000 a second, a trip of 300
     * us: it decides 90 a trip, 45 a core; twice that is past the trip's
     * own 61, which stands. */
    CHECK_EQ_I64(ts_queue_depth(300, 5, 300000, 2), 64);
    /* 4,000 cores: 90 a trip is 0.02 a core; one each. */
    CHECK_EQ_I64(ts_queue_depth(300, 5, 300000, 4000), 1);
    /* 40 cores: 2 x 90 / 40 + 1 = 5.5, to 8. */
    CHECK_EQ_I64(ts_queue_depth(300, 5, 300000, 40), 8);
    /* No cores known: as one. */
    CHECK_EQ_I64(ts_queue_depth(300, 5, 300000, 0), 64);
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
