/*
 * rdd.c -- declaring RDDs: sources and transformations.  Each call checks
 * its arguments, names the user functions (fnref), copies argument blobs,
 * and adds a node to the context's graph.  Nothing runs here, except where
 * Spark also runs a job at declaration: sort_by_key samples keys to build
 * its range partitioner, zip_with_index counts partitions.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blockstore.h"
#include "builtins.h"
#include "conf.h"
#include "ctx.h"
#include "err.h"
#include "rdd.h"
#include "recfmt.h"
#include "srcdata.h"
#include "taskresult.h"

/* ----------------------------------------------------------- the graph */

em_rdd *rdd_new(em_ctx *ctx, enum rdd_kind kind, int nparts, const char *opname) {
    em_rdd *r = calloc(1, sizeof *r);
    if (!r) goto nomem;
    r->ctx = ctx;
    r->kind = kind;
    r->nparts = nparts;
    r->opname = opname;
    r->refs = 1;
    /* The registry is shared by the driver's threads. */
    pthread_mutex_lock(&ctx->mu);
    if (!ctx->nfree && ctx->nrdds == ctx->caprdds) {
        int cap = ctx->caprdds ? ctx->caprdds * 2 : 64;
        em_rdd **a = realloc(ctx->rdds, sizeof *a * (size_t)cap);
        if (!a) {
            pthread_mutex_unlock(&ctx->mu);
            free(r);
            goto nomem;
        }
        ctx->rdds = a;
        ctx->caprdds = cap;
    }
    /* A freed RDD's slot (and id) is reused: the registry, and everything
     * sized by RDD ids, stays as large as the RDDs alive at once. */
    if (ctx->nfree) r->id = ctx->free_ids[--ctx->nfree];
    else r->id = ctx->nrdds++;
    ctx->rdds[r->id] = r;
    ctx->nlive++;
    pthread_mutex_unlock(&ctx->mu);
    ctx_scope_add(r);
    return r;
nomem:
    em__seterr(EM_ENOMEM, "%s: out of memory", opname);
    return NULL;
}

void rdd_free(em_rdd *r) {
    free(r->name);
    fnref_clear(&r->fn);
    free(r->arg);
    free(r->zip_starts);
    free(r->data);
    src_release(r->src);
    if (r->splits) text_splits_free(r->splits, r->nparts);
    free(r->groups);
    free(r->cache_exec);
    ebuf_free(&r->bounds);
    agg_clear(&r->agg);
    free(r->ckpt_dir);
    free(r->ckpt_lens);
    free(r->deps);
}

int rdd_parents(const em_rdd *r, em_rdd **out) {
    int n = 0;
    if (r->kind == RDD_COGROUP) {
        for (int i = 0; i < r->ndeps && i < RDD_MAX_PARENTS; i++) out[n++] = r->deps[i];
        return n;
    }
    if (r->parent) out[n++] = r->parent;
    if (r->parent2) out[n++] = r->parent2;
    return n;
}

void rdd_set_parents(em_rdd *r, em_rdd *a, em_rdd *b) {
    r->parent = a;
    r->parent2 = b;
    if (a) rdd_retain(a);
    if (b) rdd_retain(b);
}

void rdd_retain(em_rdd *r) { __atomic_fetch_add(&r->refs, 1, __ATOMIC_RELAXED); }

void rdd_release(em_rdd *r) {
    /* Iterative, over an explicit stack: freeing a chain of 10,000 RDDs
     * (maps, or unions and joins, whose second parents chain too) must not
     * recurse.  The stack starts on the C stack and grows on the heap; if
     * it cannot grow, the RDDs it could not hold stay allocated until
     * em_close frees them. */
    em_rdd *local[16], **st = local;
    int n = 0, cap = 16;
    st[n++] = r;
    while (n) {
        em_rdd *x = st[--n];
        if (!x || __atomic_sub_fetch(&x->refs, 1, __ATOMIC_ACQ_REL) != 0) continue;
        em_rdd *ps[RDD_MAX_PARENTS];
        int np = rdd_parents(x, ps);
        ctx_rdd_gone(x->ctx, x);
        rdd_free(x);
        free(x);
        for (int i = 0; i < np; i++) {
            if (!ps[i]) continue;
            if (n == cap) {
                em_rdd **g = st == local ? malloc(sizeof *g * (size_t)cap * 2) : realloc(st, sizeof *g * (size_t)cap * 2);
                if (!g) continue;
                if (st == local) memcpy(g, local, sizeof local);
                st = g;
                cap *= 2;
            }
            st[n++] = ps[i];
        }
    }
    if (st != local) free(st);
}

