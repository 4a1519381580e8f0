/*
 * combtab.c -- the map-side combine's table: the 8-byte table while the
 * records fit it, the general one from the first that does not
 * (combtab.h).
 */
#include <string.h>

#include "combtab.h"
#include "err.h"

void ct_init(combtab *t, const agg_spec *a, ebuf *out, uint64_t seed) {
    memset(t, 0, sizeof *t);
    t->a = a;
    t->out = out;
    t->use8 = 1;
    t->kw = -1;
    t->cw = a->builtin ? 8 : -1;
    agg8_init(&t->t8);
    agg8_seed(&t->t8, seed);
    aggmap_init(&t->map);
    ah_init(&t->ahead, &t->map, a, out);
}

void ct_free(combtab *t) {
    agg8_free(&t->t8);
    ah_free(&t->ahead);
    aggmap_free(&t->map);
}

/* A record the general way: 8-byte values through the look-ahead queue,
 * others at once into the general table, after the queue (arrival order)
 * and after the words (ah_general: a key is in one table). */
static int add_general(combtab *t, const em_rec *r) {
    const agg_spec *a = t->a;
    size_t i;
    int rc;
    if (r->vlen == 8) return ah_add(&t->ahead, r);
    if ((rc = ah_drain(&t->ahead)) || (rc = ah_general(&t->ahead)) ||
        (rc = aggmap_upsert(&t->map, r->key, r->klen, &i)) < 0)
        return rc;
    em_rec v = {NULL, 0, r->val, r->vlen}, c;
    ebuf_reset(t->out);
    if (rc) {
        aggmap_get(&t->map, i, &c);
        c.key = NULL;
        c.klen = 0;
        rc = a->merge_value(a->ctx, &c, &v, t->out);
    } else {
        rc = a->create(a->ctx, &v, t->out);
    }
    return rc < 0 ? rc : aggmap_set_comb(&t->map, i, t->out->p, t->out->len);
}

/* Every key of the 8-byte table to the queue's tables (ah_put), which
 * take every record from now on.  The FIFO is the caller's to empty. */
static int leave8(combtab *t) {
    ah_expect(&t->ahead, t->expect);
    if (t->cw < 0) t->cw = 0; /* no combiner held yet */
    t->use8 = 0;
    int rc = agg8_each(&t->t8, t->kw < 0 ? 0 : (size_t)t->kw, (size_t)t->cw, ah_put, &t->ahead);
    agg8_free(&t->t8);
    return rc;
}

/* The records still queued, in order, to the general table. */
static int requeue(combtab *t) {
    int rc = 0;
    while (t->n) {
        uint64_t key = t->q[t->head].key;
        em_rec r = {&key, (size_t)t->kw, t->q[t->head].v, 8};
        t->head = (t->head + 1) & (CT_DEPTH - 1);
        t->n--;
        if (!rc) rc = add_general(t, &r);
    }
    return rc;
}

/* A user combiner for the key in slot s (found: held before, else just
 * inserted) and value v, through agg_step (the result a word, no
 * buffer).  A result of another width than the table's
 * moves every key to the general table, this one with its result, and
 * the records queued after it follow. */
static int merge_user(combtab *t, agg8_slot *s, int found, const uint8_t *v) {
    const agg_spec *a = t->a;
    const void *c = v;
    size_t clen = 8, j;
    uint64_t w;
    int rc;
    if (found || !a->create_identity) { /* one call, the result in w */
        em_rec val = {NULL, 0, v, 8}, cur = {NULL, 0, &s->comb, t->cw < 0 ? 0 : (size_t)t->cw};
        if ((rc = agg_step(a, found ? AGG_MERGE_VALUE : AGG_CREATE, &cur, &val, &w, t->out)) < 0) return rc;
        if (rc == t->cw) {
            s->comb = w;
            return 0;
        }
        clen = (size_t)rc;
        c = clen <= 8 ? (const void *)&w : t->out->p;
    }
    if (t->cw < 0 && clen <= 8) t->cw = (int)clen;
    if (clen == (size_t)t->cw) {
        s->comb = 0;
        if (clen) memcpy(&s->comb, c, clen);
        return 0;
    }
    uint64_t key = s->key;
    if ((rc = leave8(t)) || (rc = ah_general(&t->ahead)) ||
        (rc = aggmap_upsert_n(&t->map, &key, (size_t)t->kw, 0, &j)) < 0 ||
        (rc = aggmap_set_comb(&t->map, j, c, clen)))
        return rc;
    return requeue(t);
}

