/*
 * test_ml_data.c -- mllib's data side: the LIBSVM and CSV readers (values,
 * shapes, "FILE:LINE" errors on split and gzip input), the dense binary
 * format, the synthetic generator (determinism across partitionings,
 * density), column statistics and standardization.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../test.h"
#include "block.h"
#include "cache_room.h"
#include "ember.h"
#include "ember_ml.h"
#include "parse.h"

#define BC_CSV "tests/data/ml/breast_cancer.csv"

static em_ctx *ml_ctx(const char *key, const char *value) {
    em_conf *conf = em_conf_new();
    test_conf_set(conf, "ember.local.dir", test_scratchdir());
    test_conf_set(conf, "ember.task.maxFailures", "1"); /* failing tests fail fast */
    if (key) em_conf_set(conf, key, value);
    em_ctx *c = em_open(test_master(), conf);
    em_conf_free(conf);
    if (!c) fprintf(stderr, "  em_open(%s): %s\n", test_master(), em_errmsg());
    return c;
}

static const char *tpath(const char *name) {
    static char buf[4][512];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", test_tmpdir(), name);
    return buf[i];
}

static int put_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

/* A data set as dense arrays (rows x cols, row-major, and labels), in
 * block order; 0 or -1.  The caller frees *x and *y. */
static int densify(em_ml_data *d, double **x, double **y, int64_t *nblocks) {
    em_batch *b = NULL;
    int64_t rows = em_ml_rows(d), cols = em_ml_cols(d), at = 0;
    *x = calloc((size_t)(rows * cols + 1), sizeof(double));
    *y = calloc((size_t)(rows + 1), sizeof(double));
    if (!*x || !*y || em_collect(em_ml_blocks(d), &b)) return -1;
    if (nblocks) *nblocks = (int64_t)em_batch_count(b);
    size_t pos = 0;
    em_rec r;
    ebuf scratch = EBUF_INIT;
    int rc = 0;
    while (!rc && em_batch_next(b, &pos, &r) == 1) {
        ml_block k;
        if (ml_block_view(&r, &k, &scratch) || at + k.rows > rows || k.cols > cols) {
            rc = -1;
            break;
        }
        for (int64_t i = 0; i < k.rows; i++) {
            (*y)[at + i] = k.y[i];
            if (k.kind == ML_DENSE)
                memcpy(*x + (at + i) * cols, k.x + i * k.cols, sizeof(double) * (size_t)k.cols);
            else
                for (int64_t j = k.indptr[i]; j < k.indptr[i + 1]; j++) (*x)[(at + i) * cols + k.idx[j]] = k.val[j];
        }
        at += k.rows;
    }
    ebuf_free(&scratch);
    em_batch_free(b);
    return rc || at != rows ? -1 : 0;
}

