/*
 * test_uipages.c -- the UI's HTML pages (engine/uipages.c and the
 * uipage_*.c, uidag.c, uitimeline.c it routes to) over the store of
 * status_fixture.h's application: each page's status, the rows of its
 * tables against the fixture's counts, the job DAG's nodes and edges,
 * the stage page's summary quantiles, per-executor rows and task paging,
 * redaction, escaping, 404s and 400s; the history server's paths; a
 * 100,000-task stage rendered quickly with a bounded timeline; and the
 * pages over TCP through ui_start.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../test.h"
#include "ember.h"
#include "log.h"
#include "rest.h"
#include "status_fixture.h"
#include "ui.h"
#include "uipages.h"

/* GET target ("/path?query") through uipage_route; the body in b,
 * NUL-terminated.  The status, or -1. */
static int page(const rest_provider *p, int history, const char *target, ebuf *b) {
    char path[1024];
    const char *q = strchr(target, '?');
    size_t n = q ? (size_t)(q - target) : strlen(target);
    memcpy(path, target, n);
    path[n] = 0;
    int status = 0;
    ebuf_reset(b);
    if (uipage_route(p, history, path, q ? q + 1 : "", &status, b)) return -1;
    if (ebuf_append(b, "", 1)) return -1;
    b->len--;
    return status;
}

static int occurrences(const char *from, const char *to, const char *needle) {
    int n = 0;
    size_t k = strlen(needle);
    for (const char *s = from; (s = strstr(s, needle)) && (!to || s < to); s += k) n++;
    return n;
}

/* The body rows of the table whose id is id; -1 when there is none. */
static int rows(const ebuf *b, const char *id) {
    char key[96];
    snprintf(key, sizeof key, "<table class=\"sortable\" id=\"%s\">", id);
    const char *t = strstr((const char *)b->p, key);
    if (!t) return -1;
    const char *end = strstr(t, "</table>");
    return occurrences(t, end, "<tr") - 1; /* less the head's */
}

/* Every element these pages open is closed, and the page is whole. */
static int balanced(const ebuf *b) {
    const char *s = (const char *)b->p;
    static const char *const tags[] = {"table", "tr", "td", "th", "svg", "g", "a", "ul", "li", "details",
                                       "p", "div", "text", "title", "h1", "h2", "header", "main", "nav"};
    if (strncmp(s, "<!DOCTYPE html>", 15) || !strstr(s, "</html>")) return 0;
    for (size_t i = 0; i < sizeof tags / sizeof *tags; i++) {
        char open1[32], open2[32], close[32];
        snprintf(open1, sizeof open1, "<%s>", tags[i]);
        snprintf(open2, sizeof open2, "<%s ", tags[i]);
        snprintf(close, sizeof close, "</%s>", tags[i]);
        int o = occurrences(s, NULL, open1) + occurrences(s, NULL, open2), c = occurrences(s, NULL, close);
        if (o != c) {
            fprintf(stderr, "unbalanced <%s>: %d opened, %d closed\n", tags[i], o, c);
            return 0;
        }
    }
    return 1;
}

static status_store *fixture(rest_provider *p) {
    status_store *st = status_new(NULL);
    if (st) {
        fx_feed(st);
        rest_single(p, st);
    }
    return st;
}

