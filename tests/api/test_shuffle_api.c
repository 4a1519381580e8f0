/*
 * test_shuffle_api.c -- shuffles under a small memory budget (spilling on
 * both sides), and tree_aggregate / tree_reduce against the plain
 * aggregate / reduce for every depth and several partitionings, and small
 * map outputs kept in memory (ember.shuffle.inMemoryOutput).
 */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

/* ------------------------------------------------------------- spills */

#define SPILL_N 300000
#define SPILL_KEYS 50000
#define SPILL_VLEN 50

/* i -> (i64 key, 50-byte value: i64 i, then filler derived from i). */
static int spill_pair(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t i = rec_i64(in), mod = *(const int64_t *)arg;
    uint8_t k[8], v[SPILL_VLEN];
    em_i64_enc(mod ? i % mod : (i * 7919) % SPILL_N, k);
    em_i64_enc(i, v);
    for (int j = 8; j < SPILL_VLEN; j++) v[j] = (uint8_t)(i * 31 + j);
    return em_emit_pair(out, k, 8, v, SPILL_VLEN);
}

/* Sum the leading int64s, keep the 50-byte width. */
static int spill_sum(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    if (a->vlen != SPILL_VLEN || b->vlen != SPILL_VLEN) return em_fail("spill_sum: lengths %zu %zu", a->vlen, b->vlen);
    uint8_t v[SPILL_VLEN];
    memcpy(v, a->val, SPILL_VLEN);
    em_i64_enc(em_i64_dec(a->val) + em_i64_dec(b->val), v);
    return em_emit(out, v, SPILL_VLEN);
}

static em_ctx *open_small_budget(void) {
    em_conf *conf = em_conf_new();
    if (!conf || em_conf_set(conf, "ember.shuffle.memoryBytes", "262144") ||
        em_conf_set(conf, "ember.local.dir", test_tmpdir())) {
        em_conf_free(conf);
        return NULL;
    }
    em_ctx *c = em_open(test_master(), conf);
    em_conf_free(conf);
    return c;
}

TEST(wide_spill_reduce_by_key) {
    em_ctx *c = open_small_budget();
    CHECK(c);
    int64_t mod = SPILL_KEYS;
    em_rdd *pairs = em_map(em_range(c, 0, SPILL_N, 1, 4), spill_pair, &mod, sizeof mod);
    em_rdd *sums = em_reduce_by_key(pairs, spill_sum, NULL, 0, 3);
    em_stats s0, s1;
    em_get_stats(c, &s0);
    em_batch *b;
    CHECK_OK(em_collect(sums, &b));
    em_get_stats(c, &s1);
    CHECK(s1.spills > s0.spills);
    CHECK_EQ_I64(em_batch_count(b), SPILL_KEYS);
    uint8_t *seen = calloc(SPILL_KEYS, 1);
    size_t pos = 0;
    em_rec r;
    int ok = 1;
    while (ok && em_batch_next(b, &pos, &r) == 1) {
        int64_t k = em_i64_dec(r.key), want = 0;
        for (int64_t i = k; i < SPILL_N; i += SPILL_KEYS) want += i;
        ok = k >= 0 && k < SPILL_KEYS && !seen[k] && r.vlen == SPILL_VLEN && em_i64_dec(r.val) == want;
        if (!ok) fprintf(stderr, "  key %lld: %lld, want %lld\n", (long long)k, (long long)em_i64_dec(r.val), (long long)want);
        else seen[k] = 1;
    }
    free(seen);
    em_batch_free(b);
    CHECK(ok);
    em_close(c);
}

TEST(wide_spill_sort_by_key) {
    em_ctx *c = open_small_budget();
    CHECK(c);
    int64_t mod = 0; /* keys: a permutation of 0..SPILL_N-1 */
    em_rdd *pairs = em_map(em_range(c, 0, SPILL_N, 1, 4), spill_pair, &mod, sizeof mod);
    for (int asc = 1; asc >= 0; asc--) {
        em_stats s0, s1;
        em_get_stats(c, &s0);
        em_batch *b;
        CHECK_OK(em_collect(em_sort_by_key(pairs, asc, 3), &b));
        em_get_stats(c, &s1);
        CHECK(s1.spills > s0.spills);
        CHECK_EQ_I64(em_batch_count(b), SPILL_N);
        size_t pos = 0;
        em_rec r;
        int64_t i = 0;
        int ok = 1;
        while (ok && em_batch_next(b, &pos, &r) == 1) {
            int64_t k = em_i64_dec(r.key), want = asc ? i : SPILL_N - 1 - i;
            /* the value's index maps to this key, and its filler is intact */
            int64_t idx = em_i64_dec(r.val);
            ok = k == want && r.vlen == SPILL_VLEN && (idx * 7919) % SPILL_N == k &&
                 ((const uint8_t *)r.val)[SPILL_VLEN - 1] == (uint8_t)(idx * 31 + SPILL_VLEN - 1);
            if (!ok) fprintf(stderr, "  record %lld: key %lld, index %lld\n", (long long)i, (long long)k, (long long)idx);
            i++;
        }
        em_batch_free(b);
        CHECK(ok);
    }
    em_close(c);
}

