/*
 * actions.c -- the actions: each runs a job whose tasks end in a sink
 * (taskdesc.h) and assembles the per-partition outputs on the driver, in
 * partition order.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batch.h"
#include "builtins.h"
#include "conf.h"
#include "ctx.h"
#include "emit.h"
#include "err.h"
#include "fsutil.h"
#include "rdd.h"
#include "recfmt.h"
#include "taskresult.h"

/* Per-partition outputs, kept until the job ends. */
typedef struct outs {
    uint8_t **data;
    size_t *len;
    int n;
} outs;

static int outs_init(outs *o, int n) {
    o->n = n;
    o->data = calloc((size_t)n + 1, sizeof *o->data);
    o->len = calloc((size_t)n + 1, sizeof *o->len);
    return o->data && o->len ? 0 : em__seterr(EM_ENOMEM, "out of memory");
}

static void outs_free(outs *o) {
    for (int i = 0; o->data && i < o->n; i++) free(o->data[i]);
    free(o->data);
    free(o->len);
}

static int keep_out(void *c, int idx, task_result *res) {
    outs *o = c;
    o->data[idx] = res->data;
    o->len[idx] = res->len;
    res->data = NULL;
    return 0;
}

/* Run sink over parts (NULL: all) and keep the outputs. */
static int run_keep(em_rdd *rdd, const plan_sink *s, const int *parts, int n, outs *o) {
    int rc = outs_init(o, parts ? n : rdd->nparts);
    if (!rc) rc = ctx_run(rdd, s, parts, n, keep_out, o);
    if (rc) outs_free(o);
    return rc;
}

static size_t max_record(em_rdd *rdd) { return (size_t)conf_i64(rdd->ctx->conf, "ember.record.maxBytes"); }

/* Concatenate outputs into a batch: one exact-size allocation and a copy
 * per partition, or none when a single partition holds everything. */
static int outs_batch(outs *o, em_batch **out) {
    ebuf b = EBUF_INIT;
    size_t n = 0, total = 0, k;
    int nonempty = 0, last = -1;
    for (int i = 0; i < o->n; i++) {
        if (!o->len[i]) continue;
        if ((k = batch_count_recs(o->data[i], o->len[i])) == (size_t)-1)
            return em__seterr(EM_EPROTO, "collect: malformed task result");
        n += k;
        total += o->len[i];
        nonempty++;
        last = i;
    }
    if (nonempty == 1) { /* take the partition's bytes as they are */
        b.p = o->data[last];
        b.len = b.cap = o->len[last];
        o->data[last] = NULL;
    } else if (total) {
        if (ebuf_reserve(&b, total)) return em__seterr(EM_ENOMEM, "collect: out of memory for %zu bytes", total);
        for (int i = 0; i < o->n; i++) ebuf_append(&b, o->data[i], o->len[i]);
    }
    return (*out = batch_from(&b, n)) ? 0 : EM_ENOMEM;
}

#define CHECK_RDD(r, out, name)                                                         \
    do {                                                                                \
        if (out) *(out) = NULL;                                                         \
        if (!(r) || !(out)) return em__seterr(EM_EINVAL, "%s: NULL argument", name);    \
    } while (0)

static int collect_unguarded(em_rdd *rdd, em_batch **out) {
    plan_sink s;
    outs o;
    CHECK_RDD(rdd, out, "em_collect");
    memset(&s, 0, sizeof s);
    s.kind = SK_COLLECT;
    int rc = run_keep(rdd, &s, NULL, 0, &o);
    if (rc) return rc;
    rc = outs_batch(&o, out);
    outs_free(&o);
    return rc;
}

int em_collect(em_rdd *rdd, em_batch **out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, collect_unguarded(rdd, out));
}

