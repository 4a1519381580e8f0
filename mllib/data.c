/*
 * data.c -- em_ml_data: wrapping an RDD of blocks, accessors, and data sets
 * made from in-memory arrays.
 */
#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bigbuf.h"
#include "block.h"
#include "data.h"
#include "err.h"
#include "mlutil.h"

void openblas_set_num_threads(int n);

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_single(void) { openblas_set_num_threads(1); }
void ml_blas_init(void) { pthread_once(&blas_once, blas_single); }

/* The shape of every block: (rows, max cols) as a 16-byte record. */
int ml_shape_seq(const em_rec *acc, const em_rec *r, em_emitter *out, const void *arg);
int ml_shape_seq(const em_rec *acc, const em_rec *r, em_emitter *out, const void *arg) {
    int64_t a[2];
    ml_block b;
    ebuf scratch = EBUF_INIT;
    memcpy(a, acc->val, 16);
    int rc = ml_block_view(r, &b, &scratch);
    ebuf_free(&scratch);
    if (rc) return rc;
    a[0] += b.rows;
    if (b.cols > a[1]) a[1] = b.cols;
    return em_emit(out, a, 16);
}

int ml_shape_comb(const em_rec *x, const em_rec *y, em_emitter *out, const void *arg);
int ml_shape_comb(const em_rec *x, const em_rec *y, em_emitter *out, const void *arg) {
    int64_t a[2], b[2];
    memcpy(a, x->val, 16);
    memcpy(b, y->val, 16);
    a[0] += b[0];
    if (b[1] > a[1]) a[1] = b[1];
    return em_emit(out, a, 16);
}

em_ml_data *ml_data_wrap(em_ctx *ctx, em_rdd *blocks, int64_t cols, int sparse) {
    int64_t zero[2] = {0, 0};
    em_rec z = {NULL, 0, zero, 16};
    em_batch *res = NULL;
    em_rec r;
    if (!blocks) return NULL;
    em_ml_data *d = calloc(1, sizeof *d);
    if (!d) {
        em__seterr(EM_ENOMEM, "mllib: out of memory");
        return NULL;
    }
    em_cache(blocks);
    if (em_aggregate(blocks, &z, ml_shape_seq, ml_shape_comb, NULL, 0, &res) || em_batch_get(res, 0, &r)) {
        em_batch_free(res);
        em_unpersist(blocks);
        free(d);
        return NULL;
    }
    int64_t shape[2];
    memcpy(shape, r.val, 16);
    em_batch_free(res);
    d->ctx = ctx;
    d->blocks = blocks;
    d->rows = shape[0];
    d->cols = cols >= 0 ? cols : shape[1];
    d->sparse = sparse;
    return d;
}

int64_t em_ml_rows(const em_ml_data *d) { return d ? d->rows : EM_EINVAL; }
int64_t em_ml_cols(const em_ml_data *d) { return d ? d->cols : EM_EINVAL; }
int em_ml_is_sparse(const em_ml_data *d) { return d ? d->sparse : EM_EINVAL; }
em_rdd *em_ml_blocks(em_ml_data *d) { return d ? d->blocks : NULL; }

void em_ml_free(em_ml_data *d) {
    if (!d) return;
    em_unpersist(d->blocks);
    free(d);
}

/* from_arrays: the data travel in the argument blob of a map_partitions
 * over a range of block indexes. */
typedef struct arr_arg {
    int64_t rows, cols, block_rows;
    /* then rows labels, then rows x cols features */
} arr_arg;

int ml_arrays_block(const em_rec *in, em_emitter *out, const void *arg);
int ml_arrays_block(const em_rec *in, em_emitter *out, const void *arg) {
    arr_arg h;
    memcpy(&h, arg, sizeof h);
    const double *y = (const double *)((const uint8_t *)arg + sizeof h);
    const double *x = y + h.rows;
    int64_t blk = em_i64_dec(in->val), lo = blk * h.block_rows, hi = lo + h.block_rows;
    if (hi > h.rows) hi = h.rows;
    ebuf buf = EBUF_INIT;
    ml_block b;
    int rc = ml_block_alloc_out(out, &buf, ML_DENSE, hi - lo, h.cols, 0, &b);
    if (!rc) {
        memcpy(b.y, y + lo, sizeof(double) * (size_t)(hi - lo));
        memcpy(b.x, x + lo * h.cols, sizeof(double) * (size_t)((hi - lo) * h.cols));
        rc = ml_block_emit(out, &b);
    }
    bb_free(&buf);
    return rc;
}

em_ml_data *ml_data_from_arrays(em_ctx *ctx, const double *x, const double *y, int64_t rows, int64_t cols,
                                int partitions, int block_rows) {
    if (!ctx || !x || !y || rows < 0 || cols < 1) {
        em__seterr(EM_EINVAL, "mllib: bad arrays");
        return NULL;
    }
    arr_arg h = {rows, cols, ml_block_rows(cols, 1, block_rows)};
    size_t n = sizeof h + sizeof(double) * (size_t)(rows + rows * cols);
    uint8_t *arg = malloc(n);
    if (!arg) {
        em__seterr(EM_ENOMEM, "mllib: out of memory");
        return NULL;
    }
    memcpy(arg, &h, sizeof h);
    memcpy(arg + sizeof h, y, sizeof(double) * (size_t)rows);
    memcpy(arg + sizeof h + sizeof(double) * (size_t)rows, x, sizeof(double) * (size_t)(rows * cols));
    int64_t nblocks = (rows + h.block_rows - 1) / h.block_rows;
    if (partitions <= 0) {
        int dp = ml_default_parallelism(ctx);
        partitions = (int)(nblocks < dp ? (nblocks ? nblocks : 1) : dp);
    }
    em_rdd *idx = em_range(ctx, 0, nblocks, 1, partitions);
    em_rdd *blocks = idx ? em_map(idx, ml_arrays_block, arg, n) : NULL;
    free(arg);
    return ml_data_wrap(ctx, blocks, cols, 0);
}
