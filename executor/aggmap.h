/*
 * aggmap.h -- the hash table behind shuffle aggregation: key bytes to
 * combiner bytes.  The map side uses it to combine before writing
 * (reduce_by_key's map-side combine), the reduce side to aggregate (SR_AGG).
 *
 * Layout, chosen so that a lookup touches two cache lines, as a hand-written
 * C hash count does: an open-addressing slot array (16-byte slots holding
 * 32 hash bits, the entry index and the offset of the entry's record in the
 * arena), and the arena record itself, which keeps the key and combiner
 * lengths, the key and the combiner side by side.  A probe rejects most non-matching
 * slots by the hash bits without touching the arena.  A dense array of slot
 * numbers gives entries stable indices (insertion order) for iteration.
 *
 * A combiner replaced by one of the same length is overwritten in place
 * (the common case: fixed-width sums and counts); otherwise a new record is
 * appended and the old one becomes garbage until aggmap_clear, which
 * aggmap_mem counts, so a caller's memory budget sees it.
 *
 * Entry indices are stable until aggmap_sort or aggmap_clear.  After
 * aggmap_sort the entries are in key order and the table can only be read
 * by index and then cleared.
 */
#ifndef EM_AGGMAP_H
#define EM_AGGMAP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "ember.h"
#include "err.h"
#include "recfmt.h"
#include "shortkey.h"

typedef struct am_slot {
    uint32_t tag;  /* high 32 bits of the key's hash; the slot number is tag & mask */
    uint32_t idx;  /* entry index */
    uint64_t off;  /* arena offset of [u32 klen][u32 clen][key][combiner]; 0: empty */
} am_slot;

typedef struct aggmap {
    am_slot *slots;
    size_t mask;      /* slot count - 1 (a power of two), or 0 before first use */
    uint32_t *ents;   /* entry index -> slot number */
    size_t n, cap;
    ebuf arena;       /* starts with 8 unused bytes, so offset 0 means empty */
    ebuf slotb, entb; /* hold slots and ents; all three are bigbuf.h buffers */
    int sorted;       /* slots are stale: only read and clear allowed */
    size_t hot_i;     /* the entry the last upsert returned ... */
    uint32_t hot_slot;/* ... and its slot: spares a lookup in ents */
} aggmap;

void aggmap_init(aggmap *m);
void aggmap_free(aggmap *m);

/* Before first use: slots and entry indices for keys keys in one buffer
 * each (a start: the table grows past it).  0 or EM_ENOMEM. */
int aggmap_reserve(aggmap *m, size_t keys);

/* Find key, inserting it with an empty combiner when absent.  Returns 1
 * (found) or 0 (inserted) with *idx set, or EM_ENOMEM / EM_ETOOBIG (key
 * over 4 GiB) with the table unchanged. */
int aggmap_upsert(aggmap *m, const void *key, size_t klen, size_t *idx);
/* The same, but a key inserted gets a combiner of clen bytes, left for the
 * caller to fill through aggmap_comb (fixed-width combiners: one arena
 * write per new key). */
int aggmap_upsert_n(aggmap *m, const void *key, size_t klen, size_t clen, size_t *idx);
/* Record r, a key and its combiner, into table m (an aggmap *): a
 * rec_sink_fn, for moving another table's keys here.  0, or
 * aggmap_upsert_n's error. */
int aggmap_put(void *m, const em_rec *r);
/* The same with the key's hash already computed (aggmap_hash): the
 * lookup inline (a record's hot path), an insertion out of line. */
static inline int aggmap_find_h(aggmap *m, const void *key, size_t klen, uint64_t h, size_t *idx);
int aggmap__insert_h(aggmap *m, const void *key, size_t klen, uint64_t h, size_t clen, size_t *idx);
static inline int aggmap_upsert_h(aggmap *m, const void *key, size_t klen, uint64_t h, size_t clen, size_t *idx) {
    return aggmap_find_h(m, key, klen, h, idx) ? 1 : aggmap__insert_h(m, key, klen, h, clen, idx);
}