static int count_unguarded(em_rdd *rdd, int64_t *out) {
    plan_sink s;
    outs o;
    if (!rdd || !out) return em__seterr(EM_EINVAL, "em_count: NULL argument");
    memset(&s, 0, sizeof s);
    s.kind = SK_COUNT;
    int rc = run_keep(rdd, &s, NULL, 0, &o);
    if (rc) return rc;
    int64_t sum = 0, c;
    for (int i = 0; i < o.n; i++)
        if (o.len[i] == 8) {
            memcpy(&c, o.data[i], 8);
            sum += c;
        }
    outs_free(&o);
    *out = sum;
    return 0;
}

int em_count(em_rdd *rdd, int64_t *out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, count_unguarded(rdd, out));
}

/* As Spark's take: scan one partition, then grow the number of partitions
 * tried from what the scanned ones yielded (at most 4x per round). */
static int take_unguarded(em_rdd *rdd, size_t n, em_batch **out) {
    plan_sink s;
    ebuf b = EBUF_INIT;
    size_t have = 0;
    int scanned = 0, total;
    CHECK_RDD(rdd, out, "em_take");
    total = rdd->nparts;
    memset(&s, 0, sizeof s);
    s.kind = SK_TAKE;
    while (have < n && scanned < total) {
        int try = 1;
        if (scanned > 0) {
            if (have == 0) try = scanned * 4;
            else {
                double want = ceil(1.5 * (double)n * scanned / (double)have) - scanned;
                try = want < 1 ? 1 : (want > scanned * 4.0 ? scanned * 4 : (int)want);
            }
        }
        if (try > total - scanned) try = total - scanned;
        int *parts = malloc(sizeof *parts * (size_t)try);
        outs o;
        if (!parts) {
            ebuf_free(&b);
            return em__seterr(EM_ENOMEM, "out of memory");
        }
        for (int i = 0; i < try; i++) parts[i] = scanned + i;
        s.n = n - have;
        int rc = run_keep(rdd, &s, parts, try, &o);
        free(parts);
        if (rc) {
            ebuf_free(&b);
            return rc;
        }
        for (int i = 0; i < o.n && have < n; i++) {
            size_t pos = 0, k;
            em_rec r;
            while (pos < o.len[i] && have < n && (k = rec_get(o.data[i] + pos, o.data[i] + o.len[i], &r))) {
                if (ebuf_append(&b, o.data[i] + pos, k)) rc = EM_ENOMEM;
                pos += k;
                have++;
            }
        }
        outs_free(&o);
        if (rc) {
            ebuf_free(&b);
            return em__seterr(rc, "out of memory");
        }
        scanned += try;
    }
    return (*out = batch_from(&b, have)) ? 0 : EM_ENOMEM;
}

int em_take(em_rdd *rdd, size_t n, em_batch **out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, take_unguarded(rdd, n, out));
}

static int first_unguarded(em_rdd *rdd, em_batch **out) {
    int rc = em_take(rdd, 1, out);
    if (rc) return rc;
    if (!(*out)->n) {
        em_batch_free(*out);
        *out = NULL;
        return em__seterr(EM_EEMPTY, "first: empty collection");
    }
    return 0;
}

int em_first(em_rdd *rdd, em_batch **out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, first_unguarded(rdd, out));
}

/* Fold encoded partial records with fn on the driver, starting from acc
 * (an encoded record in *acc, or empty for none). */
static int fold_partials(em_rdd *rdd, em_comb_fn fn, const void *arg, outs *o, ebuf *acc) {
    ebuf tmp = EBUF_INIT;
    size_t maxr = max_record(rdd);
    int rc = 0;
    for (int i = 0; i < o->n && !rc; i++) {
        size_t pos = 0, k;
        em_rec r, a;
        while (!rc && pos < o->len[i] && (k = rec_get(o->data[i] + pos, o->data[i] + o->len[i], &r))) {
            pos += k;
            if (!acc->len) {
                rc = ebuf_append(acc, o->data[i] + pos - k, k) ? EM_ENOMEM : 0;
                continue;
            }
            rec_get(acc->p, acc->p + acc->len, &a);
            ebuf_reset(&tmp);
            rc = emit_call_comb(fn, arg, &a, &r, maxr, &tmp);
            if (!rc) {
                ebuf t = *acc;
                *acc = tmp;
                tmp = t;
            }
        }
    }
    ebuf_free(&tmp);
    return rc;
}

