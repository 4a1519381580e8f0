/*
 * test_errors.c -- error handling through the public API: NULL arguments,
 * bad master URLs and configuration, failing user functions and retries,
 * ember.task.maxFailures, ember.record.maxBytes, and lineage printing.
 */
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

static int fn_true(const em_rec *in, const void *arg) { return 1; }
static int fn_part_noop(int p, em_iter *in, em_emitter *out, const void *arg) { return 0; }
static int fn_fe_noop(const em_rec *r, const void *arg) { return 0; }
static int fn_fep_noop(int p, em_iter *in, const void *arg) { return 0; }

/* em_list_count agrees with a walk of em_list_next on any bytes: the same
 * count, or EM_ECORRUPT where the walk meets a malformed item.  Random
 * strings over lengths that mostly fit (short items, a few multi-byte
 * varints) and bytes that often do not. */
TEST(api_err_list_count_matches_walk) {
    uint64_t s = 12345;
    int corrupt = 0, whole = 0;
    for (int t = 0; t < 20000; t++) {
        uint8_t b[48];
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        size_t len = (size_t)(s >> 33) % sizeof b;
        for (size_t i = 0; i < len; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            uint8_t x = (uint8_t)(s >> 40);
            b[i] = (s >> 60) < 12 ? x % 6 : (s >> 60) < 14 ? (uint8_t)(x | 0x80) : x;
        }
        size_t pos = 0, walked = 0, ilen, counted = 99;
        const void *item;
        int rc;
        while ((rc = em_list_next(b, len, &pos, &item, &ilen)) == 1) walked++;
        int c = em_list_count(b, len, &counted);
        if (rc == 0) {
            CHECK_EQ_I64(c, 0);
            CHECK_EQ_I64(counted, walked);
            whole++;
        } else {
            CHECK_EQ_I64(rc, EM_ECORRUPT);
            CHECK_EQ_I64(c, EM_ECORRUPT);
            CHECK_EQ_I64(counted, 0);
            corrupt++;
        }
    }
    CHECK(whole > 1000 && corrupt > 1000); /* both kinds were met */
}

