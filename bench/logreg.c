/*
 * logreg.c -- logistic-regression training speed on data read from files
 * and made in memory, beside references measured in the same run on the
 * same numbers:
 *
 *   C fused      bench/ref/fused.c, compiled with -O3 -march=native: one
 *                pass over the rows four at a time (margins, residuals,
 *                gradient), on 2 threads, over the data set in one
 *                contiguous array; a CSR variant, printed for what CSR blocks would cost;
 *   read bound   the data set's bytes over the read bandwidth of a
 *                STREAM-like sum of a 1 GiB array on 2 threads.
 *
 *   logreg [--master M] [--wide RxC] [--tall RxC] [--iters N]
 *          [--only wide|tall] [--data DIR]
 *
 * Defaults: local[2]; wide 10000 x 10000 and tall 100000 x 100; 20
 * iterations of gradient descent.  For each shape the bench makes a data
 * set of its own, deterministically (features k / 10^6 for uniform integers
 * |k| < 10^6, labels from a hidden linear model with noise), and writes it
 * once to DIR (default bench/data, not committed) as a dense binary file
 * (em_ml_read_dense's format), a CSV file (label last) and a LIBSVM file
 * (every feature written, so its blocks are full and stored dense: they
 * are measured against the dense references; the CSR loop's time is
 * printed beside them for what CSR blocks would cost).
 * The same numbers are in every file: k / 10^6 is correctly rounded, as
 * strtod rounds "0.dddddd".  ember then loads each file and trains; and,
 * for comparison, em_ml_synthetic data of the same shape.
 *
 * Figures per source: the load time; how much of the memory holding the
 * cached blocks is on huge pages ("huge H of R MB": the AnonHugePages and
 * the resident size of the mappings /proc/self/smaps shows holding them,
 * found from the blocks' own addresses; local masters only); ms per
 * iteration as the whole training time over the iterations (the measure
 * the targets use; the run also makes one more pass, at the starting weights),
 * the best and median iteration from the progress callback, and the jobs
 * the training ran (iterations + 1: the first pass checks the labels);
 * then that figure over the C fused pass timed again right after the
 * training (the load of a shared machine drifts between the header's
 * figure and a source's), and over the read bound (targets: <= 1.11,
 * i.e. at least 0.9x the loop, and <= 1.33, i.e. 75% of the bound); and
 * the CPU time of the training over the iterations beside the C pass's
 * CPU time (all threads, user and system), which other processes on the
 * machine disturb less than the wall clock.  As a
 * check, the loss at the trained weights is computed by ember and by the C
 * pass on the bench's own arrays: they must agree (for the file sources;
 * the synthetic data are other numbers).  With LOGREG_TRACE set in the
 * environment, each source also prints, on stderr, the time of the passes
 * before the first callback (two evaluations) and of every later one.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "ember.h"
#include "ember_ml.h"
#include "ref/fused.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* User + system CPU seconds of the whole process (all threads): beside the
 * wall clock, a figure the other processes of a shared machine disturb
 * less (they take turns on the cores rather than adding to it). */
static double cpu_now(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
           (double)u.ru_stime.tv_usec / 1e6;
}

static int cmp_f64(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *what, const char *why) {
    fprintf(stderr, "logreg bench: %s: %s\n", what, why);
    exit(1);
}

/* ------------------------------------------------------------ the data */

static uint64_t next64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct dataset {
    int64_t rows, cols;
    int32_t *k;   /* rows x cols: feature (i, j) is k / 10^6 */
    double *x, *y;
} dataset;

/* Make the data set: features, hidden weights (+-1 scaled to a unit-variance
 * margin), labels with noise of a tenth of that. */
static void make_data(dataset *d, int64_t rows, int64_t cols) {
    d->rows = rows;
    d->cols = cols;
    size_t n = (size_t)(rows * cols);
    d->k = malloc(n * sizeof *d->k);
    d->x = malloc(n * sizeof *d->x);
    d->y = malloc((size_t)rows * sizeof *d->y);
    double *w = malloc((size_t)cols * sizeof *w);
    if (!d->k || !d->x || !d->y || !w) die("make_data", "out of memory");
    uint64_t s = 0x10c0ffeeull ^ (uint64_t)rows * 31 ^ (uint64_t)cols;
    double scale = sqrt(3.0 / (double)cols);
    for (int64_t j = 0; j < cols; j++) w[j] = (next64(&s) >> 63 ? 1 : -1) * scale;
    for (int64_t i = 0; i < rows; i++) {
        double dot = 0;
        for (int64_t j = 0; j < cols; j++) {
            int32_t k = (int32_t)(next64(&s) % 1999999) - 999999;
            size_t at = (size_t)(i * cols + j);
            d->k[at] = k;
            d->x[at] = (double)k / 1e6;
            dot += d->x[at] * w[j];
        }
        double u1 = ((double)(next64(&s) >> 11) + 1) * 0x1p-53, u2 = (double)(next64(&s) >> 11) * 0x1p-53;
        d->y[i] = dot + 0.1 * sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2) > 0;
    }
    free(w);
}

