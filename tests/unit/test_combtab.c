/*
 * test_combtab.c -- the map-side combine's table gives every key exactly
 * the combiner that merging each record at once into the general table
 * gives (float sums bit for bit), with the table walked and cleared part
 * way as the shuffle writer's dump does: in the 8-byte table (8- and
 * 4-byte keys, builtin and user combiners, the key the table marks empty
 * slots with), and across the move to the general table, whether a long
 * key, a wider value or a user combiner that grows past 8 bytes causes
 * it, with records still queued when it happens.
 */
#include <stdint.h>
#include <string.h>

#include "../test.h"
#include "combiners.h"
#include "combtab.h"

static uint64_t rng_state;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* User combiners: an int64 sum that stays 8 bytes while its magnitude is
 * under 2^20 and is 16 (the sum, 8 zero bytes) from then on (grow), or
 * always 8; a double sum; a (sum, count) pair of 16 bytes from the
 * start. */
static int grow;
static int sum_create(void *ctx, const em_rec *v, ebuf *out) {
    (void)ctx;
    return ebuf_append(out, v->val, 8);
}
static int sum_merge(void *ctx, const em_rec *c, const em_rec *v, ebuf *out) {
    (void)ctx;
    if ((c->vlen != 8 && c->vlen != 16) || v->vlen < 8) return EM_EINVAL;
    int64_t s = dec_i64(c->val) + dec_i64(v->val);
    uint8_t b[16] = {0};
    enc_i64(s, b);
    return ebuf_append(out, b, c->vlen == 16 || (grow && (s > (1 << 20) || s < -(1 << 20))) ? 16 : 8);
}
static int f64_merge(void *ctx, const em_rec *c, const em_rec *v, ebuf *out) {
    (void)ctx;
    uint8_t b[8];
    enc_f64(dec_f64(c->val) + dec_f64(v->val), b);
    return ebuf_append(out, b, 8);
}
static int pair_create(void *ctx, const em_rec *v, ebuf *out) {
    (void)ctx;
    uint8_t b[16];
    memcpy(b, v->val, 8);
    enc_i64(1, b + 8);
    return ebuf_append(out, b, 16);
}
static int pair_merge(void *ctx, const em_rec *c, const em_rec *v, ebuf *out) {
    (void)ctx;
    if (c->vlen != 16) return EM_EINVAL;
    uint8_t b[16];
    enc_i64(dec_i64(c->val) + dec_i64(v->val), b);
    enc_i64(dec_i64(c->val + 8) + 1, b + 8);
    return ebuf_append(out, b, 16);
}

/* A 4-byte combiner: the low 32 bits of an int64 sum, wrapping. */
static int w4_create(void *ctx, const em_rec *v, ebuf *out) {
    (void)ctx;
    uint32_t x = (uint32_t)dec_i64(v->val);
    return ebuf_append(out, &x, 4);
}
static int w4_merge(void *ctx, const em_rec *c, const em_rec *v, ebuf *out) {
    (void)ctx;
    if (c->vlen != 4) return EM_EINVAL;
    uint32_t x;
    memcpy(&x, c->val, 4);
    x += (uint32_t)dec_i64(v->val);
    return ebuf_append(out, &x, 4);
}

/* The reference: merge r into m at once, the general way. */
static int merge_now(aggmap *m, const agg_spec *a, const em_rec *r) {
    size_t i;
    int rc = aggmap_upsert(m, r->key, r->klen, &i);
    if (rc < 0) return rc;
    ebuf out = EBUF_INIT;
    em_rec v = {NULL, 0, r->val, r->vlen}, c;
    aggmap_get(m, i, &c);
    c.key = NULL;
    c.klen = 0;
    rc = rc ? a->merge_value(a->ctx, &c, &v, &out) : a->create(a->ctx, &v, &out);
    if (!rc) rc = aggmap_set_comb(m, i, out.p, out.len);
    ebuf_free(&out);
    return rc;
}

typedef struct check {
    aggmap *ref;
    size_t seen, wrong;
} check;

/* Each record the table gives is the reference's for its key. */
static int check_one(void *ctx, const em_rec *r) {
    check *k = ctx;
    size_t i;
    k->seen++;
    if (aggmap_upsert(k->ref, r->key, r->klen, &i) != 1) {
        k->wrong++;
        return 0;
    }
    em_rec e;
    aggmap_get(k->ref, i, &e);
    if (e.vlen != r->vlen || memcmp(e.val, r->val, r->vlen)) k->wrong++;
    return 0;
}

enum { K8, K4, K8_THEN_LONG, K8_THEN_WIDE_VALUE };

/* 200,000 records of skewed keys of the given kind into a table and the
 * reference; every ~40,000 the table is walked and checked against the
 * reference, and both cleared.  Returns the walks that held, or -1; *use8
 * is whether the 8-byte table held the keys at the end. */
