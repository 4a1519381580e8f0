/*
 * test_memout.c -- the store of map outputs kept in memory (memout.h):
 * the size limits, lookups by (shuffle, map, attempt) across the table's
 * growth, removal while a reader holds an output, and the corruption hook.
 */
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "bigbuf.h"
#include "ember.h"
#include "memout.h"

#define MEM_NONE ((bf_codec){BF_NONE, 0})
#define MEM_LZ4 ((bf_codec){BF_LZ4, 0})

/* Put an output of len bytes filled with `fill`, two partitions of half
 * of them each: as two buffers (an uncompressed output's shape), or
 * packed in one buffer whose partitions take turns in two extents each
 * (a compressed output's). */
static int put_shape(memout_store *s, uint32_t sid, uint32_t map, uint64_t att, size_t len, uint8_t fill,
                     int packed) {
    if (!memout_reserve(s, len)) return -1;
    int nbufs = packed ? 1 : 2;
    ebuf *bufs = calloc((size_t)nbufs, sizeof *bufs);
    memout_ext *ext = calloc(4, sizeof *ext);
    size_t *first = calloc(3, sizeof *first);
    if (!bufs || !ext || !first) return -2;
    size_t half[2] = {len / 2, len - len / 2};
    if (!packed) {
        for (int i = 0; i < 2; i++) {
            if (bb_reserve(&bufs[i], half[i] + 1)) return -2;
            memset(bufs[i].p, fill, half[i]);
            bufs[i].len = half[i];
            ext[i] = (memout_ext){0, half[i], (uint32_t)i};
            first[i + 1] = (size_t)i + 1;
        }
    } else {
        /* p0 a, p1 a, p0 b, p1 b: partition r's extents are ext[2r], ext[2r+1]. */
        if (bb_reserve(&bufs[0], len + 1)) return -2;
        memset(bufs[0].p, fill, len);
        bufs[0].len = len;
        size_t off = 0;
        for (int turn = 0; turn < 2; turn++)
            for (int r = 0; r < 2; r++) {
                size_t n = turn ? half[r] - half[r] / 2 : half[r] / 2;
                ext[2 * r + turn] = (memout_ext){off, n, 0};
                off += n;
            }
        first[1] = 2;
        first[2] = 4;
    }
    return memout_put(s, sid, map, att, 2, nbufs, bufs, ext, first, len);
}

static int put(memout_store *s, uint32_t sid, uint32_t map, uint64_t att, size_t len, uint8_t fill) {
    return put_shape(s, sid, map, att, len, fill, 0);
}

TEST(memout_limits) {
    memout_store *s = memout_new(100, 250, MEM_NONE);
    bf_codec c = {BF_ZSTD, 3};
    CHECK(s);
    CHECK(memout_codec(s, &c) && c.id == BF_NONE); /* the store's codec, and room left */
    CHECK(!memout_reserve(s, 101)); /* over max_each */
    CHECK_OK(put(s, 1, 0, 0, 100, 1));
    CHECK_OK(put(s, 1, 1, 0, 100, 2));
    CHECK(!memout_reserve(s, 51)); /* 200 held, 250 in all */
    CHECK(memout_reserve(s, 50));
    c.id = BF_ZSTD;
    CHECK(!memout_codec(s, &c) && c.id == BF_ZSTD); /* full: writers use their own codec from the start */
    memout_unreserve(s, 50);
    CHECK(memout_codec(s, &c) && c.id == BF_NONE);
    int64_t n, bytes;
    memout_counts(s, &n, &bytes);
    CHECK_EQ_I64(n, 2);
    CHECK_EQ_I64(bytes, 200);
    memout_remove(s, 1, 0, 0);
    CHECK(memout_reserve(s, 100)); /* the removed output's bytes are free */
    memout_unreserve(s, 100);
    memout_free(s);
    /* max_each 0: nothing is kept, and a NULL store keeps nothing. */
    s = memout_new(0, 1000, MEM_NONE);
    CHECK(s && !memout_reserve(s, 1) && !memout_codec(s, &c));
    memout_free(s);
    /* A store of another codec names it, with its level. */
    s = memout_new(100, 1000, (bf_codec){BF_LZ4, 3});
    CHECK(s && memout_codec(s, &c) && c.id == BF_LZ4 && c.level == 3 && memout_reserve(s, 100));
    memout_unreserve(s, 100);
    memout_free(s);
    CHECK(!memout_reserve(NULL, 1) && !memout_codec(NULL, &c));
    CHECK(!memout_get(NULL, 1, 0, 0));
}

