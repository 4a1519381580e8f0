/*
 * test_wide.c -- wide transformations through the public API: the *_by_key
 * aggregations, grouping, joins and cogroup, distinct, sort_by_key,
 * partition_by, repartition and unions of shuffled RDDs.  Every expected
 * result is computed here independently of the engine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

/* ------------------------------------------------------------ helpers */

static int64_t lcg_next(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (int64_t)(*s >> 17);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_strs(char **s, size_t n) {
    for (size_t i = 0; s && i < n; i++) free(s[i]);
    free(s);
}

/* Pairs (i64 key, i64 index) from an array of keys. */
static em_rdd *keyed_i64(em_ctx *c, const int64_t *keys, size_t n, int parts) {
    uint8_t *enc = malloc(16 * n + 1);
    em_rec *recs = calloc(n + 1, sizeof *recs);
    for (size_t i = 0; i < n; i++) {
        em_i64_enc(keys[i], enc + 16 * i);
        em_i64_enc((int64_t)i, enc + 16 * i + 8);
        recs[i] = (em_rec){enc + 16 * i, 8, enc + 16 * i + 8, 8};
    }
    em_rdd *r = em_parallelize(c, recs, n, parts);
    free(enc);
    free(recs);
    return r;
}

/* Pairs from "key=value" strings. */
static em_rdd *kv_strs(em_ctx *c, const char *const *kv, size_t n, int parts) {
    em_rec *recs = calloc(n + 1, sizeof *recs);
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(kv[i], '=');
        recs[i] = (em_rec){kv[i], (size_t)(eq - kv[i]), eq + 1, strlen(eq + 1)};
    }
    em_rdd *r = em_parallelize(c, recs, n, parts);
    free(recs);
    return r;
}

static int concat_vals(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    uint8_t *buf = malloc(a->vlen + b->vlen + 1);
    if (!buf) return em_fail("out of memory");
    memcpy(buf, a->val, a->vlen);
    memcpy(buf + a->vlen, b->val, b->vlen);
    int rc = em_emit(out, buf, a->vlen + b->vlen);
    free(buf);
    return rc;
}

static int max_i64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    int64_t x = em_i64_dec(a->val), y = em_i64_dec(b->val);
    return em_emit_i64(out, x > y ? x : y);
}

/* Per-partition record counts through glom. */
static int glom_counts(em_rdd *r, int64_t *counts, int n) {
    em_batch *b;
    int rc = em_collect(em_glom(r), &b);
    if (rc) return rc;
    if ((int)em_batch_count(b) != n) {
        em_batch_free(b);
        return -100;
    }
    size_t pos = 0;
    em_rec g;
    for (int p = 0; em_batch_next(b, &pos, &g) == 1; p++) {
        size_t lp = 0;
        em_rec x;
        counts[p] = 0;
        while (em_list_next_rec(g.val, g.vlen, &lp, &x) == 1) counts[p]++;
    }
    em_batch_free(b);
    return 0;
}

/* sort_by_key(in, asc, 4): each of the 4 partitions holds 15% to 35% of
 * all records, and they hold all of them. */
static int sorted_balanced(em_rdd *in, int asc, int64_t all) {
    int64_t counts[4] = {0}, total = 0;
    int ok = glom_counts(em_sort_by_key(in, asc, 4), counts, 4) == 0;
    for (int p = 0; p < 4 && ok; p++) {
        total += counts[p];
        ok = counts[p] >= all * 15 / 100 && counts[p] <= all * 35 / 100;
    }
    if (!ok || total != all)
        fprintf(stderr, "  partitions of %lld records: %lld %lld %lld %lld\n", (long long)all, (long long)counts[0],
                (long long)counts[1], (long long)counts[2], (long long)counts[3]);
    return ok && total == all;
}

/* ------------------------------------------------------ reduce_by_key */

#define MILLION 1000000
#define MILLION_RECS 1500000

static int million_pair(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t v = rec_i64(in);
    uint8_t k[8];
    em_i64_enc(v % MILLION, k);
    return em_emit_pair_i64(out, k, 8, v);
}

/* The expected sum of key k: v = k and, for k < 500000, v = k + 1000000. */
static int64_t million_sum(int64_t k) { return k < MILLION_RECS - MILLION ? 2 * k + MILLION : k; }

static int million_bad(const em_rec *in, const void *arg) {
    return em_i64_dec(in->val) != million_sum(em_i64_dec(in->key));
}

static int million_check(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_i64(out, 3 * em_i64_dec(in->key) + em_i64_dec(in->val));
}

TEST(wide_reduce_by_key_million_keys) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *pairs = em_map(em_range(c, 0, MILLION_RECS, 1, 6), million_pair, NULL, 0);
    em_rdd *sums = em_reduce_by_key(pairs, fn_sum_i64, NULL, 0, 5);
    CHECK(sums);
    CHECK_EQ_I64(em_num_partitions(sums), 5);
    int64_t n = -1;
    CHECK_OK(em_count(sums, &n));
    CHECK_EQ_I64(n, MILLION);
    CHECK_OK(em_count(em_filter(sums, million_bad, NULL, 0), &n));
    CHECK_EQ_I64(n, 0);
    em_batch *b;
    CHECK_OK(em_reduce(em_map(sums, million_check, NULL, 0), fn_sum_i64, NULL, 0, &b));
    int64_t want = 0;
    for (int64_t k = 0; k < MILLION; k++) want += 3 * k + million_sum(k);
    em_rec r;
    CHECK_OK(em_batch_get(b, 0, &r));
    CHECK_EQ_I64(rec_i64(&r), want);
    em_batch_free(b);
    em_close(c);
}

/* --------------------------------------------------- aggregate_by_key */

/* 400 records in 4 partitions of 100: key "k<i%10>", value the letter of
 * the record's partition ('a'..'d'). */
static em_rdd *letters_by_partition(em_ctx *c) {
    static char keys[400][8];
    static char vals[400][2];
    em_rec recs[400];
    for (int i = 0; i < 400; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i % 10);
        vals[i][0] = (char)('a' + i / 100);
        recs[i] = (em_rec){keys[i], strlen(keys[i]), vals[i], 1};
    }
    return em_parallelize(c, recs, 400, 4);
}

TEST(wide_aggregate_by_key_zero_per_key) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    /* seq extends the accumulator: with a shared zero, keys would see each
     * other's letters; with the zero applied once per key and map
     * partition, each key gets "Z" + 10 letters from each partition. */
    em_rdd *agg = em_aggregate_by_key(letters_by_partition(c), "Z", 1, concat_vals, concat_vals, NULL, 0, 3);
    em_batch *b;
    CHECK_OK(em_collect(agg, &b));
    CHECK_EQ_I64(em_batch_count(b), 10);
    size_t pos = 0;
    em_rec r;
    int seen[10] = {0};
    while (em_batch_next(b, &pos, &r) == 1) {
        CHECK(r.klen == 2 && ((const char *)r.key)[0] == 'k');
        int k = ((const char *)r.key)[1] - '0';
        CHECK(k >= 0 && k < 10 && !seen[k]);
        seen[k] = 1;
        CHECK_EQ_I64(r.vlen, 44);
        const char *v = r.val;
        int letters[4] = {0};
        /* Four blocks "Z" + ten copies of one letter, in any order. */
        for (int blk = 0; blk < 4; blk++) {
            CHECK(v[blk * 11] == 'Z');
            char l = v[blk * 11 + 1];
            CHECK(l >= 'a' && l <= 'd');
            for (int j = 1; j <= 10; j++) CHECK(v[blk * 11 + j] == l);
            letters[l - 'a']++;
        }
        for (int l = 0; l < 4; l++) CHECK_EQ_I64(letters[l], 1);
    }
    em_batch_free(b);
    em_close(c);
}

