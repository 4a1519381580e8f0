/*
 * test_actions.c -- the actions through the public API: collect, count,
 * first, take, reduce, fold, aggregate, foreach, foreach_partition,
 * take_ordered, top, count_by_key, collect_as_map, lookup,
 * save_as_text_file.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

static int fn_ge(const em_rec *in, const void *arg) { return rec_i64(in) >= *(const int64_t *)arg; }

TEST(api_act_collect_count_first) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t n = -1;
    CHECK_OK(em_count(em_range(c, 0, 12345, 1, 6), &n));
    CHECK_EQ_I64(n, 12345);
    CHECK_OK(em_count(em_range(c, 0, 0, 1, 6), &n));
    CHECK_EQ_I64(n, 0);
    em_batch *b;
    CHECK_OK(em_collect(em_range(c, 0, 0, 1, 6), &b));
    CHECK_EQ_I64(em_batch_count(b), 0);
    size_t pos = 0;
    em_rec r;
    CHECK_EQ_I64(em_batch_next(b, &pos, &r), 0);
    CHECK(em_batch_get(b, 0, &r) == EM_EINVAL);
    em_batch_free(b);
    /* first: of a range, and of one whose first partitions are empty. */
    CHECK_OK(em_first(em_range(c, 17, 30, 1, 4), &b));
    CHECK_EQ_I64(em_batch_count(b), 1);
    CHECK_EQ_I64(batch_i64_at(b, 0), 17);
    em_batch_free(b);
    int64_t lim = 95;
    CHECK_OK(em_first(em_filter(em_range(c, 0, 100, 1, 10), fn_ge, &lim, sizeof lim), &b));
    CHECK_EQ_I64(batch_i64_at(b, 0), 95);
    em_batch_free(b);
    b = (em_batch *)&n; /* must be reset */
    CHECK_EQ_I64(em_first(em_range(c, 0, 0, 1, 3), &b), EM_EEMPTY);
    CHECK(b == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "empty collection");
    em_close(c);
}

TEST(api_act_take) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_batch *b;
    int64_t want[100];
    for (int i = 0; i < 100; i++) want[i] = i;
    /* n larger than the count: everything. */
    CHECK_OK(em_take(em_range(c, 0, 40, 1, 7), 1000, &b));
    CHECK(batch_eq_i64(b, want, 40));
    em_batch_free(b);
    CHECK_OK(em_take(em_range(c, 0, 40, 1, 7), 0, &b));
    CHECK_EQ_I64(em_batch_count(b), 0);
    em_batch_free(b);
    /* 100 partitions, data only in the last three. */
    int64_t lim = 970;
    em_rdd *late = em_filter(em_range(c, 0, 1000, 1, 100), fn_ge, &lim, sizeof lim);
    CHECK_OK(em_take(late, 5, &b));
    int64_t w5[5] = {970, 971, 972, 973, 974};
    CHECK(batch_eq_i64(b, w5, 5));
    em_batch_free(b);
    CHECK_OK(em_take(late, 25, &b));
    CHECK_EQ_I64(em_batch_count(b), 25);
    for (size_t i = 0; i < 25; i++) CHECK_EQ_I64(batch_i64_at(b, i), 970 + (int64_t)i);
    em_batch_free(b);
    CHECK_OK(em_take(late, 500, &b));
    CHECK_EQ_I64(em_batch_count(b), 30);
    CHECK_EQ_I64(batch_sum_i64(b), (970 + 999) * 30 / 2);
    em_batch_free(b);
    /* Data in the first partition: take scans fewer partitions than all. */
    em_stats s0, s1;
    em_rdd *all = em_range(c, 0, 1000, 1, 100);
    em_get_stats(c, &s0);
    CHECK_OK(em_take(all, 5, &b));
    em_get_stats(c, &s1);
    CHECK(batch_eq_i64(b, want, 5));
    em_batch_free(b);
    CHECK_EQ_I64(s1.tasks_run - s0.tasks_run, 1);
    /* Needing 3 partitions' worth: still far fewer than 100 tasks. */
    em_get_stats(c, &s0);
    CHECK_OK(em_take(all, 25, &b));
    em_get_stats(c, &s1);
    CHECK(batch_eq_i64(b, want, 25));
    em_batch_free(b);
    CHECK(s1.tasks_run - s0.tasks_run < 100);
    CHECK(s1.tasks_run - s0.tasks_run >= 3);
    em_close(c);
}

