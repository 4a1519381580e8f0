/*
 * test_observe.c -- an application as a user sees it from outside: the
 * driver's /api/v1, its event log, and the history server reading that
 * log, each checked against em_get_stats of the same jobs and against the
 * jobs' known shape, on test_master() (local[N], and local-cluster in the
 * suite's second pass).
 *
 * The application runs four jobs: a word count whose first map output is
 * corrupted once (a fetch failure: one failed stage attempt, the map task
 * run again), a job whose partition 3 is held back until its speculative
 * copy wins (the original killed), a job whose task fails every attempt,
 * and the word count's result again (its map stage skipped).  A secret is
 * set, so the environment must redact it.  On local-cluster, an executor
 * killed mid-job is shown removed, and its attempt lost with it.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "appevent.h"
#include "ember.h"
#include "eventlog_reader.h"
#include "helpers.h"
#include "json.h"
#include "prom.h"
#include "roles.h"

#define SECRET "observe-secret-value"

static int fail_on_7(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    if (rec_i64(in) == 7) return em_fail("record 7 is refused by the test's map function");
    return em_emit(out, in->val, in->vlen);
}

static int same(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    return em_emit(out, in->val, in->vlen);
}

static em_ctx *open_obs(const char *evdir) {
    const char *kv[][2] = {
        {"ember.app.name", "observe"},
        {"ember.eventLog.enabled", "true"},
        {"ember.eventLog.dir", evdir},
        {"ember.authenticate.secret", SECRET},
        {"ember.speculation", "true"},
        {"ember.speculation.interval", "5ms"},
        {"ember.speculation.quantile", "0.5"},
        {"ember.speculation.minTaskRuntime", "100ms"},
        /* stage 0 is the word count's map stage: its map 0 is corrupt once */
        {"ember.test.faults", "corrupt:stage=0,part=0,attempt=0; delay:stage=2,part=3,attempt=0"},
        {"ember.shuffle.inMemoryOutput.maxBytes", "0"},
        {"ember.progress", "false"},
        {"ember.ui.prometheus.enabled", "true"},
    };
    em_conf *conf = em_conf_new();
    int ok = conf != NULL;
    for (size_t i = 0; ok && i < sizeof kv / sizeof kv[0]; i++) ok = em_conf_set(conf, kv[i][0], kv[i][1]) == 0;
    em_ctx *c = ok ? em_open(test_master(), conf) : NULL;
    if (!c) fprintf(stderr, "  em_open: %s\n", em_errmsg());
    em_conf_free(conf);
    return c;
}

/* The UI's port, from em_ui_url. */
static int ui_port_of(em_ctx *c) {
    const char *u = em_ui_url(c), *colon = u ? strrchr(u, ':') : NULL;
    return colon ? atoi(colon + 1) : -1;
}

/* GET /api/v1/applications/<app><rest> into d; 0 or -1. */
static int api(int port, const char *app, const char *rest, json_doc *d) {
    char t[512];
    snprintf(t, sizeof t, "/api/v1/applications/%s%s", app, rest);
    return http_get_json(port, t, d);
}

static int64_t count(const json_doc *d, const json_node *arr) {
    int64_t n = 0;
    for (const json_node *x = json_first(d, arr); x; x = json_next(d, x)) n++;
    return n;
}

static int lines_of(const char *path) {
    size_t len = 0;
    char *s = read_file_all(path, &len);
    int n = 0;
    for (size_t i = 0; s && i < len; i++) n += s[i] == '\n';
    free(s);
    return n;
}

/* The path of the one event log in dir into out: 0, or -1 when there is
 * none. */
static int log_in(const char *dir, char *out, size_t cap) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    out[0] = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') snprintf(out, cap, "%s/%s", dir, e->d_name);
    closedir(d);
    return out[0] ? 0 : -1;
}

/* What the REST API shows of the application, summed. */
typedef struct seen {
    int64_t jobs, jobs_failed, jobs_running, stages, tasks_done, tasks_failed, tasks_killed, speculative;
    int64_t sw_bytes, sw_records, sr_records, failed_stage_attempts, skipped_stages;
    int64_t in_records_map0, in_bytes_map0;
    int refused_msgs, fetch_failed_msgs;
} seen;