/* ---------------------------------------------------- combine_by_key */

static int avg_create(const em_rec *v, em_emitter *out, const void *arg) {
    uint8_t b[16];
    em_i64_enc(em_i64_dec(v->val), b);
    em_i64_enc(1, b + 8);
    return em_emit(out, b, 16);
}
static int avg_merge_value(const em_rec *c, const em_rec *v, em_emitter *out, const void *arg) {
    if (c->vlen != 16 || v->vlen != 8) return em_fail("avg_merge_value: lengths %zu %zu", c->vlen, v->vlen);
    uint8_t b[16];
    em_i64_enc(em_i64_dec(c->val) + em_i64_dec(v->val), b);
    em_i64_enc(em_i64_dec((const uint8_t *)c->val + 8) + 1, b + 8);
    return em_emit(out, b, 16);
}
static int avg_merge_comb(const em_rec *x, const em_rec *y, em_emitter *out, const void *arg) {
    if (x->vlen != 16 || y->vlen != 16) return em_fail("avg_merge_comb: lengths %zu %zu", x->vlen, y->vlen);
    uint8_t b[16];
    em_i64_enc(em_i64_dec(x->val) + em_i64_dec(y->val), b);
    em_i64_enc(em_i64_dec((const uint8_t *)x->val + 8) + em_i64_dec((const uint8_t *)y->val + 8), b + 8);
    return em_emit(out, b, 16);
}
static int avg_finish(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_f64(out, (double)em_i64_dec(in->val) / (double)em_i64_dec((const uint8_t *)in->val + 8));
}

TEST(wide_combine_by_key_average) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t m = 7;
    em_rdd *pairs = em_map(em_range(c, 0, 70000, 1, 6), fn_mod_key, &m, sizeof m);
    em_rdd *comb = em_combine_by_key(pairs, avg_create, avg_merge_value, avg_merge_comb, NULL, 0, 4);
    em_batch *b;
    CHECK_OK(em_collect(comb, &b));
    CHECK_EQ_I64(em_batch_count(b), 7);
    size_t pos = 0;
    em_rec r;
    int64_t keysum = 0;
    while (em_batch_next(b, &pos, &r) == 1) {
        int64_t k = em_i64_dec(r.key);
        keysum += k;
        CHECK_EQ_I64(r.vlen, 16);
        /* values k, k+7, ..., k+7*9999 */
        CHECK_EQ_I64(em_i64_dec(r.val), 10000 * k + 7 * (int64_t)(9999 * 10000 / 2));
        CHECK_EQ_I64(em_i64_dec((const uint8_t *)r.val + 8), 10000);
    }
    CHECK_EQ_I64(keysum, 21);
    em_batch_free(b);
    CHECK_OK(em_collect(em_map_values(comb, avg_finish, NULL, 0), &b));
    pos = 0;
    while (em_batch_next(b, &pos, &r) == 1) {
        double want = (double)em_i64_dec(r.key) + 7 * 9999 / 2.0;
        CHECK(em_f64_dec(r.val) == want);
    }
    em_batch_free(b);
    em_close(c);
}

/* User combine functions whose combiners are held as words on both sides
 * of the shuffle: each result goes into the emitter's word when it has at
 * most 8 bytes, into a buffer when longer; a combiner that grows past 8
 * bytes part way moves its table's keys to the general table.  Exact per
 * key; the misuses of the one value a combine function emits are errors
 * naming it. */
#define WORD_LIMIT 1800000 /* a sum over this is emitted 16 bytes wide */
static int word_sum_put(em_emitter *out, int64_t s) {
    if (s <= WORD_LIMIT) return em_emit_i64(out, s);
    uint8_t b[16];
    em_i64_enc(s, b);
    em_i64_enc(-s, b + 8);
    return em_emit(out, b, 16);
}
static int word_sum(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return word_sum_put(out, em_i64_dec(a->val) + em_i64_dec(b->val));
}
static int count_seq(const em_rec *c, const em_rec *v, em_emitter *out, const void *arg) {
    uint32_t n;
    memcpy(&n, c->val, 4);
    n++;
    return em_emit(out, &n, 4);
}
static int count_comb(const em_rec *c, const em_rec *d, em_emitter *out, const void *arg) {
    uint32_t x, y;
    memcpy(&x, c->val, 4);
    memcpy(&y, d->val, 4);
    x += y;
    em_rec r = {NULL, 0, &x, 4};
    return em_emit_rec(out, &r);
}
static int fmax_create(const em_rec *v, em_emitter *out, const void *arg) {
    return em_emit_f64(out, (double)em_i64_dec(v->val));
}
static int fmax_value(const em_rec *c, const em_rec *v, em_emitter *out, const void *arg) {
    double x = em_f64_dec(c->val), y = (double)em_i64_dec(v->val);
    return em_emit_f64(out, x > y ? x : y);
}
static int fmax_comb(const em_rec *c, const em_rec *d, em_emitter *out, const void *arg) {
    double x = em_f64_dec(c->val), y = em_f64_dec(d->val);
    return em_emit_f64(out, x > y ? x : y);
}
static int emit_twice(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    int rc = em_emit_i64(out, 1);
    return rc ? rc : em_emit_i64(out, 2);
}
static int emit_none(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) { return 0; }
static int emit_pair(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return em_emit_pair_i64(out, "k", 1, 1);
}

TEST(wide_user_combiners_through_words) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t m = 1000, n = 60000;
    em_rdd *pairs = em_map(em_range(c, 0, n, 1, 6), fn_mod_key, &m, sizeof m);
    em_batch *b;
    size_t pos = 0;
    em_rec r;
    /* Values k, k + 1000, ...: key k's sum is 60k + 1000 * (59 * 60 / 2). */
    int wide = 0, seen = 0;
    CHECK_OK(em_collect(em_reduce_by_key(pairs, word_sum, NULL, 0, 4), &b));
    while (em_batch_next(b, &pos, &r) == 1) {
        int64_t k = em_i64_dec(r.key), want = 60 * k + 1000 * (59 * 60 / 2);
        CHECK_EQ_I64(r.vlen, want > WORD_LIMIT ? 16 : 8);
        CHECK_EQ_I64(em_i64_dec(r.val), want);
        if (r.vlen == 16) CHECK_EQ_I64(em_i64_dec((const uint8_t *)r.val + 8), -want);
        wide += r.vlen == 16;
        seen++;
    }
    em_batch_free(b);
    CHECK_EQ_I64(seen, 1000);
    CHECK(wide > 0 && wide < 1000);
    /* Counts in 4 bytes, from a 4-byte zero. */
    uint32_t zero = 0;
    CHECK_OK(em_collect(em_aggregate_by_key(pairs, &zero, 4, count_seq, count_comb, NULL, 0, 3), &b));
    CHECK_EQ_I64(em_batch_count(b), 1000);
    for (pos = 0; em_batch_next(b, &pos, &r) == 1;) {
        uint32_t cnt;
        CHECK_EQ_I64(r.vlen, 4);
        memcpy(&cnt, r.val, 4);
        CHECK_EQ_I64(cnt, 60);
    }
    em_batch_free(b);
    /* The greatest value as a double, created from each key's first. */
    CHECK_OK(em_collect(em_combine_by_key(pairs, fmax_create, fmax_value, fmax_comb, NULL, 0, 5), &b));
    CHECK_EQ_I64(em_batch_count(b), 1000);
    for (pos = 0; em_batch_next(b, &pos, &r) == 1;) {
        CHECK_EQ_I64(r.vlen, 8);
        CHECK(em_f64_dec(r.val) == (double)(em_i64_dec(r.key) + 59000));
    }
    em_batch_free(b);
    int64_t cnt;
    CHECK_EQ_I64(em_count(em_reduce_by_key(pairs, emit_twice, NULL, 0, 2), &cnt), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "emitted more than one value");
    CHECK_EQ_I64(em_count(em_reduce_by_key(pairs, emit_none, NULL, 0, 2), &cnt), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "emitted 0 values");
    CHECK_EQ_I64(em_count(em_reduce_by_key(pairs, emit_pair, NULL, 0, 2), &cnt), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "plain values, not pairs");
    em_close(c);
}

