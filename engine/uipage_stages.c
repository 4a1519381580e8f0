/*
 * uipage_stages.c -- the stages page (/stages/): every stage attempt the
 * store keeps, in tables by state, and the table of stage attempts the
 * job page shares (uipagekit.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"
#include "html.h"
#include "uipagekit.h"

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

int uipage_stages(uipage *u) {
    static const struct {
        int status;
        const char *id, *title;
    } parts[] = {{SS_ACTIVE, "stages-active", "Active Stages"},
                 {SS_PENDING, "stages-pending", "Pending Stages"},
                 {SS_COMPLETE, "stages-completed", "Completed Stages"},
                 {SS_SKIPPED, "stages-skipped", "Skipped Stages"},
                 {SS_FAILED, "stages-failed", "Failed Stages"}};
    int total = status_nstages(u->st);
    st_stage **v = malloc((size_t)(total ? total : 1) * sizeof *v);
    if (!v) return em__seterr(EM_ENOMEM, "ui: out of memory");
    int rc = up_begin(u, "Stages for All Jobs", UP_TAB_STAGES);
    st_stage *last = NULL;
    for (st_stage *s = status_stages(u->st); s; s = s->next) last = s;
    int shown = 0;
    for (size_t p = 0; p < sizeof parts / sizeof *parts && !rc; p++) {
        int n = 0;
        for (st_stage *s = last; s && n < total; s = s->prev) /* the newest first */
            if (s->status == parts[p].status) v[n++] = s;
        if (!n) continue;
        char head[64];
        snprintf(head, sizeof head, "%s (%d)", parts[p].title, n);
        rc = html_heading(u->b, NULL, head) ||
             up_stage_table(u, parts[p].id, v, n, parts[p].status == SS_FAILED);
        shown += n;
    }
    free(v);
    if (!rc && !shown) rc = html_raw(u->b, "<p>No stages yet.</p>\n");
    return rc || up_end(u);
}
