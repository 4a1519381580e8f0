/*
 * test_jobs.c -- jobs of several driver threads on one scheduler: they run
 * at the same time (a stuck job does not hold up another), share a map
 * stage one of them is computing, are canceled by job group, and em_close
 * from another thread cancels a running two-stage job and waits for its
 * action to return.  An action returns once every partition has a winner,
 * while a losing attempt stuck in a user function finishes in the
 * background.  A canceled job's queued tasks go to the job that takes its
 * stage over; a map loser ending after its shuffle was dropped, and an
 * action whose own code fails on the last result, are handled without
 * touching freed memory (ASan checks).  Every wait is for a count or a
 * flag, never for a time.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ctx.h"
#include "ember.h"
#include "err.h"
#include "helpers.h"
#include "taskresult.h"

static em_ctx *open_with(const char *master, const char *faults) {
    em_conf *conf = em_conf_new();
    em_ctx *c = NULL;
    if (conf && !em_conf_set(conf, "ember.progress", "false") &&
        (!faults || !em_conf_set(conf, "ember.test.faults", faults)))
        c = em_open(master, conf);
    em_conf_free(conf);
    return c;
}

/* local[4] with speculation checked every 5 ms for attempts running over
 * 50 ms, once all tasks of the stage but one are done (quantile 0.99 of
 * fewer than 100 tasks): the one held back is then the only task running,
 * so it is the only one copied however slow the machine.  Faults as given
 * (NULL: none), their gates in gates_dir(). */
static em_ctx *open_speculating(const char *faults) {
    em_conf *conf = em_conf_new();
    em_ctx *c = NULL;
    if (conf && !em_conf_set(conf, "ember.speculation", "true") &&
        !em_conf_set(conf, "ember.speculation.interval", "5ms") &&
        !em_conf_set(conf, "ember.speculation.quantile", "0.99") &&
        !em_conf_set(conf, "ember.speculation.minTaskRuntime", "50ms") &&
        !em_conf_set(conf, "ember.progress", "false") &&
        (!faults || (!em_conf_set(conf, "ember.test.faults", faults) &&
                     !em_conf_set(conf, "ember.test.faults.dir", gates_dir()))))
        c = em_open("local[4]", conf);
    em_conf_free(conf);
    return c;
}

static int64_t get_tasks_run(const em_stats *st) { return st->tasks_run; }
static int64_t get_jobs(const em_stats *st) { return st->jobs; }

/* Whether the int at p has reached 2. */
static int reached_two(void *p) { return __atomic_load_n((int *)p, __ATOMIC_ACQUIRE) >= 2; }

typedef struct job_arg {
    em_rdd *r;
    const char *group;
    int rc;
    int64_t n;
    em_batch *b;
    char msg[256];
} job_arg;

static em_ctx *group_ctx;

static void *count_in_group(void *p) {
    job_arg *a = p;
    if (em_set_job_group(group_ctx, a->group)) {
        a->rc = -100;
        return NULL;
    }
    a->rc = em_count(a->r, &a->n);
    snprintf(a->msg, sizeof a->msg, "%s", em_errmsg());
    return NULL;
}

static void *collect_it(void *p) {
    job_arg *a = p;
    a->rc = em_collect(a->r, &a->b);
    snprintf(a->msg, sizeof a->msg, "%s", em_errmsg());
    return NULL;
}

TEST(jobs_stuck_job_does_not_hold_up_another) {
    /* Job A's partition 0 (stage 0) waits until killed; job B, started
     * afterwards on another thread, runs to its end meanwhile.  Then A's
     * group is canceled: only A ends, with EM_ECANCELED naming the group. */
    em_ctx *c = open_with("local[2]", "delay:stage=0,part=0,attempt=0");
    CHECK(c);
    group_ctx = c;
    job_arg a = {em_range(c, 0, 1000, 1, 2), "slow", 1, 0, NULL, ""};
    pthread_t ta;
    CHECK(pthread_create(&ta, NULL, count_in_group, &a) == 0);
    em_stats st;
    /* A's partition 1 finished; partition 0 is held */
    CHECK(wait_stat(c, &st, get_tasks_run, 1, "job A's partition 1 to finish (tasks_run 1)"));
    CHECK_EQ_I64(st.tasks_run, 1);
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_range(c, 0, 77, 1, 3), &b)); /* B, on this thread */
    int exact = expect_range(b, 77, NULL, "job B's values");
    em_batch_free(b);
    CHECK(exact);
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.jobs_active, 1); /* A still runs */
    CHECK_EQ_I64(em_cancel_job_group(c, "other"), 0);
    CHECK_EQ_I64(em_cancel_job_group(c, "slow"), 1);
    pthread_join(ta, NULL);
    CHECK_EQ_I64(a.rc, EM_ECANCELED);
    CHECK(strstr(a.msg, "job group \"slow\" canceled") != NULL);
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.jobs_active, 0);
    CHECK_EQ_I64(st.tasks_running, 0);
    CHECK_EQ_I64(st.tasks_killed, 1);
    em_close(c);
}

