/*
 * kernels.c -- log loss and gradient of one block (see kernels.h).
 *
 * Dense blocks.  The gradient needs X.w (the margins) and then X^T.r (the
 * residuals weighted by the rows), two passes over the matrix.  Done over
 * the whole block, each pass would stream the block from memory; done on a
 * tile of rows small enough to stay in cache (about 256 KiB), the second
 * pass reads the tile from cache, so memory sees the matrix once, which is
 * what bounds an iteration.  Each pass over a tile is one cblas_dgemv; a
 * tile of one row (very wide matrices) is a fused ddot + daxpy.
 *
 * CSR blocks.  Both passes are one loop over a row's nonzeros, the second
 * reading the row from L1.
 */
#include <cblas.h>
#include <math.h>

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

static int64_t tile_rows(int64_t cols) {
    int64_t t = TILE_BYTES / ((cols > 0 ? cols : 1) * 8);
    return t < 1 ? 1 : t > TILE_MAX ? TILE_MAX : t;
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

static void csr_loss_grad(const ml_block *b, const double *w, double bias, double *g, double *gb, double *loss) {
    double l = 0, sr = 0;
    for (int64_t i = 0; i < b->rows; i++) {
        int64_t lo = b->indptr[i], hi = b->indptr[i + 1];
        double mi = bias;
        for (int64_t k = lo; k < hi; k++) mi += b->val[k] * w[b->idx[k]];
        double r;
        l += row_loss(mi, b->y[i], &r);
        sr += r;
        for (int64_t k = lo; k < hi; k++) g[b->idx[k]] += r * b->val[k];
    }
    *loss += l;
    *gb += sr;
}

void ml_block_loss_grad(const ml_block *b, const double *w, double bias, double *g, double *gb, double *loss) {
    if (b->kind == ML_DENSE)
        dense_loss_grad(b, w, bias, g, gb, loss);
    else
        csr_loss_grad(b, w, bias, g, gb, loss);
}

void ml_block_margins(const ml_block *b, const double *w, double bias, double *m) {
    if (b->kind == ML_DENSE) {
        if (b->cols == 0 || b->rows == 0) {
            for (int64_t i = 0; i < b->rows; i++) m[i] = bias;
            return;
        }
        cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)b->rows, (int)b->cols, 1.0, b->x, (int)b->cols, w, 1, 0.0, m,
                    1);
        for (int64_t i = 0; i < b->rows; i++) m[i] += bias;
        return;
    }
    for (int64_t i = 0; i < b->rows; i++) {
        double mi = bias;
        for (int64_t k = b->indptr[i]; k < b->indptr[i + 1]; k++) mi += b->val[k] * w[b->idx[k]];
        m[i] = mi;
    }
}
