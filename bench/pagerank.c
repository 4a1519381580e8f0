/*
 * pagerank.c -- Spark's PageRank example as an ember driver, beside the
 * same iterations in numpy on 1 core and a C loop over arrays (the floor),
 * all in the same run on the same graph.
 *
 *   pagerank [MASTER [NODES [EDGES [ITERS]]]]
 *            (defaults: local[2], 1000000, 8000000, 10)
 *   PAGERANK_PARTITIONS=P pagerank ...   the partition count of the
 *            distinct, the links and every join and reduce_by_key (default
 *            4 x the executor cores)
 *   PAGERANK_SUM=builtin pagerank ...   reduce_by_key with em_sum_f64 (the
 *            builtin the shuffle merges in place) instead of the user's a + b
 *   PAGERANK_RUNS=A (or B) pagerank ...   only that ember run (see below),
 *            for profiling one of them
 *   PAGERANK_NUMPY=0 pagerank ...   numpy not run (the C floor always runs:
 *            ember's ranks are checked against it), for timing the whole
 *            process of one ember build against another's
 *
 * The graph.  bench/data/pagerank-NODES-EDGES.txt (relative to the current
 * directory, made once, not timed) holds EDGES lines "src dst" in decimal,
 * node ids in [0, NODES).  Edge j has source splitmix64(2j) % NODES
 * (uniform) and destination floor((NODES + 1) ^ u) - 1 with u =
 * splitmix64(2j + 1) / 2^64 uniform in [0, 1): a log-uniform draw, so node
 * k is the destination with probability ln((k + 2) / (k + 1)) / ln(NODES +
 * 1), about 1 / ((k + 1) ln NODES) (Zipf with exponent 1): node 0 receives
 * about 5% of the edges, and about half the nodes receive none.  Edges
 * repeat (the hot destinations draw the same source again), as Spark's
 * example expects: it calls distinct.  splitmix64 is bench/shuffle.c's
 * (its finalizer over SEED + (i + 1) * 0x9e3779b97f4a7c15).
 *
 * ember, timed from reading the file to the collected ranks (run A, the
 * figure), as Spark's SparkPageRank.scala with int64 node ids in place of
 * its strings (pairs of 8-byte em_i64_enc keys and values):
 *   links = text_file -> map (line -> (src, dst)) -> distinct(P)
 *           -> group_by_key(P) -> persist (memory)
 *   ranks = map_values(links, 1.0)
 *   ITERS times: contribs = flat_map(join(links, ranks, P)): each
 *           destination of the list gets rank / list size;
 *           ranks = map_values(reduce_by_key(contribs, a + b as a user
 *           function, P), 0.15 + 0.85 x)
 *   collect(ranks)
 * All of it runs in the one collect, so run B, on a new context, breaks
 * the same work into steps: the links counted (load: read, distinct,
 * group, persist), then each iteration's ranks persisted and counted (the
 * previous one unpersisted), then the collect.  It prints each step's
 * time and minor page faults (getrusage: pages put in, by a fault or
 * populated at once; the executors' too on local[N]); its em_get_stats
 * deltas per iteration (map tasks, shuffle records and bytes) show what is
 * shuffled: the links once (group_by_key), then per iteration only the
 * contributions (P map tasks); a reshuffle of the links or of the ranks
 * would show as 2P or 3P map tasks.
 *
 * The C floor, same run, same file, one thread: read the file into memory,
 * parse into arrays (reported apart), dedup the edges by an LSD radix sort
 * of src << 32 | dst (8-bit digits, constant digits skipped) and a scan,
 * out-degrees and CSR offsets by source, then ITERS iterations: each source
 * with a rank adds rank / outdegree to each destination's sum; a node that
 * received nothing has no rank next iteration (as a node absent from
 * reduce_by_key's output in Spark's example; contributions are > 0, so
 * "received" is "sum > 0").  Then ranks are 0.15 + 0.85 sum.
 *
 * The model's floor, same run, on the C floor's deduplicated edges: the
 * same iterations as Spark's model runs them -- links and ranks in
 * hash partitions, each iteration a map side (a hash join, the user's
 * flat_map and a + b called through pointers into a combine table, its
 * walk into the reduce partitions) and a reduce side (a hash aggregation
 * by the user's a + b, the user's damping) -- as plain C on the master's
 * threads (N of local[N], E x C of local-cluster[E,C,M], else 2), over
 * as many partitions as ember (PAGERANK_PARTITIONS, else 4 x the
 * threads): what an engine of Spark's model could at best do on this
 * machine, beside which ember's iteration shows its own overhead (see
 * "the model's floor" below).  Its ranks are checked as ember's.
 *
 * numpy (bench/pagerank_numpy.py, run by this program with /usr/bin/python3
 * and OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1, when numpy imports): the
 * same on 1 core; it prints its times and its ranks' node count and sum,
 * checked here against the floor's.
 *
 * Checked: ember's final ranks (run A and run B) and the model floor's
 * have the floor's node set and each rank within 1e-9 relative of the
 * floor's; prints "ranks: N nodes, max |diff| X" and exits 1 when they
 * differ.
 */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ember.h"

#define SEED_GRAPH 0x9a9e7a4bULL
#define GAMMA 0x9e3779b97f4a7c15ULL
#define TOL 1e-9

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

static void die(const char *what) {
    fprintf(stderr, "pagerank: %s: %s\n", what, em_errmsg());
    exit(1);
}

/* ------------------------------------------------------------ the graph */

static char *put_u64(char *p, uint64_t v) {
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n) *p++ = tmp[--n];
    return p;
}

