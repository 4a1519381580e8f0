/*
 * mapstatus.c -- a map task's compressed segment sizes (see mapstatus.h).
 *
 * The highly compressed form finds a huge segment's byte by binary search
 * over its ascending ids; its bitmap is left out when no segment is empty,
 * and when every one is (then every size is 0): with a bit per partition
 * it is the bulk of the status, 1/64 of the exact sizes.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "ember.h"
#include "mapstatus.h"

#define HC_HEAD 17 /* kind, avg, nhuge, nempty */

uint8_t ms_compress_size(uint64_t size) {
    if (size <= 1) return (uint8_t)size;
    double c = ceil(log((double)size) / log(1.1));
    return c >= 255 ? 255 : (uint8_t)c;
}

/* 1.1^c for every byte, worked out once: every reduce task's description
 * reads a size per map. */
static uint64_t decompressed[256];
static pthread_once_t decompressed_once = PTHREAD_ONCE_INIT;

static void fill_decompressed(void) {
    for (int c = 1; c < 256; c++) decompressed[c] = (uint64_t)pow(1.1, c);
}

uint64_t ms_decompress_size(uint8_t c) {
    pthread_once(&decompressed_once, fill_decompressed);
    return decompressed[c];
}

static int has_bitmap(uint32_t nempty, int nparts) { return nempty && nempty < (uint32_t)nparts; }

static size_t hc_len(uint32_t nhuge, uint32_t nempty, int nparts) {
    return HC_HEAD + 5 * (size_t)nhuge + (has_bitmap(nempty, nparts) ? ((size_t)nparts + 7) / 8 : 0);
}

static int encode_highly(const uint64_t *segs, int n, uint64_t accurate, ebuf *out) {
    uint32_t nhuge = 0, nempty = 0, nsmall = 0;
    unsigned __int128 small = 0; /* sum of the small sizes: may pass 2^64 */
    for (int i = 0; i < n; i++) {
        if (!segs[i]) nempty++;
        else if (segs[i] > accurate) nhuge++;
        else small += segs[i], nsmall++;
    }
    size_t len = hc_len(nhuge, nempty, n);
    if (ebuf_reserve(out, len)) return EM_ENOMEM;
    uint8_t *b = out->p + out->len;
    memset(b, 0, len);
    b[0] = 1;
    put_u64le(b + 1, nsmall ? (uint64_t)(small / nsmall) : 0);
    put_u32le(b + 9, nhuge);
    put_u32le(b + 13, nempty);
    uint8_t *ids = b + HC_HEAD, *bytes = ids + 4 * (size_t)nhuge, *bits = bytes + nhuge;
    int bitmap = has_bitmap(nempty, n);
    uint32_t k = 0;
    for (int i = 0; i < n; i++) {
        if (!segs[i]) {
            if (bitmap) bits[i >> 3] |= (uint8_t)(1u << (i & 7));
        } else if (segs[i] > accurate) {
            put_u32le(ids + 4 * (size_t)k, (uint32_t)i);
            bytes[k++] = ms_compress_size(segs[i]);
        }
    }
    out->len += len;
    return 0;
}

int ms_encode(const uint64_t *segs, int nparts, uint64_t accurate, ebuf *out) {
    if (nparts < 0) nparts = 0;
    if (accurate) return encode_highly(segs, nparts, accurate, out);
    if (ebuf_reserve(out, 1 + (size_t)nparts)) return EM_ENOMEM;
    uint8_t *b = out->p + out->len;
    b[0] = 0;
    for (int i = 0; i < nparts; i++) b[1 + i] = ms_compress_size(segs[i]);
    out->len += 1 + (size_t)nparts;
    return 0;
}

static int bad(const char **why, const char *what) {
    if (why) *why = what;
    return -1;
}

static int popcount8(uint8_t v) { return __builtin_popcount(v); }

int ms_check(const uint8_t *b, size_t len, int nparts, const char **why) {
    if (nparts < 0 || !b || len < 1) return bad(why, "empty map status");
    if (b[0] == 0) return len == 1 + (size_t)nparts ? 0 : bad(why, "map status: not a byte per partition");
    if (b[0] != 1) return bad(why, "map status of an unknown form");
    if (len < HC_HEAD) return bad(why, "map status cut short");
    uint64_t avg = get_u64le(b + 1);
    uint32_t nhuge = get_u32le(b + 9), nempty = get_u32le(b + 13);
    if (nhuge > (uint32_t)nparts || nempty > (uint32_t)nparts || nhuge + nempty > (uint32_t)nparts)
        return bad(why, "map status: more huge and empty segments than partitions");
    if (len != hc_len(nhuge, nempty, nparts)) return bad(why, "map status: length does not match its counts");
    /* a segment neither empty nor huge reads as avg: never as zero */
    if (nhuge + nempty < (uint32_t)nparts && !avg) return bad(why, "map status: non-empty segments of average 0");
    const uint8_t *ids = b + HC_HEAD, *bytes = ids + 4 * (size_t)nhuge, *bits = bytes + nhuge;
    for (uint32_t k = 0; k < nhuge; k++) {
        uint32_t id = get_u32le(ids + 4 * (size_t)k);
        if (id >= (uint32_t)nparts || (k && id <= get_u32le(ids + 4 * (size_t)(k - 1))))
            return bad(why, "map status: huge segments out of order or range");
        if (!bytes[k]) return bad(why, "map status: a huge segment of size 0");
        if (has_bitmap(nempty, nparts) && bits[id >> 3] & (1u << (id & 7)))
            return bad(why, "map status: a huge segment marked empty");
    }
    if (has_bitmap(nempty, nparts)) {
        size_t nb = ((size_t)nparts + 7) / 8;
        uint32_t set = 0;
        for (size_t i = 0; i < nb; i++) set += (uint32_t)popcount8(bits[i]);
        if (nparts & 7 && bits[nb - 1] >> (nparts & 7)) return bad(why, "map status: bits past the last partition");
        if (set != nempty) return bad(why, "map status: empty count does not match its bitmap");
    }
    return 0;
}

uint64_t ms_seg(const uint8_t *b, int nparts, int part) {
    if (part < 0 || part >= nparts) return 0;
    if (b[0] == 0) return ms_decompress_size(b[1 + part]);
    uint32_t nhuge = get_u32le(b + 9), nempty = get_u32le(b + 13);
    if (nempty == (uint32_t)nparts) return 0;
    const uint8_t *ids = b + HC_HEAD, *bytes = ids + 4 * (size_t)nhuge;
    if (has_bitmap(nempty, nparts)) {
        const uint8_t *bits = bytes + nhuge;
        if (bits[part >> 3] & (1u << (part & 7))) return 0;
    }
    uint32_t lo = 0, hi = nhuge;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (get_u32le(ids + 4 * (size_t)mid) < (uint32_t)part) lo = mid + 1;
        else hi = mid;
    }
    if (lo < nhuge && get_u32le(ids + 4 * (size_t)lo) == (uint32_t)part) return ms_decompress_size(bytes[lo]);
    return get_u64le(b + 1);
}
