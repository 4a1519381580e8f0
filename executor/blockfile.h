/*
 * blockfile.h -- runs of records stored as compressed, CRC-checked blocks:
 * the format of shuffle segments and of spilled sorted runs.
 *
 * A block on disk is a 13-byte header followed by the compressed bytes:
 *     offset 0  u32le compressed length
 *     offset 4  u32le raw length
 *     offset 8  u8    codec (enum bf_codec_id: 0 none, 1 zlib, 2 lz4, 3 zstd,
 *                     4 prefix)
 *     offset 9  u32le CRC-32C of the header's first 9 bytes and the
 *                     compressed bytes, as one running checksum (crc32c.h;
 *                     until 2026-11 zlib's crc32; the files live no longer than their application)
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
#include "ember.h"

#define BF_HEADER 13
/* Largest raw block: a reader rejects headers claiming more (a corrupt
 * length must not make it allocate gigabytes), so a writer never builds a
 * bigger one, and a single record longer than this cannot be written. */
#define BF_MAX_RAW ((size_t)256 << 20)
/* The most raw bytes any codec makes of one compressed byte (zstd's: a
 * 4-byte RLE block stands for up to 128 KiB).  A reader rejects a header
 * claiming a raw length past its own codec's ratio, which is at most this
 * (plus 64 bytes), before allocating anything. */
#define BF_MAX_RATIO 32768

/* A block's codec: the number its header stores, so a value never changes
 * meaning. */
enum bf_codec_id { BF_NONE = 0, BF_ZLIB = 1, BF_LZ4 = 2, BF_ZSTD = 3, BF_PREFIX = 4, BF_NCODECS };

/* zstd's levels a writer accepts (0 is zstd's default, 3; negative levels
 * are its fast modes). */
#define BF_ZSTD_MIN_LEVEL (-7)
#define BF_ZSTD_MAX_LEVEL 22
/* lz4's largest acceleration a writer accepts (LZ4_compress_fast's
 * argument: each step up skips input faster where no match is found,
 * trading ratio for speed; 0 and 1 are lz4's default). */
#define BF_LZ4_MAX_ACCEL 64

/* How a writer compresses: a codec and its level (zlib 0 to 9; zstd
 * BF_ZSTD_MIN_LEVEL to BF_ZSTD_MAX_LEVEL; lz4's acceleration, 0 to
 * BF_LZ4_MAX_ACCEL; 0 for none).  All zeros is codec none.  Readers need
 * none of it: the level changes only what a writer makes. */
typedef struct bf_codec {
    uint8_t id;    /* enum bf_codec_id */
    int8_t level;
} bf_codec;

/* The codec's name as ember.io.compression.codec spells it ("lz4"), or NULL
 * for an unknown id. */
const char *bf_codec_name(int id);
/* The id of a codec name (any case, as the setting matches it), or -1. */
int bf_codec_id_of(const char *name);
/* Whether c is a known codec with a level it accepts: 0, or -1 with a
 * reason (a static string) in *why when why is not NULL. */
int bf_codec_check(bf_codec c, const char **why);

/* What a compressor keeps between blocks so that a block costs no
 * allocation (zstd's context, made at its first zstd block).  Start it
 * zeroed (BF_CCTX_INIT); bf_cctx_free releases it. */
typedef struct bf_cctx {
    void *zstd;
} bf_cctx;
#define BF_CCTX_INIT {NULL}
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
/* The most bytes bf_compress_block appends for rlen raw bytes: with that
 * much room reserved it never grows z. */
size_t bf_block_bound(bf_codec codec, size_t rlen);
/* Write at h the header of a block of codec none whose rlen raw bytes
 * already follow it at h + BF_HEADER (a writer building blocks in place;
 * rlen at most BF_MAX_RAW). */
void bf_plain_header(uint8_t *h, size_t rlen);
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
