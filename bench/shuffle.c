/*
 * shuffle.c -- shuffle throughput: reduce_by_key and sort_by_key over
 * generated (int64, int64) pairs.  bench/run.sh runs it on
 * local-cluster[2,1] and local[2] and, in the same run, the same work on
 * Dask distributed (bench/shuffle_dask.py), then prints the ratios.
 *
 *   shuffle MASTER [NPAIRS [NKEYS [PARTITIONS]]]
 *                  (defaults: 20000000, 1000000, 8 = 4 x the 2 cores)
 *
 * Input, generated inside the tasks (a range of PARTITIONS partition
 * numbers, then a flat_map making each partition's pairs), persisted in
 * memory and materialized with count before any timing:
 *   reduce: pair j (0 <= j < NPAIRS) has key splitmix64(2j) % NKEYS and
 *           value 1 + splitmix64(2j + 1) % 100;
 *   sort:   pair j has key splitmix64'(2j) as a signed int64 (another
 *           seed) and the same kind of value.
 * splitmix64(i) is the finalizer of splitmix64 applied to SEED + (i + 1) *
 * 0x9e3779b97f4a7c15, so any partition's pairs can be made on their own
 * and bench/shuffle_dask.py generates exactly the same data with numpy.
 * Partition p holds pairs [p * NPAIRS / P, (p + 1) * NPAIRS / P).
 *
 * Timed, 3 runs each (a new RDD every run, so no shuffle output is reused):
 *   reduce_by_key  em_reduce_by_key(input, int64 sum) then em_count;
 *   sort_by_key    em_sort_by_key(input, ascending) -- its declaration runs
 *                  the sampling job -- then em_count, which reads and sorts
 *                  every reduce partition.
 * Both use the input's partition count.  Prints best and median, in
 * seconds and millions of input records per second.
 *
 * Checked once, after the timed runs (not timed): the driver regenerates
 * every pair itself.  reduce: ember's sum of the input values (em_reduce,
 * before timing) equals the driver's; the result's record count equals the
 * number of distinct keys the driver saw; every collected (key, sum) equals
 * the driver's sum for that key.  sort: the count equals NPAIRS; take(5) is
 * non-decreasing and starts at the driver's smallest key; each partition is
 * non-decreasing, and its first key is not below the previous partition's
 * last (a map_partitions over the sorted RDD).  A mismatch exits 1.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember.h"

#define RUNS 3
#define SEED_REDUCE 0x5eedULL
#define SEED_SORT 0x50b7ULL
#define GAMMA 0x9e3779b97f4a7c15ULL

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static uint64_t splitmix(uint64_t seed, uint64_t i) {
    uint64_t z = seed + (i + 1) * GAMMA;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* What the generator needs, passed as the flat_map's argument blob. */
typedef struct gen_arg {
    int64_t npairs, nkeys, parts;
    int64_t sort; /* 0: reduce input, 1: sort input */
} gen_arg;

static int64_t part_start(const gen_arg *g, int64_t p) { return (int64_t)((__int128)g->npairs * p / g->parts); }

/* Pair j of the input. */
static void make_pair(const gen_arg *g, int64_t j, int64_t *k, int64_t *v) {
    uint64_t seed = g->sort ? SEED_SORT : SEED_REDUCE;
    uint64_t a = splitmix(seed, 2 * (uint64_t)j), b = splitmix(seed, 2 * (uint64_t)j + 1);
    *k = g->sort ? (int64_t)a : (int64_t)(a % (uint64_t)g->nkeys);
    *v = 1 + (int64_t)(b % 100);
}

/* flat_map: partition number p -> that partition's pairs. */
static int gen_pairs(const em_rec *in, em_emitter *out, const void *arg) {
    gen_arg g;
    memcpy(&g, arg, sizeof g);
    int64_t p = em_i64_dec(in->val);
    for (int64_t j = part_start(&g, p), end = part_start(&g, p + 1); j < end; j++) {
        int64_t k, v;
        uint8_t kb[8], vb[8];
        make_pair(&g, j, &k, &v);
        em_i64_enc(k, kb);
        em_i64_enc(v, vb);
        int rc = em_emit_pair(out, kb, 8, vb, 8);
        if (rc) return rc;
    }
    return 0;
}

static int sum(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return em_emit_i64(out, em_i64_dec(a->val) + em_i64_dec(b->val));
}

/* map_partitions over the sorted RDD: one record per partition, 32 bytes:
 * count, first key, last key, 1 if its keys never decrease. */
