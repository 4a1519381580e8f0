/*
 * test_kill.c -- task attempts, kills and cancellation through the public
 * API, driven by the built-in fault injection (ember.test.faults): injected
 * failures are retried, a failed job kills its other running attempts (one
 * delayed until killed), em_cancel_all from another thread stops a job
 * inside a long partition, a corrupted map output is recomputed, and an
 * action called from inside a user function is refused.  Everything is
 * asserted by counts (em_stats), never by time.
 */
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

static em_ctx *open_faults(const char *master, const char *faults) {
    em_conf *conf = em_conf_new();
    em_ctx *c = NULL;
    if (conf && !em_conf_set(conf, "ember.test.faults", faults) && !em_conf_set(conf, "ember.progress", "false"))
        c = em_open(master, conf);
    if (!c) fprintf(stderr, "  em_open: %s\n", em_errmsg());
    em_conf_free(conf);
    return c;
}

TEST(kill_fault_spec_checked) {
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.test.faults", "fail:part=1,attempt=0; delay : part = 2 , ms=5 ;corrupt"));
    CHECK_OK(em_conf_set(conf, "ember.test.faults", ""));
    CHECK_EQ_I64(em_conf_set(conf, "ember.test.faults", "explode:part=1"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.test.faults: \"explode:part=1\" is not a fault spec: unknown fault");
    CHECK_EQ_I64(em_conf_set(conf, "ember.test.faults", "fail:part=x"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "\"part=x\" is not key=number");
    CHECK_EQ_I64(em_conf_set(conf, "ember.test.faults", "fail:ms=3"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "unknown key \"ms\"");
    CHECK_OK(em_conf_set(conf, "ember.test.faults", "dropfetch; dropfetch:n=3"));
    CHECK_EQ_I64(em_conf_set(conf, "ember.test.faults", "dropfetch:part=1"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "dropfetch takes only n=COUNT");
    em_conf_free(conf);
}

TEST(kill_injected_failure_retried) {
    em_ctx *c = open_faults("local[2]", "fail:part=1,attempt=0");
    CHECK(c);
    CHECK(expect_range_job(c, 1000, 4, "the values after a retry"));
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.faults_fired, 1);
    CHECK_EQ_I64(st.tasks_failed, 1);
    CHECK_EQ_I64(st.tasks_run, 5);
    CHECK_EQ_I64(st.tasks_killed, 0);
    em_close(c);
}

TEST(kill_failed_job_kills_running_attempts) {
    /* Partition 0 fails on every attempt; partition 1 sleeps until it is
     * killed.  The job can end only by killing partition 1. */
    em_ctx *c = open_faults("local[2]", "fail:part=0; delay:part=1");
    CHECK(c);
    int64_t n = 0;
    CHECK_EQ_I64(em_count(em_range(c, 0, 100, 1, 2), &n), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "Task 0 in stage 0 failed 4 times; most recent failure: injected failure");
    em_stats st;
    em_get_stats(c, &st);
    /* Four failures and the delay: partition 1 is queued ahead of
     * partition 0's retries, so it is held before the fourth failure. */
    CHECK_EQ_I64(st.faults_fired, 5);
    CHECK_EQ_I64(st.tasks_failed, 4);
    CHECK_EQ_I64(st.tasks_killed, 1);
    CHECK_EQ_I64(st.tasks_run, 5);
    /* The context goes on: the same job without the faults. */
    CHECK_OK(em_set(c, "ember.test.faults", ""));
    CHECK(expect_range_job(c, 100, 2, "the same job without the faults"));
    em_close(c);
}

/* ------------------------------------------------------- em_cancel_all */

static int started; /* set by a task once it runs (atomics) */

/* Identity map that says it started. */
static int note_start(const em_rec *in, em_emitter *out, const void *arg) {
    __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
    return em_emit_rec(out, in);
}

static void *cancel_when_started(void *arg) {
    /* Cancels even when the wait times out, so that the job ends (and the
     * test fails on its counts). */
    wait_for(cond_flag, &started, WAIT_MS, "a task of the job to start");
    em_cancel_all(arg);
    return NULL;
}

static int cancel_during(em_ctx *c, em_rdd *r, int64_t *n) {
    pthread_t th;
    __atomic_store_n(&started, 0, __ATOMIC_RELEASE);
    if (pthread_create(&th, NULL, cancel_when_started, c)) return -100;
    int rc = em_count(r, n);
    pthread_join(th, NULL);
    return rc;
}

/* Partition 0 of kill_queued_attempt_never_starts (records from 0) says it
 * started and goes on until killed; any record of a later partition
 * (from QUEUED_FROM on) creates the file named by arg. */
#define QUEUED_FROM 1000000000000000LL
static int note_start_or_mark(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t v = rec_i64(in);
    if (v == 0) __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
    if (v >= QUEUED_FROM) {
        FILE *f = fopen((const char *)arg, "w");
        if (f) fclose(f);
    }
    return em_emit_rec(out, in);
}

TEST(kill_queued_attempt_never_starts) {
    /* local[1] queues every attempt on its one thread: partition 0 (10^15
     * records) runs until killed, partitions 1 and 2 wait behind it.  The
     * cancel comes once partition 0 runs: it is killed between record
     * batches, and the two queued attempts end without starting.  Proof
     * that they never ran: partition 1's fault (a delay, which fires as
     * its attempt starts) never fired, and no record of theirs reached the
     * user function, which would have created the marker. */
    em_ctx *c = open_faults("local[1]", "delay:part=1");
    CHECK(c);
    char marker[4096];
    snprintf(marker, sizeof marker, "%s/queued-ran", test_tmpdir());
    int64_t n = 0;
    em_rdd *r = em_map(em_range(c, 0, 3 * QUEUED_FROM, 1, 3), note_start_or_mark, marker, strlen(marker) + 1);
    CHECK_EQ_I64(cancel_during(c, r, &n), EM_ECANCELED);
    em_stats st;
    wait_no_tasks(c, &st);
    CHECK_EQ_I64(st.tasks_running, 0);
    CHECK_EQ_I64(st.tasks_killed, 3);
    CHECK_EQ_I64(st.tasks_run, 3);
    CHECK_EQ_I64(st.tasks_failed, 0);
    CHECK_EQ_I64(st.faults_fired, 0);
    CHECK(access(marker, F_OK) != 0);
    em_close(c);
}

TEST(kill_cancel_all_inside_long_partition) {
    /* 10^15 records per partition: only a kill between record batches
     * ends this job. */
    em_ctx *c = open_faults("local[2]", "");
    CHECK(c);
    int64_t n = 0;
    em_rdd *huge = em_map(em_range(c, 0, 2000000000000000LL, 1, 2), note_start, NULL, 0);
    CHECK_EQ_I64(cancel_during(c, huge, &n), EM_ECANCELED);
    CHECK_STR_CONTAINS(em_errmsg(), "job canceled (em_cancel_all)");
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.tasks_killed, 2);
    CHECK_EQ_I64(st.tasks_failed, 0);
    CHECK_EQ_I64(st.faults_fired, 0);
    /* A cancel covers the jobs running when it is made, not later ones. */
    CHECK(expect_range_job(c, 10, 2, "the job after the cancel"));
    em_close(c);
}

typedef struct count_job {
    em_rdd *r;
    int rc;
    int64_t n;
    char msg[256];
} count_job;

static void *count_job_run(void *p) {
    count_job *j = p;
    j->rc = em_count(j->r, &j->n);
    snprintf(j->msg, sizeof j->msg, "%s", em_errmsg());
    return NULL;
}

static int64_t get_tasks_run(const em_stats *st) { return st->tasks_run; }

TEST(kill_cancel_all_two_stage_job) {
    /* The map stage's partition 1 is held (at a gate never opened) until
     * killed; the cancel comes once it is held and map 0 has finished, so
     * exactly one attempt is killed.  On test_master(): in
     * local-cluster, the held attempt and its kill are in an executor
     * process. */
    em_conf *conf = em_conf_new();
    CHECK(conf);
    test_conf_set(conf, "ember.test.faults", "hold:stage=0,part=1,attempt=0,gate=never");
    test_conf_set(conf, "ember.test.faults.dir", gates_dir());
    test_conf_set(conf, "ember.progress", "false");
    test_conf_set(conf, "ember.local.dir", test_scratchdir());
    em_ctx *c = em_open(test_master(), conf);
    em_conf_free(conf);
    CHECK(c);
    int64_t m = 7, n = 0;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 1000, 1, 2), fn_mod_key, &m, sizeof m), fn_sum_i64, NULL, 0,
                                    2);
    count_job j = {sums, 1, 0, ""};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, count_job_run, &j) == 0);
    em_stats st;
    int ready = gate_wait_held("never", 0, 1, 0) &&
                wait_stat(c, &st, get_tasks_run, 1, "map 0 to finish (tasks_run 1)");
    em_cancel_all(c);
    pthread_join(t, NULL);
    CHECK(ready);
    CHECK_EQ_I64(j.rc, EM_ECANCELED);
    CHECK_STR_CONTAINS(j.msg, "job canceled (em_cancel_all)");
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.tasks_killed, 1); /* map 1, held */
    CHECK_EQ_I64(st.tasks_failed, 0);
    CHECK_EQ_I64(st.faults_fired, 1); /* the hold, which the test saw held */
    CHECK_EQ_I64(st.map_tasks_run, 2);
    CHECK_EQ_I64(st.tasks_run, 2);
    /* Without the fault the job runs; map output 0, registered before the
     * cancel, is reused: only map 1 runs again, then the two reduces. */
    CHECK_OK(em_set(c, "ember.test.faults", ""));
    em_batch *b = NULL;
    CHECK_OK(em_collect(sums, &b));
    n = (int64_t)em_batch_count(b);
    int exact = expect_mod_sums(b, 1000, 7, "the sums after the cancel");
    em_batch_free(b);
    CHECK(exact);
    CHECK_EQ_I64(n, 7);
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.map_tasks_run, 3);
    CHECK_EQ_I64(st.tasks_run, 5);
    CHECK_EQ_I64(st.tasks_killed, 1);
    em_close(c);
}

