/*
 * fuzz_libsvm.c -- the LIBSVM reader (mllib/readers.c) and the number
 * parser under it (mllib/parse.h).
 *
 * Input layout: byte 0 picks options (bits 0-1: num_features 0, 1, 3 or
 * 10; bits 2-3: block_rows default, 1, 2 or 3; bits 4-5: partitions 1, 1,
 * 2 or 3); the rest is the file.
 * Properties:
 *   - ml_parse_f64 agrees with strtod wherever a number may start
 *     (fz_check_numbers);
 *   - em_ml_read_libsvm on the file succeeds exactly when an independent
 *     parser written here from the format's description finds every line
 *     good (labels 0, 1 or -1), and then holds exactly its rows, in file
 *     order: labels (-1 read as 0), 0-based indices and values, bit for bit, and its column count;
 *     blocks are CSR, or dense (zeros between the values) when over 2/3
 *     full (ml_block_dense_better);
 *     otherwise it fails naming the file and the first bad line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "ember.h"
#include "ember_ml.h"
#include "fuzz.h"

/* --------------------------------------------- the reference parser */

typedef struct ref {
    double *y;
    int64_t *indptr; /* rows + 1 */
    int32_t *idx;
    double *val;
    int64_t rows, nnz, maxidx;
    size_t bad_line; /* 1-based; 0 when every line is good */
} ref;

static int blank(char c) { return c == ' ' || c == '\t'; }

/* One line: 1 for a row (appended), 0 for a blank line or comment, -1 for
 * a malformed one. */
static int ref_line(ref *r, const char *p, const char *end, int64_t nf) {
    while (p < end && blank(*p)) p++;
    if (p == end || *p == '#') return 0;
    double label;
    size_t n = fz_number(p, end, &label);
    if (!n || (p + n < end && !blank(p[n]))) return -1;
    if (label != 0 && label != 1 && label != -1) return -1; /* binary labels only */
    p += n;
    int64_t prev = 0, k = r->nnz;
    for (;;) {
        while (p < end && blank(*p)) p++;
        if (p == end || *p == '#') break;
        int64_t idx = 0;
        const char *tok = p;
        while (p < end && *p >= '0' && *p <= '9') {
            idx = idx * 10 + (*p++ - '0');
            if (idx > INT32_MAX) return -1;
        }
        if (p == tok || p == end || *p != ':') return -1;
        if (idx < 1 || idx <= prev || (nf > 0 && idx > nf)) return -1;
        p++;
        double v;
        n = fz_number(p, end, &v);
        if (!n || (p + n < end && !blank(p[n]))) return -1;
        p += n;
        r->idx[k] = (int32_t)(idx - 1);
        r->val[k++] = v;
        prev = idx;
    }
    r->y[r->rows] = label == -1 ? 0 : label;
    r->indptr[++r->rows] = r->nnz = k;
    if (prev > r->maxidx) r->maxidx = prev;
    return 1;
}

/* Parse the whole file; r's arrays are sized for the worst case. */
static void ref_parse(ref *r, const uint8_t *c, size_t n, int64_t nf) {
    fz_line *l;
    size_t nl = fz_split_lines(c, n, &l);
    memset(r, 0, sizeof *r);
    r->y = malloc(sizeof(double) * (nl + 1));
    r->indptr = calloc(nl + 2, sizeof(int64_t));
    r->idx = malloc(sizeof(int32_t) * (n / 2 + 1)); /* a feature takes >= 3 bytes */
    r->val = malloc(sizeof(double) * (n / 2 + 1));
    FZ_CHECK(r->y && r->indptr && r->idx && r->val, "out of memory");
    for (size_t i = 0; i < nl; i++)
        if (ref_line(r, (const char *)l[i].p, (const char *)l[i].p + l[i].len, nf) < 0) {
            r->bad_line = i + 1;
            break;
        }
    free(l);
}

static void ref_free(ref *r) {
    free(r->y);
    free(r->indptr);
    free(r->idx);
    free(r->val);
}

/* ------------------------------------------------------- the reader */