/* ------------------------------------------------------- fold_by_key */

TEST(wide_fold_by_key_sum_and_max) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t m = 10;
    em_rdd *pairs = em_map(em_range(c, 0, 10000, 1, 7), fn_mod_key, &m, sizeof m);
    uint8_t zero[8];
    em_i64_enc(0, zero);
    em_batch *b;
    CHECK_OK(em_collect(em_fold_by_key(pairs, zero, 8, fn_sum_i64, NULL, 0, 3), &b));
    CHECK_EQ_I64(em_batch_count(b), 10);
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(b, &pos, &r) == 1) {
        int64_t k = em_i64_dec(r.key);
        CHECK_EQ_I64(em_i64_dec(r.val), 1000 * k + 10 * (999 * 1000 / 2));
    }
    em_batch_free(b);
    em_i64_enc(-5, zero); /* below every value: max is unaffected */
    CHECK_OK(em_collect(em_fold_by_key(pairs, zero, 8, max_i64, NULL, 0, 2), &b));
    CHECK_EQ_I64(em_batch_count(b), 10);
    pos = 0;
    while (em_batch_next(b, &pos, &r) == 1) CHECK_EQ_I64(em_i64_dec(r.val), em_i64_dec(r.key) + 9990);
    em_batch_free(b);
    em_close(c);
}

/* ------------------------------------------------- builtin combiners */

/* Sums that wrap around, as em_sum_i64's (no signed overflow). */
static int sum_wrap_fn(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return em_emit_i64(out, (int64_t)((uint64_t)em_i64_dec(a->val) + (uint64_t)em_i64_dec(b->val)));
}
static int min_i64_fn(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    int64_t x = em_i64_dec(a->val), y = em_i64_dec(b->val);
    return em_emit_i64(out, y < x ? y : x);
}
static int max_i64_fn(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    int64_t x = em_i64_dec(a->val), y = em_i64_dec(b->val);
    return em_emit_i64(out, y > x ? y : x);
}

static int key_below(const em_rec *in, const void *arg) {
    int64_t lim;
    memcpy(&lim, arg, 8);
    return em_i64_dec(in->key) < lim;
}

/* v -> (v % 97, a value spread over the whole int64 range, so sums wrap). */
static int spread_pair(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t v = rec_i64(in);
    uint64_t x = (uint64_t)v * 0x9E3779B97F4A7C15ull;
    uint8_t k[8];
    em_i64_enc(v % 97, k);
    return em_emit_pair_i64(out, k, 8, (int64_t)x);
}

/* v -> (v % 13, double value with negatives, zeros and one NaN key). */
static int spread_f64(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t v = rec_i64(in);
    uint8_t k[8], d[8];
    em_i64_enc(v % 13, k);
    double x = v == 5010 ? 0.0 / 0.0 : (double)((v * 7919) % 2001 - 1000) / 8.0;
    em_f64_enc(x, d);
    return em_emit_pair(out, k, 8, d, 8);
}

/* Per key, the builtin's results equal those of the same function written
 * by hand (i64), and of a direct loop (f64): in the shuffle (where they are
 * applied in place, map side and reduce side) and as plain functions (em_reduce). */
TEST(wide_builtin_combiners) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *pairs = em_map(em_range(c, 0, 20000, 1, 4), spread_pair, NULL, 0);
    em_comb_fn bi[3] = {em_sum_i64, em_min_i64, em_max_i64}, fn[3] = {sum_wrap_fn, min_i64_fn, max_i64_fn};
    for (int op = 0; op < 3; op++) {
        em_batch *want, *got;
        CHECK_OK(em_collect(em_sort_by_key(em_reduce_by_key(pairs, fn[op], NULL, 0, 3), 1, 2), &want));
        CHECK_OK(em_collect(em_sort_by_key(em_reduce_by_key(pairs, bi[op], NULL, 0, 3), 1, 2), &got));
        CHECK_EQ_I64(em_batch_count(got), 97);
        CHECK(batches_equal(want, got));
        em_batch_free(want);
        em_batch_free(got);
    }
    /* fold_by_key with a zero goes through the builtin too. */
    uint8_t zero[8];
    em_i64_enc(1000, zero);
    em_batch *b;
    int64_t m = 10;
    em_rdd *small = em_map(em_range(c, 0, 10000, 1, 7), fn_mod_key, &m, sizeof m);
    CHECK_OK(em_collect(em_fold_by_key(small, zero, 8, em_sum_i64, NULL, 0, 3), &b));
    CHECK_EQ_I64(em_batch_count(b), 10);
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(b, &pos, &r) == 1) {
        int64_t k = em_i64_dec(r.key), v = em_i64_dec(r.val);
        /* 1000 per map partition holding the key (7 partitions: each holds every key) */
        CHECK_EQ_I64(v, 1000 * k + 10 * (999 * 1000 / 2) + 7 * 1000);
    }
    em_batch_free(b);
    /* em_reduce (an action) with a builtin: the maximum. */
    CHECK_OK(em_reduce(em_range(c, -50, 1234, 1, 5), em_max_i64, NULL, 0, &b));
    CHECK_OK(em_batch_get(b, 0, &r));
    CHECK_EQ_I64(rec_i64(&r), 1233);
    em_batch_free(b);
    /* Doubles: sum, min, max per key against a loop here. */
    em_rdd *dpairs = em_map(em_range(c, 0, 13000, 1, 4), spread_f64, NULL, 0);
    double sum[13] = {0}, mn[13], mx[13];
    for (int k = 0; k < 13; k++) mn[k] = 1e300, mx[k] = -1e300;
    for (int64_t v = 0; v < 13000; v++) {
        double x = (double)((v * 7919) % 2001 - 1000) / 8.0; /* exact in binary: sums are exact */
        int k = (int)(v % 13);
        sum[k] += x;
        if (x < mn[k]) mn[k] = x;
        if (x > mx[k]) mx[k] = x;
    }
    em_comb_fn dfn[3] = {em_sum_f64, em_min_f64, em_max_f64};
    for (int op = 0; op < 3; op++) {
        CHECK_OK(em_collect(em_reduce_by_key(dpairs, dfn[op], NULL, 0, 2), &b));
        CHECK_EQ_I64(em_batch_count(b), 13);
        pos = 0;
        while (em_batch_next(b, &pos, &r) == 1) {
            int k = (int)em_i64_dec(r.key);
            double v = em_f64_dec(r.val), w = op == 0 ? sum[k] : op == 1 ? mn[k] : mx[k];
            if (k == 5) CHECK(v != v); /* a NaN wins, as in Java's Math.min/max and in a sum */
            else CHECK(v == w);
        }
        em_batch_free(b);
    }
    em_close(c);
}

