/*
 * accum.h -- accumulators: the process-wide table behind em_acc_*, and
 * the per-task collection of accumulator updates.
 *
 * A handle is a plain id so that user functions can capture it in their
 * argument blobs.  Accumulator additions made inside a task go to the
 * task's thread-local update list, which travels back with the task's
 * result; the scheduler merges it only for the first successful attempt
 * of each task, so every task counts once.  Additions made outside a task
 * (on the driver) apply at once.
 */
#ifndef EM_ACCUM_H
#define EM_ACCUM_H

#include <stdint.h>

#include "taskresult.h"

/* Start collecting this thread's accumulator updates for a task computing
 * `partition` (em_task_partition reports it). */
void accum_task_begin(int partition);
/* Stop collecting; the updates are moved to *out (malloc'd) / *n.  Returns
 * 0, or EM_ENOMEM if an update could not be recorded (the task must fail;
 * *out is then NULL and *n 0). */
int accum_task_end(acc_update **out, int *n);
/* Add a successful task's updates to the accumulators. */
void accum_merge(const acc_update *u, int n);
/* Forget every accumulator of a namespace (a context being closed). */
void accum_drop_ns(uint64_t ns);

#endif
