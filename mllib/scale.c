/*
 * scale.c -- column statistics and standardization.
 *
 * Statistics are one em_tree_aggregate over the blocks.  Summing x and x^2
 * and taking E[x^2] - E[x]^2 at the end loses every significant digit on a
 * column whose mean is large next to its spread (common in raw data: the
 * breast cancer areas are ~650 +- 350), so each block is reduced in two
 * passes to (rows, column means, column sums of squared deviations M2), and
 * partial results are merged with the pairwise formula of Chan, Golub and
 * LeVeque:  n = na + nb,  mean = ma + d nb / n,  M2 = M2a + M2b + d^2 na nb / n
 * for d = mb - ma.  For CSR blocks the implicit zeros count: a column's
 * deviations are those of its stored values plus (rows - stored) zeros.
 *
 * The partial record: f64 n, f64 mean[cols], f64 m2[cols]; the empty record
 * (the aggregate's zero) stands for no rows yet, so the zero value does not
 * travel with the job at full width.  Its size, 16 bytes per column, must
 * stay under ember.record.maxBytes (64 MiB by default: 4 million columns).
 *
 * Standardizing maps each block to a new block of the same shape with the
 * means and scales (1/std, or 0 for a constant column) in the function's
 * argument blob.  em_ml_standardize_with takes the statistics from the
 * caller, so that data to predict on is scaled as the training data was,
 * and em_ml_model_unstandardize (logreg.c) folds the same scaling into a
 * model.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "bigbuf.h"
#include "block.h"
#include "data.h"
#include "err.h"

typedef struct stats_arg {
    int64_t cols;
} stats_arg;

/* Merge partial (nb, mb, m2b) into (na, ma, m2a), in place. */
static void chan_merge(int64_t cols, double *na, double *ma, double *m2a, double nb, const double *mb,
                       const double *m2b) {
    if (nb == 0) return;
    double n = *na + nb, fb = nb / n, fab = *na * nb / n;
    for (int64_t j = 0; j < cols; j++) {
        double d = mb[j] - ma[j];
        ma[j] += d * fb;
        m2a[j] += m2b[j] + d * d * fab;
    }
    *na = n;
}

/* One block's statistics into mean/m2 (cols each, zeroed here); cnt is
 * scratch of cols doubles for CSR. */
static void block_stats(const ml_block *b, int64_t cols, double *mean, double *m2, double *cnt) {
    int64_t r = b->rows;
    memset(mean, 0, sizeof(double) * (size_t)cols);
    memset(m2, 0, sizeof(double) * (size_t)cols);
    if (r == 0) return;
    if (b->kind == ML_DENSE) {
        for (int64_t i = 0; i < r; i++) {
            const double *x = b->x + i * b->cols;
            for (int64_t j = 0; j < b->cols; j++) mean[j] += x[j];
        }
        for (int64_t j = 0; j < b->cols; j++) mean[j] /= (double)r;
        for (int64_t i = 0; i < r; i++) {
            const double *x = b->x + i * b->cols;
            for (int64_t j = 0; j < b->cols; j++) {
                double d = x[j] - mean[j];
                m2[j] += d * d;
            }
        }
    } else {
        memset(cnt, 0, sizeof(double) * (size_t)cols);
        for (int64_t k = 0; k < b->nnz; k++) {
            mean[b->idx[k]] += b->val[k];
            cnt[b->idx[k]] += 1;
        }
        for (int64_t j = 0; j < b->cols; j++) mean[j] /= (double)r;
        for (int64_t k = 0; k < b->nnz; k++) {
            double d = b->val[k] - mean[b->idx[k]];
            m2[b->idx[k]] += d * d;
        }
        for (int64_t j = 0; j < b->cols; j++) m2[j] += ((double)r - cnt[j]) * mean[j] * mean[j];
    }
}

/* Load a partial record into (n, mean, m2); 0 rows for the empty record. */
static int load_partial(const em_rec *r, int64_t cols, double *n, double *mean, double *m2) {
    if (r->vlen == 0) {
        *n = 0;
        memset(mean, 0, sizeof(double) * (size_t)cols);
        memset(m2, 0, sizeof(double) * (size_t)cols);
        return 0;
    }
    if (r->vlen != sizeof(double) * (size_t)(1 + 2 * cols))
        return em_fail("em_ml_column_stats: malformed partial of %zu bytes", r->vlen);
    const uint8_t *p = r->val;
    memcpy(n, p, 8);
    memcpy(mean, p + 8, sizeof(double) * (size_t)cols);
    memcpy(m2, p + 8 + 8 * cols, sizeof(double) * (size_t)cols);
    return 0;
}

