/*
 * test_locality.c -- placement across executors, on local[2] split into two
 * executors of one slot each (ember.test.executors=2): a task whose input
 * partition is cached on an executor runs there (em_stats.tasks_local);
 * with ember.locality.wait=0 it runs elsewhere at once when that executor
 * is busy; with a long wait it waits for it.  Which executor computed a
 * partition is deterministic here: two tasks on two idle one-slot
 * executors go to executor 0, then 1.  Asserted by counts.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

static em_ctx *open_two(const char *wait) {
    em_conf *conf = em_conf_new();
    em_ctx *c = NULL;
    if (conf && !em_conf_set(conf, "ember.progress", "false") && !em_conf_set(conf, "ember.test.executors", "2") &&
        !em_conf_set(conf, "ember.locality.wait", wait))
        c = em_open("local[2]", conf);
    em_conf_free(conf);
    return c;
}

TEST(locality_executors_setting_checked) {
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.test.executors", "3"));
    CHECK(em_open("local[2]", conf) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.test.executors is 3, more than the 2 threads of local[2]");
    CHECK_EQ_I64(em_conf_set(conf, "ember.locality.wait", "soon"), EM_EINVAL);
    CHECK_OK(em_conf_set(conf, "ember.locality.wait", "0"));
    CHECK_OK(em_conf_set(conf, "ember.test.executors", "2"));
    em_ctx *c = em_open("local[2]", conf);
    em_conf_free(conf);
    CHECK(c);
    CHECK_EQ_I64(em_set(c, "ember.test.executors", "1"), EM_EINVAL);
    em_close(c);
}

TEST(locality_cached_partitions_run_where_cached) {
    em_ctx *c = open_two("1h");
    CHECK(c);
    em_rdd *r = em_persist(em_map(em_range(c, 0, 4000, 1, 4), fn_identity, NULL, 0), EM_MEMORY_ONLY);
    int64_t n = 0;
    em_stats s0, s1;
    CHECK_OK(em_count(r, &n));
    CHECK_EQ_I64(n, 4000);
    em_get_stats(c, &s0);
    CHECK_EQ_I64(s0.tasks_local, 0); /* nothing was cached before */
    for (int round = 0; round < 3; round++) {
        CHECK_OK(em_count(r, &n));
        CHECK_EQ_I64(n, 4000);
    }
    em_get_stats(c, &s1);
    CHECK_EQ_I64(s1.tasks_local - s0.tasks_local, 12); /* every task, every round */
    CHECK_EQ_I64(s1.cache_hits - s0.cache_hits, 12);
    em_close(c);
}

/* ------------------------------------------------ a busy executor */

static em_ctx *busy_ctx;
static int blocker_rc;

static int64_t get_tasks_running(const em_stats *st) { return st->tasks_running; }
static int64_t get_tasks_run(const em_stats *st) { return st->tasks_run; }
static int64_t get_jobs_active(const em_stats *st) { return st->jobs_active; }

static void *blocker(void *p) {
    (void)p;
    int64_t n;
    em_set_job_group(busy_ctx, "blocker");
    blocker_rc = em_count(em_range(busy_ctx, 0, 10, 1, 1), &n);
    return NULL;
}

typedef struct count_arg {
    em_rdd *r;
    int rc;
    int64_t n;
    em_batch *b; /* the records collected (n of them) */
} count_arg;

/* Collects a->r into a->b, with their number in a->n. */
static void *collect_it(void *p) {
    count_arg *a = p;
    a->rc = em_collect(a->r, &a->b);
    a->n = a->rc ? 0 : (int64_t)em_batch_count(a->b);
    return NULL;
}

/* Cache r's two partitions (0 on executor 0, 1 on executor 1), then start
 * a job (stage 1, one task, held until killed) that occupies executor 0. */
static em_rdd *cache_then_block(em_ctx *c, pthread_t *t) {
    em_rdd *r = em_persist(em_map(em_range(c, 0, 1000, 1, 2), fn_identity, NULL, 0), EM_MEMORY_ONLY);
    int64_t n = 0;
    if (!r || em_count(r, &n) || n != 1000) return NULL; /* stage 0 */
    if (em_set(c, "ember.test.faults", "delay:stage=1,part=0,attempt=0")) return NULL;
    busy_ctx = c;
    blocker_rc = 1;
    if (pthread_create(t, NULL, blocker, NULL)) return NULL;
    em_stats st;
    if (!wait_stat(c, &st, get_tasks_running, 1, "the blocker's task to run on executor 0")) return NULL;
    em_set(c, "ember.test.faults", "");
    return r;
}

TEST(locality_wait_zero_runs_elsewhere_at_once) {
    em_ctx *c = open_two("0");
    CHECK(c);
    pthread_t t;
    em_rdd *r = cache_then_block(c, &t);
    CHECK(r);
    em_stats s0, s1;
    em_get_stats(c, &s0);
    em_batch *b = NULL;
    CHECK_OK(em_collect(r, &b)); /* runs while executor 0 is busy */
    int exact = expect_range(b, 1000, NULL, "the cached values read elsewhere");
    em_batch_free(b);
    CHECK(exact);
    em_get_stats(c, &s1);
    CHECK_EQ_I64(s1.tasks_local - s0.tasks_local, 1); /* partition 1 on executor 1; 0 went there too */
    CHECK_EQ_I64(s1.tasks_running, 1);                /* the blocker still holds executor 0 */
    CHECK_EQ_I64(em_cancel_job_group(c, "blocker"), 1);
    pthread_join(t, NULL);
    CHECK_EQ_I64(blocker_rc, EM_ECANCELED);
    em_close(c);
}

TEST(locality_task_waits_for_its_executor) {
    em_ctx *c = open_two("1h");
    CHECK(c);
    pthread_t t, tb;
    em_rdd *r = cache_then_block(c, &t);
    CHECK(r);
    em_stats s0, st;
    em_get_stats(c, &s0);
    count_arg a = {r, 1, 0, NULL};
    CHECK(pthread_create(&tb, NULL, collect_it, &a) == 0);
    /* Partition 1 runs on executor 1; partition 0 waits for executor 0. */
    CHECK(wait_stat(c, &st, get_tasks_run, s0.tasks_run + 1, "partition 1 to run on executor 1"));
    /* A job counts as active once its start is posted, which its first
     * task may outrun. */
    CHECK(wait_stat(c, &st, get_jobs_active, 2, "the second job to count as active"));
    CHECK_EQ_I64(st.tasks_run - s0.tasks_run, 1);
    CHECK_EQ_I64(st.jobs_active, 2);
    CHECK_EQ_I64(em_cancel_job_group(c, "blocker"), 1); /* executor 0 is free again */
    pthread_join(t, NULL);
    pthread_join(tb, NULL);
    CHECK_OK(a.rc);
    int exact = expect_range(a.b, 1000, NULL, "the cached values where cached");
    em_batch_free(a.b);
    CHECK(exact);
    CHECK_EQ_I64(a.n, 1000);
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.tasks_local - s0.tasks_local, 2); /* both where cached */
    em_close(c);
}
