/*
 * logreg.c -- logistic regression throughput: full-batch gradient descent
 * on cached synthetic data (the ICCCN'17 setup: 10,000 x 10,000 dense),
 * beside references measured in the same run on the same matrix:
 *
 *   C fused      a hand-written single-pass C loop (per row: x.w, the
 *                residual, g += r x, reading the row from cache the second
 *                time) over the matrix copied into one contiguous buffer,
 *                on 1 thread and on 2 (pthreads, rows split in halves);
 *   memory bound the matrix's bytes divided by the read bandwidth of this
 *                machine, measured here by a streaming sum over a 1 GiB
 *                buffer on 2 threads: no pass can be faster.
 *
 *   logreg [--master M] [--wide RxC] [--tall RxC] [--sparse RxC] [--density D]
 *          [--iters N] [--only wide|tall|sparse]
 *
 * Defaults: local[2]; wide 10000x10000 and tall 1000000x100 dense, sparse
 * 1000000x10000 at density 0.01; 10 iterations.  ember's figures: samples/s
 * = rows x iterations / training time (which also holds the first pass, at
 * the starting weights: iterations + 1 passes), and ms per iteration from
 * the progress callback: the best iteration (the references are best of
 * 3 and 5 runs too: on a shared machine the best is the figure least
 * disturbed by neighbours), and the median beside it.  The bandwidth is
 * measured right after the case's passes.  The data set is made
 * and cached before the clock starts.  As a check, the loss at the trained
 * weights is computed both ways and must agree.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "block.h"
#include "ember.h"
#include "ember_ml.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_f64(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ------------------------------------------------- the matrix, in one piece */

typedef struct flat {
    int sparse;
    int64_t rows, cols, nnz;
    double *y, *x;         /* dense: rows x cols */
    int64_t *indptr;       /* CSR */
    double *val;
    int32_t *idx;
} flat;

/* Copying the blocks into one buffer.  em_collect would do, but it moves
 * every byte through the task-result path; with a local master the tasks
 * share the driver's memory, so each task copies its blocks straight to
 * their place (disjoint ranges, found from the blocks' indexes).  Bench
 * code only: a function that writes through a pointer in its argument is
 * not something a driver program may do. */
typedef struct place_arg {
    flat *f;
    const int64_t *row_off, *nnz_off; /* per block index */
} place_arg;

static int block_of(const em_rec *r, ml_block *k, ebuf *scratch) {
    em_rec v = {NULL, 0, r->key, r->klen}; /* zip_with_index: (block, index) */
    return ml_block_view(&v, k, scratch);
}

/* (index, rows, nnz) of each block. */
static int block_shape(const em_rec *r, em_emitter *out, const void *arg) {
    ml_block k;
    ebuf scratch = EBUF_INIT;
    int rc = block_of(r, &k, &scratch);
    ebuf_free(&scratch);
    if (rc) return rc;
    int64_t v[3] = {em_i64_dec(r->val), k.rows, k.nnz};
    return em_emit(out, v, sizeof v);
}

static int place_block(const em_rec *r, const void *arg) {
    place_arg a;
    ml_block k;
    ebuf scratch = EBUF_INIT;
    memcpy(&a, arg, sizeof a);
    int rc = block_of(r, &k, &scratch);
    if (!rc) {
        flat *f = a.f;
        int64_t bi = em_i64_dec(r->val), row = a.row_off[bi], z = a.nnz_off[bi];
        memcpy(f->y + row, k.y, sizeof(double) * (size_t)k.rows);
        if (f->sparse) {
            for (int64_t i = 0; i <= k.rows; i++) f->indptr[row + i] = z + k.indptr[i];
            memcpy(f->val + z, k.val, sizeof(double) * (size_t)k.nnz);
            memcpy(f->idx + z, k.idx, sizeof(int32_t) * (size_t)k.nnz);
        } else {
            memcpy(f->x + row * f->cols, k.x, sizeof(double) * (size_t)(k.rows * k.cols));
        }
    }
    ebuf_free(&scratch);
    return rc;
}

