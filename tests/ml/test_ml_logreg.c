/*
 * test_ml_logreg.c -- logistic regression: the distributed loss and
 * gradient against finite differences and a plain loop, both optimizers
 * against plain single-threaded implementations of the same algorithms
 * (whatever the partitioning and the number of executor threads), the
 * breast cancer data set, the metrics, and the model's text form.
 *
 * The plain implementations here use no BLAS and no engine: simple loops
 * over a row-major array, written from the algorithms' definitions.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "block.h"
#include "data.h"
#include "ember.h"
#include "ember_ml.h"
#include "kernels.h"

/* ------------------------------------------------------------ helpers */

static em_ctx *ml_ctx(const char *master) {
    em_conf *conf = em_conf_new();
    test_conf_set(conf, "ember.local.dir", test_scratchdir());
    test_conf_set(conf, "ember.progress", "false");
    em_ctx *c = em_open(master ? master : test_master(), conf);
    em_conf_free(conf);
    if (!c) fprintf(stderr, "  em_open: %s\n", em_errmsg());
    return c;
}

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static double rng_unif(uint64_t *s) { return (double)(rng_next(s) >> 11) / 9007199254740992.0 * 2 - 1; }

typedef struct prob {
    int64_t rows, cols;
    double *x, *y;
} prob;

/* Random rows in [-1, 1] (each entry zero with probability 1 - density),
 * labels from a random hyperplane with some label noise. */
static prob make_prob(int64_t rows, int64_t cols, double density, uint64_t seed) {
    prob p = {rows, cols, calloc((size_t)(rows * cols), sizeof(double)), calloc((size_t)rows, sizeof(double))};
    double *ws = calloc((size_t)cols, sizeof(double));
    for (int64_t j = 0; j < cols; j++) ws[j] = 2 * rng_unif(&seed);
    for (int64_t i = 0; i < rows; i++) {
        double m = 0.3;
        for (int64_t j = 0; j < cols; j++) {
            double v = rng_unif(&seed);
            if (density < 1 && (rng_unif(&seed) + 1) / 2 >= density) v = 0;
            p.x[i * cols + j] = v;
            m += v * ws[j];
        }
        p.y[i] = m + 0.5 * rng_unif(&seed) > 0;
    }
    free(ws);
    return p;
}
static void free_prob(prob *p) {
    free(p->x);
    free(p->y);
}

static double plain_sigmoid(double m) { return m >= 0 ? 1 / (1 + exp(-m)) : exp(m) / (1 + exp(m)); }

/* Mean log loss and its gradient (cols + 1 doubles), plain loops. */
static double plain_loss_grad(const prob *p, const double *w, double b, double *g) {
    double loss = 0;
    memset(g, 0, sizeof(double) * (size_t)(p->cols + 1));
    for (int64_t i = 0; i < p->rows; i++) {
        const double *x = p->x + i * p->cols;
        double m = b;
        for (int64_t j = 0; j < p->cols; j++) m += x[j] * w[j];
        loss += log1p(exp(-fabs(m))) + fmax(m, 0) - p->y[i] * m;
        double r = plain_sigmoid(m) - p->y[i];
        for (int64_t j = 0; j < p->cols; j++) g[j] += r * x[j];
        g[p->cols] += r;
    }
    for (int64_t j = 0; j <= p->cols; j++) g[j] /= (double)p->rows;
    return loss / (double)p->rows;
}

/* The regularized objective over x = (w, b). */
static double plain_obj(const prob *p, const double *x, double l2, int intercept, double *g) {
    double f = plain_loss_grad(p, x, x[p->cols], g);
    for (int64_t j = 0; j < p->cols; j++) {
        f += 0.5 * l2 * x[j] * x[j];
        g[j] += l2 * x[j];
    }
    if (!intercept) g[p->cols] = 0;
    return f;
}

static void plain_gd(const prob *p, double step, double l2, int intercept, int iters, double *x) {
    int64_t n = p->cols + 1;
    double *g = malloc(sizeof(double) * (size_t)n);
    memset(x, 0, sizeof(double) * (size_t)n);
    for (int k = 0; k < iters; k++) {
        plain_obj(p, x, l2, intercept, g);
        for (int64_t j = 0; j < n; j++) x[j] -= step * g[j];
    }
    free(g);
}

static double vdot(int64_t n, const double *a, const double *b) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* L-BFGS as specified: two-loop recursion over the last m pairs (oldest
 * dropped by shifting), Armijo backtracking c1 = 1e-4 halving from 1 (from
 * 1/|g| with no history), pairs with s.y <= 1e-10 skipped. */