TEST(jobs_group_names_checked) {
    em_ctx *c = open_with("local[1]", NULL);
    CHECK(c);
    char longname[200];
    memset(longname, 'g', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    CHECK_EQ_I64(em_set_job_group(c, longname), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "longer than 127 bytes");
    CHECK_EQ_I64(em_set_job_group(NULL, "x"), EM_EINVAL);
    CHECK_EQ_I64(em_cancel_job_group(c, ""), EM_EINVAL);
    CHECK_EQ_I64(em_cancel_job_group(c, NULL), EM_EINVAL);
    /* A group set, then cleared: jobs run, and canceling the old name finds none. */
    CHECK_OK(em_set_job_group(c, "g1"));
    CHECK_OK(em_set_job_group(c, NULL));
    int64_t n = 0;
    CHECK_OK(em_count(em_range(c, 0, 5, 1, 1), &n));
    CHECK_EQ_I64(n, 5);
    CHECK_EQ_I64(em_cancel_job_group(c, "g1"), 0);
    em_close(c);
}

/* ------------------------------------------------ a shared running stage */

static int gate_open, gate_entered;

/* Identity, but the first call of each task waits for the gate. */
static int gated_key(const em_rec *in, em_emitter *out, const void *arg) {
    static __thread int seen_part = -2;
    int p = em_task_partition();
    if (p != seen_part) {
        seen_part = p;
        __atomic_fetch_add(&gate_entered, 1, __ATOMIC_ACQ_REL);
        if (!wait_for(cond_flag, &gate_open, WAIT_MS, "the test to open the map stage's gate"))
            return em_fail("the gate stayed shut");
    }
    return fn_mod_key(in, out, arg);
}

TEST(jobs_share_a_running_map_stage) {
    /* Thread A's job runs the map stage of a shuffle (held at a gate);
     * thread B's job on the same shuffled RDD starts meanwhile and waits
     * for that stage instead of running it again.  Both results exact; the
     * map tasks ran once; no stage was skipped (B joined the running one). */
    em_ctx *c = open_with("local[2]", NULL);
    CHECK(c);
    __atomic_store_n(&gate_open, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&gate_entered, 0, __ATOMIC_RELEASE);
    int64_t m = 10;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 1000, 1, 2), gated_key, &m, sizeof m), fn_sum_i64, NULL, 0, 3);
    CHECK(sums);
    job_arg a = {sums, NULL, 1, 0, NULL, ""}, b = {sums, NULL, 1, 0, NULL, ""};
    pthread_t ta, tb;
    CHECK(pthread_create(&ta, NULL, collect_it, &a) == 0);
    CHECK(wait_for(cond_flag, &gate_entered, WAIT_MS, "a map task of job A at the gate"));
    CHECK(pthread_create(&tb, NULL, collect_it, &b) == 0);
    em_stats st;
    /* B's job started: it found the stage running */
    CHECK(wait_stat(c, &st, get_jobs, 2, "job B to start (jobs 2)"));
    CHECK_EQ_I64(st.jobs, 2);
    __atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK_OK(a.rc);
    CHECK_OK(b.rc);
    CHECK(expect_mod_sums(a.b, 1000, 10, "job A's sums"));
    CHECK(expect_mod_sums(b.b, 1000, 10, "job B's sums"));
    em_batch_free(a.b);
    em_batch_free(b.b);
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.map_tasks_run, 2);
    CHECK_EQ_I64(st.stages_skipped, 0);
    CHECK_EQ_I64(st.tasks_run, 2 + 3 + 3);
    em_close(c);
}

/* -------------------------------------------- em_close during a job */

