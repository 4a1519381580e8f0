/*
 * test_speculation.c -- speculative execution (ember.speculation), with one
 * task held back by the fault injection (faults.h's hold, at a gate the
 * test never opens) until it is killed: its speculative copy runs and
 * wins, the original is killed, the results are exact, accumulators count
 * the partition once, save_as_text_file leaves one file per partition and
 * a map stage one output per map.  Two attempts reach the commit in the
 * order the test chooses (holdcommit).  Asserted by counts, never by time:
 * the held-back attempt never finishes by itself, so only a speculative
 * copy can end the job, and speculation starts only when every other task
 * of the stage has succeeded, so the held one is the only one copied.
 */
#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

/* local[4], speculation checked every 5 ms for attempts running over
 * 100 ms, once all tasks of the stage but one have succeeded (quantile
 * 0.99 of fewer than 100 tasks): the one held back is then the only task
 * running, so however slow the machine, it is the only one copied.
 * Faults as given, their gates in gates_dir().  open_spec_at sets another
 * quantile. */
static em_ctx *open_spec_at(const char *faults, const char *local_dir, const char *quantile) {
    const char *kv[][2] = {
        {"ember.speculation", "true"},
        {"ember.speculation.interval", "5ms"},
        {"ember.speculation.quantile", quantile},
        {"ember.speculation.minTaskRuntime", "100ms"},
        {"ember.test.faults", faults},
        {"ember.test.faults.dir", gates_dir()},
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

static em_ctx *open_spec(const char *faults, const char *local_dir) { return open_spec_at(faults, local_dir, "0.99"); }

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
    em_ctx *c = open_spec("hold:part=3,attempt=0,gate=never", NULL);
    CHECK(c);
    em_acc seen = em_acc_i64(c, "seen");
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_map(em_range(c, 0, 4000, 1, 4), fn_count_calls, &seen, sizeof seen), &b));
    int exact = expect_range(b, 4000, NULL, "the values the copy returned");
    em_batch_free(b);
    CHECK(exact);
    /* Partition 3 counted once: by the copy, not by the killed original. */
    CHECK_EQ_I64(em_acc_value_i64(c, seen), 4000);
    em_stats st;
    wait_no_tasks(c, &st); /* the original ends killed, after the action returned */
    CHECK(gate_was_held("never", 0, 3, 0));
    CHECK(!gate_was_held("never", 0, 3, 1)); /* the copy was not held */
    CHECK_EQ_I64(em_acc_value_i64(c, seen), 4000);
    CHECK_EQ_I64(st.faults_fired, 1); /* the original's hold; the copy is attempt 1 */
    CHECK_EQ_I64(st.tasks_speculative, 1);
    CHECK_EQ_I64(st.speculative_wins, 1);
    CHECK_EQ_I64(st.tasks_killed, 1);
    CHECK_EQ_I64(st.tasks_failed, 0);
    CHECK_EQ_I64(st.tasks_run, 5);
    em_close(c);
}

/* Whether dir/part-NNNNN holds exactly the lines first .. last. */
static int part_is_range(const char *dir, int part, int64_t first, int64_t last) {
    char path[600];
    snprintf(path, sizeof path, "%s/part-%05d", dir, part);
    size_t len = 0;
    char *text = read_file_all(path, &len);
    if (!text) return 0;
    size_t cap = (size_t)(last - first + 1) * 24 + 1, k = 0;
    char *w = malloc(cap);
    for (int64_t v = first; w && v <= last; v++) k += (size_t)snprintf(w + k, cap - k, "%lld\n", (long long)v);
    int ok = w && len == k && !memcmp(text, w, k);
    free(w);
    free(text);
    return ok;
}

static int fn_i64_text(const em_rec *in, em_emitter *out, const void *arg) {
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%lld", (long long)em_i64_dec(in->val));
    return em_emit(out, buf, (size_t)n);
}

