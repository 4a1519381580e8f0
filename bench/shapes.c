/*
 * shapes.c -- sort_by_key and reduce_by_key over records of many shapes:
 * the same 20M generated records with keys and values of fixed widths (0,
 * 4, 8, 16, 24 bytes) and with variable-length string keys, each beside
 * the same operation on 8-byte keys and 8-byte values in the same run,
 * per record and per byte of record.
 *
 *   shapes [MASTER [NRECS [NKEYS [PARTITIONS]]]]
 *            (defaults: local[2], 20000000, 1000000, 8)
 *   SHAPES=8+0,str+8 shapes ...   only the shapes named (8+8, the
 *            reference, always runs)
 *   SHAPES_OP=sort (or reduce) shapes ...   only that operation
 *
 * Record j of shape K+V (K, V the key's and value's widths in bytes; str:
 * the decimal digits of the key number, 1 to 19 bytes):
 *   sort:   key number a = splitmix64(2j) (as an unsigned integer: its
 *           big-endian bytes sort as it does), value bytes from
 *           splitmix64(2j + 1);
 *   reduce: key number a % NKEYS, the same values.
 * A fixed-width key is the key number's 8 big-endian bytes cut to K (its
 * high bytes: the sort keys' order stays the numbers'; the reduce keys use
 * the low 4 bytes when K is 4, so that NKEYS stay distinct) or padded with
 * bytes of splitmix64 of the number.  reduce_by_key's function is a user
 * function that keeps the greater value (memcmp), for every width, so the
 * path measured is the one a user's own function takes.
 *
 * Timed, 3 runs each, best printed (a new RDD every run): sort_by_key
 * (ascending, its sampling job included) then count; reduce_by_key then
 * count.  Inputs are generated in the tasks and persisted in memory before
 * timing.  Checks: every sort result has every record, partitions in order
 * and ordered; every reduce result has as many keys as the driver counts.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember.h"

#define RUNS 3
#define SEED 0x5a9e5ULL
#define GAMMA 0x9e3779b97f4a7c15ULL

enum { SORT, REDUCE };

typedef struct shape {
    const char *name;
    int klen; /* -1: decimal string */
    int vlen;
} shape;