TEST(jobs_close_during_two_stage_job) {
    /* Thread A runs a two-stage job whose reduce partition 0 (stage 1) is
     * held until killed.  em_close from this thread cancels it: A's action
     * returns EM_ECANCELED naming em_close, and em_close returns after it. */
    em_ctx *c = open_with("local[2]", "delay:stage=1,part=0,attempt=0");
    CHECK(c);
    int64_t m = 7;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 500, 1, 3), fn_mod_key, &m, sizeof m), fn_sum_i64, NULL, 0, 2);
    job_arg a = {sums, NULL, 1, 0, NULL, ""};
    pthread_t ta;
    CHECK(pthread_create(&ta, NULL, collect_it, &a) == 0);
    em_stats st;
    /* maps done, reduce 1 done, reduce 0 held (so no more tasks end) */
    CHECK(wait_stat(c, &st, get_tasks_run, 4, "the maps and reduce 1 to finish (tasks_run 4)"));
    CHECK_EQ_I64(st.map_tasks_run, 3);
    CHECK_EQ_I64(st.tasks_run, 4);
    em_close(c);
    pthread_join(ta, NULL);
    CHECK_EQ_I64(a.rc, EM_ECANCELED);
    CHECK(strstr(a.msg, "em_close") != NULL);
    CHECK(a.b == NULL);
}

TEST(jobs_cancel_all_during_two_stage_job_other_thread) {
    /* The same with em_cancel_all: A returns EM_ECANCELED, the context
     * stays usable and runs the same job afterwards. */
    em_ctx *c = open_with("local[2]", "delay:stage=1,part=0,attempt=0");
    CHECK(c);
    int64_t m = 7;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 500, 1, 3), fn_mod_key, &m, sizeof m), fn_sum_i64, NULL, 0, 2);
    job_arg a = {sums, NULL, 1, 0, NULL, ""};
    pthread_t ta;
    CHECK(pthread_create(&ta, NULL, collect_it, &a) == 0);
    em_stats st;
    CHECK(wait_stat(c, &st, get_tasks_run, 4, "the maps and reduce 1 to finish (tasks_run 4)"));
    CHECK_EQ_I64(st.map_tasks_run, 3);
    CHECK_EQ_I64(st.tasks_run, 4);
    em_cancel_all(c);
    pthread_join(ta, NULL);
    CHECK_EQ_I64(a.rc, EM_ECANCELED);
    CHECK(strstr(a.msg, "em_cancel_all") != NULL);
    CHECK_OK(em_set(c, "ember.test.faults", ""));
    em_batch *b = NULL;
    CHECK_OK(em_collect(sums, &b));
    int exact = expect_mod_sums(b, 500, 7, "the sums after the cancel");
    em_batch_free(b);
    CHECK(exact);
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.tasks_running, 0);
    em_close(c);
}

/* ------------------------------------- a loser stuck in a user function */

static int loser_gate, loser_in, part3_calls;

/* Partition 3's first attempt waits in the user function (which no kill
 * can interrupt) until the test opens the gate (at most WAIT_MS, then it
 * fails); every other call counts, and partition 3's calls are counted in
 * part3_calls too. */
static int stuck_once(const em_rec *in, em_emitter *out, const void *arg) {
    em_acc acc;
    memcpy(&acc, arg, sizeof acc);
    if (em_task_partition() == 3 && !__atomic_exchange_n(&loser_in, 1, __ATOMIC_ACQ_REL) &&
        !wait_for(cond_flag, &loser_gate, WAIT_MS, "the test to release the stuck loser"))
        return em_fail("the stuck loser was never released");
    if (em_task_partition() == 3) __atomic_fetch_add(&part3_calls, 1, __ATOMIC_ACQ_REL);
    em_acc_add_i64(acc, 1);
    return em_emit_rec(out, in);
}

static void reset_loser(void) {
    __atomic_store_n(&loser_gate, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&loser_in, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&part3_calls, 0, __ATOMIC_RELEASE);
}

TEST(jobs_action_returns_before_a_stuck_loser) {
    em_ctx *c = open_speculating(NULL);
    CHECK(c);
    reset_loser();
    em_acc seen = em_acc_i64(c, "seen");
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_map(em_range(c, 0, 400, 1, 4), stuck_once, &seen, sizeof seen), &b));
    int exact = expect_range(b, 400, NULL, "the values the copy returned");
    em_batch_free(b);
    CHECK(exact);
    em_stats st;
    em_get_stats(c, &st);
    /* The original, still in the user function; its copy (the only one:
     * the other three tasks had succeeded before speculation began) won. */
    CHECK_EQ_I64(st.tasks_running, 1);
    CHECK_EQ_I64(st.tasks_speculative, 1);
    CHECK_EQ_I64(st.speculative_wins, 1);
    CHECK_EQ_I64(__atomic_load_n(&part3_calls, __ATOMIC_ACQUIRE), 100); /* the copy's */
    /* The copy's additions counted; the stuck original's 100 are not
     * counted while it runs, and never will be. */
    CHECK_EQ_I64(em_acc_value_i64(c, seen), 400);
    __atomic_store_n(&loser_gate, 1, __ATOMIC_RELEASE);
    wait_no_tasks(c, &st);
    CHECK_EQ_I64(st.tasks_running, 0);
    CHECK_EQ_I64(__atomic_load_n(&part3_calls, __ATOMIC_ACQUIRE), 200); /* and the loser's, run to its end */
    CHECK_EQ_I64(st.tasks_killed, 1);
    CHECK_EQ_I64(st.tasks_failed, 0);
    CHECK_EQ_I64(st.tasks_run, 5);
    CHECK_EQ_I64(em_acc_value_i64(c, seen), 400);
    em_close(c);
}

