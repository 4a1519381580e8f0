/*
 * test_rest.c -- Spark's /api/v1 (engine/rest.c) over the store of
 * status_fixture.h's application: every endpoint's JSON parsed back and
 * its counts and fields checked, the status filters, taskSummary's
 * quantiles, taskList's paging and sorting, redaction, 404s and 400s;
 * then the driver's UI server (engine/ui.c) over real TCP on a port the
 * kernel picks, and its move to the next port when the first is taken.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../test.h"
#include "ember.h"
#include "json.h"
#include "log.h"
#include "rest.h"
#include "status_fixture.h"
#include "ui.h"

/* GET target ("/api/v1/...?query") through rest_answer; the body parsed
 * into d when it is JSON.  The status. */
static int get(const rest_provider *p, const char *target, json_doc *d, ebuf *body) {
    char path[1024];
    const char *q = strchr(target, '?');
    size_t n = q ? (size_t)(q - target) : strlen(target);
    memcpy(path, target, n);
    path[n] = 0;
    int status = 0;
    const char *ctype = NULL;
    ebuf_reset(body);
    if (rest_answer(p, path, q ? q + 1 : "", &status, &ctype, body)) return -1;
    json_doc_reset(d);
    if (status == 200 && (!strcmp(ctype, "application/json") && json_parse(body->p, body->len, NULL, d))) return -2;
    if (ebuf_append(body, "", 1)) return -1;
    body->len--;
    return status;
}

static int64_t geti(const json_doc *d, const json_node *o, const char *k) {
    int64_t v = -999;
    json_as_i64(json_get(d, o, k), &v);
    return v;
}
static const char *gets_(const json_doc *d, const json_node *o, const char *k) {
    const char *v = NULL;
    json_as_str(d, json_get(d, o, k), &v, NULL);
    return v ? v : "(absent)";
}
static size_t count(const json_node *n) { return n ? n->n : 0; }
static double getf_at(const json_doc *d, const json_node *arr, size_t i) {
    double v = -1;
    json_as_f64(json_at(d, arr, i), &v);
    return v;
}

#define APPS "/api/v1/applications/" FIX_APP

