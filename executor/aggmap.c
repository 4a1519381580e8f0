/*
 * aggmap.c -- arena-backed open-addressing hash table from key bytes to
 * combiner bytes (see aggmap.h for the layout and its reasons).
 */
#include <stdlib.h>
#include <string.h>

#include "aggmap.h"
#include "err.h"
#include "recfmt.h"

/* Small to start with: a tiny memory budget must still leave room for
 * entries, not just for empty slots. */
#define AM_MIN_SLOTS 64

void aggmap_init(aggmap *m) {
    memset(m, 0, sizeof *m);
}

void aggmap_free(aggmap *m) {
    free(m->slots);
    free(m->ents);
    ebuf_free(&m->arena);
    memset(m, 0, sizeof *m);
}

void aggmap_clear(aggmap *m) {
    if (m->slots) memset(m->slots, 0, (m->mask + 1) * sizeof *m->slots);
    m->n = 0;
    m->sorted = 0;
    ebuf_reset(&m->arena);
}

/* Rebuild the slot array with nslots slots from the stored hash bits. */
static int rehash(aggmap *m, size_t nslots) {
    uint64_t *s = calloc(nslots, sizeof *s);
    if (!s) return EM_ENOMEM;
    size_t mask = nslots - 1;
    if (m->slots) {
        for (size_t i = 0; i <= m->mask; i++) {
            uint64_t v = m->slots[i];
            if (!v) continue;
            size_t j = (size_t)(v >> 32) & mask;
            while (s[j]) j = (j + 1) & mask;
            s[j] = v;
        }
    }
    free(m->slots);
    m->slots = s;
    m->mask = mask;
    return 0;
}

int aggmap_upsert(aggmap *m, const void *key, size_t klen, size_t *idx) {
    EM_ASSERT(!m->sorted);
    if (klen > UINT32_MAX) return em__seterr(EM_ETOOBIG, "aggregation key of %zu bytes is too long", klen);
    /* Keep the load under 0.7 so linear probes stay short. */
    if (!m->mask || (m->n + 1) * 10 > (m->mask + 1) * 7) {
        if (rehash(m, m->mask ? (m->mask + 1) * 2 : AM_MIN_SLOTS))
            return em__seterr(EM_ENOMEM, "aggregation table: out of memory");
    }
    uint64_t h = em_hash(key, klen);
    uint32_t tag = (uint32_t)h;
    size_t j = (size_t)tag & m->mask;
    for (;;) {
        uint64_t v = m->slots[j];
        if (!v) break;
        if ((uint32_t)(v >> 32) == tag) {
            const am_ent *e = &m->ents[(uint32_t)v - 1];
            if (e->klen == klen && (!klen || !memcmp(m->arena.p + e->koff, key, klen))) {
                *idx = (uint32_t)v - 1;
                return 1;
            }
        }
        j = (j + 1) & m->mask;
    }
    if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 64;
        am_ent *ne = realloc(m->ents, nc * sizeof *ne);
        if (!ne) return em__seterr(EM_ENOMEM, "aggregation table: out of memory");
        m->ents = ne;
        m->cap = nc;
    }
    if (m->n >= UINT32_MAX - 1) return em__seterr(EM_ETOOBIG, "aggregation table: too many keys");
    size_t koff = m->arena.len;
    if (ebuf_append(&m->arena, key, klen)) return em__seterr(EM_ENOMEM, "aggregation table: out of memory");
    am_ent *e = &m->ents[m->n];
    e->koff = koff;
    e->klen = (uint32_t)klen;
    e->coff = m->arena.len;
    e->clen = 0;
    m->slots[j] = (uint64_t)tag << 32 | (uint64_t)(m->n + 1);
    *idx = m->n++;
    return 0;
}

int aggmap_set_comb(aggmap *m, size_t i, const void *c, size_t clen) {
    am_ent *e = &m->ents[i];
    if (clen == e->clen) {
        if (clen) memcpy(m->arena.p + e->coff, c, clen);
        return 0;
    }
    if (clen > UINT32_MAX) return em__seterr(EM_ETOOBIG, "combiner of %zu bytes is too long", clen);
    /* The last combiner in the arena can be rewritten where it is, which
     * keeps a freshly inserted key's first combiner from leaving garbage. */
    size_t base = (e->coff + e->clen == m->arena.len) ? e->coff : m->arena.len;
    if (base + clen > m->arena.cap && ebuf_grow(&m->arena, base + clen - m->arena.len))
        return em__seterr(EM_ENOMEM, "aggregation table: out of memory");
    if (clen) memcpy(m->arena.p + base, c, clen);
    m->arena.len = base + clen;
    e->coff = base;
    e->clen = (uint32_t)clen;
    return 0;
}

static int ent_cmp(const void *a, const void *b, void *arg) {
    const am_ent *x = a, *y = b;
    const uint8_t *base = arg;
    return bytes_cmp(base + x->koff, x->klen, base + y->koff, y->klen);
}

void aggmap_sort(aggmap *m) {
    if (m->n > 1) qsort_r(m->ents, m->n, sizeof *m->ents, ent_cmp, m->arena.p);
    m->sorted = 1;
}