static int fn_max_i64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    int64_t x = rec_i64(a), y = rec_i64(b);
    return em_emit_i64(out, x > y ? x : y);
}
/* Concatenate strings: order-sensitive. */
static int fn_concat(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    char buf[256];
    size_t n = a->vlen + b->vlen;
    if (n > sizeof buf) return em_fail("concat too long");
    memcpy(buf, a->val, a->vlen);
    memcpy(buf + a->vlen, b->val, b->vlen);
    return em_emit(out, buf, n);
}

TEST(api_act_reduce_fold) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_batch *b;
    CHECK_OK(em_reduce(em_range(c, -50, 50, 1, 5), fn_max_i64, NULL, 0, &b));
    CHECK_EQ_I64(em_batch_count(b), 1);
    CHECK_EQ_I64(batch_i64_at(b, 0), 49);
    em_batch_free(b);
    /* reduce with empty partitions among non-empty ones. */
    int64_t lim = 95;
    CHECK_OK(em_reduce(em_filter(em_range(c, 0, 100, 1, 10), fn_ge, &lim, sizeof lim), fn_sum_i64, NULL, 0, &b));
    CHECK_EQ_I64(batch_i64_at(b, 0), 95 + 96 + 97 + 98 + 99);
    em_batch_free(b);
    CHECK_EQ_I64(em_reduce(em_range(c, 0, 0, 1, 4), fn_sum_i64, NULL, 0, &b), EM_EEMPTY);
    CHECK_STR_CONTAINS(em_errmsg(), "empty collection");
    /* Order within partitions is kept: reduce-concat over one partition. */
    const char *s[] = {"a", "b", "c", "d"};
    CHECK_OK(em_reduce(em_parallelize_str(c, s, 4, 1), fn_concat, NULL, 0, &b));
    em_rec r;
    CHECK_OK(em_batch_get(b, 0, &r));
    CHECK(r.vlen == 4 && memcmp(r.val, "abcd", 4) == 0);
    em_batch_free(b);

    /* fold with a neutral zero. */
    uint8_t z[8];
    em_i64_enc(0, z);
    em_rec zero = {NULL, 0, z, 8};
    CHECK_OK(em_fold(em_range(c, 0, 100, 1, 5), &zero, fn_sum_i64, NULL, 0, &b));
    CHECK_EQ_I64(batch_i64_at(b, 0), 4950);
    em_batch_free(b);
    /* Empty RDD: the zero. */
    em_i64_enc(INT64_MIN, z);
    CHECK_OK(em_fold(em_range(c, 0, 0, 1, 4), &zero, fn_max_i64, NULL, 0, &b));
    CHECK_EQ_I64(em_batch_count(b), 1);
    CHECK_EQ_I64(batch_i64_at(b, 0), INT64_MIN);
    em_batch_free(b);
    /* A non-neutral zero is copied per partition and for the final merge:
     * P partitions contribute zero * (P + 1), as in Spark. */
    for (int p = 1; p <= 7; p += 3) {
        em_i64_enc(1000, z);
        CHECK_OK(em_fold(em_range(c, 0, 100, 1, p), &zero, fn_sum_i64, NULL, 0, &b));
        CHECK_EQ_I64(batch_i64_at(b, 0), 4950 + 1000 * (p + 1));
        em_batch_free(b);
    }
    /* Same with a string zero: "z" + each partition's fold. */
    em_rec sz = {NULL, 0, "z", 1};
    CHECK_OK(em_fold(em_parallelize_str(c, s, 4, 2), &sz, fn_concat, NULL, 0, &b));
    CHECK_OK(em_batch_get(b, 0, &r));
    CHECK(r.vlen == 7 && memcmp(r.val, "zzabzcd", 7) == 0);
    em_batch_free(b);
    em_close(c);
}

