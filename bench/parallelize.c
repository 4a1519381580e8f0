/*
 * parallelize.c -- loading records from the driver into a cached RDD:
 * em_parallelize of N (int64 key, int64 value) pairs, em_persist
 * (EM_MEMORY_ONLY), then em_count, which runs the tasks that store each
 * partition in the executors' block stores.  Beside it, measured in the same
 * run: a plain C memcpy of the same number of bytes (the records' encoded
 * size) on one thread, into a buffer already touched (the memory copy
 * bound), and into a fresh buffer, malloc'd (4 KiB pages) or advised for
 * huge pages as ember's are: the bound plus the first touch of new memory,
 * which any owner of a new copy pays, and which costs far more than the
 * copy on the virtual machines measured.
 *
 *   parallelize [MASTER [NPAIRS [PARTITIONS]]]
 *               (defaults: local[2], 20000000, 8)
 *
 * Pair i has key i and value i * 7 (int64, em_i64_enc), so the records
 * encode to 18 bytes each.  The em_rec array is built once before timing;
 * each of the 3 timed runs declares a new RDD (em_parallelize), persists
 * it, counts it (the load), counts it again (reading the cache), then
 * unpersists and releases it.  Checked in every run: both counts equal
 * NPAIRS; in the last, not timed: the sum of the values (em_reduce over the
 * cached RDD) equals the driver's.  Prints best and median of the load, in
 * seconds and millions of records per second.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "ember.h"

#define RUNS 3

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The records are plain int64 values after em_values; sum them. */
static int sum_i64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return em_emit_i64(out, em_i64_dec(a->val) + em_i64_dec(b->val));
}

/* A buffer advised for transparent huge pages, as ember's large buffers
 * are (engine/buf.c). */
static void *huge_alloc(size_t n) {
    void *p = NULL;
    size_t h = (size_t)2 << 20;
    n = (n + h - 1) & ~(h - 1);
    if (posix_memalign(&p, h, n ? n : h)) return NULL;
    madvise(p, n, MADV_HUGEPAGE);
    return p;
}

static void report(const char *what, const double *t, int n, double nrec) {
    double s[RUNS];
    memcpy(s, t, sizeof s[0] * (size_t)n);
    qsort(s, (size_t)n, sizeof s[0], cmp);
    printf("%-34s: best %.3f s  median %.3f s  (%7.1f M rec/s best)\n", what, s[0], s[n / 2], nrec / s[0] / 1e6);
}

int main(int argc, char **argv) {
    const char *master = argc > 1 ? argv[1] : "local[2]";
    size_t n = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 20000000;
    int parts = argc > 3 ? atoi(argv[3]) : 8;
    uint8_t *kv = huge_alloc(16 * n);
    em_rec *recs = huge_alloc(sizeof *recs * n);
    if (!kv || !recs) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    double t0 = now();
    int64_t want = 0;
    for (size_t i = 0; i < n; i++) {
        em_i64_enc((int64_t)i, kv + 16 * i);
        em_i64_enc((int64_t)i * 7, kv + 16 * i + 8);
        recs[i] = (em_rec){kv + 16 * i, 8, kv + 16 * i + 8, 8};
        want += (int64_t)i * 7;
    }
    double tbuild = now() - t0;
    size_t bytes = n * 18; /* varint(9) key varint(8) value */

    em_ctx *ctx = em_open(master, NULL);
    if (!ctx) {
        fprintf(stderr, "em_open: %s\n", em_errmsg());
        return 1;
    }
    double tload[RUNS], tdecl[RUNS], tstore[RUNS], tread[RUNS];
    for (int r = 0; r < RUNS; r++) {
        int64_t c1 = -1, c2 = -1;
        t0 = now();
        em_rdd *rdd = em_parallelize(ctx, recs, n, parts);
        double t1 = now();
        if (!rdd || !em_persist(rdd, EM_MEMORY_ONLY) || em_count(rdd, &c1)) {
            fprintf(stderr, "load: %s\n", em_errmsg());
            return 1;
        }
        double t2 = now();
        if (em_count(rdd, &c2)) {
            fprintf(stderr, "count: %s\n", em_errmsg());
            return 1;
        }
        tread[r] = now() - t2;
        tload[r] = t2 - t0;
        tdecl[r] = t1 - t0;
        tstore[r] = t2 - t1;
        if (c1 != (int64_t)n || c2 != (int64_t)n) {
            fprintf(stderr, "wrong count: %lld and %lld, expected %zu\n", (long long)c1, (long long)c2, n);
            return 1;
        }
        if (r == RUNS - 1 && n) { /* the cached bytes are the records given */
            em_rdd *v = em_values(rdd);
            em_batch *b = NULL;
            em_rec out;
            if (!v || em_reduce(v, sum_i64, NULL, 0, &b) || em_batch_get(b, 0, &out) ||
                em_i64_dec(out.val) != want) {
                fprintf(stderr, "wrong sum of values: %s\n", em_errmsg());
                return 1;
            }
            em_batch_free(b);
            em_rdd_release(v);
        }
        em_unpersist(rdd);
        em_rdd_release(rdd);
    }
    em_close(ctx);

    /* References: the same bytes copied by one thread. */
    uint8_t *src = malloc(bytes ? bytes : 1), *dst = malloc(bytes ? bytes : 1);
    if (!src || !dst) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    memset(src, 1, bytes);
    memset(dst, 2, bytes);
    double tcopy[RUNS], tfresh[RUNS], thuge[RUNS];
    for (int r = 0; r < RUNS; r++) {
        t0 = now();
        memcpy(dst, src, bytes);
        tcopy[r] = now() - t0;
        t0 = now();
        uint8_t *f = malloc(bytes ? bytes : 1);
        if (!f) return 1;
        memcpy(f, src, bytes);
        tfresh[r] = now() - t0;
        __asm__ volatile("" : : "r"(f) : "memory");
        free(f);
        t0 = now();
        if (!(f = huge_alloc(bytes))) return 1;
        memcpy(f, src, bytes);
        thuge[r] = now() - t0;
        __asm__ volatile("" : : "r"(f) : "memory");
        free(f);
    }
    free(src);
    free(dst);
    free(recs);
    free(kv);

    printf("%zu pairs (%.0f MB encoded), %d partitions, %s; em_rec array built in %.3f s\n", n, bytes / 1e6, parts,
           master, tbuild);
    report("load: parallelize+persist+count", tload, RUNS, (double)n);
    printf("  each run (the first touches new memory): %.3f %.3f %.3f s\n", tload[0], tload[1], tload[2]);
    report("  of which em_parallelize", tdecl, RUNS, (double)n);
    report("  of which persist+count", tstore, RUNS, (double)n);
    report("count of the cached RDD", tread, RUNS, (double)n);
    report("memcpy, one thread (bound)", tcopy, RUNS, (double)n);
    report("memcpy into fresh malloc (4 KiB)", tfresh, RUNS, (double)n);
    report("memcpy into fresh huge-page buf", thuge, RUNS, (double)n);
    double s[RUNS], c[RUNS];
    memcpy(s, tload, sizeof s);
    memcpy(c, tcopy, sizeof c);
    qsort(s, RUNS, sizeof s[0], cmp);
    qsort(c, RUNS, sizeof c[0], cmp);
    printf("load / memcpy bound (best)        : %.1fx\n", s[0] / c[0]);
    return 0;
}
