/*
 * taskresult.h -- what a finished task attempt reports to the scheduler.
 * Internal; shared by executor/ (which fills it) and scheduler/ (which reads
 * it), so it lives with the other wire-level types.
 */
#ifndef EM_TASKRESULT_H
#define EM_TASKRESULT_H

#include <stdint.h>

#include "taskmetrics.h"

typedef struct acc_update {
    uint32_t id, type;
    int64_t i;
    double f;
} acc_update;

/* A partition the attempt cached (Spark's "Updated Blocks"): the block
 * rdd_<rdd>_<part> as its executor's store holds it, in memory or in a file. */
typedef struct cached_block {
    int32_t rdd, part;
    int64_t mem, disk;    /* bytes in memory, bytes of the file on disk */
} cached_block;

typedef struct task_result {
    uint64_t task_id;
    int status;            /* 0, or the negative code the task failed with */
    char errmsg[512];      /* the task's own message when status < 0 */
    uint8_t *data;         /* the sink's output, malloc'd (owner: reader) */
    size_t len;
    acc_update *accs;      /* malloc'd */
    int naccs;
    int32_t fetch_map;     /* status EM_EFETCH: the map output found bad */
    uint32_t fetch_shuffle;/* ... and its shuffle */
    int32_t *lost_maps;    /* ... and the other outputs of that shuffle the
                              reader's check found lost with it, malloc'd
                              (shuffle.h's sr_stats) */
    uint32_t nlost;
    char loc[256];         /* shuffle map tasks: where the output lives */
    uint8_t commit_denied; /* an output task another attempt committed for
                              (status EM_ECANCELED; not a failure) */
    uint64_t input_bytes, shuffle_bytes, shuffle_records;
    int64_t spills;
    int64_t cache_hits;
    int64_t segs_fetched;    /* shuffle segments fetched over the wire ... */
    int64_t segs_host_local; /* ... and read from another location's files
                                on this host (readHostLocalDisk) */
    task_metrics m;          /* Spark's task metrics of the attempt, as the
                                runner measured them (runner.h); zeros for
                                an attempt that never ran */
    cached_block *blocks;    /* the partitions it cached, malloc'd */
    uint32_t nblocks;
    int64_t faults_fired;    /* ember.test.faults rules that took effect in
                                the attempt (faults.h) */
    int64_t fetch_retries;   /* shuffle segment requests it sent again after
                                their connection failed ... */
    int64_t fetch_conns_dropped; /* ... and the fetch connections that
                                    closed or failed with a request of it
                                    unanswered (shuffle_fetch.c) */
} task_result;

void task_result_clear(task_result *r); /* frees data, accs, lost_maps and blocks */

/* The wire form of a result (cluster mode: an executor's M_TASK_ENDED), a
 * msgpack array of every field but task_id, the metrics as an array of
 * TASK_METRICS_N integers in task_metrics' order, then the cached blocks
 * as [rdd, part, mem, disk] arrays, then faults_fired, fetch_retries and
 * fetch_conns_dropped (fields 18 to 20).  Encode appends to
 * out: 0 or EM_ENOMEM.  Decode trusts nothing (mpcheck first, every
 * field's type and size checked, a metric that is negative or not an
 * integer refused): 0, or EM_EPROTO naming the field; r's data, accs,
 * lost_maps and blocks are malloc'd copies (task_result_clear frees them) and task_id
 * is left as it was. */
#include "buf.h"
int taskresult_encode(const task_result *r, ebuf *out);
int taskresult_decode(const uint8_t *p, size_t len, task_result *r);

#endif
