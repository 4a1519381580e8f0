/*
 * status_fixture.h -- a synthetic application's listener events, for
 * test_status.c and test_rest.c: what a word count with a failure of
 * every kind would produce.
 *
 *   app "wordcount" (FIX_APP), started at FIX_T0 (2026-11-28T17:46:29.123);
 *   environment: three ember settings (one a secret), one system property;
 *   executors 1 (h1:7001) and 2 (h2:7002), 2 cores each; block manager
 *   "driver" (drv:7000);
 *   job 0 (group "g1", "count words"): stage 0 (4 tasks, reads cached
 *   RDD 1 "words") and stage 1 (2 tasks, result):
 *     task 0 (0.0, exec 1) succeeds, run 100 ms;
 *     task 1 (0.1, exec 2) fails with an exception, run 50 ms;
 *     task 2 (0.2, exec 1) succeeds, run 300 ms, getting its result 5 ms;
 *     task 3 (0.3, exec 2) succeeds, run 200 ms;
 *     task 4 (0.1 attempt 1, exec 1) succeeds, run 400 ms;
 *     task 5 (0.3 attempt 1, exec 1, speculative) killed: "another
 *       attempt succeeded", no metrics;
 *     stage 0 completes with RDD 1 fully cached (4 partitions, 4096 B);
 *     task 6 (1.0, exec 1) fetch-fails on shuffle 0 map 2 (exec 2);
 *     task 7 (1.1, exec 2) succeeds, run 10 ms;
 *     stage 1 attempt 0 fails; executor 2 is removed ("lost worker");
 *     stage 0 attempt 1 reruns index 2 as task 8 (exec 1, 20 ms);
 *     stage 1 attempt 1 runs index 0 as task 9 (exec 1, 30 ms);
 *   job 0 succeeds;
 *   job 1: stage 0 again (skipped, its 4 tasks) and stage 2 (tasks 10 on
 *   exec 1, 40 ms, and 11 on the driver, 50 ms); succeeds;
 *   job 2: stage 3 (1 task), task 12 (exec 1) still running.
 * Every task ended lasts its run time plus 10 ms.
 */
#ifndef TEST_STATUS_FIXTURE_H
#define TEST_STATUS_FIXTURE_H

#include <string.h>

#include "appevent.h"
#include "status.h"

#define FIX_T0 INT64_C(1795887989123)
#define FIX_APP "app-20261128174629-0000"

static app_event fx_ev(ae_kind k, int64_t t) {
    app_event e;
    memset(&e, 0, sizeof e);
    e.kind = k;
    e.time_ms = t;
    return e;
}

static void fx_exec(status_store *st, ae_kind k, const char *id, const char *host, int port, int64_t t) {
    app_event e = fx_ev(k, t);
    snprintf(e.exec.id, sizeof e.exec.id, "%s", id);
    snprintf(e.exec.host, sizeof e.exec.host, "%s", host);
    e.exec.port = port;
    e.exec.cores = k == AE_EXEC_ADDED ? 2 : 0;
    char out[64], err[64];
    snprintf(out, sizeof out, "http://%s:8081/logPage/?executorId=%s&logType=stdout", host, id);
    snprintf(err, sizeof err, "http://%s:8081/logPage/?executorId=%s&logType=stderr", host, id);
    if (k == AE_EXEC_ADDED) {
        e.exec.stdout_url = out;
        e.exec.stderr_url = err;
    }
    e.max_mem = k == AE_BLOCK_MANAGER_ADDED ? 1000 : 0;
    status_on_event(st, &e);
}

/* A block update: on_disk 0 in memory, 1 on disk, 2 removed. */
static inline void fx_block(status_store *st, const char *exec, int rdd, int part, int on_disk, int64_t bytes) {
    app_event e = fx_ev(AE_BLOCK_UPDATED, FIX_T0);
    snprintf(e.exec.id, sizeof e.exec.id, "%s", exec);
    e.rdd_id = rdd;
    e.block_part = part;
    e.block_level.use_disk = on_disk == 1;
    e.block_level.use_memory = on_disk == 0;
    e.block_level.replication = 1;
    if (on_disk == 1) e.block_disk = bytes;
    else if (on_disk == 0) e.block_mem = bytes;
    status_on_event(st, &e);
}