/* (sum, count) accumulator as two i64 in 16 bytes. */
static int fn_seq_sc(const em_rec *acc, const em_rec *v, em_emitter *out, const void *arg) {
    uint8_t o[16];
    em_i64_enc(em_i64_dec(acc->val) + rec_i64(v), o);
    em_i64_enc(em_i64_dec((const uint8_t *)acc->val + 8) + 1, o + 8);
    return em_emit(out, o, 16);
}
static int fn_comb_sc(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    uint8_t o[16];
    if (a->vlen != 16 || b->vlen != 16) return em_fail("bad partial");
    em_i64_enc(em_i64_dec(a->val) + em_i64_dec(b->val), o);
    em_i64_enc(em_i64_dec((const uint8_t *)a->val + 8) + em_i64_dec((const uint8_t *)b->val + 8), o + 8);
    return em_emit(out, o, 16);
}

TEST(api_act_aggregate) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    uint8_t z[16];
    em_i64_enc(0, z);
    em_i64_enc(0, z + 8);
    em_rec zero = {NULL, 0, z, 16};
    em_batch *b;
    em_rec r;
    CHECK_OK(em_aggregate(em_range(c, 1, 1001, 1, 6), &zero, fn_seq_sc, fn_comb_sc, NULL, 0, &b));
    CHECK_OK(em_batch_get(b, 0, &r));
    CHECK_EQ_I64(r.vlen, 16);
    CHECK_EQ_I64(em_i64_dec(r.val), 500500);
    CHECK_EQ_I64(em_i64_dec((const uint8_t *)r.val + 8), 1000);
    em_batch_free(b);
    /* Empty RDD: the zero itself. */
    CHECK_OK(em_aggregate(em_range(c, 0, 0, 1, 6), &zero, fn_seq_sc, fn_comb_sc, NULL, 0, &b));
    CHECK_EQ_I64(em_batch_count(b), 1);
    CHECK_OK(em_batch_get(b, 0, &r));
    CHECK(r.vlen == 16 && memcmp(r.val, z, 16) == 0);
    em_batch_free(b);
    /* Non-neutral zero: (P + 1) copies. */
    em_i64_enc(3, z);
    em_i64_enc(10, z + 8);
    CHECK_OK(em_aggregate(em_range(c, 1, 1001, 1, 4), &zero, fn_seq_sc, fn_comb_sc, NULL, 0, &b));
    CHECK_OK(em_batch_get(b, 0, &r));
    CHECK_EQ_I64(em_i64_dec(r.val), 500500 + 3 * 5);
    CHECK_EQ_I64(em_i64_dec((const uint8_t *)r.val + 8), 1000 + 10 * 5);
    em_batch_free(b);
    em_close(c);
}

static int fn_foreach_acc(const em_rec *r, const void *arg) {
    const em_acc *a = arg;
    em_acc_add_i64(a[0], rec_i64(r));
    em_acc_add_i64(a[1], 1);
    return 0;
}

static int fn_foreach_part_acc(int partition, em_iter *in, const void *arg) {
    const em_acc *a = arg;
    em_rec r;
    int k;
    int64_t n = 0;
    while ((k = em_iter_next(in, &r)) == 1) {
        em_acc_add_i64(a[0], rec_i64(&r));
        n++;
    }
    if (k < 0) return k;
    em_acc_add_i64(a[1], 1);                   /* partitions seen */
    em_acc_add_i64(a[2], (int64_t)partition * n); /* checks the index */
    if (partition != em_task_partition()) return em_fail("partition %d != %d", partition, em_task_partition());
    return 0;
}

