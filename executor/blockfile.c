/*
 * blockfile.c -- runs of records as compressed, CRC-checked blocks (format
 * in blockfile.h).  Shuffle segments and spilled sorted runs are both runs,
 * so this file is the only place that knows the block layout, and the one
 * seam behind which the codecs (zlib, lz4, zstd, none) live.
 *
 * Whole blocks are compressed at once (the libraries' one-shot block
 * functions) rather than streamed: a block is the unit of checking, so a
 * reader verifies the header, the CRC of the header and the compressed
 * bytes, and the exact raw length before decoding a single record, and a
 * corrupt block is reported with the file offset where it starts.  Nothing
 * in a header is trusted before it is checked: an unknown codec or a raw
 * length past what the codec can produce from that many bytes is refused
 * before anything is allocated, and the codec's decoder is given exactly
 * the raw length as its output space, so data that would decode to more or
 * less is refused too.  Files are accessed with pwrite/pread at explicit
 * offsets, so several readers (the runs of one spill file) can share a
 * descriptor.
 *
 * The checksum is CRC-32C (crc32c.h: SSE4.2's crc32 instruction, about
 * twice zlib's crc32).  Over compressed bytes either is a small part of a
 * block's cost; but the outputs local[N] keeps in memory are uncompressed
 * blocks, checksummed when written and when read, where the checksum is a
 * large part of a reduce_by_key's time.  It covers the header's first 9 bytes too, so a
 * changed codec byte or length is a CRC mismatch even where it still
 * looks plausible.
 */
#include <errno.h>
#include <lz4.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "blockfile.h"
#include "crc32c.h"
#include "err.h"
#include "prefixcodec.h"
#include "recfmt.h"

/* The most raw bytes per compressed byte each codec produces (plus 64), so
 * a header claiming more is corrupt: deflate shrinks at most about 1032:1,
 * an lz4 block 255:1, a zstd frame 32768:1 (BF_MAX_RATIO); none stores the
 * raw bytes as they are.  Front coding has no bound of its own (a long key
 * repeated takes 4 bytes a record), so its writer stores a block that
 * would pass BF_MAX_RATIO as it is. */
static const uint32_t max_ratio[BF_NCODECS] = {1, 1100, 256, BF_MAX_RATIO, BF_MAX_RATIO};

void bf_cctx_free(bf_cctx *cx) {
    ZSTD_freeCCtx(cx->zstd); /* accepts NULL */
    cx->zstd = NULL;
}

uint32_t bf_block_crc(const uint8_t *h, const uint8_t *z, size_t zlen) {
    return crc32c(crc32c(0, h, 9), z, zlen);
}

void bf_plain_header(uint8_t *h, size_t rlen, unsigned flags) {
    put_u32le(h, (uint32_t)rlen);
    put_u32le(h + 4, (uint32_t)rlen);
    h[8] = (uint8_t)(BF_NONE | (flags & BF_VALUES));
    put_u32le(h + 9, bf_block_crc(h, h + BF_HEADER, rlen));
}

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

/* Room the codec may need for rlen raw bytes (at least rlen: a block that
 * does not shrink is stored as it is). */
static size_t bound_of(int id, size_t rlen) {
    size_t b = rlen;
    if (id == BF_AUTO) id = BF_LZ4; /* prefix's try takes at most rlen */
    if (id == BF_ZLIB) b = (size_t)compressBound((uLong)rlen);
    else if (id == BF_LZ4) b = (size_t)LZ4_compressBound((int)rlen);
    else if (id == BF_ZSTD) b = ZSTD_compressBound(rlen);
    return b > rlen ? b : rlen;
}

/* Compress raw[0, rlen) with c into out (cap bytes): 0 with *zlen set, or
 * < 0 with the message set. */
