/*
 * blockfile.h -- runs of records stored as compressed, CRC-checked blocks:
 * the format of shuffle segments and of spilled sorted runs.
 *
 * A block on disk is a 13-byte header followed by the compressed bytes:
 *     offset 0  u32le compressed length
 *     offset 4  u32le raw length
 *     offset 8  u8    codec (enum bf_codec_id of codec.h: 0 none, 1 zlib,
 *                     2 lz4, 3 zstd, 4 prefix) in the low 7 bits; bit 7
 *                     (BF_VALUES) marks a shuffle block whose records are
 *                     values not yet combined (shuffle_write.c: a map task
 *                     that gave up combining), the others' combiners
 *     offset 9  u32le CRC-32C of the header's first 9 bytes and the
 *                     compressed bytes, as one running checksum (crc32c.h)
 * The raw bytes are records in the batch encoding of recfmt.h.  A run is a
 * sequence of blocks; a shuffle segment is one run; a data file holds one run
 * per reduce partition back to back.  A writer buffers records until the raw
 * block reaches block_bytes, then compresses it with its codec and appends
 * it with write(2) at the writer's offset.  Each block names its own codec,
 * so a reader decodes any run whatever the setting it runs under (blocks of
 * different codecs may even share a run), and a writer stores a block that
 * its codec would not shrink as codec none.  A writer may also build blocks
 * of codec none in place, records first and the header last
 * (bf_plain_header: the shuffle writer, for outputs kept in memory), and a
 * reader of a run in memory uses such blocks where they lie.
 *
 * The codecs are the libraries' own block functions: compress2/uncompress
 * (zlib), LZ4_compress_fast/LZ4_decompress_safe (lz4's block format),
 * ZSTD_compressCCtx/ZSTD_decompressDCtx (one zstd frame), and ember's own
 * front coding of the records (prefixcodec.h: for the outputs local[N]
 * keeps in memory, lz4's ratio on numeric records at a fraction of its
 * cost).  A block the codec would expand past BF_MAX_RATIO is stored as
 * it is too, so readers keep refusing headers that claim more.  The setting
 * ember.io.compression.codec picks a writer's codec (lz4 by default, as
 * Spark's spark.io.compression.codec), ember.shuffle.compress.level zlib's
 * level, ember.io.compression.zstd.level zstd's and
 * ember.io.compression.lz4.acceleration lz4's acceleration (its "level");
 * the task description carries them to the executors as a bf_codec.
 */
#ifndef EM_BLOCKFILE_H
#define EM_BLOCKFILE_H

#include <stdint.h>

#include "buf.h"
#include "codec.h"
#include "ember.h"

#define BF_HEADER 13
/* The codec byte's flag: the block's records are uncombined values. */
#define BF_VALUES 0x80
/* The most raw bytes any codec makes of one compressed byte (zstd's: a
 * 4-byte RLE block stands for up to 128 KiB).  A reader rejects a header
 * claiming a raw length past its own codec's ratio, which is at most this
 * (plus 64 bytes), before allocating anything. */
#define BF_MAX_RATIO 32768

/* What a compressor keeps between blocks so that a block costs no
 * allocation (zstd's context, made at its first zstd block).  Start it
 * zeroed (BF_CCTX_INIT); bf_cctx_free releases it. */
typedef struct bf_cctx {
    void *zstd;
    int auto_skip;     /* auto: blocks left that take auto_kept untried */
    uint8_t auto_kept; /* auto: the codec the last try chose */
} bf_cctx;
#define BF_CCTX_INIT {NULL, 0, 0}
void bf_cctx_free(bf_cctx *cx);

typedef struct bf_writer {
    int fd;
    uint64_t off;      /* file offset where the next block goes */
    bf_codec codec;
    size_t block_bytes;
    ebuf raw, z;
    bf_cctx cx;
    uint64_t records;  /* records written so far */
    const char *path;  /* for messages (borrowed) */
} bf_writer;

/* Start writing blocks at `off` of fd with codec (which the caller has
 * checked: the settings and the task description decoder do).  Never
 * fails. */
void bf_writer_init(bf_writer *w, int fd, const char *path, uint64_t off, bf_codec codec, size_t block_bytes);
/* Append one record; may write a block.  0, EM_ENOMEM or EM_EIO (message
 * names the path). */
