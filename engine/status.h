/*
 * status.h -- the application's status store: what the UI's pages and
 * /api/v1 show (Spark's AppStatusListener and AppStatusStore in one).
 *
 * status_on_event folds each listener event (appevent.h) into the
 * application, its environment, executors, jobs, stages (per attempt),
 * tasks and cached RDDs; readers look at them under the store's read lock.
 * One thread feeds events (the listener bus's); any number read.  Every
 * update is O(1) amortized (hash maps by id; a task's jobs are those of
 * its stage), so a 100,000-task stage costs no scan per event.
 *
 * The store stays bounded for a long-lived driver, as Spark's does: past
 * retained_jobs jobs or retained_stages stage attempts, the finished ones
 * that finished first go (a stage with its tasks); past retained_tasks
 * tasks in one stage attempt, its finished tasks that started first go
 * (the stage's totals keep counting them); past retained_dead_execs
 * removed executors, the first removed go.  Running jobs, active and
 * pending stages and running tasks are never dropped.
 *
 * Reading: take status_rdlock, walk the lists or look up by id, copy or
 * format what is needed into memory, status_unlock.  Never do I/O or wait
 * on anything while holding it: the listener bus thread waits for it.
 * Everything a reader sees belongs to the store and is valid only until
 * the unlock.
 */
#ifndef EM_STATUS_H
#define EM_STATUS_H

#include <stdint.h>

#include "appevent.h"
#include "taskmetrics.h"
#include "rddblocks.h"

/* Spark's defaults: spark.ui.retainedJobs, retainedStages, retainedTasks,
 * retainedDeadExecutors. */
#define STATUS_RETAINED_JOBS 1000
#define STATUS_RETAINED_STAGES 1000
#define STATUS_RETAINED_TASKS 100000
#define STATUS_RETAINED_DEAD_EXECS 100

typedef struct status_limits {
    int retained_jobs;       /* ember.ui.retainedJobs; <= 0: the default */
    int retained_stages;     /* ember.ui.retainedStages */
    int retained_tasks;      /* ember.ui.retainedTasks, per stage attempt */
    int retained_dead_execs; /* ember.ui.retainedDeadExecutors */
} status_limits;

/* JobExecutionStatus */
enum { SJ_RUNNING = 0, SJ_SUCCEEDED, SJ_FAILED, SJ_UNKNOWN };
/* StageStatus */
enum { SS_PENDING = 0, SS_ACTIVE, SS_COMPLETE, SS_FAILED, SS_SKIPPED };
/* TaskData.status */
enum { ST_RUNNING = 0, ST_SUCCESS, ST_FAILED, ST_KILLED };

/* Spark's names: "RUNNING", "ACTIVE", "SUCCESS", ... */
const char *status_job_name(int s);
const char *status_stage_name(int s);
const char *status_task_name(int s);

/* One entry of a killedTasksSummary: the kill's reason and how many. */
typedef struct st_killed {
    char *reason;
    int count;
    struct st_killed *next;
} st_killed;

typedef struct status_app {
    char *name, *id, *attempt_id, *user; /* NULL when not known yet */
    char *version;                       /* the writer's, from LogStart */
    int64_t start_ms, end_ms;            /* 0: not started / running */
    int64_t last_ms;                     /* the latest event's time */
} status_app;

typedef struct st_exec {
    char id[32], host[64];
    int port, cores;
    int active_tasks, completed_tasks, failed_tasks, total_tasks;
    int64_t total_duration, input_bytes, shuffle_read, shuffle_write, max_mem;
    int rdd_blocks;            /* cached partitions it holds ... */
    int64_t mem_used, disk_used; /* ... and their bytes */
    int64_t add_ms, remove_ms; /* remove_ms 0: active */
    char *remove_reason, *stdout_url, *stderr_url;
    uint8_t active;
    uint32_t serial; /* unique in the store: keys its stage summaries */
    struct st_exec *prev, *next;
} st_exec;

/* An executor's share of one stage attempt: ExecutorStageSummary. */
typedef struct st_execsum {
    char exec_id[32];
    uint32_t serial;
    int64_t task_time;
    int failed, succeeded, killed;
    task_metrics m;
    struct st_execsum *next;
} st_execsum;

struct st_stage;

