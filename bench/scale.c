/*
 * scale.c -- the driver's scheduler as the cluster and the job grow, on
 * the simulated cluster (tests/sim/sim.h: executors inside the driver
 * that decode each task's description and answer with a result of its
 * sink's shape).  Reports, beside references measured in the same run:
 *
 *   decisions   tasks/s of no-op jobs from 10 to 1,000 executors of 4
 *               cores and from 1,000 to 100,000 tasks a stage (a task
 *               decision: a launch chosen, its description built, its end
 *               taken), also with the queues at their floor and with
 *               ember.excludeOnFailure on; the reference is the same job
 *               on local[2], whose executor threads share the driver's
 *               queue
 *   memory      the driver's heap (glibc's in-use bytes, less what the
 *               simulated executors hold) per task in flight and per
 *               finished task of a live stage
 *   shuffle     a map stage and a reduce stage of M x R partitions, tasks
 *               of 1 ms: the tracker holds M x R sizes (compressed), each
 *               reduce task's description names every map's; tasks/s of
 *               both stages, and the peak heap (the results of map tasks
 *               not yet taken by the scheduler count in it: each carries
 *               R sizes)
 *   faults      speculation on, an executor lost every second (a new one
 *               joins 100 ms later), tasks of 40 ms on 1,000 x 4 cores,
 *               one executor in 100 five times slower: tasks/s against
 *               the cores' bound (cores / task time)
 *   loss        the scheduler's time to take one executor's loss of 1,000
 *               (its loss and its attempts' ends, up to the relaunches),
 *               timed by the simulation from posting to a call it queues
 *               behind them
 *
 *   scale [full] [SECTION...]   (full: the 10,000 x 10,000 shuffle, else
 *                               2,000 x 2,000; sections: decisions memory
 *                               shuffle loss faults, default all)
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ember.h"
#include "sim.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int64_t heap_in_use(void) {
    struct mallinfo2 m = mallinfo2();
    return (int64_t)(m.uordblks + m.hblkhd);
}

/* A thread that samples the driver's heap (less the simulation's) every
 * half millisecond while a job runs, keeping the peak. */
typedef struct sampler {
    pthread_t th;
    volatile int stop;
    int64_t peak;
} sampler;

static void *sample(void *p) {
    sampler *s = p;
    while (!s->stop) {
        int64_t h = heap_in_use() - sim_held_bytes();
        if (h > s->peak) s->peak = h;
        usleep(500);
    }
    return NULL;
}

/* kv: settings, name and value in turn, NULL-terminated (NULL: none). */
static em_ctx *open_ctx_kv(const char *master, const sim_opts *o, const char *const *kv) {
    sim_install(o);
    em_conf *c = em_conf_new();
    em_conf_set(c, "ember.progress", "false");
    em_conf_set(c, "ember.ui.enabled", "false");
    for (int i = 0; kv && kv[i]; i += 2) em_conf_set(c, kv[i], kv[i + 1]);
    em_ctx *ctx = em_open(master, c);
    em_conf_free(c);
    if (!ctx) {
        fprintf(stderr, "em_open(%s): %s\n", master, em_errmsg());
        exit(1);
    }
    return ctx;
}

static em_ctx *open_ctx(const char *master, const sim_opts *o, int speculation) {
    const char *kv[] = {"ember.speculation", "true", NULL};
    return open_ctx_kv(master, o, speculation ? kv : NULL);
}

/* Best of reps: seconds of a count of ntasks no-op tasks. */
static double count_secs(em_ctx *ctx, int ntasks, int reps) {
    em_rdd *r = em_range(ctx, 0, ntasks, 1, ntasks);
    int64_t n;
    double best = 1e9;
    for (int i = 0; i < reps; i++) {
        double t0 = now();
        if (em_count(r, &n) || n != ntasks) {
            fprintf(stderr, "count: %s\n", em_errmsg());
            exit(1);
        }
        double t = now() - t0;
        if (t < best) best = t;
    }
    return best;
}

/* Jobs of 1,000 and 100,000 tasks on sim[1000,4] with settings kv (as
 * open_ctx_kv), a row each labelled by fmt (of the task count). */
