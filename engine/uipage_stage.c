/*
 * uipage_stage.c -- a stage attempt's page (/stages/stage/?id=N&attempt=A):
 * its figures, the summary metrics of its completed tasks (min, quartiles,
 * max, computed as /api/v1's taskSummary computes them), its totals per
 * executor, the event timeline of its tasks (uitimeline.c) and one page
 * of its task table, sorted and paged on the server.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ember.h"
#include "err.h"
#include "html.h"
#include "restjson.h"
#include "uipage_stage.h"
#include "uipagekit.h"
#include "uitimeline.h"
#include "urlquery.h"

#define TASKS_SHOWN 100
#define TASKS_SHOWN_MAX 100000

/* ------------------------------------------------------------- summary metrics */

enum { F_MS, F_NS, F_BYTES };

static int fmt_cell(ebuf *b, double v, int kind) {
    char t[HTML_FMT_MAX];
    int64_t x = (int64_t)v;
    if (kind == F_NS) x /= 1000000;
    if (kind == F_BYTES) return html_cell_sorted(b, html_fmt_bytes(x, t, sizeof t), x);
    return html_cell_sorted(b, html_fmt_duration(x, t, sizeof t), x);
}

static int summary(uipage *u, const st_stage *s) {
    static const struct {
        const char *name;
        int f, kind;
        int64_t (*shown)(const st_stage *s); /* NULL: always */
    } rows[] = {
        {"Duration", D_DURATION, F_MS, NULL},
        {"Executor Run Time", D_RUN, F_MS, NULL},
        {"Executor CPU Time", D_CPU, F_NS, NULL},
        {"Scheduler Delay", D_SCHED, F_MS, NULL},
        {"Task Deserialization Time", D_DESER, F_MS, NULL},
        {"GC Time", D_GC, F_MS, NULL},
        {"Result Serialization Time", D_SER, F_MS, NULL},
        {"Getting Result Time", D_GETTING, F_MS, NULL},
        {"Result Size", D_RESULT, F_BYTES, NULL},
        {"Peak Execution Memory", D_PEAK, F_BYTES, NULL},
        {"Input Size", D_IN_BYTES, F_BYTES, NULL},
        {"Output Size", D_OUT_BYTES, F_BYTES, NULL},
        {"Shuffle Read Size", D_SR_BYTES, F_BYTES, NULL},
        {"Shuffle Remote Reads", D_SR_RBYTES, F_BYTES, NULL},
        {"Shuffle Read Blocked Time", D_SR_WAIT, F_MS, NULL},
        {"Shuffle Write Size", D_SW_BYTES, F_BYTES, NULL},
        {"Shuffle Write Time", D_SW_TIME, F_NS, NULL},
        {"Spill (Memory)", D_MEMSPILL, F_BYTES, NULL},
        {"Spill (Disk)", D_DISKSPILL, F_BYTES, NULL},
    };
    const task_metrics *m = &s->m;
    /* Which rows apply: input, output, shuffle and spill only when the
     * stage has any, as Spark shows them. */
    int64_t have[D_N];
    for (int f = 0; f < D_N; f++) have[f] = 1;
    have[D_IN_BYTES] = m->in_bytes;
    have[D_OUT_BYTES] = m->out_bytes;
    have[D_SR_BYTES] = have[D_SR_RBYTES] = have[D_SR_WAIT] = m->sr_remote_bytes + m->sr_local_bytes;
    have[D_SW_BYTES] = have[D_SW_TIME] = m->sw_bytes;
    have[D_MEMSPILL] = m->mem_spilled;
    have[D_DISKSPILL] = m->disk_spilled;
    double *cols;
    int n = rj_dist_collect(s, u->now, &cols);
    if (n < 0) return n;
    char head[96];
    snprintf(head, sizeof head, "Summary Metrics for %d Completed Tasks", n);
    ebuf *b = u->b;
    int rc = html_heading(b, "summary-heading", head);
    if (!n) return rc || html_raw(b, "<p>No completed tasks with metrics yet.</p>\n");
    rj_dist d;
    memset(&d, 0, sizeof d);
    static const double qs[] = {0, 0.25, 0.5, 0.75, 1.0};
    memcpy(d.q, qs, sizeof qs);
    d.nq = 5;
    rc = rc || rj_dist_compute(&d, cols, n);
    free(cols);
    static const char *const hdr[] = {"Metric", "Min", "25th percentile", "Median", "75th percentile", "Max"};
    rc = rc || html_table_begin(b, "summary-metrics", hdr, 6);
    for (size_t r = 0; r < sizeof rows / sizeof *rows && !rc; r++) {
        if (!have[rows[r].f]) continue;
        rc = html_row_begin(b) || html_cell(b, rows[r].name);
        for (int q = 0; q < 5 && !rc; q++) rc = fmt_cell(b, d.v[rows[r].f][q], rows[r].kind);
        rc = rc || html_row_end(b);
    }
    rj_dist_free(&d);
    return rc || html_table_end(b);
}

