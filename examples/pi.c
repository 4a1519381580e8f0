/*
 * pi.c -- estimate pi by Monte Carlo.
 *
 *     pi [SAMPLES [PARTITIONS [MASTER]]]
 *
 * em_range makes the sample numbers 0 .. SAMPLES-1 in PARTITIONS slices.
 * For sample i a filter derives a point (x, y) in the unit square from a
 * hash of i -- no shared random generator, so the result is the same for a
 * given SAMPLES however the work is split and however often a task is
 * retried -- and keeps the points inside the quarter circle; em_count
 * counts them.  pi ~= 4 * inside / SAMPLES.
 *
 * A per-record hash is the usual way to get reproducible randomness in a
 * dataflow job: a function must not keep state between records (it runs on
 * several threads at once), and a seed captured in the argument blob makes
 * different runs differ when wanted (pass it as arg, mix it into the hash).
 *
 * Defaults: 10000000 samples, PARTITIONS = ember.default.parallelism (the
 * number of cores).  MASTER as for every example: local, local[N],
 * local[*]; default $EMBER_MASTER, then local[*].
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"

static void usage(void) {
    fprintf(stderr,
            "usage: pi [SAMPLES [PARTITIONS [MASTER]]]\n"
            "  Estimates pi from SAMPLES (default 10000000) pseudo-random points in\n"
            "  PARTITIONS tasks (default: one per core).\n"
            "  MASTER: local, local[N] or local[*] (default: $EMBER_MASTER, else local[*]).\n");
    exit(1);
}

static void fail(void) {
    fprintf(stderr, "pi: %s\n", em_errmsg());
    exit(1);
}

/* splitmix64: a fast, well-mixed 64-bit hash of a counter. */
static uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A double in [0, 1) from the top 53 bits of a hash. */
static double unit(uint64_t h) { return (double)(h >> 11) * (1.0 / 9007199254740992.0); }

/* filter: keep sample i when its point falls inside the quarter circle.
 * arg holds the 8-byte seed. */
static int inside_circle(const em_rec *in, const void *arg) {
    uint64_t seed;
    memcpy(&seed, arg, sizeof seed);
    uint64_t i = (uint64_t)em_i64_dec(in->val) ^ seed;
    double x = unit(mix64(2 * i)), y = unit(mix64(2 * i + 1));
    return x * x + y * y < 1.0;
}

static long long parse_count(const char *s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || v < 1) usage();
    return v;
}

int main(int argc, char **argv) {
    if (argc > 4) usage();
    long long samples = argc >= 2 ? parse_count(argv[1]) : 10000000;
    int partitions = argc >= 3 ? (int)parse_count(argv[2]) : 0; /* 0: default parallelism */
    const char *master = argc >= 4 ? argv[3] : NULL;

    em_ctx *ctx = em_open(master, NULL);
    if (!ctx) fail();

    uint64_t seed = 0; /* change it (or take it from the command line) for another sample */
    em_rdd *points = em_range(ctx, 0, samples, 1, partitions);
    em_rdd *inside = em_filter(points, inside_circle, &seed, sizeof seed);
    int64_t hits = 0;
    if (!inside || em_count(inside, &hits) != 0) fail();

    double pi = 4.0 * (double)hits / (double)samples;
    printf("samples: %lld in %d partitions on %s (%d cores)\n", samples, em_num_partitions(points),
           em_get(ctx, "ember.master"), em_cores(ctx));
    printf("inside the circle: %" PRId64 "\n", hits);
    printf("pi is roughly %.6f (error %.6f)\n", pi, fabs(pi - M_PI));
    em_close(ctx);
    return 0;
}
