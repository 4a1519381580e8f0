/*
 * uipages.c -- the UI's pages (see uipages.h): the routing of a path to an
 * application's page, the history server's list of applications, and the
 * jobs and job pages.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember.h"
#include "err.h"
#include "html.h"
#include "uidag.h"
#include "uipage_env.h"
#include "uipage_execs.h"
#include "uipage_stage.h"
#include "uipage_stages.h"
#include "uipage_storage.h"
#include "uipagekit.h"
#include "uipages.h"
#include "uitimeline.h"
#include "urlquery.h"

/* ------------------------------------------------------------- jobs */

/* An error page on its own (no application to name in a bar). */
static int error_page(ebuf *b, const char *brand, const char *title, const char *msg) {
    return html_page_begin(b, brand, title) || html_raw(b, "<p class=\"error\">") || html_text(b, msg) ||
           html_raw(b, "</p>\n") || html_page_end(b);
}


static void job_stage_counts(const st_job *j, int *done, int *skipped) {
    *done = *skipped = 0;
    for (int k = 0; k < j->nstages; k++) {
        *done += j->stage_state[k] == 1;
        *skipped += j->stage_state[k] == 2;
    }
}

static int job_row(uipage *u, const st_job *j) {
    ebuf *b = u->b;
    char href[700];
    up_href(u, href, sizeof href, "/jobs/job/?id=%d", j->id);
    int done, skipped;
    job_stage_counts(j, &done, &skipped);
    int64_t end = j->complete_ms ? j->complete_ms : u->now;
    int64_t tasks = 0; /* of the stages it did not skip */
    for (int k = 0; k < j->nstages; k++)
        if (j->stage_state[k] != 2) tasks += j->stage_ntasks[k];
    int64_t dur = j->submit_ms ? (end > j->submit_ms ? end - j->submit_ms : 0) : -1;
    int rc = html_rawf(b, "<tr data-job-id=\"%d\">", j->id) || html_cell_i64(b, j->id) || html_raw(b, "<td>") ||
             html_link(b, href, j->description ? j->description : j->name ? j->name : "");
    if (!rc && j->description && j->name)
        rc = html_raw(b, "<div class=\"sub\">") || html_text(b, j->name) || html_raw(b, "</div>");
    rc = rc || html_raw(b, "</td>") || up_cell_time(b, j->submit_ms) || up_cell_dur(b, dur) || html_raw(b, "<td>") ||
         html_progress_ex(b, done, j->active_stages, j->failed_stages, 0, skipped, j->nstages - skipped) ||
         html_raw(b, "</td><td>") ||
         html_progress_ex(b, j->completed_indices, j->active_tasks, j->failed_tasks, j->killed_tasks,
                          j->skipped_tasks, tasks) ||
         html_raw(b, "</td>") || html_row_end(b);
    return rc;
}

static int jobs_table(uipage *u, const char *id, const char *title, int status, int n) {
    static const char *const hdr[] = {"Job Id", "Description", "Submitted", "Duration",
                                      "Stages: Succeeded/Total", "Tasks (for all stages): Succeeded/Total"};
    if (!n) return 0;
    char head[96];
    snprintf(head, sizeof head, "%s (%d)", title, n);
    int rc = html_heading(u->b, NULL, head) || html_table_begin(u->b, id, hdr, 6);
    st_job *last = NULL;
    for (st_job *j = status_jobs(u->st); j; j = j->next) last = j;
    for (st_job *j = last; j && !rc; j = j->prev) /* the newest first */
        if (j->status == status) rc = job_row(u, j);
    return rc || html_table_end(u->b);
}

