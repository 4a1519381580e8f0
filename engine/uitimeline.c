/*
 * uitimeline.c -- event timelines as inline SVG (see uitimeline.h).
 *
 * A stage attempt's: a lane per executor (in the order they first ran a task
 * of it, the lanes past UI_TIMELINE_LANES - 1 sharing the last), time
 * along x from the first launch to the last end.  Up to
 * UI_TIMELINE_TASKS tasks each is a bar, coloured by status, stacked in
 * the lane so that overlapping tasks do not hide one another; beyond
 * that, each lane shows per time bucket how many of its tasks ran then
 * (bars scaled to the busiest bucket), so the drawing stays a bounded
 * number of elements however many tasks the stage has.
 *
 * The application's (the jobs page): from its start to now (or its end),
 * a lane of executors marked where each was added and removed, and a lane
 * of jobs, each a bar stacked in the lane's rows so that overlapping jobs
 * do not hide one another.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"
#include "html.h"
#include "uipagekit.h"
#include "uitimeline.h"

enum { LABEL_W = 130, PLOT_W = 860, LANE_H = 36, STACK = 6, AXIS_H = 22 };

typedef struct lanes {
    const char *id[UI_TIMELINE_LANES];
    int n, last;
} lanes;

static int lane_of(lanes *l, const char *exec) {
    if (l->n && !strcmp(l->id[l->last], exec)) return l->last;
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->id[i], exec)) return l->last = i;
    if (l->n < UI_TIMELINE_LANES) {
        l->id[l->n] = exec;
        return l->last = l->n++;
    }
    return UI_TIMELINE_LANES - 1;
}

static int64_t task_end(const st_task *t, int64_t now) {
    int64_t e = t->finish_ms ? t->finish_ms : now;
    return e > t->launch_ms ? e : t->launch_ms;
}

static double xpos(int64_t t, int64_t t0, int64_t span) { return LABEL_W + (double)(t - t0) * PLOT_W / (double)span; }

static int draw_tasks(uipage *u, const st_stage *s, lanes *l, int64_t t0, int64_t span) {
    ebuf *b = u->b;
    int64_t (*free_at)[STACK] = calloc(UI_TIMELINE_LANES, sizeof *free_at);
    if (!free_at) return em__seterr(EM_ENOMEM, "ui: out of memory");
    int rc = 0;
    static const char *const cls[] = {"running", "", "failed", "killed"};
    for (const st_task *t = s->tasks; t && !rc; t = t->next) {
        if (!t->launch_ms) continue;
        int lane = lane_of(l, t->exec_id);
        int64_t e = task_end(t, u->now);
        int row = 0; /* the first row free by its launch, else the last */
        while (row < STACK - 1 && free_at[lane][row] > t->launch_ms) row++;
        free_at[lane][row] = e;
        double x = xpos(t->launch_ms, t0, span), w = xpos(e, t0, span) - x;
        char d[HTML_FMT_MAX];
        rc = html_rawf(b,
                       "<rect class=\"task %s\" data-task-id=\"%lld\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
                       "height=\"4\"><title>Task %lld (%d.%d) on ",
                       cls[t->status & 3], (long long)t->task_id, x, AXIS_H + lane * LANE_H + 2 + row * 5,
                       w < 1 ? 1.0 : w, (long long)t->task_id, t->index, t->attempt) ||
             html_text(b, t->exec_id) ||
             html_rawf(b, ": %s, %s</title></rect>\n", status_task_name(t->status),
                       html_fmt_duration(e - t->launch_ms, d, sizeof d));
    }
    free(free_at);
    return rc;
}

static int draw_buckets(uipage *u, const st_stage *s, lanes *l, int64_t t0, int64_t span) {
    enum { B = UI_TIMELINE_BUCKETS };
    int (*cnt)[B + 1] = calloc(UI_TIMELINE_LANES, sizeof *cnt);
    if (!cnt) return em__seterr(EM_ENOMEM, "ui: out of memory");
    for (const st_task *t = s->tasks; t; t = t->next) {
        if (!t->launch_ms) continue;
        int lane = lane_of(l, t->exec_id);
        int64_t b0 = (t->launch_ms - t0) * B / span, b1 = (task_end(t, u->now) - t0) * B / span;
        if (b0 > B - 1) b0 = B - 1;
        if (b1 > B - 1) b1 = B - 1;
        cnt[lane][b0]++;
        cnt[lane][b1 + 1]--;
    }
    int most = 1;
    for (int i = 0; i < l->n; i++)
        for (int k = 0, run = 0; k < B; k++) {
            run += cnt[i][k];
            cnt[i][k] = run;
            if (run > most) most = run;
        }
    int rc = 0;
    double bw = (double)PLOT_W / B;
    for (int i = 0; i < l->n && !rc; i++)
        for (int k = 0; k < B && !rc; k++) {
            if (cnt[i][k] <= 0) continue;
            double h = (double)(LANE_H - 6) * cnt[i][k] / most;
            rc = html_rawf(u->b,
                           "<rect class=\"bucket\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
                           "<title>%d tasks</title></rect>\n",
                           LABEL_W + k * bw, AXIS_H + i * LANE_H + (LANE_H - 3) - h, bw - 0.5, h, cnt[i][k]);
        }
    free(cnt);
    return rc;
}