/* "0.dddddd" with a sign for k / 10^6; returns the bytes written. */
static int fmt6(char *p, int32_t k) {
    int n = 0;
    if (k < 0) {
        p[n++] = '-';
        k = -k;
    }
    p[n++] = '0';
    p[n++] = '.';
    for (int i = 5; i >= 0; i--) {
        p[n + i] = (char)('0' + k % 10);
        k /= 10;
    }
    return n + 6;
}

static int fmt_int(char *p, int64_t v) {
    char t[24];
    int n = 0, m = 0;
    do t[n++] = (char)('0' + v % 10); while ((v /= 10) > 0);
    while (n) p[m++] = t[--n];
    return m;
}

/* Write the three files (each through path.tmp, renamed when complete) if
 * they are not there yet. */
static void write_files(const dataset *d, const char *dns, const char *csv, const char *svm) {
    const char *paths[3] = {dns, csv, svm};
    struct stat st;
    char *line = malloc((size_t)d->cols * 20 + 64);
    if (!line) die("write_files", "out of memory");
    for (int f = 0; f < 3; f++) {
        if (stat(paths[f], &st) == 0) continue;
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp", paths[f]);
        FILE *o = fopen(tmp, "wb");
        if (!o) die(tmp, strerror(errno));
        printf("  writing %s\n", paths[f]);
        fflush(stdout);
        if (f == 0) {
            uint64_t h[2] = {(uint64_t)d->rows, (uint64_t)d->cols};
            fwrite("EMBLDNS1", 1, 8, o);
            fwrite(h, 8, 2, o);
        }
        for (int64_t i = 0; i < d->rows; i++) {
            const int32_t *k = d->k + i * d->cols;
            size_t n = 0;
            if (f == 0) {
                fwrite(&d->y[i], 8, 1, o);
                fwrite(d->x + i * d->cols, 8, (size_t)d->cols, o);
                continue;
            }
            if (f == 1) {
                for (int64_t j = 0; j < d->cols; j++) {
                    n += (size_t)fmt6(line + n, k[j]);
                    line[n++] = ',';
                }
                line[n++] = d->y[i] ? '1' : '0';
            } else {
                line[n++] = d->y[i] ? '1' : '0';
                for (int64_t j = 0; j < d->cols; j++) {
                    line[n++] = ' ';
                    n += (size_t)fmt_int(line + n, j + 1);
                    line[n++] = ':';
                    n += (size_t)fmt6(line + n, k[j]);
                }
            }
            line[n++] = '\n';
            fwrite(line, 1, n, o);
        }
        if (fflush(o) || ferror(o) || fclose(o)) die(tmp, strerror(errno));
        if (rename(tmp, paths[f])) die(paths[f], strerror(errno));
    }
    free(line);
}

/* ------------------------------------------------------------ ember */

/* Where the cached blocks live: each block record's address and length,
 * from a job over the cached RDD (on a local master its tasks read the
 * cached batches in place, so the addresses are the cache's own). */
static int block_span(const em_rec *in, em_emitter *out, const void *arg) {
    uint64_t a[2] = {(uint64_t)(uintptr_t)in->val, (uint64_t)in->vlen};
    return em_emit(out, a, sizeof a);
}

typedef struct span {
    uint64_t lo, hi;
} span;

static int cmp_span(const void *a, const void *b) {
    uint64_t x = ((const span *)a)->lo, y = ((const span *)b)->lo;
    return (x > y) - (x < y);
}

/* Whether the cached blocks sit on huge pages: the MB of the blocks, and
 * the resident and AnonHugePages MB of the mappings (/proc/self/smaps)
 * that hold them.  The process-wide AnonHugePages cannot tell, since bigbuf
 * reuses one source's mappings for the next.  -1s where it cannot be
 * measured (a cluster master: the blocks are in other processes). */