TEST(uipages_jobs_and_job) {
    rest_provider p;
    status_store *st = fixture(&p);
    CHECK(st);
    ebuf b = {0};
    CHECK_EQ_I64(page(&p, 0, "/", &b), 200);
    CHECK(balanced(&b));
    CHECK_EQ_I64(rows(&b, "jobs-active"), 1);
    CHECK_EQ_I64(rows(&b, "jobs-completed"), 2);
    CHECK_EQ_I64(rows(&b, "jobs-failed"), -1); /* no failed jobs: no table */
    CHECK_STR_CONTAINS((char *)b.p, "wordcount - ember UI");
    CHECK_STR_CONTAINS((char *)b.p, "<a href=\"/jobs/job/?id=0\">count words</a>");
    CHECK_STR_CONTAINS((char *)b.p, "<nav><a class=\"active\" href=\"/jobs/\">Jobs</a><a href=\"/stages/\">Stages</a>");
    /* Job 0: stages 2/2 (1 attempt failed), tasks: its 6 indices done, 2
     * attempts failed, 1 killed; job 1 skipped stage 0's 4 tasks. */
    CHECK_STR_CONTAINS((char *)b.p, "<span>2/2 (1 failed)</span>");
    CHECK_STR_CONTAINS((char *)b.p, "<span>6/6 (2 failed) (1 killed)</span>");
    CHECK_STR_CONTAINS((char *)b.p, "<span>2/2 (4 skipped)</span>");
    CHECK_STR_CONTAINS((char *)b.p, "<span>0/1 (1 running)</span>");
    /* The event timeline: the 3 executors added, 1 removed, a bar per job
     * linking to its page, the running one blue. */
    const char *svg = strstr((char *)b.p, "<svg id=\"jobs-timeline\"");
    CHECK(svg);
    const char *end = strstr(svg, "</svg>");
    CHECK_EQ_I64(occurrences(svg, end, "<circle class=\"added\""), 3);
    CHECK_EQ_I64(occurrences(svg, end, "<circle class=\"removed\""), 1);
    CHECK_EQ_I64(occurrences(svg, end, "<rect class=\"job"), 3);
    CHECK_EQ_I64(occurrences(svg, end, "<rect class=\"job running\""), 1);
    CHECK_STR_CONTAINS(svg, "<a href=\"/jobs/job/?id=0\"><rect class=\"job \" data-job-id=\"0\"");
    CHECK_STR_CONTAINS(svg, "<title>Executor 2 removed at ");
    CHECK_STR_CONTAINS(svg, ": lost worker</title>");
    CHECK_EQ_I64(page(&p, 0, "/jobs/", &b), 200);
    CHECK_EQ_I64(rows(&b, "jobs-completed"), 2);

    CHECK_EQ_I64(page(&p, 0, "/jobs/job/?id=0", &b), 200);
    CHECK(balanced(&b));
    CHECK_EQ_I64(occurrences((char *)b.p, NULL, "<g class=\"stage"), 2);
    CHECK_STR_CONTAINS((char *)b.p,
                       "<g class=\"stage\" data-stage-id=\"0\"><a href=\"/stages/stage/?id=0&amp;attempt=1\">");
    CHECK_STR_CONTAINS((char *)b.p, "data-from=\"0\" data-to=\"1\"");
    CHECK_EQ_I64(occurrences((char *)b.p, NULL, "class=\"edge\""), 1);
    CHECK_EQ_I64(rows(&b, "stages-completed"), 3); /* 0.0, 0.1, 1.1 */
    CHECK_EQ_I64(rows(&b, "stages-failed"), 1);    /* 1.0 */
    CHECK_STR_CONTAINS((char *)b.p, "FetchFailed: missing map output");
    CHECK_STR_CONTAINS((char *)b.p, "<li><b>Job Group:</b> g1</li>");
    /* Job 1 skipped stage 0: greyed in its DAG, in its skipped table. */
    CHECK_EQ_I64(page(&p, 0, "/jobs/job/?id=1", &b), 200);
    CHECK_EQ_I64(occurrences((char *)b.p, NULL, "<g class=\"stage"), 2);
    CHECK_STR_CONTAINS((char *)b.p, "<g class=\"stage skipped\" data-stage-id=\"0\">");
    CHECK_STR_CONTAINS((char *)b.p, "<g class=\"stage\" data-stage-id=\"2\">");
    CHECK_EQ_I64(rows(&b, "stages-skipped"), 1);
    CHECK_EQ_I64(rows(&b, "stages-completed"), 1);
    CHECK_EQ_I64(page(&p, 0, "/jobs/job/?id=2", &b), 200);
    CHECK_EQ_I64(rows(&b, "stages-active"), 1);

    CHECK_EQ_I64(page(&p, 0, "/jobs/job/?id=99", &b), 404);
    CHECK_STR_CONTAINS((char *)b.p, "unknown job: 99");
    CHECK(balanced(&b));
    CHECK_EQ_I64(page(&p, 0, "/jobs/job/?id=x", &b), 400);
    CHECK_STR_CONTAINS((char *)b.p, "bad parameter id");
    CHECK_EQ_I64(page(&p, 0, "/jobs/job/", &b), 400);
    CHECK_EQ_I64(page(&p, 0, "/jobs/job/?id=%zz", &b), 400);
    CHECK_EQ_I64(page(&p, 0, "/nope", &b), 404);
    CHECK_EQ_I64(page(&p, 0, "/favicon.ico", &b), 404);
    ebuf_free(&b);
    status_free(st);
}