/* group_by_key and a join under the same budget: sorted runs spill. */
TEST(wide_spill_group_and_join) {
    em_ctx *c = open_small_budget();
    CHECK(c);
    int64_t mod = 1000;
    em_rdd *pairs = em_map(em_range(c, 0, 100000, 1, 4), spill_pair, &mod, sizeof mod);
    em_stats s0, s1;
    em_get_stats(c, &s0);
    em_batch *b;
    CHECK_OK(em_collect(em_group_by_key(pairs, 2), &b));
    em_get_stats(c, &s1);
    CHECK(s1.spills > s0.spills);
    CHECK_EQ_I64(em_batch_count(b), 1000);
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(b, &pos, &r) == 1) {
        size_t lp = 0, il;
        const void *it;
        int64_t n = 0, sum = 0;
        while (em_list_next(r.val, r.vlen, &lp, &it, &il) == 1) {
            CHECK_EQ_I64(il, SPILL_VLEN);
            n++;
            sum += em_i64_dec(it);
        }
        int64_t k = em_i64_dec(r.key);
        CHECK_EQ_I64(n, 100);
        CHECK_EQ_I64(sum, 100 * k + 1000 * (99 * 100 / 2));
    }
    em_batch_free(b);
    /* each key has 100 values on both sides: 10000 tuples per key */
    int64_t m10 = 10;
    em_rdd *small = em_map(em_range(c, 0, 1000, 1, 2), spill_pair, &m10, sizeof m10);
    int64_t n = 0;
    CHECK_OK(em_count(em_join(small, small, 3), &n));
    CHECK_EQ_I64(n, 10 * 100 * 100);
    em_close(c);
}

/* ----------------------------------------------------- tree_aggregate */

/* The accumulator: 32 bytes (sum, count, min, max) as encoded int64s. */
typedef struct acc4 { int64_t sum, count, min, max; } acc4;

static void acc_dec(const em_rec *r, acc4 *a) {
    const uint8_t *p = r->val;
    a->sum = em_i64_dec(p);
    a->count = em_i64_dec(p + 8);
    a->min = em_i64_dec(p + 16);
    a->max = em_i64_dec(p + 24);
}
static int acc_emit(em_emitter *out, const acc4 *a) {
    uint8_t b[32];
    em_i64_enc(a->sum, b);
    em_i64_enc(a->count, b + 8);
    em_i64_enc(a->min, b + 16);
    em_i64_enc(a->max, b + 24);
    return em_emit(out, b, 32);
}
static void acc_zero_rec(uint8_t *buf, em_rec *zero) {
    acc4 z = {0, 0, INT64_MAX, INT64_MIN};
    em_i64_enc(z.sum, buf);
    em_i64_enc(z.count, buf + 8);
    em_i64_enc(z.min, buf + 16);
    em_i64_enc(z.max, buf + 24);
    *zero = (em_rec){NULL, 0, buf, 32};
}

/* seq: starts from a copy of the accumulator and extends it. */
static int acc_seq(const em_rec *a, const em_rec *v, em_emitter *out, const void *arg) {
    if (a->vlen != 32 || v->vlen != 8) return em_fail("acc_seq: lengths %zu %zu", a->vlen, v->vlen);
    acc4 x;
    acc_dec(a, &x);
    int64_t y = em_i64_dec(v->val);
    x.sum += y;
    x.count++;
    if (y < x.min) x.min = y;
    if (y > x.max) x.max = y;
    return acc_emit(out, &x);
}
static int acc_comb(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    if (a->vlen != 32 || b->vlen != 32) return em_fail("acc_comb: lengths %zu %zu", a->vlen, b->vlen);
    acc4 x, y;
    acc_dec(a, &x);
    acc_dec(b, &y);
    x.sum += y.sum;
    x.count += y.count;
    if (y.min < x.min) x.min = y.min;
    if (y.max > x.max) x.max = y.max;
    return acc_emit(out, &x);
}

static int batch_one(em_batch *b, em_rec *r) { return em_batch_count(b) == 1 && em_batch_get(b, 0, r) == 0; }

/* tree_aggregate at every depth equals aggregate on rdd; returns 1 if so. */
static int tree_matches(em_rdd *rdd, int64_t n, int64_t sum, int64_t min, int64_t max) {
    uint8_t zb[32];
    em_rec zero, r, t;
    acc_zero_rec(zb, &zero);
    em_batch *plain, *tree;
    if (em_aggregate(rdd, &zero, acc_seq, acc_comb, NULL, 0, &plain)) {
        fprintf(stderr, "  aggregate: %s\n", em_errmsg());
        return 0;
    }
    int ok = batch_one(plain, &r) && r.vlen == 32;
    acc4 a;
    if (ok) {
        acc_dec(&r, &a);
        ok = a.sum == sum && a.count == n && a.min == min && a.max == max;
        if (!ok) fprintf(stderr, "  aggregate: sum %lld count %lld\n", (long long)a.sum, (long long)a.count);
    }
    for (int depth = 1; ok && depth <= 6; depth++) {
        if (em_tree_aggregate(rdd, &zero, acc_seq, acc_comb, NULL, 0, depth, &tree)) {
            fprintf(stderr, "  tree_aggregate depth %d: %s\n", depth, em_errmsg());
            ok = 0;
            break;
        }
        ok = batch_one(tree, &t) && t.vlen == r.vlen && !memcmp(t.val, r.val, r.vlen);
        if (!ok) fprintf(stderr, "  tree_aggregate depth %d differs from aggregate\n", depth);
        em_batch_free(tree);
    }
    /* depth 0 means the default (2) */
    if (ok && !em_tree_aggregate(rdd, &zero, acc_seq, acc_comb, NULL, 0, 0, &tree)) {
        ok = batch_one(tree, &t) && t.vlen == r.vlen && !memcmp(t.val, r.val, r.vlen);
        em_batch_free(tree);
    }
    em_batch_free(plain);
    return ok;
}

