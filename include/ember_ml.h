/*
 * ember_ml.h -- mllib: data sets of labeled rows packed into cached blocks,
 * tree_aggregate-based optimizers, and logistic regression, binary and
 * multinomial (softmax, K classes), on OpenBLAS.  Built on the public API
 * of ember.h (RDDs, tree_aggregate, broadcast, cache), so it runs wherever
 * ember runs; the text readers also use the engine's own text-split
 * planning and line reader directly, each task parsing a run of
 * consecutive splits straight into blocks, with no per-partition buffer
 * between the lines and the blocks.  A data set read from text has o->partitions partitions (the default
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
 * in cache, so the matrix is read once; for K classes X.W^T and R^T.X, two
 * dgemms per tile), sums them with em_tree_aggregate, and updates on the
 * driver: full-batch gradient descent or L-BFGS.
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
    int classes;             /* the labels allowed: see below */
} em_ml_load_opts;

/* The labels a reader accepts, by em_ml_load_opts.classes: 0 (or 2), the
 * binary labels 0 and 1 (LIBSVM: -1 is read as 0); K > 2, the class
 * labels 0, 1, ..., K-1 (integers, written as numbers: "2", "2.0");
 * EM_ML_ANY_CLASSES, any class label 0 .. EM_ML_MAX_CLASSES-1, the count
 * to be found from the data (em_ml_num_classes).  Any other value of
 * classes fails with EM_EINVAL. */
#define EM_ML_ANY_CLASSES (-1)
#define EM_ML_MAX_CLASSES 65536

/* LIBSVM text: "label index:value index:value ..." with 1-based ascending
 * indices (as Spark's loadLibSVMFile), labels 0/1 (-1 is read as 0), or
 * class labels as o->classes says.  Sparse: CSR blocks, or dense ones
 * where over 2/3 of the entries are nonzeros.  A malformed line
 * fails with "FILE:LINE: reason", and so does a label not allowed
 * ("FILE:LINE: label '2' (labels must be 0 or 1; -1 is read as 0)",
 * "FILE:LINE: label '3' (labels must be integers 0 to 2)"). */
EM_API em_ml_data *em_ml_read_libsvm(em_ctx *ctx, const char *path, const em_ml_load_opts *o);
/* CSV of numbers, one row per line, the label (0 or 1, or a class label
 * as o->classes says) in o->label_col.  Dense.  A malformed line or a
 * label not allowed fails with "FILE:LINE: reason" ("FILE:LINE: label 2
 * in field 31 (labels must be 0 or 1)"). */
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

/* The number of classes of a data set's labels, as Spark infers it: the
 * largest label + 1 (at least 2), in one job over the labels.  Every label
 * must be an integer from 0 to EM_ML_MAX_CLASSES-1: otherwise EM_EINVAL
 * naming the first bad row in the data set's order (0-based) and its
 * label, "row 57 has label 2.5 (class labels must be integers 0 to
 * 65535)".  EM_EEMPTY for a data set without rows. */
EM_API int em_ml_num_classes(em_ml_data *d, int *classes);

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
/* The family of the model (Spark's LogisticRegression.family): auto picks
 * binomial for two classes and multinomial for more, as Spark's "auto". */
enum { EM_ML_AUTO = 0, EM_ML_BINOMIAL = 1, EM_ML_MULTINOMIAL = 2 };

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
    int family;              /* EM_ML_AUTO (default), EM_ML_BINOMIAL or EM_ML_MULTINOMIAL */
    int classes;             /* K; 0 (default): the largest label + 1, at least 2 */
} em_ml_logreg_opts;

/* Fill o with the defaults above. */
EM_API void em_ml_logreg_defaults(em_ml_logreg_opts *o);

/* A binary model (classes 0) has cols weights in w and its intercept in
 * b; a multinomial model (classes K >= 2) has a K x cols matrix in w,
 * row-major (row k holds class k's coefficients), K intercepts in
 * intercepts, and b 0.  A zeroed tail (classes 0, intercepts NULL) is a
 * binary model, so models built by hand as {cols, w, b} stay binary. */
typedef struct em_ml_model {
    int64_t cols;
    double *w;               /* binary: cols weights; multinomial: classes x cols */
    double b;                /* binary: the intercept */
    int iterations;          /* iterations run */
    double loss;             /* final training loss (mean log loss + L2 term) */
    int classes;             /* 0: binary; K >= 2: multinomial over classes 0..K-1 */
    double *intercepts;      /* multinomial: K intercepts; binary: NULL */
} em_ml_model;

/* Train logistic regression.  The family (o->family) and the class count
 * K (o->classes, else the largest label + 1, found with one job as
 * em_ml_num_classes does) decide the model: binomial for K = 2 (labels
 * 0/1: a row with another label fails, naming the value; the loss is the
 * mean log loss plus 0.5 * l2 * |w|^2), multinomial for K > 2 or when
 * asked for (softmax: the mean of -log P(y_i | x_i) with P(k | x) =
 * exp(x.w_k + b_k) / sum_j exp(x.w_j + b_j), plus 0.5 * l2 * |W|^2 over
 * all K x cols coefficients, intercepts excluded: Spark's regParam with
 * elasticNetParam 0).  Multinomial labels must be integers 0..K-1: EM_EINVAL
 * naming the first bad row (0-based, in the data set's order) and its
 * label.  EM_EINVAL for bad options or EM_ML_BINOMIAL with K > 2.  *out:
 * free with em_ml_model_free. */