static uint64_t checksum(const double *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    const uint8_t *b = (const uint8_t *)p;
    for (size_t i = 0; i < n * 8; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* ------------------------------------------------------------- parsing */

TEST(ml_data_parse_numbers) {
    const char *cases[] = {"0",        "-0",      "1",         "-1",     "+1",       "0.5",     ".5",
                           "5.",       "1e3",     "1E-3",      "-2.5e+2", "3.14159", "0.1",     "0.3",
                           "123456789012345678", "1234567890123456789012", "1e22", "1e23", "4.9e-324",
                           "1.7976931348623157e308", "0.000000000000000000000000001", "9007199254740993",
                           "2.2250738585072014e-308", "00012.50", "1.000000000000000000001"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *s = cases[i], *e = s + strlen(s);
        double v = -42;
        const char *q = ml_parse_f64(s, e, &v);
        CHECK(q == e);
        double want = strtod(s, NULL);
        if (memcmp(&v, &want, 8)) fprintf(stderr, "  %s: %.17g != %.17g\n", s, v, want);
        CHECK(memcmp(&v, &want, 8) == 0);
    }
    /* Random doubles printed several ways round-trip exactly as strtod. */
    uint64_t s = 12345;
    char buf[128]; /* >= the slow path's 128-byte copy, or gcc -O1 warns (-Warray-bounds) */
    for (int i = 0; i < 20000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double x = (double)(int64_t)(s >> 1) * 0x1p-62 * pow(10, (int)(s % 21) - 10);
        const char *fmt = i % 3 == 0 ? "%.17g" : i % 3 == 1 ? "%g" : "%.6f";
        snprintf(buf, sizeof buf, fmt, x);
        double v, want = strtod(buf, NULL);
        CHECK(ml_parse_f64(buf, buf + strlen(buf), &v) == buf + strlen(buf));
        CHECK(memcmp(&v, &want, 8) == 0);
    }
    const char *bad[] = {"", "-", ".", "e5", "1e", "1e+", "nan", "inf", "abc", "1e999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double v;
        const char *q = ml_parse_f64(bad[i], bad[i] + strlen(bad[i]), &v);
        CHECK(q == NULL || q == bad[i] + 0); /* no number (the caller checks the delimiter) */
    }
}

/* ------------------------------------------------------------- LIBSVM */

/* The one-step LIBSVM feature parser (ml_libsvm_pair) against strtol and
 * strtod on random tokens of every shape near its limits: where it takes a
 * token, index and value bits agree; it takes every token of the common
 * shape; and it leaves the others (exponents, '+', over 8 digits a side,
 * no blank after, under 24 bytes left) to the general path. */
TEST(ml_data_libsvm_pair_exact) {
#if defined(__SSE2__)
    uint64_t s = 99;
    char buf[64];
    int taken = 0, common = 0;
    for (int i = 0; i < 200000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t r = s >> 11;
        int ilen = 1 + (int)(r % 10), ni = (int)((r >> 4) % 11), nf = (int)((r >> 8) % 11), form = (int)((r >> 12) % 16);
        int n = 0;
        for (int k = 0; k < ilen; k++) buf[n++] = (char)('0' + (k == 0 && form != 1 ? 1 + (r >> (16 + k)) % 9 : (r >> (20 + k)) % 10));
        buf[n++] = ':';
        int vstart = n;
        if (form == 2 || form == 3) buf[n++] = '-';
        if (form == 4) buf[n++] = '+';
        for (int k = 0; k < ni; k++) buf[n++] = (char)('0' + (r >> (k + 3)) % 10);
        if (form != 5) buf[n++] = '.';
        for (int k = 0; k < nf; k++) buf[n++] = (char)('0' + (r >> (k + 7)) % 10);
        if (form == 6) n += sprintf(buf + n, "e%d", (int)(r % 30) - 15);
        buf[n++] = form == 7 ? '\t' : form == 8 ? 'x' : ' ';
        while (n < 40) buf[n++] = form == 9 ? '9' : ' ';
        int avail = form == 10 ? (int)(r % 30) : 40;
        int64_t idx = -1;
        double v = -1;
        const char *q = ml_libsvm_pair(buf, buf + avail, &idx, &v);
        int eni = form == 5 ? ni + nf : ni, enf = form == 5 ? 0 : nf; /* no point: one run of digits */
        int shape = avail >= 24 && ilen <= 8 && eni <= 8 && enf <= 8 && eni + enf > 0 && form != 4 && form != 6 &&
                    form != 8;
        int plen = ilen + 1 + (form == 2 || form == 3) + ni + (form != 5) + nf;
        if (shape && plen < 16) common++;
        if (!q) {
            CHECK(!(shape && plen < 16)); /* the common shape is always taken */
            continue;
        }
        taken++;
        CHECK(shape && plen < 16);
        char *e;
        CHECK_EQ_I64(idx, strtoll(buf, NULL, 10));
        double want = strtod(buf + vstart, &e);
        CHECK(q == e);
        if (memcmp(&v, &want, 8)) fprintf(stderr, "  %.*s: %.17g, strtod %.17g\n", (int)(e - buf), buf, v, want);
        CHECK(memcmp(&v, &want, 8) == 0);
    }
    CHECK(taken == common && taken > 20000);
#endif
}


TEST(ml_data_libsvm_roundtrip) {
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    const char *p = tpath("a.svm");
    CHECK(put_file(p, "# a comment\n"
                      "1 1:0.5 3:-2\n"
                      "\n"
                      "-1 2:1e-3\t4:7\r\n"
                      "0\n"
                      "+1 1:1 2:2 3:3 4:4 5:5.25  # trailing comment\n"
                      "   0 5:-0.125\n") == 0);
    em_ml_load_opts o = {.partitions = 2, .block_rows = 2};
    em_ml_data *d = em_ml_read_libsvm(c, p, &o);
    CHECK_OK(d ? 0 : -1);
    CHECK_EQ_I64(em_ml_rows(d), 5);
    CHECK_EQ_I64(em_ml_cols(d), 5);
    CHECK(em_ml_is_sparse(d) == 1);
    double *x, *y;
    int64_t nb;
    CHECK(densify(d, &x, &y, &nb) == 0);
    CHECK(nb >= 3); /* at most 2 rows a block */
    const double wy[5] = {1, 0, 0, 1, 0};
    const double wx[5][5] = {{0.5, 0, -2, 0, 0}, {0, 1e-3, 0, 7, 0}, {0}, {1, 2, 3, 4, 5.25}, {0, 0, 0, 0, -0.125}};
    CHECK(memcmp(y, wy, sizeof wy) == 0);
    CHECK(memcmp(x, wx, sizeof wx) == 0);
    free(x);
    free(y);
    em_ml_free(d);

    /* num_features fixes the width. */
    o.num_features = 9;
    d = em_ml_read_libsvm(c, p, &o);
    CHECK(d);
    CHECK_EQ_I64(em_ml_cols(d), 9);
    CHECK_EQ_I64(em_ml_rows(d), 5);
    em_ml_free(d);
    em_close(c);
}

/* Blocks over 2/3 full are stored dense (the same numbers, -0 kept, zeros
 * between), the others CSR; num_features widens a block and so can make
 * it CSR. */
TEST(ml_data_libsvm_dense_blocks) {
    CHECK(ml_block_dense_better(3, 3, 6) && !ml_block_dense_better(3, 3, 5));
    CHECK(ml_block_dense_better(1, 1, 1) && !ml_block_dense_better(0, 3, 0) && !ml_block_dense_better(2, 0, 0));
    CHECK(!ml_block_dense_better(4096, (int64_t)1 << 31, 1 << 20)); /* no overflow */
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    const char *p = tpath("dense.svm");
    CHECK(put_file(p, "1 1:0.5 2:-0 3:7e-3\n"     /* block 1: 6 of 6, dense */
                      "0 1:1 2:2 3:3\n"
                      "1 2:0.25 3:-1\n"           /* block 2: 4 of 6, dense */
                      "-1 1:9 3:1e300\n"
                      "0 3:4\n"                   /* block 3: 2 of 6, CSR */
                      "1 1:1\n") == 0);
    const double wx[6][3] = {{0.5, -0.0, 7e-3}, {1, 2, 3}, {0, 0.25, -1}, {9, 0, 1e300}, {0, 0, 4}, {1, 0, 0}};
    const double wy[6] = {1, 0, 1, 0, 0, 1};
    for (int nf = 0; nf <= 5; nf += 5) {
        em_ml_load_opts o = {.partitions = 1, .block_rows = 2, .num_features = nf};
        em_ml_data *d = em_ml_read_libsvm(c, p, &o);
        CHECK_OK(d ? 0 : -1);
        CHECK_EQ_I64(em_ml_rows(d), 6);
        CHECK_EQ_I64(em_ml_cols(d), nf ? 5 : 3);
        CHECK(em_ml_is_sparse(d) == 1);
        em_batch *b = NULL;
        CHECK_OK(em_collect(em_ml_blocks(d), &b));
        CHECK_EQ_I64((int64_t)em_batch_count(b), 3);
        size_t pos = 0;
        em_rec r;
        ebuf scratch = EBUF_INIT;
        for (int i = 0; i < 3 && em_batch_next(b, &pos, &r) == 1; i++) {
            ml_block k;
            CHECK_OK(ml_block_view(&r, &k, &scratch));
            /* Width 5: 6 of 10 and 4 of 10 are under 2/3, so all CSR. */
            CHECK_EQ_I64(k.kind, !nf && i < 2 ? ML_DENSE : ML_CSR);
            if (k.kind == ML_DENSE) {
                CHECK_EQ_I64(k.cols, 3);
                CHECK(memcmp(k.x, wx[2 * i], sizeof(double) * 6) == 0);
            }
            CHECK(memcmp(k.y, wy + 2 * i, sizeof(double) * 2) == 0);
        }
        ebuf_free(&scratch);
        em_batch_free(b);
        double *x, *y;
        CHECK(densify(d, &x, &y, NULL) == 0);
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 3; j++) CHECK(memcmp(&x[i * (nf ? 5 : 3) + j], &wx[i][j], sizeof(double)) == 0);
        free(x);
        free(y);
        em_ml_free(d);
    }
    em_close(c);
}

/* Rows of a label and no feature: idx and val stay empty, which used to
 * reach memcpy(dst, NULL, 0) (undefined; it aborted make test-sanitize). */
TEST(ml_data_libsvm_labels_only) {
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    const char *p = tpath("labels.svm");
    CHECK(put_file(p, "1\n0\n") == 0);
    em_ml_data *d = em_ml_read_libsvm(c, p, NULL);
    CHECK_OK(d ? 0 : -1);
    CHECK_EQ_I64(em_ml_rows(d), 2);
    CHECK_EQ_I64(em_ml_cols(d), 0);
    CHECK(em_ml_is_sparse(d) == 1);
    double *x, *y;
    CHECK(densify(d, &x, &y, NULL) == 0);
    CHECK(y[0] == 1 && y[1] == 0);
    free(x);
    free(y);
    em_ml_free(d);
    /* With a fixed width, the rows are all zeros. */
    em_ml_load_opts o = {.num_features = 3};
    d = em_ml_read_libsvm(c, p, &o);
    CHECK_OK(d ? 0 : -1);
    CHECK_EQ_I64(em_ml_rows(d), 2);
    CHECK_EQ_I64(em_ml_cols(d), 3);
    CHECK(densify(d, &x, &y, NULL) == 0);
    for (int i = 0; i < 6; i++) CHECK(x[i] == 0);
    free(x);
    free(y);
    em_ml_free(d);
    em_close(c);
}

/* Labels are 0 or 1 (-1 read as 0); any other fails naming line and value. */
TEST(ml_data_libsvm_labels) {
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    const char *p = tpath("l.svm");
    CHECK(put_file(p, "+1 1:1\n-1 1:2\n1.0 1:3\n0e5 1:4\n-0 1:5\n") == 0);
    em_ml_data *d = em_ml_read_libsvm(c, p, NULL);
    CHECK_OK(d ? 0 : -1);
    double *x, *y;
    CHECK(densify(d, &x, &y, NULL) == 0);
    const double wy[5] = {1, 0, 1, 0, 0};
    for (int i = 0; i < 5; i++) CHECK(y[i] == wy[i]);
    free(x);
    free(y);
    em_ml_free(d);
    static const char *bad[] = {"2", "0.5", "-2", "1e-300", "3.0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[128], want[700];
        snprintf(text, sizeof text, "1 1:1\n0 2:2\n%s 1:1 3:1\n", bad[i]);
        CHECK(put_file(p, text) == 0);
        CHECK(em_ml_read_libsvm(c, p, NULL) == NULL);
        snprintf(want, sizeof want, "%s:3: label '%s' (labels must be 0 or 1; -1 is read as 0)", p, bad[i]);
        CHECK_STR_CONTAINS(em_errmsg(), want);
    }
    em_close(c);
}

/* Lines of a LIBSVM file with a bad line at `bad` (1-based; 0: none). */
static int write_svm(const char *path, int lines, int bad, const char *badtext, int gz) {
    char line[128];
    gzFile g = gz ? gzopen(path, "wb1") : NULL;
    FILE *f = gz ? NULL : fopen(path, "w");
    if (!g && !f) return -1;
    for (int i = 1; i <= lines; i++) {
        if (i == bad)
            snprintf(line, sizeof line, "%s\n", badtext);
        else
            snprintf(line, sizeof line, "%d 1:%d 3:0.%d 7:1e-%d\n", i % 2, i, i, i % 9);
        if (gz)
            gzputs(g, line);
        else
            fputs(line, f);
    }
    return gz ? (gzclose(g) == Z_OK ? 0 : -1) : fclose(f);
}

TEST(ml_data_libsvm_bad_line_split) {
    /* Small splits, so the bad line is many splits into the file. */
    em_ctx *c = ml_ctx("ember.files.maxPartitionBytes", "4k"); /* a size with a suffix */
    CHECK(c);
    const char *p = tpath("big.svm");
    CHECK(write_svm(p, 6000, 4321, "1 1:2 3:x7", 0) == 0);
    em_ml_data *d = em_ml_read_libsvm(c, p, NULL);
    CHECK(d == NULL);
    char want[600];
    snprintf(want, sizeof want, "%s:4321: bad value 'x7' for index 3", p);
    CHECK_STR_CONTAINS(em_errmsg(), want);

    /* The same file without the bad line reads whole. */
    CHECK(write_svm(p, 6000, 0, NULL, 0) == 0);
    em_ml_load_opts o = {.partitions = 3};
    d = em_ml_read_libsvm(c, p, &o);
    CHECK(d);
    CHECK_EQ_I64(em_ml_rows(d), 6000);
    CHECK_EQ_I64(em_ml_cols(d), 7);
    /* Splits of 4 KiB ("4k" read as a size, not as 4 bytes), read as runs
     * of consecutive splits by the 3 partitions asked for. */
    struct stat sb;
    CHECK(stat(p, &sb) == 0);
    CHECK((sb.st_size + 4095) / 4096 > 3);
    CHECK_EQ_I64(em_num_partitions(em_ml_blocks(d)), 3);
    em_ml_free(d);
    em_close(c);
}

TEST(ml_data_libsvm_bad_line_reasons) {
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    static const struct {
        const char *line, *why;
        int64_t nf;
    } cases[] = {
        {"1 0:1", "index 0", 0},
        {"1 2:1 2:3", "index 2 after 2", 0},
        {"1 3:1 2:3", "index 2 after 3", 0},
        {"1 2:1 11:3", "index 11 > num_features 10", 10},
        {"x 1:1", "bad label 'x'", 0},
        {"1 1:1 a:2", "bad feature 'a:2'", 0},
        {"1 1:1 2", "bad feature '2'", 0},
        {"1 1:1 2:", "bad value '' for index 2", 0},
        {"1 1:1 2:1.5.6", "bad value '1.5.6'", 0},
        {"1 99999999999:1", "too large", 0},
    };
    const char *p = tpath("bad.svm");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "1 1:1\n0 2:2\n%s\n1 3:3\n", cases[i].line);
        CHECK(put_file(p, text) == 0);
        em_ml_load_opts o = {.num_features = cases[i].nf};
        em_ml_data *d = em_ml_read_libsvm(c, p, &o);
        CHECK(d == NULL);
        char want[600];
        snprintf(want, sizeof want, "%s:3: ", p);
        CHECK_STR_CONTAINS(em_errmsg(), want);
        CHECK_STR_CONTAINS(em_errmsg(), cases[i].why);
    }
    em_close(c);
}

