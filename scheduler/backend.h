/*
 * backend.h -- the one seam between scheduling and execution.
 *
 * The scheduler hands a backend serialized task descriptions and takes back
 * results; it never sees threads or sockets.  local[N] is a thread pool in
 * the driver (executor/local.c); the cluster backend sends the same bytes to
 * executor processes.
 */
#ifndef EM_BACKEND_H
#define EM_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "taskresult.h"

typedef struct backend backend;
struct backend {
    /* Queue a task; takes ownership of desc (malloc'd) in every case.
     * 0 or < 0. */
    int (*submit)(backend *b, uint64_t task_id, uint8_t *desc, size_t len);
    /* Block until some task finishes and move its result into *out. */
    int (*wait)(backend *b, task_result *out);
    /* Remove every map output of a shuffle the scheduler has forgotten. */
    void (*drop_shuffle)(backend *b, uint32_t shuffle_id, int nmaps);
    /* Executor cores available. */
    int (*cores)(backend *b);
    /* Stop executors (waits for running tasks) and free the backend. */
    void (*close)(backend *b);
};

#endif