TEST(uipages_stages_and_stage) {
    rest_provider p;
    status_store *st = fixture(&p);
    CHECK(st);
    ebuf b = {0};
    CHECK_EQ_I64(page(&p, 0, "/stages/", &b), 200);
    CHECK(balanced(&b));
    CHECK_EQ_I64(rows(&b, "stages-active"), 1);
    CHECK_EQ_I64(rows(&b, "stages-completed"), 4);
    CHECK_EQ_I64(rows(&b, "stages-failed"), 1);
    CHECK_EQ_I64(rows(&b, "stages-pending"), -1);
    CHECK_STR_CONTAINS((char *)b.p, "<tr data-stage-id=\"1\" data-attempt=\"1\"><td data-v=\"1\">1 (retry 1)</td>");

    CHECK_EQ_I64(page(&p, 0, "/stages/stage/?id=0&attempt=0", &b), 200);
    CHECK(balanced(&b));
    CHECK_EQ_I64(rows(&b, "tasks"), 6);
    CHECK_EQ_I64(rows(&b, "executor-summary"), 2);
    /* Tasks 0, 2, 3, 4 succeeded: durations 110, 310, 210, 410 ms. */
    CHECK_STR_CONTAINS((char *)b.p, "Summary Metrics for 4 Completed Tasks");
    CHECK_STR_CONTAINS((char *)b.p, "<tr><td>Duration</td><td data-v=\"110\">110 ms</td><td data-v=\"210\">210 ms</td>"
                                    "<td data-v=\"310\">310 ms</td><td data-v=\"410\">410 ms</td>"
                                    "<td data-v=\"410\">410 ms</td></tr>");
    CHECK_STR_CONTAINS((char *)b.p, "<td>Input Size</td>");
    CHECK(!strstr((char *)b.p, "<td>Shuffle Read Size</td>")); /* the stage read no shuffle */
    /* The timeline: a bar per task (6 tasks, 2 executors). */
    CHECK_EQ_I64(occurrences((char *)b.p, NULL, "<rect class=\"task"), 6);
    CHECK_EQ_I64(occurrences((char *)b.p, NULL, "<rect class=\"lane\""), 2);
    CHECK_STR_CONTAINS((char *)b.p, "<rect class=\"task failed\" data-task-id=\"1\"");
    CHECK_STR_CONTAINS((char *)b.p, "<rect class=\"task killed\" data-task-id=\"5\"");
    /* The speculative attempt and the failed one are rows. */
    CHECK_STR_CONTAINS((char *)b.p, "<td>KILLED</td>");
    CHECK_STR_CONTAINS((char *)b.p, "<td>true</td>");
    CHECK_STR_CONTAINS((char *)b.p, "java.lang.RuntimeException: boom");
    CHECK_STR_CONTAINS((char *)b.p, "logType=stdout\">stdout</a>");
    /* Sorted by duration, the longest first; paged. */
    CHECK_EQ_I64(page(&p, 0, "/stages/stage/?id=0&attempt=0&task.sort=duration&task.desc=true&task.length=2", &b), 200);
    CHECK_EQ_I64(rows(&b, "tasks"), 2);
    const char *t = strstr((char *)b.p, "id=\"tasks\"");
    CHECK(t && strstr(t, "<tr data-task-id=\"4\">") < strstr(t, "<tr data-task-id=\"2\">"));
    CHECK_STR_CONTAINS((char *)b.p, "Showing tasks 1 to 2 of 6");
    CHECK_STR_CONTAINS((char *)b.p,
                       "task.offset=2&amp;task.length=2&amp;task.sort=duration&amp;task.desc=true\">Next</a>");
    CHECK_EQ_I64(page(&p, 0, "/stages/stage/?id=0&attempt=0&task.offset=5", &b), 200);
    CHECK_EQ_I64(rows(&b, "tasks"), 1);
    CHECK_EQ_I64(page(&p, 0, "/stages/stage/?id=0&attempt=0&task.offset=50", &b), 200);
    CHECK_EQ_I64(rows(&b, "tasks"), 0);
    /* Stage 3 runs its one task: no completed tasks yet. */
    CHECK_EQ_I64(page(&p, 0, "/stages/stage/?id=3&attempt=0", &b), 200);
    CHECK_STR_CONTAINS((char *)b.p, "Summary Metrics for 0 Completed Tasks");
    CHECK_STR_CONTAINS((char *)b.p, "<rect class=\"task running\" data-task-id=\"12\"");

    CHECK_EQ_I64(page(&p, 0, "/stages/stage/?id=0&attempt=7", &b), 404);
    CHECK_EQ_I64(page(&p, 0, "/stages/stage/?id=42", &b), 404);
    CHECK_EQ_I64(page(&p, 0, "/stages/stage/?id=0&task.length=0", &b), 400);
    CHECK_EQ_I64(page(&p, 0, "/stages/stage/?id=0&task.sort=bogus", &b), 400);
    CHECK_EQ_I64(page(&p, 0, "/stages/stage/?id=0&task.desc=maybe", &b), 400);
    CHECK_EQ_I64(page(&p, 0, "/stages/stage/?id=-1", &b), 400);
    ebuf_free(&b);
    status_free(st);
}

