/*
 * test_aggahead.c -- the map-side combine's look-ahead queue and its two
 * tables hold exactly what merging each record at once into one table
 * does: the same keys, each once, with bit-identical combiners (float
 * sums, whose value depends on the order of additions, included), with
 * keys of every length (words, longer keys, keys too long for the queue)
 * and with the tables read and cleared part way as the shuffle writer
 * does; and so does a user combiner called through the spec's functions,
 * one whose width changes with the data (which moves the words to the
 * general table) included.
 */
#include <stdint.h>
#include <string.h>

#include "../test.h"
#include "aggahead.h"
#include "combiners.h"

static uint64_t rng_state;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Key number k: 0 to 60 bytes (lengths past AH_KEY_MAX included), derived
 * from k so equal numbers give equal keys. */
static size_t make_key(uint64_t k, uint8_t *key) {
    size_t len = (size_t)(k * 7 % 61);
    for (size_t i = 0; i < len; i++) key[i] = (uint8_t)('a' + (k + i * 31) % 26 + (i == 0 ? 0 : (k >> (i % 16)) % 2));
    return len;
}

/* A user combiner: an int64 sum, 8 bytes while its magnitude is under
 * 2^20 and 16 (the sum, then 8 zero bytes) from then on. */
static int user_create(void *ctx, const em_rec *v, ebuf *out) { return ebuf_append(out, v->val, 8); }
static int user_merge(void *ctx, const em_rec *c, const em_rec *v, ebuf *out) {
    if ((c->vlen != 8 && c->vlen != 16) || v->vlen != 8) return EM_EINVAL;
    int64_t s = dec_i64(c->val) + dec_i64(v->val);
    uint8_t b[16] = {0};
    enc_i64(s, b);
    return ebuf_append(out, b, c->vlen == 16 || s > (1 << 20) || s < -(1 << 20) ? 16 : 8);
}

/* The reference: merge a record into m at once. */
static int merge_now(aggmap *m, const agg_spec *a, const em_rec *r) {
    size_t i;
    int rc = aggmap_upsert_n(m, r->key, r->klen, 8, &i);
    if (rc < 0) return rc;
    if (!a->builtin) {
        ebuf out = EBUF_INIT;
        em_rec v = {NULL, 0, r->val, 8}, c;
        aggmap_get(m, i, &c);
        c.key = NULL;
        c.klen = 0;
        rc = rc ? a->merge_value(a->ctx, &c, &v, &out) : a->create(a->ctx, &v, &out);
        if (!rc) rc = aggmap_set_comb(m, i, out.p, out.len);
        ebuf_free(&out);
        return rc;
    }
    if (rc) comb_apply8(a->builtin, aggmap_comb(m, i), r->val);
    else agg_builtin_create(a, aggmap_comb(m, i), r->val);
    return 0;
}

static int collect(void *ctx, const em_rec *r) {
    aggmap *m = ctx;
    size_t i;
    int rc = aggmap_upsert(m, r->key, r->klen, &i);
    if (rc) return -1; /* a key given twice */
    return aggmap_set_comb(m, i, r->val, r->vlen);
}

/* The queue's tables hold the keys of x, each once, with the same
 * combiners byte for byte. */
static int same_tables(const aggmap *x, const aggahead *q) {
    aggmap y;
    aggmap_init(&y);
    int same = !ah_each(q, collect, &y) && aggmap_count(x) == aggmap_count(&y) && ah_count(q) == aggmap_count(x);
    for (size_t i = 0; same && i < aggmap_count(x); i++) {
        em_rec a, b;
        size_t j;
        aggmap_get(x, i, &a);
        same = aggmap_upsert(&y, a.key, a.klen, &j) == 1;
        if (!same) break;
        aggmap_get(&y, j, &b);
        same = a.vlen == b.vlen && !memcmp(a.val, b.val, a.vlen);
    }
    aggmap_free(&y);
    return same;
}

/* Key key's combiner in the queue's tables as an int64, or -1 if absent. */
static int64_t comb_of(const aggahead *q, const uint8_t *key, size_t klen) {
    aggmap y;
    size_t j;
    int64_t v = -1;
    aggmap_init(&y);
    if (!ah_each(q, collect, &y) && aggmap_upsert(&y, key, klen, &j) == 1) v = dec_i64(aggmap_comb(&y, j));
    aggmap_free(&y);
    return v;
}

/* 300,000 records of skewed keys through both paths; every ~50,000
 * records the queue is drained, both tables compared and cleared (as the
 * writer's dump does).  Returns the number of comparisons that held. */