/* The hash the table files a key under. */
static inline uint64_t aggmap_hash(const void *key, size_t klen) { return em_hash(key, klen); }

/* Hints for a caller that knows its next keys (a block of records): fetch
 * the home slot of hash h, or -- once that has arrived -- the entry it
 * points to, so a later upsert finds both cache lines loaded.  They change
 * nothing and may be wrong (a rehash, a probe past the home slot).
 * Always inlined: GCC takes a function whose only effect is a prefetch for
 * a pure one, and drops a call to it that it did not inline early. */
static inline __attribute__((always_inline)) void aggmap_prefetch_slot(const aggmap *m, uint64_t h) {
    if (m->mask) __builtin_prefetch(&m->slots[(uint32_t)(h >> 32) & m->mask]);
}
static inline __attribute__((always_inline)) void aggmap_prefetch_entry(const aggmap *m, uint64_t h) {
    if (!m->mask) return;
    /* The first slot of the probe holding the key's hash bits: under a
     * load of 0.7 a key often lies past its home slot. */
    uint32_t tag = (uint32_t)(h >> 32);
    for (size_t j = tag & m->mask, k = 0; k < 4; k++, j = (j + 1) & m->mask) {
        const am_slot *s = &m->slots[j];
        if (!s->off) return;
        if (s->tag == tag) {
            /* A record of a short key (up to 24 bytes) may straddle two
             * lines; its combiner is in the second. */
            __builtin_prefetch(m->arena.p + s->off);
            __builtin_prefetch(m->arena.p + s->off + 39);
            return;
        }
    }
}

/* For a walk over the entries by index: fetch entry i's slot, which lies
 * where its hash put it (a walk that read it only when it came to it
 * would wait for a miss per entry once the table outgrows the cache).
 * AGGMAP_WALK_AHEAD entries ahead suits it. */
#define AGGMAP_WALK_AHEAD 16
static inline __attribute__((always_inline)) void aggmap_prefetch_index(const aggmap *m, size_t i) {
    if (i < m->n) __builtin_prefetch(&m->slots[m->ents[i]]);
}

/* The probe behind both lookups: a key of up to SK_MAX bytes (words set)
 * is given as shortkey.h's words a and b, and a stored key of its length
 * compares as its two words (two loads each, no byte loop or memcmp); a
 * longer one is given as key and compared with memcmp.  The high half of
 * the hash picks the slot: the hash partitioner takes the hash modulo the
 * partition count, so within one reduce partition the low bits repeat
 * (all equal for 8 partitions), which would crowd the probes. */
static inline __attribute__((always_inline)) int aggmap__find(aggmap *m, int words, const void *key, size_t klen,
                                                             uint64_t a, uint64_t b, uint64_t h, size_t *idx) {
    EM_ASSERT(!m->sorted); /* sorting renumbered the entries, not the slots */
    if (!m->mask) return 0;
    uint32_t tag = (uint32_t)(h >> 32);
    for (size_t j = (size_t)tag & m->mask;; j = (j + 1) & m->mask) {
        const am_slot *s = &m->slots[j];
        if (!s->off) return 0;
        if (s->tag != tag) continue;
        const uint8_t *p = m->arena.p + s->off;
        uint32_t kl;
        memcpy(&kl, p, 4);
        if (kl != klen) continue;
        int eq;
        if (words) {
            uint64_t x, y;
            sk_load(p + 8, klen, &x, &y);
            eq = x == a && y == b;
        } else {
            eq = !memcmp(p + 8, key, klen);
        }
        if (eq) {
            m->hot_slot = (uint32_t)j;
            *idx = m->hot_i = s->idx;
            return 1;
        }
    }
}

/* Whether the table holds key (hash h): 1 with *idx set (and the entry
 * hot), else 0. */
