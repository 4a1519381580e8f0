/*
 * test_cache_room.c -- records laid out where the cache keeps them
 * (cache_room, engine/emit.h): kept without a copy, their bytes carried over
 * when the room grows (the cache's buffer passing 2 MiB becomes a mapping,
 * which moves as it grows), and the ordinary emit when nothing is cached.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "buf.h"
#include "cache_room.h"
#include "ember.h"
#include "emit.h"

/* Record i has len_of(i) bytes (up to about 3 MB), byte k byte_at(i, k). */
static size_t len_of(int64_t i) { return (size_t)(i * 300001 % 3000000) + 1; }
static uint8_t byte_at(int64_t i, size_t k) { return (uint8_t)(i * 31 + (int64_t)k * 7); }

/* Record i built in two steps where the cache keeps it: a room for its
 * first half, filled, then the room grown to the whole record with that
 * half carried over.  Without a cache, in a buffer of its own. */
static int roomy(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t i = em_i64_dec(in->val);
    size_t n = len_of(i), hdr = 1 + varint_len(n), half = n / 2;
    uint8_t *at, *ours = NULL;
    int rc = cache_room(out, hdr + half, 0, &at);
    if (rc) return rc;
    if (!at && !(at = ours = malloc(hdr + n))) return em_fail("out of memory");
    for (size_t k = 0; k < half; k++) at[hdr + k] = byte_at(i, k);
    if (!ours && (rc = cache_room(out, hdr + n, hdr + half, &at))) return rc;
    if (!ours && !at) return em_fail("the room left the cache");
    for (size_t k = half; k < n; k++) at[hdr + k] = byte_at(i, k);
    rc = em_emit(out, at + hdr, n);
    free(ours);
    return rc;
}

/* The n records of r, in order, each as roomy made it: the count of those
 * that are right. */
static int64_t right_records(em_rdd *r, int64_t n) {
    em_batch *b = NULL;
    if (em_collect(r, &b)) return -1;
    int64_t ok = 0;
    for (int64_t i = 0; i < n && (size_t)i < em_batch_count(b); i++) {
        em_rec rec;
        if (em_batch_get(b, (size_t)i, &rec) || rec.key || rec.vlen != len_of(i)) continue;
        const uint8_t *v = rec.val;
        size_t k = 0;
        while (k < rec.vlen && v[k] == byte_at(i, k)) k++;
        ok += k == rec.vlen;
    }
    em_batch_free(b);
    return ok;
}

TEST(cache_room_keeps_records_in_place) {
    em_ctx *c = em_open("local[2]", NULL);
    CHECK(c);
    em_rdd *src = em_range(c, 0, 24, 1, 3);
    em_rdd *m = em_map(src, roomy, NULL, 0);
    CHECK(m);
    em_cache(m);
    uint64_t k0 = cache_room_kept();
    CHECK_EQ_I64(right_records(m, 24), 24);
    CHECK_EQ_I64((int64_t)(cache_room_kept() - k0), 24); /* every record kept in place */
    /* Read back from the cache: the same bytes, nothing kept again. */
    CHECK_EQ_I64(right_records(m, 24), 24);
    CHECK_EQ_I64((int64_t)(cache_room_kept() - k0), 24);
    /* Not cached: no room, the records emitted as usual. */
    em_rdd *u = em_map(src, roomy, NULL, 0);
    CHECK(u);
    CHECK_EQ_I64(right_records(u, 24), 24);
    CHECK_EQ_I64((int64_t)(cache_room_kept() - k0), 24);
    em_rdd_release(u);
    em_rdd_release(m);
    em_close(c);
}
