/*
 * runner.h -- running one task: decode its description, build the push
 * pipeline for its plan, drive the sources, and report.
 */
#ifndef EM_RUNNER_H
#define EM_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include "blockstore.h"
#include "buf.h"
#include "ember.h"
#include "memout.h"
#include "taskresult.h"

typedef struct exec_env {
    const char *local_dir; /* spills, and shuffle outputs unless shuffle_dir (must exist) */
    const char *shuffle_dir; /* map outputs (NULL: local_dir); cluster mode with the
                                worker's shuffle service: the application's directory
                                the worker serves */
    blockstore *store;     /* cached partitions */
    /* The output commit coordinator (scheduler/commit.h), asked by an
     * output task before it commits its file: 1 granted, 0 denied.  NULL:
     * always granted (unit tests). */
    int (*ask_commit)(void *c, uint32_t stage, int32_t partition, uint64_t attempt);
    void *commit_ctx;
    /* Cluster mode (executor.c): where this executor's shuffle outputs are
     * found, reported with them ("ember://HOST:PORT" + the shuffle
     * directory: the executor's own shuffle server's, or its worker's
     * shuffle service's; NULL: the directory alone), and how a segment held by another executor is fetched
     * (sr_opts's self and fetch). */
    const char *self;
    const struct sr_fetcher *fetch;
    /* local[N]: small map outputs kept in memory (memout.h); NULL in
     * cluster executors, whose outputs a worker must be able to serve. */
    memout_store *outputs;
} exec_env;

/* How another thread stops a running attempt: it sets cancel (atomically);
 * the runner checks it between record batches and blocks (every
 * RUNNER_CHECK_EVERY records a source hands on, and at every block it
 * reads) and while an injected delay sleeps, and the attempt then ends with
 * EM_ECANCELED.  A user function that does not return cannot be stopped.
 *
 * And the attempt's clock readings (curmetrics.h's tm_now_ns), shared
 * with the backend that stamps its start and end, so that each is read
 * once: start_ns, when the backend started it (0: the runner reads the
 * clock itself), and end_ns, set by runner_run as it returns. */
typedef struct task_ctl {
    int cancel;
    int64_t start_ns, end_ns;
} task_ctl;
#define RUNNER_CHECK_EVERY 1024

/* 0, or EM_ECANCELED (message set) once the attempt running on this thread
 * was told to stop: for a pipe that takes a whole batch (pipe.h's
 * push_batch) and hands its records on one by one, to look at every
 * RUNNER_CHECK_EVERY records as the runner's sources do. */
int runner_killed(void);

/* Run the task whose encoded description is desc (takes ownership).  Fills
 * *res in every case: status 0 and the sink's output, or the failure code
 * and the task's message; and res->m, the attempt's task metrics
 * (taskmetrics.h), measured where the work happens (curmetrics.h): times
 * and CPU time here, input by the sources, output by the save sink,
 * shuffle write and read by the shuffle's writer and reader, spills and
 * peak memory by the structures that hold the data; result_size is the
 * bytes of res->data, which a cluster executor sends as they are.  Never
 * aborts on bad input or failing user code (a crash in user code is the
 * executor process's fate, not the runner's).  ctl may be NULL (the
 * attempt cannot be killed).  Applies the faults the description carries
 * (faults.h). */
void runner_run(exec_env *env, uint8_t *desc, size_t len, task_result *res, task_ctl *ctl);

/* Whether the calling thread's running attempt has been asked to stop (for
 * waits outside the runner: a segment fetch). */
int runner_cancelled(void);

/* Add a segment fetch's retries and dropped connections to the counts of
 * the calling thread's running attempt (taskresult.h); nothing outside an
 * attempt. */
void runner_count_fetch(int64_t retries, int64_t conns_dropped);

#endif
