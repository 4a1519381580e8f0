/*
 * uidag.c -- a job's stage DAG as inline SVG (see uipagekit.h): each of
 * the job's stages a node in the column of its depth (the longest chain
 * of parents above it within the job), the nodes of a column by stage id,
 * an arrow from each parent to its child, the stages the job skipped
 * greyed.  Each node links to the stage's latest attempt.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"
#include "html.h"
#include "uidag.h"
#include "uipagekit.h"

enum { NODE_W = 150, NODE_H = 40, COL_W = 200, ROW_H = 56, PAD = 16 };

typedef struct dnode {
    int id, k; /* stage id, its slot in the job */
    int depth, row;
    const st_stage *s; /* its latest attempt, NULL when not kept */
} dnode;

static int cmp_id(const void *a, const void *b) {
    const dnode *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static dnode *find(dnode *v, int n, int id) {
    dnode key = {.id = id};
    return bsearch(&key, v, (size_t)n, sizeof *v, cmp_id);
}

int ui_dag(uipage *u, const st_job *j) {
    int n = j->nstages;
    ebuf *b = u->b;
    if (n <= 0) return html_raw(b, "<p>No stages.</p>\n");
    dnode *v = calloc((size_t)n, sizeof *v);
    if (!v) return em__seterr(EM_ENOMEM, "ui: out of memory");
    for (int k = 0; k < n; k++) {
        v[k].id = j->stage_ids[k];
        v[k].k = k;
        v[k].s = up_latest_attempt(u->st, j->stage_ids[k]);
    }
    qsort(v, (size_t)n, sizeof *v, cmp_id);
    /* Depths: relax until nothing changes (at most n rounds). */
    for (int round = 0, changed = 1; changed && round < n; round++) {
        changed = 0;
        for (int i = 0; i < n; i++) {
            const st_stage *s = v[i].s;
            for (int p = 0; s && p < s->nparents; p++) {
                dnode *d = find(v, n, s->parents[p]);
                if (d && d != &v[i] && d->depth + 1 > v[i].depth) {
                    v[i].depth = d->depth + 1;
                    changed = 1;
                }
            }
        }
    }
    int maxd = 0, maxr = 0;
    int *rows = calloc((size_t)n + 1, sizeof *rows); /* nodes per depth so far */
    if (!rows) {
        free(v);
        return em__seterr(EM_ENOMEM, "ui: out of memory");
    }
    for (int i = 0; i < n; i++) { /* by id: rows in id order */
        if (v[i].depth > n) v[i].depth = n;
        v[i].row = rows[v[i].depth]++;
        if (v[i].depth > maxd) maxd = v[i].depth;
        if (v[i].row > maxr) maxr = v[i].row;
    }
    free(rows);
    int w = 2 * PAD + maxd * COL_W + NODE_W, h = 2 * PAD + maxr * ROW_H + NODE_H;
    int rc = html_rawf(b,
                       "<svg id=\"dag\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                       "viewBox=\"0 0 %d %d\" role=\"img\"><defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" "
                       "refX=\"10\" refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\">"
                       "<path d=\"M0,0L10,5L0,10z\" fill=\"#555\"/></marker></defs>\n",
                       w, h, w, h);
    /* The edges first, under the nodes. */
    for (int i = 0; i < n && !rc; i++) {
        const st_stage *s = v[i].s;
        for (int p = 0; s && p < s->nparents && !rc; p++) {
            dnode *d = find(v, n, s->parents[p]);
            if (!d || d == &v[i]) continue;
            int x1 = PAD + d->depth * COL_W + NODE_W, y1 = PAD + d->row * ROW_H + NODE_H / 2;
            int x2 = PAD + v[i].depth * COL_W, y2 = PAD + v[i].row * ROW_H + NODE_H / 2;
            rc = html_rawf(b,
                           "<path class=\"edge\" data-from=\"%d\" data-to=\"%d\" d=\"M%d,%dC%d,%d %d,%d %d,%d\" "
                           "marker-end=\"url(#arrow)\"/>\n",
                           d->id, v[i].id, x1, y1, (x1 + x2) / 2, y1, (x1 + x2) / 2, y2, x2, y2);
        }
    }
    for (int i = 0; i < n && !rc; i++) {
        const dnode *d = &v[i];
        int x = PAD + d->depth * COL_W, y = PAD + d->row * ROW_H;
        int skipped = j->stage_state[d->k] == 2;
        char href[700], name[32];
        if (d->s) up_href(u, href, sizeof href, "/stages/stage/?id=%d&attempt=%d", d->id, d->s->attempt);
        const char *nm = d->s && d->s->name ? d->s->name : "";
        size_t len = strlen(nm);
        /* Cut at a character's start, not inside a UTF-8 sequence. */
        size_t cut = len > 22 ? 21 : len;
        while (cut < len && cut > 0 && ((unsigned char)nm[cut] & 0xC0) == 0x80) cut--;
        snprintf(name, sizeof name, "%.*s%s", (int)cut, nm, cut < len ? "\xE2\x80\xA6" : "");
        rc = html_rawf(b, "<g class=\"stage%s\" data-stage-id=\"%d\">", skipped ? " skipped" : "", d->id) ||
             (d->s && (html_raw(b, "<a href=\"") || html_text(b, href) || html_raw(b, "\">"))) ||
             html_rawf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"4\"/>", x, y, NODE_W, NODE_H) ||
             html_rawf(b, "<text x=\"%d\" y=\"%d\">Stage %d%s</text>", x + 8, y + 16, d->id,
                       skipped ? " (skipped)" : "") ||
             html_rawf(b, "<text x=\"%d\" y=\"%d\">", x + 8, y + 32) || html_text(b, name) ||
             html_raw(b, "</text><title>") || html_text(b, nm) || html_raw(b, "</title>") ||
             (d->s && html_raw(b, "</a>")) || html_raw(b, "</g>\n");
    }
    free(v);
    return rc || html_raw(b, "</svg>\n");
}
