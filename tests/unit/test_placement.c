/*
 * test_placement.c -- the choice of an executor for an attempt
 * (scheduler/placement.c): a speculative copy goes to another host where
 * one has room, else to another executor of the original's host, and to the
 * original's own executor only when nothing else has room; a cached
 * partition's executor is preferred while it has room.
 */
#include "../test.h"
#include "placement.h"

/* Executor id holds n attempts (through et_assign, which keeps the index). */
static void set_assigned(exec_table *t, int id, int n) {
    exec_rec *x = et_find(t, id);
    while (x->assigned < n) et_assign(t, x, 1);
    while (x->assigned > n) et_assign(t, x, -1);
}

TEST(placement_speculative_copy_prefers_another_host) {
    exec_table t = {0};
    CHECK_OK(et_add(&t, 0, 2, 0, 0, "10.0.0.1"));
    CHECK_OK(et_add(&t, 1, 4, 0, 0, "10.0.0.1")); /* most room, but the original's host */
    CHECK_OK(et_add(&t, 2, 1, 0, 0, "10.0.0.2"));
    set_assigned(&t, 0, 1); /* the original runs on executor 0 */
    /* Nothing to avoid: the most room. */
    CHECK_EQ_I64(et_choose(&t, -1, -1, 1, 0)->id, 1);
    /* A copy of an attempt on 0: the other host, though it has less room. */
    CHECK_EQ_I64(et_choose(&t, -1, 0, 1, 0)->id, 2);
    /* The other host full: another executor of the same host. */
    set_assigned(&t, 2, 1);
    CHECK_EQ_I64(et_choose(&t, -1, 0, 1, 0)->id, 1);
    /* Everything else full: the original's executor, as a last resort. */
    set_assigned(&t, 1, 4);
    CHECK_EQ_I64(et_choose(&t, -1, 0, 1, 0)->id, 0);
    /* And nothing when it is full too. */
    set_assigned(&t, 0, 2);
    CHECK(et_choose(&t, -1, 0, 1, 0) == NULL);
    et_free(&t);
}

/* A copy's choice walks the index by room: of executors elsewhere with as
 * much room, the one that has had it longest (not the first in the
 * table), past executors of the original's host with more room; and an
 * exclusion (a filter) passes over the excluded one to the next by room. */
/* A filter that skips the executors whose bit is set in *ctx. */
static int skip_bits(void *ctx, const exec_rec *x) { return (*(const unsigned *)ctx >> x->id) & 1u; }

TEST(placement_copy_by_room_then_longest) {
    unsigned excluded = 0;
    et_filter f = {skip_bits, &excluded};
    exec_table t = {0};
    CHECK_OK(et_add(&t, 0, 2, 0, 0, "a"));
    CHECK_OK(et_add(&t, 1, 8, 0, 0, "a"));
    CHECK_OK(et_add(&t, 2, 2, 0, 0, "b"));
    CHECK_OK(et_add(&t, 3, 2, 0, 0, "c"));
    CHECK_OK(et_add(&t, 4, 1, 0, 0, "d"));
    set_assigned(&t, 0, 1);
    CHECK_EQ_I64(et_choose(&t, -1, 0, 1, 0)->id, 2);
    set_assigned(&t, 2, 1); /* 2 leaves the level and comes back after 3 */
    set_assigned(&t, 2, 0);
    CHECK_EQ_I64(et_choose(&t, -1, 0, 1, 0)->id, 3);
    excluded |= 1u << 3;
    CHECK_EQ_I64(et_choose(&t, -1, 0, 1, &f)->id, 2);
    excluded |= 1u << 2;
    CHECK_EQ_I64(et_choose(&t, -1, 0, 1, &f)->id, 4);
    excluded |= 1u << 4;
    CHECK_EQ_I64(et_choose(&t, -1, 0, 1, &f)->id, 1); /* the original's host */
    excluded |= 1u << 1;
    CHECK_EQ_I64(et_choose(&t, -1, 0, 1, &f)->id, 0); /* the original's executor */
    excluded |= 1u << 0;
    CHECK(et_choose(&t, -1, 0, 1, &f) == NULL);
    /* Without avoid: the most room that is not excluded. */
    excluded &= ~(1u << 2);
    CHECK_EQ_I64(et_choose(&t, -1, -1, 1, &f)->id, 2);
    et_free(&t);
}

/* A filter that counts the executors it is asked of in *ctx, and skips none. */
static int count_asks(void *ctx, const exec_rec *x) {
    (void)x;
    ++*(int *)ctx;
    return 0;
}

/* An exclusion is asked only of the executors the choice looks at: of
 * 1,000 idle executors, one for a plain attempt and one for a copy whose
 * original's host holds 50 of them (the walk passes those over by host
 * before asking). */