static void plain_lbfgs(const prob *p, double l2, int m, int iters, double *x) {
    int64_t n = p->cols + 1;
    size_t sz = sizeof(double) * (size_t)n;
    double *g = malloc(sz), *d = malloc(sz), *xn = malloc(sz), *gn = malloc(sz);
    double *S = malloc(sz * (size_t)m), *Y = malloc(sz * (size_t)m), *rho = malloc(sizeof(double) * (size_t)m);
    double *al = malloc(sizeof(double) * (size_t)m);
    int len = 0;
    memset(x, 0, sz);
    double f = plain_obj(p, x, l2, 1, g);
    for (int k = 0; k < iters; k++) {
        for (int64_t i = 0; i < n; i++) d[i] = -g[i];
        for (int j = len - 1; j >= 0; j--) {
            al[j] = rho[j] * vdot(n, S + j * n, d);
            for (int64_t i = 0; i < n; i++) d[i] -= al[j] * Y[j * n + i];
        }
        if (len) {
            double gam = vdot(n, S + (len - 1) * n, Y + (len - 1) * n) / vdot(n, Y + (len - 1) * n, Y + (len - 1) * n);
            for (int64_t i = 0; i < n; i++) d[i] *= gam;
        }
        for (int j = 0; j < len; j++) {
            double be = rho[j] * vdot(n, Y + j * n, d);
            for (int64_t i = 0; i < n; i++) d[i] += (al[j] - be) * S[j * n + i];
        }
        double gd = vdot(n, g, d), gn2 = sqrt(vdot(n, g, g));
        double t = len ? 1 : 1 / gn2, fn = 0;
        for (;; t *= 0.5) {
            for (int64_t i = 0; i < n; i++) xn[i] = x[i] + t * d[i];
            fn = plain_obj(p, xn, l2, 1, gn);
            if (fn <= f + 1e-4 * t * gd) break;
        }
        double sy = 0;
        for (int64_t i = 0; i < n; i++) sy += (xn[i] - x[i]) * (gn[i] - g[i]);
        if (sy > 1e-10) {
            if (len == m) {
                memmove(S, S + n, sz * (size_t)(m - 1));
                memmove(Y, Y + n, sz * (size_t)(m - 1));
                memmove(rho, rho + 1, sizeof(double) * (size_t)(m - 1));
                len--;
            }
            for (int64_t i = 0; i < n; i++) {
                S[len * n + i] = xn[i] - x[i];
                Y[len * n + i] = gn[i] - g[i];
            }
            rho[len++] = 1 / sy;
        }
        memcpy(x, xn, sz);
        memcpy(g, gn, sz);
        f = fn;
    }
    free(g);
    free(d);
    free(xn);
    free(gn);
    free(S);
    free(Y);
    free(rho);
    free(al);
}

/* |a - b| <= rel * max(|b|, 1) componentwise. */
static int close_rel(const double *a, const double *b, int64_t n, double rel) {
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(a[i] - b[i]) <= rel * fmax(fabs(b[i]), 1))) {
            fprintf(stderr, "  [%lld] %.17g vs %.17g\n", (long long)i, a[i], b[i]);
            return 0;
        }
    return 1;
}

/* A CSR data set from a (mostly zero) dense problem: blocks of block_rows
 * rows built by a task, so the data set is made the way readers make one. */
typedef struct csr_hdr {
    int64_t rows, cols, block_rows;
} csr_hdr;

static int csr_block(const em_rec *in, em_emitter *out, const void *arg) {
    csr_hdr h;
    memcpy(&h, arg, sizeof h);
    const double *y = (const double *)((const uint8_t *)arg + sizeof h), *x = y + h.rows;
    int64_t lo = em_i64_dec(in->val) * h.block_rows, hi = lo + h.block_rows < h.rows ? lo + h.block_rows : h.rows;
    int64_t nnz = 0;
    for (int64_t i = lo * h.cols; i < hi * h.cols; i++) nnz += x[i] != 0;
    ebuf buf = EBUF_INIT;
    ml_block b;
    int rc = ml_block_alloc(&buf, ML_CSR, hi - lo, h.cols, nnz, &b);
    if (!rc) {
        int64_t k = 0;
        for (int64_t i = lo; i < hi; i++) {
            b.y[i - lo] = y[i];
            b.indptr[i - lo] = k;
            for (int64_t j = 0; j < h.cols; j++)
                if (x[i * h.cols + j] != 0) {
                    b.val[k] = x[i * h.cols + j];
                    b.idx[k++] = (int32_t)j;
                }
        }
        b.indptr[hi - lo] = k;
        rc = ml_block_emit(out, &b);
    }
    ebuf_free(&buf);
    return rc;
}

static em_ml_data *csr_data(em_ctx *ctx, const prob *p, int partitions, int block_rows) {
    csr_hdr h = {p->rows, p->cols, block_rows};
    size_t n = sizeof h + sizeof(double) * (size_t)(p->rows + p->rows * p->cols);
    uint8_t *arg = malloc(n);
    memcpy(arg, &h, sizeof h);
    memcpy(arg + sizeof h, p->y, sizeof(double) * (size_t)p->rows);
    memcpy(arg + sizeof h + sizeof(double) * (size_t)p->rows, p->x, sizeof(double) * (size_t)(p->rows * p->cols));
    em_rdd *idx = em_range(ctx, 0, (p->rows + block_rows - 1) / block_rows, 1, partitions);
    em_rdd *blocks = em_map(idx, csr_block, arg, n);
    free(arg);
    return ml_data_wrap(ctx, blocks, p->cols, 1);
}

static em_ml_data *dense_data(em_ctx *ctx, const prob *p, int partitions, int block_rows) {
    return ml_data_from_arrays(ctx, p->x, p->y, p->rows, p->cols, partitions, block_rows);
}

/* ----------------------------------------------------- loss and gradient */

static void check_grad(int sparse) {
    prob p = make_prob(300, 7, sparse ? 0.3 : 1, 11 + (uint64_t)sparse);
    em_ctx *ctx = ml_ctx(NULL);
    CHECK(ctx);
    em_ml_data *d = sparse ? csr_data(ctx, &p, 3, 50) : dense_data(ctx, &p, 3, 50);
    CHECK(d);
    CHECK_EQ_I64(em_ml_rows(d), 300);
    CHECK_EQ_I64(em_ml_is_sparse(d), sparse);
    double w[7], g[8], gref[8], loss, lp, lm, b = -0.2;
    uint64_t s = 5;
    for (int j = 0; j < 7; j++) w[j] = rng_unif(&s);
    CHECK_OK(em_ml_logreg_loss_grad(d, w, b, &loss, g));
    double lref = plain_loss_grad(&p, w, b, gref);
    CHECK(fabs(loss - lref) <= 1e-12 * lref);
    CHECK(close_rel(g, gref, 8, 1e-12));
    /* Central differences of the distributed loss itself. */
    double gd[8];
    for (int j = 0; j < 8; j++) {
        double h = 1e-5, save = j < 7 ? w[j] : b;
        if (j < 7) w[j] = save + h; else b = save + h;
        CHECK_OK(em_ml_logreg_loss_grad(d, w, b, &lp, gd));
        if (j < 7) w[j] = save - h; else b = save - h;
        CHECK_OK(em_ml_logreg_loss_grad(d, w, b, &lm, gd));
        if (j < 7) w[j] = save; else b = save;
        double fd = (lp - lm) / (2 * h);
        CHECK(fabs(fd - g[j]) <= 1e-6 * fmax(fabs(g[j]), 1e-3));
    }
    em_ml_free(d);
    em_close(ctx);
    free_prob(&p);
}

