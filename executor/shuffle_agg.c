/*
 * shuffle_agg.c -- the reduce side's aggregation in its three tables, with
 * spills and the final merge (shuffle_agg.h).
 */
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "curmetrics.h"
#include "err.h"
#include "recfmt.h"
#include "shuffle_agg.h"
#include "sizehint.h"

/* The tables' sorted keys (after aggmap_sort, agg8_sort, agg16_sort) as
 * records: the spills' and the final merge's reads. */
static void agg_mem_get(void *ctx, size_t i, em_rec *r) { aggmap_get(ctx, i, r); }
static void agg16_mem_get(void *ctx, size_t i, em_rec *r) {
    sa_ctx *a = ctx;
    agg16_get_sorted(&a->t16, i, a->cw < 0 ? 0 : (size_t)a->cw, r);
}
static void agg8_mem_get(void *ctx, size_t i, em_rec *r) {
    sa_ctx *a = ctx;
    agg8_slot *s = &a->t8.slot[i];
    r->key = &s->key;
    r->klen = (size_t)a->kw;
    r->val = &s->comb;
    r->vlen = (size_t)a->cw;
}

/* A spill walks the general table in entry order: each entry's slot is
 * fetched a few entries ahead. */
static void agg_spill_get(void *ctx, size_t i, em_rec *r) {
    aggmap_prefetch_index(ctx, i + AGGMAP_WALK_AHEAD);
    aggmap_get(ctx, i, r);
}

/* The table in use, sorted, written as one run of its n keys read with get
 * (key, combiner); mem its bytes. */
static int spill_run(sa_ctx *a, size_t mem, size_t n, void (*get)(void *, size_t, em_rec *), void *ctx) {
    int rc;
    if (mem > a->peak) a->peak = mem;
    if ((rc = es_runfile_begin(&a->runs))) return rc;
    for (size_t i = 0; i < n; i++) {
        em_rec r;
        get(ctx, i, &r);
        if ((rc = es_runfile_add(&a->runs, &r))) return rc;
    }
    if ((rc = es_runfile_end(&a->runs))) return rc;
    tm_spilled(mem, es_runfile_last_bytes(&a->runs));
    a->spills++;
    return 0;
}

/* Sort the general table by key and write it as one run. */
static int agg_spill(sa_ctx *a) {
    size_t mem = aggmap_mem(&a->map);
    aggmap_sort(&a->map);
    int rc = spill_run(a, mem, aggmap_count(&a->map), agg_spill_get, &a->map);
    if (!rc) aggmap_clear(&a->map);
    return rc;
}

/* Lookahead of the block pipeline: the home slot of the record AGG_AHEAD
 * places on is fetched, and the entry of the one half as far. */
#define AGG_AHEAD 16

/* Write the 8-byte key table, sorted, as one run. */
static int agg8_spill(sa_ctx *a) {
    size_t mem = agg8_mem(&a->t8);
    int rc = agg8_sort(&a->t8);
    if (!rc) rc = spill_run(a, mem, a->t8.n, agg8_mem_get, a);
    if (!rc) agg8_clear(&a->t8);
    return rc;
}

/* A key of up to SK_MAX bytes into t16 with its combiner (cw bytes):
 * agg8_leave's sink. */
static int put16(void *ctx, const em_rec *r) {
    agg16 *t = ctx;
    uint64_t wa, wb;
    agg16_slot *s;
    sk_load(r->key, r->klen, &wa, &wb);
    int rc = agg16_upsert(t, wa, wb, r->klen, sk_hash(wa, wb, r->klen), &s);
    if (rc < 0) return rc;
    if (r->vlen) memcpy(&s->comb, r->val, r->vlen);
    return 0;
}

/* A key of another width: the 8-byte table's keys move to t16 (to16),
 * else to the general table; that table takes every record from now on. */
