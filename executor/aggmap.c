/*
 * aggmap.c -- arena-backed open-addressing hash table from key bytes to
 * combiner bytes (see aggmap.h for the layout and its reasons).
 */
#include <stdlib.h>
#include <string.h>

#include "aggmap.h"
#include "bigbuf.h"
#include "err.h"
#include "recfmt.h"

/* Small to start with: a tiny memory budget must still leave room for
 * entries, not just for empty slots. */
#define AM_MIN_SLOTS 64
#define AM_ARENA_BASE 8

void aggmap_init(aggmap *m) {
    memset(m, 0, sizeof *m);
    m->hot_i = (size_t)-1;
}

void aggmap_free(aggmap *m) {
    bb_free(&m->slotb);
    bb_free(&m->entb);
    bb_free(&m->arena);
    memset(m, 0, sizeof *m);
    m->hot_i = (size_t)-1;
}

void aggmap_clear(aggmap *m) {
    if (m->slots) memset(m->slots, 0, (m->mask + 1) * sizeof *m->slots);
    m->n = 0;
    m->sorted = 0;
    m->hot_i = (size_t)-1;
    ebuf_reset(&m->arena);
}

/* Rebuild the slot array with nslots slots from the stored hash bits,
 * renumbering the entries' slots.  Big slot arrays come from bigbuf.h
 * (huge pages, which save a TLB miss per probe, and kept between tasks). */
static int rehash(aggmap *m, size_t nslots) {
    ebuf nb = EBUF_INIT;
    if (bb_reserve(&nb, nslots * sizeof(am_slot))) return EM_ENOMEM;
    am_slot *s = (am_slot *)nb.p;
    memset(s, 0, nslots * sizeof *s); /* a reused mapping holds old bytes */
    size_t mask = nslots - 1;
    for (size_t i = 0; i < m->n; i++) {
        const am_slot *o = &m->slots[m->ents[i]];
        size_t j = o->tag & mask;
        while (s[j].off) j = (j + 1) & mask;
        s[j] = *o;
        m->ents[i] = (uint32_t)j;
    }
    bb_free(&m->slotb);
    m->slotb = nb;
    m->slots = s;
    m->mask = mask;
    m->hot_i = (size_t)-1;
    return 0;
}

int aggmap_reserve(aggmap *m, size_t keys) {
    size_t nslots = AM_MIN_SLOTS;
    if (m->mask || keys >= UINT32_MAX / 2) return 0;
    while ((keys + 1) * 10 > nslots * 7) nslots *= 2;
    if (rehash(m, nslots) || bb_reserve(&m->entb, keys * sizeof *m->ents))
        return em__seterr(EM_ENOMEM, "aggregation table: out of memory");
    m->ents = (uint32_t *)m->entb.p;
    m->cap = m->entb.cap / sizeof *m->ents;
    return 0;
}

/* Append [u32 klen][u32 clen][key][comb] to the arena; returns its offset,
 * or 0 on ENOMEM. */
static uint64_t put_record(aggmap *m, const void *key, uint32_t klen, const void *c, uint32_t clen) {
    if (m->arena.len == 0) {
        if (bb_reserve(&m->arena, 4096)) return 0;
        memset(m->arena.p, 0, AM_ARENA_BASE);
        m->arena.len = AM_ARENA_BASE;
    }
    if (bb_reserve(&m->arena, (size_t)klen + 8 + clen)) return 0;
    uint64_t off = m->arena.len;
    uint8_t *p = m->arena.p + off;
    uint32_t len[2] = {klen, clen};
    memcpy(p, len, 8);
    if (klen) memcpy(p + 8, key, klen);
    if (clen && c) memcpy(p + 8 + klen, c, clen);
    m->arena.len += (size_t)klen + 8 + clen;
    return off;
}

int aggmap_upsert(aggmap *m, const void *key, size_t klen, size_t *idx) {
    return aggmap_upsert_n(m, key, klen, 0, idx);
}

int aggmap_upsert_n(aggmap *m, const void *key, size_t klen, size_t clen, size_t *idx) {
    return aggmap_upsert_h(m, key, klen, aggmap_hash(key, klen), clen, idx);
}

int aggmap_put(void *m, const em_rec *r) {
    size_t j;
    int rc = aggmap_upsert_n(m, r->key, r->klen, r->vlen, &j);
    if (rc < 0) return rc;
    if (r->vlen) memcpy(aggmap_comb(m, j), r->val, r->vlen);
    return 0;
}