static void block_pages(em_ml_data *d, const char *master, double *blocks_mb, double *rss_mb, double *huge) {
    *blocks_mb = *rss_mb = *huge = -1;
    if (strncmp(master, "local[", 6) && strcmp(master, "local")) return;
    em_rdd *m = em_map(em_ml_blocks(d), block_span, NULL, 0);
    em_batch *res = NULL;
    if (!m || em_collect(m, &res)) {
        em_rdd_release(m);
        return;
    }
    size_t n = em_batch_count(res);
    span *sp = malloc(sizeof *sp * (n ? n : 1));
    double bytes = 0;
    for (size_t i = 0; sp && i < n; i++) {
        em_rec r;
        uint64_t a[2];
        em_batch_get(res, i, &r);
        memcpy(a, r.val, sizeof a);
        sp[i].lo = a[0];
        sp[i].hi = a[0] + a[1];
        bytes += (double)a[1];
    }
    em_batch_free(res);
    em_rdd_release(m);
    FILE *f = sp ? fopen("/proc/self/smaps", "r") : NULL;
    if (!f) {
        free(sp);
        return;
    }
    qsort(sp, n, sizeof *sp, cmp_span);
    char l[512];
    uint64_t lo = 0, hi = 0;
    int holds = 0;
    double rss = 0, anon_huge = 0, kb;
    while (fgets(l, sizeof l, f)) {
        unsigned long long a, b;
        if (sscanf(l, "%llx-%llx ", &a, &b) == 2) {
            lo = a;
            hi = b;
            holds = 0;
            for (size_t i = 0; i < n && !holds; i++) holds = sp[i].lo < hi && sp[i].hi > lo;
        } else if (holds && sscanf(l, "Rss: %lf kB", &kb) == 1) {
            rss += kb;
        } else if (holds && sscanf(l, "AnonHugePages: %lf kB", &kb) == 1) {
            anon_huge += kb;
        }
    }
    fclose(f);
    free(sp);
    *blocks_mb = bytes / 1e6;
    *rss_mb = rss * 1024 / 1e6;
    *huge = anon_huge * 1024 / 1e6;
}

typedef struct timing {
    double *t;
    int n, cap;
} timing;

static void on_iter(int iter, double loss, void *ctx) {
    timing *tm = ctx;
    if (tm->n < tm->cap) tm->t[tm->n++] = now();
}

typedef struct refs {
    double dense_s, csr_s, bandwidth; /* C fused pass (2 threads), bytes/s */
    double dense_bytes, csr_bytes;
} refs;

/* Load one source, train, print a line.  ref: the bench's arrays (NULL for
 * synthetic data), for the loss check. */