static int acc_batch(ebuf *acc, em_batch **out) {
    return (*out = batch_from(acc, acc->len ? 1 : 0)) ? 0 : EM_ENOMEM;
}

static int fold_job(em_rdd *rdd, const em_rec *zero, em_comb_fn seq, em_comb_fn comb, const void *arg,
                    size_t arglen, em_batch **out, const char *name) {
    plan_sink s;
    outs o;
    ebuf z = EBUF_INIT, acc = EBUF_INIT;
    int rc;
    if (!seq || !comb) return em__seterr(EM_EINVAL, "%s: NULL function", name);
    memset(&s, 0, sizeof s);
    s.kind = SK_FOLD;
    if (fnref_make((void *)seq, &s.fn)) return em__preferr(EM_EFNREF, "%s", name);
    s.arg.p = arg;
    s.arg.len = arglen;
    if (zero) {
        if (rec_append(&z, zero)) {
            fnref_clear(&s.fn);
            return em__seterr(EM_ENOMEM, "out of memory");
        }
        s.zero.p = z.p;
        s.zero.len = z.len;
        s.has_zero = 1;
    }
    rc = run_keep(rdd, &s, NULL, 0, &o);
    fnref_clear(&s.fn);
    if (!rc) {
        if (zero) rc = ebuf_append(&acc, z.p, z.len) ? EM_ENOMEM : 0; /* the driver's copy of the zero */
        if (!rc) rc = fold_partials(rdd, comb, arglen ? arg : NULL, &o, &acc);
        outs_free(&o);
    }
    ebuf_free(&z);
    if (!rc && !acc.len) rc = em__seterr(EM_EEMPTY, "%s: empty collection", name);
    if (!rc) rc = acc_batch(&acc, out);
    ebuf_free(&acc);
    return rc;
}

static int reduce_unguarded(em_rdd *rdd, em_comb_fn fn, const void *arg, size_t arglen, em_batch **out) {
    CHECK_RDD(rdd, out, "em_reduce");
    return fold_job(rdd, NULL, fn, fn, arg, arglen, out, "reduce");
}

int em_reduce(em_rdd *rdd, em_comb_fn fn, const void *arg, size_t arglen, em_batch **out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, reduce_unguarded(rdd, fn, arg, arglen, out));
}

static int fold_unguarded(em_rdd *rdd, const em_rec *zero, em_comb_fn fn, const void *arg, size_t arglen, em_batch **out) {
    CHECK_RDD(rdd, out, "em_fold");
    if (!zero) return em__seterr(EM_EINVAL, "em_fold: NULL zero");
    return fold_job(rdd, zero, fn, fn, arg, arglen, out, "fold");
}

int em_fold(em_rdd *rdd, const em_rec *zero, em_comb_fn fn, const void *arg, size_t arglen, em_batch **out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, fold_unguarded(rdd, zero, fn, arg, arglen, out));
}

static int aggregate_unguarded(em_rdd *rdd, const em_rec *zero, em_comb_fn seq, em_comb_fn comb, const void *arg, size_t arglen,
                 em_batch **out) {
    CHECK_RDD(rdd, out, "em_aggregate");
    if (!zero) return em__seterr(EM_EINVAL, "em_aggregate: NULL zero");
    return fold_job(rdd, zero, seq, comb, arg, arglen, out, "aggregate");
}

int em_aggregate(em_rdd *rdd, const em_rec *zero, em_comb_fn seq, em_comb_fn comb, const void *arg, size_t arglen,
                 em_batch **out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, aggregate_unguarded(rdd, zero, seq, comb, arg, arglen, out));
}