TEST(ml_logreg_grad_dense) { check_grad(0); }
TEST(ml_logreg_grad_csr) { check_grad(1); }

/* Every tiling of the dense kernel, with partial tiles: rows wider than
 * 128 Ki columns (one-row tiles: ddot + daxpy), wide rows (4-row tiles),
 * narrow ones (512-row tiles, several per block), and a block smaller
 * than a tile. */
TEST(ml_logreg_grad_tiles) {
    em_ctx *ctx = ml_ctx(NULL);
    CHECK(ctx);
    int64_t shapes[][2] = {{5, 140000}, {42, 20000}, {1500, 3}, {7, 600}};
    for (int t = 0; t < 4; t++) {
        prob p = make_prob(shapes[t][0], shapes[t][1], 1, 100 + (uint64_t)t);
        em_ml_data *d = dense_data(ctx, &p, 2, 700);
        CHECK(d);
        int64_t n = p.cols + 1;
        double *w = malloc(sizeof(double) * (size_t)n), *g = malloc(sizeof(double) * (size_t)n),
               *gref = malloc(sizeof(double) * (size_t)n), loss;
        uint64_t s = 9;
        for (int64_t j = 0; j < p.cols; j++) w[j] = rng_unif(&s) / sqrt((double)p.cols);
        CHECK_OK(em_ml_logreg_loss_grad(d, w, 0.1, &loss, g));
        double lref = plain_loss_grad(&p, w, 0.1, gref);
        int ok = fabs(loss - lref) <= 1e-12 * lref && close_rel(g, gref, n, 1e-11);
        free(w);
        free(g);
        free(gref);
        em_ml_free(d);
        free_prob(&p);
        CHECK(ok);
    }
    em_close(ctx);
}

/* The sparse kernels check what ml_block_view_unchecked leaves unchecked. */
TEST(ml_logreg_csr_kernel_checks) {
    ebuf buf = EBUF_INIT;
    ml_block b, v;
    ebuf scratch = EBUF_INIT;
    double w[4] = {1, 2, 3, 4}, g[4] = {0}, gb = 0, loss = 0, m[2];
    for (int bad = 0; bad < 3; bad++) {
        CHECK_OK(ml_block_alloc(&buf, ML_CSR, 2, 4, 3, &b));
        int64_t ip[3] = {0, 2, 3};
        int32_t ix[3] = {0, 3, 1};
        if (bad == 1) ix[1] = 4;          /* column out of range */
        if (bad == 2) ip[1] = 5;          /* offset past nnz */
        memcpy(b.indptr, ip, sizeof ip);
        memcpy(b.idx, ix, sizeof ix);
        b.val[0] = b.val[1] = b.val[2] = 0.5;
        b.y[0] = 1;
        uint64_t vlen = 0;
        size_t n = varint_get(buf.p + 1, buf.p + buf.len, &vlen);
        em_rec r = {NULL, 0, buf.p + 1 + n, (size_t)vlen};
        CHECK(ml_block_view(&r, &v, &scratch) == (bad ? EM_ECORRUPT : 0));
        CHECK_OK(ml_block_view_unchecked(&r, &v, &scratch));
        CHECK(ml_block_loss_grad(&v, w, 0, g, &gb, &loss) == (bad ? EM_ECORRUPT : 0));
        CHECK(ml_block_margins(&v, w, 0.5, m) == (bad ? EM_ECORRUPT : 0));
        if (!bad) CHECK(m[0] == 0.5 + 0.5 * 1 + 0.5 * 4 && m[1] == 0.5 + 0.5 * 2);
        else CHECK_STR_CONTAINS(em_errmsg(), "out of range");
    }
    ebuf_free(&buf);
    ebuf_free(&scratch);
}

/* ------------------------------------------------------------ optimizers */

static int train_on(const char *master, const prob *p, int sparse, int partitions, const em_ml_logreg_opts *o,
                    double *x) {
    em_ctx *ctx = ml_ctx(master);
    if (!ctx) return -1;
    em_ml_data *d = sparse ? csr_data(ctx, p, partitions, 37) : dense_data(ctx, p, partitions, 37);
    em_ml_model *m = NULL;
    int rc = d ? em_ml_logreg_train(d, o, &m) : -1;
    if (rc) fprintf(stderr, "  train: %s\n", em_errmsg());
    if (!rc) {
        memcpy(x, m->w, sizeof(double) * (size_t)p->cols);
        x[p->cols] = m->b;
        if (m->iterations != o->max_iter) {
            fprintf(stderr, "  %d iterations, expected %d\n", m->iterations, o->max_iter);
            rc = -1;
        }
    }
    em_ml_model_free(m);
    em_ml_free(d);
    em_close(ctx);
    return rc;
}

TEST(ml_logreg_gd_matches_plain) {
    prob p = make_prob(400, 9, 1, 21);
    double ref[10], x[10];
    em_ml_logreg_opts o;
    em_ml_logreg_defaults(&o);
    o.max_iter = 20;
    o.step = 0.8;
    o.l2 = 0.01;
    o.tol = 0;
    plain_gd(&p, o.step, o.l2, 1, 20, ref);
    int parts[] = {1, 3, 8};
    for (int i = 0; i < 3; i++) {
        CHECK_OK(train_on("local[2]", &p, 0, parts[i], &o, x));
        CHECK(close_rel(x, ref, 10, 1e-9));
    }
    CHECK_OK(train_on("local[1]", &p, 0, 5, &o, x));
    CHECK(close_rel(x, ref, 10, 1e-9));
    CHECK_OK(train_on("local[4]", &p, 0, 5, &o, x));
    CHECK(close_rel(x, ref, 10, 1e-9));
    /* CSR, and no intercept (b stays exactly 0). */
    CHECK_OK(train_on("local[4]", &p, 1, 3, &o, x));
    CHECK(close_rel(x, ref, 10, 1e-9));
    o.intercept = 0;
    plain_gd(&p, o.step, o.l2, 0, 20, ref);
    CHECK(ref[9] == 0);
    CHECK_OK(train_on("local[4]", &p, 0, 3, &o, x));
    CHECK(x[9] == 0);
    CHECK(close_rel(x, ref, 10, 1e-9));
    free_prob(&p);
}