static int agg8_leave(sa_ctx *a, int to16) {
    size_t kw = a->kw < 0 ? 0 : (size_t)a->kw, cw = a->cw < 0 ? 0 : (size_t)a->cw;
    if (agg8_mem(&a->t8) > a->peak) a->peak = agg8_mem(&a->t8);
    a->use8 = 0;
    if (to16) {
        size_t hint = sh_get(a->o->spill_dir, a->o->shuffle_id, SH_REDUCE16);
        if (hint || a->t8.n) (void)agg16_reserve(&a->t16, hint > a->t8.n ? hint : a->t8.n);
        a->use16 = 1;
        int rc = agg8_each(&a->t8, kw, cw, put16, &a->t16);
        agg8_free(&a->t8);
        return rc;
    }
    size_t hint = sh_get(a->o->spill_dir, a->o->shuffle_id, SH_REDUCE);
    if (hint) (void)aggmap_reserve(&a->map, hint); /* a start: without it, the table grows */
    return agg8_move_all(&a->t8, &a->map, kw, cw);
}

/* A key longer than SK_MAX bytes, or a combiner of another width: t16's
 * keys move to the general table, which takes every record from now on. */
static int agg16_leave(sa_ctx *a) {
    size_t hint = sh_get(a->o->spill_dir, a->o->shuffle_id, SH_REDUCE);
    if (hint) (void)aggmap_reserve(&a->map, hint);
    if (agg16_mem(&a->t16) > a->peak) a->peak = agg16_mem(&a->t16);
    a->use16 = 0;
    return agg16_move_all(&a->t16, &a->map, a->cw < 0 ? 0 : (size_t)a->cw);
}

/* A user combiner's step on the word *comb of a key (found: the key was
 * held, else it was just inserted), its value v: agg_step, which returns
 * the result as a word, called on the word's cw bytes.  The first
 * combiner sets cw.  0 when the result is in *comb; 1 when it is of
 * another width, *c and *clen then the result (in *w or a->out) for the
 * caller to move the keys to the general table with; or a negative
 * code. */
static int word_user(sa_ctx *a, uint64_t *comb, int found, const em_rec *v, uint64_t *w, const void **c,
                     size_t *clen) {
    const agg_spec *g = a->o->agg;
    int rc;
    *c = v->val;
    *clen = v->vlen;
    if (found || !a->combined) { /* else the value is the combiner */
        em_rec cur = {NULL, 0, comb, a->cw < 0 ? 0 : (size_t)a->cw};
        rc = agg_step(g, !found ? AGG_CREATE : a->combined ? AGG_MERGE_COMB : AGG_MERGE_VALUE, &cur, v, w, &a->out);
        if (rc < 0) return rc;
        if (rc == a->cw) {
            *comb = *w;
            return 0;
        }
        *clen = (size_t)rc;
        *c = *clen <= 8 ? (const void *)w : a->out.p;
    }
    if (a->cw < 0 && *clen <= 8) a->cw = (int)*clen;
    if (*clen == (size_t)a->cw) {
        if (*clen == 8) {
            memcpy(comb, *c, 8);
        } else {
            *comb = 0;
            if (*clen) memcpy(comb, *c, *clen);
        }
        return 0;
    }
    if (a->cw < 0) a->cw = 0; /* no combiner held: this key's, set by the caller */
    return 1;
}

/* Key (klen bytes at key, a copy the move does not touch) with its
 * combiner c of clen bytes into the general table, after the move. */
static int put_general(sa_ctx *a, const void *key, size_t klen, const void *c, size_t clen) {
    size_t j;
    int rc = aggmap_upsert_n(&a->map, key, klen, 0, &j);
    return rc < 0 ? rc : aggmap_set_comb(&a->map, j, c, clen);
}

/* word_user for the key in t8's slot s: a result of another width moves
 * every key to the general table (agg8_leave), this one with its new
 * combiner.  0, 1 when the table was left (the record is done; the rest
 * go the general way), or a negative code. */
static int agg8_user(sa_ctx *a, agg8_slot *s, int found, const em_rec *v) {
    const void *c;
    size_t clen;
    uint64_t w;
    int rc = word_user(a, &s->comb, found, v, &w, &c, &clen);
    if (rc <= 0) return rc;
    uint64_t key = s->key;
    if ((rc = agg8_leave(a, 0)) || (rc = put_general(a, &key, (size_t)a->kw, c, clen))) return rc;
    return 1;
}

