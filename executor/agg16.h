/*
 * agg16.h -- aggregation of keys of up to 16 bytes into combiners of up to
 * 8 bytes: the map-side combine's table for words (aggahead.h), beside the
 * general table (aggmap.h), which takes the longer keys and any other
 * combiner.
 *
 * A key is held as shortkey.h's two words and its length, beside its
 * combiner, in a 32-byte slot: a lookup touches one cache line and
 * compares three words, where the general table touches a slot, then the
 * arena record it points to, and compares bytes.  Open addressing with
 * linear probing from the high half of the key's em_hash (sk_hash); the
 * table doubles at half full (at three quarters: agg16_dense).  A slot's
 * len is the key's length plus one, 0 for an empty slot, so a table of
 * zeroed memory is empty.
 *
 * The reduce side (shuffle_agg.c) keeps keys of up to 16 bytes here too,
 * once they are not all of one width of up to 8 bytes (agg8.h's table):
 * a word count's words, distinct's (int64, int64) records.  Its input
 * may be a map side's table walked in slot order, so the keys would come
 * sorted by their homes and a table growing from small would probe past
 * ever longer runs (agg8.h says how); its table takes another home
 * (agg16_seed): the high half of the hash times an odd constant.
 */
#ifndef EM_AGG16_H
#define EM_AGG16_H

#include <stddef.h>
#include <stdint.h>

#include "aggmap.h"
#include "buf.h"
#include "recfmt.h" /* rec_sink_fn */
#include "shortkey.h"

typedef struct agg16_slot {
    uint64_t a, b; /* the key's words (sk_load) */
    uint64_t len;  /* its length + 1; 0: empty */
    uint64_t comb; /* its combiner's 8 bytes */
} agg16_slot;

typedef struct agg16 {
    agg16_slot *slot; /* mask + 1 slots (a bigbuf.h buffer in mem) */
    size_t mask;      /* 0 before first use */
    size_t n;         /* keys held */
    uint64_t mult;    /* the home's odd multiplier (agg16_seed); 1 */
    int dense;        /* grows at three quarters full, not half (agg16_dense) */
    ebuf mem;
} agg16;

void agg16_init(agg16 *t);
/* Free the memory; the table is as agg16_init leaves it, its seed kept. */
void agg16_free(agg16 *t);
/* Before first use: a key's home from seed (agg8_seed's rule: tables one
 * of which may be filled in the order another is walked take distinct
 * seeds); without a call, or with seed 0, the hash's high half. */
void agg16_seed(agg16 *t, uint64_t seed);

/* Before first use: the table grows when three quarters full, not half.
 * For a table of many keys and few lookups a key (the reduce side's:
 * distinct's edges, each looked up about once), whose slots would
 * otherwise take twice the general table's bytes a key; a lookup probes a
 * little further. */
static inline void agg16_dense(agg16 *t) { t->dense = 1; }
/* Whether n keys need more than the table's slots. */
static inline int agg16_full(const agg16 *t, size_t n) {
    size_t slots = t->mask ? t->mask + 1 : 0;
    return t->dense ? 4 * n > 3 * slots : 2 * n > slots;
}

static inline size_t agg16_home(const agg16 *t, uint64_t h) { return (size_t)((h * t->mult) >> 32) & t->mask; }
/* Before first use: slots for keys keys within the table's load, in one
 * buffer (a start: the table grows past it).  0 or EM_ENOMEM. */
int agg16_reserve(agg16 *t, size_t keys);

/* Fetch the home slot of a key of hash h.  Always inlined, as aggmap.h's
 * prefetches are. */
static inline __attribute__((always_inline)) void agg16_prefetch(const agg16 *t, uint64_t h) {
    if (t->mask) __builtin_prefetch(&t->slot[agg16_home(t, h)]);
}

/* Insert the key, absent, growing the table first when it is full
 * (agg16_full): 0 with *out its slot (its combiner zero), or EM_ENOMEM. */
int agg16__insert(agg16 *t, uint64_t a, uint64_t b, size_t n, uint64_t h, agg16_slot **out);

/* Whether the table holds the key of n <= SK_MAX bytes read as words a
 * and b, of hash h (sk_hash): 1 with *out its slot, else 0. */
static inline int agg16_find(const agg16 *t, uint64_t a, uint64_t b, size_t n, uint64_t h, agg16_slot **out) {
    if (!t->mask) return 0;
    for (size_t i = agg16_home(t, h);; i = (i + 1) & t->mask) {
        agg16_slot *s = &t->slot[i];
        if (s->len == n + 1 && s->a == a && s->b == b) {
            *out = s;
            return 1;
        }
        if (!s->len) return 0;
    }
}

/* The slot of that key: 1 found, 0 inserted (its combiner zero, for the
 * caller to set), or EM_ENOMEM.  The lookup inline, an insertion out of
 * line. */
static inline int agg16_upsert(agg16 *t, uint64_t a, uint64_t b, size_t n, uint64_t h, agg16_slot **out) {
    return agg16_find(t, a, b, n, h, out) ? 1 : agg16__insert(t, a, b, n, h, out);
}

static inline size_t agg16_count(const agg16 *t) { return t->n; }

/* Bytes its keys take at the load it keeps: what a memory budget
 * compares (not the slots allocated, which agg16_clear keeps). */
static inline size_t agg16_mem(const agg16 *t) { return (t->dense ? t->n * 4 / 3 : t->n * 2) * sizeof(agg16_slot); }

/* Call fn with every key's record (the key's bytes, the first cw <= 8
 * bytes of its combiner), in slot order; stops at fn's first nonzero
 * return, which it returns.  The record's views last until fn returns. */
int agg16_each(const agg16 *t, size_t cw, rec_sink_fn fn, void *ctx);

/* Move every key to the front of the slot array, slot[0, n), in
 * ascending order of the keys' bytes (bytes_cmp, as a spilled run is
 * merged), each slot's two words then holding its key's bytes.
 * Afterwards only agg16_get_sorted and agg16_clear are allowed.  0
 * (qsort needs nothing more). */
int agg16_sort(agg16 *t);
/* Sorted key i (after agg16_sort) as a record of cw combiner bytes,
 * pointing into the slot. */
void agg16_get_sorted(const agg16 *t, size_t i, size_t cw, em_rec *r);

/* Every key and its combiner (cw bytes) into the general table m, then
 * t freed: a key or combiner the table cannot hold.  0, or aggmap's
 * EM_ENOMEM / EM_ETOOBIG. */
int agg16_move_all(agg16 *t, aggmap *m, size_t cw);

/* Drop every key, keeping the memory. */
void agg16_clear(agg16 *t);

#endif
