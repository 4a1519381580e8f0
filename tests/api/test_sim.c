/*
 * test_sim.c -- the scheduler at scale, on the simulated cluster
 * (tests/sim/sim.h): a thousand executors, a shuffle, executors lost
 * while a job runs, speculation on slow executors.  Every figure checked
 * is a count (tasks, attempts, executors), and every answer is exact: the
 * simulated executors answer a count from the task's own description.
 */
#include <stdint.h>
#include <string.h>

#include "../sim/sim.h"
#include "../test.h"
#include "ember.h"
#include "helpers.h"

static em_ctx *open_sim(const char *master, const sim_opts *o, const char *const (*kv)[2], size_t n) {
    sim_install(o);
    em_conf *conf = em_conf_new();
    if (!conf) return NULL;
    test_conf_set(conf, "ember.progress", "false");
    test_conf_set(conf, "ember.ui.enabled", "false");
    for (size_t i = 0; i < n; i++) test_conf_set(conf, kv[i][0], kv[i][1]);
    em_ctx *c = em_open(master, conf);
    em_conf_free(conf);
    return c;
}

/* The simulation's counts agree with each other once every attempt ended. */
static int sim_consistent(const sim_stats *s) {
    return s->launched == s->ended && s->decode_failed == 0 &&
           s->started + s->killed_queued + s->lost_attempts >= s->ended;
}

/* 20,000 tasks on 1,000 executors of 4 cores: each description decodes,
 * the count is exact, each task runs once, and no executor ever holds
 * more than its queue (ember.executor.taskQueue 1 per core, and no
 * deeper: ember.executor.taskQueue.max 1). */
TEST(sim_thousand_executors_count) {
    const char *const kv[][2] = {{"ember.executor.taskQueue.max", "1"}};
    em_ctx *c = open_sim("sim[1000,4]", NULL, kv, 1);
    CHECK(c);
    CHECK_EQ_I64(em_cores(c), 4000);
    int64_t n = 0;
    em_stats s0, st;
    em_get_stats(c, &s0);
    CHECK_OK(em_count(em_range(c, 0, 100000, 1, 20000), &n));
    CHECK_EQ_I64(n, 100000);
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.tasks_run - s0.tasks_run, 20000);
    CHECK_EQ_I64(st.tasks_failed - s0.tasks_failed, 0);
    em_close(c);
    sim_stats ss;
    sim_get_stats(&ss);
    CHECK_EQ_I64(ss.joins, 1000);
    CHECK_EQ_I64(ss.launched, 20000);
    CHECK_EQ_I64(ss.started, 20000);
    CHECK(sim_consistent(&ss));
    CHECK(ss.max_queued <= 4);
}

/* Adaptive queues: tasks that end as they start are short beside the
 * round trip, so after a first job the queues deepen past the floor of 1
 * per core, never past ember.executor.taskQueue.max (16 here); the answer
 * stays exact. */
static int adaptive_run(int qmax, int64_t *max_queued) {
    char v[16];
    snprintf(v, sizeof v, "%d", qmax);
    const char *const kv[][2] = {{"ember.executor.taskQueue.max", v}};
    em_ctx *c = open_sim("sim[10,1]", NULL, kv, 1);
    if (!c) return 0;
    int64_t n1 = 0, n2 = 0;
    int ok = !em_count(em_range(c, 0, 1000, 1, 1000), &n1) && n1 == 1000 &&
             !em_count(em_range(c, 0, 20000, 1, 20000), &n2) && n2 == 20000;
    em_close(c);
    sim_stats ss;
    sim_get_stats(&ss);
    *max_queued = ss.max_queued;
    return ok && sim_consistent(&ss);
}

TEST(sim_adaptive_queues_deepen_within_max) {
    int64_t deep = 0, flat = 0;
    CHECK(adaptive_run(16, &deep));
    CHECK(deep > 1);
    CHECK(deep <= 16);
    CHECK(adaptive_run(1, &flat));
    CHECK(flat <= 1);
}

