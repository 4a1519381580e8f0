/*
 * aggahead.c -- the map-side combine's look-ahead queue (see aggahead.h
 * for why and what stays the same).
 */
#include <string.h>

#include "aggahead.h"
#include "buf.h"

void ah_init(aggahead *q, aggmap *m, const agg_spec *a, ebuf *out) {
    q->m = m;
    q->a = a;
    q->out = out;
    q->head = q->n = 0;
}

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

/* Merge one record into the table: the builtin in place (a sum with no
 * call), or the key's first combiner; a user combiner through its
 * functions.  A new key's entry is made with room for 8 bytes, which a
 * combiner of that width then fills in place.  Always inlined, as pop is,
 * into ah_add: a call frame a record costs about what the lookup does. */
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
            rc = aggmap__insert_h(q->m, k, klen, h, 8, &i);
        }
    } else {
        rc = aggmap_upsert_h(q->m, key, klen, h, 8, &i);
    }
    if (rc < 0) return rc;
    if (!q->a->builtin) return merge_user(q, i, rc, v);
    if (rc && q->a->builtin == CB_SUM_I64) {
        uint8_t *c = aggmap_comb(q->m, i);
        enc_i64((int64_t)((uint64_t)dec_i64(c) + (uint64_t)dec_i64(v)), c);
    } else if (rc) {
        comb_apply8(q->a->builtin, aggmap_comb(q->m, i), v);
    }
    else agg_builtin_create(q->a, aggmap_comb(q->m, i), v);
    return 0;
}

/* Merge the oldest queued record; first fetch the arena record of the
 * one AH_ENTRY_AHEAD behind it, whose slot has arrived by then (it was
 * fetched when that record was queued). */
static inline __attribute__((always_inline)) int pop(aggahead *q) {
    ah_ent *e = &q->q[q->head];
    if (q->n > AH_ENTRY_AHEAD) aggmap_prefetch_entry(q->m, q->q[(q->head + AH_ENTRY_AHEAD) & (AH_DEPTH - 1)].h);
    q->head = (q->head + 1) & (AH_DEPTH - 1);
    q->n--;
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
 * is in already, its hash is h): the queue grows by one, and a full one
 * is flushed. */
static inline __attribute__((always_inline)) int queued(aggahead *q, ah_ent *e, uint64_t h, const em_rec *r) {
    e->h = h;
    memcpy(e->v, r->val, 8);
    e->klen = (uint32_t)r->klen;
    aggmap_prefetch_slot(q->m, h);
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