TEST(wide_tree_aggregate_depths) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    static const int parts[] = {1, 7, 100};
    for (int i = 0; i < 3; i++) {
        int64_t n = 5000;
        em_rdd *r = em_range(c, -1000, -1000 + n, 1, parts[i]);
        CHECK(tree_matches(r, n, n * (-1000) + n * (n - 1) / 2, -1000, -1000 + n - 1));
    }
    /* More partitions than records: most are empty. */
    int64_t v[5] = {9, -4, 100, 7, 7};
    CHECK(tree_matches(em_parallelize_i64(c, v, 5, 100), 5, 119, -4, 100));
    CHECK(tree_matches(em_parallelize_i64(c, v, 5, 7), 5, 119, -4, 100));
    /* One record, one partition. */
    CHECK(tree_matches(em_parallelize_i64(c, v + 2, 1, 1), 1, 100, 100, 100));
    em_close(c);
}

/* No records at all: both return the zero, over empty partitions and over
 * no partitions at all (em_empty). */
TEST(wide_tree_aggregate_empty) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    uint8_t zb[32];
    em_rec zero, r;
    acc_zero_rec(zb, &zero);
    static const int parts[] = {1, 7, 100};
    for (int i = 0; i < 3; i++) {
        em_rdd *e = em_parallelize_i64(c, NULL, 0, parts[i]);
        CHECK(e);
        CHECK_EQ_I64(em_num_partitions(e), parts[i]);
        for (int depth = 1; depth <= 6; depth++) {
            em_batch *b;
            CHECK_OK(em_tree_aggregate(e, &zero, acc_seq, acc_comb, NULL, 0, depth, &b));
            CHECK(batch_one(b, &r));
            CHECK(r.vlen == 32 && !memcmp(r.val, zb, 32));
            em_batch_free(b);
            CHECK_EQ_I64(em_tree_reduce(e, fn_sum_i64, NULL, 0, depth, &b), EM_EEMPTY);
            CHECK(b == NULL);
        }
        em_batch *b;
        CHECK_OK(em_aggregate(e, &zero, acc_seq, acc_comb, NULL, 0, &b));
        CHECK(batch_one(b, &r) && r.vlen == 32 && !memcmp(r.val, zb, 32));
        em_batch_free(b);
    }
    em_rdd *none = em_empty(c);
    CHECK(none && em_num_partitions(none) == 0);
    em_stats before, after;
    em_get_stats(c, &before);
    for (int depth = 1; depth <= 6; depth++) {
        em_batch *b;
        CHECK_OK(em_tree_aggregate(none, &zero, acc_seq, acc_comb, NULL, 0, depth, &b));
        CHECK(batch_one(b, &r) && r.vlen == 32 && !memcmp(r.val, zb, 32));
        em_batch_free(b);
        CHECK_EQ_I64(em_tree_reduce(none, fn_sum_i64, NULL, 0, depth, &b), EM_EEMPTY);
    }
    int64_t n = -1;
    CHECK_OK(em_count(none, &n));
    CHECK_EQ_I64(n, 0);
    em_get_stats(c, &after);
    CHECK_EQ_I64(after.tasks_run, before.tasks_run); /* no partition, no task */
    em_batch *b;
    CHECK_EQ_I64(em_tree_aggregate(em_range(c, 0, 10, 1, 2), &zero, acc_seq, acc_comb, NULL, 0, -1, &b), EM_EINVAL);
    em_close(c);
}

TEST(wide_tree_reduce_depths) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    static const int parts[] = {1, 7, 100};
    int64_t v[3] = {5, -12, 40};
    for (int i = 0; i < 3; i++) {
        em_rdd *rdds[2] = {em_range(c, 1, 3001, 1, parts[i]), em_parallelize_i64(c, v, 3, parts[i])};
        int64_t want[2] = {3000 * 3001 / 2, 33};
        for (int k = 0; k < 2; k++) {
            em_batch *b;
            em_rec r;
            CHECK_OK(em_reduce(rdds[k], fn_sum_i64, NULL, 0, &b));
            CHECK(batch_one(b, &r));
            CHECK_EQ_I64(rec_i64(&r), want[k]);
            em_batch_free(b);
            for (int depth = 1; depth <= 6; depth++) {
                CHECK_OK(em_tree_reduce(rdds[k], fn_sum_i64, NULL, 0, depth, &b));
                CHECK(batch_one(b, &r));
                CHECK_EQ_I64(rec_i64(&r), want[k]);
                em_batch_free(b);
            }
        }
    }
    em_close(c);
}

