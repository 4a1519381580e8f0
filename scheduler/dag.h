/*
 * dag.h -- the DAG scheduler.
 *
 * On an action it walks the lineage from the final RDD, cuts stages at
 * shuffle dependencies, submits parent stages whose outputs are missing
 * first (stages whose outputs the map-output tracker still holds are
 * skipped), and runs one task per partition through the backend.  Failed
 * tasks are retried up to max_failures attempts; a shuffle fetch failure
 * forgets the bad map output, reruns just that map task, then the reader.
 * Each launch is an attempt with its own record (number, executor, state,
 * start and end times).
 *
 * One thread, the scheduler's own, owns all of this state and reacts to
 * events (events.h), as Spark's DAGScheduler event loop: attempts ending,
 * executors coming and going, and calls posted by driver threads (a job to
 * start, a cancel, a shuffle to drop).  Any number of driver threads run
 * jobs at once: each posts its job and waits for its own results, which it
 * hands to its action on its own thread.  Jobs start in the order they are
 * posted and share map stages: a shuffle two running jobs need is computed
 * once.  It deals in tasks and events, never in sockets.
 */
#ifndef EM_DAG_H
#define EM_DAG_H

#include "backend.h"
#include "ember.h"
#include "events.h"
#include "mapout.h"
#include "rdd.h"
#include "sched_ops.h"
#include "taskdesc.h"

typedef struct dag dag;

/* A scheduler with its event queue; it runs jobs once started. */
dag *dag_new(em_stats *stats, uint64_t cache_ns);
/* The queue the backend posts its events to. */
evq *dag_events(dag *d);
/* ember.scheduler.maxRegisteredWait: how long tasks wait while no
 * executor is alive before their jobs fail with the backend's why_idle. */
void dag_set_register_wait(dag *d, int64_t ms);
/* ember.starvation.timeout: while tasks wait for an executor, a warning
 * is logged this often (the application waits its turn at the master). */
void dag_set_starvation_timeout(dag *d, int64_t ms);
/* ember.shuffle.minNumPartitionsToHighlyCompress and
 * ember.shuffle.accurateBlockThreshold: how the map-output tracker
 * compresses segment sizes (mapout.h's mo_configure). */
void dag_set_map_statuses(dag *d, int64_t highly_min, int64_t accurate);
/* Listener events (listen.h) go to bus from now on (before dag_start; NULL:
 * none).  local: executors are the driver's threads (local[N]), shown as
 * Spark shows them, as the one executor "driver".  store_mem: the bytes
 * an executor's block store keeps in memory (its BlockManagerAdded's
 * "Maximum Memory"). */
struct lbus;
void dag_set_bus(dag *d, struct lbus *bus, int local, int64_t store_mem);
/* Start the scheduler's thread over the backend.  0, or < 0. */
int dag_start(dag *d, backend *be);
/* Refuse new jobs (EM_ECANCELED, "the context is closing") and cancel the
 * running ones; the scheduler keeps serving what they still ask (a shuffle
 * to drop).  From em_close, before it waits for its callers to return. */
void dag_refuse(dag *d);
/* Refuse new jobs, cancel the running ones (their actions return
 * EM_ECANCELED, "context closed"), wait until no attempt of any job runs,
 * and stop the thread.  Then the backend may be closed. */
void dag_stop(dag *d);
/* Free the scheduler (after dag_stop and the backend's close). */
void dag_free(dag *d);

/* Run a job to completion on the calling thread, while other threads run
 * theirs: j->on_result is called on this thread.  seq: see em_stats.jobs;
 * group: the job group it belongs to (NULL: none), for dag_cancel_group.
 * 0, or < 0 with em_errmsg() naming the failing task and its own message.
 * Returns once every partition has a result (attempts that lost to another
 * attempt of the same partition may still run; their outputs are
 * discarded), or, for a failed or canceled job, once none of its attempts
 * runs.  A job writing output (SK_SAVE) also waits for its losers: no
 * attempt that could still write runs on return. */
int dag_run_job(dag *d, const job_spec *j, const char *group);
/* Cancel every job posted so far (running or about to start): their
 * actions return EM_ECANCELED with a message naming `why`. */
void dag_cancel_all(dag *d, const char *why);
/* The same for the jobs of one group; returns how many were canceled. */
int dag_cancel_group(dag *d, const char *group);
/* Hold: wait until no attempt of any job runs, and start no job until
 * dag_release (em_bcast_destroy, so no task reads a freed broadcast).
 * 0, or EM_ENOMEM. */
int dag_hold(dag *d);
void dag_release(dag *d);
/* Drop a shuffle no live RDD reads any more: its map stage, its tracker
 * entry, and (through the backend) its files. */
void dag_drop_shuffle(dag *d, uint32_t shuffle_id);
/* Shuffles tracked and map stages held now (any thread, without waiting
 * for the scheduler). */
void dag_live_counts(dag *d, int64_t *shuffles, int64_t *stages);

/* The output commit coordinator's question (exec_env.ask_commit): may
 * attempt `attempt` of the partition of the stage commit its output?  1 or
 * 0.  Any thread. */
int dag_ask_commit(void *d, uint32_t stage_id, int32_t partition, uint64_t attempt);

/* Change the lineage graph on the scheduler's thread: run fn(arg) there,
 * while no stage or task is being built, then compute every live stage's
 * parent stages again.  For a checkpoint that truncates an RDD's lineage:
 * the stages that reached the old parents through it stop waiting for
 * them.  fn must not call into the scheduler.  0, or EM_ENOMEM (fn not
 * run). */
int dag_truncate(dag *d, void (*fn)(void *), void *arg);

#endif
