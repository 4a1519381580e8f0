/*
 * median.c -- a running median (see median.h).
 */
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "median.h"

/* Heap order: a max-heap (max 1) or a min-heap (max 0). */
static int above(uint64_t a, uint64_t b, int max) { return max ? a > b : a < b; }

static void sift_up(uint64_t *h, int i, int max) {
    uint64_t v = h[i];
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!above(v, h[p], max)) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
}

static void sift_down(uint64_t *h, int n, int max) {
    if (!n) return;
    uint64_t v = h[0];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && above(h[c + 1], h[c], max)) c++;
        if (!above(h[c], v, max)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
}

/* Room for want values in *h: 0 or EM_ENOMEM. */
static int grow(uint64_t **h, int *cap, int want) {
    if (*cap >= want) return 0;
    int c = *cap ? *cap : 32;
    while (c < want) c *= 2;
    uint64_t *p = realloc(*h, sizeof *p * (size_t)c);
    if (!p) return EM_ENOMEM;
    *h = p;
    *cap = c;
    return 0;
}

/* Add v to a heap with room for it. */
static void push(uint64_t *h, int *n, uint64_t v, int max) {
    h[(*n)++] = v;
    sift_up(h, *n - 1, max);
}

static uint64_t pop(uint64_t *h, int *n, int max) {
    uint64_t top = h[0];
    h[0] = h[--*n];
    sift_down(h, *n, max);
    return top;
}

int rm_add(run_median *m, uint64_t v) {
    /* Room first, so that the rebalancing below cannot fail halfway:
     * either heap may take one more before it gives one back. */
    int want = (m->nlo > m->nhi ? m->nlo : m->nhi) + 2;
    if (grow(&m->lo, &m->caplo, want) || grow(&m->hi, &m->caphi, want)) return EM_ENOMEM;
    if (m->nhi && v < m->hi[0]) push(m->lo, &m->nlo, v, 1);
    else push(m->hi, &m->nhi, v, 0);
    if (m->nhi > m->nlo + 1) push(m->lo, &m->nlo, pop(m->hi, &m->nhi, 0), 1);
    else if (m->nlo > m->nhi) push(m->hi, &m->nhi, pop(m->lo, &m->nlo, 1), 0);
    return 0;
}

void rm_free(run_median *m) {
    free(m->lo);
    free(m->hi);
    memset(m, 0, sizeof *m);
}
