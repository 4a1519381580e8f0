/*
 * mlutil.h -- small helpers the readers, the generator and the scaler
 * share.  Internal to mllib.
 */
#ifndef EM_ML_UTIL_H
#define EM_ML_UTIL_H

#include <stdint.h>
#include <stdlib.h>

#include "ember.h"

/* The effective ember.default.parallelism (the executor cores unless set),
 * for sources that cap their partition count by the number of blocks. */
static inline int ml_default_parallelism(em_ctx *ctx) {
    const char *v = em_get(ctx, "ember.default.parallelism");
    int n = v ? atoi(v) : 0;
    return n > 0 ? n : em_cores(ctx);
}

/* splitmix64 (Steele, Lea, Flood 2014): the counter-based generator of the
 * synthetic data.  mix is the finalizer; next advances a stream. */
static inline uint64_t ml_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline uint64_t ml_next64(uint64_t *s) { return ml_mix64(*s += 0x9E3779B97F4A7C15ull); }

#endif
