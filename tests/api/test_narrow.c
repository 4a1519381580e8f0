/*
 * test_narrow.c -- the narrow transformations through the public API:
 * map, filter, flat_map, map_partitions, map_values, flat_map_values,
 * key_by, keys, values, union, glom, sample, coalesce, zip_with_index, and
 * the "map emits exactly one record" check.
 */
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

/* i64 v -> v copies of v (0 copies for v <= 0). */
static int fn_repeat(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t v = rec_i64(in);
    for (int64_t i = 0; i < v; i++) {
        int rc = em_emit_i64(out, v);
        if (rc) return rc;
    }
    return 0;
}

static int fn_mult3(const em_rec *in, const void *arg) { return rec_i64(in) % 3 == 0; }

TEST(api_narrow_map_filter_flat_map) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_batch *b;
    /* map: doubles, in order. */
    int64_t want[50];
    for (int i = 0; i < 50; i++) want[i] = 2 * i;
    CHECK_OK(em_collect(em_map(em_range(c, 0, 50, 1, 3), fn_double_i64, NULL, 0), &b));
    CHECK(batch_eq_i64(b, want, 50));
    em_batch_free(b);
    /* filter: multiples of 3 of -20..20. */
    int64_t w2[20];
    size_t n2 = 0;
    for (int64_t v = -20; v < 20; v++)
        if (v % 3 == 0) w2[n2++] = v;
    CHECK_OK(em_collect(em_filter(em_range(c, -20, 20, 1, 4), fn_mult3, NULL, 0), &b));
    CHECK(batch_eq_i64(b, w2, n2));
    em_batch_free(b);
    /* flat_map: v copies of v for v in -2..30: 0 outputs for v <= 0. */
    int64_t cnt = 0, sum = 0;
    for (int64_t v = 1; v < 30; v++) cnt += v, sum += v * v;
    CHECK_OK(em_collect(em_flat_map(em_range(c, -2, 30, 1, 5), fn_repeat, NULL, 0), &b));
    CHECK_EQ_I64(em_batch_count(b), cnt);
    CHECK_EQ_I64(batch_sum_i64(b), sum);
    CHECK_EQ_I64(batch_i64_at(b, 0), 1);
    CHECK_EQ_I64(batch_i64_at(b, 1), 2);
    CHECK_EQ_I64(batch_i64_at(b, 2), 2);
    CHECK_EQ_I64(batch_i64_at(b, em_batch_count(b) - 1), 29);
    em_batch_free(b);
    em_close(c);
}

/* Emits (partition, count, sum, em_task_partition()) as four i64 records. */
static int fn_part_stats(int partition, em_iter *in, em_emitter *out, const void *arg) {
    em_rec r;
    int64_t n = 0, s = 0;
    int k;
    while ((k = em_iter_next(in, &r)) == 1) {
        n++;
        s += rec_i64(&r);
    }
    if (k < 0) return k;
    int rc;
    if ((rc = em_emit_i64(out, partition)) || (rc = em_emit_i64(out, n)) || (rc = em_emit_i64(out, s)) ||
        (rc = em_emit_i64(out, em_task_partition())))
        return rc;
    return 0;
}

/* v -> (v, empty value given as NULL) and (empty key given as NULL, v):
 * both are pairs with the empty part's length 0. */
static int fn_pair_null_parts(const em_rec *in, em_emitter *out, const void *arg) {
    int rc = em_emit_pair(out, in->val, in->vlen, NULL, 0);
    return rc ? rc : em_emit_pair(out, NULL, 0, in->val, in->vlen);
}

