/*
 * treeagg.c -- what a small tree_aggregate costs: a cached RDD of 1,000
 * integers in 64 partitions, summed with em_tree_aggregate (depth 2: 64 map
 * tasks, a shuffle into 8 partitions, 8 reduce tasks, the last fold on the
 * driver), as logistic regression does every iteration.  Printed beside a same-run reference of the same number of
 * tasks with no shuffle: em_count over the 64 partitions plus em_count over 8
 * (what bench/tasks says tasks cost), and the process's page faults and
 * kernel time per call (shuffle files made and removed show there).
 *
 *   treeagg [MASTER] [CALLS]      (default local[2], 2000)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ember.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int sum(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    (void)arg;
    return em_emit_i64(out, em_i64_dec(a->val) + em_i64_dec(b->val));
}

typedef struct {
    double wall, sys;
    long faults;
} sample;

static void take(sample *s) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    s->wall = now();
    s->sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    s->faults = ru.ru_minflt + ru.ru_majflt;
}

static void report(const char *what, const sample *a, const sample *b, int calls, int tasks) {
    double ms = (b->wall - a->wall) * 1e3 / calls;
    printf("  %-34s %8.3f ms/call  %6.1f us/task  sys %6.3f ms/call  faults %6.1f/call\n", what, ms,
           ms * 1e3 / tasks, (b->sys - a->sys) * 1e3 / calls, (double)(b->faults - a->faults) / calls);
}

int main(int argc, char **argv) {
    const char *master = argc > 1 ? argv[1] : "local[2]";
    int calls = argc > 2 ? atoi(argv[2]) : 2000;
    if (calls < 10) {
        fprintf(stderr, "usage: treeagg [MASTER] [CALLS >= 10]\n");
        return 2;
    }
    em_conf *conf = em_conf_new();
    if (!conf || em_conf_set(conf, "ember.progress", "false")) return 1;
    em_ctx *c = em_open(master, conf);
    em_conf_free(conf);
    if (!c) {
        fprintf(stderr, "treeagg: %s\n", em_errmsg());
        return 1;
    }
    em_rdd *cached = em_persist(em_range(c, 0, 1000, 1, 64), EM_MEMORY_ONLY);
    em_rdd *eight = em_persist(em_range(c, 0, 1000, 1, 8), EM_MEMORY_ONLY);
    int64_t n = 0;
    if (!cached || !eight || em_count(cached, &n) || n != 1000 || em_count(eight, &n) || n != 1000) {
        fprintf(stderr, "treeagg: %s\n", em_errmsg());
        return 1;
    }
    uint8_t z8[8];
    em_i64_enc(0, z8);
    em_rec zero = {NULL, 0, z8, 8};
    printf("tree_aggregate on %s: 1,000 int64 in 64 cached partitions, depth 2 (64 + 8 tasks), %d calls\n",
           master, calls);
    for (int round = 0; round < 2; round++) {
        sample a, b;
        take(&a);
        for (int i = 0; i < calls; i++) {
            em_batch *out = NULL;
            if (em_tree_aggregate(cached, &zero, sum, sum, NULL, 0, 2, &out)) {
                fprintf(stderr, "treeagg: %s\n", em_errmsg());
                return 1;
            }
            em_rec r;
            if (em_batch_get(out, 0, &r) || r.vlen != 8 || em_i64_dec(r.val) != 499500) {
                fprintf(stderr, "treeagg: wrong sum\n");
                return 1;
            }
            em_batch_free(out);
        }
        take(&b);
        report("tree_aggregate", &a, &b, calls, 72);
        take(&a);
        for (int i = 0; i < calls; i++)
            if (em_count(cached, &n) || em_count(eight, &n)) {
                fprintf(stderr, "treeagg: %s\n", em_errmsg());
                return 1;
            }
        take(&b);
        report("reference: count(64) + count(8)", &a, &b, calls, 72);
    }
    em_rdd_release(eight);
    em_rdd_release(cached);
    em_close(c);
    return 0;
}
