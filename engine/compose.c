/*
 * compose.c -- Spark's RDD operations that Spark itself builds from other
 * operations, built the same way here: the set operations (intersection,
 * subtract, subtract_by_key over cogroup), sort_by and group_by (over
 * key_by), count_by_value (over reduce_by_key), count_approx_distinct (a
 * HyperLogLog sketch per partition, hll.h, merged by reduce), random_split
 * (one seeded draw per record, shared by the splits), take_sample (count, sample,
 * shuffle on the driver) and zip_with_unique_id.  The pieces that run in
 * tasks are builtins or narrow operators, so every operation here runs
 * unchanged in executor processes.  Helper RDDs belong to the result
 * (compose_begin / compose_end) and are freed with it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "builtins.h"
#include "ctx.h"
#include "err.h"
#include "hll.h"
#include "rdd.h"
#include "recfmt.h"

static int two_rdds(em_rdd *a, em_rdd *b, const char *who) {
    if (!a || !b) return em__seterr(EM_EINVAL, "%s: NULL RDD", who);
    if (a->ctx != b->ctx) return em__seterr(EM_EINVAL, "%s: RDDs of different contexts", who);
    return 0;
}

/* Spark's subtract and subtractByKey keep the left side's partition count. */
static int left_parts(em_rdd *a, int partitions) {
    if (partitions > 0) return partitions;
    return a->nparts > 0 ? a->nparts : 1;
}

/* cogroup of the records of a and b as keys, then bi_setop. */
static em_rdd *set_op(em_rdd *a, em_rdd *b, int partitions, uint8_t kind, const char *who) {
    if (two_rdds(a, b, who)) return NULL;
    rdd_scope sc;
    compose_begin(&sc);
    em_rdd *ka = rdd_op(a, OP_MAP, who, (void *)bi_to_key, NULL, 0);
    em_rdd *kb = ka ? rdd_op(b, OP_MAP, who, (void *)bi_to_key, NULL, 0) : NULL;
    em_rdd *cg = kb ? em_cogroup(ka, kb, partitions) : NULL;
    em_rdd *r = cg ? rdd_op(cg, OP_FLAT_MAP, who, (void *)bi_setop, &kind, 1) : NULL;
    return compose_end(&sc, r);
}

em_rdd *em_intersection(em_rdd *a, em_rdd *b, int partitions) {
    return set_op(a, b, partitions, 0, "intersection");
}

em_rdd *em_subtract(em_rdd *a, em_rdd *b, int partitions) {
    if (two_rdds(a, b, "subtract")) return NULL;
    return set_op(a, b, left_parts(a, partitions), 1, "subtract");
}

em_rdd *em_subtract_by_key(em_rdd *a, em_rdd *b, int partitions) {
    if (two_rdds(a, b, "subtract_by_key")) return NULL;
    rdd_scope sc;
    compose_begin(&sc);
    em_rdd *cg = em_cogroup(a, b, left_parts(a, partitions));
    em_rdd *r = cg ? rdd_op(cg, OP_FLAT_MAP_VALUES, "subtract_by_key", (void *)bi_subtract_values, NULL, 0) : NULL;
    return compose_end(&sc, r);
}

em_rdd *em_sort_by(em_rdd *rdd, em_map_fn fn, const void *arg, size_t arglen, int ascending, int partitions) {
    rdd_scope sc;
    compose_begin(&sc);
    em_rdd *k = em_key_by(rdd, fn, arg, arglen);
    em_rdd *s = k ? em_sort_by_key(k, ascending, partitions) : NULL;
    em_rdd *r = s ? rdd_op(s, OP_MAP, "sort_by", (void *)bi_values, NULL, 0) : NULL;
    return compose_end(&sc, r);
}