TEST(api_act_foreach) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_acc a[3] = {em_acc_i64(c, "sum"), em_acc_i64(c, "n"), em_acc_i64(c, "idx")};
    CHECK(a[0].id && a[1].id && a[2].id);
    CHECK_OK(em_foreach(em_range(c, 0, 1000, 1, 7), fn_foreach_acc, a, sizeof a));
    CHECK_EQ_I64(em_acc_value_i64(c, a[0]), 499500);
    CHECK_EQ_I64(em_acc_value_i64(c, a[1]), 1000);
    em_acc b[3] = {em_acc_i64(c, "sum2"), em_acc_i64(c, "parts"), em_acc_i64(c, "idx")};
    /* 10 partitions of 10: partition p holds 10p..10p+9. */
    int64_t v[100];
    for (int i = 0; i < 100; i++) v[i] = i;
    CHECK_OK(em_foreach_partition(em_parallelize_i64(c, v, 100, 10), fn_foreach_part_acc, b, sizeof b));
    CHECK_EQ_I64(em_acc_value_i64(c, b[0]), 4950);
    CHECK_EQ_I64(em_acc_value_i64(c, b[1]), 10);
    CHECK_EQ_I64(em_acc_value_i64(c, b[2]), 10 * 45); /* sum over p of p * 10 */
    em_close(c);
}

/* i64 v -> (v * 7919) mod 1009, a permutation of 0..1008 */
static int fn_scramble(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_i64(out, rec_i64(in) * 7919 % 1009);
}

TEST(api_act_take_ordered_top) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *r = em_map(em_range(c, 0, 1009, 1, 6), fn_scramble, NULL, 0);
    em_batch *b;
    int64_t low[10], high[10];
    for (int i = 0; i < 10; i++) low[i] = i, high[i] = 1008 - i;
    CHECK_OK(em_take_ordered(r, 10, &b));
    CHECK(batch_eq_i64(b, low, 10));
    em_batch_free(b);
    CHECK_OK(em_top(r, 10, &b));
    CHECK(batch_eq_i64(b, high, 10));
    em_batch_free(b);
    CHECK_OK(em_top(r, 5000, &b));
    CHECK_EQ_I64(em_batch_count(b), 1009);
    CHECK_EQ_I64(batch_i64_at(b, 0), 1008);
    CHECK_EQ_I64(batch_i64_at(b, 1008), 0);
    em_batch_free(b);
    /* Negative numbers order numerically with the i64 encoding. */
    int64_t neg[6] = {5, -1, 3, -100, 0, 2};
    int64_t wneg[3] = {-100, -1, 0};
    CHECK_OK(em_take_ordered(em_parallelize_i64(c, neg, 6, 3), 3, &b));
    CHECK(batch_eq_i64(b, wneg, 3));
    em_batch_free(b);
    /* Pairs: by key, then by value. */
    em_rec p[4] = {{"b", 1, "1", 1}, {"a", 1, "2", 1}, {"b", 1, "0", 1}, {"a", 1, "1", 1}};
    CHECK_OK(em_take_ordered(em_parallelize(c, p, 4, 2), 4, &b));
    const char *wk = "aabb", *wv = "1201";
    for (size_t i = 0; i < 4; i++) {
        em_rec x;
        CHECK_OK(em_batch_get(b, i, &x));
        CHECK(*(const char *)x.key == wk[i] && *(const char *)x.val == wv[i]);
    }
    em_batch_free(b);
    CHECK_OK(em_top(em_range(c, 0, 0, 1, 2), 3, &b));
    CHECK_EQ_I64(em_batch_count(b), 0);
    em_batch_free(b);
    em_close(c);
}

