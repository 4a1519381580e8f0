/*
 * codec.c -- the block codecs' names and the ranges of their levels
 * (codec.h).
 */
#include <stddef.h>
#include <strings.h>

#include "codec.h"

static const char *const codec_names[BF_NCODECS] = {"none", "zlib", "lz4", "zstd", "prefix"};

const char *bf_codec_name(int id) {
    return id >= 0 && id < BF_NCODECS ? codec_names[id] : id == BF_AUTO ? "auto" : NULL;
}

int bf_codec_id_of(const char *name) {
    for (int i = 0; name && i < BF_NCODECS; i++)
        if (!strcasecmp(name, codec_names[i])) return i;
    return name && !strcasecmp(name, "auto") ? BF_AUTO : -1;
}

int bf_codec_check(bf_codec c, const char **why) {
    const char *w = NULL;
    if (c.id >= BF_NCODECS && c.id != BF_AUTO) w = "unknown compression codec";
    else if (c.id == BF_ZLIB && (c.level < 0 || c.level > 9)) w = "zlib level outside 0 to 9";
    else if (c.id == BF_ZSTD && (c.level < BF_ZSTD_MIN_LEVEL || c.level > BF_ZSTD_MAX_LEVEL))
        w = "zstd level outside -7 to 22";
    else if ((c.id == BF_LZ4 || c.id == BF_AUTO) && (c.level < 0 || c.level > BF_LZ4_MAX_ACCEL))
        w = "lz4 acceleration outside 1 to 64";
    else if ((c.id == BF_NONE || c.id == BF_PREFIX) && c.level != 0) w = "a level given to a codec without levels";
    if (w && why) *why = w;
    return w ? -1 : 0;
}