TEST(api_narrow_emit_pair_null_parts) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_batch *b;
    CHECK_OK(em_collect(em_flat_map(em_range(c, 0, 10, 1, 3), fn_pair_null_parts, NULL, 0), &b));
    CHECK_EQ_I64(em_batch_count(b), 20);
    for (size_t i = 0; i < 20; i++) {
        em_rec r;
        CHECK_OK(em_batch_get(b, i, &r));
        CHECK(r.key != NULL);
        int64_t v = (int64_t)i / 2;
        if (i % 2 == 0) {
            CHECK_EQ_I64(r.klen, 8);
            CHECK_EQ_I64(r.vlen, 0);
            CHECK_EQ_I64(em_i64_dec(r.key), v);
        } else {
            CHECK_EQ_I64(r.klen, 0);
            CHECK_EQ_I64(r.vlen, 8);
            CHECK_EQ_I64(em_i64_dec(r.val), v);
        }
    }
    em_batch_free(b);
    em_close(c);
}

TEST(api_narrow_map_partitions_index) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t v[23];
    for (int i = 0; i < 23; i++) v[i] = i * i;
    em_rdd *r = em_parallelize_i64(c, v, 23, 5);
    CHECK(r);
    /* Each partition's contents, from glom. */
    em_batch *g, *b;
    CHECK_OK(em_collect(em_glom(r), &g));
    CHECK_EQ_I64(em_batch_count(g), 5);
    CHECK_OK(em_collect(em_map_partitions(r, fn_part_stats, NULL, 0), &b));
    CHECK_EQ_I64(em_batch_count(b), 20);
    int64_t total = 0, next = 0;
    for (size_t p = 0; p < 5; p++) {
        em_rec gr, item;
        CHECK_OK(em_batch_get(g, p, &gr));
        size_t lp = 0;
        int64_t n = 0, s = 0;
        while (em_list_next_rec(gr.val, gr.vlen, &lp, &item) == 1) {
            CHECK_EQ_I64(rec_i64(&item), v[next]); /* contiguous slices, in order */
            next++;
            n++;
            s += rec_i64(&item);
        }
        CHECK_EQ_I64(batch_i64_at(b, 4 * p), (int64_t)p);
        CHECK_EQ_I64(batch_i64_at(b, 4 * p + 1), n);
        CHECK_EQ_I64(batch_i64_at(b, 4 * p + 2), s);
        CHECK_EQ_I64(batch_i64_at(b, 4 * p + 3), (int64_t)p);
        total += n;
    }
    CHECK_EQ_I64(total, 23);
    CHECK_EQ_I64(next, 23);
    em_batch_free(g);
    em_batch_free(b);
    CHECK_EQ_I64(em_task_partition(), -1); /* outside a task */
    em_close(c);
}

static int fn_add(const em_rec *in, em_emitter *out, const void *arg);

/* map_partitions over a cached partition reads the cached block in place
 * (no copy of the partition): its first record is where a map over the
 * same cached partition sees it (local masters only: an address means
 * something only in one process).  Over a coalesce of cached partitions,
 * over a partition being cached, and from disk, it gives the same
 * records. */
static int fn_part_first_addr(int partition, em_iter *in, em_emitter *out, const void *arg) {
    em_rec r;
    int k = em_iter_next(in, &r);
    if (k < 0) return k;
    return em_emit_i64(out, k == 1 ? (int64_t)(uintptr_t)r.val : 0);
}

static int fn_addr(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_i64(out, (int64_t)(uintptr_t)in->val);
}

static void check_stats(em_rdd *r, int parts, const int64_t *v, int n) {
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_map_partitions(r, fn_part_stats, NULL, 0), &b));
    CHECK_EQ_I64(em_batch_count(b), 4 * parts);
    int64_t rows = 0, sum = 0, want = 0;
    for (int p = 0; p < parts; p++) {
        rows += batch_i64_at(b, 4 * (size_t)p + 1);
        sum += batch_i64_at(b, 4 * (size_t)p + 2);
    }
    for (int i = 0; i < n; i++) want += v[i];
    CHECK_EQ_I64(rows, n);
    CHECK_EQ_I64(sum, want);
    em_batch_free(b);
}

