/*
 * codec.h -- the block codecs by number and name: what a setting
 * (ember.io.compression.codec and its levels), a task description and a
 * block header all say when they name a codec, and the limits every layer
 * checks a block's size against.  The codecs themselves run in the block
 * format (blockfile.h); this header is only their names and ranges, so the
 * configuration and the task description can check a codec without the
 * executor.
 */
#ifndef EM_CODEC_H
#define EM_CODEC_H

#include <stdint.h>

/* Largest raw block: a reader rejects headers claiming more (a corrupt
 * length must not make it allocate gigabytes), so a writer never builds a
 * bigger one, and a single record longer than this cannot be written. */
#define BF_MAX_RAW ((size_t)256 << 20)

/* A block's codec: the number its header stores, so a value never changes
 * meaning. */
enum bf_codec_id { BF_NONE = 0, BF_ZLIB = 1, BF_LZ4 = 2, BF_ZSTD = 3, BF_PREFIX = 4, BF_NCODECS };
/* A writer's choice, never a header's: each block front coded (prefix)
 * when that takes it to at most BF_AUTO_PREFIX_PCT percent of its bytes;
 * else lz4 at the level's acceleration when that beats front coding by
 * BF_AUTO_LZ4_GAIN_PCT percent of front coding's bytes (or front coding
 * fails); else front coded when that reaches BF_AUTO_KEEP_PCT, else
 * stored as it is.  A writer keeping state (bf_cctx) keeps a choice of
 * lz4, of front coding past BF_AUTO_PREFIX_PCT or of no coding for the
 * next BF_AUTO_SKIP blocks without trying the others.  Front coding
 * shrinks numeric records as well as lz4 at a fraction of the cost of
 * either side; text hardly at all; random keys it shrinks as far as lz4
 * does. */
#define BF_AUTO 64
#define BF_AUTO_PREFIX_PCT 60
#define BF_AUTO_KEEP_PCT 90
#define BF_AUTO_LZ4_GAIN_PCT 20
#define BF_AUTO_SKIP 8

/* zstd's levels a writer accepts (0 is zstd's default, 3; negative levels
 * are its fast modes). */
#define BF_ZSTD_MIN_LEVEL (-7)
#define BF_ZSTD_MAX_LEVEL 22
/* lz4's largest acceleration a writer accepts (LZ4_compress_fast's
 * argument: each step up skips input faster where no match is found,
 * trading ratio for speed; 0 and 1 are lz4's default). */
#define BF_LZ4_MAX_ACCEL 64

/* How a writer compresses: a codec and its level (zlib 0 to 9; zstd
 * BF_ZSTD_MIN_LEVEL to BF_ZSTD_MAX_LEVEL; lz4's and auto's acceleration, 0
 * to BF_LZ4_MAX_ACCEL; 0 for none and prefix).  All zeros is codec none.
 * Readers need none of it: the level changes only what a writer makes. */
typedef struct bf_codec {
    uint8_t id;    /* enum bf_codec_id, or BF_AUTO */
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

#endif
