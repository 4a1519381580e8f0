/*
 * hashjoin.h -- a join's cogroup partition computed as a hash join.
 * Internal to executor/.
 *
 * em_join and the outer joins are a cogroup of two inputs followed by the
 * builtin bi_join (a flat_map_values that emits the cross product of each
 * key's two value lists).  Done literally, a reduce task sorts both inputs'
 * records, builds each key's lists and a cogroup value, then takes them
 * apart again.  When the operator over a two-input cogroup partition is
 * bi_join, the runner asks this pipe for the partition instead:
 *
 *   - the build side's records (the input with fewer bytes to read when
 *     both are shuffle reads with known segment sizes, else input 1) go
 *     into a hash table: key bytes to the list of that key's values, in
 *     arrival order;
 *   - the other input streams through it: each record meets the values of
 *     its key, and each pair becomes a join record (key, tuple(a, b)), a
 *     from input 0 and b from input 1 whichever side was built; a streamed
 *     record with no match is emitted with b (or a) missing when the join
 *     keeps that side (left / right / full outer), else dropped;
 *   - at the end, a join that keeps the build side emits its keys no
 *     streamed record matched, the other side missing.
 *
 * So nothing is sorted and no group or cogroup value is built.  The
 * records are those bi_join would emit over the same cogroup; only their
 * order differs (Spark's join promises none).  Values of one key keep
 * arrival order within each side.
 *
 * Memory: the table (keys, values, slots) is held to the task's shuffle
 * memory budget (ember.shuffle.memoryBytes' share).  Past it the pipe falls
 * back to the sort-based cogroup: the records built so far and every later
 * one go to a cogroup pipe (pipe.h) feeding bi_join's own pipe, which may
 * spill as any cogroup does.  The result is the same either way.  The
 * table's peak bytes go to the attempt's metrics (curmetrics.h) when the
 * pipe is freed.
 */
#ifndef EM_HASHJOIN_H
#define EM_HASHJOIN_H

#include "pipe.h"

/* The join kind of bi_join's op node n (0 inner, 1 left outer, 2 right
 * outer, 3 full outer), or -1 when n is not bi_join over a two-input
 * cogroup. */
int hashjoin_kind(const epipe *join_op, const plan_node *cogroup);

/* The input (0 or 1) to build the table from for cogroup node n. */
int hashjoin_build_side(const plan_node *cogroup);

/* A pipe computing cogroup node n's partition as the join of the given
 * kind, its records going to join_op's next pipe (join_op itself is
 * skipped, and only used by the fallback).  hashjoin_pipe_side names the
 * input pushed next: the build side first, every record of it, then the
 * other; it first takes the records the pipe still holds of the last side
 * (0, or the error of building or joining them).  NULL (message set) on
 * ENOMEM. */
epipe *hashjoin_pipe_new(task_run *run, const plan_node *cogroup, epipe *join_op, int kind, int build);
int hashjoin_pipe_side(epipe *p, int side);

/* Tables that grew with keys in them (rehashed), process-wide: a build
 * side that told its count (pipe.h's expect) sizes its table once. */
uint64_t hashjoin_regrown(void);
/* Streamed or built records queued by address, process-wide: long records
 * of a batch (a cached block) that were not copied. */
uint64_t hashjoin_by_address(void);
/* Process-wide: build sides that ended in the compact table (hashjoin.c),
 * and compact tables whose keys moved to the general one. */
void hashjoin_compact(uint64_t *built, uint64_t *left);

#endif