static int encode(bf_codec c, bf_cctx *cx, const uint8_t *raw, size_t rlen, uint8_t *out, size_t cap,
                  size_t *zlen) {
    switch (c.id) {
    case BF_ZLIB: {
        uLongf n = (uLongf)cap;
        int zrc = compress2(out, &n, raw, (uLong)rlen, c.level);
        if (zrc != Z_OK) /* only Z_MEM_ERROR is possible with a valid level */
            return em__seterr(zrc == Z_MEM_ERROR ? EM_ENOMEM : EM_EINVAL, "shuffle block: compress2: %s",
                              zError(zrc));
        *zlen = (size_t)n;
        return 0;
    }
    case BF_LZ4: {
        /* rlen <= BF_MAX_RAW, far below LZ4_MAX_INPUT_SIZE; with the bound
         * as room it cannot fail.  The level is the acceleration (0 is
         * lz4's default, 1: LZ4_compress_default). */
        int n = LZ4_compress_fast((const char *)raw, (char *)out, (int)rlen, (int)cap, c.level > 1 ? c.level : 1);
        if (n <= 0) return em__seterr(EM_EINVAL, "shuffle block: LZ4_compress_fast failed on %zu bytes", rlen);
        *zlen = (size_t)n;
        return 0;
    }
    case BF_PREFIX:
        /* Room for rlen bytes only (cap may be a whole arena's): 0 when
         * the records would not shrink (or were not records), and the
         * encoder stops as soon as it knows; the block is then stored as
         * it is below. */
        *zlen = prefix_encode(raw, rlen, out, cap < rlen ? cap : rlen);
        if (!*zlen) *zlen = rlen;
        return 0;
    case BF_ZSTD: {
        size_t n;
        if (cx) {
            if (!cx->zstd && !(cx->zstd = ZSTD_createCCtx()))
                return em__seterr(EM_ENOMEM, "shuffle block: out of memory");
            n = ZSTD_compressCCtx(cx->zstd, out, cap, raw, rlen, c.level);
        } else {
            n = ZSTD_compress(out, cap, raw, rlen, c.level);
        }
        if (ZSTD_isError(n))
            return em__seterr(ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation ? EM_ENOMEM : EM_EINVAL,
                              "shuffle block: zstd: %s", ZSTD_getErrorName(n));
        *zlen = n;
        return 0;
    }
    default:
        if (rlen) memcpy(out, raw, rlen);
        *zlen = rlen;
        return 0;
    }
}

/* BF_AUTO (codec.h): front coding when it takes the block to at most
 * BF_AUTO_PREFIX_PCT percent of rlen; else lz4 when it beats front
 * coding's result (which stops past BF_AUTO_KEEP_PCT) by
 * BF_AUTO_LZ4_GAIN_PCT percent; else front coding's result, or the
 * block as it is when neither reaches BF_AUTO_KEEP_PCT.  A writer with
 * state (cx) keeps a choice other than front coding for the next
 * BF_AUTO_SKIP blocks untried.  *id is the codec chosen. */
static int encode_auto(bf_codec c, bf_cctx *cx, const uint8_t *raw, size_t rlen, uint8_t *out, size_t cap,
                       size_t *zlen, uint8_t *id) {
    bf_codec lz4 = {BF_LZ4, c.level};
    int held = cx && cx->auto_skip > 0 ? cx->auto_kept : -1; /* a choice kept, untried */
    if (held >= 0) {
        cx->auto_skip--;
        if (held == BF_LZ4) {
            *id = BF_LZ4;
            return encode(lz4, cx, raw, rlen, out, cap, zlen);
        }
        if (held == BF_NONE) {
            *id = BF_NONE;
            *zlen = rlen;
            if (rlen) memcpy(out, raw, rlen);
            return 0;
        }
    }
    size_t keep = rlen * BF_AUTO_KEEP_PCT / 100, n = keep ? prefix_encode(raw, rlen, out, keep) : 0, z = 0;
    if (n && (n <= rlen * BF_AUTO_PREFIX_PCT / 100 || held == BF_PREFIX)) {
        *id = BF_PREFIX;
        *zlen = n;
        return 0;
    }
    int rc = encode(lz4, cx, raw, rlen, out, cap, &z);
    if (rc) return rc;
    uint8_t kept = !n ? (z <= keep ? BF_LZ4 : BF_NONE) : z * 100 <= n * (100 - BF_AUTO_LZ4_GAIN_PCT) ? BF_LZ4 : BF_PREFIX;
    if (cx) {
        cx->auto_kept = kept;
        cx->auto_skip = BF_AUTO_SKIP;
    }
    *id = kept;
    if (kept == BF_LZ4) {
        *zlen = z;
    } else if (kept == BF_PREFIX) { /* lz4 wrote over it: coded again */
        *zlen = prefix_encode(raw, rlen, out, keep);
    } else {
        *zlen = rlen;
        if (rlen) memcpy(out, raw, rlen);
    }
    return 0;
}

