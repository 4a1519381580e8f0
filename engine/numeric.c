/*
 * numeric.c -- the numeric actions over RDDs of int64 or double records
 * (Spark's DoubleRDDFunctions): stats, sum, mean, variance, stdev,
 * histogram, and max / min.
 *
 * stats is one em_aggregate whose accumulator is a StatCounter (count,
 * mean, m2 = sum of squared deviations, max, min, plain sum), updated per
 * value with Welford's step and merged with Chan's formula, so partials of
 * very different sizes combine without the cancellation a sum of squares
 * suffers.  histogram is one em_aggregate whose accumulator is the array of
 * bucket counts.  The per-record functions are builtins (named by index on
 * the wire), so both run unchanged in executor processes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "err.h"
#include "numeric.h"
#include "rdd.h"

/* The accumulator travels as this struct's bytes: every process of an
 * application runs the same binary, so the layout is the same. */
typedef struct stat_acc {
    int64_t count;
    double mean, m2, max, min, sum;
} stat_acc;

static void stat_zero(stat_acc *s) {
    memset(s, 0, sizeof *s);
    s->max = -INFINITY;
    s->min = INFINITY;
}

/* The value of a record of the given type, as a double. */
static int num_value(const em_rec *r, uint8_t type, double *x, const char *who) {
    if (r->vlen != 8) return em_fail("%s: a record of %zu bytes, not an 8-byte %s", who, r->vlen,
                                     type == EM_NUM_I64 ? "int64" : "double");
    *x = type == EM_NUM_I64 ? (double)em_i64_dec(r->val) : em_f64_dec(r->val);
    return 0;
}

static int acc_get(const em_rec *a, stat_acc *s) {
    if (a->vlen != sizeof *s) return em_fail("stats: malformed accumulator (%zu bytes)", a->vlen);
    memcpy(s, a->val, sizeof *s);
    return 0;
}

int bi_stats_add(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    stat_acc s;
    double x;
    int rc = acc_get(a, &s);
    if (!rc) rc = num_value(b, *(const uint8_t *)arg, &x, "stats");
    if (rc) return rc;
    s.count++;
    double d = x - s.mean;
    s.mean += d / (double)s.count;
    s.m2 += d * (x - s.mean);
    s.sum += x;
    /* NaN propagates to max and min, as Java's Math.max / Math.min. */
    s.max = isnan(x) || isnan(s.max) ? NAN : fmax(s.max, x);
    s.min = isnan(x) || isnan(s.min) ? NAN : fmin(s.min, x);
    return em_emit(out, &s, sizeof s);
}

int bi_stats_merge(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    stat_acc s, t;
    int rc = acc_get(a, &s);
    if (!rc) rc = acc_get(b, &t);
    if (rc) return rc;
    if (!t.count) return em_emit(out, &s, sizeof s);
    if (!s.count) return em_emit(out, &t, sizeof t);
    double n = (double)(s.count + t.count), d = t.mean - s.mean;
    /* Chan et al.: the mean moves by d weighted by the other side's share;
     * when one side dwarfs the other, Spark takes the larger side's mean
     * and adds the small correction the same way. */
    s.mean = t.count * 10 < s.count                 ? s.mean + d * (double)t.count / n
             : s.count * 10 < t.count              ? t.mean - d * (double)s.count / n
                                                   : (s.mean * (double)s.count + t.mean * (double)t.count) / n;
    s.m2 += t.m2 + d * d * (double)s.count * (double)t.count / n;
    s.count += t.count;
    s.sum += t.sum;
    s.max = isnan(s.max) || isnan(t.max) ? NAN : fmax(s.max, t.max);
    s.min = isnan(s.min) || isnan(t.min) ? NAN : fmin(s.min, t.min);
    return em_emit(out, &s, sizeof s);
}

static int check_type(int type, const char *who) {
    if (type != EM_NUM_I64 && type != EM_NUM_F64)
        return em__seterr(EM_EINVAL, "%s: type %d is neither EM_NUM_I64 nor EM_NUM_F64", who, type);
    return 0;
}

