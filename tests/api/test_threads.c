/*
 * test_threads.c -- one context used by several driver threads at once:
 * each builds its own RDDs and runs mixed actions (count, collect, reduce by
 * key, tree_reduce, take, first) while all of them also read one shared
 * shuffled RDD, whose map stage runs once.  Every result is checked
 * exactly.  The suite runs under ThreadSanitizer too (make test-tsan).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

#define THREADS 4
#define ROUNDS 50 /* x 4 actions = 200 jobs per thread */

typedef struct worker_arg {
    em_ctx *c;
    em_rdd *shared; /* (k, sum of v with v % 10 == k) over [0, 1000) */
    int seed;
    int bad;        /* the first round that went wrong, 0 if none */
    char why[160];
} worker_arg;

static int64_t mod_sum(int64_t n, int64_t m, int64_t k) {
    int64_t s = 0;
    for (int64_t v = k; v < n; v += m) s += v;
    return s;
}

static void *worker(void *p) {
    worker_arg *w = p;
    em_ctx *c = w->c;
    for (int r = 1; r <= ROUNDS && !w->bad; r++) {
        int64_t n = 100 + (w->seed * 37 + r * 11) % 400, m = 3 + r % 5, cnt = 0;
        em_batch *b = NULL;
        em_rdd *src = em_range(c, 0, n, 1, 1 + r % 4);
        /* count */
        if (em_count(src, &cnt) || cnt != n) {
            snprintf(w->why, sizeof w->why, "count: %s", em_errmsg());
            w->bad = r;
            break;
        }
        /* reduce by key, collected */
        em_rdd *sums = em_reduce_by_key(em_map(src, fn_mod_key, &m, sizeof m), fn_sum_i64, NULL, 0, 2);
        if (em_collect(sums, &b) || (int64_t)em_batch_count(b) != m) {
            snprintf(w->why, sizeof w->why, "reduce_by_key: %s", em_errmsg());
            w->bad = r;
            em_batch_free(b);
            break;
        }
        size_t pos = 0;
        em_rec rec;
        while (em_batch_next(b, &pos, &rec) == 1)
            if (em_i64_dec(rec.val) != mod_sum(n, m, em_i64_dec(rec.key))) w->bad = r;
        em_batch_free(b);
        b = NULL;
        /* tree_reduce of the doubled values: internal RDDs of its own */
        if (em_tree_reduce(em_map(src, fn_double_i64, NULL, 0), fn_sum_i64, NULL, 0, 2, &b) ||
            em_batch_count(b) != 1 || batch_i64_at(b, 0) != n * (n - 1)) {
            snprintf(w->why, sizeof w->why, "tree_reduce: %s", em_errmsg());
            w->bad = r;
        }
        em_batch_free(b);
        b = NULL;
        /* the shared RDD */
        if (em_collect(w->shared, &b) || em_batch_count(b) != 10) {
            snprintf(w->why, sizeof w->why, "shared: %s", em_errmsg());
            w->bad = r;
        } else {
            pos = 0;
            while (em_batch_next(b, &pos, &rec) == 1)
                if (em_i64_dec(rec.val) != mod_sum(1000, 10, em_i64_dec(rec.key))) w->bad = r;
        }
        em_batch_free(b);
        if (w->bad && !w->why[0]) snprintf(w->why, sizeof w->why, "a wrong value in round %d", r);
    }
    return NULL;
}

