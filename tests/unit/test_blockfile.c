/*
 * test_blockfile.c -- blockfile round trips and corruption detection.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blockfile.h"
#include "recfmt.h"
#include "../test.h"

#define BIG_LEN ((size_t)1500000)

/* Record i of the test run: a mix of pairs, plain records, empty keys,
 * empty values, and one value over 1 MB.  Bytes are derived from i so the
 * reader can check them. */
static void gen_rec(size_t i, em_rec *r, uint8_t *kb, uint8_t *vb) {
    size_t klen = i % 7 == 3 ? 0 : 1 + i % 13;
    size_t vlen = i % 5 == 0 ? 0 : i % 97;
    if (i == 777) vlen = BIG_LEN;
    for (size_t j = 0; j < klen; j++) kb[j] = (uint8_t)(i * 31 + j);
    for (size_t j = 0; j < vlen; j++) vb[j] = (uint8_t)(i + j * 7);
    r->key = i % 11 == 5 ? NULL : kb;
    r->klen = r->key ? klen : 0;
    r->val = vb;
    r->vlen = vlen;
}

static int same_rec(const em_rec *a, const em_rec *b) {
    if (!a->key != !b->key) return 0;
    if (a->key && (a->klen != b->klen || memcmp(a->key, b->key, a->klen))) return 0;
    return a->vlen == b->vlen && (!a->vlen || !memcmp(a->val, b->val, a->vlen));
}

/* Write n generated records at offset `at` of path; returns the end offset. */
static uint64_t write_run(const char *path, uint64_t at, size_t n, size_t block) {
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    if (fd < 0) return 0;
    bf_writer w;
    uint8_t kb[16], *vb = malloc(BIG_LEN);
    em_rec r;
    bf_writer_init(&w, fd, path, at, 1, block);
    for (size_t i = 0; i < n; i++) {
        gen_rec(i, &r, kb, vb);
        if (bf_write(&w, &r)) { at = 0; goto out; }
    }
    if (bf_flush(&w)) { at = 0; goto out; }
    at = w.records == n ? w.off : 0;
out:
    bf_writer_free(&w);
    free(vb);
    close(fd);
    return at;
}

/* Read the run [off, end) and check it holds the n generated records. */
static int check_run(const char *path, uint64_t off, uint64_t end, size_t n) {
    int fd = open(path, O_RDONLY), rc, ok = 1;
    bf_reader rd;
    uint8_t kb[16], *vb = malloc(BIG_LEN);
    em_rec r, want;
    size_t i = 0;
    bf_reader_init(&rd, fd, path, off, end - off);
    while ((rc = bf_next(&rd, &r)) == 1) {
        gen_rec(i++, &want, kb, vb);
        if (i > n || !same_rec(&r, &want)) { ok = 0; break; }
    }
    if (rc != 0 || i != n) ok = 0;
    bf_reader_free(&rd);
    free(vb);
    close(fd);
    return ok;
}

TEST(blockfile_round_trip) {
    char path[512];
    snprintf(path, sizeof path, "%s/run.blk", test_tmpdir());
    /* Two runs back to back, the first not at offset 0. */
    uint64_t end1 = write_run(path, 100, 20000, 4096);
    CHECK(end1 > 100);
    uint64_t end2 = write_run(path, end1, 1000, 65536);
    CHECK(end2 > end1);
    CHECK(check_run(path, 100, end1, 20000));
    CHECK(check_run(path, end1, end2, 1000));
    /* An empty run reads as empty. */
    CHECK(check_run(path, end1, end1, 0));
}

TEST(blockfile_compresses_blocks) {
    char path[512];
    snprintf(path, sizeof path, "%s/z.blk", test_tmpdir());
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    CHECK(fd >= 0);
    bf_writer w;
    bf_writer_init(&w, fd, path, 0, 1, 65536);
    char v[64];
    memset(v, 'a', sizeof v);
    for (int i = 0; i < 10000; i++) {
        em_rec r = {"key", 3, v, sizeof v};
        CHECK_OK(bf_write(&w, &r));
    }
    CHECK_OK(bf_flush(&w));
    CHECK(w.off < 10000 * 70 / 10); /* repetitive data shrinks a lot */
    CHECK_EQ_I64(w.records, 10000);
    bf_writer_free(&w);
    close(fd);
}

