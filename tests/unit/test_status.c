/*
 * test_status.c -- the status store (engine/status.c): the counts Spark's
 * listener keeps, from status_fixture.h's application (failed, speculative,
 * killed and fetch-failed tasks, a stage retry, a skipped stage, a cached
 * RDD, a removed executor); the cached partitions block updates report;
 * retention of jobs, stages, tasks and dead
 * executors, with memory flat over 2,000 jobs; a 100,000-task stage.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "status_fixture.h"

TEST(status_counts_as_spark) {
    status_store *st = status_new(NULL);
    CHECK(st);
    fx_feed(st);
    status_rdlock(st);
    const status_app *a = status_app_info(st);
    CHECK(!strcmp(a->id, FIX_APP) && !strcmp(a->name, "wordcount") && !strcmp(a->user, "alice"));
    CHECK_EQ_I64(a->start_ms, FIX_T0);
    CHECK_EQ_I64(a->end_ms, 0);

    st_job *j = status_job(st, 0);
    CHECK(j && j->status == SJ_SUCCEEDED);
    CHECK(!strcmp(j->name, "collect at wc.c:20") && !strcmp(j->group, "g1") && !strcmp(j->description, "count words"));
    CHECK_EQ_I64(j->ntasks, 6);
    CHECK_EQ_I64(j->active_tasks, 0);
    CHECK_EQ_I64(j->completed_tasks, 7); /* 0 2 3 4 7 8 9 */
    CHECK_EQ_I64(j->failed_tasks, 2);    /* 1 6 */
    CHECK_EQ_I64(j->killed_tasks, 1);    /* 5 */
    CHECK_EQ_I64(j->completed_indices, 6);
    CHECK_EQ_I64(j->failed_stages, 1);
    CHECK_EQ_I64(j->active_stages, 0);
    CHECK(j->stage_state[0] == 1 && j->stage_state[1] == 1);
    CHECK(j->killed && !strcmp(j->killed->reason, "another attempt succeeded") && j->killed->count == 1);

    j = status_job(st, 1);
    CHECK(j && j->status == SJ_SUCCEEDED);
    CHECK_EQ_I64(j->ntasks, 2);
    CHECK_EQ_I64(j->completed_tasks, 2);
    CHECK_EQ_I64(j->skipped_tasks, 4);
    CHECK(j->stage_state[0] == 2 && j->stage_state[1] == 1);

    j = status_job(st, 2);
    CHECK(j && j->status == SJ_RUNNING);
    CHECK_EQ_I64(j->active_tasks, 1);
    CHECK_EQ_I64(j->active_stages, 1);

    st_stage *s = status_stage(st, 0, 0);
    CHECK(s && s->status == SS_COMPLETE);
    CHECK_EQ_I64(s->ntasks, 4);
    CHECK_EQ_I64(s->completed_tasks, 4);
    CHECK_EQ_I64(s->failed_tasks, 1);
    CHECK_EQ_I64(s->killed_tasks, 1);
    CHECK_EQ_I64(s->completed_indices, 4);
    CHECK_EQ_I64(s->active_tasks, 0);
    CHECK_EQ_I64(s->m.run_ms, 100 + 50 + 300 + 200 + 400);
    CHECK_EQ_I64(s->m.sw_bytes, 5 * 500);
    CHECK_EQ_I64(s->ntasks_kept, 6);
    CHECK_EQ_I64(s->first_launch_ms, FIX_T0 + 1000);
    CHECK(s->nrdds == 2 && s->rdd_ids[0] == 1 && s->rdd_ids[1] == 0);
    int ex = 0;
    for (st_execsum *e = s->execsums; e; e = e->next, ex++) {
        if (!strcmp(e->exec_id, "1")) CHECK(e->succeeded == 3 && e->killed == 1 && e->failed == 0);
        else CHECK(!strcmp(e->exec_id, "2") && e->succeeded == 1 && e->failed == 1);
    }
    CHECK_EQ_I64(ex, 2);
    s = status_stage(st, 1, 0);
    CHECK(s && s->status == SS_FAILED && !strcmp(s->failure, "FetchFailed: missing map output"));
    CHECK(status_stage(st, 1, 1)->status == SS_COMPLETE && status_stage(st, 0, 1)->status == SS_COMPLETE);
    CHECK(status_stage(st, 3, 0)->status == SS_ACTIVE);
    CHECK_EQ_I64(status_nstages(st), 6);
    CHECK(status_stage(st, 1, 0)->nparents == 1 && status_stage(st, 1, 0)->parents[0] == 0);

    st_task *t = status_task(st, 5);
    CHECK(t && t->status == ST_KILLED && t->speculative && !t->has_metrics);
    CHECK(!strcmp(t->error, "another attempt succeeded"));
    t = status_task(st, 6);
    CHECK(t && t->status == ST_FAILED);
    CHECK_STR_CONTAINS(t->error, "FetchFailed(BlockManagerId(2, h2, 7002, None), shuffleId=0, mapIndex=2, mapId=2");
    t = status_task(st, 1);
    CHECK(t && t->status == ST_FAILED && !strcmp(t->error, "java.lang.RuntimeException: boom"));
    t = status_task(st, 2);
    CHECK(t && t->status == ST_SUCCESS && t->getting_result_ms == t->finish_ms - 5);
    CHECK(status_task(st, 12)->status == ST_RUNNING);

    st_exec *x = status_exec(st, "1");
    CHECK(x && x->active && x->cores == 2 && x->port == 7001 && !strcmp(x->host, "h1"));
    CHECK_EQ_I64(x->total_tasks, 9);
    CHECK_EQ_I64(x->completed_tasks, 6);
    CHECK_EQ_I64(x->failed_tasks, 1);
    CHECK_EQ_I64(x->active_tasks, 1);
    CHECK_EQ_I64(x->input_bytes, 4 * 1000); /* 0 2 4 8 */
    x = status_exec(st, "2");
    CHECK(x && !x->active && !strcmp(x->remove_reason, "lost worker") && x->remove_ms == FIX_T0 + 9000);
    CHECK(x->total_tasks == 3 && x->completed_tasks == 2 && x->failed_tasks == 1);
    CHECK_EQ_I64(x->shuffle_read, 500);
    x = status_exec(st, "driver");
    CHECK(x && x->max_mem == 1000 && x->completed_tasks == 1);

    st_rdd *d = status_rdd(st, 1);
    CHECK(d && d->ncached == 4 && d->mem == 4096 && d->nparts == 4 && !strcmp(d->name, "words"));
    CHECK(!status_rdd(st, 0));
    int n;
    const ae_prop *p = status_env(st, AE_ENV_SPARK, &n);
    CHECK(n == 3 && p && !strcmp(p[1].value, "hunter2"));
    status_unlock(st);

    app_event e = fx_ev(AE_UNPERSIST_RDD, FIX_T0 + 20000);
    e.rdd_id = 1;
    status_listener(st, &e); /* as a listener bus calls it */
    e = fx_ev(AE_APP_END, FIX_T0 + 30000);
    status_on_event(st, &e);
    status_rdlock(st);
    CHECK(!status_rdd(st, 1) && !status_rdds(st));
    CHECK_EQ_I64(status_app_info(st)->end_ms, FIX_T0 + 30000);
    status_unlock(st);
    status_free(st);
}