static int copy_blob(const void *p, size_t n, uint8_t **out) {
    *out = NULL;
    if (!n) return 0;
    if (!p) return em__seterr(EM_EINVAL, "NULL argument blob with nonzero length");
    if (!(*out = malloc(n))) return em__seterr(EM_ENOMEM, "out of memory copying a %zu-byte argument", n);
    memcpy(*out, p, n);
    return 0;
}

em_rdd *rdd_op(em_rdd *parent, uint8_t op, const char *opname, void *fn, const void *arg, size_t arglen) {
    fnref f;
    uint8_t *a;
    if (!parent) {
        em__seterr(EM_EINVAL, "%s: NULL RDD", opname);
        return NULL;
    }
    if (!fn && op != OP_SAMPLE && op != OP_ZIP_INDEX && op != OP_GLOM && op != OP_UNIQUE_ID && op != OP_SPLIT &&
        op != OP_AGG_LOCAL) {
        em__seterr(EM_EINVAL, "%s: NULL function", opname);
        return NULL;
    }
    if (fnref_make(fn, &f)) {
        em__preferr(EM_EFNREF, "%s", opname);
        return NULL;
    }
    if (copy_blob(arg, arglen, &a)) {
        fnref_clear(&f);
        return NULL;
    }
    em_rdd *r = rdd_new(parent->ctx, RDD_OP, parent->nparts, opname);
    if (!r) {
        fnref_clear(&f);
        free(a);
        return NULL;
    }
    rdd_set_parents(r, parent, NULL);
    r->op = op;
    r->fn = f;
    r->arg = a;
    r->arglen = arglen;
    return r;
}

int agg_make(aggdesc *a, void *create, void *merge_value, void *merge_comb, const void *arg, size_t arglen,
             const void *zero, size_t zlen, int has_zero) {
    uint8_t *ab = NULL, *zb = NULL;
    memset(a, 0, sizeof *a);
    if (fnref_make(create, &a->create) || fnref_make(merge_value, &a->merge_value) ||
        fnref_make(merge_comb, &a->merge_comb) || copy_blob(arg, arglen, &ab) ||
        (has_zero && copy_blob(zero, zlen, &zb))) {
        agg_clear(a);
        return EM_EFNREF;
    }
    a->arg.p = ab;
    a->arg.len = arglen;
    a->zero.p = zb;
    a->zero.len = has_zero ? zlen : 0;
    a->has_zero = (uint8_t)has_zero;
    return 0;
}

void agg_clear(aggdesc *a) {
    fnref_clear(&a->create);
    fnref_clear(&a->merge_value);
    fnref_clear(&a->merge_comb);
    free((void *)a->arg.p);
    free((void *)a->zero.p);
    memset(a, 0, sizeof *a);
}

static int shuffle_parts(em_rdd *parent, int partitions) {
    if (partitions > 0) return partitions;
    int64_t p = conf_i64(parent->ctx->conf, "ember.default.parallelism");
    if (p > 0) return (int)p;
    return parent->nparts > 0 ? parent->nparts : 1;
}

em_rdd *rdd_shuffled(em_rdd *parent, const char *opname, int nparts, uint8_t mode, uint8_t partitioner,
                     const aggdesc *agg, uint8_t combine) {
    em_rdd *r = rdd_new(parent->ctx, RDD_SHUFFLED, nparts, opname);
    if (!r) return NULL;
    rdd_set_parents(r, parent, NULL);
    r->shuffle_id = __atomic_fetch_add(&parent->ctx->next_shuffle, 1, __ATOMIC_RELAXED);
    r->mode = mode;
    r->partitioner = partitioner;
    r->combine = combine;
    if (agg) r->agg = *agg; /* takes ownership */
    r->hash_partitioned = partitioner == PT_HASH;
    return r;
}

/* An operation made of other operations (cogroup, intersection, sort_by,
 * ...): between compose_begin and compose_end the helper RDDs it makes are
 * recorded in a scope, so that they are owned only by the RDDs made from
 * them (and freed with the result), and the result alone is handed to the
 * caller (and to the caller's own scope, when an action composes it). */
void compose_begin(rdd_scope *sc) { ctx_scope_begin(sc); }

em_rdd *compose_end(rdd_scope *sc, em_rdd *result) {
    if (result) rdd_retain(result); /* survives the scope's end */
    ctx_scope_end(sc);
    if (result) ctx_scope_add(result);
    return result;
}

/* ------------------------------------------------------------- sources */

/* The records are encoded once, into their final buffer (srcdata.h); tasks
 * read them there (local[N]) or fetch their partition (cluster mode). */
