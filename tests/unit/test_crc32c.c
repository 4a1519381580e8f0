/*
 * test_crc32c.c -- CRC-32C (engine/crc32c.c): the standard check value,
 * the instruction path equal to the table loop over every length, offset
 * and split point that reaches each of its loops, and the block header's
 * checksum being CRC-32C of the header's first 9 bytes and the payload.
 */
#include <stdlib.h>
#include <string.h>

#include "blockfile.h"
#include "crc32c.h"
#include "recfmt.h"
#include "../test.h"

TEST(crc32c_check_values) {
    CHECK(crc32c(0, "123456789", 9) == 0xe3069283u);
    CHECK(crc32c_sw(0, "123456789", 9) == 0xe3069283u);
    CHECK(crc32c(0, "", 0) == 0);
    CHECK(crc32c(0x12345678u, NULL, 0) == 0x12345678u);
    /* RFC 3720's test vector: 32 bytes of zeros. */
    uint8_t z[32] = {0};
    CHECK(crc32c(0, z, sizeof z) == 0x8a9136aau);
}

/* Lengths around the 256-byte and 8 KiB spans (three of each at once),
 * misaligned starts, and a CRC continued at a split point: always the
 * table loop's result. */
TEST(crc32c_matches_table_loop) {
    size_t n = 3 * 8192 * 2 + 3 * 256 + 77;
    uint8_t *b = malloc(n + 16);
    CHECK(b != NULL);
    uint64_t x = 88172645463325252ULL;
    for (size_t i = 0; i < n + 16; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[i] = (uint8_t)x;
    }
    size_t lens[] = {0, 1, 7, 8, 9, 255, 256, 767, 768, 769, 3 * 256 + 8, 8191, 3 * 8192 - 1, 3 * 8192,
                     3 * 8192 + 1, 3 * 8192 + 3 * 256 + 5, n};
    int checked = 0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
        for (size_t off = 0; off < 9; off++) {
            size_t len = lens[li];
            uint32_t want = crc32c_sw(0, b + off, len);
            CHECK(crc32c(0, b + off, len) == want);
            size_t cut = len / 3;
            CHECK(crc32c(crc32c(0, b + off, cut), b + off + cut, len - cut) == want);
            CHECK(crc32c_sw(crc32c_sw(0, b + off, cut), b + off + cut, len - cut) == want);
            checked++;
        }
    CHECK_EQ_I64(checked, 17 * 9);
    free(b);
}

/* A block's stored checksum is CRC-32C of its header's first 9 bytes and
 * its payload, run on as one checksum. */
TEST(crc32c_block_header) {
    uint8_t blk[BF_HEADER + 100];
    for (int i = 0; i < 100; i++) blk[BF_HEADER + i] = (uint8_t)(i * 7 + 1);
    bf_plain_header(blk, 100, 0);
    uint8_t all[9 + 100];
    memcpy(all, blk, 9);
    memcpy(all + 9, blk + BF_HEADER, 100);
    CHECK(get_u32le(blk + 9) == crc32c_sw(0, all, sizeof all));
    CHECK(bf_block_crc(blk, blk + BF_HEADER, 100) == crc32c(0, all, sizeof all));
}
