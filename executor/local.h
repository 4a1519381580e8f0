/*
 * local.h -- the local[N] backend: one executor of N threads inside the
 * driver process, fed serialized task descriptions through a queue; it
 * posts every attempt's end to the scheduler's event queue.
 */
#ifndef EM_LOCAL_H
#define EM_LOCAL_H

#include "backend.h"
#include "events.h"
#include "runner.h"

/* env and events must outlive the backend.  Posts EV_EXEC_ADDED (executor
 * 0, nthreads cores) before it returns.  NULL on failure (message set). */
backend *local_backend_new(int nthreads, exec_env *env, evq *events);

#endif