/* The same for the key in t16's slot s (agg16_leave). */
static int agg16_user(sa_ctx *a, agg16_slot *s, int found, const em_rec *v) {
    const void *c;
    size_t clen;
    uint64_t w;
    int rc = word_user(a, &s->comb, found, v, &w, &c, &clen);
    if (rc <= 0) return rc;
    uint8_t key[SK_MAX];
    size_t klen = (size_t)(s->len - 1);
    sk_store(key, klen, s->a, s->b);
    if ((rc = agg16_leave(a)) || (rc = put_general(a, key, klen, c, clen))) return rc;
    return 1;
}

/* Write t16, sorted, as one run. */
static int agg16_spill(sa_ctx *a) {
    size_t mem = agg16_mem(&a->t16);
    int rc = agg16_sort(&a->t16);
    if (!rc) rc = spill_run(a, mem, a->t16.n, agg16_mem_get, a);
    if (!rc) agg16_clear(&a->t16);
    return rc;
}

static int agg_recs(sa_ctx *a, size_t from, size_t n);

/* Records [from, n) of the block, every key of at most SK_MAX bytes, into
 * t16, fetching the home slot of the record AGG_AHEAD places on. */
static int agg_block16(sa_ctx *a, size_t from, size_t n) {
    const agg_spec *g = a->o->agg;
    agg16 *t = &a->t16;
    for (size_t i = from; i < n; i++) {
        sk_load(a->recs[i].key, a->recs[i].klen, &a->wa[i], &a->wb[i]);
        a->hash[i] = sk_hash(a->wa[i], a->wb[i], a->recs[i].klen);
    }
    for (size_t i = from; i < n; i++) {
        const em_rec *r = &a->recs[i];
        if (i + AGG_AHEAD < n) agg16_prefetch(t, a->hash[i + AGG_AHEAD]);
        if (g->builtin && r->vlen != 8) return comb_bad_len(g->builtin, r->vlen);
        agg16_slot *s;
        int rc = agg16_upsert(t, a->wa[i], a->wb[i], r->klen, a->hash[i], &s);
        if (rc < 0) return em__seterr(rc, "shuffle %u: out of memory", a->o->shuffle_id);
        if (!g->builtin) {
            int found = rc;
            if ((rc = agg16_user(a, s, found, r)) < 0) return rc;
            if (rc) return agg_recs(a, i + 1, n);
            rc = found;
        } else if (rc) comb_apply8(g->builtin, (uint8_t *)&s->comb, r->val);
        else if (a->combined) memcpy(&s->comb, r->val, 8);
        else agg_builtin_create(g, (uint8_t *)&s->comb, r->val);
        if (!rc && agg16_mem(t) > a->o->mem_budget && (rc = agg16_spill(a))) return rc;
    }
    return 0;
}

/* A block of n decoded records, all with keys of the table's width, into
 * the 8-byte table, fetching the home slot of the record AGG_AHEAD places
 * on. */
