/*
 * agg16.c -- the word table's growth, walk and reset (agg16.h).
 */
#include <stdlib.h>
#include <string.h>

#include "agg16.h"
#include "bigbuf.h"
#include "ember.h"
#include "err.h"

#define AGG16_FIRST 1024 /* slots at first use */

void agg16_init(agg16 *t) {
    memset(t, 0, sizeof *t);
    t->mem = (ebuf)EBUF_INIT;
    t->mult = 1;
}

void agg16_free(agg16 *t) {
    uint64_t mult = t->mult;
    int dense = t->dense;
    bb_free(&t->mem);
    agg16_init(t);
    t->mult = mult;
    t->dense = dense;
}

void agg16_seed(agg16 *t, uint64_t seed) {
    EM_ASSERT(!t->mask);
    t->mult = seed ? em_hash(&seed, sizeof seed) | 1 : 1;
}

/* The table's slots become nslots (a power of two, more than twice the
 * keys held), the keys rehashed. */
static int resize(agg16 *t, size_t nslots) {
    size_t old = t->mask ? t->mask + 1 : 0;
    ebuf nb = EBUF_INIT;
    if (bb_reserve(&nb, nslots * sizeof(agg16_slot))) return EM_ENOMEM;
    agg16_slot *ns = (agg16_slot *)nb.p, *os = t->slot;
    memset(ns, 0, nslots * sizeof *ns);
    t->slot = ns;
    t->mask = nslots - 1;
    for (size_t i = 0; i < old; i++) {
        if (!os[i].len) continue;
        size_t j = agg16_home(t, sk_hash(os[i].a, os[i].b, os[i].len - 1));
        while (ns[j].len) j = (j + 1) & t->mask;
        ns[j] = os[i];
    }
    bb_free(&t->mem);
    t->mem = nb;
    return 0;
}

int agg16_reserve(agg16 *t, size_t keys) {
    size_t nslots = AGG16_FIRST;
    if (t->mask) return 0;
    while (t->dense ? 3 * nslots < 4 * (keys + 1) : nslots < 2 * (keys + 1)) nslots *= 2;
    return resize(t, nslots);
}

int agg16__insert(agg16 *t, uint64_t a, uint64_t b, size_t n, uint64_t h, agg16_slot **out) {
    if (agg16_full(t, t->n + 1) &&
        resize(t, t->mask ? 2 * (t->mask + 1) : AGG16_FIRST))
        return em__seterr(EM_ENOMEM, "combine table: out of memory");
    size_t i = agg16_home(t, h);
    while (t->slot[i].len) i = (i + 1) & t->mask;
    agg16_slot *s = &t->slot[i];
    s->a = a;
    s->b = b;
    s->len = n + 1;
    s->comb = 0;
    t->n++;
    *out = s;
    return 0;
}

int agg16_each(const agg16 *t, size_t cw, rec_sink_fn fn, void *ctx) {
    int rc = 0;
    for (size_t i = 0; !rc && t->mask && i <= t->mask; i++) {
        const agg16_slot *s = &t->slot[i];
        if (!s->len) continue;
        uint8_t key[SK_MAX];
        sk_store(key, s->len - 1, s->a, s->b);
        em_rec r = {key, s->len - 1, &s->comb, cw};
        rc = fn(ctx, &r);
    }
    return rc;
}

/* Two slots by their keys' bytes: the common length, then the shorter
 * first. */
static int cmp_slots(const void *x, const void *y) {
    const agg16_slot *s = x, *u = y;
    uint8_t a[SK_MAX], b[SK_MAX];
    size_t n = s->len - 1, m = u->len - 1;
    sk_store(a, n, s->a, s->b);
    sk_store(b, m, u->a, u->b);
    int c = memcmp(a, b, n < m ? n : m);
    return c ? c : (n > m) - (n < m);
}

int agg16_sort(agg16 *t) {
    size_t k = 0;
    for (size_t i = 0; t->mask && i <= t->mask; i++)
        if (t->slot[i].len) t->slot[k++] = t->slot[i];
    for (size_t i = k; t->mask && i <= t->mask; i++) t->slot[i].len = 0;
    if (k > 1) qsort(t->slot, k, sizeof *t->slot, cmp_slots);
    /* each key's bytes where its words were, for agg16_get_sorted */
    for (size_t i = 0; i < k; i++) {
        agg16_slot *s = &t->slot[i];
        uint8_t key[SK_MAX];
        sk_store(key, s->len - 1, s->a, s->b);
        memcpy(&s->a, key, SK_MAX);
    }
    return 0;
}

void agg16_get_sorted(const agg16 *t, size_t i, size_t cw, em_rec *r) {
    const agg16_slot *s = &t->slot[i];
    *r = (em_rec){&s->a, s->len - 1, &s->comb, cw};
}

int agg16_move_all(agg16 *t, aggmap *m, size_t cw) {
    int rc = agg16_each(t, cw, aggmap_put, m);
    agg16_free(t);
    return rc;
}

void agg16_clear(agg16 *t) {
    if (t->mask && t->n) memset(t->slot, 0, (t->mask + 1) * sizeof *t->slot);
    t->n = 0;
}
