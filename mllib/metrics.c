/*
 * metrics.c -- em_ml_evaluate: log loss, accuracy and the area under the
 * ROC curve of a model over a data set, all computed over the RDD; and
 * em_ml_evaluate_classes: the multiclass log loss, accuracy and confusion
 * matrix (one em_tree_aggregate of K x K + 3 sums).
 *
 * Log loss and accuracy are sums: one em_tree_aggregate of (loss sum,
 * correct predictions, rows).  The AUC needs the rows ranked by score, so
 * it is a small pipeline: every block emits (score, (positives, negatives))
 * pairs keyed by the order-preserving encoding of the score, reduce_by_key
 * sums the counts of each distinct score, sort_by_key orders them
 * descending, and each sorted partition computes its part of
 * AUC = sum over scores of n_s * (P_above + p_s / 2) / (P * N)
 * (the Mann-Whitney statistic: the trapezoid area with ties averaged)
 * counting only the positives above within it; the driver collects one
 * (positives, negatives, area) record per partition and adds each
 * partition's negatives times the positives of the partitions before it.
 * The RDDs this builds are forgotten, with their shuffle files, when
 * em_ml_evaluate returns.
 *
 * The score is the margin x.w + b rather than the probability: the ranking
 * is the same, but margins stay distinct where the sigmoid rounds to 0 or
 * 1, so the AUC is not blurred by ties the model did not make.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "ctx.h"
#include "data.h"
#include "err.h"
#include "kernels.h"
#include "multinom.h"

typedef struct ev_arg {
    em_bcast w;     /* cols weights then the intercept */
    int64_t cols;
} ev_arg;

int ml_sum_f64(const em_rec *x, const em_rec *y, em_emitter *out, const void *arg); /* logreg.c */

/* The block's margins into a malloc'd array, after checking the weights
 * and the block.  0, or the code to return from the task. */
static int block_margins(const em_rec *r, const ev_arg *a, ml_block *b, ebuf *scratch, double **m) {
    size_t wlen = 0;
    const double *w = em_bcast_value(a->w, &wlen);
    *m = NULL;
    if (!w || wlen != sizeof(double) * (size_t)(a->cols + 1)) return em_fail("evaluate: weights not broadcast");
    int rc = ml_block_view_unchecked(r, b, scratch); /* the kernel checks CSR indexes */
    if (rc) return rc;
    if (b->cols > a->cols)
        return em_fail("evaluate: a block has %lld columns, the model %lld", (long long)b->cols, (long long)a->cols);
    if (!(*m = malloc(sizeof(double) * (size_t)(b->rows ? b->rows : 1)))) return em_fail("evaluate: out of memory");
    ml_blas_init();
    return ml_block_margins(b, w, w[a->cols], *m);
}

/* seq of the (loss sum, correct, rows) aggregate. */
int ml_ev_seq(const em_rec *acc, const em_rec *r, em_emitter *out, const void *arg);
int ml_ev_seq(const em_rec *acc, const em_rec *r, em_emitter *out, const void *arg) {
    ev_arg a;
    double s[3], *m;
    ml_block b;
    ebuf scratch = EBUF_INIT;
    memcpy(&a, arg, sizeof a);
    if (acc->vlen != sizeof s) return em_fail("evaluate: bad accumulator");
    memcpy(s, acc->val, sizeof s);
    int rc = block_margins(r, &a, &b, &scratch, &m);
    if (!rc) {
        for (int64_t i = 0; i < b.rows; i++) {
            s[0] += ml_logloss(m[i], b.y[i]);
            s[1] += (ml_sigmoid(m[i]) >= 0.5) == (b.y[i] >= 0.5);
        }
        s[2] += (double)b.rows;
        rc = em_emit(out, s, sizeof s);
    }
    free(m);
    ebuf_free(&scratch);
    return rc;
}

/* Block -> (f64 key of the margin, i64 positives, i64 negatives) per row. */
int ml_auc_pairs(const em_rec *in, em_emitter *out, const void *arg);
int ml_auc_pairs(const em_rec *in, em_emitter *out, const void *arg) {
    ev_arg a;
    double *m;
    ml_block b;
    ebuf scratch = EBUF_INIT;
    memcpy(&a, arg, sizeof a);
    int rc = block_margins(in, &a, &b, &scratch, &m);
    for (int64_t i = 0; !rc && i < b.rows; i++) {
        uint8_t k[8];
        int64_t pn[2] = {b.y[i] >= 0.5, b.y[i] < 0.5};
        if (isnan(m[i])) {
            rc = em_fail("evaluate: a score is NaN");
            break;
        }
        em_f64_enc(m[i] == 0 ? 0.0 : m[i], k); /* -0 and 0 are one score */
        rc = em_emit_pair(out, k, 8, pn, sizeof pn);
        if (rc > 0) rc = 0;
    }
    free(m);
    ebuf_free(&scratch);
    return rc;
}

