/*
 * test_sched.c -- the DAG scheduler seen through the public API: shuffle
 * output reuse across actions, stage counts, retries of a failing task
 * and recovery from lost shuffle files (fetch failures).
 */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"
#include "shuffle_index.h"

static em_ctx *open_conf(const char *k1, const char *v1, const char *k2, const char *v2) {
    em_conf *conf = em_conf_new();
    em_ctx *c = NULL;
    if (conf && (!k1 || !em_conf_set(conf, k1, v1)) && (!k2 || !em_conf_set(conf, k2, v2)))
        c = em_open(test_master(), conf);
    if (!c) fprintf(stderr, "  em_open: %s\n", em_errmsg());
    em_conf_free(conf);
    return c;
}


TEST(sched_second_action_reuses_shuffle) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t m = 100;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 20000, 1, 6), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                    NULL, 0, 4);
    em_stats s0, s1, s2;
    em_get_stats(c, &s0);
    int64_t n = 0;
    CHECK_OK(em_count(sums, &n));
    CHECK_EQ_I64(n, 100);
    em_get_stats(c, &s1);
    CHECK_EQ_I64(s1.jobs - s0.jobs, 1);
    CHECK_EQ_I64(s1.stages_run - s0.stages_run, 2);
    CHECK_EQ_I64(s1.map_tasks_run - s0.map_tasks_run, 6);
    CHECK_EQ_I64(s1.tasks_run - s0.tasks_run, 6 + 4);
    CHECK_EQ_I64(s1.stages_skipped, s0.stages_skipped);
    CHECK(s1.shuffle_records_written > 0);

    em_batch *b;
    CHECK_OK(em_collect(sums, &b));
    int ok = check_mod_sums(b, 20000, 100);
    em_batch_free(b);
    CHECK(ok);
    em_get_stats(c, &s2);
    CHECK_EQ_I64(s2.map_tasks_run, s1.map_tasks_run);        /* no map task again */
    CHECK_EQ_I64(s2.stages_skipped - s1.stages_skipped, 1);  /* the map stage */
    CHECK_EQ_I64(s2.stages_run - s1.stages_run, 1);          /* only the result stage */
    CHECK_EQ_I64(s2.tasks_run - s1.tasks_run, 4);
    CHECK_EQ_I64(s2.shuffle_records_written, s1.shuffle_records_written);

    /* A new RDD over the same shuffled one reuses it too. */
    CHECK_OK(em_count(em_filter(em_values(sums), fn_even_i64, NULL, 0), &n));
    em_stats s3;
    em_get_stats(c, &s3);
    CHECK_EQ_I64(s3.map_tasks_run, s1.map_tasks_run);
    CHECK_EQ_I64(s3.stages_skipped - s2.stages_skipped, 1);
    em_close(c);
}

static int swap_kv(const em_rec *in, em_emitter *out, const void *arg) {
    uint8_t k[8];
    em_i64_enc(em_i64_dec(in->val) % 7, k);
    return em_emit_pair(out, k, 8, in->key, in->klen);
}

TEST(sched_two_shuffles_stage_count) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t m = 50;
    em_rdd *first = em_reduce_by_key(em_map(em_range(c, 0, 5000, 1, 5), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                     NULL, 0, 3);
    em_rdd *second = em_group_by_key(em_map(first, swap_kv, NULL, 0), 2);
    em_stats s0, s1, s2;
    em_get_stats(c, &s0);
    int64_t n = 0;
    CHECK_OK(em_count(second, &n));
    CHECK(n >= 1 && n <= 7);
    em_get_stats(c, &s1);
    CHECK_EQ_I64(s1.jobs - s0.jobs, 1);
    CHECK_EQ_I64(s1.stages_run - s0.stages_run, 3);
    CHECK_EQ_I64(s1.map_tasks_run - s0.map_tasks_run, 5 + 3);
    CHECK_EQ_I64(s1.tasks_run - s0.tasks_run, 5 + 3 + 2);
    CHECK_EQ_I64(s1.stages_skipped, s0.stages_skipped);
    /* Grouped keys: every first-level key (0..49) appears once overall. */
    em_batch *b;
    CHECK_OK(em_collect(second, &b));
    size_t pos = 0;
    em_rec r;
    int64_t total = 0;
    while (em_batch_next(b, &pos, &r) == 1) {
        size_t lp = 0, il;
        const void *it;
        while (em_list_next(r.val, r.vlen, &lp, &it, &il) == 1) {
            int64_t k = em_i64_dec(it), want = 0;
            for (int64_t v = k; v < 5000; v += 50) want += v;
            CHECK_EQ_I64(want % 7, em_i64_dec(r.key));
            total++;
        }
    }
    em_batch_free(b);
    CHECK_EQ_I64(total, 50);
    em_get_stats(c, &s2);
    CHECK_EQ_I64(s2.stages_run - s1.stages_run, 1);
    CHECK_EQ_I64(s2.map_tasks_run, s1.map_tasks_run);
    CHECK(s2.stages_skipped > s1.stages_skipped);
    em_close(c);
}