int ui_timeline(uipage *u, const st_stage *s) {
    ebuf *b = u->b;
    int64_t t0 = 0, t1 = 0;
    int n = 0;
    for (const st_task *t = s->tasks; t; t = t->next) {
        if (!t->launch_ms) continue;
        int64_t e = task_end(t, u->now);
        if (!n || t->launch_ms < t0) t0 = t->launch_ms;
        if (!n || e > t1) t1 = e;
        n++;
    }
    if (!n) return html_raw(b, "<p>No tasks have started yet.</p>\n");
    int64_t span = t1 - t0 > 0 ? t1 - t0 : 1;
    /* The lanes first, so that the SVG's height is known. */
    lanes l = {{0}, 0, 0};
    for (const st_task *t = s->tasks; t; t = t->next)
        if (t->launch_ms) lane_of(&l, t->exec_id);
    int aggregated = n > UI_TIMELINE_TASKS;
    int w = LABEL_W + PLOT_W + 10, h = AXIS_H + l.n * LANE_H + 4;
    int rc = html_rawf(b,
                       "<p>%s</p><svg id=\"timeline\" class=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" "
                       "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
                       aggregated ? "Tasks running per executor over time (bars: how many ran in each interval)."
                                  : "Each task a bar from its launch to its end: green succeeded, red failed, "
                                    "grey killed, blue running.",
                       aggregated ? "buckets" : "tasks", w, h, w, h);
    for (int i = 0; i <= 4 && !rc; i++) { /* the axis: offsets from the first launch */
        char d[HTML_FMT_MAX];
        double x = LABEL_W + (double)PLOT_W * i / 4;
        rc = html_rawf(b, "<text x=\"%.1f\" y=\"14\" text-anchor=\"%s\">+%s</text>", x,
                       i == 0 ? "start" : i == 4 ? "end" : "middle", html_fmt_duration(span * i / 4, d, sizeof d));
    }
    for (int i = 0; i < l.n && !rc; i++) {
        const char *name = i == UI_TIMELINE_LANES - 1 && l.n == UI_TIMELINE_LANES ? "others" : l.id[i];
        rc = html_rawf(b, "<rect class=\"lane\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>", LABEL_W,
                       AXIS_H + i * LANE_H, PLOT_W, LANE_H - 2) ||
             html_rawf(b, "<text x=\"4\" y=\"%d\">", AXIS_H + i * LANE_H + LANE_H / 2 + 4) ||
             html_raw(b, strcmp(name, "others") ? "Executor " : "") || html_text(b, name) ||
             html_raw(b, "</text>\n");
    }
    /* The lanes are known: a second pass finds each task's in the same order. */
    l.last = 0;
    if (!rc) rc = aggregated ? draw_buckets(u, s, &l, t0, span) : draw_tasks(u, s, &l, t0, span);
    return rc || html_raw(b, "</svg>\n");
}

/* ------------------------------------------------------ the application */

static int axis(ebuf *b, int64_t span) {
    int rc = 0;
    for (int i = 0; i <= 4 && !rc; i++) {
        char d[HTML_FMT_MAX];
        double x = LABEL_W + (double)PLOT_W * i / 4;
        rc = html_rawf(b, "<text x=\"%.1f\" y=\"14\" text-anchor=\"%s\">+%s</text>", x,
                       i == 0 ? "start" : i == 4 ? "end" : "middle", html_fmt_duration(span * i / 4, d, sizeof d));
    }
    return rc;
}