int ml_auc_sum(const em_rec *x, const em_rec *y, em_emitter *out, const void *arg);
int ml_auc_sum(const em_rec *x, const em_rec *y, em_emitter *out, const void *arg) {
    int64_t a[2], b[2];
    if (x->vlen != sizeof a || y->vlen != sizeof b) return em_fail("evaluate: bad count pair");
    memcpy(a, x->val, sizeof a);
    memcpy(b, y->val, sizeof b);
    a[0] += b[0];
    a[1] += b[1];
    return em_emit(out, a, sizeof a);
}

/* One sorted partition's part of the area: with its scores descending,
 * each negative counts the positives above it within the partition and half
 * of those tied with it.  Emits (positives, negatives, area) as 3 doubles;
 * the driver adds each partition's negatives times the positives of the
 * partitions before it, so only one record per partition reaches it. */
int ml_auc_part(int part, em_iter *in, em_emitter *out, const void *arg);
int ml_auc_part(int part, em_iter *in, em_emitter *out, const void *arg) {
    double t[3] = {0, 0, 0}; /* positives, negatives, area */
    em_rec r;
    int rc;
    while ((rc = em_iter_next(in, &r)) == 1) {
        int64_t pn[2];
        if (r.vlen != sizeof pn) return em_fail("evaluate: bad count pair");
        memcpy(pn, r.val, sizeof pn);
        t[2] += (double)pn[1] * (t[0] + 0.5 * (double)pn[0]);
        t[0] += (double)pn[0];
        t[1] += (double)pn[1];
    }
    if (rc < 0) return rc;
    return em_emit(out, t, sizeof t);
}

static int auc(em_ml_data *d, const ev_arg *a, double *out) {
    int np = em_num_partitions(d->blocks);
    em_rdd *pairs = em_flat_map(d->blocks, ml_auc_pairs, a, sizeof *a);
    em_rdd *sums = pairs ? em_reduce_by_key(pairs, ml_auc_sum, NULL, 0, np) : NULL;
    em_rdd *sorted = sums ? em_sort_by_key(sums, 0, np) : NULL;
    em_rdd *parts = sorted ? em_map_partitions(sorted, ml_auc_part, NULL, 0) : NULL;
    em_batch *res = NULL;
    if (!parts) return em__lasterr();
    int rc = em_collect(parts, &res); /* partition order: descending scores */
    if (rc) return rc;
    double pos = 0, neg = 0, area = 0;
    size_t it = 0;
    em_rec r;
    while (em_batch_next(res, &it, &r) == 1) {
        double t[3];
        if (r.vlen != sizeof t) {
            em_batch_free(res);
            return em__seterr(EM_ECORRUPT, "evaluate: bad partial area");
        }
        memcpy(t, r.val, sizeof t);
        area += t[2] + t[1] * pos;
        pos += t[0];
        neg += t[1];
    }
    em_batch_free(res);
    *out = pos > 0 && neg > 0 ? area / (pos * neg) : NAN;
    return 0;
}