/* Read jobs, stages and every stage attempt's task list from the API. */
static int read_api(int port, const char *app, seen *s) {
    json_doc d = JSON_DOC_INIT, t = JSON_DOC_INIT;
    memset(s, 0, sizeof *s);
    int rc = -1;
    if (api(port, app, "/jobs", &d)) goto out;
    for (const json_node *j = json_first(&d, json_root(&d)); j; j = json_next(&d, j)) {
        s->jobs++;
        if (!strcmp(jstr(&d, j, "status"), "FAILED")) s->jobs_failed++;
        if (!strcmp(jstr(&d, j, "status"), "RUNNING")) s->jobs_running++;
        s->skipped_stages += jint(&d, j, "numSkippedStages");
    }
    if (api(port, app, "/stages", &d)) goto out;
    for (const json_node *x = json_first(&d, json_root(&d)); x; x = json_next(&d, x)) {
        s->stages++;
        s->tasks_done += jint(&d, x, "numCompleteTasks");
        s->tasks_failed += jint(&d, x, "numFailedTasks");
        s->tasks_killed += jint(&d, x, "numKilledTasks");
        s->sw_bytes += jint(&d, x, "shuffleWriteBytes");
        s->sw_records += jint(&d, x, "shuffleWriteRecords");
        s->sr_records += jint(&d, x, "shuffleReadRecords");
        if (!strcmp(jstr(&d, x, "status"), "FAILED")) {
            s->failed_stage_attempts++;
            if (strstr(jstr(&d, x, "failureReason"), "FetchFailed")) s->fetch_failed_msgs++;
        }
        int64_t id = jint(&d, x, "stageId"), att = jint(&d, x, "attemptId");
        if (id == 0 && att == 0) {
            s->in_records_map0 = jint(&d, x, "inputRecords");
            s->in_bytes_map0 = jint(&d, x, "inputBytes");
        }
        char path[128];
        snprintf(path, sizeof path, "/stages/%lld/%lld/taskList?length=100000", (long long)id, (long long)att);
        if (api(port, app, path, &t)) goto out;
        for (const json_node *k = json_first(&t, json_root(&t)); k; k = json_next(&t, k)) {
            bool spec = false;
            json_as_bool(json_get(&t, k, "speculative"), &spec);
            s->speculative += spec;
            if (strstr(jstr(&t, k, "errorMessage"), "record 7 is refused")) s->refused_msgs++;
        }
    }
    rc = 0;
out:
    json_doc_free(&d);
    json_doc_free(&t);
    return rc;
}

/* The one application's id from /applications into app; 0 or -1. */
static int the_app(int port, char *app, size_t cap, int *completed) {
    json_doc d = JSON_DOC_INIT;
    int rc = -1;
    if (!http_get_json(port, "/api/v1/applications", &d) && count(&d, json_root(&d)) == 1) {
        const json_node *a = json_at(&d, json_root(&d), 0);
        snprintf(app, cap, "%s", jstr(&d, a, "id"));
        bool done = false;
        json_as_bool(json_get(&d, json_at(&d, json_get(&d, a, "attempts"), 0), "completed"), &done);
        *completed = done;
        rc = strcmp(jstr(&d, a, "name"), "observe") ? -1 : 0;
    }
    json_doc_free(&d);
    return rc;
}