TEST(ml_data_libsvm_gz) {
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    const char *p = tpath("a.svm.gz");
    CHECK(write_svm(p, 5000, 0, NULL, 1) == 0);
    em_ml_data *d = em_ml_read_libsvm(c, p, NULL);
    CHECK(d);
    CHECK_EQ_I64(em_ml_rows(d), 5000);
    double *x, *y;
    CHECK(densify(d, &x, &y, NULL) == 0);
    CHECK(y[0] == 1 && x[0] == 1 && x[2] == 0.1 && x[6] == 1e-1); /* "1 1:1 3:0.1 7:1e-1" */
    CHECK(y[4999] == 0 && x[4999 * 7] == 5000 && x[4999 * 7 + 2] == 0.5 && x[4999 * 7 + 6] == 1e-5);
    free(x);
    free(y);
    em_ml_free(d);

    CHECK(write_svm(p, 5000, 3777, "1 4:1 2:1", 1) == 0);
    d = em_ml_read_libsvm(c, p, NULL);
    CHECK(d == NULL);
    char want[600];
    snprintf(want, sizeof want, "%s:3777: index 2 after 4", p);
    CHECK_STR_CONTAINS(em_errmsg(), want);
    em_close(c);
}

/* ---------------------------------------------------------------- CSV */