typedef struct st_task {
    int64_t task_id;
    int index, attempt, partition;
    int64_t launch_ms, getting_result_ms, finish_ms;
    char exec_id[32], host[64], locality[16];
    uint8_t status, speculative, has_metrics;
    char *error; /* the end reason as Spark writes it; NULL on success */
    task_metrics m;
    struct st_stage *stage;
    struct st_task *prev, *next; /* its stage's tasks, in launch order */
} st_task;

typedef struct st_stage {
    int id, attempt;
    uint8_t status;
    char *name, *details, *description, *failure;
    int ntasks, active_tasks, completed_tasks, failed_tasks, killed_tasks, completed_indices;
    int64_t submit_ms, first_launch_ms, complete_ms; /* 0: not yet */
    task_metrics m; /* totals of its tasks' metrics */
    int *rdd_ids, nrdds;
    int *parents, nparents;
    int *job_ids, njobs; /* the jobs that run it */
    st_killed *killed;
    st_execsum *execsums; /* one per executor that ran a task of it */
    st_task *tasks, *tasks_tail;
    int ntasks_kept;
    uint8_t *done_idx; /* bitmap of indices completed */
    int done_cap;      /* its bits */
    struct st_stage *prev, *next;         /* every stage, in creation order */
    struct st_stage *fprev, *fnext;       /* finished ones, in finishing order */
    uint8_t in_fin;
} st_stage;

typedef struct st_job {
    int id;
    uint8_t status;
    char *name, *description, *group;
    int64_t submit_ms, complete_ms;
    int *stage_ids, nstages;
    int *stage_ntasks;
    uint8_t *stage_state; /* per stage id: 0, 1 completed, 2 skipped */
    uint8_t **done_idx;   /* per stage id: bitmap of indices completed */
    int ntasks, active_tasks, completed_tasks, skipped_tasks, failed_tasks, killed_tasks, completed_indices;
    int active_stages, failed_stages;
    st_killed *killed;
    struct st_job *prev, *next;   /* every job, in start order */
    struct st_job *fprev, *fnext; /* finished ones, in finishing order */
    uint8_t in_fin;
} st_job;

typedef struct st_rdd {
    int id;
    char *name;
    int nparts, ncached;
    int64_t mem, disk;
    ae_storage level;
    rdd_blocks blocks;  /* from block updates; once there are any, they
                           give ncached, mem and disk (else the RDD Info's
                           counts do, as in a log without block updates) */
    uint8_t has_blocks;
    struct st_rdd *prev, *next;
} st_rdd;

typedef struct status_store status_store;

/* A new empty store (lim NULL: the defaults), or NULL (message set). */
status_store *status_new(const status_limits *lim);
/* Free the store and everything in it; NULL is ignored.  No reader may
 * hold its lock. */
void status_free(status_store *st);
/* Fold one event in (from one thread at a time; e stays the caller's).
 * Out of memory, the store drops what it could not keep (a task, a job)
 * and stays consistent; events it does not model are ignored. */
void status_on_event(status_store *st, const app_event *e);
/* status_on_event with the store as ud: a listener bus's consumer
 * (scheduler/bus.h's lbus_fn), as lbus_add(bus, status_listener, st). */
void status_listener(void *ud, const app_event *e);

void status_rdlock(status_store *st);
void status_unlock(status_store *st);

/* ------------------------------------------------ under status_rdlock */

const status_app *status_app_info(const status_store *st);
/* The environment's section sec (AE_ENV_SPARK, ...): its pairs. */
const ae_prop *status_env(const status_store *st, int sec, int *n);
/* Lists, first element (follow ->next): jobs and stages in creation
 * order, executors in the order they came, RDDs as first seen. */
st_job *status_jobs(const status_store *st);
st_stage *status_stages(const status_store *st);
st_exec *status_execs(const status_store *st);
st_rdd *status_rdds(const status_store *st);
/* Counts of the lists. */
int status_njobs(const status_store *st);
int status_nstages(const status_store *st);
/* By id; NULL when unknown (or dropped). */
st_job *status_job(const status_store *st, int id);
st_stage *status_stage(const status_store *st, int id, int attempt);
st_task *status_task(const status_store *st, int64_t task_id);
st_rdd *status_rdd(const status_store *st, int id);
st_exec *status_exec(const status_store *st, const char *id);
/* The highest stage attempt number seen (attempts of a stage id are
 * 0..this at most). */
int status_max_attempt(const status_store *st);

#endif
