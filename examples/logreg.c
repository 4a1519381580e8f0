/*
 * logreg.c -- train logistic regression (binary, or multinomial for K
 * classes) on a data set and report its training metrics.
 *
 *     logreg [--libsvm FILE | --csv FILE [--label-col N] [--header] |
 *             --synthetic ROWSxCOLS] [--classes K] [--lbfgs] [--iters N]
 *            [--step S] [--l2 L] [--master M] [--model OUT]
 *            [--conf KEY=VALUE]...
 *
 * With no data argument it trains on the breast cancer data set shipped
 * in tests/data/ml/breast_cancer.csv (a CSV with a header line, the label
 * last).  Labels are classes 0..K-1: with --classes K the readers accept
 * exactly those (K = 2: 0 or 1, and -1 is read as 0 in LIBSVM files, so
 * {-1, +1} files need --classes 2); without it K is the largest label + 1
 * (em_ml_num_classes).  K = 2 trains the binary model, K > 2 the
 * multinomial (softmax) one, as Spark's family "auto".  Dense
 * data is standardized first (zero mean, unit deviation per column):
 * gradient descent with a constant step needs features on one scale.
 * Training is full-batch gradient descent (step S, default 1.0) or L-BFGS
 * with --lbfgs, for at most N iterations (default 100), with L2
 * regularization L (default 0).  Each iteration's loss is shown on one
 * updating line when stderr is a terminal, else every 10th iteration on a
 * line of its own.  Then the log loss, accuracy and area under the ROC
 * curve on the training data (for K > 2: the multiclass log loss, the
 * accuracy and the K x K confusion matrix), and the model is written to OUT (the text
 * form of em_ml_model_save) when --model is given.  The model written
 * applies to raw rows, as they are in the input: the standardization is
 * folded into its weights and intercept (em_ml_model_unstandardize).
 *
 * MASTER as for every example: local, local[N], local[*]; default
 * $EMBER_MASTER, then local[*].  --conf KEY=VALUE (repeatable) sets any
 * configuration key; ember.progress is false unless set so, as the loss
 * line replaces the progress bar.
 *
 * Every option is checked before any data is loaded.  Exit status: 0 on
 * success; 2 for a usage error, naming the option; 1 on any other failure
 * with the engine's message (a bad input line: FILE:LINE and the reason).
 * Every path after em_open goes through em_close.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ember.h"
#include "ember_ml.h"

static const char usage_text[] =
    "usage: logreg [--libsvm FILE | --csv FILE [--label-col N] [--header] | --synthetic ROWSxCOLS]\n"
    "              [--classes K] [--lbfgs] [--iters N] [--step S] [--l2 L] [--master M] [--model OUT]\n"
    "              [--conf KEY=VALUE]...\n"
    "  Trains logistic regression, binary (2 classes) or multinomial (more), and prints\n"
    "  the training log loss, accuracy and AUC (more classes: the confusion matrix).\n"
    "  Default data: tests/data/ml/breast_cancer.csv (CSV with a header, label last).\n"
    "  --label-col N      CSV: 0-based column of the label (default: the last)\n"
    "  --header           CSV: skip the first line of each file\n"
    "  --synthetic RxC    R rows of C dense features, noise 0.1, seed 42\n"
    "  --classes K        labels are 0..K-1 (K = 2: 0/1, -1 reads as 0 in LIBSVM);\n"
    "                     default: the largest label + 1\n"
    "  --lbfgs            L-BFGS instead of gradient descent\n"
    "  --iters N          at most N iterations (default 100)\n"
    "  --step S           gradient descent step (default 1.0)\n"
    "  --l2 L             L2 regularization (default 0)\n"
    "  --master M         local[N], local[*], local-cluster[W,C], ember://H:P (default: $EMBER_MASTER, else local[*])\n"
    "  --model OUT        write the model, for raw (unstandardized) rows, to OUT\n"
    "  --conf KEY=VALUE   set a configuration key (e.g. ember.task.maxFailures=1)\n";

/* A usage error: what is wrong, where to look; exit status 2. */
static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("logreg: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\nRun 'logreg --help' for usage.\n", stderr);
    va_end(ap);
    return 2;
}

/* Strict numbers: the whole string, in range, or a usage error naming the
 * option.  0 or 2. */
static int parse_int(const char *opt, const char *s, long lo, long hi, int *v) {
    char *end;
    errno = 0;
    long n = strtol(s, &end, 10);
    if (end == s || *end || errno || n < lo || n > hi)
        return bad_usage("%s: '%s' is not an integer from %ld to %ld", opt, s, lo, hi);
    *v = (int)n;
    return 0;
}

static int parse_double(const char *opt, const char *s, double lo, int lo_open, double *v) {
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(x) || x < lo || (lo_open && x == lo))
        return bad_usage("%s: '%s' is not a number %s %g", opt, s, lo_open ? ">" : ">=", lo);
    *v = x;
    return 0;
}