/* A builtin given values that are not 8 bytes fails the job, naming it. */
TEST(wide_builtin_combiner_wrong_length) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    const char *kv[] = {"a=xyz", "a=xyz", "b=1"};
    int64_t n;
    CHECK(em_count(em_reduce_by_key(kv_strs(c, kv, 3, 2), em_sum_i64, NULL, 0, 2), &n) < 0);
    CHECK(strstr(em_errmsg(), "em_sum_i64: a value of 3 bytes") != NULL);
    em_close(c);
}

/* Map-side combining adapts: map tasks whose first 100,000 records hold
 * distinct keys stop combining and write every record; tasks whose keys
 * repeat combine to one record per key.  Counted, not timed. */
static int adapt_pair(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t v = rec_i64(in), i = v % 150000;
    uint8_t k[8];
    em_i64_enc(i < 100000 ? v + 1000 : i % 10, k);
    return em_emit_pair_i64(out, k, 8, 1);
}

TEST(wide_reduce_by_key_adaptive_combine) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_stats s0, s1;
    int64_t n;
    em_get_stats(c, &s0);
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 300000, 1, 2), adapt_pair, NULL, 0), em_sum_i64, NULL, 0, 4);
    CHECK_OK(em_count(sums, &n));
    CHECK_EQ_I64(n, 200000 + 10);
    em_get_stats(c, &s1);
    CHECK_EQ_I64(s1.shuffle_records_written - s0.shuffle_records_written, 300000);
    em_batch *b;
    CHECK_OK(em_collect(em_filter(sums, key_below, &(int64_t){10}, sizeof(int64_t)), &b));
    CHECK_EQ_I64(em_batch_count(b), 10);
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(b, &pos, &r) == 1) CHECK_EQ_I64(em_i64_dec(r.val), 10000);
    em_batch_free(b);
    /* 10 keys from the start: each map writes one record per key. */
    int64_t m = 10;
    em_get_stats(c, &s0);
    CHECK_OK(em_count(em_reduce_by_key(em_map(em_range(c, 0, 300000, 1, 2), fn_mod_key, &m, sizeof m), em_sum_i64,
                                       NULL, 0, 4),
                      &n));
    CHECK_EQ_I64(n, 10);
    em_get_stats(c, &s1);
    CHECK_EQ_I64(s1.shuffle_records_written - s0.shuffle_records_written, 2 * 10);
    em_close(c);
}

/* ------------------------------------------------------ group_by_key */

TEST(wide_group_by_key_lists) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t m = 13;
    em_rdd *g = em_group_by_key(em_map(em_range(c, 0, 1300, 1, 5), fn_mod_key, &m, sizeof m), 4);
    CHECK_EQ_I64(em_num_partitions(g), 4);
    em_batch *b;
    CHECK_OK(em_collect(g, &b));
    CHECK_EQ_I64(em_batch_count(b), 13);
    size_t pos = 0;
    em_rec r;
    int seen[13] = {0};
    while (em_batch_next(b, &pos, &r) == 1) {
        int64_t k = em_i64_dec(r.key);
        CHECK(k >= 0 && k < 13 && !seen[k]);
        seen[k] = 1;
        size_t lp = 0, il;
        const void *item;
        int64_t n = 0, sum = 0;
        uint8_t hit[100] = {0};
        int rc;
        while ((rc = em_list_next(r.val, r.vlen, &lp, &item, &il)) == 1) {
            CHECK_EQ_I64(il, 8);
            int64_t v = em_i64_dec(item);
            CHECK_EQ_I64(v % 13, k);
            CHECK(!hit[v / 13]); /* each value once */
            hit[v / 13] = 1;
            n++;
            sum += v;
        }
        CHECK_EQ_I64(rc, 0);
        CHECK_EQ_I64(n, 100);
        CHECK_EQ_I64(sum, 100 * k + 13 * (99 * 100 / 2));
    }
    em_batch_free(b);
    em_close(c);
}

/* ---------------------------------------------------- joins, cogroup */

static const char *const LEFT[] = {"k1=a1", "k1=a2", "k1=a3", "k2=a4", "k3=a5", "k3=a6"};
static const char *const RIGHT[] = {"k1=b1", "k1=b2", "k2=b3", "k2=b4", "k4=b5"};

/* The join output as sorted strings "key|a|b", '-' for a missing side. */
static int join_strings(em_rdd *j, char ***out, size_t *n) {
    em_batch *b;
    int rc = em_collect(j, &b);
    if (rc) return rc;
    *n = em_batch_count(b);
    *out = calloc(*n + 1, sizeof **out);
    size_t pos = 0, i = 0;
    em_rec r;
    while (em_batch_next(b, &pos, &r) == 1) {
        em_tuple t;
        if (em_tuple_unpack(r.val, r.vlen, &t)) {
            em_batch_free(b);
            return -100;
        }
        char s[256];
        snprintf(s, sizeof s, "%.*s|%.*s|%.*s", (int)r.klen, (const char *)r.key,
                 t.a_present ? (int)t.alen : 1, t.a_present ? (const char *)t.a : "-",
                 t.b_present ? (int)t.blen : 1, t.b_present ? (const char *)t.b : "-");
        (*out)[i++] = strdup(s);
    }
    em_batch_free(b);
    qsort(*out, *n, sizeof **out, cmp_str);
    return 0;
}

static int same_strings(char **got, size_t n, const char *const *want, size_t wn) {
    const char **w = malloc(sizeof *w * (wn + 1));
    memcpy(w, want, sizeof *w * wn);
    qsort(w, wn, sizeof *w, cmp_str);
    int ok = n == wn;
    for (size_t i = 0; ok && i < n; i++)
        if (strcmp(got[i], w[i])) {
            fprintf(stderr, "  got \"%s\", want \"%s\"\n", got[i], w[i]);
            ok = 0;
        }
    if (n != wn) fprintf(stderr, "  got %zu strings, want %zu\n", n, wn);
    free(w);
    return ok;
}

#define JOIN_INNER                                                                                   \
    "k1|a1|b1", "k1|a1|b2", "k1|a2|b1", "k1|a2|b2", "k1|a3|b1", "k1|a3|b2", "k2|a4|b3", "k2|a4|b4"
#define JOIN_LEFT_ONLY "k3|a5|-", "k3|a6|-"
#define JOIN_RIGHT_ONLY "k4|-|b5"

TEST(wide_join_duplicate_keys_and_outer) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *l = kv_strs(c, LEFT, 6, 3), *r = kv_strs(c, RIGHT, 5, 2);
    char **got;
    size_t n;
    static const char *const inner[] = {JOIN_INNER};
    static const char *const left[] = {JOIN_INNER, JOIN_LEFT_ONLY};
    static const char *const right[] = {JOIN_INNER, JOIN_RIGHT_ONLY};
    static const char *const full[] = {JOIN_INNER, JOIN_LEFT_ONLY, JOIN_RIGHT_ONLY};

    em_rdd *j = em_join(l, r, 4);
    CHECK_EQ_I64(em_num_partitions(j), 4);
    CHECK_OK(join_strings(j, &got, &n));
    int ok = same_strings(got, n, inner, 8);
    free_strs(got, n);
    CHECK(ok);

    CHECK_OK(join_strings(em_left_outer_join(l, r, 3), &got, &n));
    ok = same_strings(got, n, left, 10);
    free_strs(got, n);
    CHECK(ok);

    CHECK_OK(join_strings(em_right_outer_join(l, r, 2), &got, &n));
    ok = same_strings(got, n, right, 9);
    free_strs(got, n);
    CHECK(ok);

    CHECK_OK(join_strings(em_full_outer_join(l, r, 0), &got, &n));
    ok = same_strings(got, n, full, 11);
    free_strs(got, n);
    CHECK(ok);
    em_close(c);
}

