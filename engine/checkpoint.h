/*
 * checkpoint.h -- em_checkpoint's driver side (engine/checkpoint.c): the
 * marks, the job that writes a marked RDD's partitions after the job that
 * computed it, the truncation of its lineage, and the cleanup of its files.
 * The file of one checkpointed partition is executor/ckpt_file.h's.
 */
#ifndef EM_CHECKPOINT_H
#define EM_CHECKPOINT_H

#include "ember.h"

/* After a job over rdd succeeded: write the RDDs of its lineage marked by
 * em_checkpoint, and truncate their lineage.  0 or < 0 (message set): the
 * action fails, as Spark's does when its checkpoint cannot be written. */
int ckpt_after_job(em_rdd *rdd);
/* An RDD is freed: forget its mark, remove its files when
 * ember.cleaner.referenceTracking.cleanCheckpoints says so. */
void ckpt_rdd_gone(em_ctx *ctx, em_rdd *r);
/* em_close: the files of the RDDs still alive, under the same setting,
 * and this context's checkpoint directory when left empty. */
void ckpt_ctx_close(em_ctx *ctx);

#endif