TEST(spec_save_one_file_per_partition) {
    em_ctx *c = open_spec("hold:part=1,attempt=0,gate=never", NULL);
    CHECK(c);
    const char *dir = tmp_path("spec-out");
    CHECK_OK(em_save_as_text_file(em_map(em_range(c, 0, 400, 1, 4), fn_i64_text, NULL, 0), dir));
    em_stats st;
    wait_no_tasks(c, &st);
    CHECK(gate_was_held("never", 0, 1, 0));
    CHECK_EQ_I64(st.tasks_speculative, 1);
    CHECK_EQ_I64(st.speculative_wins, 1);
    CHECK_EQ_I64(st.tasks_killed, 1);
    CHECK_EQ_I64(st.commits_denied, 0); /* killed while held: it never asked */
    CHECK_EQ_I64(st.tasks_failed, 0);
    CHECK_EQ_I64(st.tasks_run, 5);
    CHECK_EQ_I64(st.faults_fired, 1); /* the original's hold */
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
    for (int i = 0; i < 4; i++) CHECK(part_is_range(dir, i, 100 * i, 100 * i + 99));
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
    /* One reduce partition: a stage of one task is never speculated, so
     * the held map is the only task copied. */
    em_ctx *c = open_spec("hold:stage=0,part=2,attempt=0,gate=never", test_tmpdir());
    CHECK(c);
    int64_t m = 10;
    em_batch *b = NULL;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 10000, 1, 4), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                    NULL, 0, 1);
    CHECK_OK(em_collect(sums, &b));
    int exact = expect_mod_sums(b, 10000, 10, "the sums with a speculated map");
    em_batch_free(b);
    CHECK(exact);
    em_stats st;
    wait_no_tasks(c, &st);
    CHECK(gate_was_held("never", 0, 2, 0));
    CHECK_EQ_I64(st.tasks_speculative, 1);
    CHECK_EQ_I64(st.faults_fired, 1); /* the original's hold */
    CHECK_EQ_I64(st.speculative_wins, 1);
    CHECK_EQ_I64(st.tasks_killed, 1);
    CHECK_EQ_I64(st.tasks_failed, 0);
    CHECK_EQ_I64(st.map_tasks_run, 5); /* 4 maps and the copy */
    CHECK_EQ_I64(st.tasks_run, 6);     /* and the reduce */
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
    CHECK(expect_range_job(c, 4000, 4, "the values without speculation"));
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.faults_fired, 1);
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
    /* Partition 2's first attempt writes its file, then waits at the gate
     * "late" before it asks to commit, deaf to the kill: its speculative
     * copy commits and the save returns while the original still waits.
     * Only then does the test let it ask: it is denied and deletes its
     * file. */
    em_ctx *c = open_spec("holdcommit:part=2,attempt=0,gate=late", NULL);
    CHECK(c);
    const char *dir = tmp_path("commit-out");
    CHECK_OK(em_save_as_text_file(em_map(em_range(c, 0, 400, 1, 4), fn_i64_text, NULL, 0), dir));
    em_stats st;
    CHECK(gate_wait_held("late", 0, 2, 0)); /* at its commit (it may still be writing) */
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.tasks_running, 1); /* the original, at the gate */
    CHECK_EQ_I64(st.tasks_speculative, 1);
    CHECK_EQ_I64(st.speculative_wins, 1);
    CHECK_EQ_I64(st.commits_denied, 0);
    CHECK(!gate_was_held("late", 0, 2, 1)); /* the copy committed without waiting */
    CHECK_OK(gate_release("late"));
    wait_no_tasks(c, &st);
    CHECK_EQ_I64(st.tasks_running, 0);
    CHECK_EQ_I64(st.tasks_speculative, 1);
    CHECK_EQ_I64(st.speculative_wins, 1);
    CHECK_EQ_I64(st.commits_denied, 1); /* counted as denied, not as killed */
    CHECK_EQ_I64(st.tasks_killed, 0);
    CHECK_EQ_I64(st.faults_fired, 1); /* the original's hold at its commit */
    CHECK_EQ_I64(st.tasks_failed, 0);
    CHECK_EQ_I64(st.tasks_run, 5);
    int parts, files;
    count_files(dir, &parts, &files);
    CHECK_EQ_I64(parts, 4);
    CHECK_EQ_I64(files, 5); /* and _SUCCESS: no attempt directory is left */
    for (int i = 0; i < 4; i++) CHECK(part_is_range(dir, i, 100 * i, 100 * i + 99));
    em_close(c);
}