static inline int aggmap_find_h(aggmap *m, const void *key, size_t klen, uint64_t h, size_t *idx) {
    if (klen > SK_MAX) return aggmap__find(m, 0, key, klen, 0, 0, h, idx);
    uint64_t a, b;
    sk_load(key, klen, &a, &b);
    return aggmap__find(m, 1, NULL, klen, a, b, h, idx);
}

/* aggmap_find_h for a key of n <= SK_MAX bytes given as shortkey.h's
 * words a and b (and its hash h). */
static inline int aggmap_find_short(aggmap *m, uint64_t a, uint64_t b, size_t n, uint64_t h, size_t *idx) {
    return aggmap__find(m, 1, NULL, n, a, b, h, idx);
}

static inline const am_slot *aggmap__slot(const aggmap *m, size_t i) {
    return &m->slots[i == m->hot_i ? m->hot_slot : m->ents[i]];
}
/* Entry i as a pair record (key, combiner); views valid until the next
 * upsert, set_comb or clear. */
static inline void aggmap_get(const aggmap *m, size_t i, em_rec *r) {
    const uint8_t *p = m->arena.p + aggmap__slot(m, i)->off;
    uint32_t len[2];
    memcpy(len, p, 8);
    r->key = p + 8;
    r->klen = len[0];
    r->val = p + 8 + len[0];
    r->vlen = len[1];
}
/* Entry i's combiner bytes, writable in place (the length stays), and
 * their length in *clen: a caller that reads the combiner and writes one
 * of the same length back finds the entry once. */
static inline uint8_t *aggmap_comb_len(aggmap *m, size_t i, size_t *clen) {
    uint8_t *p = m->arena.p + aggmap__slot(m, i)->off;
    uint32_t len[2];
    memcpy(len, p, 8);
    *clen = len[1];
    return p + 8 + len[0];
}
static inline uint8_t *aggmap_comb(aggmap *m, size_t i) {
    size_t clen;
    return aggmap_comb_len(m, i, &clen);
}
/* Replace entry i's combiner with a copy of c[0, clen) (which must not point
 * into the arena).  0, or EM_ENOMEM / EM_ETOOBIG leaving the entry as it was.
 * One of the same length (sums, counts) is copied in place inline; another
 * goes out of line. */
int aggmap__set_comb_resized(aggmap *m, size_t i, const void *c, size_t clen);
static inline int aggmap_set_comb(aggmap *m, size_t i, const void *c, size_t clen) {
    size_t cur;
    uint8_t *p = aggmap_comb_len(m, i, &cur);
    if (clen != cur) return aggmap__set_comb_resized(m, i, c, clen);
    if (clen == 8) memcpy(p, c, 8); /* counts and sums: no call */
    else if (clen) memcpy(p, c, clen);
    return 0;
}

static inline size_t aggmap_count(const aggmap *m) { return m->n; }

/* Approximate bytes its entries take: arena bytes used, their indices, and
 * two slots each (the table grows at a load of 0.7).  Not the slots
 * allocated, which aggmap_clear keeps: a memory budget compares this, and
 * after a spill or a dump a kept slot array alone could stay over the
 * budget and empty the table at every new key. */
static inline size_t aggmap_mem(const aggmap *m) {
    return m->arena.len + m->n * (sizeof(uint32_t) + 2 * sizeof(am_slot));
}

/* Call fn with every entry's record in entry order, each entry's slot
 * fetched AGGMAP_WALK_AHEAD entries ahead; stops at fn's first nonzero
 * return, which it returns. */
int aggmap_each(const aggmap *m, rec_sink_fn fn, void *ctx);

/* Put entries in ascending key order (bytes_cmp).  Afterwards only
 * aggmap_get by index and aggmap_clear are allowed. */
void aggmap_sort(aggmap *m);

/* Drop every entry, keeping allocated memory for reuse. */
void aggmap_clear(aggmap *m);

#endif