static int facts_begin(ebuf *b) { return html_raw(b, "<ul class=\"facts\">"); }
static int uipage_jobs(uipage *u) {
    int n[4] = {0};
    for (st_job *j = status_jobs(u->st); j; j = j->next) n[j->status <= SJ_UNKNOWN ? j->status : SJ_UNKNOWN]++;
    ebuf *b = u->b;
    const status_app *a = u->app;
    char t[HTML_FMT_MAX], num[32];
    int64_t up = a->start_ms ? (a->end_ms ? a->end_ms : u->now) - a->start_ms : -1;
    int rc = up_begin(u, "ember Jobs", UP_TAB_JOBS) || facts_begin(b) || up_fact(b, "User", a->user ? a->user : "") ||
             up_fact(b, "Application ID", a->id ? a->id : "") ||
             up_fact(b, "Started", html_fmt_time(a->start_ms, t, sizeof t)) ||
             up_fact(b, "Total Uptime", html_fmt_duration(up, t, sizeof t));
    snprintf(num, sizeof num, "%d", n[SJ_RUNNING]);
    rc = rc || up_fact(b, "Active Jobs", num);
    snprintf(num, sizeof num, "%d", n[SJ_SUCCEEDED]);
    rc = rc || up_fact(b, "Completed Jobs", num);
    snprintf(num, sizeof num, "%d", n[SJ_FAILED]);
    rc = rc || up_fact(b, "Failed Jobs", num) || html_raw(b, "</ul>\n");
    rc = rc || html_raw(b, "<details open><summary>Event Timeline</summary>\n") || ui_jobs_timeline(u) ||
         html_raw(b, "</details>\n");
    rc = rc || jobs_table(u, "jobs-active", "Active Jobs", SJ_RUNNING, n[SJ_RUNNING]) ||
         jobs_table(u, "jobs-completed", "Completed Jobs", SJ_SUCCEEDED, n[SJ_SUCCEEDED]) ||
         jobs_table(u, "jobs-failed", "Failed Jobs", SJ_FAILED, n[SJ_FAILED]);
    if (!rc && !n[0] && !n[1] && !n[2]) rc = html_raw(b, "<p>No jobs yet.</p>\n");
    return rc || up_end(u);
}

static int uipage_job(uipage *u) {
    int64_t id = -1;
    int got = up_qint(u, "id", 0, INT32_MAX, &id);
    if (got < 0) return 0;
    if (!got) return up_error(u, 400, "missing parameter id");
    st_job *j = status_job(u->st, (int)id);
    if (!j) return up_error(u, 404, "unknown job: %lld", (long long)id);
    ebuf *b = u->b;
    char title[64], t[HTML_FMT_MAX];
    snprintf(title, sizeof title, "Details for Job %d", j->id);
    int64_t end = j->complete_ms ? j->complete_ms : u->now;
    int rc = up_begin(u, title, UP_TAB_JOBS) || facts_begin(b) || up_fact(b, "Status", status_job_name(j->status)) ||
             up_fact(b, "Submitted", html_fmt_time(j->submit_ms, t, sizeof t)) ||
             up_fact(b, "Duration", html_fmt_duration(j->submit_ms ? end - j->submit_ms : -1, t, sizeof t));
    if (!rc && j->description) rc = up_fact(b, "Description", j->description);
    if (!rc && j->group) rc = up_fact(b, "Job Group", j->group);
    rc = rc || html_raw(b, "</ul>\n") || html_heading(b, "dag-heading", "DAG Visualization") || ui_dag(u, j);
    if (rc) return rc;
    /* Its stages: every attempt of each, by state. */
    int cap = 0;
    for (int k = 0; k < j->nstages; k++)
        for (int a = 0; a <= status_max_attempt(u->st); a++) cap += status_stage(u->st, j->stage_ids[k], a) != NULL;
    st_stage **v = malloc((size_t)(cap ? cap : 1) * sizeof *v);
    if (!v) return em__seterr(EM_ENOMEM, "ui: out of memory");
    static const struct {
        int status;
        const char *id, *title;
    } parts[] = {{SS_ACTIVE, "stages-active", "Active Stages"},
                 {SS_PENDING, "stages-pending", "Pending Stages"},
                 {SS_COMPLETE, "stages-completed", "Completed Stages"},
                 {SS_SKIPPED, "stages-skipped", "Skipped Stages"},
                 {SS_FAILED, "stages-failed", "Failed Stages"}};
    for (size_t p = 0; p < sizeof parts / sizeof *parts && !rc; p++) {
        int n = 0;
        for (int k = j->nstages - 1; k >= 0; k--) { /* the newest first */
            int skipped = j->stage_state[k] == 2;
            for (int a = status_max_attempt(u->st); a >= 0; a--) {
                st_stage *s = status_stage(u->st, j->stage_ids[k], a);
                if (!s) continue;
                /* A stage this job skipped shows as skipped here, once. */
                int as = skipped ? SS_SKIPPED : s->status;
                if (as == parts[p].status && n < cap && !(skipped && n && v[n - 1]->id == s->id)) v[n++] = s;
            }
        }
        if (!n) continue;
        char head[64];
        snprintf(head, sizeof head, "%s (%d)", parts[p].title, n);
        rc = html_heading(b, NULL, head) || up_stage_table(u, parts[p].id, v, n, parts[p].status == SS_FAILED);
    }
    free(v);
    return rc || up_end(u);
}

