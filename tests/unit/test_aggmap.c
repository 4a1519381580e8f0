/*
 * test_aggmap.c -- the aggregation table's key comparison: keys of every
 * length from 0 to 20 bytes (up to 16 compared as shortkey.h's two words,
 * longer ones with memcmp) that differ from each other in one byte, at
 * any position, are distinct entries, and each is found again, by
 * its bytes and (up to 16 bytes) by its shortkey.h words.
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
    /* The same keys of up to SK_MAX bytes as shortkey.h's words: each is
     * found, as the same entry; its words hash as em_hash and store back
     * as its bytes. */
    want = 0;
    for (size_t len = 0; len <= 20; len++) {
        memset(key, 'a', sizeof key);
        for (size_t at = 0; at <= len; at++) {
            if (at) key[at - 1] = 'b';
            if (len > SK_MAX) {
                want++;
            } else {
                uint64_t a, b, h;
                uint8_t back[SK_MAX + 1];
                sk_load(key, len, &a, &b);
                h = sk_hash(a, b, len);
                CHECK(h == em_hash(key, len));
                memset(back, 0xee, sizeof back);
                sk_store(back, len, a, b);
                CHECK(!memcmp(back, key, len) && back[len] == 0xee);
                CHECK_EQ_I64(aggmap_find_short(&m, a, b, len, h, &idx), 1);
                CHECK_EQ_I64((int64_t)idx, (int64_t)want++);
            }
            if (at) key[at - 1] = 'a';
        }
    }
    CHECK_EQ_I64((int64_t)want, (int64_t)n);
    aggmap_free(&m);
}

/* A table reserved for K keys takes them without a rehash (its slots and
 * indices stay where they are), keeps their insertion order, then grows
 * past them; a reserve after first use changes nothing. */
TEST(aggmap_reserve_sizes_once) {
    enum { K = 20000 };
    aggmap m;
    aggmap_init(&m);
    CHECK_OK(aggmap_reserve(&m, K));
    const am_slot *slots = m.slots;
    size_t mask = m.mask, idx;
    CHECK(m.cap >= K);
    for (uint32_t i = 0; i < 2 * K; i++) {
        if (i == K) {
            CHECK(m.slots == slots && m.mask == mask);
            CHECK_OK(aggmap_reserve(&m, 8 * K));
            CHECK(m.mask == mask);
        }
        CHECK_EQ_I64(aggmap_upsert(&m, &i, sizeof i, &idx), 0);
        CHECK_EQ_I64((int64_t)idx, (int64_t)i);
    }
    CHECK(m.mask > mask);
    for (uint32_t i = 0; i < 2 * K; i++) {
        em_rec r;
        aggmap_get(&m, i, &r);
        uint32_t k;
        memcpy(&k, r.key, 4);
        CHECK(r.klen == 4 && k == i);
    }
    aggmap_free(&m);
}
