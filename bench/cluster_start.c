/*
 * cluster_start.c -- the cost of cluster mode's start: the time from
 * em_open("local-cluster[2,1]") to the first task's result (a master and
 * two workers started, the application registered, the binary uploaded to
 * each worker, two executors started and registered), and the binary's
 * size, beside em_open("local[2]") to its first result in the same run.
 *
 *   cluster_start [RUNS]      (default 5; best and median printed)
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "ember.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Seconds from em_open to the first count's result; < 0 on failure. */
static double first_result(const char *master) {
    double t0 = now();
    em_ctx *ctx = em_open(master, NULL);
    int64_t n = 0;
    if (!ctx || em_count(em_range(ctx, 0, 2, 1, 2), &n) || n != 2) {
        fprintf(stderr, "%s: %s\n", master, em_errmsg());
        em_close(ctx);
        return -1;
    }
    double t = now() - t0;
    em_close(ctx);
    return t;
}

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    if (runs < 1 || runs > 100) runs = 5;
    double c[100], l[100];
    for (int r = 0; r < runs; r++) {
        if ((c[r] = first_result("local-cluster[2,1]")) < 0 || (l[r] = first_result("local[2]")) < 0) return 1;
    }
    qsort(c, (size_t)runs, sizeof c[0], cmp);
    qsort(l, (size_t)runs, sizeof l[0], cmp);
    struct stat sb;
    long long size = stat("/proc/self/exe", &sb) ? -1 : (long long)sb.st_size;
    printf("em_open to first result: local-cluster[2,1] best %.1f ms, median %.1f ms; local[2] best %.2f ms, "
           "median %.2f ms (%d runs)\n",
           c[0] * 1e3, c[runs / 2] * 1e3, l[0] * 1e3, l[runs / 2] * 1e3, runs);
    printf("binary uploaded to each of 2 workers per run: %lld bytes (a fresh work directory each run: no cache)\n",
           size);
    return 0;
}