TEST(api_act_count_by_key_collect_as_map) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t m = 7;
    em_rdd *pairs = em_map(em_range(c, 0, 1000, 1, 5), fn_mod_key, &m, sizeof m);
    em_batch *b;
    CHECK_OK(em_count_by_key(pairs, &b));
    CHECK_EQ_I64(em_batch_count(b), 7);
    size_t pos = 0;
    em_rec r;
    int seen = 0;
    while (em_batch_next(b, &pos, &r) == 1) {
        CHECK(r.key && r.klen == 8);
        int64_t k = em_i64_dec(r.key), want = 0;
        for (int64_t v = 0; v < 1000; v++) want += v % 7 == k;
        CHECK_EQ_I64(rec_i64(&r), want);
        seen |= 1 << k;
    }
    CHECK_EQ_I64(seen, 0x7f);
    em_batch_free(b);

    /* collect_as_map: one record per key, the last value in partition order. */
    em_rec p[7] = {{"x", 1, "1", 1}, {"y", 1, "2", 1}, {"x", 1, "3", 1}, {"z", 1, "4", 1},
                   {"y", 1, "5", 1}, {"x", 1, "6", 1}, {"w", 1, "7", 1}};
    CHECK_OK(em_collect_as_map(em_parallelize(c, p, 7, 3), &b));
    CHECK_EQ_I64(em_batch_count(b), 4);
    char got[4][2];
    pos = 0;
    int i = 0;
    while (em_batch_next(b, &pos, &r) == 1) {
        CHECK(r.klen == 1 && r.vlen == 1);
        got[i][0] = *(const char *)r.key;
        got[i][1] = *(const char *)r.val;
        i++;
    }
    em_batch_free(b);
    for (int j = 0; j < 4; j++) {
        char want = got[j][0] == 'x' ? '6' : got[j][0] == 'y' ? '5' : got[j][0] == 'z' ? '4' : '7';
        CHECK(got[j][1] == want);
    }
    /* Plain records are not a map. */
    CHECK(em_collect_as_map(em_range(c, 0, 3, 1, 1), &b) < 0);
    em_close(c);
}

TEST(api_act_lookup) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t m = 10;
    em_rdd *pairs = em_map(em_range(c, 0, 200, 1, 4), fn_mod_key, &m, sizeof m);
    uint8_t k[8];
    em_i64_enc(3, k);
    em_batch *b;
    CHECK_OK(em_lookup(pairs, k, 8, &b));
    CHECK_EQ_I64(em_batch_count(b), 20);
    int64_t want = 0;
    for (int64_t v = 3; v < 200; v += 10) want += v;
    CHECK_EQ_I64(batch_sum_i64(b), want);
    em_rec r;
    CHECK_OK(em_batch_get(b, 0, &r));
    CHECK(r.key == NULL); /* values, as plain records */
    em_batch_free(b);
    /* Hash-partitioned: only the key's partition is scanned. */
    em_rdd *hp = em_partition_by(pairs, 8);
    CHECK(hp);
    int64_t n;
    CHECK_OK(em_count(hp, &n)); /* materialize the shuffle */
    em_stats s0, s1;
    em_get_stats(c, &s0);
    CHECK_OK(em_lookup(hp, k, 8, &b));
    em_get_stats(c, &s1);
    CHECK_EQ_I64(em_batch_count(b), 20);
    CHECK_EQ_I64(batch_sum_i64(b), want);
    em_batch_free(b);
    CHECK_EQ_I64(s1.tasks_run - s0.tasks_run, 1);
    /* A missing key. */
    em_i64_enc(77, k);
    CHECK_OK(em_lookup(hp, k, 8, &b));
    CHECK_EQ_I64(em_batch_count(b), 0);
    em_batch_free(b);
    CHECK_OK(em_lookup(pairs, k, 8, &b));
    CHECK_EQ_I64(em_batch_count(b), 0);
    em_batch_free(b);
    em_close(c);
}

/* Count directory entries other than . and .. */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static int fn_i64_to_text(const em_rec *in, em_emitter *out, const void *arg) {
    char s[32];
    int n = snprintf(s, sizeof s, "line %lld", (long long)rec_i64(in));
    return em_emit(out, s, (size_t)n);
}

static int fn_fail_on(const em_rec *in, em_emitter *out, const void *arg) {
    if (rec_i64(in) == *(const int64_t *)arg) return em_fail("refusing %lld", (long long)rec_i64(in));
    return fn_i64_to_text(in, out, arg);
}

