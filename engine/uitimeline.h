/*
 * uitimeline.h -- event timelines drawn as inline SVG (uitimeline.c): a
 * stage attempt's tasks; the application's executors and jobs.
 */
#ifndef EM_UITIMELINE_H
#define EM_UITIMELINE_H

#include "uipagekit.h"

/* Up to UI_TIMELINE_TASKS tasks, a bar each; past it, per executor the
 * number of tasks running in each of UI_TIMELINE_BUCKETS time buckets;
 * at most UI_TIMELINE_LANES executor lanes (the last shared by the rest). */
#define UI_TIMELINE_TASKS 1000
#define UI_TIMELINE_BUCKETS 100
#define UI_TIMELINE_LANES 64

/* Stage attempt s's tasks along time per executor (<svg id="timeline">,
 * class "tasks" or "buckets").  0 or EM_ENOMEM. */
int ui_timeline(uipage *u, const st_stage *s);
/* The application along time (<svg id="jobs-timeline">), as the jobs
 * page's event timeline: a lane of executors, each added (circle class
 * "added") and removed ("removed") at its time, and a lane of jobs, each
 * a bar (rect class "job", data-job-id) from its submission to its end,
 * coloured by status and linking to its page; at most UI_TIMELINE_TASKS
 * jobs, the latest.  0 or EM_ENOMEM. */
int ui_jobs_timeline(uipage *u);

#endif
