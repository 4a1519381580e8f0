/*
 * blockfile.c -- runs of records as zlib-compressed, CRC-checked blocks
 * (format in blockfile.h).  Shuffle segments and spilled sorted runs are both
 * runs, so this file is the only place that knows the block layout.
 *
 * Whole blocks are compressed at once (compress2 / uncompress) rather than
 * streamed: a block is the unit of checking, so a reader verifies the CRC of
 * the compressed bytes and the exact raw length before decoding a single
 * record, and a corrupt block is reported with the file offset where it
 * starts.  Files are accessed with pwrite/pread at explicit offsets, so
 * several readers (the runs of one spill file) can share a descriptor.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "blockfile.h"
#include "err.h"
#include "recfmt.h"

/* Deflate never expands data by more than a little, and never shrinks it by
 * more than about 1032:1; a header claiming a wilder ratio is corrupt. */
#define BF_MAX_RATIO 1100

int bf_pwrite_all(int fd, const char *path, const void *p, size_t n, uint64_t off) {
    const uint8_t *b = p;
    while (n) {
        ssize_t k = pwrite(fd, b, n, (off_t)off);
        if (k < 0) {
            if (errno == EINTR) continue;
            return em__seterr(EM_EIO, "shuffle write %s at offset %llu: %s", path,
                              (unsigned long long)off, strerror(errno));
        }
        b += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

/* Read up to n bytes at off, retrying short reads; returns the bytes read
 * (less than n only at end of file) or -1 with errno set. */
static ssize_t pread_full(int fd, void *p, size_t n, uint64_t off) {
    uint8_t *b = p;
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, b + got, n - got, (off_t)(off + got));
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (k == 0) break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

int bf_compress_block(ebuf *z, const void *raw, size_t rlen, int level) {
    if (rlen > BF_MAX_RAW)
        return em__seterr(EM_ETOOBIG, "shuffle block of %zu bytes exceeds the %zu byte limit", rlen,
                          BF_MAX_RAW);
    uLongf zlen = compressBound((uLong)rlen);
    if (ebuf_reserve(z, BF_HEADER + (size_t)zlen)) return em__seterr(EM_ENOMEM, "shuffle block: out of memory");
    uint8_t *h = z->p + z->len;
    int zrc = compress2(h + BF_HEADER, &zlen, raw, (uLong)rlen, level);
    if (zrc != Z_OK) /* only Z_MEM_ERROR is possible with a valid level */
        return em__seterr(zrc == Z_MEM_ERROR ? EM_ENOMEM : EM_EINVAL, "shuffle block: compress2: %s",
                          zError(zrc));
    put_u32le(h, (uint32_t)zlen);
    put_u32le(h + 4, (uint32_t)rlen);
    put_u32le(h + 8, (uint32_t)crc32(0L, h + BF_HEADER, (uInt)zlen));
    z->len += BF_HEADER + (size_t)zlen;
    return 0;
}

/* ------------------------------------------------------------------ writer */

void bf_writer_init(bf_writer *w, int fd, const char *path, uint64_t off, int level, size_t block_bytes) {
    w->fd = fd;
    w->path = path;
    w->off = off;
    w->level = level;
    w->block_bytes = block_bytes ? block_bytes : 65536;
    if (w->block_bytes > BF_MAX_RAW) w->block_bytes = BF_MAX_RAW;
    w->raw = (ebuf)EBUF_INIT;
    w->z = (ebuf)EBUF_INIT;
    w->records = 0;
}

int bf_flush(bf_writer *w) {
    if (!w->raw.len) return 0;
    ebuf_reset(&w->z);
    int rc = bf_compress_block(&w->z, w->raw.p, w->raw.len, w->level);
    if (rc) return rc;
    if ((rc = bf_pwrite_all(w->fd, w->path, w->z.p, w->z.len, w->off))) return rc;
    w->off += w->z.len;
    ebuf_reset(&w->raw);
    return 0;
}

int bf_write(bf_writer *w, const em_rec *r) {
    size_t n = rec_encoded_size(r);
    int rc;
    if (n > BF_MAX_RAW)
        return em__seterr(EM_ETOOBIG, "shuffle write %s: record of %zu bytes exceeds the %zu byte block limit",
                          w->path, n, BF_MAX_RAW);
    /* Keep every block under BF_MAX_RAW so that readers accept it. */
    if (w->raw.len + n > BF_MAX_RAW && (rc = bf_flush(w))) return rc;
    if (ebuf_reserve(&w->raw, n)) return em__seterr(EM_ENOMEM, "shuffle write %s: out of memory", w->path);
    w->raw.len += rec_put(w->raw.p + w->raw.len, r);
    w->records++;
    return w->raw.len >= w->block_bytes ? bf_flush(w) : 0;
}

void bf_writer_free(bf_writer *w) {
    ebuf_free(&w->raw);
    ebuf_free(&w->z);
}

/* ------------------------------------------------------------------ reader */

void bf_reader_init(bf_reader *r, int fd, const char *path, uint64_t off, uint64_t len) {
    r->fd = fd;
    r->path = path;
    r->off = off;
    r->end = off + len;
    r->z = (ebuf)EBUF_INIT;
    r->raw = (ebuf)EBUF_INIT;
    r->pos = 0;
}

static int bad_block(const bf_reader *r, uint64_t at, const char *what) {
    return em__seterr(EM_ECORRUPT, "shuffle block %s at offset %llu: %s", r->path, (unsigned long long)at, what);
}

/* Read and check the block at r->off into r->raw.  0 or < 0. */
static int load_block(bf_reader *r) {
    uint64_t at = r->off, room = r->end - r->off;
    uint8_t h[BF_HEADER];
    ssize_t k;
    if (room < BF_HEADER) return bad_block(r, at, "truncated header");
    if ((k = pread_full(r->fd, h, BF_HEADER, at)) < 0)
        return em__seterr(EM_EIO, "shuffle block %s at offset %llu: %s", r->path, (unsigned long long)at,
                          strerror(errno));
    if (k < BF_HEADER) return bad_block(r, at, "file truncated");
    uint32_t zlen = get_u32le(h), rlen = get_u32le(h + 4), crc = get_u32le(h + 8);
    if (zlen > room - BF_HEADER) return bad_block(r, at, "block runs past the end of the segment");
    if (rlen > BF_MAX_RAW || (uint64_t)rlen > (uint64_t)zlen * BF_MAX_RATIO + 64)
        return bad_block(r, at, "implausible raw length");
    ebuf_reset(&r->z);
    ebuf_reset(&r->raw);
    r->pos = 0;
    if (ebuf_reserve(&r->z, zlen))
        return em__seterr(EM_ENOMEM, "shuffle block %s at offset %llu: out of memory", r->path,
                          (unsigned long long)at);
    if ((k = pread_full(r->fd, r->z.p, zlen, at + BF_HEADER)) < 0)
        return em__seterr(EM_EIO, "shuffle block %s at offset %llu: %s", r->path, (unsigned long long)at,
                          strerror(errno));
    if ((size_t)k < zlen) return bad_block(r, at, "file truncated");
    if ((uint32_t)crc32(0L, r->z.p, zlen) != crc) return bad_block(r, at, "crc mismatch");
    /* Only now, with zlen bytes really read and checked, room for the raw
     * block: a header alone (a truncated file) never sizes an allocation. */
    if (ebuf_reserve(&r->raw, rlen ? rlen : 1))
        return em__seterr(EM_ENOMEM, "shuffle block %s at offset %llu: out of memory", r->path,
                          (unsigned long long)at);
    uLongf out = rlen;
    int zrc = uncompress(r->raw.p, &out, r->z.p, zlen);
    if (zrc == Z_MEM_ERROR)
        return em__seterr(EM_ENOMEM, "shuffle block %s at offset %llu: out of memory", r->path,
                          (unsigned long long)at);
    if (zrc != Z_OK || out != rlen) return bad_block(r, at, "bad compressed data or wrong raw length");
    r->z.len = zlen;
    r->raw.len = rlen;
    r->off = at + BF_HEADER + zlen;
    return 0;
}

int bf_next(bf_reader *r, em_rec *rec) {
    while (r->pos >= r->raw.len) {
        if (r->off >= r->end) return 0;
        int rc = load_block(r);
        if (rc) return rc;
    }
    size_t n = rec_get(r->raw.p + r->pos, r->raw.p + r->raw.len, rec);
    if (!n) /* the block passed its CRC, so its writer encoded it wrongly */
        return bad_block(r, r->off - r->z.len - BF_HEADER, "malformed record");
    r->pos += n;
    return 1;
}

void bf_reader_free(bf_reader *r) {
    ebuf_free(&r->z);
    ebuf_free(&r->raw);
}