/* Write a small run and return its end offset (0 on failure). */
static uint64_t small_run(const char *path) { return write_run(path, 0, 3000, 2048); }

static int read_all_rc(const char *path, uint64_t end) {
    int fd = open(path, O_RDONLY), rc;
    bf_reader rd;
    em_rec r;
    bf_reader_init(&rd, fd, path, 0, end);
    while ((rc = bf_next(&rd, &r)) == 1) {}
    bf_reader_free(&rd);
    close(fd);
    return rc;
}

static void flip_byte(const char *path, off_t at) {
    int fd = open(path, O_RDWR);
    uint8_t b;
    if (pread(fd, &b, 1, at) == 1) {
        b ^= 0x5a;
        if (pwrite(fd, &b, 1, at) != 1) abort();
    }
    close(fd);
}

TEST(blockfile_crc_mismatch) {
    char path[512];
    snprintf(path, sizeof path, "%s/crc.blk", test_tmpdir());
    uint64_t end = small_run(path);
    CHECK(end > 0);
    /* Find the second block and corrupt a byte of its compressed data. */
    int fd = open(path, O_RDONLY);
    uint8_t h[BF_HEADER];
    CHECK(pread(fd, h, sizeof h, 0) == BF_HEADER);
    close(fd);
    uint64_t second = BF_HEADER + get_u32le(h);
    CHECK(second < end);
    flip_byte(path, (off_t)(second + BF_HEADER + 3));
    CHECK_EQ_I64(read_all_rc(path, end), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), path);
    CHECK_STR_CONTAINS(em_errmsg(), "crc mismatch");
    char at[64];
    snprintf(at, sizeof at, "at offset %llu", (unsigned long long)second);
    CHECK_STR_CONTAINS(em_errmsg(), at);
}

TEST(blockfile_bad_header) {
    char path[512];
    snprintf(path, sizeof path, "%s/hdr.blk", test_tmpdir());
    uint64_t end = small_run(path);
    CHECK(end > 0);
    flip_byte(path, 7); /* raw length's top byte: implausibly large */
    CHECK_EQ_I64(read_all_rc(path, end), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "at offset 0");
    flip_byte(path, 7);
    flip_byte(path, 3); /* compressed length past the run */
    CHECK_EQ_I64(read_all_rc(path, end), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), path);
    flip_byte(path, 3);
    CHECK_EQ_I64(read_all_rc(path, end), 0);
}

TEST(blockfile_truncated) {
    char path[512];
    snprintf(path, sizeof path, "%s/trunc.blk", test_tmpdir());
    uint64_t end = small_run(path);
    CHECK(end > 100);
    CHECK(truncate(path, (off_t)(end - 10)) == 0);
    CHECK_EQ_I64(read_all_rc(path, end), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "truncated");
    CHECK_STR_CONTAINS(em_errmsg(), path);
    /* A run length cutting a block in two is caught as well. */
    CHECK_EQ_I64(read_all_rc(path, end - 20), EM_ECORRUPT);
}

TEST(blockfile_raw_length_checked) {
    /* A block whose header claims a different raw length than it inflates
     * to, with a valid CRC, is rejected. */
    char path[512];
    snprintf(path, sizeof path, "%s/len.blk", test_tmpdir());
    ebuf z = EBUF_INIT;
    const char raw[] = "\x04key\x03val";
    CHECK_OK(bf_compress_block(&z, raw, sizeof raw - 1, 6));
    put_u32le(z.p + 4, get_u32le(z.p + 4) + 1);
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    CHECK_OK(bf_pwrite_all(fd, path, z.p, z.len, 0));
    close(fd);
    CHECK_EQ_I64(read_all_rc(path, z.len), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "raw length");
    /* With the right length it decodes to the one record. */
    put_u32le(z.p + 4, get_u32le(z.p + 4) - 1);
    fd = open(path, O_WRONLY);
    CHECK_OK(bf_pwrite_all(fd, path, z.p, z.len, 0));
    close(fd);
    CHECK_EQ_I64(read_all_rc(path, z.len), 0);
    ebuf_free(&z);
}