/* The checks both the driver's API and the history server's must pass. */
static void check_seen(const seen *s, const em_stats *st) {
    CHECK_EQ_I64(s->jobs, st->jobs);
    CHECK_EQ_I64(s->jobs_failed, 1);
    CHECK_EQ_I64(s->tasks_done + s->tasks_failed + s->tasks_killed, st->tasks_run);
    CHECK_EQ_I64(s->tasks_failed, st->tasks_failed);
    CHECK_EQ_I64(s->tasks_killed, st->tasks_killed);
    CHECK_EQ_I64(s->speculative, st->tasks_speculative);
    CHECK_EQ_I64(s->speculative, 1);
    /* Spark's shuffle bytes written are the segments readers read; the
     * files em_get_stats counts hold a header more. */
    CHECK(s->sw_bytes > 0 && s->sw_bytes < st->shuffle_bytes_written);
    CHECK_EQ_I64(s->sw_records, st->shuffle_records_written);
    /* the fetch failure's stage attempt, and the failed job's stage */
    CHECK_EQ_I64(s->failed_stage_attempts, st->stage_attempts_failed + 1);
    CHECK_EQ_I64(s->fetch_failed_msgs, 1);
    CHECK_EQ_I64(s->refused_msgs, 4); /* every attempt of the failing task, ember.task.maxFailures */
    CHECK_EQ_I64(s->skipped_stages, 1);
    CHECK_EQ_I64(s->in_records_map0, lines_of("tests/data/words.txt"));
    size_t size = 0;
    free(read_file_all("tests/data/words.txt", &size));
    CHECK_EQ_I64(s->in_bytes_map0, (int64_t)size); /* each split's own lines: the file once */
}

/* The history server over evdir: its /api/v1 says what the driver's did,
 * the application now completed. */
/* A history server (this binary in its role) over dir: its port, *pid
 * set; -1 (its log shown) when it did not start. */
static int start_history(const char *dir, pid_t *pid) {
    int p[2];
    if (pipe(p)) return -1;
    char *args[] = {"ember-history-server", "--port", "0", (char *)dir, NULL};
    *pid = spawn_role("history-server", args, p[1], tmp_path("history.log"));
    close(p[1]);
    char buf[32] = "";
    ssize_t n = *pid > 0 ? read(p[0], buf, sizeof buf - 1) : -1;
    close(p[0]);
    int port = n > 0 ? atoi(buf) : -1;
    if (port <= 0) {
        stop_pid(*pid);
        char *log = read_file_all(tmp_path("history.log"), NULL);
        fprintf(stderr, "  history server log: %s\n", log ? log : "(none)");
        free(log);
    }
    return port;
}

static void check_history(const char *evdir, const em_stats *st) {
    pid_t pid;
    int port = start_history(evdir, &pid);
    CHECK(port > 0);
    char app[128];
    int completed = 0;
    CHECK(the_app(port, app, sizeof app, &completed) == 0);
    CHECK(completed == 1);
    seen s;
    CHECK(read_api(port, app, &s) == 0);
    check_seen(&s, st);
    answer a;
    CHECK(http_get(port, "/api/v1/applications/no-such-app/jobs", &a) == 0);
    CHECK_EQ_I64(a.status, 404);
    answer_free(&a);
    stop_pid(pid);
}