/* Every key k < 1000 has 3 values on the left (3k, 3k+1, 3k+2) and 2 on the
 * right (-2k, -2k-1): the join has 6 tuples per key. */
static int left_vals(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t k = rec_i64(in);
    uint8_t kb[8];
    em_i64_enc(k, kb);
    for (int i = 0; i < 3; i++) {
        int rc = em_emit_pair_i64(out, kb, 8, 3 * k + i);
        if (rc) return rc;
    }
    return 0;
}
static int right_vals(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t k = rec_i64(in);
    uint8_t kb[8];
    em_i64_enc(k, kb);
    for (int i = 0; i < 2; i++) {
        int rc = em_emit_pair_i64(out, kb, 8, -2 * k - i);
        if (rc) return rc;
    }
    return 0;
}

TEST(wide_join_cross_product_many_keys) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *l = em_flat_map(em_range(c, 0, 1000, 1, 4), left_vals, NULL, 0);
    em_rdd *r = em_flat_map(em_range(c, 500, 1500, 1, 3), right_vals, NULL, 0);
    em_batch *b;
    CHECK_OK(em_collect(em_join(l, r, 5), &b));
    CHECK_EQ_I64(em_batch_count(b), 500 * 6); /* keys 500..999 are in both */
    static uint8_t seen[1000][6];
    memset(seen, 0, sizeof seen);
    size_t pos = 0;
    em_rec rec;
    while (em_batch_next(b, &pos, &rec) == 1) {
        em_tuple t;
        CHECK_OK(em_tuple_unpack(rec.val, rec.vlen, &t));
        CHECK(t.a_present && t.b_present && t.alen == 8 && t.blen == 8);
        int64_t k = em_i64_dec(rec.key), a = em_i64_dec(t.a), bv = em_i64_dec(t.b);
        CHECK(k >= 500 && k < 1000);
        CHECK(a >= 3 * k && a < 3 * k + 3);
        CHECK(bv == -2 * k || bv == -2 * k - 1);
        int slot = (int)(a - 3 * k) * 2 + (int)(-2 * k - bv);
        CHECK(!seen[k][slot]);
        seen[k][slot] = 1;
    }
    em_batch_free(b);
    /* full outer: 500 keys with both sides, 500 left-only keys with 3
     * values each, 500 right-only keys with 2 values each */
    int64_t n = 0;
    CHECK_OK(em_count(em_full_outer_join(l, r, 3), &n));
    CHECK_EQ_I64(n, 3000 + 1500 + 1000);
    em_close(c);
}

/* A cogroup value as "key|a,a,...|b,b,..." with each side's values sorted. */
static char *cogroup_string(const em_rec *r) {
    const void *la, *lb;
    size_t lal, lbl;
    if (em_cogroup_unpack(r->val, r->vlen, &la, &lal, &lb, &lbl)) return NULL;
    char out[512];
    int o = snprintf(out, sizeof out, "%.*s", (int)r->klen, (const char *)r->key);
    for (int side = 0; side < 2; side++) {
        char *items[16];
        int ni = 0;
        size_t pos = 0, il;
        const void *it;
        while (ni < 16 && em_list_next(side ? lb : la, side ? lbl : lal, &pos, &it, &il) == 1)
            items[ni++] = strndup(it, il);
        qsort(items, (size_t)ni, sizeof *items, cmp_str);
        o += snprintf(out + o, sizeof out - (size_t)o, "|");
        for (int i = 0; i < ni; i++) {
            o += snprintf(out + o, sizeof out - (size_t)o, "%s%s", i ? "," : "", items[i]);
            free(items[i]);
        }
    }
    return strdup(out);
}

TEST(wide_cogroup_both_sides) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *cg = em_cogroup(kv_strs(c, LEFT, 6, 2), kv_strs(c, RIGHT, 5, 3), 0);
    CHECK(cg);
    CHECK_EQ_I64(em_num_partitions(cg), 3);
    em_batch *b;
    CHECK_OK(em_collect(cg, &b));
    size_t n = em_batch_count(b), pos = 0, i = 0;
    char **got = calloc(n + 1, sizeof *got);
    em_rec r;
    int ok = 1;
    while (em_batch_next(b, &pos, &r) == 1)
        if (!(got[i++] = cogroup_string(&r))) ok = 0; /* not a cogroup value */
    em_batch_free(b);
    static const char *const want[] = {"k1|a1,a2,a3|b1,b2", "k2|a4|b3,b4", "k3|a5,a6|", "k4||b5"};
    if (ok) {
        qsort(got, n, sizeof *got, cmp_str);
        ok = same_strings(got, n, want, 4);
    }
    free_strs(got, n);
    CHECK(ok);
    em_close(c);
}

/* ----------------------------------------------------------- distinct */

static int mod1000(const em_rec *in, em_emitter *out, const void *arg) { return em_emit_i64(out, rec_i64(in) % 1000); }
static int val_mod3(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_i64(out, em_i64_dec(in->val) % 3);
}