TEST(kill_cancel_without_job_is_harmless) {
    em_ctx *c = open_faults("local[2]", "");
    CHECK(c);
    em_cancel_all(c);
    em_cancel_all(NULL);
    CHECK(expect_range_job(c, 10, 2, "the job after the cancel"));
    em_close(c);
}

/* ------------------------------------------- faults on shuffle outputs */

TEST(kill_corrupt_map_output_recomputed) {
    em_ctx *c = open_faults("local[2]", "corrupt:part=1,attempt=0");
    CHECK(c);
    int64_t m = 10;
    em_batch *b = NULL;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 10000, 1, 3), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                    NULL, 0, 2);
    CHECK_OK(em_collect(sums, &b));
    int exact = expect_mod_sums(b, 10000, 10, "the sums after the corrupt output");
    em_batch_free(b);
    CHECK(exact);
    em_stats st;
    em_get_stats(c, &st);
    /* Map task 1 ran twice (its first output was corrupt); the readers that
     * found it failed with a fetch failure and ran again. */
    CHECK_EQ_I64(st.faults_fired, 1);
    CHECK_EQ_I64(st.map_tasks_run, 3 + 1);
    CHECK(st.tasks_failed >= 1 && st.tasks_failed <= 2);
    CHECK_EQ_I64(st.tasks_run, st.map_tasks_run + 2 + st.tasks_failed);
    em_close(c);
}