static int run_source(em_ctx *ctx, const char *master, const char *name, const char *kind, const char *path,
                      const dataset *ds, const fused_data *ref, const fused_data *cref, double bytes, double bandwidth,
                      int iters) {
    double t0 = now();
    em_ml_data *d = NULL;
    if (!strcmp(kind, "synthetic")) {
        em_ml_synth_opts so = {ds->rows, ds->cols, 1, 0.1, 17, 0, 0};
        d = em_ml_synthetic(ctx, &so);
    } else if (!strcmp(kind, "dense")) {
        d = em_ml_read_dense(ctx, path, NULL);
    } else if (!strcmp(kind, "csv")) {
        d = em_ml_read_csv(ctx, path, NULL);
    } else {
        em_ml_load_opts lo = {0, ds->cols, -1, 0, 0, 0};
        d = em_ml_read_libsvm(ctx, path, &lo);
    }
    if (!d) {
        fprintf(stderr, "logreg bench: %s: %s\n", name, em_errmsg());
        return -1;
    }
    double t_load = now() - t0, blocks_mb, rss_mb, huge;
    if (em_ml_rows(d) != ds->rows || em_ml_cols(d) != ds->cols) {
        fprintf(stderr, "logreg bench: %s: %lld x %lld, expected %lld x %lld\n", name, (long long)em_ml_rows(d),
                (long long)em_ml_cols(d), (long long)ds->rows, (long long)ds->cols);
        em_ml_free(d);
        return -1;
    }
    block_pages(d, master, &blocks_mb, &rss_mb, &huge);
    em_ml_logreg_opts o;
    em_ml_logreg_defaults(&o);
    o.max_iter = iters;
    o.tol = 0;
    o.step = 1.0;
    timing tm = {calloc((size_t)iters + 2, sizeof(double)), 0, iters + 2};
    o.progress = on_iter;
    o.progress_ctx = &tm;
    em_ml_model *m = NULL;
    em_stats st0, st1;
    em_get_stats(ctx, &st0);
    double c1 = cpu_now();
    tm.t[tm.n++] = now();
    double t1 = tm.t[0];
    int rc = em_ml_logreg_train(d, &o, &m);
    double t_train = now() - t1, cpu_train = cpu_now() - c1;
    em_get_stats(ctx, &st1);
    /* The C pass again, right after: the machine's load drifts. */
    double c2 = cpu_now(), ref_s = fused_time(cref, 2, 3), ref_cpu = (cpu_now() - c2) / 3;
    if (rc) {
        fprintf(stderr, "logreg bench: %s: training: %s\n", name, em_errmsg());
        free(tm.t);
        em_ml_free(d);
        return -1;
    }
    /* The first callback comes after two passes; later ones one apart. */
    int ni = tm.n - 2;
    double dt[64], best = t_train / (iters + 1), median = best;
    if (ni > 64) ni = 64;
    for (int i = 0; i < ni; i++) dt[i] = tm.t[i + 2] - tm.t[i + 1];
    if (getenv("LOGREG_TRACE")) {
        fprintf(stderr, "  %s: first two passes %.1f ms; passes", name, (tm.t[1] - tm.t[0]) * 1e3);
        for (int i = 0; i < ni; i++) fprintf(stderr, " %.1f", dt[i] * 1e3);
        fprintf(stderr, "\n");
    }
    if (ni > 0) {
        qsort(dt, (size_t)ni, sizeof(double), cmp_f64);
        best = dt[0];
        median = dt[ni / 2];
    }
    free(tm.t);
    double per_iter = t_train / iters, bound = bytes / bandwidth;
    char check[96] = "";
    if (ref) {
        double *g = malloc(sizeof(double) * (size_t)(ds->cols + 1)), loss_em = 0;
        rc = em_ml_logreg_loss_grad(d, m->w, m->b, &loss_em, g);
        double loss_c = fused_pass(ref, m->w, m->b, 2, g);
        free(g);
        if (rc || !(fabs(loss_em - loss_c) <= 1e-9 * fabs(loss_c))) {
            fprintf(stderr, "logreg bench: %s: losses differ: ember %.17g, C %.17g\n", name, loss_em, loss_c);
            rc = -1;
        }
        snprintf(check, sizeof check, "loss %.6f = C's", loss_em);
    }
    char pages[64] = "huge pages: not measured";
    if (rss_mb > 0) snprintf(pages, sizeof pages, "huge %4.0f of %4.0f MB", huge, rss_mb);
    printf("  %-12s load %6.2f s  %s | %7.2f ms/iter (best %6.2f, median %6.2f), %lld jobs | "
           "x%.2f C fused (%.2f ms just after), x%.2f bound | CPU %.1f ms/iter, x%.2f the C pass's %.1f | %s\n",
           name, t_load, pages, per_iter * 1e3, best * 1e3, median * 1e3, (long long)(st1.jobs - st0.jobs),
           per_iter / ref_s, ref_s * 1e3, per_iter / bound, cpu_train / iters * 1e3, cpu_train / iters / ref_cpu,
           ref_cpu * 1e3, check);
    fflush(stdout);
    em_ml_model_free(m);
    em_ml_free(d);
    return rc;
}

