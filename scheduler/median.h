/*
 * median.h -- a running median: values added one at a time, their median
 * read at any moment in constant time.  Speculation (tasksched.c) asks for
 * the median duration of a stage's successful attempts every interval;
 * sorting them each time would cost a 100,000-task stage a sort per
 * interval.  Two heaps: the smaller half in a max-heap, the rest (as many,
 * or one more) in a min-heap, whose least is the median.
 */
#ifndef EM_MEDIAN_H
#define EM_MEDIAN_H

#include <stdint.h>

typedef struct run_median {
    uint64_t *lo, *hi; /* max-heap of the smaller half; min-heap of the rest */
    int nlo, nhi, caplo, caphi;
} run_median;

/* Add v: 0, or EM_ENOMEM (v not added). */
int rm_add(run_median *m, uint64_t v);
/* Values added since the last clear. */
static inline int rm_count(const run_median *m) { return m->nlo + m->nhi; }
/* The value at index count/2 of the values sorted ascending (0 when
 * none): Spark's median of task durations. */
static inline uint64_t rm_median(const run_median *m) { return m->nhi ? m->hi[0] : 0; }
/* Forget the values (keeping the memory). */
static inline void rm_clear(run_median *m) { m->nlo = m->nhi = 0; }
void rm_free(run_median *m);

#endif