TEST(api_act_save_as_text_file) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    CHECK(mkdir(tmp_path("out"), 0755) == 0);
    const char *dir = tmp_path("out/plain");
    CHECK_OK(em_save_as_text_file(em_map(em_range(c, 0, 10, 1, 3), fn_i64_to_text, NULL, 0), dir));
    /* part-00000..part-00002 and _SUCCESS, nothing else. */
    char path[1200];
    CHECK_EQ_I64(count_entries(dir), 4);
    snprintf(path, sizeof path, "%s/_SUCCESS", dir);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size == 0);
    char all[1000] = "";
    for (int p = 0; p < 3; p++) {
        snprintf(path, sizeof path, "%s/part-%05d", dir, p);
        char *t = read_file_all(path, NULL);
        CHECK(t);
        strcat(all, t);
        free(t);
    }
    char want[1000] = "";
    for (int i = 0; i < 10; i++) sprintf(want + strlen(want), "line %d\n", i);
    CHECK(strcmp(all, want) == 0);
    /* Reading it back gives the same lines. */
    int64_t n;
    CHECK_OK(em_count(em_text_file(c, dir, 1), &n));
    CHECK_EQ_I64(n, 10);

    /* Pairs: key\tvalue. */
    em_rec p[3] = {{"k1", 2, "v1", 2}, {"", 0, "empty key", 9}, {"k3", 2, "", 0}};
    const char *pdir = tmp_path("out/pairs");
    CHECK_OK(em_save_as_text_file(em_parallelize(c, p, 3, 1), pdir));
    snprintf(path, sizeof path, "%s/part-00000", pdir);
    char *t = read_file_all(path, NULL);
    CHECK(t);
    CHECK(strcmp(t, "k1\tv1\n\tempty key\nk3\t\n") == 0);
    free(t);

    /* An existing directory is an error and is left alone. */
    CHECK_EQ_I64(em_save_as_text_file(em_range(c, 0, 3, 1, 1), dir), EM_EIO);
    CHECK_STR_CONTAINS(em_errmsg(), "exists");
    CHECK_EQ_I64(count_entries(dir), 4);

    /* A failing task: the output directory is absent, nothing beside it. */
    int before = count_entries(tmp_path("out"));
    int64_t bad = 7;
    const char *fdir = tmp_path("out/failed");
    int rc = em_save_as_text_file(em_map(em_range(c, 0, 10, 1, 3), fn_fail_on, &bad, sizeof bad), fdir);
    CHECK_EQ_I64(rc, EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "refusing 7");
    CHECK(stat(fdir, &st) != 0);
    CHECK_EQ_I64(count_entries(tmp_path("out")), before);
    /* The context still works and the same directory can be written after. */
    CHECK_OK(em_save_as_text_file(em_map(em_range(c, 0, 10, 1, 2), fn_i64_to_text, NULL, 0), fdir));
    CHECK_EQ_I64(count_entries(fdir), 3);
    em_close(c);
}

/* Emits *arg copies of the record, ignoring EM_STOP when arg[1] != 0. */
static int fn_many(const em_rec *in, em_emitter *out, const void *arg) {
    const int64_t *a = arg;
    for (int64_t i = 0; i < a[0]; i++) {
        int rc = em_emit_i64(out, rec_i64(in) * 1000000 + i);
        if (rc && !a[1]) return rc;
    }
    return 0;
}

