/*
 * agg16.c -- the word table's growth, walk and reset (agg16.h).
 */
#include <string.h>

#include "agg16.h"
#include "bigbuf.h"
#include "ember.h"
#include "err.h"

#define AGG16_FIRST 1024 /* slots at first use */

void agg16_init(agg16 *t) {
    memset(t, 0, sizeof *t);
    t->mem = (ebuf)EBUF_INIT;
}

void agg16_free(agg16 *t) {
    bb_free(&t->mem);
    agg16_init(t);
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
        uint64_t h = sk_hash(os[i].a, os[i].b, os[i].len - 1);
        size_t j = (size_t)(h >> 32) & t->mask;
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
    while (nslots < 2 * (keys + 1)) nslots *= 2;
    return resize(t, nslots);
}

int agg16__insert(agg16 *t, uint64_t a, uint64_t b, size_t n, uint64_t h, agg16_slot **out) {
    if (2 * (t->n + 1) > (t->mask ? t->mask + 1 : 0) &&
        resize(t, t->mask ? 2 * (t->mask + 1) : AGG16_FIRST))
        return em__seterr(EM_ENOMEM, "combine table: out of memory");
    size_t i = (size_t)(h >> 32) & t->mask;
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

int agg16_each(const agg16 *t, rec_sink_fn fn, void *ctx) {
    int rc = 0;
    for (size_t i = 0; !rc && t->mask && i <= t->mask; i++) {
        const agg16_slot *s = &t->slot[i];
        if (!s->len) continue;
        uint8_t key[SK_MAX];
        sk_store(key, s->len - 1, s->a, s->b);
        em_rec r = {key, s->len - 1, &s->comb, 8};
        rc = fn(ctx, &r);
    }
    return rc;
}

void agg16_clear(agg16 *t) {
    if (t->mask && t->n) memset(t->slot, 0, (t->mask + 1) * sizeof *t->slot);
    t->n = 0;
}