/* The thread that opens the stuck loser's gate, on an event: em_close has
 * begun.  It runs a job whose one task is held (faults.h's hold, a gate
 * never opened) until em_close cancels it; only when its action has
 * returned, canceled by em_close, does it open the loser's gate. */
typedef struct opener {
    em_ctx *c;
    int rc;
    int64_t n;
    char msg[256];
    int gate_opened;
} opener;

static void *open_gate_on_close(void *p) {
    opener *o = p;
    o->rc = em_count(em_range(o->c, 0, 10, 1, 1), &o->n);
    snprintf(o->msg, sizeof o->msg, "%s", em_errmsg());
    __atomic_store_n(&o->gate_opened, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&loser_gate, 1, __ATOMIC_RELEASE);
    return NULL;
}

TEST(jobs_close_waits_for_a_stuck_loser) {
    /* em_close with a loser still in its user function: it waits for it,
     * then frees.  The loser is released only once em_close has begun (it
     * canceled the opener's job), so em_close returning before the loser
     * has run to its end would show in part3_calls. */
    em_ctx *c = open_speculating("hold:stage=1,part=0,attempt=0,gate=never");
    CHECK(c);
    reset_loser();
    em_acc seen = em_acc_i64(c, "seen");
    int64_t n = 0;
    CHECK_OK(em_count(em_map(em_range(c, 0, 400, 1, 4), stuck_once, &seen, sizeof seen), &n)); /* stage 0 */
    CHECK_EQ_I64(n, 400);
    opener o = {c, 1, 0, "", 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, open_gate_on_close, &o) == 0);
    CHECK(gate_wait_held("never", 1, 0, 0)); /* the opener's job runs */
    CHECK_EQ_I64(__atomic_load_n(&part3_calls, __ATOMIC_ACQUIRE), 100); /* the copy's; the loser still waits */
    em_close(c); /* returns only after the gate opened and the loser ended */
    pthread_join(t, NULL);
    CHECK_EQ_I64(o.rc, EM_ECANCELED);
    CHECK_STR_CONTAINS(o.msg, "em_close");
    CHECK_EQ_I64(__atomic_load_n(&o.gate_opened, __ATOMIC_ACQUIRE), 1);
    CHECK_EQ_I64(__atomic_load_n(&part3_calls, __ATOMIC_ACQUIRE), 200);
}

/* ------------------------------------------------ found in review */

static int fail_result(void *c, int idx, task_result *res) {
    (void)c;
    (void)idx;
    (void)res;
    return em__seterr(EM_EIO, "the action fails on a result");
}

TEST(jobs_action_fails_on_its_last_result) {
    /* The result and the job's end come in one burst: the abort request
     * the caller posts must not outlive the job (it holds a reference). */
    em_ctx *c = open_with("local[2]", NULL);
    CHECK(c);
    em_rdd *r = em_range(c, 0, 10, 1, 1);
    for (int i = 0; i < 300; i++) {
        plan_sink s;
        memset(&s, 0, sizeof s);
        s.kind = SK_COUNT;
        CHECK_EQ_I64(ctx_run(r, &s, NULL, 0, fail_result, NULL), EM_EIO);
        CHECK_STR_CONTAINS(em_errmsg(), "the action fails on a result");
    }
    em_close(c);
}

static int gate2, entered2;

/* The first two map tasks to start wait at the gate. */
static int two_gated(const em_rec *in, em_emitter *out, const void *arg) {
    static __thread int seen = -2, held = 0;
    int p = em_task_partition();
    if (p != seen) {
        seen = p;
        held = __atomic_fetch_add(&entered2, 1, __ATOMIC_ACQ_REL) < 2;
        if (held && !wait_for(cond_flag, &gate2, WAIT_MS, "the test to open the two map tasks' gate"))
            return em_fail("the gate stayed shut");
    }
    return fn_mod_key(in, out, arg);
}