/* ------------------------------------------------------------- per executor */

static int log_links(ebuf *b, const st_exec *x) {
    int rc = html_raw(b, "<td>");
    if (x && x->stdout_url) rc = rc || html_link(b, x->stdout_url, "stdout") || html_raw(b, " ");
    if (x && x->stderr_url) rc = rc || html_link(b, x->stderr_url, "stderr");
    return rc || html_raw(b, "</td>");
}

static int by_executor(uipage *u, const st_stage *s) {
    static const char *const hdr[] = {"Executor ID",   "Address",     "Logs",          "Task Time",
                                      "Total Tasks",   "Failed Tasks", "Killed Tasks",  "Succeeded Tasks",
                                      "Input Size",    "Output Size", "Shuffle Read",  "Shuffle Write",
                                      "Spill (Memory)", "Spill (Disk)"};
    ebuf *b = u->b;
    int rc = html_heading(b, "executors-heading", "Aggregated Metrics by Executor") ||
             html_table_begin(b, "executor-summary", hdr, 14);
    for (const st_execsum *e = s->execsums; e && !rc; e = e->next) {
        const st_exec *x = status_exec(u->st, e->exec_id);
        char addr[96] = "";
        if (x && x->port) snprintf(addr, sizeof addr, "%s:%d", x->host, x->port);
        else if (x) snprintf(addr, sizeof addr, "%s", x->host);
        rc = html_row_begin(b) || html_cell(b, e->exec_id) || html_cell(b, addr) || log_links(b, x) ||
             up_cell_dur(b, e->task_time) || html_cell_i64(b, e->failed + e->succeeded + e->killed) ||
             html_cell_i64(b, e->failed) || html_cell_i64(b, e->killed) || html_cell_i64(b, e->succeeded) ||
             up_cell_bytes(b, e->m.in_bytes) || up_cell_bytes(b, e->m.out_bytes) ||
             up_cell_bytes(b, e->m.sr_remote_bytes + e->m.sr_local_bytes) || up_cell_bytes(b, e->m.sw_bytes) ||
             up_cell_bytes(b, e->m.mem_spilled) || up_cell_bytes(b, e->m.disk_spilled) || html_row_end(b);
    }
    return rc || html_table_end(b);
}

/* ------------------------------------------------------------- tasks */

enum { SORT_INDEX, SORT_ID, SORT_DURATION, SORT_LAUNCH };

typedef struct keyed {
    int64_t k, id;
    const st_task *t;
} keyed;