static int exec_mark(uipage *u, const st_exec *x, int64_t at, const char *cls, const char *what, int64_t t0,
                     int64_t span) {
    char t[HTML_FMT_MAX];
    return html_rawf(u->b, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%d\" r=\"5\"><title>Executor ", cls,
                     xpos(at, t0, span), AXIS_H + LANE_H / 2) ||
           html_text(u->b, x->id) || html_rawf(u->b, " %s at %s", what, html_fmt_time(at, t, sizeof t)) ||
           (!strcmp(cls, "removed") && x->remove_reason &&
            (html_raw(u->b, ": ") || html_text(u->b, x->remove_reason))) ||
           html_raw(u->b, "</title></circle>\n");
}

int ui_jobs_timeline(uipage *u) {
    ebuf *b = u->b;
    int njobs = 0;
    for (const st_job *j = status_jobs(u->st); j; j = j->next) njobs += j->submit_ms > 0;
    int64_t t0 = u->app->start_ms, t1 = u->now;
    for (const st_exec *x = status_execs(u->st); x; x = x->next)
        if (x->add_ms && (!t0 || x->add_ms < t0)) t0 = x->add_ms;
    int skip = njobs > UI_TIMELINE_TASKS ? njobs - UI_TIMELINE_TASKS : 0, k = 0;
    for (const st_job *j = status_jobs(u->st); j; j = j->next) {
        if (!j->submit_ms || k++ < skip) continue;
        if (!t0 || j->submit_ms < t0) t0 = j->submit_ms;
        if (j->complete_ms > t1) t1 = j->complete_ms;
    }
    if (!t0) return html_raw(b, "<p>Nothing has happened yet.</p>\n");
    int64_t span = t1 - t0 > 0 ? t1 - t0 : 1;
    int w = LABEL_W + PLOT_W + 10, h = AXIS_H + (1 + STACK) * LANE_H / 2 + LANE_H + 4;
    int rc = html_rawf(b,
                       "<p>Executors added (green) and removed (red); each job a bar from its submission to its "
                       "end: green succeeded, red failed, blue running.</p><svg id=\"jobs-timeline\" "
                       "xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                       "role=\"img\">\n",
                       w, h, w, h) ||
             axis(b, span);
    int jobs_y = AXIS_H + LANE_H, jobs_h = h - jobs_y - 4;
    rc = rc ||
         html_rawf(b, "<rect class=\"lane\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/><text x=\"4\" y=\"%d\">"
                   "Executors</text>\n",
                   LABEL_W, AXIS_H, PLOT_W, LANE_H - 2, AXIS_H + LANE_H / 2 + 4) ||
         html_rawf(b, "<rect class=\"lane\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/><text x=\"4\" y=\"%d\">"
                   "Jobs</text>\n",
                   LABEL_W, jobs_y, PLOT_W, jobs_h, jobs_y + jobs_h / 2 + 4);
    for (const st_exec *x = status_execs(u->st); x && !rc; x = x->next) {
        if (x->add_ms) rc = exec_mark(u, x, x->add_ms, "added", "added", t0, span);
        if (!rc && x->remove_ms) rc = exec_mark(u, x, x->remove_ms, "removed", "removed", t0, span);
    }
    int64_t free_at[STACK] = {0};
    static const char *const cls[] = {"running", "", "failed", "running"}; /* by SJ_ status */
    k = 0;
    for (const st_job *j = status_jobs(u->st); j && !rc; j = j->next) {
        if (!j->submit_ms || k++ < skip) continue;
        int64_t e = j->complete_ms ? j->complete_ms : u->now;
        if (e < j->submit_ms) e = j->submit_ms;
        int row = 0;
        while (row < STACK - 1 && free_at[row] > j->submit_ms) row++;
        free_at[row] = e;
        double x = xpos(j->submit_ms, t0, span), bw = xpos(e, t0, span) - x;
        char href[512], d[HTML_FMT_MAX];
        rc = html_rawf(b, "<a href=\"%s\"><rect class=\"job %s\" data-job-id=\"%d\" x=\"%.1f\" y=\"%d\" "
                       "width=\"%.1f\" height=\"%d\"><title>Job %d: ",
                       up_href(u, href, sizeof href, "/jobs/job/?id=%d", j->id), cls[j->status & 3], j->id, x,
                       jobs_y + 2 + row * (jobs_h - 4) / STACK, bw < 1 ? 1.0 : bw, (jobs_h - 4) / STACK - 1, j->id) ||
             html_text(b, j->description ? j->description : j->name ? j->name : "") ||
             html_rawf(b, ", %s, %s</title></rect></a>\n", status_job_name(j->status),
                       html_fmt_duration(e - j->submit_ms, d, sizeof d));
    }
    return rc || html_raw(b, "</svg>\n");
}
