/*
 * test_ml_multinomial.c -- multinomial (softmax) logistic regression: the
 * distributed loss and gradient against plain loops and finite
 * differences, both optimizers against plain single-threaded C
 * implementations whatever the partitioning, the iris data set against an
 * independent optimum of scikit-learn's objective, the family and class
 * count as Spark's "auto" picks them, label errors, prediction and the
 * multiclass metrics against hand-computed answers, and the model file
 * (version 2, the old version 1, corruption).
 *
 * The plain implementations use no BLAS and no engine: loops over a
 * row-major array written from the definitions.
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

/* ------------------------------------------------------------ helpers */

static em_ctx *mn_ctx(const char *master) {
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
    int K;
    double *x, *y;
} prob;

/* Rows in [-1, 1] (each entry zero with probability 1 - density); the
 * label is the class of the largest of K random linear scores plus noise,
 * so the classes overlap (the optimum is finite). */
static prob make_prob(int64_t rows, int64_t cols, int K, double density, uint64_t seed) {
    prob p = {rows, cols, K, calloc((size_t)(rows * cols), sizeof(double)), calloc((size_t)rows, sizeof(double))};
    double *ws = calloc((size_t)(K * cols), sizeof(double));
    for (int64_t j = 0; j < K * cols; j++) ws[j] = 2 * rng_unif(&seed);
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < cols; j++) {
            double v = rng_unif(&seed);
            if (density < 1 && (rng_unif(&seed) + 1) / 2 >= density) v = 0;
            p.x[i * cols + j] = v;
        }
        int best = 0;
        double bs = -INFINITY;
        for (int k = 0; k < K; k++) {
            double s = 0.2 * k + 0.7 * rng_unif(&seed);
            for (int64_t j = 0; j < cols; j++) s += ws[k * cols + j] * p.x[i * cols + j];
            if (s > bs) {
                bs = s;
                best = k;
            }
        }
        p.y[i] = best;
    }
    free(ws);
    return p;
}
static void free_prob(prob *p) {
    free(p->x);
    free(p->y);
}

/* Mean softmax loss at x (K x cols coefficients, then K intercepts) and
 * its gradient, plain loops: P(k | x_i) = exp(m_k - max) / sum exp(m_j - max). */
static double plain_loss_grad(const prob *p, const double *x, double *g) {
    int K = p->K;
    int64_t c = p->cols, n = K * c + K;
    double loss = 0, m[16];
    memset(g, 0, sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < p->rows; i++) {
        const double *xi = p->x + i * c;
        int y = (int)p->y[i];
        double mx = -INFINITY, s = 0;
        for (int k = 0; k < K; k++) {
            m[k] = x[K * c + k];
            for (int64_t j = 0; j < c; j++) m[k] += x[k * c + j] * xi[j];
            if (m[k] > mx) mx = m[k];
        }
        for (int k = 0; k < K; k++) s += exp(m[k] - mx);
        loss += mx + log(s) - m[y];
        for (int k = 0; k < K; k++) {
            double r = exp(m[k] - mx) / s - (k == y);
            for (int64_t j = 0; j < c; j++) g[k * c + j] += r * xi[j];
            g[K * c + k] += r;
        }
    }
    for (int64_t j = 0; j < n; j++) g[j] /= (double)p->rows;
    return loss / (double)p->rows;
}

/* The objective: + 0.5 * l2 * |W|^2, intercepts not regularized. */
static double plain_obj(const prob *p, const double *x, double l2, double *g) {
    int64_t kc = p->K * p->cols;
    double f = plain_loss_grad(p, x, g);
    for (int64_t j = 0; j < kc; j++) {
        f += 0.5 * l2 * x[j] * x[j];
        g[j] += l2 * x[j];
    }
    return f;
}

static void plain_gd(const prob *p, double step, double l2, int iters, double *x) {
    int64_t n = p->K * p->cols + p->K;
    double *g = malloc(sizeof(double) * (size_t)n);
    memset(x, 0, sizeof(double) * (size_t)n);
    for (int k = 0; k < iters; k++) {
        plain_obj(p, x, l2, g);
        for (int64_t j = 0; j < n; j++) x[j] -= step * g[j];
    }
    free(g);
}

static double vdot(int64_t n, const double *a, const double *b) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* L-BFGS as lbfgs.h specifies it: the two-loop recursion over the last m
 * pairs (the oldest dropped), scaled by s.y / y.y of the newest, Armijo
 * backtracking (c1 = 1e-4) halving from 1 (from 1/|g| with no history),
 * pairs with s.y <= 1e-10 skipped. */