/* A two-stage job: 400 map tasks, 300 reduce partitions.  Each reduce
 * task's description names every map's segment (the simulated sizes are
 * never zero), so the count is 400 x 300 exactly. */
TEST(sim_shuffle_two_stages) {
    em_ctx *c = open_sim("sim[100,2]", NULL, NULL, 0);
    CHECK(c);
    int64_t k = 1000, n = 0;
    em_rdd *pairs = em_map(em_range(c, 0, 40000, 1, 400), fn_mod_key, &k, sizeof k);
    em_stats s0, st;
    em_get_stats(c, &s0);
    CHECK_OK(em_count(em_reduce_by_key(pairs, fn_sum_i64, NULL, 0, 300), &n));
    CHECK_EQ_I64(n, 400 * 300);
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.map_tasks_run - s0.map_tasks_run, 400);
    CHECK_EQ_I64(st.tasks_run - s0.tasks_run, 700);
    em_close(c);
    sim_stats ss;
    sim_get_stats(&ss);
    CHECK(sim_consistent(&ss));
}

/* A map task's output codec: with ember.io.compression.codec auto, its
 * blocks are stored as they are while every executor runs on one host
 * (no reader fetches them across a network), coded when the executors
 * span hosts; a codec named in the setting is used on one host too. */
TEST(sim_map_output_codec_by_hosts) {
    static const struct { int per_host; const char *codec; int plain; } cases[] = {
        {4, "auto", 1}, {2, "auto", 0}, {4, "lz4", 0}, {4, "none", 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sim_opts o;
        memset(&o, 0, sizeof o);
        o.per_host = cases[i].per_host;
        const char *const kv[][2] = {{"ember.io.compression.codec", cases[i].codec}};
        em_ctx *c = open_sim("sim[4,2]", &o, kv, 1);
        CHECK(c);
        int64_t k = 100, n = 0;
        em_rdd *pairs = em_map(em_range(c, 0, 4000, 1, 16), fn_mod_key, &k, sizeof k);
        CHECK_OK(em_count(em_reduce_by_key(pairs, fn_sum_i64, NULL, 0, 8), &n));
        CHECK_EQ_I64(n, 16 * 8);
        em_close(c);
        sim_stats ss;
        sim_get_stats(&ss);
        CHECK(sim_consistent(&ss));
        CHECK_EQ_I64(ss.maps_plain, cases[i].plain ? 16 : 0);
        CHECK_EQ_I64(ss.maps_coded, cases[i].plain ? 0 : 16);
    }
}

/* A map status that an executor sends malformed (cut short) fails that
 * attempt, naming the cause, and its retry's status is taken: the answer
 * is exact and exactly those attempts failed. */
TEST(sim_malformed_map_status_retried) {
    sim_opts o = {.bad_status_maps = 3};
    em_ctx *c = open_sim("sim[10,2]", &o, NULL, 0);
    CHECK(c);
    int64_t k = 100, n = 0;
    em_rdd *pairs = em_map(em_range(c, 0, 4000, 1, 40), fn_mod_key, &k, sizeof k);
    em_stats s0, st;
    em_get_stats(c, &s0);
    CHECK_OK(em_count(em_reduce_by_key(pairs, fn_sum_i64, NULL, 0, 20), &n));
    CHECK_EQ_I64(n, 40 * 20);
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.tasks_failed - s0.tasks_failed, 3);
    CHECK_EQ_I64(st.tasks_run - s0.tasks_run, 40 + 3 + 20);
    em_close(c);
    sim_stats ss;
    sim_get_stats(&ss);
    CHECK(sim_consistent(&ss));
}

/* Executors lost every 20 ms while a job of 2 ms tasks runs at least 40
 * ms (4,000 map tasks on 200 cores): the map outputs they held are run
 * again, the job's answer is exact, and the only attempts that failed
 * are those that were running on an executor as it was lost (which do not
 * count against ember.task.maxFailures). */
