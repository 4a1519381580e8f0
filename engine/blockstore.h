/*
 * blockstore.h -- the cache of persisted partitions on an executor.
 *
 * Blocks are keyed by (namespace, rdd id, partition); the namespace keeps
 * two contexts in one process apart.  A block is a batch of encoded records,
 * in memory or in a file under the store's directory (EM_DISK_ONLY, or
 * EM_MEMORY_AND_DISK past the memory limit).  Readers hold a reference, so
 * removing a block while a task reads it is safe.  Thread-safe.
 *
 * A disk block is a 24-byte header and then the records:
 *     "EMBLOCK1"  u32le version (1)  u32le crc32(records)  u64le length
 * Reading one back checks the header, the length the store recorded, the
 * checksum, and that the records parse; a block failing any check is
 * dropped (bs_get returns NULL), so the task recomputes the partition from
 * lineage and caches it anew, and no task fails.
 */
#ifndef EM_BLOCKSTORE_H
#define EM_BLOCKSTORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct blockstore blockstore;
typedef struct block {
    int n;                /* chunks */
    const uint8_t **p;    /* each chunk's records */
    size_t *len;
} block;

/* dir: where disk blocks go (not owned, must outlive the store). */
blockstore *bs_new(const char *dir, size_t mem_limit);
void bs_free(blockstore *s);
/* Store a block of n chunks (takes ownership of the n malloc'd chunks in
 * every case; the two arrays are copied).  Replaces nothing: if the key
 * exists the new chunks are dropped.  0 or < 0. */
int bs_put(blockstore *s, uint64_t ns, int rdd, int part, int level, uint8_t **chunks, const size_t *lens, int n);
/* Store a block of one chunk the store does not own: p stays valid until
 * release(arg), which the store calls when it drops the block, at once when
 * the key exists or the block goes to disk, and on failure.  How a
 * parallelized partition is cached as the bytes it already is (srcdata.h),
 * and a computed one in the cache tee's bigbuf.h buffer (executor/ops.c).
 * 0 or < 0. */
int bs_put_shared(blockstore *s, uint64_t ns, int rdd, int part, int level, const uint8_t *p, size_t len,
                  void (*release)(void *arg), void *arg);
/* A referenced block, or NULL when absent.  Release with bs_release. */
block *bs_get(blockstore *s, uint64_t ns, int rdd, int part);
void bs_release(blockstore *s, block *b);
/* Check the bytes of a disk block file (header and records) holding
 * `expect` bytes of records (SIZE_MAX: any).  0 with *records pointing into
 * p, or EM_ECORRUPT with a message naming path.  Pure: the fuzz target
 * tests/fuzz/fuzz_cacheblock.c drives it. */
#define BS_HEADER 24
int bs_block_check(const uint8_t *p, size_t n, size_t expect, const char *path, const uint8_t **records);
/* The same, with messages naming the file as `what` (bs_block_check's is
 * "cached block"; checkpoint files use this format too). */
int bs_block_check_as(const uint8_t *p, size_t n, size_t expect, const char *what, const char *path,
                      const uint8_t **records);
/* The header of a disk block holding len bytes of records whose crc32 is
 * crc. */
void bs_block_header(uint8_t h[BS_HEADER], uint32_t crc, uint64_t len);
/* Where a block is held: its bytes in memory and the bytes of its file
 * on disk (header included), one of them 0.  0, or < 0 when absent. */
int bs_sizes(blockstore *s, uint64_t ns, int rdd, int part, int64_t *mem, int64_t *disk);
/* Remove all blocks of an rdd (rdd < 0: of the namespace). */
void bs_remove(blockstore *s, uint64_t ns, int rdd);
/* Blocks held, for tests. */
int bs_count(blockstore *s, uint64_t ns, int rdd);

#endif
