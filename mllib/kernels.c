/*
 * kernels.c -- log loss and gradient of one block (see kernels.h), binary
 * (sigmoid) and multinomial (softmax).
 *
 * Dense blocks.  The gradient needs X.w (the margins) and then X^T.r (the
 * residuals weighted by the rows), two passes over the matrix.  Done over
 * the whole block, each pass would stream the block from memory; done on a
 * tile of rows small enough to stay in cache (about 256 KiB), the second
 * pass reads the tile from cache, so memory sees the matrix once, which is
 * what bounds an iteration.  Each pass over a tile is one cblas_dgemv; a
 * tile of one row (rows wider than 128 Ki columns) is a fused ddot +
 * daxpy.
 *
 * CSR blocks.  Both passes are one loop over a row's nonzeros, the second
 * reading the row from L1.  The first checks each column index (and each
 * row's offsets) before it is used: a compare on data already in
 * registers, where ml_block_view's separate check would read the index
 * arrays from memory once more every iteration.
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "kernels.h"

#define TILE_BYTES (256 * 1024)
#define TILE_MAX 512

double ml_logloss(double m, double y) { return log1p(exp(-fabs(m))) + (m > 0 ? m : 0) - y * m; }

double ml_sigmoid(double m) {
    if (m >= 0) return 1 / (1 + exp(-m));
    double e = exp(m);
    return e / (1 + e);
}

/* Loss and residual of one row from one exp and one log1p: with
 * e = exp(-|m|), sigmoid(m) is 1 / (1 + e) for m >= 0 and e / (1 + e)
 * otherwise. */
static inline double row_loss(double m, double y, double *r) {
    double e = exp(-fabs(m)), p = m >= 0 ? 1 / (1 + e) : e / (1 + e);
    *r = p - y;
    return log1p(e) + (m > 0 ? m : 0) - y * m;
}

/* Rows per tile: about TILE_BYTES of matrix, in multiples of 4 rows
 * (OpenBLAS's transposed dgemv kernels take columns four at a time; a
 * tile of 3 rows of 10,000 columns runs at half the speed of 4).  Rows
 * wider than TILE_BYTES / 4 still take 4-row tiles up to WIDE_BYTES, then
 * one-row tiles. */
#define WIDE_BYTES (4 * 1024 * 1024)
static int64_t tile_rows(int64_t cols) {
    int64_t row = (cols > 0 ? cols : 1) * 8, t = TILE_BYTES / row;
    if (t >= 4) return t > TILE_MAX ? TILE_MAX : t - t % 4;
    return 4 * row <= WIDE_BYTES ? 4 : 1;
}

static void dense_loss_grad(const ml_block *b, const double *w, double bias, double *g, double *gb, double *loss) {
    const int64_t cols = b->cols, T = tile_rows(cols);
    double m[TILE_MAX], l = 0, sr = 0;
    if (cols == 0) { /* intercept only */
        for (int64_t i = 0; i < b->rows; i++) {
            double r;
            l += row_loss(bias, b->y[i], &r);
            sr += r;
        }
    } else if (T == 1) {
        for (int64_t i = 0; i < b->rows; i++) {
            const double *x = b->x + i * cols;
            double r, mi = cblas_ddot((int)cols, x, 1, w, 1) + bias;
            l += row_loss(mi, b->y[i], &r);
            sr += r;
            cblas_daxpy((int)cols, r, x, 1, g, 1);
        }
    } else {
        for (int64_t i0 = 0; i0 < b->rows; i0 += T) {
            int n = (int)(b->rows - i0 < T ? b->rows - i0 : T);
            const double *x = b->x + i0 * cols;
            const double *y = b->y + i0;
            cblas_dgemv(CblasRowMajor, CblasNoTrans, n, (int)cols, 1.0, x, (int)cols, w, 1, 0.0, m, 1);
            for (int i = 0; i < n; i++) {
                l += row_loss(m[i] + bias, y[i], &m[i]); /* the residual, in place */
                sr += m[i];
            }
            cblas_dgemv(CblasRowMajor, CblasTrans, n, (int)cols, 1.0, x, (int)cols, m, 1, 1.0, g, 1);
        }
    }
    *loss += l;
    *gb += sr;
}

static int bad_csr(int64_t i) {
    return em__seterr(EM_ECORRUPT, "mllib: CSR block with an offset or a column index out of range (row %lld)",
                      (long long)i);
}