TEST(wide_distinct_plain_and_pairs) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_batch *b;
    em_rdd *d = em_distinct(em_map(em_range(c, 0, 100000, 1, 8), mod1000, NULL, 0), 5);
    CHECK_EQ_I64(em_num_partitions(d), 5);
    CHECK_OK(em_collect(d, &b));
    CHECK_EQ_I64(em_batch_count(b), 1000);
    CHECK_EQ_I64(batch_sum_i64(b), 999 * 1000 / 2);
    size_t pos = 0;
    em_rec r;
    uint8_t hit[1000] = {0};
    while (em_batch_next(b, &pos, &r) == 1) {
        CHECK(r.key == NULL);
        int64_t v = rec_i64(&r);
        CHECK(v >= 0 && v < 1000 && !hit[v]);
        hit[v] = 1;
    }
    em_batch_free(b);

    /* pairs (v % 50, v % 3): 150 distinct pairs over 3000 records */
    int64_t m = 50;
    em_rdd *pairs = em_map_values(em_map(em_range(c, 0, 3000, 1, 4), fn_mod_key, &m, sizeof m), val_mod3, NULL, 0);
    CHECK_OK(em_collect(em_distinct(pairs, 3), &b));
    CHECK_EQ_I64(em_batch_count(b), 150);
    uint8_t seen[50][3];
    memset(seen, 0, sizeof seen);
    pos = 0;
    while (em_batch_next(b, &pos, &r) == 1) {
        CHECK(r.key && r.klen == 8 && r.vlen == 8);
        int64_t k = em_i64_dec(r.key), v = em_i64_dec(r.val);
        CHECK(k >= 0 && k < 50 && v >= 0 && v < 3 && !seen[k][v]);
        seen[k][v] = 1;
    }
    em_batch_free(b);

    /* Records with the same bytes but different shapes stay distinct. */
    em_rec recs[] = {{"a", 1, "b", 1}, {"ab", 2, "", 0}, {"", 0, "ab", 2}, {NULL, 0, "ab", 2},
                     {"a", 1, "b", 1}, {NULL, 0, "ab", 2}, {"ab", 2, "", 0}};
    int64_t n = 0;
    CHECK_OK(em_count(em_distinct(em_parallelize(c, recs, 7, 3), 2), &n));
    CHECK_EQ_I64(n, 4);

    /* Shapes around the 16 bytes of an (8-byte, 8-byte) pair, which is its
     * own key: a 7 + 8 pair (an encoding of 17 bytes), a 7 + 7 pair and a
     * plain 14-byte record (encodings of 16 bytes), a 16-byte key or value
     * alone; each comes back once, byte for byte, from distinct and from
     * intersection with itself, and subtract of the pairs leaves the rest. */
    em_rec shapes[] = {{"AAAAAAAA", 8, "BBBBBBBB", 8}, {"AAAAAAA", 7, "ABBBBBBB", 8}, {"AAAAAAA", 7, "BBBBBBB", 7},
                       {NULL, 0, "AAAAAAAABBBBBB", 14}, {"AAAAAAAABBBBBBBB", 16, "", 0},
                       {"", 0, "AAAAAAAABBBBBBBB", 16}, {"AAAAAAAB", 8, "BBBBBBBB", 8}};
    enum { NSHAPES = sizeof shapes / sizeof shapes[0] };
    em_rec twice[2 * NSHAPES];
    for (int i = 0; i < 2 * NSHAPES; i++) twice[i] = shapes[(i * 3) % NSHAPES];
    em_rdd *all = em_parallelize(c, twice, 2 * NSHAPES, 3);
    em_rdd *pairs8 = em_parallelize(c, shapes, 1, 1);
    em_rdd *sets[3] = {em_distinct(all, 2), em_intersection(all, all, 2), em_subtract(all, pairs8, 2)};
    for (int k = 0; k < 3; k++) {
        CHECK_OK(em_collect(sets[k], &b));
        int want = k == 2 ? 2 * NSHAPES - 2 : NSHAPES; /* subtract keeps duplicates, as Spark's does */
        CHECK_EQ_I64(em_batch_count(b), want);
        int hits[NSHAPES] = {0};
        pos = 0;
        while (em_batch_next(b, &pos, &r) == 1) {
            int found = -1;
            for (int i = 0; i < NSHAPES; i++)
                if (!r.key == !shapes[i].key && r.klen == shapes[i].klen && r.vlen == shapes[i].vlen &&
                    (!r.klen || !memcmp(r.key, shapes[i].key, r.klen)) && !memcmp(r.val, shapes[i].val, r.vlen))
                    found = i;
            CHECK(found >= 0);
            hits[found]++;
        }
        for (int i = 0; i < NSHAPES; i++) CHECK_EQ_I64(hits[i], k == 2 ? 2 * (i != 0) : 1);
        em_batch_free(b);
    }
    em_close(c);
}

/* -------------------------------------------------------- sort_by_key */

/* Collect a sorted pair RDD and check: the keys in partition order equal
 * `sorted` (ascending or reversed), and each value (an index into keys)
 * belongs to its key. */
static int check_sorted(em_rdd *s, const int64_t *keys, const int64_t *sorted, size_t n, int asc) {
    em_batch *b;
    int rc = em_collect(s, &b);
    if (rc) {
        fprintf(stderr, "  collect: %s\n", em_errmsg());
        return 0;
    }
    int ok = em_batch_count(b) == n;
    size_t pos = 0, i = 0;
    em_rec r;
    uint8_t *used = calloc(n + 1, 1);
    while (ok && em_batch_next(b, &pos, &r) == 1) {
        int64_t k = em_i64_dec(r.key), idx = em_i64_dec(r.val);
        int64_t want = asc ? sorted[i] : sorted[n - 1 - i];
        if (k != want || idx < 0 || (size_t)idx >= n || keys[idx] != k || used[idx]) {
            fprintf(stderr, "  record %zu: key %lld (want %lld), index %lld\n", i, (long long)k, (long long)want,
                    (long long)idx);
            ok = 0;
        } else {
            used[idx] = 1;
        }
        i++;
    }
    free(used);
    em_batch_free(b);
    return ok;
}

TEST(wide_sort_by_key_negative_keys) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    size_t n = 20000;
    int64_t *keys = malloc(sizeof *keys * n), *sorted = malloc(sizeof *sorted * n);
    uint64_t s = 12345;
    for (size_t i = 0; i < n; i++) keys[i] = lcg_next(&s) % 2000001 - 1000000;
    keys[0] = INT64_MIN;
    keys[1] = INT64_MAX;
    keys[2] = -1;
    keys[3] = 0;
    keys[4] = 1;
    memcpy(sorted, keys, sizeof *keys * n);
    qsort(sorted, n, sizeof *sorted, cmp_i64);
    em_rdd *pairs = keyed_i64(c, keys, n, 5);
    em_rdd *asc = em_sort_by_key(pairs, 1, 4), *desc = em_sort_by_key(pairs, 0, 4);
    int ok = asc && desc && em_num_partitions(asc) == 4 && em_num_partitions(desc) == 4 &&
             check_sorted(asc, keys, sorted, n, 1) && check_sorted(desc, keys, sorted, n, 0);
    /* One output partition, and more output than input partitions. */
    ok = ok && check_sorted(em_sort_by_key(pairs, 1, 1), keys, sorted, n, 1) &&
         check_sorted(em_sort_by_key(pairs, 0, 9), keys, sorted, n, 0);
    free(keys);
    free(sorted);
    CHECK(ok);
    em_close(c);
}

/* Keys of 4 bytes (range bounds of one length below 8 compare as one
 * integer load, and the sort keeps them in its index alone), then the same
 * with keys of 3 and 5 bytes mixed in (which compare byte by byte, and
 * may share the 4-byte keys' first bytes), both directions: every record
 * once, in byte order across the partitions; the values (of 4 bytes, and
 * of none) stay with their keys. */
typedef struct short_kv { uint8_t k[24]; size_t kl; uint8_t v[16]; size_t vl; } short_kv;

static int short_kv_cmp(const void *x, const void *y) {
    const short_kv *a = x, *b = y;
    size_t n = a->kl < b->kl ? a->kl : b->kl;
    int c = memcmp(a->k, b->k, n);
    if (c || a->kl != b->kl) return c ? c : (a->kl > b->kl) - (a->kl < b->kl);
    return memcmp(a->v, b->v, a->vl < b->vl ? a->vl : b->vl);
}

static int short_sorted(em_rdd *res, const short_kv *want, size_t n, int ascending) {
    em_batch *b;
    if (!res || em_collect(res, &b)) return 0;
    short_kv *got = calloc(n + 1, sizeof *got);
    em_rec r;
    size_t pos = 0, i = 0;
    int ok = 1;
    while (em_batch_next(b, &pos, &r) == 1 && ok) {
        ok = i < n && r.klen <= sizeof got->k && r.vlen <= sizeof got->v;
        if (!ok) break;
        memcpy(got[i].k, r.key, r.klen);
        got[i].kl = r.klen;
        memcpy(got[i].v, r.val, r.vlen);
        got[i].vl = r.vlen;
        if (i) {
            /* keys in order (equal keys' values in any order) */
            short_kv a = got[i - 1], c = got[i];
            a.vl = c.vl = 0;
            int k = short_kv_cmp(&a, &c);
            if (ascending ? k > 0 : k < 0) ok = 0;
        }
        i++;
    }
    em_batch_free(b);
    em_rdd_release(res);
    if (ok && i == n) {
        qsort(got, n, sizeof *got, short_kv_cmp);
        for (size_t j = 0; j < n && ok; j++) ok = !short_kv_cmp(&got[j], &want[j]) && got[j].vl == want[j].vl;
    } else {
        ok = 0;
    }
    free(got);
    return ok;
}

