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
 * start and end times).  The job loop reacts to the events the backend
 * posts (events.h); a failed or canceled job kills its running attempts
 * and waits for their ends.  It deals in tasks and events, never in
 * threads or sockets.
 */
#ifndef EM_DAG_H
#define EM_DAG_H

#include "backend.h"
#include "ember.h"
#include "events.h"
#include "mapout.h"
#include "rdd.h"
#include "taskdesc.h"

typedef struct dag dag;

typedef struct job_spec {
    em_rdd *rdd;
    const plan_sink *sink;        /* the action's per-partition part */
    const int *parts;             /* partitions to compute; NULL: all */
    int nparts;
    /* Called once per partition with its first successful result; may take
     * res->data (set it NULL).  A negative return fails the job. */
    int (*on_result)(void *cctx, int idx, task_result *res);
    void *cctx;
    /* Settings for this job's tasks. */
    uint64_t mem_budget, block_bytes, max_record;
    uint8_t level;
    int max_failures;
    int progress;                 /* draw the console progress line */
    const char *faults;           /* ember.test.faults, NULL when none */
    /* Speculation (ember.speculation*): on, check interval, multiplier of
     * the median, quantile of tasks done first, minimum runtime. */
    int speculation;
    int spec_interval_ms;
    double spec_multiplier, spec_quantile;
    int64_t spec_min_ms;
} job_spec;

/* A scheduler with its event queue; it runs jobs once given a backend. */
dag *dag_new(em_stats *stats, uint64_t cache_ns);
/* The queue the backend posts its events to. */
evq *dag_events(dag *d);
void dag_set_backend(dag *d, backend *be);
/* Free the scheduler (after the backend is closed: no event may come). */
void dag_free(dag *d);
/* From any thread: jobs numbered up to seq fail with EM_ECANCELED (the one
 * running now has its attempts killed; one not started yet fails when it
 * starts); jobs numbered later are not affected. */
void dag_cancel_upto(dag *d, uint64_t seq);
/* Run a job to completion.  seq numbers it (increasing; see
 * dag_cancel_upto).  One job at a time: the caller serializes.  0, or < 0
 * with em_errmsg() naming the failing task and its own message.  No task
 * of the job is running on return. */
int dag_run_job(dag *d, const job_spec *j, uint64_t seq);
mapout *dag_mapout(dag *d);
/* Drop a shuffle no live RDD reads any more: its map stage, its tracker
 * entry, and (through the backend) its files. */
void dag_drop_shuffle(dag *d, uint32_t shuffle_id);
/* Shuffles tracked and map stages held now (any thread, without waiting
 * for the running job). */
void dag_live_counts(dag *d, int64_t *shuffles, int64_t *stages);

/* The output commit coordinator's question (exec_env.ask_commit): may
 * attempt `attempt` of the partition of the stage commit its output?  1 or
 * 0.  Any thread. */
int dag_ask_commit(void *d, uint32_t stage_id, int32_t partition, uint64_t attempt);

/* Count the stages of rdd's lineage: for tests and the lineage printer. */
int dag_count_stages(em_rdd *rdd);

#endif