typedef struct save_job {
    em_rdd *r;
    const char *dir;
    int rc;
    char msg[256];
} save_job;

static void *save_run(void *p) {
    save_job *j = p;
    j->rc = em_save_as_text_file(j->r, j->dir);
    snprintf(j->msg, sizeof j->msg, "%s", em_errmsg());
    return NULL;
}

static int64_t wins_or_denials(const em_stats *st) { return st->speculative_wins + st->commits_denied; }

/* The commit coordinator's rule while the stage runs: partition 2's first
 * attempt is authorized and held before it moves its file (holdmove), so
 * its task is not done; its speculative copy, held before it asks
 * (holdcommit), is let ask only then and is denied, its file deleted.
 * The original still runs, so speculation launches a second copy, held
 * before it starts until the original's commit ends it (killed).  Then
 * the original moves its file: one file per partition, exact contents,
 * and no speculative win. */
TEST(spec_loser_denied_while_the_winner_commits) {
    em_ctx *c = open_spec("holdmove:part=2,attempt=0,gate=move; holdcommit:part=2,attempt=1,gate=ask; "
                          "hold:part=2,attempt=2,gate=never",
                          NULL);
    CHECK(c);
    save_job j = {em_map(em_range(c, 0, 400, 1, 4), fn_i64_text, NULL, 0), tmp_path("denied-out"), 1, ""};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, save_run, &j) == 0);
    em_stats st;
    int ok = gate_wait_held("move", 0, 2, 0) && gate_wait_held("ask", 0, 2, 1);
    if (ok) ok = gate_release("ask") == 0;
    if (ok) ok = wait_stat(c, &st, wins_or_denials, 1, "the copy's ask to be answered");
    int denied = ok && st.commits_denied == 1 && st.speculative_wins == 0;
    if (!denied) fprintf(stderr, "  the copy was not denied: %lld denied, %lld wins\n", (long long)st.commits_denied,
                         (long long)st.speculative_wins);
    if (ok && denied) ok = gate_wait_held("never", 0, 2, 2); /* the second copy */
    gate_release("move");
    gate_release("ask");
    pthread_join(t, NULL);
    CHECK(ok);
    CHECK(denied);
    CHECK_OK(j.rc);
    wait_no_tasks(c, &st);
    CHECK_EQ_I64(st.tasks_running, 0);
    CHECK_EQ_I64(st.tasks_speculative, 2);
    CHECK_EQ_I64(st.speculative_wins, 0);
    CHECK_EQ_I64(st.commits_denied, 1);
    CHECK_EQ_I64(st.tasks_killed, 1); /* the second copy, held before it started */
    CHECK_EQ_I64(st.tasks_failed, 0);
    CHECK_EQ_I64(st.tasks_run, 6);
    CHECK_EQ_I64(st.faults_fired, 3); /* the three holds, each seen held */
    int parts, files;
    count_files(j.dir, &parts, &files);
    CHECK_EQ_I64(parts, 4);
    CHECK_EQ_I64(files, 5); /* and _SUCCESS */
    for (int i = 0; i < 4; i++) CHECK(part_is_range(j.dir, i, 100 * i, 100 * i + 99));
    glob_t g;
    char pat[600];
    snprintf(pat, sizeof pat, "%s.*", j.dir);
    CHECK_EQ_I64(glob(pat, 0, NULL, &g), GLOB_NOMATCH);
    em_close(c);
}

/* The argument of fn_text_held: partition 0's first attempt (the one that
 * creates `started`) waits until `release` exists (at most WAIT_MS, then
 * it fails), deaf to kills as a user function may be; its copy does not
 * wait. */
typedef struct held_arg {
    char started[400], release[400];
} held_arg;