/* Write the edge list to path (through path.tmp, renamed when complete). */
static int make_graph(const char *path, int64_t nodes, int64_t edges) {
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        perror(tmp);
        return -1;
    }
    size_t cap = 1 << 20;
    char *buf = malloc(cap + 64), *p = buf;
    double lnn = log((double)nodes + 1);
    for (int64_t j = 0; j < edges; j++) {
        uint64_t src = splitmix(SEED_GRAPH, 2 * (uint64_t)j) % (uint64_t)nodes;
        double u = (double)(splitmix(SEED_GRAPH, 2 * (uint64_t)j + 1) >> 11) * 0x1p-53;
        int64_t dst = (int64_t)floor(exp(u * lnn)) - 1;
        if (dst < 0) dst = 0;
        if (dst >= nodes) dst = nodes - 1;
        p = put_u64(p, src);
        *p++ = ' ';
        p = put_u64(p, (uint64_t)dst);
        *p++ = '\n';
        if ((size_t)(p - buf) >= cap) {
            fwrite(buf, 1, (size_t)(p - buf), f);
            p = buf;
        }
    }
    fwrite(buf, 1, (size_t)(p - buf), f);
    free(buf);
    if (fclose(f) || rename(tmp, path)) {
        perror(path);
        return -1;
    }
    return 0;
}

/* The whole file in memory (NUL-terminated); NULL on failure. */
static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    struct stat st;
    if (fstat(fileno(f), &st)) {
        fclose(f);
        return NULL;
    }
    char *b = malloc((size_t)st.st_size + 1);
    size_t n = b ? fread(b, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (!b || n != (size_t)st.st_size) {
        free(b);
        return NULL;
    }
    b[n] = 0;
    *len = n;
    return b;
}

/* ------------------------------------------------------------- C floor */

typedef struct floor_ranks {
    double *r;   /* r[v]: v's rank, 0 when absent */
    int64_t n;   /* nodes with a rank */
} floor_ranks;

typedef struct floor_times {
    double read, parse, index, iters, total;
    int64_t lines, distinct, sources;
} floor_times;

/* Sorts a[0..n) with scratch tmp (8-bit digits, constant digits skipped);
 * returns the array holding the result. */
static uint64_t *radix_sort(uint64_t *a, uint64_t *tmp, size_t n) {
    static size_t count[8][256];
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < 8; d++) count[d][(a[i] >> (8 * d)) & 255]++;
    for (int d = 0; n && d < 8; d++) {
        if (count[d][(a[0] >> (8 * d)) & 255] == n) continue; /* constant digit */
        size_t off = 0;
        for (int b = 0; b < 256; b++) {
            size_t c = count[d][b];
            count[d][b] = off;
            off += c;
        }
        for (size_t i = 0; i < n; i++) tmp[count[d][(a[i] >> (8 * d)) & 255]++] = a[i];
        uint64_t *t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

/* The deduplicated edges by source: off[v] .. off[v + 1] index v's
 * destinations in dst (c_floor's, kept for model_floor). */
typedef struct floor_csr {
    int64_t *off;
    uint32_t *dst;
} floor_csr;

static int c_floor(const char *path, int64_t nodes, int iters, floor_ranks *out, floor_times *t, floor_csr *csr) {
    double t0 = now();
    size_t len;
    char *text = read_all(path, &len);
    if (!text) {
        perror(path);
        return -1;
    }
    double t1 = now();
    size_t cap = len / 4 + 16, n = 0;
    uint64_t *e = malloc(cap * sizeof *e), *tmp = malloc(cap * sizeof *tmp);
    for (const char *p = text, *end = text + len; p < end;) {
        uint64_t s = 0, d = 0;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '\n') { p++; continue; }
        const char *q = p;
        while (*p >= '0' && *p <= '9') s = s * 10 + (uint64_t)(*p++ - '0');
        if (p == q || (*p != ' ' && *p != '\t')) goto bad;
        while (*p == ' ' || *p == '\t') p++;
        q = p;
        while (*p >= '0' && *p <= '9') d = d * 10 + (uint64_t)(*p++ - '0');
        if (p == q || (*p != '\n' && *p != 0) || s >= (uint64_t)nodes || d >= (uint64_t)nodes) goto bad;
        if (*p) p++;
        e[n++] = s << 32 | d;
        continue;
    bad:
        fprintf(stderr, "pagerank: %s: bad line at byte %zu\n", path, (size_t)(q - text));
        return -1;
    }
    free(text);
    double t2 = now();
    uint64_t *s = radix_sort(e, tmp, n);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || s[i] != s[m - 1]) s[m++] = s[i];
    uint32_t *dst = malloc(m * sizeof *dst);
    int64_t *off = calloc((size_t)nodes + 1, sizeof *off);
    for (size_t i = 0; i < m; i++) {
        dst[i] = (uint32_t)s[i];
        off[(s[i] >> 32) + 1]++;
    }
    free(e);
    free(tmp);
    int64_t sources = 0;
    for (int64_t v = 0; v < nodes; v++) {
        sources += off[v + 1] > 0;
        off[v + 1] += off[v];
    }
    double *r = malloc((size_t)nodes * sizeof *r), *sum = malloc((size_t)nodes * sizeof *sum);
    for (int64_t v = 0; v < nodes; v++) r[v] = off[v + 1] > off[v] ? 1.0 : 0.0; /* links.mapValues(1.0) */
    double t3 = now();
    int64_t present = 0;
    for (int it = 0; it < iters; it++) {
        memset(sum, 0, (size_t)nodes * sizeof *sum);
        for (int64_t v = 0; v < nodes; v++) {
            int64_t a = off[v], b = off[v + 1];
            if (r[v] == 0 || a == b) continue; /* no rank, or no links: the join drops it */
            double w = r[v] / (double)(b - a);
            for (int64_t k = a; k < b; k++) sum[dst[k]] += w;
        }
        present = 0;
        for (int64_t v = 0; v < nodes; v++) {
            if (sum[v] > 0) {
                r[v] = 0.15 + 0.85 * sum[v];
                present++;
            } else {
                r[v] = 0;
            }
        }
    }
    double t4 = now();
    free(sum);
    csr->off = off;
    csr->dst = dst;
    out->r = r;
    out->n = iters ? present : sources;
    t->read = t1 - t0;
    t->parse = t2 - t1;
    t->index = t3 - t2;
    t->iters = t4 - t3;
    t->total = t4 - t0;
    t->lines = (int64_t)n;
    t->distinct = (int64_t)m;
    t->sources = sources;
    return 0;
}