static int flatten(em_ml_data *d, flat *f) {
    memset(f, 0, sizeof *f);
    f->sparse = em_ml_is_sparse(d);
    f->rows = em_ml_rows(d);
    f->cols = em_ml_cols(d);
    em_rdd *z = em_zip_with_index(em_ml_blocks(d));
    em_batch *b = NULL;
    int rc = z ? em_collect(em_map(z, block_shape, NULL, 0), &b) : -1;
    if (rc) return rc;
    size_t nb = em_batch_count(b), pos = 0;
    int64_t *row_off = calloc(nb + 1, sizeof(int64_t)), *nnz_off = calloc(nb + 1, sizeof(int64_t)), v[3];
    em_rec r;
    while (em_batch_next(b, &pos, &r) == 1) {
        memcpy(v, r.val, sizeof v);
        row_off[v[0] + 1] = v[1];
        nnz_off[v[0] + 1] = v[2];
    }
    em_batch_free(b);
    for (size_t i = 0; i < nb; i++) {
        row_off[i + 1] += row_off[i];
        nnz_off[i + 1] += nnz_off[i];
    }
    f->nnz = nnz_off[nb];
    f->y = malloc(sizeof(double) * (size_t)f->rows);
    if (f->sparse) {
        f->indptr = malloc(sizeof(int64_t) * (size_t)(f->rows + 1));
        f->val = malloc(sizeof(double) * (size_t)f->nnz);
        f->idx = malloc(sizeof(int32_t) * (size_t)f->nnz);
    } else {
        f->x = malloc(sizeof(double) * (size_t)(f->rows * f->cols));
    }
    if (row_off[nb] != f->rows) {
        rc = -1;
    } else {
        place_arg a = {f, row_off, nnz_off};
        rc = em_foreach(z, place_block, &a, sizeof a);
    }
    free(row_off);
    free(nnz_off);
    return rc;
}

static void flat_free(flat *f) {
    free(f->y);
    free(f->x);
    free(f->indptr);
    free(f->val);
    free(f->idx);
}

static double flat_bytes(const flat *f) {
    return f->sparse ? (double)f->nnz * 12 + (double)f->rows * 16 : (double)f->rows * (double)(f->cols + 1) * 8;
}

/* ------------------------------------------- reference: the fused C loop */

typedef struct part {
    const flat *f;
    const double *w;
    double b;
    int64_t r0, r1;
    double *g; /* cols + 1 */
    double loss;
} part;

/* Rows [r0, r1): loss and gradient sums.  Eight partial sums for x.w so
 * that the loop is not bound by the latency of one chain of additions. */
static void *fused(void *arg) {
    part *p = arg;
    const flat *f = p->f;
    const int64_t cols = f->cols;
    const double *restrict w = p->w;
    double *restrict g = p->g;
    double loss = 0, gb = 0;
    memset(g, 0, sizeof(double) * (size_t)(cols + 1));
    for (int64_t i = p->r0; i < p->r1; i++) {
        double m = p->b;
        if (f->sparse) {
            for (int64_t k = f->indptr[i]; k < f->indptr[i + 1]; k++) m += f->val[k] * w[f->idx[k]];
        } else {
            const double *restrict x = f->x + i * cols;
            double a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
            int64_t j = 0;
            for (; j + 8 <= cols; j += 8) {
                a0 += x[j] * w[j];
                a1 += x[j + 1] * w[j + 1];
                a2 += x[j + 2] * w[j + 2];
                a3 += x[j + 3] * w[j + 3];
                a4 += x[j + 4] * w[j + 4];
                a5 += x[j + 5] * w[j + 5];
                a6 += x[j + 6] * w[j + 6];
                a7 += x[j + 7] * w[j + 7];
            }
            for (; j < cols; j++) a0 += x[j] * w[j];
            m += ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
        }
        double y = f->y[i], e = exp(-fabs(m)), r = (m >= 0 ? 1 / (1 + e) : e / (1 + e)) - y;
        loss += log1p(e) + (m > 0 ? m : 0) - y * m;
        gb += r;
        if (f->sparse) {
            for (int64_t k = f->indptr[i]; k < f->indptr[i + 1]; k++) g[f->idx[k]] += r * f->val[k];
        } else {
            const double *restrict x = f->x + i * cols;
            for (int64_t j = 0; j < cols; j++) g[j] += r * x[j];
        }
    }
    g[cols] = gb;
    p->loss = loss;
    return NULL;
}

/* One pass on nthreads threads; returns the mean loss, fills g (means). */
static double fused_pass(const flat *f, const double *w, double b, int nthreads, double *g) {
    part ps[8];
    pthread_t th[8];
    for (int t = 0; t < nthreads; t++) {
        ps[t] = (part){f, w, b, f->rows * t / nthreads, f->rows * (t + 1) / nthreads,
                       malloc(sizeof(double) * (size_t)(f->cols + 1)), 0};
        if (t) pthread_create(&th[t], NULL, fused, &ps[t]);
    }
    fused(&ps[0]);
    double loss = ps[0].loss;
    memcpy(g, ps[0].g, sizeof(double) * (size_t)(f->cols + 1));
    for (int t = 1; t < nthreads; t++) {
        pthread_join(th[t], NULL);
        loss += ps[t].loss;
        for (int64_t j = 0; j <= f->cols; j++) g[j] += ps[t].g[j];
    }
    for (int t = 0; t < nthreads; t++) free(ps[t].g);
    for (int64_t j = 0; j <= f->cols; j++) g[j] /= (double)f->rows;
    return loss / (double)f->rows;
}