static int fn_text_held(const em_rec *in, em_emitter *out, const void *arg) {
    const held_arg *h = arg;
    int64_t v = em_i64_dec(in->val);
    if (v == 0) {
        int fd = open(h->started, O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (fd >= 0) {
            close(fd);
            if (!wait_for(cond_file, (void *)h->release, WAIT_MS, "the test to release partition 0's original"))
                return em_fail("not released");
        }
    }
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%lld", (long long)v);
    return em_emit(out, buf, (size_t)n);
}

/* Names and contents of every file in dir, as one string (NULL: unreadable). */
static char *dir_snapshot(const char *dir) {
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) return NULL;
    size_t cap = 1, len = 0;
    char *out = calloc(1, 1);
    for (int i = 0; i < n; i++) {
        char path[1200];
        size_t flen = 0;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        char *text = names[i]->d_name[0] == '.' ? NULL : read_file_all(path, &flen);
        if (names[i]->d_name[0] != '.' && out) {
            size_t need = len + strlen(names[i]->d_name) + 2 + flen + 1;
            char *grown = need > cap ? realloc(out, cap = need * 2) : out;
            if (!grown) {
                free(out);
                out = NULL;
            } else {
                out = grown;
                len += (size_t)sprintf(out + len, "%s:", names[i]->d_name);
                if (flen) memcpy(out + len, text, flen);
                len += flen;
                out[len++] = '\n';
                out[len] = 0;
            }
        }
        free(text);
        free(names[i]);
    }
    free(names);
    return out;
}

/* Partition 0's first attempt is held in the user function; its copy wins.
 * The save returns while the original still runs (with every partition
 * committed, Spark's behaviour), and the original, once released, writes
 * nowhere visible: the published directory stays byte for byte as it was,
 * and nothing of the loser is left beside it. */
TEST(spec_save_returns_before_the_loser_ends) {
    em_ctx *c = open_spec("", NULL);
    CHECK(c);
    held_arg h;
    snprintf(h.started, sizeof h.started, "%s", tmp_path("held-started"));
    snprintf(h.release, sizeof h.release, "%s", tmp_path("held-release"));
    const char *dir = tmp_path("held-out");
    CHECK_OK(em_save_as_text_file(em_map(em_range(c, 0, 1000, 1, 10), fn_text_held, &h, sizeof h), dir));
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.tasks_running, 1); /* the held original */
    CHECK_EQ_I64(st.tasks_speculative, 1);
    CHECK_EQ_I64(st.speculative_wins, 1);
    int parts, files;
    count_files(dir, &parts, &files);
    CHECK_EQ_I64(parts, 10);
    CHECK_EQ_I64(files, 11); /* and _SUCCESS */
    for (int p = 0; p < 10; p++) CHECK(part_is_range(dir, p, p * 100, p * 100 + 99));
    char *before = dir_snapshot(dir);
    CHECK(before);
    CHECK(write_file(h.release, "", 0) == 0);
    wait_no_tasks(c, &st);
    CHECK_EQ_I64(st.tasks_running, 0);
    /* The original's end: its user function returns, and it asks to
     * commit (the kill is looked at every 1,024 records, and it has 100):
     * denied, which counts it as denied rather than killed. */
    CHECK_EQ_I64(st.commits_denied, 1);
    CHECK_EQ_I64(st.tasks_killed, 0);
    CHECK_EQ_I64(st.tasks_failed, 0);
    CHECK_EQ_I64(st.tasks_run, 11);
    char *after = dir_snapshot(dir);
    CHECK(after && !strcmp(before, after));
    free(before);
    free(after);
    /* Nothing beside it: no temporary directory, no attempts' area. */
    glob_t g;
    char pat[600];
    snprintf(pat, sizeof pat, "%s.*", dir);
    CHECK_EQ_I64(glob(pat, 0, NULL, &g), GLOB_NOMATCH);
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
    CHECK_EQ_I64(st.faults_fired, 1);
    CHECK_EQ_I64(st.tasks_failed, 1);
    CHECK_EQ_I64(st.commits_denied, 0);
    int parts, files;
    count_files(dir, &parts, &files);
    CHECK_EQ_I64(parts, 2);
    CHECK_EQ_I64(files, 3);
    CHECK(part_is_range(dir, 0, 0, 19));
    CHECK(part_is_range(dir, 1, 20, 39)); /* the retry's */
    em_close(c);
}