/* A LIBSVM file whose blocks are over 2/3 full is stored densely
 * (ml_block_dense_better), the others CSR: training on it gives the model
 * of the same rows as CSR blocks, as dense blocks, and of the plain loop,
 * to rounding (only the gradient's summation order differs). */
TEST(ml_logreg_libsvm_dense_blocks_same_model) {
    prob p = make_prob(600, 12, 1, 23);
    uint64_t s = 77;
    /* Rows 0..299 about 90% full, rows 300..599 about 20%. */
    for (int64_t i = 0; i < p.rows; i++)
        for (int64_t j = 0; j < p.cols; j++)
            if ((rng_unif(&s) + 1) / 2 >= (i < 300 ? 0.9 : 0.2)) p.x[i * p.cols + j] = 0;
    for (int64_t i = 0; i < p.rows; i++) p.x[i * p.cols + 11] = i % 7 ? p.x[i * p.cols + 11] : 0.5;
    char path[512];
    snprintf(path, sizeof path, "%s/dense-blocks.svm", test_tmpdir());
    FILE *f = fopen(path, "w");
    CHECK(f);
    for (int64_t i = 0; i < p.rows; i++) {
        fprintf(f, "%d", (int)p.y[i]);
        for (int64_t j = 0; j < p.cols; j++)
            if (p.x[i * p.cols + j] != 0) fprintf(f, " %lld:%.17g", (long long)j + 1, p.x[i * p.cols + j]);
        fputc('\n', f);
    }
    CHECK(fclose(f) == 0);
    em_ctx *ctx = ml_ctx(NULL);
    CHECK(ctx);
    em_ml_load_opts lo = {.partitions = 3, .block_rows = 50};
    em_ml_data *d = em_ml_read_libsvm(ctx, path, &lo), *c = csr_data(ctx, &p, 3, 50), *e = dense_data(ctx, &p, 3, 50);
    CHECK(d && c && e);
    CHECK_EQ_I64(em_ml_rows(d), 600);
    CHECK_EQ_I64(em_ml_cols(d), 12);
    CHECK_EQ_I64(em_ml_is_sparse(d), 1); /* scaled without centering, whatever its blocks */
    /* Both layouts: blocks of the full rows dense, of the others CSR (a
     * split's last block may be short, and is not counted). */
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_ml_blocks(d), &b));
    size_t pos = 0;
    em_rec r;
    ebuf scratch = EBUF_INIT;
    int64_t row = 0, dense = 0, csr = 0;
    while (em_batch_next(b, &pos, &r) == 1) {
        ml_block k;
        CHECK_OK(ml_block_view(&r, &k, &scratch));
        if (k.rows >= 10 && row + k.rows <= 300) {
            CHECK_EQ_I64(k.kind, ML_DENSE);
            dense++;
        } else if (k.rows >= 10 && row >= 300) {
            CHECK_EQ_I64(k.kind, ML_CSR);
            csr++;
        }
        row += k.rows;
    }
    CHECK_EQ_I64(row, 600);
    CHECK(dense >= 4 && csr >= 4);
    ebuf_free(&scratch);
    em_batch_free(b);
    /* The loss and gradient at a point, against the plain loop. */
    double w[12], g[13], gref[13], loss;
    for (int j = 0; j < 12; j++) w[j] = rng_unif(&s);
    CHECK_OK(em_ml_logreg_loss_grad(d, w, 0.3, &loss, g));
    double lref = plain_loss_grad(&p, w, 0.3, gref);
    CHECK(fabs(loss - lref) <= 1e-12 * lref);
    CHECK(close_rel(g, gref, 13, 1e-12));
    /* Training: the same model from the three data sets and the loop. */
    em_ml_logreg_opts o;
    em_ml_logreg_defaults(&o);
    o.max_iter = 25;
    o.step = 0.9;
    o.l2 = 0.01;
    o.tol = 0;
    double ref[13];
    plain_gd(&p, o.step, o.l2, 1, 25, ref);
    em_ml_data *sets[3] = {d, c, e};
    em_ml_model *m[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        CHECK_OK(em_ml_logreg_train(sets[i], &o, &m[i]));
        double x[13];
        memcpy(x, m[i]->w, sizeof(double) * 12);
        x[12] = m[i]->b;
        CHECK(close_rel(x, ref, 13, 1e-10));
    }
    CHECK(close_rel(m[0]->w, m[1]->w, 12, 1e-12) && fabs(m[0]->b - m[1]->b) <= 1e-12);
    CHECK(close_rel(m[0]->w, m[2]->w, 12, 1e-12) && fabs(m[0]->b - m[2]->b) <= 1e-12);
    for (int i = 0; i < 3; i++) {
        em_ml_model_free(m[i]);
        em_ml_free(sets[i]);
    }
    em_close(ctx);
    remove(path);
    free_prob(&p);
}

