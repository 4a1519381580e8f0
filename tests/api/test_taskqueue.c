/*
 * test_taskqueue.c -- executors' queues on local-cluster[2,1]
 * (ember.executor.taskQueue 1: each executor holds one attempt queued
 * behind the one it runs).  An attempt queued behind one held at a gate
 * moves to the other executor once that one is idle, and runs there
 * while the held one still waits; its queued original ends without
 * counting as a task run.  Every wait is for an event, bounded.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

static int64_t get_run(const em_stats *st) { return st->tasks_run; }

typedef struct held_job {
    em_ctx *c;
    em_batch *b;
    int rc;
} held_job;

static void *run_job(void *p) {
    held_job *h = p;
    h->rc = em_collect(em_map(em_range(h->c, 0, 400, 1, 4), fn_identity, NULL, 0), &h->b);
    return NULL;
}

/* Partition 0's attempt is held until the test releases it.  Of the four
 * partitions, its executor holds one more queued behind it; the other
 * executor runs the other two and goes idle.  All three others succeed
 * while partition 0 is still held: the queued one moved (without the
 * move it would wait behind partition 0, and three would never end).
 * Then the release ends the job: exact result, four task runs, none
 * killed or failed (the moved attempt's original, killed in its queue,
 * is no run), no speculative copy. */
TEST(taskqueue_queued_behind_held_moves) {
    const char *kv[][2] = {
        {"ember.executor.taskQueue", "1"},
        {"ember.test.faults", "hold:stage=0,part=0,attempt=0,gate=long"},
        {"ember.test.faults.dir", gates_dir()},
        {"ember.progress", "false"},
    };
    em_conf *conf = em_conf_new();
    CHECK(conf);
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) test_conf_set(conf, kv[i][0], kv[i][1]);
    test_conf_set(conf, "ember.scheduler.minRegisteredResourcesRatio", "1");
    test_conf_set(conf, "ember.cores.max", "2");
    em_ctx *c = em_open("local-cluster[2,1,512]", conf);
    em_conf_free(conf);
    CHECK(c);
    em_stats s0, st;
    em_get_stats(c, &s0);
    held_job h = {c, NULL, 0};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, run_job, &h) == 0);
    int held = gate_wait_held("long", 0, 0, 0);
    int three = held && wait_stat(c, &st, get_run, s0.tasks_run + 3, "the three partitions not held to end");
    int still_held = three && !gate_was_held("long", 0, 0, 1);
    gate_release("long");
    pthread_join(th, NULL);
    CHECK(held);
    CHECK(three);
    CHECK(still_held);
    CHECK_OK(h.rc);
    CHECK_EQ_I64(em_batch_count(h.b), 400);
    CHECK_EQ_I64(batch_sum_i64(h.b), 399 * 400 / 2);
    em_batch_free(h.b);
    wait_no_tasks(c, &st);
    CHECK_EQ_I64(st.tasks_run - s0.tasks_run, 4);
    CHECK_EQ_I64(st.tasks_killed - s0.tasks_killed, 0);
    CHECK_EQ_I64(st.tasks_failed - s0.tasks_failed, 0);
    CHECK_EQ_I64(st.tasks_speculative - s0.tasks_speculative, 0);
    em_close(c);
}
