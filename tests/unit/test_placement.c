/*
 * test_placement.c -- the choice of an executor for an attempt
 * (scheduler/placement.c): a speculative copy goes to another host where
 * one has room, else to another executor of the original's host, and to the
 * original's own executor only when nothing else has room; a cached
 * partition's executor is preferred while it has room.
 */
#include "../test.h"
#include "placement.h"

TEST(placement_speculative_copy_prefers_another_host) {
    exec_table t = {0};
    CHECK_OK(et_add(&t, 0, 2, 0, "10.0.0.1"));
    CHECK_OK(et_add(&t, 1, 4, 0, "10.0.0.1")); /* most room, but the original's host */
    CHECK_OK(et_add(&t, 2, 1, 0, "10.0.0.2"));
    et_find(&t, 0)->assigned = 1; /* the original runs on executor 0 */
    /* Nothing to avoid: the most room. */
    CHECK_EQ_I64(et_choose(&t, -1, -1, 1, 0)->id, 1);
    /* A copy of an attempt on 0: the other host, though it has less room. */
    CHECK_EQ_I64(et_choose(&t, -1, 0, 1, 0)->id, 2);
    /* The other host full: another executor of the same host. */
    et_find(&t, 2)->assigned = 1;
    CHECK_EQ_I64(et_choose(&t, -1, 0, 1, 0)->id, 1);
    /* Everything else full: the original's executor, as a last resort. */
    et_find(&t, 1)->assigned = 4;
    CHECK_EQ_I64(et_choose(&t, -1, 0, 1, 0)->id, 0);
    /* And nothing when it is full too. */
    et_find(&t, 0)->assigned = 2;
    CHECK(et_choose(&t, -1, 0, 1, 0) == NULL);
    et_free(&t);
}

TEST(placement_unknown_hosts_avoid_the_executor) {
    exec_table t = {0};
    CHECK_OK(et_add(&t, 0, 1, 0, NULL));
    CHECK_OK(et_add(&t, 1, 1, 0, NULL));
    CHECK_OK(et_add(&t, 2, 8, 0, NULL));
    /* Hosts unknown: every other executor counts as elsewhere; the most room wins. */
    CHECK_EQ_I64(et_choose(&t, -1, 2, 1, 0)->id, 0);
    CHECK_EQ_I64(et_choose(&t, -1, 0, 1, 0)->id, 2);
    et_free(&t);
}

TEST(placement_cached_partition_preferred) {
    exec_table t = {0};
    CHECK_OK(et_add(&t, 0, 1, 0, "h"));
    CHECK_OK(et_add(&t, 1, 4, 0, "h"));
    CHECK_EQ_I64(et_choose(&t, 0, -1, 0, 0)->id, 0);
    et_find(&t, 0)->assigned = 1;
    CHECK(et_choose(&t, 0, -1, 0, 0) == NULL);     /* waits for it */
    CHECK_EQ_I64(et_choose(&t, 0, -1, 1, 0)->id, 1); /* the wait is over */
    /* Excluded for this attempt (use_skip): never chosen. */
    et_find(&t, 1)->skip = 1;
    CHECK(et_choose(&t, 0, -1, 1, 1) == NULL);
    et_free(&t);
}

/* An executor's queue of waiting attempts: launch order out, through
 * growth and the room popped at its front, 0 when empty. */
TEST(placement_wait_queue_in_order) {
    exec_table t = {0};
    CHECK_OK(et_add(&t, 0, 1, 1, NULL));
    exec_rec *x = et_find(&t, 0);
    CHECK(x);
    CHECK_EQ_I64(et_wait_pop(x), 0);
    uint64_t next_in = 1, next_out = 1;
    for (int round = 0; round < 50; round++) { /* in 3, out 2: it grows and slides */
        for (int i = 0; i < 3; i++) CHECK_OK(et_wait_push(x, next_in++));
        for (int i = 0; i < 2; i++) CHECK_EQ_I64(et_wait_pop(x), next_out++);
    }
    while (next_out < next_in) CHECK_EQ_I64(et_wait_pop(x), next_out++);
    CHECK_EQ_I64(et_wait_pop(x), 0);
    et_free(&t);
}