TEST(obs_api_log_and_history_match_stats) {
    const char *evdir = tmp_path("events");
    CHECK(mkdir(evdir, 0700) == 0);
    em_ctx *c = open_obs(evdir);
    CHECK(c);
    int port = ui_port_of(c);
    CHECK(port > 0);

    em_batch *b = NULL;
    em_rdd *counts = em_reduce_by_key(em_flat_map(em_text_file(c, "tests/data/words.txt", 2), fn_split_words, NULL, 0),
                                      fn_sum_i64, NULL, 0, 2);
    CHECK_OK(em_collect(counts, &b));
    int64_t distinct = (int64_t)em_batch_count(b);
    em_batch_free(b);
    CHECK_OK(em_collect(em_map(em_range(c, 0, 4000, 1, 4), same, NULL, 0), &b));
    CHECK_EQ_I64(em_batch_count(b), 4000);
    em_batch_free(b);
    CHECK(em_collect(em_map(em_range(c, 0, 20, 1, 2), fail_on_7, NULL, 0), &b) < 0);
    CHECK_OK(em_collect(counts, &b));
    CHECK_EQ_I64(em_batch_count(b), distinct);
    em_batch_free(b);
    em_stats st;
    wait_no_tasks(c, &st);
    CHECK_EQ_I64(st.faults_fired, 2); /* map 0's corrupt output, and the held original the copy beat */
    CHECK_EQ_I64(st.stage_attempts_failed, 1);
    CHECK_EQ_I64(st.tasks_speculative, 1);

    /* The API catches up with the listener bus: wait until it shows every
     * job ended (a job's skipped stages are known at its end) and every
     * attempt. */
    char app[128];
    int completed = 1;
    CHECK(the_app(port, app, sizeof app, &completed) == 0);
    CHECK(completed == 0);
    seen s;
    for (int i = 0; i < 500; i++) {
        if (read_api(port, app, &s) == 0 && s.jobs == st.jobs && s.jobs_running == 0 &&
            s.tasks_done + s.tasks_failed + s.tasks_killed == st.tasks_run)
            break;
        sleep_ms(20);
    }
    check_seen(&s, &st);

    /* The executors' metrics for Prometheus: every attempt on some
     * executor. */
    answer pm;
    CHECK(http_get(port, "/metrics/executors/prometheus", &pm) == 0);
    CHECK_EQ_I64(pm.status, 200);
    prom_doc pd = PROM_DOC_INIT;
    CHECK_OK(prom_parse(pm.body, pm.len, &pd));
    double total = 0;
    for (size_t i = 0; i < pd.n; i++)
        if (!strcmp(pd.m[i].name, "metrics_executor_totalTasks_total")) total += pd.m[i].value;
    CHECK_EQ_I64((int64_t)total, st.tasks_run);
    CHECK(prom_find(&pd, "metrics_executor_totalCores", "application_id", app) != NULL);
    prom_doc_free(&pd);
    answer_free(&pm);

    /* Executors: local[N]'s one, "driver", with every core; local-cluster's
     * two. */
    json_doc d = JSON_DOC_INIT;
    CHECK(api(port, app, "/executors", &d) == 0);
    int64_t execs = 0, cores = 0;
    for (const json_node *x = json_first(&d, json_root(&d)); x; x = json_next(&d, x)) {
        if (!strcmp(test_master(), "local-cluster[2,1,1024]") && !strcmp(jstr(&d, x, "id"), "driver")) continue;
        execs++;
        cores += jint(&d, x, "totalCores");
        /* A cluster's executor: its worker serves its logs, and the
         * executor's entry links them. */
        const char *out = jstr(&d, json_get(&d, x, "executorLogs"), "stdout");
        if (!strncmp(test_master(), "local-cluster", 13))
            CHECK(strstr(out, "/logPage/?appId=") && strstr(out, "logType=stdout"));
    }
    if (!strncmp(test_master(), "local-cluster", 13)) CHECK_EQ_I64(execs, 2);
    else CHECK_EQ_I64(execs, 1);
    CHECK(cores >= 1);
    /* The secret is redacted, under its key. */
    answer a;
    CHECK(http_get(port, "/api/v1/applications/x/environment", &a) == 0);
    CHECK_EQ_I64(a.status, 404);
    answer_free(&a);
    char t[256];
    snprintf(t, sizeof t, "/api/v1/applications/%s/environment", app);
    CHECK(http_get(port, t, &a) == 0);
    CHECK_EQ_I64(a.status, 200);
    CHECK(strstr(a.body, "ember.authenticate.secret") != NULL);
    CHECK(strstr(a.body, "*********(redacted)") != NULL);
    CHECK(strstr(a.body, SECRET) == NULL);
    answer_free(&a);
    json_doc_free(&d);
    em_close(c);

    /* The event log: finished (renamed from .inprogress), every job and
     * attempt in it, the application's end last. */
    char logpath[1024];
    CHECK(log_in(evdir, logpath, sizeof logpath) == 0);
    CHECK(!strstr(logpath, ".inprogress"));
    evlog_reader *r;
    CHECK_OK(evlog_reader_open(logpath, &r));
    int64_t ends = 0, starts = 0, jobs = 0, last = 0;
    app_event *ev;
    while (evlog_reader_next(r, &ev) == 1) {
        ends += ev->kind == AE_TASK_END;
        starts += ev->kind == AE_TASK_START;
        jobs += ev->kind == AE_JOB_START;
        last = ev->kind;
        app_event_free(ev);
    }
    evlog_reader_close(r);
    CHECK_EQ_I64(ends, st.tasks_run);
    CHECK_EQ_I64(starts, st.tasks_run);
    CHECK_EQ_I64(jobs, st.jobs);
    CHECK_EQ_I64(last, AE_APP_END);

    check_history(evdir, &st);
}