static int agg_block8(sa_ctx *a, size_t n) {
    const agg_spec *g = a->o->agg;
    agg8 *t = &a->t8;
    uint64_t *key = a->hash; /* the keys as words, where hashes would go */
    for (size_t i = 0; i < n; i++) {
        if (g->builtin && a->recs[i].vlen != 8) return comb_bad_len(g->builtin, a->recs[i].vlen);
        if (a->kw == 8) {
            memcpy(&key[i], a->recs[i].key, 8);
        } else { /* zero padded */
            key[i] = 0;
            if (a->kw) memcpy(&key[i], a->recs[i].key, (size_t)a->kw);
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (i + AGG_AHEAD < n) agg8_prefetch(t, key[i + AGG_AHEAD]);
        agg8_slot *s;
        int rc = agg8_upsert(t, key[i], &s);
        if (rc < 0) return em__seterr(rc, "shuffle %u: out of memory", a->o->shuffle_id);
        const uint8_t *v = a->recs[i].val;
        if (!g->builtin) {
            int found = rc;
            if ((rc = agg8_user(a, s, found, &a->recs[i])) < 0) return rc;
            if (rc) return agg_recs(a, i + 1, n);
            rc = found;
        } else if (rc) comb_apply8(g->builtin, (uint8_t *)&s->comb, v);
        else if (a->combined) memcpy(&s->comb, v, 8);
        else agg_builtin_create(g, (uint8_t *)&s->comb, v);
        if (!rc && agg8_mem(t) > a->o->mem_budget && (rc = agg8_spill(a))) return rc;
    }
    return 0;
}

/* Whether the block [p, p + len) holds records of an 8-byte key and an
 * 8-byte value only (recfmt.h's REC_PAIR8: a reduce_by_key of int64 keys
 * and int64 values, every block). */
static int pairs8_only(const uint8_t *p, size_t len) {
    if (len % REC_PAIR8) return 0;
    for (const uint8_t *q = p; q < p + len; q += REC_PAIR8)
        if (!rec_is_pair8(q, p + len)) return 0;
    return 1;
}

/* A block of n such records into the 8-byte table, read where they lie:
 * no record views, no key copies; the home slot of the key AGG_AHEAD
 * records on is fetched. */
static int agg_pairs8(sa_ctx *a, const uint8_t *p, size_t n) {
    const agg_spec *g = a->o->agg;
    agg8 *t = &a->t8;
    for (size_t i = 0; i < n; i++) {
        uint64_t key;
        if (i + AGG_AHEAD < n) {
            memcpy(&key, p + (i + AGG_AHEAD) * REC_PAIR8 + 1, 8);
            agg8_prefetch(t, key);
        }
        const uint8_t *r = p + i * REC_PAIR8;
        memcpy(&key, r + 1, 8);
        agg8_slot *s;
        int rc = agg8_upsert(t, key, &s);
        if (rc < 0) return em__seterr(rc, "shuffle %u: out of memory", a->o->shuffle_id);
        if (!g->builtin) {
            em_rec v = {NULL, 0, r + 10, 8};
            int found = rc;
            if ((rc = agg8_user(a, s, found, &v)) < 0) return rc;
            if (rc) { /* the rest of the block the general way */
                uint64_t nrest;
                int bad = 0;
                unsigned fl = a->combined ? 0 : BF_VALUES;
                return (i + 1 < n) ? sa_block(a, r + REC_PAIR8, (n - i - 1) * REC_PAIR8, fl, &nrest, &bad) : 0;
            }
            rc = found;
        } else if (rc) comb_apply8(g->builtin, (uint8_t *)&s->comb, r + 10);
        else if (a->combined) memcpy(&s->comb, r + 10, 8);
        else agg_builtin_create(g, (uint8_t *)&s->comb, r + 10);
        if (!rc && agg8_mem(t) > a->o->mem_budget && (rc = agg8_spill(a))) return rc;
    }
    return 0;
}

/* Aggregate one record whose key hashes to h. */
static int agg_rec(sa_ctx *a, const em_rec *r, uint64_t h) {
    const agg_spec *g = a->o->agg;
    size_t i;
    int rc;
    if (!r->key) return em__seterr(EM_EINVAL, "shuffle %u: aggregation needs pair records", a->o->shuffle_id);
    if (g->builtin) { /* 8-byte values merged in place: no call */
        if (r->vlen != 8) return comb_bad_len(g->builtin, r->vlen);
        if ((rc = aggmap_upsert_h(&a->map, r->key, r->klen, h, 8, &i)) < 0) return rc;
        uint8_t *c = aggmap_comb(&a->map, i);
        if (rc) comb_apply8(g->builtin, c, r->val);
        else if (a->combined) memcpy(c, r->val, 8);
        else agg_builtin_create(g, c, r->val);
        return aggmap_mem(&a->map) > a->o->mem_budget ? agg_spill(a) : 0;
    }
    if ((rc = aggmap_upsert_h(&a->map, r->key, r->klen, h, 0, &i)) < 0) return rc;
    em_rec v = {NULL, 0, r->val, r->vlen}, c = {NULL, 0, NULL, 0};
    if (!rc && a->combined) {
        rc = aggmap_set_comb(&a->map, i, r->val, r->vlen); /* a combiner already */
    } else { /* one call, a result of up to 8 bytes in w */
        uint64_t w;
        if (rc) {
            aggmap_get(&a->map, i, &c);
            c.key = NULL;
            c.klen = 0;
        }
        rc = agg_step(g, !rc ? AGG_CREATE : a->combined ? AGG_MERGE_COMB : AGG_MERGE_VALUE, &c, &v, &w, &a->out);
        if (rc < 0) return rc;
        rc = aggmap_set_comb(&a->map, i, rc <= 8 ? (const void *)&w : a->out.p, (size_t)rc);
    }
    if (rc) return rc;
    return aggmap_mem(&a->map) > a->o->mem_budget ? agg_spill(a) : 0;
}

/* A block of records: decoded first, then aggregated in order
 * while the table's cache lines for the records ahead are being fetched
 * (a lookup misses the cache twice once the table outgrows it). */
int sa_block(void *ctx, const uint8_t *p, size_t len, unsigned flags, uint64_t *nrec, int *bad) {
    sa_ctx *a = ctx;
    a->combined = a->o->map_side_combined && !(flags & BF_VALUES);
    if (!a->combined && (!a->o->agg->create || !a->o->agg->merge_value))
        return em__seterr(EM_ECORRUPT, "shuffle %u: a block of values for an aggregation of combiners only",
                          a->o->shuffle_id);
    const uint8_t *end = p + len;
    size_t n = 0;
    if (a->use8 && (a->kw == 8 || a->kw < 0) && pairs8_only(p, len)) {
        a->kw = 8;
        *nrec = len / REC_PAIR8;
        return agg_pairs8(a, p, len / REC_PAIR8);
    }
    while (p < end) {
        if (n == a->cap) {
            size_t nc = a->cap ? 2 * a->cap : 1024;
            em_rec *nr = realloc(a->recs, nc * sizeof *nr);
            if (nr) a->recs = nr;
            uint64_t *nh = nr ? realloc(a->hash, nc * sizeof *nh) : NULL;
            if (nh) a->hash = nh;
            uint64_t *na = nh ? realloc(a->wa, nc * sizeof *na) : NULL;
            if (na) a->wa = na;
            uint64_t *nb = na ? realloc(a->wb, nc * sizeof *nb) : NULL;
            if (!nb) return em__seterr(EM_ENOMEM, "shuffle %u: out of memory", a->o->shuffle_id);
            a->wb = nb;
            a->cap = nc;
        }
        size_t k = rec_get(p, end, &a->recs[n]);
        if (!k) {
            *bad = 1;
            return EM_ECORRUPT;
        }
        n++;
        p += k;
    }
    *nrec = n;
    if (a->use8) {
        size_t i = 0;
        if (a->kw < 0 && n && a->recs[0].key && a->recs[0].klen <= 8) a->kw = (int)a->recs[0].klen;
        while (i < n && a->recs[i].key && a->recs[i].klen == (size_t)a->kw) i++;
        if (i == n) return agg_block8(a, n);
        while (i < n && a->recs[i].key && a->recs[i].klen <= SK_MAX) i++;
        int rc = agg8_leave(a, i == n); /* then t16's path or the general one */
        if (rc) return rc;
    }
    if (a->use16) {
        size_t i = 0;
        while (i < n && a->recs[i].key && a->recs[i].klen <= SK_MAX) i++;
        if (i == n) return agg_block16(a, 0, n);
        int rc = agg16_leave(a);
        if (rc) return rc;
    }
    return agg_recs(a, 0, n);
}

/* Records [from, n) of the block through the general table, hashed first
 * so that their slots and entries can be fetched ahead. */
static int agg_recs(sa_ctx *a, size_t from, size_t n) {
    for (size_t i = from; i < n; i++) a->hash[i] = a->recs[i].key ? aggmap_hash(a->recs[i].key, a->recs[i].klen) : 0;
    for (size_t i = from; i < n; i++) {
        if (i + AGG_AHEAD < n) aggmap_prefetch_slot(&a->map, a->hash[i + AGG_AHEAD]);
        if (i + AGG_AHEAD / 2 < n) aggmap_prefetch_entry(&a->map, a->hash[i + AGG_AHEAD / 2]);
        int rc = agg_rec(a, &a->recs[i], a->hash[i]);
        if (rc) return rc;
    }
    return 0;
}

/* The aggregation's state: 0, or EM_EINVAL without the functions it needs. */
int sa_open(sa_ctx *a, const sr_opts *o) {
    const agg_spec *g = o->agg;
    if (!g || !g->merge_comb || (!o->map_side_combined && (!g->create || !g->merge_value)))
        return em__seterr(EM_EINVAL, "shuffle_read: aggregation without the functions it needs");
    memset(a, 0, sizeof *a);
    a->o = o;
    a->use8 = 1;
    a->kw = -1;
    a->cw = g->builtin ? 8 : -1;
    agg8_init(&a->t8);
    agg8_seed(&a->t8, o->table_seed ? o->table_seed : AGG8_SEED(AGG8_REDUCE_SIDE, o->shuffle_id));
    agg16_init(&a->t16);
    agg16_seed(&a->t16, o->table_seed ? o->table_seed : AGG8_SEED(AGG8_REDUCE_SIDE, o->shuffle_id));
    agg16_dense(&a->t16);
    aggmap_init(&a->map);
    es_runfile_init(&a->runs, o->spill_dir, o->codec, o->block_bytes);
    /* Sized as the shuffle's last reduce task's table was (sizehint.h);
     * without the memory, it grows from small as it would have. */
    size_t hint = sh_get(o->spill_dir, o->shuffle_id, SH_REDUCE8);
    if (hint) (void)agg8_reserve(&a->t8, hint);
    return 0;
}

/* Keys held in the table in use. */
static size_t agg_keys(const sa_ctx *a) {
    return a->use8 ? a->t8.n : a->use16 ? agg16_count(&a->t16) : aggmap_count(&a->map);
}

/* Pass every key's combiner to sink, merging the spilled runs. */
int sa_finish(sa_ctx *a, rec_sink_fn sink, void *sctx) {
    const agg_spec *g = a->o->agg;
    int rc = 0;
    if (a->o->expect && !a->runs.nruns) a->o->expect(sctx, agg_keys(a));
    if (a->use16 && !a->runs.nruns) {
        rc = agg16_each(&a->t16, a->cw < 0 ? 0 : (size_t)a->cw, sink, sctx);
    } else if (a->use16) {
        es_merger mg;
        if (!(rc = agg16_sort(&a->t16))) {
            rc = es_merger_open(&mg, &a->runs, agg16_mem_get, a, a->t16.n, 0);
            if (!rc) rc = es_merge_combine(&mg, g, sink, sctx);
            es_merger_free(&mg);
        }
    } else if (a->use8 && !a->runs.nruns) {
        rc = agg8_each(&a->t8, (size_t)a->kw, (size_t)a->cw, sink, sctx);
    } else if (a->use8) {
        es_merger mg;
        if (!(rc = agg8_sort(&a->t8))) {
            rc = es_merger_open(&mg, &a->runs, agg8_mem_get, a, a->t8.n, 0);
            if (!rc) rc = es_merge_combine(&mg, g, sink, sctx);
            es_merger_free(&mg);
        }
    } else if (!a->runs.nruns) {
        rc = aggmap_each(&a->map, sink, sctx);
    } else {
        es_merger mg;
        aggmap_sort(&a->map);
        rc = es_merger_open(&mg, &a->runs, agg_mem_get, &a->map, aggmap_count(&a->map), 0);
        if (!rc) rc = es_merge_combine(&mg, g, sink, sctx);
        es_merger_free(&mg);
    }
    return rc;
}

/* Ends the aggregation; its peak bytes go to the attempt's metrics. */
void sa_close(sa_ctx *a) {
    size_t mem = aggmap_mem(&a->map) + agg8_mem(&a->t8) + agg16_mem(&a->t16);
    tm_peak(mem > a->peak ? mem : a->peak);
    size_t keys = agg_keys(a);
    if (keys && !a->runs.nruns)
        sh_put(a->o->spill_dir, a->o->shuffle_id, a->use8 ? SH_REDUCE8 : a->use16 ? SH_REDUCE16 : SH_REDUCE, keys);
    free(a->recs);
    free(a->hash);
    free(a->wa);
    free(a->wb);
    agg8_free(&a->t8);
    agg16_free(&a->t16);
    aggmap_free(&a->map);
    ebuf_free(&a->out);
    es_runfile_free(&a->runs);
}

