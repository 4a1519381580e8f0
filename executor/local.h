/*
 * local.h -- the local[N] backend: N executor threads inside the driver
 * process, fed serialized task descriptions through a queue.
 */
#ifndef EM_LOCAL_H
#define EM_LOCAL_H

#include "backend.h"
#include "runner.h"

/* env must outlive the backend.  NULL on failure (message set). */
backend *local_backend_new(int nthreads, exec_env *env);

#endif