/* Every kind of operation over an RDD of no partitions. */
TEST(wide_empty_rdd_operations) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *none = em_empty(c);
    CHECK(none);
    em_batch *b;
    CHECK_OK(em_collect(none, &b));
    CHECK_EQ_I64(em_batch_count(b), 0);
    em_batch_free(b);
    CHECK_OK(em_take(none, 5, &b));
    CHECK_EQ_I64(em_batch_count(b), 0);
    em_batch_free(b);
    CHECK_EQ_I64(em_first(none, &b), EM_EEMPTY);
    CHECK_EQ_I64(em_reduce(none, fn_sum_i64, NULL, 0, &b), EM_EEMPTY);
    int64_t n = -1;
    CHECK_OK(em_count(em_reduce_by_key(none, fn_sum_i64, NULL, 0, 0), &n));
    CHECK_EQ_I64(n, 0);
    CHECK_OK(em_count(em_sort_by_key(none, 1, 0), &n));
    CHECK_EQ_I64(n, 0);
    int64_t three = 3;
    em_rdd *pairs = em_map(em_range(c, 0, 10, 1, 2), fn_mod_key, &three, sizeof three);
    CHECK_OK(em_count(em_join(none, pairs, 0), &n));
    CHECK_EQ_I64(n, 0);
    CHECK_OK(em_count(em_left_outer_join(pairs, none, 0), &n));
    CHECK_EQ_I64(n, 10);
    CHECK_OK(em_count(em_union(none, pairs), &n));
    CHECK_EQ_I64(n, 10);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/empty-out", test_tmpdir());
    CHECK_OK(em_save_as_text_file(none, dir));
    char marker[1100];
    snprintf(marker, sizeof marker, "%s/_SUCCESS", dir);
    FILE *f = fopen(marker, "r");
    CHECK(f);
    fclose(f);
    em_close(c);
}

/* ------------------------------------------------------------- codecs */

#define CODEC_N 60000

/* i -> (i64 (i * 7919) % CODEC_N, i64 i): the keys a permutation. */
static int codec_pair(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t i = rec_i64(in);
    uint8_t k[8], v[8];
    em_i64_enc((i * 7919) % CODEC_N, k);
    em_i64_enc(i, v);
    return em_emit_pair(out, k, 8, v, 8);
}

/* A reduce_by_key (1000 keys) and a sort_by_key that spills on the reduce
 * side, checked: 1 when both are right.  *bytes: the shuffle bytes the
 * sort wrote. */
static int codec_jobs(em_ctx *c, const char *codec, int64_t *bytes) {
    int64_t m = 1000;
    em_batch *b = NULL;
    em_stats s0, s1;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 100000, 1, 4), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                    NULL, 0, 3);
    if (em_collect(sums, &b) || !check_mod_sums(b, 100000, 1000)) {
        fprintf(stderr, "  %s: reduce_by_key: %s\n", codec, b ? "wrong sums" : em_errmsg());
        em_batch_free(b);
        return 0;
    }
    em_batch_free(b);
    b = NULL;
    em_get_stats(c, &s0);
    em_rdd *sorted = em_sort_by_key(em_map(em_range(c, 0, CODEC_N, 1, 4), codec_pair, NULL, 0), 1, 3);
    if (em_collect(sorted, &b)) {
        fprintf(stderr, "  %s: sort_by_key: %s\n", codec, em_errmsg());
        return 0;
    }
    em_get_stats(c, &s1);
    *bytes = s1.shuffle_bytes_written - s0.shuffle_bytes_written;
    size_t pos = 0;
    em_rec r;
    int64_t i = 0;
    int ok = em_batch_count(b) == CODEC_N;
    while (ok && em_batch_next(b, &pos, &r) == 1) {
        ok = em_i64_dec(r.key) == i && (em_i64_dec(r.val) * 7919) % CODEC_N == i;
        i++;
    }
    em_batch_free(b);
    if (!ok || s1.spills <= s0.spills)
        fprintf(stderr, "  %s: sort_by_key: %s, %lld spills\n", codec, ok ? "right" : "wrong order",
                (long long)(s1.spills - s0.spills));
    return ok && s1.spills > s0.spills;
}

static em_ctx *open_with_codec(const char *codec) {
    em_conf *conf = em_conf_new();
    /* Map outputs go to files (local[N] would keep them in memory, coded
     * with ember.shuffle.inMemoryOutput.codec). */
    if (!conf || em_conf_set(conf, "ember.io.compression.codec", codec) ||
        em_conf_set(conf, "ember.shuffle.inMemoryOutput.maxBytes", "0") ||
        em_conf_set(conf, "ember.shuffle.memoryBytes", "262144") ||
        em_conf_set(conf, "ember.local.dir", test_tmpdir())) {
        fprintf(stderr, "  %s: %s\n", codec, em_errmsg());
        em_conf_free(conf);
        return NULL;
    }
    em_ctx *c = em_open(test_master(), conf);
    em_conf_free(conf);
    return c;
}

/* Every codec of ember.io.compression.codec gives the same answers, set
 * through em_conf_set before em_open or em_set between jobs; map outputs
 * written under one codec are read after the setting changed; a name that
 * is not a codec is refused, naming the key and the codecs. */