static int run(agg_spec *a, int kind, int doubles, int *use8) {
    aggmap ref;
    combtab t;
    ebuf out = EBUF_INIT;
    aggmap_init(&ref);
    ct_init(&t, a, &out, 0);
    rng_state = 0x9E3779B97F4A7C15ull;
    int held = 0;
    for (int n = 1; n <= 200000; n++) {
        uint64_t r = rng();
        uint64_t k = (r & 3) ? r % 64 : r % 30000; /* a few hot keys, many cold */
        uint8_t key[16], v[16] = {0};
        size_t klen = kind == K4 ? 4 : 8, vlen = 8;
        if (k == 7) k = AGG8_EMPTY; /* a hot key the table marks empty slots with */
        memcpy(key, &k, 8);
        if (kind == K8_THEN_LONG && n > 100000 && (r >> 8) % 3 == 0) {
            memcpy(key + 8, "long", 4);
            klen = 12;
        }
        if (kind == K8_THEN_WIDE_VALUE && n > 100003 && (r >> 9) % 2) vlen = 16; /* 8 and 16 interleaved */
        if (doubles) enc_f64((double)(int64_t)(rng() % 2000001 - 1000000) / 7.0, v);
        else enc_i64((int64_t)(rng() % 2000001) - 1000000, v);
        em_rec rec = {key, klen, v, vlen};
        if (merge_now(&ref, a, &rec) || ct_add(&t, &rec)) return -1;
        if (n % 39999 == 0 || n == 200000) {
            check ck = {&ref, 0, 0};
            if (ct_each(&t, check_one, &ck)) return -1;
            held += !ck.wrong && ck.seen == aggmap_count(&ref) && ct_count(&t) == ck.seen;
            ct_clear(&t);
            aggmap_clear(&ref);
        }
    }
    *use8 = t.use8;
    ct_free(&t);
    aggmap_free(&ref);
    ebuf_free(&out);
    return held;
}

static agg_spec spec(int builtin, int (*create)(void *, const em_rec *, ebuf *),
                     int (*merge)(void *, const em_rec *, const em_rec *, ebuf *)) {
    agg_spec a;
    memset(&a, 0, sizeof a);
    a.builtin = builtin;
    a.create = create;
    a.merge_value = a.merge_comb = merge;
    return a;
}

/* Builtin int64 sums stay in the 8-byte table, 8- and 4-byte keys. */
TEST(combtab_builtin_sum_in_8_byte_table) {
    agg_spec a = spec(CB_SUM_I64, sum_create, sum_merge);
    int use8 = 0;
    grow = 0;
    CHECK_EQ_I64(run(&a, K8, 0, &use8), 6);
    CHECK(use8);
    CHECK_EQ_I64(run(&a, K4, 0, &use8), 6);
    CHECK(use8);
    a = spec(CB_SUM_F64, sum_create, f64_merge);
    CHECK_EQ_I64(run(&a, K8, 1, &use8), 6);
    CHECK(use8);
}

/* A user's double sum, bit for bit, with and without its create (the
 * identity skipped). */
TEST(combtab_user_f64_sum_in_8_byte_table) {
    agg_spec a = spec(0, sum_create, f64_merge);
    int use8 = 0;
    CHECK_EQ_I64(run(&a, K8, 1, &use8), 6);
    CHECK(use8);
    a.create_identity = 1;
    CHECK_EQ_I64(run(&a, K4, 1, &use8), 6);
    CHECK(use8);
}

/* A user combiner of 4 bytes stays in the 8-byte table, zero padded. */
TEST(combtab_user_4_byte_combiner_in_8_byte_table) {
    agg_spec a = spec(0, w4_create, w4_merge);
    int use8 = 0;
    CHECK_EQ_I64(run(&a, K8, 0, &use8), 6);
    CHECK(use8);
    CHECK_EQ_I64(run(&a, K4, 0, &use8), 6);
    CHECK(use8);
}

/* Long keys and wide values part way move the keys to the general
 * table, with records queued at that moment; after the move, records of
 * 8-byte values (through the general table's queue) and of 16-byte ones
 * (merged at once, after that queue) keep their order. */
TEST(combtab_misfit_records_move_to_general_table) {
    agg_spec a = spec(CB_SUM_I64, sum_create, sum_merge);
    int use8 = 1;
    grow = 0;
    CHECK_EQ_I64(run(&a, K8_THEN_LONG, 0, &use8), 6);
    CHECK(!use8);
    a = spec(0, sum_create, f64_merge); /* a double sum: its bits tell the order */
    CHECK_EQ_I64(run(&a, K8_THEN_WIDE_VALUE, 1, &use8), 6);
    CHECK(!use8);
}

/* A user combiner of 16 bytes from the first record, and one that grows
 * from 8 to 16 bytes part way (in the FIFO's merge, records queued
 * behind it). */
TEST(combtab_user_combiner_wider_than_8_bytes) {
    agg_spec a = spec(0, pair_create, pair_merge);
    int use8 = 1;
    CHECK_EQ_I64(run(&a, K8, 0, &use8), 6);
    CHECK(!use8);
    a = spec(0, sum_create, sum_merge);
    grow = 1;
    CHECK_EQ_I64(run(&a, K8, 0, &use8), 6);
    CHECK(!use8);
    grow = 0;
}