/* ---------------------------------------------- across executor processes */

/* The argument of fn_stop_once: where to write the pid, and an accumulator. */
typedef struct stop_arg {
    em_acc seen;
    char marker[400];
} stop_arg;

/* Counts its records in seen and emits each as text; the first call to see
 * record 0 writes its executor's pid to the marker and, with stop, stops
 * that executor (SIGSTOP). */
static int pid_once(const em_rec *in, em_emitter *out, const stop_arg *a, int stop) {
    int64_t v = rec_i64(in);
    if (v == 0) {
        int fd = open(a->marker, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd >= 0) {
            char s[32];
            int n = snprintf(s, sizeof s, "%d\n", (int)getpid());
            if (write(fd, s, (size_t)n) != n) return em_fail("cannot write the pid");
            close(fd);
            if (stop) raise(SIGSTOP);
        }
    }
    em_acc_add_i64(a->seen, 1);
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%lld", (long long)v);
    return em_emit(out, buf, (size_t)n);
}

static int fn_stop_once(const em_rec *in, em_emitter *out, const void *arg) { return pid_once(in, out, arg, 1); }
static int fn_pid_once(const em_rec *in, em_emitter *out, const void *arg) { return pid_once(in, out, arg, 0); }

/* local-cluster[2,1] with speculation once half the tasks are done;
 * timeout is ember.network.timeout (heartbeats every 100 ms); faults, when
 * not NULL, is ember.test.faults (with gates_dir() its directory).  One
 * core per executor: with one executor's task stopped or held, the other's
 * running task has no free core to be copied to, so the stopped or held
 * one's is the only copy. */
static em_ctx *open_spec_cluster_faults(const char *timeout, const char *faults) {
    const char *kv[][2] = {
        {"ember.speculation", "true"},
        {"ember.speculation.interval", "10ms"},
        {"ember.speculation.quantile", "0.5"},
        {"ember.speculation.minTaskRuntime", "100ms"},
        {"ember.network.timeout", timeout},
        {"ember.executor.heartbeatInterval", "100ms"},
        {"ember.progress", "false"},
    };
    em_conf *conf = em_conf_new();
    em_ctx *c = NULL;
    int ok = conf != NULL;
    for (size_t i = 0; ok && i < sizeof kv / sizeof kv[0]; i++) ok = em_conf_set(conf, kv[i][0], kv[i][1]) == 0;
    if (ok && faults)
        ok = em_conf_set(conf, "ember.test.faults", faults) == 0 &&
             em_conf_set(conf, "ember.test.faults.dir", gates_dir()) == 0;
    if (ok) c = em_open("local-cluster[2,1,512]", conf);
    if (!c) fprintf(stderr, "  em_open: %s\n", em_errmsg());
    em_conf_free(conf);
    return c;
}

static em_ctx *open_spec_cluster(const char *timeout) { return open_spec_cluster_faults(timeout, NULL); }

static int read_pid(const char *path) {
    int pid = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%d", &pid) != 1) pid = 0;
        fclose(f);
    }
    return pid;
}

/* Whether the process whose pid arg points to is gone (or a zombie). */
static int pid_gone(void *arg) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", *(int *)arg);
    FILE *f = fopen(path, "r");
    if (!f) return 1;
    char buf[512];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *rp = strrchr(buf, ')');
    return rp && (rp[2] == 'Z' || rp[2] == 'X');
}

/* Whether process pid is gone (or a zombie), waiting at most WAIT_MS. */
static int gone_within(int pid) {
    return wait_for(pid_gone, &pid, WAIT_MS, "the stopped executor to be killed by its worker");
}