em_rdd *em_parallelize(em_ctx *ctx, const em_rec *recs, size_t n, int partitions) {
    if (!ctx || (!recs && n)) {
        em__seterr(EM_EINVAL, "em_parallelize: NULL context or records");
        return NULL;
    }
    if (partitions <= 0) partitions = ctx_default_parallelism(ctx);
    srcdata *s = src_encode(recs, n, partitions);
    if (!s) return NULL;
    em_rdd *r = rdd_new(ctx, RDD_RECS, partitions, "parallelize");
    if (!r) {
        src_release(s);
        return NULL;
    }
    r->src = s;
    return r;
}

em_rdd *em_parallelize_i64(em_ctx *ctx, const int64_t *v, size_t n, int partitions) {
    uint8_t *enc = malloc(8 * (n ? n : 1));
    em_rec *recs = calloc(n ? n : 1, sizeof *recs);
    em_rdd *r = NULL;
    if (!ctx || (!v && n)) em__seterr(EM_EINVAL, "em_parallelize_i64: NULL context or values");
    else if (!enc || !recs) em__seterr(EM_ENOMEM, "em_parallelize_i64: out of memory");
    else {
        for (size_t i = 0; i < n; i++) {
            em_i64_enc(v[i], enc + 8 * i);
            recs[i].val = enc + 8 * i;
            recs[i].vlen = 8;
        }
        r = em_parallelize(ctx, recs, n, partitions);
    }
    free(enc);
    free(recs);
    return r;
}

em_rdd *em_parallelize_str(em_ctx *ctx, const char *const *s, size_t n, int partitions) {
    em_rec *recs = calloc(n ? n : 1, sizeof *recs);
    em_rdd *r = NULL;
    if (!ctx || (!s && n)) em__seterr(EM_EINVAL, "em_parallelize_str: NULL context or strings");
    else if (!recs) em__seterr(EM_ENOMEM, "em_parallelize_str: out of memory");
    else {
        size_t i;
        for (i = 0; i < n && s[i]; i++) {
            recs[i].val = s[i];
            recs[i].vlen = strlen(s[i]);
        }
        if (i < n) em__seterr(EM_EINVAL, "em_parallelize_str: string %zu is NULL", i);
        else r = em_parallelize(ctx, recs, n, partitions);
    }
    free(recs);
    return r;
}

em_rdd *em_empty(em_ctx *ctx) {
    if (!ctx) {
        em__seterr(EM_EINVAL, "em_empty: NULL context");
        return NULL;
    }
    return rdd_new(ctx, RDD_RECS, 0, "empty"); /* no partition, so no records */
}

em_rdd *em_range(em_ctx *ctx, int64_t start, int64_t end, int64_t step, int partitions) {
    if (!ctx || step == 0) {
        em__seterr(EM_EINVAL, "em_range: %s", ctx ? "step must not be 0" : "NULL context");
        return NULL;
    }
    if (partitions <= 0) partitions = ctx_default_parallelism(ctx);
    em_rdd *r = rdd_new(ctx, RDD_RANGE, partitions, "range");
    if (r) {
        r->start = start;
        r->end = end;
        r->step = step;
    }
    return r;
}

em_rdd *em_text_file(em_ctx *ctx, const char *path, int min_partitions) {
    text_split *s;
    int n;
    if (!ctx || !path) {
        em__seterr(EM_EINVAL, "em_text_file: NULL %s", ctx ? "path" : "context");
        return NULL;
    }
    if (min_partitions <= 0) min_partitions = ctx_default_parallelism(ctx);
    if (text_plan(path, min_partitions, (uint64_t)conf_i64(ctx->conf, "ember.files.maxPartitionBytes"), &s, &n))
        return NULL;
    em_rdd *r = rdd_new(ctx, RDD_TEXT, n, "text_file");
    if (!r) {
        text_splits_free(s, n);
        return NULL;
    }
    r->splits = s;
    r->name = strdup(path);
    return r;
}

/* ------------------------------------------------------------ narrow */