TEST(api_shuffle_codecs) {
    static const char *const names[] = {"lz4", "zstd", "zlib", "prefix", "auto", "none"};
    int64_t bytes[6];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        em_ctx *c = open_with_codec(names[i]);
        CHECK(c);
        CHECK(codec_jobs(c, names[i], &bytes[i]));
        em_close(c);
    }
    /* The codec reached the executors: each compressing codec wrote less
     * than none; auto, on the one host of local[N] and local-cluster,
     * stores map outputs as they are (tasksched.c's output_codec). */
    for (int i = 0; i < 4; i++) CHECK(bytes[i] > 0 && bytes[i] < bytes[5] * 3 / 4);
    CHECK_EQ_I64(bytes[4], bytes[5]);

    em_ctx *c = open_with_codec("lz4");
    CHECK(c);
    CHECK_OK(em_set(c, "ember.io.compression.codec", " ZSTD "));
    CHECK_OK(em_set(c, "ember.io.compression.zstd.level", "7"));
    int64_t b7;
    CHECK(codec_jobs(c, "zstd level 7", &b7));
    CHECK_OK(em_set(c, "ember.io.compression.codec", "zlib"));
    CHECK_OK(em_set(c, "ember.shuffle.compress.level", "9"));
    CHECK(codec_jobs(c, "zlib level 9", &b7));

    /* A shuffle written with lz4, read again after the setting changed:
     * each block names its codec. */
    CHECK_OK(em_set(c, "ember.io.compression.codec", "lz4"));
    int64_t m = 1000;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 100000, 1, 4), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                    NULL, 0, 3);
    em_batch *b;
    CHECK_OK(em_collect(sums, &b));
    CHECK(check_mod_sums(b, 100000, 1000));
    em_batch_free(b);
    CHECK_OK(em_set(c, "ember.io.compression.codec", "zstd"));
    em_stats s0, s1;
    em_get_stats(c, &s0);
    CHECK_OK(em_collect(sums, &b));
    em_get_stats(c, &s1);
    CHECK(check_mod_sums(b, 100000, 1000));
    em_batch_free(b);
    CHECK_EQ_I64(s1.map_tasks_run - s0.map_tasks_run, 0); /* the map outputs were reused */
    CHECK(s1.stages_skipped > s0.stages_skipped);

    /* Refused when set, on a context or a conf, and the value kept. */
    CHECK_EQ_I64(em_set(c, "ember.io.compression.codec", "snappy"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.io.compression.codec: \"snappy\" is not one of auto, lz4, zstd, zlib, prefix, none");
    CHECK_STR_CONTAINS(em_get(c, "ember.io.compression.codec"), "zstd");
    CHECK_EQ_I64(em_set(c, "ember.io.compression.zstd.level", "23"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.io.compression.zstd.level: \"23\" is above the maximum of 22");
    em_close(c);
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_EQ_I64(em_conf_set(conf, "ember.io.compression.codec", ""), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.io.compression.codec");
    CHECK_STR_CONTAINS(em_conf_get(conf, "ember.io.compression.codec"), "auto");
    em_conf_free(conf);

    /* ember-submit's $EMBER_CONF goes through the same check: em_open
     * fails, naming the key. */
    setenv("EMBER_CONF", "ember.io.compression.codec=gzip", 1);
    c = em_open(test_master(), NULL);
    unsetenv("EMBER_CONF");
    CHECK(c == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.io.compression.codec: \"gzip\" is not one of auto, lz4, zstd, zlib, prefix, none");
}

/* ------------------------------------------------ map outputs in memory */

static em_ctx *open_outputs(const char *each, const char *total) {
    em_conf *conf = em_conf_new();
    em_ctx *c = NULL;
    if (conf && !em_conf_set(conf, "ember.local.dir", test_tmpdir()) &&
        !em_conf_set(conf, "ember.shuffle.inMemoryOutput.maxBytes", each) &&
        !em_conf_set(conf, "ember.shuffle.inMemoryOutput.totalBytes", total))
        c = em_open("local[2]", conf);
    if (!c) fprintf(stderr, "  em_open: %s\n", em_errmsg());
    em_conf_free(conf);
    return c;
}

/* Map output data files in the contexts' scratch directories. */
static size_t data_files_now(void) {
    char pat[512];
    glob_t g;
    snprintf(pat, sizeof pat, "%s/ember-*/shuffle_*.data", test_tmpdir());
    memset(&g, 0, sizeof g);
    if (glob(pat, 0, NULL, &g)) return 0;
    size_t n = g.gl_pathc;
    globfree(&g);
    return n;
}

/* (i % 10, i) summed by key over 10,000 records in 4 map tasks; checks the
 * sums and returns the RDD (the caller releases it). */
static em_rdd *mod_sums(em_ctx *c, int *ok) {
    int64_t m = 10;
    em_batch *b = NULL;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 10000, 1, 4), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                    NULL, 0, 3);
    *ok = sums && !em_collect(sums, &b) && check_mod_sums(b, 10000, 10);
    em_batch_free(b);
    return sums;
}

