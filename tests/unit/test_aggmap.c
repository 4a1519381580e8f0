/*
 * test_aggmap.c -- the aggregation table's key comparison: keys of every
 * length from 0 to 20 bytes (the inline compares of 4-7 and 8-16 bytes,
 * and memcmp for the others) that differ from each other in one byte, at
 * any position, are distinct entries, and each is found again.
 */
#include <stdint.h>
#include <string.h>

#include "../test.h"
#include "aggmap.h"

TEST(aggmap_keys_differing_in_one_byte) {
    aggmap m;
    aggmap_init(&m);
    uint8_t key[20];
    size_t idx, n = 0;
    /* For each length: the base key, then one key per position with that
     * byte changed. */
    for (size_t len = 0; len <= 20; len++) {
        memset(key, 'a', sizeof key);
        CHECK_EQ_I64(aggmap_upsert(&m, key, len, &idx), 0);
        CHECK_EQ_I64((int64_t)idx, (int64_t)n++);
        for (size_t at = 0; at < len; at++) {
            key[at] = 'b';
            CHECK_EQ_I64(aggmap_upsert(&m, key, len, &idx), 0);
            CHECK_EQ_I64((int64_t)idx, (int64_t)n++);
            key[at] = 'a';
        }
    }
    /* All of them again, in the same order: found, same entries. */
    size_t want = 0;
    for (size_t len = 0; len <= 20; len++) {
        memset(key, 'a', sizeof key);
        CHECK_EQ_I64(aggmap_upsert(&m, key, len, &idx), 1);
        CHECK_EQ_I64((int64_t)idx, (int64_t)want++);
        for (size_t at = 0; at < len; at++) {
            key[at] = 'b';
            CHECK_EQ_I64(aggmap_upsert(&m, key, len, &idx), 1);
            CHECK_EQ_I64((int64_t)idx, (int64_t)want++);
            key[at] = 'a';
        }
    }
    CHECK_EQ_I64((int64_t)want, (int64_t)n);
    aggmap_free(&m);
}
