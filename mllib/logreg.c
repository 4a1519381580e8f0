/*
 * logreg.c -- binary logistic regression: the distributed loss and
 * gradient, training (which hands multinomial models to multinom.c), and
 * the model's prediction (the text form is modelfile.c).
 *
 * One evaluation of the objective is one job: the weights (and the
 * intercept after them) are broadcast, every block adds its log loss and
 * gradient to an accumulator record with em_tree_aggregate, and the driver
 * divides the sums by the row count.  The accumulator is cols + 3 doubles:
 * the gradient, d/db, the loss sum and the row count.  The optimizers
 * (lbfgs.c) run on the driver over that objective.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "block.h"
#include "data.h"
#include "err.h"
#include "kernels.h"
#include "lbfgs.h"
#include "multinom.h"

/* The captured state of the aggregate functions.  tally: the first pass of
 * a training, which also stands for the label scan (see first_pass): a
 * block with a label other than 0 or 1 is counted in one more accumulator
 * slot, and adds nothing else, instead of failing the job. */
typedef struct lg_arg {
    em_bcast w;     /* cols weights then the intercept */
    int64_t cols;
    int64_t tally;
} lg_arg;

/* seq: acc + the block's loss and gradient. */
int ml_lg_seq(const em_rec *acc, const em_rec *r, em_emitter *out, const void *arg);
int ml_lg_seq(const em_rec *acc, const em_rec *r, em_emitter *out, const void *arg) {
    lg_arg a;
    memcpy(&a, arg, sizeof a);
    size_t n = (size_t)a.cols + 3 + (a.tally != 0), wlen = 0;
    const double *w = em_bcast_value(a.w, &wlen);
    if (!w || wlen != sizeof(double) * (size_t)(a.cols + 1)) return em_fail("logreg: weights not broadcast");
    /* The zero is the empty record (a full-width zero would travel in every
     * task description): an empty accumulator is all zeros. */
    if (acc->vlen && acc->vlen != sizeof(double) * n) return em_fail("logreg: bad accumulator (%zu bytes)", acc->vlen);
    ml_block b;
    ebuf scratch = EBUF_INIT;
    int rc = ml_block_view_unchecked(r, &b, &scratch); /* the kernel checks CSR indexes */
    if (rc) goto out;
    /* The text readers reject other labels naming the line; this catches
     * the other sources (dense files, arrays) before the loss goes wrong
     * (a label of 2 gives a negative log loss).  One pass over the labels
     * is nothing next to the pass over the features. */
    int64_t bad = -1;
    for (int64_t i = 0; i < b.rows && bad < 0; i++)
        if (b.y[i] != 0 && b.y[i] != 1) bad = i;
    if (b.cols > a.cols && (!a.tally || bad < 0)) { /* tally: the label scan's error comes first */
        rc = em_fail("logreg: a block has %lld columns, the model %lld", (long long)b.cols, (long long)a.cols);
        goto out;
    }
    if (bad >= 0 && !a.tally) {
        rc = em_fail("logreg: a row has label %.17g (labels must be 0 or 1)", b.y[bad]);
        goto out;
    }
    double *s = acc->vlen ? malloc(sizeof(double) * n) : calloc(n, sizeof(double));
    if (!s) {
        rc = em_fail("logreg: out of memory");
        goto out;
    }
    if (acc->vlen) memcpy(s, acc->val, sizeof(double) * n);
    if (bad >= 0) { /* tally: the driver scans the labels to say what they are */
        s[a.cols + 3] += 1;
    } else {
        ml_blas_init();
        rc = ml_block_loss_grad(&b, w, w[a.cols], s, s + a.cols, s + a.cols + 1);
        s[a.cols + 2] += (double)b.rows;
    }
    if (!rc) rc = em_emit(out, s, sizeof(double) * n);
    free(s);
out:
    ebuf_free(&scratch);
    return rc;
}

/* comb: the sum of two accumulators (or of any two equal-length vectors of
 * doubles: metrics.c uses it too). */
int ml_sum_f64(const em_rec *x, const em_rec *y, em_emitter *out, const void *arg);
int ml_sum_f64(const em_rec *x, const em_rec *y, em_emitter *out, const void *arg) {
    if (!x->vlen) return em_emit(out, y->val, y->vlen); /* the empty zero */
    if (!y->vlen) return em_emit(out, x->val, x->vlen);
    if (x->vlen != y->vlen || x->vlen % sizeof(double)) return em_fail("mllib: accumulators of different sizes");
    size_t n = x->vlen / sizeof(double);
    double *s = malloc(x->vlen ? x->vlen : 1);
    if (!s) return em_fail("mllib: out of memory");
    memcpy(s, x->val, x->vlen);
    const uint8_t *p = y->val;
    for (size_t i = 0; i < n; i++) {
        double v;
        memcpy(&v, p + i * sizeof v, sizeof v);
        s[i] += v;
    }
    int rc = em_emit(out, s, x->vlen);
    free(s);
    return rc;
}

