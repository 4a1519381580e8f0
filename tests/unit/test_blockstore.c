/*
 * test_blockstore.c -- unit tests of the disk block format's checks
 * (engine/blockstore.c, bs_block_check) and of dropping a bad block.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../test.h"
#include "blockstore.h"
#include "buf.h"
#include "ember.h"
#include "recfmt.h"

/* A block file image of the given records bytes, with a correct header. */
static size_t image(uint8_t *out, const uint8_t *recs, size_t n) {
    memcpy(out, "EMBLOCK1", 8);
    put_u32le(out + 8, 1);
    put_u32le(out + 12, (uint32_t)crc32(0L, recs, (uInt)n));
    put_u64le(out + 16, n);
    memcpy(out + BS_HEADER, recs, n);
    return BS_HEADER + n;
}

TEST(blockstore_check_format) {
    ebuf recs = EBUF_INIT;
    for (int i = 0; i < 10; i++) {
        uint8_t v[8];
        em_i64_enc(i, v);
        em_rec r = {NULL, 0, v, 8};
        CHECK(rec_append(&recs, &r) == 0);
    }
    uint8_t img[512];
    const uint8_t *got;
    size_t n = image(img, recs.p, recs.len);
    CHECK_OK(bs_block_check(img, n, recs.len, "b", &got));
    CHECK(got == img + BS_HEADER);
    CHECK_OK(bs_block_check(img, n, SIZE_MAX, "b", &got));
    /* Length other than the store recorded; truncated; bad magic. */
    CHECK_EQ_I64(bs_block_check(img, n, recs.len + 1, "b", &got), EM_ECORRUPT);
    CHECK_EQ_I64(bs_block_check(img, n - 1, recs.len, "b", &got), EM_ECORRUPT);
    CHECK_EQ_I64(bs_block_check(img, 10, SIZE_MAX, "b", &got), EM_ECORRUPT);
    img[0] = 'X';
    CHECK_EQ_I64(bs_block_check(img, n, recs.len, "blk", &got), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "blk");
    img[0] = 'E';
    /* A flipped bit: the checksum. */
    img[BS_HEADER + 3] ^= 4;
    CHECK_EQ_I64(bs_block_check(img, n, recs.len, "b", &got), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "crc mismatch");
    /* Records that do not parse, under a checksum made to match. */
    uint8_t bad[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    n = image(img, bad, sizeof bad);
    CHECK_EQ_I64(bs_block_check(img, n, sizeof bad, "b", &got), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "malformed record");
    ebuf_free(&recs);
}

/* A store drops a disk block that fails its check: bs_get returns NULL and
 * the block is gone, so a put can cache it anew. */
TEST(blockstore_bad_block_dropped) {
    blockstore *s = bs_new(test_tmpdir(), 1 << 20);
    CHECK(s);
    uint8_t *chunk = malloc(16);
    CHECK(chunk);
    uint8_t v[8];
    em_i64_enc(42, v);
    em_rec r = {NULL, 0, v, 8};
    size_t len = rec_put(chunk, &r);
    CHECK_OK(bs_put(s, 1, 7, 0, EM_DISK_ONLY, &chunk, &len, 1));
    block *b = bs_get(s, 1, 7, 0);
    CHECK(b && b->n == 1 && b->len[0] == len);
    bs_release(s, b);
    char cmd[1024], path[1024];
    snprintf(cmd, sizeof cmd, "ls %s/block_7_0_*", test_tmpdir());
    FILE *f = popen(cmd, "r");
    CHECK(f && fgets(path, sizeof path, f));
    pclose(f);
    path[strcspn(path, "\n")] = 0;
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    uint8_t byte;
    CHECK(pread(fd, &byte, 1, BS_HEADER + 2) == 1);
    byte ^= 0x40;
    CHECK(pwrite(fd, &byte, 1, BS_HEADER + 2) == 1);
    close(fd);
    CHECK(bs_get(s, 1, 7, 0) == NULL);
    CHECK_EQ_I64(bs_count(s, 1, 7), 0);
    CHECK(access(path, F_OK) != 0); /* its file is removed with it */
    bs_free(s);
}

static int releases;
static void count_release(void *arg) {
    (void)arg;
    releases++;
}

/* A shared block (bs_put_shared) is read where it lies, never copied, and
 * given back exactly once: when removed (after its last reader), at once
 * for a key already held, and at once for a disk level, whose block is a
 * copy in its file. */
TEST(blockstore_shared_block_released_once) {
    blockstore *s = bs_new(test_tmpdir(), 1 << 20);
    CHECK(s);
    ebuf recs = EBUF_INIT;
    for (int i = 0; i < 100; i++) {
        uint8_t v[8];
        em_i64_enc(i, v);
        em_rec r = {v, 8, v, 8};
        CHECK_OK(rec_append(&recs, &r));
    }
    releases = 0;
    CHECK_OK(bs_put_shared(s, 1, 3, 0, EM_MEMORY_ONLY, recs.p, recs.len, count_release, NULL));
    block *b = bs_get(s, 1, 3, 0);
    CHECK(b && b->n == 1 && b->p[0] == recs.p && b->len[0] == recs.len);
    /* The same key again: the first stays, the second goes back now. */
    CHECK_OK(bs_put_shared(s, 1, 3, 0, EM_MEMORY_ONLY, recs.p, recs.len, count_release, NULL));
    CHECK_EQ_I64(releases, 1);
    CHECK_EQ_I64(bs_count(s, 1, 3), 1);
    /* Removed while read: given back when the reader is done. */
    bs_remove(s, 1, 3);
    CHECK_EQ_I64(releases, 1);
    bs_release(s, b);
    CHECK_EQ_I64(releases, 2);
    CHECK_EQ_I64(bs_count(s, 1, 3), 0);
    /* To disk: written, given back at once, read back from its file. */
    CHECK_OK(bs_put_shared(s, 1, 4, 0, EM_DISK_ONLY, recs.p, recs.len, count_release, NULL));
    CHECK_EQ_I64(releases, 3);
    b = bs_get(s, 1, 4, 0);
    CHECK(b && b->n == 1 && b->p[0] != recs.p && b->len[0] == recs.len);
    CHECK(memcmp(b->p[0], recs.p, recs.len) == 0);
    bs_release(s, b);
    /* Still held when the store is freed: given back then. */
    CHECK_OK(bs_put_shared(s, 2, 3, 1, EM_MEMORY_AND_DISK, recs.p, recs.len, count_release, NULL));
    CHECK_EQ_I64(releases, 3);
    bs_free(s);
    CHECK_EQ_I64(releases, 4);
    ebuf_free(&recs);
}