/* One executor process of local-cluster[2,1] stopped (SIGSTOP) in the
 * middle of partition 0 of a collect, speculation on (and a network timeout
 * far away, so only a copy can end the job): the copy runs on the other
 * executor and wins; results and the accumulator are exact.  Then the
 * stopped executor is resumed (SIGCONT): its attempt, killed or finishing
 * late, publishes nothing (the accumulator is unchanged), and the
 * executor runs the next job's tasks. */
TEST(spec_cluster_stopped_executor_copy_wins) {
    em_ctx *c = open_spec_cluster("120s");
    CHECK(c);
    stop_arg a;
    a.seen = em_acc_i64(c, "seen");
    snprintf(a.marker, sizeof a.marker, "%s", tmp_path("stopped.pid"));
    em_stats s0, s1, s2;
    em_get_stats(c, &s0);
    em_batch *b = NULL;
    int rc = em_collect(em_map(em_range(c, 0, 800, 1, 8), fn_stop_once, &a, sizeof a), &b);
    int pid = read_pid(a.marker);
    if (rc && pid > 0) kill(pid, SIGCONT); /* let em_close stop it */
    CHECK_OK(rc);
    CHECK(pid > 0);
    em_get_stats(c, &s1);
    int exact = expect_multiset_take(b, want_range_text(800), "the lines the copy returned");
    em_batch_free(b);
    CHECK(exact);
    CHECK_EQ_I64(em_acc_value_i64(c, a.seen), 800);
    CHECK_EQ_I64(s1.tasks_speculative - s0.tasks_speculative, 1);
    CHECK_EQ_I64(s1.speculative_wins - s0.speculative_wins, 1);
    CHECK_EQ_I64(s1.tasks_failed - s0.tasks_failed, 0);
    CHECK_OK(kill(pid, SIGCONT));
    wait_no_tasks(c, &s2);
    CHECK_EQ_I64(s2.tasks_running, 0);
    CHECK_EQ_I64(em_acc_value_i64(c, a.seen), 800); /* the late attempt counted nothing */
    CHECK_EQ_I64(s2.speculative_wins - s0.speculative_wins, 1);
    CHECK_EQ_I64(s2.tasks_failed - s0.tasks_failed, 0);
    /* Both executors run the next job (8 tasks of one core each). */
    CHECK(expect_range_job(c, 1000, 8, "the next job"));
    em_close(c);
}

/* The same during save_as_text_file, with the original held instead of
 * stopped: partition 0's first attempt, its file written, waits (deaf to
 * kills) before it asks to commit, so the copy wins and commits; the
 * action returns once every partition has committed, while the held
 * attempt still runs.  Only then is its executor stopped (SIGSTOP): it
 * misses its heartbeats for ember.network.timeout and is declared lost and
 * killed by its worker; the directory stays as it was published.  One file
 * per partition, exact contents, the accumulator counts each record once,
 * and the next job runs. */