em_rdd *em_map(em_rdd *rdd, em_map_fn fn, const void *arg, size_t arglen) {
    return rdd_op(rdd, OP_MAP, "map", (void *)fn, arg, arglen);
}
em_rdd *em_filter(em_rdd *rdd, em_pred_fn fn, const void *arg, size_t arglen) {
    em_rdd *r = rdd_op(rdd, OP_FILTER, "filter", (void *)fn, arg, arglen);
    if (r) r->hash_partitioned = rdd->hash_partitioned;
    return r;
}
em_rdd *em_flat_map(em_rdd *rdd, em_map_fn fn, const void *arg, size_t arglen) {
    return rdd_op(rdd, OP_FLAT_MAP, "flat_map", (void *)fn, arg, arglen);
}
em_rdd *em_map_partitions(em_rdd *rdd, em_part_fn fn, const void *arg, size_t arglen) {
    return rdd_op(rdd, OP_MAP_PARTITIONS, "map_partitions", (void *)fn, arg, arglen);
}
em_rdd *em_map_values(em_rdd *rdd, em_map_fn fn, const void *arg, size_t arglen) {
    em_rdd *r = rdd_op(rdd, OP_MAP_VALUES, "map_values", (void *)fn, arg, arglen);
    if (r) r->hash_partitioned = rdd->hash_partitioned;
    return r;
}
em_rdd *em_flat_map_values(em_rdd *rdd, em_map_fn fn, const void *arg, size_t arglen) {
    em_rdd *r = rdd_op(rdd, OP_FLAT_MAP_VALUES, "flat_map_values", (void *)fn, arg, arglen);
    if (r) r->hash_partitioned = rdd->hash_partitioned;
    return r;
}
em_rdd *em_key_by(em_rdd *rdd, em_map_fn fn, const void *arg, size_t arglen) {
    return rdd_op(rdd, OP_KEY_BY, "key_by", (void *)fn, arg, arglen);
}
em_rdd *em_keys(em_rdd *rdd) { return rdd_op(rdd, OP_MAP, "keys", (void *)bi_keys, NULL, 0); }
em_rdd *em_values(em_rdd *rdd) { return rdd_op(rdd, OP_MAP, "values", (void *)bi_values, NULL, 0); }

em_rdd *em_union(em_rdd *a, em_rdd *b) {
    if (!a || !b || a->ctx != b->ctx) {
        em__seterr(EM_EINVAL, "em_union: %s", a && b ? "RDDs of different contexts" : "NULL RDD");
        return NULL;
    }
    em_rdd *r = rdd_new(a->ctx, RDD_UNION, a->nparts + b->nparts, "union");
    if (r) rdd_set_parents(r, a, b);
    return r;
}

em_rdd *em_glom(em_rdd *rdd) { return rdd_op(rdd, OP_GLOM, "glom", NULL, NULL, 0); }

/* cartesian, zip, zip_partitions: a narrow RDD over one partition of each
 * parent (RDD_PAIRED). */
static em_rdd *paired(em_rdd *a, em_rdd *b, uint8_t op, const char *who, void *fn, const void *arg, size_t arglen) {
    fnref f;
    uint8_t *ab;
    if (!a || !b || a->ctx != b->ctx) {
        em__seterr(EM_EINVAL, "%s: %s", who, a && b ? "RDDs of different contexts" : "NULL RDD");
        return NULL;
    }
    int64_t n = op == OP_CARTESIAN ? (int64_t)a->nparts * b->nparts : a->nparts;
    if (op != OP_CARTESIAN && a->nparts != b->nparts) {
        em__seterr(EM_EINVAL, "%s: the RDDs have %d and %d partitions (it needs as many in both)", who, a->nparts,
                   b->nparts);
        return NULL;
    }
    if (n > INT32_MAX) {
        em__seterr(EM_EINVAL, "%s: %d x %d partitions are too many", who, a->nparts, b->nparts);
        return NULL;
    }
    if (op == OP_ZIP_PARTITIONS && !fn) {
        em__seterr(EM_EINVAL, "%s: NULL function", who);
        return NULL;
    }
    if (fnref_make(fn, &f)) {
        em__preferr(EM_EFNREF, "%s", who);
        return NULL;
    }
    if (copy_blob(arg, arglen, &ab)) {
        fnref_clear(&f);
        return NULL;
    }
    em_rdd *r = rdd_new(a->ctx, RDD_PAIRED, (int)n, who);
    if (!r) {
        fnref_clear(&f);
        free(ab);
        return NULL;
    }
    rdd_set_parents(r, a, b);
    r->op = op;
    r->fn = f;
    r->arg = ab;
    r->arglen = arglen;
    return r;
}

em_rdd *em_cartesian(em_rdd *a, em_rdd *b) { return paired(a, b, OP_CARTESIAN, "cartesian", NULL, NULL, 0); }
em_rdd *em_zip(em_rdd *a, em_rdd *b) { return paired(a, b, OP_ZIP, "zip", NULL, NULL, 0); }
em_rdd *em_zip_partitions(em_rdd *a, em_rdd *b, em_zip_part_fn fn, const void *arg, size_t arglen) {
    return paired(a, b, OP_ZIP_PARTITIONS, "zip_partitions", (void *)fn, arg, arglen);
}

em_rdd *em_sample(em_rdd *rdd, int with_replacement, double fraction, uint64_t seed) {
    if (!(fraction >= 0) || !isfinite(fraction) || (!with_replacement && fraction > 1)) {
        em__seterr(EM_EINVAL, "em_sample: fraction %g out of range", fraction);
        return NULL;
    }
    em_rdd *r = rdd_op(rdd, OP_SAMPLE, "sample", NULL, NULL, 0);
    if (r) {
        r->with_repl = with_replacement;
        r->fraction = fraction;
        r->seed = seed;
    }
    return r;
}