TEST(ml_logreg_lbfgs_matches_plain) {
    prob p = make_prob(400, 9, 1, 22);
    double ref[10], x[10];
    em_ml_logreg_opts o;
    em_ml_logreg_defaults(&o);
    o.optimizer = EM_ML_LBFGS;
    o.max_iter = 8;
    o.history = 4;
    o.l2 = 0.01;
    o.tol = 0;
    plain_lbfgs(&p, o.l2, o.history, 8, ref);
    int parts[] = {1, 3, 8};
    for (int i = 0; i < 3; i++) {
        CHECK_OK(train_on("local[2]", &p, 0, parts[i], &o, x));
        CHECK(close_rel(x, ref, 10, 1e-9));
    }
    CHECK_OK(train_on("local[1]", &p, 0, 5, &o, x));
    CHECK(close_rel(x, ref, 10, 1e-9));
    CHECK_OK(train_on("local[4]", &p, 1, 5, &o, x));
    CHECK(close_rel(x, ref, 10, 1e-9));
    free_prob(&p);
}

static void count_iter(int iter, double loss, void *ctx) {
    double *h = ctx;
    h[0] = iter;
    h[iter] = loss;
}

/* Progress reports every iteration's objective; the loop stops on the
 * tolerance; bad options are refused. */
TEST(ml_logreg_progress_and_options) {
    prob p = make_prob(200, 4, 1, 23);
    em_ctx *ctx = ml_ctx(NULL);
    CHECK(ctx);
    em_ml_data *d = dense_data(ctx, &p, 2, 0);
    CHECK(d);
    double hist[202] = {0};
    em_ml_logreg_opts o;
    em_ml_logreg_defaults(&o);
    CHECK(o.optimizer == EM_ML_GD && o.max_iter == 100 && o.step == 1.0 && o.intercept == 1 && o.tol == 1e-6 &&
          o.history == 10 && o.depth == 2 && o.l2 == 0);
    o.max_iter = 200;
    o.tol = 1e-3;
    o.l2 = 0.1;
    o.progress = count_iter;
    o.progress_ctx = hist;
    em_ml_model *m = NULL;
    CHECK_OK(em_ml_logreg_train(d, &o, &m));
    CHECK(m->iterations > 1 && m->iterations < 200);
    CHECK_EQ_I64((int64_t)hist[0], m->iterations);
    CHECK(hist[m->iterations] == m->loss);
    for (int k = 2; k <= m->iterations; k++) CHECK(hist[k] <= hist[k - 1]);
    em_ml_model_free(m);
    o.optimizer = EM_ML_LBFGS;
    o.depth = 1;
    memset(hist, 0, sizeof hist);
    CHECK_OK(em_ml_logreg_train(d, &o, &m));
    CHECK(m->iterations >= 1 && m->iterations < 200);
    CHECK(hist[m->iterations] == m->loss);
    em_ml_model_free(m);
    o.max_iter = 0;
    CHECK_OK(em_ml_logreg_train(d, &o, &m));
    CHECK(m->iterations == 0 && fabs(m->loss - log(2)) < 1e-13);
    em_ml_model_free(m);
    o.step = -1;
    o.optimizer = EM_ML_GD;
    CHECK(em_ml_logreg_train(d, &o, &m) == EM_EINVAL && m == NULL);
    o.step = 1;
    o.optimizer = 7;
    CHECK(em_ml_logreg_train(d, &o, &m) == EM_EINVAL);
    em_ml_free(d);
    em_close(ctx);
    free_prob(&p);
}

/* ------------------------------------------------------- breast cancer */

static int load_breast_cancer(prob *p) {
    const char *paths[] = {"tests/data/ml/breast_cancer.csv", "../shared/data/breast_cancer.csv"};
    FILE *f = NULL;
    for (int i = 0; i < 2 && !f; i++) f = fopen(paths[i], "r");
    if (!f) return -1;
    char line[4096];
    if (!fgets(line, sizeof line, f)) return -1; /* "569,30,malignant,benign" */
    p->rows = 0;
    p->cols = 30;
    p->x = malloc(sizeof(double) * 569 * 30);
    p->y = malloc(sizeof(double) * 569);
    while (fgets(line, sizeof line, f) && p->rows < 569) {
        char *s = line;
        for (int j = 0; j <= 30; j++) {
            double v = strtod(s, &s);
            if (*s == ',') s++;
            if (j < 30) p->x[p->rows * 30 + j] = v;
            else p->y[p->rows] = v;
        }
        p->rows++;
    }
    fclose(f);
    /* Standardize: zero mean, unit sample deviation. */
    for (int j = 0; j < 30; j++) {
        double mu = 0, ss = 0;
        for (int64_t i = 0; i < p->rows; i++) mu += p->x[i * 30 + j];
        mu /= (double)p->rows;
        for (int64_t i = 0; i < p->rows; i++) ss += (p->x[i * 30 + j] - mu) * (p->x[i * 30 + j] - mu);
        double sd = sqrt(ss / (double)(p->rows - 1));
        for (int64_t i = 0; i < p->rows; i++) p->x[i * 30 + j] = sd > 0 ? (p->x[i * 30 + j] - mu) / sd : 0;
    }
    return p->rows == 569 ? 0 : -1;
}

static void breast_cancer(int optimizer, double l2, int max_iter, double want) {
    prob p;
    CHECK(load_breast_cancer(&p) == 0);
    em_ctx *ctx = ml_ctx(NULL);
    CHECK(ctx);
    em_ml_data *d = dense_data(ctx, &p, 4, 64);
    CHECK(d);
    em_ml_logreg_opts o;
    em_ml_logreg_defaults(&o);
    o.optimizer = optimizer;
    o.l2 = l2;
    o.max_iter = max_iter;
    em_ml_model *m = NULL;
    em_ml_metrics mt;
    CHECK_OK(em_ml_logreg_train(d, &o, &m));
    CHECK_OK(em_ml_evaluate(m, d, &mt));
    CHECK_EQ_I64(mt.rows, 569);
    if (mt.accuracy < want) fprintf(stderr, "  accuracy %.4f after %d iterations\n", mt.accuracy, m->iterations);
    CHECK(mt.accuracy >= want);
    CHECK(mt.auc > 0.99 && mt.auc <= 1);
    /* The model predicts what evaluate counted. */
    int correct = 0;
    for (int i = 0; i < 569; i++) correct += em_ml_predict(m, p.x + i * 30) == (int)p.y[i];
    CHECK(fabs(correct / 569.0 - mt.accuracy) < 1e-12);
    em_ml_model_free(m);
    em_ml_free(d);
    em_close(ctx);
    free_prob(&p);
}