/* Every attempt of map task 1 writes a corrupt output: each attempt of the
 * reduce stage fails on it (a fetch failure), the output is recomputed,
 * and after ember.stage.maxConsecutiveAttempts failed stage attempts the
 * job fails, naming the output and the cause.  Map task 1 ran once per
 * stage attempt; the other map tasks once. */
TEST(kill_stage_fails_after_max_consecutive_attempts) {
    em_ctx *c = open_faults("local[2]", "corrupt:part=1");
    CHECK(c);
    for (int max = 4; max >= 2; max -= 2) {
        char v[16];
        snprintf(v, sizeof v, "%d", max);
        CHECK_OK(em_set(c, "ember.stage.maxConsecutiveAttempts", v));
        int64_t m = 10;
        em_batch *b = NULL;
        em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 10000, 1, 3), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                        NULL, 0, 2);
        em_stats s0, s1;
        em_get_stats(c, &s0);
        CHECK_EQ_I64(em_collect(sums, &b), EM_EJOB);
        CHECK(b == NULL);
        em_get_stats(c, &s1);
        char want[128];
        snprintf(want, sizeof want, "failed %d consecutive attempts (ember.stage.maxConsecutiveAttempts)", max);
        CHECK_STR_CONTAINS(em_errmsg(), want);
        CHECK_STR_CONTAINS(em_errmsg(), "map 1 (");
        CHECK_STR_CONTAINS(em_errmsg(), "attempt 0: shuffle");
        CHECK_EQ_I64(s1.map_tasks_run - s0.map_tasks_run, 3 + (max - 1));
        CHECK_EQ_I64(s1.faults_fired - s0.faults_fired, max); /* every attempt of map task 1 */
        CHECK_EQ_I64(s1.tasks_running, 0);
    }
    /* The next job runs. */
    CHECK(expect_range_job(c, 10, 2, "the next job"));
    em_close(c);
}

/* ----------------------------------------- actions inside user functions */