static int made_marker(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return 0;
    close(fd);
    return 1;
}

/* v == 3 kills its executor's process, once. */
static int kill_executor_once(const em_rec *in, em_emitter *out, const void *arg) {
    if (rec_i64(in) == 3 && made_marker(arg)) raise(SIGKILL);
    return em_emit(out, in->val, in->vlen);
}

/* An executor lost mid-job (SIGKILL, on local-cluster whatever the suite's
 * master): the API shows it removed with its reason and the attempt that
 * ran there failed with ExecutorLostFailure; the event log has both. */
TEST(obs_executor_loss_shown) {
    const char *evdir = tmp_path("events");
    CHECK(mkdir(evdir, 0700) == 0);
    em_conf *conf = em_conf_new();
    CHECK_OK(em_conf_set(conf, "ember.eventLog.enabled", "true"));
    CHECK_OK(em_conf_set(conf, "ember.eventLog.dir", evdir));
    CHECK_OK(em_conf_set(conf, "ember.progress", "false"));
    em_ctx *c = em_open("local-cluster[2,1,512]", conf);
    em_conf_free(conf);
    CHECK(c);
    int port = ui_port_of(c);
    const char *marker = tmp_path("killed.marker");
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_map(em_range(c, 0, 8, 1, 8), kill_executor_once, marker, strlen(marker) + 1), &b));
    CHECK_EQ_I64(em_batch_count(b), 8);
    em_batch_free(b);
    CHECK(access(marker, F_OK) == 0);
    em_stats st;
    wait_no_tasks(c, &st);

    char app[128];
    json_doc d = JSON_DOC_INIT;
    CHECK(http_get_json(port, "/api/v1/applications", &d) == 0);
    snprintf(app, sizeof app, "%s", jstr(&d, json_at(&d, json_root(&d), 0), "id"));
    /* Wait for the store to show the removal and every attempt. */
    int64_t removed = 0, lost_tasks = 0, attempts = 0;
    for (int i = 0; i < 500 && (!removed || attempts != st.tasks_run); i++) {
        removed = lost_tasks = attempts = 0;
        if (api(port, app, "/allexecutors", &d) == 0)
            for (const json_node *x = json_first(&d, json_root(&d)); x; x = json_next(&d, x)) {
                bool active = true;
                json_as_bool(json_get(&d, x, "isActive"), &active);
                if (!active && strlen(jstr(&d, x, "removeReason")) > 0) removed++;
            }
        if (api(port, app, "/stages/0/0/taskList?length=100", &d) == 0)
            for (const json_node *k = json_first(&d, json_root(&d)); k; k = json_next(&d, k)) {
                attempts++;
                if (strstr(jstr(&d, k, "errorMessage"), "ExecutorLostFailure")) lost_tasks++;
            }
        if (!removed || attempts != st.tasks_run) sleep_ms(20);
    }
    CHECK_EQ_I64(removed, 1);
    CHECK_EQ_I64(lost_tasks, 1);
    CHECK_EQ_I64(attempts, st.tasks_run);
    json_doc_free(&d);
    em_close(c);

    char logpath[1024];
    CHECK(log_in(evdir, logpath, sizeof logpath) == 0);
    evlog_reader *r;
    CHECK_OK(evlog_reader_open(logpath, &r));
    int64_t gone = 0, lost_ends = 0;
    app_event *ev;
    while (evlog_reader_next(r, &ev) == 1) {
        gone += ev->kind == AE_EXEC_REMOVED;
        lost_ends += ev->kind == AE_TASK_END && ev->end.reason == AE_EXEC_LOST;
        app_event_free(ev);
    }
    evlog_reader_close(r);
    CHECK(gone >= 1); /* the killed one, and the others as the application ends */
    CHECK_EQ_I64(lost_ends, 1);
}

/* Logs Apache Spark wrote (hand-written from its JsonProtocol: 3.5 and
 * 1.6 field sets; plain, zstd, lz4 and a rolling directory), served by the
 * history server as Spark's own serves them. */