/* ---------------------------------------------------- the model's floor */

/*
 * Spark's PageRank in Spark's model with no engine around it: what the
 * model's own operations cost on this machine, beside which ember's
 * iteration shows its overhead.  The links are partitioned by a hash of
 * the source into P partitions (ember's persisted links), each a CSR of
 * int64 sources and uint32 destinations; the ranks are each partition's
 * (node, rank) pairs.  An iteration is the two stages ember runs, each
 * partition a task, on T threads taking the tasks in turn:
 *   map side, task p: ranks[p] into a hash table (the join's build side);
 *     each source of links[p] looked up in it, and with a rank the user's
 *     flat_map function called through a pointer, which calls an emit
 *     function through a pointer for each destination, which merges the
 *     contribution into the task's combine table by the user's a + b,
 *     called through a pointer; the table then walked, each (node, sum)
 *     appended to the output for its reduce partition, and cleared;
 *   reduce side, task q: every map task's output for q merged into a
 *     hash table by the user's a + b, then walked, the user's damping
 *     (called through a pointer) making ranks[q].
 * The tables are flat open-addressing arrays of 16-byte (key, value)
 * slots at most half full, grown by doubling, kept by each thread from one
 * task to the next (cleared, not freed); a slot is the top bits of the key
 * times an odd constant, one constant per role (map side, reduce side,
 * join) so that no table is filled in another's slot order, and the
 * reduce partition a fourth.  Lookups are fetched MF_AHEAD records ahead
 * (the emitter's through a short queue), as ember's tables do: without
 * it this host's memory latency makes the floor 1.3--1.6 times slower.
 * The user's functions are called through pointers read from volatile
 * variables, so the compiler cannot inline them: an engine calls a
 * user's functions through pointers, and this is the floor of an engine.
 */

typedef void (*mf_emit_fn)(void *ctx, uint64_t key, double v);
typedef void (*mf_flat_fn)(uint64_t src, double rank, const uint32_t *dst, int64_t n, mf_emit_fn emit, void *ctx);
typedef double (*mf_comb_fn)(double a, double b);
typedef double (*mf_map_fn)(double x);

static __attribute__((noinline)) void mf_user_contribs(uint64_t src, double rank, const uint32_t *dst, int64_t n,
                                                       mf_emit_fn emit, void *ctx) {
    (void)src;
    double w = rank / (double)n;
    for (int64_t k = 0; k < n; k++) emit(ctx, dst[k], w);
}
static __attribute__((noinline)) double mf_user_add(double a, double b) { return a + b; }
static __attribute__((noinline)) double mf_user_damp(double x) { return 0.15 + 0.85 * x; }
static mf_flat_fn volatile mf_contribs_ptr = mf_user_contribs;
static mf_comb_fn volatile mf_add_ptr = mf_user_add;
static mf_map_fn volatile mf_damp_ptr = mf_user_damp;

#define MF_EMPTY UINT64_MAX /* node ids are under 2^32 */
#define MF_MAP_SIDE 0x9e3779b97f4a7c15ULL
#define MF_REDUCE_SIDE 0xc2b2ae3d27d4eb4fULL
#define MF_JOIN 0x165667b19e3779f9ULL
#define MF_PARTITION 0xff51afd7ed558ccdULL

typedef struct mf_pair {
    uint64_t key;
    double v;
} mf_pair;

typedef struct mf_table {
    mf_pair *s;
    size_t mask, n;
    int shift;
    uint64_t mult;
} mf_table;

static void mf_resize(mf_table *t, size_t slots) {
    mf_pair *old = t->s;
    size_t oldn = t->s ? t->mask + 1 : 0;
    t->s = malloc(slots * sizeof *t->s);
    if (!t->s) {
        perror("pagerank: model floor");
        exit(1);
    }
    memset(t->s, 0xff, slots * sizeof *t->s);
    t->mask = slots - 1;
    t->shift = 64 - __builtin_ctzll(slots);
    for (size_t i = 0; i < oldn; i++) {
        if (old[i].key == MF_EMPTY) continue;
        size_t j = (size_t)((old[i].key * t->mult) >> t->shift);
        while (t->s[j].key != MF_EMPTY) j = (j + 1) & t->mask;
        t->s[j] = old[i];
    }
    free(old);
}

/* key's slot: *found 1 when it was there, else it is inserted (its value
 * the caller's to set). */
static inline mf_pair *mf_upsert(mf_table *t, uint64_t key, int *found) {
    if (2 * (t->n + 1) > t->mask + 1) mf_resize(t, t->s ? 2 * (t->mask + 1) : 1024);
    for (size_t j = (size_t)((key * t->mult) >> t->shift);; j = (j + 1) & t->mask) {
        if (t->s[j].key == key) {
            *found = 1;
            return &t->s[j];
        }
        if (t->s[j].key == MF_EMPTY) {
            t->s[j].key = key;
            t->n++;
            *found = 0;
            return &t->s[j];
        }
    }
}

static inline const mf_pair *mf_find(const mf_table *t, uint64_t key) {
    if (!t->s) return NULL;
    for (size_t j = (size_t)((key * t->mult) >> t->shift);; j = (j + 1) & t->mask) {
        if (t->s[j].key == key) return &t->s[j];
        if (t->s[j].key == MF_EMPTY) return NULL;
    }
}

static void mf_clear(mf_table *t) {
    if (t->s && t->n) memset(t->s, 0xff, (t->mask + 1) * sizeof *t->s);
    t->n = 0;
}