int em_num_stats(em_rdd *rdd, int type, em_stat_counter *out) {
    stat_acc z, s;
    em_batch *b = NULL;
    em_rec r;
    if (out) memset(out, 0, sizeof *out);
    if (!rdd || !out) return em__seterr(EM_EINVAL, "em_num_stats: NULL argument");
    if (check_type(type, "em_num_stats")) return EM_EINVAL;
    uint8_t t = (uint8_t)type;
    stat_zero(&z);
    em_rec zero = {NULL, 0, &z, sizeof z};
    int rc = em_aggregate(rdd, &zero, bi_stats_add, bi_stats_merge, &t, 1, &b);
    if (rc) return rc;
    rc = em_batch_get(b, 0, &r);
    if (!rc && r.vlen != sizeof s) rc = em__seterr(EM_EPROTO, "em_num_stats: malformed result");
    if (!rc) {
        memcpy(&s, r.val, sizeof s);
        out->count = s.count;
        out->sum = s.sum;
        out->max = s.max;
        out->min = s.min;
        out->mean = s.count ? s.mean : NAN;
        out->variance = s.count ? s.m2 / (double)s.count : NAN;
        out->sample_variance = s.count > 1 ? s.m2 / (double)(s.count - 1) : NAN;
        out->stdev = sqrt(out->variance);
        out->sample_stdev = sqrt(out->sample_variance);
    }
    em_batch_free(b);
    return rc;
}

int em_sum(em_rdd *rdd, int type, double *out) {
    em_stat_counter s;
    if (out) *out = 0;
    int rc = out ? em_num_stats(rdd, type, &s) : em__seterr(EM_EINVAL, "em_sum: NULL argument");
    if (!rc) *out = s.sum;
    return rc;
}

int em_mean(em_rdd *rdd, int type, double *out) {
    em_stat_counter s;
    if (out) *out = NAN;
    int rc = out ? em_num_stats(rdd, type, &s) : em__seterr(EM_EINVAL, "em_mean: NULL argument");
    if (!rc) *out = s.mean;
    return rc;
}

int em_variance(em_rdd *rdd, int type, double *out) {
    em_stat_counter s;
    if (out) *out = NAN;
    int rc = out ? em_num_stats(rdd, type, &s) : em__seterr(EM_EINVAL, "em_variance: NULL argument");
    if (!rc) *out = s.variance;
    return rc;
}

int em_stdev(em_rdd *rdd, int type, double *out) {
    em_stat_counter s;
    if (out) *out = NAN;
    int rc = out ? em_num_stats(rdd, type, &s) : em__seterr(EM_EINVAL, "em_stdev: NULL argument");
    if (!rc) *out = s.stdev;
    return rc;
}

/* ------------------------------------------------------------ histogram */

/* arg: the type byte, then the bucket bounds (doubles, ascending, nb + 1
 * of them).  The accumulator: nb int64 counts. */
static double bound(const uint8_t *bounds, int i) { /* the blob need not be aligned */
    double d;
    memcpy(&d, bounds + 8 * (size_t)i, 8);
    return d;
}

static int bucket_of(const uint8_t *bounds, int nb, double x) {
    if (isnan(x) || x < bound(bounds, 0) || x > bound(bounds, nb)) return -1;
    if (x == bound(bounds, nb)) return nb - 1; /* the last bucket is closed */
    int lo = 0, hi = nb;                       /* bounds[lo] <= x < bounds[hi] */
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (x < bound(bounds, mid)) hi = mid;
        else lo = mid;
    }
    return lo;
}

int bi_hist_add(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    const uint8_t *p = arg;
    double x;
    size_t nb = a->vlen / 8;
    if (a->vlen % 8 || !nb) return em_fail("histogram: malformed accumulator (%zu bytes)", a->vlen);
    int rc = num_value(b, p[0], &x, "histogram");
    if (rc) return rc;
    int k = bucket_of(p + 1, (int)nb, x);
    if (k < 0) return em_emit(out, a->val, a->vlen); /* outside every bucket */
    /* Only one count changes: the accumulator is copied with it bumped
     * (on the stack for up to 512 buckets). */
    int64_t small[512], *c = a->vlen <= sizeof small ? small : malloc(a->vlen);
    if (!c) return em_fail("histogram: out of memory");
    memcpy(c, a->val, a->vlen);
    c[k]++;
    rc = em_emit(out, c, a->vlen);
    if (c != small) free(c);
    return rc;
}

int bi_hist_merge(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    if (a->vlen != b->vlen || a->vlen % 8 || !a->vlen) return em_fail("histogram: malformed partial counts");
    int64_t *c = malloc(a->vlen), *d = malloc(a->vlen);
    int rc;
    if (!c || !d) rc = em_fail("histogram: out of memory");
    else {
        memcpy(c, a->val, a->vlen);
        memcpy(d, b->val, b->vlen);
        for (size_t i = 0; i < a->vlen / 8; i++) c[i] += d[i];
        rc = em_emit(out, c, a->vlen);
    }
    free(c);
    free(d);
    return rc;
}