/* w: 1 + 2 cols doubles laid out as the record. */
static int emit_partial(em_emitter *out, const double *w, int64_t cols) {
    if (w[0] == 0) return em_emit(out, "", 0);
    return em_emit(out, w, sizeof(double) * (size_t)(1 + 2 * cols));
}

int ml_stats_seq(const em_rec *acc, const em_rec *r, em_emitter *out, const void *arg);
int ml_stats_seq(const em_rec *acc, const em_rec *r, em_emitter *out, const void *arg) {
    stats_arg a;
    memcpy(&a, arg, sizeof a);
    ml_block b;
    ebuf scratch = EBUF_INIT;
    int rc = ml_block_view(r, &b, &scratch);
    if (!rc && b.cols > a.cols)
        rc = em_fail("em_ml_column_stats: a block has %lld columns, the data set %lld", (long long)b.cols,
                     (long long)a.cols);
    /* w: the accumulator as a record; v: the block's (n, mean, m2); cnt. */
    size_t w_len = (size_t)(1 + 2 * a.cols);
    double *w = rc ? NULL : malloc(sizeof(double) * (2 * w_len + (size_t)a.cols));
    if (!rc && !w) rc = em_fail("em_ml_column_stats: out of memory");
    if (!rc) rc = load_partial(acc, a.cols, &w[0], w + 1, w + 1 + a.cols);
    if (!rc) {
        double *v = w + w_len, *cnt = v + w_len;
        block_stats(&b, a.cols, v + 1, v + 1 + a.cols, cnt);
        chan_merge(a.cols, &w[0], w + 1, w + 1 + a.cols, (double)b.rows, v + 1, v + 1 + a.cols);
        rc = emit_partial(out, w, a.cols);
    }
    free(w);
    ebuf_free(&scratch);
    return rc;
}

int ml_stats_comb(const em_rec *x, const em_rec *y, em_emitter *out, const void *arg);
int ml_stats_comb(const em_rec *x, const em_rec *y, em_emitter *out, const void *arg) {
    stats_arg a;
    memcpy(&a, arg, sizeof a);
    if (y->vlen == 0) return em_emit(out, x->val, x->vlen);
    if (x->vlen == 0) return em_emit(out, y->val, y->vlen);
    size_t w_len = (size_t)(1 + 2 * a.cols);
    double *w = malloc(sizeof(double) * 2 * w_len);
    if (!w) return em_fail("em_ml_column_stats: out of memory");
    double *v = w + w_len;
    int rc = load_partial(x, a.cols, &w[0], w + 1, w + 1 + a.cols);
    if (!rc) rc = load_partial(y, a.cols, &v[0], v + 1, v + 1 + a.cols);
    if (!rc) {
        chan_merge(a.cols, &w[0], w + 1, w + 1 + a.cols, v[0], v + 1, v + 1 + a.cols);
        rc = emit_partial(out, w, a.cols);
    }
    free(w);
    return rc;
}

static int ml_column_stats_unguarded(em_ml_data *d, double **means, double **stds) {
    if (!d || !means || !stds) return em__seterr(EM_EINVAL, "em_ml_column_stats: NULL argument");
    *means = *stds = NULL;
    stats_arg a = {d->cols};
    em_rec zero = {NULL, 0, "", 0};
    em_batch *res = NULL;
    int rc = em_tree_aggregate(d->blocks, &zero, ml_stats_seq, ml_stats_comb, &a, sizeof a, 2, &res);
    if (rc) return rc;
    size_t nc = (size_t)(d->cols > 0 ? d->cols : 1);
    double *m = calloc(nc, sizeof *m), *s = calloc(nc, sizeof *s), *m2 = calloc(nc, sizeof *m2), n = 0;
    em_rec r;
    if (!m || !s || !m2) {
        rc = em__seterr(EM_ENOMEM, "em_ml_column_stats: out of memory");
    } else if (em_batch_get(res, 0, &r)) {
        rc = em__seterr(EM_ECORRUPT, "em_ml_column_stats: no result");
    } else {
        rc = load_partial(&r, d->cols, &n, m, m2);
    }
    em_batch_free(res);
    if (!rc) {
        for (int64_t j = 0; j < d->cols; j++) s[j] = n > 1 ? sqrt(m2[j] / (n - 1)) : 0;
        *means = m;
        *stds = s;
    } else {
        free(m);
        free(s);
    }
    free(m2);
    return rc;
}