/* "ROWSxCOLS", both positive. */
static int parse_shape(const char *opt, const char *s, long long *rows, long long *cols) {
    char *end, *x = strchr(s, 'x');
    errno = 0;
    if (x) *rows = strtoll(s, &end, 10);
    if (!x || end != x || x == s || errno || *rows < 1) return bad_usage("%s: '%s' is not ROWSxCOLS", opt, s);
    *cols = strtoll(x + 1, &end, 10);
    if (end == x + 1 || *end || errno || *cols < 1) return bad_usage("%s: '%s' is not ROWSxCOLS", opt, s);
    return 0;
}

/* Everything the command line says. */
typedef struct args {
    const char *libsvm, *csv, *synth, *master, *model_out;
    const char *data_opt;       /* the data option given, for messages */
    int header, label_col, classes;
    const char *label_opt;      /* --label-col or --header, if given */
    long long rows, cols;       /* --synthetic */
    em_ml_logreg_opts o;
} args;

/* Parse argv into a and conf.  0, -1 for --help (usage printed), or 2
 * (message printed). */
static int parse_args(int argc, char **argv, args *a, em_conf *conf) {
    int rc = 0;
    if (em_conf_parse_args(conf, &argc, argv)) return bad_usage("%s", em_errmsg());
    for (int i = 1; i < argc && !rc; i++) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = !strcmp(opt, "--libsvm") || !strcmp(opt, "--csv") || !strcmp(opt, "--synthetic") ||
                    !strcmp(opt, "--label-col") || !strcmp(opt, "--classes") || !strcmp(opt, "--iters") || !strcmp(opt, "--step") ||
                    !strcmp(opt, "--l2") || !strcmp(opt, "--master") || !strcmp(opt, "--model");
        if (takes && !val) return bad_usage("%s needs a value", opt);
        if (takes) i++;
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            fputs(usage_text, stdout);
            return -1;
        } else if (!strcmp(opt, "--libsvm") || !strcmp(opt, "--csv") || !strcmp(opt, "--synthetic")) {
            if (a->data_opt) return bad_usage("%s: only one data source (%s was given)", opt, a->data_opt);
            a->data_opt = opt;
            if (!val[0]) return bad_usage("%s: empty value", opt);
            if (opt[2] == 'l') a->libsvm = val;
            else if (opt[2] == 'c') a->csv = val;
            else if (!(rc = parse_shape(opt, val, &a->rows, &a->cols))) a->synth = val;
        } else if (!strcmp(opt, "--label-col")) {
            rc = parse_int(opt, val, 0, 1000000000, &a->label_col);
            a->label_opt = opt;
        } else if (!strcmp(opt, "--header")) {
            a->header = 1;
            a->label_opt = opt;
        } else if (!strcmp(opt, "--classes")) {
            rc = parse_int(opt, val, 2, EM_ML_MAX_CLASSES, &a->classes);
        } else if (!strcmp(opt, "--lbfgs")) {
            a->o.optimizer = EM_ML_LBFGS;
        } else if (!strcmp(opt, "--iters")) {
            rc = parse_int(opt, val, 0, 100000000, &a->o.max_iter);
        } else if (!strcmp(opt, "--step")) {
            rc = parse_double(opt, val, 0, 1, &a->o.step);
        } else if (!strcmp(opt, "--l2")) {
            rc = parse_double(opt, val, 0, 0, &a->o.l2);
        } else if (!strcmp(opt, "--master")) {
            a->master = val;
        } else if (!strcmp(opt, "--model")) {
            if (!val[0]) return bad_usage("%s: empty value", opt);
            a->model_out = val;
        } else {
            return bad_usage(opt[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", opt);
        }
    }
    if (rc) return rc;
    if (a->label_opt && !a->csv) return bad_usage("%s applies to --csv only", a->label_opt);
    if (!a->data_opt) {
        a->csv = "tests/data/ml/breast_cancer.csv";
        a->header = 1;
    }
    return 0;
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

/* Write m to path for raw rows: a copy with the standardization folded in
 * (means NULL and stds NULL: the data was used as read). */
static int save_model(const em_ml_model *m, const double *means, const double *stds, const char *path) {
    em_ml_model raw = *m;
    size_t nw = (size_t)(m->classes ? m->classes : 1) * (size_t)m->cols, nb = (size_t)m->classes;
    if (stds) { /* a copy: K x cols weights (cols for a binary model) and K intercepts */
        raw.w = malloc(sizeof(double) * (nw ? nw : 1));
        raw.intercepts = nb ? malloc(sizeof(double) * nb) : NULL;
        if (!raw.w || (nb && !raw.intercepts)) {
            fprintf(stderr, "logreg: out of memory\n");
            free(raw.w);
            free(raw.intercepts);
            return -1;
        }
        memcpy(raw.w, m->w, sizeof(double) * nw);
        if (nb) memcpy(raw.intercepts, m->intercepts, sizeof(double) * nb);
    }
    int rc = stds ? em_ml_model_unstandardize(&raw, means, stds) : 0;
    if (!rc) rc = em_ml_model_save(&raw, path);
    if (rc) fprintf(stderr, "logreg: %s\n", em_errmsg());
    if (stds) {
        free(raw.w);
        free(raw.intercepts);
    }
    return rc ? -1 : 0;
}

int main(int argc, char **argv) {
    args a;
    memset(&a, 0, sizeof a);
    a.label_col = -1; /* the last column */
    em_ml_logreg_defaults(&a.o);

    /* The loss line replaces ember's per-job progress bar (one job per
     * iteration); --conf ember.progress=true, parsed after, brings it back. */
    em_conf *conf = em_conf_new();
    if (!conf || em_conf_set(conf, "ember.progress", "false") || em_conf_set(conf, "ember.app.name", "logreg")) {
        fprintf(stderr, "logreg: %s\n", em_errmsg());
        em_conf_free(conf);
        return 1;
    }
    int rc = parse_args(argc, argv, &a, conf);
    em_ctx *ctx = rc ? NULL : em_open(a.master, conf);
    em_conf_free(conf);
    if (rc) return rc < 0 ? 0 : rc;
    if (!ctx) {
        fprintf(stderr, "logreg: %s\n", em_errmsg());
        return 1;
    }

    /* From here every failure goes to fail: (or, its message printed, to
     * out:), which frees what was made and closes the context. */
    rc = 1;
    em_ml_data *raw = NULL, *d = NULL;
    em_ml_model *m = NULL;
    double *means = NULL, *stds = NULL;
    em_ml_load_opts lo = {0};
    lo.label_col = a.label_col;
    lo.skip_header = a.header;
    lo.classes = a.classes ? a.classes : EM_ML_ANY_CLASSES;
    double t0 = now();
    if (a.libsvm) {
        raw = em_ml_read_libsvm(ctx, a.libsvm, &lo);
    } else if (a.csv) {
        raw = em_ml_read_csv(ctx, a.csv, &lo);
    } else {
        em_ml_synth_opts so = {a.rows, a.cols, 1.0, 0.1, 42, 0, 0};
        raw = em_ml_synthetic(ctx, &so);
    }
    if (!raw) goto fail;
    if (em_ml_is_sparse(raw)) { /* used as read */
        d = raw;
        raw = NULL;
    } else { /* standardized with statistics kept, to fold into the model */
        if (em_ml_column_stats(raw, &means, &stds) || !(d = em_ml_standardize_with(raw, means, stds))) goto fail;
        em_ml_free(raw);
        raw = NULL;
    }
    double t1 = now();
    printf("data: %lld rows x %lld columns (%s), loaded in %.2f s\n", (long long)em_ml_rows(d),
           (long long)em_ml_cols(d), em_ml_is_sparse(d) ? "sparse" : "dense, standardized", t1 - t0);

    int K = a.classes;
    if (!K && em_ml_num_classes(d, &K)) goto fail; /* the largest label + 1 */
    a.o.classes = K;
    printf("classes: %d (%s)\n", K, K > 2 ? "multinomial" : "binary");
    show s = {isatty(2), a.o.max_iter};
    a.o.progress = progress;
    a.o.progress_ctx = &s;
    int trc = em_ml_logreg_train(d, &a.o, &m);
    if (s.tty) fprintf(stderr, "\n");
    if (trc) goto fail;
    double t2 = now();
    printf("trained (%s): %d iterations in %.2f s, %.1f ms per iteration, final loss %.6f\n",
           a.o.optimizer == EM_ML_LBFGS ? "L-BFGS" : "gradient descent", m->iterations, t2 - t1,
           m->iterations ? 1e3 * (t2 - t1) / m->iterations : 0.0, m->loss);

    if (K == 2) {
        em_ml_metrics mt;
        if (em_ml_evaluate(m, d, &mt)) goto fail;
        printf("training metrics: log loss %.6f, accuracy %.2f%%, AUC %.6f (%lld rows)\n", mt.log_loss,
               100 * mt.accuracy, mt.auc, (long long)mt.rows);
    } else {
        em_ml_class_metrics cm;
        if (em_ml_evaluate_classes(m, d, &cm)) goto fail;
        printf("training metrics: log loss %.6f, accuracy %.2f%% (%lld rows)\n", cm.log_loss, 100 * cm.accuracy,
               (long long)cm.rows);
        printf("confusion matrix (rows: true class, columns: predicted):\n");
        for (int t = 0; t < K && t < 20; t++) {
            for (int q = 0; q < K && q < 20; q++) printf(" %6lld", (long long)cm.confusion[t * K + q]);
            printf("%s\n", K > 20 ? " ..." : "");
        }
        free(cm.confusion);
    }
    if (a.model_out) {
        if (save_model(m, means, stds, a.model_out)) goto out;
        printf("model written to %s%s\n", a.model_out,
               stds ? " (for raw rows: the standardization is folded into the weights)" : "");
    }
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "logreg: %s\n", em_errmsg());
out:
    em_ml_model_free(m);
    free(means);
    free(stds);
    em_ml_free(raw); /* data sets before em_close */
    em_ml_free(d);
    em_close(ctx);
    return rc;
}