em_rdd *em_group_by(em_rdd *rdd, em_map_fn fn, const void *arg, size_t arglen, int partitions) {
    rdd_scope sc;
    compose_begin(&sc);
    em_rdd *k = em_key_by(rdd, fn, arg, arglen);
    em_rdd *r = k ? em_group_by_key(k, partitions) : NULL;
    return compose_end(&sc, r);
}

em_rdd *em_zip_with_unique_id(em_rdd *rdd) {
    return rdd_op(rdd, OP_UNIQUE_ID, "zip_with_unique_id", NULL, NULL, 0);
}

/* ------------------------------------------------------------- actions */

static int count_by_value_unguarded(em_rdd *rdd, em_batch **out) {
    if (out) *out = NULL;
    if (!rdd || !out) return em__seterr(EM_EINVAL, "em_count_by_value: NULL argument");
    rdd_scope internal;
    ctx_scope_begin(&internal);
    em_rdd *ones = rdd_op(rdd, OP_MAP, "count_by_value", (void *)bi_value_one, NULL, 0);
    em_rdd *counts = ones ? em_reduce_by_key(ones, em_sum_i64, NULL, 0, 0) : NULL;
    int rc = counts ? em_collect(counts, out) : em__lasterr();
    ctx_scope_end(&internal);
    return rc;
}

int em_count_by_value(em_rdd *rdd, em_batch **out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, count_by_value_unguarded(rdd, out));
}

/* A HyperLogLog sketch per partition (hll.h), merged by em_reduce, the
 * estimate made on the driver. */
static int count_approx_distinct_unguarded(em_rdd *rdd, double relative_sd, int64_t *out) {
    int p, rc;
    if (out) *out = 0;
    if (!rdd || !out) return em__seterr(EM_EINVAL, "em_count_approx_distinct: NULL argument");
    if ((rc = hll_precision(relative_sd, &p))) return rc;
    uint8_t pb = (uint8_t)p;
    em_batch *b = NULL;
    rdd_scope internal;
    ctx_scope_begin(&internal);
    em_rdd *sk = rdd_op(rdd, OP_MAP_PARTITIONS, "count_approx_distinct", (void *)bi_hll_partition, &pb, 1);
    rc = sk ? em_reduce(sk, bi_hll_merge, NULL, 0, &b) : em__lasterr();
    ctx_scope_end(&internal);
    if (rc == EM_EEMPTY) return 0; /* no partitions: nothing counted */
    if (rc) return rc;
    em_rec r;
    int sp;
    if (em_batch_get(b, 0, &r) || !hll_sketch_check(r.val, r.vlen, &sp) || sp != p) {
        em_batch_free(b);
        return em__seterr(EM_EPROTO, "count_approx_distinct: malformed sketch");
    }
    *out = llround(hll_sketch_estimate(r.val, r.vlen));
    em_batch_free(b);
    return 0;
}

int em_count_approx_distinct(em_rdd *rdd, double relative_sd, int64_t *out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, count_approx_distinct_unguarded(rdd, relative_sd, out));
}

int em_random_split(em_rdd *rdd, const double *weights, int n, uint64_t seed, em_rdd **out) {
    double total = 0;
    if (out)
        for (int i = 0; i < n; i++) out[i] = NULL;
    if (!rdd || !weights || !out) return em__seterr(EM_EINVAL, "em_random_split: NULL argument");
    if (n < 1) return em__seterr(EM_EINVAL, "em_random_split: %d weights (at least 1)", n);
    for (int i = 0; i < n; i++) {
        if (!(weights[i] >= 0) || !isfinite(weights[i]))
            return em__seterr(EM_EINVAL, "em_random_split: weight %d is %g (weights must be finite and >= 0)", i,
                              weights[i]);
        total += weights[i];
    }
    if (!(total > 0)) return em__seterr(EM_EINVAL, "em_random_split: the weights sum to 0");
    double lo = 0, cum = 0;
    for (int i = 0; i < n; i++) {
        cum += weights[i];
        double b[2] = {lo, i == n - 1 ? 1.0 : cum / total}; /* the last range ends at 1 exactly */
        em_rdd *r = rdd_op(rdd, OP_SPLIT, "random_split", NULL, b, sizeof b);
        if (!r) {
            for (int j = 0; j < i; j++) {
                rdd_release(out[j]);
                out[j] = NULL;
            }
            return em__lasterr();
        }
        r->seed = seed;
        out[i] = r;
        lo = b[1];
    }
    return 0;
}