TEST(placement_filter_asked_lazily) {
    exec_table t = {0};
    char host[16];
    for (int i = 0; i < 1000; i++) {
        snprintf(host, sizeof host, "h%d", i / 50);
        CHECK_OK(et_add(&t, i, 4, 1, 1, host));
    }
    int asks = 0;
    et_filter f = {count_asks, &asks};
    CHECK(et_choose(&t, -1, -1, 1, &f) != NULL);
    CHECK_EQ_I64(asks, 1);
    asks = 0;
    exec_rec *x = et_choose(&t, -1, 0, 1, &f);
    CHECK(x != NULL);
    CHECK(strcmp(x->host, "h0") != 0);
    CHECK_EQ_I64(asks, 1);
    et_free(&t);
}

/* Executors that join out of id order (as a cluster's register) are
 * found by id, and an id never added is not, whatever the order. */
TEST(placement_find_in_any_join_order) {
    exec_table t = {0};
    int n = 1000;
    for (int i = 0; i < n; i++) CHECK_OK(et_add(&t, (i * 7919) % n, 1, 0, 0, NULL)); /* a permutation */
    CHECK_OK(et_add(&t, 5000, 2, 0, 0, NULL)); /* a replacement's id */
    for (int id = 0; id < n; id++) {
        exec_rec *x = et_find(&t, id);
        CHECK(x && x->id == id);
    }
    CHECK(et_find(&t, 5000) && et_find(&t, 5000)->cores == 2);
    CHECK(et_find(&t, n) == NULL);
    CHECK(et_find(&t, -1) == NULL);
    /* Announcing itself again keeps its slot. */
    exec_rec *x = et_find(&t, 17);
    CHECK_OK(et_add(&t, 17, 4, 0, 0, NULL));
    CHECK(et_find(&t, 17) == x && x->cores == 4);
    CHECK_EQ_I64(t.n, n + 1);
    et_free(&t);
}

TEST(placement_unknown_hosts_avoid_the_executor) {
    exec_table t = {0};
    CHECK_OK(et_add(&t, 0, 1, 0, 0, NULL));
    CHECK_OK(et_add(&t, 1, 1, 0, 0, NULL));
    CHECK_OK(et_add(&t, 2, 8, 0, 0, NULL));
    /* Hosts unknown: every other executor counts as elsewhere; the most room wins. */
    CHECK_EQ_I64(et_choose(&t, -1, 2, 1, 0)->id, 0);
    CHECK_EQ_I64(et_choose(&t, -1, 0, 1, 0)->id, 2);
    et_free(&t);
}

TEST(placement_cached_partition_preferred) {
    exec_table t = {0};
    CHECK_OK(et_add(&t, 0, 1, 0, 0, "h"));
    CHECK_OK(et_add(&t, 1, 4, 0, 0, "h"));
    CHECK_EQ_I64(et_choose(&t, 0, -1, 0, 0)->id, 0);
    set_assigned(&t, 0, 1);
    CHECK(et_choose(&t, 0, -1, 0, 0) == NULL);     /* waits for it */
    CHECK_EQ_I64(et_choose(&t, 0, -1, 1, 0)->id, 1); /* the wait is over */
    /* Excluded for this attempt (a filter): never chosen. */
    unsigned excluded = 0;
    et_filter f = {skip_bits, &excluded};
    excluded |= 1u << 1;
    CHECK(et_choose(&t, 0, -1, 1, &f) == NULL);
    /* The cached executor excluded, with room: as if nothing were cached,
     * no locality wait. */
    excluded = 1u << 0;
    set_assigned(&t, 0, 0);
    CHECK_EQ_I64(et_choose(&t, 0, -1, 0, &f)->id, 1);
    et_free(&t);
}

/* An executor's queue of waiting attempts: launch order out, through
 * growth and the room popped at its front, 0 when empty. */