EM_API int em_ml_logreg_train(em_ml_data *d, const em_ml_logreg_opts *o, em_ml_model **out);
EM_API void em_ml_model_free(em_ml_model *m);
/* P(label = 1 | x) for a dense row of cols features (multinomial models:
 * the softmax probability of class 1).  NAN for a NULL argument. */
EM_API double em_ml_predict_prob(const em_ml_model *m, const double *x);
/* The predicted class: prob >= 0.5 for a binary model, the most probable
 * class (the lowest index among ties) for a multinomial one; -1 for a
 * NULL argument. */
EM_API int em_ml_predict(const em_ml_model *m, const double *x);
/* The probability of every class into probs (K doubles for a multinomial
 * model, 2 for a binary one: 1 - p, p), computed stably (the largest
 * margin subtracted before exp).  Returns the number of classes written,
 * or EM_EINVAL for a NULL argument. */
EM_API int em_ml_predict_probs(const em_ml_model *m, const double *x, double *probs);
/* Make a model trained on standardized rows apply to raw ones: given the
 * means and deviations the training data was standardized with (means
 * NULL if it was only scaled, as sparse data is), w_j becomes w_j / std_j
 * and b becomes b - sum_j w_j mean_j / std_j (for a multinomial model,
 * every class's row and intercept so); a column of deviation 0 gets
 * weight 0 (em_ml_standardize zeroed it).  Predictions on a raw row then
 * equal the old model's on the standardized row.  EM_EINVAL for a negative
 * or non-finite statistic, with m unchanged. */
EM_API int em_ml_model_unstandardize(em_ml_model *m, const double *means, const double *stds);
/* Text form, version 2: "ember-logreg 2", "family binomial" or "family
 * multinomial", "classes K", "cols N", one "intercept B" line (binomial)
 * or K (multinomial), the weights one per line (class 0's N first), then
 * "crc32 XXXXXXXX", the CRC-32 of every byte before that line.  Numbers
 * are printed exactly (%.17g).  The file is written to PATH.tmp and
 * renamed.  em_ml_model_load also reads version 1 ("ember-logreg 1",
 * "cols N", "intercept B", N weights: the binary models saved before);
 * a malformed or corrupt file (a checksum that does not match) fails with
 * EM_ECORRUPT and "PATH:LINE: reason". */
EM_API int em_ml_model_save(const em_ml_model *m, const char *path);
EM_API em_ml_model *em_ml_model_load(const char *path);

/* The loss (mean log loss, no L2 term) and gradient of the mean log loss
 * of the whole data set at (w, b), computed over the RDD.  grad: cols + 1
 * doubles (the last is d/db).  For tests and for custom optimizers. */
EM_API int em_ml_logreg_loss_grad(em_ml_data *d, const double *w, double b, double *loss, double *grad);
/* The same for the multinomial (softmax) loss with K classes: the mean of
 * -log P(y_i | x_i) at the K x cols coefficients w (row-major) and the K
 * intercepts b, no L2 term, and its gradient into grad: K x cols
 * coefficient derivatives (row-major) then K intercept derivatives.
 * Labels must be integers 0..K-1 (EM_EINVAL naming a bad one); K from 2
 * to EM_ML_MAX_CLASSES. */
EM_API int em_ml_softmax_loss_grad(em_ml_data *d, int classes, const double *w, const double *b, double *loss,
                                   double *grad);

/* ------------------------------------------------------------- metrics */

typedef struct em_ml_metrics {
    double log_loss;         /* mean */
    double accuracy;
    double auc;              /* area under the ROC curve (ties averaged) */
    int64_t rows;
} em_ml_metrics;
/* All three computed over the RDD of blocks.  For a multinomial model,
 * the multiclass log loss and accuracy of em_ml_evaluate_classes, and auc
 * NAN (the ROC curve is for two classes). */
EM_API int em_ml_evaluate(const em_ml_model *m, em_ml_data *d, em_ml_metrics *out);

typedef struct em_ml_class_metrics {
    int classes;             /* K */
    double log_loss;         /* mean of -log P(y_i | x_i) */
    double accuracy;
    int64_t rows;
    int64_t *confusion;      /* K x K, row-major: [true class * K + predicted class] */
} em_ml_class_metrics;
/* Multiclass metrics of a model (binary or multinomial) over the data set,
 * in one em_tree_aggregate: the mean log loss, the accuracy and the
 * confusion matrix (malloc'd; free out->confusion).  Labels must be
 * integers 0..K-1 (K = 2 for a binary model): EM_EINVAL naming a bad one.
 * On failure out is zeroed. */
EM_API int em_ml_evaluate_classes(const em_ml_model *m, em_ml_data *d, em_ml_class_metrics *out);

#ifdef __cplusplus
}
#endif
#endif /* EMBER_ML_H */
