/*
 * test_join.c -- joins computed as hash joins (executor/hashjoin.h): the
 * four kinds against a nested loop, whichever input is built, over shuffled
 * and co-partitioned inputs; the streamed input's order; the fall back to
 * the sort-based cogroup past the memory budget.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

/* One joined record as numbers: key, then each side's value or MISSING. */
#define MISSING INT64_MIN
typedef struct trip { int64_t k, a, b; } trip;

static int cmp_trip(const void *x, const void *y) {
    const trip *p = x, *q = y;
    if (p->k != q->k) return p->k < q->k ? -1 : 1;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    if (p->b != q->b) return p->b < q->b ? -1 : 1;
    return 0;
}

/* n pairs (key, value): keys from an LCG in [lo, lo + span), values
 * base + i (distinct). */
static em_rec *make_pairs(size_t n, uint64_t seed, int64_t lo, int64_t span, int64_t base, uint8_t (*kv)[16]) {
    em_rec *r = calloc(n, sizeof *r);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        em_i64_enc(lo + (int64_t)((seed >> 33) % (uint64_t)span), kv[i]);
        em_i64_enc(base + (int64_t)i, kv[i] + 8);
        r[i] = (em_rec){kv[i], 8, kv[i] + 8, 8};
    }
    return r;
}

/* The join of kind (0 inner, 1 left, 2 right, 3 full) by nested loops. */
static trip *nested_join(const em_rec *l, size_t nl, const em_rec *r, size_t nr, int kind, size_t *n) {
    size_t cap = 1024, m = 0;
    trip *t = malloc(cap * sizeof *t);
    char *rmatched = calloc(nr ? nr : 1, 1);
    for (size_t i = 0; i < nl; i++) {
        int hit = 0;
        for (size_t j = 0; j < nr; j++) {
            if (memcmp(l[i].key, r[j].key, 8)) continue;
            hit = rmatched[j] = 1;
            if (m == cap) t = realloc(t, (cap *= 2) * sizeof *t);
            t[m++] = (trip){em_i64_dec(l[i].key), em_i64_dec(l[i].val), em_i64_dec(r[j].val)};
        }
        if (!hit && (kind == 1 || kind == 3)) {
            if (m == cap) t = realloc(t, (cap *= 2) * sizeof *t);
            t[m++] = (trip){em_i64_dec(l[i].key), em_i64_dec(l[i].val), MISSING};
        }
    }
    for (size_t j = 0; j < nr && (kind == 2 || kind == 3); j++)
        if (!rmatched[j]) {
            if (m == cap) t = realloc(t, (cap *= 2) * sizeof *t);
            t[m++] = (trip){em_i64_dec(r[j].key), MISSING, em_i64_dec(r[j].val)};
        }
    free(rmatched);
    qsort(t, m, sizeof *t, cmp_trip);
    *n = m;
    return t;
}

/* The records of j as sorted triples; NULL on a failure or a malformed
 * record. */
static trip *collect_trips(em_rdd *j, size_t *n) {
    em_batch *b;
    if (em_collect(j, &b)) return NULL;
    *n = em_batch_count(b);
    trip *t = malloc((*n + 1) * sizeof *t);
    size_t pos = 0, i = 0;
    em_rec r;
    while (em_batch_next(b, &pos, &r) == 1) {
        em_tuple tp;
        if (r.klen != 8 || em_tuple_unpack(r.val, r.vlen, &tp) || (tp.a_present && tp.alen != 8) ||
            (tp.b_present && tp.blen != 8)) {
            free(t);
            em_batch_free(b);
            return NULL;
        }
        t[i++] = (trip){em_i64_dec(r.key), tp.a_present ? em_i64_dec(tp.a) : MISSING,
                        tp.b_present ? em_i64_dec(tp.b) : MISSING};
    }
    em_batch_free(b);
    qsort(t, *n, sizeof *t, cmp_trip);
    return t;
}

static em_rdd *join_of(int kind, em_rdd *a, em_rdd *b, int parts) {
    switch (kind) {
    case 0: return em_join(a, b, parts);
    case 1: return em_left_outer_join(a, b, parts);
    case 2: return em_right_outer_join(a, b, parts);
    default: return em_full_outer_join(a, b, parts);
    }
}

/* Every kind, with the larger input on the left and then on the right (so
 * each side is built), and over inputs already partitioned alike (no
 * shuffle under the join: input 1 is built): the records a nested loop
 * gives, no more, no fewer.  Keys 0..299 on the left, 250..399 on the
 * right, with duplicates on both sides. */
