/*
 * fuzz_blockfile.c -- reading runs of compressed, CRC-checked blocks
 * (executor/blockfile.c): shuffle segments and spilled sorted runs.
 *
 * Input layout: byte 0 picks a mode (byte % 4), bytes 1-2 its parameters,
 * the rest is the payload.
 *   0  raw: the payload is the file; the run read is [off, off + len) with
 *      off = byte1 * size / 255 and len reaching the end of the file, or,
 *      when byte2 is odd, byte2 bytes past it;
 *   1  as 0, after setting the CRC of every block header found walking the
 *      file, so that damage reaches the codecs' decoders (zlib, lz4, zstd,
 *      prefix: the codec byte of each header is the fuzzer's) and the
 *      record decoder;
 *   2  blocks: the payload is a list of raw blocks (u16le length, bytes),
 *      each compressed by bf_compress_block_flags with the codec byte1 picks
 *      (codec_of below: every codec, with levels, and auto, whose blocks
 *      are front coded or lz4's) and, when the length's
 *      top bit is set, the flag BF_VALUES: the file is well formed, the
 *      records inside are the fuzzer's;
 *   3  round trip: the payload is a list of records (flags: bit 0 has a
 *      key, bit 1 a long value; klen; vlen), written with bf_write (block
 *      size 1 + byte1 * 8, the codec byte2 picks) and flushed.
 * Properties: bf_next returns records and then 0, or EM_ECORRUPT / EM_EIO
 * with a message naming the file and an offset; never crashes; never
 * allocates more than a small multiple of what the file could hold (the
 * header's raw length is bounded by the compressed length times the most
 * any codec expands, BF_MAX_RATIO).  In mode 2 every block names the codec
 * it was given, or none with equal lengths when that codec did not shrink
 * it, and carries the flag it was given; the records are exactly those an independent decoder finds in the raw
 * blocks, and the run fails exactly where that decoder finds a malformed
 * record; in mode 3 the records read back are those written, in order.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blockfile.h"
#include "ember.h"
#include "fuzz.h"

static int same_rec(const em_rec *a, const em_rec *b) {
    if (!a->key != !b->key || a->klen != b->klen || a->vlen != b->vlen) return 0;
    if (a->klen && memcmp(a->key, b->key, a->klen)) return 0;
    return !a->vlen || !memcmp(a->val, b->val, a->vlen);
}

/* ---------------------------------------------------------- reading */

/* Expected records, or NULL when any are acceptable. */
typedef struct want {
    em_rec *v;
    size_t n;
    int fails; /* the run must end in EM_ECORRUPT after the n records */
} want;

/* Read the run r was set up for, checking the properties. */
static void check_run(bf_reader *rd, const char *path, uint64_t fsize, const want *w) {
    bf_reader r = *rd;
    em_rec rec;
    size_t got = 0;
    int rc;
    while ((rc = bf_next(&r, &rec)) == 1) {
        const uint8_t *k = rec.key, *v = rec.val, *end = r.rp + r.rlen;
        FZ_CHECK(!k || (k >= r.rp && rec.klen <= r.rlen && k + rec.klen <= end), "record key out of its block");
        FZ_CHECK(rec.vlen <= r.rlen && (!rec.vlen || (v >= r.rp && v + rec.vlen <= end)),
                 "record value out of its block");
        if (w) {
            FZ_CHECK(got < w->n, "record %zu is one too many", got);
            FZ_CHECK(same_rec(&rec, &w->v[got]), "record %zu differs", got);
        }
        got++;
    }
    /* A raw block is at most BF_MAX_RATIO times its compressed bytes
     * (+64), and buffers grow at most to twice what they need. */
    FZ_CHECK(r.z.cap <= 2 * fsize + 512 && r.raw.cap <= 2 * (fsize * BF_MAX_RATIO + 64) + 512,
             "buffers of %zu and %zu bytes for a %llu byte file", r.z.cap, r.raw.cap, (unsigned long long)fsize);
    if (rc) {
        FZ_CHECK(rc == EM_ECORRUPT || rc == EM_EIO, "bf_next returned %d: %s", rc, em_errmsg());
        FZ_CHECK(!strncmp(em_errmsg(), "shuffle block ", 14) && strstr(em_errmsg(), path) &&
                     strstr(em_errmsg(), " at offset "),
                 "message \"%s\" does not name the file and offset", em_errmsg());
    }
    if (w) {
        FZ_CHECK(got == w->n, "%zu records read, %zu expected", got, w->n);
        FZ_CHECK(w->fails ? rc == EM_ECORRUPT : rc == 0, "run ended with %d (%s), expected %s", rc, em_errmsg(),
                 w->fails ? "EM_ECORRUPT" : "0");
    }
    bf_reader_free(&r);
}

