/*
 * uipages.c -- the UI's HTML pages (see uipages.h): the jobs page, a
 * table built from the store under its read lock, escaped as it goes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ember.h"
#include "uipages.h"

int ui_html_escape(ebuf *out, const char *s) {
    for (; s && *s; s++) {
        const char *r = NULL;
        switch (*s) {
        case '&': r = "&amp;"; break;
        case '<': r = "&lt;"; break;
        case '>': r = "&gt;"; break;
        case '"': r = "&quot;"; break;
        case '\'': r = "&#39;"; break;
        default: break;
        }
        if (r ? ebuf_append(out, r, strlen(r)) : ebuf_append(out, s, 1)) return EM_ENOMEM;
    }
    return 0;
}

static int put(ebuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int put(ebuf *b, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return 0;
    if (n >= (int)sizeof line) n = (int)sizeof line - 1;
    return ebuf_append(b, line, (size_t)n) ? EM_ENOMEM : 0;
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

static const char page_head[] =
    "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ember: jobs</title><style>"
    "body{font-family:sans-serif;margin:1em 2em}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}th{background:#eee}"
    ".FAILED{color:#b00}.RUNNING{color:#06c}</style></head><body>\n";

int uipage_jobs(const rest_provider *p, int *status, ebuf *body) {
    first_app f = {{0}, 0};
    p->each(p->ud, take_first, &f);
    status_store *st = f.found ? p->acquire(p->ud, f.id, NULL) : NULL;
    if (!st) {
        *status = 404;
        return ebuf_append(body, "no application yet\n", 19) ? EM_ENOMEM : 0;
    }
    *status = 200;
    int rc = ebuf_append(body, page_head, sizeof page_head - 1) ? EM_ENOMEM : 0;
    status_rdlock(st);
    const status_app *a = status_app_info(st);
    rc = rc ? rc : put(body, "<h1>");
    rc = rc ? rc : ui_html_escape(body, a->name ? a->name : "");
    rc = rc ? rc : put(body, "</h1>\n<p>Application <code>");
    rc = rc ? rc : ui_html_escape(body, a->id);
    rc = rc ? rc : put(body, "</code>, ember %s. JSON: <a href=\"/api/v1/applications\">/api/v1</a></p>\n",
                       EMBER_VERSION);
    rc = rc ? rc : put(body, "<table id=\"jobs\"><tr><th>Job Id</th><th>Description</th><th>Status</th>"
                             "<th>Duration</th><th>Stages: Succeeded/Total</th><th>Tasks: Succeeded/Total</th></tr>\n");
    st_job *last = NULL;
    for (st_job *j = status_jobs(st); j; j = j->next) last = j;
    for (st_job *j = last; j && !rc; j = j->prev) {
        int done = 0;
        for (int k = 0; k < j->nstages; k++) done += j->stage_state[k] == 1;
        int64_t dur = j->complete_ms && j->submit_ms ? j->complete_ms - j->submit_ms : 0;
        const char *sn = status_job_name(j->status);
        rc = put(body, "<tr class=\"%s\"><td>%d</td><td>", sn, j->id);
        rc = rc ? rc : ui_html_escape(body, j->description ? j->description : j->name);
        rc = rc ? rc : put(body, "</td><td>%s</td><td>%lld ms</td><td>%d/%d</td><td>%d/%d</td></tr>\n", sn,
                           (long long)dur, done, j->nstages, j->completed_tasks, j->ntasks);
    }
    status_unlock(st);
    if (p->release) p->release(p->ud, st);
    return rc ? rc : put(body, "</table>\n</body></html>\n");
}
