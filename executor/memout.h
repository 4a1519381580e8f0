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
 * .totalBytes).  An output is one run of blocks per reduce partition, the
 * bytes its data file would hold at its index's offsets, so readers decode
 * it with the same CRC-checked block reader; the runs lie in the buffers
 * the map task built them in (bigbuf.h buffers, handed over without a
 * copy), each run as one or more extents: reduce partition r's are
 * ext[first[r] .. first[r+1]), in order.  The shuffle writer
 * hands over one buffer for all, the blocks of every partition in the
 * order the map task finished them (a run is then many extents).  One
 * buffer per output is what keeps outputs small in memory: a buffer's
 * last huge page is resident whole, and a 20M-pair shuffle's 64
 * compressed runs of 2.4 MB each took 4 MB each as separate buffers.  It
 * is also one mapping that the next map task takes whole from bigbuf's
 * cache when the output is freed.
 *
 * Blocks kept here are coded with the store's codec
 * (ember.shuffle.inMemoryOutput.codec), which a writer uses instead of its
 * own while the store has room (sw_open asks memout_codec): by default
 * prefix, the front coding of prefixcodec.h, which takes lz4's bytes or
 * fewer on numeric records (a 20M-pair reduce_by_key: 151 MB kept, not
 * 343) at a fraction of its cost; none builds blocks in place, which
 * readers decode where they lie with no copy.  They never reach a disk or
 * a network, so a general codec's ratio on text buys only memory.
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

#include "blockfile.h"
#include "buf.h"

typedef struct memout_store memout_store;

/* Bytes [off, off+len) of buffer buf of an output: whole blocks. */
typedef struct memout_ext {
    uint64_t off, len;
    uint32_t buf;
} memout_ext;

typedef struct memout {
    uint32_t shuffle_id, map;
    uint64_t attempt;
    int nparts;
    int nbufs;
    ebuf *bufs;       /* the bytes (bigbuf.h buffers) */
    memout_ext *ext;  /* the runs' extents, partition by partition ... */
    size_t *first;    /* ... partition r's ext[first[r] .. first[r+1]) */
    size_t len;       /* the runs' bytes in all */
    /* private */
    int refs, removed;
    struct memout *next;
} memout;

/* NULL when out of memory.  max_each 0: nothing is ever kept.  codec: how
 * writers code the blocks they hope to keep here (checked by the caller). */
memout_store *memout_new(size_t max_each, size_t max_total, bf_codec codec);
/* Frees every entry; no reader may hold one. */
void memout_free(memout_store *s);

/* Whether an output of len bytes may be kept: 1 with len counted against
 * the total (then memout_put or memout_unreserve must follow), or 0 (write
 * files).  s may be NULL (0). */
int memout_reserve(memout_store *s, size_t len);
void memout_unreserve(memout_store *s, size_t len);
/* Whether a writer should code its blocks for the store, in the hope of
 * being kept: 1 with *c the store's codec when it has room left, else 0
 * (the writer's own codec).  s may be NULL (0). */
int memout_codec(memout_store *s, bf_codec *c);
/* Keep a reserved output: takes bufs (malloc'd, nbufs bigbuf.h buffers,
 * each trimmed with bb_shrink), ext and first (malloc'd; first has nparts
 * + 1 entries, first[nparts] extents in ext, whose lengths total len, as
 * reserved).  0, or EM_ENOMEM (then nothing is taken and the reservation
 * stands: unreserve it). */
int memout_put(memout_store *s, uint32_t shuffle_id, uint32_t map, uint64_t attempt, int nparts, int nbufs,
               ebuf *bufs, memout_ext *ext, size_t *first, size_t len);
/* The buffer bytes of the output kept last (0: none yet, or s NULL): what
 * the next map task's output probably needs, so its writer asks for that
 * at once and takes a mapping an earlier output gave back whole. */
size_t memout_last_bytes(memout_store *s);
/* Reduce partition r's bytes in m (r in [0, m->nparts)). */
uint64_t memout_seg_len(const memout *m, int r);

/* The output, referenced (memout_release it), or NULL when the store does
 * not hold it (s NULL: never). */
memout *memout_get(memout_store *s, uint32_t shuffle_id, uint32_t map, uint64_t attempt);
void memout_release(memout_store *s, memout *m);

/* Forget one attempt's output, or every output of a shuffle; freed when
 * the last reader lets go.  s may be NULL. */
void memout_remove(memout_store *s, uint32_t shuffle_id, uint32_t map, uint64_t attempt);
void memout_remove_shuffle(memout_store *s, uint32_t shuffle_id);

/* Flip byte `at` of the first extent of the first non-empty segment
 * (BF_HEADER: the first block's first stored byte), as the corruption
 * fault does to a file: 1 done, 0 no such output (or no byte there). */
int memout_corrupt(memout_store *s, uint32_t shuffle_id, uint32_t map, uint64_t attempt, size_t at);

/* Outputs held and their bytes (tests, stats). */
void memout_counts(memout_store *s, int64_t *outputs, int64_t *bytes);

#endif