/* tree_aggregate, as Spark: one partial per partition, then while there are
 * more partials than scale + partials/scale, key each by its partition
 * index modulo partials/scale and combine through a small shuffle; the last
 * fold runs on the driver. */
static int tree_job(em_rdd *rdd, const em_rec *zero, em_comb_fn seq, em_comb_fn comb, const void *arg,
                    size_t arglen, int depth, em_batch **out, const char *name) {
    ebuf z = EBUF_INIT, acc = EBUF_INIT;
    int rc = 0;
    if (!seq || !comb) return em__seterr(EM_EINVAL, "%s: NULL function", name);
    if (depth < 0) return em__seterr(EM_EINVAL, "%s: depth %d < 1", name, depth);
    rdd_scope internal; /* the RDDs this thread makes below are ours */
    ctx_scope_begin(&internal);
    if (depth == 0) depth = 2;
    if (zero && rec_append(&z, zero)) return em__seterr(EM_ENOMEM, "out of memory");
    em_rdd *cur = rdd_op(rdd, OP_FOLD, name, (void *)seq, arg, arglen);
    if (!cur) rc = EM_EFNREF;
    else if (zero && !(cur->data = malloc(z.len ? z.len : 1))) rc = em__seterr(EM_ENOMEM, "out of memory");
    else if (zero) {
        memcpy(cur->data, z.p, z.len);
        cur->datalen = z.len;
    }
    int n = rdd->nparts;
    int scale = (int)fmax(ceil(pow(n, 1.0 / depth)), 2);
    while (!rc && n > scale + (int)ceil((double)n / scale)) {
        n /= scale;
        int64_t mod = n;
        aggdesc a;
        em_rdd *keyed = rdd_op(cur, OP_MAP, name, (void *)bi_tree_key, &mod, sizeof mod);
        if (!keyed || agg_make(&a, NULL, (void *)comb, (void *)comb, arg, arglen, NULL, 0, 0)) {
            rc = EM_EFNREF;
            break;
        }
        a.rec_values = 1;
        em_rdd *sh = rdd_shuffled(keyed, name, n, SR_AGG, PT_HASH, &a, 1);
        if (!sh) {
            agg_clear(&a);
            rc = EM_ENOMEM;
            break;
        }
        if (!(cur = em_values(sh))) rc = EM_ENOMEM;
    }
    if (!rc) {
        plan_sink s;
        outs o;
        memset(&s, 0, sizeof s);
        s.kind = SK_COLLECT;
        rc = run_keep(cur, &s, NULL, 0, &o);
        if (!rc) {
            /* Partials are encoded records held as plain values. */
            outs dec;
            if (!(rc = outs_init(&dec, o.n))) {
                for (int i = 0; i < o.n && !rc; i++) {
                    ebuf b = EBUF_INIT;
                    size_t pos = 0, k;
                    em_rec r;
                    while (pos < o.len[i] && (k = rec_get(o.data[i] + pos, o.data[i] + o.len[i], &r))) {
                        if (ebuf_append(&b, r.val, r.vlen)) rc = EM_ENOMEM;
                        pos += k;
                    }
                    dec.data[i] = ebuf_steal(&b, &dec.len[i]);
                }
                if (!rc && zero) rc = ebuf_append(&acc, z.p, z.len) ? EM_ENOMEM : 0;
                if (!rc) rc = fold_partials(rdd, comb, arglen ? arg : NULL, &dec, &acc);
                outs_free(&dec);
            }
            outs_free(&o);
        }
    }
    ebuf_free(&z);
    ctx_scope_end(&internal);
    if (!rc && !acc.len) rc = em__seterr(EM_EEMPTY, "%s: empty collection", name);
    if (!rc) rc = acc_batch(&acc, out);
    ebuf_free(&acc);
    return rc;
}

static int tree_aggregate_unguarded(em_rdd *rdd, const em_rec *zero, em_comb_fn seq, em_comb_fn comb, const void *arg,
                      size_t arglen, int depth, em_batch **out) {
    CHECK_RDD(rdd, out, "em_tree_aggregate");
    if (!zero) return em__seterr(EM_EINVAL, "em_tree_aggregate: NULL zero");
    return tree_job(rdd, zero, seq, comb, arg, arglen, depth, out, "tree_aggregate");
}