TEST(api_act_take_stops_early) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_batch *b;
    /* A huge flat_map honouring EM_STOP: take returns at once. */
    int64_t a[2] = {INT64_C(1) << 40, 0};
    CHECK_OK(em_take(em_flat_map(em_range(c, 0, 4, 1, 2), fn_many, a, sizeof a), 3, &b));
    int64_t want[3] = {0, 1, 2};
    CHECK(batch_eq_i64(b, want, 3));
    em_batch_free(b);
    CHECK_OK(em_first(em_flat_map(em_range(c, 5, 9, 1, 2), fn_many, a, sizeof a), &b));
    CHECK_EQ_I64(batch_i64_at(b, 0), 5000000);
    em_batch_free(b);
    /* A function ignoring EM_STOP loses nothing and gets the right answer. */
    int64_t a2[2] = {1000, 1};
    CHECK_OK(em_take(em_flat_map(em_range(c, 0, 4, 1, 2), fn_many, a2, sizeof a2), 1500, &b));
    CHECK_EQ_I64(em_batch_count(b), 1500);
    CHECK_EQ_I64(batch_i64_at(b, 999), 999);
    CHECK_EQ_I64(batch_i64_at(b, 1000), 1000000);
    CHECK_EQ_I64(batch_i64_at(b, 1499), 1000499);
    em_batch_free(b);
    /* Through a cached RDD: the whole partition is still cached. */
    em_rdd *cached = em_cache(em_flat_map(em_range(c, 0, 4, 1, 2), fn_many, a2, sizeof a2));
    CHECK_OK(em_take(cached, 2, &b));
    CHECK_EQ_I64(em_batch_count(b), 2);
    em_batch_free(b);
    int64_t n;
    CHECK_OK(em_count(cached, &n));
    CHECK_EQ_I64(n, 4000);
    CHECK_OK(em_collect(cached, &b));
    CHECK_EQ_I64(em_batch_count(b), 4000);
    CHECK_EQ_I64(batch_i64_at(b, 3999), 3000999);
    em_batch_free(b);
    em_close(c);
}

typedef struct flaky_save {
    int64_t fail_at;
    char marker[512];
} flaky_save;

static int fn_flaky_text(const em_rec *in, em_emitter *out, const void *arg) {
    const flaky_save *a = arg;
    if (rec_i64(in) == a->fail_at) {
        FILE *f = fopen(a->marker, "r");
        if (!f) {
            f = fopen(a->marker, "w");
            if (f) fclose(f);
            return em_fail("first attempt fails");
        }
        fclose(f);
    }
    return fn_i64_to_text(in, out, NULL);
}

TEST(api_act_save_with_retry) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    flaky_save a;
    a.fail_at = 8;
    snprintf(a.marker, sizeof a.marker, "%s/marker", test_tmpdir());
    const char *dir = tmp_path("saved");
    CHECK_OK(em_save_as_text_file(em_map(em_range(c, 0, 12, 1, 4), fn_flaky_text, &a, sizeof a), dir));
    CHECK_EQ_I64(count_entries(dir), 5); /* 4 parts + _SUCCESS: no attempt leftovers */
    char path[1200];
    snprintf(path, sizeof path, "%s/part-00002", dir);
    char *t = read_file_all(path, NULL);
    CHECK(t);
    CHECK(strcmp(t, "line 6\nline 7\nline 8\n") == 0);
    free(t);
    CHECK_EQ_I64(count_entries(test_tmpdir()), 2); /* saved and marker only */
    /* An empty RDD still writes its (empty) part files and _SUCCESS. */
    const char *edir = tmp_path("empty-out");
    CHECK_OK(em_save_as_text_file(em_range(c, 0, 0, 1, 2), edir));
    CHECK_EQ_I64(count_entries(edir), 3);
    em_close(c);
}

TEST(api_act_save_path_forms) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *r = em_map(em_range(c, 0, 6, 1, 2), fn_i64_to_text, NULL, 0);
    /* A trailing slash names the same directory. */
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/", tmp_path("slash"));
    CHECK_OK(em_save_as_text_file(r, dir));
    CHECK_EQ_I64(count_entries(tmp_path("slash")), 3);
    CHECK_EQ_I64(count_entries(test_tmpdir()), 1);
    int64_t n;
    CHECK_OK(em_count(em_text_file(c, dir, 1), &n));
    CHECK_EQ_I64(n, 6);
    CHECK_EQ_I64(em_save_as_text_file(r, dir), EM_EIO); /* now it exists */
    /* A missing parent directory: an error, and nothing is created. */
    int rc = em_save_as_text_file(r, tmp_path("no/such/parent"));
    CHECK(rc < 0);
    CHECK_STR_CONTAINS(em_errmsg(), "no/such/parent");
    CHECK_EQ_I64(count_entries(test_tmpdir()), 1);
    em_close(c);
}
