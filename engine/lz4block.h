/*
 * lz4block.h -- lz4-java's block stream (LZ4BlockOutputStream), the bytes
 * Spark's lz4 codec writes: building its blocks and checking its headers.
 * Internal to ember.
 *
 * A stream is a run of blocks, each a 21-byte header and its data:
 *   0   8  magic "LZ4Block"
 *   8   1  token: method | level; method LZ4B_RAW (0x10, the data stored)
 *          or LZ4B_LZ4 (0x20, one LZ4 block), level log2(block size) - 10
 *          (block sizes 1 KiB .. 32 MiB; smaller ones are level 0)
 *   9   4  compressed length, u32le (the data's length)
 *   13  4  decoded length, u32le, at most the block size
 *   17  4  checksum, u32le: XXH32 of the decoded bytes with seed
 *          0x9747b28c, masked with 0x0FFFFFFF (lz4-java's
 *          StreamingXXHash32.asChecksum())
 * A block is raw when LZ4 does not make it smaller.  The stream ends with
 * an end mark: a raw block with both lengths 0 and checksum 0.  Spark reads
 * concatenated streams, so an end mark may be followed by another stream.
 * Spark's block size is 32 KiB (spark.io.compression.lz4.blockSize), and
 * its flushes end the current block early.
 */
#ifndef EM_LZ4BLOCK_H
#define EM_LZ4BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define LZ4B_HEADER 21
#define LZ4B_RAW 0x10
#define LZ4B_LZ4 0x20
#define LZ4B_SEED 0x9747b28cu
#define LZ4B_BLOCK_SIZE ((size_t)32 << 10) /* Spark's default */
#define LZ4B_MAX_BLOCK ((size_t)32 << 20)

/* One block's header, as read. */
typedef struct lz4b_header {
    int method;                /* LZ4B_RAW or LZ4B_LZ4 */
    size_t block_size;         /* 1 << (10 + level) */
    size_t clen, dlen;         /* compressed and decoded lengths */
    uint32_t check;            /* the checksum field */
} lz4b_header;

/* The checksum of n decoded bytes (lz4-java's masked XXH32). */
uint32_t lz4b_checksum(const void *p, size_t n);

/* Read and check the 21 bytes at h (magic, method, lengths within the
 * block size and LZ4's bound, raw lengths equal, an end mark's lengths and
 * checksum 0: the checks lz4-java's LZ4BlockInputStream makes).  Returns 0
 * with *out filled (dlen 0 is the end mark), or -1 with *why set to a
 * static phrase naming what is wrong ("not an lz4 block stream", ...);
 * sets no error of its own, so the caller can name its file. */
int lz4b_parse(const uint8_t *h, lz4b_header *out, const char **why);

/* Append one block holding p[0, n) to out, 1 <= n <= block_size, where
 * block_size is a power of two from 64 to LZ4B_MAX_BLOCK: LZ4-compressed
 * when that is smaller, raw otherwise.  Returns 0, EM_EINVAL for a bad n
 * or block_size, or EM_ENOMEM; on failure out is unchanged. */
int lz4b_put_block(ebuf *out, const void *p, size_t n, size_t block_size);

/* Append the end mark of a stream of block_size blocks.  0 or EM_ENOMEM
 * (out unchanged). */
int lz4b_put_end(ebuf *out, size_t block_size);

#endif
