/*
 * memout.h -- small map outputs kept in memory instead of files (local[N]).
 *
 * A map output of a few kilobytes costs more in the kernel than in the
 * task: two files made, written, renamed, opened by every reader and
 * unlinked (tree_aggregate over 64 cached partitions spent 20 of its 23 ms
 * a call there); a big one is copied into the page cache and out again.
 * In local[N] the map tasks and their readers share one process whose life
 * is the outputs' life, so an output of at most max_each bytes, while the
 * store holds at most max_total bytes in all, is put here by sw_commit
 * instead of being written (ember.shuffle.inMemoryOutput.maxBytes and
 * .totalBytes).  An output is one run of blocks per reduce partition, each
 * in the buffer the map task built it in (a bigbuf.h buffer, handed over
 * without a copy): segs[r] is reduce partition r's segment, the bytes its
 * data file would hold at its index's offsets, so readers decode it with
 * the same CRC-checked block reader.
 *
 * Blocks kept here are stored uncompressed unless the store compresses
 * (ember.shuffle.inMemoryOutput.compress): they never reach a disk or a
 * network, the codec's only gains, and readers then decode them where they
 * lie with no copy (sw_open asks memout_plain).
 *
 * Cluster executors write files: a worker serves a lost executor's files,
 * which memory could not outlive.
 *
 * Entries are found by (shuffle, map, attempt) and reference-counted: a
 * reader holds its entry while it decodes, so removing an output (the
 * scheduler dropping a shuffle or a losing attempt) never pulls bytes from
 * under it.  All calls are thread-safe.
 */
#ifndef EM_MEMOUT_H
#define EM_MEMOUT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef struct memout_store memout_store;

typedef struct memout {
    uint32_t shuffle_id, map;
    uint64_t attempt;
    int nparts;
    ebuf *segs;     /* nparts runs of blocks (bigbuf.h buffers) */
    size_t len;     /* their bytes in all */
    /* private */
    int refs, removed;
    struct memout *next;
} memout;

/* NULL when out of memory.  max_each 0: nothing is ever kept.  compress:
 * whether kept blocks are compressed with the writer's codec (0: stored
 * uncompressed). */
memout_store *memout_new(size_t max_each, size_t max_total, int compress);
/* Frees every entry; no reader may hold one. */
void memout_free(memout_store *s);

/* Whether an output of len bytes may be kept: 1 with len counted against
 * the total (then memout_put or memout_unreserve must follow), or 0 (write
 * files).  s may be NULL (0). */
int memout_reserve(memout_store *s, size_t len);
void memout_unreserve(memout_store *s, size_t len);
/* Whether a writer should keep its blocks uncompressed in the hope of
 * being kept: the store does not compress and has room left.  s may be
 * NULL (0). */
int memout_plain(memout_store *s);
/* Keep a reserved output: takes segs (malloc'd, nparts bigbuf.h buffers
 * whose lengths total len, as reserved; each is trimmed with bb_shrink).
 * 0, or EM_ENOMEM (then nothing is taken and the reservation stands:
 * unreserve it). */
int memout_put(memout_store *s, uint32_t shuffle_id, uint32_t map, uint64_t attempt, int nparts, ebuf *segs,
               size_t len);

/* The output, referenced (memout_release it), or NULL when the store does
 * not hold it (s NULL: never). */
memout *memout_get(memout_store *s, uint32_t shuffle_id, uint32_t map, uint64_t attempt);
void memout_release(memout_store *s, memout *m);

/* Forget one attempt's output, or every output of a shuffle; freed when
 * the last reader lets go.  s may be NULL. */
void memout_remove(memout_store *s, uint32_t shuffle_id, uint32_t map, uint64_t attempt);
void memout_remove_shuffle(memout_store *s, uint32_t shuffle_id);

/* Flip byte `at` of the first non-empty segment (BF_HEADER: the first
 * block's first stored byte), as the corruption fault does to a file: 1
 * done, 0 no such output (or no byte there). */
int memout_corrupt(memout_store *s, uint32_t shuffle_id, uint32_t map, uint64_t attempt, size_t at);

/* Outputs held and their bytes (tests, stats). */
void memout_counts(memout_store *s, int64_t *outputs, int64_t *bytes);

#endif