/* The mean loss and gradient at wb (cols weights, then the intercept).
 * With tally non-NULL, the first pass of a training: *tally = the blocks
 * holding a label other than 0 or 1, which added nothing (when it is not
 * 0, *loss and grad are left as they are). */
static int loss_grad(em_ml_data *d, const double *wb, int depth, double *loss, double *grad, int64_t *tally) {
    size_t n = (size_t)d->cols + 3 + (tally != NULL);
    lg_arg a = {em_broadcast(d->ctx, wb, sizeof(double) * (size_t)(d->cols + 1)), d->cols, tally != NULL};
    if (!a.w.id) return em__lasterr();
    em_rec z = {NULL, 0, "", 0}; /* the empty zero: see ml_lg_seq */
    em_batch *res = NULL;
    em_rec r;
    int rc = em_tree_aggregate(d->blocks, &z, ml_lg_seq, ml_sum_f64, &a, sizeof a, depth, &res);
    em_bcast_destroy(d->ctx, a.w);
    if (!rc && (rc = em_batch_get(res, 0, &r)) == 0 && r.vlen == 0)
        rc = em__seterr(EM_EEMPTY, "logreg: the data set has no rows"); /* still the empty zero */
    else if (!rc && r.vlen != sizeof(double) * n)
        rc = em__seterr(EM_ECORRUPT, "logreg: bad aggregate");
    if (!rc && tally) { /* the blocks that added nothing, in the last slot */
        double t;
        memcpy(&t, (const uint8_t *)r.val + sizeof(double) * (n - 1), sizeof t);
        *tally = (int64_t)t;
        n--;
    }
    if (!rc && (!tally || !*tally)) { /* the gradient and d/db go straight to grad; then the loss sum and the count */
        double tail[2];
        memcpy(grad, r.val, sizeof(double) * (n - 2));
        memcpy(tail, (const uint8_t *)r.val + sizeof(double) * (n - 2), sizeof tail);
        if (!(tail[1] > 0)) {
            rc = em__seterr(EM_EEMPTY, "logreg: the data set has no rows");
        } else {
            for (size_t i = 0; i < n - 2; i++) grad[i] /= tail[1];
            *loss = tail[0] / tail[1];
        }
    }
    em_batch_free(res);
    return rc;
}

static int ml_logreg_loss_grad_unguarded(em_ml_data *d, const double *w, double b, double *loss, double *grad) {
    if (!d || (!w && d->cols) || !loss || !grad) return em__seterr(EM_EINVAL, "em_ml_logreg_loss_grad: NULL argument");
    double *wb = malloc(sizeof(double) * (size_t)(d->cols + 1));
    if (!wb) return em__seterr(EM_ENOMEM, "mllib: out of memory");
    if (d->cols) memcpy(wb, w, sizeof(double) * (size_t)d->cols);
    wb[d->cols] = b;
    int rc = loss_grad(d, wb, 2, loss, grad, NULL);
    free(wb);
    return rc;
}

int em_ml_logreg_loss_grad(em_ml_data *d, const double *w, double b, double *loss, double *grad) {
    CTX_GUARDED(d ? d->ctx : NULL, ml_logreg_loss_grad_unguarded(d, w, b, loss, grad));
}

/* ------------------------------------------------------------- training */

void em_ml_logreg_defaults(em_ml_logreg_opts *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->optimizer = EM_ML_GD;
    o->max_iter = 100;
    o->step = 1.0;
    o->l2 = 0;
    o->intercept = 1;
    o->tol = 1e-6;
    o->history = 10;
    o->depth = 2;
}

/* first_g: the mean gradient at the starting point (zero), from the first
 * pass, for the optimizer's first evaluation; NULL once used. */
typedef struct objective {
    em_ml_data *d;
    double l2;
    int intercept, depth;
    const double *first_g;
    double first_loss;
} objective;

/* f = mean log loss + 0.5 * l2 * |w|^2; the intercept's gradient is
 * zeroed when there is no intercept, so it stays at 0. */
static int lg_objective(const double *x, double *f, double *g, void *ctx) {
    objective *o = ctx;
    int64_t cols = o->d->cols;
    double loss = 0;
    int at_zero = o->first_g != NULL;
    for (int64_t j = 0; at_zero && j <= cols; j++) at_zero = x[j] == 0;
    if (at_zero) {
        memcpy(g, o->first_g, sizeof(double) * (size_t)(cols + 1));
        loss = o->first_loss;
    } else {
        int rc = loss_grad(o->d, x, o->depth, &loss, g, NULL);
        if (rc) return rc;
    }
    o->first_g = NULL;
    double ww = 0;
    for (int64_t j = 0; j < cols; j++) {
        ww += x[j] * x[j];
        g[j] += o->l2 * x[j];
    }
    if (!o->intercept) g[cols] = 0;
    *f = loss + 0.5 * o->l2 * ww;
    return 0;
}