/* Combiners (key, sum) as two int64s; merge_comb runs only on the reduce
 * side, and fails for key 7. */
static int comb_create(const em_rec *v, em_emitter *out, const void *arg) {
    uint8_t b[16];
    em_i64_enc(em_i64_dec(v->val) % 10, b);
    memcpy(b + 8, v->val, 8);
    return em_emit(out, b, 16);
}
static int comb_add(const em_rec *c, const em_rec *v, em_emitter *out, const void *arg) {
    uint8_t b[16];
    memcpy(b, c->val, 8);
    em_i64_enc(em_i64_dec((const uint8_t *)c->val + 8) + em_i64_dec(v->val), b + 8);
    return em_emit(out, b, 16);
}
static int comb_fail_on_7(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    int64_t k = em_i64_dec(a->val);
    if (k == 7) return em_fail("merge_comb refuses key %lld", (long long)k);
    uint8_t r[16];
    memcpy(r, a->val, 8);
    em_i64_enc(em_i64_dec((const uint8_t *)a->val + 8) + em_i64_dec((const uint8_t *)b->val + 8), r + 8);
    return em_emit(out, r, 16);
}

TEST(sched_reduce_side_failure_retried) {
    em_ctx *c = open_conf("ember.task.maxFailures", "3", NULL, NULL);
    CHECK(c);
    int64_t m = 10;
    em_rdd *pairs = em_map(em_range(c, 0, 1000, 1, 4), fn_mod_key, &m, sizeof m);
    em_rdd *bad = em_combine_by_key(pairs, comb_create, comb_add, comb_fail_on_7, NULL, 0, 3);
    em_stats s0, s1;
    em_get_stats(c, &s0);
    em_batch *b = (em_batch *)1;
    int rc = em_collect(bad, &b);
    CHECK_EQ_I64(rc, EM_EJOB);
    CHECK(b == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "merge_comb refuses key 7");
    CHECK_STR_CONTAINS(em_errmsg(), "failed 3 times");
    em_get_stats(c, &s1);
    /* the one reduce task holding key 7 failed maxFailures times; the map
     * tasks ran once each */
    CHECK_EQ_I64(s1.tasks_failed - s0.tasks_failed, 3);
    CHECK_EQ_I64(s1.map_tasks_run - s0.map_tasks_run, 4);

    /* The context stays usable, and the shuffle's map outputs are reused. */
    em_rdd *good = em_reduce_by_key(pairs, fn_sum_i64, NULL, 0, 3);
    CHECK_OK(em_collect(good, &b));
    int ok = expect_mod_sums(b, 1000, 10, "the sums after the failed job");
    em_batch_free(b);
    CHECK(ok);
    /* The failing RDD fails the same way again, without rerunning maps. */
    em_stats s2, s3;
    em_get_stats(c, &s2);
    CHECK_EQ_I64(em_count(bad, &(int64_t){0}), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "merge_comb refuses key 7");
    em_get_stats(c, &s3);
    CHECK_EQ_I64(s3.map_tasks_run, s2.map_tasks_run);
    CHECK_EQ_I64(s3.tasks_failed - s2.tasks_failed, 3);
    em_close(c);
}

/* A map-side user function failure is retried the same way. */
static int fail_on_500(const em_rec *in, em_emitter *out, const void *arg) {
    if (rec_i64(in) == 500) return em_fail("bad record %lld", (long long)rec_i64(in));
    return fn_mod_key(in, out, arg);
}