TEST(api_err_null_arguments) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *r = em_range(c, 0, 10, 1, 2);
    em_rdd *pairs = em_map(r, fn_pair_x10, NULL, 0);
    CHECK(r && pairs);
    em_batch *b = NULL;
    int64_t n;
    em_rec zero = {NULL, 0, "", 0};

    /* Context and configuration. */
    CHECK_EQ_I64(em_conf_set(NULL, "ember.app.name", "x"), EM_EINVAL);
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_EQ_I64(em_conf_set(conf, NULL, "x"), EM_EINVAL);
    CHECK_EQ_I64(em_conf_set(conf, "ember.no.such.key", "x"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.no.such.key");
    CHECK_STR_CONTAINS(em_conf_get(NULL, "ember.app.name"), "ember"); /* NULL conf: the defaults */
    CHECK(em_conf_get(conf, "ember.no.such.key") == NULL);
    CHECK(em_conf_get(conf, NULL) == NULL);
    CHECK_STR_CONTAINS(em_conf_get(conf, "ember.task.maxFailures"), "4");
    em_conf_free(conf);
    em_conf_free(NULL);
    CHECK_EQ_I64(em_set(NULL, "ember.app.name", "x"), EM_EINVAL);
    CHECK_EQ_I64(em_set(c, NULL, "x"), EM_EINVAL);
    CHECK_EQ_I64(em_set(c, "ember.master", "local[2]"), EM_EINVAL);
    CHECK(em_get(NULL, "ember.app.name") == NULL);
    CHECK(em_get(c, NULL) == NULL);
    CHECK_EQ_I64(em_cores(NULL), 0);
    em_get_stats(NULL, NULL);
    em_get_stats(c, NULL);
    em_close(NULL);

    /* Sources. */
    CHECK(em_parallelize(NULL, &zero, 1, 1) == NULL);
    CHECK(em_parallelize(c, NULL, 3, 1) == NULL);
    CHECK(em_parallelize_i64(NULL, NULL, 0, 1) == NULL);
    CHECK(em_parallelize_i64(c, NULL, 2, 1) == NULL);
    CHECK(em_parallelize_str(c, NULL, 2, 1) == NULL);
    const char *withnull[2] = {"a", NULL};
    CHECK(em_parallelize_str(c, withnull, 2, 1) == NULL);
    em_rec badrec = {NULL, 0, NULL, 5};
    CHECK(em_parallelize(c, &badrec, 1, 1) == NULL);
    CHECK_EQ_I64(em_parallelize(c, &badrec, 1, 1) == NULL ? EM_EINVAL : 0, EM_EINVAL);
    CHECK(em_range(NULL, 0, 1, 1, 1) == NULL);
    CHECK(em_text_file(NULL, "x", 1) == NULL);
    CHECK(em_text_file(c, NULL, 1) == NULL);

    /* Narrow and wide transformations. */
    CHECK(em_map(NULL, fn_identity, NULL, 0) == NULL);
    CHECK(em_map(r, NULL, NULL, 0) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "NULL");
    CHECK(em_map(r, fn_identity, NULL, 4) == NULL); /* NULL blob, nonzero length */
    CHECK(em_filter(NULL, fn_true, NULL, 0) == NULL);
    CHECK(em_filter(r, NULL, NULL, 0) == NULL);
    CHECK(em_flat_map(r, NULL, NULL, 0) == NULL);
    CHECK(em_map_partitions(NULL, fn_part_noop, NULL, 0) == NULL);
    CHECK(em_map_partitions(r, NULL, NULL, 0) == NULL);
    CHECK(em_map_values(NULL, fn_identity, NULL, 0) == NULL);
    CHECK(em_flat_map_values(pairs, NULL, NULL, 0) == NULL);
    CHECK(em_key_by(r, NULL, NULL, 0) == NULL);
    CHECK(em_keys(NULL) == NULL);
    CHECK(em_values(NULL) == NULL);
    CHECK(em_union(NULL, r) == NULL);
    CHECK(em_union(r, NULL) == NULL);
    CHECK(em_glom(NULL) == NULL);
    CHECK(em_sample(NULL, 0, 0.5, 1) == NULL);
    CHECK(em_coalesce(NULL, 2) == NULL);
    CHECK(em_zip_with_index(NULL) == NULL);
    CHECK(em_reduce_by_key(NULL, fn_sum_i64, NULL, 0, 2) == NULL);
    CHECK(em_reduce_by_key(pairs, NULL, NULL, 0, 2) == NULL);
    CHECK(em_aggregate_by_key(pairs, NULL, 4, fn_sum_i64, fn_sum_i64, NULL, 0, 2) == NULL);
    CHECK(em_combine_by_key(pairs, NULL, fn_sum_i64, fn_sum_i64, NULL, 0, 2) == NULL);
    CHECK(em_fold_by_key(NULL, "", 0, fn_sum_i64, NULL, 0, 2) == NULL);
    CHECK(em_group_by_key(NULL, 2) == NULL);
    CHECK(em_cogroup(NULL, pairs, 2) == NULL);
    CHECK(em_join(pairs, NULL, 2) == NULL);
    CHECK(em_left_outer_join(NULL, pairs, 2) == NULL);
    CHECK(em_right_outer_join(pairs, NULL, 2) == NULL);
    CHECK(em_full_outer_join(NULL, NULL, 2) == NULL);
    CHECK(em_distinct(NULL, 2) == NULL);
    CHECK(em_sort_by_key(NULL, 1, 2) == NULL);
    CHECK(em_partition_by(NULL, 2) == NULL);
    CHECK(em_repartition(NULL, 2) == NULL);
    CHECK(em_cache(NULL) == NULL);
    CHECK(em_persist(NULL, EM_DISK_ONLY) == NULL);
    CHECK_EQ_I64(em_unpersist(NULL), EM_EINVAL);

    /* Actions. */
    CHECK_EQ_I64(em_collect(NULL, &b), EM_EINVAL);
    CHECK(b == NULL);
    CHECK_EQ_I64(em_collect(r, NULL), EM_EINVAL);
    CHECK_EQ_I64(em_count(NULL, &n), EM_EINVAL);
    CHECK_EQ_I64(em_count(r, NULL), EM_EINVAL);
    CHECK_EQ_I64(em_first(NULL, &b), EM_EINVAL);
    CHECK_EQ_I64(em_first(r, NULL), EM_EINVAL);
    CHECK_EQ_I64(em_take(NULL, 3, &b), EM_EINVAL);
    CHECK_EQ_I64(em_take(r, 3, NULL), EM_EINVAL);
    CHECK_EQ_I64(em_reduce(NULL, fn_sum_i64, NULL, 0, &b), EM_EINVAL);
    CHECK_EQ_I64(em_reduce(r, NULL, NULL, 0, &b), EM_EINVAL);
    CHECK_EQ_I64(em_reduce(r, fn_sum_i64, NULL, 0, NULL), EM_EINVAL);
    CHECK_EQ_I64(em_fold(r, NULL, fn_sum_i64, NULL, 0, &b), EM_EINVAL);
    CHECK_EQ_I64(em_fold(r, &zero, NULL, NULL, 0, &b), EM_EINVAL);
    CHECK_EQ_I64(em_aggregate(r, &zero, fn_sum_i64, NULL, NULL, 0, &b), EM_EINVAL);
    CHECK_EQ_I64(em_aggregate(NULL, &zero, fn_sum_i64, fn_sum_i64, NULL, 0, &b), EM_EINVAL);
    CHECK_EQ_I64(em_tree_aggregate(r, NULL, fn_sum_i64, fn_sum_i64, NULL, 0, 2, &b), EM_EINVAL);
    CHECK_EQ_I64(em_tree_reduce(r, NULL, NULL, 0, 2, &b), EM_EINVAL);
    CHECK_EQ_I64(em_foreach(NULL, fn_fe_noop, NULL, 0), EM_EINVAL);
    CHECK_EQ_I64(em_foreach(r, NULL, NULL, 0), EM_EINVAL);
    CHECK_EQ_I64(em_foreach_partition(r, NULL, NULL, 0), EM_EINVAL);
    CHECK_EQ_I64(em_foreach_partition(NULL, fn_fep_noop, NULL, 0), EM_EINVAL);
    CHECK_EQ_I64(em_count_by_key(NULL, &b), EM_EINVAL);
    CHECK_EQ_I64(em_collect_as_map(pairs, NULL), EM_EINVAL);
    CHECK_EQ_I64(em_lookup(pairs, NULL, 8, &b), EM_EINVAL);
    CHECK_EQ_I64(em_lookup(NULL, "k", 1, &b), EM_EINVAL);
    CHECK_EQ_I64(em_take_ordered(NULL, 3, &b), EM_EINVAL);
    CHECK_EQ_I64(em_top(r, 3, NULL), EM_EINVAL);
    CHECK_EQ_I64(em_save_as_text_file(NULL, tmp_path("x")), EM_EINVAL);
    CHECK_EQ_I64(em_save_as_text_file(r, NULL), EM_EINVAL);

    /* Batches, lists, tuples. */
    CHECK_EQ_I64(em_batch_count(NULL), 0);
    em_rec rec;
    size_t pos = 0;
    CHECK_EQ_I64(em_batch_get(NULL, 0, &rec), EM_EINVAL);
    CHECK(em_batch_next(NULL, &pos, &rec) <= 0);
    em_batch_free(NULL);
    CHECK_OK(em_collect(r, &b));
    CHECK_EQ_I64(em_batch_get(b, 0, NULL), EM_EINVAL);
    CHECK_EQ_I64(em_batch_get(b, 10, &rec), EM_EINVAL);
    CHECK(em_batch_next(b, NULL, &rec) <= 0);
    em_batch_free(b);
    const void *item;
    size_t ilen;
    CHECK(em_list_next(NULL, 5, &pos, &item, &ilen) <= 0);
    CHECK(em_list_next_rec(NULL, 5, &pos, &rec) <= 0);
    size_t cnt = 7;
    CHECK_EQ_I64(em_list_count(NULL, 5, &cnt), EM_EINVAL);
    CHECK_EQ_I64(em_list_count("\1x", 2, NULL), EM_EINVAL);
    CHECK_OK(em_list_count(NULL, 0, &cnt)); /* the empty list */
    CHECK_EQ_I64(cnt, 0);
    CHECK_OK(em_list_count("\1x\0\2yz", 6, &cnt)); /* "x", "", "yz" */
    CHECK_EQ_I64(cnt, 3);
    cnt = 7;
    CHECK_EQ_I64(em_list_count("\1x\5ab", 4, &cnt), EM_ECORRUPT); /* an item past the end */
    CHECK_EQ_I64(cnt, 0);
    CHECK_EQ_I64(em_list_count("\1x\200", 3, &cnt), EM_ECORRUPT); /* a length cut short */
    em_tuple t;
    CHECK(em_tuple_unpack(NULL, 3, &t) < 0);
    const void *la, *lb;
    size_t lal, lbl;
    CHECK(em_cogroup_unpack(NULL, 3, &la, &lal, &lb, &lbl) < 0);

    /* Variables and lineage. */
    CHECK_EQ_I64(em_broadcast(NULL, "x", 1).id, 0);
    CHECK_EQ_I64(em_broadcast(c, NULL, 5).id, 0);
    em_bcast_destroy(NULL, (em_bcast){0});
    em_bcast_destroy(c, (em_bcast){987654});
    CHECK_EQ_I64(em_acc_i64(NULL, "a").id, 0);
    CHECK_EQ_I64(em_acc_f64(NULL, "a").id, 0);
    em_acc_add_i64((em_acc){0, 0}, 5);
    CHECK_EQ_I64(em_acc_value_i64(c, (em_acc){0, 0}), 0);
    CHECK_EQ_I64(em_num_partitions(NULL), EM_EINVAL);
    CHECK(em_set_name(NULL, "x") == NULL);
    CHECK(em_set_name(r, NULL) == r);
    CHECK(em_lineage(NULL) == NULL);
    CHECK(em_strerror(EM_EJOB) && strcmp(em_strerror(EM_EJOB), "job failed") == 0);
    CHECK(em_strerror(-12345) != NULL);
    CHECK(em_errmsg() != NULL);

    /* The context still works. */
    CHECK_OK(em_count(r, &n));
    CHECK_EQ_I64(n, 10);
    em_close(c);
}

TEST(api_err_other_context_and_bad_function) {
    em_ctx *c1 = open_test_ctx(), *c2 = open_test_ctx();
    CHECK(c1 && c2);
    em_rdd *a = em_range(c1, 0, 5, 1, 1), *b = em_range(c2, 0, 5, 1, 1);
    CHECK(em_union(a, b) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "context");
    CHECK(em_join(em_map(a, fn_pair_x10, NULL, 0), em_map(b, fn_pair_x10, NULL, 0), 2) == NULL);
    /* A "function" that is not code in the executable is rejected. */
    void *heap = malloc(64);
    CHECK(heap);
    memset(heap, 0xc3, 64);
    CHECK(em_map(a, (em_map_fn)heap, NULL, 0) == NULL);
    CHECK(em_reduce_by_key(em_map(a, fn_pair_x10, NULL, 0), (em_comb_fn)heap, NULL, 0, 1) == NULL);
    em_batch *out = NULL;
    CHECK(em_reduce(a, (em_comb_fn)heap, NULL, 0, &out) < 0);
    CHECK(out == NULL);
    free(heap);
    int64_t n;
    CHECK_OK(em_count(a, &n));
    CHECK_OK(em_count(b, &n));
    em_close(c1);
    em_close(c2);
}

TEST(api_err_bad_master) {
    const char *bad[] = {"local[0]", "foo", "local[", "local[x]", "local[2]x", "local[-1]", "spark://h:7077"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        em_ctx *c = em_open(bad[i], NULL);
        if (c) {
            fprintf(stderr, "  em_open(\"%s\") succeeded\n", bad[i]);
            em_close(c);
        }
        CHECK(c == NULL);
        CHECK_STR_CONTAINS(em_errmsg(), bad[i]);
    }
    /* Good ones. */
    em_ctx *c = em_open("local", NULL);
    CHECK(c);
    CHECK_EQ_I64(em_cores(c), 1);
    CHECK_STR_CONTAINS(em_get(c, "ember.master"), "local");
    em_close(c);
    c = em_open("local[3]", NULL);
    CHECK(c);
    CHECK_EQ_I64(em_cores(c), 3);
    em_close(c);
    /* ember.master from the configuration. */
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.master", "local[0]"));
    c = em_open("local[2]", conf); /* the argument wins */
    CHECK(c);
    CHECK_EQ_I64(em_cores(c), 2);
    em_close(c);
    em_conf_free(conf);
}

static int fn_boom(const em_rec *in, em_emitter *out, const void *arg) {
    if (rec_i64(in) == 7) return em_fail("boom %d", 7);
    return em_emit_rec(out, in);
}

TEST(api_err_user_failure_retries) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_stats s0, s1;
    em_get_stats(c, &s0);
    em_batch *b = NULL;
    int rc = em_collect(em_map(em_range(c, 0, 20, 1, 4), fn_boom, NULL, 0), &b);
    em_get_stats(c, &s1);
    CHECK_EQ_I64(rc, EM_EJOB);
    CHECK(b == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "boom 7");
    CHECK_STR_CONTAINS(em_errmsg(), "failed 4 times");
    CHECK_EQ_I64(s1.tasks_failed - s0.tasks_failed, 4);
    /* The context is usable for the next job. */
    int64_t n;
    CHECK_OK(em_count(em_map(em_range(c, 0, 20, 1, 4), fn_double_i64, NULL, 0), &n));
    CHECK_EQ_I64(n, 20);
    /* Other actions report the failure the same way. */
    CHECK_EQ_I64(em_count(em_map(em_range(c, 0, 20, 1, 2), fn_boom, NULL, 0), &n), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "boom 7");
    /* ember.task.maxFailures=2 */
    CHECK_OK(em_set(c, "ember.task.maxFailures", "2"));
    em_get_stats(c, &s0);
    rc = em_count(em_map(em_range(c, 0, 20, 1, 4), fn_boom, NULL, 0), &n);
    em_get_stats(c, &s1);
    CHECK_EQ_I64(rc, EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "boom 7");
    CHECK_STR_CONTAINS(em_errmsg(), "failed 2 times");
    CHECK_EQ_I64(s1.tasks_failed - s0.tasks_failed, 2);
    /* ... and 1: no retry. */
    CHECK_OK(em_set(c, "ember.task.maxFailures", "1"));
    em_get_stats(c, &s0);
    CHECK_EQ_I64(em_count(em_map(em_range(c, 0, 20, 1, 4), fn_boom, NULL, 0), &n), EM_EJOB);
    em_get_stats(c, &s1);
    CHECK_EQ_I64(s1.tasks_failed - s0.tasks_failed, 1);
    CHECK_OK(em_count(em_range(c, 0, 20, 1, 4), &n));
    CHECK_EQ_I64(n, 20);
    em_close(c);
}

