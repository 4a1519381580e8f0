/*
 * local.h -- the local[N] backend: one executor of N threads inside the
 * driver process (or, for tests, several sharing the N threads), fed serialized task descriptions through a queue; it
 * posts every attempt's end to the scheduler's event queue.
 */
#ifndef EM_LOCAL_H
#define EM_LOCAL_H

#include "backend.h"
#include "events.h"
#include "runner.h"

/* env and events must outlive the backend.  nexec: 1, or, for tests of
 * placement, how many executors the nthreads threads are split into.
 * Posts EV_EXEC_ADDED for each (ids 0..nexec-1) before it returns.  NULL on
 * failure (message set). */
backend *local_backend_new(int nthreads, int nexec, exec_env *env, evq *events);

/* Tests only: when set, each worker thread calls it with every attempt's
 * result as the attempt ends, before the scheduler sees it (how a test
 * reads the task metrics of a job run through the public API).  Set it
 * before the context opens and clear it after it closes; it runs on the
 * worker threads, concurrently. */
extern void (*local_result_hook)(const task_result *res);

#endif