static void compare(em_ml_data *d, const ref *r, int64_t nf) {
    FZ_CHECK(em_ml_rows(d) == r->rows, "%lld rows, expected %lld", (long long)em_ml_rows(d), (long long)r->rows);
    int64_t cols = nf > 0 ? nf : r->maxidx;
    FZ_CHECK(em_ml_cols(d) == cols, "%lld columns, expected %lld", (long long)em_ml_cols(d), (long long)cols);
    FZ_CHECK(em_ml_is_sparse(d) == 1, "LIBSVM data is sparse");
    em_batch *b = NULL;
    FZ_CHECK(em_collect(em_ml_blocks(d), &b) == 0, "collecting the blocks: %s", em_errmsg());
    size_t pos = 0;
    em_rec rec;
    int64_t row = 0;
    ebuf scratch = EBUF_INIT;
    while (em_batch_next(b, &pos, &rec) == 1) {
        ml_block k;
        FZ_CHECK(ml_block_view(&rec, &k, &scratch) == 0, "a block does not view: %s", em_errmsg());
        FZ_CHECK(k.rows > 0 && row + k.rows <= r->rows, "block of %lld rows at row %lld", (long long)k.rows,
                 (long long)row);
        FZ_CHECK(nf > 0 ? k.cols == nf : k.cols <= cols, "block of %lld columns", (long long)k.cols);
        /* CSR, or dense when over 2/3 full (the same numbers, zeros between). */
        int64_t nnz = r->indptr[row + k.rows] - r->indptr[row];
        int kind = ml_block_dense_better(k.rows, k.cols, nnz) ? ML_DENSE : ML_CSR;
        FZ_CHECK(k.kind == kind, "block kind %d, expected %d (%lld x %lld, %lld nonzeros)", k.kind, kind,
                 (long long)k.rows, (long long)k.cols, (long long)nnz);
        for (int64_t i = 0; i < k.rows; i++, row++) {
            FZ_CHECK(!memcmp(&k.y[i], &r->y[row], sizeof(double)), "row %lld: label %.17g, expected %.17g",
                     (long long)row, k.y[i], r->y[row]);
            int64_t a = r->indptr[row], e = r->indptr[row + 1];
            if (k.kind == ML_DENSE) {
                const double *x = k.x + i * k.cols;
                int64_t at = a;
                for (int64_t j = 0; j < k.cols; j++) {
                    double want = at < e && r->idx[at] == j ? r->val[at++] : 0.0;
                    FZ_CHECK(!memcmp(&x[j], &want, sizeof(double)), "row %lld: column %lld holds %.17g, expected %.17g",
                             (long long)row, (long long)j, x[j], want);
                }
                FZ_CHECK(at == e, "row %lld: features past the block's columns", (long long)row);
                continue;
            }
            FZ_CHECK(k.indptr[i + 1] - k.indptr[i] == e - a, "row %lld: %lld features, expected %lld",
                     (long long)row, (long long)(k.indptr[i + 1] - k.indptr[i]), (long long)(e - a));
            for (int64_t j = 0; j < e - a; j++) {
                FZ_CHECK(k.idx[k.indptr[i] + j] == r->idx[a + j], "row %lld: feature %lld index", (long long)row,
                         (long long)j);
                FZ_CHECK(!memcmp(&k.val[k.indptr[i] + j], &r->val[a + j], sizeof(double)),
                         "row %lld: feature %lld value", (long long)row, (long long)j);
            }
        }
    }
    FZ_CHECK(row == r->rows, "%lld rows in the blocks, expected %lld", (long long)row, (long long)r->rows);
    ebuf_free(&scratch);
    em_batch_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const int64_t nfs[4] = {0, 1, 3, 10};
    static const int brs[4] = {0, 1, 2, 3}, parts[4] = {1, 1, 2, 3};
    if (size < 1) return 0;
    const uint8_t *c = data + 1;
    size_t n = size - 1;
    fz_check_numbers((const char *)c, n);

    em_ml_load_opts o = {parts[(data[0] >> 4) & 3], nfs[data[0] & 3], -1, 0, brs[(data[0] >> 2) & 3], 0};
    const char *p = fz_write_file("in.libsvm", c, n);
    char path[512];
    snprintf(path, sizeof path, "%s", p);
    ref r;
    ref_parse(&r, c, n, o.num_features);
    em_ml_data *d = em_ml_read_libsvm(fz_context(), path, &o);
    if (r.bad_line) {
        FZ_CHECK(d == NULL, "line %zu is malformed, yet the file was read", r.bad_line);
        char where[600];
        snprintf(where, sizeof where, "%s:%zu: ", path, r.bad_line);
        FZ_CHECK(strstr(em_errmsg(), where) != NULL, "message \"%s\" does not name %s", em_errmsg(), where);
    } else {
        FZ_CHECK(d != NULL, "every line is good, yet: %s", em_errmsg());
        compare(d, &r, o.num_features);
        em_ml_free(d);
    }
    ref_free(&r);
    return 0;
}