static int run_shape(em_ctx *ctx, const char *label, int64_t rows, int64_t cols, int iters, const char *dir,
                     const char *master, double bandwidth) {
    dataset ds;
    char dns[4096], csv[4096], svm[4096];
    snprintf(dns, sizeof dns, "%s/lr-%lldx%lld.dns", dir, (long long)rows, (long long)cols);
    snprintf(csv, sizeof csv, "%s/lr-%lldx%lld.csv", dir, (long long)rows, (long long)cols);
    snprintf(svm, sizeof svm, "%s/lr-%lldx%lld.svm", dir, (long long)rows, (long long)cols);
    make_data(&ds, rows, cols);
    write_files(&ds, dns, csv, svm);
    free(ds.k);
    ds.k = NULL;

    /* The CSR form of the same numbers: val is x itself. */
    int64_t *indptr = malloc(sizeof(int64_t) * (size_t)(rows + 1));
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)(rows * cols));
    if (!indptr || !idx) die("run_shape", "out of memory");
    for (int64_t i = 0; i <= rows; i++) indptr[i] = i * cols;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) idx[i * cols + j] = (int32_t)j;
    fused_data dense = {rows, cols, ds.y, ds.x, NULL, NULL, NULL};
    fused_data csr = {rows, cols, ds.y, NULL, indptr, idx, ds.x};
    double dense_s = fused_time(&dense, 2, 5), csr_s = fused_time(&csr, 2, 5);
    double dense_b = (double)rows * (double)(cols + 1) * 8, csr_b = (double)rows * (double)cols * 12 + rows * 16.0;

    printf("== %s: %lld x %lld dense, gradient descent, %d iterations, %s\n", label, (long long)rows, (long long)cols,
           iters, master);
    printf("  C fused (4 rows at a time, 2 threads, -O3 -march=native): dense %.2f ms/pass, CSR %.2f ms/pass\n",
           dense_s * 1e3, csr_s * 1e3);
    printf("  read bound: dense %.2f ms (%.0f MB), CSR %.2f ms (%.0f MB) at %.1f GB/s (STREAM-like sum, 1 GiB, "
           "2 threads)\n",
           dense_b / bandwidth * 1e3, dense_b / 1e6, csr_b / bandwidth * 1e3, csr_b / 1e6, bandwidth / 1e9);
    printf("  targets: ms/iter <= %.2f (0.9x C fused) and <= %.2f (75%% of the bound) for dense blocks\n",
           dense_s / 0.9 * 1e3, dense_b / bandwidth / 0.75 * 1e3);
    fflush(stdout);
    int rc = run_source(ctx, master, "synthetic", "synthetic", NULL, &ds, NULL, &dense, dense_b, bandwidth, iters);
    if (!rc) rc = run_source(ctx, master, "dense file", "dense", dns, &ds, &dense, &dense, dense_b, bandwidth, iters);
    if (!rc) rc = run_source(ctx, master, "csv file", "csv", csv, &ds, &dense, &dense, dense_b, bandwidth, iters);
    /* Every feature is written, so the LIBSVM blocks are stored dense
     * (over 2/3 full): the dense references apply. */
    if (!rc) rc = run_source(ctx, master, "libsvm file", "libsvm", svm, &ds, &csr, &dense, dense_b, bandwidth, iters);
    free(indptr);
    free(idx);
    free(ds.x);
    free(ds.y);
    return rc;
}

static void usage(void) {
    fprintf(stderr, "usage: logreg [--master M] [--wide RxC] [--tall RxC] [--iters N] [--only wide|tall] [--data DIR]\n");
    exit(2);
}

static void shape(const char *s, int64_t *r, int64_t *c) {
    long long a, b;
    if (sscanf(s, "%lldx%lld", &a, &b) != 2 || a < 4 || b < 1 || b > 1000000) usage();
    *r = a;
    *c = b;
}

int main(int argc, char **argv) {
    const char *master = "local[2]", *only = NULL, *dir = "bench/data";
    int64_t wr = 10000, wc = 10000, tr = 100000, tc = 100;
    int iters = 20;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) usage();
        if (!strcmp(argv[i], "--master")) master = argv[++i];
        else if (!strcmp(argv[i], "--wide")) shape(argv[++i], &wr, &wc);
        else if (!strcmp(argv[i], "--tall")) shape(argv[++i], &tr, &tc);
        else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only")) only = argv[++i];
        else if (!strcmp(argv[i], "--data")) dir = argv[++i];
        else usage();
    }
    if (iters < 1 || iters > 60) usage();
    if (mkdir(dir, 0755) && errno != EEXIST) die(dir, strerror(errno));
    em_conf *conf = em_conf_new();
    em_conf_set(conf, "ember.progress", "false");
    em_ctx *ctx = em_open(master, conf);
    em_conf_free(conf);
    if (!ctx) die("em_open", em_errmsg());
    double bandwidth = read_bandwidth();
    int rc = 0;
    if (!rc && (!only || !strcmp(only, "wide"))) rc = run_shape(ctx, "wide", wr, wc, iters, dir, master, bandwidth);
    if (!rc && (!only || !strcmp(only, "tall"))) rc = run_shape(ctx, "tall", tr, tc, iters, dir, master, bandwidth);
    em_close(ctx);
    return rc ? 1 : 0;
}
