/*
 * sizehint.h -- how many keys the last aggregation table of a shuffle's
 * map tasks (or reduce tasks) held, so that the next task of the same
 * shuffle sizes its table once instead of doubling it from small.
 *
 * The tasks of one shuffle see like data: a PageRank iteration's eight
 * map tasks each combine about the same number of destinations.  A table
 * grown by doubling rehashes every key about once more and takes a new
 * buffer at each step; one sized at once takes a single buffer, which
 * bigbuf.h's cache gives whole from the task before (no page faulted in
 * and cleared).  Keyed by shuffle, a hint never sizes another shuffle's
 * tables: a later shuffle of ten keys does not clear a table sized for a
 * million.  A hint is only a start: the table still grows past it, and
 * the memory budget still governs spills.
 *
 * A shuffle is named by its id and a scope: the directory of the
 * context's (or the executor's) files, so that two contexts of one
 * process, whose shuffle ids both start at 0, never share a hint -- a
 * later context's ten-key shuffle 0 does not size its tables for an
 * earlier one's million keys.  A small process-wide table, direct-mapped
 * by a 32-bit tag of the two (SH_SLOTS entries a kind of table), each
 * entry one atomic word holding the tag and the count: a shuffle whose
 * entry another took gets no hint.
 */
#ifndef EM_SIZEHINT_H
#define EM_SIZEHINT_H

#include <stddef.h>

#define SH_SLOTS 64

/* Which table: the map side's or the reduce side's, the 8-byte one
 * (agg8.h), the reduce side's word table (agg16.h) or the general one
 * (aggmap.h). */
enum { SH_MAP8, SH_MAP, SH_REDUCE8, SH_REDUCE16, SH_REDUCE, SH_TABLES };

/* The keys the last table of this kind of shuffle shuffle_id of scope
 * held, or 0. */
size_t sh_get(const char *scope, unsigned shuffle_id, int table);
/* A table of this kind of this shuffle ended holding at most keys keys. */
void sh_put(const char *scope, unsigned shuffle_id, int table, size_t keys);

#endif
