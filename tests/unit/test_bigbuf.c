/*
 * test_bigbuf.c -- big buffers: growth keeps the bytes, bb_shrink gives
 * back the memory past the length (whole huge pages for a mapping, to the
 * cache), and a freed mapping is handed to the next big buffer from the
 * cache.
 */
#include <stdint.h>
#include <string.h>

#include "../test.h"
#include "bigbuf.h"
#include "ember.h"

static int pattern_ok(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != (uint8_t)(i * 131 + 7)) return 0;
    return 1;
}

static void fill(uint8_t *p, size_t from, size_t to) {
    for (size_t i = from; i < to; i++) p[i] = (uint8_t)(i * 131 + 7);
}

TEST(bigbuf_grow_shrink_reuse) {
    bb_trim(); /* an empty cache, whatever ran before in this process */
    ebuf b = {0};
    /* Grow from a heap buffer to a mapping and on, bytes kept. */
    size_t n = 0;
    while (n < ((size_t)5 << 20)) {
        CHECK_OK(bb_reserve(&b, 300000));
        fill(b.p, n, n + 300000);
        n += 300000;
        b.len = n;
    }
    CHECK(b.cap >= n && b.cap >= BB_MIN);
    CHECK(pattern_ok(b.p, n));
    /* Shrink: whole huge pages past the length go, to the cache, where
     * the next big buffer takes them with their pages (no fresh bytes). */
    size_t cap0 = b.cap, f0, t0, f1, t1;
    b.len = ((size_t)3 << 20) + 1;
    bb_shrink(&b);
    CHECK_EQ_I64((int64_t)b.cap, (int64_t)(4 << 20));
    CHECK(pattern_ok(b.p, b.len));
    bb_counts(&f0, &t0);
    ebuf tail = {0};
    CHECK_OK(bb_reserve(&tail, cap0 - b.cap));
    bb_counts(&f1, &t1);
    CHECK(tail.p == b.p + b.cap);
    CHECK_EQ_I64((int64_t)(f1 - f0), 0);
    CHECK_EQ_I64((int64_t)(t1 - t0), 1);
    memset(tail.p, 0xee, tail.cap); /* its own memory: b's bytes stay */
    CHECK(pattern_ok(b.p, b.len));
    bb_free(&tail);
    bb_trim();
    /* Freed, it waits in the cache, and the next big buffer takes it. */
    uint8_t *was = b.p;
    bb_free(&b);
    CHECK(b.p == NULL && b.cap == 0);
    ebuf c = {0};
    CHECK_OK(bb_reserve(&c, (size_t)3 << 20));
    CHECK(c.p == was);
    CHECK_EQ_I64((int64_t)c.cap, (int64_t)(4 << 20));
    bb_free(&c);
    /* A heap buffer shrinks to its length. */
    ebuf s = {0};
    CHECK_OK(bb_reserve(&s, 1000));
    fill(s.p, 0, 10);
    s.len = 10;
    bb_shrink(&s);
    CHECK_EQ_I64((int64_t)s.cap, 10);
    CHECK(pattern_ok(s.p, 10));
    bb_free(&s);
    bb_trim();
}

/* A buffer becoming a mapping takes no cached mapping over BB_WASTE times
 * its size (a big buffer will want it), and one that asks for a size at
 * once takes a cached mapping of that size whole. */
TEST(bigbuf_small_buffers_leave_big_mappings) {
    bb_trim();
    ebuf big = {0}, small = {0}, again = {0};
    CHECK_OK(bb_reserve(&big, (size_t)40 << 20));
    uint8_t *was = big.p;
    bb_free(&big); /* 40 MiB waits in the cache */
    size_t f0, t0, f1, t1;
    bb_counts(&f0, &t0);
    CHECK_OK(bb_reserve(&small, (size_t)3 << 20)); /* 4 MiB: a new mapping */
    bb_counts(&f1, &t1);
    CHECK(small.p != was);
    CHECK_EQ_I64((int64_t)(f1 - f0), 4 << 20);
    CHECK_EQ_I64((int64_t)(t1 - t0), 0);
    CHECK_OK(bb_reserve(&again, (size_t)38 << 20)); /* the 40 MiB one */
    bb_counts(&f0, &t0);
    CHECK(again.p == was);
    CHECK_EQ_I64((int64_t)again.cap, 40 << 20);
    CHECK_EQ_I64((int64_t)f0, (int64_t)f1);
    CHECK_EQ_I64((int64_t)(t0 - t1), 1);
    bb_free(&small);
    bb_free(&again);
    bb_trim();
}