/* Row i's nonzeros are [*lo, *hi): 0, or EM_ECORRUPT if out of range. */
static inline int row_span(const ml_block *b, int64_t i, int64_t *lo, int64_t *hi) {
    *lo = b->indptr[i];
    *hi = b->indptr[i + 1];
    return *lo < 0 || *hi < *lo || *hi > b->nnz ? bad_csr(i) : 0;
}

static int csr_loss_grad(const ml_block *b, const double *w, double bias, double *g, double *gb, double *loss) {
    const uint64_t cols = (uint64_t)b->cols;
    double l = 0, sr = 0;
    int rc = 0;
    for (int64_t i = 0; i < b->rows; i++) {
        int64_t lo, hi;
        if ((rc = row_span(b, i, &lo, &hi))) break;
        double mi = bias;
        for (int64_t k = lo; k < hi; k++) {
            uint64_t j = (uint64_t)(int64_t)b->idx[k];
            if (j >= cols) {
                rc = bad_csr(i);
                goto out;
            }
            mi += b->val[k] * w[j];
        }
        double r;
        l += row_loss(mi, b->y[i], &r);
        sr += r;
        for (int64_t k = lo; k < hi; k++) g[b->idx[k]] += r * b->val[k];
    }
out:
    *loss += l;
    *gb += sr;
    return rc;
}

int ml_block_loss_grad(const ml_block *b, const double *w, double bias, double *g, double *gb, double *loss) {
    if (b->kind != ML_DENSE) return csr_loss_grad(b, w, bias, g, gb, loss);
    dense_loss_grad(b, w, bias, g, gb, loss);
    return 0;
}

int ml_block_margins(const ml_block *b, const double *w, double bias, double *m) {
    if (b->kind == ML_DENSE) {
        if (b->cols == 0 || b->rows == 0) {
            for (int64_t i = 0; i < b->rows; i++) m[i] = bias;
            return 0;
        }
        cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)b->rows, (int)b->cols, 1.0, b->x, (int)b->cols, w, 1, 0.0, m,
                    1);
        for (int64_t i = 0; i < b->rows; i++) m[i] += bias;
        return 0;
    }
    const uint64_t cols = (uint64_t)b->cols;
    for (int64_t i = 0; i < b->rows; i++) {
        int64_t lo, hi;
        int rc = row_span(b, i, &lo, &hi);
        if (rc) return rc;
        double mi = bias;
        for (int64_t k = lo; k < hi; k++) {
            uint64_t j = (uint64_t)(int64_t)b->idx[k];
            if (j >= cols) return bad_csr(i);
            mi += b->val[k] * w[j];
        }
        m[i] = mi;
    }
    return 0;
}

/* ------------------------------------------------------------ softmax */

/* Multinomial blocks.  The binary kernel's tiling carries over with the
 * weight vector become a K x cols matrix: on a tile of rows the margins of
 * every class are one dgemm (X_tile . W^T, tile x K), the softmax turns
 * them into the residuals P - Y in place, and the gradient is a second
 * dgemm (G += R^T . X_tile), which reads the tile from cache.  The tile
 * is also kept small enough that its K margins per row stay in cache. */

double ml_softmax_row(double *m, int K) {
    double mx = m[0], s = 0;
    for (int k = 1; k < K; k++)
        if (m[k] > mx) mx = m[k];
    for (int k = 0; k < K; k++) s += (m[k] = exp(m[k] - mx));
    for (int k = 0; k < K; k++) m[k] /= s;
    return mx + log(s);
}

int ml_check_class_labels(const ml_block *b, int K) {
    for (int64_t i = 0; i < b->rows; i++) {
        double y = b->y[i];
        if (!(y >= 0 && y < K) || y != (double)(int)y)
            return em__seterr(EM_EINVAL, "row %lld of a block has label %.17g (labels must be integers 0 to %d)",
                              (long long)i, y, K - 1);
    }
    return 0;
}

/* Rows m[0..n) of K margins each, plus the intercepts, into residuals
 * P - Y; adds the losses to *l and the residuals to gb. */
static void softmax_residuals(double *m, int n, int K, const double *y, const double *bias, double *l, double *gb) {
    for (int i = 0; i < n; i++) {
        double *mi = m + (size_t)i * (size_t)K;
        int yi = (int)y[i];
        for (int k = 0; k < K; k++) mi[k] += bias[k];
        double my = mi[yi];
        *l += ml_softmax_row(mi, K) - my;
        mi[yi] -= 1;
        for (int k = 0; k < K; k++) gb[k] += mi[k];
    }
}