/* ------------------------------------------------------------- the history server's list */

typedef struct apps_list {
    ebuf *b;
    int rc, n;
} apps_list;

static void app_row(void *arg, const rest_app *a) {
    apps_list *l = arg;
    ebuf *b = l->b;
    if (l->rc || !a->id) return;
    ebuf href = {0};
    int rc = ebuf_append(&href, "/history/", 9) || urlq_encode(&href, a->id);
    if (!rc && a->attempt_id) rc = ebuf_append(&href, "/", 1) || urlq_encode(&href, a->attempt_id);
    rc = rc || ebuf_append(&href, "/jobs/", 7); /* with its NUL */
    int64_t last = a->last_updated_ms ? a->last_updated_ms : a->end_ms ? a->end_ms : a->start_ms;
    rc = rc || html_row_begin(b) || html_cell_link(b, (const char *)href.p, a->id) ||
         html_cell(b, a->name ? a->name : "") || html_cell(b, a->attempt_id ? a->attempt_id : "") ||
         up_cell_time(b, a->start_ms) || up_cell_time(b, a->end_ms) ||
         up_cell_dur(b, a->end_ms ? a->end_ms - a->start_ms : -1) || html_cell(b, a->user ? a->user : "") ||
         up_cell_time(b, last) || html_row_end(b);
    ebuf_free(&href);
    l->n++;
    l->rc = rc ? EM_ENOMEM : 0;
}

int uipage_apps(const rest_provider *p, int *status, ebuf *body) {
    static const char *const hdr[] = {"App ID", "App Name", "Attempt ID", "Started", "Completed",
                                      "Duration", "Spark User", "Last Updated"};
    *status = 200;
    apps_list l = {body, 0, 0};
    int rc = html_page_begin(body, "ember history server", "Applications") ||
             html_table_begin(body, "apps", hdr, 8);
    if (rc) return EM_ENOMEM;
    p->each(p->ud, app_row, &l);
    if (l.rc) return em__seterr(EM_ENOMEM, "ui: out of memory");
    if (!l.n && html_raw(body, "<tr><td colspan=\"8\">No applications found.</td></tr>\n")) return EM_ENOMEM;
    return html_table_end(body) || html_page_end(body) ? EM_ENOMEM : 0;
}

/* ------------------------------------------------------------- routing */

static int64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* page without its trailing slashes equals name. */
static int is_page(const char *page, const char *name) {
    size_t n = strlen(name);
    if (strncmp(page, name, n)) return 0;
    for (page += n; *page == '/'; page++) {}
    return !*page;
}

