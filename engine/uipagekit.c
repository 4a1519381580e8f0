/*
 * uipagekit.c -- what the UI's pages share (see uipagekit.h): the frame
 * with its navigation bar, error pages, query integers, cells of
 * durations and sizes, and the table of stage attempts.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"
#include "html.h"
#include "uipagekit.h"
#include "urlquery.h"

/* ------------------------------------------------------------- the frame */

char *up_href(const uipage *u, char *out, size_t cap, const char *fmt, ...) {
    int n = snprintf(out, cap, "%s", u->base);
    if (n < 0 || (size_t)n >= cap) return out;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + n, cap - (size_t)n, fmt, ap);
    va_end(ap);
    return out;
}

int up_begin(uipage *u, const char *title, int tab) {
    static const char *const labels[UP_NTABS] = {"Jobs", "Stages", "Storage", "Environment", "Executors"};
    static const char *const paths[UP_NTABS] = {"/jobs/", "/stages/", "/storage/", "/environment/", "/executors/"};
    char hrefs[UP_NTABS][700], home[700];
    const char *h[UP_NTABS];
    for (int i = 0; i < UP_NTABS; i++) h[i] = up_href(u, hrefs[i], sizeof hrefs[i], "%s", paths[i]);
    const char *name = u->app->name ? u->app->name : u->app->id ? u->app->id : "ember";
    char brand[300];
    snprintf(brand, sizeof brand, "%s - ember UI", name);
    return html_page_begin_nav(u->b, brand, up_href(u, home, sizeof home, "/jobs/"), title, labels, h, UP_NTABS,
                               tab);
}

int up_end(uipage *u) { return html_page_end(u->b); }

int up_error(uipage *u, int status, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    u->b->len = u->start;
    u->status = status;
    return up_begin(u, status == 404 ? "Not Found" : "Bad Request", -1) || html_raw(u->b, "<p class=\"error\">") ||
           html_text(u->b, msg) || html_raw(u->b, "</p>\n") || up_end(u);
}

int up_qint(uipage *u, const char *name, int64_t min, int64_t max, int64_t *out) {
    char v[32];
    int got = urlq_get(u->query, u->qlen, name, v, sizeof v);
    if (got == 0) return 0;
    char *end = v;
    long long x = got > 0 ? strtoll(v, &end, 10) : 0;
    if (got < 0 || !v[0] || *end || x < min || x > max) {
        up_error(u, 400, "bad parameter %s: expected an integer from %lld to %lld", name, (long long)min,
                 (long long)max);
        return -1;
    }
    *out = x;
    return 1;
}

st_stage *up_latest_attempt(const status_store *st, int id) {
    for (int a = status_max_attempt(st); a >= 0; a--) {
        st_stage *s = status_stage(st, id, a);
        if (s) return s;
    }
    return NULL;
}

int up_cell_dur(ebuf *b, int64_t ms) {
    char t[HTML_FMT_MAX];
    return html_cell_sorted(b, html_fmt_duration(ms, t, sizeof t), ms);
}

int up_cell_bytes(ebuf *b, int64_t bytes) {
    char t[HTML_FMT_MAX];
    return html_cell_sorted(b, bytes ? html_fmt_bytes(bytes, t, sizeof t) : "", bytes);
}

int up_cell_time(ebuf *b, int64_t ms) {
    char t[HTML_FMT_MAX];
    return html_cell_sorted(b, html_fmt_time(ms, t, sizeof t), ms);
}

int up_fact(ebuf *b, const char *k, const char *v) {
    return html_raw(b, "<li><b>") || html_text(b, k) || html_raw(b, ":</b> ") || html_text(b, v) ||
           html_raw(b, "</li>");
}

int64_t up_stage_duration(const uipage *u, const st_stage *s) {
    if (!s->submit_ms) return -1;
    int64_t end = s->complete_ms ? s->complete_ms : u->now;
    return end > s->submit_ms ? end - s->submit_ms : 0;
}

int up_stage_table(uipage *u, const char *id, st_stage *const *v, int n, int with_failure) {
    static const char *const hdr[] = {"Stage Id",     "Description",   "Submitted",     "Duration",
                                      "Tasks: Succeeded/Total", "Input", "Output", "Shuffle Read",
                                      "Shuffle Write", "Failure Reason"};
    ebuf *b = u->b;
    int rc = html_table_begin(b, id, hdr, with_failure ? 10 : 9);
    for (int i = 0; i < n && !rc; i++) {
        const st_stage *s = v[i];
        char href[700], t[HTML_FMT_MAX], sid[32];
        up_href(u, href, sizeof href, "/stages/stage/?id=%d&attempt=%d", s->id, s->attempt);
        if (s->attempt) snprintf(sid, sizeof sid, "%d (retry %d)", s->id, s->attempt);
        else snprintf(sid, sizeof sid, "%d", s->id);
        rc = html_rawf(b, "<tr data-stage-id=\"%d\" data-attempt=\"%d\"><td data-v=\"%d\">", s->id, s->attempt,
                       s->id) ||
             html_text(b, sid) || html_raw(b, "</td><td>");
        if (!rc && s->description)
            rc = html_raw(b, "<div>") || html_text(b, s->description) || html_raw(b, "</div>");
        rc = rc || html_link(b, href, s->name ? s->name : "") || html_raw(b, "</td>") ||
             html_cell_sorted(b, html_fmt_time(s->submit_ms, t, sizeof t), s->submit_ms) ||
             up_cell_dur(b, up_stage_duration(u, s)) || html_raw(b, "<td>") ||
             html_progress_ex(b, s->completed_indices, s->active_tasks, s->failed_tasks, s->killed_tasks, 0,
                              s->ntasks) ||
             html_raw(b, "</td>") || up_cell_bytes(b, s->m.in_bytes) || up_cell_bytes(b, s->m.out_bytes) ||
             up_cell_bytes(b, s->m.sr_remote_bytes + s->m.sr_local_bytes) || up_cell_bytes(b, s->m.sw_bytes);
        if (!rc && with_failure) rc = html_raw(b, "<td class=\"err\">") || html_text(b, s->failure) ||
                                      html_raw(b, "</td>");
        rc = rc || html_row_end(b);
    }
    return rc || html_table_end(b);
}

