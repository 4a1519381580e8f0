/*
 * tasksched.h -- the task scheduler: how the stages' tasks run.
 *
 * dag.c decides what runs (stages for jobs); this part runs it.  An
 * attempt asked for joins the run queue; after each burst of events,
 * dispatch launches queued attempts through the backend on executors with
 * room, earlier jobs first, after the locality wait and away from the
 * executors excludeOnFailure rules out.  An attempt's end updates its
 * records and decides what follows: a winner kills its copies, a failure
 * is retried up to max_failures, a fetch failure hands its lost outputs to
 * dag.c.  Timed work speculates slow tasks and redraws the progress line;
 * the stuck check fails jobs that cannot progress.
 *
 * Internal to the scheduler (dag.c and tasksched.c).  Every function runs
 * on the scheduler's thread.
 */
#ifndef EM_TASKSCHED_H
#define EM_TASKSCHED_H

#include "dag_int.h"

/* Put s on the active list (stages with running attempts or waiting: what
 * per-event and timed work scans).  Out of memory: left off the list. */
void ts_activate(dag *d, stage *s);

/* Ask for an attempt of task idx of s, for j: it joins the run queue.  0
 * or EM_ENOMEM. */
int ts_launch(dag *d, job *j, stage *s, int idx);
/* The stage starts running for j (a map stage that was idle starts a new
 * attempt of itself: failure counts start again). */
void ts_take_stage(dag *d, stage *s, job *j);
/* j takes s, and each of its pending tasks not queued yet is queued.  0 or
 * EM_ENOMEM. */
int ts_launch_pending(dag *d, job *j, stage *s);
/* Drop the queue's entries of a job, or of a stage, or move a stage's
 * entries from one job to another. */
void ts_runq_drop_job(dag *d, job *j);
void ts_runq_drop_stage(dag *d, stage *s);
void ts_runq_move(dag *d, stage *s, job *from, job *to);
/* Kill the running attempts of s (the backend's kill; ends come as
 * events). */
void ts_kill_stage(dag *d, stage *s);
/* Move the running attempts of s from job `from` to job `to`. */
void ts_move_attempts(dag *d, stage *s, job *from, job *to);

/* An attempt ended (EV_TASK_ENDED).  Returns 1 when the event was handed
 * on to its job's mailbox (a result; the caller must not free it). */
int ts_task_ended(dag *d, sched_event *ev);
/* Launch what the queue holds where there is room (after every burst). */
void ts_dispatch(dag *d);
/* The adaptive queues' depth per core (a power of two, 1 .. 1024): the
 * round trip rtt_us over a task's run run_us, halved while the cores of
 * the cluster would queue more than 4,096 attempts at it.  See
 * tasksched.c. */
int ts_queue_depth(uint64_t rtt_us, uint64_t run_us, int cores);
/* An executor joined: its queue as deep as the others' (adaptive queues). */
void ts_exec_added(dag *d, exec_rec *x);
/* Milliseconds until timed work is due (-1: none). */
int ts_next_timeout(dag *d);
/* Speculation and the progress line, when due. */
void ts_timed_work(dag *d);
/* Fail the jobs that cannot progress: no executor comes (after
 * ember.scheduler.maxRegisteredWait), or nothing runs and nothing will. */
void ts_check_stuck(dag *d);

#endif