TEST(ml_logreg_breast_cancer_gd) { breast_cancer(EM_ML_GD, 0, 100, 0.98); }
TEST(ml_logreg_breast_cancer_lbfgs) { breast_cancer(EM_ML_LBFGS, 1e-3, 100, 0.985); }

/* ------------------------------------------------------------- metrics */

/* Data with one feature holding the scores, and a model w = sign, b = 0. */
static int auc_of(em_ctx *ctx, const double *score, const double *y, int64_t n, double sign, double *auc) {
    em_ml_data *d = ml_data_from_arrays(ctx, score, y, n, 1, 3, 4);
    if (!d) return -1;
    double w = sign;
    em_ml_model m = {.cols = 1, .w = &w};
    em_ml_metrics mt;
    int rc = em_ml_evaluate(&m, d, &mt);
    *auc = mt.auc;
    em_ml_free(d);
    return rc;
}

TEST(ml_logreg_auc) {
    em_ctx *ctx = ml_ctx(NULL);
    CHECK(ctx);
    double s[40], y[40], auc;
    for (int i = 0; i < 40; i++) {
        s[i] = i - 20;
        y[i] = i >= 17;
    }
    CHECK_OK(auc_of(ctx, s, y, 40, 1, &auc));
    CHECK(auc == 1);
    CHECK_OK(auc_of(ctx, s, y, 40, -1, &auc));
    CHECK(auc == 0);
    for (int i = 0; i < 40; i++) s[i] = 3;
    CHECK_OK(auc_of(ctx, s, y, 40, 1, &auc));
    CHECK(auc == 0.5);
    /* Random scores with many ties against the pairwise definition. */
    uint64_t r = 3;
    for (int i = 0; i < 40; i++) {
        s[i] = floor(4 * rng_unif(&r));
        y[i] = rng_unif(&r) + 0.3 * s[i] > 0;
    }
    double num = 0, pos = 0, neg = 0;
    for (int i = 0; i < 40; i++) {
        pos += y[i];
        neg += 1 - y[i];
        for (int j = 0; j < 40; j++)
            if (y[i] == 1 && y[j] == 0) num += s[i] > s[j] ? 1 : s[i] == s[j] ? 0.5 : 0;
    }
    CHECK_OK(auc_of(ctx, s, y, 40, 1, &auc));
    CHECK(fabs(auc - num / (pos * neg)) < 1e-15);
    /* One class only: undefined. */
    for (int i = 0; i < 40; i++) y[i] = 1;
    CHECK_OK(auc_of(ctx, s, y, 40, 1, &auc));
    CHECK(isnan(auc));
    em_close(ctx);
}

TEST(ml_logreg_evaluate_matches_plain) {
    prob p = make_prob(500, 6, 1, 31);
    em_ctx *ctx = ml_ctx(NULL);
    CHECK(ctx);
    em_ml_data *d = dense_data(ctx, &p, 4, 30);
    CHECK(d);
    double w[6] = {0.5, -1, 2, 0.1, 0, -0.3};
    em_ml_model m = {.cols = 6, .w = w, .b = 0.2};
    em_ml_metrics mt;
    CHECK_OK(em_ml_evaluate(&m, d, &mt));
    double ll = 0, acc = 0, num = 0, pos = 0, neg = 0, *sc = malloc(sizeof(double) * 500);
    for (int i = 0; i < 500; i++) {
        double mi = 0.2;
        for (int j = 0; j < 6; j++) mi += w[j] * p.x[i * 6 + j];
        sc[i] = mi;
        ll += log1p(exp(-fabs(mi))) + fmax(mi, 0) - p.y[i] * mi;
        acc += (plain_sigmoid(mi) >= 0.5) == (p.y[i] == 1);
        CHECK(fabs(em_ml_predict_prob(&m, p.x + i * 6) - plain_sigmoid(mi)) < 1e-15);
    }
    for (int i = 0; i < 500; i++) {
        pos += p.y[i];
        neg += 1 - p.y[i];
        for (int j = 0; j < 500; j++)
            if (p.y[i] == 1 && p.y[j] == 0) num += sc[i] > sc[j] ? 1 : sc[i] == sc[j] ? 0.5 : 0;
    }
    free(sc);
    CHECK_EQ_I64(mt.rows, 500);
    CHECK(fabs(mt.log_loss - ll / 500) < 1e-13);
    CHECK(mt.accuracy == acc / 500);
    CHECK(fabs(mt.auc - num / (pos * neg)) < 1e-13);
    /* A model narrower than the data is refused. */
    m.cols = 5;
    CHECK(em_ml_evaluate(&m, d, &mt) == EM_EINVAL);
    em_ml_free(d);
    em_close(ctx);
    free_prob(&p);
}

/* ----------------------------------------------------------- labels */

/* Labels other than 0 and 1 (here from arrays: the text readers reject
 * them naming the line) fail binomial training, naming the row, instead of
 * giving a negative loss.  (The default family, auto, takes a label 2 for
 * a third class, as Spark's: test_ml_multinomial.c.) */
TEST(ml_logreg_rejects_other_labels) {
    em_ctx *ctx = ml_ctx(NULL);
    CHECK(ctx);
    prob p = make_prob(100, 3, 1, 5);
    p.y[57] = 2;
    em_ml_data *d = dense_data(ctx, &p, 2, 16);
    CHECK(d);
    em_ml_model *m = NULL;
    em_ml_logreg_opts o;
    em_ml_logreg_defaults(&o);
    o.family = EM_ML_BINOMIAL;
    CHECK(em_ml_logreg_train(d, &o, &m) == EM_EINVAL && m == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "row 57 has label 2 (labels must be 0 or 1)");
    /* The gradient itself refuses it too, from inside the task. */
    double w[3] = {0, 0, 0}, g[4], loss;
    CHECK(em_ml_logreg_loss_grad(d, w, 0, &loss, g) != 0);
    CHECK_STR_CONTAINS(em_errmsg(), "label 2 (labels must be 0 or 1)");
    em_ml_free(d);
    p.y[57] = 1;
    d = dense_data(ctx, &p, 2, 16);
    CHECK(d);
    CHECK_OK(em_ml_logreg_train(d, NULL, &m));
    em_ml_model_free(m);
    em_ml_free(d);
    em_close(ctx);
    free_prob(&p);
}

