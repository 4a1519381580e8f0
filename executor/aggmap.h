/*
 * aggmap.h -- the hash table behind shuffle aggregation: key bytes to
 * combiner bytes.  The map side uses it to combine before writing
 * (reduce_by_key's map-side combine), the reduce side to aggregate (SR_AGG).
 *
 * Keys and combiners live in one arena; an entry is four integers, so adding
 * a key costs no malloc of its own.  The table is open addressing with linear
 * probing over 64-bit slots holding (low 32 bits of the hash, entry index+1),
 * which lets a probe reject most non-matching slots without touching the
 * entry, and lets the table grow without hashing keys again.
 *
 * A combiner replaced by one of the same length is overwritten in place
 * (the common case: fixed-width sums and counts); otherwise the new bytes
 * are appended and the old ones become garbage until aggmap_clear, which
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

#include "buf.h"
#include "ember.h"

typedef struct am_ent {
    uint64_t koff, coff; /* offsets of key and combiner in the arena */
    uint32_t klen, clen;
} am_ent;

typedef struct aggmap {
    uint64_t *slots;  /* 0: empty; else (uint32 hash) << 32 | (index + 1) */
    size_t mask;      /* slot count - 1 (a power of two), or 0 before first use */
    am_ent *ents;
    size_t n, cap;
    ebuf arena;
    int sorted;       /* slots are stale: only read and clear allowed */
} aggmap;

void aggmap_init(aggmap *m);
void aggmap_free(aggmap *m);

/* Find key, inserting it with an empty combiner when absent.  Returns 1
 * (found) or 0 (inserted) with *idx set, or EM_ENOMEM / EM_ETOOBIG (key
 * over 4 GiB) with the table unchanged. */
int aggmap_upsert(aggmap *m, const void *key, size_t klen, size_t *idx);

/* Entry i as a pair record (key, combiner); views valid until the next
 * upsert, set_comb or clear. */
static inline void aggmap_get(const aggmap *m, size_t i, em_rec *r) {
    const am_ent *e = &m->ents[i];
    r->key = m->arena.p + e->koff;
    r->klen = e->klen;
    r->val = m->arena.p + e->coff;
    r->vlen = e->clen;
}

/* Replace entry i's combiner with a copy of c[0, clen) (which must not point
 * into the arena).  0, or EM_ENOMEM / EM_ETOOBIG leaving the entry as it was. */
int aggmap_set_comb(aggmap *m, size_t i, const void *c, size_t clen);

static inline size_t aggmap_count(const aggmap *m) { return m->n; }

/* Approximate bytes held: arena bytes used plus entries and slots. */
static inline size_t aggmap_mem(const aggmap *m) {
    return m->arena.len + m->n * sizeof(am_ent) + (m->mask ? (m->mask + 1) * sizeof(uint64_t) : 0);
}

/* Put entries in ascending key order (bytes_cmp).  Afterwards only
 * aggmap_get by index and aggmap_clear are allowed. */
void aggmap_sort(aggmap *m);

/* Drop every entry, keeping allocated memory for reuse. */
void aggmap_clear(aggmap *m);

#endif