static int ml_logreg_train_unguarded(em_ml_data *d, const em_ml_logreg_opts *opts, em_ml_model **out) {
    em_ml_logreg_opts o;
    if (!d || !out) return em__seterr(EM_EINVAL, "em_ml_logreg_train: NULL argument");
    *out = NULL;
    if (opts)
        o = *opts;
    else
        em_ml_logreg_defaults(&o);
    if (o.optimizer != EM_ML_GD && o.optimizer != EM_ML_LBFGS)
        return em__seterr(EM_EINVAL, "em_ml_logreg_train: unknown optimizer %d", o.optimizer);
    if (o.max_iter < 0 || !(o.l2 >= 0) || !(o.tol >= 0) || o.history < 0 || o.depth < 0 ||
        (o.optimizer == EM_ML_GD && !(o.step > 0)))
        return em__seterr(EM_EINVAL, "em_ml_logreg_train: bad options (max_iter %d, step %g, l2 %g, tol %g, "
                          "history %d, depth %d)", o.max_iter, o.step, o.l2, o.tol, o.history, o.depth);
    if (o.family != EM_ML_AUTO && o.family != EM_ML_BINOMIAL && o.family != EM_ML_MULTINOMIAL)
        return em__seterr(EM_EINVAL, "em_ml_logreg_train: unknown family %d", o.family);
    if (o.classes != 0 && (o.classes < 2 || o.classes > EM_ML_MAX_CLASSES || (o.family == EM_ML_BINOMIAL && o.classes != 2)))
        return em__seterr(EM_EINVAL, "em_ml_logreg_train: %d classes (%s)", o.classes,
                          o.family == EM_ML_BINOMIAL ? "the binomial family has 2" : "2 to 65536, or 0 to infer");
    /* The class count, as Spark's: given, or the largest label + 1; a job
     * over the labels checks every label (binomial: 0 or 1).  When the
     * model may be binary, the first pass of the training stands for that
     * job: at the starting weights (zero) it tallies the blocks holding a
     * label other than 0 or 1, and only when there are any (more classes,
     * or a bad label) does the label scan run, for the class count or the
     * error naming the row.  So n iterations of gradient descent cost n + 1
     * passes, not n + 2. */
    int K = o.classes, limit = o.family == EM_ML_BINOMIAL ? 2 : o.classes ? o.classes : EM_ML_MAX_CLASSES, found;
    int depth = o.depth ? o.depth : 2, rc = 0;
    em_ml_model *m = calloc(1, sizeof *m);
    double *x = calloc((size_t)d->cols + 1, sizeof(double)), *g0 = malloc(sizeof(double) * (size_t)(d->cols + 1));
    if (!m || !x || !g0) {
        rc = em__seterr(EM_ENOMEM, "mllib: out of memory");
        goto fail;
    }
    objective ob = {d, o.l2, o.intercept != 0, depth, NULL, 0};
    int64_t tally = 0;
    if (o.family != EM_ML_MULTINOMIAL && (K == 0 || K == 2)) {
        rc = loss_grad(d, x, depth, &ob.first_loss, g0, &tally);
        if (!rc && !tally) {
            ob.first_g = g0;
            K = 2;
        } else if (rc) { /* a label error comes first, as when the scan ran first */
            char *keep = strdup(em_errmsg());
            int src = ml_scan_labels(d, limit, &found);
            if (src) rc = src;
            else if (keep) em__seterr(rc, "%s", keep);
            free(keep);
            goto fail;
        }
    }
    if (!ob.first_g) {
        if ((rc = ml_scan_labels(d, limit, &found))) goto fail;
        if (!K) K = found;
    }
    if (o.family == EM_ML_MULTINOMIAL || K > 2) {
        free(m);
        free(x);
        free(g0);
        return ml_softmax_train(d, &o, K, out);
    }
    ml_optim op = {o.max_iter, o.step, o.history ? o.history : 10, o.tol, o.progress, o.progress_ctx};
    rc = o.optimizer == EM_ML_GD ? ml_gd(d->cols + 1, x, lg_objective, &ob, &op, &m->iterations, &m->loss)
                                     : ml_lbfgs(d->cols + 1, x, lg_objective, &ob, &op, &m->iterations, &m->loss);
    if (rc) goto fail;
    free(g0);
    m->cols = d->cols;
    m->w = x; /* cols weights; the intercept after them is copied out */
    m->b = x[d->cols];
    *out = m;
    return 0;
fail:
    free(m);
    free(x);
    free(g0);
    return rc;
}

