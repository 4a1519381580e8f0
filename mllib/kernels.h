/*
 * kernels.h -- the per-block arithmetic of logistic regression: log loss,
 * gradient and margins of the rows of one packed block (block.h).  Internal
 * to mllib; these run inside tasks, single-threaded (ml_blas_init).
 */
#ifndef EM_ML_KERNELS_H
#define EM_ML_KERNELS_H

#include <stdint.h>

#include "block.h"

/* The numerically stable log loss of one row with margin m and label y:
 * log(1 + exp(-|m|)) + max(m, 0) - y * m. */
double ml_logloss(double m, double y);
/* 1 / (1 + exp(-m)) without overflow for any m. */
double ml_sigmoid(double m);

/* Add the block's contribution at (w, bias) to the sums: *loss += the sum
 * of the rows' log losses, g[j] += sum_i r_i * x_ij for j < b->cols, and
 * *gb (the intercept's gradient) += sum_i r_i, where r_i = sigmoid(m_i) -
 * y_i and m_i = x_i.w + bias.  w holds at least
 * b->cols weights (the caller checks).  Dense blocks go through BLAS on
 * row tiles that stay in cache, so the matrix is read from memory once;
 * CSR blocks through plain sparse loops, which check every row offset and
 * column index before using it (so blocks may be read with
 * ml_block_view_unchecked).  0, or EM_ECORRUPT (message set) for a CSR
 * block with an offset or index out of range; the sums are then partial. */
int ml_block_loss_grad(const ml_block *b, const double *w, double bias, double *g, double *gb, double *loss);

/* m[i] = x_i.w + bias for every row of the block (m: b->rows doubles).
 * 0, or EM_ECORRUPT as ml_block_loss_grad. */
int ml_block_margins(const ml_block *b, const double *w, double bias, double *m);

#endif