TEST(memout_lookup_and_remove) {
    memout_store *s = memout_new(64, (size_t)1 << 30, MEM_NONE);
    CHECK(s);
    /* Enough outputs to grow the table several times; attempts differ. */
    for (uint32_t sid = 0; sid < 4; sid++)
        for (uint32_t m = 0; m < 500; m++) CHECK_OK(put(s, sid, m, 1000 + m, 16, (uint8_t)(sid * 7 + m)));
    for (uint32_t sid = 0; sid < 4; sid++)
        for (uint32_t m = 0; m < 500; m += 37) {
            memout *o = memout_get(s, sid, m, 1000 + m);
            CHECK(o && o->len == 16 && o->nparts == 2 && o->nbufs == 2);
            CHECK(memout_seg_len(o, 0) == 8 && memout_seg_len(o, 1) == 8);
            CHECK(o->bufs[1].p[7] == (uint8_t)(sid * 7 + m));
            memout_release(s, o);
            CHECK(!memout_get(s, sid, m, 999)); /* another attempt */
        }
    /* A reader holds an output while it is removed: its bytes stay until
     * the reader lets go. */
    memout *held = memout_get(s, 2, 10, 1010);
    CHECK(held);
    memout_remove_shuffle(s, 2);
    CHECK(!memout_get(s, 2, 10, 1010));
    CHECK(!memout_get(s, 2, 499, 1499));
    memout *o3 = memout_get(s, 3, 499, 1499); /* other shuffles stay */
    CHECK(o3);
    memout_release(s, o3);
    CHECK(held->bufs[0].p[0] == (uint8_t)(2 * 7 + 10));
    int64_t n, bytes;
    memout_counts(s, &n, &bytes);
    CHECK_EQ_I64(n, 1500);
    memout_release(s, held);
    /* The corruption hook flips one byte of a held output's first
     * segment. */
    CHECK_EQ_I64(memout_corrupt(s, 0, 5, 1005, 3), 1);
    memout *c = memout_get(s, 0, 5, 1005);
    CHECK(c && c->bufs[0].p[3] == (uint8_t)(5 ^ 0x5a) && c->bufs[0].p[2] == 5);
    memout_release(s, c);
    CHECK_EQ_I64(memout_corrupt(s, 0, 5, 1005, 8), 0); /* past its end */
    CHECK_EQ_I64(memout_corrupt(s, 9, 5, 1005, 0), 0);  /* no such output */
    memout_remove(s, 0, 5, 1005);
    memout_remove(s, 0, 5, 1005); /* twice: nothing happens */
    memout_counts(s, &n, &bytes);
    CHECK_EQ_I64(n, 1499);
    memout_free(s);
}

/* A compressed output's shape: one buffer, each partition's run in
 * extents that take turns with the other partition's.  Lengths per
 * partition, the extents' places, the corruption hook (the first extent
 * of the first non-empty run) and the store's bytes. */
TEST(memout_packed_extents) {
    memout_store *s = memout_new(1000, 10000, MEM_LZ4);
    CHECK(s);
    CHECK_OK(put_shape(s, 1, 0, 7, 100, 9, 1));
    memout *o = memout_get(s, 1, 0, 7);
    CHECK(o && o->nbufs == 1 && o->nparts == 2 && o->first[2] == 4);
    CHECK_EQ_I64((int64_t)memout_seg_len(o, 0), 50);
    CHECK_EQ_I64((int64_t)memout_seg_len(o, 1), 50);
    /* p0: [0, 25) and [50, 75); p1: [25, 50) and [75, 100). */
    CHECK(o->ext[0].off == 0 && o->ext[1].off == 50 && o->ext[2].off == 25 && o->ext[3].off == 75);
    CHECK(o->ext[1].len == 25 && o->ext[3].len == 25);
    memout_release(s, o);
    CHECK_EQ_I64(memout_corrupt(s, 1, 0, 7, 24), 1);
    CHECK_EQ_I64(memout_corrupt(s, 1, 0, 7, 25), 0); /* past the first extent */
    o = memout_get(s, 1, 0, 7);
    CHECK(o && o->bufs[0].p[24] == (uint8_t)(9 ^ 0x5a) && o->bufs[0].p[25] == 9);
    memout_release(s, o);
    int64_t n, bytes;
    memout_counts(s, &n, &bytes);
    CHECK_EQ_I64(n, 1);
    CHECK_EQ_I64(bytes, 100);
    memout_remove(s, 1, 0, 7);
    memout_counts(s, &n, &bytes);
    CHECK_EQ_I64(n, 0);
    memout_free(s);
}