int em_ml_logreg_train(em_ml_data *d, const em_ml_logreg_opts *opts, em_ml_model **out) {
    CTX_GUARDED(d ? d->ctx : NULL, ml_logreg_train_unguarded(d, opts, out));
}

void em_ml_model_free(em_ml_model *m) {
    if (!m) return;
    free(m->w);
    free(m->intercepts);
    free(m);
}

/* Whether m is a usable multinomial model; 0 for a binary one. */
static int is_multinomial(const em_ml_model *m) { return m->classes >= 2 && m->intercepts; }

/* The K margins x.w_k + b_k of a multinomial model into out. */
static void margins(const em_ml_model *m, const double *x, double *out) {
    for (int k = 0; k < m->classes; k++) {
        const double *w = m->w + (size_t)k * (size_t)m->cols;
        double s = m->intercepts[k];
        for (int64_t j = 0; j < m->cols; j++) s += w[j] * x[j];
        out[k] = s;
    }
}

int em_ml_predict_probs(const em_ml_model *m, const double *x, double *probs) {
    if (!m || (!x && m->cols) || !probs || (!m->w && m->cols))
        return em__seterr(EM_EINVAL, "em_ml_predict_probs: NULL argument");
    if (!is_multinomial(m)) {
        double s = m->b;
        for (int64_t j = 0; j < m->cols; j++) s += m->w[j] * x[j];
        probs[1] = ml_sigmoid(s);
        probs[0] = ml_sigmoid(-s);
        return 2;
    }
    margins(m, x, probs);
    ml_softmax_row(probs, m->classes);
    return m->classes;
}

double em_ml_predict_prob(const em_ml_model *m, const double *x) {
    if (!m || (!x && m->cols) || (!m->w && m->cols)) return NAN;
    if (!is_multinomial(m)) {
        double s = m->b;
        for (int64_t j = 0; j < m->cols; j++) s += m->w[j] * x[j];
        return ml_sigmoid(s);
    }
    double *p = malloc(sizeof(double) * (size_t)m->classes), r;
    if (!p) return NAN;
    em_ml_predict_probs(m, x, p);
    r = p[1];
    free(p);
    return r;
}

int em_ml_predict(const em_ml_model *m, const double *x) {
    if (!m || (!x && m->cols) || (!m->w && m->cols)) return -1;
    if (!is_multinomial(m)) return em_ml_predict_prob(m, x) >= 0.5;
    /* The largest margin is the most probable class: no exp needed. */
    int best = 0;
    double bm = -INFINITY;
    for (int k = 0; k < m->classes; k++) {
        const double *w = m->w + (size_t)k * (size_t)m->cols;
        double s = m->intercepts[k];
        for (int64_t j = 0; j < m->cols; j++) s += w[j] * x[j];
        if (s > bm) {
            bm = s;
            best = k;
        }
    }
    return best;
}

/* Trained on z_j = (x_j - mean_j) * s_j, with s_j = 1 / std_j, or 0 for a
 * constant column as em_ml_standardize scales it, the margin is
 *     b + sum_j w_j z_j = (b - sum_j w_j s_j mean_j) + sum_j (w_j s_j) x_j,
 * so the same model on raw rows has weights w_j s_j and that intercept.  A
 * constant column gets weight 0, as it had no say in training. */
int em_ml_model_unstandardize(em_ml_model *m, const double *means, const double *stds) {
    if (!m || (!stds && m->cols) || m->cols < 0 || (!m->w && m->cols))
        return em__seterr(EM_EINVAL, "em_ml_model_unstandardize: bad argument");
    for (int64_t j = 0; j < m->cols; j++)
        if (!(stds[j] >= 0) || !isfinite(stds[j]) || (means && !isfinite(means[j])))
            return em__seterr(EM_EINVAL, "em_ml_model_unstandardize: column %lld has mean %g, deviation %g",
                              (long long)j, means ? means[j] : 0.0, stds[j]);
    int K = is_multinomial(m) ? m->classes : 1;
    for (int k = 0; k < K; k++) { /* a binary model is one row with intercept b */
        double *wk = m->w + (size_t)k * (size_t)m->cols, *bk = K > 1 ? &m->intercepts[k] : &m->b, b = *bk;
        for (int64_t j = 0; j < m->cols; j++) {
            double w = stds[j] > 0 ? wk[j] * (1 / stds[j]) : 0; /* the scale em_ml_standardize applied */
            if (means) b -= w * means[j];
            wk[j] = w;
        }
        *bk = b;
    }
    return 0;
}
