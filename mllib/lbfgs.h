/*
 * lbfgs.h -- the optimizers of mllib, on the driver: full-batch gradient
 * descent and L-BFGS over an objective given as a callback.  Each call of
 * the callback is, for the trainers, one distributed pass over the data
 * (em_tree_aggregate); the optimizers themselves only do vector arithmetic
 * on the driver.  Internal to mllib.
 */
#ifndef EM_ML_LBFGS_H
#define EM_ML_LBFGS_H

#include <stdint.h>

/* f(x) and its gradient g (n doubles).  0 or a negative EM_E* code (message
 * set), which stops the optimizer with that code. */
typedef int (*ml_objective_fn)(const double *x, double *f, double *g, void *ctx);

typedef struct ml_optim {
    int max_iter;
    double step;            /* gradient descent: the constant step */
    int history;            /* L-BFGS: pairs (s, y) kept */
    double tol;             /* stop when |x_new - x| < tol * max(|x_new|, 1) */
    void (*progress)(int iter, double f, void *ctx);
    void *progress_ctx;
} ml_optim;

/* Minimize from x (n doubles, updated in place).  *iters: iterations run;
 * *fx: f at the final x.  Gradient descent: x -= step * g.  L-BFGS: the
 * two-loop recursion over the last `history` pairs (pairs with s.y <= 1e-10
 * are skipped), a backtracking Armijo line search (c1 = 1e-4, halving from
 * step 1; 1/|g| when there is no history yet); it stops early, without an
 * error, when the line search finds no decrease (x is then the last
 * accepted point).  Both report f after every iteration through progress.
 * Return 0 or the first failure of the objective (or EM_ENOMEM); x then
 * holds the last accepted point. */
int ml_gd(int64_t n, double *x, ml_objective_fn f, void *ctx, const ml_optim *o, int *iters, double *fx);
int ml_lbfgs(int64_t n, double *x, ml_objective_fn f, void *ctx, const ml_optim *o, int *iters, double *fx);

#endif
