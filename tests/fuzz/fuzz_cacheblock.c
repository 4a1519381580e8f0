/*
 * fuzz_cacheblock.c -- reading back blocks cached on disk (EM_DISK_ONLY,
 * EM_MEMORY_AND_DISK past its memory): bs_block_check and bs_get of
 * engine/blockstore.c.
 *
 * Input layout: byte 0 picks a mode (byte % 3), bytes 1-2 its parameters,
 * the rest is the payload.
 *   0  raw: the payload is a block file, checked with no expected length
 *      (byte1 even) or with one near the payload's (byte1 odd: the
 *      payload's length - 24 - 1 + byte2 % 3);
 *   1  sealed: the payload is a block's records region, given a correct
 *      header (magic, version, CRC, length), so that damage reaches the
 *      record check;
 *   2  store round trip: the payload is a list of records (flags: bit 0 has
 *      a key; klen; vlen; bytes), split into up to three chunks, stored
 *      with bs_put(EM_DISK_ONLY) and read back with bs_get; when byte1 is
 *      odd, one bit of the file (bit byte2 % 8 of the byte at a place
 *      picked by byte1 and byte2) is flipped first.
 * Properties: the check never crashes or reads out of bounds; it accepts a
 * file exactly when the header is right (magic "EMBLOCK1", version 1,
 * length = the file's bytes after the header and = the expected one, CRC32
 * of those bytes) and an independent decoder (fz_record) cuts the region
 * into whole records; a refusal is EM_ECORRUPT with a message naming the
 * file.  In mode 2, an intact file reads back as exactly the records
 * written; a file with one flipped bit is never served (CRC32 catches every
 * single-bit error): bs_get returns NULL, the block is dropped from the
 * store and its file removed.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "blockstore.h"
#include "buf.h"
#include "ember.h"
#include "fuzz.h"

#define NAME "fuzzed-block"

/* What the check must decide, from the format's definition. */
static int ref_ok(const uint8_t *p, size_t n, size_t expect) {
    static const char magic[8] = {'E', 'M', 'B', 'L', 'O', 'C', 'K', '1'};
    if (n < BS_HEADER || memcmp(p, magic, 8) || get_u32le(p + 8) != 1) return 0;
    uint64_t len = get_u64le(p + 16);
    if (len != n - BS_HEADER || (expect != SIZE_MAX && len != expect)) return 0;
    if (get_u32le(p + 12) != (uint32_t)crc32(0L, p + BS_HEADER, (uInt)len)) return 0;
    for (size_t at = BS_HEADER, k; at < n; at += k) {
        em_rec r;
        if (!(k = fz_record(p + at, n - at, &r))) return 0;
    }
    return 1;
}

static void check(const uint8_t *p, size_t n, size_t expect) {
    const uint8_t *records = NULL;
    int rc = bs_block_check(p, n, expect, NAME, &records);
    int want = ref_ok(p, n, expect);
    FZ_CHECK(rc == 0 || rc == EM_ECORRUPT, "bs_block_check returned %d", rc);
    FZ_CHECK(want == (rc == 0), "bs_block_check %s a block the format %s: %s", rc ? "refused" : "accepted",
             want ? "allows" : "forbids", rc ? em_errmsg() : "");
    if (rc == 0)
        FZ_CHECK(records == p + BS_HEADER, "records at offset %td", records - p);
    else
        FZ_CHECK(!strncmp(em_errmsg(), "cached block " NAME ": ", strlen("cached block " NAME ": ")),
                 "message \"%s\" does not name the file", em_errmsg());
}

static void mode_raw(const uint8_t *p, size_t n, uint8_t b1, uint8_t b2) {
    size_t expect = SIZE_MAX;
    if ((b1 & 1) && n + (b2 % 3) >= BS_HEADER + 1) expect = n - BS_HEADER - 1 + b2 % 3;
    check(p, n, expect);
}

static void seal(uint8_t *f, const uint8_t *records, size_t len) {
    memcpy(f, "EMBLOCK1", 8);
    put_u32le(f + 8, 1);
    put_u32le(f + 12, (uint32_t)crc32(0L, records, (uInt)len));
    put_u64le(f + 16, len);
    if (len) memcpy(f + BS_HEADER, records, len);
}