TEST(uipages_storage_environment_executors) {
    rest_provider p;
    status_store *st = fixture(&p);
    CHECK(st);
    ebuf b = {0};
    CHECK_EQ_I64(page(&p, 0, "/storage/", &b), 200);
    CHECK(balanced(&b));
    CHECK_EQ_I64(rows(&b, "storage-rdds"), 1);
    CHECK_STR_CONTAINS((char *)b.p, "<td><a href=\"/storage/rdd/?id=1\">words</a></td><td>Memory Deserialized 1x "
                                    "Replicated</td><td class=\"n\">4</td><td data-v=\"100\">100%</td>"
                                    "<td data-v=\"4096\">4.0 KiB</td>");
    /* Block updates: partition 0 on executor 1 and the driver, 3 on disk. */
    fx_block(st, "1", 1, 0, 0, 2048);
    fx_block(st, "driver", 1, 0, 0, 2048);
    fx_block(st, "1", 1, 3, 1, 1048576);
    CHECK_EQ_I64(page(&p, 0, "/storage/", &b), 200);
    CHECK_STR_CONTAINS((char *)b.p, "<td class=\"n\">2</td><td data-v=\"50\">50%</td><td data-v=\"4096\">4.0 KiB</td>"
                                    "<td data-v=\"1048576\">1.0 MiB</td>");
    CHECK_EQ_I64(page(&p, 0, "/storage/rdd/?id=1", &b), 200);
    CHECK(balanced(&b));
    CHECK_STR_CONTAINS((char *)b.p, "<title>RDD Storage Info for words</title>");
    CHECK_EQ_I64(rows(&b, "rdd-distribution"), 2);
    CHECK_EQ_I64(rows(&b, "rdd-partitions"), 2);
    CHECK_STR_CONTAINS((char *)b.p, "<td data-v=\"0\">rdd_1_0</td><td>Memory Serialized 2x Replicated</td>"
                                    "<td data-v=\"4096\">4.0 KiB</td><td data-v=\"0\"></td><td>1 driver</td>");
    CHECK_STR_CONTAINS((char *)b.p, "<td data-v=\"3\">rdd_1_3</td><td>Disk Serialized 1x Replicated</td>");
    CHECK_EQ_I64(page(&p, 0, "/storage/rdd/?id=0", &b), 404);
    CHECK_EQ_I64(page(&p, 0, "/storage/rdd/", &b), 400);

    CHECK_EQ_I64(page(&p, 0, "/environment/", &b), 200);
    CHECK(balanced(&b));
    CHECK_EQ_I64(rows(&b, "env-spark"), 3);
    CHECK_EQ_I64(rows(&b, "env-system"), 1);
    CHECK(!strstr((char *)b.p, "hunter2"));
    CHECK_STR_CONTAINS((char *)b.p, "<td>ember.authenticate.secret</td><td>*********(redacted)</td>");
    CHECK_STR_CONTAINS((char *)b.p, "<td>ember.master</td><td>local[2]</td>");

    CHECK_EQ_I64(page(&p, 0, "/executors/", &b), 200);
    CHECK(balanced(&b));
    CHECK_EQ_I64(rows(&b, "executors"), 3);
    CHECK_EQ_I64(rows(&b, "executors-summary"), 3);
    CHECK_EQ_I64(occurrences((char *)b.p, NULL, "<tr class=\"dead\">"), 1);
    CHECK_STR_CONTAINS((char *)b.p, "lost worker");
    CHECK_STR_CONTAINS((char *)b.p, "<a href=\"http://h1:8081/logPage/?executorId=1&amp;logType=stderr\">stderr</a>");
    CHECK_STR_CONTAINS((char *)b.p, "<td>Total</td><td class=\"n\">3</td>");
    /* Executor 1's cached blocks: RDD Blocks, Storage Memory, Disk Used. */
    CHECK_STR_CONTAINS((char *)b.p, "<td class=\"n\">2</td><td data-v=\"2048\">2.0 KiB / 0 B</td>"
                                    "<td data-v=\"1048576\">1.0 MiB</td>");
    ebuf_free(&b);
    status_free(st);
}