TEST(join_hash_every_kind_matches_nested_loop) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    static uint8_t kbig[3000][16], ksmall[700][16];
    em_rec *big = make_pairs(3000, 7, 0, 300, 1000000, kbig);
    em_rec *small = make_pairs(700, 11, 250, 150, 2000000, ksmall);
    em_rdd *rbig = em_parallelize(c, big, 3000, 4), *rsmall = em_parallelize(c, small, 700, 3);
    CHECK(rbig && rsmall);
    em_rdd *pbig = em_partition_by(rbig, 5), *psmall = em_partition_by(rsmall, 5);
    CHECK(pbig && psmall);
    for (int order = 0; order < 3; order++) {
        int swap = order == 1;
        em_rdd *a = order == 2 ? pbig : swap ? rsmall : rbig, *b = order == 2 ? psmall : swap ? rbig : rsmall;
        const em_rec *la = swap ? small : big, *lb = swap ? big : small;
        size_t na = swap ? 700 : 3000, nb = swap ? 3000 : 700;
        for (int kind = 0; kind < 4; kind++) {
            size_t nw, ng;
            trip *want = nested_join(la, na, lb, nb, kind, &nw);
            trip *got = collect_trips(join_of(kind, a, b, order == 2 ? 5 : 4), &ng);
            CHECK(got != NULL);
            if (ng != nw) fprintf(stderr, "  order %d kind %d: %zu records, want %zu\n", order, kind, ng, nw);
            CHECK_EQ_I64(ng, nw);
            CHECK(memcmp(got, want, nw * sizeof *want) == 0);
            CHECK(nw > 0);
            free(got);
            free(want);
        }
    }
    free(big);
    free(small);
    em_close(c);
}

/* One partition per input and one output partition: the join streams its
 * larger input (the left: 8-byte values, against 1-byte values on the
 * right) through a table of the smaller, so its records come in the left's
 * order, keys 9 down to 0, where a sort-based cogroup gives keys in
 * ascending order. */
TEST(join_hash_streams_the_larger_input_in_order) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    uint8_t lk[10][16], rk[10][9];
    em_rec l[10], r[10];
    for (int i = 0; i < 10; i++) {
        em_i64_enc(9 - i, lk[i]);
        em_i64_enc(100 + i, lk[i] + 8);
        l[i] = (em_rec){lk[i], 8, lk[i] + 8, 8};
        em_i64_enc(i, rk[i]);
        rk[i][8] = (uint8_t)('a' + i);
        r[i] = (em_rec){rk[i], 8, rk[i] + 8, 1};
    }
    em_batch *b;
    CHECK_OK(em_collect(em_join(em_parallelize(c, l, 10, 1), em_parallelize(c, r, 10, 1), 1), &b));
    CHECK_EQ_I64(em_batch_count(b), 10);
    size_t pos = 0;
    em_rec o;
    for (int i = 0; em_batch_next(b, &pos, &o) == 1; i++) {
        em_tuple t;
        CHECK_OK(em_tuple_unpack(o.val, o.vlen, &t));
        CHECK_EQ_I64(em_i64_dec(o.key), 9 - i);
        CHECK(t.a_present && t.alen == 8 && em_i64_dec(t.a) == 100 + i);
        CHECK(t.b_present && t.blen == 1 && *(const uint8_t *)t.b == 'a' + 9 - i);
    }
    em_batch_free(b);
    em_close(c);
}

/* Streamed records of every length keep their order: short ones held in
 * the queue's slots, long ones (a list of neighbours) in the slots' own
 * buffers, reused as the queue wraps many times and joined as it fills,
 * and ones past the queue's limit joined at once after a drain,
 * interleaved. */
