/*
 * test_speculation.c -- speculative execution (ember.speculation), with one
 * task held back by the fault injection until it is killed: its
 * speculative copy runs and wins, the original is killed, the results are
 * exact, accumulators count the partition once, save_as_text_file leaves
 * one file per partition and a map stage one output per map.  Asserted by
 * counts, never by time: the held-back attempt never finishes by itself,
 * so only a speculative copy can end the job.
 */
#include <dirent.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

/* local[4], speculation checked every 5 ms, once half the tasks are done,
 * for attempts running over 100 ms; faults as given. */
static em_ctx *open_spec(const char *faults, const char *local_dir) {
    const char *kv[][2] = {
        {"ember.speculation", "true"},
        {"ember.speculation.interval", "5ms"},
        {"ember.speculation.quantile", "0.5"},
        {"ember.speculation.minTaskRuntime", "100ms"},
        {"ember.test.faults", faults},
        {"ember.progress", "false"},
        {"ember.local.dir", local_dir ? local_dir : "/tmp"},
        /* map outputs as files, which some of these tests count */
        {"ember.shuffle.inMemoryOutput.maxBytes", "0"},
    };
    em_conf *conf = em_conf_new();
    em_ctx *c = NULL;
    int ok = conf != NULL;
    for (size_t i = 0; ok && i < sizeof kv / sizeof kv[0]; i++) ok = em_conf_set(conf, kv[i][0], kv[i][1]) == 0;
    if (ok) c = em_open("local[4]", conf);
    if (!c) fprintf(stderr, "  em_open: %s\n", em_errmsg());
    em_conf_free(conf);
    return c;
}

TEST(spec_settings_checked) {
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.speculation.multiplier", "1.5"));
    CHECK_OK(em_conf_set(conf, "ember.speculation.quantile", "0.75"));
    CHECK_EQ_I64(em_conf_set(conf, "ember.speculation.quantile", "1.5"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.speculation.quantile: \"1.5\" is outside [0, 1]");
    CHECK_EQ_I64(em_conf_set(conf, "ember.speculation.multiplier", "fast"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "is not a number");
    CHECK_EQ_I64(em_conf_set(conf, "ember.speculation.multiplier", "nan"), EM_EINVAL);
    CHECK_EQ_I64(em_conf_set(conf, "ember.speculation", "yes"), EM_EINVAL);
    CHECK_OK(em_conf_set(conf, "ember.speculation.interval", "1s"));
    em_conf_free(conf);
}

TEST(spec_copy_wins_result_stage) {
    em_ctx *c = open_spec("delay:part=3,attempt=0", NULL);
    CHECK(c);
    em_acc seen = em_acc_i64(c, "seen");
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_map(em_range(c, 0, 4000, 1, 4), fn_count_calls, &seen, sizeof seen), &b));
    CHECK_EQ_I64(em_batch_count(b), 4000);
    CHECK_EQ_I64(batch_sum_i64(b), 3999 * 4000 / 2);
    em_batch_free(b);
    /* Partition 3 counted once: by the copy, not by the killed original. */
    CHECK_EQ_I64(em_acc_value_i64(c, seen), 4000);
    em_stats st;
    wait_no_tasks(c, &st); /* the original ends killed, after the action returned */
    CHECK_EQ_I64(em_acc_value_i64(c, seen), 4000);
    CHECK_EQ_I64(st.tasks_speculative, 1);
    CHECK_EQ_I64(st.speculative_wins, 1);
    CHECK_EQ_I64(st.tasks_killed, 1);
    CHECK_EQ_I64(st.tasks_failed, 0);
    CHECK_EQ_I64(st.tasks_run, 5);
    em_close(c);
}

static int fn_i64_text(const em_rec *in, em_emitter *out, const void *arg) {
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%lld", (long long)em_i64_dec(in->val));
    return em_emit(out, buf, (size_t)n);
}

TEST(spec_save_one_file_per_partition) {
    em_ctx *c = open_spec("delay:part=1,attempt=0", NULL);
    CHECK(c);
    const char *dir = tmp_path("spec-out");
    CHECK_OK(em_save_as_text_file(em_map(em_range(c, 0, 400, 1, 4), fn_i64_text, NULL, 0), dir));
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.speculative_wins, 1);
    /* part-00000..part-00003 and _SUCCESS, nothing else. */
    DIR *d = opendir(dir);
    CHECK(d);
    int files = 0, parts = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        files++;
        parts += !strncmp(e->d_name, "part-0000", 9);
    }
    closedir(d);
    CHECK_EQ_I64(files, 5);
    CHECK_EQ_I64(parts, 4);
    char path[600];
    snprintf(path, sizeof path, "%s/part-00001", dir);
    size_t len = 0;
    char *text = read_file_all(path, &len);
    CHECK(text);
    CHECK(!strncmp(text, "100\n101\n", 8) && strstr(text, "199\n") && !strstr(text, "200"));
    free(text);
    em_close(c);
}