/* Best time of `runs` passes of gradient descent steps with the fused loop
 * (the update included, as in ember's iteration). */
static double fused_time(const flat *f, int nthreads, int runs) {
    double *w = calloc((size_t)(f->cols + 1), sizeof(double)), *g = malloc(sizeof(double) * (size_t)(f->cols + 1));
    double best = 1e30;
    for (int k = 0; k < runs; k++) {
        double t0 = now();
        fused_pass(f, w, w[f->cols], nthreads, g);
        for (int64_t j = 0; j <= f->cols; j++) w[j] -= g[j];
        double t = now() - t0;
        if (t < best) best = t;
    }
    free(w);
    free(g);
    return best;
}

/* ------------------------------------------ reference: read bandwidth */

typedef struct span {
    const double *p;
    size_t n;
    double sum;
} span;

static void *stream_sum(void *arg) {
    span *s = arg;
    const double *restrict p = s->p;
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
    for (size_t i = 0; i + 8 <= s->n; i += 8) {
        a0 += p[i];
        a1 += p[i + 1];
        a2 += p[i + 2];
        a3 += p[i + 3];
        a4 += p[i + 4];
        a5 += p[i + 5];
        a6 += p[i + 6];
        a7 += p[i + 7];
    }
    s->sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    return NULL;
}

/* Bytes per second read by 2 threads summing halves of a 1 GiB buffer
 * (best of 5). */
static double read_bandwidth(void) {
    size_t n = (size_t)1 << 27; /* doubles: 1 GiB */
    double *buf = malloc(n * sizeof(double)), best = 1e30, sink = 0;
    for (size_t i = 0; i < n; i++) buf[i] = (double)(i & 1023);
    for (int k = 0; k < 5; k++) {
        span s[2] = {{buf, n / 2, 0}, {buf + n / 2, n / 2, 0}};
        pthread_t th;
        double t0 = now();
        pthread_create(&th, NULL, stream_sum, &s[1]);
        stream_sum(&s[0]);
        pthread_join(th, NULL);
        double t = now() - t0;
        sink += s[0].sum + s[1].sum;
        if (t < best) best = t;
    }
    free(buf);
    if (sink == 42) printf(" "); /* keep the sums */
    return (double)n * sizeof(double) / best;
}

/* ---------------------------------------------------------------- cases */

typedef struct timing {
    double *t;
    int n, cap;
} timing;

static void on_iter(int iter, double loss, void *ctx) {
    timing *tm = ctx;
    if (tm->n < tm->cap) tm->t[tm->n++] = now();
}