TEST(shuffle_small_outputs_in_memory) {
    em_ctx *c = open_outputs("1m", "64m");
    CHECK(c);
    int ok;
    em_rdd *sums = mod_sums(c, &ok);
    CHECK(ok);
    em_stats st, st2;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.shuffle_memory_outputs, 4); /* one per map task */
    CHECK(st.shuffle_memory_bytes > 0 && st.shuffle_memory_bytes <= st.shuffle_bytes_written);
    CHECK_EQ_I64(data_files_now(), 0);
    /* A second action reuses the outputs where they are. */
    int64_t n = 0;
    CHECK_OK(em_count(sums, &n));
    CHECK_EQ_I64(n, 10);
    em_get_stats(c, &st2);
    CHECK_EQ_I64(st2.stages_skipped - st.stages_skipped, 1);
    CHECK_EQ_I64(st2.shuffle_memory_outputs, 4);
    /* Released with their shuffle. */
    em_rdd_release(sums);
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.live_shuffles, 0);
    CHECK_EQ_I64(st.shuffle_memory_outputs, 0);
    CHECK_EQ_I64(st.shuffle_memory_bytes, 0);
    em_close(c);
}

TEST(shuffle_outputs_over_the_limit_written) {
    /* Each map output (a header and three partitions' blocks) is over 16
     * bytes, so all are files. */
    em_ctx *c = open_outputs("16", "64m");
    CHECK(c);
    int ok;
    em_rdd *sums = mod_sums(c, &ok);
    CHECK(ok);
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.shuffle_memory_outputs, 0);
    CHECK_EQ_I64(data_files_now(), 4);
    em_rdd_release(sums);
    CHECK_EQ_I64(data_files_now(), 0);
    em_close(c);
    /* 0 turns the store off. */
    c = open_outputs("0", "64m");
    CHECK(c);
    sums = mod_sums(c, &ok);
    CHECK(ok);
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.shuffle_memory_outputs, 0);
    CHECK_EQ_I64(data_files_now(), 4);
    em_rdd_release(sums);
    em_close(c);
}

TEST(shuffle_memory_outputs_total_bounded) {
    /* The four outputs' bytes, then a total that holds about half. */
    em_ctx *c = open_outputs("1m", "64m");
    CHECK(c);
    int ok;
    em_rdd *sums = mod_sums(c, &ok);
    CHECK(ok);
    em_stats st;
    em_get_stats(c, &st);
    int64_t all = st.shuffle_memory_bytes;
    em_rdd_release(sums);
    em_close(c);
    char total[32];
    snprintf(total, sizeof total, "%lld", (long long)(all / 2));
    c = open_outputs("1m", total);
    CHECK(c);
    sums = mod_sums(c, &ok);
    CHECK(ok);
    em_get_stats(c, &st);
    CHECK(st.shuffle_memory_outputs >= 1 && st.shuffle_memory_outputs <= 2);
    CHECK(st.shuffle_memory_bytes <= all / 2);
    CHECK_EQ_I64((int64_t)data_files_now(), 4 - st.shuffle_memory_outputs);
    em_rdd_release(sums);
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.shuffle_memory_outputs, 0);
    CHECK_EQ_I64(data_files_now(), 0);
    em_close(c);
}

TEST(shuffle_big_outputs_in_memory_codecs) {
    /* With the defaults a 200,000-record shuffle (all keys distinct, so
     * map-side combining stops) stays in memory, and no file is made.
     * With ember.shuffle.inMemoryOutput.codec none the blocks are the
     * records as they are: the kept bytes are what the map tasks wrote but
     * each data file's header.  The default, prefix, keeps fewer than half
     * as many bytes (8-byte keys and values below 2^20 share their high
     * bytes), and lz4 fewer than none. */
    static const char *const codecs[] = {"none", "prefix", "lz4", NULL};
    int64_t plain = 0;
    for (int i = 0; i < 3; i++) {
        em_conf *conf = em_conf_new();
        em_ctx *c = NULL;
        if (conf && !em_conf_set(conf, "ember.local.dir", test_tmpdir()) &&
            (!codecs[i] || !em_conf_set(conf, "ember.shuffle.inMemoryOutput.codec", codecs[i])))
            c = em_open("local[2]", conf);
        em_conf_free(conf);
        CHECK(c);
        if (i == 1) CHECK_STR_CONTAINS(em_get(c, "ember.shuffle.inMemoryOutput.codec"), "prefix"); /* the default */
        int64_t m = 1000000, n = 0;
        em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 200000, 1, 4), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                        NULL, 0, 3);
        CHECK(sums);
        CHECK_OK(em_count(sums, &n));
        CHECK_EQ_I64(n, 200000);
        em_stats st;
        em_get_stats(c, &st);
        CHECK_EQ_I64(st.shuffle_memory_outputs, 4);
        CHECK_EQ_I64(data_files_now(), 0);
        CHECK_EQ_I64(st.shuffle_memory_bytes + 4 * 16, st.shuffle_bytes_written); /* 16-byte headers */
        if (i == 0) {
            CHECK(st.shuffle_memory_bytes >= 200000 * 18); /* 18 bytes a record at least, as they are */
            plain = st.shuffle_memory_bytes;
        } else {
            CHECK(st.shuffle_memory_bytes < (i == 1 ? plain / 2 : plain));
        }
        em_rdd_release(sums);
        em_get_stats(c, &st);
        CHECK_EQ_I64(st.shuffle_memory_outputs, 0);
        em_close(c);
    }
}

