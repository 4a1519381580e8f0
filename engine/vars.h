/*
 * vars.h -- broadcast values and accumulators: the process-wide tables
 * behind em_broadcast / em_acc_*, and the per-task collection of
 * accumulator updates.
 *
 * Handles are plain ids so that user functions can capture them in their
 * argument blobs.  Broadcast blobs live in a process table that local
 * executor threads read directly.  Accumulator additions made inside a task
 * go to the task's thread-local update list, which travels back with the
 * task's result; the scheduler merges it only for the first successful
 * attempt of each task, so every task counts once.
 */
#ifndef EM_VARS_H
#define EM_VARS_H

#include <stdint.h>

#include "taskresult.h"

/* Start collecting this thread's accumulator updates for a task computing
 * `partition` (em_task_partition reports it). */
void vars_task_begin(int partition);
/* Stop collecting; the updates are moved to *out (malloc'd) / *n.  Returns
 * 0, or EM_ENOMEM if an update could not be recorded (the task must fail). */
int vars_task_end(acc_update **out, int *n);
/* Add a successful task's updates to the accumulators. */
void vars_merge(const acc_update *u, int n);
/* Forget every broadcast and accumulator of a namespace (context). */
void vars_drop_ns(uint64_t ns);
/* Register a broadcast under a given id (executors receiving one). */
int vars_bcast_put(uint64_t ns, uint64_t id, const void *data, size_t len);
/* Executor processes: how em_bcast_value gets a broadcast this process
 * does not hold yet (from the driver, once; then it is kept until
 * vars_bcast_drop).  fetch returns 0 with *data (malloc'd, taken) and
 * *len, EM_ENOENT for a broadcast the driver no longer has, or < 0. */
void vars_set_bcast_fetch(int (*fetch)(uint64_t id, void **data, size_t *len));
void vars_bcast_drop(uint64_t id);

#endif