static ae_rdd fx_rdds0[2] = {
    {.id = 1, .name = (char *)"words", .storage = {0, 1, 0, 1, 1}, .nparts = 4},
    {.id = 0, .name = (char *)"lines", .nparts = 4},
};
static int fx_parents1[1] = {0};

static ae_stage fx_stage(int id, int attempt, int ntasks) {
    ae_stage s;
    memset(&s, 0, sizeof s);
    s.id = id;
    s.attempt = attempt;
    s.ntasks = ntasks;
    static char names[4][32] = {"map at wc.c:10", "collect at wc.c:20", "count at wc.c:30", "sum at wc.c:40"};
    s.name = names[id & 3];
    s.details = (char *)"wc.c";
    if (id == 0) {
        s.rdds = fx_rdds0;
        s.nrdds = 2;
    }
    if (id == 1) {
        s.parents = fx_parents1;
        s.nparents = 1;
    }
    return s;
}

static void fx_stage_ev(status_store *st, ae_kind k, ae_stage s, int64_t t) {
    app_event e = fx_ev(k, t);
    e.stages = &s;
    e.nstages = 1;
    status_on_event(st, &e);
}

static void fx_job_start(status_store *st, int job, ae_stage *stages, int n, int64_t t, int props) {
    app_event e = fx_ev(AE_JOB_START, t);
    e.job_id = job;
    e.stages = stages;
    e.nstages = n;
    static ae_prop jp[2] = {{(char *)"ember.jobGroup.id", (char *)"g1"},
                            {(char *)"ember.job.description", (char *)"count words"}};
    if (props) {
        e.props[0] = jp;
        e.nprops[0] = 2;
    }
    status_on_event(st, &e);
}

static void fx_job_end(status_store *st, int job, int failed, int64_t t) {
    app_event e = fx_ev(AE_JOB_END, t);
    e.job_id = job;
    e.failed = (uint8_t)failed;
    status_on_event(st, &e);
}

static ae_task fx_task(int64_t id, int index, int attempt, const char *exec, int64_t launch) {
    ae_task k;
    memset(&k, 0, sizeof k);
    k.task_id = id;
    k.index = index;
    k.attempt = attempt;
    k.partition = index;
    k.launch_ms = launch;
    snprintf(k.exec_id, sizeof k.exec_id, "%s", exec);
    snprintf(k.host, sizeof k.host, "%s", !strcmp(exec, "1") ? "h1" : !strcmp(exec, "2") ? "h2" : "drv");
    snprintf(k.locality, sizeof k.locality, "PROCESS_LOCAL");
    return k;
}

static void fx_task_start(status_store *st, int stage, int sa, ae_task k) {
    app_event e = fx_ev(AE_TASK_START, k.launch_ms);
    e.stage_id = stage;
    e.stage_attempt = sa;
    e.task = k;
    status_on_event(st, &e);
}

