/*
 * tasks.c -- scheduling overhead: tasks per second for a job of many
 * trivial tasks, and the latency of count over a 2-partition RDD, beside
 * references measured in the same run: the time to create and join a
 * thread per task (the cost the pool avoids), and the machine's round trip
 * of a wake between two threads (an eventfd each way, the threads free to
 * run on any core).  A task on a cluster crosses threads at least four
 * times each way (the driver's loop and scheduler, the executor's loop and
 * task thread), so that round trip bounds a trivial job's latency from
 * below; batches and the executors' queues (ember.executor.taskQueue) are
 * how the task rate gets past it.  Beside the count's latency it prints the
 * whole machine's busy CPU time a count (from /proc/stat, over every
 * process: driver, daemons, executors): a latency far above it is time
 * spent waiting for wake-ups, not computing.
 *
 *   tasks [MASTER] [TASKS]     (defaults: local[2], 1000)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

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

/* Counts timed for the latency (its median and p99 are read from them). */
#define NLAT 2001

static void *nothing(void *a) { return a; }

/* The machine's busy CPU time so far (user, nice, system, irq, softirq and
 * steal over every CPU, from /proc/stat's first line), in seconds; -1 when
 * it cannot be read. */
static double cpu_busy(void) {
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                       &v[6], &v[7])
              : 0;
    if (f) fclose(f);
    if (n < 8) return -1;
    long hz = sysconf(_SC_CLK_TCK);
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)(hz > 0 ? hz : 100);
}

static int efd_ping, efd_pong;

static void *ponger(void *a) {
    uint64_t v;
    while (read(efd_ping, &v, sizeof v) == (ssize_t)sizeof v) {
        if (v == 2) break; /* the end */
        v = 1;
        if (write(efd_pong, &v, sizeof v) != (ssize_t)sizeof v) break;
    }
    return a;
}

/* Microseconds of one wake round trip between two threads (median of
 * 2,000), or -1. */
static double wake_round_trip_us(void) {
    efd_ping = eventfd(0, 0);
    efd_pong = eventfd(0, 0);
    pthread_t th;
    if (efd_ping < 0 || efd_pong < 0 || pthread_create(&th, NULL, ponger, NULL)) return -1;
    enum { N = 2000 };
    static double t[N];
    uint64_t v = 1;
    int ok = 1;
    for (int i = 0; i < N && ok; i++) {
        double t0 = now();
        v = 1;
        ok = write(efd_ping, &v, sizeof v) == (ssize_t)sizeof v && read(efd_pong, &v, sizeof v) == (ssize_t)sizeof v;
        t[i] = now() - t0;
    }
    v = 2;
    if (write(efd_ping, &v, sizeof v) != (ssize_t)sizeof v) ok = 0;
    pthread_join(th, NULL);
    close(efd_ping);
    close(efd_pong);
    if (!ok) return -1;
    qsort(t, N, sizeof t[0], cmp);
    return t[N / 2] * 1e6;
}

int main(int argc, char **argv) {
    const char *master = argc > 1 ? argv[1] : "local[2]";
    int ntasks = argc > 2 ? atoi(argv[2]) : 1000;
    em_ctx *ctx = em_open(master, NULL);
    if (!ctx) {
        fprintf(stderr, "em_open: %s\n", em_errmsg());
        return 1;
    }
    int64_t n;
    em_rdd *many = em_range(ctx, 0, ntasks, 1, ntasks);
    em_count(many, &n); /* warm up */
    double best = 1e9;
    for (int r = 0; r < 20; r++) {
        double t0 = now();
        if (em_count(many, &n) || n != ntasks) {
            fprintf(stderr, "count: %s\n", em_errmsg());
            return 1;
        }
        double t = now() - t0;
        if (t < best) best = t;
    }
    em_rdd *two = em_range(ctx, 0, 1000, 1, 2);
    double lat[NLAT];
    double busy0 = cpu_busy();
    for (int r = 0; r < NLAT; r++) {
        double t0 = now();
        em_count(two, &n);
        lat[r] = now() - t0;
    }
    double busy1 = cpu_busy();
    qsort(lat, NLAT, sizeof lat[0], cmp);
    em_stats st;
    em_get_stats(ctx, &st);
    em_close(ctx);

    /* Reference: a thread created and joined per task. */
    double t0 = now();
    for (int i = 0; i < ntasks; i++) {
        pthread_t th;
        pthread_create(&th, NULL, nothing, NULL);
        pthread_join(th, NULL);
    }
    double tref = now() - t0;
    double wake = wake_round_trip_us();

    printf("%d-task job on %s      : %8.0f tasks/s (%.2f ms per job, best of 20)\n", ntasks, master,
           ntasks / best, best * 1e3);
    printf("thread create+join per task : %8.0f tasks/s (reference)\n", ntasks / tref);
    printf("count over 2 partitions     : median %.3f ms, p99 %.3f ms\n", lat[NLAT / 2] * 1e3,
           lat[NLAT * 99 / 100] * 1e3);
    if (busy0 >= 0 && busy1 >= busy0)
        printf("  the machine's busy CPU    : %.3f ms a count, all processes, summed over the CPUs\n",
               (busy1 - busy0) / NLAT * 1e3);
    printf("thread wake round trip      : median %.1f us (reference: eventfd ping-pong, any core)\n", wake);
    printf("tasks run in total          : %lld\n", (long long)st.tasks_run);
    return 0;
}