TEST(sched_map_side_failure_retried) {
    em_ctx *c = open_conf("ember.task.maxFailures", "2", NULL, NULL);
    CHECK(c);
    int64_t m = 10;
    em_rdd *r = em_reduce_by_key(em_map(em_range(c, 0, 1000, 1, 4), fail_on_500, &m, sizeof m), fn_sum_i64, NULL,
                                 0, 3);
    em_stats s0, s1;
    em_get_stats(c, &s0);
    CHECK_EQ_I64(em_count(r, &(int64_t){0}), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "bad record 500");
    em_get_stats(c, &s1);
    CHECK_EQ_I64(s1.tasks_failed - s0.tasks_failed, 2);
    CHECK(expect_range_job(c, 10, 2, "the next job"));
    em_close(c);
}

/* Shuffle data files of the context under test_tmpdir(): in the driver's
 * directory (local[N]) or in its executors' (local-cluster). */
static size_t shuffle_files(glob_t *g, const char *what) {
    char pat[512];
    memset(g, 0, sizeof *g);
    snprintf(pat, sizeof pat, "%s/ember-*/shuffle_*.%s", test_tmpdir(), what);
    glob(pat, 0, NULL, g);
    snprintf(pat, sizeof pat, "%s/ember-*/worker-*/app-*/*/local/shuffle_*.%s", test_tmpdir(), what);
    glob(pat, GLOB_APPEND, NULL, g);
    /* local-cluster with the shuffle service: the application's directory
     * the worker serves */
    snprintf(pat, sizeof pat, "%s/ember-*/worker-*/app-*/shuffle/shuffle_*.%s", test_tmpdir(), what);
    glob(pat, GLOB_APPEND, NULL, g);
    return g->gl_pathc;
}

static void fetch_failure_case(int nreduce, int *ok) {
    *ok = 0;
    em_ctx *c = open_conf("ember.local.dir", test_tmpdir(), "ember.shuffle.inMemoryOutput.maxBytes", "0");
    if (!c) return;
    int64_t m = 1000;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 40000, 1, 4), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                    NULL, 0, nreduce);
    int64_t n = 0;
    em_batch *b;
    glob_t g;
    em_stats s0, s1;
    if (em_count(sums, &n) || n != 1000) {
        fprintf(stderr, "  count: %lld %s\n", (long long)n, em_errmsg());
        goto out;
    }
    if (shuffle_files(&g, "data") != 4) {
        fprintf(stderr, "  expected 4 shuffle data files, found %zu\n", (size_t)g.gl_pathc);
        globfree(&g);
        goto out;
    }
    if (unlink(g.gl_pathv[1])) {
        perror("unlink");
        globfree(&g);
        goto out;
    }
    globfree(&g);
    em_get_stats(c, &s0);
    if (em_collect(sums, &b)) {
        fprintf(stderr, "  collect after losing a map output: %s\n", em_errmsg());
        goto out;
    }
    int good = expect_mod_sums(b, 40000, 1000, "the sums after losing a map output");
    em_batch_free(b);
    em_get_stats(c, &s1);
    if (!good) fprintf(stderr, "  wrong sums after recovery\n");
    else if (s1.map_tasks_run - s0.map_tasks_run != 1) /* the one whose file went, once */
        fprintf(stderr, "  %lld map tasks re-ran, expected 1\n", (long long)(s1.map_tasks_run - s0.map_tasks_run));
    else if (s1.tasks_failed - s0.tasks_failed < 1 || s1.tasks_failed - s0.tasks_failed > nreduce)
        /* Every reduce task reads that output: those running when the
         * first meets it may each fail once before the stage is resubmitted
         * (how many ran by then is the machine's), none twice. */
        fprintf(stderr, "  %lld reduce tasks failed, expected 1 to %d\n",
                (long long)(s1.tasks_failed - s0.tasks_failed), nreduce);
    else if (shuffle_files(&g, "data") != 4)
        fprintf(stderr, "  the lost map output was not rewritten\n");
    else
        *ok = 1;
    if (good) globfree(&g);
    /* The recovered outputs serve later actions without more map tasks. */
    em_stats s2;
    b = NULL;
    if (*ok && (em_collect(sums, &b) || !expect_mod_sums(b, 40000, 1000, "the sums from the recovered outputs")))
        *ok = 0;
    em_batch_free(b);
    em_get_stats(c, &s2);
    if (*ok && s2.map_tasks_run != s1.map_tasks_run) {
        fprintf(stderr, "  map tasks ran again after recovery\n");
        *ok = 0;
    }