/* One job of one stage of one task, id i. */
static void one_job(status_store *st, int i) {
    ae_stage s = fx_stage(i, 0, 1);
    s.name = (char *)"job";
    s.rdds = NULL;
    s.nrdds = 0;
    s.parents = NULL;
    s.nparents = 0;
    fx_job_start(st, i, &s, 1, FIX_T0 + i, 0);
    s.submit_ms = FIX_T0 + i;
    fx_stage_ev(st, AE_STAGE_SUBMITTED, s, s.submit_ms);
    ae_task k = fx_task(i, 0, 0, "1", FIX_T0 + i);
    fx_task_start(st, i, 0, k);
    fx_task_end(st, i, 0, k, AE_SUCCESS, 1);
    s.complete_ms = FIX_T0 + i + 1;
    fx_stage_ev(st, AE_STAGE_COMPLETED, s, s.complete_ms);
    fx_job_end(st, i, 0, FIX_T0 + i + 1);
}

/* Block updates give an RDD's cached partitions, memory and disk, and each
 * executor's share; over the stage's RDD Info counts, once there are any.
 * A partition cached on two executors (a speculative copy) counts once;
 * a lost executor's blocks go; a removed block (no storage level) goes;
 * a broadcast's block is not an RDD's. */
TEST(status_block_updates_give_storage) {
    status_store *st = status_new(NULL);
    CHECK(st);
    fx_feed(st); /* RDD 1: 4 of 4 cached, 4096 bytes by its RDD Info; executor 2 removed */
    fx_exec(st, AE_EXEC_ADDED, "3", "h3", 7003, FIX_T0 + 9500);
    fx_block(st, "1", 1, 0, 0, 100);
    fx_block(st, "1", 1, 1, 0, 200);
    fx_block(st, "3", 1, 1, 0, 200); /* the same partition, a second copy */
    fx_block(st, "3", 1, 2, 1, 1024);
    fx_block(st, "1", -1, 0, 0, 5000); /* broadcast_0 */
    status_rdlock(st);
    st_rdd *d = status_rdd(st, 1);
    CHECK(d && d->has_blocks);
    CHECK_EQ_I64(d->ncached, 3);
    CHECK_EQ_I64(d->mem, 500);
    CHECK_EQ_I64(d->disk, 1024);
    CHECK(!status_rdd(st, -1));
    st_exec *x1 = status_exec(st, "1"), *x3 = status_exec(st, "3");
    CHECK(x1 && x3);
    CHECK(x1->rdd_blocks == 2 && x1->mem_used == 300 && x1->disk_used == 0);
    CHECK(x3->rdd_blocks == 2 && x3->mem_used == 200 && x3->disk_used == 1024);
    status_unlock(st);
    /* A block cached again with another size replaces its record. */
    fx_block(st, "1", 1, 0, 0, 150);
    /* A stage's RDD Info no longer sets the counts. */
    ae_stage s = fx_stage(7, 0, 4);
    ae_rdd info = fx_rdds0[0];
    info.ncached = 4;
    info.mem_size = 4096;
    s.rdds = &info;
    s.nrdds = 1;
    s.submit_ms = FIX_T0 + 9600;
    fx_stage_ev(st, AE_STAGE_SUBMITTED, s, s.submit_ms);
    status_rdlock(st);
    CHECK_EQ_I64(d->ncached, 3);
    CHECK_EQ_I64(d->mem, 550);
    status_unlock(st);
    /* Executor 3 is lost: partition 1 stays (executor 1 holds it), 2 goes. */
    app_event e = fx_ev(AE_EXEC_REMOVED, FIX_T0 + 9700);
    snprintf(e.exec.id, sizeof e.exec.id, "3");
    e.reason = (char *)"lost";
    status_on_event(st, &e);
    status_rdlock(st);
    CHECK_EQ_I64(d->ncached, 2);
    CHECK_EQ_I64(d->mem, 350);
    CHECK_EQ_I64(d->disk, 0);
    CHECK(x3->rdd_blocks == 0 && x3->mem_used == 0 && x3->disk_used == 0);
    status_unlock(st);
    /* A block removed (StorageLevel NONE, as Spark reports an eviction). */
    fx_block(st, "1", 1, 0, 2, 0);
    status_rdlock(st);
    CHECK_EQ_I64(d->ncached, 1);
    CHECK_EQ_I64(d->mem, 200);
    CHECK(x1->rdd_blocks == 1 && x1->mem_used == 200);
    status_unlock(st);
    /* Unpersisted: the RDD goes, and the executors hold nothing. */
    e = fx_ev(AE_UNPERSIST_RDD, FIX_T0 + 9800);
    e.rdd_id = 1;
    status_on_event(st, &e);
    status_rdlock(st);
    CHECK(!status_rdd(st, 1));
    CHECK(x1->rdd_blocks == 0 && x1->mem_used == 0);
    status_unlock(st);
    status_free(st);
}