TEST(join_hash_streams_long_records_in_order) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    enum { N = 400, HUGE = 70000 };
    static uint8_t *lv[N];
    uint8_t lk[N][8], rk[N][9];
    em_rec l[N], r[N];
    for (int i = 0; i < N; i++) {
        size_t vl = i % 97 == 50 ? HUGE : i % 5 == 0 ? 8 : 60 + (size_t)(i * 37) % 300;
        lv[i] = malloc(vl);
        em_i64_enc(N - 1 - i, lk[i]);
        memset(lv[i], 'a' + i % 26, vl);
        em_i64_enc(100 + i, lv[i]);
        l[i] = (em_rec){lk[i], 8, lv[i], vl};
        em_i64_enc(i, rk[i]);
        rk[i][8] = (uint8_t)('A' + i % 26);
        r[i] = (em_rec){rk[i], 8, rk[i] + 8, 1};
    }
    em_batch *b;
    CHECK_OK(em_collect(em_join(em_parallelize(c, l, N, 1), em_parallelize(c, r, N, 1), 1), &b));
    CHECK_EQ_I64(em_batch_count(b), N);
    size_t pos = 0;
    em_rec o;
    for (int i = 0; em_batch_next(b, &pos, &o) == 1; i++) {
        em_tuple t;
        CHECK_OK(em_tuple_unpack(o.val, o.vlen, &t));
        CHECK_EQ_I64(em_i64_dec(o.key), N - 1 - i);
        CHECK(t.a_present && t.alen == l[i].vlen && !memcmp(t.a, lv[i], t.alen));
        CHECK(t.b_present && t.blen == 1 && *(const uint8_t *)t.b == 'A' + (N - 1 - i) % 26);
    }
    em_batch_free(b);
    for (int i = 0; i < N; i++) free(lv[i]);
    em_close(c);
}

/* Under a 256 KiB budget the table of the built input (20,000 records of
 * 8-byte keys and 56-byte values per side, 2 partitions) passes the budget:
 * the join falls back to the sort-based cogroup, whose sorted runs spill,
 * and gives the same records: 10 x 10 tuples for each of 2,000 keys, and
 * the outer joins' one-sided keys. */
static int wide_pair(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t v = rec_i64(in), mod = *(const int64_t *)arg;
    uint8_t k[8], val[56];
    em_i64_enc(v % mod, k);
    memset(val, 'v', sizeof val);
    em_i64_enc(v, val);
    return em_emit_pair(out, k, 8, val, sizeof val);
}

TEST(join_hash_falls_back_past_the_budget) {
    em_ctx *c = open_test_ctx_with("ember.shuffle.memoryBytes", "262144");
    CHECK(c);
    int64_t m1 = 2000, m2 = 2100;
    em_rdd *a = em_map(em_range(c, 0, 20000, 1, 4), wide_pair, &m1, sizeof m1);
    em_rdd *b = em_map(em_range(c, 0, 21000, 1, 3), wide_pair, &m2, sizeof m2);
    em_stats s0, s1;
    em_get_stats(c, &s0);
    int64_t n = 0;
    CHECK_OK(em_count(em_join(a, b, 2), &n));
    em_get_stats(c, &s1);
    CHECK(s1.spills > s0.spills);
    CHECK_EQ_I64(n, 2000 * 10 * 10);
    CHECK_OK(em_count(em_full_outer_join(a, b, 2), &n));
    CHECK_EQ_I64(n, 2000 * 10 * 10 + 100 * 10); /* keys 2000..2099: right only */
    /* The tuples themselves (bi_join over the sorted cogroup): each left
     * value v meets the 10 right values of key v % 2000, each right value
     * w of a key below 2000 the 10 left ones; the others stand alone. */
    em_batch *bt;
    CHECK_OK(em_collect(em_full_outer_join(a, b, 2), &bt));
    size_t pos = 0;
    em_rec o;
    int64_t suma = 0, sumb = 0, alone = 0;
    while (em_batch_next(bt, &pos, &o) == 1) {
        em_tuple t;
        CHECK_OK(em_tuple_unpack(o.val, o.vlen, &t));
        CHECK(t.b_present && t.blen == 56);
        int64_t k = em_i64_dec(o.key), w = em_i64_dec(t.b);
        CHECK_EQ_I64(w % 2100, k);
        sumb += w;
        if (!t.a_present) {
            CHECK(k >= 2000);
            alone++;
            continue;
        }
        CHECK(t.alen == 56 && em_i64_dec(t.a) % 2000 == k);
        suma += em_i64_dec(t.a);
    }
    em_batch_free(bt);
    CHECK_EQ_I64(alone, 1000);
    CHECK_EQ_I64(suma, 10 * (int64_t)19999 * 20000 / 2);
    int64_t want_b = 0;
    for (int64_t w = 0; w < 21000; w++) want_b += w % 2100 < 2000 ? 10 * w : w;
    CHECK_EQ_I64(sumb, want_b);
    /* The same join under the default budget: a table, no spill. */
    em_ctx *d = open_test_ctx();
    CHECK(d);
    a = em_map(em_range(d, 0, 20000, 1, 4), wide_pair, &m1, sizeof m1);
    b = em_map(em_range(d, 0, 21000, 1, 3), wide_pair, &m2, sizeof m2);
    em_get_stats(d, &s0);
    CHECK_OK(em_count(em_join(a, b, 2), &n));
    em_get_stats(d, &s1);
    CHECK_EQ_I64(s1.spills, s0.spills);
    CHECK_EQ_I64(n, 2000 * 10 * 10);
    em_close(d);
    em_close(c);
}