TEST(api_narrow_map_partitions_cached_in_place) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t v[1000];
    for (int i = 0; i < 1000; i++) v[i] = 3 * i + 1;
    int levels[2] = {EM_MEMORY_ONLY, EM_DISK_ONLY};
    for (int l = 0; l < 2; l++) {
        int64_t one = 1;
        em_rdd *r = em_persist(em_map(em_parallelize_i64(c, v, 1000, 4), fn_add, &one, sizeof one), levels[l]);
        CHECK(r);
        int64_t w[1000];
        for (int i = 0; i < 1000; i++) w[i] = v[i] + 1;
        check_stats(r, 4, w, 1000); /* computed and cached by this job */
        check_stats(r, 4, w, 1000); /* read from the cache */
        check_stats(em_coalesce(r, 2), 2, w, 1000);
        if (l == 0 && !strncmp(test_master(), "local[", 6)) {
            em_batch *a = NULL, *m = NULL;
            CHECK_OK(em_collect(em_map_partitions(r, fn_part_first_addr, NULL, 0), &a));
            CHECK_OK(em_collect(em_map(r, fn_addr, NULL, 0), &m));
            CHECK_EQ_I64(em_batch_count(a), 4);
            CHECK_EQ_I64(em_batch_count(m), 1000);
            CHECK(batch_i64_at(a, 0) == batch_i64_at(m, 0) && batch_i64_at(a, 0) != 0);
            em_batch_free(a);
            em_batch_free(m);
        }
        CHECK_OK(em_unpersist(r));
    }
    em_close(c);
}

/* value v -> v + *arg */
static int fn_add(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_i64(out, rec_i64(in) + *(const int64_t *)arg);
}
/* value v -> v, -v */
static int fn_pm(const em_rec *in, em_emitter *out, const void *arg) {
    int rc = em_emit_i64(out, rec_i64(in));
    return rc ? rc : em_emit_i64(out, -rec_i64(in));
}
/* string -> its first byte */
static int fn_first_char(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit(out, in->val, in->vlen ? 1 : 0);
}

TEST(api_narrow_pair_ops) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *pairs = em_map(em_range(c, 0, 10, 1, 3), fn_pair_x10, NULL, 0); /* (v, 10v) */
    CHECK(pairs);
    em_batch *b;
    int64_t add = 7;
    CHECK_OK(em_collect(em_map_values(pairs, fn_add, &add, sizeof add), &b));
    CHECK_EQ_I64(em_batch_count(b), 10);
    for (size_t i = 0; i < 10; i++) {
        em_rec r;
        CHECK_OK(em_batch_get(b, i, &r));
        CHECK(r.key && r.klen == 8);
        CHECK_EQ_I64(em_i64_dec(r.key), (int64_t)i);
        CHECK_EQ_I64(rec_i64(&r), 10 * (int64_t)i + 7);
    }
    em_batch_free(b);
    CHECK_OK(em_collect(em_flat_map_values(pairs, fn_pm, NULL, 0), &b));
    CHECK_EQ_I64(em_batch_count(b), 20);
    for (size_t i = 0; i < 20; i++) {
        em_rec r;
        CHECK_OK(em_batch_get(b, i, &r));
        CHECK_EQ_I64(em_i64_dec(r.key), (int64_t)(i / 2));
        CHECK_EQ_I64(rec_i64(&r), (i % 2 ? -10 : 10) * (int64_t)(i / 2));
    }
    em_batch_free(b);
    int64_t wk[10], wv[10];
    for (int i = 0; i < 10; i++) wk[i] = i, wv[i] = 10 * i;
    CHECK_OK(em_collect(em_keys(pairs), &b));
    CHECK(batch_eq_i64(b, wk, 10));
    em_rec r;
    CHECK_OK(em_batch_get(b, 3, &r));
    CHECK(r.key == NULL);
    em_batch_free(b);
    CHECK_OK(em_collect(em_values(pairs), &b));
    CHECK(batch_eq_i64(b, wv, 10));
    em_batch_free(b);

    /* key_by: (first char, word). */
    const char *w[] = {"apple", "banana", "avocado", "cherry"};
    CHECK_OK(em_collect(em_key_by(em_parallelize_str(c, w, 4, 2), fn_first_char, NULL, 0), &b));
    CHECK_EQ_I64(em_batch_count(b), 4);
    for (size_t i = 0; i < 4; i++) {
        CHECK_OK(em_batch_get(b, i, &r));
        CHECK(r.key && r.klen == 1 && *(const char *)r.key == w[i][0]);
        CHECK(r.vlen == strlen(w[i]) && memcmp(r.val, w[i], r.vlen) == 0);
    }
    em_batch_free(b);
    em_close(c);
}

