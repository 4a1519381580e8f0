/*
 * ember_ml.h -- mllib: data sets of labeled rows packed into cached blocks,
 * tree_aggregate-based optimizers, and binary logistic regression on
 * OpenBLAS.  Built on the public API of ember.h (RDDs, tree_aggregate,
 * broadcast, cache), so it runs wherever ember runs; the text readers also
 * use the engine's own text-split planning and line reader directly, each
 * task parsing a run of consecutive splits straight into blocks, which
 * measured 1.6x faster than going through em_text_file and map_partitions.
 * A data set read from text has o->partitions partitions (the default
 * parallelism when 0), however finely ember.files.maxPartitionBytes cuts
 * the files (fewer only when there are fewer splits): every training
 * iteration costs a task and a partial aggregate per partition.
 *
 * Data.  A data set (em_ml_data) is an RDD whose records are blocks: up to
 * ember.ml rows of one partition packed as a dense row-major matrix of
 * doubles (or CSR for sparse data) with their labels, cached in memory.  The
 * training loop only ever reads blocks; it never touches per-row records.
 * Readers parse text in parallel (LIBSVM, CSV) or read a dense binary file;
 * a generator makes deterministic synthetic data.
 *
 * Training.  Each iteration broadcasts the weights, computes the loss and
 * gradient of every block (X.w then X^T.r on row tiles small enough to stay
 * in cache, so the matrix is read once), sums them with em_tree_aggregate,
 * and updates on the driver: full-batch gradient descent or L-BFGS.
 *
 * Conventions as in ember.h: int functions return 0 or a negative EM_E*
 * code, pointer functions NULL, and em_errmsg() names the cause (for a
 * malformed input line: the file and the line number).  Objects returned
 * belong to the caller and are freed with their *_free function; a data set
 * must be freed before its context is closed.
 */
#ifndef EMBER_ML_H
#define EMBER_ML_H

#include <stdint.h>

#include "ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ data */

typedef struct em_ml_data em_ml_data;

/* Rows per block: blocks hold at most this many rows and at most about
 * 16 MiB (whichever is smaller); 0 means the default (4096). */
typedef struct em_ml_load_opts {
    int partitions;          /* <= 0: ember.default.parallelism */
    int64_t num_features;    /* LIBSVM: 0 = the largest index seen */
    int label_col;           /* CSV: column of the label (0-based; -1 = last) */
    int skip_header;         /* CSV: the first line of each file is a header */
    int block_rows;
} em_ml_load_opts;

/* LIBSVM text: "label index:value index:value ..." with 1-based ascending
 * indices (as Spark's loadLibSVMFile), labels 0/1 (-1 is read as 0).  Sparse
 * (CSR) blocks.  A malformed line fails with "FILE:LINE: reason", and so
 * does any other label ("FILE:LINE: label '2' (labels must be 0 or 1; -1
 * is read as 0)"): mllib's models are binary classifiers. */
EM_API em_ml_data *em_ml_read_libsvm(em_ctx *ctx, const char *path, const em_ml_load_opts *o);
/* CSV of numbers, one row per line, the label (0 or 1) in o->label_col.
 * Dense.  A malformed line or another label fails with "FILE:LINE: reason"
 * ("FILE:LINE: label 2 in field 31 (labels must be 0 or 1)"). */
EM_API em_ml_data *em_ml_read_csv(em_ctx *ctx, const char *path, const em_ml_load_opts *o);
/* The dense binary format: the 8 bytes "EMBLDNS1", u64le rows, u64le cols,
 * then per row: f64le label, cols x f64le features.  Read in parallel by
 * row ranges. */
EM_API em_ml_data *em_ml_read_dense(em_ctx *ctx, const char *path, const em_ml_load_opts *o);
/* Write a data set in the dense binary format (sparse data densified). */
EM_API int em_ml_write_dense(em_ml_data *d, const char *path);

/* Deterministic synthetic data: rows x cols features uniform in [-1, 1]
 * (with density < 1, each feature is nonzero with that probability and the
 * blocks are CSR), labels 1 where x.w* + noise * N(0,1) > 0 for a hidden
 * weight vector w* drawn from the seed.  Same arguments, same data,
 * whatever the partitioning. */
typedef struct em_ml_synth_opts {
    int64_t rows, cols;
    double density;          /* 1 (or 0): dense */
    double noise;
    uint64_t seed;
    int partitions;
    int block_rows;
} em_ml_synth_opts;
EM_API em_ml_data *em_ml_synthetic(em_ctx *ctx, const em_ml_synth_opts *o);

EM_API int64_t em_ml_rows(const em_ml_data *d);
EM_API int64_t em_ml_cols(const em_ml_data *d);
EM_API int em_ml_is_sparse(const em_ml_data *d);
/* The RDD of blocks (cached), e.g. for em_lineage. */
EM_API em_rdd *em_ml_blocks(em_ml_data *d);
/* Unpersist the blocks and free the data set. */
EM_API void em_ml_free(em_ml_data *d);

