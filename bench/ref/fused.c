/*
 * fused.c -- the fair references of bench/logreg (see fused.h).
 *
 * Dense pass.  Four rows at a time: the four margins in one sweep over the
 * columns (w loaded once per four rows, eight independent vector sums),
 * then the four residuals, then g += r0 x0 + r1 x1 + r2 x2 + r3 x3 in a
 * second sweep that finds the four rows still in L2 (4 x 80 KB for 10,000
 * columns).  Memory sees each row once, and w and g stay in cache.  Written
 * with GCC vector types so -march=native picks the widest registers.
 * Sparse (CSR) pass: one row at a time, the margin, then the scatter.
 * Threads split the rows in contiguous halves and sum their gradients.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fused.h"

typedef double v4 __attribute__((vector_size(32)));

static inline v4 ld(const double *p) {
    v4 v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void st(double *p, v4 v) { memcpy(p, &v, sizeof v); }
static inline double hsum(v4 a, v4 b) {
    v4 s = a + b;
    return (s[0] + s[1]) + (s[2] + s[3]);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Loss of one row at margin m, label y; its residual in *r. */
static inline double row_loss(double m, double y, double *r) {
    double e = exp(-fabs(m)), p = m >= 0 ? 1 / (1 + e) : e / (1 + e);
    *r = p - y;
    return log1p(e) + (m > 0 ? m : 0) - y * m;
}

typedef struct part {
    const fused_data *d;
    const double *w;
    double b;
    int64_t r0, r1;
    double *g; /* cols + 1 */
    double loss;
} part;

static void dense_rows(part *p) {
    const fused_data *d = p->d;
    const int64_t n = d->cols, n8 = n & ~(int64_t)7, n4 = n & ~(int64_t)3;
    const double *restrict w = p->w;
    double *restrict g = p->g;
    double loss = 0, gb = 0;
    int64_t i = p->r0;
    for (; i + 4 <= p->r1; i += 4) {
        const double *x0 = d->x + i * n, *x1 = x0 + n, *x2 = x1 + n, *x3 = x2 + n;
        v4 a0 = {0}, a1 = {0}, b0 = {0}, b1 = {0}, c0 = {0}, c1 = {0}, e0 = {0}, e1 = {0};
        for (int64_t j = 0; j < n8; j += 8) {
            v4 w0 = ld(w + j), w1 = ld(w + j + 4);
            a0 += ld(x0 + j) * w0, a1 += ld(x0 + j + 4) * w1;
            b0 += ld(x1 + j) * w0, b1 += ld(x1 + j + 4) * w1;
            c0 += ld(x2 + j) * w0, c1 += ld(x2 + j + 4) * w1;
            e0 += ld(x3 + j) * w0, e1 += ld(x3 + j + 4) * w1;
        }
        double m[4] = {hsum(a0, a1), hsum(b0, b1), hsum(c0, c1), hsum(e0, e1)}, r[4];
        for (int64_t j = n8; j < n; j++) {
            m[0] += x0[j] * w[j];
            m[1] += x1[j] * w[j];
            m[2] += x2[j] * w[j];
            m[3] += x3[j] * w[j];
        }
        for (int k = 0; k < 4; k++) {
            loss += row_loss(m[k] + p->b, d->y[i + k], &r[k]);
            gb += r[k];
        }
        v4 q0 = {r[0], r[0], r[0], r[0]}, q1 = {r[1], r[1], r[1], r[1]}, q2 = {r[2], r[2], r[2], r[2]},
           q3 = {r[3], r[3], r[3], r[3]};
        for (int64_t j = 0; j < n4; j += 4)
            st(g + j, ld(g + j) + q0 * ld(x0 + j) + q1 * ld(x1 + j) + q2 * ld(x2 + j) + q3 * ld(x3 + j));
        for (int64_t j = n4; j < n; j++) g[j] += r[0] * x0[j] + r[1] * x1[j] + r[2] * x2[j] + r[3] * x3[j];
    }
    for (; i < p->r1; i++) { /* the last rows, one at a time */
        const double *x = d->x + i * n;
        double m = p->b, r;
        for (int64_t j = 0; j < n; j++) m += x[j] * w[j];
        loss += row_loss(m, d->y[i], &r);
        gb += r;
        for (int64_t j = 0; j < n; j++) g[j] += r * x[j];
    }
    g[n] = gb;
    p->loss = loss;
}

