/*
 * data.h -- what an em_ml_data is, and the helpers the readers, the
 * generator and the trainers share.  Internal to mllib.
 *
 * Functions that run inside tasks (map_partitions functions, aggregate
 * functions) must be extern, not static, and prefixed ml_: they are named
 * on the wire by image offset when libember is linked statically and by
 * exported symbol when it is a shared library (see engine/fnref.h).
 */
#ifndef EM_ML_DATA_H
#define EM_ML_DATA_H

#include "ember.h"
#include "ember_ml.h"

struct em_ml_data {
    em_ctx *ctx;
    em_rdd *blocks;    /* cached RDD of block records (block.h) */
    int64_t rows, cols;
    int sparse;
};

/* Wrap a (not yet cached) RDD of blocks: caches it, then counts rows and
 * finds cols with one pass (running the pipeline that builds the blocks,
 * so the blocks are cached after it; parse errors surface here).  cols < 0:
 * take the largest column count of the blocks.  NULL on failure. */
em_ml_data *ml_data_wrap(em_ctx *ctx, em_rdd *blocks, int64_t cols, int sparse);

/* A dense data set from in-memory arrays (x: rows x cols row-major, y:
 * rows labels), copied: for tests and small data.  partitions <= 0: the
 * default parallelism. */
em_ml_data *ml_data_from_arrays(em_ctx *ctx, const double *x, const double *y, int64_t rows, int64_t cols,
                                int partitions, int block_rows);

/* Make sure OpenBLAS runs single-threaded inside tasks (ember parallelizes
 * over partitions); idempotent. */
void ml_blas_init(void);

#endif
