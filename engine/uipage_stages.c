/*
 * uipage_stages.c -- the stages page (/stages/, see uipage_stages.h):
 * every stage attempt the store keeps, in tables by state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"
#include "html.h"
#include "uipage_stages.h"
#include "uipagekit.h"

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