/* The run [off, off + len) of the file at path, read from the file, then
 * from a copy of its bytes in memory (as map outputs local[N] keeps), in a
 * buffer of exactly the file's size so that reading past it is caught (a
 * run in memory never reaches past its bytes: len is cut there). */
static void read_run(const char *path, uint64_t off, uint64_t len, uint64_t fsize, const want *w) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    FZ_CHECK(fd >= 0, "open %s", path);
    bf_reader r;
    bf_reader_init(&r, fd, path, off, len);
    check_run(&r, path, fsize, w);
    uint8_t *m = malloc(fsize ? fsize : 1);
    FZ_CHECK(m != NULL, "out of memory");
    FZ_CHECK(pread(fd, m, fsize, 0) == (ssize_t)fsize, "read %s", path);
    close(fd);
    uint64_t mlen = off >= fsize ? 0 : len < fsize - off ? len : fsize - off;
    bf_reader_init_mem(&r, m, path, off, mlen);
    check_run(&r, path, fsize, mlen == len ? w : NULL);
    free(m);
}

/* ------------------------------------------------------------ modes */

/* The codec a parameter byte picks: byte % (BF_NCODECS + 1) the codec (the
 * last: the writer's BF_AUTO), the rest a level it takes (zlib 0 to 9,
 * zstd -7 to 22, auto's acceleration 0 to 3). */
static bf_codec codec_of(uint8_t b) {
    int k = b % (BF_NCODECS + 1), v = b / (BF_NCODECS + 1);
    bf_codec c = {(uint8_t)(k == BF_NCODECS ? BF_AUTO : k), 0};
    if (c.id == BF_AUTO) c.level = (int8_t)(v % 4);
    if (c.id == BF_ZLIB) c.level = (int8_t)(v % 10);
    if (c.id == BF_ZSTD) c.level = (int8_t)(BF_ZSTD_MIN_LEVEL + v % (BF_ZSTD_MAX_LEVEL - BF_ZSTD_MIN_LEVEL + 1));
    return c;
}

static void mode_raw(const uint8_t *p, size_t n, uint8_t b1, uint8_t b2, int fix_crc) {
    uint8_t *f = malloc(n ? n : 1);
    FZ_CHECK(f != NULL, "out of memory");
    if (n) memcpy(f, p, n);
    if (fix_crc) {
        size_t at = 0;
        while (n - at >= BF_HEADER) {
            uint32_t zlen = get_u32le(f + at);
            if (zlen > n - at - BF_HEADER) break;
            put_u32le(f + at + 9, bf_block_crc(f + at, f + at + BF_HEADER, zlen));
            at += BF_HEADER + zlen;
        }
    }
    const char *path = fz_write_file("run", f, n);
    uint64_t off = (uint64_t)b1 * n / 255, len = n - off + (b2 & 1 ? b2 : 0);
    read_run(path, off, len, n, NULL);
    free(f);
}

