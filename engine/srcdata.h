/*
 * srcdata.h -- the records of a parallelized RDD (em_parallelize), encoded
 * once in the driver and read by reference.  Internal.
 *
 * em_parallelize encodes the caller's records straight into one buffer, a
 * batch per partition back to back (recfmt.h), sized exactly before it is
 * written: no per-record allocation, no growth by copying.  The buffer is
 * never copied into a task description.  A description names a partition
 * by the srcdata's id (unique in the process, never reused), the partition
 * and its length (taskdesc.h), and the task finds the bytes with src_get:
 * in the driver's process (local[N]) they are the srcdata's own, shared by
 * reference; an executor process asks its fetch hook, which fetches that
 * one partition from the driver (cluster mode).  A persisted partition is
 * stored in the block store as these bytes, with no re-encoding: shared in
 * local[N], the fetched copy in an executor.
 *
 * A srcdata is reference-counted (the RDD, each task reading it, each cached
 * block sharing it); the last release frees it.  Thread-safe.
 */
#ifndef EM_SRCDATA_H
#define EM_SRCDATA_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"

typedef struct srcdata srcdata;

/* Encode n records into nparts partitions (partition p holds records
 * [n*p/nparts, n*(p+1)/nparts)), register them and return them with one
 * reference; recs are not retained.  NULL with the message set: EM_EINVAL
 * (a record with a NULL pointer and a nonzero length), EM_ENOMEM. */
srcdata *src_encode(const em_rec *recs, size_t n, int nparts);
void src_retain(srcdata *s);
void src_release(srcdata *s);
/* The id tasks name s by, and partition p's extent: bytes and records. */
uint64_t src_id(const srcdata *s);
size_t src_part_len(const srcdata *s, int p);
uint64_t src_part_count(const srcdata *s, int p);

/* A partition's records as a task holds them. */
typedef struct src_part {
    const uint8_t *p;
    size_t len;
    srcdata *hold; /* the shared records p points into (this process's), or NULL */
    uint8_t *own;  /* the fetched bytes p points at (malloc'd), or NULL */
} src_part;

/* Partition part of srcdata id, expected to be len bytes: this process's
 * own, or fetched through the hook.  0, or < 0 with the message set (an
 * unknown id or partition, a length that differs, the fetch's failure);
 * *out is then empty.  Release with src_part_release. */
int src_get(uint64_t id, int part, uint64_t len, src_part *out);
void src_part_release(src_part *sp);

/* Executor processes: how src_get gets a partition this process does not
 * hold.  fetch returns 0 with *data (malloc'd, taken; non-NULL even when
 * empty) and *len, or < 0 with the message set. */
void src_set_fetch(int (*fetch)(uint64_t id, int part, uint8_t **data, size_t *len));

/* The driver's side of a fetch: s (retained) and partition part's bytes,
 * or NULL with the message set when id or part is unknown. */
srcdata *src_find(uint64_t id, int part, const uint8_t **p, size_t *len);

#endif
