/*
 * aggahead.h -- a short FIFO in front of an aggmap for records of 8-byte
 * values, so the map-side combine can look records ahead as the reduce
 * side does.  A builtin combiner (agg.h's agg_spec.builtin) is merged in
 * place; a user's is called through the spec's functions, its result
 * stored with aggmap_set_comb.
 *
 * A lookup in the table costs two cache misses when the key is not hot --
 * its slot, then its arena record -- and a record passed in alone waits for
 * both.  Here each record is hashed as it arrives and its slot is
 * prefetched; AH_ENTRY_AHEAD records before its merge its arena record is
 * prefetched (the slot has arrived by then); it is merged into the table,
 * both lines loaded, once the queue is full: the AH_FLUSH oldest records
 * in one loop (one call for them all; ah_add itself calls nothing for a
 * key of up to SK_MAX bytes).  So many lookups overlap.
 * (Measured on the word count: 32 and 8 beat 16 and 8.)  A key of up to
 * SK_MAX bytes (shortkey.h) is read once, as two words that give its hash
 * and are what the table compares.
 *
 * Records are merged in arrival order (a FIFO; a key too long for the
 * queue drains it first), so the table ends up exactly as merging each
 * record at once would leave it: same entries, same entry order, same
 * combiners (float sums included).  Only the moment differs: until
 * ah_drain the last records queued are not in the table yet, so a caller
 * reading, counting, dumping or clearing the table drains first.
 */
#ifndef EM_AGGAHEAD_H
#define EM_AGGAHEAD_H

#include <stdint.h>

#include "agg.h"
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
    aggmap *m;
    const agg_spec *a;
    ebuf *out;      /* a user combiner's result */
    unsigned head, n;
    ah_ent q[AH_DEPTH];
} aggahead;

/* Queue in front of table m, merging with a: a builtin in place, else its
 * create and merge_value functions, which write into out (reset before
 * each call).  None is owned; all must outlive the queue.  Nothing to
 * free. */
void ah_init(aggahead *q, aggmap *m, const agg_spec *a, ebuf *out);

/* Queue record r (r->vlen == 8, which the caller checks), merging the
 * AH_FLUSH oldest queued records when the queue is full.  0, or EM_ENOMEM /
 * EM_ETOOBIG from the table (aggmap_upsert_h, aggmap_set_comb) or a user
 * function's error, which then misses the record it failed on (those
 * before it are merged). */
int ah_add(aggahead *q, const em_rec *r);

/* Merge every queued record; afterwards the table holds all records added.
 * 0, or an error as ah_add's (the queue is empty either way). */
int ah_drain(aggahead *q);

#endif