TEST(status_retains_jobs_and_stays_flat) {
    status_limits lim = {100, 100, 0, 2};
    status_store *st = status_new(&lim);
    CHECK(st);
    fx_exec(st, AE_EXEC_ADDED, "1", "h1", 7001, FIX_T0);
    for (int i = 0; i < 1000; i++) one_job(st, i);
    struct mallinfo2 m1 = mallinfo2();
    for (int i = 1000; i < 2000; i++) one_job(st, i);
    struct mallinfo2 m2 = mallinfo2();
    status_rdlock(st);
    CHECK_EQ_I64(status_njobs(st), 100);
    CHECK_EQ_I64(status_nstages(st), 100);
    int n = 0, lo = 1 << 30;
    for (st_job *j = status_jobs(st); j; j = j->next, n++)
        if (j->id < lo) lo = j->id;
    CHECK_EQ_I64(n, 100);
    CHECK_EQ_I64(lo, 1900);
    CHECK(!status_job(st, 1899) && status_job(st, 1999));
    CHECK(!status_stage(st, 1899, 0) && status_stage(st, 1900, 0));
    CHECK(!status_task(st, 1899) && status_task(st, 1900));
    CHECK_EQ_I64(status_exec(st, "1")->completed_tasks, 2000);
    status_unlock(st);
    /* The second thousand jobs left the heap where the first left it. */
    fprintf(stderr, "  heap in use: %zu after 1000 jobs, %zu after 2000\n", m1.uordblks, m2.uordblks);
    CHECK(m2.uordblks <= m1.uordblks + 16384);
    status_free(st);
}

