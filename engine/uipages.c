/*
 * uipages.c -- the driver UI's HTML pages (see uipages.h), written with
 * the pages' kit (html.h) from the store under its read lock.
 */
#include <stdio.h>
#include <string.h>

#include "ember.h"
#include "html.h"
#include "uipages.h"

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

static int job_rows(ebuf *b, const status_store *st) {
    st_job *last = NULL;
    for (st_job *j = status_jobs(st); j; j = j->next) last = j;
    int rc = 0;
    for (st_job *j = last; j && !rc; j = j->prev) {
        int done = 0, failed = j->failed_stages;
        for (int k = 0; k < j->nstages; k++) done += j->stage_state[k] == 1;
        int64_t dur = j->complete_ms && j->submit_ms ? j->complete_ms - j->submit_ms : -1;
        char t[64], d[64];
        rc = html_row_begin(b);
        rc = rc ? rc : html_cell_i64(b, j->id);
        rc = rc ? rc : html_cell(b, j->description ? j->description : j->name);
        rc = rc ? rc : html_cell(b, status_job_name(j->status));
        rc = rc ? rc : html_cell_sorted(b, html_fmt_time(j->submit_ms, t, sizeof t), j->submit_ms);
        rc = rc ? rc : html_cell_sorted(b, html_fmt_duration(dur, d, sizeof d), dur);
        rc = rc ? rc : html_rawf(b, "<td>");
        rc = rc ? rc : html_progress(b, done, j->active_stages, failed, j->nstages);
        rc = rc ? rc : html_rawf(b, "</td><td>");
        rc = rc ? rc : html_progress(b, j->completed_tasks, j->active_tasks, j->failed_tasks, j->ntasks);
        rc = rc ? rc : html_rawf(b, "</td>");
        rc = rc ? rc : html_row_end(b);
    }
    return rc;
}

int uipage_jobs(const rest_provider *p, int *status, ebuf *body) {
    first_app f = {{0}, 0};
    p->each(p->ud, take_first, &f);
    status_store *st = f.found ? p->acquire(p->ud, f.id, NULL) : NULL;
    if (!st) {
        *status = 404;
        return ebuf_append(body, "no application yet\n", 19) ? EM_ENOMEM : 0;
    }
    *status = 200;
    static const char *const heads[] = {"Job Id", "Description", "Status", "Submitted", "Duration",
                                        "Stages: Succeeded/Total", "Tasks: Succeeded/Total"};
    status_rdlock(st);
    const status_app *a = status_app_info(st);
    int rc = html_page_begin(body, "ember", a->name ? a->name : "application");
    rc = rc ? rc : html_rawf(body, "<p>Application <code>");
    rc = rc ? rc : html_text(body, a->id);
    rc = rc ? rc : html_rawf(body, "</code>, ember %s; its data as JSON: ", EMBER_VERSION);
    rc = rc ? rc : html_link(body, "/api/v1/applications", "/api/v1");
    rc = rc ? rc : html_rawf(body, "</p>\n");
    rc = rc ? rc : html_heading(body, "jobs", "Jobs");
    rc = rc ? rc : html_table_begin(body, "jobs", heads, (int)(sizeof heads / sizeof *heads));
    rc = rc ? rc : job_rows(body, st);
    rc = rc ? rc : html_table_end(body);
    status_unlock(st);
    if (p->release) p->release(p->ud, st);
    return rc ? rc : html_page_end(body);
}