/* A growing array of pairs. */
typedef struct mf_vec {
    mf_pair *p;
    size_t n, cap;
} mf_vec;

static inline void mf_push(mf_vec *v, uint64_t key, double x) {
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 1024;
        if (!(v->p = realloc(v->p, v->cap * sizeof *v->p))) {
            perror("pagerank: model floor");
            exit(1);
        }
    }
    v->p[v->n].key = key;
    v->p[v->n++].v = x;
}

typedef struct mf_part {
    uint64_t *src; /* links: nsrc sources, their destinations dst[off[i] .. off[i + 1]) */
    int64_t *off, nsrc;
    uint32_t *dst;
    mf_vec ranks;
    mf_vec *out; /* the map task's output, one vector per reduce partition */
} mf_part;

typedef struct mf_model {
    int parts, threads;
    mf_part *p;
    int stage;        /* 0 map side, 1 reduce side */
    int next;         /* the next task to take (atomic) */
} mf_model;

typedef struct mf_thread {
    mf_model *m;
    mf_table join, comb, red;
} mf_thread;

/* The emitter a flat_map's contributions go to: the task's combine table,
 * through a queue of MF_AHEAD records whose slots are fetched as they
 * arrive and merged, in order, when it is full. */
#define MF_AHEAD 32
typedef struct mf_emitter {
    mf_table *t;
    mf_comb_fn merge;
    int n;
    uint64_t key[MF_AHEAD];
    double v[MF_AHEAD];
} mf_emitter;

static inline void mf_fetch(const mf_table *t, uint64_t key) {
    if (t->s) __builtin_prefetch(&t->s[(key * t->mult) >> t->shift]);
}

static void mf_drain(mf_emitter *e) {
    for (int i = 0; i < e->n; i++) {
        int found;
        mf_pair *s = mf_upsert(e->t, e->key[i], &found);
        s->v = found ? e->merge(s->v, e->v[i]) : e->v[i];
    }
    e->n = 0;
}

static void mf_emit(void *ctx, uint64_t key, double v) {
    mf_emitter *e = ctx;
    mf_fetch(e->t, key);
    e->key[e->n] = key;
    e->v[e->n++] = v;
    if (e->n == MF_AHEAD) mf_drain(e);
}

static inline int mf_part_of(uint64_t key, int parts) { return (int)(((key * MF_PARTITION) >> 32) % (uint64_t)parts); }

static void mf_map_task(mf_thread *th, int pi) {
    mf_model *m = th->m;
    mf_part *p = &m->p[pi];
    for (size_t i = 0; i < p->ranks.n; i++) {
        int found;
        if (i + MF_AHEAD < p->ranks.n) mf_fetch(&th->join, p->ranks.p[i + MF_AHEAD].key);
        mf_upsert(&th->join, p->ranks.p[i].key, &found)->v = p->ranks.p[i].v;
    }
    mf_flat_fn contribs = mf_contribs_ptr;
    mf_emitter e = {&th->comb, mf_add_ptr, 0, {0}, {0}};
    for (int64_t i = 0; i < p->nsrc; i++) {
        if (i + MF_AHEAD < p->nsrc) mf_fetch(&th->join, p->src[i + MF_AHEAD]);
        const mf_pair *r = mf_find(&th->join, p->src[i]);
        if (r) contribs(p->src[i], r->v, p->dst + p->off[i], p->off[i + 1] - p->off[i], mf_emit, &e);
    }
    mf_drain(&e);
    for (int q = 0; q < m->parts; q++) p->out[q].n = 0;
    if (th->comb.n)
        for (size_t j = 0; j <= th->comb.mask; j++)
            if (th->comb.s[j].key != MF_EMPTY)
                mf_push(&p->out[mf_part_of(th->comb.s[j].key, m->parts)], th->comb.s[j].key, th->comb.s[j].v);
    mf_clear(&th->comb);
    mf_clear(&th->join);
}

static void mf_reduce_task(mf_thread *th, int q) {
    mf_model *m = th->m;
    mf_comb_fn add = mf_add_ptr;
    mf_map_fn damp = mf_damp_ptr;
    for (int pi = 0; pi < m->parts; pi++) {
        const mf_vec *o = &m->p[pi].out[q];
        for (size_t i = 0; i < o->n; i++) {
            int found;
            if (i + MF_AHEAD < o->n) mf_fetch(&th->red, o->p[i + MF_AHEAD].key);
            mf_pair *s = mf_upsert(&th->red, o->p[i].key, &found);
            s->v = found ? add(s->v, o->p[i].v) : o->p[i].v;
        }
    }
    mf_vec *rk = &m->p[q].ranks;
    rk->n = 0;
    if (th->red.n)
        for (size_t j = 0; j <= th->red.mask; j++)
            if (th->red.s[j].key != MF_EMPTY) mf_push(rk, th->red.s[j].key, damp(th->red.s[j].v));
    mf_clear(&th->red);
}

static void *mf_worker(void *arg) {
    mf_thread *th = arg;
    mf_model *m = th->m;
    for (;;) {
        int t = __atomic_fetch_add(&m->next, 1, __ATOMIC_RELAXED);
        if (t >= m->parts) return NULL;
        if (m->stage == 0) mf_map_task(th, t);
        else mf_reduce_task(th, t);
    }
}

/* One stage on the threads (the caller's one of them), tasks taken in turn. */
static void mf_stage(mf_model *m, mf_thread *th, int stage) {
    pthread_t tid[64];
    int started = 0;
    m->stage = stage;
    m->next = 0;
    for (int i = 1; i < m->threads; i++)
        if (!pthread_create(&tid[started], NULL, mf_worker, &th[i])) started++;
    mf_worker(&th[0]);
    for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
}

typedef struct model_times {
    double split, iters, map_side;
    int parts, threads;
} model_times;