TEST(ml_data_csv_breast_cancer) {
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    em_ml_load_opts o = {.label_col = -1, .skip_header = 1, .block_rows = 100};
    em_ml_data *d = em_ml_read_csv(c, BC_CSV, &o);
    CHECK_OK(d ? 0 : -1);
    CHECK_EQ_I64(em_ml_rows(d), 569);
    CHECK_EQ_I64(em_ml_cols(d), 30);
    CHECK(em_ml_is_sparse(d) == 0);
    double *x, *y;
    CHECK(densify(d, &x, &y, NULL) == 0);
    int ones = 0, zeros = 0;
    for (int i = 0; i < 569; i++) ones += y[i] == 1, zeros += y[i] == 0;
    CHECK_EQ_I64(ones, 357);
    CHECK_EQ_I64(zeros, 212);
    /* First row: 17.99,10.38,...,0.1189,0 */
    CHECK(x[0] == 17.99 && x[1] == 10.38 && x[3] == 1001 && x[29] == 0.1189 && y[0] == 0);
    free(x);
    free(y);
    em_ml_free(d);

    /* Label in the first column: the features shift. */
    const char *p = tpath("first.csv");
    CHECK(put_file(p, "label,a,b\n1,17.99,10.38\n0,3,4\n") == 0);
    o.label_col = 0;
    d = em_ml_read_csv(c, p, &o);
    CHECK_OK(d ? 0 : -1);
    CHECK_EQ_I64(em_ml_cols(d), 2);
    CHECK(densify(d, &x, &y, NULL) == 0);
    CHECK(y[0] == 1 && x[0] == 17.99 && x[1] == 10.38 && y[1] == 0 && x[2] == 3 && x[3] == 4);
    free(x);
    free(y);
    em_ml_free(d);
    /* The breast cancer data's first column is no label: its line and
     * value are named.  Several partitions hold bad labels and any of them
     * may fail first, so the first partition alone is read once to pin
     * the line. */
    d = em_ml_read_csv(c, BC_CSV, &o);
    CHECK(d == NULL);
    char want[600];
    snprintf(want, sizeof want, "%s:", BC_CSV);
    CHECK_STR_CONTAINS(em_errmsg(), want);
    CHECK_STR_CONTAINS(em_errmsg(), " in field 1 (labels must be 0 or 1)");
    o.partitions = 1;
    d = em_ml_read_csv(c, BC_CSV, &o);
    CHECK(d == NULL);
    snprintf(want, sizeof want, "%s:2: label 17.99 in field 1 (labels must be 0 or 1)", BC_CSV);
    CHECK_STR_CONTAINS(em_errmsg(), want);
    em_close(c);
}

TEST(ml_data_csv_directory) {
    /* Every file of a directory, each with its own header; files in name
     * order, so rows in that order. */
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    char dir[512], f1[600], f2[600];
    snprintf(dir, sizeof dir, "%s/csvdir", test_tmpdir());
    CHECK(mkdir(dir, 0755) == 0);
    snprintf(f1, sizeof f1, "%s/a.csv", dir);
    snprintf(f2, sizeof f2, "%s/b.csv", dir);
    CHECK(put_file(f1, "x,y,label\n1,2,1\n3,4,0\n") == 0);
    CHECK(put_file(f2, "x,y,label\n\n5,6,1\n") == 0);
    em_ml_load_opts o = {.label_col = -1, .skip_header = 1};
    em_ml_data *d = em_ml_read_csv(c, dir, &o);
    CHECK_OK(d ? 0 : -1);
    CHECK_EQ_I64(em_ml_rows(d), 3);
    CHECK_EQ_I64(em_ml_cols(d), 2);
    double *x, *y;
    CHECK(densify(d, &x, &y, NULL) == 0);
    const double wx[6] = {1, 2, 3, 4, 5, 6}, wy[3] = {1, 0, 1};
    CHECK(memcmp(x, wx, sizeof wx) == 0 && memcmp(y, wy, sizeof wy) == 0);
    free(x);
    free(y);
    em_ml_free(d);
    CHECK(em_ml_read_csv(c, tpath("nothing-here.csv"), &o) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "nothing-here.csv");
    em_close(c);
}

