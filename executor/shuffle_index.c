/*
 * shuffle_index.c -- map output framing: data header and checksummed index
 * (format in shuffle_index.h).
 */
#include <string.h>
#include <zlib.h>

#include "buf.h"
#include "ember.h"
#include "err.h"
#include "shuffle_index.h"

static const char data_magic[8] = {'E', 'M', 'S', 'H', 'D', 'A', 'T', 'A'};
static const char index_magic[8] = {'E', 'M', 'S', 'H', 'I', 'N', 'D', 'X'};

void shuffle_data_header(uint8_t out[SHUFFLE_DATA_HEADER], int nparts) {
    memcpy(out, data_magic, 8);
    put_u32le(out + 8, SHUFFLE_VERSION);
    put_u32le(out + 12, (uint32_t)nparts);
}

void shuffle_index_encode(uint8_t *out, int nparts, const uint64_t *offs) {
    memcpy(out, index_magic, 8);
    put_u32le(out + 8, SHUFFLE_VERSION);
    put_u32le(out + 12, (uint32_t)nparts);
    for (int i = 0; i <= nparts; i++) put_u64le(out + 16 + 8 * (size_t)i, offs[i]);
    size_t body = shuffle_index_size(nparts) - 4;
    put_u32le(out + body, (uint32_t)crc32(0L, out, (uInt)body));
}

uint64_t shuffle_index_offset(const uint8_t *p, int i) { return get_u64le(p + 16 + 8 * (size_t)i); }

int shuffle_index_check(const uint8_t *p, size_t n, uint64_t data_size, const char *path, int *nparts) {
    if (n < shuffle_index_size(0) || memcmp(p, index_magic, 8) != 0)
        return em__seterr(EM_ECORRUPT, "shuffle index %s: not an index file (bad magic or too short: %zu bytes)",
                          path, n);
    uint32_t ver = get_u32le(p + 8), np = get_u32le(p + 12);
    if (ver != SHUFFLE_VERSION)
        return em__seterr(EM_ECORRUPT, "shuffle index %s: format version %u, expected %d", path, ver,
                          SHUFFLE_VERSION);
    if (np == 0 || np > SHUFFLE_MAX_PARTS || n != shuffle_index_size((int)np))
        return em__seterr(EM_ECORRUPT, "shuffle index %s: %zu bytes for %u partitions (expected %zu)", path, n,
                          np, np <= SHUFFLE_MAX_PARTS ? shuffle_index_size((int)np) : 0);
    uint32_t want = get_u32le(p + n - 4), got = (uint32_t)crc32(0L, p, (uInt)(n - 4));
    if (want != got)
        return em__seterr(EM_ECORRUPT, "shuffle index %s: crc mismatch (stored %08x, computed %08x)", path, want,
                          got);
    uint64_t prev = shuffle_index_offset(p, 0);
    if (prev != SHUFFLE_DATA_HEADER)
        return em__seterr(EM_ECORRUPT, "shuffle index %s: first segment starts at %llu, not after the %d-byte data header",
                          path, (unsigned long long)prev, SHUFFLE_DATA_HEADER);
    for (uint32_t i = 1; i <= np; i++) {
        uint64_t o = shuffle_index_offset(p, (int)i);
        if (o < prev)
            return em__seterr(EM_ECORRUPT, "shuffle index %s: offset %u (%llu) is before offset %u (%llu)", path, i,
                              (unsigned long long)o, i - 1, (unsigned long long)prev);
        prev = o;
    }
    if (prev != data_size)
        return em__seterr(EM_ECORRUPT, "shuffle index %s: segments end at %llu but the data file has %llu bytes",
                          path, (unsigned long long)prev, (unsigned long long)data_size);
    *nparts = (int)np;
    return 0;
}

int shuffle_data_header_check(const uint8_t h[SHUFFLE_DATA_HEADER], int nparts, const char *path) {
    if (memcmp(h, data_magic, 8) != 0)
        return em__seterr(EM_ECORRUPT, "shuffle data %s: bad magic", path);
    if (get_u32le(h + 8) != SHUFFLE_VERSION)
        return em__seterr(EM_ECORRUPT, "shuffle data %s: format version %u, expected %d", path, get_u32le(h + 8),
                          SHUFFLE_VERSION);
    if (get_u32le(h + 12) != (uint32_t)nparts)
        return em__seterr(EM_ECORRUPT, "shuffle data %s: header names %u partitions, its index %d", path,
                          get_u32le(h + 12), nparts);
    return 0;
}
