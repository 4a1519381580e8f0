/*
 * hll.c -- HyperLogLog sketches (see hll.h) and the two task functions of
 * em_count_approx_distinct: bi_hll_partition makes a partition's sketch,
 * bi_hll_merge merges two.  The action itself is in compose.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"
#include "err.h"
#include "hll.h"
#include "recfmt.h"

int hll_precision(double relative_sd, int *p) {
    double min_sd = 1.054 / (double)(1u << (HLL_MAX_P / 2));
    if (!(relative_sd >= min_sd && relative_sd < 1))
        return em__seterr(EM_EINVAL,
                          "count_approx_distinct: relative_sd %g is outside [%.4f, 1) (%.4f needs 2^%d registers, the "
                          "most a sketch has)",
                          relative_sd, min_sd, min_sd, HLL_MAX_P);
    int q = (int)ceil(2.0 * log2(1.054 / relative_sd));
    *p = q < HLL_MIN_P ? HLL_MIN_P : q > HLL_MAX_P ? HLL_MAX_P : q;
    return 0;
}

void hll_add(uint8_t *reg, int p, uint64_t h) {
    size_t j = (size_t)(h >> (64 - p));
    uint64_t w = h << p; /* the other 64 - p bits, at the top */
    int rank = w ? __builtin_clzll(w) + 1 : 64 - p + 1;
    if (rank > 64 - p + 1) rank = 64 - p + 1;
    if (reg[j] < rank) reg[j] = (uint8_t)rank;
}

void hll_merge(uint8_t *reg, const uint8_t *other, int p) {
    size_t m = (size_t)1 << p;
    for (size_t j = 0; j < m; j++)
        if (reg[j] < other[j]) reg[j] = other[j];
}

/* Ertl's sigma and tau (2017, algorithm 6). */
static double sigma(double x) {
    if (x == 1) return INFINITY;
    double y = 1, z = x, zp;
    do {
        x *= x;
        zp = z;
        z += x * y;
        y += y;
    } while (z != zp);
    return z;
}

static double tau(double x) {
    if (x == 0 || x == 1) return 0;
    double y = 1, z = 1 - x, zp;
    do {
        x = sqrt(x);
        zp = z;
        y *= 0.5;
        z -= (1 - x) * (1 - x) * y;
    } while (z != zp);
    return z / 3;
}

double hll_estimate(const uint8_t *reg, int p) {
    size_t m = (size_t)1 << p;
    int q = 64 - p;
    double c[66] = {0}; /* registers per rank 0 .. q + 1 */
    for (size_t j = 0; j < m; j++) c[reg[j] <= q + 1 ? reg[j] : q + 1] += 1;
    double md = (double)m;
    double z = md * tau(1 - c[q + 1] / md);
    for (int k = q; k >= 1; k--) z = 0.5 * (z + c[k]);
    z += md * sigma(c[0] / md);
    /* Every register at its largest rank (2^64 and more hashes seen, or a
     * forged sketch): beyond what the sketch can tell -- the cap. */
    double e = md * md / (2 * log(2) * z);
    return isfinite(e) && e < HLL_MAX_ESTIMATE ? e : HLL_MAX_ESTIMATE;
}

/* A 64-bit finalizer (splitmix64's): every output bit depends on every
 * input bit, as the register index and the rank both need. */
static uint64_t fmix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t hll_hash(const em_rec *r) {
    uint64_t h = em_hash(r->val, r->vlen);
    if (r->key) h ^= fmix(em_hash(r->key, r->klen) + 0x9e3779b97f4a7c15ull);
    return fmix(h);
}

size_t hll_sparse_max(int p) { return ((size_t)1 << p) / 8; }

int hll_sketch_check(const uint8_t *s, size_t n, int *p) {
    if (n < 2 || s[1] < HLL_MIN_P || s[1] > HLL_MAX_P) return 0;
    *p = s[1];
    if (s[0] == HLL_DENSE) {
        if (n != 2 + ((size_t)1 << *p)) return 0;
        for (size_t j = 2; j < n; j++)
            if (s[j] > 65 - *p) return 0; /* no rank is that large */
        return 1;
    }
    return s[0] == HLL_SPARSE && (n - 2) % 8 == 0 && (n - 2) / 8 <= hll_sparse_max(*p);
}