out:
    em_close(c);
}

TEST(sched_fetch_failure_recovers) {
    int ok;
    fetch_failure_case(4, &ok);
    CHECK(ok);
}

/* More reduce tasks than ember.task.maxFailures all read the lost output:
 * one lost map output must not fail the job. */
TEST(sched_fetch_failure_many_reducers) {
    int ok;
    fetch_failure_case(16, &ok);
    CHECK(ok);
}

/* Remove the files (index and data) of shuffle 0's map outputs whose map
 * index is odd (odd_only) or all of them.  The number of outputs removed. */
static int remove_outputs(int odd_only) {
    glob_t g;
    int n = 0;
    shuffle_files(&g, "index");
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *base = strrchr(g.gl_pathv[i], '/') + 1;
        unsigned sh, map;
        unsigned long long att;
        if (sscanf(base, "shuffle_%u_%u_%llu.index", &sh, &map, &att) != 3 || sh != 0) continue;
        if (odd_only && map % 2 == 0) continue;
        char dpath[1024];
        snprintf(dpath, sizeof dpath, "%.*s.data", (int)(strlen(g.gl_pathv[i]) - 6), g.gl_pathv[i]);
        if (unlink(g.gl_pathv[i]) == 0 && unlink(dpath) == 0) n++;
    }
    globfree(&g);
    return n;
}

/* A shuffle's map output files deleted between two actions (a tmp cleaner,
 * a replaced disk): the reduce task that meets the first lost one checks
 * the other outputs of its executor and reports all that are lost, so one
 * failed stage attempt and one map stage attempt rerun exactly those, and
 * the good ones are kept (Spark's fileLost, checked).  On local-cluster,
 * whose executors share one host, ember.files.fetchFailure.
 * unRegisterOutputOnHost makes the check cover both executors' outputs. */
static void lost_outputs_case(int odd_only, int want_lost) {
    int cluster = !strncmp(test_master(), "local-cluster", 13);
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.local.dir", test_tmpdir()));
    CHECK_OK(em_conf_set(conf, "ember.shuffle.inMemoryOutput.maxBytes", "0"));
    if (cluster) CHECK_OK(em_conf_set(conf, "ember.files.fetchFailure.unRegisterOutputOnHost", "true"));
    em_ctx *c = em_open(test_master(), conf);
    em_conf_free(conf);
    CHECK(c);
    int64_t m = 1000, n = 0;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 40000, 1, 4), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                    NULL, 0, 3);
    CHECK_OK(em_count(sums, &n));
    CHECK_EQ_I64(n, 1000);
    CHECK_EQ_I64(remove_outputs(odd_only), want_lost);
    em_stats s0, s1;
    em_batch *b;
    em_get_stats(c, &s0);
    CHECK_OK(em_collect(sums, &b));
    em_get_stats(c, &s1);
    int exact = expect_mod_sums(b, 40000, 1000, "the sums after the outputs were deleted");
    em_batch_free(b);
    CHECK(exact);
    CHECK_EQ_I64(s1.stage_attempts_failed - s0.stage_attempts_failed, 1);
    CHECK_EQ_I64(s1.map_tasks_run - s0.map_tasks_run, want_lost);
    glob_t g;
    CHECK_EQ_I64(shuffle_files(&g, "index"), 4);
    globfree(&g);
    em_close(c);
}

TEST(sched_all_outputs_lost_one_stage_attempt) { lost_outputs_case(0, 4); }

TEST(sched_half_outputs_lost_only_those_rerun) { lost_outputs_case(1, 2); }

/* Every map output's index rewritten between two actions with other
 * plausible offsets and a fresh checksum (what used to give wrong sums with
 * rc 0): the reduce tasks see fetch failures, the map outputs are
 * recomputed, and the answer is exact. */
