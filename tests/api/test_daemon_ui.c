/*
 * test_daemon_ui.c -- the master's and a worker's web pages as a person
 * (and a script) uses them, with real processes on 127.0.0.1 (this test
 * binary in their roles, every port chosen by the kernel): a master and a
 * worker of 2 cores and 1 GiB with ember.ui.prometheus.enabled, and an
 * application of this process whose task prints a line.  The master's
 * /json (its worker's web UI address, the application's user and memory,
 * epoch times) and page (the worker linked to its page), the worker's
 * /json (Spark's fields, exactly: cores, memory, the executor), page (the
 * links to the executor's logs), the executor's stdout through /log and
 * /logPage/ (whole, and a range), requests that try to leave the work
 * directory (400) or name no log (404), and both daemons' metrics, read
 * with the Prometheus parser.  After the application ends, the executor
 * is among the worker's finished ones.  A second pair without the setting
 * answers the metrics with 404.  Every process is stopped and waited for
 * by PID; the daemons also die with the test (EMBER_PARENT_PID).
 */
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"
#include "roles.h"
#include "json.h"
#include "prom.h"


#define REQ(c)                                                                      \
    do {                                                                            \
        if (!(c)) {                                                                 \
            fprintf(stderr, "  %s:%d: REQ(%s) failed\n", __FILE__, __LINE__, #c);   \
            return 0;                                                               \
        }                                                                           \
    } while (0)

typedef struct pair {
    pid_t master, worker;
    int port, webport, wport; /* the master's cluster and web ports, the worker's web port */
    char url[64], wid[128];
} pair;

static void stop_pair(pair *k) {
    stop_pid(k->worker);
    stop_pid(k->master);
    k->worker = k->master = 0;
}

/* A master and a worker of 2 cores and 1 GiB on free ports, the metrics
 * on or off: 1 once the worker registered (its web port and id read from
 * the master's /json). */
static int start_pair(pair *k, int prom, const char *tag) {
    memset(k, 0, sizeof *k);
    int p[2];
    REQ(!pipe2(p, O_CLOEXEC));
    char promv[64], log[64];
    snprintf(promv, sizeof promv, "ember.ui.prometheus.enabled=%s", prom ? "true" : "false");
    char *margs[] = {"ember-master", "--port", "0", "--webui-port", "0", "--conf", promv, NULL};
    snprintf(log, sizeof log, "master-%s.log", tag);
    k->master = spawn_role("master", margs, p[1], tmp_path(log));
    close(p[1]);
    char line[64] = "";
    struct pollfd pf = {p[0], POLLIN, 0};
    ssize_t n = k->master > 0 && poll(&pf, 1, 20000) == 1 ? read(p[0], line, sizeof line - 1) : -1;
    close(p[0]);
    REQ(n > 0 && sscanf(line, "%d %d", &k->port, &k->webport) == 2);
    snprintf(k->url, sizeof k->url, "ember://127.0.0.1:%d", k->port);
    char dir[64];
    snprintf(dir, sizeof dir, "work-%s", tag);
    snprintf(log, sizeof log, "worker-%s.log", tag);
    char *wargs[] = {"ember-worker", "--cores", "2", "--memory", "1g", "--work-dir", (char *)tmp_path(dir),
                     "--webui-port", "0", "--conf", "ember.shuffle.service.port=0", "--conf", promv, k->url, NULL};
    k->worker = spawn_role("worker", wargs, -1, tmp_path(log));
    REQ(k->worker > 0);
    json_doc d = JSON_DOC_INIT;
    for (int i = 0; i < 1000; i++) {
        if (!http_get_json(k->webport, "/json", &d) && jint(&d, json_root(&d), "aliveworkers") == 1) {
            const json_node *w = json_at(&d, json_get(&d, json_root(&d), "workers"), 0);
            const char *web = jstr(&d, w, "webuiaddress");
            snprintf(k->wid, sizeof k->wid, "%s", jstr(&d, w, "id"));
            int ok = sscanf(web, "http://127.0.0.1:%d", &k->wport) == 1;
            json_doc_free(&d);
            REQ(ok && k->wport > 0 && k->wport != k->webport);
            return 1;
        }
        sleep_ms(20);
    }
    json_doc_free(&d);
    REQ(!"the worker registered");
    return 0;
}

/* Each task prints a line to its executor's stdout. */
static int fn_print(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    printf("hello from task <%lld> & co\n", (long long)rec_i64(in));
    fflush(stdout);
    return em_emit_i64(out, rec_i64(in));
}

/* Parse a metrics answer and check the sample name{type="gauges"} is v. */
static int gauge_is(const prom_doc *d, const char *name, double v) {
    const prom_metric *m = prom_find(d, name, "type", "gauges");
    if (!m || m->value != v || strcmp(m->type, "gauge")) {
        fprintf(stderr, "  %s: %s, want %g\n", name, m ? "another value" : "absent", v);
        return 0;
    }
    return 1;
}

static int check_master_json(pair *k, const char *app) {
    json_doc d = JSON_DOC_INIT;
    REQ(!http_get_json(k->webport, "/json", &d));
    const json_node *root = json_root(&d), *w = json_at(&d, json_get(&d, root, "workers"), 0);
    char web[64];
    snprintf(web, sizeof web, "http://127.0.0.1:%d", k->wport);
    int ok = jint(&d, root, "aliveworkers") == 1 && jint(&d, root, "cores") == 2 &&
             jint(&d, root, "coresused") == 2 && jint(&d, root, "memory") == 1024 &&
             jint(&d, root, "memoryused") == 256 && !strcmp(jstr(&d, w, "webuiaddress"), web) &&
             !strcmp(jstr(&d, w, "state"), "ALIVE") && llabs(jint(&d, w, "lastheartbeat") - wall_ms()) < 60000;
    const json_node *a = json_at(&d, json_get(&d, root, "activeapps"), 0);
    struct passwd *pw = getpwuid(geteuid());
    ok = ok && !strcmp(jstr(&d, a, "id"), app) && !strcmp(jstr(&d, a, "user"), pw ? pw->pw_name : "") &&
         jint(&d, a, "memoryperexecutor") == 256 && jint(&d, a, "memoryperslave") == 256 &&
         !strcmp(jstr(&d, a, "state"), "RUNNING") && llabs(jint(&d, a, "starttime") - wall_ms()) < 60000 &&
         !strcmp(jstr(&d, json_at(&d, json_get(&d, a, "executors"), 0), "worker"), k->wid);
    json_doc_free(&d);
    REQ(ok);
    return 1;
}

static int check_worker_json(pair *k, const char *app) {
    json_doc d = JSON_DOC_INIT;
    REQ(!http_get_json(k->wport, "/json", &d));
    const json_node *root = json_root(&d), *e = json_at(&d, json_get(&d, root, "executors"), 0);
    char mweb[64];
    snprintf(mweb, sizeof mweb, "http://127.0.0.1:%d", k->webport);
    int ok = !strcmp(jstr(&d, root, "id"), k->wid) && !strcmp(jstr(&d, root, "masterurl"), k->url) &&
             !strcmp(jstr(&d, root, "masterwebuiurl"), mweb) && jint(&d, root, "cores") == 2 &&
             jint(&d, root, "coresused") == 2 && jint(&d, root, "coresfree") == 0 &&
             jint(&d, root, "memory") == 1024 && jint(&d, root, "memoryused") == 256 &&
             jint(&d, root, "memoryfree") == 768 && json_get(&d, root, "executors")->n == 1 &&
             json_get(&d, root, "finishedexecutors")->n == 0 && jint(&d, e, "id") == 0 &&
             jint(&d, e, "memory") == 256 && jint(&d, e, "cores") == 2 && !strcmp(jstr(&d, e, "appid"), app) &&
             !strcmp(jstr(&d, e, "state"), "RUNNING");
    json_doc_free(&d);
    REQ(ok);
    return 1;
}

static int check_pages(pair *k, const char *app) {
    answer a;
    char want[256];
    REQ(!http_get(k->webport, "/", &a));
    int ok = a.status == 200 && !strncmp(a.ctype, "text/html", 9) && !strncmp(a.body, "<!DOCTYPE html>", 15);
    snprintf(want, sizeof want, "<a href=\"http://127.0.0.1:%d\">%s</a>", k->wport, k->wid);
    ok = ok && strstr(a.body, want) && strstr(a.body, "Running Applications") &&
         strstr(a.body, "<b>Alive Workers:</b> 1") && strstr(a.body, "2 Total, 2 Used");
    snprintf(want, sizeof want, "<td>%s</td>", app);
    ok = ok && strstr(a.body, want) && !strstr(a.body, "http-equiv") && !strstr(a.body, "src=");
    if (!ok) fprintf(stderr, "  the master's page:\n%s\n", a.body);
    answer_free(&a);
    REQ(ok);
    REQ(!http_get(k->wport, "/", &a));
    ok = a.status == 200 && strstr(a.body, "Running Executors") && strstr(a.body, "Finished Executors");
    snprintf(want, sizeof want, "<a href=\"/logPage/?appId=%s&amp;executorId=0&amp;logType=stderr\">stderr</a>", app);
    ok = ok && strstr(a.body, want);
    snprintf(want, sizeof want, "<a href=\"http://127.0.0.1:%d\">%s</a>", k->webport, k->url);
    ok = ok && strstr(a.body, want);
    if (!ok) fprintf(stderr, "  the worker's page:\n%s\n", a.body);
    answer_free(&a);
    REQ(ok);
    return 1;
}

static int check_logs(pair *k, const char *app) {
    answer a;
    char t[512];
    /* The whole stdout, as text: its header names the range. */
    snprintf(t, sizeof t, "/log?appId=%s&executorId=0&logType=stdout", app);
    int seen = 0;
    for (int i = 0; i < 200 && !seen; i++) { /* the task's line is flushed before its result goes */
        REQ(!http_get(k->wport, t, &a));
        seen = a.status == 200 && strstr(a.body, "hello from task <3> & co\n");
        if (!seen) answer_free(&a), sleep_ms(20);
    }
    REQ(seen);
    long long from, to, size;
    int hdr = sscanf(a.body, "==== Bytes %lld-%lld of %lld of ", &from, &to, &size) == 3;
    int ok = hdr && from == 0 && to == size && !strncmp(a.ctype, "text/plain", 10);
    answer_free(&a);
    REQ(ok);
    /* A range: 5 bytes from offset 6 ("from "). */
    snprintf(t, sizeof t, "/log?appId=%s&executorId=0&logType=stdout&offset=6&byteLength=5", app);
    REQ(!http_get(k->wport, t, &a));
    char *nl = strchr(a.body, '\n');
    ok = a.status == 200 && nl && !strcmp(nl + 1, "from ") && strstr(a.body, "==== Bytes 6-11 of ");
    answer_free(&a);
    REQ(ok);
    /* As a page: the text escaped. */
    snprintf(t, sizeof t, "/logPage/?appId=%s&executorId=0&logType=stdout", app);
    REQ(!http_get(k->wport, t, &a));
    ok = a.status == 200 && !strncmp(a.ctype, "text/html", 9) && strstr(a.body, "hello from task &lt;1&gt; &amp; co");
    answer_free(&a);
    REQ(ok);
    /* Leaving the work directory, or a bad parameter: 400; no such log: 404. */
    static const struct {
        const char *q;
        int status;
    } bad[] = {
        {"/logPage/?appId=..&executorId=0&logType=stdout", 400},
        {"/logPage/?appId=../..&executorId=0&logType=stdout", 400},
        {"/logPage/?appId=%2e%2e%2f%2e%2e%2fetc&executorId=0&logType=stdout", 400},
        {"/logPage/?appId=.&executorId=0&logType=stdout", 400},
        {"/logPage/?appId=bin&executorId=..&logType=stdout", 400},
        {"/logPage/?appId=app-0000&executorId=0/../..&logType=stdout", 400},
        {"/logPage/?appId=app-0000&executorId=0&logType=secret", 400},
        {"/logPage/?appId=app-0000&executorId=0&logType=../../secret", 400},
        {"/logPage/?appId=app-0000&executorId=0&logType=stdout&offset=-1", 400},
        {"/logPage/?appId=app-0000&executorId=0&logType=stdout&byteLength=x", 400},
        {"/logPage/?appId=a%00b&executorId=0&logType=stdout", 400},
        {"/logPage/?executorId=0&logType=stdout", 400},
        {"/logPage/?appId=app-0000&executorId=7&logType=stdout", 404},
        {"/logPage/?appId=app-9999&executorId=0&logType=stdout", 404},
        {"/log?appId=bin&executorId=0&logType=stdout", 404},
        {"/../../etc/passwd", 404},
        {"/logPage/../../etc/passwd", 404},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        REQ(!http_get(k->wport, bad[i].q, &a));
        ok = a.status == bad[i].status && !strstr(a.body, "hello") && !strstr(a.body, "root:");
        if (!ok) fprintf(stderr, "  %s: %d, want %d\n", bad[i].q, a.status, bad[i].status);
        answer_free(&a);
        REQ(ok);
    }
    return 1;
}

static int check_metrics(pair *k) {
    answer a;
    prom_doc d = PROM_DOC_INIT;
    static const char *const paths[] = {"/metrics/master/prometheus", "/metrics/prometheus"};
    for (int i = 0; i < 2; i++) {
        REQ(!http_get(k->webport, paths[i], &a));
        int ok = a.status == 200 && strstr(a.ctype, "version=0.0.4") && !prom_parse(a.body, a.len, &d);
        if (!ok) fprintf(stderr, "  %s: %d %s: %s\n%s\n", paths[i], a.status, a.ctype, em_errmsg(), a.body);
        answer_free(&a);
        REQ(ok);
        REQ(d.n == 8 && gauge_is(&d, "metrics_master_workers_Value", 1) &&
            gauge_is(&d, "metrics_master_workers_Number", 1) && gauge_is(&d, "metrics_master_aliveWorkers_Value", 1) &&
            gauge_is(&d, "metrics_master_apps_Value", 1) && gauge_is(&d, "metrics_master_waitingApps_Value", 0));
    }
    /* The running application: its run time and its 2 cores. */
    REQ(!http_get(k->webport, "/metrics/applications/prometheus", &a));
    int ok = a.status == 200 && !prom_parse(a.body, a.len, &d);
    if (!ok) fprintf(stderr, "  application metrics: %d: %s\n%s\n", a.status, em_errmsg(), a.body);
    answer_free(&a);
    REQ(ok);
    int cores = 0, runtime = 0;
    for (size_t i = 0; i < d.n; i++) {
        size_t n = strlen(d.m[i].name);
        cores += n > 12 && !strcmp(d.m[i].name + n - 12, "_cores_Value") && d.m[i].value == 2;
        runtime += n > 17 && !strcmp(d.m[i].name + n - 17, "_runtime_ms_Value") && d.m[i].value > 0;
    }
    REQ(d.n == 4 && cores == 1 && runtime == 1 && !strncmp(d.m[0].name, "metrics_application_", 20));
    REQ(!http_get(k->wport, "/metrics/prometheus", &a));
    ok = a.status == 200 && !prom_parse(a.body, a.len, &d);
    if (!ok) fprintf(stderr, "  worker metrics: %d: %s\n%s\n", a.status, em_errmsg(), a.body);
    answer_free(&a);
    REQ(ok);
    ok = d.n == 10 && gauge_is(&d, "metrics_worker_executors_Value", 1) &&
         gauge_is(&d, "metrics_worker_coresUsed_Value", 2) && gauge_is(&d, "metrics_worker_coresFree_Number", 0) &&
         gauge_is(&d, "metrics_worker_memUsed_MB_Value", 256) && gauge_is(&d, "metrics_worker_memFree_MB_Value", 768);
    prom_doc_free(&d);
    REQ(ok);
    return 1;
}

/* After the application: the executor is among the finished ones. */
static int check_finished(pair *k, const char *app) {
    json_doc d = JSON_DOC_INIT;
    int ok = 0;
    for (int i = 0; i < 500 && !ok; i++) {
        if (!http_get_json(k->wport, "/json", &d)) {
            const json_node *root = json_root(&d), *e = json_at(&d, json_get(&d, root, "finishedexecutors"), 0);
            ok = json_get(&d, root, "executors")->n == 0 && json_get(&d, root, "finishedexecutors")->n == 1 &&
                 !strcmp(jstr(&d, e, "appid"), app) && jint(&d, e, "id") == 0 &&
                 (!strcmp(jstr(&d, e, "state"), "EXITED") || !strcmp(jstr(&d, e, "state"), "KILLED")) &&
                 jint(&d, root, "coresused") == 0;
        }
        if (!ok) sleep_ms(20);
    }
    json_doc_free(&d);
    REQ(ok);
    return 1;
}

TEST(daemon_ui_master_and_worker_pages) {
    pair k;
    int ok = start_pair(&k, 1, "on");
    em_ctx *c = NULL;
    char app[64] = "app-0000";
    if (ok) {
        em_conf *conf = em_conf_new();
        test_conf_set(conf, "ember.local.dir", test_scratchdir());
        test_conf_set(conf, "ember.executor.memory", "256m");
        c = em_open(k.url, conf);
        em_conf_free(conf);
        if (!c) fprintf(stderr, "  em_open(%s): %s\n", k.url, em_errmsg());
        ok = c != NULL;
    }
    int64_t n = -1;
    if (ok) ok = !em_count(em_map(em_range(c, 0, 4, 1, 2), fn_print, NULL, 0), &n) && n == 4;
    ok = ok && check_master_json(&k, app) && check_worker_json(&k, app) && check_pages(&k, app) &&
         check_logs(&k, app) && check_metrics(&k);
    if (c) em_close(c);
    ok = ok && check_finished(&k, app);
    stop_pair(&k);
    CHECK(ok);
}

TEST(daemon_ui_metrics_off_by_default) {
    pair k;
    int ok = start_pair(&k, 0, "off");
    answer a;
    static const char *const master_paths[] = {"/metrics/master/prometheus", "/metrics/prometheus",
                                               "/metrics/applications/prometheus"};
    for (int i = 0; ok && i < 3; i++) {
        ok = !http_get(k.webport, master_paths[i], &a) && a.status == 404;
        answer_free(&a);
    }
    ok = ok && !http_get(k.wport, "/metrics/prometheus", &a) && a.status == 404;
    answer_free(&a);
    /* The pages are there all the same. */
    ok = ok && !http_get(k.wport, "/", &a) && a.status == 200 && strstr(a.body, "Running Executors");
    answer_free(&a);
    stop_pair(&k);
    CHECK(ok);
}