static void job_sizes(const char *const *kv, const char *fmt) {
    int tasks[] = {1000, 100000};
    em_ctx *c = open_ctx_kv("sim[1000,4]", NULL, kv);
    for (int i = 0; i < 2; i++) {
        char what[64];
        double t = count_secs(c, tasks[i], tasks[i] > 10000 ? 2 : 5);
        snprintf(what, sizeof what, fmt, tasks[i]);
        printf("%-34s %10.0f tasks/s  %6.2f us/task\n", what, tasks[i] / t, t / tasks[i] * 1e6);
    }
    em_close(c);
}

static void decisions(void) {
    printf("== decisions: no-op tasks, executors of 4 cores, the default queues (1 per core, deeper for short tasks) ==\n");
    em_ctx *l = open_ctx("local[2]", NULL, 0);
    double ref = 10000 / count_secs(l, 10000, 5);
    em_close(l);
    printf("%-34s %10.0f tasks/s (reference: the same scheduler, executor threads in the driver)\n",
           "local[2], 10,000 tasks", ref);
    int execs[] = {10, 100, 1000};
    for (int i = 0; i < 3; i++) {
        char m[32], what[64];
        snprintf(m, sizeof m, "sim[%d,4]", execs[i]);
        em_ctx *c = open_ctx(m, NULL, 0);
        double t = count_secs(c, 10000, 5);
        em_close(c);
        snprintf(what, sizeof what, "%s, 10,000 tasks", m);
        printf("%-34s %10.0f tasks/s  %6.2f us/task\n", what, 10000 / t, t / 10000 * 1e6);
    }
    job_sizes(NULL, "sim[1000,4], %d tasks");
    /* The simulated round trip is short beside a driver that cannot feed
     * 4,000 cores no-op tasks: queues deepened for them only front-load
     * descriptions.  The same jobs with the queue held at its floor: */
    const char *floor[] = {"ember.executor.taskQueue.max", "1", NULL};
    job_sizes(floor, "  the same, taskQueue.max 1, %d");
    /* Exclusion on: a choice asks it of the executors it looks at. */
    const char *excl[] = {"ember.excludeOnFailure.enabled", "true", NULL};
    job_sizes(excl, "  the same, excludeOnFailure, %d");
    printf("target: >= 200,000 tasks/s at 1,000 x 4; us/task within 1.5x across the rows\n\n");
}

/* The heap's growth over a job of ntasks tasks of task_us on m, per task. */
static double heap_per_task(const char *m, int ntasks, uint64_t task_us, int64_t *peak_over) {
    sim_opts o = {.task_us = task_us};
    em_ctx *c = open_ctx(m, &o, 0);
    em_rdd *r = em_range(c, 0, ntasks, 1, ntasks);
    int64_t n;
    em_count(em_range(c, 0, 8, 1, 8), &n); /* warm up: the first job's one-time allocations */
    malloc_trim(0);
    sampler s = {.peak = 0};
    int64_t base = heap_in_use() - sim_held_bytes();
    s.peak = base;
    pthread_create(&s.th, NULL, sample, &s);
    if (em_count(r, &n) || n != ntasks) {
        fprintf(stderr, "count: %s\n", em_errmsg());
        exit(1);
    }
    s.stop = 1;
    pthread_join(s.th, NULL);
    em_close(c);
    *peak_over = s.peak - base;
    return (double)(s.peak - base) / ntasks;
}

static void memory(void) {
    printf("== memory: the driver's heap, less the simulated executors' ==\n");
    int64_t over;
    /* 1,000 x 4 cores and a queue of 4 each: 8,000 attempts in flight at
     * once, each running 300 ms. */
    double f = heap_per_task("sim[1000,4]", 8000, 300000, &over);
    printf("%-34s %10.0f bytes/task (%lld bytes over the base; target < 2,048)\n", "in flight (8,000 at once)", f,
           (long long)over);
    /* One core: at most two in flight, 100,000 finished in a live stage. */
    double d = heap_per_task("sim[1,1]", 100000, 0, &over);
    printf("%-34s %10.0f bytes/task (%lld bytes over the base; target < 256)\n\n", "finished, live stage (100,000)",
           d, (long long)over);
}

/* v -> (v % *arg, v) */
static int mod_key(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t v = em_i64_dec(in->val);
    uint8_t k[8], vv[8];
    em_i64_enc(v % *(const int64_t *)arg, k);
    em_i64_enc(v, vv);
    return em_emit_pair(out, k, 8, vv, 8);
}