TEST(api_err_max_failures_from_conf) {
    em_ctx *c = open_test_ctx_with("ember.task.maxFailures", "2");
    CHECK(c);
    em_stats s0, s1;
    int64_t n;
    em_get_stats(c, &s0);
    CHECK_EQ_I64(em_count(em_map(em_range(c, 0, 20, 1, 4), fn_boom, NULL, 0), &n), EM_EJOB);
    em_get_stats(c, &s1);
    CHECK_STR_CONTAINS(em_errmsg(), "failed 2 times");
    CHECK_EQ_I64(s1.tasks_failed - s0.tasks_failed, 2);
    em_close(c);
}

/* Emits a record of *arg bytes. */
static int fn_sized(const em_rec *in, em_emitter *out, const void *arg) {
    size_t n = *(const size_t *)arg;
    char *buf = calloc(1, n ? n : 1);
    if (!buf) return EM_ENOMEM;
    int rc = em_emit(out, buf, n);
    free(buf);
    return rc;
}

TEST(api_err_record_max_bytes) {
    em_ctx *c = open_test_ctx_with("ember.record.maxBytes", "1k"); /* the smallest allowed */
    CHECK(c);
    int64_t n;
    size_t small = 500, big = 2000;
    CHECK_OK(em_count(em_map(em_range(c, 0, 10, 1, 2), fn_sized, &small, sizeof small), &n));
    CHECK_EQ_I64(n, 10);
    int rc = em_count(em_map(em_range(c, 0, 10, 1, 2), fn_sized, &big, sizeof big), &n);
    CHECK_EQ_I64(rc, EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.record.maxBytes");
    /* flat_map, too, and the limit is per context setting. */
    rc = em_count(em_flat_map(em_range(c, 0, 10, 1, 2), fn_sized, &big, sizeof big), &n);
    CHECK_EQ_I64(rc, EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.record.maxBytes");
    CHECK_OK(em_set(c, "ember.record.maxBytes", "100000"));
    CHECK_OK(em_count(em_map(em_range(c, 0, 10, 1, 2), fn_sized, &big, sizeof big), &n));
    CHECK_EQ_I64(n, 10);
    em_close(c);
}

TEST(api_err_lineage) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    CHECK(write_file(tmp_path("words.txt"), "a b\nb c\n", 8) == 0);
    em_rdd *t = em_text_file(c, tmp_path("words.txt"), 2);
    CHECK(t);
    em_rdd *w = em_flat_map(t, fn_split_words, NULL, 0);
    em_rdd *r = em_reduce_by_key(w, fn_sum_i64, NULL, 0, 3);
    CHECK(r);
    CHECK(em_set_name(w, "words") == w);
    char *l = em_lineage(r);
    CHECK(l);
    CHECK_STR_CONTAINS(l, "(3) reduce_by_key");
    CHECK_STR_CONTAINS(l, " +-");
    CHECK_STR_CONTAINS(l, "flat_map");
    CHECK_STR_CONTAINS(l, "words");
    CHECK_STR_CONTAINS(l, "text_file");
    CHECK_STR_CONTAINS(l, "words.txt");
    /* Line order: reduce_by_key, then flat_map after the " +-" boundary,
     * then text_file in the same (narrow) stage as flat_map. */
    const char *pr = strstr(l, "reduce_by_key"), *pb = strstr(l, " +-"), *pf = strstr(l, "flat_map"),
               *pt = strstr(l, "text_file");
    CHECK(pr < pb && pb < pf && pf < pt);
    /* " +-" is on the flat_map line; text_file's line is not a boundary. */
    const char *eol = strchr(pb, '\n');
    CHECK(eol && pf < eol);
    const char *tl = pt;
    while (tl > l && tl[-1] != '\n') tl--;
    CHECK(strncmp(tl, " +-", 3) != 0 && !memmem(tl, (size_t)(pt - tl), "+-", 2));
    CHECK(memchr(tl, '|', (size_t)(pt - tl)) != NULL);
    /* The number of lines: one per RDD. */
    int lines = 0;
    for (const char *p = l; *p; p++) lines += *p == '\n';
    CHECK_EQ_I64(lines, 3);
    free(l);
    int64_t n;
    CHECK_OK(em_count(r, &n));
    CHECK_EQ_I64(n, 3);
    em_close(c);
}

TEST(api_err_master_from_env_and_conf) {
    const char *saved = getenv("EMBER_MASTER");
    char *keep = saved ? strdup(saved) : NULL;
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.master", "local[3]"));
    unsetenv("EMBER_MASTER");
    em_ctx *c = em_open(NULL, conf); /* NULL: $EMBER_MASTER, then ember.master */
    int cores = c ? em_cores(c) : -1;
    em_close(c);
    setenv("EMBER_MASTER", "local[2]", 1);
    c = em_open(NULL, conf);
    int cores_env = c ? em_cores(c) : -1;
    em_close(c);
    setenv("EMBER_MASTER", "bogus[1]", 1);
    c = em_open(NULL, conf);
    int bogus_failed = c == NULL && strstr(em_errmsg(), "bogus[1]") != NULL;
    em_close(c);
    unsetenv("EMBER_MASTER");
    CHECK_OK(em_conf_set(conf, "ember.master", "nope"));
    c = em_open(NULL, conf);
    int nope_failed = c == NULL && strstr(em_errmsg(), "nope") != NULL;
    em_close(c);
    if (keep) setenv("EMBER_MASTER", keep, 1);
    free(keep);
    em_conf_free(conf);
    CHECK_EQ_I64(cores, 3);
    CHECK_EQ_I64(cores_env, 2);
    CHECK(bogus_failed);
    CHECK(nope_failed);
}

TEST(api_err_conf_values) {
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.default.parallelism", "5"));
    CHECK_OK(em_conf_set(conf, "ember.app.name", "first"));
    CHECK_OK(em_conf_set(conf, "ember.app.name", "second")); /* replaces */
    CHECK_STR_CONTAINS(em_conf_get(conf, "ember.app.name"), "second");
    em_ctx *c = em_open(test_master(), conf);
    CHECK_OK(em_conf_set(conf, "ember.app.name", "changed after open")); /* the context has a copy */
    em_conf_free(conf);
    CHECK(c);
    CHECK(strcmp(em_get(c, "ember.app.name"), "second") == 0);
    /* ember.default.parallelism drives sources without a partition count. */
    int64_t v[20] = {0};
    CHECK_EQ_I64(em_num_partitions(em_parallelize_i64(c, v, 20, 0)), 5);
    CHECK_EQ_I64(em_num_partitions(em_range(c, 0, 100, 1, 0)), 5);
    CHECK_EQ_I64(em_num_partitions(em_range(c, 0, 100, 1, -3)), 5);
    /* em_set: known keys only, not the master or the local dir. */
    CHECK_EQ_I64(em_set(c, "ember.nope", "1"), EM_EINVAL);
    CHECK_EQ_I64(em_set(c, "ember.local.dir", "/"), EM_EINVAL);
    CHECK_OK(em_set(c, "ember.default.parallelism", "3"));
    CHECK_EQ_I64(em_num_partitions(em_range(c, 0, 100, 1, 0)), 3);
    CHECK_STR_CONTAINS(em_get(c, "ember.default.parallelism"), "3");
    /* A malformed value is refused and the setting keeps its value: the
     * default, 4 attempts. */
    CHECK_EQ_I64(em_set(c, "ember.task.maxFailures", "many"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.task.maxFailures: \"many\" is not a whole number");
    em_stats s0, s1;
    int64_t n;
    em_get_stats(c, &s0);
    CHECK_EQ_I64(em_count(em_map(em_range(c, 0, 20, 1, 4), fn_boom, NULL, 0), &n), EM_EJOB);
    em_get_stats(c, &s1);
    CHECK_EQ_I64(s1.tasks_failed - s0.tasks_failed, 4);
    CHECK_STR_CONTAINS(em_errmsg(), "failed 4 times");
    em_close(c);
}

/* Emits a pair whose key and value are *arg bytes each. */
static int fn_sized_pair(const em_rec *in, em_emitter *out, const void *arg) {
    size_t n = *(const size_t *)arg;
    char *buf = calloc(1, n ? n : 1);
    if (!buf) return EM_ENOMEM;
    int rc = em_emit_pair(out, buf, n, buf, n);
    free(buf);
    return rc;
}

static int fn_sized_part(int p, em_iter *in, em_emitter *out, const void *arg) {
    em_rec r;
    while (em_iter_next(in, &r) == 1) {
        int rc = fn_sized(&r, out, arg);
        if (rc) return rc;
    }
    return 0;
}

static int fn_grow(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    char buf[4000];
    size_t n = a->vlen + b->vlen;
    if (n > sizeof buf) n = sizeof buf;
    memset(buf, 'g', n);
    return em_emit(out, buf, n);
}

TEST(api_err_record_max_bytes_everywhere) {
    em_ctx *c = open_test_ctx_with("ember.record.maxBytes", "1024");
    CHECK(c);
    int64_t n;
    size_t exact = 1024, over = 1025, half = 512, half_over = 513;
    /* The limit itself is allowed, one byte more is not. */
    CHECK_OK(em_count(em_map(em_range(c, 0, 4, 1, 2), fn_sized, &exact, sizeof exact), &n));
    CHECK_EQ_I64(em_count(em_map(em_range(c, 0, 4, 1, 2), fn_sized, &over, sizeof over), &n), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.record.maxBytes");
    /* A pair counts key and value. */
    CHECK_OK(em_count(em_map(em_range(c, 0, 4, 1, 2), fn_sized_pair, &half, sizeof half), &n));
    CHECK_EQ_I64(em_count(em_map(em_range(c, 0, 4, 1, 2), fn_sized_pair, &half_over, sizeof half_over), &n),
                 EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.record.maxBytes");
    /* map_partitions and map_values. */
    CHECK_EQ_I64(em_count(em_map_partitions(em_range(c, 0, 4, 1, 2), fn_sized_part, &over, sizeof over), &n),
                 EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.record.maxBytes");
    em_rdd *pairs = em_map(em_range(c, 0, 4, 1, 2), fn_pair_x10, NULL, 0);
    CHECK_EQ_I64(em_count(em_map_values(pairs, fn_sized, &over, sizeof over), &n), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.record.maxBytes");
    /* A reduce whose result outgrows the limit fails, naming it. */
    em_batch *b = NULL;
    const char *s[] = {"0123456789", "0123456789"};
    em_rdd *strs = em_parallelize_str(c, s, 2, 2);
    int rc = em_reduce(em_flat_map(strs, fn_identity, NULL, 0), fn_grow, NULL, 0, &b);
    CHECK_OK(rc); /* 20 bytes: fine */
    em_batch_free(b);
    em_rdd *big = em_map(em_range(c, 0, 300, 1, 3), fn_sized, &(size_t){10}, sizeof(size_t));
    rc = em_reduce(big, fn_grow, NULL, 0, &b);
    CHECK(rc < 0);
    CHECK(b == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.record.maxBytes");
    /* Still usable. */
    CHECK_OK(em_count(em_range(c, 0, 4, 1, 2), &n));
    CHECK_EQ_I64(n, 4);
    em_close(c);
}

static int fn_pred_fail(const em_rec *in, const void *arg) {
    return rec_i64(in) == 3 ? em_fail("predicate failed on %d", 3) : 1;
}
static int fn_fe_fail(const em_rec *r, const void *arg) {
    return rec_i64(r) == 9 ? em_fail("foreach failed on %lld", (long long)rec_i64(r)) : 0;
}
static int fn_comb_fail(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return em_fail("comb failed");
}
static int fn_long_fail(const em_rec *in, em_emitter *out, const void *arg) {
    char msg[6000];
    memset(msg, 'x', sizeof msg - 1);
    msg[sizeof msg - 1] = 0;
    memcpy(msg, "START", 5);
    return em_fail("%s", msg);
}
static int fn_bare_fail(const em_rec *in, em_emitter *out, const void *arg) { return -42; }

TEST(api_err_failure_kinds) {
    em_ctx *c = open_test_ctx_with("ember.task.maxFailures", "1");
    CHECK(c);
    int64_t n;
    em_batch *b = NULL;
    CHECK_EQ_I64(em_count(em_filter(em_range(c, 0, 10, 1, 2), fn_pred_fail, NULL, 0), &n), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "predicate failed on 3");
    CHECK_EQ_I64(em_foreach(em_range(c, 0, 10, 1, 2), fn_fe_fail, NULL, 0), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "foreach failed on 9");
    /* A combine failing in the tasks (two records in a partition) ... */
    CHECK(em_reduce(em_range(c, 0, 10, 1, 2), fn_comb_fail, NULL, 0, &b) < 0);
    CHECK(b == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "comb failed");
    /* ... or only on the driver (one record per partition). */
    CHECK(em_reduce(em_range(c, 0, 2, 1, 2), fn_comb_fail, NULL, 0, &b) < 0);
    CHECK(b == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "comb failed");
    /* A very long message is kept (at least its start), without harm. */
    CHECK_EQ_I64(em_count(em_map(em_range(c, 0, 10, 1, 2), fn_long_fail, NULL, 0), &n), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "START");
    /* A bare negative code without em_fail: still a job failure. */
    CHECK_EQ_I64(em_count(em_map(em_range(c, 0, 10, 1, 2), fn_bare_fail, NULL, 0), &n), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "failed 1 times");
    /* A reduce_by_key combine failing in the shuffle. */
    em_rdd *pairs = em_map(em_range(c, 0, 100, 1, 2), fn_pair_x10, NULL, 0);
    int64_t m = 3;
    em_rdd *dup = em_map(em_range(c, 0, 100, 1, 2), fn_mod_key, &m, sizeof m);
    CHECK_EQ_I64(em_count(em_reduce_by_key(dup, fn_comb_fail, NULL, 0, 2), &n), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "comb failed");
    CHECK_OK(em_count(pairs, &n));
    CHECK_EQ_I64(n, 100);
    em_close(c);
}

static int fn_emit_null_key(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_pair(out, NULL, 100000, in->val, in->vlen);
}

static int fn_fail_with_message(const em_rec *in, em_emitter *out, const void *arg) {
    return em_fail("the FIRST job's message");
}

static int fn_fail_bare(const em_rec *in, em_emitter *out, const void *arg) { return -42; }

/* A NULL key with a length is an error, never a read of 100000 bytes. */
TEST(api_err_emit_null_with_length) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_batch *b = NULL;
    CHECK_EQ_I64(em_collect(em_map(em_range(c, 0, 4, 1, 2), fn_emit_null_key, NULL, 0), &b), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "NULL key or value");
    em_close(c);
}

/* A function failing without em_fail reports its code, not a message some
 * earlier task left on the same thread. */
TEST(api_err_no_stale_message) {
    em_conf *conf = em_conf_new();
    test_conf_set(conf, "ember.local.dir", test_scratchdir());
    em_ctx *c = em_open("local[1]", conf);
    em_conf_free(conf);
    CHECK(c);
    em_batch *b = NULL;
    CHECK_EQ_I64(em_collect(em_map(em_range(c, 0, 2, 1, 1), fn_fail_with_message, NULL, 0), &b), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "FIRST job");
    CHECK_EQ_I64(em_collect(em_map(em_range(c, 0, 2, 1, 1), fn_fail_bare, NULL, 0), &b), EM_EJOB);
    CHECK(strstr(em_errmsg(), "FIRST job") == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "returned -42");
    em_close(c);
}

/* Settings a job cannot run with are refused by em_set itself, naming the
 * key, the value and what is allowed, and the context keeps running on the
 * values it had. */
TEST(api_err_settings_out_of_range) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t n;
    CHECK_EQ_I64(em_set(c, "ember.shuffle.compress.level", "10"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.shuffle.compress.level: \"10\" is above the maximum of 9");
    CHECK_STR_CONTAINS(em_get(c, "ember.shuffle.compress.level"), "1");
    CHECK_EQ_I64(em_set(c, "ember.shuffle.memoryBytes", "-5"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.shuffle.memoryBytes: \"-5\" is not a size");
    CHECK_EQ_I64(em_set(c, "ember.shuffle.memoryBytes", "1"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "is below the minimum of 131072 bytes");
    CHECK_OK(em_count(em_range(c, 0, 10, 1, 2), &n));
    CHECK_EQ_I64(n, 10);
    CHECK_OK(em_set(c, "ember.shuffle.memoryBytes", "1m"));
    CHECK_OK(em_count(em_range(c, 0, 10, 1, 2), &n));
    CHECK_EQ_I64(n, 10);
    em_close(c);
}

/* em_fail(NULL) is defined: a fixed message, EM_EUSER, no crash. */
static int fn_null_fail(const em_rec *in, em_emitter *out, const void *arg) {
    const char *volatile fmt = NULL; /* hidden from the format checker */
    return em_fail(fmt);
}

TEST(api_err_fail_null_format) {
    const char *volatile fmt = NULL;
    CHECK_EQ_I64(em_fail(fmt), EM_EUSER);
    CHECK_STR_CONTAINS(em_errmsg(), "em_fail called with a NULL format");
    em_ctx *c = open_test_ctx_with("ember.task.maxFailures", "1");
    CHECK(c);
    int64_t n;
    CHECK_EQ_I64(em_count(em_map(em_range(c, 0, 10, 1, 2), fn_null_fail, NULL, 0), &n), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "em_fail called with a NULL format");
    em_close(c);
}

/* A group is one record: group_by_key (and cogroup) over a key whose values
 * pass ember.record.maxBytes fails naming the key's size and the setting,
 * instead of growing the group without bound. */
static int fn_one_key(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_pair(out, "hot", 3, in->val, in->vlen);
}

TEST(api_err_group_past_record_max_bytes) {
    em_ctx *c = open_test_ctx_with("ember.record.maxBytes", "100000");
    CHECK(c);
    int64_t n;
    /* 20,000 values of 8 bytes under one key: 180 KB of group. */
    em_rdd *hot = em_map(em_range(c, 0, 20000, 1, 4), fn_one_key, NULL, 0);
    CHECK_EQ_I64(em_count(em_group_by_key(hot, 2), &n), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "group_by_key");
    CHECK_STR_CONTAINS(em_errmsg(), "3-byte key");
    CHECK_STR_CONTAINS(em_errmsg(), "ember.record.maxBytes");
    CHECK_EQ_I64(em_count(em_cogroup(hot, hot, 2), &n), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.record.maxBytes");
    /* Under the limit the same key groups fine. */
    em_rdd *warm = em_map(em_range(c, 0, 5000, 1, 4), fn_one_key, NULL, 0);
    em_batch *b;
    CHECK_OK(em_collect(em_group_by_key(warm, 2), &b));
    CHECK_EQ_I64(em_batch_count(b), 1);
    em_rec r;
    CHECK_OK(em_batch_get(b, 0, &r));
    size_t pos = 0, items = 0, ilen;
    const void *item;
    while (em_list_next(r.val, r.vlen, &pos, &item, &ilen) == 1) items++;
    CHECK_EQ_I64(items, 5000);
    size_t counted = 0;
    CHECK_OK(em_list_count(r.val, r.vlen, &counted));
    CHECK_EQ_I64(counted, 5000);
    em_batch_free(b);
    em_close(c);
}
