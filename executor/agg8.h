/*
 * agg8.h -- aggregation of keys of up to 8 bytes into combiners of up to
 * 8 bytes: the table of the reduce side (shuffle_read.c) and of the map
 * side's combine (combtab.h) while every key has one width and every
 * combiner one width, as in reduce_by_key over
 * int64 keys with em_sum_i64 or a user's function.  Keys and combiners
 * are held as words, zero padded; the caller knows their widths.
 *
 * A flat open-addressing array of 16-byte slots, key beside combiner, as a
 * hand-written C hash aggregation keeps them: a lookup touches one cache
 * line, where the general table (aggmap.h) touches a slot and then the
 * arena record it points to.  An empty slot holds the key AGG8_EMPTY; the
 * one real key equal to it is kept aside.  Keys are the records' 8 bytes
 * read as a little-endian word; the slot is the top bits of that word times
 * a 64-bit odd constant (multiplicative hashing), which spreads strided and
 * clustered integers and owes nothing to em_hash (whose low bits are equal
 * within a reduce partition).  The table doubles at half full.
 *
 * Each table's constant comes from a seed (agg8_seed), because the order in
 * which one table is walked (agg8_each: slot order, so the keys sorted by
 * the top bits of their product) is the order in which the next one may
 * be filled: a map task's combined output, read by the reduce side.  Under
 * the same constant a smaller table takes the same top bits, fewer of
 * them, so the keys arrive sorted by their home slots there, many to a
 * slot, each probing past the run the ones before it made: a reduce table
 * growing from small goes quadratic (bench/RESULTS.md, "A hash constant
 * per table").  Under another constant the homes come in no order.
 */
#ifndef EM_AGG8_H
#define EM_AGG8_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "aggmap.h"
#include "buf.h"
#include "ember.h"
#include "recfmt.h" /* rec_sink_fn */

#define AGG8_EMPTY 0x8badf00d5eedf1e5ULL

typedef struct agg8_slot {
    uint64_t key, comb;
} agg8_slot;

typedef struct agg8 {
    agg8_slot *slot;  /* mask + 1 slots (a bigbuf.h buffer in mem) */
    size_t mask;      /* 0 before first use */
    int shift;        /* 64 - log2(slots) */
    uint64_t mult;    /* the hash's odd constant (agg8_seed) */
    size_t n;         /* keys held, the aside one included */
    int has_empty;    /* the key AGG8_EMPTY is held, its combiner here: */
    agg8_slot empty;
    ebuf mem;
} agg8;

void agg8_init(agg8 *t);
/* Free the memory; the table is as agg8_init leaves it, its seed kept. */
void agg8_free(agg8 *t);
/* Before first use: the table's hash constant made from seed (distinct
 * seeds, distinct constants).  Tables one of which may be filled in the
 * order another is walked take distinct seeds: a shuffle's map side and
 * its reduce side, a local aggregation and the one before it, a join's
 * build side and the aggregation it reads (AGG8_SEED).  Without a call
 * the constant is 2^64 / phi's odd neighbour (Fibonacci hashing). */
void agg8_seed(agg8 *t, uint64_t seed);
#define AGG8_SEED(role, id) ((uint64_t)(role) << 32 | (uint32_t)(id))
enum { AGG8_MAP_SIDE = 1, AGG8_REDUCE_SIDE, AGG8_LOCAL, AGG8_JOIN };
/* Room for at least one more key: 0 or EM_ENOMEM. */
int agg8_grow(agg8 *t);
/* Before first use: slots for keys keys at most half full, in one
 * buffer (a start: the table grows past it).  0 or EM_ENOMEM. */
int agg8_reserve(agg8 *t, size_t keys);

static inline size_t agg8_home(const agg8 *t, uint64_t key) {
    return (size_t)((key * t->mult) >> t->shift);
}
/* Fetch key's home slot.  Always inlined, as aggmap.h's prefetches: GCC
 * takes a function whose only effect is a prefetch for one without
 * effects and drops the calls. */
static inline __attribute__((always_inline)) void agg8_prefetch(const agg8 *t, uint64_t key) {
    if (t->mask) __builtin_prefetch(&t->slot[agg8_home(t, key)]);
}

/* The slot of key: 1 found, 0 inserted (its combiner is for the caller to
 * set), or EM_ENOMEM. */
static inline int agg8_upsert(agg8 *t, uint64_t key, agg8_slot **out) {
    if (key == AGG8_EMPTY) {
        *out = &t->empty;
        if (t->has_empty) return 1;
        t->empty.key = key;
        t->has_empty = 1;
        t->n++;
        return 0;
    }
    if (2 * (t->n + 1) > t->mask + 1 && agg8_grow(t)) return EM_ENOMEM;
    for (size_t i = agg8_home(t, key);; i = (i + 1) & t->mask) {
        agg8_slot *s = &t->slot[i];
        if (s->key == key) {
            *out = s;
            return 1;
        }
        if (s->key == AGG8_EMPTY) {
            s->key = key;
            t->n++;
            *out = s;
            return 0;
        }
    }
}

/* The slot of key, or NULL when the table does not hold it. */
static inline agg8_slot *agg8_get(agg8 *t, uint64_t key) {
    if (key == AGG8_EMPTY) return t->has_empty ? &t->empty : NULL;
    if (!t->mask) return NULL;
    for (size_t i = agg8_home(t, key);; i = (i + 1) & t->mask) {
        agg8_slot *s = &t->slot[i];
        if (s->key == key) return s;
        if (s->key == AGG8_EMPTY) return NULL;
    }
}

/* Bytes its keys take at the half load it keeps: what a memory budget
 * compares.  Not the slots allocated, which agg8_clear keeps: after a spill
 * that would stay over the budget and spill at every new key. */
static inline size_t agg8_mem(const agg8 *t) { return t->n * 2 * sizeof(agg8_slot); }

/* Move every key to the front of the slot array, the aside one too, in
 * ascending order of the keys' bytes (bytes_cmp of the records): slot[0,
 * n).  Afterwards only reading those and agg8_clear are allowed.  0 or
 * EM_ENOMEM. */
int agg8_sort(agg8 *t);
/* Drop every key, keeping the memory. */
void agg8_clear(agg8 *t);

/* Call fn with every key's record (kw key bytes, cw combiner bytes), in
 * slot order, the aside key last; stops at fn's first nonzero return,
 * which it returns. */
int agg8_each(const agg8 *t, size_t kw, size_t cw, rec_sink_fn fn, void *ctx);

/* Every key (kw bytes) and its combiner (cw bytes) into the general table
 * m, then t freed: for a record that does not fit the 8-byte table.  0,
 * or aggmap's EM_ENOMEM / EM_ETOOBIG. */
int agg8_move_all(agg8 *t, aggmap *m, size_t kw, size_t cw);

#endif
