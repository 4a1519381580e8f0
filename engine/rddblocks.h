/*
 * rddblocks.h -- where an RDD's cached partitions are: one record per
 * (partition, executor) holding the block, with its bytes in memory and on
 * disk, kept sorted so the status store (status.h) answers the storage
 * page's and /api/v1's questions (how many partitions are cached, how much
 * memory and disk, on which executors) without a walk per event.
 *
 * A speculative copy or a retry on another executor caches the partition
 * there too: the partition counts once, its bytes on each executor.
 */
#ifndef EM_RDDBLOCKS_H
#define EM_RDDBLOCKS_H

#include <stdint.h>

typedef struct rdd_block {
    int part;
    char exec_id[32];
    int64_t mem, disk;
    uint8_t on_disk; /* held in a file (else in memory) */
} rdd_block;

typedef struct rdd_blocks {
    rdd_block *b; /* sorted by (part, exec_id) */
    int n, cap;
    int nparts;   /* distinct partitions among them */
    int64_t mem, disk;
} rdd_blocks;

/* The block of part on exec_id is now held as given (added or replaced);
 * `removed` drops it instead.  The change to the executor's figures is
 * added to *d_blocks, *d_mem and *d_disk (each may be NULL).  0, or -1
 * out of memory (nothing changed). */
int rdd_blocks_put(rdd_blocks *r, int part, const char *exec_id, int removed, int64_t mem, int64_t disk, int on_disk,
                   int *d_blocks, int64_t *d_mem, int64_t *d_disk);
/* Drop every block exec_id held (its executor is gone), adding what it
 * held, negated, to the three figures as rdd_blocks_put does. */
void rdd_blocks_drop_exec(rdd_blocks *r, const char *exec_id, int *d_blocks, int64_t *d_mem, int64_t *d_disk);
/* What exec_id holds of the RDD: the number of its blocks (0: none), and
 * their bytes in memory and on disk. */
int rdd_blocks_on(const rdd_blocks *r, const char *exec_id, int64_t *mem, int64_t *disk);
void rdd_blocks_free(rdd_blocks *r);

#endif