TEST(spec_cluster_stopped_executor_save_one_file_per_partition) {
    em_ctx *c = open_spec_cluster_faults("2s", "holdcommit:part=0,attempt=0,gate=never");
    CHECK(c);
    stop_arg a;
    a.seen = em_acc_i64(c, "seen");
    snprintf(a.marker, sizeof a.marker, "%s", tmp_path("stopped-save.pid"));
    const char *dir = tmp_path("spec-cluster-out");
    em_stats s0, s1;
    em_get_stats(c, &s0);
    int rc = em_save_as_text_file(em_map(em_range(c, 0, 800, 1, 8), fn_pid_once, &a, sizeof a), dir);
    int pid = read_pid(a.marker);
    CHECK_OK(rc);
    CHECK(pid > 0);
    em_get_stats(c, &s1);
    CHECK(gate_was_held("never", 0, 0, 0));
    CHECK(!gate_was_held("never", 0, 0, 1));
    /* Each record once, from the copy: the held original's additions
     * would come with its result, which never comes. */
    CHECK_EQ_I64(em_acc_value_i64(c, a.seen), 800);
    CHECK_EQ_I64(s1.tasks_speculative - s0.tasks_speculative, 1);
    CHECK_EQ_I64(s1.speculative_wins - s0.speculative_wins, 1);
    CHECK_EQ_I64(s1.tasks_running, 1); /* the held original */
    int parts, files;
    count_files(dir, &parts, &files);
    CHECK_EQ_I64(parts, 8);
    CHECK_EQ_I64(files, 9); /* and _SUCCESS */
    for (int i = 0; i < 8; i++) CHECK(part_is_range(dir, i, 100 * i, 100 * i + 99));
    CHECK_OK(kill(pid, SIGSTOP));
    char *before = dir_snapshot(dir);
    /* The stopped process was killed by its worker. */
    int gone = gone_within(pid);
    if (!gone) kill(pid, SIGKILL); /* leave nothing behind, then fail */
    CHECK(gone);
    wait_no_tasks(c, &s1);
    CHECK_EQ_I64(s1.tasks_running, 0);
    char *after = dir_snapshot(dir);
    CHECK(before && after && !strcmp(before, after));
    free(before);
    free(after);
    glob_t g;
    char pat[600];
    snprintf(pat, sizeof pat, "%s.*", dir);
    CHECK_EQ_I64(glob(pat, 0, NULL, &g), GLOB_NOMATCH);
    CHECK(expect_range_job(c, 1000, 8, "the next job"));
    em_close(c);
}

/* local-cluster[2,1] with speculation at quantile and partition 0's first
 * attempt held at the gate "never"; task_queue, when not NULL, is
 * ember.executor.taskQueue. */
static em_ctx *open_held_cluster(const char *quantile, const char *task_queue) {
    const char *kv[][2] = {
        {"ember.speculation", "true"},
        {"ember.speculation.interval", "10ms"},
        {"ember.speculation.quantile", quantile},
        {"ember.speculation.minTaskRuntime", "100ms"},
        {"ember.test.faults", "hold:part=0,attempt=0,gate=never"},
        {"ember.test.faults.dir", gates_dir()},
        {"ember.progress", "false"},
    };
    em_conf *conf = em_conf_new();
    if (!conf) return NULL;
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) test_conf_set(conf, kv[i][0], kv[i][1]);
    if (task_queue) test_conf_set(conf, "ember.executor.taskQueue", task_queue);
    em_ctx *c = em_open("local-cluster[2,1,512]", conf);
    em_conf_free(conf);
    return c;
}

/* local-cluster[2,1]: partition 0's first attempt is held, in its
 * executor's process, at a gate never opened.  Once the other seven tasks
 * have succeeded its copy runs on the other executor and wins; the kill
 * reaches the held attempt in its process, which ends as killed.  Exact
 * result, accumulator, copies, wins and kills. */
TEST(spec_cluster_held_original_killed_in_its_executor) {
    em_ctx *c = open_held_cluster("0.99", NULL);
    CHECK(c);
    em_acc seen = em_acc_i64(c, "seen");
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_map(em_range(c, 0, 800, 1, 8), fn_count_calls, &seen, sizeof seen), &b));
    CHECK_EQ_I64(em_batch_count(b), 800);
    CHECK_EQ_I64(batch_sum_i64(b), 799 * 800 / 2);
    em_batch_free(b);
    em_stats st;
    wait_no_tasks(c, &st);
    CHECK(gate_was_held("never", 0, 0, 0));
    CHECK(!gate_was_held("never", 0, 0, 1));
    CHECK_EQ_I64(st.tasks_running, 0);
    CHECK_EQ_I64(st.tasks_speculative, 1);
    CHECK_EQ_I64(st.speculative_wins, 1);
    CHECK_EQ_I64(st.tasks_killed, 1);
    CHECK_EQ_I64(st.tasks_failed, 0);
    CHECK_EQ_I64(st.tasks_run, 9);
    CHECK_EQ_I64(st.faults_fired, 1); /* the hold, counted from its executor's result */
    CHECK_EQ_I64(em_acc_value_i64(c, seen), 800);
    em_close(c);
}