/* Spark's SamplingUtils.computeFractionForSampleSize: a fraction whose
 * sample holds at least num of total records with probability 0.9999. */
static double sample_fraction(double num, double total, int with_replacement) {
    if (with_replacement) {
        double sd = num < 12 ? 9 : 5;
        return fmax(num + sd * sqrt(num), 1e-10) / total;
    }
    double f = num / total, gamma = -log(1e-4) / total;
    return fmin(1, fmax(1e-10, f + gamma + sqrt(gamma * gamma + 2 * gamma * f)));
}

static uint64_t split_mix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The records of b in an order shuffled by rng (Fisher-Yates), the first
 * num of them, as a new batch. */
static int shuffled_prefix(em_batch *b, uint64_t *rng, size_t num, em_batch **out) {
    size_t n = em_batch_count(b), pos = 0;
    em_rec *v = malloc(sizeof *v * (n ? n : 1));
    ebuf e = EBUF_INIT;
    if (!v) return em__seterr(EM_ENOMEM, "em_take_sample: out of memory");
    for (size_t i = 0; i < n; i++) em_batch_next(b, &pos, &v[i]);
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(split_mix(rng) % i);
        em_rec t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
    if (num > n) num = n;
    int rc = 0;
    for (size_t i = 0; i < num && !rc; i++) rc = rec_append(&e, &v[i]) ? em__seterr(EM_ENOMEM, "em_take_sample: out of memory") : 0;
    free(v);
    if (!rc && !(*out = batch_from(&e, num))) rc = EM_ENOMEM;
    if (rc) ebuf_free(&e);
    return rc;
}

static int take_sample_unguarded(em_rdd *rdd, int with_replacement, size_t num, uint64_t seed, em_batch **out) {
    int64_t total;
    em_batch *all = NULL;
    uint64_t rng = seed;
    if (out) *out = NULL;
    if (!rdd || !out) return em__seterr(EM_EINVAL, "em_take_sample: NULL argument");
    ebuf none = EBUF_INIT;
    if (num == 0) return (*out = batch_from(&none, 0)) ? 0 : EM_ENOMEM;
    int rc = em_count(rdd, &total);
    if (rc) return rc;
    if (total == 0) return (*out = batch_from(&none, 0)) ? 0 : EM_ENOMEM;
    if (!with_replacement && num >= (uint64_t)total) {
        rc = em_collect(rdd, &all);
    } else {
        double f = sample_fraction((double)num, (double)total, with_replacement);
        rdd_scope internal;
        ctx_scope_begin(&internal);
        /* Rarely too few: sample again with the next seed, as Spark. */
        for (int round = 0; !rc && (!all || em_batch_count(all) < num); round++) {
            if (round == 100) {
                rc = em__seterr(EM_ESTATE, "em_take_sample: 100 samples held fewer than %zu records", num);
                break;
            }
            em_batch_free(all);
            all = NULL;
            em_rdd *s = em_sample(rdd, with_replacement, f, split_mix(&rng));
            rc = s ? em_collect(s, &all) : em__lasterr();
        }
        ctx_scope_end(&internal);
    }
    if (!rc) rc = shuffled_prefix(all, &rng, num, out);
    em_batch_free(all);
    return rc;
}

int em_take_sample(em_rdd *rdd, int with_replacement, size_t num, uint64_t seed, em_batch **out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, take_sample_unguarded(rdd, with_replacement, num, seed, out));
}