static void plain_lbfgs(const prob *p, double l2, int m, int iters, double *x) {
    int64_t n = p->K * p->cols + p->K;
    size_t sz = sizeof(double) * (size_t)n;
    double *g = malloc(sz), *d = malloc(sz), *xn = malloc(sz), *gn = malloc(sz);
    double *S = malloc(sz * (size_t)m), *Y = malloc(sz * (size_t)m), *rho = malloc(sizeof(double) * (size_t)m);
    double *al = malloc(sizeof(double) * (size_t)m);
    int len = 0;
    memset(x, 0, sz);
    double f = plain_obj(p, x, l2, g);
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
        double gd = vdot(n, g, d), t = len ? 1 : 1 / sqrt(vdot(n, g, g)), fn = 0;
        for (;; t *= 0.5) {
            for (int64_t i = 0; i < n; i++) xn[i] = x[i] + t * d[i];
            fn = plain_obj(p, xn, l2, gn);
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

/* A CSR data set from a (mostly zero) dense problem, blocks built by a
 * task as the readers build them. */
typedef struct csr_hdr {
    int64_t rows, cols, block_rows;
} csr_hdr;

static int mn_csr_block(const em_rec *in, em_emitter *out, const void *arg) {
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
    em_rdd *blocks = em_map(idx, mn_csr_block, arg, n);
    free(arg);
    return ml_data_wrap(ctx, blocks, p->cols, 1);
}

static em_ml_data *mn_data(em_ctx *ctx, const prob *p, int sparse, int partitions, int block_rows) {
    return sparse ? csr_data(ctx, p, partitions, block_rows)
                  : ml_data_from_arrays(ctx, p->x, p->y, p->rows, p->cols, partitions, block_rows);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* ----------------------------------------------------- loss and gradient */

/* The distributed loss and gradient equal the plain loops and the central
 * differences of the distributed loss; block_rows 2000 puts 4 row tiles
 * (512 rows each at 7 columns) in one dense block. */
static void check_grad(int sparse, int block_rows) {
    prob p = make_prob(1500, 7, 4, sparse ? 0.4 : 1, 31 + (uint64_t)sparse);
    em_ctx *ctx = mn_ctx(NULL);
    CHECK(ctx);
    em_ml_data *d = mn_data(ctx, &p, sparse, 3, block_rows);
    CHECK(d);
    enum { KC = 28, N = 32 };
    double x[N], g[N], gref[N], gd[N], loss, lp, lm;
    uint64_t s = 7;
    for (int j = 0; j < N; j++) x[j] = rng_unif(&s);
    CHECK_OK(em_ml_softmax_loss_grad(d, 4, x, x + KC, &loss, g));
    double lref = plain_loss_grad(&p, x, gref);
    CHECK(fabs(loss - lref) <= 1e-12 * lref);
    CHECK(close_rel(g, gref, N, 1e-12));
    for (int j = 0; j < N; j++) {
        double h = 1e-5, save = x[j];
        x[j] = save + h;
        CHECK_OK(em_ml_softmax_loss_grad(d, 4, x, x + KC, &lp, gd));
        x[j] = save - h;
        CHECK_OK(em_ml_softmax_loss_grad(d, 4, x, x + KC, &lm, gd));
        x[j] = save;
        double fd = (lp - lm) / (2 * h);
        if (!(fabs(fd - g[j]) <= 1e-6 * fmax(fabs(g[j]), 1e-3)))
            fprintf(stderr, "  [%d] finite difference %.10g, gradient %.10g\n", j, fd, g[j]);
        CHECK(fabs(fd - g[j]) <= 1e-6 * fmax(fabs(g[j]), 1e-3));
    }
    /* At zero every class has probability 1/K: the loss is log K. */
    memset(x, 0, sizeof x);
    CHECK_OK(em_ml_softmax_loss_grad(d, 4, x, x + KC, &loss, g));
    CHECK(fabs(loss - log(4.0)) <= 1e-12); /* a mean of 1500 rounded terms */
    /* Huge margins stay finite (the row max is subtracted). */
    for (int j = 0; j < KC; j++) x[j] = 800 * (j % 3 - 1);
    CHECK_OK(em_ml_softmax_loss_grad(d, 4, x, x + KC, &loss, g));
    lref = plain_loss_grad(&p, x, gref);
    CHECK(isfinite(loss) && fabs(loss - lref) <= 1e-12 * lref);
    em_ml_free(d);
    em_close(ctx);
    free_prob(&p);
}

TEST(ml_multinomial_grad_dense) { check_grad(0, 100); }
TEST(ml_multinomial_grad_dense_tiles) { check_grad(0, 2000); }
TEST(ml_multinomial_grad_csr) { check_grad(1, 100); }

/* -------------------------------------------------------- optimizers */

/* Train on p as given; x: K x cols then K intercepts. */
static int train_on(const char *master, const prob *p, int sparse, int parts, const em_ml_logreg_opts *o,
                    double *x) {
    em_ctx *ctx = mn_ctx(master);
    if (!ctx) return -1;
    em_ml_data *d = mn_data(ctx, p, sparse, parts, 37);
    em_ml_model *m = NULL;
    int rc = d ? em_ml_logreg_train(d, o, &m) : -1;
    if (rc) fprintf(stderr, "  train: %s\n", em_errmsg());
    if (!rc && m->classes != p->K) rc = -1;
    if (!rc) {
        memcpy(x, m->w, sizeof(double) * (size_t)(p->K * p->cols));
        memcpy(x + p->K * p->cols, m->intercepts, sizeof(double) * (size_t)p->K);
    }
    em_ml_model_free(m);
    em_ml_free(d);
    em_close(ctx);
    return rc;
}

TEST(ml_multinomial_gd_matches_plain) {
    prob p = make_prob(400, 6, 3, 1, 41);
    enum { N = 21 };
    double ref[N], x[N];
    em_ml_logreg_opts o;
    em_ml_logreg_defaults(&o);
    o.max_iter = 25;
    o.step = 0.8;
    o.l2 = 0.01;
    o.tol = 0;
    plain_gd(&p, o.step, o.l2, 25, ref);
    int parts[] = {1, 3, 7};
    for (int i = 0; i < 3; i++) {
        CHECK_OK(train_on("local[2]", &p, 0, parts[i], &o, x));
        CHECK(close_rel(x, ref, N, 1e-9));
    }
    CHECK_OK(train_on("local[1]", &p, 1, 7, &o, x)); /* CSR */
    CHECK(close_rel(x, ref, N, 1e-9));
    /* Started at zero, the classes stay centered: each column of W and the
     * intercepts sum to zero over the classes. */
    for (int j = 0; j < 7; j++) {
        double sum = 0;
        for (int k = 0; k < 3; k++) sum += j < 6 ? x[k * 6 + j] : x[18 + k];
        CHECK(fabs(sum) <= 1e-12);
    }
    free_prob(&p);
}

TEST(ml_multinomial_lbfgs_matches_plain) {
    prob p = make_prob(400, 6, 3, 1, 42);
    enum { N = 21 };
    double ref[N], x[N];
    em_ml_logreg_opts o;
    em_ml_logreg_defaults(&o);
    o.optimizer = EM_ML_LBFGS;
    o.max_iter = 10;
    o.history = 4;
    o.l2 = 0.01;
    o.tol = 0;
    o.family = EM_ML_MULTINOMIAL;
    plain_lbfgs(&p, o.l2, o.history, 10, ref);
    int parts[] = {1, 3, 7};
    for (int i = 0; i < 3; i++) {
        CHECK_OK(train_on("local[2]", &p, 0, parts[i], &o, x));
        CHECK(close_rel(x, ref, N, 1e-9));
    }
    CHECK_OK(train_on("local[2]", &p, 1, 3, &o, x)); /* CSR */
    CHECK(close_rel(x, ref, N, 1e-9));
    free_prob(&p);
}

/* --------------------------------------------------------------- iris */

/* tests/data/ml/iris.csv: the UCI iris data set (Fisher, 1936; public
 * domain), 150 rows, 4 features in cm, the class last (0 setosa, 1
 * versicolor, 2 virginica), with the two corrections scikit-learn applies
 * (rows 35 and 38: 4.9,3.1,1.5,0.2 and 4.9,3.6,1.4,0.1).
 *
 * The reference.  scikit-learn is not installed on this machine, so its
 * LogisticRegression(multi_class="multinomial", C=1.0) could not be run.
 * Its objective with the lbfgs solver is 0.5 |W|^2 + C sum_i -log P(y_i |
 * x_i), intercepts not penalized, on the raw features; that is ours
 * divided by n with l2 = 1 / (C n) = 1/150.  scipy 1.10.1's L-BFGS-B
 * (the optimizer scikit-learn calls) minimized it to gtol 1e-12 from zero:
 *     W = [[-0.423509803,  0.9673504124, -2.5171524893, -1.0793366063],
 *          [ 0.5344614198, -0.3215878702, -0.2063919589, -0.9442985141],
 *          [-0.1109516168, -0.6457625422,  2.7235444482,  2.0236351204]]
 *     b = [9.8495681999, 2.2372058186, -12.0867740185]
 * objective / n 0.19257544402728405, log loss 0.11963667865027126,
 * training accuracy 146/150 = 97.33% (confusion [[50,0,0],[0,47,3],
 * [0,1,49]]), which is also the accuracy commonly reported for
 * scikit-learn's default model on iris.  Here: ember's L-BFGS reaches
 * the same optimum (objective to 1e-9, coefficients to 1e-4), its
 * accuracy is within 1 point of 97.33%, and the plain C L-BFGS of this
 * file, run to the same point, agrees with both. */
TEST(ml_multinomial_iris) {
    em_ctx *ctx = mn_ctx("local[2]");
    CHECK(ctx);
    em_ml_load_opts lo = {.partitions = 3, .label_col = -1, .skip_header = 1, .classes = 3};
    em_ml_data *d = em_ml_read_csv(ctx, "tests/data/ml/iris.csv", &lo);
    CHECK(d);
    CHECK_EQ_I64(em_ml_rows(d), 150);
    CHECK_EQ_I64(em_ml_cols(d), 4);
    int K = 0;
    CHECK_OK(em_ml_num_classes(d, &K));
    CHECK_EQ_I64(K, 3);
    em_ml_logreg_opts o;
    em_ml_logreg_defaults(&o);
    o.optimizer = EM_ML_LBFGS;
    o.l2 = 1.0 / 150;
    o.max_iter = 1000;
    o.tol = 1e-12;
    em_ml_model *m = NULL;
    CHECK_OK(em_ml_logreg_train(d, &o, &m));
    CHECK_EQ_I64(m->classes, 3);
    const double ref_w[12] = {-0.423509803,  0.9673504124, -2.5171524893, -1.0793366063,
                              0.5344614198,  -0.3215878702, -0.2063919589, -0.9442985141,
                              -0.1109516168, -0.6457625422, 2.7235444482,  2.0236351204};
    const double ref_b[3] = {9.8495681999, 2.2372058186, -12.0867740185};
    CHECK(fabs(m->loss - 0.19257544402728405) <= 1e-9);
    CHECK(close_rel(m->w, ref_w, 12, 1e-4));
    CHECK(close_rel(m->intercepts, ref_b, 3, 1e-4));
    em_ml_class_metrics cm;
    CHECK_OK(em_ml_evaluate_classes(m, d, &cm));
    CHECK_EQ_I64(cm.classes, 3);
    CHECK_EQ_I64(cm.rows, 150);
    CHECK(fabs(cm.accuracy - 146.0 / 150) <= 0.01);
    CHECK(fabs(cm.log_loss - 0.11963667865027126) <= 1e-6);
    int64_t diag = 0, total = 0;
    for (int t = 0; t < 3; t++) {
        int64_t row = 0;
        for (int q = 0; q < 3; q++) row += cm.confusion[t * 3 + q];
        CHECK_EQ_I64(row, 50); /* 50 rows of each class */
        diag += cm.confusion[t * 3 + t];
        total += row;
    }
    CHECK_EQ_I64(total, 150);
    CHECK(fabs((double)diag / 150 - cm.accuracy) <= 1e-15);
    CHECK_EQ_I64(cm.confusion[0], 50); /* setosa is linearly separable */
    free(cm.confusion);
    em_ml_metrics mt;
    CHECK_OK(em_ml_evaluate(m, d, &mt));
    CHECK(mt.accuracy == (double)diag / 150 && isnan(mt.auc) && mt.rows == 150);

    /* The plain C L-BFGS on the same data reaches the same optimum. */
    prob p = {150, 4, 3, malloc(sizeof(double) * 600), malloc(sizeof(double) * 150)};
    FILE *f = fopen("tests/data/ml/iris.csv", "r");
    CHECK(f && p.x && p.y);
    char line[128];
    CHECK(fgets(line, sizeof line, f));
    for (int i = 0; i < 150; i++) {
        double *r = p.x + i * 4;
        CHECK(fgets(line, sizeof line, f) && sscanf(line, "%lf,%lf,%lf,%lf,%lf", r, r + 1, r + 2, r + 3, &p.y[i]) == 5);
    }
    fclose(f);
    double ref[15], g[15];
    plain_lbfgs(&p, 1.0 / 150, 10, 300, ref);
    CHECK(fabs(plain_obj(&p, ref, 1.0 / 150, g) - m->loss) <= 1e-9);
    CHECK(close_rel(m->w, ref, 12, 1e-4));
    free_prob(&p);
    em_ml_model_free(m);
    em_ml_free(d);
    em_close(ctx);
}

/* ------------------------------------------------ family and classes */

TEST(ml_multinomial_family_auto) {
    em_ctx *ctx = mn_ctx(NULL);
    CHECK(ctx);
    prob p = make_prob(120, 3, 3, 1, 51);
    em_ml_data *d3 = mn_data(ctx, &p, 0, 3, 16);
    CHECK(d3);
    for (int64_t i = 0; i < p.rows; i++) p.y[i] = p.y[i] > 0; /* two classes */
    em_ml_data *d2 = mn_data(ctx, &p, 0, 3, 16);
    CHECK(d2);
    em_ml_logreg_opts o;
    em_ml_logreg_defaults(&o);
    o.max_iter = 3;
    em_ml_model *m = NULL;
    /* auto: two classes give the binary model, three the multinomial. */
    CHECK_OK(em_ml_logreg_train(d2, &o, &m));
    CHECK(m->classes == 0 && m->intercepts == NULL);
    em_ml_model_free(m);
    CHECK_OK(em_ml_logreg_train(d3, &o, &m));
    CHECK(m->classes == 3 && m->intercepts != NULL);
    em_ml_model_free(m);
    /* multinomial asked for with two classes: K = 2, softmax. */
    o.family = EM_ML_MULTINOMIAL;
    CHECK_OK(em_ml_logreg_train(d2, &o, &m));
    CHECK(m->classes == 2 && m->intercepts != NULL);
    /* Its two rows are opposite (centered), and the binary model with twice
     * the difference is the same classifier. */
    for (int j = 0; j < 3; j++) CHECK(fabs(m->w[j] + m->w[3 + j]) <= 1e-15);
    em_ml_model_free(m);
    /* classes given: more than the labels show (no row of class 3 or 4). */
    o.classes = 5;
    CHECK_OK(em_ml_logreg_train(d3, &o, &m));
    CHECK_EQ_I64(m->classes, 5);
    for (int64_t i = 0; i < p.rows; i++) CHECK(em_ml_predict(m, p.x + i * 3) < 3);
    em_ml_model_free(m);
    /* Fewer than the labels show: the first bad row is named. */
    o.classes = 2;
    CHECK(em_ml_logreg_train(d3, &o, &m) == EM_EINVAL && m == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "has label 2 (labels must be 0 or 1)");
    /* binomial with three classes. */
    o.family = EM_ML_BINOMIAL;
    o.classes = 0;
    CHECK(em_ml_logreg_train(d3, &o, &m) == EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "has label 2 (labels must be 0 or 1)");
    o.classes = 3;
    CHECK(em_ml_logreg_train(d3, &o, &m) == EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "3 classes (the binomial family has 2)");
    o.family = 9;
    o.classes = 0;
    CHECK(em_ml_logreg_train(d3, &o, &m) == EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "unknown family 9");
    o.family = EM_ML_AUTO;
    o.classes = 1;
    CHECK(em_ml_logreg_train(d3, &o, &m) == EM_EINVAL);
    em_ml_free(d2);
    em_ml_free(d3);
    em_close(ctx);
    free_prob(&p);
}

/* ----------------------------------------------------------- labels */

TEST(ml_multinomial_label_errors) {
    em_ctx *ctx = mn_ctx(NULL);
    CHECK(ctx);
    prob p = make_prob(100, 3, 3, 1, 61);
    const double bad[] = {2.5, -1, NAN, 70000};
    const char *want[] = {"row 57 has label 2.5 ", "row 57 has label -1 ", "row 57 has label nan ",
                          "row 57 has label 70000 "};
    em_ml_model *m = NULL;
    for (int i = 0; i < 4; i++) {
        double save = p.y[57];
        p.y[57] = bad[i];
        em_ml_data *d = mn_data(ctx, &p, i & 1, 3, 16); /* row 57: partition 1 (rows 48..95) */
        p.y[57] = save;
        CHECK(d);
        CHECK(em_ml_logreg_train(d, NULL, &m) == EM_EINVAL && m == NULL);
        CHECK_STR_CONTAINS(em_errmsg(), want[i]);
        int K = 0;
        CHECK(em_ml_num_classes(d, &K) == EM_EINVAL && K == 0);
        CHECK_STR_CONTAINS(em_errmsg(), want[i]);
        /* The direct loss names the label (from inside the task). */
        double w[9] = {0}, b[3] = {0}, loss, g[12];
        CHECK(em_ml_softmax_loss_grad(d, 3, w, b, &loss, g) != 0);
        CHECK_STR_CONTAINS(em_errmsg(), "(labels must be integers 0 to 2)");
        em_ml_free(d);
    }
    /* Readers: class labels allowed by o.classes, others named with the line. */
    char path[512];
    snprintf(path, sizeof path, "%s/c.csv", test_tmpdir());
    write_file(path, "1,2,0\n3,4,2\n5,6,3\n");
    em_ml_load_opts lo = {.label_col = -1, .classes = 3};
    CHECK(em_ml_read_csv(ctx, path, &lo) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "c.csv:3: label 3 in field 3 (labels must be integers 0 to 2)");
    /* Binary labels: one bad line only, so that whichever task reads it
     * fails first, the message is the same. */
    char path2[512];
    snprintf(path2, sizeof path2, "%s/c2.csv", test_tmpdir());
    write_file(path2, "1,2,0\n3,4,2\n5,6,1\n");
    lo.classes = 0;
    CHECK(em_ml_read_csv(ctx, path2, &lo) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "c2.csv:2: label 2 in field 3 (labels must be 0 or 1)");
    lo.classes = EM_ML_ANY_CLASSES;
    em_ml_data *d = em_ml_read_csv(ctx, path, &lo);
    CHECK(d);
    int K = 0;
    CHECK_OK(em_ml_num_classes(d, &K));
    CHECK_EQ_I64(K, 4);
    em_ml_free(d);
    lo.classes = 1;
    CHECK(em_ml_read_csv(ctx, path, &lo) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "classes 1");
    snprintf(path, sizeof path, "%s/c.svm", test_tmpdir());
    write_file(path, "0 1:1\n2.0 2:1\n1.5 1:2\n");
    lo.classes = 4;
    CHECK(em_ml_read_libsvm(ctx, path, &lo) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "c.svm:3: label '1.5' (labels must be integers 0 to 3)");
    write_file(path, "0 1:1\n2.0 2:1\n-1 1:2\n");
    lo.classes = EM_ML_ANY_CLASSES;
    CHECK(em_ml_read_libsvm(ctx, path, &lo) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "c.svm:3: label '-1' (labels must be integers 0 to 65535)");
    write_file(path, "0 1:1\n2.0 2:1\n1 1:2\n");
    d = em_ml_read_libsvm(ctx, path, &lo);
    CHECK(d);
    CHECK_OK(em_ml_num_classes(d, &K));
    CHECK_EQ_I64(K, 3);
    em_ml_free(d);
    em_close(ctx);
    free_prob(&p);
}

/* ------------------------------------------- prediction and metrics */

/* A hand-made model: K = 3, two features.
 *   W = [[1, 0], [0, 1], [-1, -1]], b = [0, 0, ln 2].
 * Row (0, 0): margins (0, 0, ln 2), exp (1, 1, 2): P = (1/4, 1/4, 1/2).
 * Row (ln 3, 0): margins (ln 3, 0, ln 2 - ln 3) -> exp (3, 1, 2/3):
 *   P = (9/14, 3/14, 2/14).
 * Row (0, ln 5): exp (1, 5, 2/5): P = (5/32, 25/32, 2/32). */
TEST(ml_multinomial_predict_and_metrics) {
    double w[6] = {1, 0, 0, 1, -1, -1}, b[3] = {0, 0, log(2.0)};
    em_ml_model m = {.cols = 2, .w = w, .classes = 3, .intercepts = b};
    double rows[3][2] = {{0, 0}, {log(3.0), 0}, {0, log(5.0)}};
    double want[3][3] = {{0.25, 0.25, 0.5}, {9.0 / 14, 3.0 / 14, 2.0 / 14}, {5.0 / 32, 25.0 / 32, 2.0 / 32}};
    int cls[3] = {2, 0, 1};
    for (int i = 0; i < 3; i++) {
        double pr[3];
        CHECK_EQ_I64(em_ml_predict_probs(&m, rows[i], pr), 3);
        CHECK(close_rel(pr, want[i], 3, 1e-15));
        CHECK_EQ_I64(em_ml_predict(&m, rows[i]), cls[i]);
        CHECK(fabs(em_ml_predict_prob(&m, rows[i]) - want[i][1]) <= 1e-15);
    }
    /* Ties go to the lowest class; huge margins stay finite. */
    double tie[2] = {1, 1}; /* margins (1, 1, ln 2 - 2): classes 0 and 1 tie */
    CHECK_EQ_I64(em_ml_predict(&m, tie), 0);
    double big[2] = {1e300, -1e300}, pb[3];
    CHECK_EQ_I64(em_ml_predict_probs(&m, big, pb), 3);
    CHECK(pb[0] == 1 && pb[1] == 0 && pb[2] == 0);
    CHECK(em_ml_predict_probs(&m, NULL, pb) == EM_EINVAL);
    CHECK(em_ml_predict(NULL, rows[0]) == -1);
    /* A binary model gives 2 probabilities. */
    double bw[2] = {1, -1};
    em_ml_model bm = {.cols = 2, .w = bw, .b = 0};
    double bp[2];
    CHECK_EQ_I64(em_ml_predict_probs(&bm, rows[1], bp), 2);
    CHECK(fabs(bp[1] - 0.75) <= 1e-15 && fabs(bp[0] - 0.25) <= 1e-15); /* sigmoid(ln 3) = 3/4 */

    /* Metrics over a data set of these rows, in 7 partitions (most empty):
     * labels 2, 1, 1, 0 for rows 0, 1, 2, 0:
     *   log loss = (-ln 1/2 - ln 3/14 - ln 25/32 - ln 1/4) / 4,
     *   predictions 2, 0, 1, 2: correct rows 0 and 2, accuracy 1/2;
     *   confusion (true, predicted): (2,2) (1,0) (1,1) (0,2). */
    em_ctx *ctx = mn_ctx(NULL);
    CHECK(ctx);
    double x[8] = {0, 0, log(3.0), 0, 0, log(5.0), 0, 0}, y[4] = {2, 1, 1, 0};
    em_ml_data *d = ml_data_from_arrays(ctx, x, y, 4, 2, 7, 1);
    CHECK(d);
    CHECK_EQ_I64(em_num_partitions(em_ml_blocks(d)), 7);
    em_ml_class_metrics cm;
    CHECK_OK(em_ml_evaluate_classes(&m, d, &cm));
    double ll = (-log(0.5) - log(3.0 / 14) - log(25.0 / 32) - log(0.25)) / 4;
    CHECK(fabs(cm.log_loss - ll) <= 1e-15 * ll * 4);
    CHECK(cm.accuracy == 0.5 && cm.rows == 4 && cm.classes == 3);
    const int64_t conf[9] = {0, 0, 1, 1, 1, 0, 0, 0, 1};
    CHECK(memcmp(cm.confusion, conf, sizeof conf) == 0);
    free(cm.confusion);
    /* A binary model's confusion matrix is 2 x 2; labels beyond 1 fail. */
    double y2[4] = {1, 0, 0, 1};
    em_ml_data *d2 = ml_data_from_arrays(ctx, x, y2, 4, 2, 3, 2);
    CHECK(d2);
    /* margins x0 - x1: 0 (p 1/2 -> 1), ln 3 (-> 1), -ln 5 (-> 0), 0 (-> 1) */
    CHECK_OK(em_ml_evaluate_classes(&bm, d2, &cm));
    const int64_t conf2[4] = {1, 1, 0, 2};
    CHECK(cm.classes == 2 && memcmp(cm.confusion, conf2, sizeof conf2) == 0 && cm.accuracy == 0.75);
    free(cm.confusion);
    CHECK(em_ml_evaluate_classes(&bm, d, &cm) == EM_EINVAL && cm.confusion == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "row 0 has label 2 (labels must be 0 or 1)");
    em_ml_free(d2);
    em_ml_free(d);
    /* An empty data set (empty partitions only). */
    d = ml_data_from_arrays(ctx, x, y, 0, 2, 3, 1);
    CHECK(d);
    CHECK(em_ml_evaluate_classes(&m, d, &cm) == EM_EEMPTY);
    em_ml_model *tm = NULL;
    CHECK(em_ml_logreg_train(d, NULL, &tm) == EM_EEMPTY && tm == NULL);
    int K = 0;
    CHECK(em_ml_num_classes(d, &K) == EM_EEMPTY);
    double loss, g[9];
    CHECK(em_ml_softmax_loss_grad(d, 3, w, b, &loss, g) == EM_EEMPTY);
    CHECK(em_ml_softmax_loss_grad(d, 1, w, b, &loss, g) == EM_EINVAL);
    em_ml_free(d);
    em_close(ctx);
}

/* A model trained on standardized rows, unstandardized, predicts the same
 * probabilities on raw rows. */
TEST(ml_multinomial_unstandardize) {
    em_ctx *ctx = mn_ctx(NULL);
    CHECK(ctx);
    prob p = make_prob(300, 3, 3, 1, 71);
    const double off[3] = {650, -3, 7}, mul[3] = {350, 0.01, 0};
    for (int64_t i = 0; i < p.rows; i++)
        for (int j = 0; j < 3; j++) p.x[i * 3 + j] = off[j] + mul[j] * p.x[i * 3 + j]; /* column 2 constant */
    em_ml_data *raw = mn_data(ctx, &p, 0, 3, 64);
    CHECK(raw);
    double *mean, *sd;
    CHECK_OK(em_ml_column_stats(raw, &mean, &sd));
    em_ml_data *z = em_ml_standardize_with(raw, mean, sd);
    CHECK(z);
    em_ml_logreg_opts o;
    em_ml_logreg_defaults(&o);
    o.optimizer = EM_ML_LBFGS;
    o.l2 = 1e-3;
    em_ml_model *m = NULL, *f = NULL;
    CHECK_OK(em_ml_logreg_train(z, &o, &m));
    char path[512];
    snprintf(path, sizeof path, "%s/m.model", test_tmpdir());
    CHECK_OK(em_ml_model_save(m, path));
    CHECK((f = em_ml_model_load(path)) != NULL);
    CHECK_OK(em_ml_model_unstandardize(f, mean, sd));
    for (int k = 0; k < 3; k++) CHECK(f->w[k * 3 + 2] == 0);
    for (int64_t i = 0; i < p.rows; i++) {
        double zi[3], pz[3], pr[3];
        for (int j = 0; j < 3; j++) zi[j] = sd[j] > 0 ? (p.x[i * 3 + j] - mean[j]) * (1 / sd[j]) : 0;
        CHECK_EQ_I64(em_ml_predict_probs(m, zi, pz), 3);
        CHECK_EQ_I64(em_ml_predict_probs(f, p.x + i * 3, pr), 3);
        CHECK(close_rel(pr, pz, 3, 1e-11));
    }
    em_ml_metrics mz, mr;
    CHECK_OK(em_ml_evaluate(m, z, &mz));
    CHECK_OK(em_ml_evaluate(f, raw, &mr));
    CHECK(mz.accuracy == mr.accuracy && fabs(mz.log_loss - mr.log_loss) <= 1e-11);
    em_ml_model_free(f);
    em_ml_model_free(m);
    free(mean);
    free(sd);
    em_ml_free(z);
    em_ml_free(raw);
    em_close(ctx);
    free_prob(&p);
}

/* --------------------------------------------------------- model file */

TEST(ml_multinomial_model_file) {
    double w[6] = {1.0 / 3, -2.5e-300, 1e300, 0, -0.0, 123456789.123456789}, b[3] = {0.1, -7, 1e-5};
    em_ml_model m = {.cols = 2, .w = w, .iterations = 4, .loss = 0.5, .classes = 3, .intercepts = b};
    char path[512], bad[512];
    snprintf(path, sizeof path, "%s/mn.model", test_tmpdir());
    snprintf(bad, sizeof bad, "%s/bad.model", test_tmpdir());
    CHECK_OK(em_ml_model_save(&m, path));
    em_ml_model *l = em_ml_model_load(path);
    CHECK(l);
    CHECK(l->cols == 2 && l->classes == 3);
    CHECK(memcmp(l->w, w, sizeof w) == 0 && memcmp(l->intercepts, b, sizeof b) == 0);
    em_ml_model_free(l);
    /* The text, byte for byte, with its checksum recomputed here. */
    FILE *f = fopen(path, "r");
    char text[1024];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = 0;
    const char *body = "ember-logreg 2\nfamily multinomial\nclasses 3\ncols 2\nintercept 0.10000000000000001\n"
                       "intercept -7\nintercept 1.0000000000000001e-05\n0.33333333333333331\n-2.5e-300\n"
                       "1.0000000000000001e+300\n0\n-0\n123456789.12345679\ncrc32 ";
    if (strncmp(text, body, strlen(body))) fprintf(stderr, "  file:\n%s", text);
    CHECK(strncmp(text, body, strlen(body)) == 0);
    CHECK(strlen(text) == strlen(body) + 9 && text[n - 1] == '\n');
    /* zlib's CRC-32 computed bit by bit (reflected polynomial 0xEDB88320). */
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < strlen(body) - 6; i++) {
        crc ^= (uint8_t)body[i];
        for (int k = 0; k < 8; k++) crc = crc & 1 ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
    }
    char want[16];
    snprintf(want, sizeof want, "%08x\n", (unsigned)~crc);
    CHECK(strcmp(text + strlen(body), want) == 0);

    /* A binary model is written as version 2, family binomial, and loads
     * back binary. */
    double bw[2] = {0.5, -0.25};
    em_ml_model bm = {.cols = 2, .w = bw, .b = 3};
    CHECK_OK(em_ml_model_save(&bm, path));
    l = em_ml_model_load(path);
    CHECK(l && l->classes == 0 && l->intercepts == NULL && l->b == 3 && l->w[0] == 0.5 && l->w[1] == -0.25);
    em_ml_model_free(l);
    /* Version 1 files (the binary models saved before) still load. */
    write_file(bad, "ember-logreg 1\ncols 2\nintercept 0.5\n1\n-2\n");
    l = em_ml_model_load(bad);
    CHECK(l && l->classes == 0 && l->cols == 2 && l->b == 0.5 && l->w[0] == 1 && l->w[1] == -2);
    em_ml_model_free(l);

    /* Corruption: one digit changed is a checksum mismatch; a truncated
     * file, a wrong header, a bad count, each names its line. */
    char *flip = strdup(text);
    CHECK(flip);
    flip[strlen("ember-logreg 2\nfamily multinomial\nclasses 3\ncols 2\nintercept 0.1")] = '2';
    write_file(bad, flip);
    CHECK(em_ml_model_load(bad) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "bad.model:14: checksum mismatch: the file is corrupt");
    free(flip);
    char cut[1024];
    snprintf(cut, sizeof cut, "%.*s", (int)(strlen(body) - 6), body); /* no crc line */
    write_file(bad, cut);
    CHECK(em_ml_model_load(bad) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), ":14: expected \"crc32 XXXXXXXX\"");
    const char *cases[][2] = {
        {"ember-logreg 3\n", ":1: not an ember-logreg model"},
        {"ember-logreg 2\nfamily softmax\n", ":2: expected \"family binomial\""},
        {"ember-logreg 2\nfamily multinomial\nclasses 1\n", ":3: expected \"classes K\""},
        {"ember-logreg 2\nfamily binomial\nclasses 3\n", ":3: expected \"classes 2\" (binomial)"},
        {"ember-logreg 2\nfamily multinomial\nclasses 3\ncols -1\n", ":4: expected \"cols N\""},
        {"ember-logreg 2\nfamily multinomial\nclasses 65536\ncols 1000000\nintercept 0\n",
         ":4: the file is too short for its cols and classes"},
        {"ember-logreg 2\nfamily multinomial\nclasses 2\ncols 1\nintercept 0\nintercep 1\n",
         ":6: expected \"intercept B\""},
        {"ember-logreg 2\nfamily multinomial\nclasses 2\ncols 1\nintercept 0\nintercept 1\n1\nx\n",
         ":8: bad weight"},
        {"ember-logreg 2\nfamily multinomial\nclasses 2\ncols 1\nintercept 0\nintercept 1\n1\n2\ncrc32 0\n",
         ":9: expected \"crc32"},
        {"", ":1: not an ember-logreg model"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(bad, cases[i][0]);
        CHECK(em_ml_model_load(bad) == NULL);
        CHECK_STR_CONTAINS(em_errmsg(), cases[i][1]);
    }
    /* Data after the checksum. */
    snprintf(cut, sizeof cut, "%.1000sjunk\n", text);
    write_file(bad, cut);
    CHECK(em_ml_model_load(bad) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), ":15: unexpected data after the checksum");
    /* A model that is neither (classes without intercepts) is refused. */
    em_ml_model odd = {.cols = 2, .w = w, .classes = 3};
    CHECK(em_ml_model_save(&odd, path) == EM_EINVAL);
}