size_t bf_block_bound(bf_codec c, size_t rlen) { return BF_HEADER + bound_of(c.id, rlen); }

int bf_compress_block(ebuf *z, const void *raw, size_t rlen, bf_codec c, bf_cctx *cx) {
    return bf_compress_block_flags(z, raw, rlen, c, cx, 0);
}

int bf_compress_block_flags(ebuf *z, const void *raw, size_t rlen, bf_codec c, bf_cctx *cx, unsigned flags) {
    const char *why;
    if (bf_codec_check(c, &why))
        return em__seterr(EM_EINVAL, "shuffle block: %s (codec %u, level %d)", why, c.id, c.level);
    if (rlen > BF_MAX_RAW)
        return em__seterr(EM_ETOOBIG, "shuffle block of %zu bytes exceeds the %zu byte limit", rlen,
                          BF_MAX_RAW);
    if (ebuf_reserve(z, BF_HEADER + bound_of(c.id, rlen)))
        return em__seterr(EM_ENOMEM, "shuffle block: out of memory");
    uint8_t *h = z->p + z->len;
    size_t zlen = 0, cap = z->cap - z->len - BF_HEADER;
    uint8_t id = c.id;
    int rc = id == BF_AUTO ? encode_auto(c, cx, raw, rlen, h + BF_HEADER, cap, &zlen, &id)
                           : encode(c, cx, raw, rlen, h + BF_HEADER, cap, &zlen);
    if (rc) return rc;
    /* Did not shrink, or shrank past what readers accept: stored as it
     * is, and readers skip decoding. */
    if (id != BF_NONE && (zlen >= rlen || rlen > (uint64_t)zlen * max_ratio[id] + 64)) {
        if (rlen) memcpy(h + BF_HEADER, raw, rlen);
        zlen = rlen;
        id = BF_NONE;
    }
    put_u32le(h, (uint32_t)zlen);
    put_u32le(h + 4, (uint32_t)rlen);
    h[8] = (uint8_t)(id | (flags & BF_VALUES));
    put_u32le(h + 9, bf_block_crc(h, h + BF_HEADER, zlen));
    z->len += BF_HEADER + zlen;
    return 0;
}

/* ------------------------------------------------------------------ writer */

void bf_writer_init(bf_writer *w, int fd, const char *path, uint64_t off, bf_codec codec, size_t block_bytes) {
    w->fd = fd;
    w->path = path;
    w->off = off;
    w->codec = codec;
    w->cx = (bf_cctx)BF_CCTX_INIT;
    w->block_bytes = block_bytes ? block_bytes : 65536;
    if (w->block_bytes > BF_MAX_RAW) w->block_bytes = BF_MAX_RAW;
    w->raw = (ebuf)EBUF_INIT;
    w->z = (ebuf)EBUF_INIT;
    w->records = 0;
}

int bf_flush(bf_writer *w) {
    if (!w->raw.len) return 0;
    ebuf_reset(&w->z);
    int rc = bf_compress_block(&w->z, w->raw.p, w->raw.len, w->codec, &w->cx);
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
    bf_cctx_free(&w->cx);
}

/* ------------------------------------------------------------------ reader */

