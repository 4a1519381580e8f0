/*
 * lbfgs.c -- gradient descent and L-BFGS on the driver (see lbfgs.h).
 *
 * Every evaluation of the objective is a pass over the data set, so the
 * optimizers are written to evaluate as little as possible: gradient
 * descent evaluates once per iteration (after the step, which gives both
 * the loss to report and the next gradient), and the L-BFGS line search
 * usually accepts its first trial step, so it too costs one pass per
 * iteration.  The vector arithmetic here is O(n * history) per iteration,
 * nothing next to a pass.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"
#include "lbfgs.h"

#define C1 1e-4          /* Armijo sufficient decrease */
#define MAX_HALVINGS 40  /* line search trials before giving up */
#define MIN_SY 1e-10     /* curvature pairs with s.y at or below are skipped */

static double dot(int64_t n, const double *a, const double *b) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static double norm(int64_t n, const double *a) { return sqrt(dot(n, a, a)); }

static int converged(int64_t n, const double *x_new, double delta, double tol) {
    double xn = norm(n, x_new);
    return delta < tol * (xn > 1 ? xn : 1);
}

int ml_gd(int64_t n, double *x, ml_objective_fn fn, void *ctx, const ml_optim *o, int *iters, double *fx) {
    double *g = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!g) return em__seterr(EM_ENOMEM, "mllib: out of memory");
    double f;
    int rc = fn(x, &f, g, ctx);
    *iters = 0;
    for (int k = 1; !rc && k <= o->max_iter; k++) {
        for (int64_t i = 0; i < n; i++) x[i] -= o->step * g[i];
        double delta = o->step * norm(n, g);
        if ((rc = fn(x, &f, g, ctx))) break;
        *iters = k;
        if (o->progress) o->progress(k, f, o->progress_ctx);
        if (converged(n, x, delta, o->tol)) break;
    }
    *fx = f;
    free(g);
    return rc;
}

/* The L-BFGS state: a ring of the last m pairs (s, y) with rho = 1 / s.y. */
typedef struct hist {
    int m, len, head; /* head: slot of the newest pair */
    double *s, *y, *rho, *alpha;
} hist;

/* d = -H g by the two-loop recursion, H0 = (s.y / y.y) I from the newest
 * pair (I when there is none). */
static void direction(int64_t n, const hist *h, const double *g, double *d) {
    for (int64_t i = 0; i < n; i++) d[i] = -g[i];
    for (int j = 0; j < h->len; j++) { /* newest to oldest */
        int k = (h->head - j + h->m) % h->m;
        const double *s = h->s + (size_t)k * (size_t)n;
        h->alpha[k] = h->rho[k] * dot(n, s, d);
        const double *y = h->y + (size_t)k * (size_t)n;
        for (int64_t i = 0; i < n; i++) d[i] -= h->alpha[k] * y[i];
    }
    if (h->len) {
        const double *y = h->y + (size_t)h->head * (size_t)n;
        double gamma = 1 / (h->rho[h->head] * dot(n, y, y));
        for (int64_t i = 0; i < n; i++) d[i] *= gamma;
    }
    for (int j = h->len - 1; j >= 0; j--) { /* oldest to newest */
        int k = (h->head - j + h->m) % h->m;
        const double *y = h->y + (size_t)k * (size_t)n;
        double beta = h->rho[k] * dot(n, y, d);
        const double *s = h->s + (size_t)k * (size_t)n;
        for (int64_t i = 0; i < n; i++) d[i] += (h->alpha[k] - beta) * s[i];
    }
}

int ml_lbfgs(int64_t n, double *x, ml_objective_fn fn, void *ctx, const ml_optim *o, int *iters, double *fx) {
    hist h = {o->history > 0 ? o->history : 10, 0, -1, NULL, NULL, NULL, NULL};
    size_t nn = (size_t)(n ? n : 1), hm = (size_t)h.m, hbytes;
    if (__builtin_mul_overflow(nn * sizeof(double), hm, &hbytes))
        return em__seterr(EM_EINVAL, "L-BFGS: history %d of %zu-element vectors is too large", h.m, nn);
    double *g = malloc(sizeof(double) * nn), *d = malloc(sizeof(double) * nn);
    double *xn = malloc(sizeof(double) * nn), *gn = malloc(sizeof(double) * nn);
    h.s = malloc(sizeof(double) * nn * hm);
    h.y = malloc(sizeof(double) * nn * hm);
    h.rho = malloc(sizeof(double) * hm);
    h.alpha = malloc(sizeof(double) * hm);
    double f = NAN, fnew;
    int rc = 0;
    *iters = 0;
    if (!g || !d || !xn || !gn || !h.s || !h.y || !h.rho || !h.alpha) {
        rc = em__seterr(EM_ENOMEM, "mllib: out of memory for L-BFGS history");
        goto out;
    }
    if ((rc = fn(x, &f, g, ctx))) goto out;
    for (int k = 1; k <= o->max_iter; k++) {
        double gnorm = norm(n, g);
        if (!(gnorm > 0)) break; /* a stationary point (or a NaN gradient) */
        direction(n, &h, g, d);
        double gd = dot(n, g, d);
        if (!(gd < 0)) { /* not a descent direction: forget the history */
            h.len = 0;
            for (int64_t i = 0; i < n; i++) d[i] = -g[i];
            gd = -gnorm * gnorm;
        }
        double t = h.len ? 1 : 1 / gnorm;
        int ok = 0;
        for (int tries = 0; tries < MAX_HALVINGS; tries++, t *= 0.5) {
            for (int64_t i = 0; i < n; i++) xn[i] = x[i] + t * d[i];
            if ((rc = fn(xn, &fnew, gn, ctx))) goto out;
            if (fnew <= f + C1 * t * gd) {
                ok = 1;
                break;
            }
        }
        if (!ok) break; /* no decrease left at this precision */
        /* The pair s = xn - x, y = gn - g goes into the next slot of the
         * ring (over the oldest pair) only if it has curvature. */
        double sy = 0, ss = 0;
        for (int64_t i = 0; i < n; i++) {
            sy += (xn[i] - x[i]) * (gn[i] - g[i]);
            ss += (xn[i] - x[i]) * (xn[i] - x[i]);
        }
        double delta = sqrt(ss);
        if (sy > MIN_SY) {
            int slot = (h.head + 1) % h.m;
            double *s = h.s + (size_t)slot * nn, *y = h.y + (size_t)slot * nn;
            for (int64_t i = 0; i < n; i++) {
                s[i] = xn[i] - x[i];
                y[i] = gn[i] - g[i];
            }
            h.rho[slot] = 1 / sy;
            h.head = slot;
            if (h.len < h.m) h.len++;
        }
        memcpy(x, xn, sizeof(double) * (size_t)n);
        memcpy(g, gn, sizeof(double) * (size_t)n);
        f = fnew;
        *iters = k;
        if (o->progress) o->progress(k, f, o->progress_ctx);
        if (converged(n, x, delta, o->tol)) break;
    }
out:
    *fx = f;
    free(g);
    free(d);
    free(xn);
    free(gn);
    free(h.s);
    free(h.y);
    free(h.rho);
    free(h.alpha);
    return rc;
}
