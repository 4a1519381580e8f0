/*
 * test_sources.c -- parallelize, parallelize_i64/str, range and text_file
 * (files, directories, globs, gzip, split boundaries, errors), through the
 * public API only.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

TEST(api_src_parallelize_plain_and_pairs) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    const char *words[] = {"alpha", "beta", "gamma", "delta", "epsilon"};
    em_rec recs[5];
    for (int i = 0; i < 5; i++) recs[i] = (em_rec){NULL, 0, words[i], strlen(words[i])};
    em_batch *b;
    CHECK_OK(em_collect(em_parallelize(c, recs, 5, 2), &b));
    CHECK_EQ_I64(em_batch_count(b), 5);
    for (size_t i = 0; i < 5; i++) {
        em_rec r;
        CHECK_OK(em_batch_get(b, i, &r));
        CHECK(r.key == NULL);
        CHECK_EQ_I64(r.vlen, strlen(words[i]));
        CHECK(memcmp(r.val, words[i], r.vlen) == 0);
    }
    em_batch_free(b);

    /* Pairs: key = word, value = its index encoded. */
    uint8_t enc[5][8];
    for (int i = 0; i < 5; i++) {
        em_i64_enc(i * 100, enc[i]);
        recs[i] = (em_rec){words[i], strlen(words[i]), enc[i], 8};
    }
    em_rdd *p = em_parallelize(c, recs, 5, 3);
    CHECK(p);
    CHECK_EQ_I64(em_num_partitions(p), 3);
    CHECK_OK(em_collect(p, &b));
    CHECK_EQ_I64(em_batch_count(b), 5);
    size_t pos = 0;
    em_rec r;
    int i = 0;
    while (em_batch_next(b, &pos, &r) == 1) {
        CHECK(r.key != NULL);
        CHECK_EQ_I64(r.klen, strlen(words[i]));
        CHECK(memcmp(r.key, words[i], r.klen) == 0);
        CHECK_EQ_I64(rec_i64(&r), i * 100);
        i++;
    }
    CHECK_EQ_I64(i, 5);
    em_batch_free(b);
    em_close(c);
}

TEST(api_src_parallelize_zero_length_records) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    /* A plain empty record, a pair with empty key and empty value, a pair
     * with empty key and a value, and a pair with a key and empty value. */
    em_rec recs[4] = {
        {NULL, 0, NULL, 0},
        {"", 0, "", 0},
        {"", 0, "v", 1},
        {"k", 1, NULL, 0},
    };
    em_batch *b;
    CHECK_OK(em_collect(em_map(em_parallelize(c, recs, 4, 3), fn_identity, NULL, 0), &b));
    CHECK_EQ_I64(em_batch_count(b), 4);
    em_rec r;
    CHECK_OK(em_batch_get(b, 0, &r));
    CHECK(r.key == NULL);
    CHECK_EQ_I64(r.vlen, 0);
    CHECK_OK(em_batch_get(b, 1, &r));
    CHECK(r.key != NULL); /* an empty key is still a pair */
    CHECK_EQ_I64(r.klen, 0);
    CHECK_EQ_I64(r.vlen, 0);
    CHECK_OK(em_batch_get(b, 2, &r));
    CHECK(r.key != NULL);
    CHECK_EQ_I64(r.klen, 0);
    CHECK_EQ_I64(r.vlen, 1);
    CHECK(memcmp(r.val, "v", 1) == 0);
    CHECK_OK(em_batch_get(b, 3, &r));
    CHECK_EQ_I64(r.klen, 1);
    CHECK(memcmp(r.key, "k", 1) == 0);
    CHECK_EQ_I64(r.vlen, 0);
    em_batch_free(b);
    int64_t n;
    CHECK_OK(em_count(em_parallelize(c, recs, 4, 2), &n));
    CHECK_EQ_I64(n, 4);
    em_close(c);
}