int em_tree_aggregate(em_rdd *rdd, const em_rec *zero, em_comb_fn seq, em_comb_fn comb, const void *arg,
                      size_t arglen, int depth, em_batch **out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, tree_aggregate_unguarded(rdd, zero, seq, comb, arg, arglen, depth, out));
}

static int tree_reduce_unguarded(em_rdd *rdd, em_comb_fn fn, const void *arg, size_t arglen, int depth, em_batch **out) {
    CHECK_RDD(rdd, out, "em_tree_reduce");
    return tree_job(rdd, NULL, fn, fn, arg, arglen, depth, out, "tree_reduce");
}

int em_tree_reduce(em_rdd *rdd, em_comb_fn fn, const void *arg, size_t arglen, int depth, em_batch **out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, tree_reduce_unguarded(rdd, fn, arg, arglen, depth, out));
}

static int run_fn_sink(em_rdd *rdd, uint8_t kind, void *fn, const void *arg, size_t arglen, const char *name) {
    plan_sink s;
    outs o;
    if (!rdd || !fn) return em__seterr(EM_EINVAL, "%s: NULL argument", name);
    memset(&s, 0, sizeof s);
    s.kind = kind;
    if (fnref_make(fn, &s.fn)) return em__preferr(EM_EFNREF, "%s", name);
    s.arg.p = arg;
    s.arg.len = arglen;
    int rc = run_keep(rdd, &s, NULL, 0, &o);
    fnref_clear(&s.fn);
    if (!rc) outs_free(&o);
    return rc;
}

static int foreach_unguarded(em_rdd *rdd, em_foreach_fn fn, const void *arg, size_t arglen) {
    return run_fn_sink(rdd, SK_FOREACH, (void *)fn, arg, arglen, "em_foreach");
}

int em_foreach(em_rdd *rdd, em_foreach_fn fn, const void *arg, size_t arglen) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, foreach_unguarded(rdd, fn, arg, arglen));
}

static int foreach_partition_unguarded(em_rdd *rdd, em_foreach_part_fn fn, const void *arg, size_t arglen) {
    return run_fn_sink(rdd, SK_FOREACH_PART, (void *)fn, arg, arglen, "em_foreach_partition");
}

int em_foreach_partition(em_rdd *rdd, em_foreach_part_fn fn, const void *arg, size_t arglen) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, foreach_partition_unguarded(rdd, fn, arg, arglen));
}

static int count_by_key_unguarded(em_rdd *rdd, em_batch **out) {
    CHECK_RDD(rdd, out, "em_count_by_key");
    rdd_scope internal;
    ctx_scope_begin(&internal);
    em_rdd *ones = em_map_values(rdd, bi_one, NULL, 0);
    em_rdd *counts = ones ? em_reduce_by_key(ones, em_sum_i64, NULL, 0, 0) : NULL;
    int rc = counts ? em_collect(counts, out) : em__lasterr();
    ctx_scope_end(&internal);
    return rc;
}

int em_count_by_key(em_rdd *rdd, em_batch **out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, count_by_key_unguarded(rdd, out));
}

typedef struct kv_ent {
    em_rec r;
    const uint8_t *p;
    size_t len, seq;
} kv_ent;

