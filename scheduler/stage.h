/*
 * stage.h -- stage building: an RDD's lineage cut into stages at shuffles.
 *
 * From an RDD, the walk follows narrow dependencies to the shuffled RDDs
 * it reads; each such shuffle has one map stage, kept in d->maps for the
 * life of the shuffle, and made (with its own parents, first) when missing.
 * Stage ids are given parents before children, as Spark numbers them.
 *
 * Internal to the scheduler: dag.c makes, reparents and frees stages
 * through it.  Every function runs on the scheduler's thread.
 */
#ifndef EM_STAGE_H
#define EM_STAGE_H

#include "dag_int.h"

/* Make the stage computing rdd's ntasks tasks: a map stage of the shuffle
 * read by `shuffled` when it is set (registered in d->maps and the
 * map-output tracker), else a job's result stage (registered nowhere:
 * the caller owns it).  The map stages of the shuffles it depends on that
 * do not exist yet are made first.  NULL on ENOMEM (map stages made by
 * then are kept). */
stage *stage_new(dag *d, em_rdd *rdd, em_rdd *shuffled, int ntasks);
/* Compute s->parents again from its RDD's lineage (which a checkpoint
 * truncated), making any map stage missing.  0 or -1 (s->parents
 * unchanged). */
int stage_reparent(dag *d, stage *s);
/* Free s and its per-task arrays (NULL: nothing).  It does not take s off
 * any list or map that names it. */
void stage_free(stage *s);

#endif