TEST(api_src_parallelize_big_record) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    size_t big = 1500 * 1000 + 7; /* over 1 MB */
    unsigned char *data = malloc(big);
    CHECK(data);
    for (size_t i = 0; i < big; i++) data[i] = (unsigned char)(i * 131 + (i >> 9));
    em_rec recs[3] = {{NULL, 0, "small", 5}, {"bigkey", 6, data, big}, {NULL, 0, "tail", 4}};
    em_batch *b;
    CHECK_OK(em_collect(em_map(em_parallelize(c, recs, 3, 2), fn_identity, NULL, 0), &b));
    CHECK_EQ_I64(em_batch_count(b), 3);
    em_rec r;
    CHECK_OK(em_batch_get(b, 1, &r));
    CHECK_EQ_I64(r.klen, 6);
    CHECK(memcmp(r.key, "bigkey", 6) == 0);
    CHECK_EQ_I64(r.vlen, big);
    CHECK(memcmp(r.val, data, big) == 0);
    CHECK_OK(em_batch_get(b, 2, &r));
    CHECK(r.vlen == 4 && memcmp(r.val, "tail", 4) == 0);
    em_batch_free(b);
    free(data);
    em_close(c);
}

/* A persisted parallelized RDD at each storage level: the caller's records
 * may change or go after the call (the RDD holds its own); the first count
 * stores every partition, the second reads them all from the cache; the
 * records come back as given.  Partitions of over 1 MB (several parts on
 * the wire in cluster mode), pairs and plain records. */
TEST(api_src_parallelize_persisted_each_level) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    enum { N = 300000, P = 3 };
    uint8_t *kv = malloc((size_t)N * 16);
    em_rec *recs = malloc(sizeof *recs * N);
    CHECK(kv && recs);
    int levels[] = {EM_MEMORY_ONLY, EM_MEMORY_AND_DISK, EM_DISK_ONLY};
    for (int l = 0; l < 3; l++) {
        for (int i = 0; i < N; i++) {
            em_i64_enc(i * 3 + l, kv + 16 * (size_t)i);
            em_i64_enc(-i, kv + 16 * (size_t)i + 8);
            recs[i] = (em_rec){i % 5 ? kv + 16 * (size_t)i : NULL, i % 5 ? 8 : 0, kv + 16 * (size_t)i + 8, 8};
        }
        em_rdd *r = em_persist(em_parallelize(c, recs, N, P), levels[l]);
        CHECK(r);
        memset(kv, 0xee, (size_t)N * 16); /* the caller's bytes change */
        em_stats st0, st1, st2;
        em_get_stats(c, &st0);
        int64_t n1 = 0, n2 = 0;
        CHECK_OK(em_count(r, &n1));
        em_get_stats(c, &st1);
        CHECK_OK(em_count(r, &n2));
        em_get_stats(c, &st2);
        CHECK_EQ_I64(n1, N);
        CHECK_EQ_I64(n2, N);
        CHECK_EQ_I64(st1.cache_hits - st0.cache_hits, 0);
        CHECK_EQ_I64(st2.cache_hits - st1.cache_hits, P);
        em_batch *b;
        CHECK_OK(em_collect(r, &b));
        CHECK_EQ_I64(em_batch_count(b), N);
        size_t pos = 0;
        em_rec e;
        for (int i = 0; i < N; i++) {
            CHECK(em_batch_next(b, &pos, &e) == 1);
            CHECK_EQ_I64(e.key != NULL, i % 5 != 0);
            if (e.key) CHECK_EQ_I64(em_i64_dec(e.key), i * 3 + l);
            CHECK_EQ_I64(rec_i64(&e), -i);
        }
        em_batch_free(b);
        CHECK_OK(em_unpersist(r));
        em_rdd_release(r);
    }
    free(kv);
    free(recs);
    em_close(c);
}