em_rdd *em_coalesce(em_rdd *rdd, int n) {
    if (ctx_check(rdd, "em_coalesce") || n < 1) {
        if (rdd) em__seterr(EM_EINVAL, "em_coalesce: partition count %d < 1", n);
        return NULL;
    }
    if (n > rdd->nparts) n = rdd->nparts;
    int *g = malloc(sizeof *g * (size_t)(n + 1));
    if (!g) {
        em__seterr(EM_ENOMEM, "em_coalesce: out of memory");
        return NULL;
    }
    for (int i = 0; i <= n; i++) g[i] = (int)((int64_t)rdd->nparts * i / n);
    em_rdd *r = rdd_new(rdd->ctx, RDD_COALESCE, n, "coalesce");
    if (!r) {
        free(g);
        return NULL;
    }
    rdd_set_parents(r, rdd, NULL);
    r->groups = g;
    return r;
}

static int zip_count(void *c, int idx, task_result *res) {
    int64_t *counts = c;
    if (res->len != sizeof(int64_t)) return em__seterr(EM_EPROTO, "count: bad task result");
    memcpy(&counts[idx], res->data, sizeof(int64_t));
    return 0;
}

static em_rdd *zip_with_index_unguarded(em_rdd *rdd) {
    plan_sink s;
    if (ctx_check(rdd, "em_zip_with_index")) return NULL;
    int64_t *counts = calloc((size_t)rdd->nparts + 1, sizeof *counts);
    if (!counts) {
        em__seterr(EM_ENOMEM, "em_zip_with_index: out of memory");
        return NULL;
    }
    memset(&s, 0, sizeof s);
    s.kind = SK_COUNT;
    if (ctx_run(rdd, &s, NULL, 0, zip_count, counts)) {
        free(counts);
        return NULL;
    }
    int64_t sum = 0; /* counts -> first index of each partition */
    for (int i = 0; i < rdd->nparts; i++) {
        int64_t c = counts[i];
        counts[i] = sum;
        sum += c;
    }
    em_rdd *r = rdd_op(rdd, OP_ZIP_INDEX, "zip_with_index", NULL, NULL, 0);
    if (!r) free(counts);
    else r->zip_starts = counts;
    return r;
}

em_rdd *em_zip_with_index(em_rdd *rdd) {
    CTX_GUARDED_PTR(rdd ? rdd->ctx : NULL, zip_with_index_unguarded(rdd));
}

/* --------------------------------------------------------------- wide */

/* Partitions of a by-key operation: as asked; else, as Spark's
 * defaultPartitioner, those of a parent already hash-partitioned; else
 * ember.default.parallelism or the parent's count. */
static int by_key_parts(em_rdd *rdd, int partitions) {
    if (partitions > 0) return partitions;
    return rdd->hash_partitioned && rdd->nparts > 0 ? rdd->nparts : shuffle_parts(rdd, 0);
}

/* A by-key operation over an RDD already hash-partitioned into as many
 * partitions: no shuffle, each partition aggregated (mode SR_AGG, with a,
 * which it takes) or grouped (SR_GROUP) where it is, as Spark runs it
 * under the same partitioner.  The result is hash-partitioned too. */
static em_rdd *agg_in_place(em_rdd *rdd, const char *opname, uint8_t mode, aggdesc *a) {
    em_rdd *r = rdd_op(rdd, OP_AGG_LOCAL, opname, NULL, NULL, 0);
    if (!r) return NULL;
    r->mode = mode;
    if (a) r->agg = *a;
    r->hash_partitioned = 1;
    return r;
}

static em_rdd *by_key(em_rdd *rdd, const char *opname, int partitions, void *create, void *mv, void *mc,
                      const void *arg, size_t arglen, const void *zero, size_t zlen, int has_zero) {
    aggdesc a;
    if (!rdd || !mv || !mc) {
        em__seterr(EM_EINVAL, "%s: NULL %s", opname, rdd ? "function" : "RDD");
        return NULL;
    }
    if (has_zero && !zero && zlen) {
        em__seterr(EM_EINVAL, "%s: NULL zero value", opname);
        return NULL;
    }
    if (agg_make(&a, create, mv, mc, arg, arglen, zero, zlen, has_zero)) {
        em__preferr(EM_EFNREF, "%s", opname);
        return NULL;
    }
    int n = by_key_parts(rdd, partitions);
    em_rdd *r = rdd->hash_partitioned && rdd->nparts == n ? agg_in_place(rdd, opname, SR_AGG, &a)
                                                          : rdd_shuffled(rdd, opname, n, SR_AGG, PT_HASH, &a, 1);
    if (!r) agg_clear(&a);
    return r;
}