static int dense_softmax(const ml_block *b, int K, int64_t ldw, const double *W, const double *bias, double *G,
                         double *gb, double *loss) {
    const int64_t cols = b->cols;
    int64_t T = tile_rows(cols), TK = TILE_BYTES / 8 / K;
    if (T > TK) T = TK > 0 ? TK : 1;
    if (T > b->rows) T = b->rows > 0 ? b->rows : 1;
    double *m = malloc(sizeof(double) * (size_t)T * (size_t)K), l = 0;
    if (!m) return em__seterr(EM_ENOMEM, "mllib: out of memory (softmax tile of %lld x %d)", (long long)T, K);
    for (int64_t i0 = 0; i0 < b->rows; i0 += T) {
        int n = (int)(b->rows - i0 < T ? b->rows - i0 : T);
        const double *x = b->x + i0 * cols;
        if (cols == 0)
            memset(m, 0, sizeof(double) * (size_t)n * (size_t)K);
        else /* M = X_tile . W^T: n x K */
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, K, (int)cols, 1.0, x, (int)cols, W, (int)ldw,
                        0.0, m, K);
        softmax_residuals(m, n, K, b->y + i0, bias, &l, gb);
        if (cols) /* G += R^T . X_tile: K x cols */
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, (int)cols, n, 1.0, m, K, x, (int)cols, 1.0, G,
                        (int)ldw);
    }
    free(m);
    *loss += l;
    return 0;
}

static int csr_softmax(const ml_block *b, int K, int64_t ldw, const double *W, const double *bias, double *G,
                       double *gb, double *loss) {
    const uint64_t cols = (uint64_t)b->cols;
    double *m = malloc(sizeof(double) * (size_t)K), l = 0;
    int rc = 0;
    if (!m) return em__seterr(EM_ENOMEM, "mllib: out of memory");
    for (int64_t i = 0; i < b->rows && !rc; i++) {
        int64_t lo, hi;
        if ((rc = row_span(b, i, &lo, &hi))) break;
        for (int64_t k = lo; k < hi; k++)
            if ((uint64_t)(int64_t)b->idx[k] >= cols) {
                rc = bad_csr(i);
                break;
            }
        if (rc) break;
        for (int c = 0; c < K; c++) {
            const double *w = W + (size_t)c * (size_t)ldw;
            double s = 0;
            for (int64_t k = lo; k < hi; k++) s += b->val[k] * w[b->idx[k]];
            m[c] = s;
        }
        softmax_residuals(m, 1, K, b->y + i, bias, &l, gb);
        for (int c = 0; c < K; c++) {
            double *g = G + (size_t)c * (size_t)ldw, r = m[c];
            for (int64_t k = lo; k < hi; k++) g[b->idx[k]] += r * b->val[k];
        }
    }
    free(m);
    *loss += l;
    return rc;
}

int ml_block_softmax_loss_grad(const ml_block *b, int K, int64_t ldw, const double *W, const double *bias, double *G,
                               double *gb, double *loss) {
    int rc = ml_check_class_labels(b, K);
    if (rc) return rc;
    return b->kind == ML_DENSE ? dense_softmax(b, K, ldw, W, bias, G, gb, loss)
                               : csr_softmax(b, K, ldw, W, bias, G, gb, loss);
}

int ml_block_softmax_margins(const ml_block *b, int K, int64_t ldw, const double *W, const double *bias, double *M) {
    if (b->kind == ML_DENSE) {
        if (b->cols == 0 || b->rows == 0)
            memset(M, 0, sizeof(double) * (size_t)b->rows * (size_t)K);
        else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b->rows, K, (int)b->cols, 1.0, b->x,
                        (int)b->cols, W, (int)ldw, 0.0, M, K);
    } else {
        const uint64_t cols = (uint64_t)b->cols;
        for (int64_t i = 0; i < b->rows; i++) {
            int64_t lo, hi;
            int rc = row_span(b, i, &lo, &hi);
            if (rc) return rc;
            for (int64_t k = lo; k < hi; k++)
                if ((uint64_t)(int64_t)b->idx[k] >= cols) return bad_csr(i);
            for (int c = 0; c < K; c++) {
                const double *w = W + (size_t)c * (size_t)ldw;
                double s = 0;
                for (int64_t k = lo; k < hi; k++) s += b->val[k] * w[b->idx[k]];
                M[(size_t)i * (size_t)K + (size_t)c] = s;
            }
        }
    }
    for (int64_t i = 0; i < b->rows; i++)
        for (int c = 0; c < K; c++) M[(size_t)i * (size_t)K + (size_t)c] += bias[c];
    return 0;
}