/* Key (hash h), which aggmap_find_h did not find, inserted. */
int aggmap__insert_h(aggmap *m, const void *key, size_t klen, uint64_t h, size_t clen, size_t *idx) {
    EM_ASSERT(!m->sorted && clen <= 4096);
    if (klen > UINT32_MAX - 8192) return em__seterr(EM_ETOOBIG, "aggregation key of %zu bytes is too long", klen);
    /* Keep the load under 0.7 so linear probes stay short. */
    if (!m->mask || (m->n + 1) * 10 > (m->mask + 1) * 7) {
        if (rehash(m, m->mask ? (m->mask + 1) * 2 : AM_MIN_SLOTS))
            return em__seterr(EM_ENOMEM, "aggregation table: out of memory");
    }
    uint32_t tag = (uint32_t)(h >> 32);
    size_t j = (size_t)tag & m->mask; /* as aggmap_find_h and rehash probe */
    while (m->slots[j].off) j = (j + 1) & m->mask;
    if (m->n == m->cap) {
        m->entb.len = m->n * sizeof *m->ents;
        if (bb_reserve(&m->entb, (m->cap ? m->cap : 64) * sizeof *m->ents))
            return em__seterr(EM_ENOMEM, "aggregation table: out of memory");
        m->ents = (uint32_t *)m->entb.p;
        m->cap = m->entb.cap / sizeof *m->ents;
    }
    if (m->n >= UINT32_MAX - 1) return em__seterr(EM_ETOOBIG, "aggregation table: too many keys");
    uint64_t off = put_record(m, key, (uint32_t)klen, NULL, (uint32_t)clen);
    if (!off) return em__seterr(EM_ENOMEM, "aggregation table: out of memory");
    m->slots[j] = (am_slot){tag, (uint32_t)m->n, off};
    m->ents[m->n] = (uint32_t)j;
    m->hot_slot = (uint32_t)j;
    *idx = m->hot_i = m->n++;
    return 0;
}

/* aggmap_set_comb with a combiner of another length than entry i's. */
int aggmap__set_comb_resized(aggmap *m, size_t i, const void *c, size_t clen) {
    am_slot *s = &m->slots[i == m->hot_i ? m->hot_slot : m->ents[i]];
    uint8_t *p = m->arena.p + s->off;
    uint32_t len[2];
    memcpy(len, p, 8);
    if (clen > UINT32_MAX - 16 - (size_t)len[0]) return em__seterr(EM_ETOOBIG, "combiner of %zu bytes is too long", clen);
    /* The last record in the arena can be rewritten where it is, which keeps
     * a freshly inserted key's first combiner from leaving garbage. */
    if (s->off + 8 + len[0] + len[1] == m->arena.len) {
        size_t need = (size_t)s->off + 8 + len[0] + clen;
        if (need > m->arena.len && bb_reserve(&m->arena, need - m->arena.len))
            return em__seterr(EM_ENOMEM, "aggregation table: out of memory");
        p = m->arena.p + s->off;
        len[1] = (uint32_t)clen;
        memcpy(p, len, 8);
        if (clen) memcpy(p + 8 + len[0], c, clen);
        m->arena.len = need;
        return 0;
    }
    /* Copy the key out first: the arena may move while growing. */
    size_t koff = (size_t)s->off + 8;
    if (bb_reserve(&m->arena, (size_t)len[0] + 8 + clen)) return em__seterr(EM_ENOMEM, "aggregation table: out of memory");
    uint8_t *d = m->arena.p + m->arena.len;
    uint32_t nl[2] = {len[0], (uint32_t)clen};
    memcpy(d, nl, 8);
    memmove(d + 8, m->arena.p + koff, len[0]);
    if (clen) memcpy(d + 8 + len[0], c, clen);
    s->off = m->arena.len;
    m->arena.len += (size_t)len[0] + 8 + clen;
    return 0;
}

static int ent_cmp(const void *a, const void *b, void *arg) {
    const aggmap *m = arg;
    const uint8_t *x = m->arena.p + m->slots[*(const uint32_t *)a].off;
    const uint8_t *y = m->arena.p + m->slots[*(const uint32_t *)b].off;
    uint32_t xl, yl;
    memcpy(&xl, x, 4);
    memcpy(&yl, y, 4);
    return bytes_cmp(x + 8, xl, y + 8, yl);
}

int aggmap_each(const aggmap *m, rec_sink_fn fn, void *ctx) {
    int rc = 0;
    for (size_t i = 0; !rc && i < m->n; i++) {
        em_rec r;
        aggmap_prefetch_index(m, i + AGGMAP_WALK_AHEAD);
        aggmap_get(m, i, &r);
        rc = fn(ctx, &r);
    }
    return rc;
}

void aggmap_sort(aggmap *m) {
    if (m->n > 1) qsort_r(m->ents, m->n, sizeof *m->ents, ent_cmp, m);
    m->hot_i = (size_t)-1;
    m->sorted = 1;
}