static int part_order(int partition, em_iter *in, em_emitter *out, const void *arg) {
    em_rec r;
    int64_t n = 0, first = 0, last = 0, ok = 1;
    int rc;
    while ((rc = em_iter_next(in, &r)) == 1) {
        int64_t k = em_i64_dec(r.key);
        if (n == 0) first = k;
        else if (k < last) ok = 0;
        last = k;
        n++;
    }
    if (rc < 0) return rc;
    uint8_t o[32];
    em_i64_enc(n, o);
    em_i64_enc(first, o + 8);
    em_i64_enc(last, o + 16);
    em_i64_enc(ok, o + 24);
    return em_emit(out, o, sizeof o);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *op, const char *master, int64_t npairs, double *t) {
    qsort(t, RUNS, sizeof t[0], cmp_double);
    char label[64];
    snprintf(label, sizeof label, "ember %s", master);
    printf("%-13s %-28s %9" PRId64 " recs  best %7.3f s %7.2f M rec/s  median %7.3f s %7.2f M rec/s\n", op, label,
           npairs, t[0], npairs / t[0] / 1e6, t[RUNS / 2], npairs / t[RUNS / 2] / 1e6);
    fflush(stdout);
}

static int fail(const char *what) {
    fprintf(stderr, "shuffle: %s: %s\n", what, em_errmsg());
    return 1;
}

