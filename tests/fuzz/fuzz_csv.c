/*
 * fuzz_csv.c -- the CSV reader (mllib/readers.c) and the number parser
 * under it (mllib/parse.h).
 *
 * Input layout: byte 0 picks options (bits 0-1: label_col -1 (last), 0, 1
 * or 2; bit 2: skip_header; bits 3-4: block_rows default, 1, 2 or 3; bits
 * 5-6: partitions 1, 1, 2 or 3); the rest is the file.
 * Properties:
 *   - ml_parse_f64 agrees with strtod wherever a number may start
 *     (fz_check_numbers);
 *   - em_ml_read_csv on the file succeeds exactly when an independent
 *     parser written here from the format's description finds every line
 *     good (the first row, after a skipped header, sets the width; blank
 *     lines are skipped; the label column exists; labels are 0 or 1), and
 *     then holds exactly its rows in file order, label and features bit for bit; a malformed
 *     line fails naming the file and the line.
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
    double *cells;   /* rows x fields, as in the file */
    int64_t rows, fields;
    size_t bad_line; /* 1-based; 0 when every line is good */
    int bad_label;   /* the label column is past the width */
} ref;

static int blank(char c) { return c == ' ' || c == '\t'; }

/* The fields of one line into out: their count, 0 for a blank line, -1
 * for a malformed line. */
static int64_t ref_fields(const char *p, const char *end, double *out) {
    const char *s = p;
    while (s < end && blank(*s)) s++;
    if (s == end) return 0;
    int64_t n = 0;
    for (;;) {
        while (p < end && blank(*p)) p++;
        size_t len = fz_number(p, end, &out[n]);
        if (!len) return -1;
        p += len;
        while (p < end && blank(*p)) p++;
        n++;
        if (p == end) return n;
        if (*p != ',') return -1;
        p++;
    }
}

/* Parse the whole file as the reader documents it.  The driver reads up
 * to the first row (a malformed line there fails the read at once), then
 * checks the label column against the width, then the tasks check every
 * row: the width, and a label of 0 or 1. */
static void ref_parse(ref *r, const uint8_t *c, size_t n, int skip_header, int label_col) {
    fz_line *l;
    size_t nl = fz_split_lines(c, n, &l);
    memset(r, 0, sizeof *r);
    /* A field takes at least one byte and a comma: a line has at most
     * n / 2 + 1, and all the rows hold at most n + 1 cells. */
    double *row = malloc(sizeof(double) * (n / 2 + 2));
    r->cells = malloc(sizeof(double) * (n + 1));
    FZ_CHECK(row && r->cells, "out of memory");
    int64_t lc = -1;
    for (size_t i = skip_header ? 1 : 0; i < nl; i++) {
        int64_t k = ref_fields((const char *)l[i].p, (const char *)l[i].p + l[i].len, row);
        if (k == 0) continue;
        if (k > 0 && !r->fields) { /* the first row: the width */
            r->fields = k;
            lc = label_col < 0 ? k - 1 : label_col;
            if (lc >= k) {
                r->bad_label = 1;
                break;
            }
        }
        if (k < 0 || k != r->fields || (row[lc] != 0 && row[lc] != 1)) {
            r->bad_line = i + 1;
            break;
        }
        memcpy(r->cells + r->rows * k, row, sizeof(double) * (size_t)k);
        r->rows++;
    }
    if (!r->fields && !r->bad_line) r->bad_label = label_col > 0; /* no rows: one field assumed */
    free(row);
    free(l);
}

/* ------------------------------------------------------- the reader */

static void compare(em_ml_data *d, const ref *r, int64_t lc) {
    int64_t cols = r->fields - 1;
    FZ_CHECK(em_ml_rows(d) == r->rows, "%lld rows, expected %lld", (long long)em_ml_rows(d), (long long)r->rows);
    FZ_CHECK(em_ml_cols(d) == cols, "%lld columns, expected %lld", (long long)em_ml_cols(d), (long long)cols);
    FZ_CHECK(em_ml_is_sparse(d) == 0, "CSV data is dense");
    em_batch *b = NULL;
    FZ_CHECK(em_collect(em_ml_blocks(d), &b) == 0, "collecting the blocks: %s", em_errmsg());
    size_t pos = 0;
    em_rec rec;
    int64_t row = 0;
    ebuf scratch = EBUF_INIT;
    while (em_batch_next(b, &pos, &rec) == 1) {
        ml_block k;
        FZ_CHECK(ml_block_view(&rec, &k, &scratch) == 0, "a block does not view: %s", em_errmsg());
        FZ_CHECK(k.kind == ML_DENSE, "block kind %d", k.kind);
        FZ_CHECK(k.cols == cols, "block of %lld columns", (long long)k.cols);
        FZ_CHECK(k.rows > 0 && row + k.rows <= r->rows, "block of %lld rows at row %lld", (long long)k.rows,
                 (long long)row);
        for (int64_t i = 0; i < k.rows; i++, row++) {
            const double *cell = r->cells + row * r->fields;
            FZ_CHECK(!memcmp(&k.y[i], &cell[lc], sizeof(double)), "row %lld: label", (long long)row);
            for (int64_t j = 0, f = 0; f < r->fields; f++) {
                if (f == lc) continue;
                FZ_CHECK(!memcmp(&k.x[i * cols + j], &cell[f], sizeof(double)), "row %lld: field %lld",
                         (long long)row, (long long)f);
                j++;
            }
        }
    }
    FZ_CHECK(row == r->rows, "%lld rows in the blocks, expected %lld", (long long)row, (long long)r->rows);
    ebuf_free(&scratch);
    em_batch_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const int lcs[4] = {-1, 0, 1, 2}, brs[4] = {0, 1, 2, 3}, parts[4] = {1, 1, 2, 3};
    if (size < 1) return 0;
    const uint8_t *c = data + 1;
    size_t n = size - 1;
    fz_check_numbers((const char *)c, n);

    em_ml_load_opts o = {parts[(data[0] >> 5) & 3], 0, lcs[data[0] & 3], (data[0] >> 2) & 1,
                         brs[(data[0] >> 3) & 3], 0};
    const char *p = fz_write_file("in.csv", c, n);
    char path[512];
    snprintf(path, sizeof path, "%s", p);
    ref r;
    ref_parse(&r, c, n, o.skip_header, o.label_col);
    int64_t fields = r.fields ? r.fields : 1, lc = o.label_col < 0 ? fields - 1 : o.label_col;
    em_ml_data *d = em_ml_read_csv(fz_context(), path, &o);
    if (r.bad_label) {
        FZ_CHECK(d == NULL, "no label column %lld in rows of %lld fields, yet the file was read", (long long)lc,
                 (long long)fields);
        FZ_CHECK(strstr(em_errmsg(), "no label column") != NULL, "message \"%s\"", em_errmsg());
    } else if (r.bad_line) {
        FZ_CHECK(d == NULL, "line %zu is malformed, yet the file was read", r.bad_line);
        char where[600];
        snprintf(where, sizeof where, "%s:%zu: ", path, r.bad_line);
        FZ_CHECK(strstr(em_errmsg(), where) != NULL, "message \"%s\" does not name %s", em_errmsg(), where);
    } else {
        FZ_CHECK(d != NULL, "every line is good, yet: %s", em_errmsg());
        r.fields = fields; /* no rows: the width the reader assumes */
        compare(d, &r, lc);
        em_ml_free(d);
    }
    free(r.cells);
    return 0;
}