/* Keys of 13 bytes (held in the arena, not the entry), values of 0 to 69
 * bytes (empty ones, ones in the entry, nodes, and ones too long for the
 * stream's queue), duplicates on both sides: every kind as a nested loop
 * over the same strings gives it. */
static int str_cmp(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

static char *trip_str(const void *k, size_t kl, const void *a, size_t al, int ap, const void *b, size_t bl, int bp) {
    char *s = malloc(kl + al + bl + 8);
    sprintf(s, "%.*s|%.*s|%.*s", (int)kl, (const char *)k, ap ? (int)al : 1, ap ? (const char *)a : "-",
            bp ? (int)bl : 1, bp ? (const char *)b : "-");
    return s;
}

TEST(join_hash_long_keys_and_values) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    enum { NL = 600, NR = 250 };
    static char kb[NL + NR][16], vb[NL + NR][72];
    em_rec recs[NL + NR];
    for (int i = 0; i < NL + NR; i++) {
        int key = i < NL ? (i * 7) % 150 : 100 + (i * 3) % 80; /* 0..149 left, 100..179 right */
        snprintf(kb[i], sizeof kb[i], "longkey-%05d", key);
        int vl = (i * 13) % 70;
        memset(vb[i], i < NL ? 'a' + i % 26 : 'A' + i % 26, (size_t)vl);
        if (vl >= 4) snprintf(vb[i], 5, "%04u", (unsigned)i % 10000u);
        if (vl >= 4) vb[i][4] = '.';
        recs[i] = (em_rec){kb[i], 13, vb[i], (size_t)vl};
    }
    em_rdd *l = em_parallelize(c, recs, NL, 3), *r = em_parallelize(c, recs + NL, NR, 2);
    for (int kind = 0; kind < 4; kind++) {
        size_t cap = 64, nw = 0;
        char **want = malloc(cap * sizeof *want);
        char rm[NR] = {0};
        for (int i = 0; i < NL; i++) {
            int hit = 0;
            for (int j = 0; j < NR; j++) {
                if (memcmp(kb[i], kb[NL + j], 13)) continue;
                hit = rm[j] = 1;
                if (nw == cap) want = realloc(want, (cap *= 2) * sizeof *want);
                want[nw++] = trip_str(kb[i], 13, vb[i], recs[i].vlen, 1, vb[NL + j], recs[NL + j].vlen, 1);
            }
            if (!hit && (kind & 1)) {
                if (nw == cap) want = realloc(want, (cap *= 2) * sizeof *want);
                want[nw++] = trip_str(kb[i], 13, vb[i], recs[i].vlen, 1, "", 0, 0);
            }
        }
        for (int j = 0; j < NR && kind >= 2; j++)
            if (!rm[j]) {
                if (nw == cap) want = realloc(want, (cap *= 2) * sizeof *want);
                want[nw++] = trip_str(kb[NL + j], 13, "", 0, 0, vb[NL + j], recs[NL + j].vlen, 1);
            }
        qsort(want, nw, sizeof *want, str_cmp);
        em_batch *b;
        CHECK_OK(em_collect(join_of(kind, l, r, 3), &b));
        size_t ng = em_batch_count(b), pos = 0, i = 0;
        char **got = malloc((ng + 1) * sizeof *got);
        em_rec o;
        while (em_batch_next(b, &pos, &o) == 1) {
            em_tuple t;
            CHECK_OK(em_tuple_unpack(o.val, o.vlen, &t));
            got[i++] = trip_str(o.key, o.klen, t.a, t.alen, t.a_present, t.b, t.blen, t.b_present);
        }
        em_batch_free(b);
        qsort(got, ng, sizeof *got, str_cmp);
        CHECK_EQ_I64(ng, nw);
        CHECK(nw > 0);
        for (size_t k = 0; k < nw; k++) {
            if (strcmp(got[k], want[k])) fprintf(stderr, "  kind %d: got %s, want %s\n", kind, got[k], want[k]);
            CHECK(strcmp(got[k], want[k]) == 0);
        }
        for (size_t k = 0; k < nw; k++) {
            free(got[k]);
            free(want[k]);
        }
        free(got);
        free(want);
    }
    em_close(c);
}