static int run(int op, int has_zero, int doubles) {
    agg_spec a;
    memset(&a, 0, sizeof a);
    a.builtin = op;
    if (!op) {
        a.create = user_create;
        a.merge_value = a.merge_comb = user_merge;
    }
    a.has_zero = has_zero;
    if (has_zero) enc_i64(0, a.zero);
    aggmap direct, queued;
    aggmap_init(&direct);
    aggmap_init(&queued);
    aggahead q;
    ebuf out = EBUF_INIT;
    ah_init(&q, &queued, &a, &out);
    rng_state = 0x9E3779B97F4A7C15ull;
    int held = 0;
    uint8_t key[64], v[8];
    for (int n = 1; n <= 300000; n++) {
        uint64_t r = rng();
        uint64_t k = (r & 3) ? r % 64 : r % 20000; /* a few hot keys, many cold */
        size_t klen = make_key(k, key);
        if (doubles) enc_f64((double)(int64_t)(rng() % 2000001 - 1000000) / 7.0, v);
        else enc_i64((int64_t)(rng() % 2000001) - 1000000, v);
        em_rec rec = {key, klen, v, 8};
        if (merge_now(&direct, &a, &rec) || ah_add(&q, &rec)) return -1;
        if (n % 49999 == 0 || n == 300000) {
            if (ah_drain(&q)) return -1;
            held += same_tables(&direct, &q);
            aggmap_clear(&direct);
            ah_clear(&q);
        }
    }
    aggmap_free(&direct);
    ah_free(&q);
    aggmap_free(&queued);
    ebuf_free(&out);
    return held;
}

TEST(aggahead_same_table_as_merging_at_once) {
    /* 6 dumps at 49,999 .. 299,994 and the final one. */
    CHECK_EQ_I64(run(CB_SUM_I64, 0, 0), 7);
    CHECK_EQ_I64(run(CB_SUM_I64, 1, 0), 7);
    CHECK_EQ_I64(run(CB_MIN_I64, 0, 0), 7);
    CHECK_EQ_I64(run(CB_MAX_I64, 0, 0), 7);
    CHECK_EQ_I64(run(CB_SUM_F64, 0, 1), 7);
    CHECK_EQ_I64(run(CB_MIN_F64, 0, 1), 7);
    CHECK_EQ_I64(run(0, 0, 0), 7);
}

/* Queued records reach the table only when the queue is full -- then its
 * oldest AH_FLUSH go in -- or drained; a key longer than AH_KEY_MAX drains
 * the queue and goes in at once. */
TEST(aggahead_queue_holds_records_until_drained) {
    agg_spec a;
    memset(&a, 0, sizeof a);
    a.builtin = CB_SUM_I64;
    aggmap m;
    aggmap_init(&m);
    aggahead q;
    ah_init(&q, &m, &a, NULL);
    uint8_t v[8], key[AH_KEY_MAX + 1];
    enc_i64(1, v);
    for (int i = 0; i < AH_DEPTH - 1; i++) {
        key[0] = (uint8_t)i;
        em_rec r = {key, 1, v, 8};
        CHECK_OK(ah_add(&q, &r));
    }
    CHECK_EQ_I64((int64_t)ah_count(&q), 0);
    key[0] = AH_DEPTH - 1;
    em_rec r = {key, 1, v, 8};
    CHECK_OK(ah_add(&q, &r)); /* full: the oldest AH_FLUSH go in */
    CHECK_EQ_I64((int64_t)ah_count(&q), AH_FLUSH);
    CHECK_EQ_I64(q.n, AH_DEPTH - AH_FLUSH);
    CHECK_OK(ah_add(&q, &r)); /* key AH_DEPTH - 1 again */
    CHECK_EQ_I64((int64_t)ah_count(&q), AH_FLUSH);
    memset(key, 'x', sizeof key);
    em_rec big = {key, AH_KEY_MAX + 1, v, 8};
    CHECK_OK(ah_add(&q, &big));
    CHECK_EQ_I64((int64_t)ah_count(&q), AH_DEPTH + 1);
    CHECK_EQ_I64(q.n, 0);
    /* The words in the word table, the big key in the general one. */
    CHECK_EQ_I64((int64_t)agg16_count(&q.w), AH_DEPTH);
    CHECK_EQ_I64((int64_t)aggmap_count(&m), 1);
    /* Key AH_DEPTH - 1 was added twice: its sum is 2; the big key's 1. */
    uint8_t k = AH_DEPTH - 1;
    CHECK_EQ_I64(comb_of(&q, &k, 1), 2);
    CHECK_EQ_I64(comb_of(&q, key, AH_KEY_MAX + 1), 1);
    CHECK_OK(ah_drain(&q));
    CHECK_EQ_I64((int64_t)ah_count(&q), AH_DEPTH + 1);
    /* Every word to the general table: the same keys and sums. */
    CHECK_OK(ah_general(&q));
    CHECK_EQ_I64((int64_t)aggmap_count(&m), AH_DEPTH + 1);
    CHECK_EQ_I64((int64_t)agg16_count(&q.w), 0);
    CHECK_EQ_I64(comb_of(&q, &k, 1), 2);
    k = 0;
    CHECK_EQ_I64(comb_of(&q, &k, 1), 1);
    ah_free(&q);
    aggmap_free(&m);
}
