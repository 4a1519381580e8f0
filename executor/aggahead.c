/*
 * aggahead.c -- the map-side combine's look-ahead queue and its two
 * tables (see aggahead.h for why and what stays the same).
 */
#include <string.h>

#include "aggahead.h"
#include "buf.h"

void ah_init(aggahead *q, aggmap *m, const agg_spec *a, ebuf *out) {
    q->m = m;
    agg16_init(&q->w);
    q->words = 1;
    q->expect = 0;
    q->a = a;
    q->out = out;
    q->head = q->n = 0;
}

void ah_free(aggahead *q) { agg16_free(&q->w); }

/* ---- the general table ---- */

/* A user combiner's result of rc bytes (in w when at most 8, else in
 * q->out) for entry i, whose combiner of clen bytes is at comb: in place
 * when it keeps the entry's width, which the user's function cannot change
 * meanwhile.  Out of line: merge_user's inline path is the 8-byte one. */
static __attribute__((noinline)) int store_user(aggahead *q, size_t i, uint8_t *comb, size_t clen, int rc,
                                                uint64_t w) {
    if (rc < 0) return rc;
    if ((size_t)rc == clen && rc <= 8) {
        memcpy(comb, &w, (size_t)rc);
        return 0;
    }
    return aggmap_set_comb(q->m, i, rc <= 8 ? (const void *)&w : q->out->p, (size_t)rc);
}

/* A user combiner: create or merge_value through agg_step (a result of
 * up to 8 bytes comes back as a word, no buffer), stored in entry i.  A
 * new entry has room for 8 bytes; a result of 8 bytes into 8 (a count, a
 * sum) is written inline, with no call but the user's. */
static inline __attribute__((always_inline)) int merge_user(aggahead *q, size_t i, int found, const uint8_t *v) {
    size_t clen;
    uint8_t *comb = aggmap_comb_len(q->m, i, &clen);
    em_rec val = {NULL, 0, v, 8}, c = {NULL, 0, comb, clen};
    uint64_t w = 0;
    int rc = agg_step(q->a, found ? AGG_MERGE_VALUE : AGG_CREATE, &c, &val, &w, q->out);
    if (rc == 8 && clen == 8) {
        memcpy(comb, &w, 8);
        return 0;
    }
    return store_user(q, i, comb, clen, rc, w);
}

/* A builtin's step on combiner c with value v: found, merged in place
 * (a sum with no call), else the key's first combiner. */
static inline __attribute__((always_inline)) void merge_builtin(const agg_spec *a, uint8_t *c, int found,
                                                               const uint8_t *v) {
    if (found && a->builtin == CB_SUM_I64) enc_i64((int64_t)((uint64_t)dec_i64(c) + (uint64_t)dec_i64(v)), c);
    else if (found) comb_apply8(a->builtin, c, v);
    else agg_builtin_create(a, c, v);
}

/* Insert a key absent from the general table, sizing the table first
 * when it is empty. */
static __attribute__((noinline)) int insert_general(aggahead *q, const uint8_t *key, size_t klen, uint64_t h,
                                                    size_t *i) {
    if (!q->m->mask && q->expect) (void)aggmap_reserve(q->m, q->expect); /* a start: without it, it grows */
    return aggmap__insert_h(q->m, key, klen, h, 8, i);
}

/* Merge one record into the general table.  A new key's entry is made
 * with room for 8 bytes, which a combiner of that width then fills in
 * place.  Always inlined, as pop is, into the flush: a call frame a
 * record costs about what the lookup does. */