/* CSV labels are 0 or 1; another fails naming line, value and field. */
TEST(ml_data_csv_labels) {
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    const char *p = tpath("l.csv");
    static const struct { const char *label, *shown; } bad[] = {
        {"2", "2"}, {"-1", "-1"}, {"0.5", "0.5"}, {"17.99", "17.99"}, {"1.0000000000000002", "1.0000000000000002"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[128], want[700];
        snprintf(text, sizeof text, "a,b,label\n1,2,0\n3,4,1\n5,6,%s\n", bad[i].label);
        CHECK(put_file(p, text) == 0);
        em_ml_load_opts o = {.label_col = -1, .skip_header = 1};
        CHECK(em_ml_read_csv(c, p, &o) == NULL);
        snprintf(want, sizeof want, "%s:4: label %s in field 3 (labels must be 0 or 1)", p, bad[i].shown);
        CHECK_STR_CONTAINS(em_errmsg(), want);
    }
    em_close(c);
}

TEST(ml_data_csv_errors) {
    em_ctx *c = ml_ctx("ember.files.maxPartitionBytes", "2048");
    CHECK(c);
    const char *p = tpath("bad.csv");
    /* A row of another width far into the file (many splits). */
    FILE *f = fopen(p, "w");
    CHECK(f);
    fprintf(f, "a,b,c,label\n");
    for (int i = 2; i <= 3000; i++) fprintf(f, i == 2500 ? "%d,2,3,4,0\n" : "%d, 2 ,3.5,1\n", i);
    fclose(f);
    em_ml_load_opts o = {.label_col = -1, .skip_header = 1};
    em_ml_data *d = em_ml_read_csv(c, p, &o);
    CHECK(d == NULL);
    char want[600];
    snprintf(want, sizeof want, "%s:2500: 5 fields, expected 4", p);
    CHECK_STR_CONTAINS(em_errmsg(), want);

    /* A bad number, and a header not skipped. */
    CHECK(put_file(p, "1,2,0\n3,4x,1\n") == 0);
    o.skip_header = 0;
    d = em_ml_read_csv(c, p, &o);
    CHECK(d == NULL);
    snprintf(want, sizeof want, "%s:2: bad number '4x' in field 2", p);
    CHECK_STR_CONTAINS(em_errmsg(), want);
    CHECK(put_file(p, "x,y,label\n1,2,0\n") == 0);
    d = em_ml_read_csv(c, p, &o);
    CHECK(d == NULL);
    snprintf(want, sizeof want, "%s:1: bad number 'x' in field 1", p);
    CHECK_STR_CONTAINS(em_errmsg(), want);
    CHECK(put_file(p, "1,2,0\n1,,0\n") == 0);
    d = em_ml_read_csv(c, p, &o);
    CHECK(d == NULL);
    snprintf(want, sizeof want, "%s:2: empty field 2", p);
    CHECK_STR_CONTAINS(em_errmsg(), want);
    o.label_col = 5;
    CHECK(put_file(p, "1,2,0\n") == 0);
    d = em_ml_read_csv(c, p, &o);
    CHECK(d == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "no label column 6");
    em_close(c);
}

/* ------------------------------------------------------- dense binary */

TEST(ml_data_dense_roundtrip) {
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    em_ml_load_opts o = {.label_col = -1, .skip_header = 1, .block_rows = 50, .partitions = 3};
    em_ml_data *d = em_ml_read_csv(c, BC_CSV, &o);
    CHECK(d);
    const char *p = tpath("bc.dns");
    CHECK_OK(em_ml_write_dense(d, p));
    struct stat st;
    CHECK(stat(p, &st) == 0);
    CHECK_EQ_I64(st.st_size, 24 + 569 * 31 * 8);
    em_ml_load_opts ro = {.block_rows = 64, .partitions = 2};
    em_ml_data *e = em_ml_read_dense(c, p, &ro);
    CHECK_OK(e ? 0 : -1);
    CHECK_EQ_I64(em_ml_rows(e), 569);
    CHECK_EQ_I64(em_ml_cols(e), 30);
    double *x1, *y1, *x2, *y2;
    CHECK(densify(d, &x1, &y1, NULL) == 0);
    CHECK(densify(e, &x2, &y2, NULL) == 0);
    CHECK(memcmp(x1, x2, 569 * 30 * 8) == 0);
    CHECK(memcmp(y1, y2, 569 * 8) == 0);
    free(x1), free(y1), free(x2), free(y2);
    em_ml_free(e);
    em_ml_free(d);

    /* Sparse data is densified. */
    em_ml_synth_opts so = {.rows = 1000, .cols = 40, .density = 0.2, .noise = 0.1, .seed = 7, .partitions = 3,
                           .block_rows = 128};
    d = em_ml_synthetic(c, &so);
    CHECK(d);
    CHECK_OK(em_ml_write_dense(d, p));
    e = em_ml_read_dense(c, p, NULL);
    CHECK(e);
    CHECK(em_ml_is_sparse(e) == 0);
    CHECK(densify(d, &x1, &y1, NULL) == 0);
    CHECK(densify(e, &x2, &y2, NULL) == 0);
    CHECK(memcmp(x1, x2, 1000 * 40 * 8) == 0);
    CHECK(memcmp(y1, y2, 1000 * 8) == 0);
    free(x1), free(y1), free(x2), free(y2);
    em_ml_free(e);
    em_ml_free(d);
    em_close(c);
}

TEST(ml_data_dense_errors) {
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    em_ml_synth_opts so = {.rows = 300, .cols = 10, .seed = 1};
    em_ml_data *d = em_ml_synthetic(c, &so);
    CHECK(d);
    const char *p = tpath("t.dns");
    CHECK_OK(em_ml_write_dense(d, p));
    em_ml_free(d);
    CHECK(truncate(p, 24 + 299 * 11 * 8 + 5) == 0);
    CHECK(em_ml_read_dense(c, p, NULL) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), p);
    CHECK_STR_CONTAINS(em_errmsg(), "truncated");
    CHECK(put_file(p, "EMBLDNS2 and more bytes than the header") == 0);
    CHECK(em_ml_read_dense(c, p, NULL) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "bad magic");
    CHECK(put_file(p, "EMB") == 0);
    CHECK(em_ml_read_dense(c, p, NULL) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "shorter than the header");
    CHECK(em_ml_read_dense(c, tpath("missing.dns"), NULL) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "missing.dns");
    em_close(c);
}