/* The model's floor over the floor's edges (csr), ranks checked against
 * the floor's f: the largest relative difference, or INFINITY when the
 * node sets differ. */
static double model_floor(const floor_csr *csr, int64_t nodes, int iters, int parts, int threads,
                          const floor_ranks *f, model_times *t) {
    mf_model m = {parts, threads, calloc((size_t)parts, sizeof(mf_part)), 0, 0};
    mf_thread *th = calloc((size_t)threads, sizeof *th);
    if (!m.p || !th) {
        perror("pagerank: model floor");
        exit(1);
    }
    double t0 = now();
    int64_t *nsrc = calloc((size_t)parts, sizeof *nsrc), *nedge = calloc((size_t)parts, sizeof *nedge);
    for (int64_t v = 0; v < nodes; v++)
        if (csr->off[v + 1] > csr->off[v]) {
            int pi = mf_part_of((uint64_t)v, parts);
            nsrc[pi]++;
            nedge[pi] += csr->off[v + 1] - csr->off[v];
        }
    for (int pi = 0; pi < parts; pi++) {
        mf_part *p = &m.p[pi];
        p->src = malloc((size_t)nsrc[pi] * sizeof *p->src + 1);
        p->off = malloc(((size_t)nsrc[pi] + 1) * sizeof *p->off);
        p->dst = malloc((size_t)nedge[pi] * sizeof *p->dst + 1);
        p->out = calloc((size_t)parts, sizeof *p->out);
        p->off[0] = 0;
    }
    for (int64_t v = 0; v < nodes; v++) {
        int64_t a = csr->off[v], b = csr->off[v + 1];
        if (a == b) continue;
        mf_part *p = &m.p[mf_part_of((uint64_t)v, parts)];
        p->src[p->nsrc] = (uint64_t)v;
        memcpy(p->dst + p->off[p->nsrc], csr->dst + a, (size_t)(b - a) * sizeof *p->dst);
        p->off[p->nsrc + 1] = p->off[p->nsrc] + (b - a);
        p->nsrc++;
        mf_push(&p->ranks, (uint64_t)v, 1.0); /* links.mapValues(1.0) */
    }
    free(nsrc);
    free(nedge);
    for (int i = 0; i < threads; i++) {
        th[i].m = &m;
        th[i].join.mult = MF_JOIN;
        th[i].comb.mult = MF_MAP_SIDE;
        th[i].red.mult = MF_REDUCE_SIDE;
    }
    double t1 = now();
    t->map_side = 0;
    for (int it = 0; it < iters; it++) {
        double ts = now();
        mf_stage(&m, th, 0);
        t->map_side += now() - ts;
        mf_stage(&m, th, 1);
    }
    double t2 = now();
    t->split = t1 - t0;
    t->iters = t2 - t1;
    t->parts = parts;
    t->threads = threads;

    double worst = 0;
    int64_t seen = 0;
    for (int pi = 0; pi < parts && worst != INFINITY; pi++) {
        const mf_vec *rk = &m.p[pi].ranks;
        for (size_t i = 0; i < rk->n && worst != INFINITY; i++) {
            uint64_t v = rk->p[i].key;
            double d = v < (uint64_t)nodes && f->r[v] != 0 ? fabs(rk->p[i].v - f->r[v]) / f->r[v] : INFINITY;
            if (!(d <= worst)) worst = d;
            seen++;
        }
    }
    for (int pi = 0; pi < parts; pi++) {
        mf_part *p = &m.p[pi];
        for (int q = 0; q < parts; q++) free(p->out[q].p);
        free(p->out);
        free(p->ranks.p);
        free(p->src);
        free(p->off);
        free(p->dst);
    }
    for (int i = 0; i < threads; i++) {
        free(th[i].join.s);
        free(th[i].comb.s);
        free(th[i].red.s);
    }
    free(th);
    free(m.p);
    return seen == f->n ? worst : INFINITY;
}

/* --------------------------------------------------------------- ember */

/* A line "src dst" to the pair (src, dst), both em_i64_enc. */
static int parse_edge(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    const char *p = in->val, *end = p + in->vlen;
    int64_t v[2];
    for (int i = 0; i < 2; i++) {
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        const char *q = p;
        int64_t x = 0;
        while (p < end && *p >= '0' && *p <= '9') x = x * 10 + (*p++ - '0');
        if (p == q) return em_fail("pagerank: line '%.*s' is not \"src dst\"", (int)in->vlen, (const char *)in->val);
        v[i] = x;
    }
    uint8_t k[8], d[8];
    em_i64_enc(v[0], k);
    em_i64_enc(v[1], d);
    return em_emit_pair(out, k, 8, d, 8);
}

static int one(const em_rec *in, em_emitter *out, const void *arg) {
    (void)in;
    (void)arg;
    return em_emit_f64(out, 1.0);
}

/* (src, (list of destinations, rank)) -> (dst, rank / list size) for each. */
static int contribs(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    em_tuple t;
    int rc = em_tuple_unpack(in->val, in->vlen, &t);
    if (rc) return rc;
    if (t.blen != 8) return em_fail("pagerank: a rank of %zu bytes", t.blen);
    double rank = em_f64_dec(t.b);
    size_t pos = 0, size, ilen;
    const void *item;
    if ((rc = em_list_count(t.a, t.alen, &size))) return rc; /* Spark's urls.size */
    uint8_t c[8];
    em_f64_enc(rank / (double)size, c);
    while ((rc = em_list_next(t.a, t.alen, &pos, &item, &ilen)) == 1)
        if ((rc = em_emit_pair(out, item, ilen, c, 8)) < 0) return rc;
    return rc < 0 ? rc : 0;
}

/* Spark's _ + _, as the user writes it. */
static int add(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    (void)arg;
    return em_emit_f64(out, em_f64_dec(a->val) + em_f64_dec(b->val));
}

static int damp(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    return em_emit_f64(out, 0.15 + 0.85 * em_f64_dec(in->val));
}

