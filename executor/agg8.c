/*
 * agg8.c -- the 8-byte key table's growth, ordering and reset (agg8.h).
 */
#include <stdlib.h>

#include "agg8.h"
#include "bigbuf.h"
#include "err.h"
#include "ember.h"

#define AGG8_FIRST 1024 /* slots at first use */

#define AGG8_FIB 0x9e3779b97f4a7c15ULL

void agg8_init(agg8 *t) {
    memset(t, 0, sizeof *t);
    t->mem = (ebuf)EBUF_INIT;
    t->mult = AGG8_FIB;
}

void agg8_free(agg8 *t) {
    uint64_t mult = t->mult;
    bb_free(&t->mem);
    agg8_init(t);
    t->mult = mult;
}

void agg8_seed(agg8 *t, uint64_t seed) {
    EM_ASSERT(!t->mask);
    t->mult = seed ? em_hash(&seed, sizeof seed) | 1 : AGG8_FIB;
}

static void fill_empty(agg8_slot *s, size_t n) {
    for (size_t i = 0; i < n; i++) s[i].key = AGG8_EMPTY;
}

/* The table's slots become nslots (a power of two, more than twice the
 * keys held), the keys rehashed. */
static int resize(agg8 *t, size_t nslots) {
    size_t old = t->mask ? t->mask + 1 : 0;
    ebuf nb = EBUF_INIT;
    if (bb_reserve(&nb, nslots * sizeof(agg8_slot))) return EM_ENOMEM;
    agg8_slot *ns = (agg8_slot *)nb.p, *os = t->slot;
    fill_empty(ns, nslots);
    t->slot = ns;
    t->mask = nslots - 1;
    t->shift = 64 - __builtin_ctzll(nslots);
    for (size_t i = 0; i < old; i++) {
        if (os[i].key == AGG8_EMPTY) continue;
        size_t j = agg8_home(t, os[i].key);
        while (ns[j].key != AGG8_EMPTY) j = (j + 1) & t->mask;
        ns[j] = os[i];
    }
    bb_free(&t->mem);
    t->mem = nb;
    return 0;
}

int agg8_grow(agg8 *t) { return resize(t, t->mask ? 2 * (t->mask + 1) : AGG8_FIRST); }

int agg8_reserve(agg8 *t, size_t keys) {
    size_t nslots = AGG8_FIRST;
    if (t->mask) return 0;
    while (nslots < 2 * (keys + 1)) nslots *= 2;
    return resize(t, nslots);
}

/* Keys in the order of their bytes: the little-endian words byte-swapped. */
static int cmp_bytes(const void *a, const void *b) {
    uint64_t x = __builtin_bswap64(((const agg8_slot *)a)->key), y = __builtin_bswap64(((const agg8_slot *)b)->key);
    return x < y ? -1 : x > y;
}

int agg8_sort(agg8 *t) {
    size_t k = 0;
    if (t->has_empty && !t->mask && agg8_grow(t)) return EM_ENOMEM;
    for (size_t i = 0; t->mask && i <= t->mask; i++)
        if (t->slot[i].key != AGG8_EMPTY) t->slot[k++] = t->slot[i];
    /* The aside key needs a place: the table is at most half full, so
     * there is one past the others. */
    if (t->has_empty) t->slot[k++] = t->empty;
    qsort(t->slot, k, sizeof *t->slot, cmp_bytes);
    return 0;
}

int agg8_each(const agg8 *t, size_t kw, size_t cw, rec_sink_fn fn, void *ctx) {
    int rc = 0;
    for (size_t i = 0; !rc && t->mask && i <= t->mask; i++) {
        if (t->slot[i].key == AGG8_EMPTY) continue;
        em_rec r = {&t->slot[i].key, kw, &t->slot[i].comb, cw};
        rc = fn(ctx, &r);
    }
    if (!rc && t->has_empty) {
        em_rec r = {&t->empty.key, kw, &t->empty.comb, cw};
        rc = fn(ctx, &r);
    }
    return rc;
}

int agg8_move_all(agg8 *t, aggmap *m, size_t kw, size_t cw) {
    int rc = agg8_each(t, kw, cw, aggmap_put, m);
    agg8_free(t);
    return rc;
}

void agg8_clear(agg8 *t) {
    if (t->mask) fill_empty(t->slot, t->mask + 1);
    t->n = 0;
    t->has_empty = 0;
}