TEST(obs_history_reads_spark_logs) {
    pid_t pid;
    int port = start_history("tests/data/eventlogs", &pid);
    CHECK(port > 0);
    json_doc d = JSON_DOC_INIT;
    CHECK(http_get_json(port, "/api/v1/applications", &d) == 0);
    /* The same Spark 3.5 application in four forms (plain, zstd, lz4,
     * rolling) lists as one application of four logs, and the 1.6 one. */
    CHECK_EQ_I64(count(&d, json_root(&d)), 2);
    const json_node *first = json_at(&d, json_root(&d), 0), *second = json_at(&d, json_root(&d), 1);
    CHECK(!strcmp(jstr(&d, first, "id"), "app-20240101120000-0001"));
    CHECK_EQ_I64(count(&d, json_get(&d, first, "attempts")), 4);
    CHECK(!strcmp(jstr(&d, second, "id"), "local-1450000000000"));
    /* Spark 3.5: one job of 5 task ends; Spark 1.6: two jobs, its executor
     * "<driver>" read as "driver". */
    CHECK(api(port, "app-20240101120000-0001", "/jobs", &d) == 0);
    CHECK_EQ_I64(count(&d, json_root(&d)), 1);
    CHECK(api(port, "local-1450000000000", "/jobs", &d) == 0);
    CHECK_EQ_I64(count(&d, json_root(&d)), 2);
    CHECK(api(port, "local-1450000000000", "/allexecutors", &d) == 0);
    int driver = 0;
    for (const json_node *x = json_first(&d, json_root(&d)); x; x = json_next(&d, x))
        driver += !strcmp(jstr(&d, x, "id"), "driver");
    CHECK_EQ_I64(driver, 1);
    answer a;
    CHECK(http_get(port, "/history/local-1450000000000/jobs/", &a) == 0);
    CHECK_EQ_I64(a.status, 200);
    answer_free(&a);
    json_doc_free(&d);
    stop_pid(pid);
}

/* What the storage and executor endpoints say of cached data, summed. */
typedef struct held {
    int64_t rdds, parts, mem, disk;      /* /storage/rdd */
    int64_t x_blocks, x_mem, x_disk, x_input, x_max; /* /allexecutors */
} held;

static int read_held(int port, const char *app, held *h) {
    json_doc d = JSON_DOC_INIT;
    memset(h, 0, sizeof *h);
    int rc = api(port, app, "/storage/rdd", &d);
    for (const json_node *r = rc ? NULL : json_first(&d, json_root(&d)); r; r = json_next(&d, r)) {
        h->rdds++;
        h->parts += jint(&d, r, "numCachedPartitions");
        h->mem += jint(&d, r, "memoryUsed");
        h->disk += jint(&d, r, "diskUsed");
    }
    if (!rc) rc = api(port, app, "/allexecutors", &d);
    for (const json_node *x = rc ? NULL : json_first(&d, json_root(&d)); x; x = json_next(&d, x)) {
        h->x_blocks += jint(&d, x, "rddBlocks");
        h->x_mem += jint(&d, x, "memoryUsed");
        h->x_disk += jint(&d, x, "diskUsed");
        h->x_input += jint(&d, x, "totalInputBytes");
        h->x_max += jint(&d, x, "maxMemory");
    }
    json_doc_free(&d);
    return rc;
}

/* Poll until the API shows want_parts cached partitions and the executors
 * have read want_input bytes (the listener bus hands events on after the
 * action returns). */
static int wait_held(int port, const char *app, int64_t want_parts, int64_t want_input, held *h) {
    for (int i = 0; i < 500; i++) {
        if (read_held(port, app, h) == 0 && h->parts == want_parts && h->x_blocks == want_parts &&
            (want_input < 0 || h->x_input == want_input))
            return 0;
        sleep_ms(20);
    }
    fprintf(stderr, "  api: %lld rdds, %lld partitions, %lld B in memory, %lld B on disk; executors: %lld blocks, "
            "%lld B, %lld B, %lld input bytes\n", (long long)h->rdds, (long long)h->parts, (long long)h->mem,
            (long long)h->disk, (long long)h->x_blocks, (long long)h->x_mem, (long long)h->x_disk,
            (long long)h->x_input);
    return -1;
}