static em_rdd *load_links(em_ctx *ctx, const char *path, int parts) {
    em_rdd *lines = em_text_file(ctx, path, parts);
    em_rdd *pairs = lines ? em_map(lines, parse_edge, NULL, 0) : NULL;
    em_rdd *dist = pairs ? em_distinct(pairs, parts) : NULL;
    em_rdd *links = dist ? em_group_by_key(dist, parts) : NULL;
    return links ? em_persist(links, EM_MEMORY_ONLY) : NULL;
}

static em_comb_fn sum_fn = add; /* em_sum_f64 with PAGERANK_SUM=builtin */

static em_rdd *iterate(em_rdd *links, em_rdd *ranks, int parts) {
    em_rdd *j = em_join(links, ranks, parts);
    em_rdd *c = j ? em_flat_map(j, contribs, NULL, 0) : NULL;
    em_rdd *s = c ? em_reduce_by_key(c, sum_fn, NULL, 0, parts) : NULL;
    return s ? em_map_values(s, damp, NULL, 0) : NULL;
}

/* The collected ranks against the floor's: the largest relative difference,
 * or INFINITY when the node sets differ. */
static double compare(em_batch *b, const floor_ranks *f, int64_t nodes, int64_t *count) {
    size_t n = em_batch_count(b), pos = 0;
    em_rec rec;
    double worst = 0;
    int64_t seen = 0;
    while (em_batch_next(b, &pos, &rec) == 1) {
        if (rec.klen != 8 || rec.vlen != 8) return INFINITY;
        int64_t v = em_i64_dec(rec.key);
        if (v < 0 || v >= nodes || f->r[v] == 0) return INFINITY;
        double d = fabs(em_f64_dec(rec.val) - f->r[v]) / f->r[v];
        if (!(d <= worst)) worst = d;
        seen++;
    }
    *count = (int64_t)n;
    return seen == f->n ? worst : INFINITY;
}

typedef struct ember_run {
    double total, load, iter_min, iter_med, iter_max, collect;
    em_stats d;                       /* run A: the whole job's deltas */
    int64_t it_maps[64], it_recs[64]; /* run B: per iteration */
    double it_bytes[64];
    long load_flt, it_flt[64];        /* run B: this process's minor page faults */
    int64_t load_maps, load_recs;
    double maxdiff_a, maxdiff_b;
    int64_t count_a, count_b;
    int did_a, did_b;
} ember_run;

/* This process's minor page faults so far (executor threads' on local[N];
 * a cluster's executors are other processes). */
static long minflt(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) ? 0 : ru.ru_minflt;
}