TEST(uipages_escape_names) {
    status_store *st = status_new(NULL);
    CHECK(st);
    app_event e = fx_ev(AE_APP_START, FIX_T0);
    e.app_name = (char *)"<script>alert(1)</script>";
    e.app_id = (char *)"app-1";
    status_on_event(st, &e);
    ae_stage s = fx_stage(0, 0, 1);
    s.name = (char *)"<script>stage</script>";
    s.submit_ms = FIX_T0;
    fx_job_start(st, 0, &s, 1, FIX_T0, 0);
    fx_stage_ev(st, AE_STAGE_SUBMITTED, s, FIX_T0);
    e = fx_ev(AE_ENV_UPDATE, FIX_T0);
    ae_prop sp[1] = {{(char *)"x\"><script>", (char *)"<em>v</em>"}};
    e.props[AE_ENV_SPARK] = sp;
    e.nprops[AE_ENV_SPARK] = 1;
    status_on_event(st, &e);
    rest_provider p;
    rest_single(&p, st);
    ebuf b = {0};
    static const char *const pages[] = {"/jobs/", "/jobs/job/?id=0", "/stages/", "/stages/stage/?id=0&attempt=0",
                                        "/environment/", "/storage/", "/executors/", "/jobs/job/?id=<script>"};
    for (size_t i = 0; i < sizeof pages / sizeof *pages; i++) {
        int status = page(&p, 0, pages[i], &b);
        CHECK(status == 200 || status == 400);
        CHECK(balanced(&b));
        CHECK(!strstr((char *)b.p, "<script>alert") && !strstr((char *)b.p, "<script>stage") &&
              !strstr((char *)b.p, "\"><script>") && !strstr((char *)b.p, "<em>"));
    }
    CHECK_EQ_I64(page(&p, 0, "/jobs/job/?id=0", &b), 200);
    CHECK_STR_CONTAINS((char *)b.p, "&lt;script&gt;alert(1)&lt;/script&gt; - ember UI");
    CHECK_STR_CONTAINS((char *)b.p, "&lt;script&gt;stage&lt;/script&gt;");
    ebuf_free(&b);
    status_free(st);
}

