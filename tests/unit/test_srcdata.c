/*
 * test_srcdata.c -- parallelized records (engine/srcdata.c): the encoding,
 * by several threads for many records, equals record-by-record encoding;
 * a bad record is reported by its index whatever the threads do; the table
 * forgets records with their last reference.  And batch_count_recs
 * (engine/batch.c), which counts cached and parallelized batches: the same
 * counts as decoding every record, on fixed-width runs, mixed shapes and
 * every truncation.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "batch.h"
#include "buf.h"
#include "ember.h"
#include "recfmt.h"
#include "srcdata.h"

/* Record i of a mixed set: plain or pair, keys of 0 to 19 bytes and values
 * of 0 to 299 (two-byte lengths past 127), runs of int64 pairs between. */
static em_rec mixed(size_t i, const uint8_t *bytes) {
    em_rec r;
    size_t h = (i * 2654435761u) >> 7;
    if ((i / 1000) % 2 == 0) { /* a run of fixed-width pairs */
        r.key = bytes + i % 64;
        r.klen = 8;
        r.val = bytes + (i + 3) % 64;
        r.vlen = 8;
        return r;
    }
    r.key = h % 3 ? bytes + h % 97 : NULL;
    r.klen = r.key ? h % 20 : 0;
    r.val = bytes + (h >> 5) % 101;
    r.vlen = (h >> 9) % 7 ? (h >> 12) % 24 : (h >> 12) % 300;
    return r;
}

TEST(srcdata_encoding_equals_records) {
    size_t n = 2300000; /* past RECS_PER_THREAD twice: encoded by threads where there are cores */
    static uint8_t bytes[512];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (uint8_t)(i * 37 + 5);
    em_rec *recs = malloc(sizeof *recs * n);
    CHECK(recs);
    for (size_t i = 0; i < n; i++) recs[i] = mixed(i, bytes);
    int parts = 7;
    srcdata *s = src_encode(recs, n, parts);
    CHECK(s);
    uint64_t total = 0;
    for (int p = 0; p < parts; p++) {
        size_t lo = n * (size_t)p / (size_t)parts, hi = n * (size_t)(p + 1) / (size_t)parts;
        ebuf want = EBUF_INIT;
        for (size_t i = lo; i < hi; i++) CHECK_OK(rec_append(&want, &recs[i]));
        src_part sp;
        CHECK_OK(src_get(src_id(s), p, want.len, &sp));
        CHECK(sp.hold == s && sp.own == NULL);
        CHECK_EQ_I64(sp.len, want.len);
        CHECK(memcmp(sp.p, want.p, want.len) == 0);
        CHECK_EQ_I64(src_part_count(s, p), hi - lo);
        CHECK_EQ_I64(batch_count_recs(sp.p, sp.len), hi - lo);
        total += src_part_count(s, p);
        src_part_release(&sp);
        ebuf_free(&want);
    }
    CHECK_EQ_I64(total, n);
    /* Asked wrongly: another length, a partition it does not have. */
    src_part sp;
    CHECK_EQ_I64(src_get(src_id(s), 0, src_part_len(s, 0) + 1, &sp), EM_EPROTO);
    CHECK(sp.p == NULL && sp.hold == NULL);
    CHECK_EQ_I64(src_get(src_id(s), parts, 0, &sp), EM_EPROTO);
    /* A reader keeps the records after the creator let go; the last
     * release forgets them. */
    CHECK_OK(src_get(src_id(s), 3, src_part_len(s, 3), &sp));
    uint64_t id = src_id(s);
    src_release(s);
    CHECK_EQ_I64(batch_count_recs(sp.p, sp.len), n * 4 / 7 - n * 3 / 7);
    src_part_release(&sp);
    CHECK_EQ_I64(src_get(id, 3, 0, &sp), EM_ENOENT);
    CHECK_STR_CONTAINS(em_errmsg(), "are gone");
    free(recs);
}

TEST(srcdata_reports_the_first_bad_record) {
    size_t n = 2200000;
    uint8_t v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    em_rec *recs = malloc(sizeof *recs * n);
    CHECK(recs);
    for (size_t i = 0; i < n; i++) recs[i] = (em_rec){NULL, 0, v, 8};
    recs[2100000].val = NULL; /* in the last partition, which a thread may encode first */
    recs[300001].key = NULL;
    recs[300001].klen = 3;
    CHECK(src_encode(recs, n, 4) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "record 300001 has a NULL pointer");
    recs[300001].klen = 0;
    CHECK(src_encode(recs, n, 4) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "record 2100000 has a NULL pointer");
    free(recs);
}

/* Counting record by record, as rec_get reads them. */
static size_t slow_count(const uint8_t *p, size_t len) {
    size_t n = 0, pos = 0, k;
    em_rec r;
    while (pos < len) {
        if (!(k = rec_get(p + pos, p + len, &r))) return (size_t)-1;
        pos += k;
        n++;
    }
    return n;
}

TEST(batch_count_recs_equals_decoding) {
    static uint8_t bytes[512];
    ebuf b = EBUF_INIT;
    size_t *ends = malloc(sizeof *ends * 6001);
    CHECK(ends);
    for (size_t i = 0; i < 6000; i++) {
        em_rec r = mixed(i, bytes);
        CHECK_OK(rec_append(&b, &r));
        ends[i] = b.len;
    }
    CHECK_EQ_I64(batch_count_recs(b.p, b.len), 6000);
    /* Cut anywhere in the first 2,400 records (fixed-width runs and mixed
     * ones): a record boundary counts the records before it, any other
     * cut is malformed, as for rec_get. */
    size_t e = 0;
    for (size_t cut = 0; cut <= ends[2399]; cut++) {
        while (e < 6000 && ends[e] < cut) e++;
        size_t want = slow_count(b.p, cut);
        CHECK_EQ_I64(batch_count_recs(b.p, cut), want);
        if (e < 6000 && ends[e] == cut) CHECK_EQ_I64(want, e + 1);
    }
    /* A run of one shape broken by a record whose value length has the
     * same first byte but takes two (a 200-byte value after 8-byte ones is
     * 0xc8 0x01; an 8-byte value is 0x08): still counted one by one. */
    ebuf c = EBUF_INIT;
    for (int i = 0; i < 50; i++) {
        em_rec r = {bytes, 8, bytes, i == 20 ? 200 : 8};
        CHECK_OK(rec_append(&c, &r));
    }
    CHECK_EQ_I64(batch_count_recs(c.p, c.len), 50);
    c.p[20 * 18 + 211 + 9] = 0x80; /* record 21's value length byte now starts a longer varint */
    CHECK_EQ_I64(batch_count_recs(c.p, c.len), slow_count(c.p, c.len));
    free(ends);
    ebuf_free(&b);
    ebuf_free(&c);
}
