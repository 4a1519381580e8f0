/*
 * test_acc_faults.c -- accumulator totals under faults, with real executor
 * processes (local-cluster[2,1]): only a successful attempt's updates
 * count, once per task, as Spark guarantees for updates made in actions.
 * A failed attempt then its retry (the fault hook), and an executor killed
 * with SIGKILL in the middle of a task (its attempt's updates never
 * arrive; the task runs again elsewhere), both in a result stage and in a
 * map stage: totals exact, and every answer equal to the same job run
 * undisturbed on local[2].  Speculation's case is in test_speculation.c.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

typedef struct acc_arg {
    em_acc count, sum;
    char marker[400]; /* "": no kill */
} acc_arg;

/* Counts and sums its records; on record 1000, the first attempt to see
 * it (the marker made with O_EXCL) kills its own process after counting
 * part of its partition. */
static int fn_acc_kill(const em_rec *in, em_emitter *out, const void *arg) {
    const acc_arg *a = arg;
    int64_t v = rec_i64(in);
    em_acc_add_i64(a->count, 1);
    em_acc_add_i64(a->sum, v);
    if (v == 1000 && a->marker[0]) {
        int fd = open(a->marker, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd >= 0) {
            close(fd);
            raise(SIGKILL);
        }
    }
    return em_emit_i64(out, v);
}

static em_ctx *open_with(const char *master, const char *faults) {
    em_conf *conf = em_conf_new();
    test_conf_set(conf, "ember.progress", "false");
    if (faults) em_conf_set(conf, "ember.test.faults", faults);
    em_ctx *c = em_open(master, conf);
    if (!c) fprintf(stderr, "  em_open(%s): %s\n", master, em_errmsg());
    em_conf_free(conf);
    return c;
}

/* The job: 2,000 numbers in 8 partitions through fn_acc_kill, either
 * collected (the result stage updates) or, with shuffle, keyed mod 7 and
 * summed by key after it (the map stage updates).  Its answer in *out, the
 * accumulators' totals in *count and *sum.  0 or the job's error. */
static int run(em_ctx *c, const char *marker, int shuffle, em_batch **out, int64_t *count, int64_t *sum) {
    acc_arg a;
    a.count = em_acc_i64(c, "count");
    a.sum = em_acc_i64(c, "sum");
    snprintf(a.marker, sizeof a.marker, "%s", marker ? marker : "");
    em_rdd *r = em_map(em_range(c, 0, 2000, 1, 8), fn_acc_kill, &a, sizeof a);
    if (shuffle) {
        int64_t m = 7;
        r = em_sort_by_key(em_reduce_by_key(em_map(r, fn_mod_key, &m, sizeof m), fn_sum_i64, NULL, 0, 3), 1, 1);
    }
    int rc = em_collect(r, out);
    *count = em_acc_value_i64(c, a.count);
    *sum = em_acc_value_i64(c, a.sum);
    return rc;
}

static int check_case(const char *faults, int kill, int shuffle) {
    em_ctx *ref = open_with("local[2]", NULL);
    em_batch *want = NULL, *got = NULL;
    int64_t count, sum;
    int ok = ref && run(ref, NULL, shuffle, &want, &count, &sum) == 0 && count == 2000 && sum == 1999 * 1000;
    if (ref) em_close(ref);
    em_ctx *c = ok ? open_with("local-cluster[2,1,512]", faults) : NULL;
    const char *marker = kill ? tmp_path(shuffle ? "acc-kill-map" : "acc-kill-result") : NULL;
    em_stats s0, s1;
    if (c) em_get_stats(c, &s0);
    if (!c || run(c, marker, shuffle, &got, &count, &sum)) {
        fprintf(stderr, "  job: %s\n", em_errmsg());
        ok = 0;
    } else {
        em_get_stats(c, &s1);
        if (count != 2000 || sum != 1999 * 1000) {
            fprintf(stderr, "  totals %lld and %lld, expected 2000 and 1999000\n", (long long)count, (long long)sum);
            ok = 0;
        }
        if (!batches_equal(got, want)) {
            fprintf(stderr, "  the answer differs from local[2]'s\n");
            ok = 0;
        }
        if (!expect_multiset_take(got, shuffle ? want_mod_sums(2000, 7) : want_range(2000, NULL), "the answer"))
            ok = 0;
        /* The fault happened: a failed attempt, or a killed executor (its
         * attempt ended lost, and ran again). */
        if (s1.tasks_run - s0.tasks_run <= (shuffle ? 8 + 3 + 1 : 8)) {
            fprintf(stderr, "  %lld attempts: no task ran twice\n", (long long)(s1.tasks_run - s0.tasks_run));
            ok = 0;
        }
        if (kill && access(marker, F_OK)) ok = 0;
    }
    em_batch_free(want);
    em_batch_free(got);
    if (c) em_close(c);
    return ok;
}

TEST(acc_faults_retry_result_stage) { CHECK(check_case("fail:part=4,attempt=0", 0, 0)); }

TEST(acc_faults_retry_map_stage) { CHECK(check_case("fail:stage=0,part=4,attempt=0", 0, 1)); }

TEST(acc_faults_executor_killed_result_stage) { CHECK(check_case(NULL, 1, 0)); }

TEST(acc_faults_executor_killed_map_stage) { CHECK(check_case(NULL, 1, 1)); }
