/*
 * test_pagerank.c -- Spark's PageRank example as a driver (distinct,
 * group_by_key, persisted links; per iteration a join with the ranks,
 * flat_map of contributions, reduce_by_key with the user's a + b,
 * map_values) gives the ranks of a plain loop over the edges, and
 * shuffles what it must only: after the load, each iteration runs one
 * shuffle of P map tasks (the contributions).  The links, persisted with
 * their partitioner, and the ranks, whose map_values keeps it, are read
 * one-to-one by the join, never shuffled again: counted in steps (each
 * iteration's ranks persisted and counted) and in one collect.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

enum { NODES = 300, EDGES = 2400, ITERS = 5, IN_PARTS = 3, P = 4 };

/* Edge j: a uniform source, a skewed destination (low ids receive most),
 * repeats included, as the example's distinct expects. */
static void edge(int j, int64_t *src, int64_t *dst) {
    uint64_t x = (uint64_t)j * 0x9e3779b97f4a7c15ULL + 12345;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    *src = (int64_t)(x % NODES);
    *dst = (int64_t)((x >> 32) % (uint64_t)(1 + (x >> 20) % NODES));
}

/* The plain loop: deduplicated edges, every source ranked 1.0, ITERS
 * times each ranked source gives rank / outdegree to each destination; a
 * node that receives nothing has no rank next time.  rank[v] < 0: none. */
static void reference(double *rank) {
    static char has[NODES][NODES];
    int deg[NODES] = {0};
    memset(has, 0, sizeof has);
    for (int j = 0; j < EDGES; j++) {
        int64_t s, d;
        edge(j, &s, &d);
        if (!has[s][d]) deg[s]++;
        has[s][d] = 1;
    }
    for (int v = 0; v < NODES; v++) rank[v] = deg[v] ? 1.0 : -1.0;
    for (int it = 0; it < ITERS; it++) {
        double sum[NODES] = {0};
        int got[NODES] = {0};
        for (int s = 0; s < NODES; s++) {
            if (rank[s] < 0 || !deg[s]) continue;
            for (int d = 0; d < NODES; d++)
                if (has[s][d]) {
                    sum[d] += rank[s] / deg[s];
                    got[d] = 1;
                }
        }
        for (int v = 0; v < NODES; v++) rank[v] = got[v] ? 0.15 + 0.85 * sum[v] : -1.0;
    }
}

static int one(const em_rec *in, em_emitter *out, const void *arg) { return em_emit_f64(out, 1.0); }

static int contribs(const em_rec *in, em_emitter *out, const void *arg) {
    em_tuple t;
    int rc = em_tuple_unpack(in->val, in->vlen, &t);
    if (rc) return rc;
    double rank = em_f64_dec(t.b);
    size_t pos = 0, size, ilen;
    const void *item;
    if ((rc = em_list_count(t.a, t.alen, &size))) return rc;
    uint8_t c[8];
    em_f64_enc(rank / (double)size, c);
    while ((rc = em_list_next(t.a, t.alen, &pos, &item, &ilen)) == 1)
        if ((rc = em_emit_pair(out, item, ilen, c, 8)) < 0) return rc;
    return rc < 0 ? rc : 0;
}

static int add(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return em_emit_f64(out, em_f64_dec(a->val) + em_f64_dec(b->val));
}

static int damp(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_f64(out, 0.15 + 0.85 * em_f64_dec(in->val));
}

static em_rdd *iterate(em_rdd *links, em_rdd *ranks) {
    return em_map_values(em_reduce_by_key(em_flat_map(em_join(links, ranks, P), contribs, NULL, 0), add, NULL, 0, P),
                         damp, NULL, 0);
}

/* The links: the edges as pairs, distinct, grouped, persisted. */
static em_rdd *load_links(em_ctx *c, em_rec *recs, uint8_t (*kv)[16]) {
    for (int j = 0; j < EDGES; j++) {
        int64_t s, d;
        edge(j, &s, &d);
        em_i64_enc(s, kv[j]);
        em_i64_enc(d, kv[j] + 8);
        recs[j] = (em_rec){kv[j], 8, kv[j] + 8, 8};
    }
    return em_persist(em_group_by_key(em_distinct(em_parallelize(c, recs, EDGES, IN_PARTS), P), P), EM_MEMORY_ONLY);
}

/* The collected ranks are the reference's: same nodes, each within 1e-12
 * relative. */
static int same_ranks(em_rdd *ranks, const double *want) {
    em_batch *b;
    if (em_collect(ranks, &b)) return 0;
    size_t pos = 0, n = 0, nwant = 0;
    em_rec r;
    int ok = 1;
    while (em_batch_next(b, &pos, &r) == 1) {
        int64_t v = em_i64_dec(r.key);
        n++;
        if (r.vlen != 8 || v < 0 || v >= NODES || want[v] < 0 ||
            fabs(em_f64_dec(r.val) - want[v]) > 1e-12 * want[v])
            ok = 0;
    }
    for (int v = 0; v < NODES; v++) nwant += want[v] >= 0;
    em_batch_free(b);
    return ok && n == nwant && n > 0;
}

TEST(pagerank_in_steps_shuffles_only_contributions) {
    static double want[NODES];
    static em_rec recs[EDGES];
    static uint8_t kv[EDGES][16];
    reference(want);
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *links = load_links(c, recs, kv);
    int64_t n;
    em_stats s0, s1;
    em_get_stats(c, &s0);
    CHECK_OK(em_count(links, &n));
    em_get_stats(c, &s1);
    /* The load: distinct's map side over the input partitions, then the
     * group's over distinct's P partitions. */
    CHECK_EQ_I64(s1.map_tasks_run - s0.map_tasks_run, IN_PARTS + P);
    em_rdd *ranks = em_persist(em_map_values(links, one, NULL, 0), EM_MEMORY_ONLY);
    for (int it = 0; it < ITERS; it++) {
        em_rdd *next = em_persist(iterate(links, ranks), EM_MEMORY_ONLY);
        em_get_stats(c, &s0);
        CHECK_OK(em_count(next, &n));
        em_get_stats(c, &s1);
        CHECK_EQ_I64(s1.map_tasks_run - s0.map_tasks_run, P); /* the contributions only */
        CHECK_EQ_I64(s1.stages_run - s0.stages_run, 2);
        em_unpersist(ranks);
        ranks = next;
    }
    CHECK(same_ranks(ranks, want));
    em_close(c);
}

TEST(pagerank_in_one_collect_shuffles_only_contributions) {
    static double want[NODES];
    static em_rec recs[EDGES];
    static uint8_t kv[EDGES][16];
    reference(want);
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *links = load_links(c, recs, kv);
    em_rdd *ranks = em_map_values(links, one, NULL, 0);
    for (int it = 0; it < ITERS; it++) ranks = iterate(links, ranks);
    em_stats s0, s1;
    em_get_stats(c, &s0);
    CHECK(same_ranks(ranks, want));
    em_get_stats(c, &s1);
    CHECK_EQ_I64(s1.jobs - s0.jobs, 1);
    CHECK_EQ_I64(s1.map_tasks_run - s0.map_tasks_run, IN_PARTS + P + ITERS * P);
    CHECK_EQ_I64(s1.stages_run - s0.stages_run, 2 + ITERS + 1);
    em_close(c);
}