int em_ml_column_stats(em_ml_data *d, double **means, double **stds) {
    CTX_GUARDED(d ? d->ctx : NULL, ml_column_stats_unguarded(d, means, stds));
}

/* The standardize argument: cols, then mean[cols], then scale[cols]. */
int ml_standardize_block(const em_rec *in, em_emitter *out, const void *arg);
int ml_standardize_block(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t cols;
    memcpy(&cols, arg, 8);
    const double *mean = (const double *)((const uint8_t *)arg + 8), *scale = mean + cols;
    ml_block b, o;
    ebuf scratch = EBUF_INIT, buf = EBUF_INIT;
    int rc = ml_block_view(in, &b, &scratch);
    if (!rc && b.cols > cols)
        rc = em_fail("em_ml_standardize: a block has %lld columns, the data set %lld", (long long)b.cols,
                     (long long)cols);
    if (!rc) rc = ml_block_alloc_out(out, &buf, b.kind, b.rows, b.cols, b.nnz, &o);
    if (!rc) {
        memcpy(o.y, b.y, sizeof(double) * (size_t)b.rows);
        if (b.kind == ML_DENSE) {
            for (int64_t i = 0; i < b.rows; i++) {
                const double *x = b.x + i * b.cols;
                double *z = o.x + i * b.cols;
                for (int64_t j = 0; j < b.cols; j++) z[j] = (x[j] - mean[j]) * scale[j];
            }
        } else {
            memcpy(o.indptr, b.indptr, sizeof(int64_t) * (size_t)(b.rows + 1));
            memcpy(o.idx, b.idx, sizeof(int32_t) * (size_t)b.nnz);
            for (int64_t k = 0; k < b.nnz; k++) o.val[k] = b.val[k] * scale[b.idx[k]];
        }
        rc = ml_block_emit(out, &o);
    }
    ebuf_free(&scratch);
    bb_free(&buf);
    return rc;
}

static em_ml_data *ml_standardize_with_unguarded(em_ml_data *d, const double *means, const double *stds) {
    if (!d || (!stds && d->cols)) {
        em__seterr(EM_EINVAL, "em_ml_standardize_with: NULL argument");
        return NULL;
    }
    for (int64_t j = 0; j < d->cols; j++)
        if (!(stds[j] >= 0) || !isfinite(stds[j]) || (means && !isfinite(means[j]))) {
            em__seterr(EM_EINVAL, "em_ml_standardize_with: column %lld has mean %g, deviation %g", (long long)j,
                       means ? means[j] : 0.0, stds[j]);
            return NULL;
        }
    size_t alen = 8 + 16 * (size_t)d->cols;
    uint8_t *arg = malloc(alen);
    if (!arg) {
        em__seterr(EM_ENOMEM, "em_ml_standardize: out of memory");
        return NULL;
    }
    memcpy(arg, &d->cols, 8);
    double *m = (double *)(arg + 8), *s = m + d->cols;
    for (int64_t j = 0; j < d->cols; j++) {
        m[j] = d->sparse || !means ? 0 : means[j]; /* sparse data is only scaled */
        s[j] = stds[j] > 0 ? 1 / stds[j] : 0;
    }
    em_rdd *blocks = em_map(d->blocks, ml_standardize_block, arg, alen);
    free(arg);
    if (blocks) em_set_name(blocks, "standardized blocks");
    return ml_data_wrap(d->ctx, blocks, d->cols, d->sparse);
}

em_ml_data *em_ml_standardize_with(em_ml_data *d, const double *means, const double *stds) {
    CTX_GUARDED_PTR(d ? d->ctx : NULL, ml_standardize_with_unguarded(d, means, stds));
}

static em_ml_data *ml_standardize_unguarded(em_ml_data *d) {
    double *mean = NULL, *std = NULL;
    if (!d) {
        em__seterr(EM_EINVAL, "em_ml_standardize: NULL data set");
        return NULL;
    }
    if (em_ml_column_stats(d, &mean, &std)) return NULL;
    em_ml_data *z = em_ml_standardize_with(d, mean, std);
    free(mean);
    free(std);
    return z;
}

em_ml_data *em_ml_standardize(em_ml_data *d) {
    CTX_GUARDED_PTR(d ? d->ctx : NULL, ml_standardize_unguarded(d));
}
