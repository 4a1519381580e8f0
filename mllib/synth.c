/*
 * synth.c -- deterministic synthetic data (em_ml_synthetic).
 *
 * Rows are cut into blocks by a fixed rule (block i holds rows
 * [i*R, (i+1)*R) for R = ml_block_rows of the shape), and an em_range over
 * the block indexes is mapped, a partition at a time, to the blocks.  Every
 * random number comes from a counter-based stream: row r draws from
 * splitmix64 started at a hash of (seed, r), and the hidden weights from a
 * stream of the seed alone.  So a row's values depend only on the seed and
 * its global index, never on which partition or block made it, and the
 * same options give the same data however many partitions there are.
 *
 * Per row: features uniform in [-1, 1) -- all of them when dense; with
 * density d < 1, columns chosen by geometric gaps (each column nonzero with
 * probability d, at the cost of one draw per nonzero, not per column) --
 * then one Gaussian for the noise.  The hidden weights are N(0, 1) scaled
 * so that x.w* has unit variance (a uniform feature has variance 1/3, and
 * about d * cols of them are nonzero): `noise` is then the ratio of noise
 * to signal whatever the shape.  label = 1 if x.w* + noise * N(0,1) > 0.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bigbuf.h"
#include "ctx.h"
#include "block.h"
#include "data.h"
#include "err.h"
#include "mlutil.h"

typedef struct synth_arg {
    int64_t rows, cols, block_rows;
    double density; /* 1: dense */
    double noise;
    uint64_t seed;
} synth_arg;