static int kv_cmp(const void *a, const void *b) {
    const kv_ent *x = a, *y = b;
    int c = bytes_cmp(x->r.key, x->r.klen, y->r.key, y->r.klen);
    return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static int collect_as_map_unguarded(em_rdd *rdd, em_batch **out) {
    em_batch *all;
    CHECK_RDD(rdd, out, "em_collect_as_map");
    int rc = em_collect(rdd, &all);
    if (rc) return rc;
    kv_ent *e = malloc(sizeof *e * (all->n + 1));
    size_t pos = 0, n = 0, k;
    ebuf b = EBUF_INIT;
    if (!e) {
        em_batch_free(all);
        return em__seterr(EM_ENOMEM, "out of memory");
    }
    while (pos < all->len && (k = rec_get(all->p + pos, all->p + all->len, &e[n].r))) {
        if (!e[n].r.key) {
            free(e);
            em_batch_free(all);
            return em__seterr(EM_EINVAL, "collect_as_map: the RDD holds plain records, not pairs");
        }
        e[n].p = all->p + pos;
        e[n].len = k;
        e[n].seq = n;
        pos += k;
        n++;
    }
    qsort(e, n, sizeof *e, kv_cmp);
    size_t m = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (i + 1 < n && bytes_cmp(e[i].r.key, e[i].r.klen, e[i + 1].r.key, e[i + 1].r.klen) == 0) continue;
        rc = ebuf_append(&b, e[i].p, e[i].len) ? EM_ENOMEM : 0; /* the last value of each key */
        m++;
    }
    free(e);
    em_batch_free(all);
    if (rc) {
        ebuf_free(&b);
        return em__seterr(rc, "out of memory");
    }
    return (*out = batch_from(&b, m)) ? 0 : EM_ENOMEM;
}

int em_collect_as_map(em_rdd *rdd, em_batch **out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, collect_as_map_unguarded(rdd, out));
}

static int lookup_unguarded(em_rdd *rdd, const void *key, size_t klen, em_batch **out) {
    ebuf arg = EBUF_INIT;
    CHECK_RDD(rdd, out, "em_lookup");
    if (!key && klen) return em__seterr(EM_EINVAL, "em_lookup: NULL key");
    if (ebuf_put_varint(&arg, klen) || ebuf_append(&arg, key, klen)) {
        ebuf_free(&arg);
        return em__seterr(EM_ENOMEM, "out of memory");
    }
    rdd_scope internal; /* the filter and values RDDs are the action's own */
    ctx_scope_begin(&internal);
    em_rdd *f = rdd_op(rdd, OP_FILTER, "lookup", (void *)bi_key_eq, arg.p, arg.len);
    em_rdd *v = f ? em_values(f) : NULL;
    ebuf_free(&arg);
    int rc = v ? 0 : em__lasterr();
    if (!rc) {
        plan_sink s;
        outs o;
        memset(&s, 0, sizeof s);
        s.kind = SK_COLLECT;
        int part = rdd->hash_partitioned && rdd->nparts > 0 ? (int)(em_hash(key ? key : "", klen) % (uint64_t)rdd->nparts) : -1;
        rc = part >= 0 ? run_keep(v, &s, &part, 1, &o) : run_keep(v, &s, NULL, 0, &o);
        if (!rc) {
            rc = outs_batch(&o, out);
            outs_free(&o);
        }
    }
    ctx_scope_end(&internal);
    return rc;
}

int em_lookup(em_rdd *rdd, const void *key, size_t klen, em_batch **out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, lookup_unguarded(rdd, key, klen, out));
}

static int topn_cmp(const void *a, const void *b, void *desc) {
    int c = rec_cmp(&((const kv_ent *)a)->r, &((const kv_ent *)b)->r);
    return *(const int *)desc ? -c : c;
}