static int run_case(em_ctx *ctx, const char *name, int64_t rows, int64_t cols, double density, int iters,
                    const char *master) {
    em_ml_synth_opts so = {rows, cols, density, 0.1, 17, 0, 0};
    double t0 = now();
    em_ml_data *d = em_ml_synthetic(ctx, &so);
    if (!d) return -1;
    double t_load = now() - t0;
    flat f;
    double t_flat = now();
    if (flatten(d, &f)) {
        em_ml_free(d);
        return -1;
    }
    t_flat = now() - t_flat;
    double mb = flat_bytes(&f) / 1e6;
    printf("== %s: %lld x %lld %s (%.0f MB), gradient descent, %d iterations, %s\n", name, (long long)rows,
           (long long)cols, density < 1 ? "sparse" : "dense", mb, iters, master);
    fflush(stdout);

    em_ml_logreg_opts o;
    em_ml_logreg_defaults(&o);
    o.max_iter = iters;
    o.tol = 0;
    o.step = 1.0;
    timing tm = {calloc((size_t)iters + 1, sizeof(double)), 0, iters + 1};
    o.progress = on_iter;
    o.progress_ctx = &tm;
    em_ml_model *m = NULL;
    double t1 = now();
    tm.t[tm.n++] = t1;
    int rc = em_ml_logreg_train(d, &o, &m);
    double t_train = now() - t1;
    if (rc) {
        free(tm.t);
        flat_free(&f);
        em_ml_free(d);
        return rc;
    }
    /* Iteration times: the first callback comes after two passes (the
     * starting point and the first step); later ones one pass apart. */
    int ni = tm.n - 2;
    double *dt = malloc(sizeof(double) * (size_t)(ni > 0 ? ni : 1)), per_iter;
    for (int i = 0; i < ni; i++) dt[i] = tm.t[i + 2] - tm.t[i + 1];
    double median;
    if (ni > 0) {
        qsort(dt, (size_t)ni, sizeof(double), cmp_f64);
        per_iter = dt[0];
        median = dt[ni / 2];
    } else {
        per_iter = median = t_train / (iters + 1);
    }
    free(dt);
    free(tm.t);

    /* The check: the loss at the trained weights, both ways. */
    double *g = malloc(sizeof(double) * (size_t)(cols + 1)), loss_em, loss_c;
    rc = em_ml_logreg_loss_grad(d, m->w, m->b, &loss_em, g);
    loss_c = fused_pass(&f, m->w, m->b, 2, g);
    free(g);
    if (rc || !(fabs(loss_em - loss_c) <= 1e-9 * fabs(loss_c))) {
        fprintf(stderr, "logreg bench: losses differ: ember %.17g, C %.17g\n", loss_em, loss_c);
        rc = -1;
    }

    double c1 = fused_time(&f, 1, 3), c2 = fused_time(&f, 2, 3), bandwidth = read_bandwidth();
    double bound = flat_bytes(&f) / bandwidth;
    printf("  ember %-9s %8.1f ms/iter  %12.0f samples/s   (median iteration %.1f ms; training %.2f s for %d "
           "iterations + 1 pass; data made and cached in %.2f s, copied for C in %.2f s; final loss %.5f)\n",
           master, per_iter * 1e3, (double)rows * iters / t_train, median * 1e3, t_train, iters, t_load, t_flat,
           m->loss);
    printf("  C fused, 1 thread  %8.1f ms/pass  %12.0f samples/s\n", c1 * 1e3, (double)rows / c1);
    printf("  C fused, 2 threads %8.1f ms/pass  %12.0f samples/s\n", c2 * 1e3, (double)rows / c2);
    printf("  memory-read bound  %8.1f ms/pass  %12.0f samples/s   (%.0f MB at %.1f GB/s)\n", bound * 1e3,
           (double)rows / bound, mb, bandwidth / 1e9);
    printf("  ember / C 2 threads = %.2f, ember / bound = %.2f\n", per_iter / c2, per_iter / bound);
    fflush(stdout);
    em_ml_model_free(m);
    flat_free(&f);
    em_ml_free(d);
    return rc;
}

static void usage(void) {
    fprintf(stderr, "usage: logreg [--master M] [--wide RxC] [--tall RxC] [--sparse RxC] [--density D] [--iters N]\n"
                    "              [--only wide|tall|sparse]\n");
    exit(2);
}

static void shape(const char *s, int64_t *r, int64_t *c) {
    long long a, b;
    if (sscanf(s, "%lldx%lld", &a, &b) != 2 || a < 1 || b < 1) usage();
    *r = a;
    *c = b;
}

int main(int argc, char **argv) {
    const char *master = "local[2]", *only = NULL;
    int64_t wr = 10000, wc = 10000, tr = 1000000, tc = 100, sr = 1000000, sc = 10000;
    double density = 0.01;
    int iters = 10;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) usage();
        if (!strcmp(argv[i], "--master")) master = argv[++i];
        else if (!strcmp(argv[i], "--wide")) shape(argv[++i], &wr, &wc);
        else if (!strcmp(argv[i], "--tall")) shape(argv[++i], &tr, &tc);
        else if (!strcmp(argv[i], "--sparse")) shape(argv[++i], &sr, &sc);
        else if (!strcmp(argv[i], "--density")) density = atof(argv[++i]);
        else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only")) only = argv[++i];
        else usage();
    }
    if (iters < 1 || !(density > 0 && density < 1)) usage();
    em_conf *conf = em_conf_new();
    em_conf_set(conf, "ember.progress", "false");
    em_ctx *ctx = em_open(master, conf);
    em_conf_free(conf);
    if (!ctx) {
        fprintf(stderr, "em_open: %s\n", em_errmsg());
        return 1;
    }
    int rc = 0;
    if (!rc && (!only || !strcmp(only, "wide"))) rc = run_case(ctx, "wide", wr, wc, 1, iters, master);
    if (!rc && (!only || !strcmp(only, "tall"))) rc = run_case(ctx, "tall", tr, tc, 1, iters, master);
    if (!rc && (!only || !strcmp(only, "sparse"))) rc = run_case(ctx, "sparse", sr, sc, density, iters, master);
    if (rc) fprintf(stderr, "logreg bench: %s\n", rc < 0 ? em_errmsg() : "failed");
    em_close(ctx);
    return rc ? 1 : 0;
}