/* Uniform in [-1, 1) from 64 random bits: a signed 53-bit integer. */
static inline double unif_pm1(uint64_t z) { return (double)((int64_t)z >> 11) * 0x1p-52; }
/* Uniform in (0, 1]. */
static inline double unif_01(uint64_t z) { return (double)((z >> 11) + 1) * 0x1p-53; }
/* One standard normal (Box-Muller, one of the pair). */
static inline double gauss(uint64_t *s) {
    double u1 = unif_01(ml_next64(s)), u2 = unif_01(ml_next64(s));
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static uint64_t row_stream(uint64_t seed, int64_t row) {
    return ml_mix64(seed ^ ml_mix64((uint64_t)row * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull));
}

/* The hidden weights, scaled so that x.w* has unit variance. */
static void hidden_weights(const synth_arg *a, double *w) {
    uint64_t s = ml_mix64(a->seed ^ 0x5EED5EED5EED5EEDull);
    double nz = (double)a->cols * a->density;
    double scale = sqrt(3.0 / (nz > 1 ? nz : 1));
    for (int64_t j = 0; j < a->cols; j++) w[j] = gauss(&s) * scale;
}

static double label_of(double dot, const synth_arg *a, uint64_t *s) {
    double z = dot + (a->noise > 0 ? a->noise * gauss(s) : 0);
    return z > 0 ? 1.0 : 0.0;
}

static int dense_block(const synth_arg *a, const double *w, int64_t lo, int64_t hi, ebuf *buf, em_emitter *out) {
    ml_block b;
    int rc = ml_block_alloc_out(out, buf, ML_DENSE, hi - lo, a->cols, 0, &b);
    if (rc) return rc;
    for (int64_t r = lo; r < hi; r++) {
        uint64_t s = row_stream(a->seed, r);
        double *x = b.x + (r - lo) * a->cols, dot = 0;
        for (int64_t j = 0; j < a->cols; j++) {
            x[j] = unif_pm1(ml_next64(&s));
            dot += x[j] * w[j];
        }
        b.y[r - lo] = label_of(dot, a, &s);
    }
    return ml_block_emit(out, &b);
}

/* Growable CSR scratch for a sparse block whose nnz is known at the end. */
typedef struct csr_scratch {
    int32_t *idx;
    double *val;
    int64_t n, cap;
} csr_scratch;

static int scratch_push(csr_scratch *c, int32_t j, double v) {
    if (c->n == c->cap) {
        int64_t cap = c->cap ? 2 * c->cap : 4096;
        int32_t *i = realloc(c->idx, sizeof *i * (size_t)cap);
        if (i) c->idx = i;
        double *d = i ? realloc(c->val, sizeof *d * (size_t)cap) : NULL;
        if (!d) return em_fail("em_ml_synthetic: out of memory");
        c->val = d;
        c->cap = cap;
    }
    c->idx[c->n] = j;
    c->val[c->n++] = v;
    return 0;
}

static int sparse_block(const synth_arg *a, const double *w, int64_t lo, int64_t hi, csr_scratch *c, double *y,
                        int64_t *indptr, ebuf *buf, em_emitter *out) {
    double lq = log1p(-a->density); /* < 0 */
    c->n = 0;
    indptr[0] = 0;
    for (int64_t r = lo; r < hi; r++) {
        uint64_t s = row_stream(a->seed, r);
        double dot = 0, j = -1;
        for (;;) {
            j += 1 + floor(log(unif_01(ml_next64(&s))) / lq);
            if (j >= (double)a->cols) break;
            double v = unif_pm1(ml_next64(&s));
            int rc = scratch_push(c, (int32_t)j, v);
            if (rc) return rc;
            dot += v * w[(int64_t)j];
        }
        y[r - lo] = label_of(dot, a, &s);
        indptr[r - lo + 1] = c->n;
    }
    ml_block b;
    int rc = ml_block_alloc_out(out, buf, ML_CSR, hi - lo, a->cols, c->n, &b);
    if (rc) return rc;
    memcpy(b.y, y, sizeof(double) * (size_t)(hi - lo));
    memcpy(b.indptr, indptr, sizeof(int64_t) * (size_t)(hi - lo + 1));
    if (c->n) {
        memcpy(b.idx, c->idx, sizeof(int32_t) * (size_t)c->n);
        memcpy(b.val, c->val, sizeof(double) * (size_t)c->n);
    }
    return ml_block_emit(out, &b);
}

int ml_synth_blocks(int partition, em_iter *in, em_emitter *out, const void *arg);
int ml_synth_blocks(int partition, em_iter *in, em_emitter *out, const void *arg) {
    synth_arg a;
    memcpy(&a, arg, sizeof a);
    int sparse = a.density < 1;
    double *w = malloc(sizeof *w * (size_t)a.cols);
    double *y = sparse ? malloc(sizeof *y * (size_t)a.block_rows) : NULL;
    int64_t *indptr = sparse ? malloc(sizeof *indptr * (size_t)(a.block_rows + 1)) : NULL;
    csr_scratch c = {NULL, NULL, 0, 0};
    ebuf buf = EBUF_INIT;
    em_rec r;
    int rc = (!w || (sparse && (!y || !indptr))) ? em_fail("em_ml_synthetic: out of memory") : 0;
    if (!rc) hidden_weights(&a, w);
    while (!rc && (rc = em_iter_next(in, &r)) == 1) {
        int64_t blk = em_i64_dec(r.val), lo = blk * a.block_rows, hi = lo + a.block_rows;
        if (hi > a.rows) hi = a.rows;
        rc = sparse ? sparse_block(&a, w, lo, hi, &c, y, indptr, &buf, out) : dense_block(&a, w, lo, hi, &buf, out);
    }
    bb_free(&buf);
    free(c.idx);
    free(c.val);
    free(w);
    free(y);
    free(indptr);
    return rc < 0 ? rc : 0;
}

static em_ml_data *ml_synthetic_unguarded(em_ctx *ctx, const em_ml_synth_opts *o) {
    if (!ctx || !o || o->rows < 0 || o->cols < 1 || o->cols > INT32_MAX || !(o->density >= 0 && o->density <= 1) ||
        !(o->noise >= 0) || !isfinite(o->noise)) {
        em__seterr(EM_EINVAL, "em_ml_synthetic: bad options (rows >= 0, 1 <= cols < 2^31, 0 <= density <= 1, "
                              "noise >= 0)");
        return NULL;
    }
    double density = o->density > 0 ? o->density : 1;
    synth_arg a = {o->rows, o->cols, ml_block_rows(o->cols, density, o->block_rows), density, o->noise, o->seed};
    int64_t nblocks = (o->rows + a.block_rows - 1) / a.block_rows;
    int parts = o->partitions > 0 ? o->partitions : ml_default_parallelism(ctx);
    if (parts > nblocks) parts = nblocks > 0 ? (int)nblocks : 1;
    em_rdd *idx = em_range(ctx, 0, nblocks, 1, parts);
    em_rdd *blocks = idx ? em_map_partitions(idx, ml_synth_blocks, &a, sizeof a) : NULL;
    if (blocks) em_set_name(blocks, "synthetic blocks");
    return ml_data_wrap(ctx, blocks, o->cols, density < 1);
}

em_ml_data *em_ml_synthetic(em_ctx *ctx, const em_ml_synth_opts *o) {
    CTX_GUARDED_PTR(ctx, ml_synthetic_unguarded(ctx, o));
}