static int sum(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    (void)arg;
    return em_emit_i64(out, em_i64_dec(a->val) + em_i64_dec(b->val));
}

static void shuffle(int maps, int parts) {
    printf("== shuffle: %d map x %d reduce partitions on sim[1000,4], 1 ms tasks ==\n", maps, parts);
    sim_opts o = {.task_us = 1000};
    em_ctx *c = open_ctx("sim[1000,4]", &o, 0);
    int64_t k = 1000, n;
    em_rdd *pairs = em_map(em_range(c, 0, (int64_t)maps * 10, 1, maps), mod_key, &k, sizeof k);
    em_rdd *red = em_reduce_by_key(pairs, sum, NULL, 0, parts);
    malloc_trim(0);
    int64_t base = heap_in_use() - sim_held_bytes();
    sampler s = {.peak = base};
    pthread_create(&s.th, NULL, sample, &s);
    double t0 = now();
    if (em_count(red, &n) || n != (int64_t)maps * parts) {
        fprintf(stderr, "shuffle count: %s (got %lld)\n", em_errmsg(), (long long)n);
        exit(1);
    }
    double t = now() - t0;
    s.stop = 1;
    pthread_join(s.th, NULL);
    em_close(c);
    printf("%-34s %10.0f tasks/s  (%d tasks in %.2f s; bound: 4,000 cores / 1 ms = 4,000,000)\n", "both stages",
           (maps + parts) / t, maps + parts, t);
    printf("%-34s %10.0f bytes (%.2f bytes per map x reduce size)\n\n", "peak heap over the base",
           (double)(s.peak - base), (double)(s.peak - base) / ((double)maps * parts));
}

static void faults(void) {
    printf("== faults: speculation on, an executor lost every second, 40 ms tasks on sim[1000,4], 1 in 100 "
           "executors 5x slower ==\n");
    sim_opts o = {.task_us = 40000, .loss_every_ms = 1000, .replace_ms = 100, .slow_every = 100, .slow_factor = 5};
    em_ctx *c = open_ctx("sim[1000,4]", &o, 1);
    int ntasks = 300000;
    double t = count_secs(c, ntasks, 1);
    em_stats st;
    em_get_stats(c, &st);
    em_close(c);
    sim_stats ss;
    sim_get_stats(&ss);
    double bound = 4000 / 0.040;
    printf("%-34s %10.0f tasks/s  (bound: 4,000 cores / 40 ms = %.0f; %.0f%% of it)\n", "300,000 tasks", ntasks / t,
           bound, 100 * ntasks / t / bound);
    printf("%-34s %10lld lost, %lld attempts lost with them, %lld speculative copies\n\n", "executors",
           (long long)ss.losses, (long long)ss.lost_attempts, (long long)st.tasks_speculative);
}

static void loss(void) {
    printf("== loss: one executor of 1,000 lost, every core busy (1,000 x 4, 2 s tasks) ==\n");
    sim_opts o = {.task_us = 2000000, .loss_every_ms = 300, .replace_ms = 100000, .loss_probe = 1};
    em_ctx *c = open_ctx("sim[1000,4]", &o, 0);
    count_secs(c, 8000, 1);
    em_close(c);
    sim_stats ss;
    sim_get_stats(&ss);
    printf("%-34s %10.3f ms mean, %.3f ms worst, over %lld losses (target < 10 ms)\n\n", "scheduler time per loss",
           ss.loss_probes ? ss.loss_ns_total / 1e6 / ss.loss_probes : 0.0, ss.loss_ns_max / 1e6,
           (long long)ss.loss_probes);
}

static int want(int argc, char **argv, const char *section) {
    int any = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "full")) continue;
        any = 1;
        if (!strcmp(argv[i], section)) return 1;
    }
    return !any;
}

int main(int argc, char **argv) {
    int full = 0;
    for (int i = 1; i < argc; i++) full |= !strcmp(argv[i], "full");
    if (want(argc, argv, "decisions")) decisions();
    if (want(argc, argv, "memory")) memory();
    if (want(argc, argv, "shuffle")) shuffle(full ? 10000 : 2000, full ? 10000 : 2000);
    if (want(argc, argv, "loss")) loss();
    if (want(argc, argv, "faults")) faults();
    return 0;
}