em_rdd *em_reduce_by_key(em_rdd *rdd, em_comb_fn fn, const void *arg, size_t arglen, int partitions) {
    return by_key(rdd, "reduce_by_key", partitions, NULL, (void *)fn, (void *)fn, arg, arglen, NULL, 0, 0);
}

em_rdd *em_aggregate_by_key(em_rdd *rdd, const void *zero, size_t zlen, em_comb_fn seq, em_comb_fn comb,
                            const void *arg, size_t arglen, int partitions) {
    return by_key(rdd, "aggregate_by_key", partitions, NULL, (void *)seq, (void *)comb, arg, arglen, zero, zlen, 1);
}

em_rdd *em_combine_by_key(em_rdd *rdd, em_map_fn create, em_comb_fn merge_value, em_comb_fn merge_comb,
                          const void *arg, size_t arglen, int partitions) {
    if (!create) {
        em__seterr(EM_EINVAL, "combine_by_key: NULL create function");
        return NULL;
    }
    return by_key(rdd, "combine_by_key", partitions, (void *)create, (void *)merge_value, (void *)merge_comb, arg,
                  arglen, NULL, 0, 0);
}

em_rdd *em_fold_by_key(em_rdd *rdd, const void *zero, size_t zlen, em_comb_fn fn, const void *arg, size_t arglen,
                       int partitions) {
    return by_key(rdd, "fold_by_key", partitions, NULL, (void *)fn, (void *)fn, arg, arglen, zero, zlen, 1);
}

em_rdd *em_group_by_key(em_rdd *rdd, int partitions) {
    if (ctx_check(rdd, "em_group_by_key")) return NULL;
    int n = by_key_parts(rdd, partitions);
    if (rdd->hash_partitioned && rdd->nparts == n) return agg_in_place(rdd, "group_by_key", SR_GROUP, NULL);
    return rdd_shuffled(rdd, "group_by_key", n, SR_GROUP, PT_HASH, NULL, 0);
}

em_rdd *em_partition_by(em_rdd *rdd, int partitions) {
    if (ctx_check(rdd, "em_partition_by")) return NULL;
    return rdd_shuffled(rdd, "partition_by", shuffle_parts(rdd, partitions), SR_PASS, PT_HASH, NULL, 0);
}

/* As Spark's repartition (and coalesce here): the count is required, so 0
 * is an error rather than "the parent's count". */
em_rdd *em_repartition(em_rdd *rdd, int partitions) {
    if (ctx_check(rdd, "em_repartition")) return NULL;
    if (partitions < 1) {
        em__seterr(EM_EINVAL, "em_repartition: partition count %d < 1", partitions);
        return NULL;
    }
    em_rdd *r = rdd_shuffled(rdd, "repartition", partitions, SR_PASS, PT_ROUNDROBIN, NULL, 0);
    if (r) r->hash_partitioned = 0;
    return r;
}

/* Spark's CoGroupedRDD: one RDD over n dependencies.  An input already
 * hash-partitioned into the cogroup's count is read one-to-one, in the
 * cogroup's own task (a narrow dependency); any other is shuffled by key
 * into that count (a shuffle dependency: an internal RDD_SHUFFLED that the
 * result alone owns).  The task groups its inputs' records by key, input k
 * being side k. */
em_rdd *em_cogroup_n(em_rdd *const *rdds, int n, int partitions) {
    if (!rdds || n < 2 || n > COGROUP_MAX_SIDES) {
        em__seterr(EM_EINVAL, "em_cogroup_n: %s", rdds ? "the number of RDDs must be 2 to 16" : "NULL RDD array");
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!rdds[i] || rdds[i]->ctx != rdds[0]->ctx) {
            em__seterr(EM_EINVAL, "em_cogroup: %s (RDD %d)", rdds[i] ? "RDDs of different contexts" : "NULL RDD", i);
            return NULL;
        }
    if (partitions <= 0) {
        /* Spark's defaultPartitioner: the partitioner of the input with the
         * most partitions among those that have one; else the largest
         * input's count (or ember.default.parallelism). */
        for (int i = 0; i < n; i++)
            if (rdds[i]->hash_partitioned && rdds[i]->nparts > 0 && rdds[i]->nparts > partitions)
                partitions = rdds[i]->nparts;
        if (partitions <= 0) {
            partitions = shuffle_parts(rdds[0], 0);
            if (conf_i64(rdds[0]->ctx->conf, "ember.default.parallelism") <= 0)
                for (int i = 1; i < n; i++)
                    if (rdds[i]->nparts > partitions) partitions = rdds[i]->nparts;
        }
    }
    em_rdd **deps = calloc((size_t)n, sizeof *deps);
    if (!deps) {
        em__seterr(EM_ENOMEM, "em_cogroup: out of memory");
        return NULL;
    }
    rdd_scope sc;
    compose_begin(&sc);
    em_rdd *r = NULL;
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        em_rdd *in = rdds[i];
        if (in->hash_partitioned && in->nparts == partitions) {
            deps[i] = in;
        } else if ((deps[i] = rdd_shuffled(in, "cogroup", partitions, SR_PASS, PT_HASH, NULL, 0))) {
            deps[i]->dep_only = 1;
        } else {
            ok = 0;
        }
    }
    if (ok && (r = rdd_new(rdds[0]->ctx, RDD_COGROUP, partitions, "cogroup"))) {
        r->deps = deps;
        r->ndeps = n;
        r->sides = (uint8_t)n;
        r->hash_partitioned = 1;
        for (int i = 0; i < n; i++) rdd_retain(deps[i]);
        deps = NULL;
    }
    free(deps);
    return compose_end(&sc, r);
}