/* Column means and standard deviations (sample, n-1), computed with
 * em_tree_aggregate.  means/stds: malloc'd arrays of cols doubles. */
EM_API int em_ml_column_stats(em_ml_data *d, double **means, double **stds);
/* A new, cached data set with every column scaled to unit deviation and,
 * for dense data, centered to zero mean (sparse data is only scaled, to
 * keep it sparse, as Spark's StandardScaler withMean=false).  Columns with
 * zero deviation are left at zero.  d is unchanged (free it when done). */
EM_API em_ml_data *em_ml_standardize(em_ml_data *d);
/* As em_ml_standardize, with the statistics given (cols means and
 * deviations, e.g. from em_ml_column_stats on the training data, to scale
 * other data the same way).  means NULL, or sparse data: scaled only.
 * NULL with EM_EINVAL for a negative or non-finite value. */
EM_API em_ml_data *em_ml_standardize_with(em_ml_data *d, const double *means, const double *stds);

/* ------------------------------------------------- logistic regression */

enum { EM_ML_GD = 1, EM_ML_LBFGS = 2 };

typedef struct em_ml_logreg_opts {
    int optimizer;           /* EM_ML_GD (default) or EM_ML_LBFGS */
    int max_iter;            /* default 100 */
    double step;             /* GD step size, default 1.0 */
    double l2;               /* L2 regularization (0.5 * l2 * |w|^2, intercept excluded) */
    int intercept;           /* fit an intercept (default: set 1) */
    double tol;              /* stop when |w_new - w_old| < tol * max(|w_new|, 1); default 1e-6 */
    int history;             /* L-BFGS history, default 10 */
    int depth;               /* tree_aggregate depth, default 2 */
    /* Called on the driver after each iteration (may be NULL). */
    void (*progress)(int iter, double loss, void *ctx);
    void *progress_ctx;
} em_ml_logreg_opts;

/* Fill o with the defaults above. */
EM_API void em_ml_logreg_defaults(em_ml_logreg_opts *o);

typedef struct em_ml_model {
    int64_t cols;
    double *w;               /* cols weights */
    double b;                /* intercept */
    int iterations;          /* iterations run */
    double loss;             /* final training loss (mean log loss + L2 term) */
} em_ml_model;

/* Train binary logistic regression (labels 0/1: a row with another label
 * fails the first job, naming the value).  The loss is the mean log loss
 * over rows plus 0.5 * l2 * |w|^2.  *out: free with em_ml_model_free. */
EM_API int em_ml_logreg_train(em_ml_data *d, const em_ml_logreg_opts *o, em_ml_model **out);
EM_API void em_ml_model_free(em_ml_model *m);
/* P(label = 1 | x) for a dense row of cols features. */
EM_API double em_ml_predict_prob(const em_ml_model *m, const double *x);
EM_API int em_ml_predict(const em_ml_model *m, const double *x); /* prob >= 0.5 */
/* Make a model trained on standardized rows apply to raw ones: given the
 * means and deviations the training data was standardized with (means
 * NULL if it was only scaled, as sparse data is), w_j becomes w_j / std_j
 * and b becomes b - sum_j w_j mean_j / std_j; a column of deviation 0 gets
 * weight 0 (em_ml_standardize zeroed it).  Predictions on a raw row then
 * equal the old model's on the standardized row.  EM_EINVAL for a negative
 * or non-finite statistic, with m unchanged. */
EM_API int em_ml_model_unstandardize(em_ml_model *m, const double *means, const double *stds);
/* Text form: "ember-logreg 1", "cols N", "intercept B", then N weights, one
 * per line, printed exactly (%.17g). */
EM_API int em_ml_model_save(const em_ml_model *m, const char *path);
EM_API em_ml_model *em_ml_model_load(const char *path);

/* The loss (mean log loss, no L2 term) and gradient of the mean log loss
 * of the whole data set at (w, b), computed over the RDD.  grad: cols + 1
 * doubles (the last is d/db).  For tests and for custom optimizers. */
EM_API int em_ml_logreg_loss_grad(em_ml_data *d, const double *w, double b, double *loss, double *grad);

/* ------------------------------------------------------------- metrics */

typedef struct em_ml_metrics {
    double log_loss;         /* mean */
    double accuracy;
    double auc;              /* area under the ROC curve (ties averaged) */
    int64_t rows;
} em_ml_metrics;
/* All three computed over the RDD of blocks. */
EM_API int em_ml_evaluate(const em_ml_model *m, em_ml_data *d, em_ml_metrics *out);

#ifdef __cplusplus
}
#endif
#endif /* EMBER_ML_H */
