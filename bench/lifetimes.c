/*
 * lifetimes.c -- does a long-lived driver stay flat?  Runs many small jobs
 * on one context and prints, for the first and the last thousand, the mean
 * time per call, the process's resident memory and ember's live counts
 * (em_stats: RDDs, shuffles, map stages, scratch bytes).  The reference is
 * the same loop's first thousand calls, in the same run: flat means the
 * last thousand cost the same.
 *
 *   lifetimes [JOBS] [TREE_CALLS] [MASTER]
 *
 * Loop 1 (JOBS, default 100000): range -> map -> reduce_by_key -> count,
 * each RDD released after the action.  Loop 2 (TREE_CALLS, default 4000):
 * em_tree_aggregate (depth 3) on one cached RDD, whose internal RDDs are
 * freed by the action itself.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ember.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static long rss_kib(void) {
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static int mod_key(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t m = *(const int64_t *)arg;
    uint8_t k[8];
    em_i64_enc(em_i64_dec(in->val) % m, k);
    return em_emit_pair(out, k, 8, in->val, 8);
}

static int sum(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    (void)arg;
    return em_emit_i64(out, em_i64_dec(a->val) + em_i64_dec(b->val));
}

static void report(em_ctx *c, const char *what, int from, int to, double secs) {
    em_stats st;
    em_get_stats(c, &st);
    printf("  %-22s calls %6d-%-6d %8.3f ms/call   rss %7ld KiB   live rdds %lld shuffles %lld stages %lld   "
           "scratch %lld B\n",
           what, from, to, secs * 1e3 / (to - from + 1), rss_kib(), (long long)st.live_rdds,
           (long long)st.live_shuffles, (long long)st.live_stages, (long long)st.scratch_bytes);
}

int main(int argc, char **argv) {
    int jobs = argc > 1 ? atoi(argv[1]) : 100000, trees = argc > 2 ? atoi(argv[2]) : 4000;
    const char *master = argc > 3 ? argv[3] : "local[2]";
    if (jobs < 2000 || trees < 2000) {
        fprintf(stderr, "usage: lifetimes [JOBS >= 2000] [TREE_CALLS >= 2000] [MASTER]\n");
        return 2;
    }
    em_conf *conf = em_conf_new();
    if (!conf || em_conf_set(conf, "ember.progress", "false")) return 1;
    em_ctx *c = em_open(master, conf);
    em_conf_free(conf);
    if (!c) {
        fprintf(stderr, "lifetimes: %s\n", em_errmsg());
        return 1;
    }
    printf("lifetimes on %s: %d shuffle jobs releasing their RDDs, then %d tree_aggregate calls\n", master, jobs,
           trees);
    int64_t m = 7;
    double t0 = now();
    for (int i = 0; i < jobs; i++) {
        int64_t n = 0;
        em_rdd *src = em_range(c, 0, 200, 1, 2);
        em_rdd *keyed = em_map(src, mod_key, &m, sizeof m);
        em_rdd *sums = em_reduce_by_key(keyed, sum, NULL, 0, 2);
        if (!sums || em_count(sums, &n) || n != 7) {
            fprintf(stderr, "lifetimes: job %d: %s\n", i, em_errmsg());
            return 1;
        }
        em_rdd_release(sums);
        em_rdd_release(keyed);
        em_rdd_release(src);
        if (i == 999) {
            report(c, "shuffle jobs, first", 1, 1000, now() - t0);
        }
        if (i == jobs - 1001) t0 = now();
    }
    report(c, "shuffle jobs, last", jobs - 999, jobs, now() - t0);

    em_rdd *cached = em_persist(em_range(c, 0, 100000, 1, 8), EM_MEMORY_ONLY);
    uint8_t z8[8];
    em_i64_enc(0, z8);
    em_rec zero = {NULL, 0, z8, 8};
    em_batch *b = NULL;
    t0 = now();
    for (int i = 0; i < trees; i++) {
        if (em_tree_aggregate(cached, &zero, sum, sum, NULL, 0, 3, &b)) {
            fprintf(stderr, "lifetimes: tree_aggregate %d: %s\n", i, em_errmsg());
            return 1;
        }
        em_batch_free(b);
        if (i == 999) report(c, "tree_aggregate, first", 1, 1000, now() - t0);
        if (i == trees - 1001) t0 = now();
    }
    report(c, "tree_aggregate, last", trees - 999, trees, now() - t0);
    em_rdd_release(cached);
    em_close(c);
    return 0;
}