int uipage_app(const rest_provider *p, const char *app_id, const char *attempt_id, const char *base,
               const char *page, const char *query, int *status, ebuf *body) {
    static const struct {
        const char *path;
        int (*fn)(uipage *u);
    } pages[] = {{"", uipage_jobs},
                 {"/jobs", uipage_jobs},
                 {"/jobs/job", uipage_job},
                 {"/stages", uipage_stages},
                 {"/stages/stage", uipage_stage},
                 {"/storage", uipage_storage},
                 {"/storage/rdd", uipage_rdd},
                 {"/environment", uipage_environment},
                 {"/executors", uipage_executors}};
    int (*fn)(uipage *u) = NULL;
    for (size_t i = 0; i < sizeof pages / sizeof *pages && !fn; i++)
        if (is_page(page, pages[i].path)) fn = pages[i].fn;
    status_store *st = p->acquire(p->ud, app_id, attempt_id);
    *status = 404;
    if (!st) {
        char msg[600];
        snprintf(msg, sizeof msg, "Application %.250s%s%.250s not found.", app_id, attempt_id ? "/" : "",
                 attempt_id ? attempt_id : "");
        return error_page(body, "ember UI", "Not Found", msg) ? EM_ENOMEM : 0;
    }
    uipage u = {.st = st, .base = base, .query = query ? query : "", .status = 200, .start = body->len, .b = body};
    u.qlen = strlen(u.query);
    status_rdlock(st);
    u.app = status_app_info(st);
    u.now = u.app->end_ms ? u.app->end_ms : *base && u.app->last_ms ? u.app->last_ms : wall_ms();
    int rc = fn ? fn(&u) : up_error(&u, 404, "no such page: %.200s", page);
    status_unlock(st);
    if (p->release) p->release(p->ud, st);
    *status = u.status;
    return rc ? EM_ENOMEM : 0;
}

typedef struct first_app {
    char id[256];
    int found;
} first_app;

static void take_first(void *arg, const rest_app *a) {
    first_app *f = arg;
    if (f->found || !a->id) return;
    snprintf(f->id, sizeof f->id, "%s", a->id);
    f->found = 1;
}

static int not_found(int *status, ebuf *body, const char *brand, const char *msg) {
    *status = 404;
    return error_page(body, brand, "Not Found", msg) ? EM_ENOMEM : 0;
}

static const char *const page_names[] = {"jobs", "stages", "storage", "environment", "executors"};

int uipage_route(const rest_provider *p, int history, const char *path, const char *query, int *status,
                 ebuf *body) {
    if (!history) {
        first_app f = {{0}, 0};
        p->each(p->ud, take_first, &f);
        if (!f.found) return not_found(status, body, "ember UI", "No application yet.");
        return uipage_app(p, f.id, NULL, "", !strcmp(path, "/") ? "" : path, query, status, body);
    }
    if (!strcmp(path, "/")) return uipage_apps(p, status, body);
    if (strncmp(path, "/history/", 9)) return not_found(status, body, "ember history server", "No such page.");
    /* /history/<id>[/<attempt>][/<page>...], the id and attempt
     * percent-encoded as the links write them. */
    const char *s = path + 9, *e = strchr(s, '/');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    char id[256], att[256];
    if (!n || urlq_decode_segment(s, n, id, sizeof id) <= 0)
        return not_found(status, body, "ember history server", "No such application.");
    const char *rest = s + n, *attempt = NULL;
    if (*rest == '/' && rest[1]) {
        const char *a = rest + 1, *ae = strchr(a, '/');
        size_t an = ae ? (size_t)(ae - a) : strlen(a);
        int named = 0;
        for (size_t i = 0; i < sizeof page_names / sizeof *page_names; i++)
            named |= an == strlen(page_names[i]) && !strncmp(a, page_names[i], an);
        if (!named && urlq_decode_segment(a, an, att, sizeof att) > 0) {
            attempt = att;
            rest = a + an;
        }
    }
    /* The links' prefix: the segments encoded again. */
    ebuf base = EBUF_INIT;
    int rc = ebuf_append(&base, "/history/", 9) || urlq_encode(&base, id) ||
             (attempt && (ebuf_append(&base, "/", 1) || urlq_encode(&base, attempt))) || ebuf_append(&base, "", 1);
    if (!rc) rc = uipage_app(p, id, attempt, (const char *)base.p, !strcmp(rest, "/") ? "" : rest, query, status, body);
    ebuf_free(&base);
    return rc ? EM_ENOMEM : 0;
}
