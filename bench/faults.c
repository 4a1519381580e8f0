/*
 * faults.c -- what faults cost: one executor lost
 * mid-job, and one straggling task with and without speculation.  The job,
 * on local-cluster[3,1] (three executor processes of one core): 24 map
 * tasks of CPU work (about 50 ms each), a reduce_by_key into 6 partitions,
 * a collect.  Every figure is the best of REPS, beside the undisturbed job
 * in the same run, and every answer is checked against the undisturbed
 * one.
 *
 * Recovery: the executor running map task 12 (half the map stage) kills
 * itself with SIGKILL in that task, as an operator or the OOM killer would:
 * its running task and whatever of its work is lost run again, and the
 * master grants a replacement executor.  The lost work is counted, not
 * guessed: the map attempts run beyond the undisturbed job's, times one map
 * task's time measured alone in the same run (the task as a one-partition
 * job, minus an empty job's cost).  Target: no more than the undisturbed
 * time plus 1.5x the lost work.
 *
 * Straggler: map task 20's first attempt held back DELAY ms by the fault
 * hook (ember.test.faults delay), as a slow machine would, in a context
 * without speculation (the job waits for it) and in one with
 * ember.speculation=true and Spark's other speculation defaults (a copy
 * runs on another executor and wins).  Target: with speculation, within
 * 1.3x the undisturbed job.
 *
 *   faults [MASTER [REPS [DELAY_MS]]]   (local-cluster[3,1], 3, 3000)
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ember.h"

#define MAPS 24
#define RECS_PER_MAP 200
#define VICTIM 12
#define STRAGGLER 20 /* a partition only the map stage has */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
/* arg: a marker path, or "" for no kill.  v -> (v % 97, a hash worked out
 * over 200k xorshift steps); the first record of map task VICTIM, the
 * first time any attempt sees it, creates the marker and kills its own
 * executor process. */
static int work(const em_rec *in, em_emitter *out, const void *arg) {
    const char *marker = arg;
    int64_t v = em_i64_dec(in->val);
    if (marker[0] && v == (int64_t)VICTIM * RECS_PER_MAP) {
        int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd >= 0) {
            close(fd);
            raise(SIGKILL);
        }
    }
    uint64_t x = (uint64_t)v * 0x9e3779b97f4a7c15ull + 1;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    uint8_t k[8], val[8];
    em_i64_enc(v % 97, k);
    em_i64_enc((int64_t)(x & 0xffff), val);
    return em_emit_pair(out, k, 8, val, 8);
}

static int run_job(em_ctx *c, const char *marker, int64_t *answer, double *secs) {
    double t0 = now();
    em_rdd *pairs = em_map(em_range(c, 0, (int64_t)MAPS * RECS_PER_MAP, 1, MAPS), work, marker, strlen(marker) + 1);
    em_rdd *sums = em_reduce_by_key(pairs, em_sum_i64, NULL, 0, 6);
    em_batch *b = NULL;
    int rc = em_collect(sums, &b);
    *secs = now() - t0;
    if (rc) return rc;
    size_t pos = 0;
    em_rec r;
    int64_t total = 0;
    while (em_batch_next(b, &pos, &r) == 1) total += em_i64_dec(r.val);
    *answer = total * 1000 + (int64_t)em_batch_count(b);
    em_batch_free(b);
    return 0;
}

/* The time of one map task's work as a one-partition job, minus an empty
 * one-partition job's (scheduling and launch). */
static double task_secs(em_ctx *c) {
    double best = 1e30, empty = 1e30;
    for (int i = 0; i < 3; i++) {
        int64_t n;
        double t0 = now();
        if (em_count(em_map(em_range(c, 0, RECS_PER_MAP, 1, 1), work, "", 1), &n)) return -1;
        double t1 = now();
        if (em_count(em_range(c, 0, RECS_PER_MAP, 1, 1), &n)) return -1;
        double t2 = now();
        if (t1 - t0 < best) best = t1 - t0;
        if (t2 - t1 < empty) empty = t2 - t1;
    }
    return best - empty;
}

static em_ctx *open_ctx(const char *master, const char *faults, int spec) {
    em_conf *conf = em_conf_new();
    if (!conf || em_conf_set(conf, "ember.progress", "false") ||
        (faults && em_conf_set(conf, "ember.test.faults", faults)) ||
        em_conf_set(conf, "ember.speculation", spec ? "true" : "false")) {
        em_conf_free(conf);
        return NULL;
    }
    em_ctx *c = em_open(master, conf);
    em_conf_free(conf);
    return c;
}

/* Best of reps runs of the job in a context opened for the case; the
 * speculative attempts launched and won in all of them. */
static int measure(const char *master, const char *faults, int spec, int reps, int64_t *answer, double *best,
                   int64_t *launched, int64_t *wins) {
    em_ctx *c = open_ctx(master, faults, spec);
    if (!c) {
        fprintf(stderr, "faults: em_open(%s): %s\n", master, em_errmsg());
        return 1;
    }
    double secs;
    int64_t a;
    /* A warm-up job: executors registered, the binary cached on workers. */
    if (run_job(c, "", &a, &secs)) goto fail;
    *best = 1e30;
    em_stats s0, s1;
    em_get_stats(c, &s0);
    for (int i = 0; i < reps; i++) {
        if (run_job(c, "", &a, &secs)) goto fail;
        if (secs < *best) *best = secs;
        if (*answer && a != *answer) {
            fprintf(stderr, "faults: answer %lld, undisturbed %lld\n", (long long)a, (long long)*answer);
            em_close(c);
            return 1;
        }
        *answer = a;
    }
    em_get_stats(c, &s1);
    *launched = s1.tasks_speculative - s0.tasks_speculative;
    *wins = s1.speculative_wins - s0.speculative_wins;
    em_close(c);
    return 0;
fail:
    fprintf(stderr, "faults: job failed: %s\n", em_errmsg());
    em_close(c);
    return 1;
}