TEST(status_retains_tasks_and_dead_executors) {
    status_limits lim = {0, 0, 50, 2};
    status_store *st = status_new(&lim);
    CHECK(st);
    ae_stage s = fx_stage(7, 0, 200);
    s.rdds = NULL;
    s.nrdds = 0;
    fx_job_start(st, 0, &s, 1, FIX_T0, 0);
    fx_stage_ev(st, AE_STAGE_SUBMITTED, s, FIX_T0);
    ae_task held = fx_task(0, 0, 0, "1", FIX_T0);
    fx_task_start(st, 7, 0, held); /* runs throughout: never dropped */
    for (int i = 1; i < 200; i++) {
        ae_task k = fx_task(i, i, 0, "1", FIX_T0 + i);
        fx_task_start(st, 7, 0, k);
        fx_task_end(st, 7, 0, k, AE_SUCCESS, i);
    }
    status_rdlock(st);
    st_stage *g = status_stage(st, 7, 0);
    CHECK_EQ_I64(g->ntasks_kept, 50);
    CHECK_EQ_I64(g->completed_tasks, 199);
    CHECK_EQ_I64(g->m.run_ms, 199 * 200 / 2);
    CHECK(status_task(st, 0) && status_task(st, 0)->status == ST_RUNNING);
    CHECK(!status_task(st, 150) && status_task(st, 151) && status_task(st, 199));
    status_unlock(st);
    for (int i = 0; i < 5; i++) {
        char id[16];
        snprintf(id, sizeof id, "%d", 10 + i);
        fx_exec(st, AE_EXEC_ADDED, id, "h", 1, FIX_T0 + i);
        app_event e = fx_ev(AE_EXEC_REMOVED, FIX_T0 + 100 + i);
        snprintf(e.exec.id, sizeof e.exec.id, "%s", id);
        status_on_event(st, &e);
    }
    status_rdlock(st);
    CHECK(!status_exec(st, "12") && status_exec(st, "13") && status_exec(st, "14"));
    CHECK(status_exec(st, "1") && status_exec(st, "1")->active);
    status_unlock(st);
    status_free(st);
}

TEST(status_hundred_thousand_tasks) {
    status_store *st = status_new(NULL);
    CHECK(st);
    enum { N = 100000 };
    ae_stage s = fx_stage(0, 0, N);
    s.rdds = NULL;
    s.nrdds = 0;
    fx_job_start(st, 0, &s, 1, FIX_T0, 0);
    fx_stage_ev(st, AE_STAGE_SUBMITTED, s, FIX_T0);
    for (int i = 0; i < N; i++) {
        ae_task k = fx_task(i, i, 0, i % 2 ? "1" : "2", FIX_T0 + i);
        fx_task_start(st, 0, 0, k);
        fx_task_end(st, 0, 0, k, AE_SUCCESS, i % 1000);
    }
    status_rdlock(st);
    st_stage *g = status_stage(st, 0, 0);
    CHECK_EQ_I64(g->ntasks_kept, N);
    CHECK_EQ_I64(g->completed_indices, N);
    CHECK_EQ_I64(status_job(st, 0)->completed_indices, N);
    CHECK_EQ_I64(status_exec(st, "1")->completed_tasks, N / 2);
    status_unlock(st);
    status_free(st);
}