static size_t data_files(void) {
    char pat[512];
    glob_t g;
    snprintf(pat, sizeof pat, "%s/ember-*/shuffle_0_*.data", test_tmpdir());
    memset(&g, 0, sizeof g);
    if (glob(pat, 0, NULL, &g)) return 0;
    size_t n = g.gl_pathc;
    globfree(&g);
    return n;
}

TEST(spec_map_stage_one_output_per_map) {
    em_ctx *c = open_spec("delay:stage=0,part=2,attempt=0", test_tmpdir());
    CHECK(c);
    int64_t m = 10;
    em_batch *b = NULL;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 10000, 1, 4), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                    NULL, 0, 2);
    CHECK_OK(em_collect(sums, &b));
    CHECK(check_mod_sums(b, 10000, 10));
    em_batch_free(b);
    em_stats st;
    wait_no_tasks(c, &st);
    CHECK_EQ_I64(st.speculative_wins, 1);
    CHECK_EQ_I64(st.tasks_killed, 1);
    CHECK_EQ_I64(data_files(), 4); /* the killed original's output is not among them */
    em_close(c);
}

TEST(spec_off_by_default) {
    /* A task held back 30 ms on local[4] without speculation: no copy. */
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.test.faults", "delay:part=3,attempt=0,ms=30"));
    em_ctx *c = em_open("local[4]", conf);
    em_conf_free(conf);
    CHECK(c);
    int64_t n = 0;
    CHECK_OK(em_count(em_range(c, 0, 4000, 1, 4), &n));
    CHECK_EQ_I64(n, 4000);
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.tasks_speculative, 0);
    CHECK_EQ_I64(st.tasks_run, 4);
    em_close(c);
}

/* ------------------------------------------------------ output commits */

/* Files in dir (no dot files): parts and others. */
static void count_files(const char *dir, int *parts, int *files) {
    *parts = *files = 0;
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        (*files)++;
        *parts += !strncmp(e->d_name, "part-0000", 9);
    }
    closedir(d);
}

TEST(spec_two_attempts_reach_commit) {
    /* Partition 2's first attempt writes its file, then sleeps 400 ms before
     * asking to commit, deaf to the kill: its speculative copy commits
     * first, so the original, asking late, is denied and deletes its file. */
    em_ctx *c = open_spec("delaycommit:part=2,attempt=0,ms=400", NULL);
    CHECK(c);
    const char *dir = tmp_path("commit-out");
    CHECK_OK(em_save_as_text_file(em_map(em_range(c, 0, 400, 1, 4), fn_i64_text, NULL, 0), dir));
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.speculative_wins, 1);
    CHECK_EQ_I64(st.commits_denied, 1);
    CHECK_EQ_I64(st.tasks_failed, 0);
    int parts, files;
    count_files(dir, &parts, &files);
    CHECK_EQ_I64(parts, 4);
    CHECK_EQ_I64(files, 5); /* and _SUCCESS: no attempt directory is left */
    char path[600];
    snprintf(path, sizeof path, "%s/part-00002", dir);
    size_t len = 0;
    char *text = read_file_all(path, &len);
    CHECK(text);
    CHECK(!strncmp(text, "200\n", 4) && strstr(text, "299\n") && !strstr(text, "300"));
    free(text);
    em_close(c);
}

TEST(spec_failed_commit_released) {
    /* Partition 1's first attempt is authorized and then fails: the
     * authorization is released and the retry commits. */
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.test.faults", "commit:part=1,attempt=0"));
    em_ctx *c = em_open("local[2]", conf);
    em_conf_free(conf);
    CHECK(c);
    const char *dir = tmp_path("commit-retry");
    CHECK_OK(em_save_as_text_file(em_map(em_range(c, 0, 40, 1, 2), fn_i64_text, NULL, 0), dir));
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.tasks_failed, 1);
    CHECK_EQ_I64(st.commits_denied, 0);
    int parts, files;
    count_files(dir, &parts, &files);
    CHECK_EQ_I64(parts, 2);
    CHECK_EQ_I64(files, 3);
    em_close(c);
}