/* End task k: reason r; run_ms < 0: no metrics. */
static void fx_task_end(status_store *st, int stage, int sa, ae_task k, ae_reason r, int64_t run_ms) {
    k.finish_ms = k.launch_ms + (run_ms > 0 ? run_ms : 0) + 10;
    k.failed = r != AE_SUCCESS && r != AE_KILLED;
    k.killed = r == AE_KILLED;
    app_event e = fx_ev(AE_TASK_END, k.finish_ms);
    e.stage_id = stage;
    e.stage_attempt = sa;
    e.shuffle_map = stage == 0;
    e.task = k;
    e.end.reason = r;
    if (r == AE_EXCEPTION) {
        e.end.class_name = (char *)"java.lang.RuntimeException";
        e.end.message = (char *)"boom";
    } else if (r == AE_KILLED) {
        e.end.message = (char *)"another attempt succeeded";
    } else if (r == AE_FETCH_FAILED) {
        e.end.shuffle_id = 0;
        e.end.map_id = 2;
        e.end.map_index = 2;
        e.end.reduce_id = 0;
        snprintf(e.end.bm_exec, sizeof e.end.bm_exec, "2");
        snprintf(e.end.bm_host, sizeof e.end.bm_host, "h2");
        e.end.bm_port = 7002;
        e.end.message = (char *)"missing map output";
    }
    if (run_ms >= 0) {
        e.has_metrics = 1;
        e.metrics.run_ms = run_ms;
        e.metrics.cpu_ns = run_ms * 1000000;
        e.metrics.deser_ms = 1;
        e.metrics.result_size = 100;
        if (stage == 0) {
            e.metrics.in_bytes = 1000;
            e.metrics.in_records = 10;
            e.metrics.sw_bytes = 500;
            e.metrics.sw_records = 5;
            e.metrics.sw_time_ns = 7000;
        } else {
            e.metrics.sr_remote_bytes = 300;
            e.metrics.sr_local_bytes = 200;
            e.metrics.sr_remote_blocks = 1;
            e.metrics.sr_local_blocks = 1;
            e.metrics.sr_records = 5;
        }
    }
    status_on_event(st, &e);
}

static void fx_run(status_store *st, int stage, int sa, int64_t id, int index, int attempt, const char *exec,
                   ae_reason r, int64_t run_ms) {
    ae_task k = fx_task(id, index, attempt, exec, FIX_T0 + 1000 * (id + 1));
    if (attempt == 1 && stage == 0 && index == 3) k.speculative = 1;
    fx_task_start(st, stage, sa, k);
    if (id == 2) { /* getting its result for the last 5 ms */
        app_event e = fx_ev(AE_TASK_GETTING_RESULT, k.launch_ms + run_ms + 5);
        k.getting_result_ms = k.launch_ms + run_ms + 5;
        e.task = k;
        status_on_event(st, &e);
    }
    fx_task_end(st, stage, sa, k, r, run_ms);
}