TEST(api_narrow_union_glom) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *a = em_range(c, 0, 5, 1, 2), *bb = em_range(c, 100, 103, 1, 3);
    em_rdd *u = em_union(a, bb);
    CHECK(u);
    CHECK_EQ_I64(em_num_partitions(u), 5);
    int64_t want[8] = {0, 1, 2, 3, 4, 100, 101, 102};
    em_batch *b;
    CHECK_OK(em_collect(u, &b));
    CHECK(batch_eq_i64(b, want, 8));
    em_batch_free(b);
    /* union with itself: everything twice. */
    int64_t n;
    CHECK_OK(em_count(em_union(a, a), &n));
    CHECK_EQ_I64(n, 10);
    /* glom: one list per partition; concatenated, the union in order. */
    CHECK_OK(em_collect(em_glom(u), &b));
    CHECK_EQ_I64(em_batch_count(b), 5);
    size_t pos = 0, k = 0;
    em_rec g;
    while (em_batch_next(b, &pos, &g) == 1) {
        CHECK(g.key == NULL);
        size_t lp = 0;
        em_rec item;
        int rc;
        while ((rc = em_list_next_rec(g.val, g.vlen, &lp, &item)) == 1) {
            CHECK(k < 8);
            CHECK(item.key == NULL);
            CHECK_EQ_I64(rec_i64(&item), want[k]);
            k++;
        }
        CHECK_EQ_I64(rc, 0);
    }
    CHECK_EQ_I64(k, 8);
    em_batch_free(b);
    /* glom of pairs keeps keys. */
    CHECK_OK(em_collect(em_glom(em_map(em_range(c, 0, 4, 1, 1), fn_pair_x10, NULL, 0)), &b));
    CHECK_EQ_I64(em_batch_count(b), 1);
    CHECK_OK(em_batch_get(b, 0, &g));
    pos = 0;
    em_rec item;
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_I64(em_list_next_rec(g.val, g.vlen, &pos, &item), 1);
        CHECK(item.key && item.klen == 8);
        CHECK_EQ_I64(em_i64_dec(item.key), i);
        CHECK_EQ_I64(rec_i64(&item), 10 * i);
    }
    CHECK_EQ_I64(em_list_next_rec(g.val, g.vlen, &pos, &item), 0);
    em_batch_free(b);
    em_close(c);
}