static void stats_delta(const em_stats *a, const em_stats *b, em_stats *d) {
    d->jobs = b->jobs - a->jobs;
    d->stages_run = b->stages_run - a->stages_run;
    d->stages_skipped = b->stages_skipped - a->stages_skipped;
    d->map_tasks_run = b->map_tasks_run - a->map_tasks_run;
    d->tasks_run = b->tasks_run - a->tasks_run;
    d->shuffle_records_written = b->shuffle_records_written - a->shuffle_records_written;
    d->shuffle_bytes_written = b->shuffle_bytes_written - a->shuffle_bytes_written;
    d->shuffle_memory_outputs = b->shuffle_memory_outputs;
    d->shuffle_memory_bytes = b->shuffle_memory_bytes;
    d->spills = b->spills - a->spills;
    d->cache_hits = b->cache_hits - a->cache_hits;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int run_ember(const char *master, const char *path, int64_t nodes, int iters, int parts_env,
                     const floor_ranks *f, ember_run *e, int *parts_out) {
    const char *only = getenv("PAGERANK_RUNS");
    int do_a = !only || strchr(only, 'A'), do_b = !only || strchr(only, 'B');
    memset(e, 0, sizeof *e);
    em_batch *b = NULL;
    em_ctx *ctx;
    int parts = parts_env;
    if (!do_a) goto run_b;

    /* run A: Spark's example as written, one collect */
    ctx = em_open(master, NULL);
    if (!ctx) die("em_open");
    parts = parts_env > 0 ? parts_env : 4 * em_cores(ctx);
    *parts_out = parts;
    em_stats s0, s1;
    em_get_stats(ctx, &s0);
    double t0 = now();
    em_rdd *links = load_links(ctx, path, parts);
    em_rdd *ranks_rdd = links ? em_map_values(links, one, NULL, 0) : NULL;
    for (int i = 0; ranks_rdd && i < iters; i++) ranks_rdd = iterate(links, ranks_rdd, parts);
    if (!ranks_rdd || em_collect(ranks_rdd, &b)) die("run A");
    e->total = now() - t0;
    em_get_stats(ctx, &s1);
    stats_delta(&s0, &s1, &e->d);
    e->maxdiff_a = compare(b, f, nodes, &e->count_a);
    e->did_a = 1;
    em_batch_free(b);
    em_close(ctx);

run_b:
    if (!do_b) return 0;
    /* run B: the same in steps, each iteration's ranks persisted and counted */
    ctx = em_open(master, NULL);
    if (!ctx) die("em_open");
    parts = parts_env > 0 ? parts_env : 4 * em_cores(ctx);
    *parts_out = parts;
    int64_t n;
    em_stats a, c;
    em_get_stats(ctx, &a);
    t0 = now();
    long f0 = minflt();
    links = load_links(ctx, path, parts);
    if (!links || em_count(links, &n)) die("run B: links");
    double t1 = now();
    e->load = t1 - t0;
    e->load_flt = minflt() - f0;
    em_get_stats(ctx, &c);
    e->load_maps = c.map_tasks_run - a.map_tasks_run;
    e->load_recs = c.shuffle_records_written - a.shuffle_records_written;
    double it[64];
    em_rdd *prev = em_map_values(links, one, NULL, 0);
    for (int i = 0; i < iters; i++) {
        a = c;
        double ti = now();
        long fi = minflt();
        em_rdd *next = iterate(links, prev, parts);
        if (!next || !em_persist(next, EM_MEMORY_ONLY) || em_count(next, &n)) die("run B: iteration");
        if (i > 0) em_unpersist(prev);
        prev = next;
        it[i] = now() - ti;
        e->it_flt[i] = minflt() - fi;
        em_get_stats(ctx, &c);
        e->it_maps[i] = c.map_tasks_run - a.map_tasks_run;
        e->it_recs[i] = c.shuffle_records_written - a.shuffle_records_written;
        e->it_bytes[i] = (double)(c.shuffle_bytes_written - a.shuffle_bytes_written);
    }
    double tc = now();
    if (em_collect(prev, &b)) die("run B: collect");
    e->collect = now() - tc;
    e->maxdiff_b = compare(b, f, nodes, &e->count_b);
    e->did_b = 1;
    em_batch_free(b);
    em_close(ctx);
    qsort(it, (size_t)iters, sizeof it[0], cmp_double);
    e->iter_min = iters ? it[0] : 0;
    e->iter_max = iters ? it[iters - 1] : 0;
    e->iter_med = iters ? it[iters / 2] : 0;
    return 0;
}

/* --------------------------------------------------------------- numpy */

typedef struct numpy_run {
    int ok;
    double load, index, iters, total, sum;
    int64_t nodes;
} numpy_run;

/* Runs bench/pagerank_numpy.py (beside this binary's source tree, else
 * under the current directory), echoing its lines and keeping its figures. */
static void run_numpy(const char *path, int64_t nodes, int iters, numpy_run *np) {
    memset(np, 0, sizeof *np);
    char exe[PATH_MAX], script[PATH_MAX + 64], cmd[3 * PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    script[0] = 0;
    if (k > 0) {
        exe[k] = 0;
        snprintf(script, sizeof script, "%s/../../bench/pagerank_numpy.py", dirname(exe));
    }
    if (!script[0] || access(script, R_OK)) snprintf(script, sizeof script, "bench/pagerank_numpy.py");
    if (system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) {
        printf("numpy: absent (/usr/bin/python3 cannot import numpy; scripts/install-deps.sh bench installs it)\n");
        return;
    }
    snprintf(cmd, sizeof cmd, "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 '%s' '%s' %" PRId64 " %d",
             script, path, nodes, iters);
    FILE *p = popen(cmd, "r");
    if (!p) {
        printf("numpy: could not run %s\n", script);
        return;
    }
    char line[512];
    while (fgets(line, sizeof line, p)) {
        if (sscanf(line, "numpy-figures %lf %lf %lf %lf %" SCNd64 " %lf", &np->load, &np->index, &np->iters,
                   &np->total, &np->nodes, &np->sum) == 6)
            np->ok = 1;
        else
            fputs(line, stdout);
    }
    if (pclose(p) != 0) np->ok = 0;
}

/* ---------------------------------------------------------------- main */

/* The model floor's threads: N of local[N] (the machine's cores for *),
 * E x C of local-cluster[E,C,M], else 2. */
static int model_threads(const char *master) {
    int n = 0, e = 0, c = 0;
    if (!strcmp(master, "local[*]")) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    else if (sscanf(master, "local[%d]", &n) == 1) ;
    else if (sscanf(master, "local-cluster[%d,%d", &e, &c) == 2) n = e * c;
    return n >= 1 && n <= 64 ? n : 2;
}

int main(int argc, char **argv) {
    const char *master = argc > 1 ? argv[1] : "local[2]";
    int64_t nodes = argc > 2 ? atoll(argv[2]) : 1000000;
    int64_t edges = argc > 3 ? atoll(argv[3]) : 8000000;
    int iters = argc > 4 ? atoi(argv[4]) : 10;
    const char *pe = getenv("PAGERANK_PARTITIONS");
    int parts_env = pe ? atoi(pe) : 0;
    const char *ps = getenv("PAGERANK_SUM");
    if (ps && !strcmp(ps, "builtin")) sum_fn = em_sum_f64;
    if (nodes < 1 || nodes > (int64_t)UINT32_MAX || edges < 1 || iters < 1 || iters > 64) {
        fprintf(stderr, "usage: pagerank [MASTER [NODES (1..2^32-1) [EDGES [ITERS (1..64)]]]]\n");
        return 1;
    }
    char rel[PATH_MAX], path[PATH_MAX];
    mkdir("bench/data", 0777);
    snprintf(rel, sizeof rel, "bench/data/pagerank-%" PRId64 "-%" PRId64 ".txt", nodes, edges);
    if (access(rel, R_OK)) {
        double tg = now();
        if (make_graph(rel, nodes, edges)) return 1;
        printf("graph written to %s in %.1f s (not timed)\n", rel, now() - tg);
    }
    if (!realpath(rel, path)) {
        perror(rel);
        return 1;
    }
    struct stat st;
    stat(path, &st);

    /* warm the page cache: every side reads the file from memory */
    size_t len;
    free(read_all(path, &len));

    floor_ranks f;
    floor_times ft;
    floor_csr csr;
    if (c_floor(path, nodes, iters, &f, &ft, &csr)) return 1;
    int threads = model_threads(master), mparts = parts_env > 0 ? parts_env : 4 * threads;
    model_times mt;
    double mdiff = model_floor(&csr, nodes, iters, mparts, threads, &f, &mt);
    free(csr.off);
    free(csr.dst);
    numpy_run np = {0};
    const char *pn = getenv("PAGERANK_NUMPY");
    if (!pn || strcmp(pn, "0")) run_numpy(path, nodes, iters, &np);
    ember_run e;
    int parts = 0;
    run_ember(master, path, nodes, iters, parts_env, &f, &e, &parts);

    printf("pagerank on %s: %" PRId64 " nodes, %" PRId64 " edge lines (%.1f MB), %" PRId64
           " distinct edges from %" PRId64 " sources, %d iterations, %d partitions, reduce_by_key with %s\n",
           master, nodes, ft.lines, st.st_size / 1048576.0, ft.distinct, ft.sources, iters, parts,
           sum_fn == add ? "the user's a + b" : "em_sum_f64");
    printf("  C floor, 1 thread : read %.3f s, parse %.3f s, dedup and index %.3f s, %d iterations %.3f s "
           "(%.4f s an iteration); total %.3f s\n",
           ft.read, ft.parse, ft.index, iters, ft.iters, ft.iters / iters, ft.total);
    printf("  model floor, %d thread%s: the links split into %d partitions %.3f s, %d iterations %.3f s (%.4f s an "
           "iteration; the map side %.4f s of it)\n",
           mt.threads, mt.threads == 1 ? " " : "s", mt.parts, mt.split, iters, mt.iters, mt.iters / iters,
           mt.map_side / iters);
    if (np.ok)
        printf("  numpy, 1 core     : load %.3f s, dedup and index %.3f s, %d iterations %.3f s "
               "(%.4f s an iteration); total %.3f s\n",
               np.load, np.index, iters, np.iters, np.iters / iters, np.total);
    if (e.did_a) {
        printf("  ember %-12s : total %.3f s (file to collected ranks, one collect)\n", master, e.total);
        printf("    shuffles        : %" PRId64 " stages run (%" PRId64 " job), %" PRId64 " map tasks, %" PRId64
               " records written, %.1f MB as stored, %" PRId64 " spills\n",
               e.d.stages_run, e.d.jobs, e.d.map_tasks_run, e.d.shuffle_records_written,
               e.d.shuffle_bytes_written / 1048576.0, e.d.spills);
    }
    if (e.did_b) {
        printf("    in steps        : load (read, distinct, group_by_key, persist) %.3f s; an iteration "
               "min %.3f median %.3f max %.3f s; collect %.3f s\n",
               e.load, e.iter_min, e.iter_med, e.iter_max, e.collect);
        printf("    steps' shuffles : load %" PRId64 " map tasks, %" PRId64 " records; iterations' map tasks",
               e.load_maps, e.load_recs);
        for (int i = 0; i < iters; i++) printf(" %" PRId64, e.it_maps[i]);
        printf(" (%d a shuffle), records (M)", parts);
        for (int i = 0; i < iters; i++) printf(" %.2f", e.it_recs[i] / 1e6);
        printf(", MB as stored");
        for (int i = 0; i < iters; i++) printf(" %.1f", e.it_bytes[i] / 1048576.0);
        printf("\n");
        printf("    steps' faults   : this process's minor page faults, pages populated at once included "
               "(MB of 4 KiB pages): load %ld (%.0f); iterations",
               e.load_flt, e.load_flt * 4096 / 1e6);
        for (int i = 0; i < iters; i++) printf(" %ld", e.it_flt[i]);
        printf("%s\n", strncmp(master, "local[", 6) ? " (the driver's only: executors are other processes)" : "");
        int reshuffled = 0;
        for (int i = 0; i < iters; i++) reshuffled |= e.it_maps[i] != parts;
        printf("    links and ranks : %s\n",
               reshuffled ? "an iteration ran more (or fewer) map tasks than one shuffle's"
                          : "never shuffled after the load (each iteration shuffles only its contributions)");
    }
    if (e.did_a && np.ok)
        printf("  ratio ember / numpy: %.2fx   ember / C floor: %.2fx   (the reference's total time / ember's; "
               "all three from reading the file to the ranks)\n",
               np.total / e.total, ft.total / e.total);
    else if (e.did_a)
        printf("  ratio ember / C floor: %.2fx   (the floor's total time / ember's; both from reading the file "
               "to the ranks)\n",
               ft.total / e.total);
    if (np.ok && e.did_b)
        printf("  ratio per iteration: ember (steps, median) / numpy %.2fx, / C floor %.2fx, / model floor %.2fx; "
               "model floor / numpy %.2fx\n",
               np.iters / iters / e.iter_med, ft.iters / iters / e.iter_med, mt.iters / iters / e.iter_med,
               np.iters / mt.iters);
    else if (e.did_b)
        printf("  ratio per iteration: ember (steps, median) / C floor %.2fx, / model floor %.2fx\n",
               ft.iters / iters / e.iter_med, mt.iters / iters / e.iter_med);

    int bad = 0;
    if (e.did_a)
        printf("ranks: %" PRId64 " nodes, max |diff| %.3g (run A; the C floor's: %" PRId64 " nodes)\n", e.count_a,
               e.maxdiff_a, f.n);
    if (e.did_b)
        printf("ranks: %" PRId64 " nodes, max |diff| %.3g (run B, in steps)\n", e.count_b, e.maxdiff_b);
    printf("ranks: max |diff| %.3g (the model floor)\n", mdiff);
    if ((e.did_a && !(e.maxdiff_a <= TOL)) || (e.did_b && !(e.maxdiff_b <= TOL)) || !(mdiff <= TOL)) {
        fprintf(stderr, "MISMATCH: ember's or the model floor's ranks differ from the C floor's\n");
        bad = 1;
    }
    if (np.ok) {
        double fsum = 0;
        for (int64_t v = 0; v < nodes; v++) fsum += f.r[v];
        double rd = fabs(np.sum - fsum) / fsum;
        printf("numpy ranks: %" PRId64 " nodes, sum %.6f (C floor: %" PRId64 ", %.6f)\n", np.nodes, np.sum, f.n, fsum);
        if (np.nodes != f.n || !(rd <= TOL)) {
            fprintf(stderr, "MISMATCH: numpy's ranks differ from the C floor's\n");
            bad = 1;
        }
    }
    free(f.r);
    return bad;
}