TEST(api_src_parallelize_more_partitions_than_records) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t v[3] = {5, 6, 7};
    em_rdd *r = em_parallelize_i64(c, v, 3, 10);
    CHECK(r);
    CHECK_EQ_I64(em_num_partitions(r), 10);
    em_batch *b;
    CHECK_OK(em_collect(em_glom(r), &b));
    CHECK_EQ_I64(em_batch_count(b), 10); /* one list per partition */
    size_t pos = 0;
    em_rec g;
    int empty = 0, total = 0;
    while (em_batch_next(b, &pos, &g) == 1) {
        size_t lp = 0;
        em_rec item;
        int n = 0;
        while (em_list_next_rec(g.val, g.vlen, &lp, &item) == 1) {
            CHECK_EQ_I64(rec_i64(&item), v[total]);
            n++;
            total++;
        }
        if (!n) empty++;
    }
    CHECK_EQ_I64(total, 3);
    CHECK_EQ_I64(empty, 7);
    em_batch_free(b);
    CHECK_OK(em_collect(r, &b));
    CHECK(batch_eq_i64(b, v, 3));
    em_batch_free(b);
    /* Zero records, default partitions. */
    int64_t n = -1;
    CHECK_OK(em_count(em_parallelize(c, NULL, 0, 0), &n));
    CHECK_EQ_I64(n, 0);
    em_close(c);
}

TEST(api_src_parallelize_i64_and_str) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t v[6] = {INT64_MIN, -3, 0, 1, 42, INT64_MAX};
    em_batch *b;
    CHECK_OK(em_collect(em_parallelize_i64(c, v, 6, 4), &b));
    CHECK(batch_eq_i64(b, v, 6));
    em_batch_free(b);

    const char *s[4] = {"one", "", "three", "a longer string with spaces"};
    CHECK_OK(em_collect(em_parallelize_str(c, s, 4, 3), &b));
    CHECK_EQ_I64(em_batch_count(b), 4);
    for (size_t i = 0; i < 4; i++) {
        em_rec r;
        CHECK_OK(em_batch_get(b, i, &r));
        CHECK(r.key == NULL);
        CHECK_EQ_I64(r.vlen, strlen(s[i]));
        CHECK(r.vlen == 0 || memcmp(r.val, s[i], r.vlen) == 0);
    }
    em_batch_free(b);
    em_close(c);
}

TEST(api_src_range) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_batch *b;
    /* Negative step: 10, 7, 4, 1, -2, -5 (end -6 exclusive... -5 > -6). */
    int64_t want[6] = {10, 7, 4, 1, -2, -5};
    CHECK_OK(em_collect(em_range(c, 10, -6, -3, 4), &b));
    CHECK(batch_eq_i64(b, want, 6));
    em_batch_free(b);
    /* Empty ranges. */
    int64_t n = -1;
    CHECK_OK(em_count(em_range(c, 5, 5, 1, 3), &n));
    CHECK_EQ_I64(n, 0);
    CHECK_OK(em_count(em_range(c, 5, 10, -1, 3), &n));
    CHECK_EQ_I64(n, 0);
    CHECK_OK(em_count(em_range(c, 10, 5, 2, 3), &n));
    CHECK_EQ_I64(n, 0);
    /* Step not dividing the span, more partitions than records. */
    int64_t want2[4] = {0, 7, 14, 21};
    CHECK_OK(em_collect(em_range(c, 0, 22, 7, 9), &b));
    CHECK(batch_eq_i64(b, want2, 4));
    em_batch_free(b);
    /* Large range: sum computed independently. */
    int64_t s = 0, cnt = 0;
    for (int64_t x = -1000; x < 99999; x += 3) s += x, cnt++;
    CHECK_OK(em_collect(em_range(c, -1000, 99999, 3, 7), &b));
    CHECK_EQ_I64(em_batch_count(b), cnt);
    CHECK_EQ_I64(batch_sum_i64(b), s);
    CHECK_EQ_I64(batch_i64_at(b, 0), -1000);
    em_batch_free(b);
    /* Step 0 is invalid. */
    CHECK(em_range(c, 0, 10, 0, 2) == NULL);
    em_close(c);
}

/* Ranges reaching the int64 limits: no value past a slice is formed, so the
 * last values are neither lost nor wrapped. */