TEST(uipages_history_paths) {
    rest_provider p;
    status_store *st = fixture(&p);
    CHECK(st);
    ebuf b = {0};
    CHECK_EQ_I64(page(&p, 1, "/", &b), 200);
    CHECK(balanced(&b));
    CHECK_EQ_I64(rows(&b, "apps"), 1);
    CHECK_STR_CONTAINS((char *)b.p, "<a href=\"/history/" FIX_APP "/jobs/\">" FIX_APP "</a>");
    CHECK_EQ_I64(page(&p, 1, "/history/" FIX_APP "/jobs/", &b), 200);
    CHECK_EQ_I64(rows(&b, "jobs-completed"), 2);
    CHECK_STR_CONTAINS((char *)b.p, "<a href=\"/history/" FIX_APP "/jobs/job/?id=0\">count words</a>");
    CHECK_STR_CONTAINS((char *)b.p, "<a href=\"/history/" FIX_APP "/executors/\">Executors</a>");
    CHECK_EQ_I64(page(&p, 1, "/history/" FIX_APP, &b), 200);
    CHECK_EQ_I64(rows(&b, "jobs-active"), 1);
    CHECK_EQ_I64(page(&p, 1, "/history/" FIX_APP "/stages/stage/?id=0&attempt=0", &b), 200);
    CHECK_EQ_I64(rows(&b, "tasks"), 6);
    CHECK_STR_CONTAINS((char *)b.p, "href=\"/history/" FIX_APP "/jobs/job/?id=0\"");
    CHECK_EQ_I64(page(&p, 1, "/history/" FIX_APP "/jobs/job/?id=1", &b), 200);
    CHECK_STR_CONTAINS((char *)b.p, "href=\"/history/" FIX_APP "/stages/stage/?id=2&amp;attempt=0\"");
    /* An attempt id the application does not have, an unknown one. */
    CHECK_EQ_I64(page(&p, 1, "/history/" FIX_APP "/2/jobs/", &b), 404);
    CHECK_EQ_I64(page(&p, 1, "/history/nope/jobs/", &b), 404);
    CHECK_STR_CONTAINS((char *)b.p, "Application nope not found.");
    CHECK(balanced(&b));
    /* The id percent-encoded, as a link may carry it; a bad escape. */
    CHECK_EQ_I64(page(&p, 1, "/history/app%2D20261128174629%2d0000/jobs/", &b), 200);
    CHECK_EQ_I64(rows(&b, "jobs-completed"), 2);
    CHECK_STR_CONTAINS((char *)b.p, "<a href=\"/history/" FIX_APP "/executors/\">Executors</a>");
    CHECK_EQ_I64(page(&p, 1, "/history/app%zz/jobs/", &b), 404);
    CHECK_EQ_I64(page(&p, 1, "/history/app%00/jobs/", &b), 404);
    CHECK_EQ_I64(page(&p, 1, "/jobs/", &b), 404);
    CHECK_EQ_I64(page(&p, 1, "/history/", &b), 404);
    /* A driver with no application yet. */
    status_store *empty = status_new(NULL);
    CHECK(empty);
    rest_provider q;
    rest_single(&q, empty);
    CHECK_EQ_I64(page(&q, 0, "/", &b), 404);
    CHECK_EQ_I64(page(&q, 1, "/", &b), 200);
    CHECK_EQ_I64(rows(&b, "apps"), 1); /* its "No applications" row */
    CHECK_STR_CONTAINS((char *)b.p, "No applications found.");
    status_free(empty);
    ebuf_free(&b);
    status_free(st);
}

