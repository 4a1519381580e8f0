/*
 * appevent.h -- Spark's listener events as ember's types: what happened in
 * an application (it started, an executor came, a job, stage or task began
 * or ended), one struct per event.
 *
 * The scheduler produces them (scheduler/bus.h carries them on a bounded
 * queue to the consumers); the UI's status store (status.h) turns them into
 * the jobs, stages, tasks and executors the pages and /api/v1 show; the
 * event log writer (eventlog.h) writes each as one line of Spark's JSON,
 * and its reader turns a line of ours or of Apache Spark's back into one,
 * which is how the history server rebuilds an application.  So every field
 * here is one Spark's JsonProtocol writes, named beside it, and a field
 * Spark's log may lack has a value that says "absent".
 *
 * Ownership: an app_event and everything it points to is malloc'd and
 * owned by whoever holds the event; app_event_free frees it all.  Strings
 * are NUL-terminated UTF-8, NULL when absent.  Times are milliseconds since
 * the epoch (0: absent).
 */
#ifndef EM_APPEVENT_H
#define EM_APPEVENT_H

#include <stdint.h>

#include "taskmetrics.h"

typedef enum ae_kind {
    AE_LOG_START = 1,      /* SparkListenerLogStart: version */
    AE_APP_START,          /* SparkListenerApplicationStart: app_name, app_id,
                              attempt_id, user, time */
    AE_APP_END,            /* SparkListenerApplicationEnd: time */
    AE_ENV_UPDATE,         /* SparkListenerEnvironmentUpdate: props */
    AE_EXEC_ADDED,         /* SparkListenerExecutorAdded: time, exec */
    AE_EXEC_REMOVED,       /* SparkListenerExecutorRemoved: time, exec.id,
                              reason */
    AE_JOB_START,          /* SparkListenerJobStart: job_id, time, stages
                              (Stage Infos, their ids are Stage IDs), props */
    AE_JOB_END,            /* SparkListenerJobEnd: job_id, time, failed,
                              reason (the exception's message) */
    AE_STAGE_SUBMITTED,    /* SparkListenerStageSubmitted: stages[0], props */
    AE_STAGE_COMPLETED,    /* SparkListenerStageCompleted: stages[0] (its
                              completion time and failure reason set) */
    AE_TASK_START,         /* SparkListenerTaskStart: stage_id,
                              stage_attempt, task */
    AE_TASK_GETTING_RESULT,/* SparkListenerTaskGettingResult: task */
    AE_TASK_END,           /* SparkListenerTaskEnd: stage_id, stage_attempt,
                              task_type, end, task, metrics */
    AE_UNPERSIST_RDD,      /* SparkListenerUnpersistRDD: rdd_id */
    AE_BLOCK_MANAGER_ADDED,/* SparkListenerBlockManagerAdded: time, exec
                              (id, host, port), max_mem */
    AE_BLOCK_UPDATED,      /* SparkListenerBlockUpdated: exec (id, host,
                              port), rdd_id, block_part, block_level,
                              block_mem, block_disk */
    AE_OTHER,              /* an event of Spark's this build does not model
                              (the reader keeps its name in other) */
} ae_kind;

/* "Storage Level" */
typedef struct ae_storage {
    uint8_t use_disk, use_memory, use_offheap, deserialized; /* "Use Off
                                        Heap" ("Use Tachyon" in Spark 1.x) */
    int replication;
} ae_storage;

/* "RDD Info": one RDD of a stage's pipeline. */
typedef struct ae_rdd {
    int id;                 /* "RDD ID" */
    char *name;             /* "Name" */
    char *callsite;         /* "Callsite" */
    int *parents;           /* "Parent IDs" */
    int nparents;
    ae_storage storage;     /* "Storage Level" */
    int nparts;             /* "Number of Partitions" */
    int ncached;            /* "Number of Cached Partitions" */
    int64_t mem_size, disk_size; /* "Memory Size", "Disk Size" */
} ae_rdd;

/* "Stage Info" */
typedef struct ae_stage {
    int id, attempt;        /* "Stage ID", "Stage Attempt ID" */
    char *name;             /* "Stage Name" */
    char *details;          /* "Details" */
    int ntasks;             /* "Number of Tasks" */
    ae_rdd *rdds;           /* "RDD Info", the stage's last RDD first */
    int nrdds;
    int *parents;           /* "Parent IDs": stages it reads the output of */
    int nparents;
    int64_t submit_ms;      /* "Submission Time" (0: not submitted) */
    int64_t complete_ms;    /* "Completion Time" (0: not complete) */
    char *failure;          /* "Failure Reason" (NULL: none) */
} ae_stage;

/* "Task Info" */
typedef struct ae_task {
    int64_t task_id;        /* "Task ID" */
    int index;              /* "Index": the task within its stage */
    int attempt;            /* "Attempt": of that task, from 0 */
    int partition;          /* "Partition ID" (-1: absent, as in 1.x logs) */
    int64_t launch_ms;      /* "Launch Time" */
    int64_t getting_result_ms; /* "Getting Result Time" (0: none) */
    int64_t finish_ms;      /* "Finish Time" (0: running) */
    char exec_id[32];       /* "Executor ID": "driver" in local mode */
    char host[64];          /* "Host" */
    char locality[16];      /* "Locality": PROCESS_LOCAL, NODE_LOCAL, ANY */
    uint8_t speculative;    /* "Speculative" */
    uint8_t failed, killed; /* "Failed", "Killed" */
} ae_task;

