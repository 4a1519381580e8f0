/*
 * pi.c -- estimate pi by Monte Carlo.
 *
 *     pi [--conf KEY=VALUE]... [SAMPLES [PARTITIONS [MASTER]]]
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
 * local[*]; default $EMBER_MASTER, then local[*].  --conf KEY=VALUE
 * (repeatable) sets any configuration key, e.g. --conf ember.progress=false.
 * Exit status: 0 on success, 2 for a usage error (the message names the
 * argument), 1 on any other failure with the engine's message; every path
 * after em_open closes the context.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"

static const char usage_text[] =
    "usage: pi [--conf KEY=VALUE]... [SAMPLES [PARTITIONS [MASTER]]]\n"
    "  Estimates pi from SAMPLES (default 10000000) pseudo-random points in\n"
    "  PARTITIONS tasks (default: one per core).\n"
    "  MASTER: local[N], local[*], local-cluster[W,C] or ember://HOST:PORT (default: $EMBER_MASTER, else local[*]).\n"
    "  --conf KEY=VALUE  set a configuration key (e.g. ember.progress=false)\n";

/* A usage error: what is wrong, where to look; exit status 2. */
static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("pi: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\nRun 'pi --help' for usage.\n", stderr);
    va_end(ap);
    return 2;
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

/* A whole decimal number in [1, max] into *v; 0, or 2 (message printed). */
static int parse_count(const char *what, const char *s, long long max, long long *v) {
    char *end;
    errno = 0;
    *v = strtoll(s, &end, 10);
    if (end == s || *end || errno || *v < 1 || *v > max)
        return bad_usage("%s '%s' is not a number from 1 to %lld", what, s, max);
    return 0;
}

/* Parse the command line into conf and the arguments.  0, -1 for --help
 * (usage printed), or 2 (message printed). */
static int parse_args(int argc, char **argv, em_conf *conf, long long *samples, int *partitions,
                      const char **master) {
    const char *pos[3];
    int npos = 0, options = 1;
    if (em_conf_parse_args(conf, &argc, argv)) return bad_usage("%s", em_errmsg());
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options && !strcmp(a, "--")) {
            options = 0;
        } else if (options && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
            fputs(usage_text, stdout);
            return -1;
        } else if (options && a[0] == '-' && a[1]) {
            return bad_usage("unknown option '%s'", a);
        } else if (npos == 3) {
            return bad_usage("unexpected argument '%s' (at most SAMPLES, PARTITIONS and MASTER)", a);
        } else {
            pos[npos++] = a;
        }
    }
    long long p = 0;
    *samples = 10000000;
    if (npos >= 1 && parse_count("SAMPLES", pos[0], INT64_MAX, samples)) return 2;
    if (npos >= 2 && parse_count("PARTITIONS", pos[1], 1000000, &p)) return 2;
    if (npos >= 3 && !pos[2][0]) return bad_usage("empty MASTER");
    *partitions = (int)p; /* 0: the default parallelism */
    *master = npos >= 3 ? pos[2] : NULL;
    return 0;
}

int main(int argc, char **argv) {
    long long samples = 0;
    int partitions = 0;
    const char *master = NULL;
    em_conf *conf = em_conf_new();
    if (!conf) {
        fprintf(stderr, "pi: %s\n", em_errmsg());
        return 1;
    }
    int rc = parse_args(argc, argv, conf, &samples, &partitions, &master);
    em_ctx *ctx = rc ? NULL : em_open(master, conf);
    em_conf_free(conf);
    if (rc) return rc < 0 ? 0 : rc;
    if (!ctx) {
        fprintf(stderr, "pi: %s\n", em_errmsg());
        return 1;
    }

    uint64_t seed = 0; /* change it (or take it from the command line) for another sample */
    em_rdd *points = em_range(ctx, 0, samples, 1, partitions);
    em_rdd *inside = em_filter(points, inside_circle, &seed, sizeof seed);
    int64_t hits = 0;
    if (!inside || em_count(inside, &hits) != 0) {
        fprintf(stderr, "pi: %s\n", em_errmsg());
        em_close(ctx); /* also on failure: it removes the scratch directory */
        return 1;
    }

    double pi = 4.0 * (double)hits / (double)samples;
    printf("samples: %lld in %d partitions on %s (%d cores)\n", samples, em_num_partitions(points),
           em_get(ctx, "ember.master"), em_cores(ctx));
    printf("inside the circle: %" PRId64 "\n", hits);
    printf("pi is roughly %.6f (error %.6f)\n", pi, fabs(pi - M_PI));
    em_close(ctx);
    return 0;
}