TEST(api_narrow_sample) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *src = em_range(c, 0, 100000, 1, 8);
    em_batch *a, *b, *d;
    CHECK_OK(em_collect(em_sample(src, 0, 0.1, 42), &a));
    CHECK_OK(em_collect(em_sample(src, 0, 0.1, 42), &b));
    CHECK_OK(em_collect(em_sample(src, 0, 0.1, 43), &d));
    CHECK(batches_equal(a, b));  /* same seed: same sample */
    CHECK(!batches_equal(a, d)); /* different seed: different sample */
    size_t n = em_batch_count(a);
    CHECK(n > 9000 && n < 11000);
    /* Without replacement: strictly increasing (no duplicates, order kept). */
    for (size_t i = 1; i < n; i++) CHECK(batch_i64_at(a, i) > batch_i64_at(a, i - 1));
    em_batch_free(a);
    em_batch_free(b);
    em_batch_free(d);
    /* With replacement: about fraction * n copies, deterministic. */
    int64_t n1, n2;
    CHECK_OK(em_count(em_sample(src, 1, 0.5, 7), &n1));
    CHECK_OK(em_count(em_sample(src, 1, 0.5, 7), &n2));
    CHECK_EQ_I64(n1, n2);
    CHECK(n1 > 48000 && n1 < 52000);
    CHECK_OK(em_count(em_sample(src, 1, 2.0, 7), &n1));
    CHECK(n1 > 196000 && n1 < 204000);
    /* Edge fractions. */
    CHECK_OK(em_count(em_sample(src, 0, 0.0, 1), &n1));
    CHECK_EQ_I64(n1, 0);
    CHECK_OK(em_count(em_sample(src, 0, 1.0, 1), &n1));
    CHECK_EQ_I64(n1, 100000);
    CHECK(em_sample(src, 0, 1.5, 1) == NULL);
    CHECK(em_sample(src, 0, -0.1, 1) == NULL);
    em_close(c);
}

/* Sampling with replacement at large fractions: Poisson counts are drawn
 * correctly for any fraction (they used to be capped at 999 copies).  The
 * sample is deterministic for its seed, so the bounds (6 standard
 * deviations) cannot fail by chance once they pass. */
static int fn_pair_one(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_pair_i64(out, in->val, in->vlen, 1);
}

TEST(api_narrow_sample_large_fraction) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t n;
    /* 20 records x 5000 copies on average: 100,000 +- 6 * 316. */
    em_rdd *src = em_range(c, 0, 20, 1, 4);
    CHECK_OK(em_count(em_sample(src, 1, 5000.0, 11), &n));
    CHECK(n > 100000 - 1900 && n < 100000 + 1900);
    /* Per record too: every one of the 20 records has about 5000 copies. */
    em_rdd *ones = em_map(em_sample(src, 1, 5000.0, 11), fn_pair_one, NULL, 0);
    em_batch *b;
    CHECK_OK(em_collect(em_reduce_by_key(ones, fn_sum_i64, NULL, 0, 2), &b));
    CHECK_EQ_I64(em_batch_count(b), 20);
    for (size_t i = 0; i < 20; i++) {
        em_rec r;
        CHECK_OK(em_batch_get(b, i, &r));
        int64_t k = em_i64_dec(r.val);
        CHECK(k > 5000 - 430 && k < 5000 + 430);
    }
    em_batch_free(b);
    /* A fraction past the old cap of 999 on a larger input. */
    CHECK_OK(em_count(em_sample(em_range(c, 0, 1000, 1, 4), 1, 1500.0, 3), &n));
    CHECK(n > 1500000 - 7400 && n < 1500000 + 7400);
    CHECK(em_sample(src, 1, 1.0 / 0.0, 1) == NULL);
    em_close(c);
}

TEST(api_narrow_coalesce) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *src = em_range(c, 0, 1000, 1, 10);
    em_rdd *co = em_coalesce(src, 3);
    CHECK(co);
    CHECK_EQ_I64(em_num_partitions(co), 3);
    em_batch *b;
    int64_t want[1000];
    for (int i = 0; i < 1000; i++) want[i] = i;
    CHECK_OK(em_collect(co, &b));
    CHECK(batch_eq_i64(b, want, 1000));
    em_batch_free(b);
    /* Each coalesced partition holds contiguous parent partitions. */
    CHECK_OK(em_collect(em_glom(co), &b));
    CHECK_EQ_I64(em_batch_count(b), 3);
    size_t pos = 0;
    em_rec g;
    int64_t next = 0;
    int nonempty = 0;
    while (em_batch_next(b, &pos, &g) == 1) {
        size_t lp = 0;
        em_rec item;
        int any = 0;
        while (em_list_next_rec(g.val, g.vlen, &lp, &item) == 1) {
            CHECK_EQ_I64(rec_i64(&item), next);
            next++;
            any = 1;
        }
        nonempty += any;
    }
    CHECK_EQ_I64(next, 1000);
    CHECK_EQ_I64(nonempty, 3);
    em_batch_free(b);
    /* n >= current: unchanged partitioning. */
    CHECK_EQ_I64(em_num_partitions(em_coalesce(src, 10)), 10);
    CHECK_EQ_I64(em_num_partitions(em_coalesce(src, 50)), 10);
    CHECK_EQ_I64(em_num_partitions(em_coalesce(src, 1)), 1);
    int64_t n;
    CHECK_OK(em_count(em_coalesce(src, 1), &n));
    CHECK_EQ_I64(n, 1000);
    CHECK(em_coalesce(src, 0) == NULL);
    em_close(c);
}

