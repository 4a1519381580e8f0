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

/* The multinomial (softmax) loss of K classes.  W is K x ldw coefficients,
 * row-major (class k's row at W + k * ldw; the block's cols <= ldw are
 * used), bias K intercepts.  Adds the block's contribution to the sums:
 * *loss += sum_i (log sum_k exp(m_ik) - m_i,y_i), G[k * ldw + j] +=
 * sum_i r_ik x_ij and gb[k] += sum_i r_ik, where m_ik = x_i.w_k + b_k and
 * r_ik = P(k | x_i) - [y_i = k].  Labels must be integers 0..K-1: checked
 * first, EM_EINVAL (message set, naming the row of the block and the
 * label) and no sums changed otherwise.  Dense blocks take row tiles that
 * stay in cache, two dgemms each (margins for all classes, then the
 * gradient), so the matrix is read from memory once; the softmax
 * subtracts each row's largest margin.  CSR blocks: plain loops, checked
 * as ml_block_loss_grad's.  0, EM_EINVAL, EM_ECORRUPT or EM_ENOMEM. */
int ml_block_softmax_loss_grad(const ml_block *b, int K, int64_t ldw, const double *W, const double *bias, double *G,
                               double *gb, double *loss);

/* M[i * K + k] = x_i.w_k + b_k for every row of the block (M: rows x K),
 * W and bias as above.  0, or EM_ECORRUPT for a bad CSR block. */
int ml_block_softmax_margins(const ml_block *b, int K, int64_t ldw, const double *W, const double *bias, double *M);

/* Row i of margins m (K of them) turned in place into probabilities,
 * stably (the largest subtracted before exp); returns log sum_k exp(m_k),
 * the log-partition, computed the same way. */
double ml_softmax_row(double *m, int K);

/* Check that every label of the block is an integer from 0 to K-1: 0, or
 * EM_EINVAL with a message naming the block's row and the label. */
int ml_check_class_labels(const ml_block *b, int K);

#endif