em_rdd *em_cogroup(em_rdd *a, em_rdd *b, int partitions) {
    em_rdd *ab[2] = {a, b};
    return em_cogroup_n(ab, 2, partitions);
}

static em_rdd *join_kind(em_rdd *a, em_rdd *b, int partitions, uint8_t kind, const char *opname) {
    rdd_scope sc; /* the cogroup is internal, as in em_cogroup */
    ctx_scope_begin(&sc);
    em_rdd *cg = em_cogroup(a, b, partitions);
    if (cg) rdd_retain(cg);
    ctx_scope_end(&sc);
    em_rdd *r = cg ? rdd_op(cg, OP_FLAT_MAP_VALUES, opname, (void *)bi_join, &kind, 1) : NULL;
    if (r) r->hash_partitioned = 1;
    if (cg) rdd_release(cg);
    return r;
}

em_rdd *em_join(em_rdd *a, em_rdd *b, int partitions) { return join_kind(a, b, partitions, 0, "join"); }
em_rdd *em_left_outer_join(em_rdd *a, em_rdd *b, int partitions) {
    return join_kind(a, b, partitions, 1, "left_outer_join");
}
em_rdd *em_right_outer_join(em_rdd *a, em_rdd *b, int partitions) {
    return join_kind(a, b, partitions, 2, "right_outer_join");
}
em_rdd *em_full_outer_join(em_rdd *a, em_rdd *b, int partitions) {
    return join_kind(a, b, partitions, 3, "full_outer_join");
}

em_rdd *em_distinct(em_rdd *rdd, int partitions) {
    rdd_scope sc; /* the keyed and reduced RDDs are internal, as in em_cogroup */
    ctx_scope_begin(&sc);
    em_rdd *k = rdd_op(rdd, OP_MAP, "distinct", (void *)bi_to_key, NULL, 0);
    em_rdd *r = k ? em_reduce_by_key(k, bi_keep_first, NULL, 0, partitions) : NULL;
    if (r) rdd_retain(r);
    ctx_scope_end(&sc);
    em_rdd *out = r ? rdd_op(r, OP_MAP, "distinct", (void *)bi_from_key, NULL, 0) : NULL;
    if (r) rdd_release(r);
    return out;
}

/* sort_by_key: sample keys of every partition (Spark: 20 per output
 * partition, 3x oversampled), weight each sample by its partition's size,
 * and cut the weighted key order into equal ranges. */
typedef struct cand {
    const uint8_t *k;
    size_t len;
    double w;
} cand;

typedef struct sample_acc {
    ebuf raw;        /* the tasks' results, concatenated */
    size_t *starts;  /* where each partition's result starts */
    size_t *lens;
} sample_acc;

static int sample_result(void *c, int idx, task_result *res) {
    sample_acc *s = c;
    s->starts[idx] = s->raw.len;
    s->lens[idx] = res->len;
    return ebuf_append(&s->raw, res->data, res->len) ? EM_ENOMEM : 0;
}

static int cand_cmp(const void *a, const void *b) {
    const cand *x = a, *y = b;
    return bytes_cmp(x->k, x->len, y->k, y->len);
}