/* Count the values of rdd in the nbounds - 1 buckets (one job). */
static int hist_run(em_rdd *rdd, int type, const double *buckets, int nbounds, int64_t *counts) {
    int nb = nbounds - 1;
    size_t alen = 1 + sizeof(double) * (size_t)nbounds;
    uint8_t *arg = malloc(alen);
    int64_t *zc = calloc((size_t)nb, sizeof *zc);
    em_batch *b = NULL;
    em_rec r;
    int rc;
    if (!arg || !zc) rc = em__seterr(EM_ENOMEM, "em_histogram_buckets: out of memory");
    else {
        arg[0] = (uint8_t)type;
        memcpy(arg + 1, buckets, alen - 1);
        em_rec zero = {NULL, 0, zc, sizeof *zc * (size_t)nb};
        rc = em_aggregate(rdd, &zero, bi_hist_add, bi_hist_merge, arg, alen, &b);
        if (!rc) rc = em_batch_get(b, 0, &r);
        if (!rc && r.vlen != sizeof *zc * (size_t)nb) rc = em__seterr(EM_EPROTO, "em_histogram: malformed result");
        if (!rc) memcpy(counts, r.val, r.vlen);
    }
    em_batch_free(b);
    free(arg);
    free(zc);
    return rc;
}

int em_histogram_buckets(em_rdd *rdd, int type, const double *buckets, int nbounds, int64_t *counts) {
    if (!rdd || !buckets || !counts) return em__seterr(EM_EINVAL, "em_histogram_buckets: NULL argument");
    if (check_type(type, "em_histogram_buckets")) return EM_EINVAL;
    if (nbounds < 2) return em__seterr(EM_EINVAL, "em_histogram_buckets: %d bucket bounds (at least 2)", nbounds);
    for (int i = 0; i < nbounds; i++) {
        if (isnan(buckets[i])) return em__seterr(EM_EINVAL, "em_histogram_buckets: bound %d is NaN", i);
        if (i && !(buckets[i] > buckets[i - 1]))
            return em__seterr(EM_EINVAL, "em_histogram_buckets: bounds not ascending (bound %d: %g after %g)", i,
                              buckets[i], buckets[i - 1]);
    }
    return hist_run(rdd, type, buckets, nbounds, counts);
}

int em_histogram(em_rdd *rdd, int type, int bucket_count, double *bounds, int64_t *counts, int *nbuckets) {
    em_stat_counter s;
    if (nbuckets) *nbuckets = 0;
    if (!rdd || !bounds || !counts || !nbuckets) return em__seterr(EM_EINVAL, "em_histogram: NULL argument");
    if (bucket_count < 1) return em__seterr(EM_EINVAL, "em_histogram: bucket count %d < 1", bucket_count);
    int rc = em_num_stats(rdd, type, &s);
    if (rc) return rc;
    if (!s.count || isnan(s.min) || isnan(s.max) || isinf(s.min) || isinf(s.max))
        return em__seterr(s.count ? EM_EINVAL : EM_EEMPTY,
                          "em_histogram: %s (the bucket range needs finite values)",
                          s.count ? "the RDD holds an infinity or NaN" : "empty collection");
    /* Spark's: one bucket [min, min] when every value is equal, else
     * bucket_count even buckets whose last bound is exactly max. */
    int nb = s.min == s.max ? 1 : bucket_count;
    double inc = (s.max - s.min) / nb;
    for (int i = 0; i < nb; i++) bounds[i] = s.min + inc * i;
    bounds[nb] = s.max;
    rc = hist_run(rdd, type, bounds, nb + 1, counts); /* [min, min] has equal bounds */
    if (!rc) *nbuckets = nb;
    return rc;
}

/* ------------------------------------------------------------- max, min */

static int extreme(em_rdd *rdd, em_batch **out, int largest, const char *who) {
    if (out) *out = NULL;
    if (!rdd || !out) return em__seterr(EM_EINVAL, "%s: NULL argument", who);
    int rc = largest ? em_top(rdd, 1, out) : em_take_ordered(rdd, 1, out);
    if (!rc && !em_batch_count(*out)) {
        em_batch_free(*out);
        *out = NULL;
        rc = em__seterr(EM_EEMPTY, "%s: empty collection", who);
    }
    return rc;
}

int em_max(em_rdd *rdd, em_batch **out) { return extreme(rdd, out, 1, "em_max"); }
int em_min(em_rdd *rdd, em_batch **out) { return extreme(rdd, out, 0, "em_min"); }