TEST(rest_endpoints_as_spark) {
    status_store *st = status_new(NULL);
    CHECK(st);
    fx_feed(st);
    rest_provider p;
    rest_single(&p, st);
    json_doc d = JSON_DOC_INIT;
    ebuf b = EBUF_INIT;
    const json_node *r, *x;

    CHECK_EQ_I64(get(&p, "/api/v1/version", &d, &b), 200);
    CHECK(!strcmp(gets_(&d, json_root(&d), "spark"), EMBER_VERSION));

    CHECK_EQ_I64(get(&p, "/api/v1/applications", &d, &b), 200);
    r = json_root(&d);
    CHECK(r->type == JSON_ARRAY && count(r) == 1);
    x = json_at(&d, r, 0);
    CHECK(!strcmp(gets_(&d, x, "id"), FIX_APP) && !strcmp(gets_(&d, x, "name"), "wordcount"));
    x = json_at(&d, json_get(&d, x, "attempts"), 0);
    CHECK(!strcmp(gets_(&d, x, "startTime"), "2026-11-28T17:46:29.123GMT"));
    CHECK(!strcmp(gets_(&d, x, "endTime"), "1969-12-31T23:59:59.999GMT"));
    CHECK_EQ_I64(geti(&d, x, "startTimeEpoch"), FIX_T0);
    CHECK_EQ_I64(geti(&d, x, "endTimeEpoch"), -1);
    CHECK(!strcmp(gets_(&d, x, "sparkUser"), "alice"));
    bool done = true;
    CHECK(json_as_bool(json_get(&d, x, "completed"), &done) && !done);
    CHECK(!json_get(&d, x, "attemptId"));
    CHECK_EQ_I64(get(&p, "/api/v1/applications?status=completed", &d, &b), 200);
    CHECK_EQ_I64(count(json_root(&d)), 0);
    CHECK_EQ_I64(get(&p, "/api/v1/applications?status=running&minDate=2026-11-28", &d, &b), 200);
    CHECK_EQ_I64(count(json_root(&d)), 1);
    CHECK_EQ_I64(get(&p, "/api/v1/applications?minDate=2026-11-28T17:46:30.000GMT", &d, &b), 200);
    CHECK_EQ_I64(count(json_root(&d)), 0);
    CHECK_EQ_I64(get(&p, APPS, &d, &b), 200);
    CHECK(!strcmp(gets_(&d, json_root(&d), "id"), FIX_APP));

    /* Jobs: newest first, with Spark's counts. */
    CHECK_EQ_I64(get(&p, APPS "/jobs", &d, &b), 200);
    r = json_root(&d);
    CHECK_EQ_I64(count(r), 3);
    CHECK_EQ_I64(geti(&d, json_at(&d, r, 0), "jobId"), 2);
    x = json_at(&d, r, 2);
    CHECK_EQ_I64(geti(&d, x, "jobId"), 0);
    CHECK(!strcmp(gets_(&d, x, "status"), "SUCCEEDED") && !strcmp(gets_(&d, x, "jobGroup"), "g1"));
    CHECK(!strcmp(gets_(&d, x, "description"), "count words") && !strcmp(gets_(&d, x, "name"), "collect at wc.c:20"));
    CHECK(!strcmp(gets_(&d, x, "submissionTime"), "2026-11-28T17:46:29.223GMT"));
    CHECK_EQ_I64(geti(&d, x, "numTasks"), 6);
    CHECK_EQ_I64(geti(&d, x, "numCompletedTasks"), 7);
    CHECK_EQ_I64(geti(&d, x, "numFailedTasks"), 2);
    CHECK_EQ_I64(geti(&d, x, "numKilledTasks"), 1);
    CHECK_EQ_I64(geti(&d, x, "numCompletedIndices"), 6);
    CHECK_EQ_I64(geti(&d, x, "numCompletedStages"), 2);
    CHECK_EQ_I64(geti(&d, x, "numFailedStages"), 1);
    CHECK_EQ_I64(geti(&d, x, "numSkippedStages"), 0);
    CHECK_EQ_I64(geti(&d, json_get(&d, x, "killedTasksSummary"), "another attempt succeeded"), 1);
    CHECK_EQ_I64(count(json_get(&d, x, "stageIds")), 2);
    CHECK_EQ_I64(get(&p, APPS "/jobs/1", &d, &b), 200);
    x = json_root(&d);
    CHECK_EQ_I64(geti(&d, x, "numSkippedStages"), 1);
    CHECK_EQ_I64(geti(&d, x, "numSkippedTasks"), 4);
    CHECK_EQ_I64(geti(&d, x, "numCompletedStages"), 1);
    CHECK(!json_get(&d, x, "jobGroup") && !json_get(&d, x, "description"));
    CHECK_EQ_I64(get(&p, APPS "/jobs?status=running", &d, &b), 200);
    r = json_root(&d);
    CHECK(count(r) == 1 && geti(&d, json_at(&d, r, 0), "numActiveTasks") == 1);
    CHECK(!json_get(&d, json_at(&d, r, 0), "completionTime"));
    CHECK_EQ_I64(get(&p, APPS "/jobs?status=succeeded&status=RUNNING", &d, &b), 200);
    CHECK_EQ_I64(count(json_root(&d)), 3);
    CHECK_EQ_I64(get(&p, APPS "/jobs?status=failed", &d, &b), 200);
    CHECK_EQ_I64(count(json_root(&d)), 0);

    /* Stages: every attempt, newest first; filters; one stage's attempts. */
    CHECK_EQ_I64(get(&p, APPS "/stages", &d, &b), 200);
    r = json_root(&d);
    CHECK_EQ_I64(count(r), 6);
    CHECK(geti(&d, json_at(&d, r, 0), "stageId") == 3 && !strcmp(gets_(&d, json_at(&d, r, 0), "status"), "ACTIVE"));
    CHECK(geti(&d, json_at(&d, r, 2), "stageId") == 1 && geti(&d, json_at(&d, r, 2), "attemptId") == 1);
    CHECK(!json_get(&d, json_at(&d, r, 0), "tasks"));
    CHECK_EQ_I64(get(&p, APPS "/stages?status=failed", &d, &b), 200);
    r = json_root(&d);
    CHECK(count(r) == 1 && geti(&d, json_at(&d, r, 0), "stageId") == 1);
    CHECK(!strcmp(gets_(&d, json_at(&d, r, 0), "failureReason"), "FetchFailed: missing map output"));
    CHECK_EQ_I64(get(&p, APPS "/stages?status=complete", &d, &b), 200);
    CHECK_EQ_I64(count(json_root(&d)), 4);
    CHECK_EQ_I64(get(&p, APPS "/stages?status=pending", &d, &b), 200);
    CHECK_EQ_I64(count(json_root(&d)), 0);
    CHECK_EQ_I64(get(&p, APPS "/stages/1", &d, &b), 200);
    r = json_root(&d);
    CHECK(count(r) == 2 && geti(&d, json_at(&d, r, 0), "attemptId") == 0);
    CHECK_EQ_I64(get(&p, APPS "/stages/0/0", &d, &b), 200);
    x = json_root(&d);
    CHECK(!strcmp(gets_(&d, x, "status"), "COMPLETE"));
    CHECK_EQ_I64(geti(&d, x, "numTasks"), 4);
    CHECK_EQ_I64(geti(&d, x, "numCompleteTasks"), 4);
    CHECK_EQ_I64(geti(&d, x, "numFailedTasks"), 1);
    CHECK_EQ_I64(geti(&d, x, "numKilledTasks"), 1);
    CHECK_EQ_I64(geti(&d, x, "numCompletedIndices"), 4);
    CHECK_EQ_I64(geti(&d, x, "executorRunTime"), 1050);
    CHECK_EQ_I64(geti(&d, x, "inputBytes"), 5000);
    CHECK_EQ_I64(geti(&d, x, "shuffleWriteBytes"), 2500);
    CHECK_EQ_I64(geti(&d, x, "shuffleWriteRecords"), 25);
    CHECK(!strcmp(gets_(&d, x, "name"), "map at wc.c:10"));
    CHECK(!strcmp(gets_(&d, x, "submissionTime"), "2026-11-28T17:46:29.223GMT"));
    CHECK(!strcmp(gets_(&d, x, "firstTaskLaunchedTime"), "2026-11-28T17:46:30.123GMT"));
    CHECK_EQ_I64(count(json_get(&d, x, "rddIds")), 2);
    const json_node *tasks = json_get(&d, x, "tasks");
    CHECK(tasks && tasks->type == JSON_OBJECT && count(tasks) == 6);
    const json_node *t5 = json_get(&d, tasks, "5");
    CHECK(!strcmp(gets_(&d, t5, "status"), "KILLED") && !strcmp(gets_(&d, t5, "errorMessage"), "another attempt succeeded"));
    CHECK(json_as_bool(json_get(&d, t5, "speculative"), &done) && done);
    CHECK(!json_get(&d, t5, "taskMetrics"));
    const json_node *t2 = json_get(&d, tasks, "2");
    CHECK_EQ_I64(geti(&d, t2, "duration"), 310);
    CHECK_EQ_I64(geti(&d, t2, "gettingResultTime"), 5);
    CHECK_EQ_I64(geti(&d, t2, "schedulerDelay"), 310 - 300 - 1 - 5);
    CHECK_EQ_I64(geti(&d, t2, "partitionId"), 2);
    CHECK(!strcmp(gets_(&d, t2, "executorId"), "1") && !strcmp(gets_(&d, t2, "host"), "h1"));
    CHECK_EQ_I64(geti(&d, json_get(&d, t2, "taskMetrics"), "executorRunTime"), 300);
    CHECK_EQ_I64(geti(&d, json_get(&d, json_get(&d, t2, "taskMetrics"), "shuffleWriteMetrics"), "bytesWritten"), 500);
    CHECK_STR_CONTAINS(gets_(&d, json_get(&d, t2, "executorLogs"), "stdout"), "logType=stdout");
    const json_node *es = json_get(&d, x, "executorSummary");
    CHECK(count(es) == 2 && geti(&d, json_get(&d, es, "2"), "failedTasks") == 1);
    CHECK_EQ_I64(geti(&d, json_get(&d, es, "1"), "succeededTasks"), 3);
    CHECK_EQ_I64(geti(&d, json_get(&d, x, "speculationSummary"), "numKilledTasks"), 1);
    CHECK_EQ_I64(get(&p, APPS "/stages/0/0?details=false", &d, &b), 200);
    CHECK(!json_get(&d, json_root(&d), "tasks"));
    CHECK_EQ_I64(get(&p, APPS "/stages/1/0", &d, &b), 200);
    t2 = json_get(&d, json_get(&d, json_root(&d), "tasks"), "6");
    CHECK_STR_CONTAINS(gets_(&d, t2, "errorMessage"), "FetchFailed(BlockManagerId(2, h2, 7002, None), shuffleId=0");

    /* taskSummary: the successful tasks 0 2 3 4 (run 100 300 200 400). */
    CHECK_EQ_I64(get(&p, APPS "/stages/0/0/taskSummary", &d, &b), 200);
    x = json_root(&d);
    const json_node *q = json_get(&d, x, "executorRunTime");
    CHECK_EQ_I64(count(q), 5);
    CHECK(getf_at(&d, q, 0) == 100 && getf_at(&d, q, 1) == 200 && getf_at(&d, q, 2) == 300);
    CHECK(getf_at(&d, q, 3) == 400 && getf_at(&d, q, 4) == 400);
    CHECK(getf_at(&d, json_get(&d, x, "quantiles"), 0) == 0.05);
    CHECK(getf_at(&d, json_get(&d, json_get(&d, x, "shuffleWriteMetrics"), "writeBytes"), 2) == 500);
    CHECK(getf_at(&d, json_get(&d, x, "duration"), 0) == 110);
    CHECK_EQ_I64(get(&p, APPS "/stages/0/0/taskSummary?quantiles=0,0.5,1.0", &d, &b), 200);
    q = json_get(&d, json_root(&d), "executorRunTime");
    CHECK(count(q) == 3 && getf_at(&d, q, 0) == 100 && getf_at(&d, q, 1) == 300 && getf_at(&d, q, 2) == 400);
    CHECK_EQ_I64(get(&p, APPS "/stages/3/0/taskSummary", &d, &b), 404);
    CHECK_STR_CONTAINS((char *)b.p, "No tasks reported metrics for 3 / 0 yet.");
    CHECK_EQ_I64(get(&p, APPS "/stages/0/0/taskSummary?quantiles=0.5,x", &d, &b), 400);
    CHECK_STR_CONTAINS((char *)b.p, "quantiles");
    CHECK_EQ_I64(get(&p, APPS "/stages/0/0/taskSummary?quantiles=1.5", &d, &b), 400);

    /* taskList: paging and sorting. */
    CHECK_EQ_I64(get(&p, APPS "/stages/0/0/taskList", &d, &b), 200);
    r = json_root(&d);
    CHECK(count(r) == 6 && geti(&d, json_at(&d, r, 0), "taskId") == 0 && geti(&d, json_at(&d, r, 5), "taskId") == 5);
    CHECK_EQ_I64(get(&p, APPS "/stages/0/0/taskList?sortBy=-runtime&length=2", &d, &b), 200);
    r = json_root(&d);
    CHECK(count(r) == 2 && geti(&d, json_at(&d, r, 0), "taskId") == 4 && geti(&d, json_at(&d, r, 1), "taskId") == 2);
    CHECK_EQ_I64(get(&p, APPS "/stages/0/0/taskList?sortBy=runtime&offset=1&length=2", &d, &b), 200);
    r = json_root(&d); /* killed 5 (no metrics) first, then 1 (50), 0 (100) */
    CHECK(count(r) == 2 && geti(&d, json_at(&d, r, 0), "taskId") == 1 && geti(&d, json_at(&d, r, 1), "taskId") == 0);
    CHECK_EQ_I64(get(&p, APPS "/stages/0/0/taskList?status=failed", &d, &b), 200);
    CHECK(count(json_root(&d)) == 1 && geti(&d, json_at(&d, json_root(&d), 0), "taskId") == 1);
    CHECK_EQ_I64(get(&p, APPS "/stages/3/0/taskList", &d, &b), 200);
    x = json_at(&d, json_root(&d), 0);
    CHECK(!strcmp(gets_(&d, x, "status"), "RUNNING") && geti(&d, x, "duration") > 0);
    CHECK_EQ_I64(get(&p, APPS "/stages/0/0/taskList?sortBy=size", &d, &b), 400);
    CHECK_EQ_I64(get(&p, APPS "/stages/0/0/taskList?offset=-1", &d, &b), 400);

    /* Executors, storage, environment. */
    CHECK_EQ_I64(get(&p, APPS "/executors", &d, &b), 200);
    CHECK_EQ_I64(count(json_root(&d)), 2);
    CHECK_EQ_I64(get(&p, APPS "/allexecutors", &d, &b), 200);
    r = json_root(&d);
    CHECK_EQ_I64(count(r), 3);
    for (size_t i = 0; i < 3; i++) {
        x = json_at(&d, r, i);
        const char *id = gets_(&d, x, "id");
        if (!strcmp(id, "1")) {
            CHECK(!strcmp(gets_(&d, x, "hostPort"), "h1:7001"));
            CHECK(geti(&d, x, "totalTasks") == 9 && geti(&d, x, "completedTasks") == 6);
            CHECK(geti(&d, x, "activeTasks") == 1 && geti(&d, x, "failedTasks") == 1 && geti(&d, x, "totalCores") == 2);
            CHECK_EQ_I64(geti(&d, x, "totalInputBytes"), 4000);
        } else if (!strcmp(id, "2")) {
            CHECK(json_as_bool(json_get(&d, x, "isActive"), &done) && !done);
            CHECK(!strcmp(gets_(&d, x, "removeReason"), "lost worker"));
            CHECK(!strcmp(gets_(&d, x, "removeTime"), "2026-11-28T17:46:38.123GMT"));
            CHECK_EQ_I64(geti(&d, x, "totalShuffleRead"), 500);
        } else {
            CHECK(!strcmp(id, "driver") && geti(&d, x, "maxMemory") == 1000);
        }
    }
    CHECK_EQ_I64(get(&p, APPS "/storage/rdd", &d, &b), 200);
    r = json_root(&d);
    CHECK_EQ_I64(count(r), 1);
    x = json_at(&d, r, 0);
    CHECK(geti(&d, x, "id") == 1 && geti(&d, x, "numCachedPartitions") == 4 && geti(&d, x, "memoryUsed") == 4096);
    CHECK(!strcmp(gets_(&d, x, "storageLevel"), "Memory Deserialized 1x Replicated"));
    CHECK_EQ_I64(get(&p, APPS "/storage/rdd/1", &d, &b), 200);
    CHECK(!strcmp(gets_(&d, json_root(&d), "name"), "words"));
    CHECK_EQ_I64(get(&p, APPS "/storage/rdd/0", &d, &b), 404);
    CHECK_STR_CONTAINS((char *)b.p, "no rdd found w/ id 0");
    CHECK_EQ_I64(get(&p, APPS "/environment", &d, &b), 200);
    r = json_get(&d, json_root(&d), "sparkProperties");
    CHECK_EQ_I64(count(r), 3);
    const char *k = NULL, *v = NULL;
    CHECK(json_as_str(&d, json_at(&d, json_at(&d, r, 1), 0), &k, NULL) && !strcmp(k, "ember.authenticate.secret"));
    CHECK(json_as_str(&d, json_at(&d, json_at(&d, r, 1), 1), &v, NULL) && !strcmp(v, "*********(redacted)"));
    CHECK(json_as_str(&d, json_at(&d, json_at(&d, r, 0), 0), &k, NULL) && !strcmp(k, "ember.app.name"));
    CHECK_EQ_I64(count(json_get(&d, json_root(&d), "systemProperties")), 1);
    CHECK(!strstr((char *)b.p, "hunter2"));

    /* Not found and bad requests. */
    CHECK_EQ_I64(get(&p, "/api/v1/applications/nope/jobs", &d, &b), 404);
    CHECK_STR_CONTAINS((char *)b.p, "no such app: nope");
    CHECK_EQ_I64(get(&p, APPS "/jobs/9", &d, &b), 404);
    CHECK_STR_CONTAINS((char *)b.p, "unknown job: 9");
    CHECK_EQ_I64(get(&p, APPS "/stages/9", &d, &b), 404);
    CHECK_STR_CONTAINS((char *)b.p, "unknown stage: 9");
    CHECK_EQ_I64(get(&p, APPS "/stages/1/4", &d, &b), 404);
    CHECK_STR_CONTAINS((char *)b.p, "unknown attempt for stage 1.  Found attempts: [0,1]");
    CHECK_EQ_I64(get(&p, APPS "/jobs/x", &d, &b), 404);
    CHECK_EQ_I64(get(&p, APPS "/nothing", &d, &b), 404);
    CHECK_EQ_I64(get(&p, "/api/v1/nothing", &d, &b), 404);
    CHECK_EQ_I64(get(&p, APPS "/jobs?status=bogus", &d, &b), 400);
    CHECK_STR_CONTAINS((char *)b.p, "Bad value for parameter \"status\"");
    CHECK_EQ_I64(get(&p, APPS "/stages?status=%61ctive", &d, &b), 200); /* percent-decoded: active */
    CHECK_EQ_I64(count(json_root(&d)), 1);
    CHECK_EQ_I64(get(&p, "/api/v1/applications?limit=x", &d, &b), 400);

    /* The application ended. */
    app_event e = fx_ev(AE_APP_END, FIX_T0 + 30000);
    status_on_event(st, &e);
    CHECK_EQ_I64(get(&p, "/api/v1/applications?status=completed", &d, &b), 200);
    x = json_at(&d, json_get(&d, json_at(&d, json_root(&d), 0), "attempts"), 0);
    CHECK(json_as_bool(json_get(&d, x, "completed"), &done) && done);
    CHECK_EQ_I64(geti(&d, x, "duration"), 30000);
    CHECK(!strcmp(gets_(&d, x, "endTime"), "2026-11-28T17:46:59.123GMT"));
    json_doc_free(&d);
    ebuf_free(&b);
    status_free(st);
}