/* The storage page's figures: a persisted RDD appears once computed, with
 * every partition cached and its size in memory (MEMORY_ONLY) or on disk
 * (DISK_ONLY, each block file a 24-byte header and the records), the same
 * bytes a second action then reads from the cache (its input bytes); the
 * executors hold what the RDDs hold; all of it goes when the RDD is
 * unpersisted. */
TEST(obs_storage_sizes_follow_persist_and_unpersist) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int port = ui_port_of(c);
    json_doc d = JSON_DOC_INIT;
    char app[128] = "";
    for (int i = 0; i < 500 && !app[0]; i++) { /* the application's start reaches the UI */
        if (http_get_json(port, "/api/v1/applications", &d) == 0 && count(&d, json_root(&d)) == 1)
            snprintf(app, sizeof app, "%s", jstr(&d, json_at(&d, json_root(&d), 0), "id"));
        if (!app[0]) sleep_ms(20);
    }
    CHECK(app[0]);
    held h;
    int64_t input = 0;
    for (int disk = 0; disk < 2; disk++) {
        em_rdd *r = em_persist(em_map(em_range(c, 0, 1000, 1, 4), same, NULL, 0), disk ? EM_DISK_ONLY : EM_MEMORY_ONLY);
        int64_t n = 0;
        CHECK_OK(em_count(r, &n)); /* computes and caches: a range has no input bytes */
        CHECK_EQ_I64(n, 1000);
        CHECK_OK(wait_held(port, app, 4, input, &h));
        CHECK_EQ_I64(h.rdds, 1);
        int64_t bytes = disk ? h.disk : h.mem;
        CHECK(bytes > 1000 * 8);
        CHECK_EQ_I64(disk ? h.mem : h.disk, 0);
        CHECK_EQ_I64(h.x_blocks, 4);
        CHECK(h.x_max > 0); /* each executor's BlockManagerAdded */
        CHECK_EQ_I64(h.x_mem, h.mem);
        CHECK_EQ_I64(h.x_disk, h.disk);
        /* The RDD's own endpoint: four partitions, on the executors that
         * hold their bytes. */
        char path[64];
        CHECK(api(port, app, "/storage/rdd", &d) == 0);
        snprintf(path, sizeof path, "/storage/rdd/%lld", (long long)jint(&d, json_at(&d, json_root(&d), 0), "id"));
        CHECK(api(port, app, path, &d) == 0);
        const json_node *parts = json_get(&d, json_root(&d), "partitions");
        CHECK_EQ_I64(count(&d, parts), 4);
        int64_t sum = 0;
        for (const json_node *p = json_first(&d, parts); p; p = json_next(&d, p)) {
            sum += jint(&d, p, disk ? "diskUsed" : "memoryUsed");
            CHECK_EQ_I64(count(&d, json_get(&d, p, "executors")), 1);
            CHECK_STR_CONTAINS(jstr(&d, p, "storageLevel"), disk ? "Disk" : "Memory");
        }
        CHECK_EQ_I64(sum, bytes);
        sum = 0;
        const json_node *dist = json_get(&d, json_root(&d), "dataDistribution");
        for (const json_node *x = json_first(&d, dist); x; x = json_next(&d, x))
            sum += jint(&d, x, disk ? "diskUsed" : "memoryUsed");
        CHECK_EQ_I64(sum, bytes);
        /* A second action reads the cached blocks: their records' bytes. */
        CHECK_OK(em_count(r, &n));
        input += bytes - (disk ? 4 * 24 : 0);
        CHECK_OK(wait_held(port, app, 4, input, &h));
        CHECK_OK(em_unpersist(r));
        CHECK_OK(wait_held(port, app, 0, -1, &h));
        CHECK_EQ_I64(h.rdds, 0);
        CHECK_EQ_I64(h.x_mem + h.x_disk, 0);
        em_rdd_release(r);
    }
    json_doc_free(&d);
    em_close(c);
}