static inline __attribute__((always_inline)) int merge(aggahead *q, const uint8_t *key, size_t klen, uint64_t h,
                                                      const uint8_t *v) {
    size_t i;
    int rc;
    if (klen <= SK_MAX) { /* the key as its words (ah_add) */
        uint64_t a, b;
        memcpy(&a, key, 8);
        memcpy(&b, key + 8, 8);
        if (!(rc = aggmap_find_short(q->m, a, b, klen, h, &i))) {
            uint8_t k[SK_MAX];
            sk_store(k, klen, a, b);
            rc = insert_general(q, k, klen, h, &i);
        }
    } else if (!(rc = aggmap_find_h(q->m, key, klen, h, &i))) {
        rc = insert_general(q, key, klen, h, &i);
    }
    if (rc < 0) return rc;
    if (!q->a->builtin) return merge_user(q, i, rc, v);
    merge_builtin(q->a, aggmap_comb(q->m, i), rc, v);
    return 0;
}

/* ---- the word table ---- */

int ah_general(aggahead *q) {
    if (!q->words) return 0;
    q->words = 0;
    if (q->w.n && !q->m->mask && q->expect) (void)aggmap_reserve(q->m, q->expect);
    int rc = agg16_each(&q->w, 8, aggmap_put, q->m);
    agg16_free(&q->w);
    return rc;
}

/* A user's result of rc bytes (w, or q->out past 8) that is not 8 for the
 * word in slot s: every word to the general table, this one with its
 * result. */
static __attribute__((noinline)) int word_misfit(aggahead *q, agg16_slot *s, int rc, uint64_t w) {
    if (rc < 0) return rc;
    uint8_t key[SK_MAX];
    size_t klen = (size_t)(s->len - 1), i;
    int e;
    sk_store(key, klen, s->a, s->b); /* the slot goes with the table */
    if ((e = ah_general(q)) || (e = aggmap_upsert(q->m, key, klen, &i)) < 0) return e;
    return aggmap_set_comb(q->m, i, rc <= 8 ? (const void *)&w : q->out->p, (size_t)rc);
}

/* Insert a word absent from the word table, sizing the table first when
 * it is empty. */
static __attribute__((noinline)) int insert_word(aggahead *q, uint64_t a, uint64_t b, size_t klen, uint64_t h,
                                                 agg16_slot **s) {
    if (!q->w.mask && q->expect) (void)agg16_reserve(&q->w, q->expect); /* a start: without it, it grows */
    return agg16__insert(&q->w, a, b, klen, h, s);
}

/* Merge one record of a key of up to SK_MAX bytes, given as its words,
 * into the word table. */
static inline __attribute__((always_inline)) int merge_word(aggahead *q, uint64_t a, uint64_t b, size_t klen,
                                                           uint64_t h, const uint8_t *v) {
    agg16_slot *s = NULL;
    int rc = agg16_find(&q->w, a, b, klen, h, &s) ? 1 : insert_word(q, a, b, klen, h, &s);
    if (rc < 0) return rc;
    if (q->a->builtin) {
        merge_builtin(q->a, (uint8_t *)&s->comb, rc, v);
        return 0;
    }
    em_rec val = {NULL, 0, v, 8}, c = {NULL, 0, &s->comb, 8};
    uint64_t w = 0;
    int r = agg_step(q->a, rc ? AGG_MERGE_VALUE : AGG_CREATE, &c, &val, &w, q->out);
    if (r == 8) {
        s->comb = w;
        return 0;
    }
    return word_misfit(q, s, r, w);
}

/* ---- the queue ---- */

/* Merge the oldest queued record; first fetch the arena record of the
 * one AH_ENTRY_AHEAD behind it when that goes to the general table (its
 * slot has arrived by then: it was fetched when the record was queued). */
static inline __attribute__((always_inline)) int pop(aggahead *q) {
    ah_ent *e = &q->q[q->head];
    if (q->n > AH_ENTRY_AHEAD) {
        const ah_ent *f = &q->q[(q->head + AH_ENTRY_AHEAD) & (AH_DEPTH - 1)];
        if (!q->words || f->klen > SK_MAX) aggmap_prefetch_entry(q->m, f->h);
    }
    q->head = (q->head + 1) & (AH_DEPTH - 1);
    q->n--;
    if (e->klen <= SK_MAX && q->words) {
        uint64_t a, b;
        memcpy(&a, e->key, 8);
        memcpy(&b, e->key + 8, 8);
        return merge_word(q, a, b, e->klen, e->h, e->v);
    }
    return merge(q, e->key, e->klen, e->h, e->v);
}