TEST(api_src_range_int64_limits) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_batch *b;
    for (int parts = 1; parts <= 4; parts++) {
        int64_t w1[3] = {INT64_MAX - 5, INT64_MAX - 3, INT64_MAX - 1};
        CHECK_OK(em_collect(em_range(c, INT64_MAX - 5, INT64_MAX, 2, parts), &b));
        CHECK(batch_eq_i64(b, w1, 3));
        em_batch_free(b);
        int64_t w2[3] = {INT64_MIN, -1, INT64_MAX - 1};
        CHECK_OK(em_collect(em_range(c, INT64_MIN, INT64_MAX, INT64_MAX, parts), &b));
        CHECK(batch_eq_i64(b, w2, 3));
        em_batch_free(b);
        int64_t w3[2] = {INT64_MIN + 4, INT64_MIN + 2}; /* end exclusive */
        CHECK_OK(em_collect(em_range(c, INT64_MIN + 4, INT64_MIN, -2, parts), &b));
        CHECK(batch_eq_i64(b, w3, 2));
        em_batch_free(b);
        int64_t w4[3] = {INT64_MAX, 0, INT64_MIN + 1};
        CHECK_OK(em_collect(em_range(c, INT64_MAX, INT64_MIN, INT64_MIN + 1, parts), &b));
        CHECK(batch_eq_i64(b, w4, 3));
        em_batch_free(b);
    }
    /* The largest count: 2^64 - 1 values; counting them all would take
     * forever, so take the first and last few through take/top. */
    CHECK_OK(em_take(em_range(c, INT64_MIN, INT64_MAX, 1, 4), 2, &b));
    int64_t w5[2] = {INT64_MIN, INT64_MIN + 1};
    CHECK(batch_eq_i64(b, w5, 2));
    em_batch_free(b);
    em_close(c);
}

/* ---------------------------------------------------------- text_file */

/* Collect a text RDD and check its lines equal want[0..n) in order. */
static int lines_equal(em_rdd *r, const char *const *want, size_t n) {
    em_batch *b;
    if (!r || em_collect(r, &b)) {
        fprintf(stderr, "  collect: %s\n", em_errmsg());
        return 0;
    }
    int ok = em_batch_count(b) == n;
    for (size_t i = 0; ok && i < n; i++) {
        em_rec rec;
        ok = em_batch_get(b, i, &rec) == 0 && rec.vlen == strlen(want[i]) && memcmp(rec.val, want[i], rec.vlen) == 0;
        if (!ok) fprintf(stderr, "  line %zu differs (want \"%s\")\n", i, want[i]);
    }
    if (em_batch_count(b) != n) fprintf(stderr, "  %zu lines, want %zu\n", em_batch_count(b), n);
    em_batch_free(b);
    return ok;
}

static int write_gz(const char *path, const void *data, size_t len) {
    gzFile g = gzopen(path, "wb6");
    if (!g) return -1;
    size_t done = 0;
    while (done < len) {
        unsigned chunk = len - done > (1u << 20) ? (1u << 20) : (unsigned)(len - done);
        if (gzwrite(g, (const char *)data + done, chunk) != (int)chunk) {
            gzclose(g);
            return -1;
        }
        done += chunk;
    }
    return gzclose(g) == Z_OK ? 0 : -1;
}

TEST(api_src_text_file_single_dir_glob) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    CHECK(mkdir(tmp_path("d"), 0755) == 0);
    CHECK(write_file(tmp_path("d/a.txt"), "a1\na2\r\n\na4", 10) == 0); /* CRLF, empty line, no final newline */
    CHECK(write_file(tmp_path("d/b.txt"), "b1\nb2\n", 6) == 0);
    CHECK(write_file(tmp_path("d/c.log"), "c1\n", 3) == 0);
    const char *a[] = {"a1", "a2", "", "a4"};
    CHECK(lines_equal(em_text_file(c, tmp_path("d/a.txt"), 1), a, 4));
    CHECK(lines_equal(em_text_file(c, tmp_path("d/a.txt"), 3), a, 4));

    /* A directory: every file; compare as a multiset (sorted). */
    em_rdd *d = em_text_file(c, tmp_path("d"), 2);
    CHECK(d);
    em_batch *b;
    CHECK_OK(em_take_ordered(d, 100, &b));
    const char *all[] = {"", "a1", "a2", "a4", "b1", "b2", "c1"};
    CHECK_EQ_I64(em_batch_count(b), 7);
    for (size_t i = 0; i < 7; i++) {
        em_rec r;
        CHECK_OK(em_batch_get(b, i, &r));
        CHECK(r.vlen == strlen(all[i]) && memcmp(r.val, all[i], r.vlen) == 0);
    }
    em_batch_free(b);

    /* A glob: only the .txt files. */
    int64_t n;
    CHECK_OK(em_count(em_text_file(c, tmp_path("d/*.txt"), 1), &n));
    CHECK_EQ_I64(n, 6);
    CHECK_OK(em_count(em_text_file(c, tmp_path("d/*.log"), 1), &n));
    CHECK_EQ_I64(n, 1);
    em_close(c);
}

