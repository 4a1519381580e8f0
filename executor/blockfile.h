/*
 * blockfile.h -- runs of records stored as zlib-compressed, CRC-checked
 * blocks: the format of shuffle segments and of spilled sorted runs.
 *
 * A block on disk is a 12-byte header followed by the compressed bytes:
 *     u32le compressed length, u32le raw length, u32le crc32(compressed bytes)
 * The raw bytes are records in the batch encoding of recfmt.h.  A run is a
 * sequence of blocks; a shuffle segment is one run; a data file holds one run
 * per reduce partition back to back.  A writer buffers records until the raw
 * block reaches block_bytes, then compresses (compress2 at `level`) and
 * appends it with write(2) at the writer's offset.
 */
#ifndef EM_BLOCKFILE_H
#define EM_BLOCKFILE_H

#include <stdint.h>

#include "buf.h"
#include "ember.h"

#define BF_HEADER 12
/* Largest raw block: a reader rejects headers claiming more (a corrupt
 * length must not make it allocate gigabytes), so a writer never builds a
 * bigger one, and a single record longer than this cannot be written. */
#define BF_MAX_RAW ((size_t)256 << 20)

typedef struct bf_writer {
    int fd;
    uint64_t off;      /* file offset where the next block goes */
    int level;
    size_t block_bytes;
    ebuf raw, z;
    uint64_t records;  /* records written so far */
    const char *path;  /* for messages (borrowed) */
} bf_writer;

/* Start writing blocks at `off` of fd.  Never fails. */
void bf_writer_init(bf_writer *w, int fd, const char *path, uint64_t off, int level, size_t block_bytes);
/* Append one record; may write a block.  0, EM_ENOMEM or EM_EIO (message
 * names the path). */
int bf_write(bf_writer *w, const em_rec *r);
/* Write the pending partial block, if any.  Afterwards w->off is the end of
 * the run.  0 or EM_EIO. */
int bf_flush(bf_writer *w);
void bf_writer_free(bf_writer *w);

/* Compress raw[0, rlen) at `level` and append the whole block (header and
 * compressed bytes) to z, for callers that keep blocks in memory before
 * writing them (the shuffle writer).  0, EM_ENOMEM, or EM_ETOOBIG when rlen
 * exceeds BF_MAX_RAW; z is unchanged on failure. */
int bf_compress_block(ebuf *z, const void *raw, size_t rlen, int level);
/* Write all n bytes at off with pwrite(2), retrying short writes.  0 or
 * EM_EIO (message names path and offset). */
int bf_pwrite_all(int fd, const char *path, const void *p, size_t n, uint64_t off);

typedef struct bf_reader {
    int fd;
    const char *path;  /* for messages (borrowed) */
    uint64_t off, end; /* remaining byte range of the run */
    ebuf z, raw;
    size_t pos;        /* next record within raw */
} bf_reader;

/* Read the run in [off, off+len) of fd.  Never fails. */
void bf_reader_init(bf_reader *r, int fd, const char *path, uint64_t off, uint64_t len);
/* Next record: 1 with *rec set (views valid until the next call), 0 at the
 * end of the run, EM_ECORRUPT (bad header, CRC mismatch, inflate failure,
 * truncated run: the message names path and offset) or EM_EIO. */
int bf_next(bf_reader *r, em_rec *rec);
void bf_reader_free(bf_reader *r);

#endif
