/*
 * listen.h -- what the scheduler tells its listeners: the listener events
 * (appevent.h) of jobs, stages, task attempts and executors, built on the
 * scheduler's thread at the moment each happens and posted to the
 * listener bus (bus.h).  Without a bus (no UI, no event log) every call
 * returns at once and nothing is built.
 *
 * The scheduler's stages live across jobs (a map stage is shared and
 * reused); its listeners see Spark's model: a stage attempt is submitted
 * when its first task is asked for and completes when its last task
 * succeeds, fails when a fetch failure or its job's failure ends it, and a
 * stage that runs again (lost outputs, a later job) is a new attempt.
 * Internal to dag.c, stage.c and tasksched.c.
 */
#ifndef EM_LISTEN_H
#define EM_LISTEN_H

#include "dag_int.h"

/* A task attempt's locality, as its TaskStart shows it (attempt_rec.loc). */
enum { LOC_NO_PREF = 0, LOC_PROCESS, LOC_NODE, LOC_ANY };

void lis_job_start(dag *d, job *j);
/* Before the job's end is made known: stage attempts it leaves open
 * complete, failed with its message when it failed. */
void lis_job_end(dag *d, job *j);
/* A task of s is asked for: opens a stage attempt when none is open. */
static inline void lis_task_wanted(dag *d, stage *s);
void lis_stage_submitted(dag *d, stage *s);
/* The open stage attempt of s ends: succeeded (why NULL) or failed. */
void lis_stage_completed(dag *d, stage *s, const char *why);
void lis_task_start(dag *d, stage *s, const attempt_rec *a, int part);
void lis_task_end(dag *d, stage *s, const attempt_rec *a, int part, const sched_event *ev);
/* The partitions an attempt cached (its result's blocks), one
 * BlockUpdated each, before its TaskEnd. */
void lis_blocks_cached(dag *d, const sched_event *ev);
void lis_exec_added(dag *d, const sched_event *ev);
void lis_exec_lost(dag *d, const sched_event *ev);

static inline void lis_task_wanted(dag *d, stage *s) {
    if (d->bus && !s->ui_open) lis_stage_submitted(d, s);
}

#endif