/* The first pass of a binary training also checks the labels (the label
 * scan runs only when a block holds a label other than 0 or 1), so n
 * iterations of gradient descent are n + 1 jobs; the model is the one of a
 * driver loop over em_ml_logreg_loss_grad, bit for bit (the first pass
 * sums the same gradients in the same order).  A bad label still fails
 * naming its row. */
static int64_t jobs_of(em_ctx *ctx) {
    em_stats st;
    em_get_stats(ctx, &st);
    return st.jobs;
}

TEST(ml_logreg_first_pass_checks_labels) {
    em_ctx *ctx = ml_ctx(NULL);
    CHECK(ctx);
    prob p = make_prob(300, 7, 1, 31);
    em_ml_data *d = dense_data(ctx, &p, 4, 16);
    CHECK(d);
    em_ml_logreg_opts o;
    em_ml_logreg_defaults(&o);
    o.max_iter = 6;
    o.step = 0.7;
    o.l2 = 0.02;
    o.tol = 0;
    int fams[3] = {EM_ML_AUTO, EM_ML_BINOMIAL, EM_ML_AUTO}, classes[3] = {0, 0, 2};
    double x[8], g[8], loss;
    for (int i = 0; i < 8; i++) x[i] = 0;
    for (int k = 0; k < o.max_iter; k++) { /* the driver loop: x -= step * (grad + l2 x) */
        CHECK_OK(em_ml_logreg_loss_grad(d, x, x[7], &loss, g));
        for (int j = 0; j < 7; j++) g[j] += o.l2 * x[j];
        for (int j = 0; j < 8; j++) x[j] -= o.step * g[j];
    }
    CHECK_OK(em_ml_logreg_loss_grad(d, x, x[7], &loss, g));
    double ww = 0;
    for (int j = 0; j < 7; j++) ww += x[j] * x[j];
    loss += 0.5 * o.l2 * ww;
    for (int f = 0; f < 3; f++) {
        o.family = fams[f];
        o.classes = classes[f];
        em_ml_model *m = NULL;
        int64_t j0 = jobs_of(ctx);
        CHECK_OK(em_ml_logreg_train(d, &o, &m));
        CHECK(jobs_of(ctx) - j0 == o.max_iter + 1);
        CHECK(m->iterations == o.max_iter && m->classes < 2);
        CHECK(memcmp(m->w, x, sizeof(double) * 7) == 0 && m->b == x[7]);
        CHECK(m->loss == loss);
        em_ml_model_free(m);
    }
    /* L-BFGS starts from the first pass too: no extra job before it. */
    em_ml_model *m = NULL;
    o.family = EM_ML_AUTO;
    o.classes = 0;
    o.optimizer = EM_ML_LBFGS;
    o.max_iter = 0;
    int64_t j0 = jobs_of(ctx);
    CHECK_OK(em_ml_logreg_train(d, &o, &m));
    CHECK(jobs_of(ctx) - j0 == 1);
    CHECK(m->iterations == 0 && m->w[0] == 0 && fabs(m->loss - log(2.0)) <= 1e-15);
    em_ml_model_free(m);
    em_ml_free(d);

    /* A label 2 in the last block: binomial fails naming the row after the
     * first pass and the scan; auto trains three classes. */
    p.y[290] = 2;
    d = dense_data(ctx, &p, 4, 16);
    CHECK(d);
    o.optimizer = EM_ML_GD;
    o.max_iter = 3;
    o.family = EM_ML_BINOMIAL;
    j0 = jobs_of(ctx);
    CHECK(em_ml_logreg_train(d, &o, &m) == EM_EINVAL && m == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "row 290 has label 2 (labels must be 0 or 1)");
    CHECK(jobs_of(ctx) - j0 == 2);
    o.family = EM_ML_AUTO;
    CHECK_OK(em_ml_logreg_train(d, &o, &m));
    CHECK(m->classes == 3 && m->iterations == 3);
    em_ml_model_free(m);
    em_ml_free(d);
    em_close(ctx);
    free_prob(&p);
}

/* -------------------------------------------- models for raw rows */

/* A model trained on standardized rows, unstandardized and saved, predicts
 * on raw rows what the trained model predicts on the standardized rows;
 * a constant column gets weight 0.  centered 0: scaling only (means NULL,
 * as for sparse data). */
