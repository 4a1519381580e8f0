/*
 * logreg.c -- train binary logistic regression on a data set and report
 * its training metrics.
 *
 *     logreg [--libsvm FILE | --csv FILE [--label-col N] [--header] |
 *             --synthetic ROWSxCOLS] [--lbfgs] [--iters N] [--step S]
 *            [--l2 L] [--master M] [--model OUT]
 *
 * With no data argument it trains on the breast cancer data set shipped
 * in tests/data/ml/breast_cancer.csv (a CSV with a header line, the label
 * last).  Dense data is standardized first (zero mean, unit deviation per
 * column): gradient descent with a constant step needs features on one
 * scale.  Training is full-batch gradient descent (step S, default 1.0) or
 * L-BFGS with --lbfgs, for at most N iterations (default 100), with L2
 * regularization L (default 0).  Each iteration's loss is shown on one
 * updating line when stderr is a terminal, else every 10th iteration on a
 * line of its own.  Then the log loss, accuracy and area under the ROC
 * curve on the training data, and the model is written to OUT (the text
 * form of em_ml_model_save) when --model is given.
 *
 * MASTER as for every example: local, local[N], local[*]; default
 * $EMBER_MASTER, then local[*].
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ember.h"
#include "ember_ml.h"

static void usage(void) {
    fprintf(stderr,
            "usage: logreg [--libsvm FILE | --csv FILE [--label-col N] [--header] | --synthetic ROWSxCOLS]\n"
            "              [--lbfgs] [--iters N] [--step S] [--l2 L] [--master M] [--model OUT]\n"
            "  Default data: tests/data/ml/breast_cancer.csv (CSV with a header, label last).\n");
    exit(2);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

typedef struct show {
    int tty, max_iter;
} show;

static void progress(int iter, double loss, void *ctx) {
    const show *s = ctx;
    if (s->tty) {
        fprintf(stderr, "\riteration %d/%d  loss %.6f", iter, s->max_iter, loss);
        fflush(stderr);
    } else if (iter % 10 == 0) {
        fprintf(stderr, "iteration %d  loss %.6f\n", iter, loss);
    }
}

int main(int argc, char **argv) {
    const char *libsvm = NULL, *csv = NULL, *synth = NULL, *master = NULL, *model_out = NULL;
    int header = 0, label_col = -1, explicit_data = 0;
    em_ml_logreg_opts o;
    em_ml_logreg_defaults(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--libsvm") && more) libsvm = argv[++i], explicit_data++;
        else if (!strcmp(a, "--csv") && more) csv = argv[++i], explicit_data++;
        else if (!strcmp(a, "--synthetic") && more) synth = argv[++i], explicit_data++;
        else if (!strcmp(a, "--label-col") && more) label_col = atoi(argv[++i]);
        else if (!strcmp(a, "--header")) header = 1;
        else if (!strcmp(a, "--lbfgs")) o.optimizer = EM_ML_LBFGS;
        else if (!strcmp(a, "--iters") && more) o.max_iter = atoi(argv[++i]);
        else if (!strcmp(a, "--step") && more) o.step = atof(argv[++i]);
        else if (!strcmp(a, "--l2") && more) o.l2 = atof(argv[++i]);
        else if (!strcmp(a, "--master") && more) master = argv[++i];
        else if (!strcmp(a, "--model") && more) model_out = argv[++i];
        else usage();
    }
    if (explicit_data > 1) usage();
    if (!explicit_data) {
        csv = "tests/data/ml/breast_cancer.csv";
        header = 1;
    }

    /* The loss line replaces ember's per-job progress bar (one job per
     * iteration would make it flicker). */
    em_conf *conf = em_conf_new();
    em_conf_set(conf, "ember.progress", "false");
    em_ctx *ctx = em_open(master, conf);
    em_conf_free(conf);
    if (!ctx) {
        fprintf(stderr, "logreg: %s\n", em_errmsg());
        return 1;
    }
    em_ml_load_opts lo = {0};
    lo.label_col = label_col;
    lo.skip_header = header;
    double t0 = now();
    em_ml_data *raw = NULL, *d = NULL;
    if (libsvm) {
        raw = em_ml_read_libsvm(ctx, libsvm, &lo);
    } else if (csv) {
        raw = em_ml_read_csv(ctx, csv, &lo);
    } else {
        long long rows = 0, cols = 0;
        if (sscanf(synth, "%lldx%lld", &rows, &cols) != 2 || rows < 1 || cols < 1) usage();
        em_ml_synth_opts so = {rows, cols, 1.0, 0.1, 42, 0, 0};
        raw = em_ml_synthetic(ctx, &so);
    }
    if (!raw) goto fail;
    if (em_ml_is_sparse(raw)) {
        d = raw;
        raw = NULL;
    } else if (!(d = em_ml_standardize(raw))) {
        goto fail;
    } else {
        em_ml_free(raw);
        raw = NULL;
    }
    double t1 = now();
    printf("data: %lld rows x %lld columns (%s), loaded in %.2f s\n", (long long)em_ml_rows(d),
           (long long)em_ml_cols(d), em_ml_is_sparse(d) ? "sparse" : "dense, standardized", t1 - t0);

    show s = {isatty(2), o.max_iter};
    o.progress = progress;
    o.progress_ctx = &s;
    em_ml_model *m = NULL;
    int rc = em_ml_logreg_train(d, &o, &m);
    if (s.tty) fprintf(stderr, "\n");
    if (rc) goto fail;
    double t2 = now();
    printf("trained (%s): %d iterations in %.2f s, %.1f ms per iteration, final loss %.6f\n",
           o.optimizer == EM_ML_LBFGS ? "L-BFGS" : "gradient descent", m->iterations, t2 - t1,
           m->iterations ? 1e3 * (t2 - t1) / m->iterations : 0.0, m->loss);

    em_ml_metrics mt;
    if (em_ml_evaluate(m, d, &mt)) {
        em_ml_model_free(m);
        goto fail;
    }
    printf("training metrics: log loss %.6f, accuracy %.2f%%, AUC %.6f (%lld rows)\n", mt.log_loss,
           100 * mt.accuracy, mt.auc, (long long)mt.rows);
    if (model_out) {
        if (em_ml_model_save(m, model_out)) {
            em_ml_model_free(m);
            goto fail;
        }
        printf("model written to %s\n", model_out);
    }
    em_ml_model_free(m);
    em_ml_free(d);
    em_close(ctx);
    return 0;
fail:
    fprintf(stderr, "logreg: %s\n", em_errmsg());
    em_ml_free(raw);
    em_ml_free(d);
    em_close(ctx);
    return 1;
}