/* ---------------------------------------------------------- synthetic */

TEST(ml_data_synth_determinism) {
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    for (int sparse = 0; sparse <= 1; sparse++) {
        uint64_t sum[3];
        const int parts[3] = {1, 3, 7};
        for (int k = 0; k < 3; k++) {
            em_ml_synth_opts so = {.rows = 2000, .cols = 50, .density = sparse ? 0.1 : 1, .noise = 0.5,
                                   .seed = 42, .partitions = parts[k], .block_rows = 97};
            em_ml_data *d = em_ml_synthetic(c, &so);
            CHECK(d);
            CHECK_EQ_I64(em_ml_rows(d), 2000);
            CHECK_EQ_I64(em_ml_cols(d), 50);
            CHECK(em_ml_is_sparse(d) == sparse);
            CHECK_EQ_I64(em_num_partitions(em_ml_blocks(d)), parts[k]);
            double *x, *y;
            CHECK(densify(d, &x, &y, NULL) == 0);
            sum[k] = checksum(x, 2000 * 50) ^ (checksum(y, 2000) * 31);
            if (k == 0) {
                int ones = 0;
                for (int i = 0; i < 2000; i++) ones += y[i] == 1;
                CHECK(ones > 700 && ones < 1300);
                for (int i = 0; i < 2000 * 50; i++) CHECK(x[i] >= -1 && x[i] < 1);
            }
            free(x);
            free(y);
            em_ml_free(d);
        }
        CHECK(sum[0] == sum[1] && sum[1] == sum[2]);
    }
    /* Another seed, other data. */
    em_ml_synth_opts a = {.rows = 100, .cols = 5, .seed = 1}, b = {.rows = 100, .cols = 5, .seed = 2};
    em_ml_data *da = em_ml_synthetic(c, &a), *db = em_ml_synthetic(c, &b);
    CHECK(da && db);
    double *xa, *ya, *xb, *yb;
    CHECK(densify(da, &xa, &ya, NULL) == 0 && densify(db, &xb, &yb, NULL) == 0);
    CHECK(memcmp(xa, xb, 500 * 8) != 0);
    free(xa), free(ya), free(xb), free(yb);
    em_ml_free(da);
    em_ml_free(db);
    em_close(c);
}

TEST(ml_data_synth_density) {
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    em_ml_synth_opts so = {.rows = 4000, .cols = 500, .density = 0.05, .seed = 3};
    em_ml_data *d = em_ml_synthetic(c, &so);
    CHECK(d);
    double *x, *y;
    CHECK(densify(d, &x, &y, NULL) == 0);
    int64_t nz = 0, first = 0, last = 0;
    for (int64_t i = 0; i < 4000; i++)
        for (int64_t j = 0; j < 500; j++)
            if (x[i * 500 + j] != 0) nz++, first += j == 0, last += j == 499;
    double dens = (double)nz / (4000.0 * 500);
    CHECK(fabs(dens - 0.05) < 0.002);
    CHECK(first > 120 && first < 280 && last > 120 && last < 280); /* ~200 each: no edge bias */
    /* Noise-free labels follow a linear rule: a model fits well (checked
     * by the logreg tests); here, both classes occur. */
    int ones = 0;
    for (int i = 0; i < 4000; i++) ones += y[i] == 1;
    CHECK(ones > 1500 && ones < 2500);
    free(x);
    free(y);
    em_ml_free(d);
    em_ml_synth_opts bad = {.rows = 10, .cols = 0};
    CHECK(em_ml_synthetic(c, &bad) == NULL);
    em_close(c);
}

/* ------------------------------------------------- statistics, scaling */

/* Plain two-pass column means and sample deviations. */
static void plain_stats(const double *x, int64_t rows, int64_t cols, double *m, double *s) {
    for (int64_t j = 0; j < cols; j++) {
        double sum = 0, ss = 0;
        for (int64_t i = 0; i < rows; i++) sum += x[i * cols + j];
        m[j] = sum / (double)rows;
        for (int64_t i = 0; i < rows; i++) ss += (x[i * cols + j] - m[j]) * (x[i * cols + j] - m[j]);
        s[j] = sqrt(ss / (double)(rows - 1));
    }
}

static int close_rel(double a, double b, double tol) { return fabs(a - b) <= tol * fmax(1, fmax(fabs(a), fabs(b))); }

TEST(ml_data_column_stats) {
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    em_ml_load_opts o = {.label_col = -1, .skip_header = 1, .block_rows = 37, .partitions = 4};
    em_ml_data *d = em_ml_read_csv(c, BC_CSV, &o);
    em_ml_synth_opts so = {.rows = 3000, .cols = 60, .density = 0.1, .seed = 9, .partitions = 3, .block_rows = 200};
    em_ml_data *sp = em_ml_synthetic(c, &so);
    CHECK(d && sp);
    em_ml_data *sets[2] = {d, sp};
    for (int k = 0; k < 2; k++) {
        int64_t rows = em_ml_rows(sets[k]), cols = em_ml_cols(sets[k]);
        double *x, *y, *m, *s, pm[64], ps[64];
        CHECK(densify(sets[k], &x, &y, NULL) == 0);
        plain_stats(x, rows, cols, pm, ps);
        CHECK_OK(em_ml_column_stats(sets[k], &m, &s));
        for (int64_t j = 0; j < cols; j++) {
            if (!close_rel(m[j], pm[j], 1e-12) || !close_rel(s[j], ps[j], 1e-12))
                fprintf(stderr, "  col %lld: %g %g vs %g %g\n", (long long)j, m[j], s[j], pm[j], ps[j]);
            CHECK(close_rel(m[j], pm[j], 1e-12));
            CHECK(close_rel(s[j], ps[j], 1e-12));
        }
        free(x), free(y), free(m), free(s);
    }
    em_ml_free(sp);
    em_ml_free(d);
    em_close(c);
}

