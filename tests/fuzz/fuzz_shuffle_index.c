/*
 * fuzz_shuffle_index.c -- the checks of a map output's index file and data
 * header (executor/shuffle_index.c).
 *
 * Input layout: byte 0 picks a mode (byte % 4); bytes 1-8 are a u64le data
 * file size (modes 0 and 1); the rest is the payload.
 *   0  raw: the payload is an index file, checked against that size;
 *   1  as 0 after rewriting the payload's last four bytes with the CRC of
 *      the rest, so that damage reaches the checks behind the checksum;
 *   2  round trip: the payload is a list of u16le segment lengths (at most
 *      4096); shuffle_index_encode's output must pass the check against the
 *      sum of the lengths plus the header, giving back every offset, and
 *      fail against any other data size;
 *   3  data header: bytes 1-4 are a u32le partition count; the payload's
 *      first 16 bytes (zero-padded) are a data header.
 * Properties: the checks never crash or read out of bounds; an index they
 * accept satisfies everything shuffle_index.h promises (size for its
 * partition count, first offset at the data header, offsets never
 * decreasing, last offset at the data size, CRC); a data header is
 * accepted exactly when it equals the one shuffle_data_header writes.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "buf.h"
#include "ember.h"
#include "fuzz.h"
#include "shuffle_index.h"

static void check_accepted(const uint8_t *p, size_t n, uint64_t data_size, int nparts) {
    FZ_CHECK(nparts >= 1 && nparts <= SHUFFLE_MAX_PARTS, "accepted %d partitions", nparts);
    FZ_CHECK(n == shuffle_index_size(nparts), "accepted %zu bytes for %d partitions", n, nparts);
    FZ_CHECK(get_u32le(p + n - 4) == (uint32_t)crc32(0L, p, (uInt)(n - 4)), "accepted a bad CRC");
    FZ_CHECK(shuffle_index_offset(p, 0) == SHUFFLE_DATA_HEADER, "first offset not at the header");
    for (int i = 1; i <= nparts; i++)
        FZ_CHECK(shuffle_index_offset(p, i) >= shuffle_index_offset(p, i - 1), "offset %d decreases", i);
    FZ_CHECK(shuffle_index_offset(p, nparts) == data_size, "last offset not at the data size");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 9) return 0;
    int mode = data[0] % 4, nparts = 0;
    uint64_t data_size = get_u64le(data + 1);
    const uint8_t *pl = data + 9;
    size_t n = size - 9;
    if (mode == 0 || mode == 1) {
        uint8_t *p = malloc(n ? n : 1);
        FZ_CHECK(p, "out of memory");
        if (n) memcpy(p, pl, n);
        if (mode == 1 && n >= 4) put_u32le(p + n - 4, (uint32_t)crc32(0L, p, (uInt)(n - 4)));
        int rc = shuffle_index_check(p, n, data_size, "idx", &nparts);
        if (rc == 0) check_accepted(p, n, data_size, nparts);
        else FZ_CHECK(rc == EM_ECORRUPT && strstr(em_errmsg(), "idx"), "rc %d, message %s", rc, em_errmsg());
        free(p);
    } else if (mode == 2) {
        int np = (int)(n / 2);
        if (np < 1 || np > 4096) return 0;
        uint64_t *offs = malloc(((size_t)np + 1) * sizeof *offs);
        uint8_t *p = malloc(shuffle_index_size(np));
        FZ_CHECK(offs && p, "out of memory");
        offs[0] = SHUFFLE_DATA_HEADER;
        for (int i = 0; i < np; i++) offs[i + 1] = offs[i] + (data[9 + 2 * i] | (uint64_t)data[10 + 2 * i] << 8);
        shuffle_index_encode(p, np, offs);
        FZ_CHECK(shuffle_index_check(p, shuffle_index_size(np), offs[np], "idx", &nparts) == 0,
                 "a written index is refused: %s", em_errmsg());
        FZ_CHECK(nparts == np, "nparts %d, wrote %d", nparts, np);
        for (int i = 0; i <= np; i++) FZ_CHECK(shuffle_index_offset(p, i) == offs[i], "offset %d changed", i);
        FZ_CHECK(shuffle_index_check(p, shuffle_index_size(np), offs[np] + 1, "idx", &nparts) == EM_ECORRUPT,
                 "accepted against another data size");
        free(offs);
        free(p);
    } else {
        uint8_t h[SHUFFLE_DATA_HEADER] = {0}, want[SHUFFLE_DATA_HEADER];
        memcpy(h, pl, n < sizeof h ? n : sizeof h);
        int np = (int)(get_u32le(data + 1) % (SHUFFLE_MAX_PARTS + 1));
        shuffle_data_header(want, np);
        int rc = shuffle_data_header_check(h, np, "data");
        FZ_CHECK((rc == 0) == (memcmp(h, want, sizeof h) == 0), "header check %d disagrees", rc);
    }
    return 0;
}