static void csr_rows(part *p) {
    const fused_data *d = p->d;
    const double *restrict w = p->w;
    double *restrict g = p->g;
    double loss = 0, gb = 0;
    for (int64_t i = p->r0; i < p->r1; i++) {
        int64_t lo = d->indptr[i], hi = d->indptr[i + 1];
        double m0 = 0, m1 = 0, r;
        int64_t k = lo;
        for (; k + 2 <= hi; k += 2) {
            m0 += d->val[k] * w[d->idx[k]];
            m1 += d->val[k + 1] * w[d->idx[k + 1]];
        }
        if (k < hi) m0 += d->val[k] * w[d->idx[k]];
        loss += row_loss(m0 + m1 + p->b, d->y[i], &r);
        gb += r;
        for (k = lo; k < hi; k++) g[d->idx[k]] += r * d->val[k];
    }
    g[d->cols] = gb;
    p->loss = loss;
}

static void *run_part(void *arg) {
    part *p = arg;
    memset(p->g, 0, sizeof(double) * (size_t)(p->d->cols + 1));
    if (p->d->indptr) csr_rows(p);
    else dense_rows(p);
    return NULL;
}

double fused_pass(const fused_data *d, const double *w, double b, int nthreads, double *g) {
    part ps[8];
    pthread_t th[8];
    if (nthreads < 1) nthreads = 1;
    if (nthreads > 8) nthreads = 8;
    for (int t = 0; t < nthreads; t++) {
        /* Cut at multiples of 4 rows, so each part runs whole groups. */
        int64_t r0 = d->rows * t / nthreads / 4 * 4, r1 = t + 1 == nthreads ? d->rows : d->rows * (t + 1) / nthreads / 4 * 4;
        ps[t] = (part){d, w, b, r0, r1, malloc(sizeof(double) * (size_t)(d->cols + 1)), 0};
        if (t) pthread_create(&th[t], NULL, run_part, &ps[t]);
    }
    run_part(&ps[0]);
    double loss = ps[0].loss;
    memcpy(g, ps[0].g, sizeof(double) * (size_t)(d->cols + 1));
    for (int t = 1; t < nthreads; t++) {
        pthread_join(th[t], NULL);
        loss += ps[t].loss;
        for (int64_t j = 0; j <= d->cols; j++) g[j] += ps[t].g[j];
    }
    for (int t = 0; t < nthreads; t++) free(ps[t].g);
    for (int64_t j = 0; j <= d->cols; j++) g[j] /= (double)d->rows;
    return loss / (double)d->rows;
}

double fused_time(const fused_data *d, int nthreads, int runs) {
    double *w = calloc((size_t)(d->cols + 1), sizeof(double)), *g = malloc(sizeof(double) * (size_t)(d->cols + 1));
    double best = 1e30;
    for (int k = 0; k < runs; k++) {
        double t0 = now();
        fused_pass(d, w, w[d->cols], nthreads, g);
        for (int64_t j = 0; j <= d->cols; j++) w[j] -= g[j];
        double t = now() - t0;
        if (t < best) best = t;
    }
    free(w);
    free(g);
    return best;
}

typedef struct span {
    const double *p;
    size_t n;
    double sum;
} span;

static void *stream_sum(void *arg) {
    span *s = arg;
    v4 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    for (size_t i = 0; i + 16 <= s->n; i += 16) {
        a0 += ld(s->p + i);
        a1 += ld(s->p + i + 4);
        a2 += ld(s->p + i + 8);
        a3 += ld(s->p + i + 12);
    }
    s->sum = hsum(a0 + a1, a2 + a3);
    return NULL;
}

static volatile double fused_sink; /* keeps the read sums */

double read_bandwidth(void) {
    size_t n = (size_t)1 << 27; /* doubles: 1 GiB */
    double *buf = malloc(n * sizeof(double)), best = 1e30;
    if (!buf) return 0;
    for (size_t i = 0; i < n; i++) buf[i] = (double)(i & 1023);
    for (int k = 0; k < 5; k++) {
        span s[2] = {{buf, n / 2, 0}, {buf + n / 2, n / 2, 0}};
        pthread_t th;
        double t0 = now();
        pthread_create(&th, NULL, stream_sum, &s[1]);
        stream_sum(&s[0]);
        pthread_join(th, NULL);
        double t = now() - t0;
        fused_sink += s[0].sum + s[1].sum;
        if (t < best) best = t;
    }
    free(buf);
    return (double)n * sizeof(double) / best;
}
