/*
 * test_blockfile.c -- blockfile round trips with every codec (none, zlib,
 * lz4, zstd, prefix) and corruption detection: headers, codec bytes, CRCs, and
 * damage under a valid CRC that the codecs themselves must refuse.
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

/* Every codec a writer may be given, with levels (zlib's and zstd's
 * extremes too, and lz4's accelerations). */
static const bf_codec codecs[] = {
    {BF_LZ4, 0},  {BF_ZSTD, 1},  {BF_ZLIB, 1}, {BF_NONE, 0}, {BF_ZSTD, -7},
    {BF_ZSTD, 19}, {BF_ZLIB, 0}, {BF_ZLIB, 9}, {BF_LZ4, 2},  {BF_LZ4, BF_LZ4_MAX_ACCEL},
    {BF_PREFIX, 0},
};
#define NCODECS (sizeof codecs / sizeof codecs[0])

/* Write n generated records at offset `at` of path with codec; returns the
 * end offset (0 on failure). */
static uint64_t write_run_with(const char *path, uint64_t at, size_t n, size_t block, bf_codec codec) {
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    if (fd < 0) return 0;
    bf_writer w;
    uint8_t kb[16], *vb = malloc(BIG_LEN);
    em_rec r;
    bf_writer_init(&w, fd, path, at, codec, block);
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

static uint64_t write_run(const char *path, uint64_t at, size_t n, size_t block) {
    return write_run_with(path, at, n, block, (bf_codec){BF_LZ4, 0});
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
    for (size_t c = 0; c < NCODECS; c++) {
        unlink(path);
        /* Two runs back to back, the first not at offset 0: many blocks,
         * one of them holding a record of 1.5 MB, and a few large blocks. */
        uint64_t end1 = write_run_with(path, 100, 20000, 4096, codecs[c]);
        CHECK(end1 > 100);
        uint64_t end2 = write_run_with(path, end1, 1000, 65536, codecs[c]);
        CHECK(end2 > end1);
        /* A run of one record, and a writer given none: no block at all. */
        uint64_t end3 = write_run_with(path, end2, 1, 65536, codecs[c]);
        CHECK(end3 > end2 && end3 - end2 < 64);
        CHECK_EQ_I64(write_run_with(path, end3, 0, 65536, codecs[c]), end3);
        if (!check_run(path, 100, end1, 20000) || !check_run(path, end1, end2, 1000) ||
            !check_run(path, end2, end3, 1)) {
            fprintf(stderr, "  codec %s level %d: %s\n", bf_codec_name(codecs[c].id), codecs[c].level, em_errmsg());
            CHECK(0);
        }
        /* An empty run reads as empty. */
        CHECK(check_run(path, end1, end1, 0));
    }
}

/* The codec bytes of the blocks of [0, end) of path into ids (at most
 * max); the number of blocks, or -1 when the blocks do not tile the run.
 * *stored counts the blocks whose compressed length equals the raw one. */
static int block_codecs(const char *path, uint64_t end, uint8_t *ids, int max, int *stored) {
    int fd = open(path, O_RDONLY), n = 0;
    uint64_t at = 0;
    *stored = 0;
    while (fd >= 0 && at < end && n < max) {
        uint8_t h[BF_HEADER];
        if (pread(fd, h, sizeof h, (off_t)at) != BF_HEADER) break;
        ids[n++] = h[8];
        *stored += get_u32le(h) == get_u32le(h + 4);
        at += BF_HEADER + get_u32le(h);
    }
    if (fd >= 0) close(fd);
    return at == end ? n : -1;
}

/* 64-bit xorshift: incompressible bytes. */
static uint64_t xs(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

TEST(blockfile_compresses_blocks) {
    char path[512];
    snprintf(path, sizeof path, "%s/z.blk", test_tmpdir());
    for (size_t c = 0; c < NCODECS; c++) {
        unlink(path);
        int fd = open(path, O_RDWR | O_CREAT, 0644);
        CHECK(fd >= 0);
        bf_writer w;
        bf_writer_init(&w, fd, path, 0, codecs[c], 65536);
        char v[64];
        memset(v, 'a', sizeof v);
        for (int i = 0; i < 10000; i++) {
            em_rec r = {"key", 3, v, sizeof v};
            CHECK_OK(bf_write(&w, &r));
        }
        CHECK_OK(bf_flush(&w));
        CHECK_EQ_I64(w.records, 10000);
        uint64_t end = w.off;
        bf_writer_free(&w);
        close(fd);
        /* Every block names the writer's codec; repetitive data shrinks a
         * lot (zlib at level 0 only stores, so its blocks are stored as
         * codec none). */
        uint8_t ids[64];
        int stored, n = block_codecs(path, end, ids, 64, &stored);
        CHECK(n > 1);
        int shrinks = codecs[c].id != BF_NONE && !(codecs[c].id == BF_ZLIB && codecs[c].level == 0);
        for (int i = 0; i < n; i++) CHECK_EQ_I64(ids[i], shrinks ? codecs[c].id : BF_NONE);
        if (shrinks) CHECK(end < 10000 * 70 / 5);
        else CHECK(end > 10000 * 69);
        CHECK_EQ_I64(stored, shrinks ? 0 : n);
    }
}

/* Blocks a codec would not shrink are stored as they are (codec none), and
 * read back; a run mixes them with compressed blocks. */
TEST(blockfile_incompressible) {
    char path[512];
    snprintf(path, sizeof path, "%s/rand.blk", test_tmpdir());
    uint8_t *v = malloc(1 << 16);
    CHECK(v);
    for (size_t c = 0; c < NCODECS; c++) {
        uint64_t s = 0x9E3779B97F4A7C15ULL;
        for (size_t i = 0; i < (1 << 16) / 8; i++) {
            uint64_t x = xs(&s);
            memcpy(v + 8 * i, &x, 8);
        }
        unlink(path);
        int fd = open(path, O_RDWR | O_CREAT, 0644);
        CHECK(fd >= 0);
        bf_writer w;
        bf_writer_init(&w, fd, path, 0, codecs[c], 4096);
        /* 200 records of random 300-byte values, then 100 without values;
         * keys are random too (taken past the values' bytes). */
        for (int i = 0; i < 300; i++) {
            em_rec r = {v + 60000 + 8 * i, 8, i < 200 ? v + 300 * (size_t)i : (const uint8_t *)"", i < 200 ? 300 : 0};
            CHECK_OK(bf_write(&w, &r));
        }
        CHECK_OK(bf_flush(&w));
        uint64_t end = w.off;
        bf_writer_free(&w);
        close(fd);
        uint8_t ids[64];
        int stored, n = block_codecs(path, end, ids, 64, &stored);
        CHECK(n > 10);
        for (int i = 0; i < n - 1; i++) CHECK_EQ_I64(ids[i], BF_NONE); /* random: never shrinks */
        CHECK(stored >= n - 1);
        /* Read back, record by record. */
        fd = open(path, O_RDONLY);
        bf_reader rd;
        em_rec r;
        bf_reader_init(&rd, fd, path, 0, end);
        int i = 0, rc;
        while ((rc = bf_next(&rd, &r)) == 1) {
            CHECK(r.klen == 8 && !memcmp(r.key, v + 60000 + 8 * i, 8));
            CHECK(r.vlen == (i < 200 ? 300u : 0u) && (!r.vlen || !memcmp(r.val, v + 300 * (size_t)i, 300)));
            i++;
        }
        bf_reader_free(&rd);
        close(fd);
        CHECK_EQ_I64(rc, 0);
        CHECK_EQ_I64(i, 300);
    }
    free(v);
}

/* The raw bytes of n repetitive records (every codec shrinks them). */
static void make_raw(ebuf *raw, int n) {
    for (int i = 0; i < n; i++) {
        char k[32], val[96];
        snprintf(k, sizeof k, "key-%d", i % 50);
        snprintf(val, sizeof val, "value %d of a repetitive run of records, value %d", i, i % 7);
        em_rec r = {k, strlen(k), val, strlen(val)};
        if (ebuf_reserve(raw, rec_encoded_size(&r))) abort();
        raw->len += rec_put(raw->p + raw->len, &r);
    }
}

static void fix_crc(uint8_t *blk) { put_u32le(blk + 9, bf_block_crc(blk, blk + BF_HEADER, get_u32le(blk))); }

static int write_bytes(const char *path, const void *p, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int rc = fd >= 0 ? bf_pwrite_all(fd, path, p, n, 0) : -1;
    if (fd >= 0) close(fd);
    return rc;
}

/* A run whose blocks use every codec in turn reads back whole: the reader
 * follows each block's codec byte and needs no setting. */
TEST(blockfile_mixed_codecs) {
    char path[512];
    snprintf(path, sizeof path, "%s/mixed.blk", test_tmpdir());
    ebuf raw = EBUF_INIT, z = EBUF_INIT;
    make_raw(&raw, 500);
    bf_cctx cx = BF_CCTX_INIT;
    for (size_t c = 0; c < NCODECS; c++) CHECK_OK(bf_compress_block(&z, raw.p, raw.len, codecs[c], c % 2 ? &cx : NULL));
    bf_cctx_free(&cx);
    CHECK_OK(write_bytes(path, z.p, z.len));
    int fd = open(path, O_RDONLY), rc, n = 0;
    bf_reader rd;
    em_rec r;
    bf_reader_init(&rd, fd, path, 0, z.len);
    while ((rc = bf_next(&rd, &r)) == 1) {
        char k[32];
        snprintf(k, sizeof k, "key-%d", n % 500 % 50);
        CHECK(r.klen == strlen(k) && !memcmp(r.key, k, r.klen));
        n++;
    }
    bf_reader_free(&rd);
    close(fd);
    CHECK_EQ_I64(rc, 0);
    CHECK_EQ_I64(n, 500 * (int)NCODECS);
    /* Each block kept its codec. */
    uint8_t ids[16];
    int stored;
    CHECK_EQ_I64(block_codecs(path, z.len, ids, 16, &stored), (int)NCODECS);
    for (size_t c = 0; c < NCODECS; c++)
        CHECK_EQ_I64(ids[c], codecs[c].id == BF_ZLIB && codecs[c].level == 0 ? BF_NONE : codecs[c].id);
    ebuf_free(&raw);
    ebuf_free(&z);
}

TEST(blockfile_bad_codec_refused) {
    ebuf z = EBUF_INIT;
    const char raw[] = "\x04key\x03val";
    CHECK_EQ_I64(bf_compress_block(&z, raw, sizeof raw - 1, (bf_codec){BF_NCODECS, 0}, NULL), EM_EINVAL);
    CHECK_EQ_I64(bf_compress_block(&z, raw, sizeof raw - 1, (bf_codec){BF_ZLIB, 10}, NULL), EM_EINVAL);
    CHECK_EQ_I64(bf_compress_block(&z, raw, sizeof raw - 1, (bf_codec){BF_ZSTD, 23}, NULL), EM_EINVAL);
    CHECK_EQ_I64(bf_compress_block(&z, raw, sizeof raw - 1, (bf_codec){BF_LZ4, BF_LZ4_MAX_ACCEL + 1}, NULL),
                 EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "lz4 acceleration outside 1 to 64");
    CHECK_EQ_I64(bf_compress_block(&z, raw, sizeof raw - 1, (bf_codec){BF_LZ4, -1}, NULL), EM_EINVAL);
    CHECK_EQ_I64(bf_compress_block(&z, raw, sizeof raw - 1, (bf_codec){BF_NONE, 1}, NULL), EM_EINVAL);
    CHECK_EQ_I64(bf_compress_block(&z, raw, sizeof raw - 1, (bf_codec){BF_PREFIX, 1}, NULL), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "a level given to a codec without levels");
    CHECK_EQ_I64(z.len, 0);
    CHECK(bf_codec_id_of("LZ4") == BF_LZ4 && bf_codec_id_of("zstd") == BF_ZSTD && bf_codec_id_of("zlib") == BF_ZLIB &&
          bf_codec_id_of("none") == BF_NONE && bf_codec_id_of("Prefix") == BF_PREFIX && bf_codec_id_of("snappy") < 0 &&
          bf_codec_id_of(NULL) < 0);
    CHECK(!strcmp(bf_codec_name(BF_LZ4), "lz4") && bf_codec_name(BF_NCODECS) == NULL);
    ebuf_free(&z);
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
    flip_byte(path, (off_t)(second + BF_HEADER + 3));
    CHECK_EQ_I64(read_all_rc(path, end), 0);
    /* The CRC covers the header too: a raw length a little off, still
     * plausible, is a mismatch. */
    flip_byte(path, (off_t)(second + 4));
    CHECK_EQ_I64(read_all_rc(path, end), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "crc mismatch");
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
    /* A compressed length no writer makes (over what any codec makes of
     * 256 MiB), inside a sparse file that long: refused from the header,
     * before reading or allocating it. */
    uint8_t h[BF_HEADER];
    int fd = open(path, O_RDWR);
    CHECK(pread(fd, h, sizeof h, 0) == BF_HEADER);
    put_u32le(h, (uint32_t)(BF_MAX_RAW + (BF_MAX_RAW >> 4)));
    CHECK(pwrite(fd, h, sizeof h, 0) == BF_HEADER);
    CHECK(ftruncate(fd, (off_t)(2 * BF_MAX_RAW)) == 0);
    close(fd);
    CHECK_EQ_I64(read_all_rc(path, 2 * BF_MAX_RAW), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "at offset 0: implausible compressed length");
}

/* A codec byte no codec has: refused from the header alone. */
TEST(blockfile_unknown_codec) {
    char path[512];
    snprintf(path, sizeof path, "%s/codec.blk", test_tmpdir());
    uint64_t end = small_run(path);
    CHECK(end > 0);
    int fd = open(path, O_RDWR);
    uint8_t h[BF_HEADER];
    CHECK(pread(fd, h, sizeof h, 0) == BF_HEADER);
    CHECK_EQ_I64(h[8], BF_LZ4);
    uint64_t second = BF_HEADER + get_u32le(h);
    uint8_t bad[] = {BF_NCODECS, 0xff, BF_VALUES | BF_NCODECS}; /* the flag bit aside */
    for (size_t i = 0; i < sizeof bad; i++) {
        CHECK(pwrite(fd, &bad[i], 1, (off_t)(second + 8)) == 1);
        CHECK_EQ_I64(read_all_rc(path, end), EM_ECORRUPT);
        CHECK_STR_CONTAINS(em_errmsg(), path);
        char want[96];
        snprintf(want, sizeof want, "at offset %llu: unknown codec %u", (unsigned long long)second,
                 bad[i] & ~BF_VALUES);
        CHECK_STR_CONTAINS(em_errmsg(), want);
    }
    close(fd);
}

/* One block of codec c over repetitive records, in z. */
static int one_block(ebuf *z, bf_codec c) {
    ebuf raw = EBUF_INIT;
    make_raw(&raw, 400);
    ebuf_reset(z);
    int rc = bf_compress_block(z, raw.p, raw.len, c, NULL);
    ebuf_free(&raw);
    return rc ? rc : z->p[8] == c.id ? 0 : -1;
}

/* 4,000 (int64, int64) records of small counts: front coding shrinks them
 * well below BF_AUTO_PREFIX_PCT. */
static void make_numeric(ebuf *raw) {
    for (int64_t i = 0; i < 4000; i++) {
        uint8_t k[8], v[8];
        em_i64_enc(1000000 + i, k);
        em_i64_enc(i & 15, v);
        em_rec r = {k, 8, v, 8};
        if (rec_append(raw, &r)) abort();
    }
}

/* 4,000 (int64, int64) records of random keys: with small values
 * (vals) front coding takes them past BF_AUTO_PREFIX_PCT and lz4 no
 * further; with random values (!vals) neither reaches BF_AUTO_KEEP_PCT. */
static void make_random(ebuf *raw, int vals) {
    uint64_t x = 88172645463325252ull;
    for (int64_t i = 0; i < 4000; i++) {
        uint8_t k[8], v[8];
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        memcpy(k, &x, 8);
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (vals) em_i64_enc(i, v);
        else memcpy(v, &x, 8);
        em_rec r = {k, 8, v, 8};
        if (rec_append(raw, &r)) abort();
    }
}

/* Append block raw to z with codec c and state cx; its codec byte. */
static int auto_block(ebuf *z, const ebuf *raw, bf_codec c, bf_cctx *cx) {
    size_t at = z->len;
    if (bf_compress_block(z, raw->p, raw->len, c, cx)) return -1;
    return z->p[at + 8];
}

/* The writer's codec auto: numeric records front coded, text that front
 * coding hardly shrinks lz4'd, random keys front coded past the first
 * bar, random bytes stored as they are; with the writer's state kept, the
 * next BF_AUTO_SKIP blocks after a choice other than front coding's first
 * bar take it untried, then the codecs are tried again.  Every block reads
 * back as its records. */
TEST(blockfile_auto_codec) {
    ebuf num = EBUF_INIT, text = EBUF_INIT, z = EBUF_INIT;
    make_numeric(&num);
    make_raw(&text, 400);
    bf_codec a = {BF_AUTO, 2};
    bf_cctx cx = BF_CCTX_INIT;
    CHECK_EQ_I64(auto_block(&z, &num, a, &cx), BF_PREFIX);
    CHECK(z.len < BF_HEADER + num.len * BF_AUTO_PREFIX_PCT / 100);
    CHECK_EQ_I64(auto_block(&z, &text, a, &cx), BF_LZ4);
    for (int i = 0; i < BF_AUTO_SKIP; i++) CHECK_EQ_I64(auto_block(&z, &num, a, &cx), BF_LZ4);
    CHECK_EQ_I64(auto_block(&z, &num, a, &cx), BF_PREFIX);
    CHECK_EQ_I64(auto_block(&z, &text, a, NULL), BF_LZ4);
    CHECK_EQ_I64(auto_block(&z, &num, a, NULL), BF_PREFIX); /* no state: tried each time */
    /* Read back: 1 + 1 + BF_AUTO_SKIP + 1 + 1 + 1 blocks, each its input. */
    bf_reader rd;
    bf_reader_init_mem(&rd, z.p, "auto", 0, z.len);
    const uint8_t *p;
    size_t len;
    int n = 0, rc;
    while ((rc = bf_next_block(&rd, &p, &len)) == 1) {
        const ebuf *want = n == 1 || n == BF_AUTO_SKIP + 3 ? &text : &num;
        CHECK(len == want->len && !memcmp(p, want->p, len));
        n++;
    }
    CHECK_EQ_I64(rc, 0);
    CHECK_EQ_I64(n, BF_AUTO_SKIP + 5);
    CHECK(!strcmp(bf_codec_name(BF_AUTO), "auto") && bf_codec_id_of("AUTO") == BF_AUTO);
    bf_reader_free(&rd);
    /* Random keys: front coded past BF_AUTO_PREFIX_PCT, which the writer
     * keeps untried of lz4; random keys and values: stored as they are,
     * kept too; each choice ends after BF_AUTO_SKIP blocks. */
    ebuf rkeys = EBUF_INIT, noise = EBUF_INIT;
    make_random(&rkeys, 1);
    make_random(&noise, 0);
    bf_cctx_free(&cx);
    cx = (bf_cctx)BF_CCTX_INIT;
    ebuf_reset(&z);
    CHECK_EQ_I64(auto_block(&z, &rkeys, a, &cx), BF_PREFIX);
    CHECK(z.len > BF_HEADER + rkeys.len * BF_AUTO_PREFIX_PCT / 100 &&
          z.len <= BF_HEADER + rkeys.len * BF_AUTO_KEEP_PCT / 100);
    for (int i = 0; i < BF_AUTO_SKIP; i++) CHECK_EQ_I64(auto_block(&z, &rkeys, a, &cx), BF_PREFIX);
    CHECK_EQ_I64(auto_block(&z, &text, a, &cx), BF_LZ4); /* front coding fails: lz4 tried */
    bf_cctx_free(&cx);
    cx = (bf_cctx)BF_CCTX_INIT;
    CHECK_EQ_I64(auto_block(&z, &noise, a, &cx), BF_NONE);
    for (int i = 0; i < BF_AUTO_SKIP; i++) CHECK_EQ_I64(auto_block(&z, &num, a, &cx), BF_NONE);
    CHECK_EQ_I64(auto_block(&z, &num, a, &cx), BF_PREFIX);
    CHECK_EQ_I64(auto_block(&z, &rkeys, a, NULL), BF_PREFIX); /* no state: lz4 tried, and lost */
    CHECK_EQ_I64(auto_block(&z, &noise, a, NULL), BF_NONE);
    bf_reader_init_mem(&rd, z.p, "auto", 0, z.len);
    for (n = 0; (rc = bf_next_block(&rd, &p, &len)) == 1; n++) {
        int k = n - (BF_AUTO_SKIP + 2); /* the index in the second run */
        const ebuf *want = n <= BF_AUTO_SKIP ? &rkeys : n == BF_AUTO_SKIP + 1 ? &text : k == 0 ? &noise
                           : k <= BF_AUTO_SKIP + 1 ? &num : k == BF_AUTO_SKIP + 2 ? &rkeys : &noise;
        CHECK(len == want->len && !memcmp(p, want->p, len));
    }
    CHECK_EQ_I64(rc, 0);
    CHECK_EQ_I64(n, 2 * BF_AUTO_SKIP + 6);
    ebuf_free(&rkeys);
    ebuf_free(&noise);
    CHECK_EQ_I64(bf_codec_check((bf_codec){BF_AUTO, BF_LZ4_MAX_ACCEL + 1}, NULL), -1);
    bf_reader_free(&rd);
    bf_cctx_free(&cx);
    ebuf_free(&num);
    ebuf_free(&text);
    ebuf_free(&z);
}

/* Write block z (CRC recomputed) and read it: the status, with the
 * message in em_errmsg(). */
static int read_block(const char *path, ebuf *z) {
    fix_crc(z->p);
    if (write_bytes(path, z->p, z->len)) return -1000;
    return read_all_rc(path, z->len);
}

/* A codec byte changed to another known codec: the CRC catches it, and
 * with the CRC fixed up, the other codec's decoder refuses the bytes. */
TEST(blockfile_wrong_codec) {
    char path[512];
    snprintf(path, sizeof path, "%s/swap.blk", test_tmpdir());
    ebuf z = EBUF_INIT;
    CHECK_OK(one_block(&z, (bf_codec){BF_LZ4, 0}));
    CHECK_OK(write_bytes(path, z.p, z.len));
    CHECK_EQ_I64(read_all_rc(path, z.len), 0);
    z.p[8] = BF_ZSTD;
    CHECK_OK(write_bytes(path, z.p, z.len));
    CHECK_EQ_I64(read_all_rc(path, z.len), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "crc mismatch");
    CHECK_EQ_I64(read_block(path, &z), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), path);
    CHECK_STR_CONTAINS(em_errmsg(), "zstd: not one zstd frame");
    z.p[8] = BF_ZLIB;
    CHECK_EQ_I64(read_block(path, &z), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "zlib: bad compressed data");
    z.p[8] = BF_NONE; /* stored blocks have equal lengths */
    CHECK_EQ_I64(read_block(path, &z), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "implausible raw length");
    CHECK_OK(one_block(&z, (bf_codec){BF_ZSTD, 1}));
    z.p[8] = BF_LZ4;
    CHECK_EQ_I64(read_block(path, &z), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "lz4: bad compressed data");
    ebuf_free(&z);
}

/* Damaged compressed bytes under a valid CRC: the codec itself must refuse
 * them (a CRC recomputed by whoever damaged them proves nothing). */
TEST(blockfile_corrupt_payload) {
    char path[512];
    snprintf(path, sizeof path, "%s/payload.blk", test_tmpdir());
    ebuf z = EBUF_INIT;
    static const bf_codec c3[] = {{BF_LZ4, 0}, {BF_ZSTD, 1}, {BF_ZLIB, 1}, {BF_PREFIX, 0}};
    static const char *const name[] = {"lz4: ", "zstd: ", "zlib: ", "prefix: "};
    for (int c = 0; c < 4; c++) {
        /* All bytes 0xff: an lz4 literal length running past the input, no
         * zstd magic, no zlib header, a varint that never ends. */
        CHECK_OK(one_block(&z, c3[c]));
        uint32_t zlen = get_u32le(z.p);
        memset(z.p + BF_HEADER, 0xff, zlen);
        CHECK_EQ_I64(read_block(path, &z), EM_ECORRUPT);
        CHECK_STR_CONTAINS(em_errmsg(), path);
        CHECK_STR_CONTAINS(em_errmsg(), "at offset 0");
        CHECK_STR_CONTAINS(em_errmsg(), name[c]);
        /* The last compressed byte cut off. */
        CHECK_OK(one_block(&z, c3[c]));
        put_u32le(z.p, zlen - 1);
        z.len--;
        CHECK_EQ_I64(read_block(path, &z), EM_ECORRUPT);
        CHECK_STR_CONTAINS(em_errmsg(), name[c]);
    }
    /* Inside a well-formed zstd frame: the last byte of the block's
     * sequence bitstream must hold its end mark; zeroed, the decoder
     * itself refuses the block (the frame's structure still checks out). */
    CHECK_OK(one_block(&z, (bf_codec){BF_ZSTD, 1}));
    z.p[z.len - 1] = 0;
    CHECK_EQ_I64(read_block(path, &z), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), path);
    CHECK_STR_CONTAINS(em_errmsg(), "zstd: bad compressed data");
    /* The same for lz4: the final literals' token claims more than there
     * is. */
    CHECK_OK(one_block(&z, (bf_codec){BF_LZ4, 0}));
    z.p[BF_HEADER] |= 0xf0;
    z.p[BF_HEADER + 1] = 0xff;
    z.p[BF_HEADER + 2] = 0xff;
    CHECK_EQ_I64(read_block(path, &z), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "lz4: bad compressed data");
    ebuf_free(&z);
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
    /* A block whose header claims a different raw length than it decodes
     * to, with a valid CRC, is rejected, whatever its codec. */
    char path[512];
    snprintf(path, sizeof path, "%s/len.blk", test_tmpdir());
    ebuf z = EBUF_INIT;
    static const bf_codec c4[] = {{BF_LZ4, 0}, {BF_ZSTD, 1}, {BF_ZLIB, 6}, {BF_NONE, 0}};
    for (int c = 0; c < 4; c++) {
        CHECK_OK(one_block(&z, c4[c]));
        uint32_t rlen = get_u32le(z.p + 4), zlen = get_u32le(z.p);
        put_u32le(z.p + 4, rlen + 1);
        CHECK_EQ_I64(read_block(path, &z), EM_ECORRUPT);
        CHECK_STR_CONTAINS(em_errmsg(), path);
        CHECK_STR_CONTAINS(em_errmsg(), "raw length");
        put_u32le(z.p + 4, rlen - 1);
        CHECK_EQ_I64(read_block(path, &z), EM_ECORRUPT);
        CHECK_STR_CONTAINS(em_errmsg(), "raw length");
        /* Past what the codec can make of zlen bytes: refused from the
         * header, before anything is allocated. */
        if (c4[c].id != BF_NONE) {
            uint32_t ratio = c4[c].id == BF_ZSTD ? 32768 : c4[c].id == BF_LZ4 ? 256 : 1100;
            put_u32le(z.p + 4, zlen * ratio + 65);
            CHECK_EQ_I64(read_block(path, &z), EM_ECORRUPT);
            CHECK_STR_CONTAINS(em_errmsg(), "implausible raw length");
        }
        /* With the right length it decodes to its records. */
        put_u32le(z.p + 4, rlen);
        CHECK_EQ_I64(read_block(path, &z), 0);
    }
    ebuf_free(&z);
}
