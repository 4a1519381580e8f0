/*
 * multinom.c -- multinomial (softmax) logistic regression, Spark's
 * LogisticRegression with family "multinomial": K classes, a K x cols
 * coefficient matrix and K intercepts, trained full batch.
 *
 * As for the binary model (logreg.c), one evaluation of the objective is
 * one job: the parameters (K x cols coefficients row-major, then the K
 * intercepts) are broadcast, every block adds its softmax loss and
 * gradient (kernels.c: two dgemms per row tile) to an accumulator record
 * with em_tree_aggregate, and the driver divides by the row count.  The
 * accumulator is K x cols + K + 2 doubles: the coefficient gradient, the
 * intercept gradient, the loss sum and the row count.  The optimizers
 * (lbfgs.c) run on the driver over that objective.
 *
 * The softmax is over-parameterized: adding one vector to every class's
 * coefficients (or one constant to every intercept) changes no
 * probability.  Spark centers its solution; here, starting from zero,
 * every gradient step keeps the classes' coefficients and intercepts
 * summing to zero (the residuals of a row sum to zero over the classes,
 * and the L2 term is proportional to the point), so the iterates stay
 * centered without a separate step, to rounding.
 *
 * Labels are checked once per training by a job over the labels alone
 * (ml_scan_labels), which can name the bad row by its place in the data
 * set: a block knows only its rows, so the driver adds the row counts of
 * the blocks before.  (A training that may be binary runs it only when its
 * first pass found a label other than 0 or 1: see logreg.c.)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "ctx.h"
#include "data.h"
#include "err.h"
#include "kernels.h"
#include "lbfgs.h"
#include "multinom.h"

/* ------------------------------------------------------- label scan */

/* What a block's labels hold: its rows, the largest label, and the first
 * bad label (bad_row -1: none). */
typedef struct label_scan {
    int64_t rows;
    double max;
    int64_t bad_row;
    double bad_label;
} label_scan;

/* A map over the blocks, one label_scan each.  Not a map_partitions: that
 * would copy each cached partition into one buffer before calling it (a
 * pass writing as many fresh pages as the data set holds, which on a
 * 10k x 10k set took longer than ten training iterations); a map reads
 * the cached blocks in place. */
int ml_label_scan(const em_rec *r, em_emitter *out, const void *arg);
int ml_label_scan(const em_rec *r, em_emitter *out, const void *arg) {
    int limit;
    memcpy(&limit, arg, sizeof limit);
    label_scan s = {0, 0, -1, 0};
    ml_block b;
    ebuf scratch = EBUF_INIT;
    int rc = ml_block_view_unchecked(r, &b, &scratch); /* labels only */
    if (rc) {
        ebuf_free(&scratch);
        return rc;
    }
    for (int64_t i = 0; i < b.rows && s.bad_row < 0; i++) {
        double y = b.y[i];
        if (!(y >= 0 && y < limit) || y != (double)(int)y) {
            s.bad_row = i;
            s.bad_label = y;
        } else if (y > s.max) {
            s.max = y;
        }
    }
    s.rows = b.rows;
    ebuf_free(&scratch);
    return em_emit(out, &s, sizeof s);
}

int ml_scan_labels(em_ml_data *d, int limit, int *classes) {
    rdd_scope internal; /* the scan's RDD is its own */
    em_batch *res = NULL;
    ctx_scope_begin(&internal);
    em_rdd *scan = em_map(d->blocks, ml_label_scan, &limit, sizeof limit);
    int rc = scan ? em_collect(scan, &res) : em__lasterr();
    ctx_scope_end(&internal);
    if (rc) return rc;
    int64_t before = 0;
    double max = 0;
    size_t it = 0;
    em_rec r;
    while (!rc && em_batch_next(res, &it, &r) == 1) { /* block order */
        label_scan s;
        if (r.vlen != sizeof s) {
            rc = em__seterr(EM_ECORRUPT, "logreg: bad label scan record");
            break;
        }
        memcpy(&s, r.val, sizeof s);
        if (s.bad_row >= 0) {
            if (limit == 2)
                rc = em__seterr(EM_EINVAL, "logreg: row %lld has label %.17g (labels must be 0 or 1)",
                                (long long)(before + s.bad_row), s.bad_label);
            else
                rc = em__seterr(EM_EINVAL, "logreg: row %lld has label %.17g (class labels must be integers 0 to %d)",
                                (long long)(before + s.bad_row), s.bad_label, limit - 1);
        }
        before += s.rows;
        if (s.max > max) max = s.max;
    }
    em_batch_free(res);
    if (!rc && before == 0) rc = em__seterr(EM_EEMPTY, "logreg: the data set has no rows");
    if (!rc) *classes = max >= 1 ? (int)max + 1 : 2;
    return rc;
}