double hll_sketch_estimate(const uint8_t *s, size_t n) {
    return s[0] == HLL_SPARSE ? (double)((n - 2) / 8) : hll_estimate(s + 2, s[1]);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sort h[0 .. n) and keep each value once: the count kept. */
static size_t sort_distinct(uint64_t *h, size_t n) {
    qsort(h, n, sizeof *h, cmp_u64);
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (!w || h[w - 1] != h[i]) h[w++] = h[i];
    return w;
}

/* Append a sketch (header and payload) to out. */
static int put_sketch(ebuf *out, int kind, int p, const void *data, size_t len) {
    if (ebuf_reserve(out, 2 + len)) return em__seterr(EM_ENOMEM, "count_approx_distinct: out of memory");
    out->p[out->len++] = (uint8_t)kind;
    out->p[out->len++] = (uint8_t)p;
    if (len) memcpy(out->p + out->len, data, len);
    out->len += len;
    return 0;
}

/* Emit a sketch: header and payload. */
static int emit_sketch(em_emitter *out, int kind, int p, const void *data, size_t len) {
    ebuf b = EBUF_INIT;
    int rc = put_sketch(&b, kind, p, data, len);
    if (!rc) rc = em_emit(out, b.p, b.len);
    ebuf_free(&b);
    return rc;
}

/* A partition -> its sketch; arg: p as one byte. */
int bi_hll_partition(int partition, em_iter *in, em_emitter *out, const void *arg) {
    (void)partition;
    int p = *(const uint8_t *)arg;
    if (p < HLL_MIN_P || p > HLL_MAX_P) return em_fail("count_approx_distinct: bad precision");
    size_t max = hll_sparse_max(p), n = 0;
    uint64_t *h = malloc(sizeof *h * (2 * max + 1)); /* sorted and deduplicated when full */
    uint8_t *reg = NULL;
    if (!h) return EM_ENOMEM;
    em_rec r;
    int rc;
    while ((rc = em_iter_next(in, &r)) == 1) {
        uint64_t x = hll_hash(&r);
        if (reg) {
            hll_add(reg, p, x);
            continue;
        }
        h[n++] = x;
        if (n <= 2 * max) continue;
        if ((n = sort_distinct(h, n)) <= max) continue; /* full: keep the distinct ones */
        if (!(reg = calloc((size_t)1 << p, 1))) { /* too many: registers from here */
            free(h);
            return EM_ENOMEM;
        }
        for (size_t i = 0; i < n; i++) hll_add(reg, p, h[i]);
    }
    if (rc == 0 && reg) {
        rc = emit_sketch(out, HLL_DENSE, p, reg, (size_t)1 << p);
    } else if (rc == 0) {
        size_t w = sort_distinct(h, n);
        if (w <= max) {
            rc = emit_sketch(out, HLL_SPARSE, p, h, w * 8);
        } else if (!(reg = calloc((size_t)1 << p, 1))) {
            rc = EM_ENOMEM;
        } else {
            for (size_t i = 0; i < w; i++) hll_add(reg, p, h[i]);
            rc = emit_sketch(out, HLL_DENSE, p, reg, (size_t)1 << p);
        }
    }
    free(reg);
    free(h);
    return rc;
}

/* Registers of a sketch, into reg (2^p zeroed bytes or a copy). */
static void to_dense(const uint8_t *s, size_t n, int p, uint8_t *reg) {
    if (s[0] == HLL_DENSE) {
        hll_merge(reg, s + 2, p);
        return;
    }
    for (size_t i = 0; i < (n - 2) / 8; i++) {
        uint64_t x;
        memcpy(&x, s + 2 + 8 * i, 8);
        hll_add(reg, p, x);
    }
}

int hll_sketch_merge(const uint8_t *x, size_t nx, const uint8_t *y, size_t ny, ebuf *out) {
    int p, py, rc;
    if (!hll_sketch_check(x, nx, &p) || !hll_sketch_check(y, ny, &py) || p != py)
        return em__seterr(EM_EINVAL, "count_approx_distinct: malformed or mismatched sketches");
    if (x[0] == HLL_SPARSE && y[0] == HLL_SPARSE) { /* the union, while small enough */
        size_t na = (nx - 2) / 8, nb = (ny - 2) / 8, i = 0, j = 0, w = 0;
        uint64_t *u = malloc(sizeof *u * (na + nb + 1));
        if (!u) return em__seterr(EM_ENOMEM, "count_approx_distinct: out of memory");
        while (i < na || j < nb) {
            uint64_t va = 0, vb = 0;
            if (i < na) memcpy(&va, x + 2 + 8 * i, 8);
            if (j < nb) memcpy(&vb, y + 2 + 8 * j, 8);
            uint64_t v = j >= nb || (i < na && va <= vb) ? va : vb;
            if (i < na && va == v) i++;
            if (j < nb && vb == v) j++;
            u[w++] = v;
        }
        if (w <= hll_sparse_max(p)) {
            rc = put_sketch(out, HLL_SPARSE, p, u, w * 8);
        } else {
            uint8_t *reg = calloc((size_t)1 << p, 1);
            if (reg)
                for (size_t k = 0; k < w; k++) hll_add(reg, p, u[k]);
            rc = reg ? put_sketch(out, HLL_DENSE, p, reg, (size_t)1 << p)
                     : em__seterr(EM_ENOMEM, "count_approx_distinct: out of memory");
            free(reg);
        }
        free(u);
        return rc;
    }
    uint8_t *reg = calloc((size_t)1 << p, 1);
    if (!reg) return em__seterr(EM_ENOMEM, "count_approx_distinct: out of memory");
    to_dense(x, nx, p, reg);
    to_dense(y, ny, p, reg);
    rc = put_sketch(out, HLL_DENSE, p, reg, (size_t)1 << p);
    free(reg);
    return rc;
}

/* Two sketches -> their merge. */
int bi_hll_merge(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    (void)arg;
    ebuf m = EBUF_INIT;
    int rc = hll_sketch_merge(a->val, a->vlen, b->val, b->vlen, &m);
    if (!rc) rc = em_emit(out, m.p, m.len);
    ebuf_free(&m);
    return rc;
}