TEST(sim_executors_lost_during_job) {
    sim_opts o = {.task_us = 2000, .loss_every_ms = 20, .replace_ms = 5};
    em_ctx *c = open_sim("sim[100,2]", &o, NULL, 0);
    CHECK(c);
    int64_t k = 1000, n = 0;
    em_rdd *pairs = em_map(em_range(c, 0, 40000, 1, 4000), fn_mod_key, &k, sizeof k);
    em_stats s0, st;
    em_get_stats(c, &s0);
    CHECK_OK(em_count(em_reduce_by_key(pairs, fn_sum_i64, NULL, 0, 50), &n));
    CHECK_EQ_I64(n, 4000 * 50);
    em_get_stats(c, &st);
    em_close(c);
    sim_stats ss;
    sim_get_stats(&ss);
    CHECK(st.tasks_failed - s0.tasks_failed <= ss.lost_attempts);
    CHECK(ss.losses >= 1);
    CHECK(ss.lost_attempts >= 1);
    CHECK(ss.joins >= 100 + 1);
    CHECK(sim_consistent(&ss));
    /* Every map task ran at least once, and the lost ones again. */
    CHECK(st.map_tasks_run - s0.map_tasks_run >= 4000);
}

/* Every tenth executor runs its tasks 40 times slower (80 ms against 2
 * ms): with speculation on, copies of their tasks run elsewhere, the
 * losers are killed, and the answer is exact. */
TEST(sim_speculation_on_slow_executors) {
    sim_opts o = {.task_us = 2000, .slow_every = 10, .slow_factor = 40};
    const char *const kv[][2] = {
        {"ember.speculation", "true"},
        {"ember.speculation.interval", "5ms"},
        {"ember.speculation.minTaskRuntime", "10ms"},
        {"ember.speculation.quantile", "0.5"},
    };
    em_ctx *c = open_sim("sim[50,2]", &o, kv, sizeof kv / sizeof kv[0]);
    CHECK(c);
    int64_t n = 0;
    em_stats s0, st;
    em_get_stats(c, &s0);
    CHECK_OK(em_count(em_range(c, 0, 200000, 1, 2000), &n));
    CHECK_EQ_I64(n, 200000);
    em_get_stats(c, &st);
    CHECK(st.tasks_speculative - s0.tasks_speculative >= 1);
    CHECK_EQ_I64(st.tasks_failed - s0.tasks_failed, 0);
    em_close(c);
    sim_stats ss;
    sim_get_stats(&ss);
    CHECK(ss.killed_queued + ss.killed_running >= 1);
    CHECK(sim_consistent(&ss));
}

/* A sink the simulation does not answer fails the job with a message
 * that names it, after the task's retries; the context stays usable. */
TEST(sim_unsimulated_sink_fails_clearly) {
    em_ctx *c = open_sim("sim[4,1]", NULL, NULL, 0);
    CHECK(c);
    em_batch *b = NULL;
    CHECK(em_collect(em_range(c, 0, 10, 1, 2), &b) != 0);
    CHECK_STR_CONTAINS(em_errmsg(), "is not simulated");
    int64_t n = 0;
    CHECK_OK(em_count(em_range(c, 0, 10, 1, 2), &n));
    CHECK_EQ_I64(n, 10);
    em_close(c);
}

/* A malformed sim URL is refused by name; with the hook unset (as in
 * every user's program) the URL is unknown. */
TEST(sim_bad_url_refused) {
    sim_install(NULL);
    CHECK(!em_open("sim[0,4]", NULL));
    CHECK_STR_CONTAINS(em_errmsg(), "sim[E,C]");
    sim_uninstall();
    CHECK(!em_open("sim[4,1]", NULL));
    CHECK_STR_CONTAINS(em_errmsg(), "unsupported master URL");
}