static int ml_evaluate_unguarded(const em_ml_model *m, em_ml_data *d, em_ml_metrics *out) {
    if (out) memset(out, 0, sizeof *out); /* defined on failure too */
    if (!m || !d || !out || m->cols < 0 || (!m->w && m->cols)) return em__seterr(EM_EINVAL, "em_ml_evaluate: bad argument");
    if (d->cols > m->cols)
        return em__seterr(EM_EINVAL, "em_ml_evaluate: the data set has %lld columns, the model %lld",
                          (long long)d->cols, (long long)m->cols);
    double *wb = malloc(sizeof(double) * (size_t)(m->cols + 1));
    if (!wb) return em__seterr(EM_ENOMEM, "mllib: out of memory");
    if (m->cols) memcpy(wb, m->w, sizeof(double) * (size_t)m->cols);
    wb[m->cols] = m->b;
    ev_arg a = {em_broadcast(d->ctx, wb, sizeof(double) * (size_t)(m->cols + 1)), m->cols};
    free(wb);
    if (!a.w.id) return em__lasterr();
    double zero[3] = {0, 0, 0}, s[3];
    em_rec z = {NULL, 0, zero, sizeof zero}, r;
    em_batch *res = NULL;
    int rc = em_tree_aggregate(d->blocks, &z, ml_ev_seq, ml_sum_f64, &a, sizeof a, 2, &res);
    if (!rc && !(rc = em_batch_get(res, 0, &r)) && r.vlen != sizeof s)
        rc = em__seterr(EM_ECORRUPT, "evaluate: bad aggregate");
    if (!rc) memcpy(s, r.val, sizeof s);
    em_batch_free(res);
    if (!rc && !(s[2] > 0)) rc = em__seterr(EM_EEMPTY, "em_ml_evaluate: the data set has no rows");
    if (!rc) {
        out->log_loss = s[0] / s[2];
        out->accuracy = s[1] / s[2];
        out->rows = (int64_t)s[2];
        rdd_scope internal; /* the RDDs auc() makes are its own */
        ctx_scope_begin(&internal);
        rc = auc(d, &a, &out->auc);
        ctx_scope_end(&internal); /* freed, their shuffle files removed */
    }
    em_bcast_destroy(d->ctx, a.w);
    return rc;
}

/* --------------------------------------------------- multiclass */

/* The argument of the class aggregate: the model's parameters broadcast
 * (binary: cols weights then b; multinomial: K x cols, then K
 * intercepts). */
typedef struct cm_arg {
    em_bcast w;
    int64_t cols;
    int32_t K;
    int32_t binary;
} cm_arg;

/* seq: acc (loss sum, correct, rows, then K x K confusion counts) + the
 * block's rows. */
int ml_cm_seq(const em_rec *acc, const em_rec *r, em_emitter *out, const void *arg);
int ml_cm_seq(const em_rec *acc, const em_rec *r, em_emitter *out, const void *arg) {
    cm_arg a;
    memcpy(&a, arg, sizeof a);
    size_t K = (size_t)a.K, n = 3 + K * K, wlen = 0;
    size_t np = a.binary ? (size_t)a.cols + 1 : K * (size_t)a.cols + K;
    const double *w = em_bcast_value(a.w, &wlen);
    if (!w || wlen != sizeof(double) * np) return em_fail("evaluate: weights not broadcast");
    if (acc->vlen && acc->vlen != sizeof(double) * n) return em_fail("evaluate: bad accumulator");
    ml_block b;
    ebuf scratch = EBUF_INIT;
    double *s = NULL, *m = NULL;
    int rc = ml_block_view_unchecked(r, &b, &scratch);
    if (!rc && b.cols > a.cols)
        rc = em_fail("evaluate: a block has %lld columns, the model %lld", (long long)b.cols, (long long)a.cols);
    if (!rc && ml_check_class_labels(&b, a.K)) rc = em_fail("evaluate: %s", em_errmsg());
    if (rc) goto out;
    s = acc->vlen ? malloc(sizeof(double) * n) : calloc(n, sizeof(double));
    m = malloc(sizeof(double) * (size_t)(b.rows ? b.rows : 1) * (a.binary ? 1 : K));
    if (!s || !m) {
        rc = em_fail("evaluate: out of memory");
        goto out;
    }
    if (acc->vlen) memcpy(s, acc->val, sizeof(double) * n);
    ml_blas_init();
    rc = a.binary ? ml_block_margins(&b, w, w[a.cols], m)
                  : ml_block_softmax_margins(&b, a.K, a.cols, w, w + K * (size_t)a.cols, m);
    if (rc) {
        rc = em_fail("evaluate: %s", em_errmsg());
        goto out;
    }
    for (int64_t i = 0; i < b.rows; i++) {
        int y = (int)b.y[i], pred = 0;
        if (a.binary) {
            s[0] += ml_logloss(m[i], b.y[i]);
            pred = ml_sigmoid(m[i]) >= 0.5;
        } else {
            double *mi = m + (size_t)i * K, my = mi[y];
            for (int k = 1; k < a.K; k++)
                if (mi[k] > mi[pred]) pred = k; /* the lowest index among ties */
            s[0] += ml_softmax_row(mi, a.K) - my;
        }
        s[1] += pred == y;
        s[3 + (size_t)y * K + (size_t)pred] += 1;
    }
    s[2] += (double)b.rows;
    rc = em_emit(out, s, sizeof(double) * n);
out:
    free(s);
    free(m);
    ebuf_free(&scratch);
    return rc;
}