TEST(api_src_text_file_gzip) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    const char *text = "first line\nsecond\r\n\nfourth";
    CHECK(write_gz(tmp_path("f.gz"), text, strlen(text)) == 0);
    const char *want[] = {"first line", "second", "", "fourth"};
    em_rdd *r = em_text_file(c, tmp_path("f.gz"), 4);
    CHECK(r);
    CHECK_EQ_I64(em_num_partitions(r), 1); /* one partition per .gz file */
    CHECK(lines_equal(r, want, 4));
    /* A directory mixing gzip and plain files. */
    CHECK(mkdir(tmp_path("mix"), 0755) == 0);
    CHECK(write_gz(tmp_path("mix/x.gz"), "x1\nx2\n", 6) == 0);
    CHECK(write_file(tmp_path("mix/y.txt"), "y1\n", 3) == 0);
    int64_t n;
    CHECK_OK(em_count(em_text_file(c, tmp_path("mix"), 1), &n));
    CHECK_EQ_I64(n, 3);
    em_close(c);
}

/* ~3 MB of lines of varied length (0..~700 bytes, a few longer than a
 * split, some CRLF-terminated); returns the text; *want_lines/sum set. */
static char *gen_text(size_t target, int64_t *nlines, uint64_t *sum, uint64_t *ordered) {
    size_t cap = target + 400000, len = 0;
    char *t = malloc(cap);
    uint64_t x = 88172645463325252ull;
    *nlines = 0;
    *sum = 0;
    *ordered = 0;
    while (t && len < target) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t l = x % 97 == 0 ? 0 : (x % 1009 == 0 ? 150000 + x % 1000 : (x >> 20) % 700);
        int crlf = (x >> 40) % 5 == 0;
        size_t start = len;
        for (size_t i = 0; i < l; i++) t[len++] = (char)('a' + (i * 7 + (x >> 3)) % 26);
        for (int d = 0, v = (int)*nlines; l > 8 && d < 8; d++, v /= 10) t[start + 7 - d] = (char)('0' + v % 10);
        uint64_t h = fnv1a(t + start, l);
        *sum += h;
        *ordered = *ordered * 31 + h;
        (*nlines)++;
        if (crlf) t[len++] = '\r';
        t[len++] = '\n';
    }
    /* A final line without a terminator. */
    if (t) {
        size_t start = len;
        memcpy(t + len, "last-line", 9);
        len += 9;
        uint64_t h = fnv1a(t + start, 9);
        *sum += h;
        *ordered = *ordered * 31 + h;
        (*nlines)++;
        t[len] = 0;
    }
    return t;
}