/* Runs em_count on the RDD whose address arg holds; emits the code. */
static int count_inside(const em_rec *in, em_emitter *out, const void *arg) {
    em_rdd *r;
    int64_t n = 0;
    memcpy(&r, arg, sizeof r);
    int rc = em_count(r, &n);
    if (rc == EM_ESTATE && !strstr(em_errmsg(), "inside a task's user function")) rc = -1000;
    return em_emit_i64(out, rc);
}

TEST(kill_action_inside_function_refused) {
    const char *masters[] = {"local[1]", "local[2]", "local[4]"};
    for (int i = 0; i < 3; i++) {
        em_ctx *c = open_faults(masters[i], "");
        CHECK(c);
        em_rdd *inner = em_range(c, 0, 10, 1, 2);
        em_batch *b = NULL;
        CHECK_OK(em_collect(em_map(em_range(c, 0, 8, 1, 4), count_inside, &inner, sizeof inner), &b));
        CHECK_EQ_I64(em_batch_count(b), 8);
        for (size_t k = 0; k < 8; k++) CHECK_EQ_I64(batch_i64_at(b, k), EM_ESTATE);
        em_batch_free(b);
        em_close(c);
    }
}

/* ------------------------------------------------ per-attempt map outputs */

/* Map output files (ext "data" or "index") of shuffle sid in the contexts'
 * scratch directories under test_tmpdir(). */
static size_t output_files(uint32_t sid, const char *ext) {
    char pat[512];
    glob_t g;
    snprintf(pat, sizeof pat, "%s/ember-*/shuffle_%u_*.%s", test_tmpdir(), sid, ext);
    memset(&g, 0, sizeof g);
    if (glob(pat, 0, NULL, &g)) return 0;
    size_t n = g.gl_pathc;
    globfree(&g);
    return n;
}

static em_ctx *open_in_tmp(const char *master, const char *faults) {
    em_conf *conf = em_conf_new();
    em_ctx *c = NULL;
    if (conf && !em_conf_set(conf, "ember.test.faults", faults) &&
        !em_conf_set(conf, "ember.local.dir", test_tmpdir()) && !em_conf_set(conf, "ember.progress", "false") &&
        !em_conf_set(conf, "ember.shuffle.inMemoryOutput.maxBytes", "0")) /* these tests read the files */
        c = em_open(master, conf);
    if (!c) fprintf(stderr, "  em_open: %s\n", em_errmsg());
    em_conf_free(conf);
    return c;
}

TEST(kill_only_registered_outputs_stay) {
    /* Map task 1's first output is corrupt: readers fail on it, it is
     * recomputed under a new name (its attempt's), and the corrupt one is
     * removed.  One data and one index file per map remain. */
    em_ctx *c = open_in_tmp("local[2]", "corrupt:part=1,attempt=0");
    CHECK(c);
    int64_t m = 10, n = 0;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 10000, 1, 3), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                    NULL, 0, 2);
    em_batch *b = NULL;
    CHECK_OK(em_collect(sums, &b));
    n = (int64_t)em_batch_count(b);
    int exact = expect_mod_sums(b, 10000, 10, "the sums after the corrupt output");
    em_batch_free(b);
    CHECK(exact);
    CHECK_EQ_I64(n, 10);
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.faults_fired, 1);
    CHECK_EQ_I64(output_files(0, "data"), 3);
    CHECK_EQ_I64(output_files(0, "index"), 3);
    em_close(c);
    CHECK_EQ_I64(output_files(0, "data"), 0);
}

TEST(kill_killed_map_attempt_leaves_no_output) {
    /* Map task 0 fails on every attempt, map task 1 runs until killed: the
     * job fails and no output of either is left; map 2's is, if it was
 * registered before the job ended. */
    em_ctx *c = open_in_tmp("local[3]", "fail:stage=0,part=0; delay:stage=0,part=1");
    CHECK(c);
    int64_t m = 10, n = 0;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 10000, 1, 3), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                    NULL, 0, 2);
    CHECK_EQ_I64(em_count(sums, &n), EM_EJOB);
    em_stats st;
    em_get_stats(c, &st);
    /* Map 1, and map 2 if it had not finished when map 0 failed its
     * fourth time. */
    CHECK(st.tasks_killed == 1 || st.tasks_killed == 2);
    /* Map 0's four failures and map 1's delay (it is queued ahead of map
     * 0's retries, so it is held before the fourth failure). */
    CHECK_EQ_I64(st.faults_fired, 5);
    CHECK_EQ_I64(output_files(0, "data"), 2 - st.tasks_killed);
    CHECK_EQ_I64(output_files(0, "data"), output_files(0, "index"));
    em_close(c);
}
