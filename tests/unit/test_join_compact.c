/*
 * test_join_compact.c -- a hash join's build side in the compact table
 * (executor/hashjoin.c: one key width of at most 8 bytes, one value width
 * of at most 8 bytes, a key's one value) gives the records a nested loop
 * gives, for each join kind, whichever table holds the keys: unique 8-byte
 * keys (the one the table marks empty slots with among them), 4-byte keys
 * with empty values beside streamed keys of other widths that share their
 * bytes, and build sides that leave the compact table part way -- a key's
 * second value, a longer value, another key width.  Counted with
 * hashjoin_compact: the build sides that ended compact, and the tables
 * that moved to the general one.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "hashjoin.h"

#define PARTS 3

/* A record as text: key|a|b, bytes in hex, "-" for a missing side. */
static void hex(char *d, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) sprintf(d + 2 * i, "%02x", b[i]);
    d[2 * n] = 0;
}

static char *trip(const void *k, size_t kl, const void *a, size_t al, int ap, const void *b, size_t bl, int bp) {
    char *s = malloc(2 * (kl + al + bl) + 8), *p = s;
    hex(p, k, kl);
    p += strlen(p);
    *p++ = '|';
    if (ap) hex(p, a, al);
    else strcpy(p, "-");
    p += strlen(p);
    *p++ = '|';
    if (bp) hex(p, b, bl);
    else strcpy(p, "-");
    return s;
}