/* ----------------------------------------------------------- over TCP */

static int raw_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* GET path over a new connection; the whole answer in buf.  The status,
 * or -1. */
static int http_get(int port, const char *path, char *buf, size_t cap) {
    int fd = raw_connect(port);
    if (fd < 0) return -1;
    char req[1200];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", path);
    size_t got = 0;
    int rc = -1;
    if (send(fd, req, (size_t)n, MSG_NOSIGNAL) == n) {
        for (;;) {
            struct pollfd pf = {fd, POLLIN, 0};
            if (poll(&pf, 1, 20000) != 1) break;
            ssize_t k = read(fd, buf + got, cap - 1 - got);
            if (k <= 0) {
                rc = k == 0 || errno == ECONNRESET ? 0 : -1;
                break;
            }
            got += (size_t)k;
            if (got == cap - 1) break;
        }
    }
    close(fd);
    buf[got] = 0;
    if (rc || strncmp(buf, "HTTP/1.0 ", 9)) return -1;
    return atoi(buf + 9);
}

/* A listening socket on a port the kernel picks; its port in *port. */
static int hold_port(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof sa;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 1) ||
        getsockname(fd, (struct sockaddr *)&sa, &len)) {
        if (fd >= 0) close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

TEST(ui_server_over_tcp) {
    log_set_level(LOG_ERROR);
    status_store *st = status_new(NULL);
    CHECK(st);
    fx_feed(st);
    rest_provider p;
    rest_single(&p, st);
    ui_conf c = {"127.0.0.1", NULL, 0, 0, 0, 0};
    ui_server *u = NULL;
    CHECK_OK(ui_start(&c, &p, &u));
    int port = ui_port(u);
    CHECK(port > 0);
    static char buf[1 << 20];
    CHECK_EQ_I64(http_get(port, "/api/v1/applications/" FIX_APP "/jobs?status=succeeded", buf, sizeof buf), 200);
    CHECK_STR_CONTAINS(buf, "Content-Type: application/json");
    char *body = strstr(buf, "\r\n\r\n");
    CHECK(body);
    body += 4;
    json_doc d = JSON_DOC_INIT;
    CHECK_OK(json_parse((const uint8_t *)body, strlen(body), NULL, &d));
    CHECK_EQ_I64(count(json_root(&d)), 2);
    CHECK_EQ_I64(geti(&d, json_at(&d, json_root(&d), 0), "jobId"), 1);
    json_doc_free(&d);
    CHECK_EQ_I64(http_get(port, "/api/v1/applications/" FIX_APP "/stages/0/0/taskList?length=1&sortBy=-runtime", buf,
                          sizeof buf), 200);
    CHECK_STR_CONTAINS(buf, "\"taskId\":4,");
    CHECK_EQ_I64(http_get(port, "/api/v1/applications/nope", buf, sizeof buf), 404);
    CHECK_STR_CONTAINS(buf, "no such app: nope");
    CHECK_EQ_I64(http_get(port, "/api/v1/applications/" FIX_APP "/stages?details=maybe", buf, sizeof buf), 400);
    CHECK_EQ_I64(http_get(port, "/", buf, sizeof buf), 200);
    CHECK_STR_CONTAINS(buf, "text/html");
    CHECK_STR_CONTAINS(buf, "id=\"jobs-completed\"");
    CHECK_EQ_I64(http_get(port, "/favicon.ico", buf, sizeof buf), 404);

    /* A taken port: the next one is tried, as Spark does; with no retries,
     * the start fails and names the address. */
    int taken, fd = hold_port(&taken);
    CHECK(fd >= 0);
    ui_conf c2 = {"0.0.0.0", "localhost", taken, 16, 0, 0};
    ui_server *u2 = NULL;
    int rc = ui_start(&c2, &p, &u2);
    if (rc == 0) {
        CHECK(ui_port(u2) > taken && ui_port(u2) <= taken + 16);
        CHECK_EQ_I64(http_get(ui_port(u2), "/api/v1/version", buf, sizeof buf), 200);
        ui_stop(u2);
    } else {
        CHECK(taken + 16 > 65535); /* no room above it */
    }
    ui_conf c3 = {"0.0.0.0", NULL, taken, 0, 0, 0};
    CHECK_EQ_I64(ui_start(&c3, &p, &u2), EM_EIO);
    CHECK(u2 == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "0.0.0.0");
    close(fd);
    ui_stop(u);
    status_free(st);
}

/* ------------------------------------------------- readers and a writer */

typedef struct reader {
    const rest_provider *p;
    int stop; /* atomic: set by the feeding thread */
    int answers, bad;
} reader;

static void *read_loop(void *arg) {
    reader *rd = arg;
    static const char *const targets[] = {
        APPS "/jobs", APPS "/stages?details=true", APPS "/stages/0/0/taskSummary",
        APPS "/stages/0/0/taskList?sortBy=-runtime&length=50", APPS "/allexecutors", "/api/v1/applications"};
    json_doc d = JSON_DOC_INIT;
    ebuf b = EBUF_INIT;
    for (int i = 0; !__atomic_load_n(&rd->stop, __ATOMIC_ACQUIRE) || i < 6; i++) {
        int s = get(rd->p, targets[i % 6], &d, &b);
        rd->answers++;
        if (s != 200 && s != 404) rd->bad++;
    }
    json_doc_free(&d);
    ebuf_free(&b);
    return NULL;
}

/* The listener's thread feeds jobs of 1,000 tasks (stage and job ids
 * reused as the limits drop them) while another thread asks for every
 * shape: each answer is whole (200 with JSON that parses, or 404). */
TEST(rest_readers_while_feeding) {
    status_limits lim = {3, 3, 300, 2};
    status_store *st = status_new(&lim);
    CHECK(st);
    app_event e = fx_ev(AE_APP_START, FIX_T0);
    e.app_id = (char *)FIX_APP;
    e.app_name = (char *)"busy";
    status_on_event(st, &e);
    rest_provider p;
    rest_single(&p, st);
    reader rd = {&p, 0, 0, 0};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, read_loop, &rd) == 0);
    int64_t id = 0;
    for (int job = 0; job < 20; job++) {
        ae_stage s = fx_stage(0, job, 1000);
        s.rdds = NULL;
        s.nrdds = 0;
        fx_job_start(st, job, &s, 1, FIX_T0 + job, 0);
        s.submit_ms = FIX_T0 + job;
        fx_stage_ev(st, AE_STAGE_SUBMITTED, s, s.submit_ms);
        for (int i = 0; i < 1000; i++, id++) {
            ae_task k = fx_task(id, i, 0, i % 3 ? "1" : "2", FIX_T0 + id);
            fx_task_start(st, 0, job, k);
            fx_task_end(st, 0, job, k, i % 97 ? AE_SUCCESS : AE_EXCEPTION, i % 50);
        }
        s.complete_ms = FIX_T0 + id;
        fx_stage_ev(st, AE_STAGE_COMPLETED, s, s.complete_ms);
        fx_job_end(st, job, 0, FIX_T0 + id);
    }
    __atomic_store_n(&rd.stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    fprintf(stderr, "  %d answers while feeding\n", rd.answers);
    CHECK(rd.answers >= 6);
    CHECK_EQ_I64(rd.bad, 0);
    status_rdlock(st);
    CHECK_EQ_I64(status_njobs(st), 3);
    CHECK_EQ_I64(status_nstages(st), 3);
    CHECK_EQ_I64(status_stage(st, 0, 19)->ntasks_kept, 300);
    status_unlock(st);
    status_free(st);
}