static int check_lines(em_rdd *r, int64_t nlines, uint64_t sum, uint64_t ordered) {
    em_batch *b;
    if (!r || em_collect(r, &b)) {
        fprintf(stderr, "  collect: %s\n", em_errmsg());
        return 0;
    }
    size_t pos = 0;
    em_rec rec;
    int64_t n = 0;
    uint64_t s = 0, o = 0;
    while (em_batch_next(b, &pos, &rec) == 1) {
        uint64_t h = fnv1a(rec.val, rec.vlen);
        s += h;
        o = o * 31 + h;
        n++;
    }
    em_batch_free(b);
    if (n != nlines || s != sum || o != ordered) {
        fprintf(stderr, "  lines %lld (want %lld), checksum %s, order %s\n", (long long)n, (long long)nlines,
                s == sum ? "ok" : "differs", o == ordered ? "ok" : "differs");
        return 0;
    }
    int64_t cnt = -1;
    if (em_count(r, &cnt) || cnt != nlines) {
        fprintf(stderr, "  count %lld (want %lld)\n", (long long)cnt, (long long)nlines);
        return 0;
    }
    return 1;
}

TEST(api_src_text_file_split_boundaries) {
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.files.maxPartitionBytes", "100000"));
    em_ctx *c = em_open(test_master(), conf);
    em_conf_free(conf);
    CHECK(c);
    int64_t nlines;
    uint64_t sum, ordered;
    char *t = gen_text(3 * 1000 * 1000, &nlines, &sum, &ordered);
    CHECK(t);
    size_t len = strlen(t);
    CHECK(write_file(tmp_path("big.txt"), t, len) == 0);
    em_rdd *r = em_text_file(c, tmp_path("big.txt"), 1);
    CHECK(r);
    CHECK(em_num_partitions(r) >= 30); /* ~3 MB / 100 kB */
    CHECK(check_lines(r, nlines, sum, ordered));
    /* A different split size through em_set on the open context. */
    CHECK_OK(em_set(c, "ember.files.maxPartitionBytes", "77777"));
    em_rdd *r2 = em_text_file(c, tmp_path("big.txt"), 1);
    CHECK(r2);
    CHECK(em_num_partitions(r2) > em_num_partitions(r));
    CHECK(check_lines(r2, nlines, sum, ordered));
    /* The same text gzipped: one partition, same lines. */
    CHECK(write_gz(tmp_path("big.txt.gz"), t, len) == 0);
    em_rdd *g = em_text_file(c, tmp_path("big.txt.gz"), 1);
    CHECK(g);
    CHECK_EQ_I64(em_num_partitions(g), 1);
    CHECK(check_lines(g, nlines, sum, ordered));
    free(t);
    em_close(c);
}

TEST(api_src_text_file_missing_path) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    const char *p = tmp_path("no-such-file.txt");
    CHECK(em_text_file(c, p, 1) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), p);
    const char *g = tmp_path("nothing-*.txt");
    CHECK(em_text_file(c, g, 1) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "nothing-");
    em_close(c);
}

TEST(api_src_text_file_truncated_gzip) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    /* Incompressible-ish text so that cutting the file loses data. */
    size_t n = 200000;
    char *t = malloc(n + 1);
    CHECK(t);
    uint64_t x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        t[i] = i % 61 == 60 ? '\n' : (char)('!' + (x >> 33) % 90);
    }
    CHECK(write_gz(tmp_path("full.gz"), t, n) == 0);
    size_t glen;
    char *gz = read_file_all(tmp_path("full.gz"), &glen);
    CHECK(gz && glen > 1000);
    const char *p = tmp_path("cut.gz");
    CHECK(write_file(p, gz, glen / 2) == 0);
    em_rdd *r = em_text_file(c, p, 1);
    CHECK(r);
    int64_t cnt;
    int rc = em_count(r, &cnt);
    CHECK_EQ_I64(rc, EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "cut.gz");
    CHECK_STR_CONTAINS(em_errmsg(), "truncated");
    /* The context is still usable and the intact file reads fully. */
    CHECK_OK(em_count(em_text_file(c, tmp_path("full.gz"), 1), &cnt));
    CHECK_EQ_I64(cnt, (int64_t)((n + 60) / 61));
    free(gz);
    free(t);
    em_close(c);
}