static int topn(em_rdd *rdd, size_t n, int desc, em_batch **out, const char *name) {
    plan_sink s;
    outs o;
    CHECK_RDD(rdd, out, name);
    memset(&s, 0, sizeof s);
    s.kind = SK_TOPN;
    s.n = n;
    s.descending = (uint8_t)desc;
    int rc = run_keep(rdd, &s, NULL, 0, &o);
    if (rc) return rc;
    size_t total = 0, m = 0;
    for (int i = 0; i < o.n; i++) total += batch_count_recs(o.data[i], o.len[i]);
    kv_ent *e = malloc(sizeof *e * (total + 1));
    ebuf b = EBUF_INIT;
    if (!e) {
        outs_free(&o);
        return em__seterr(EM_ENOMEM, "out of memory");
    }
    for (int i = 0; i < o.n; i++) {
        size_t pos = 0, k;
        while (pos < o.len[i] && (k = rec_get(o.data[i] + pos, o.data[i] + o.len[i], &e[m].r))) {
            e[m].p = o.data[i] + pos;
            e[m++].len = k;
            pos += k;
        }
    }
    qsort_r(e, m, sizeof *e, topn_cmp, &desc);
    if (m > n) m = n;
    for (size_t i = 0; i < m && !rc; i++) rc = ebuf_append(&b, e[i].p, e[i].len) ? EM_ENOMEM : 0;
    free(e);
    outs_free(&o);
    if (rc) {
        ebuf_free(&b);
        return em__seterr(rc, "out of memory");
    }
    return (*out = batch_from(&b, m)) ? 0 : EM_ENOMEM;
}

static int take_ordered_unguarded(em_rdd *rdd, size_t n, em_batch **out) { return topn(rdd, n, 0, out, "em_take_ordered"); }

int em_take_ordered(em_rdd *rdd, size_t n, em_batch **out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, take_ordered_unguarded(rdd, n, out));
}
static int top_unguarded(em_rdd *rdd, size_t n, em_batch **out) { return topn(rdd, n, 1, out, "em_top"); }

int em_top(em_rdd *rdd, size_t n, em_batch **out) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, top_unguarded(rdd, n, out));
}

/* save_as_text_file: each task attempt writes a file of its own in the
 * attempts' area <tmp>.attempts (SAVE_ATTEMPTS_SUFFIX) and, once the
 * output commit coordinator (scheduler/commit.h: first committer wins)
 * allows it, moves it to <tmp>/part-NNNNN itself; a denied attempt deletes
 * its file.  The job ends when every partition has committed, without
 * waiting for the losers still running: the driver removes the attempts'
 * area (a loser still writing writes to an unlinked file; one that starts
 * later cannot create its file, and none can commit: the coordinator has
 * closed the stage), writes _SUCCESS and renames <tmp> to the output
 * directory.  On failure both are removed: the output directory is
 * complete or absent. */
typedef struct save_ctx {
    const char *tmp;    /* the temporary directory, as the tasks name it */
    const char *dir;    /* the user's output directory, for messages */
    const char *suffix; /* of the part files: "" or ".gz" */
} save_ctx;

/* Remove the attempts' area.  An attempt that was starting as the job
 * ended may create its file while the tree is removed, once (its file
 * name is its own), so the removal is repeated until the area is gone. */
static void remove_attempts(const char *area) {
    struct stat st;
    for (int i = 0; i < 1000 && lstat(area, &st) == 0; i++) rm_tree(area);
}

/* A partition's first successful attempt reports the file it committed. */
static int commit_part(void *c, int idx, task_result *res) {
    save_ctx *s = c;
    char want[4096];
    struct stat st;
    const char *got = (const char *)res->data;
    if (!got || !res->len || got[res->len - 1]) return em__seterr(EM_EPROTO, "save: bad task result");
    snprintf(want, sizeof want, "%s/part-%05d%s", s->tmp, idx, s->suffix);
    if (strcmp(got, want) || stat(want, &st))
        return em__seterr(EM_EIO, "save_as_text_file: %s: partition %d reported a commit, but its file is missing",
                          s->dir, idx);
    return 0;
}

/* The output is first written to a temporary sibling of dir (internal, not
 * named in messages): failing to create it means dir cannot be created in
 * its parent.  Sets the message naming dir, the parent and the cause. */