static int cmp_keyed(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->k != y->k) return x->k < y->k ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int task_row(uipage *u, const st_task *t) {
    ebuf *b = u->b;
    char tm[HTML_FMT_MAX];
    int64_t dur = rj_task_duration(t, u->now);
    const task_metrics *m = &t->m;
    int hm = t->has_metrics;
    int rc = html_rawf(b, "<tr data-task-id=\"%lld\">", (long long)t->task_id) || html_cell_i64(b, t->index) ||
             html_cell_i64(b, t->task_id) || html_cell_i64(b, t->attempt) ||
             html_cell(b, status_task_name(t->status)) ||
             html_cell(b, t->locality[0] ? t->locality : "PROCESS_LOCAL") || html_cell(b, t->exec_id) ||
             html_cell(b, t->host) || html_cell_sorted(b, html_fmt_time(t->launch_ms, tm, sizeof tm), t->launch_ms) ||
             up_cell_dur(b, dur) || up_cell_dur(b, hm ? m->run_ms : -1) ||
             up_cell_dur(b, hm ? m->cpu_ns / 1000000 : -1) || up_cell_bytes(b, m->in_bytes) ||
             up_cell_bytes(b, m->out_bytes) || up_cell_bytes(b, m->sr_remote_bytes + m->sr_local_bytes) ||
             up_cell_bytes(b, m->sw_bytes) || up_cell_bytes(b, m->mem_spilled) || up_cell_bytes(b, m->disk_spilled) ||
             html_cell(b, t->speculative ? "true" : "false") || html_raw(b, "<td class=\"err\">") ||
             html_text(b, t->error) || html_raw(b, "</td>") || html_row_end(b);
    return rc;
}

/* A link to the same page with other task paging or sorting. */
static int page_link(uipage *u, const st_stage *s, int64_t off, int64_t len, const char *sort, int desc,
                     const char *text) {
    char href[800];
    up_href(u, href, sizeof href, "/stages/stage/?id=%d&attempt=%d&task.offset=%lld&task.length=%lld&task.sort=%s%s",
            s->id, s->attempt, (long long)off, (long long)len, sort, desc ? "&task.desc=true" : "");
    return html_link(u->b, href, text);
}

static int tasks(uipage *u, const st_stage *s, int64_t off, int64_t len, int sort, int desc) {
    static const char *const sorts[] = {"index", "id", "duration", "launch"};
    static const char *const hdr[] = {"Index",         "Task ID",       "Attempt",        "Status",
                                      "Locality Level", "Executor ID",  "Host",           "Launch Time",
                                      "Duration",      "Run Time",      "CPU Time",       "Input Size",
                                      "Output Size",   "Shuffle Read",  "Shuffle Write",  "Spill (Memory)",
                                      "Spill (Disk)",  "Speculative",   "Errors"};
    ebuf *b = u->b;
    int n = 0;
    for (const st_task *t = s->tasks; t; t = t->next) n++;
    keyed *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return em__seterr(EM_ENOMEM, "ui: out of memory");
    int i = 0;
    for (const st_task *t = s->tasks; t && i < n; t = t->next, i++) {
        v[i].t = t;
        v[i].id = t->task_id;
        v[i].k = sort == SORT_INDEX      ? t->index
                 : sort == SORT_ID       ? t->task_id
                 : sort == SORT_DURATION ? rj_task_duration(t, u->now)
                                         : t->launch_ms;
        if (desc) v[i].k = -v[i].k, v[i].id = -v[i].id;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_keyed);
    int64_t from = off < n ? off : n, to = from + len < n ? from + len : n;
    char head[96];
    snprintf(head, sizeof head, "Tasks (%d)", n);
    int rc = html_heading(b, "tasks-heading", head) ||
             html_rawf(b, "<p class=\"pages\">Showing tasks %lld to %lld of %d, by %s%s. ",
                       (long long)from + (to > from), (long long)to, n, sorts[sort], desc ? " descending" : "");
    if (!rc && from > 0) rc = page_link(u, s, from > len ? from - len : 0, len, sorts[sort], desc, "Previous");
    if (!rc && to < n) rc = page_link(u, s, to, len, sorts[sort], desc, "Next");
    rc = rc || html_raw(b, " Sort by: ");
    for (int k = 0; k < 4 && !rc; k++)
        rc = page_link(u, s, 0, len, sorts[k], k == SORT_DURATION, sorts[k]);
    rc = rc || html_raw(b, "</p>\n") || html_table_begin(b, "tasks", hdr, 19);
    for (int64_t k = from; k < to && !rc; k++) rc = task_row(u, v[k].t);
    free(v);
    return rc || html_table_end(b);
}

/* ------------------------------------------------------------- the page */