static const shape shapes[] = {
    {"8+8", 8, 8},   {"8+0", 8, 0},   {"4+4", 4, 4},   {"8+4", 8, 4},  {"4+8", 4, 8},
    {"8+16", 8, 16}, {"8+24", 8, 24}, {"16+8", 16, 8}, {"24+8", 24, 8}, {"str+8", -1, 8},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

typedef struct gen_arg {
    int64_t nrecs, nkeys, parts;
    int32_t klen, vlen, op;
} gen_arg;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static uint64_t splitmix(uint64_t i) {
    uint64_t z = SEED + (i + 1) * GAMMA;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void put_be64(uint8_t *p, uint64_t x) {
    for (int i = 7; i >= 0; i--, x >>= 8) p[i] = (uint8_t)x;
}

/* Record j's key number. */
static uint64_t key_number(const gen_arg *g, int64_t j) {
    uint64_t a = splitmix(2 * (uint64_t)j);
    return g->op == SORT ? a : a % (uint64_t)g->nkeys;
}

/* The key bytes of key number a: returns the length. */
static size_t make_key(const gen_arg *g, uint64_t a, uint8_t *k) {
    if (g->klen < 0) return (size_t)snprintf((char *)k, 24, "%" PRIu64, a);
    uint8_t be[8];
    put_be64(be, a);
    if (g->klen <= 8) {
        /* sort: the high bytes keep the order; reduce: the low ones keep
         * the keys distinct */
        memcpy(k, g->op == SORT ? be : be + 8 - g->klen, (size_t)g->klen);
        return (size_t)g->klen;
    }
    memcpy(k, be, 8);
    for (int i = 8; i < g->klen; i += 8) {
        uint8_t pad[8];
        put_be64(pad, splitmix(a ^ (uint64_t)i));
        memcpy(k + i, pad, (size_t)(g->klen - i < 8 ? g->klen - i : 8));
    }
    return (size_t)g->klen;
}

static int64_t part_start(const gen_arg *g, int64_t p) { return (int64_t)((__int128)g->nrecs * p / g->parts); }

/* flat_map: partition number p -> that partition's records. */
static int gen_recs(const em_rec *in, em_emitter *out, const void *arg) {
    gen_arg g;
    memcpy(&g, arg, sizeof g);
    int64_t p = em_i64_dec(in->val);
    for (int64_t j = part_start(&g, p), end = part_start(&g, p + 1); j < end; j++) {
        uint8_t k[24], v[24];
        size_t kl = make_key(&g, key_number(&g, j), k);
        uint64_t b = splitmix(2 * (uint64_t)j + 1);
        for (int i = 0; i < g.vlen; i += 8) {
            uint8_t w[8];
            put_be64(w, b + (uint64_t)i);
            memcpy(v + i, w, (size_t)(g.vlen - i < 8 ? g.vlen - i : 8));
        }
        int rc = em_emit_pair(out, k, kl, v, (size_t)g.vlen);
        if (rc) return rc;
    }
    return 0;
}

/* The user's reduce function: the greater value. */
static int keep_max(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    (void)arg;
    const em_rec *m = a->vlen == b->vlen && memcmp(a->val, b->val, a->vlen) < 0 ? b : a;
    return em_emit(out, m->val, m->vlen);
}

/* map_partitions over a sorted result: one record (count, ordered, first
 * key, last key) as fields; keys up to 24 bytes. */
typedef struct porder {
    int64_t n, ordered;
    uint8_t first[24], last[24];
    int64_t flen, llen;
} porder;

static int cmp_keys(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al > bl) - (al < bl);
}

static int part_order(int partition, em_iter *in, em_emitter *out, const void *arg) {
    (void)partition;
    (void)arg;
    porder o;
    memset(&o, 0, sizeof o);
    o.ordered = 1;
    em_rec r;
    int rc;
    while ((rc = em_iter_next(in, &r)) == 1) {
        if (r.klen > 24) return em_fail("a key of more than 24 bytes");
        if (!o.n) {
            memcpy(o.first, r.key, r.klen);
            o.flen = (int64_t)r.klen;
        } else if (cmp_keys(r.key, r.klen, o.last, (size_t)o.llen) < 0) {
            o.ordered = 0;
        }
        memcpy(o.last, r.key, r.klen);
        o.llen = (int64_t)r.klen;
        o.n++;
    }
    return rc < 0 ? rc : em_emit(out, &o, sizeof o);
}

/* Whether the sorted result holds n records in order across partitions. */
static int check_sorted(em_rdd *res, int64_t n) {
    em_rdd *orders = em_map_partitions(res, part_order, NULL, 0);
    em_batch *b;
    if (!orders || em_collect(orders, &b)) {
        fprintf(stderr, "shapes: checking the order: %s\n", em_errmsg());
        return 0;
    }
    em_rec r;
    size_t pos = 0;
    int64_t total = 0;
    int ok = 1, have = 0;
    porder prev;
    while (em_batch_next(b, &pos, &r) == 1) {
        porder o;
        memcpy(&o, r.val, sizeof o);
        total += o.n;
        if (!o.n) continue;
        if (!o.ordered || (have && cmp_keys(o.first, (size_t)o.flen, prev.last, (size_t)prev.llen) < 0)) ok = 0;
        prev = o;
        have = 1;
    }
    em_batch_free(b);
    em_rdd_release(orders);
    return ok && total == n;
}

/* The distinct reduce keys, as the driver counts them. */
static int64_t distinct_keys(const gen_arg *g) {
    uint8_t *seen = calloc((size_t)g->nkeys, 1);
    if (!seen) return -1;
    int64_t d = 0;
    for (int64_t j = 0; j < g->nrecs; j++) {
        uint64_t a = key_number(g, j);
        d += !seen[a];
        seen[a] = 1;
    }
    free(seen);
    return d;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One shape and operation: generate and persist, RUNS timed runs, check.
 * Returns the best seconds (and the input's bytes as records of their
 * shape in *bytes), or -1. */
static double run_one(em_ctx *ctx, gen_arg g, int64_t want, double *bytes) {
    em_rdd *seeds = em_range(ctx, 0, g.parts, 1, (int)g.parts);
    em_rdd *in = em_persist(em_flat_map(seeds, gen_recs, &g, sizeof g), EM_MEMORY_ONLY);
    em_rdd_release(seeds);
    int64_t n;
    if (!in || em_count(in, &n) || n != g.nrecs) {
        fprintf(stderr, "shapes: the input: %s\n", em_errmsg());
        return -1;
    }
    double t[RUNS];
    int ok = 1;
    for (int i = 0; i < RUNS && ok; i++) {
        double t0 = now();
        em_rdd *res = g.op == SORT ? em_sort_by_key(in, 1, 0) : em_reduce_by_key(in, keep_max, NULL, 0, 0);
        if (!res || em_count(res, &n)) {
            fprintf(stderr, "shapes: %s\n", em_errmsg());
            return -1;
        }
        t[i] = now() - t0;
        if (i == RUNS - 1) ok = g.op == SORT ? check_sorted(res, g.nrecs) : n == want;
        em_rdd_release(res);
    }
    em_unpersist(in);
    em_rdd_release(in);
    if (!ok) {
        fprintf(stderr, "shapes: a WRONG result\n");
        return -1;
    }
    /* the records' key and value bytes (strings: their mean length) */
    double klen = g.klen;
    if (g.klen < 0) {
        uint8_t k[24];
        double sum = 0;
        for (int64_t j = 0; j < 100000 && j < g.nrecs; j++) sum += (double)make_key(&g, key_number(&g, j), k);
        klen = sum / (double)(g.nrecs < 100000 ? g.nrecs : 100000);
    }
    *bytes = (klen + g.vlen) * (double)g.nrecs;
    qsort(t, RUNS, sizeof t[0], cmp_double);
    return t[0];
}

static int wanted(const char *name) {
    const char *only = getenv("SHAPES");
    if (!only || !*only || !strcmp(name, "8+8")) return 1;
    size_t n = strlen(name);
    for (const char *p = only; (p = strstr(p, name)); p += n)
        if ((p == only || p[-1] == ',') && (p[n] == ',' || !p[n])) return 1;
    return 0;
}

int main(int argc, char **argv) {
    const char *master = argc > 1 ? argv[1] : "local[2]";
    gen_arg g = {argc > 2 ? atoll(argv[2]) : 20000000, argc > 3 ? atoll(argv[3]) : 1000000,
                 argc > 4 ? atoll(argv[4]) : 8, 0, 0, SORT};
    if (g.nrecs < 1 || g.nkeys < 1 || g.nkeys > ((int64_t)1 << 32) || g.parts < 1 || g.parts > 100000) {
        fprintf(stderr, "usage: shapes [MASTER [NRECS [NKEYS (1..2^32) [PARTITIONS]]]]\n");
        return 1;
    }
    em_ctx *ctx = em_open(master, NULL);
    if (!ctx) {
        fprintf(stderr, "shapes: %s\n", em_errmsg());
        return 1;
    }
    gen_arg rg = g;
    rg.op = REDUCE;
    int64_t nd = distinct_keys(&rg);
    printf("shapes on %s: %" PRId64 " records, reduce keys %" PRId64 " (%" PRId64 " distinct), %" PRId64
           " partitions; best of %d\n",
           master, g.nrecs, g.nkeys, nd, g.parts, RUNS);
    printf("%-7s %-7s %9s %9s %9s  %s\n", "op", "shape", "best s", "M rec/s", "MB/s", "vs 8+8 (time per record; per byte)");
    int bad = 0;
    const char *only_op = getenv("SHAPES_OP");
    for (int op = SORT; op <= REDUCE; op++) {
        double ref_t = 0, ref_bytes = 0;
        if (only_op && *only_op && strcmp(only_op, op == SORT ? "sort" : "reduce")) continue;
        for (size_t i = 0; i < NSHAPES; i++) {
            if (!wanted(shapes[i].name)) continue;
            gen_arg x = g;
            x.klen = shapes[i].klen;
            x.vlen = shapes[i].vlen;
            x.op = op;
            double bytes = 0, t = run_one(ctx, x, nd, &bytes);
            if (t < 0) {
                bad = 1;
                continue;
            }
            if (i == 0) ref_t = t, ref_bytes = bytes;
            printf("%-7s %-7s %9.3f %9.2f %9.1f  %.2fx; %.2fx\n", op == SORT ? "sort" : "reduce", shapes[i].name, t,
                   g.nrecs / t / 1e6, bytes / t / 1e6, t / ref_t, (t / bytes) / (ref_t / ref_bytes));
            fflush(stdout);
        }
    }
    em_close(ctx);
    return bad;
}
