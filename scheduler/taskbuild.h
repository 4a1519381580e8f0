/*
 * taskbuild.h -- from lineage to task descriptions: the plan tree that
 * computes partition p of an RDD within one stage (narrow dependencies
 * followed down to sources, cached RDDs, or shuffle reads), encoded.
 */
#ifndef EM_TASKBUILD_H
#define EM_TASKBUILD_H

#include "buf.h"
#include "mapout.h"
#include "rdd.h"
#include "taskdesc.h"

/* Encode the task computing partition `part` of rdd into sink; t supplies
 * the header fields (ids, settings; root is built here).  0 or < 0. */
int taskbuild_encode(task_desc *t, em_rdd *rdd, int part, mapout *mo, uint64_t cache_ns, ebuf *out);

/* Partition `part`'s slice of a range RDD's elements: *count values from
 * *first in steps of the RDD's step. */
void range_slice(const em_rdd *r, int part, int64_t *first, uint64_t *count);

#endif