TEST(placement_wait_queue_in_order) {
    exec_table t = {0};
    CHECK_OK(et_add(&t, 0, 1, 1, 1, NULL));
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

/* The index by room: the choice without a preference is the executor with
 * the most free cores, then (all cores busy) the most queue slots left,
 * equal ones in turn; the counts follow every change; a dead executor has
 * no room and counts for nothing. */
TEST(placement_index_by_room) {
    exec_table t = {0};
    for (int i = 0; i < 3; i++) CHECK_OK(et_add(&t, i, 2, 1, 1, "h")); /* 2 cores, 1 queue slot each */
    CHECK_EQ_I64(t.idle_cores, 6);
    CHECK_EQ_I64(t.idle.top, 2);
    CHECK_EQ_I64(t.queue.top, 0);
    int order[6];
    for (int k = 0; k < 6; k++) {
        exec_rec *x = et_choose(&t, -1, -1, 1, 0);
        CHECK(x);
        order[k] = x->id;
        et_assign(&t, x, 1);
    }
    /* In turn: 0 1 2, then again 0 1 2 (each with 2 free cores, then 1). */
    for (int k = 0; k < 6; k++) CHECK_EQ_I64(order[k], k % 3);
    CHECK_EQ_I64(t.idle_cores, 0);
    CHECK_EQ_I64(t.queued_execs, 0);
    CHECK_EQ_I64(t.idle.top, 0);
    CHECK_EQ_I64(t.queue.top, 1);
    set_assigned(&t, 1, 3);
    CHECK_EQ_I64(t.queued_execs, 1);
    CHECK_EQ_I64(et_choose(&t, -1, -1, 1, 0)->id, 0); /* 0 and 2 have a slot: 0 had it first */
    set_assigned(&t, 0, 3);
    set_assigned(&t, 2, 3);
    CHECK(!et_any_room(&t));
    CHECK(et_choose(&t, -1, -1, 1, 0) == NULL);
    CHECK_EQ_I64(t.queued_execs, 3);
    et_set_alive(&t, et_find(&t, 1), 0);
    CHECK_EQ_I64(t.queued_execs, 2);
    set_assigned(&t, 1, 0); /* its attempts end after its loss */
    CHECK(!et_any_room(&t));
    CHECK_EQ_I64(t.idle_cores, 0);
    CHECK_OK(et_add(&t, 1, 2, 1, 1, "h")); /* it joins again */
    CHECK_EQ_I64(et_choose(&t, -1, -1, 1, 0)->id, 1);
    CHECK_EQ_I64(t.idle_cores, 2);
    CHECK_EQ_I64(t.idle.top, 2);
    et_free(&t);
}

/* A backlog set later (the scheduler's adaptive queues) moves the
 * executor's room, within what it announced. */
TEST(placement_backlog_changes_room) {
    exec_table t = {0};
    CHECK_OK(et_add(&t, 0, 2, 2, 8, "h"));
    exec_rec *x = et_find(&t, 0);
    CHECK_EQ_I64(x->backlog_min, 2);
    CHECK_EQ_I64(x->backlog_max, 8);
    set_assigned(&t, 0, 2); /* its cores busy: its queue takes 2 */
    CHECK_EQ_I64(t.queue.top, 2);
    et_set_backlog(&t, x, 8);
    CHECK_EQ_I64(t.queue.top, 8);
    set_assigned(&t, 0, 10);
    CHECK(!et_any_room(&t));
    et_set_backlog(&t, x, 2); /* shallower than it holds: no room until it drains */
    CHECK(!et_any_room(&t));
    CHECK_EQ_I64(t.queued_execs, 1);
    set_assigned(&t, 0, 3);
    CHECK_EQ_I64(et_choose(&t, -1, -1, 1, 0)->id, 0);
    et_free(&t);
}

/* A free core wins over a deep queue: an executor of 2 cores with a queue
 * of 128 and one of 1 core with 64 take a small job's tasks side by side
 * (2, then 1, then the queues), not all on the deeper one. */
TEST(placement_free_cores_before_queues) {
    exec_table t = {0};
    CHECK_OK(et_add(&t, 0, 2, 128, 128, "a"));
    CHECK_OK(et_add(&t, 1, 1, 64, 64, "b"));
    int on[2] = {0, 0};
    for (int k = 0; k < 3; k++) {
        exec_rec *x = et_choose(&t, -1, -1, 1, 0);
        CHECK(x);
        on[x->id]++;
        et_assign(&t, x, 1);
    }
    CHECK_EQ_I64(on[0], 2);
    CHECK_EQ_I64(on[1], 1);
    CHECK_EQ_I64(t.idle_cores, 0);
    /* Then the deepest queue: executor 0's 128 slots before 1's 64. */
    CHECK_EQ_I64(et_choose(&t, -1, -1, 1, 0)->id, 0);
    /* A speculative copy (the linear choice) ranks free cores first too. */
    set_assigned(&t, 1, 0);
    CHECK_EQ_I64(et_choose(&t, -1, 0, 1, 0)->id, 1);
    et_free(&t);
}

/* Whether every executor alive runs on one host (the map outputs' codec,
 * tasksched.c): the first executor's host; unknown hosts (local[N]'s
 * threads) are one host; an executor elsewhere breaks it while it is
 * alive, and through a busy executor's assignments the count holds. */
TEST(placement_one_host_while_alive) {
    exec_table t = {0};
    CHECK_OK(et_add(&t, 0, 2, 0, 0, NULL));
    CHECK_OK(et_add(&t, 1, 2, 0, 0, NULL));
    CHECK(et_one_host(&t));
    et_free(&t);

    CHECK_OK(et_add(&t, 0, 2, 0, 0, "10.0.0.1"));
    CHECK_OK(et_add(&t, 1, 2, 0, 0, "10.0.0.1"));
    CHECK(et_one_host(&t));
    set_assigned(&t, 1, 3);
    CHECK(et_one_host(&t));
    CHECK_OK(et_add(&t, 2, 1, 0, 0, "10.0.0.2"));
    CHECK(!et_one_host(&t));
    set_assigned(&t, 2, 1);
    set_assigned(&t, 2, 0);
    CHECK(!et_one_host(&t));
    et_set_alive(&t, et_find(&t, 2), 0); /* lost */
    CHECK(et_one_host(&t));
    et_set_alive(&t, et_find(&t, 2), 1); /* back */
    CHECK(!et_one_host(&t));
    CHECK_OK(et_add(&t, 2, 1, 0, 0, "10.0.0.1")); /* announced again, on the first host */
    CHECK(et_one_host(&t));
    CHECK_OK(et_add(&t, 1, 2, 0, 0, NULL)); /* a host unknown beside a known one */
    CHECK(!et_one_host(&t));
    et_free(&t);
}