/* Merge the oldest queued record into the 8-byte table. */
static inline __attribute__((always_inline)) int pop8(combtab *t) {
    uint64_t key = t->q[t->head].key;
    uint8_t v[8];
    memcpy(v, t->q[t->head].v, 8);
    t->head = (t->head + 1) & (CT_DEPTH - 1);
    t->n--;
    agg8_slot *s;
    int found = agg8_upsert(&t->t8, key, &s);
    if (found < 0) return em__seterr(EM_ENOMEM, "combine table: out of memory");
    const agg_spec *a = t->a;
    if (!a->builtin) return merge_user(t, s, found, v);
    if (found) comb_apply8(a->builtin, (uint8_t *)&s->comb, v);
    else agg_builtin_create(a, (uint8_t *)&s->comb, v);
    return 0;
}

static int drain8(combtab *t) {
    int rc = 0;
    while (t->use8 && t->n)
        if ((rc = pop8(t))) break;
    return rc;
}

/* Merge the oldest CT_FLUSH records of a full FIFO in one loop: one call
 * frame for them all, where ct__add's path stays a leaf.  Stops at an
 * error, or where a record moved the keys to the general table (the
 * records after it went there too). */
static __attribute__((noinline)) int flush8(combtab *t) {
    for (int k = 0; k < CT_FLUSH && t->use8 && t->n; k++) {
        int rc = pop8(t);
        if (rc) return rc;
    }
    return 0;
}

/* Record r (key of kw bytes, 8-byte value) to the FIFO's end, its home
 * slot fetched; a full FIFO is flushed. */
static inline __attribute__((always_inline)) int queue8(combtab *t, const em_rec *r) {
    uint64_t key = 0;
    if (r->klen == 8) memcpy(&key, r->key, 8);
    else for (size_t i = 0; i < r->klen; i++) ((uint8_t *)&key)[i] = ((const uint8_t *)r->key)[i];
    unsigned at = (t->head + t->n) & (CT_DEPTH - 1);
    t->q[at].key = key;
    memcpy(t->q[at].v, r->val, 8);
    agg8_prefetch(&t->t8, key);
    return ++t->n == CT_DEPTH ? flush8(t) : 0;
}

/* Every record but one of the 8-byte table's width: the table's first,
 * one that moves the keys to the general table, or one after that. */
static __attribute__((noinline)) int add_other(combtab *t, const em_rec *r) {
    int rc = 0;
    if (t->use8 && (r->vlen != 8 || r->klen > 8 || (t->kw >= 0 && r->klen != (size_t)t->kw))) {
        if (!(rc = drain8(t)) && t->use8) rc = leave8(t);
        if (rc) return rc;
    }
    if (!t->use8) return add_general(t, r);
    if (t->kw < 0) {
        if (t->expect8) (void)agg8_reserve(&t->t8, t->expect8); /* a start: without it, the table grows */
        t->kw = (int)r->klen;
    }
    return queue8(t, r);
}

int ct__add(combtab *t, const em_rec *r) {
    if (!t->use8 || r->vlen != 8 || r->klen != (size_t)t->kw) return add_other(t, r);
    return queue8(t, r);
}

int ct_drain(combtab *t) {
    int rc = drain8(t);
    return rc ? rc : ah_drain(&t->ahead);
}

size_t ct_count(const combtab *t) { return t->use8 ? t->t8.n : ah_count(&t->ahead); }

int ct_each(combtab *t, rec_sink_fn fn, void *ctx) {
    int rc = ct_drain(t);
    if (rc) return rc;
    if (!t->use8) return ah_each(&t->ahead, fn, ctx);
    return agg8_each(&t->t8, t->kw < 0 ? 0 : (size_t)t->kw, t->cw < 0 ? 0 : (size_t)t->cw, fn, ctx);
}

void ct_clear(combtab *t) {
    if (t->use8) agg8_clear(&t->t8);
    else ah_clear(&t->ahead);
}