static int rewrite_offsets(const char *path) {
    uint8_t buf[4096];
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    int nparts;
    struct stat sb;
    char dpath[600];
    snprintf(dpath, sizeof dpath, "%.*s.data", (int)(strlen(path) - 6), path);
    if (stat(dpath, &sb) || shuffle_index_check(buf, n, (uint64_t)sb.st_size, path, &nparts) || nparts < 2) return -1;
    uint64_t offs[64];
    if (nparts > 63) return -1;
    for (int i = 0; i <= nparts; i++) offs[i] = shuffle_index_offset(buf, i);
    /* Move the first boundary that has room to the middle of its span. */
    for (int i = 1; i < nparts; i++)
        if (offs[i + 1] - offs[i - 1] > 2 && offs[i] != offs[i - 1] + (offs[i + 1] - offs[i - 1]) / 2) {
            offs[i] = offs[i - 1] + (offs[i + 1] - offs[i - 1]) / 2;
            break;
        }
    shuffle_index_encode(buf, nparts, offs);
    f = fopen(path, "wb");
    if (!f) return -1;
    fwrite(buf, 1, shuffle_index_size(nparts), f);
    return fclose(f);
}

TEST(sched_rewritten_index_recomputed) {
    em_ctx *c = open_conf("ember.local.dir", test_tmpdir(), "ember.shuffle.inMemoryOutput.maxBytes", "0");
    CHECK(c);
    int64_t m = 1000, n = 0;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 40000, 1, 4), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                    NULL, 0, 4);
    em_rdd *sorted = em_sort_by_key(sums, 1, 3);
    em_batch *b;
    CHECK_OK(em_count(sorted, &n));
    CHECK_EQ_I64(n, 1000);
    glob_t g;
    CHECK(shuffle_files(&g, "index") >= 4);
    for (size_t i = 0; i < g.gl_pathc; i++) CHECK(rewrite_offsets(g.gl_pathv[i]) == 0);
    globfree(&g);
    em_stats s0, s1;
    em_get_stats(c, &s0);
    CHECK_OK(em_collect(sorted, &b));
    em_get_stats(c, &s1);
    CHECK(expect_mod_sums(b, 40000, 1000, "the sorted sums after the rewritten indexes"));
    for (size_t i = 1; i < em_batch_count(b); i++) {
        em_rec x, y;
        CHECK_OK(em_batch_get(b, i - 1, &x));
        CHECK_OK(em_batch_get(b, i, &y));
        CHECK(em_i64_dec(x.key) < em_i64_dec(y.key));
    }
    em_batch_free(b);
    /* Every output of both shuffles is corrupt, so each is recomputed once:
     * 4 map attempts of each shuffle and the 3 results succeed, exactly.
     * The failed attempts vary with what runs at once (local[4], two
     * executors): each result or sort-map attempt running when its stage
     * meets the corruption fails on its fetch, at least one of each, and a
     * stage may meet it once per executor whose outputs it reads. */
    int64_t ran = s1.tasks_run - s0.tasks_run, failed = s1.tasks_failed - s0.tasks_failed,
            maps = s1.map_tasks_run - s0.map_tasks_run;
    CHECK_EQ_I64(ran - failed, 8 + 3);
    CHECK(failed >= 2);
    CHECK(maps >= 8 + 1);
    CHECK(s1.stage_attempts_failed - s0.stage_attempts_failed >= 2);
    em_close(c);
}

/* A long chain of narrow operators is one task plan: it must reach the
 * executor intact. */
static int add_one(const em_rec *in, em_emitter *out, const void *arg) { return em_emit_i64(out, rec_i64(in) + 1); }

TEST(sched_long_narrow_chain) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *r = em_range(c, 0, 1000, 1, 3);
    for (int i = 0; i < 60; i++) r = i % 10 == 9 ? em_filter(r, fn_even_i64, NULL, 0) : em_map(r, add_one, NULL, 0);
    /* maps add 9 between filters: each filter keeps the values of one parity */
    int64_t want_n = 0, want_sum = 0;
    for (int64_t v0 = 0; v0 < 1000; v0++) {
        int64_t v = v0;
        int keep = 1;
        for (int i = 0; i < 60 && keep; i++) {
            if (i % 10 == 9) keep = v % 2 == 0;
            else v++;
        }
        if (keep) {
            want_n++;
            want_sum += v;
        }
    }
    em_batch *b;
    CHECK_OK(em_collect(r, &b));
    CHECK_EQ_I64(em_batch_count(b), want_n);
    CHECK_EQ_I64(batch_sum_i64(b), want_sum);
    em_batch_free(b);
    em_close(c);
}
