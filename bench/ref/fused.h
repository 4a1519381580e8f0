/*
 * fused.h -- the references bench/logreg prints beside ember: a fused
 * logistic-regression pass written as well as plain C allows, and a
 * STREAM-like read bound.  Compiled alone with -O3 -march=native (see the
 * Makefile): the library itself stays portable.
 */
#ifndef EM_BENCH_FUSED_H
#define EM_BENCH_FUSED_H

#include <stdint.h>

/* A data set in one piece: dense (x: rows x cols, row-major) when indptr is
 * NULL, else CSR (indptr: rows + 1; idx 0-based; val). */
typedef struct fused_data {
    int64_t rows, cols;
    const double *y, *x;
    const int64_t *indptr;
    const int32_t *idx;
    const double *val;
} fused_data;

/* One pass on nthreads threads (at most 8): the mean log loss at (w, b),
 * and the mean gradient in g (cols weights, then the intercept's). */
double fused_pass(const fused_data *d, const double *w, double b, int nthreads, double *g);

/* Best time in seconds of runs gradient-descent steps by fused_pass (the
 * weight update included, as in an ember iteration). */
double fused_time(const fused_data *d, int nthreads, int runs);

/* Bytes per second read by 2 threads summing the halves of a 1 GiB buffer,
 * best of 5 (a STREAM-like read; no pass over data in memory can beat it). */
double read_bandwidth(void);

#endif
