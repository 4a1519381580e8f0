/*
 * test_oracle.c -- the exact result oracle (oracle.h) checked on itself:
 * equal multisets in another order pass, and a lost record, a duplicate in
 * its place, a changed value and a pair returned plain each fail, naming
 * the difference.  The batches come from em_parallelize and em_collect on
 * test_master(), so the test runs on any master.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "helpers.h"

/* Collect n records (key NULL: plain) through a 3-partition RDD. */
static em_batch *collect_recs(em_ctx *c, const em_rec *recs, size_t n) {
    em_batch *b = NULL;
    em_rdd *r = em_parallelize(c, recs, n, 3);
    if (!r || em_collect(r, &b)) {
        fprintf(stderr, "  collect: %s\n", em_errmsg());
        b = NULL;
    }
    em_rdd_release(r);
    return b;
}

/* expect_multiset with stderr sent to a file whose text lands in out
 * (NUL-terminated, at most cap - 1 bytes).  The verdict, or -1 when
 * stderr could not be redirected. */
static int expect_captured(em_batch *got, const want_set *w, const char *what, char *out, size_t cap) {
    const char *path = tmp_path("oracle_stderr.txt");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600), saved = dup(2);
    if (fd < 0 || saved < 0) return -1;
    fflush(stderr);
    dup2(fd, 2);
    close(fd);
    int ok = expect_multiset(got, w, what);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    size_t len = 0;
    char *text = read_file_all(path, &len);
    snprintf(out, cap, "%s", text ? text : "");
    free(text);
    fputs(out, stderr); /* still shown in the test's output */
    return ok;
}

/* Records from np int64s and npairs (int64, int64) pairs into r, their
 * encodings in enc (2 per record). */
static void fill(em_rec *r, uint8_t enc[][8], const int64_t *plain, size_t np, const int64_t (*pairs)[2],
                 size_t npairs) {
    size_t j = 0;
    for (size_t i = 0; i < np; i++, j++) {
        em_i64_enc(plain[i], enc[2 * j]);
        r[j] = (em_rec){NULL, 0, enc[2 * j], 8};
    }
    for (size_t i = 0; i < npairs; i++, j++) {
        em_i64_enc(pairs[i][0], enc[2 * j]);
        em_i64_enc(pairs[i][1], enc[2 * j + 1]);
        r[j] = (em_rec){enc[2 * j], 8, enc[2 * j + 1], 8};
    }
}

/* The expected six: plain 0..2, pairs (1, 10), (2, 20) and ("k", "v\n"). */
static want_set *six(void) {
    want_set *w = want_new();
    want_i64(w, 0);
    want_i64(w, 1);
    want_i64(w, 2);
    want_pair_i64(w, 1, 10);
    want_pair_i64(w, 2, 20);
    want_bytes(w, "k", 1, "v\n", 2);
    return w;
}

TEST(oracle_equal_in_another_order) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rec r[6];
    uint8_t enc[12][8];
    const int64_t plain[] = {2, 0, 1}, pairs[][2] = {{2, 20}, {1, 10}};
    fill(r + 1, enc, plain, 3, pairs, 2);
    r[0] = (em_rec){"k", 1, "v\n", 2};
    em_batch *b = collect_recs(c, r, 6);
    CHECK(b);
    want_set *w = six();
    CHECK_EQ_I64(want_count(w), 6);
    int ok = expect_multiset(b, w, "six in another order");
    want_free(w);
    em_batch_free(b);
    CHECK(ok);

    /* Empty against empty, and the one-line forms on real jobs. */
    CHECK(expect_multiset_take(NULL, want_new(), "no batch") == 0);
    CHECK_OK(em_collect(em_range(c, 0, 0, 1, 2), &b));
    ok = expect_multiset_take(b, want_new(), "empty");
    em_batch_free(b);
    CHECK(ok);
    CHECK_OK(em_collect(em_range(c, 0, 100, 1, 4), &b));
    ok = expect_range(b, 100, NULL, "range 100");
    em_batch_free(b);
    CHECK(ok);
    int64_t m = 7;
    CHECK_OK(em_collect(em_reduce_by_key(em_map(em_range(c, 0, 1000, 1, 4), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                         NULL, 0, 3),
                        &b));
    ok = expect_mod_sums(b, 1000, 7, "mod sums");
    em_batch_free(b);
    CHECK(ok);
    CHECK_OK(em_collect(em_map(em_range(c, 0, 1000, 1, 4), fn_mod_key, &m, sizeof m), &b));
    ok = expect_multiset_take(b, want_mod_pairs(1000, 7), "mod pairs");
    em_batch_free(b);
    CHECK(ok);
    em_close(c);
}