TEST(api_narrow_zip_with_index) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    const char *s[] = {"a", "b", "c", "d", "e", "f", "g"};
    /* 7 records over 12 partitions: several empty partitions. */
    em_rdd *z = em_zip_with_index(em_parallelize_str(c, s, 7, 12));
    CHECK(z);
    em_batch *b;
    CHECK_OK(em_collect(z, &b));
    CHECK_EQ_I64(em_batch_count(b), 7);
    for (size_t i = 0; i < 7; i++) {
        em_rec r;
        CHECK_OK(em_batch_get(b, i, &r));
        CHECK(r.key && r.klen == 1 && *(const char *)r.key == s[i][0]);
        CHECK_EQ_I64(rec_i64(&r), (int64_t)i);
    }
    em_batch_free(b);
    /* A larger one after a filter (uneven partitions). */
    em_rdd *z2 = em_zip_with_index(em_filter(em_range(c, 0, 5000, 1, 7), fn_mult3, NULL, 0));
    CHECK(z2);
    CHECK_OK(em_collect(z2, &b));
    CHECK_EQ_I64(em_batch_count(b), 1667);
    for (size_t i = 0; i < 1667; i++) {
        em_rec r;
        CHECK_OK(em_batch_get(b, i, &r));
        CHECK_EQ_I64(em_i64_dec(r.key), 3 * (int64_t)i);
        CHECK_EQ_I64(rec_i64(&r), (int64_t)i);
    }
    em_batch_free(b);
    em_close(c);
}

/* Emits *arg records (0 or 2) for the value 5, one otherwise. */
static int fn_bad_map(const em_rec *in, em_emitter *out, const void *arg) {
    int k = rec_i64(in) == 5 ? *(const int *)arg : 1;
    for (int i = 0; i < k; i++) {
        int rc = em_emit_rec(out, in);
        if (rc) return rc;
    }
    return 0;
}

TEST(api_narrow_map_must_emit_one) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_batch *b = NULL;
    for (int k = 0; k <= 2; k += 2) {
        int rc = em_collect(em_map(em_range(c, 0, 10, 1, 2), fn_bad_map, &k, sizeof k), &b);
        CHECK_EQ_I64(rc, EM_EJOB);
        CHECK(b == NULL);
        CHECK_STR_CONTAINS(em_errmsg(), "exactly one");
        /* The same function is fine in flat_map. */
        int64_t n;
        CHECK_OK(em_count(em_flat_map(em_range(c, 0, 10, 1, 2), fn_bad_map, &k, sizeof k), &n));
        CHECK_EQ_I64(n, 9 + k);
    }
    /* map_values too. */
    int two = 2;
    em_rdd *pairs = em_map(em_range(c, 0, 10, 1, 2), fn_pair_x10, NULL, 0);
    int rc = em_collect(em_map_values(pairs, fn_repeat, &two, sizeof two), &b);
    CHECK_EQ_I64(rc, EM_EJOB); /* value 0 emits nothing */
    CHECK_STR_CONTAINS(em_errmsg(), "exactly one");
    em_close(c);
}