/* "Task End Reason": "Reason" */
typedef enum ae_reason {
    AE_SUCCESS = 0,         /* Success */
    AE_FETCH_FAILED,        /* FetchFailed: shuffle_id, map_id, map_index,
                               reduce_id, bm (the map output's executor and
                               host), message */
    AE_EXCEPTION,           /* ExceptionFailure: class_name, message
                               ("Description") */
    AE_KILLED,              /* TaskKilled: message ("Kill Reason") */
    AE_EXEC_LOST,           /* ExecutorLostFailure: bm.exec_id,
                               caused_by_app ("Exit Caused By App"),
                               message ("Loss Reason") */
    AE_RESUBMITTED,         /* Resubmitted */
    AE_RESULT_LOST,         /* TaskResultLost */
    AE_COMMIT_DENIED,       /* TaskCommitDenied: message */
    AE_UNKNOWN_REASON,      /* UnknownReason, or one this build does not
                               know (class_name keeps its name) */
} ae_reason;

typedef struct ae_end {
    ae_reason reason;
    char *class_name;       /* AE_EXCEPTION: "Class Name" */
    char *message;          /* see ae_reason */
    int shuffle_id;         /* AE_FETCH_FAILED: "Shuffle ID", ... */
    int64_t map_id;         /* "Map ID" */
    int map_index;          /* "Map Index" (-1: absent) */
    int reduce_id;          /* "Reduce ID" */
    char bm_exec[32];       /* "Block Manager Address": "Executor ID" ... */
    char bm_host[64];       /* ... "Host" ... */
    int bm_port;            /* ... "Port"; AE_EXEC_LOST: bm_exec */
    uint8_t caused_by_app;  /* AE_EXEC_LOST */
} ae_end;

/* "Executor Info", with its id and, for BlockManagerAdded, its port. */
typedef struct ae_exec {
    char id[32];            /* "Executor ID" */
    char host[64];          /* "Host" */
    int port;               /* "Block Manager ID": "Port" */
    int cores;              /* "Total Cores" */
    char *stdout_url;       /* "Log Urls": "stdout", "stderr" */
    char *stderr_url;
} ae_exec;

/* One "key": "value" pair of a properties object. */
typedef struct ae_prop {
    char *key, *value;
} ae_prop;

/* "Environment Update" sections */
enum { AE_ENV_SPARK = 0, AE_ENV_SYSTEM, AE_ENV_RUNTIME, AE_ENV_CLASSPATH, AE_ENV_HADOOP, AE_ENV_SECTIONS };

typedef struct app_event {
    ae_kind kind;
    int64_t time_ms;        /* "Timestamp", "Submission Time" (job start),
                               "Completion Time" (job end) */
    /* AE_LOG_START */
    char *version;          /* "Spark Version": the writer's version */
    /* AE_APP_START */
    char *app_name, *app_id, *attempt_id, *user;
    /* AE_ENV_UPDATE: per section ("Spark Properties", "System Properties",
     * "JVM Information" as runtime, "Classpath Entries", "Hadoop
     * Properties"); AE_JOB_START, AE_STAGE_SUBMITTED: the job's
     * "Properties" in section 0 */
    ae_prop *props[AE_ENV_SECTIONS];
    int nprops[AE_ENV_SECTIONS];
    /* AE_EXEC_ADDED, AE_EXEC_REMOVED, AE_BLOCK_MANAGER_ADDED */
    ae_exec exec;
    int64_t max_mem;        /* AE_BLOCK_MANAGER_ADDED: "Maximum Memory" */
    char *reason;           /* AE_EXEC_REMOVED: "Removed Reason";
                               AE_JOB_END: the failure's message */
    /* AE_JOB_START, AE_JOB_END */
    int job_id;             /* "Job ID" */
    uint8_t failed;         /* AE_JOB_END: "Job Result" is JobFailed */
    /* AE_JOB_START: every stage of the job (Spark lists those it will skip
     * too); AE_STAGE_*: the one stage, stages[0] */
    ae_stage *stages;
    int nstages;
    /* AE_TASK_* */
    int stage_id, stage_attempt; /* "Stage ID", "Stage Attempt ID" */
    uint8_t shuffle_map;    /* "Task Type": ShuffleMapTask, else ResultTask */
    ae_task task;           /* "Task Info" */
    ae_end end;             /* AE_TASK_END: "Task End Reason" */
    uint8_t has_metrics;    /* AE_TASK_END: "Task Metrics" present (Spark
                               omits them for some failures) */
    task_metrics metrics;
    /* AE_UNPERSIST_RDD, AE_BLOCK_UPDATED */
    int rdd_id;             /* "RDD ID"; a block's "Block ID" is
                               rdd_<rdd_id>_<block_part> (-1: a block of
                               no RDD's, a broadcast's) */
    /* AE_BLOCK_UPDATED */
    int block_part;
    ae_storage block_level; /* "Storage Level": where the block is held
                               (neither memory nor disk: it was removed) */
    int64_t block_mem, block_disk; /* "Memory Size", "Disk Size" */
    /* AE_OTHER */
    char *other;            /* the "Event" name */
} app_event;

/* A zeroed event of kind k (calloc'd), or NULL when out of memory. */
app_event *app_event_new(ae_kind k);
/* Free e and everything it points to; NULL is ignored. */
void app_event_free(app_event *e);
/* Free what a stage points to (not s itself). */
void ae_stage_clear(ae_stage *s);
/* A deep copy of src into *dst: 0, or EM_ENOMEM (dst then holds nothing
 * to free). */
int ae_stage_copy(ae_stage *dst, const ae_stage *src);
/* The event's Spark name ("SparkListenerTaskEnd"); e->other for AE_OTHER. */
const char *app_event_name(const app_event *e);
/* The reason's Spark name ("Success", "FetchFailed", ...). */
const char *ae_reason_name(ae_reason r);

#endif