TEST(ml_data_standardize) {
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    em_ml_load_opts o = {.label_col = -1, .skip_header = 1, .block_rows = 64};
    em_ml_data *d = em_ml_read_csv(c, BC_CSV, &o);
    CHECK(d);
    em_ml_data *z = em_ml_standardize(d);
    CHECK(z);
    CHECK_EQ_I64(em_ml_rows(z), 569);
    CHECK_EQ_I64(em_ml_cols(z), 30);
    double *m, *s;
    CHECK_OK(em_ml_column_stats(z, &m, &s));
    for (int j = 0; j < 30; j++) {
        CHECK(fabs(m[j]) < 1e-12);
        CHECK(fabs(s[j] - 1) < 1e-12);
    }
    free(m), free(s);
    double *x0, *y0, *x1, *y1;
    CHECK(densify(d, &x0, &y0, NULL) == 0);
    CHECK(densify(z, &x1, &y1, NULL) == 0);
    CHECK(memcmp(y0, y1, 569 * 8) == 0); /* labels untouched */
    free(x0), free(y0), free(x1), free(y1);
    em_ml_free(z);
    em_ml_free(d);

    /* A constant column stays at zero; sparse data is only scaled. */
    const char *p = tpath("s.svm");
    CHECK(put_file(p, "1 1:2 2:5\n0 1:4 2:5\n1 2:5 3:1\n0 1:6 2:5\n") == 0);
    em_ml_data *sp = em_ml_read_libsvm(c, p, NULL);
    CHECK(sp);
    em_ml_data *sz = em_ml_standardize(sp);
    CHECK(sz);
    CHECK(em_ml_is_sparse(sz) == 1);
    CHECK(densify(sz, &x1, &y1, NULL) == 0);
    /* col 1: 2,4,0,6: mean 3, sd sqrt(20/3); col 2 constant; col 3: 0,0,1,0: sd 0.5 */
    double s1 = sqrt(20.0 / 3);
    CHECK(close_rel(x1[0], 2 / s1, 1e-15) && close_rel(x1[9], 6 / s1, 1e-15) && x1[6] == 0);
    CHECK(x1[1] == 0 && x1[4] == 0 && x1[7] == 0 && x1[10] == 0);
    CHECK(x1[8] == 2 && x1[2] == 0);
    free(x1), free(y1);
    em_ml_free(sz);
    em_ml_free(sp);
    em_close(c);
}

/* ------------------------------------------- blocks built in the cache */

/* Whether the tests run on a local master, where the cache tees are in
 * this process and cache_room_kept counts what they kept in place. */
static int local_master(void) { return strncmp(test_master(), "local", 5) == 0 && !strstr(test_master(), "cluster"); }

/* The records of blocks now (cached), and again after em_unpersist (each
 * block made again in a buffer of its producer's, then emitted as usual):
 * 1 when the two are the same bytes, block for block. */
static int same_uncached(em_rdd *blocks, int64_t *nblocks) {
    em_batch *a = NULL, *b = NULL;
    int same = em_collect(blocks, &a) == 0;
    em_unpersist(blocks);
    same = same && em_collect(blocks, &b) == 0 && em_batch_count(a) == em_batch_count(b);
    *nblocks = a ? (int64_t)em_batch_count(a) : -1;
    for (size_t i = 0; same && i < em_batch_count(a); i++) {
        em_rec x, y;
        same = !em_batch_get(a, i, &x) && !em_batch_get(b, i, &y) && x.vlen == y.vlen && !memcmp(x.val, y.val, x.vlen);
    }
    em_batch_free(a);
    em_batch_free(b);
    return same;
}

/* Every producer lays its blocks out where the cache keeps them (no copy
 * into the cache), and the blocks are byte for byte those it makes when
 * nothing is cached (laid out in its own buffer, then copied). */
TEST(ml_data_blocks_built_in_cache) {
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    const char *svm = tpath("inplace.svm"), *csv = tpath("inplace.csv"), *dns = tpath("inplace.dns");
    CHECK(put_file(svm, "1 1:0.5 2:-0 3:7e-3\n0 1:1 2:2 3:3\n1 2:0.25 3:-1\n-1 1:9 3:1e300\n0 3:4\n1 1:1\n") == 0);
    CHECK(put_file(csv, "1,2,1\n3.5,-4,0\n5,6e-3,1\n7,8,0\n9,10,1\n") == 0);
    em_ml_load_opts o = {.partitions = 2, .block_rows = 2, .label_col = -1};
    em_ml_synth_opts so = {.rows = 300, .cols = 7, .density = 1, .noise = 0.1, .seed = 5, .partitions = 2,
                           .block_rows = 64};
    em_ml_synth_opts sp = so;
    sp.density = 0.3;
    em_ml_data *d[7] = {em_ml_read_libsvm(c, svm, &o), em_ml_read_csv(c, csv, &o), em_ml_synthetic(c, &so),
                        em_ml_synthetic(c, &sp), NULL, NULL, NULL};
    for (int i = 0; i < 4; i++) CHECK_OK(d[i] ? 0 : -1);
    CHECK_OK(em_ml_write_dense(d[1], dns));
    CHECK_OK((d[4] = em_ml_read_dense(c, dns, &o)) ? 0 : -1);
    CHECK_OK((d[5] = em_ml_standardize(d[2])) ? 0 : -1);
    CHECK_OK((d[6] = em_ml_standardize(d[3])) ? 0 : -1);
    int64_t n[7];
    for (int i = 0; i < 7; i++) {
        uint64_t k0 = cache_room_kept();
        CHECK(same_uncached(em_ml_blocks(d[i]), &n[i]));
        CHECK(n[i] >= (i == 2 || i == 3 || i >= 5 ? 5 : 3)); /* a block ends every 2 (64) rows, and each partition */
        CHECK_EQ_I64((int64_t)(cache_room_kept() - k0), 0); /* made again uncached: copied as before */
    }
    for (int i = 0; i < 7; i++) em_ml_free(d[i]);
    /* Counted at the load: each block kept where it was built. */
    if (local_master()) {
        uint64_t k0 = cache_room_kept();
        em_ml_data *e = em_ml_read_libsvm(c, svm, &o);
        CHECK_OK(e ? 0 : -1);
        CHECK_EQ_I64((int64_t)(cache_room_kept() - k0), n[0]);
        em_ml_free(e);
        k0 = cache_room_kept();
        CHECK_OK((e = em_ml_synthetic(c, &sp)) ? 0 : -1);
        CHECK_EQ_I64((int64_t)(cache_room_kept() - k0), n[3]);
        em_ml_free(e);
    }
    unlink(svm);
    unlink(csv);
    unlink(dns);
    em_close(c);
}