static void *collect_in_group(void *p) {
    job_arg *a = p;
    if (a->group) em_set_job_group(group_ctx, a->group);
    a->rc = em_collect(a->r, &a->b);
    snprintf(a->msg, sizeof a->msg, "%s", em_errmsg());
    return NULL;
}

TEST(jobs_canceled_job_queued_tasks_taken_over) {
    /* Two one-slot executors: job F runs a map stage of six tasks, two held
     * at a gate, four queued.  F is canceled; job B, on the same shuffle,
     * takes the stage over, queued tasks included, and finishes exactly. */
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.progress", "false"));
    CHECK_OK(em_conf_set(conf, "ember.test.executors", "2"));
    em_ctx *c = em_open("local[2]", conf);
    em_conf_free(conf);
    CHECK(c);
    group_ctx = c;
    __atomic_store_n(&gate2, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&entered2, 0, __ATOMIC_RELEASE);
    int64_t m = 10;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 600, 1, 6), two_gated, &m, sizeof m), fn_sum_i64, NULL, 0, 2);
    CHECK(sums);
    job_arg a = {sums, "f", 1, 0, NULL, ""}, b = {sums, NULL, 1, 0, NULL, ""};
    pthread_t ta, tb;
    CHECK(pthread_create(&ta, NULL, collect_in_group, &a) == 0);
    CHECK(wait_for(reached_two, &entered2, WAIT_MS, "two map tasks of job F at the gate"));
    CHECK_EQ_I64(em_cancel_job_group(c, "f"), 1);
    CHECK(pthread_create(&tb, NULL, collect_in_group, &b) == 0);
    em_stats st;
    CHECK(wait_stat(c, &st, get_jobs, 2, "job B to start (jobs 2)"));
    CHECK_EQ_I64(st.jobs, 2);
    __atomic_store_n(&gate2, 1, __ATOMIC_RELEASE);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK_EQ_I64(a.rc, EM_ECANCELED);
    CHECK_OK(b.rc);
    CHECK(expect_mod_sums(b.b, 600, 10, "job B's sums"));
    em_batch_free(b.b);
    em_close(c);
}

static int gate3, in3;

/* Partition 3's first attempt waits in the user function (at most
 * WAIT_MS, then it fails). */
static int stuck_map(const em_rec *in, em_emitter *out, const void *arg) {
    if (em_task_partition() == 3 && !__atomic_exchange_n(&in3, 1, __ATOMIC_ACQ_REL) &&
        !wait_for(cond_flag, &gate3, WAIT_MS, "the test to release the stuck map"))
        return em_fail("the stuck map was never released");
    return fn_mod_key(in, out, arg);
}

TEST(jobs_map_loser_ends_after_its_shuffle_is_dropped) {
    /* A speculative copy wins a map task; the action returns; the user
     * releases every RDD (the shuffle is dropped); then the stuck original
     * ends.  Its output is removed, nothing freed is read, nothing is left.
     * One reduce partition: a stage of one task is never speculated, so
     * the stuck map is the only task copied. */
    em_ctx *c = open_speculating(NULL);
    CHECK(c);
    __atomic_store_n(&gate3, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&in3, 0, __ATOMIC_RELEASE);
    int64_t m = 10;
    em_rdd *src = em_range(c, 0, 400, 1, 4);
    em_rdd *mapped = em_map(src, stuck_map, &m, sizeof m);
    em_rdd *sums = em_reduce_by_key(mapped, fn_sum_i64, NULL, 0, 1);
    em_batch *b = NULL;
    CHECK_OK(em_collect(sums, &b));
    int exact = expect_mod_sums(b, 400, 10, "the sums with a speculated map");
    em_batch_free(b);
    CHECK(exact);
    em_rdd_release(sums);
    em_rdd_release(mapped);
    em_rdd_release(src);
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.live_rdds, 0);
    CHECK_EQ_I64(st.live_shuffles, 0);
    CHECK_EQ_I64(st.tasks_running, 1); /* the original, still stuck */
    CHECK_EQ_I64(st.tasks_speculative, 1);
    CHECK_EQ_I64(st.speculative_wins, 1);
    __atomic_store_n(&gate3, 1, __ATOMIC_RELEASE);
    wait_no_tasks(c, &st);
    CHECK_EQ_I64(st.tasks_running, 0);
    CHECK_EQ_I64(st.tasks_killed, 1);
    CHECK_EQ_I64(st.tasks_failed, 0);
    CHECK_EQ_I64(st.map_tasks_run, 5); /* 4 maps and the copy */
    CHECK_EQ_I64(st.live_stages, 0);
    CHECK_EQ_I64(st.scratch_bytes, 0); /* the loser's output went too */
    em_close(c);
}