static void mode_sealed(const uint8_t *p, size_t n) {
    uint8_t *f = malloc(BS_HEADER + n);
    FZ_CHECK(f != NULL, "out of memory");
    seal(f, p, n);
    check(f, BS_HEADER + n, n);
    free(f);
}

/* The one block file in dir (its path in path), or 0 if there is none. */
static int find_file(const char *dir, char *path, size_t cap) {
    DIR *d = opendir(dir);
    FZ_CHECK(d != NULL, "opendir %s", dir);
    int found = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        FZ_CHECK(!found, "more than one file in %s", dir);
        snprintf(path, cap, "%s/%s", dir, e->d_name);
        found = 1;
    }
    closedir(d);
    return found;
}

static void mode_store(const uint8_t *p, size_t n, uint8_t b1, uint8_t b2) {
    uint8_t *enc = NULL;
    size_t len = 0, cap = 0;
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
        if (vlen > n) vlen = n;
        r.val = p;
        r.vlen = vlen;
        p += vlen;
        n -= vlen;
        fz_record_put(&enc, &len, &cap, &r);
    }
    /* Up to three chunks, cut at b2's places: the CRC runs over all. */
    size_t cut1 = len * (b2 & 15) / 15, cut2 = cut1 + (len - cut1) * (b2 >> 4) / 15;
    size_t lens[3] = {cut1, cut2 - cut1, len - cut2};
    uint8_t *chunks[3];
    size_t at = 0;
    for (int i = 0; i < 3; at += lens[i], i++) {
        FZ_CHECK((chunks[i] = malloc(lens[i] ? lens[i] : 1)) != NULL, "out of memory");
        if (lens[i]) memcpy(chunks[i], enc + at, lens[i]);
    }
    char dir[600], path[900];
    snprintf(dir, sizeof dir, "%s/store", fz_tmpdir());
    FZ_CHECK(mkdir(dir, 0700) == 0, "mkdir %s", dir);
    blockstore *s = bs_new(dir, 1 << 20);
    FZ_CHECK(s != NULL, "bs_new");
    FZ_CHECK(bs_put(s, 1, 7, 3, EM_DISK_ONLY, chunks, lens, 3) == 0, "bs_put: %s", em_errmsg());
    FZ_CHECK(find_file(dir, path, sizeof path), "bs_put(EM_DISK_ONLY) wrote no file");

    int flip = b1 & 1;
    if (flip) {
        at = ((size_t)b1 << 8 | b2) % (BS_HEADER + len);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        uint8_t c;
        FZ_CHECK(fd >= 0 && pread(fd, &c, 1, (off_t)at) == 1, "read %s", path);
        c ^= (uint8_t)(1u << (b2 % 8));
        FZ_CHECK(pwrite(fd, &c, 1, (off_t)at) == 1 && close(fd) == 0, "write %s", path);
    }
    block *b = bs_get(s, 1, 7, 3);
    if (flip) {
        FZ_CHECK(b == NULL, "a block with a flipped bit was served");
        FZ_CHECK(bs_count(s, 1, -1) == 0, "a corrupt block stayed in the store");
        FZ_CHECK(!find_file(dir, path, sizeof path), "a corrupt block's file was left");
    } else {
        FZ_CHECK(b != NULL, "an intact block was not served: %s", em_errmsg());
        size_t got = 0;
        for (int i = 0; i < b->n; i++) got += b->len[i];
        FZ_CHECK(got == len, "%zu bytes of records read back, %zu written", got, len);
        FZ_CHECK(b->n == 1 && (!len || !memcmp(b->p[0], enc, len)), "records read back differ");
        bs_release(s, b);
    }
    bs_free(s);
    FZ_CHECK(!find_file(dir, path, sizeof path), "bs_free left %s", path);
    FZ_CHECK(rmdir(dir) == 0, "rmdir %s", dir);
    free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    const uint8_t *p = data + 3;
    size_t n = size - 3;
    switch (data[0] % 3) {
    case 0: mode_raw(p, n, data[1], data[2]); break;
    case 1: mode_sealed(p, n); break;
    default: mode_store(p, n, data[1], data[2]); break;
    }
    return 0;
}
