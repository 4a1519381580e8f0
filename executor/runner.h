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
#include "taskresult.h"

typedef struct exec_env {
    const char *local_dir; /* shuffle outputs and spills (must exist) */
    blockstore *store;     /* cached partitions */
} exec_env;

/* Run the task whose encoded description is desc (takes ownership).  Fills
 * *res in every case: status 0 and the sink's output, or the failure code
 * and the task's message.  Never aborts on bad input or failing user code
 * (a crash in user code is the executor process's fate, not the runner's). */
void runner_run(exec_env *env, uint8_t *desc, size_t len, task_result *res);

/* Call a user combine function on the driver: out gets the one record it
 * emits, encoded.  0 or < 0 (message set). */
int runner_call_comb(em_comb_fn fn, const void *arg, const em_rec *a, const em_rec *b, size_t max_record,
                     ebuf *out);

#endif
