/*
 * aggahead.h -- a short FIFO in front of the map-side combine's tables for
 * records of 8-byte values, so the map-side combine can look records
 * ahead as the reduce side does.  A builtin combiner (agg.h's
 * agg_spec.builtin) is merged in place; a user's is called through the
 * spec's functions.
 *
 * Two tables behind the queue, each key in one of them.  Keys of up to
 * SK_MAX bytes (words, ids) go to a word table (agg16.h) while every
 * combiner there is 8 bytes: the key's two words (shortkey.h) beside its
 * combiner in one slot, so a lookup touches one cache line.  Longer keys
 * go to the general table (aggmap.h).  A user's combiner of another width
 * moves every word to the general table, which takes every key from then
 * on (ah_general).
 *
 * A lookup costs a cache miss when the key is not hot -- two in the
 * general table: its slot, then its arena record -- and a record passed in
 * alone waits for them.  Here each record is hashed as it arrives and its
 * slot is prefetched; for the general table, AH_ENTRY_AHEAD records before
 * its merge its arena record is prefetched (the slot has arrived by then).
 * It is merged, its lines loaded, once the queue is full: the AH_FLUSH
 * oldest records in one loop (one call for them all; ah_add itself calls
 * nothing for a key of up to SK_MAX bytes).  So many lookups overlap.
 * (Measured on the word count: 32 and 8 beat 16 and 8.)  A key of up to
 * SK_MAX bytes is read once, as the two words that give its hash and are
 * what the tables compare.
 *
 * Records are merged in arrival order (a FIFO; a key too long for the
 * queue drains it first), so every key's combiner is exactly what merging
 * each record at once would make (float sums included).  Only the moment
 * differs: until ah_drain the last records queued are not in the tables
 * yet, so a caller reading, counting, dumping or clearing them drains
 * first.
 */
#ifndef EM_AGGAHEAD_H
#define EM_AGGAHEAD_H

#include <stdint.h>

#include "agg.h"
#include "agg16.h"
#include "aggmap.h"

#define AH_DEPTH 32      /* records in flight (a power of two) */
#define AH_ENTRY_AHEAD 8 /* records between an entry's prefetch and its merge */
#define AH_KEY_MAX 44    /* longer keys are merged at once, after a drain */
#define AH_FLUSH 16      /* records a full queue merges in one go */

typedef struct ah_ent {
    uint64_t h;
    uint8_t v[8];
    uint32_t klen;
    uint8_t key[AH_KEY_MAX]; /* up to SK_MAX bytes: the key's two words
                                (shortkey.h), compared as such */
} ah_ent; /* 64 bytes: a cache line */

typedef struct aggahead {
    aggmap *m;      /* the general table (the caller's) */
    agg16 w;        /* the word table */
    int words;      /* keys of up to SK_MAX bytes go to w */
    size_t expect;  /* keys a table is sized for at its first key */
    const agg_spec *a;
    ebuf *out;      /* a user combiner's result */
    unsigned head, n;
    ah_ent q[AH_DEPTH];
} aggahead;

/* Queue in front of general table m and a word table of its own, merging
 * with a: a builtin in place, else its create and merge_value functions,
 * which write into out (reset before each call).  None is owned; all must
 * outlive the queue.  ah_free frees the word table. */
void ah_init(aggahead *q, aggmap *m, const agg_spec *a, ebuf *out);
void ah_free(aggahead *q);
/* The keys the tables will likely hold (sizehint.h): each table is sized
 * for them when it takes its first key. */
static inline void ah_expect(aggahead *q, size_t keys) { q->expect = keys; }

/* Queue record r (r->vlen == 8, which the caller checks), merging the
 * AH_FLUSH oldest queued records when the queue is full.  0, or EM_ENOMEM /
 * EM_ETOOBIG from a table or a user function's error, which then misses
 * the record it failed on (those before it are merged). */
int ah_add(aggahead *q, const em_rec *r);

/* Merge every queued record; afterwards the tables hold all records
 * added.  0, or an error as ah_add's (the queue is empty either way). */
int ah_drain(aggahead *q);

/* Every word to the general table, which takes every key from now on: for
 * a caller about to merge into it itself (a record of another value
 * width).  Queued records follow when merged.  0 or EM_ENOMEM. */
int ah_general(aggahead *q);

/* Put key r->key, in neither table, with combiner r->val (a rec_sink_fn,
 * ctx the queue): into the word table when it takes it (a key of up to
 * SK_MAX bytes, a combiner of 8), else into the general one (the words
 * moved there first).  0 or EM_ENOMEM / EM_ETOOBIG. */
int ah_put(void *q, const em_rec *r);

/* Keys held in both tables, and the bytes they count against a memory
 * budget (after ah_drain). */
static inline size_t ah_count(const aggahead *q) { return aggmap_count(q->m) + agg16_count(&q->w); }
static inline size_t ah_mem(const aggahead *q) { return aggmap_mem(q->m) + agg16_mem(&q->w); }

/* Call fn with every key's record (key, combiner): the general table's
 * in entry order, then the words; stops at fn's first nonzero return,
 * which it returns.  The caller drains first. */
int ah_each(const aggahead *q, rec_sink_fn fn, void *ctx);

/* Drop every key of both tables (after ah_drain), keeping the memory. */
void ah_clear(aggahead *q);

#endif