/* Outputs kept coded (one buffer per output, each partition's run in
 * extents interleaved with the others'), by lz4 or by the default prefix
 * codec: every reader mode gets every record, and a later job over the
 * same shuffle reuses them, running no map task. */
static void coded_outputs_reused(const char *codec) {
    em_conf *conf = em_conf_new();
    em_ctx *c = NULL;
    if (conf && !em_conf_set(conf, "ember.local.dir", test_tmpdir()) &&
        !em_conf_set(conf, "ember.shuffle.inMemoryOutput.codec", codec) &&
        !em_conf_set(conf, "ember.shuffle.blockBytes", "4096"))
        c = em_open("local[2]", conf);
    em_conf_free(conf);
    CHECK(c);
    int64_t m = 1000000, n = 0;
    em_rdd *pairs = em_map(em_range(c, 0, 200000, 1, 4), fn_mod_key, &m, sizeof m);
    em_rdd *sums = em_reduce_by_key(pairs, fn_sum_i64, NULL, 0, 3);
    CHECK(sums);
    em_stats s0, s1;
    em_get_stats(c, &s0);
    CHECK_OK(em_count(sums, &n));
    CHECK_EQ_I64(n, 200000);
    em_get_stats(c, &s1);
    CHECK_EQ_I64(s1.map_tasks_run - s0.map_tasks_run, 4);
    CHECK_EQ_I64(s1.shuffle_memory_outputs, 4);
    CHECK(s1.shuffle_memory_bytes < 200000 * 18); /* coded blocks: less than the records */
    CHECK_EQ_I64(data_files_now(), 0);
    /* A second job over the same shuffle: no map task, the same records. */
    em_batch *b = NULL;
    CHECK_OK(em_collect(sums, &b));
    em_get_stats(c, &s0);
    CHECK_EQ_I64(s0.map_tasks_run, s1.map_tasks_run);
    CHECK(s0.stages_skipped > s1.stages_skipped);
    size_t pos = 0;
    em_rec r;
    int64_t got = 0, wrong = 0;
    while (em_batch_next(b, &pos, &r) == 1) {
        got++;
        wrong += r.klen != 8 || r.vlen != 8 || em_i64_dec(r.key) != em_i64_dec(r.val);
    }
    em_batch_free(b);
    CHECK_EQ_I64(got, 200000);
    CHECK_EQ_I64(wrong, 0);
    /* Sorting and grouping read the same kind of outputs. */
    em_rdd *sorted = em_sort_by_key(pairs, 1, 3), *groups = em_group_by_key(pairs, 3);
    CHECK(sorted && groups);
    CHECK_OK(em_count(sorted, &n));
    CHECK_EQ_I64(n, 200000);
    CHECK_OK(em_count(groups, &n));
    CHECK_EQ_I64(n, 200000);
    em_get_stats(c, &s1);
    CHECK_EQ_I64(s1.shuffle_memory_outputs, 12);
    CHECK_EQ_I64(data_files_now(), 0);
    em_rdd_release(sorted);
    em_rdd_release(groups);
    em_rdd_release(sums);
    em_rdd_release(pairs);
    em_get_stats(c, &s1);
    CHECK_EQ_I64(s1.shuffle_memory_outputs, 0);
    em_close(c);
}

TEST(shuffle_coded_outputs_reused) {
    coded_outputs_reused("lz4");
    if (!test_failed) coded_outputs_reused("prefix");
}

/* ------------------------------------- builtin sums over 8-byte keys */

/* i -> (8-byte key i % 5000, or for every 97th record a 3-byte key; and
 * one key whose bytes are the 8-byte table's empty marker), value i. */
static int key8_mixed(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t i = rec_i64(in);
    int mixed = *(const int *)arg;
    uint8_t k[8], v[8];
    em_i64_enc(i, v);
    if (mixed && i % 97 == 0) return em_emit_pair(out, "odd", 3, v, 8);
    if (i % 1001 == 0) {
        static const uint8_t marker[8] = {0xe5, 0xf1, 0xed, 0x5e, 0x0d, 0xf0, 0xad, 0x8b}; /* AGG8_EMPTY, LE */
        return em_emit_pair(out, marker, 8, v, 8);
    }
    em_i64_enc(i % 5000, k);
    return em_emit_pair(out, k, 8, v, 8);
}

/* The same sums with a user function and with em_sum_i64 (which runs in
 * the 8-byte table, or leaves it for the general one at the first other
 * key length), in memory and spilling. */