/* The n records of recs (views into kv) parallelized, sorted both ways
 * (into 4 partitions ascending, desc_parts descending) and checked
 * against kv, which is sorted here. */
static int sorts_both_ways(em_ctx *c, short_kv *kv, const em_rec *recs, size_t n, int desc_parts) {
    em_rdd *pairs = em_parallelize(c, recs, n, 5);
    qsort(kv, n, sizeof *kv, short_kv_cmp);
    int ok = pairs && short_sorted(em_sort_by_key(pairs, 1, 4), kv, n, 1) &&
             short_sorted(em_sort_by_key(pairs, 0, desc_parts), kv, n, 0);
    em_rdd_release(pairs);
    return ok;
}

TEST(wide_sort_by_key_short_keys) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    size_t n = 12000;
    short_kv *kv = calloc(n, sizeof *kv);
    em_rec *recs = calloc(n, sizeof *recs);
    for (int mixed = 0; mixed < 2; mixed++)
        for (int vl = 4; vl >= 0; vl -= 4) {
            uint64_t s = 777 + (uint64_t)mixed * 10 + (uint64_t)vl;
            for (size_t i = 0; i < n; i++) {
                uint64_t x = lcg_next(&s);
                kv[i].kl = mixed && x % 5 == 0 ? 3 + (x >> 8) % 2 * 2 : 4;
                for (size_t j = 0; j < kv[i].kl; j++) kv[i].k[j] = (uint8_t)(x >> (16 + 8 * j) & 0x3f); /* shared bytes */
                if (x % 7 == 0) kv[i].k[kv[i].kl - 1] = 0; /* a zero last byte, as the padding */
                kv[i].vl = (size_t)vl;
                for (int j = 0; j < vl; j++) kv[i].v[j] = (uint8_t)(i >> (8 * j));
                recs[i] = (em_rec){kv[i].k, kv[i].kl, kv[i].v, kv[i].vl};
            }
            CHECK(sorts_both_ways(c, kv, recs, n, 3));
        }
    free(kv);
    free(recs);
    em_close(c);
}

/* Keys over 8 bytes: of one length (12, 16, 24) with values of 0, 8 and
 * 16 bytes, then of lengths 1 to 24 mixed.  Their first 8 bytes come from
 * four patterns, so most keys tie with range bounds and with each other
 * on the 8 bytes a prefix holds, and the bytes past them (from a small
 * alphabet, zero among them, as the padding) decide; both directions,
 * every record once, in byte order across the partitions. */
TEST(wide_sort_by_key_long_keys) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    size_t n = 12000;
    short_kv *kv = calloc(n, sizeof *kv);
    em_rec *recs = calloc(n, sizeof *recs);
    static const struct { int kl, vl; } shape[] = {{12, 8}, {16, 0}, {16, 16}, {24, 8}, {-1, 8}};
    for (size_t sh = 0; sh < sizeof shape / sizeof shape[0]; sh++) {
        uint64_t s = 4242 + sh;
        for (size_t i = 0; i < n; i++) {
            uint64_t x = lcg_next(&s), y = lcg_next(&s);
            kv[i].kl = shape[sh].kl > 0 ? (size_t)shape[sh].kl : 1 + (size_t)(x % 24);
            for (size_t j = 0; j < kv[i].kl; j++)
                kv[i].k[j] = j < 8 ? (uint8_t)("abcd"[x % 4] + (j == 7 ? x >> 2 & 1 : 0)) : (uint8_t)(y >> (2 * j) & 3);
            kv[i].vl = (size_t)shape[sh].vl;
            for (size_t j = 0; j < kv[i].vl; j++) kv[i].v[j] = (uint8_t)(i >> (8 * (j % 4)));
            recs[i] = (em_rec){kv[i].k, kv[i].kl, kv[i].v, kv[i].vl};
        }
        CHECK(sorts_both_ways(c, kv, recs, n, 7));
    }
    /* Every key's first 8 bytes alike: the bytes past them place keys
     * among the range bounds, which balance the partitions. */
    uint64_t s = 99;
    for (size_t i = 0; i < n; i++) {
        uint64_t y = lcg_next(&s);
        kv[i].kl = 16;
        memcpy(kv[i].k, "samekey:", 8);
        for (size_t j = 8; j < 16; j++) kv[i].k[j] = (uint8_t)(y >> (8 * (j - 8)));
        recs[i] = (em_rec){kv[i].k, 16, NULL, 0};
    }
    em_rdd *same = em_parallelize(c, recs, n, 5);
    CHECK(same);
    for (int asc = 0; asc < 2; asc++) CHECK(sorted_balanced(same, asc, (int64_t)n));
    em_rdd_release(same);
    free(kv);
    free(recs);
    em_close(c);
}

TEST(wide_sort_by_key_skewed) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    size_t n = 30000;
    int64_t *keys = malloc(sizeof *keys * n), *sorted = malloc(sizeof *sorted * n);
    uint64_t s = 99;
    for (size_t i = 0; i < n; i++) keys[i] = lcg_next(&s) % 10 ? 42 : lcg_next(&s) % 2001 - 1000;
    memcpy(sorted, keys, sizeof *keys * n);
    qsort(sorted, n, sizeof *sorted, cmp_i64);
    em_rdd *pairs = keyed_i64(c, keys, n, 6);
    int ok = check_sorted(em_sort_by_key(pairs, 1, 4), keys, sorted, n, 1) &&
             check_sorted(em_sort_by_key(pairs, 0, 4), keys, sorted, n, 0);
    /* Every key equal: one partition gets everything, nothing is lost. */
    for (size_t i = 0; i < n; i++) keys[i] = sorted[i] = 7;
    em_rdd *same = keyed_i64(c, keys, n, 3);
    ok = ok && check_sorted(em_sort_by_key(same, 1, 4), keys, sorted, n, 1) &&
         check_sorted(em_sort_by_key(same, 0, 4), keys, sorted, n, 0);
    free(keys);
    free(sorted);
    CHECK(ok);
    em_close(c);
}

TEST(wide_sort_by_key_balanced_ranges) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    size_t n = 40000;
    int64_t *keys = malloc(sizeof *keys * n);
    for (size_t i = 0; i < n; i++) keys[i] = (int64_t)((i * 7919) % n) - 20000; /* a permutation */
    em_rdd *pairs = keyed_i64(c, keys, n, 5);
    free(keys);
    for (int asc = 0; asc < 2; asc++) CHECK(sorted_balanced(pairs, asc, (int64_t)n));
    em_close(c);
}

static int keep_all(const em_rec *in, const void *arg) { return 1; }

/* Keys already in order inside each input partition: the sample must
 * reach past the reservoir's first fill to the whole partition, or the
 * bounds would crowd at each partition's first keys.  Over parallelized
 * records (handed to the sampler as batches) and through a filter (record
 * by record). */