static int range_bounds(em_rdd *rdd, int nparts, ebuf *bounds) {
    plan_sink s;
    sample_acc acc = {EBUF_INIT, NULL, NULL};
    cand *c = NULL;
    size_t nc = 0, capc = 0;
    int rc;
    double total = 0;
    if (nparts <= 1 || rdd->nparts == 0) return 0;
    memset(&s, 0, sizeof s);
    s.kind = SK_KEYSAMPLE;
    double sample_size = fmin(20.0 * nparts, 1e6);
    s.n = (uint64_t)ceil(3.0 * sample_size / rdd->nparts);
    s.seed = 0x5EED0001;
    acc.starts = calloc((size_t)rdd->nparts, sizeof(size_t));
    acc.lens = calloc((size_t)rdd->nparts, sizeof(size_t));
    if (!acc.starts || !acc.lens) rc = em__seterr(EM_ENOMEM, "sort_by_key: out of memory");
    else rc = ctx_run(rdd, &s, NULL, 0, sample_result, &acc);
    for (int p = 0; !rc && p < rdd->nparts; p++) {
        const uint8_t *r = acc.raw.p + acc.starts[p];
        int64_t count;
        size_t pos = 0, n = 0, len = acc.lens[p];
        if (len < 8) continue;
        memcpy(&count, r, 8);
        const void *item;
        size_t ilen;
        while (em_list_next(r + 8, len - 8, &pos, &item, &ilen) == 1) n++;
        if (!n) continue;
        double w = (double)count / (double)n;
        pos = 0;
        while (em_list_next(r + 8, len - 8, &pos, &item, &ilen) == 1) {
            if (nc == capc) {
                capc = capc ? capc * 2 : 1024;
                cand *nc2 = realloc(c, sizeof *c * capc);
                if (!nc2) {
                    rc = em__seterr(EM_ENOMEM, "sort_by_key: out of memory");
                    break;
                }
                c = nc2;
            }
            c[nc++] = (cand){item, ilen, w};
            total += w;
        }
    }
    if (!rc && nc) {
        qsort(c, nc, sizeof *c, cand_cmp);
        double step = total / nparts, cum = 0, target = step;
        int nb = 0;
        const uint8_t *prev = NULL;
        size_t prevlen = 0;
        for (size_t i = 0; i < nc && nb < nparts - 1; i++) {
            cum += c[i].w;
            if (cum >= target) {
                if (!prev || bytes_cmp(c[i].k, c[i].len, prev, prevlen) > 0) {
                    if (list_append(bounds, c[i].k, c[i].len)) {
                        rc = em__seterr(EM_ENOMEM, "sort_by_key: out of memory");
                        break;
                    }
                    prev = c[i].k;
                    prevlen = c[i].len;
                    nb++;
                }
                target += step;
            }
        }
    }
    free(c);
    free(acc.starts);
    free(acc.lens);
    ebuf_free(&acc.raw);
    return rc;
}

static em_rdd *sort_by_key_unguarded(em_rdd *rdd, int ascending, int partitions) {
    ebuf bounds = EBUF_INIT;
    if (ctx_check(rdd, "em_sort_by_key")) return NULL;
    int n = shuffle_parts(rdd, partitions);
    if (range_bounds(rdd, n, &bounds)) {
        ebuf_free(&bounds);
        em__preferr(EM_EJOB, "sort_by_key: sampling keys");
        return NULL;
    }
    em_rdd *r = rdd_shuffled(rdd, "sort_by_key", n, SR_SORT, PT_RANGE, NULL, 0);
    if (!r) {
        ebuf_free(&bounds);
        return NULL;
    }
    r->bounds = bounds;
    r->descending = (uint8_t)!ascending;
    r->hash_partitioned = 0;
    return r;
}

em_rdd *em_sort_by_key(em_rdd *rdd, int ascending, int partitions) {
    CTX_GUARDED_PTR(rdd ? rdd->ctx : NULL, sort_by_key_unguarded(rdd, ascending, partitions));
}

/* --------------------------------------------------------- persistence */

em_rdd *em_persist(em_rdd *rdd, int level) {
    if (!rdd) { /* tested here, not only in ctx_check: GCC's LTO then sees no store through NULL */
        ctx_check(rdd, "em_persist");
        return NULL;
    }
    if (level < EM_MEMORY_ONLY || level > EM_DISK_ONLY) {
        em__seterr(EM_EINVAL, "em_persist: unknown storage level %d", level);
        return NULL;
    }
    __atomic_store_n(&rdd->persist_level, level, __ATOMIC_RELAXED); /* read by the scheduler thread */
    return rdd;
}

em_rdd *em_cache(em_rdd *rdd) { return em_persist(rdd, EM_MEMORY_ONLY); }

int em_unpersist(em_rdd *rdd) {
    if (!rdd) return ctx_check(rdd, "em_unpersist");
    __atomic_store_n(&rdd->persist_level, 0, __ATOMIC_RELAXED);
    ctx_drop_cached(rdd->ctx, rdd->id);
    return 0;
}

/* ------------------------------------------------------------- naming */

int em_num_partitions(em_rdd *rdd) { return rdd ? rdd->nparts : EM_EINVAL; }

em_rdd *em_set_name(em_rdd *rdd, const char *name) {
    if (ctx_check(rdd, "em_set_name") || !name) return rdd;
    char *n = strdup(name);
    if (n) {
        free(rdd->name);
        rdd->name = n;
    }
    return rdd;
}