void bf_reader_init(bf_reader *r, int fd, const char *path, uint64_t off, uint64_t len) {
    r->fd = fd;
    r->mem = NULL;
    r->path = path;
    r->off = off;
    r->end = off + len;
    r->block = off;
    r->z = (ebuf)EBUF_INIT;
    r->raw = (ebuf)EBUF_INIT;
    r->rp = NULL;
    r->rlen = 0;
    r->pos = 0;
    r->flags = 0;
    r->zstd = NULL;
}

void bf_reader_init_mem(bf_reader *r, const uint8_t *base, const char *path, uint64_t off, uint64_t len) {
    bf_reader_init(r, -1, path, off, len);
    r->mem = base;
}

void bf_reader_move_mem(bf_reader *r, const uint8_t *base, uint64_t off, uint64_t len) {
    r->mem = base;
    r->off = r->block = off;
    r->end = off + len;
    r->rp = NULL;
    r->rlen = 0;
    r->pos = 0;
}

static int bad_block(const bf_reader *r, uint64_t at, const char *what) {
    return em__seterr(EM_ECORRUPT, "shuffle block %s at offset %llu: %s", r->path, (unsigned long long)at, what);
}

static int no_memory(const bf_reader *r, uint64_t at) {
    return em__seterr(EM_ENOMEM, "shuffle block %s at offset %llu: out of memory", r->path, (unsigned long long)at);
}

/* Read n bytes at off into p: 0, or EM_EIO / EM_ECORRUPT (file shorter
 * than its run says). */
static int read_at(const bf_reader *r, uint64_t at, void *p, size_t n, uint64_t off) {
    if (r->mem) { /* within the run: load_block checked the lengths */
        memcpy(p, r->mem + off, n);
        return 0;
    }
    ssize_t k = pread_full(r->fd, p, n, off);
    if (k < 0)
        return em__seterr(EM_EIO, "shuffle block %s at offset %llu: %s", r->path, (unsigned long long)at,
                          strerror(errno));
    return (size_t)k < n ? bad_block(r, at, "file truncated") : 0;
}

/* Decode the checked compressed bytes z[0, zlen) of codec id into exactly
 * rlen bytes at out.  0, EM_ECORRUPT or EM_ENOMEM. */
static int decode(bf_reader *r, uint64_t at, int id, const uint8_t *z, size_t zlen, uint8_t *out, size_t rlen) {
    switch (id) {
    case BF_ZLIB: {
        uLongf n = (uLongf)rlen;
        int zrc = uncompress(out, &n, z, (uLong)zlen);
        if (zrc == Z_MEM_ERROR) return no_memory(r, at);
        if (zrc != Z_OK || n != rlen) return bad_block(r, at, "zlib: bad compressed data or wrong raw length");
        return 0;
    }
    case BF_LZ4:
        /* Safe against any input: it never writes past rlen nor reads past
         * zlen, and fails unless the data is one well-formed block. */
        if (LZ4_decompress_safe((const char *)z, (char *)out, (int)zlen, (int)rlen) != (int)rlen)
            return bad_block(r, at, "lz4: bad compressed data or wrong raw length");
        return 0;
    case BF_ZSTD: {
        /* Exactly one frame of the current format: no skippable or legacy
         * frames, nothing after it. */
        if (zlen < 4 || get_u32le(z) != ZSTD_MAGICNUMBER || ZSTD_findFrameCompressedSize(z, zlen) != zlen)
            return bad_block(r, at, "zstd: not one zstd frame");
        if (!r->zstd && !(r->zstd = ZSTD_createDCtx())) return no_memory(r, at);
        size_t n = ZSTD_decompressDCtx(r->zstd, out, rlen, z, zlen);
        if (ZSTD_isError(n) && ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation) return no_memory(r, at);
        if (ZSTD_isError(n) || n != rlen) return bad_block(r, at, "zstd: bad compressed data or wrong raw length");
        return 0;
    }
    case BF_PREFIX:
        if (prefix_decode(z, zlen, out, rlen)) return bad_block(r, at, "prefix: bad records or wrong raw length");
        return 0;
    }
    return 0; /* none: read straight into out */
}

