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

/* A user combiner: create or merge_value through agg_step (a result of
 * up to 8 bytes comes back as a word, no buffer), stored in entry i: in
 * place when it keeps the entry's width (a new entry has room for 8
 * bytes), which the user's function cannot change meanwhile. */
static int merge_user(aggahead *q, size_t i, int found, const uint8_t *v) {
    size_t clen;
    uint8_t *comb = aggmap_comb_len(q->m, i, &clen);
    em_rec val = {NULL, 0, v, 8}, c = {NULL, 0, comb, clen};
    uint64_t w;
    int rc = agg_step(q->a, found ? AGG_MERGE_VALUE : AGG_CREATE, &c, &val, &w, q->out);
    if (rc < 0) return rc;
    if ((size_t)rc == clen && rc <= 8) {
        memcpy(comb, &w, (size_t)rc);
        return 0;
    }
    return aggmap_set_comb(q->m, i, rc <= 8 ? (const void *)&w : q->out->p, (size_t)rc);
}

/* Merge one record into the table: the builtin in place (a sum with no
 * call), or the key's first combiner; a user combiner through its
 * functions.  A new key's entry is made with room for 8 bytes, which a
 * combiner of that width then fills in place.  Always inlined, as pop is,
 * into ah_add: a call frame a record costs about what the lookup does. */
static inline __attribute__((always_inline)) int merge(aggahead *q, const uint8_t *key, size_t klen, uint64_t h,
                                                      const uint8_t *v) {
    size_t i;
    int rc = aggmap_upsert_h(q->m, key, klen, h, 8, &i);
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

/* Merge the oldest queued record. */
static inline __attribute__((always_inline)) int pop(aggahead *q) {
    ah_ent *e = &q->q[q->head];
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

int ah_add(aggahead *q, const em_rec *r) {
    uint64_t h = aggmap_hash(r->key, r->klen);
    if (r->klen > AH_KEY_MAX) {
        int rc = ah_drain(q);
        return rc ? rc : merge(q, r->key, r->klen, h, r->val);
    }
    int rc = q->n == AH_DEPTH ? pop(q) : 0;
    ah_ent *e = &q->q[(q->head + q->n) & (AH_DEPTH - 1)];
    e->h = h;
    memcpy(e->v, r->val, 8);
    e->klen = (uint32_t)r->klen;
    copy_small(e->key, r->key, r->klen);
    q->n++;
    aggmap_prefetch_slot(q->m, h);
    /* The record AH_ENTRY_AHEAD records before its merge: its slot was
     * prefetched AH_DEPTH - AH_ENTRY_AHEAD records ago and has arrived, so
     * its arena record can be fetched. */
    if (q->n > AH_ENTRY_AHEAD) aggmap_prefetch_entry(q->m, q->q[(q->head + AH_ENTRY_AHEAD) & (AH_DEPTH - 1)].h);
    return rc;
}