TEST(wide_sort_by_key_ordered_input_balanced) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    size_t n = 200000;
    int64_t *keys = malloc(sizeof *keys * n);
    for (size_t i = 0; i < n; i++) keys[i] = (int64_t)i;
    em_rdd *pairs = keyed_i64(c, keys, n, 2);
    free(keys);
    for (int via = 0; via < 2; via++) {
        em_rdd *in = via ? em_filter(pairs, keep_all, NULL, 0) : pairs;
        CHECK(sorted_balanced(in, 1, (int64_t)n));
    }
    /* Input partitions of 100,000 and 10,000 records, sampled alike: the
     * bounds weigh each sample by its partition's count (what the sampler
     * reports), so the output is balanced all the same.  Equal weights
     * would give the small partition's keys half the output partitions. */
    size_t nbig = 100000, nsmall = 10000;
    int64_t *big = malloc(sizeof *big * nbig), *small = malloc(sizeof *small * nsmall);
    for (size_t i = 0; i < nbig; i++) big[i] = (int64_t)i;
    for (size_t i = 0; i < nsmall; i++) small[i] = (int64_t)(nbig + 10 * i);
    em_rdd *both = em_union(keyed_i64(c, big, nbig, 1), keyed_i64(c, small, nsmall, 1));
    free(big);
    free(small);
    for (int via = 0; via < 2; via++) {
        em_rdd *in = via ? em_filter(both, keep_all, NULL, 0) : both;
        CHECK(sorted_balanced(in, 1, (int64_t)(nbig + nsmall)));
    }
    em_close(c);
}

/* ------------------------------------------- partition_by, repartition */

TEST(wide_partition_by_key_placement) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    enum { N = 2000, K = 37, P = 5 };
    static char keys[N][12];
    em_rec recs[N];
    uint8_t vals[N][8];
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof keys[i], "key%d", i % K);
        em_i64_enc(i, vals[i]);
        recs[i] = (em_rec){keys[i], strlen(keys[i]), vals[i], 8};
    }
    em_rdd *pb = em_partition_by(em_parallelize(c, recs, N, 3), P);
    CHECK_EQ_I64(em_num_partitions(pb), P);
    em_batch *b;
    CHECK_OK(em_collect(em_glom(pb), &b));
    CHECK_EQ_I64(em_batch_count(b), P);
    int where[K], total = 0;
    for (int k = 0; k < K; k++) where[k] = -1;
    size_t pos = 0;
    em_rec g;
    for (int p = 0; em_batch_next(b, &pos, &g) == 1; p++) {
        size_t lp = 0;
        em_rec x;
        while (em_list_next_rec(g.val, g.vlen, &lp, &x) == 1) {
            CHECK(x.key && x.klen > 3 && !memcmp(x.key, "key", 3));
            int k = atoi(strndupa(x.key, x.klen) + 3);
            CHECK(k >= 0 && k < K);
            CHECK(where[k] == -1 || where[k] == p); /* one partition per key */
            where[k] = p;
            CHECK_EQ_I64(em_i64_dec(x.val) % K, k);
            total++;
        }
    }
    em_batch_free(b);
    CHECK_EQ_I64(total, N);
    /* lookup scans only the key's hash partition: it must find every value */
    for (int k = 0; k < K; k++) {
        char key[24];
        snprintf(key, sizeof key, "key%d", k);
        CHECK_OK(em_lookup(pb, key, strlen(key), &b));
        CHECK_EQ_I64(em_batch_count(b), N / K + (k < N % K));
        em_batch_free(b);
    }
    /* A second RDD with the same keys lands its keys in the same places. */
    em_rdd *pb2 = em_partition_by(em_parallelize(c, recs + 100, N - 100, 7), P);
    CHECK_OK(em_collect(em_glom(pb2), &b));
    pos = 0;
    for (int p = 0; em_batch_next(b, &pos, &g) == 1; p++) {
        size_t lp = 0;
        em_rec x;
        while (em_list_next_rec(g.val, g.vlen, &lp, &x) == 1) CHECK_EQ_I64(where[atoi(strndupa(x.key, x.klen) + 3)], p);
    }
    em_batch_free(b);
    em_close(c);
}

TEST(wide_repartition_counts) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *src = em_range(c, 0, 10000, 1, 3);
    em_rdd *rp = em_repartition(src, 7);
    CHECK_EQ_I64(em_num_partitions(rp), 7);
    int64_t n = 0, counts[7];
    CHECK_OK(em_count(rp, &n));
    CHECK_EQ_I64(n, 10000);
    em_batch *b;
    CHECK_OK(em_reduce(rp, fn_sum_i64, NULL, 0, &b));
    em_rec r;
    CHECK_OK(em_batch_get(b, 0, &r));
    CHECK_EQ_I64(rec_i64(&r), 9999 * 10000 / 2);
    em_batch_free(b);
    CHECK_OK(glom_counts(rp, counts, 7));
    for (int p = 0; p < 7; p++) CHECK(counts[p] >= 1400 && counts[p] <= 1460); /* 10000 / 7 = 1428.6 */
    /* Fewer partitions, and back to one. */
    em_rdd *one = em_repartition(rp, 1);
    CHECK_EQ_I64(em_num_partitions(one), 1);
    CHECK_OK(em_count(one, &n));
    CHECK_EQ_I64(n, 10000);
    em_close(c);
}

/* ---------------------------------------------------- unions of shuffles */

TEST(wide_union_of_shuffled) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t m10 = 10, m5 = 5;
    em_rdd *a = em_reduce_by_key(em_map(em_range(c, 0, 1000, 1, 3), fn_mod_key, &m10, 8), fn_sum_i64, NULL, 0, 3);
    em_rdd *b = em_reduce_by_key(em_map(em_range(c, 0, 500, 1, 2), fn_mod_key, &m5, 8), fn_sum_i64, NULL, 0, 2);
    em_rdd *u = em_union(a, b);
    CHECK_EQ_I64(em_num_partitions(u), 5);
    int64_t n = 0;
    CHECK_OK(em_count(u, &n));
    CHECK_EQ_I64(n, 15);
    em_batch *out;
    CHECK_OK(em_collect(em_reduce_by_key(u, fn_sum_i64, NULL, 0, 4), &out));
    CHECK_EQ_I64(em_batch_count(out), 10);
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(out, &pos, &r) == 1) {
        int64_t k = em_i64_dec(r.key), want = 0;
        for (int64_t v = k; v < 1000; v += 10) want += v;
        if (k < 5)
            for (int64_t v = k; v < 500; v += 5) want += v;
        CHECK_EQ_I64(em_i64_dec(r.val), want);
    }
    em_batch_free(out);
    /* A union of a shuffled RDD with itself counts it twice. */
    CHECK_OK(em_count(em_union(a, a), &n));
    CHECK_EQ_I64(n, 20);
    em_close(c);
}

/* Wide operations over no records at all. */
TEST(wide_empty_inputs) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *e = em_parallelize(c, NULL, 0, 3);
    CHECK(e);
    em_rdd *outs[] = {em_reduce_by_key(e, fn_sum_i64, NULL, 0, 2), em_group_by_key(e, 0), em_sort_by_key(e, 1, 4),
                      em_sort_by_key(e, 0, 2), em_join(e, e, 2), em_full_outer_join(e, e, 0), em_cogroup(e, e, 5),
                      em_distinct(e, 2), em_partition_by(e, 3), em_repartition(e, 2)};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        int64_t n = -1;
        CHECK(outs[i]);
        CHECK_OK(em_count(outs[i], &n));
        CHECK_EQ_I64(n, 0);
    }
    CHECK_EQ_I64(em_num_partitions(outs[1]), 3); /* the parent's count */
    CHECK_EQ_I64(em_num_partitions(outs[2]), 4);
    CHECK_EQ_I64(em_num_partitions(outs[6]), 5);
    em_close(c);
}
