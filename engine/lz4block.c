/*
 * lz4block.c -- lz4-java's block stream: the blocks Spark's lz4 codec
 * writes, built with liblz4 and checksummed with libxxhash's XXH32 (see
 * lz4block.h for the layout).
 */
#include <lz4.h>
#include <stdbool.h>
#include <string.h>
#include <xxhash.h>

#include "buf.h"
#include "ember.h"
#include "err.h"
#include "lz4block.h"

uint32_t lz4b_checksum(const void *p, size_t n) { return (uint32_t)XXH32(p, n, LZ4B_SEED) & 0x0FFFFFFFu; }

int lz4b_parse(const uint8_t *h, lz4b_header *out, const char **why) {
    memset(out, 0, sizeof *out);
    if (memcmp(h, "LZ4Block", 8)) {
        *why = "not an lz4 block stream";
        return -1;
    }
    out->method = h[8] & 0xF0;
    out->block_size = (size_t)1 << (10 + (h[8] & 0x0F));
    out->clen = get_u32le(h + 9);
    out->dlen = get_u32le(h + 13);
    out->check = get_u32le(h + 17);
    *why = "a bad lz4 block header";
    if (out->method != LZ4B_RAW && out->method != LZ4B_LZ4) return -1;
    if (out->block_size > LZ4B_MAX_BLOCK || out->dlen > out->block_size) return -1;
    if (out->clen > (size_t)LZ4_compressBound((int)out->block_size)) return -1;
    if ((out->clen == 0) != (out->dlen == 0)) return -1;
    if (out->method == LZ4B_RAW && out->clen != out->dlen) return -1;
    if (out->dlen == 0 && out->check != 0) {
        *why = "an lz4 end mark with a checksum";
        return -1;
    }
    *why = NULL;
    return 0;
}

static int level_of(size_t block_size) {
    int l = 0;
    while (((size_t)1 << (10 + l)) < block_size) l++;
    return l;
}

static void header(uint8_t *h, int method, size_t block_size, size_t clen, size_t dlen, uint32_t check) {
    memcpy(h, "LZ4Block", 8);
    h[8] = (uint8_t)(method | level_of(block_size));
    put_u32le(h + 9, (uint32_t)clen);
    put_u32le(h + 13, (uint32_t)dlen);
    put_u32le(h + 17, check);
}

static bool power_of_two(size_t n) { return n && !(n & (n - 1)); }

int lz4b_put_block(ebuf *out, const void *p, size_t n, size_t block_size) {
    if (!power_of_two(block_size) || block_size < 64 || block_size > LZ4B_MAX_BLOCK || n == 0 || n > block_size)
        return em__seterr(EM_EINVAL, "lz4 block: %zu bytes in blocks of %zu", n, block_size);
    int bound = LZ4_compressBound((int)n);
    if (ebuf_reserve(out, LZ4B_HEADER + (size_t)bound)) return em__seterr(EM_ENOMEM, "lz4 block: out of memory");
    uint8_t *h = out->p + out->len, *data = h + LZ4B_HEADER;
    /* a compressed length of n or more is stored raw instead, so LZ4 gets
     * room for n - 1 bytes and fails when it needs more */
    int c = n > 1 ? LZ4_compress_default(p, (char *)data, (int)n, (int)n - 1) : 0;
    int method = LZ4B_LZ4;
    if (c <= 0) {
        memcpy(data, p, n);
        c = (int)n;
        method = LZ4B_RAW;
    }
    header(h, method, block_size, (size_t)c, n, lz4b_checksum(p, n));
    out->len += LZ4B_HEADER + (size_t)c;
    return 0;
}

int lz4b_put_end(ebuf *out, size_t block_size) {
    if (ebuf_reserve(out, LZ4B_HEADER)) return em__seterr(EM_ENOMEM, "lz4 block: out of memory");
    header(out->p + out->len, LZ4B_RAW, block_size, 0, 0, 0);
    out->len += LZ4B_HEADER;
    return 0;
}