static int multinomial(const em_ml_model *m) { return m->classes >= 2 && m->intercepts; }

static int ml_evaluate_classes_unguarded(const em_ml_model *m, em_ml_data *d, em_ml_class_metrics *out) {
    if (out) memset(out, 0, sizeof *out); /* defined on failure too */
    if (!m || !d || !out || m->cols < 0 || (!m->w && m->cols) || m->classes > EM_ML_MAX_CLASSES)
        return em__seterr(EM_EINVAL, "em_ml_evaluate_classes: bad argument");
    if (d->cols > m->cols)
        return em__seterr(EM_EINVAL, "em_ml_evaluate_classes: the data set has %lld columns, the model %lld",
                          (long long)d->cols, (long long)m->cols);
    int binary = !multinomial(m), K = binary ? 2 : m->classes, found;
    int rc = ml_scan_labels(d, K, &found); /* names a bad label by its row */
    if (rc) return rc;
    size_t kc = binary ? (size_t)m->cols : (size_t)K * (size_t)m->cols, np = kc + (binary ? 1 : (size_t)K);
    size_t n = 3 + (size_t)K * (size_t)K;
    double *wb = malloc(sizeof(double) * np), *s = malloc(sizeof(double) * n);
    int64_t *conf = malloc(sizeof(int64_t) * (size_t)K * (size_t)K);
    if (!wb || !s || !conf) {
        free(wb);
        free(s);
        free(conf);
        return em__seterr(EM_ENOMEM, "mllib: out of memory");
    }
    if (kc) memcpy(wb, m->w, sizeof(double) * kc);
    if (binary)
        wb[kc] = m->b;
    else
        memcpy(wb + kc, m->intercepts, sizeof(double) * (size_t)K);
    cm_arg a = {em_broadcast(d->ctx, wb, sizeof(double) * np), m->cols, K, binary};
    free(wb);
    em_rec z = {NULL, 0, "", 0}, r; /* the empty zero */
    em_batch *res = NULL;
    rc = a.w.id ? em_tree_aggregate(d->blocks, &z, ml_cm_seq, ml_sum_f64, &a, sizeof a, 2, &res) : em__lasterr();
    if (a.w.id) em_bcast_destroy(d->ctx, a.w);
    if (!rc && !(rc = em_batch_get(res, 0, &r)) && r.vlen != sizeof(double) * n)
        rc = r.vlen ? em__seterr(EM_ECORRUPT, "evaluate: bad aggregate")
                    : em__seterr(EM_EEMPTY, "em_ml_evaluate_classes: the data set has no rows");
    if (!rc) memcpy(s, r.val, sizeof(double) * n);
    em_batch_free(res);
    if (!rc && !(s[2] > 0)) rc = em__seterr(EM_EEMPTY, "em_ml_evaluate_classes: the data set has no rows");
    if (rc) {
        free(s);
        free(conf);
        return rc;
    }
    for (size_t i = 0; i < (size_t)K * (size_t)K; i++) conf[i] = (int64_t)s[3 + i];
    out->classes = K;
    out->log_loss = s[0] / s[2];
    out->accuracy = s[1] / s[2];
    out->rows = (int64_t)s[2];
    out->confusion = conf;
    free(s);
    return 0;
}

int em_ml_evaluate_classes(const em_ml_model *m, em_ml_data *d, em_ml_class_metrics *out) {
    CTX_GUARDED(d ? d->ctx : NULL, ml_evaluate_classes_unguarded(m, d, out));
}

/* A multinomial model's em_ml_evaluate: the multiclass figures, no AUC. */
static int evaluate_multinomial(const em_ml_model *m, em_ml_data *d, em_ml_metrics *out) {
    em_ml_class_metrics cm;
    int rc = ml_evaluate_classes_unguarded(m, d, &cm);
    memset(out, 0, sizeof *out);
    if (rc) return rc;
    out->log_loss = cm.log_loss;
    out->accuracy = cm.accuracy;
    out->rows = cm.rows;
    out->auc = NAN;
    free(cm.confusion);
    return 0;
}

int em_ml_evaluate(const em_ml_model *m, em_ml_data *d, em_ml_metrics *out) {
    if (m && out && d && multinomial(m)) CTX_GUARDED(d->ctx, evaluate_multinomial(m, d, out));
    CTX_GUARDED(d ? d->ctx : NULL, ml_evaluate_unguarded(m, d, out));
}