static void mode_blocks(const uint8_t *p, size_t n, uint8_t b1) {
    ebuf file = EBUF_INIT;
    bf_codec codec = codec_of(b1);
    bf_cctx cx = BF_CCTX_INIT;
    want w = {NULL, 0, 0};
    size_t cap = 0;
    int stop = 0; /* the reference found a malformed record: later blocks are never read */
    while (n >= 2) {
        size_t len = (size_t)(p[0] | p[1] << 8) % 4096;
        unsigned flags = p[1] & BF_VALUES;
        p += 2;
        n -= 2;
        if (len > n) len = n;
        size_t at0 = file.len;
        FZ_CHECK(bf_compress_block_flags(&file, p, len, codec, b1 & 0x80 ? &cx : NULL, flags) == 0,
                 "bf_compress_block: %s", em_errmsg());
        const uint8_t *h = file.p + at0;
        FZ_CHECK(get_u32le(h + 4) == len && file.len - at0 == BF_HEADER + get_u32le(h), "block lengths");
        uint8_t id = h[8] & (uint8_t)~BF_VALUES;
        FZ_CHECK((h[8] & BF_VALUES) == flags, "block flags %u, given %u", h[8] & BF_VALUES, flags);
        FZ_CHECK(id == codec.id || (codec.id == BF_AUTO && (id == BF_PREFIX || id == BF_LZ4)) ||
                     (id == BF_NONE && get_u32le(h) == len),
                 "block of codec %u, given %u", id, codec.id);
        for (size_t at = 0; at < len && !stop;) {
            em_rec r;
            size_t k = fz_record(p + at, len - at, &r);
            if (!k) {
                w.fails = stop = 1;
                break;
            }
            /* Views into the input, which outlives the reading. */
            if (w.n == cap) {
                cap = cap ? cap * 2 : 64;
                w.v = realloc(w.v, cap * sizeof *w.v);
                FZ_CHECK(w.v != NULL, "out of memory");
            }
            w.v[w.n++] = r;
            at += k;
        }
        p += len;
        n -= len;
    }
    const char *path = fz_write_file("run", file.p, file.len);
    read_run(path, 0, file.len, file.len, &w);
    free(w.v);
    ebuf_free(&file);
    bf_cctx_free(&cx);
}

static void mode_round_trip(const uint8_t *p, size_t n, uint8_t b1, uint8_t b2) {
    static uint8_t zeros[70000]; /* long values' bytes */
    want w = {NULL, 0, 0};
    size_t cap = 0;
    while (n >= 3) {
        em_rec r;
        uint8_t fl = p[0];
        size_t klen = p[1], vlen = p[2];
        p += 3;
        n -= 3;
        if (klen > n) klen = n;
        r.key = fl & 1 ? p : NULL;
        r.klen = fl & 1 ? klen : 0;
        p += r.klen;
        n -= r.klen;
        if (fl & 2) {
            r.val = zeros;
            r.vlen = vlen * 256 + (fl >> 2);
        } else {
            if (vlen > n) vlen = n;
            r.val = p;
            r.vlen = vlen;
            p += vlen;
            n -= vlen;
        }
        if (w.n == cap) {
            cap = cap ? cap * 2 : 64;
            w.v = realloc(w.v, cap * sizeof *w.v);
            FZ_CHECK(w.v != NULL, "out of memory");
        }
        w.v[w.n++] = r;
    }
    const char *path = fz_write_file("run", "", 0);
    char pathcopy[512];
    snprintf(pathcopy, sizeof pathcopy, "%s", path);
    int fd = open(pathcopy, O_WRONLY | O_CLOEXEC);
    FZ_CHECK(fd >= 0, "open %s", pathcopy);
    bf_writer bw;
    bf_writer_init(&bw, fd, pathcopy, 0, codec_of(b2), 1 + (size_t)b1 * 8);
    for (size_t i = 0; i < w.n; i++) FZ_CHECK(bf_write(&bw, &w.v[i]) == 0, "bf_write: %s", em_errmsg());
    FZ_CHECK(bf_flush(&bw) == 0, "bf_flush: %s", em_errmsg());
    FZ_CHECK(bw.records == w.n, "writer counted %llu records of %zu", (unsigned long long)bw.records, w.n);
    uint64_t end = bw.off;
    FZ_CHECK(end == (uint64_t)lseek(fd, 0, SEEK_END), "the run does not end at the end of the file");
    bf_writer_free(&bw);
    close(fd);
    read_run(pathcopy, 0, end, end, &w);
    free(w.v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    const uint8_t *p = data + 3;
    size_t n = size - 3;
    switch (data[0] % 4) {
    case 0: mode_raw(p, n, data[1], data[2], 0); break;
    case 1: mode_raw(p, n, data[1], data[2], 1); break;
    case 2: mode_blocks(p, n, data[1]); break;
    default: mode_round_trip(p, n, data[1], data[2]); break;
    }
    return 0;
}