/* One corruption of the six records against the expected six: 0, with
 * `says` in the message. */
static int corrupted(em_ctx *c, const int64_t *plain, size_t np, const int64_t (*pairs)[2], size_t npairs,
                     const char *says) {
    em_rec r[8];
    uint8_t enc[16][8];
    fill(r, enc, plain, np, pairs, npairs);
    r[np + npairs] = (em_rec){"k", 1, "v\n", 2};
    em_batch *b = collect_recs(c, r, np + npairs + 1);
    if (!b) return 0;
    want_set *w = six();
    char msg[2048];
    int ok = expect_captured(b, w, "corrupt", msg, sizeof msg);
    want_free(w);
    em_batch_free(b);
    if (ok != 0) fprintf(stderr, "  the oracle returned %d for a result with %s\n", ok, says);
    if (!strstr(msg, says)) fprintf(stderr, "  the message does not say \"%s\"\n", says);
    return ok == 0 && strstr(msg, says) && strstr(msg, "corrupt: got ");
}

TEST(oracle_missing_record) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    const int64_t plain[] = {0, 2}, pairs[][2] = {{1, 10}, {2, 20}};
    CHECK(corrupted(c, plain, 2, pairs, 2, "missing 1\n"));
    CHECK(corrupted(c, plain, 2, pairs, 2, "got 5 records, expected 6"));
    em_close(c);
}

TEST(oracle_duplicate_in_place_of_a_lost_record) {
    /* The same count and the same sum as 0, 1, 2: a count + sum oracle
     * passes this. */
    em_ctx *c = open_test_ctx();
    CHECK(c);
    const int64_t plain[] = {1, 1, 1}, pairs[][2] = {{1, 10}, {2, 20}};
    CHECK(corrupted(c, plain, 3, pairs, 2, "missing 0\n"));
    CHECK(corrupted(c, plain, 3, pairs, 2, "extra   1\n"));
    const int64_t plain2[] = {0, 1, 2}, dup[][2] = {{1, 10}, {1, 10}};
    CHECK(corrupted(c, plain2, 3, dup, 2, "missing (2, 20)"));
    em_close(c);
}

TEST(oracle_changed_value) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    const int64_t plain[] = {0, 1, 2}, pairs[][2] = {{1, 10}, {2, 21}};
    CHECK(corrupted(c, plain, 3, pairs, 2, "differs: expected (2, 20), got 21"));
    const int64_t plain2[] = {0, 1, 3}, pairs2[][2] = {{1, 10}, {2, 20}};
    CHECK(corrupted(c, plain2, 3, pairs2, 2, "missing 2\n"));
    em_close(c);
}

TEST(oracle_pair_returned_plain) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    /* (2, 20) comes back as the plain record 20: same count, same values. */
    const int64_t plain[] = {0, 1, 2, 20}, pairs[][2] = {{1, 10}};
    CHECK(corrupted(c, plain, 4, pairs, 1, "missing (2, 20)"));
    CHECK(corrupted(c, plain, 4, pairs, 1, "extra   20\n"));
    em_close(c);
}

TEST(oracle_bytes_shown_escaped) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    const int64_t plain[] = {0, 1, 2}, pairs[][2] = {{1, 10}, {2, 20}};
    em_rec r[6];
    uint8_t enc[12][8];
    fill(r, enc, plain, 3, pairs, 2);
    r[5] = (em_rec){"k", 1, "w\"\x01", 3};
    em_batch *b = collect_recs(c, r, 6);
    CHECK(b);
    want_set *w = six();
    char msg[2048];
    int ok = expect_captured(b, w, "bytes", msg, sizeof msg);
    want_free(w);
    em_batch_free(b);
    CHECK_EQ_I64(ok, 0);
    CHECK_STR_CONTAINS(msg, "differs: expected (\"k\", \"v\\x0a\"), got \"w\\\"\\x01\"");

    /* More than five differences: five shown, the rest counted. */
    CHECK_OK(em_collect(em_range(c, 10, 20, 1, 2), &b));
    ok = expect_captured(b, w = want_range(10, NULL), "ten", msg, sizeof msg);
    want_free(w);
    em_batch_free(b);
    CHECK_EQ_I64(ok, 0);
    CHECK_STR_CONTAINS(msg, "missing 4\n");
    CHECK_STR_CONTAINS(msg, "... and 15 more differences");
    CHECK_STR_CONTAINS(msg, "ten: got 10 records, expected 10");
    em_close(c);
}
