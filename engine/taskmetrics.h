/*
 * taskmetrics.h -- Spark's task metrics: what one task attempt measured
 * while it ran, in Spark's units.  The executor's runner fills them where
 * the work happens and they travel with the attempt's result
 * (taskresult.h); the scheduler hands them on in its TaskEnd event
 * (appevent.h), from which the UI's store, the REST API and the event log
 * take them.  em_get_stats keeps its own counters; these are per attempt.
 *
 * Every field is a count, never negative; 0 when nothing of the kind
 * happened.  Names follow Spark's TaskMetrics (and the JSON names of its
 * event log, given beside each field).
 */
#ifndef EM_TASKMETRICS_H
#define EM_TASKMETRICS_H

#include <stdint.h>

typedef struct task_metrics {
    int64_t deser_ms;       /* "Executor Deserialize Time": decoding the task */
    int64_t deser_cpu_ns;   /* "Executor Deserialize CPU Time" */
    int64_t run_ms;         /* "Executor Run Time": the task's work */
    int64_t cpu_ns;         /* "Executor CPU Time": the thread's CPU clock */
    int64_t result_size;    /* "Result Size": bytes of the result sent back */
    int64_t peak_mem;       /* "Peak Execution Memory": most bytes held by
                               the task's aggregation, sort and join buffers */
    int64_t mem_spilled;    /* "Memory Bytes Spilled": in-memory bytes of
                               the data spilled */
    int64_t disk_spilled;   /* "Disk Bytes Spilled": their bytes on disk */
    /* "Input Metrics": text files, cached blocks, parallelized data */
    int64_t in_bytes, in_records;
    /* "Output Metrics": saves */
    int64_t out_bytes, out_records;
    /* "Shuffle Write Metrics" */
    int64_t sw_bytes;       /* "Shuffle Bytes Written" */
    int64_t sw_records;     /* "Shuffle Records Written" */
    int64_t sw_time_ns;     /* "Shuffle Write Time" */
    /* "Shuffle Read Metrics" */
    int64_t sr_remote_blocks;  /* "Remote Blocks Fetched" */
    int64_t sr_local_blocks;   /* "Local Blocks Fetched" */
    int64_t sr_remote_bytes;   /* "Remote Bytes Read" */
    int64_t sr_remote_disk_bytes; /* "Remote Bytes Read To Disk" */
    int64_t sr_local_bytes;    /* "Local Bytes Read" */
    int64_t sr_records;        /* "Total Records Read" */
    int64_t sr_fetch_wait_ms;  /* "Fetch Wait Time": blocked on fetches */
} task_metrics;

/* The number of fields: every one is an int64_t, in the order above (the
 * wire form and task_metrics_add rely on it). */
#define TASK_METRICS_N ((int)(sizeof(task_metrics) / sizeof(int64_t)))

/* Add each of b's counts to a's: a stage's or an executor's totals, as
 * Spark's status store sums them (peak_mem too). */
static inline void task_metrics_add(task_metrics *a, const task_metrics *b) {
    int64_t *x = (int64_t *)a;
    const int64_t *y = (const int64_t *)b;
    for (int i = 0; i < TASK_METRICS_N; i++) x[i] += y[i];
}

#endif