static void unstandardized_model(int centered) {
    em_ctx *ctx = ml_ctx(NULL);
    CHECK(ctx);
    prob p = make_prob(400, 5, 1, 21);
    /* Offsets up to a few hundred spreads, as in real data (breast cancer
     * areas: 650 +- 350): the raw-row model's margin cancels terms about
     * that much larger than itself, so it agrees to about 1e-14 here. */
    const double off[5] = {650, -3, 7, 0.001, 1e4}, mul[5] = {350, 0.01, 0, 2, 100};
    for (int64_t i = 0; i < p.rows; i++)
        for (int j = 0; j < 5; j++) p.x[i * 5 + j] = off[j] + mul[j] * p.x[i * 5 + j]; /* column 2 constant */
    em_ml_data *raw = dense_data(ctx, &p, 3, 64);
    CHECK(raw);
    double *mean, *sd;
    CHECK_OK(em_ml_column_stats(raw, &mean, &sd));
    CHECK(sd[2] == 0);
    em_ml_data *z = em_ml_standardize_with(raw, centered ? mean : NULL, sd);
    CHECK(z);
    em_ml_logreg_opts o;
    em_ml_logreg_defaults(&o);
    o.optimizer = EM_ML_LBFGS;
    o.l2 = 1e-3;
    em_ml_model *m = NULL;
    CHECK_OK(em_ml_logreg_train(z, &o, &m));
    em_ml_metrics mz, mr;
    CHECK_OK(em_ml_evaluate(m, z, &mz));

    em_ml_model folded = {.cols = m->cols, .w = malloc(sizeof(double) * 5), .b = m->b, .iterations = m->iterations, .loss = m->loss};
    CHECK(folded.w);
    memcpy(folded.w, m->w, sizeof(double) * 5);
    CHECK_OK(em_ml_model_unstandardize(&folded, centered ? mean : NULL, sd));
    CHECK(folded.w[2] == 0);
    char path[512];
    snprintf(path, sizeof path, "%s/raw.model", test_tmpdir());
    CHECK_OK(em_ml_model_save(&folded, path));
    free(folded.w);
    em_ml_model *l = em_ml_model_load(path);
    CHECK(l);
    for (int64_t i = 0; i < p.rows; i++) {
        double zi[5];
        for (int j = 0; j < 5; j++)
            zi[j] = sd[j] > 0 ? (p.x[i * 5 + j] - (centered ? mean[j] : 0)) * (1 / sd[j]) : 0;
        double pz = em_ml_predict_prob(m, zi), pr = em_ml_predict_prob(l, p.x + i * 5);
        if (!(fabs(pz - pr) <= 1e-12)) fprintf(stderr, "  row %lld: %.17g vs %.17g\n", (long long)i, pz, pr);
        CHECK(fabs(pz - pr) <= 1e-12);
        CHECK(em_ml_predict(m, zi) == em_ml_predict(l, p.x + i * 5));
    }
    CHECK_OK(em_ml_evaluate(l, raw, &mr));
    CHECK(fabs(mr.log_loss - mz.log_loss) <= 1e-12 && mr.accuracy == mz.accuracy && fabs(mr.auc - mz.auc) <= 1e-12);

    /* A bad statistic leaves the model as it was. */
    double bad_sd[5] = {1, 1, -1, 1, 1}, w0 = l->w[0], b0 = l->b;
    CHECK(em_ml_model_unstandardize(l, mean, bad_sd) == EM_EINVAL);
    CHECK(l->w[0] == w0 && l->b == b0);
    CHECK(em_ml_standardize_with(raw, mean, bad_sd) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "column 2");
    em_ml_model_free(l);
    em_ml_model_free(m);
    free(mean);
    free(sd);
    em_ml_free(z);
    em_ml_free(raw);
    em_close(ctx);
    free_prob(&p);
}

TEST(ml_logreg_unstandardized_model_centered) { unstandardized_model(1); }
TEST(ml_logreg_unstandardized_model_scaled) { unstandardized_model(0); }

/* --------------------------------------------------------- model file */

TEST(ml_logreg_model_save_load) {
    double w[6] = {1.0 / 3, -2.5e-300, 1e300, 0, -0.0, 123456789.123456789};
    em_ml_model m = {.cols = 6, .w = w, .b = -0.1, .iterations = 5, .loss = 0.25};
    char path[512], bad[512];
    snprintf(path, sizeof path, "%s/model.txt", test_tmpdir());
    CHECK_OK(em_ml_model_save(&m, path));
    em_ml_model *l = em_ml_model_load(path);
    CHECK(l);
    CHECK_EQ_I64(l->cols, 6);
    CHECK(memcmp(&l->b, &m.b, sizeof m.b) == 0);
    CHECK(memcmp(l->w, w, sizeof w) == 0);
    em_ml_model_free(l);
    FILE *f = fopen(path, "r");
    char line[64];
    CHECK(f && fgets(line, sizeof line, f) && strcmp(line, "ember-logreg 2\n") == 0);
    CHECK(fgets(line, sizeof line, f) && strcmp(line, "family binomial\n") == 0);
    CHECK(fgets(line, sizeof line, f) && strcmp(line, "classes 2\n") == 0);
    CHECK(fgets(line, sizeof line, f) && strcmp(line, "cols 6\n") == 0);
    CHECK(fgets(line, sizeof line, f) && strcmp(line, "intercept -0.10000000000000001\n") == 0);
    fclose(f);
    /* Malformed files name the line (version 1 here; version 2 in
     * test_ml_multinomial.c). */
    const char *cases[][2] = {
        {"ember-logreg 2\ncols 1\nintercept 0\n1\n", ":2:"},
        {"ember-logreg 1\ncols x\nintercept 0\n1\n", ":2:"},
        {"ember-logreg 1\ncols 2\nintercept 0\n1\n", ":5:"},
        {"ember-logreg 1\ncols 2\nintercept 0\n1\n2x\n", ":5:"},
        {"ember-logreg 1\ncols 1\nintercep 0\n1\n", ":3:"},
        {"ember-logreg 1\ncols 1\nintercept 0\n1\n2\n", ":5:"},
    };
    snprintf(bad, sizeof bad, "%s/bad.txt", test_tmpdir());
    for (int i = 0; i < 6; i++) {
        f = fopen(bad, "w");
        CHECK(f);
        fputs(cases[i][0], f);
        fclose(f);
        CHECK(em_ml_model_load(bad) == NULL);
        CHECK_STR_CONTAINS(em_errmsg(), cases[i][1]);
        CHECK_STR_CONTAINS(em_errmsg(), bad);
    }
    CHECK(em_ml_model_load("/nonexistent/model") == NULL);
    /* CRLF files load. */
    f = fopen(bad, "w");
    fputs("ember-logreg 1\r\ncols 1\r\nintercept 0.5\r\n2\r\n", f);
    fclose(f);
    l = em_ml_model_load(bad);
    CHECK(l && l->cols == 1 && l->b == 0.5 && l->w[0] == 2);
    em_ml_model_free(l);
}