/* LIBSVM blocks whose values outgrow their first room: while a row is
 * parsed (a row of 2.2M features, past the 2^21 values the room starts
 * with), and when a block stored dense needs more room than its values
 * took (its rows spread over zeros).  The values carried over each time
 * stay exact, cached or not. */
TEST(ml_data_libsvm_block_room_grows) {
    em_ctx *c = ml_ctx(NULL, NULL);
    CHECK(c);
    const char *p = tpath("long.svm");
    FILE *f = fopen(p, "w");
    CHECK(f);
    /* Row 0: features 1..1.1M; row 1: the odd ones below 800k; row 2:
     * 1..2.2M.  Feature j's value is j % 9 + 1. */
    const int64_t hi[3] = {1100000, 800000, 2200000}, step[3] = {1, 2, 1};
    for (int r = 0; r < 3; r++) {
        fputs(r == 1 ? "0" : "1", f);
        for (int64_t j = 1; j <= hi[r]; j += step[r]) fprintf(f, " %lld:%lld", (long long)j, (long long)(j % 9 + 1));
        fputc('\n', f);
    }
    CHECK(fclose(f) == 0);
    em_ml_load_opts o = {.partitions = 1, .label_col = -1};
    uint64_t k0 = cache_room_kept();
    em_ml_data *d = em_ml_read_libsvm(c, p, &o);
    CHECK_OK(d ? 0 : -1);
    if (local_master()) CHECK_EQ_I64((int64_t)(cache_room_kept() - k0), 2);
    CHECK_EQ_I64(em_ml_rows(d), 3);
    CHECK_EQ_I64(em_ml_cols(d), 2200000);
    /* Block 1: rows 0 and 1 (1.5M values cross the block's 1.4M), 68%
     * full: dense, 2 x 1.1M.  Block 2: row 2, dense and full. */
    for (int pass = 0; pass < 2; pass++) {
        em_batch *b = NULL;
        CHECK_OK(em_collect(em_ml_blocks(d), &b));
        CHECK_EQ_I64((int64_t)em_batch_count(b), 2);
        ebuf scratch = EBUF_INIT;
        int64_t bad = 0;
        for (size_t i = 0; i < 2; i++) {
            em_rec r;
            ml_block k;
            CHECK_OK(em_batch_get(b, i, &r));
            CHECK_OK(ml_block_view(&r, &k, &scratch));
            CHECK_EQ_I64(k.kind, ML_DENSE);
            CHECK_EQ_I64(k.rows, i ? 1 : 2);
            CHECK_EQ_I64(k.cols, i ? 2200000 : 1100000);
            for (int64_t row = 0; row < k.rows; row++) {
                int src = i ? 2 : (int)row;
                bad += k.y[row] != (src == 1 ? 0 : 1);
                for (int64_t j = 1; j <= k.cols; j++) {
                    int in = j <= hi[src] && (step[src] == 1 || j % 2 == 1);
                    bad += k.x[row * k.cols + j - 1] != (in ? (double)(j % 9 + 1) : 0.0);
                }
            }
        }
        ebuf_free(&scratch);
        em_batch_free(b);
        CHECK_EQ_I64(bad, 0);
        em_unpersist(em_ml_blocks(d)); /* the second pass: made again, in the reader's own buffer */
    }
    em_ml_free(d);
    unlink(p);
    em_close(c);
}

/* Rows of each partition's blocks: (partition, rows) per partition. */
static int part_rows(int partition, em_iter *in, em_emitter *out, const void *arg) {
    em_rec r;
    ebuf scratch = EBUF_INIT;
    int64_t rows = 0;
    int rc;
    while ((rc = em_iter_next(in, &r)) == 1) {
        ml_block k;
        if (ml_block_view(&r, &k, &scratch)) {
            ebuf_free(&scratch);
            return em_fail("not a block");
        }
        rows += k.rows;
    }
    ebuf_free(&scratch);
    if (rc < 0) return rc;
    uint8_t b[16];
    em_i64_enc(partition, b);
    em_i64_enc(rows, b + 8);
    return em_emit(out, b, 16);
}

/* A file whose splits (ember.files.maxPartitionBytes) do not share out
 * evenly over the partitions -- 3 of 1 KiB for 2 -- is cut again into 4,
 * so each partition holds half the rows, not one third and two thirds;
 * the rows stay in file order. */
TEST(ml_data_csv_splits_share_out_evenly) {
    em_ctx *c = ml_ctx("ember.files.maxPartitionBytes", "1k");
    CHECK(c);
    char text[8192];
    size_t len = 0;
    for (int i = 0; i < 200; i++) len += (size_t)snprintf(text + len, sizeof text - len, "%d,%d,%d\n", 1000 + i, 5000 + 2 * i, i % 2);
    CHECK(len > 2048 && len <= 3072); /* 3 splits of 1 KiB */
    CHECK(put_file(tpath("even.csv"), text) == 0);
    em_ml_load_opts o = {.label_col = -1, .partitions = 2};
    em_ml_data *d = em_ml_read_csv(c, tpath("even.csv"), &o);
    CHECK_OK(d ? 0 : -1);
    CHECK_EQ_I64(em_ml_rows(d), 200);
    em_batch *b;
    CHECK_OK(em_collect(em_map_partitions(em_ml_blocks(d), part_rows, NULL, 0), &b));
    CHECK_EQ_I64(em_batch_count(b), 2);
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(b, &pos, &r) == 1) {
        int64_t rows = em_i64_dec((const uint8_t *)r.val + 8);
        if (rows < 90 || rows > 110) fprintf(stderr, "  partition %lld: %lld rows\n", (long long)em_i64_dec(r.val), (long long)rows);
        CHECK(rows >= 90 && rows <= 110);
    }
    em_batch_free(b);
    double *x, *y;
    CHECK(densify(d, &x, &y, NULL) == 0);
    for (int i = 0; i < 200; i++) {
        CHECK(x[2 * i] == 1000 + i && x[2 * i + 1] == 5000 + 2 * i);
        CHECK(y[i] == i % 2);
    }
    free(x);
    free(y);
    em_ml_free(d);
    em_close(c);
}