/* ------------------------------------------------ loss and gradient */

typedef struct sm_arg {
    em_bcast w;     /* K x cols coefficients, then K intercepts */
    int64_t cols;
    int32_t K;
} sm_arg;

/* seq: acc + the block's softmax loss and gradient. */
int ml_sm_seq(const em_rec *acc, const em_rec *r, em_emitter *out, const void *arg);
int ml_sm_seq(const em_rec *acc, const em_rec *r, em_emitter *out, const void *arg) {
    sm_arg a;
    memcpy(&a, arg, sizeof a);
    size_t np = (size_t)a.K * (size_t)a.cols + (size_t)a.K, n = np + 2, wlen = 0;
    const double *w = em_bcast_value(a.w, &wlen);
    if (!w || wlen != sizeof(double) * np) return em_fail("logreg: weights not broadcast");
    /* The zero is the empty record, as in logreg.c: an empty accumulator
     * is all zeros. */
    if (acc->vlen && acc->vlen != sizeof(double) * n) return em_fail("logreg: bad accumulator (%zu bytes)", acc->vlen);
    ml_block b;
    ebuf scratch = EBUF_INIT;
    int rc = ml_block_view_unchecked(r, &b, &scratch); /* the kernel checks CSR indexes */
    if (rc) goto out;
    if (b.cols > a.cols) {
        rc = em_fail("logreg: a block has %lld columns, the model %lld", (long long)b.cols, (long long)a.cols);
        goto out;
    }
    double *s = acc->vlen ? malloc(sizeof(double) * n) : calloc(n, sizeof(double));
    if (!s) {
        rc = em_fail("logreg: out of memory");
        goto out;
    }
    if (acc->vlen) memcpy(s, acc->val, sizeof(double) * n);
    ml_blas_init();
    size_t kc = (size_t)a.K * (size_t)a.cols;
    rc = ml_block_softmax_loss_grad(&b, a.K, a.cols, w, w + kc, s, s + kc, s + np);
    if (rc) rc = em_fail("logreg: %s", em_errmsg());
    s[np + 1] += (double)b.rows;
    if (!rc) rc = em_emit(out, s, sizeof(double) * n);
    free(s);
out:
    ebuf_free(&scratch);
    return rc;
}

int ml_sum_f64(const em_rec *x, const em_rec *y, em_emitter *out, const void *arg); /* logreg.c */

/* The mean loss and gradient at x (K x cols coefficients, K intercepts). */
static int sm_loss_grad(em_ml_data *d, int K, const double *x, int depth, double *loss, double *grad) {
    size_t np = (size_t)K * (size_t)d->cols + (size_t)K, n = np + 2;
    sm_arg a = {em_broadcast(d->ctx, x, sizeof(double) * np), d->cols, K};
    if (!a.w.id) return em__lasterr();
    em_rec z = {NULL, 0, "", 0}, r; /* the empty zero */
    em_batch *res = NULL;
    int rc = em_tree_aggregate(d->blocks, &z, ml_sm_seq, ml_sum_f64, &a, sizeof a, depth, &res);
    em_bcast_destroy(d->ctx, a.w);
    if (!rc && (rc = em_batch_get(res, 0, &r)) == 0 && r.vlen == 0)
        rc = em__seterr(EM_EEMPTY, "logreg: the data set has no rows");
    else if (!rc && r.vlen != sizeof(double) * n)
        rc = em__seterr(EM_ECORRUPT, "logreg: bad aggregate");
    if (!rc) {
        double tail[2];
        memcpy(grad, r.val, sizeof(double) * np);
        memcpy(tail, (const uint8_t *)r.val + sizeof(double) * np, sizeof tail);
        if (!(tail[1] > 0)) {
            rc = em__seterr(EM_EEMPTY, "logreg: the data set has no rows");
        } else {
            for (size_t i = 0; i < np; i++) grad[i] /= tail[1];
            *loss = tail[0] / tail[1];
        }
    }
    em_batch_free(res);
    return rc;
}