static int save_mkdir_error(const char *dir, int dlen, int err) {
    const char *slash = memrchr(dir, '/', (size_t)dlen);
    char parent[4096];
    if (!slash) snprintf(parent, sizeof parent, ".");
    else snprintf(parent, sizeof parent, "%.*s", slash == dir ? 1 : (int)(slash - dir), dir);
    if (err == EACCES || err == EPERM)
        return em__seterr(EM_EIO, "save_as_text_file: cannot create output directory %s: permission denied on its "
                                  "parent directory %s", dir, parent);
    if (err == ENOENT || err == ENOTDIR)
        return em__seterr(err == ENOENT ? EM_ENOENT : EM_EIO,
                          "save_as_text_file: cannot create output directory %s: its parent %s %s", dir, parent,
                          err == ENOENT ? "does not exist" : "is not a directory");
    return em__seterr(EM_EIO, "save_as_text_file: cannot create output directory %s in %s: %s", dir, parent,
                      strerror(err));
}

static int save_as_text_file_unguarded(em_rdd *rdd, const char *dir, int codec) {
    plan_sink s;
    struct stat st;
    char tmp[4096], area[4200], marker[4200];
    if (!rdd || !dir || !*dir) return em__seterr(EM_EINVAL, "em_save_as_text_file: NULL argument");
    if (stat(dir, &st) == 0) return em__seterr(EM_EIO, "save_as_text_file: output directory %s already exists", dir);
    int dlen = (int)strlen(dir);
    while (dlen > 1 && dir[dlen - 1] == '/') dlen--; /* "out/": the temporary is out.ember-tmp-N */
    snprintf(tmp, sizeof tmp, "%.*s.ember-tmp-%d", dlen, dir, (int)getpid());
    snprintf(area, sizeof area, "%s" SAVE_ATTEMPTS_SUFFIX, tmp);
    rm_tree(tmp); /* leftovers of a crashed run */
    rm_tree(area);
    if (mkdir(tmp, 0755)) return save_mkdir_error(dir, dlen, errno);
    if (mkdir(area, 0755)) {
        int e = errno;
        rm_tree(tmp);
        return save_mkdir_error(dir, dlen, e);
    }
    memset(&s, 0, sizeof s);
    s.kind = SK_SAVE;
    s.compress = (uint8_t)codec;
    /* Executors of a cluster run in directories of their own: they write
     * where the driver's working directory says. */
    char abs_tmp[8192];
    char cwd[4000];
    if (tmp[0] != '/' && getcwd(cwd, sizeof cwd)) {
        snprintf(abs_tmp, sizeof abs_tmp, "%s/%s", cwd, tmp);
        s.path = abs_tmp;
    } else s.path = tmp;
    save_ctx c = {s.path, dir, codec == SAVE_GZIP ? ".gz" : ""};
    int rc = ctx_run(rdd, &s, NULL, 0, commit_part, &c);
    remove_attempts(area);
    if (!rc) {
        snprintf(marker, sizeof marker, "%s/_SUCCESS", tmp);
        FILE *f = fopen(marker, "w");
        if (!f || fclose(f))
            rc = em__seterr(EM_EIO, "save_as_text_file: %s: cannot write its _SUCCESS marker: %s", dir, strerror(errno));
    }
    if (!rc && rename(tmp, dir))
        rc = em__seterr(EM_EIO, "save_as_text_file: %s: cannot move the finished output into place: %s", dir,
                        strerror(errno));
    if (rc) rm_tree(tmp);
    return rc;
}

int em_save_as_text_file(em_rdd *rdd, const char *dir) {
    CTX_GUARDED(rdd ? rdd->ctx : NULL, save_as_text_file_unguarded(rdd, dir, SAVE_PLAIN));
}

int em_save_as_text_file_codec(em_rdd *rdd, const char *dir, const char *codec) {
    int c;
    if (!codec || !strcmp(codec, "none")) c = SAVE_PLAIN;
    else if (!strcmp(codec, "gzip")) c = SAVE_GZIP;
    else return em__seterr(EM_EINVAL, "em_save_as_text_file_codec: unknown codec \"%s\" (gzip or none)", codec);
    CTX_GUARDED(rdd ? rdd->ctx : NULL, save_as_text_file_unguarded(rdd, dir, c));
}
