/*
 * sched_ops.h -- the scheduler as the engine sees it: the job an action
 * asks for (job_spec), and the table of operations through which the
 * engine runs jobs, cancels them and tells the scheduler and the executors
 * what it no longer needs.
 *
 * The engine knows no scheduler and no executor: the wiring file
 * (engine/open.c, em_open) builds the DAG scheduler and the backend of the
 * master URL, and hands the context this table with the state its
 * operations take.  Every other engine file calls through it (ctx.h's
 * ctx_* functions).
 */
#ifndef EM_SCHED_OPS_H
#define EM_SCHED_OPS_H

#include <stdint.h>

#include "codec.h"
#include "ember.h"
#include "taskdesc.h"
#include "taskresult.h"

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
    bf_codec codec;               /* of shuffle and spill blocks */
    int max_failures;
    int max_stage_attempts;       /* ember.stage.maxConsecutiveAttempts */
    int progress;                 /* draw the console progress line */
    const char *faults;           /* ember.test.faults, NULL when none */
    const char *faults_dir;       /* ember.test.faults.dir (its gates), NULL
                                     when none or no faults */
    /* Speculation (ember.speculation*): on, check interval, multiplier of
     * the median, quantile of tasks done first, minimum runtime. */
    int speculation;
    int spec_interval_ms;
    double spec_multiplier, spec_quantile;
    int64_t spec_min_ms;
    /* ember.locality.wait: how long a task waits for the executor holding
     * its cached input before it runs elsewhere. */
    int64_t locality_wait_ms;
    /* ember.driver.maxResultSize: the results of all of the job's tasks
     * together may not be larger (0: no limit). */
    uint64_t max_result_bytes;
    /* ember.excludeOnFailure.* (Spark's): off unless enabled; a task's
     * attempts avoid an executor where it failed task_per_exec times; a
     * stage avoids one where stage_per_exec of its tasks failed; after a
     * stage succeeds, an executor where app_per_exec of its tasks failed
     * gets no task for timeout_ms. */
    int excl_enabled, excl_task_per_exec, excl_stage_per_exec, excl_app_per_exec;
    int64_t excl_timeout_ms;
    /* A task every executor is excluded for waits this long for another
     * (ember.scheduler.excludeOnFailure.unschedulableTaskSetTimeout). */
    int64_t excl_unsched_ms;
} job_spec;

typedef struct sched_ops {
    /* Run a job to completion on the calling thread (dag.h's dag_run_job):
     * j->on_result is called on this thread.  group: the job group it
     * belongs to, or NULL.  0, or < 0 with the message set. */
    int (*run_job)(void *s, const job_spec *j, const char *group);
    /* Cancel every job posted so far; their actions return EM_ECANCELED
     * with a message naming why. */
    void (*cancel_all)(void *s, const char *why);
    /* The same for the jobs of one group: how many were canceled. */
    int (*cancel_group)(void *s, const char *group);
    /* Wait until no task attempt runs and start no job until release.  0,
     * or EM_ENOMEM (nothing held). */
    int (*hold)(void *s);
    void (*release)(void *s);
    /* Run fn(arg) on the scheduler's thread while no stage is being built,
     * then recompute the live stages' parents.  0, or EM_ENOMEM. */
    int (*truncate)(void *s, void (*fn)(void *), void *arg);
    /* A shuffle no live RDD reads: its stage, outputs and files go. */
    void (*drop_shuffle)(void *s, uint32_t shuffle_id);
    /* An RDD's cached blocks go from every executor (namespace ns). */
    void (*drop_cached)(void *s, uint64_t ns, int rdd_id);
    /* A destroyed broadcast's copies go from every executor. */
    void (*drop_bcast)(void *s, uint64_t id);
    /* Shuffles tracked and map stages held now (any thread). */
    void (*live_counts)(void *s, int64_t *shuffles, int64_t *stages);
    /* Cores of the executors now: local[N]'s N, or the registered
     * executors' in cluster mode. */
    int (*cores)(void *s);
    /* Map outputs kept in the driver's memory (local[N]): count, bytes. */
    void (*memory_outputs)(void *s, int64_t *count, int64_t *bytes);
} sched_ops;

#endif