static int softmax_loss_grad_unguarded(em_ml_data *d, int K, const double *w, const double *b, double *loss,
                                       double *grad) {
    if (!d || !w || !b || !loss || !grad) return em__seterr(EM_EINVAL, "em_ml_softmax_loss_grad: NULL argument");
    if (K < 2 || K > EM_ML_MAX_CLASSES)
        return em__seterr(EM_EINVAL, "em_ml_softmax_loss_grad: %d classes (2 to %d)", K, EM_ML_MAX_CLASSES);
    size_t kc = (size_t)K * (size_t)d->cols;
    double *x = malloc(sizeof(double) * (kc + (size_t)K));
    if (!x) return em__seterr(EM_ENOMEM, "mllib: out of memory");
    memcpy(x, w, sizeof(double) * kc);
    memcpy(x + kc, b, sizeof(double) * (size_t)K);
    int rc = sm_loss_grad(d, K, x, 2, loss, grad);
    free(x);
    return rc;
}

int em_ml_softmax_loss_grad(em_ml_data *d, int classes, const double *w, const double *b, double *loss,
                            double *grad) {
    CTX_GUARDED(d ? d->ctx : NULL, softmax_loss_grad_unguarded(d, classes, w, b, loss, grad));
}

/* ------------------------------------------------------------ training */

typedef struct sm_objective {
    em_ml_data *d;
    double l2;
    int K, intercept, depth;
} sm_objective;

/* f = mean softmax loss + 0.5 * l2 * |W|^2 (intercepts excluded); the
 * intercepts' gradient is zeroed without an intercept, so they stay 0. */
static int sm_objective_fn(const double *x, double *f, double *g, void *ctx) {
    sm_objective *o = ctx;
    size_t kc = (size_t)o->K * (size_t)o->d->cols;
    double loss = 0, ww = 0;
    int rc = sm_loss_grad(o->d, o->K, x, o->depth, &loss, g);
    if (rc) return rc;
    for (size_t j = 0; j < kc; j++) {
        ww += x[j] * x[j];
        g[j] += o->l2 * x[j];
    }
    if (!o->intercept) memset(g + kc, 0, sizeof(double) * (size_t)o->K);
    *f = loss + 0.5 * o->l2 * ww;
    return 0;
}

int ml_softmax_train(em_ml_data *d, const em_ml_logreg_opts *o, int K, em_ml_model **out) {
    size_t kc = (size_t)K * (size_t)d->cols, np = kc + (size_t)K;
    em_ml_model *m = calloc(1, sizeof *m);
    double *x = calloc(np, sizeof(double)), *b = malloc(sizeof(double) * (size_t)K);
    if (!m || !x || !b) {
        free(m);
        free(x);
        free(b);
        return em__seterr(EM_ENOMEM, "mllib: out of memory (%d x %lld coefficients)", K, (long long)d->cols);
    }
    sm_objective ob = {d, o->l2, K, o->intercept != 0, o->depth ? o->depth : 2};
    ml_optim op = {o->max_iter, o->step, o->history ? o->history : 10, o->tol, o->progress, o->progress_ctx};
    int rc = o->optimizer == EM_ML_GD ? ml_gd((int64_t)np, x, sm_objective_fn, &ob, &op, &m->iterations, &m->loss)
                                      : ml_lbfgs((int64_t)np, x, sm_objective_fn, &ob, &op, &m->iterations, &m->loss);
    if (rc) {
        free(m);
        free(x);
        free(b);
        return rc;
    }
    memcpy(b, x + kc, sizeof(double) * (size_t)K);
    m->cols = d->cols;
    m->w = x; /* K x cols; the intercepts after them are copied out */
    m->classes = K;
    m->intercepts = b;
    *out = m;
    return 0;
}

static int num_classes_unguarded(em_ml_data *d, int *classes) {
    if (!d || !classes) return em__seterr(EM_EINVAL, "em_ml_num_classes: NULL argument");
    return ml_scan_labels(d, EM_ML_MAX_CLASSES, classes);
}

int em_ml_num_classes(em_ml_data *d, int *classes) {
    CTX_GUARDED(d ? d->ctx : NULL, num_classes_unguarded(d, classes));
}