TEST(uipages_stage_of_100000_tasks) {
    enum { N = 100000, EXECS = 8 };
    status_store *st = status_new(NULL);
    CHECK(st);
    app_event e = fx_ev(AE_APP_START, FIX_T0);
    e.app_name = (char *)"big";
    e.app_id = (char *)"app-big";
    status_on_event(st, &e);
    for (int x = 0; x < EXECS; x++) {
        char id[16];
        snprintf(id, sizeof id, "%d", x + 1);
        fx_exec(st, AE_EXEC_ADDED, id, "h1", 7000 + x, FIX_T0);
    }
    ae_stage s = fx_stage(3, 0, N);
    s.submit_ms = FIX_T0;
    fx_job_start(st, 0, &s, 1, FIX_T0, 0);
    fx_stage_ev(st, AE_STAGE_SUBMITTED, s, FIX_T0);
    for (int i = 0; i < N; i++) {
        char ex[8];
        snprintf(ex, sizeof ex, "%d", i % EXECS + 1);
        ae_task k = fx_task(i, i, 0, ex, FIX_T0 + 1 + i / 4);
        fx_task_start(st, 3, 0, k);
        fx_task_end(st, 3, 0, k, AE_SUCCESS, i % 1000); /* lasts i % 1000 + 10 ms */
    }
    rest_provider p;
    rest_single(&p, st);
    ebuf b = {0};
    CHECK_EQ_I64(page(&p, 0, "/stages/stage/?id=3&attempt=0", &b), 200);
    CHECK(balanced(&b));
    CHECK_EQ_I64(rows(&b, "tasks"), 100);
    CHECK_STR_CONTAINS((char *)b.p, "Summary Metrics for 100000 Completed Tasks");
    CHECK_STR_CONTAINS((char *)b.p, "<tr><td>Duration</td><td data-v=\"10\">10 ms</td>");
    CHECK_STR_CONTAINS((char *)b.p, "<td data-v=\"1009\">1.0 s</td></tr>"); /* the max */
    /* The timeline aggregates: no bar per task, a bounded number of buckets. */
    const char *svg = strstr((char *)b.p, "<svg id=\"timeline\" class=\"buckets\"");
    CHECK(svg);
    const char *end = strstr(svg, "</svg>");
    CHECK_EQ_I64(occurrences(svg, end, "<rect class=\"task"), 0);
    int buckets = occurrences(svg, end, "<rect class=\"bucket\"");
    CHECK(buckets > EXECS && buckets <= EXECS * 100);
    CHECK_EQ_I64(occurrences(svg, end, "<rect class=\"lane\""), EXECS);
    CHECK(b.len < 400000);
    /* The longest last page of the task table, sorted by duration. */
    CHECK_EQ_I64(page(&p, 0, "/stages/stage/?id=3&attempt=0&task.sort=duration&task.desc=true&task.length=50", &b),
                 200);
    CHECK_EQ_I64(rows(&b, "tasks"), 50);
    const char *t = strstr((char *)b.p, "id=\"tasks\"");
    CHECK(t && strstr(t, "<tr data-task-id=\"99999\">"));
    CHECK_EQ_I64(page(&p, 0, "/stages/stage/?id=3&attempt=0&task.offset=99990", &b), 200);
    CHECK_EQ_I64(rows(&b, "tasks"), 10);
    CHECK_STR_CONTAINS((char *)b.p, "Showing tasks 99991 to 100000 of 100000");
    ebuf_free(&b);
    status_free(st);
}

/* ----------------------------------------------------------- over TCP */

static int http_get(int port, const char *path, char *buf, size_t cap) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        close(fd);
        return -1;
    }
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

TEST(uipages_over_tcp) {
    log_set_level(LOG_ERROR);
    rest_provider p;
    status_store *st = fixture(&p);
    CHECK(st);
    static char buf[1 << 20];
    for (int history = 0; history <= 1; history++) {
        ui_conf c = {"127.0.0.1", NULL, 0, 0, history, 0};
        ui_server *u = NULL;
        CHECK_OK(ui_start(&c, &p, &u));
        int port = ui_port(u);
        const char *base = history ? "/history/" FIX_APP : "";
        char path[256];
        snprintf(path, sizeof path, "%s/jobs/", base);
        CHECK_EQ_I64(http_get(port, path, buf, sizeof buf), 200);
        CHECK_STR_CONTAINS(buf, "Content-Type: text/html; charset=utf-8");
        CHECK_STR_CONTAINS(buf, "id=\"jobs-completed\"");
        snprintf(path, sizeof path, "%s/stages/stage/?id=0&attempt=0&task.length=3", base);
        CHECK_EQ_I64(http_get(port, path, buf, sizeof buf), 200);
        CHECK_STR_CONTAINS(buf, "Showing tasks 1 to 3 of 6");
        snprintf(path, sizeof path, "%s/jobs/job/?id=0", base);
        CHECK_EQ_I64(http_get(port, path, buf, sizeof buf), 200);
        CHECK_STR_CONTAINS(buf, "<svg id=\"dag\"");
        snprintf(path, sizeof path, "%s/jobs/job/?id=99", base);
        CHECK_EQ_I64(http_get(port, path, buf, sizeof buf), 404);
        snprintf(path, sizeof path, "%s/stages/stage/?id=zero", base);
        CHECK_EQ_I64(http_get(port, path, buf, sizeof buf), 400);
        CHECK_EQ_I64(http_get(port, "/", buf, sizeof buf), 200);
        CHECK_STR_CONTAINS(buf, history ? "id=\"apps\"" : "id=\"jobs-active\"");
        CHECK_EQ_I64(http_get(port, "/api/v1/version", buf, sizeof buf), 200);
        CHECK_EQ_I64(http_get(port, "/favicon.ico", buf, sizeof buf), 404);
        ui_stop(u);
    }
    status_free(st);
}