static int str_cmp(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

static em_rdd *join_of(int kind, em_rdd *a, em_rdd *b) {
    switch (kind) {
    case 0: return em_join(a, b, PARTS);
    case 1: return em_left_outer_join(a, b, PARTS);
    case 2: return em_right_outer_join(a, b, PARTS);
    default: return em_full_outer_join(a, b, PARTS);
    }
}

/* Join kind of l and r (the smaller, so the built side) against a nested
 * loop over the same bytes: 1 when every record matches, else 0. */
static int join_matches(em_ctx *c, const em_rec *l, int nl, const em_rec *r, int nr, int kind) {
    size_t cap = 64, nw = 0;
    char **want = malloc(cap * sizeof *want);
    char *rm = calloc((size_t)nr, 1);
    for (int i = 0; i < nl; i++) {
        int hit = 0;
        for (int j = 0; j < nr; j++) {
            if (l[i].klen != r[j].klen || memcmp(l[i].key, r[j].key, l[i].klen)) continue;
            hit = rm[j] = 1;
            if (nw == cap) want = realloc(want, (cap *= 2) * sizeof *want);
            want[nw++] = trip(l[i].key, l[i].klen, l[i].val, l[i].vlen, 1, r[j].val, r[j].vlen, 1);
        }
        if (!hit && (kind & 1)) {
            if (nw == cap) want = realloc(want, (cap *= 2) * sizeof *want);
            want[nw++] = trip(l[i].key, l[i].klen, l[i].val, l[i].vlen, 1, "", 0, 0);
        }
    }
    for (int j = 0; j < nr && kind >= 2; j++)
        if (!rm[j]) {
            if (nw == cap) want = realloc(want, (cap *= 2) * sizeof *want);
            want[nw++] = trip(r[j].key, r[j].klen, "", 0, 0, r[j].val, r[j].vlen, 1);
        }
    free(rm);
    qsort(want, nw, sizeof *want, str_cmp);
    em_rdd *a = em_parallelize(c, l, (size_t)nl, 2), *b = em_parallelize(c, r, (size_t)nr, 2);
    em_batch *out = NULL;
    int ok = a && b && !em_collect(join_of(kind, a, b), &out);
    size_t ng = ok ? em_batch_count(out) : 0, pos = 0, i = 0;
    char **got = malloc((ng + 1) * sizeof *got);
    em_rec o;
    while (ok && em_batch_next(out, &pos, &o) == 1) {
        em_tuple t;
        if (em_tuple_unpack(o.val, o.vlen, &t)) {
            ok = 0;
            break;
        }
        got[i++] = trip(o.key, o.klen, t.a, t.alen, t.a_present, t.b, t.blen, t.b_present);
    }
    em_batch_free(out);
    qsort(got, i, sizeof *got, str_cmp);
    if (ok && i != nw) {
        fprintf(stderr, "  kind %d: %zu records, want %zu\n", kind, i, nw);
        ok = 0;
    }
    for (size_t k = 0; ok && k < nw; k++)
        if (strcmp(got[k], want[k])) {
            fprintf(stderr, "  kind %d: got %s, want %s\n", kind, got[k], want[k]);
            ok = 0;
        }
    for (size_t k = 0; k < i; k++) free(got[k]);
    for (size_t k = 0; k < nw; k++) free(want[k]);
    free(got);
    free(want);
    return ok && nw > 0;
}

#define NL 900
#define NR 300
static uint8_t lk[NL][8], lv[NL][16], rk[NR][8], rv[NR][16];
static em_rec lrec[NL], rrec[NR];

/* Left: NL records, keys k = i % 400 (duplicates, and keys the right
 * lacks), 8-byte values; right: keys 100 + j for j < NR (each once, so
 * keys 100..399 match), 8-byte values.  Keys as little-endian words; key
 * 150 on both sides is the compact table's empty marker. */
static void make_inputs(void) {
    const uint64_t marker = 0x8badf00d5eedf1e5ULL;
    for (int i = 0; i < NL; i++) {
        uint64_t k = (uint64_t)(i % 400), v = 1000000 + (uint64_t)i;
        if (k == 150) k = marker;
        memcpy(lk[i], &k, 8);
        memcpy(lv[i], &v, 8);
        lrec[i] = (em_rec){lk[i], 8, lv[i], 8};
    }
    for (int j = 0; j < NR; j++) {
        uint64_t k = 100 + (uint64_t)j, v = 2000000 + (uint64_t)j;
        if (k == 150) k = marker;
        memcpy(rk[j], &k, 8);
        memcpy(rv[j], &v, 8);
        rrec[j] = (em_rec){rk[j], 8, rv[j], 8};
    }
}

TEST(join_compact_build_side_every_kind) {
    em_ctx *c = em_open("local[2]", NULL);
    CHECK(c);
    make_inputs();
    for (int kind = 0; kind < 4; kind++) {
        uint64_t b0, l0, b1, l1;
        hashjoin_compact(&b0, &l0);
        CHECK(join_matches(c, lrec, NL, rrec, NR, kind));
        hashjoin_compact(&b1, &l1);
        /* The right side is built; inner and left outer joins keep none
         * of its unmatched keys, so it stays compact in every task. */
        if (kind <= 1) CHECK_EQ_I64((int64_t)(b1 - b0), PARTS);
        else CHECK_EQ_I64((int64_t)(b1 - b0), 0);
        CHECK_EQ_I64((int64_t)(l1 - l0), 0);
    }
    em_close(c);
}

TEST(join_compact_build_side_leaves_part_way) {
    em_ctx *c = em_open("local[2]", NULL);
    CHECK(c);
    for (int change = 0; change < 3; change++) {
        make_inputs();
        /* One record of the right, in the middle: a second value for key
         * 120, a 16-byte value, or a 4-byte key. */
        uint64_t dup = 120;
        if (change == 0) memcpy(rk[NR / 2], &dup, 8);
        if (change == 1) rrec[NR / 2].vlen = 16;
        if (change == 2) rrec[NR / 2].klen = 4;
        for (int kind = 0; kind < 2; kind++) {
            uint64_t b0, l0, b1, l1;
            hashjoin_compact(&b0, &l0);
            CHECK(join_matches(c, lrec, NL, rrec, NR, kind));
            hashjoin_compact(&b1, &l1);
            CHECK_EQ_I64((int64_t)(l1 - l0), 1); /* the one task that met it */
            CHECK_EQ_I64((int64_t)(b1 - b0), PARTS - 1);
        }
    }
    em_close(c);
}

/* Keys of 4 bytes with empty values on the built side; the streamed side
 * has 4-byte keys and 8-byte keys whose first 4 bytes are a built key's
 * (they must not match), and 2-byte keys. */
TEST(join_compact_short_keys_empty_values) {
    em_ctx *c = em_open("local[2]", NULL);
    CHECK(c);
    enum { SL = 600, SR = 200 };
    static uint8_t sk[SL][8], sv[SL][8], tk[SR][4];
    static em_rec sl[SL], sr[SR];
    for (int i = 0; i < SL; i++) {
        uint32_t k = (uint32_t)(i % 300);
        uint64_t v = 5000 + (uint64_t)i;
        memset(sk[i], 0, 8);
        memcpy(sk[i], &k, 4);
        memcpy(sv[i], &v, 8);
        sl[i] = (em_rec){sk[i], (size_t)(i % 3 == 0 ? 8 : i % 3 == 1 ? 4 : 2), sv[i], 8};
    }
    for (int j = 0; j < SR; j++) {
        uint32_t k = (uint32_t)(50 + j);
        memcpy(tk[j], &k, 4);
        sr[j] = (em_rec){tk[j], 4, "", 0};
    }
    for (int kind = 0; kind < 2; kind++) {
        uint64_t b0, l0, b1, l1;
        hashjoin_compact(&b0, &l0);
        CHECK(join_matches(c, sl, SL, sr, SR, kind));
        hashjoin_compact(&b1, &l1);
        CHECK_EQ_I64((int64_t)(b1 - b0), PARTS);
        CHECK_EQ_I64((int64_t)(l1 - l0), 0);
    }
    em_close(c);
}