/* The whole application (not ended: job 2 runs). */
static void fx_feed(status_store *st) {
    app_event e = fx_ev(AE_APP_START, FIX_T0);
    e.app_name = (char *)"wordcount";
    e.app_id = (char *)FIX_APP;
    e.user = (char *)"alice";
    status_on_event(st, &e);
    e = fx_ev(AE_ENV_UPDATE, FIX_T0);
    static ae_prop sp[3] = {{(char *)"ember.master", (char *)"local[2]"},
                            {(char *)"ember.authenticate.secret", (char *)"hunter2"},
                            {(char *)"ember.app.name", (char *)"wordcount"}};
    static ae_prop sy[1] = {{(char *)"user.name", (char *)"alice"}};
    e.props[AE_ENV_SPARK] = sp;
    e.nprops[AE_ENV_SPARK] = 3;
    e.props[AE_ENV_SYSTEM] = sy;
    e.nprops[AE_ENV_SYSTEM] = 1;
    status_on_event(st, &e);
    fx_exec(st, AE_BLOCK_MANAGER_ADDED, "driver", "drv", 7000, FIX_T0);
    fx_exec(st, AE_EXEC_ADDED, "1", "h1", 7001, FIX_T0 + 10);
    fx_exec(st, AE_EXEC_ADDED, "2", "h2", 7002, FIX_T0 + 20);

    ae_stage j0[2] = {fx_stage(0, 0, 4), fx_stage(1, 0, 2)};
    fx_job_start(st, 0, j0, 2, FIX_T0 + 100, 1);
    ae_stage s = fx_stage(0, 0, 4);
    s.submit_ms = FIX_T0 + 100;
    fx_stage_ev(st, AE_STAGE_SUBMITTED, s, s.submit_ms);
    fx_run(st, 0, 0, 0, 0, 0, "1", AE_SUCCESS, 100);
    fx_run(st, 0, 0, 1, 1, 0, "2", AE_EXCEPTION, 50);
    fx_run(st, 0, 0, 2, 2, 0, "1", AE_SUCCESS, 300);
    fx_run(st, 0, 0, 3, 3, 0, "2", AE_SUCCESS, 200);
    fx_run(st, 0, 0, 4, 1, 1, "1", AE_SUCCESS, 400);
    fx_run(st, 0, 0, 5, 3, 1, "1", AE_KILLED, -1);
    ae_rdd done_rdds[2] = {fx_rdds0[0], fx_rdds0[1]};
    done_rdds[0].ncached = 4;
    done_rdds[0].mem_size = 4096;
    s.rdds = done_rdds;
    s.complete_ms = FIX_T0 + 7000;
    fx_stage_ev(st, AE_STAGE_COMPLETED, s, s.complete_ms);

    s = fx_stage(1, 0, 2);
    s.submit_ms = FIX_T0 + 7000;
    fx_stage_ev(st, AE_STAGE_SUBMITTED, s, s.submit_ms);
    fx_run(st, 1, 0, 6, 0, 0, "1", AE_FETCH_FAILED, -1);
    fx_run(st, 1, 0, 7, 1, 0, "2", AE_SUCCESS, 10);
    s.complete_ms = FIX_T0 + 9000;
    s.failure = (char *)"FetchFailed: missing map output";
    fx_stage_ev(st, AE_STAGE_COMPLETED, s, s.complete_ms);
    e = fx_ev(AE_EXEC_REMOVED, FIX_T0 + 9000);
    snprintf(e.exec.id, sizeof e.exec.id, "2");
    e.reason = (char *)"lost worker";
    status_on_event(st, &e);

    s = fx_stage(0, 1, 4);
    s.submit_ms = FIX_T0 + 9000;
    fx_stage_ev(st, AE_STAGE_SUBMITTED, s, s.submit_ms);
    fx_run(st, 0, 1, 8, 2, 0, "1", AE_SUCCESS, 20);
    s.complete_ms = FIX_T0 + 10000;
    fx_stage_ev(st, AE_STAGE_COMPLETED, s, s.complete_ms);
    s = fx_stage(1, 1, 2);
    s.submit_ms = FIX_T0 + 10000;
    fx_stage_ev(st, AE_STAGE_SUBMITTED, s, s.submit_ms);
    fx_run(st, 1, 1, 9, 0, 0, "1", AE_SUCCESS, 30);
    s.complete_ms = FIX_T0 + 11000;
    fx_stage_ev(st, AE_STAGE_COMPLETED, s, s.complete_ms);
    fx_job_end(st, 0, 0, FIX_T0 + 11000);

    ae_stage j1[2] = {fx_stage(0, 1, 4), fx_stage(2, 0, 2)};
    j1[0].submit_ms = FIX_T0 + 9000; /* no completion time: the store knows */
    fx_job_start(st, 1, j1, 2, FIX_T0 + 11000, 0);
    s = fx_stage(2, 0, 2);
    s.submit_ms = FIX_T0 + 11000;
    fx_stage_ev(st, AE_STAGE_SUBMITTED, s, s.submit_ms);
    fx_run(st, 2, 0, 10, 0, 0, "1", AE_SUCCESS, 40);
    fx_run(st, 2, 0, 11, 1, 0, "driver", AE_SUCCESS, 50);
    s.complete_ms = FIX_T0 + 13000;
    fx_stage_ev(st, AE_STAGE_COMPLETED, s, s.complete_ms);
    fx_job_end(st, 1, 0, FIX_T0 + 13000);

    ae_stage j2[1] = {fx_stage(3, 0, 1)};
    fx_job_start(st, 2, j2, 1, FIX_T0 + 13000, 0);
    s = fx_stage(3, 0, 1);
    s.submit_ms = FIX_T0 + 13000;
    fx_stage_ev(st, AE_STAGE_SUBMITTED, s, s.submit_ms);
    fx_task_start(st, 3, 0, fx_task(12, 0, 0, "1", FIX_T0 + 13000));
}

#endif