/* Generate, persist and materialize one input; returns its seconds in *t. */
static em_rdd *make_input(em_ctx *ctx, const gen_arg *g, double *t) {
    double t0 = now();
    em_rdd *seeds = em_range(ctx, 0, g->parts, 1, (int)g->parts);
    em_rdd *in = em_persist(em_flat_map(seeds, gen_pairs, g, sizeof *g), EM_MEMORY_ONLY);
    em_rdd_release(seeds);
    int64_t n;
    if (!in || em_count(in, &n)) return NULL;
    if (n != g->npairs) {
        fprintf(stderr, "shuffle: generated %" PRId64 " pairs, expected %" PRId64 "\n", n, g->npairs);
        exit(1);
    }
    *t = now() - t0;
    return in;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: shuffle MASTER [NPAIRS [NKEYS [PARTITIONS]]]\n");
        return 1;
    }
    const char *master = argv[1];
    gen_arg g = {argc > 2 ? atoll(argv[2]) : 20000000, argc > 3 ? atoll(argv[3]) : 1000000,
                 argc > 4 ? atoll(argv[4]) : 8, 0};
    if (g.npairs < 1 || g.nkeys < 1 || g.parts < 1 || g.parts > 100000) {
        fprintf(stderr, "shuffle: NPAIRS, NKEYS and PARTITIONS must be positive\n");
        return 1;
    }
    int bad = 0;

    /* The driver's own view of the reduce input: sum per key. */
    int64_t *key_sum = calloc((size_t)g.nkeys, sizeof *key_sum);
    if (!key_sum) {
        fprintf(stderr, "shuffle: out of memory\n");
        return 1;
    }
    int64_t total = 0, distinct = 0;
    for (int64_t j = 0; j < g.npairs; j++) {
        int64_t k, v;
        make_pair(&g, j, &k, &v);
        if (!key_sum[k]) distinct++; /* values are >= 1 */
        key_sum[k] += v;
        total += v;
    }

    em_ctx *ctx = em_open(master, NULL);
    if (!ctx) return fail("em_open");
    printf("shuffle on %s (%d cores): %" PRId64 " pairs of (int64, int64), %" PRId64
           " keys drawn for reduce (%" PRId64 " distinct), %" PRId64 " partitions\n",
           master, em_cores(ctx), g.npairs, g.nkeys, distinct, g.parts);

    /* ---- reduce_by_key ---- */
    double tgen;
    em_rdd *in = make_input(ctx, &g, &tgen);
    if (!in) return fail("reduce input");
    em_rdd *vals = em_values(in);
    em_batch *b;
    em_rec r;
    if (!vals || em_reduce(vals, sum, NULL, 0, &b) || em_batch_get(b, 0, &r)) return fail("input sum");
    int64_t in_sum = em_i64_dec(r.val);
    em_batch_free(b);
    em_rdd_release(vals);
    printf("  reduce input generated and persisted in %.3f s; sum of values %" PRId64 " (driver: %" PRId64 ")\n", tgen,
           in_sum, total);
    if (in_sum != total) bad = 1;

    double t[RUNS];
    int64_t n = 0;
    for (int i = 0; i < RUNS; i++) {
        double t0 = now();
        em_rdd *red = em_reduce_by_key(in, sum, NULL, 0, 0);
        if (!red || em_count(red, &n)) return fail("reduce_by_key");
        t[i] = now() - t0;
        if (i < RUNS - 1) em_rdd_release(red);
        else {
            /* Check the last result whole: every key's sum. */
            int64_t got = 0, wrong = 0, out_sum = 0;
            if (em_collect(red, &b)) return fail("collect reduce_by_key");
            size_t pos = 0;
            while (em_batch_next(b, &pos, &r) == 1) {
                int64_t k = em_i64_dec(r.key), s = em_i64_dec(r.val);
                got++;
                out_sum += s;
                if (k < 0 || k >= g.nkeys || key_sum[k] != s) wrong++;
            }
            em_batch_free(b);
            em_rdd_release(red);
            printf("  reduce_by_key: %" PRId64 " keys (driver: %" PRId64 "), sum of sums %" PRId64
                   ", %" PRId64 " keys with a wrong sum\n",
                   n, distinct, out_sum, wrong);
            if (n != distinct || got != n || out_sum != total || wrong) bad = 1;
        }
    }
    /* Dropped, but not released before the end: in cluster mode neither
     * em_unpersist nor em_rdd_release reaches the executors' block stores
     * (engine/rdd.c and engine/context.c remove blocks from the driver's
     * store only), and a released RDD's id is given to the next new RDD,
     * which then reads the old RDD's cached partitions -- the sort input
     * came out as partly reduce pairs.  Holding the RDD keeps its id. */
    em_unpersist(in);
    em_rdd *reduce_in = in;
    free(key_sum);
    report("reduce_by_key", master, g.npairs, t);

    /* ---- sort_by_key ---- */
    g.sort = 1;
    int64_t min_key = INT64_MAX;
    for (int64_t j = 0; j < g.npairs; j++) {
        int64_t k, v;
        make_pair(&g, j, &k, &v);
        if (k < min_key) min_key = k;
    }
    if (!(in = make_input(ctx, &g, &tgen))) return fail("sort input");
    printf("  sort input generated and persisted in %.3f s\n", tgen);
    for (int i = 0; i < RUNS; i++) {
        double t0 = now();
        em_rdd *sorted = em_sort_by_key(in, 1, 0);
        if (!sorted || em_count(sorted, &n)) return fail("sort_by_key");
        t[i] = now() - t0;
        if (i < RUNS - 1) {
            em_rdd_release(sorted);
            continue;
        }
        /* Check the last result: the first records, then every partition. */
        if (em_take(sorted, 5, &b)) return fail("take");
        int64_t prev = INT64_MIN, first = 0;
        size_t pos = 0;
        int ordered = em_batch_count(b) == 5;
        for (int m = 0; em_batch_next(b, &pos, &r) == 1; m++) {
            int64_t k = em_i64_dec(r.key);
            if (m == 0) first = k;
            if (k < prev) ordered = 0;
            prev = k;
        }
        em_batch_free(b);
        em_rdd *orders = em_map_partitions(sorted, part_order, NULL, 0);
        if (!orders || em_collect(orders, &b)) return fail("partition order");
        int64_t total_n = 0, parts_ok = 0, nparts = 0, have = 0;
        prev = INT64_MIN;
        pos = 0;
        while (em_batch_next(b, &pos, &r) == 1) {
            const uint8_t *o = r.val;
            int64_t pn = em_i64_dec(o), pf = em_i64_dec(o + 8), pl = em_i64_dec(o + 16), pok = em_i64_dec(o + 24);
            nparts++;
            total_n += pn;
            if (pn == 0) {
                parts_ok++;
                continue;
            }
            if (pok && (!have || pf >= prev)) parts_ok++;
            prev = pl;
            have = 1;
        }
        em_batch_free(b);
        em_rdd_release(orders);
        em_rdd_release(sorted);
        printf("  sort_by_key: %" PRId64 " records, first 5 ordered: %s, first key %" PRId64
               " (driver's smallest: %" PRId64 "), %" PRId64 " of %" PRId64 " partitions ordered and in order\n",
               n, ordered ? "yes" : "NO", first, min_key, parts_ok, nparts);
        if (n != g.npairs || total_n != n || !ordered || first != min_key || parts_ok != nparts) bad = 1;
    }
    em_unpersist(in);
    em_rdd_release(in);
    em_rdd_release(reduce_in);
    report("sort_by_key", master, g.npairs, t);

    em_stats st;
    em_get_stats(ctx, &st);
    printf("  shuffle bytes written %.1f MB in all, %" PRId64 " spills\n", st.shuffle_bytes_written / 1048576.0,
           st.spills);
    em_close(ctx);
    if (bad) {
        fprintf(stderr, "shuffle: MISMATCH (see the check lines above)\n");
        return 1;
    }
    return 0;
}