/* local-cluster[2,1] with ember.executor.taskQueue 1: each executor holds
 * one attempt queued behind the one it runs.  Partition 0's first attempt
 * is held at a gate never opened, so the attempt queued behind it on its
 * executor waits as long, yet it has not started: it gets no copy.  Only
 * partition 0 is copied; its copy wins on the other executor, the kill
 * frees the held executor's thread, and the queued attempt runs there.
 * Had the queued attempt counted as running since its launch, it would
 * have been copied too (two copies). */
TEST(spec_cluster_queued_attempt_not_copied) {
    em_ctx *c = open_held_cluster("0.5", "1");
    CHECK(c);
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_map(em_range(c, 0, 800, 1, 8), fn_identity, NULL, 0), &b));
    CHECK_EQ_I64(em_batch_count(b), 800);
    CHECK_EQ_I64(batch_sum_i64(b), 799 * 800 / 2);
    em_batch_free(b);
    em_stats st;
    wait_no_tasks(c, &st);
    CHECK(gate_was_held("never", 0, 0, 0));
    CHECK_EQ_I64(st.tasks_speculative, 1);
    CHECK_EQ_I64(st.speculative_wins, 1);
    CHECK_EQ_I64(st.tasks_killed, 1);
    CHECK_EQ_I64(st.tasks_failed, 0);
    CHECK_EQ_I64(st.tasks_run, 9);
    em_close(c);
}

typedef struct late_job {
    em_ctx *c;
    em_batch *b;
    int rc;
} late_job;

static void *late_collect(void *p) {
    late_job *j = p;
    j->rc = em_collect(em_map(em_range(j->c, 0, 4, 1, 4), fn_identity, NULL, 0), &j->b);
    return NULL;
}

static int64_t get_wins(const em_stats *st) { return st->speculative_wins; }
static int64_t get_run(const em_stats *st) { return st->tasks_run; }
static int64_t get_specs(const em_stats *st) { return st->tasks_speculative; }

/* A killed loser whose success arrives while its job still runs is not
 * handed on: the result holds its partition once.  Partition 3's original
 * is held after its work and its last kill check (holdend), so it is
 * killed when its copy wins and yet reports success, when the test
 * releases it.  The quantile 0.5 copies partitions 2 and 3 once 0 and 1
 * succeeded; every attempt of partition 2 waits at another gate, which
 * keeps the job running until the test has seen 3's loser report. */
TEST(spec_killed_loser_late_success_dropped) {
    em_ctx *c = open_spec_at("holdend:part=3,attempt=0,gate=late; hold:part=2,gate=two", NULL, "0.5");
    CHECK(c);
    late_job j = {c, NULL, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, late_collect, &j) == 0);
    em_stats st;
    int ok = gate_wait_held("late", 0, 3, 0) && wait_stat(c, &st, get_specs, 2, "copies of partitions 2 and 3") &&
             wait_stat(c, &st, get_wins, 1, "partition 3's copy to win");
    int64_t run = st.tasks_run; /* 0, 1 and 3's copy */
    ok = ok && !gate_release("late") && wait_stat(c, &st, get_run, run + 1, "partition 3's killed original to report");
    gate_release("two");
    pthread_join(t, NULL);
    CHECK(ok);
    CHECK_EQ_I64(run, 3);
    CHECK_OK(j.rc);
    int exact = expect_range(j.b, 4, NULL, "the result after a late success of a killed loser");
    em_batch_free(j.b);
    CHECK(exact);
    wait_no_tasks(c, &st);
    CHECK_EQ_I64(st.tasks_speculative, 2);
    /* 3's copy; and 2's copy when it ended before its original. */
    CHECK(st.speculative_wins >= 1 && st.speculative_wins <= 2);
    CHECK_EQ_I64(st.faults_fired, 3); /* 3's original at its end; both attempts of 2 */
    CHECK_EQ_I64(st.tasks_run, 6);
    CHECK_EQ_I64(st.tasks_failed, 0);
    em_close(c);
}