int ah_drain(aggahead *q) {
    int rc = 0;
    while (q->n) {
        int r = pop(q);
        if (r < 0 && !rc) rc = r;
    }
    return rc;
}

/* Merge the oldest AH_FLUSH records of a full queue, in one loop: one
 * call frame for them all, where ah_add itself stays a leaf.  Stops at
 * the first error, which it returns. */
static __attribute__((noinline)) int flush(aggahead *q) {
    for (int k = 0; k < AH_FLUSH; k++) {
        int rc = pop(q);
        if (rc < 0) return rc;
    }
    return 0;
}

/* Entry e, at the queue's end, takes r's value and key length (its key
 * is in already, its hash is h): its home slot is fetched, the queue
 * grows by one, and a full one is flushed. */
static inline __attribute__((always_inline)) int queued(aggahead *q, ah_ent *e, uint64_t h, const em_rec *r) {
    e->h = h;
    memcpy(e->v, r->val, 8);
    e->klen = (uint32_t)r->klen;
    if (r->klen <= SK_MAX && q->words) agg16_prefetch(&q->w, h);
    else aggmap_prefetch_slot(q->m, h);
    return ++q->n == AH_DEPTH ? flush(q) : 0;
}

/* A key of more than SK_MAX bytes: queued as bytes up to AH_KEY_MAX;
 * a longer one merged at once, after every record queued before it.  Out
 * of line, so that ah_add's path for a word calls nothing but a flush and
 * needs no frame. */
static __attribute__((noinline)) int add_long(aggahead *q, const em_rec *r) {
    if (r->klen > AH_KEY_MAX) {
        int rc = ah_drain(q);
        return rc ? rc : merge(q, r->key, r->klen, aggmap_hash(r->key, r->klen), r->val);
    }
    ah_ent *e = &q->q[(q->head + q->n) & (AH_DEPTH - 1)];
    copy_small(e->key, r->key, r->klen);
    return queued(q, e, aggmap_hash(r->key, r->klen), r);
}

int ah_add(aggahead *q, const em_rec *r) {
    if (r->klen > SK_MAX) return add_long(q, r);
    /* A word: loaded once, for its hash and as the key. */
    ah_ent *e = &q->q[(q->head + q->n) & (AH_DEPTH - 1)];
    uint64_t a, b;
    sk_load(r->key, r->klen, &a, &b);
    memcpy(e->key, &a, 8);
    memcpy(e->key + 8, &b, 8);
    return queued(q, e, sk_hash(a, b, r->klen), r);
}

/* ---- both tables ---- */

int ah_put(void *ctx, const em_rec *r) {
    aggahead *q = ctx;
    int rc;
    if (q->words && r->klen <= SK_MAX && r->vlen == 8) {
        uint64_t a, b;
        agg16_slot *s;
        sk_load(r->key, r->klen, &a, &b);
        if ((rc = insert_word(q, a, b, r->klen, sk_hash(a, b, r->klen), &s)) < 0) return rc;
        memcpy(&s->comb, r->val, 8);
        return 0;
    }
    size_t i;
    if ((rc = ah_general(q)) || (rc = aggmap_upsert_n(q->m, r->key, r->klen, 0, &i)) < 0) return rc;
    return aggmap_set_comb(q->m, i, r->val, r->vlen);
}

int ah_each(const aggahead *q, rec_sink_fn fn, void *ctx) {
    int rc = aggmap_each(q->m, fn, ctx);
    return rc ? rc : agg16_each(&q->w, 8, fn, ctx);
}

void ah_clear(aggahead *q) {
    aggmap_clear(q->m);
    agg16_clear(&q->w);
}