int bf_write(bf_writer *w, const em_rec *r);
/* Write the pending partial block, if any.  Afterwards w->off is the end of
 * the run.  0 or EM_EIO. */
int bf_flush(bf_writer *w);
void bf_writer_free(bf_writer *w);

/* Compress raw[0, rlen) with codec and append the whole block (header and
 * compressed bytes) to z, for callers that keep blocks in memory before
 * writing them (the shuffle writer).  cx holds the compressor's state
 * between calls (NULL: none kept, each zstd block makes and frees a
 * context).  0, EM_ENOMEM, EM_ETOOBIG when rlen exceeds BF_MAX_RAW, or
 * EM_EINVAL for a codec bf_codec_check refuses; z is unchanged on
 * failure. */
int bf_compress_block(ebuf *z, const void *raw, size_t rlen, bf_codec codec, bf_cctx *cx);
/* The same, with flags (0 or BF_VALUES) in the header's codec byte. */
int bf_compress_block_flags(ebuf *z, const void *raw, size_t rlen, bf_codec codec, bf_cctx *cx, unsigned flags);
/* The most bytes bf_compress_block appends for rlen raw bytes: with that
 * much room reserved it never grows z. */
size_t bf_block_bound(bf_codec codec, size_t rlen);
/* Write at h the header of a block of codec none whose rlen raw bytes
 * already follow it at h + BF_HEADER (a writer building blocks in place;
 * rlen at most BF_MAX_RAW), with flags (0 or BF_VALUES). */
void bf_plain_header(uint8_t *h, size_t rlen, unsigned flags);
/* The checksum a block header stores: CRC-32C of the header's first 9 bytes
 * (h) and the zlen compressed bytes that follow it (z).  For tests and
 * tools that rewrite blocks. */
uint32_t bf_block_crc(const uint8_t *h, const uint8_t *z, size_t zlen);
/* Write all n bytes at off with pwrite(2), retrying short writes.  0 or
 * EM_EIO (message names path and offset). */
int bf_pwrite_all(int fd, const char *path, const void *p, size_t n, uint64_t off);

typedef struct bf_reader {
    int fd;
    const uint8_t *mem; /* the run's bytes are in memory here (fd unused) */
    const char *path;  /* for messages (borrowed) */
    uint64_t off, end; /* remaining byte range of the run */
    uint64_t block;    /* offset of the block in raw, for messages */
    ebuf z, raw;       /* the block's compressed bytes (none: unused) and records */
    const uint8_t *rp; /* the block's records: raw's bytes, or a block of
                          codec none in memory where it lies */
    size_t rlen;
    size_t pos;        /* next record within rp */
    unsigned flags;    /* the block's flags (BF_VALUES) */
    void *zstd;        /* zstd's decompression context, made at the first zstd block */
} bf_reader;

/* Read the run in [off, off+len) of fd.  Never fails. */
void bf_reader_init(bf_reader *r, int fd, const char *path, uint64_t off, uint64_t len);
/* The same for a run held in memory: [off, off+len) of base (a map output
 * kept by memout.h), checked exactly as a file's.  Never fails. */
void bf_reader_init_mem(bf_reader *r, const uint8_t *base, const char *path, uint64_t off, uint64_t len);
/* Go on with another run in memory, [off, off+len) of base, keeping the
 * reader's buffers (a segment held as several extents, memout.h); the
 * current block's records are dropped.  Never fails. */
void bf_reader_move_mem(bf_reader *r, const uint8_t *base, uint64_t off, uint64_t len);
/* Next record: 1 with *rec set (views valid until the next call), 0 at the
 * end of the run, EM_ECORRUPT (bad header, unknown codec, CRC mismatch,
 * data the codec rejects or that decodes to another length, truncated run:
 * the message names path and offset), EM_ENOMEM or EM_EIO. */
int bf_next(bf_reader *r, em_rec *rec);
/* The records of the next block at once: 1 with [*p, *p + *len) set to
 * their encoding (valid until the next call), 0 at the end of the run, or
 * an error as bf_next.  Not to be mixed with bf_next within one block. */
int bf_next_block(bf_reader *r, const uint8_t **p, size_t *len);
void bf_reader_free(bf_reader *r);

#endif