TEST(api_src_text_file_small_edge_cases) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    int64_t n = -1;
    CHECK(write_file(tmp_path("empty.txt"), "", 0) == 0);
    em_rdd *e = em_text_file(c, tmp_path("empty.txt"), 4);
    CHECK(e);
    CHECK_OK(em_count(e, &n));
    CHECK_EQ_I64(n, 0);
    CHECK(write_file(tmp_path("nl.txt"), "\n", 1) == 0);
    const char *one_empty[] = {""};
    CHECK(lines_equal(em_text_file(c, tmp_path("nl.txt"), 4), one_empty, 1));
    CHECK(write_file(tmp_path("crlf.txt"), "\r\n\r\nx\r\n", 7) == 0);
    const char *crlf[] = {"", "", "x"};
    CHECK(lines_equal(em_text_file(c, tmp_path("crlf.txt"), 5), crlf, 3));
    /* Many partitions requested on a small file: each line once. */
    char buf[2000];
    size_t len = 0;
    for (int i = 0; i < 100; i++) len += (size_t)sprintf(buf + len, "%d\n", i * 37);
    CHECK(write_file(tmp_path("nums.txt"), buf, len) == 0);
    em_rdd *nums = em_text_file(c, tmp_path("nums.txt"), 64);
    CHECK(nums);
    CHECK(em_num_partitions(nums) >= 32);
    em_batch *b;
    CHECK_OK(em_collect(nums, &b));
    CHECK_EQ_I64(em_batch_count(b), 100);
    for (size_t i = 0; i < 100; i++) {
        em_rec r;
        char want[16];
        CHECK_OK(em_batch_get(b, i, &r));
        int k = sprintf(want, "%d", (int)i * 37);
        CHECK(r.vlen == (size_t)k && memcmp(r.val, want, r.vlen) == 0);
    }
    em_batch_free(b);
    /* input_bytes counts what text_file read. */
    em_stats s0, s1;
    em_get_stats(c, &s0);
    CHECK_OK(em_count(em_text_file(c, tmp_path("nums.txt"), 1), &n));
    em_get_stats(c, &s1);
    CHECK_EQ_I64(n, 100);
    CHECK(s1.input_bytes - s0.input_bytes >= (int64_t)len);
    /* An empty directory (only hidden files): an empty RDD, as in Spark;
     * a path that does not exist stays an error naming it. */
    CHECK(mkdir(tmp_path("emptydir"), 0755) == 0);
    CHECK(write_file(tmp_path("emptydir/_SUCCESS"), "", 0) == 0);
    em_rdd *ed = em_text_file(c, tmp_path("emptydir"), 2);
    CHECK(ed);
    CHECK_EQ_I64(em_num_partitions(ed), 0);
    CHECK_OK(em_count(ed, &n));
    CHECK_EQ_I64(n, 0);
    em_batch *eb;
    CHECK_OK(em_collect(ed, &eb));
    CHECK_EQ_I64(em_batch_count(eb), 0);
    em_batch_free(eb);
    CHECK(em_text_file(c, tmp_path("no-such-dir"), 2) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "no-such-dir: no such file or directory");
    em_close(c);
}

TEST(api_src_text_file_corrupt_gzip) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    /* Valid gzip header, garbage deflate data. */
    unsigned char junk[600];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)(i * 73 + 11);
    junk[0] = 0x1f, junk[1] = 0x8b, junk[2] = 8, junk[3] = 0;
    memset(junk + 4, 0, 6);
    CHECK(write_file(tmp_path("junk.gz"), junk, sizeof junk) == 0);
    int64_t n;
    CHECK_EQ_I64(em_count(em_text_file(c, tmp_path("junk.gz"), 1), &n), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "junk.gz");
    /* Several gzip files through a glob: one partition each. */
    CHECK(write_gz(tmp_path("g1.gz"), "a\nb\n", 4) == 0);
    CHECK(write_gz(tmp_path("g2.gz"), "c\n", 2) == 0);
    CHECK(write_gz(tmp_path("g3.gz"), "", 0) == 0);
    em_rdd *g = em_text_file(c, tmp_path("g[123].gz"), 1);
    CHECK(g);
    CHECK_EQ_I64(em_num_partitions(g), 3);
    const char *want[] = {"a", "b", "c"};
    CHECK(lines_equal(g, want, 3));
    em_close(c);
}