int uipage_stage(uipage *u) {
    int64_t id = 0, attempt = 0, off = 0, len = TASKS_SHOWN, desc = 0;
    int got = up_qint(u, "id", 0, INT32_MAX, &id);
    if (got < 0) return 0;
    if (!got) return up_error(u, 400, "missing parameter id");
    if (up_qint(u, "attempt", 0, INT32_MAX, &attempt) < 0 || up_qint(u, "task.offset", 0, INT32_MAX, &off) < 0 ||
        up_qint(u, "task.length", 1, TASKS_SHOWN_MAX, &len) < 0)
        return 0;
    char v[32];
    int sort = SORT_INDEX;
    got = urlq_get(u->query, u->qlen, "task.sort", v, sizeof v);
    if (got) {
        static const char *const names[] = {"index", "id", "duration", "launch"};
        static const char *const spark[] = {"Index", "Task ID", "Duration", "Launch Time"};
        sort = -1;
        for (int k = 0; k < 4 && got > 0; k++)
            if (!strcasecmp(v, names[k]) || !strcasecmp(v, spark[k])) sort = k;
        if (sort < 0) return up_error(u, 400, "bad parameter task.sort: expected index, id, duration or launch");
    }
    got = urlq_get(u->query, u->qlen, "task.desc", v, sizeof v);
    if (got) {
        if (got > 0 && (!strcmp(v, "true") || !strcmp(v, "false"))) desc = !strcmp(v, "true");
        else return up_error(u, 400, "bad parameter task.desc: expected true or false");
    }
    st_stage *s = status_stage(u->st, (int)id, (int)attempt);
    if (!s) return up_error(u, 404, "unknown stage: %lld attempt %lld", (long long)id, (long long)attempt);
    ebuf *b = u->b;
    char title[96], t[HTML_FMT_MAX];
    snprintf(title, sizeof title, "Details for Stage %d (Attempt %d)", s->id, s->attempt);
    const task_metrics *m = &s->m;
    int rc = up_begin(u, title, UP_TAB_STAGES) || html_raw(b, "<ul class=\"facts\">") ||
             up_fact(b, "Status", status_stage_name(s->status)) || up_fact(b, "Name", s->name ? s->name : "") ||
             up_fact(b, "Submitted", html_fmt_time(s->submit_ms, t, sizeof t)) ||
             up_fact(b, "Duration", html_fmt_duration(up_stage_duration(u, s), t, sizeof t)) ||
             up_fact(b, "Total Time Across All Tasks", html_fmt_duration(m->run_ms, t, sizeof t));
    if (!rc && m->in_bytes) rc = up_fact(b, "Input", html_fmt_bytes(m->in_bytes, t, sizeof t));
    if (!rc && m->out_bytes) rc = up_fact(b, "Output", html_fmt_bytes(m->out_bytes, t, sizeof t));
    if (!rc && (m->sr_remote_bytes + m->sr_local_bytes))
        rc = up_fact(b, "Shuffle Read", html_fmt_bytes(m->sr_remote_bytes + m->sr_local_bytes, t, sizeof t));
    if (!rc && m->sw_bytes) rc = up_fact(b, "Shuffle Write", html_fmt_bytes(m->sw_bytes, t, sizeof t));
    if (!rc && s->failure) rc = up_fact(b, "Failure Reason", s->failure);
    if (!rc && s->njobs) {
        rc = html_raw(b, "<li><b>Associated Job Ids:</b> ");
        for (int k = 0; k < s->njobs && !rc; k++) {
            char href[700], jid[16];
            snprintf(jid, sizeof jid, "%d", s->job_ids[k]);
            rc = (k && html_raw(b, ", ")) ||
                 html_link(b, up_href(u, href, sizeof href, "/jobs/job/?id=%d", s->job_ids[k]), jid);
        }
        rc = rc || html_raw(b, "</li>");
    }
    if (!rc && s->details)
        rc = html_raw(b, "</ul>\n<details><summary>Details</summary><pre class=\"log\">") ||
             html_text(b, s->details) || html_raw(b, "</pre></details>\n");
    else if (!rc) rc = html_raw(b, "</ul>\n");
    rc = rc || html_heading(b, "timeline-heading", "Event Timeline") || ui_timeline(u, s) || summary(u, s) ||
         by_executor(u, s) || tasks(u, s, off, len, sort, (int)desc);
    return rc || up_end(u);
}