TEST(wide_sum_i64_eight_byte_keys) {
    for (int budget = 0; budget < 2; budget++)
        for (int mixed = 0; mixed < 2; mixed++) {
            em_ctx *c = budget ? open_small_budget() : open_test_ctx();
            CHECK(c);
            em_rdd *pairs = em_map(em_range(c, 0, 200000, 1, 4), key8_mixed, &mixed, sizeof mixed);
            em_batch *want, *got;
            CHECK_OK(em_collect(em_sort_by_key(em_reduce_by_key(pairs, fn_sum_i64, NULL, 0, 3), 1, 2), &want));
            em_stats s0, s1;
            em_get_stats(c, &s0);
            CHECK_OK(em_collect(em_sort_by_key(em_reduce_by_key(pairs, em_sum_i64, NULL, 0, 3), 1, 2), &got));
            em_get_stats(c, &s1);
            CHECK_EQ_I64(em_batch_count(got), 5000 + 1 + mixed);
            CHECK(batches_equal(want, got));
            if (budget) CHECK(s1.spills > s0.spills);
            em_batch_free(want);
            em_batch_free(got);
            em_close(c);
        }
}

/* i -> (8-byte key (i * 7919) % 300000, or for every 97th record when
 * *arg a 3-byte key), value i: keys mostly distinct within a map task, so
 * map-side combining is given up after its first 100,000 records. */
static int key8_spread(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t i = rec_i64(in);
    uint8_t k[8], v[8];
    em_i64_enc(i, v);
    if (*(const int *)arg && i % 97 == 0) return em_emit_pair(out, "odd", 3, v, 8);
    em_i64_enc((i * 7919) % 300000, k);
    return em_emit_pair(out, k, 8, v, 8);
}

/* Shuffles fed whole cached blocks (sw_add_batch), which copy records of
 * an 8-byte key and value to the partitions as they are once map-side
 * combining is given up, with other records in the same blocks, in memory
 * and spilling: the results are those of the same shuffles over the same
 * records uncached (handed over one by one). */
TEST(wide_cached_pairs_in_batches) {
#ifdef __SANITIZE_THREAD__
    /* ThreadSanitizer checks each record's small copies as a memory range:
     * the four cases take 150 s there, 90 of them spilling.  It runs the
     * one in memory with mixed records; every other build runs all four. */
    int budgets = 1, first = 1;
#else
    int budgets = 2, first = 0;
#endif
    for (int budget = 0; budget < budgets; budget++)
        for (int mixed = first; mixed < 2; mixed++) {
            em_ctx *c = budget ? open_small_budget() : open_test_ctx();
            CHECK(c);
            em_rdd *one = em_map(em_range(c, 0, 400000, 1, 4), key8_spread, &mixed, sizeof mixed);
            em_rdd *cached = em_cache(em_map(em_range(c, 0, 400000, 1, 4), key8_spread, &mixed, sizeof mixed));
            int64_t n;
            CHECK_OK(em_count(cached, &n));
            CHECK_EQ_I64(n, 400000);
            for (int job = 0; job < 4; job++) {
                em_rdd *in[2] = {one, cached};
                em_batch *b[2];
                for (int w = 0; w < 2; w++) {
                    em_rdd *r = job == 0   ? em_reduce_by_key(in[w], em_sum_i64, NULL, 0, 3)
                                : job == 1 ? em_reduce_by_key(in[w], fn_sum_i64, NULL, 0, 3)
                                : job == 2 ? em_group_by_key(in[w], 3)
                                           : in[w];
                    CHECK_OK(em_collect(em_sort_by_key(r, 1, 2), &b[w]));
                }
                if (job == 3) CHECK_EQ_I64(em_batch_count(b[1]), 400000);
                else CHECK(em_batch_count(b[1]) > (mixed ? 290000 : 299999)); /* 300,000 keys, and "odd" */
                CHECK(batches_equal(b[0], b[1]));
                em_batch_free(b[0]);
                em_batch_free(b[1]);
            }
            em_close(c);
        }
}

/* A shuffle of more partitions than
 * ember.shuffle.minNumPartitionsToHighlyCompress has its segment sizes
 * highly compressed on the driver: a map output's empty segments exact,
 * the others at their average or, over
 * ember.shuffle.accurateBlockThreshold, a byte each.  Readers take the
 * lengths from the outputs (in memory, in files, or a fetch's answer), so
 * the results are exact whatever the estimates: with every segment huge,
 * and with none. */
TEST(wide_highly_compressed_sizes) {
    static const char *const threshold[] = {"1", "1g"};
    for (int t = 0; t < 2; t++) {
        em_conf *conf = em_conf_new();
        CHECK(conf);
        CHECK_OK(em_conf_set(conf, "ember.shuffle.minNumPartitionsToHighlyCompress", "2"));
        CHECK_OK(em_conf_set(conf, "ember.shuffle.accurateBlockThreshold", threshold[t]));
        CHECK_OK(em_conf_set(conf, "ember.local.dir", test_tmpdir()));
        em_ctx *c = em_open(test_master(), conf);
        em_conf_free(conf);
        CHECK(c);
        int64_t m = 10; /* 10 keys over 16 partitions: 6 or more empty segments per output */
        em_batch *b = NULL;
        em_rdd *pairs = em_map(em_range(c, 0, 20000, 1, 4), fn_mod_key, &m, sizeof m);
        CHECK_OK(em_collect(em_reduce_by_key(pairs, fn_sum_i64, NULL, 0, 16), &b));
        CHECK(check_mod_sums(b, 20000, 10));
        em_batch_free(b);
        int64_t n = 0;
        CHECK_OK(em_count(em_group_by_key(pairs, 16), &n));
        CHECK_EQ_I64(n, 10);
        em_close(c);
    }
}