/* The recovery case: figures printed; 0 or 1. */
static int recovery(const char *master, int reps) {
    em_ctx *c = open_ctx(master, NULL, 0);
    if (!c) {
        fprintf(stderr, "faults: em_open(%s): %s\n", master, em_errmsg());
        return 1;
    }
    char dir[] = "/tmp/ember-recovery-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("faults: mkdtemp");
        em_close(c);
        return 1;
    }
    int64_t answer = 0, a;
    double secs, t0 = 1e30, t1 = 1e30, lost_at_best = 0;
    int rc = run_job(c, "", &answer, &secs); /* warm-up: executors up, binary cached */
    double task = rc ? -1 : task_secs(c);
    em_stats s0, s1;
    int64_t maps_undisturbed = 0, extra_total = 0;
    for (int i = 0; !rc && i < reps; i++) {
        em_get_stats(c, &s0);
        if ((rc = run_job(c, "", &a, &secs))) break;
        em_get_stats(c, &s1);
        maps_undisturbed = s1.map_tasks_run - s0.map_tasks_run;
        if (secs < t0) t0 = secs;
        if (a != answer) rc = -1;
    }
    for (int i = 0; !rc && i < reps; i++) {
        char marker[256];
        snprintf(marker, sizeof marker, "%s/killed-%d", dir, i);
        em_get_stats(c, &s0);
        if ((rc = run_job(c, marker, &a, &secs))) break;
        em_get_stats(c, &s1);
        int64_t extra = s1.map_tasks_run - s0.map_tasks_run - maps_undisturbed;
        extra_total += extra;
        if (secs < t1) {
            t1 = secs;
            lost_at_best = (double)extra * task;
        }
        unlink(marker);
        if (a != answer) rc = -1;
        if (access(marker, F_OK) == 0) rc = -1;
    }
    rmdir(dir);
    if (rc) {
        fprintf(stderr, "faults: %s\n", rc == -1 ? "answer differs from the undisturbed job's" : em_errmsg());
        em_close(c);
        return 1;
    }
    em_stats st;
    em_get_stats(c, &st);
    em_close(c);
    printf("recovery: %s, %d map tasks -> reduce_by_key (6), the executor of map task %d SIGKILLed in it, best of %d\n",
           master, MAPS, VICTIM, reps);
    printf("  one map task alone       %8.3f s\n", task);
    printf("  undisturbed              %8.3f s  (%lld map attempts)\n", t0, (long long)maps_undisturbed);
    printf("  one executor killed      %8.3f s  (%.2f map attempts more per job on average; lost work at the best run "
           "%.3f s)\n",
           t1, (double)extra_total / reps, lost_at_best);
    double bound = t0 + 1.5 * lost_at_best;
    printf("  target: killed <= undisturbed + 1.5 x lost work = %.3f s: %s (%.2fx the bound)\n", bound,
           t1 <= bound ? "met" : "NOT met", t1 / bound);
    return 0;
}

/* The straggler case: figures printed; 0 or 1. */
static int straggler(const char *master, int reps, int delay) {
    char faults[128];
    /* Every job's stages have their own ids, so the rule names a partition
     * only map tasks have (the reduce stage has 6) and the first attempt. */
    snprintf(faults, sizeof faults, "delay:part=%d,attempt=0,ms=%d", STRAGGLER, delay);
    int64_t answer = 0, l0, w0, l1, w1, l2, w2;
    double t0, t1, t2;
    if (measure(master, NULL, 0, reps, &answer, &t0, &l0, &w0)) return 1;
    if (measure(master, faults, 0, reps, &answer, &t1, &l1, &w1)) return 1;
    if (measure(master, faults, 1, reps, &answer, &t2, &l2, &w2)) return 1;
    printf("straggler: %s, %d map tasks (~50 ms of CPU each) -> reduce_by_key (6), map task 20 held %d ms, best of %d\n",
           master, MAPS, delay, reps);
    printf("  undisturbed            %8.3f s\n", t0);
    printf("  straggler, spec off    %8.3f s  (%.2fx undisturbed)\n", t1, t1 / t0);
    printf("  straggler, spec on     %8.3f s  (%.2fx undisturbed; %lld copies launched, %lld won over %d jobs)\n", t2,
           t2 / t0, (long long)l2, (long long)w2, reps);
    printf("  target: spec on within 1.3x undisturbed: %s\n", t2 <= 1.3 * t0 ? "met" : "NOT met");
    return 0;
}

int main(int argc, char **argv) {
    const char *master = argc > 1 ? argv[1] : "local-cluster[3,1]";
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    int delay = argc > 3 ? atoi(argv[3]) : 3000;
    if (reps < 1 || delay < 1) {
        fprintf(stderr, "usage: faults [MASTER [REPS >= 1 [DELAY_MS >= 1]]]\n");
        return 2;
    }
    int rc = recovery(master, reps);
    return straggler(master, reps, delay) || rc;
}
