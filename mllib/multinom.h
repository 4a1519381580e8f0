/*
 * multinom.h -- multinomial (softmax) logistic regression: the label scan
 * that finds the class count, the distributed loss and gradient, and
 * training.  Internal to mllib; logreg.c dispatches to it.
 */
#ifndef EM_ML_MULTINOM_H
#define EM_ML_MULTINOM_H

#include "ember_ml.h"

/* One job over the labels: *classes = the largest label + 1 (at least 2).
 * Every label must be an integer from 0 to limit - 1, else EM_EINVAL
 * naming the first bad row in the data set's order (0-based) and its
 * label; EM_EEMPTY for a data set without rows.  Not guarded: the caller
 * holds the context (CTX_GUARDED). */
int ml_scan_labels(em_ml_data *d, int limit, int *classes);

/* Train the multinomial model of K classes with the checked options o
 * (labels already scanned).  *out as em_ml_logreg_train's. */
int ml_softmax_train(em_ml_data *d, const em_ml_logreg_opts *o, int K, em_ml_model **out);

#endif