TEST(threads_share_one_context) {
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.progress", "false"));
    em_ctx *c = em_open("local[3]", conf);
    em_conf_free(conf);
    CHECK(c);
    int64_t ten = 10;
    em_rdd *shared = em_reduce_by_key(em_map(em_range(c, 0, 1000, 1, 4), fn_mod_key, &ten, sizeof ten), fn_sum_i64,
                                      NULL, 0, 3);
    CHECK(shared);
    pthread_t th[THREADS];
    worker_arg w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].c = c;
        w[i].shared = shared;
        w[i].seed = i + 1;
        CHECK(pthread_create(&th[i], NULL, worker, &w[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        if (w[i].bad) fprintf(stderr, "  thread %d, round %d: %s\n", i, w[i].bad, w[i].why);
        CHECK_EQ_I64(w[i].bad, 0);
    }
    em_stats st;
    em_get_stats(c, &st);
    /* Jobs: per round count 1, collect 1 (two stages), tree_reduce >= 1, shared 1. */
    CHECK(st.jobs >= (int64_t)THREADS * ROUNDS * 4);
    CHECK_EQ_I64(st.tasks_failed, 0);
    /* The shared shuffle's map stage (4 tasks) ran once: the first job of
     * each thread either ran it, or waited for another job running it;
     * every later job skipped it. */
    CHECK(st.stages_skipped >= (int64_t)THREADS * ROUNDS - THREADS);
    em_close(c);
}

/* ------------------------------------------------ cancel, several threads */

static int started;

static int note_start(const em_rec *in, em_emitter *out, const void *arg) {
    __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
    return em_emit_rec(out, in);
}

typedef struct job_arg {
    em_rdd *r;
    int rc;
} job_arg;

static void *run_count(void *p) {
    job_arg *a = p;
    int64_t n;
    a->rc = em_count(a->r, &n);
    return NULL;
}

static int64_t get_jobs_active(const em_stats *st) { return st->jobs_active; }

TEST(threads_cancel_covers_waiting_jobs) {
    /* Thread A's job holds the scheduler (its partition 0 waits until
     * killed); thread B's job waits for its turn.  em_cancel_all cancels
     * both; a job started afterwards runs. */
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.test.faults", "delay:part=0,attempt=0"));
    em_ctx *c = em_open("local[2]", conf);
    em_conf_free(conf);
    CHECK(c);
    __atomic_store_n(&started, 0, __ATOMIC_RELEASE);
    job_arg a = {em_map(em_range(c, 0, 1000, 1, 2), note_start, NULL, 0), 1};
    job_arg b = {em_range(c, 0, 10, 1, 1), 1};
    pthread_t ta, tb;
    CHECK(pthread_create(&ta, NULL, run_count, &a) == 0);
    int ok = wait_for(cond_flag, &started, WAIT_MS, "job A's partition 1 to start");
    /* B asks for its turn while A's job runs: wait until it waits. */
    CHECK(pthread_create(&tb, NULL, run_count, &b) == 0);
    em_stats st;
    ok = ok && wait_stat(c, &st, get_jobs_active, 2, "job B to wait for its turn (jobs_active 2)");
    em_cancel_all(c); /* whatever the waits found: the threads end */
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(ok);
    CHECK_EQ_I64(st.jobs_active, 2);
    CHECK_EQ_I64(a.rc, EM_ECANCELED);
    CHECK_EQ_I64(b.rc, EM_ECANCELED);
    wait_no_tasks(c, &st);
    CHECK_EQ_I64(st.jobs_active, 0);
    /* A's partition 1 ran; every other attempt was killed: A's held
     * partition 0, and B's one task if the scheduler had launched it on
     * the thread partition 1 freed (the delay matches it too, so it is
     * held until killed if it started, and killed queued if not). */
    CHECK(st.tasks_killed == 1 || st.tasks_killed == 2);
    CHECK_EQ_I64(st.tasks_run, 1 + st.tasks_killed);
    CHECK(st.faults_fired >= 1 && st.faults_fired <= st.tasks_killed);
    CHECK_OK(em_set(c, "ember.test.faults", ""));
    CHECK(expect_range_job(c, 10, 2, "the job after the cancel"));
    em_close(c);
}

/* ---------------------------------------------------- broadcast pinning */

/* Emits the broadcast's first int64 plus the record; fails if it is gone. */
static int add_bcast(const em_rec *in, em_emitter *out, const void *arg) {
    em_bcast b;
    memcpy(&b, arg, sizeof b);
    __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
    size_t len = 0;
    const uint8_t *p = em_bcast_value(b, &len);
    if (!p || len != 8) return em_fail("broadcast gone");
    return em_emit_i64(out, em_i64_dec(p) + em_i64_dec(in->val));
}

typedef struct sum_arg {
    em_rdd *r;
    int rc;
    int64_t sum;
} sum_arg;

static int64_t plus_1000(int64_t v) { return 1000 + v; }

/* Collects a->r: its sum in a->sum; records other than 1000 + v for v in
 * [0, 100), each once, make a->rc -1000 (a wrong answer). */
static void *collect_sum(void *p) {
    sum_arg *a = p;
    em_batch *b = NULL;
    a->rc = em_collect(a->r, &b);
    if (!a->rc) {
        a->sum = batch_sum_i64(b);
        if (!expect_range(b, 100, plus_1000, "the records read with the broadcast")) a->rc = -1000;
    }
    em_batch_free(b);
    return NULL;
}

static int destroying;

/* Opens the gate "p1" once the test has called em_bcast_destroy. */
static void *release_on_destroy(void *p) {
    (void)p;
    wait_for(cond_flag, &destroying, WAIT_MS, "the test to call em_bcast_destroy");
    if (gate_release("p1")) fprintf(stderr, "  cannot open the gate p1\n");
    return NULL;
}

TEST(threads_broadcast_pinned_while_job_runs) {
    /* Thread A's job reads the broadcast in every record; partition 1 is
     * held at a gate that opens only once the test has called
     * em_bcast_destroy.  The destroy waits for the job: every record still
     * reads it.  A later job finds it destroyed. */
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.test.faults", "hold:part=1,attempt=0,gate=p1"));
    CHECK_OK(em_conf_set(conf, "ember.test.faults.dir", gates_dir()));
    em_ctx *c = em_open("local[2]", conf);
    em_conf_free(conf);
    CHECK(c);
    uint8_t v[8];
    em_i64_enc(1000, v);
    em_bcast b = em_broadcast(c, v, 8);
    CHECK(b.id != 0);
    __atomic_store_n(&started, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&destroying, 0, __ATOMIC_RELEASE);
    sum_arg a = {em_map(em_range(c, 0, 100, 1, 2), add_bcast, &b, sizeof b), 1, 0};
    pthread_t t, tr;
    CHECK(pthread_create(&t, NULL, collect_sum, &a) == 0);
    CHECK(pthread_create(&tr, NULL, release_on_destroy, NULL) == 0);
    int held = gate_wait_held("p1", 0, 1, 0);
    __atomic_store_n(&destroying, 1, __ATOMIC_RELEASE);
    em_bcast_destroy(c, b); /* returns once the job has ended */
    em_stats st;
    em_get_stats(c, &st);
    pthread_join(tr, NULL);
    pthread_join(t, NULL);
    CHECK(held);
    CHECK_EQ_I64(st.tasks_run, 2); /* partition 1 too, released after the destroy began */
    CHECK_EQ_I64(st.faults_fired, 1); /* partition 1's hold */
    CHECK_OK(a.rc);
    CHECK_EQ_I64(a.sum, 100 * 1000 + 99 * 100 / 2);
    CHECK(em_bcast_value(b, NULL) == NULL);
    CHECK_OK(em_set(c, "ember.test.faults", ""));
    a.rc = 0;
    collect_sum(&a);
    CHECK_EQ_I64(a.rc, EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "broadcast gone");
    em_close(c);
}