/* Read and check the block at r->off into r->raw.  0 or < 0. */
static int load_block(bf_reader *r) {
    uint64_t at = r->off, room = r->end - r->off;
    uint8_t h[BF_HEADER];
    char what[64];
    int rc;
    if (room < BF_HEADER) return bad_block(r, at, "truncated header");
    if ((rc = read_at(r, at, h, BF_HEADER, at))) return rc;
    uint32_t zlen = get_u32le(h), rlen = get_u32le(h + 4), crc = get_u32le(h + 9);
    uint8_t id = h[8] & (uint8_t)~BF_VALUES;
    if (id >= BF_NCODECS) {
        snprintf(what, sizeof what, "unknown codec %u", id);
        return bad_block(r, at, what);
    }
    if (zlen > room - BF_HEADER) return bad_block(r, at, "block runs past the end of the segment");
    /* No writer makes more of BF_MAX_RAW bytes (and the decoders take
     * lengths as int). */
    if (zlen > bound_of(id, BF_MAX_RAW)) return bad_block(r, at, "implausible compressed length");
    if (rlen > BF_MAX_RAW || (uint64_t)rlen > (uint64_t)zlen * max_ratio[id] + 64 || (id == BF_NONE && rlen != zlen))
        return bad_block(r, at, "implausible raw length");
    ebuf_reset(&r->z);
    ebuf_reset(&r->raw);
    r->rlen = 0;
    r->pos = 0;
    r->block = at;
    r->flags = h[8] & BF_VALUES;
    /* Blocks stored as they are are read straight into raw, or in memory
     * used where they lie; compressed blocks in memory are decoded where
     * they lie. */
    const uint8_t *zp;
    if (r->mem) {
        zp = r->mem + at + BF_HEADER;
    } else {
        ebuf *zb = id == BF_NONE ? &r->raw : &r->z;
        if (ebuf_reserve(zb, zlen ? zlen : 1)) return no_memory(r, at);
        if ((rc = read_at(r, at, zb->p, zlen, at + BF_HEADER))) return rc;
        zp = zb->p;
    }
    if (bf_block_crc(h, zp, zlen) != crc) return bad_block(r, at, "crc mismatch");
    if (id == BF_NONE) {
        if (!r->mem) r->raw.len = rlen;
        r->off = at + BF_HEADER + zlen;
        r->rp = zp;
        r->rlen = rlen;
        return 0;
    }
    /* Only now, with zlen bytes really read and checked, room for the raw
     * block: a header alone (a truncated file) never sizes an allocation. */
    if (ebuf_reserve(&r->raw, rlen ? rlen : 1)) return no_memory(r, at);
    if ((rc = decode(r, at, id, zp, zlen, r->raw.p, rlen))) return rc;
    r->off = at + BF_HEADER + zlen;
    r->raw.len = rlen;
    r->rp = r->raw.p;
    r->rlen = rlen;
    return 0;
}

int bf_next(bf_reader *r, em_rec *rec) {
    while (r->pos >= r->rlen) {
        if (r->off >= r->end) return 0;
        int rc = load_block(r);
        if (rc) return rc;
    }
    size_t n = rec_get(r->rp + r->pos, r->rp + r->rlen, rec);
    if (!n) /* the block passed its CRC, so its writer encoded it wrongly */
        return bad_block(r, r->block, "malformed record");
    r->pos += n;
    return 1;
}

int bf_next_block(bf_reader *r, const uint8_t **p, size_t *len) {
    while (r->pos >= r->rlen) {
        if (r->off >= r->end) return 0;
        int rc = load_block(r);
        if (rc) return rc;
    }
    *p = r->rp + r->pos;
    *len = r->rlen - r->pos;
    r->pos = r->rlen;
    return 1;
}

void bf_reader_free(bf_reader *r) {
    ebuf_free(&r->z);
    ebuf_free(&r->raw);
    ZSTD_freeDCtx(r->zstd); /* accepts NULL */
    r->zstd = NULL;
}
