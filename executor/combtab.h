/*
 * combtab.h -- the map-side combine's table (shuffle_write.c): records go
 * in one at a time, every key's combiner comes out when the table is
 * walked, and the table is cleared to start over.
 *
 * Two tables behind one interface.  While every key has one width of up
 * to 8 bytes, every value is 8 bytes and every combiner has one width of
 * up to 8 bytes (reduce_by_key over int64 or double keys and values, with
 * a builtin or the user's own function: PageRank's contributions, a count
 * by id), keys and combiners sit side by side in an agg8 (agg8.h), where a
 * lookup touches one cache line instead of the general table's two (its
 * slot, then its arena record).  Records wait in a short FIFO whose home
 * slots are prefetched as they arrive, so the lookups of cold keys
 * overlap.  The first record or combiner that does not fit moves every
 * key behind the look-ahead queue (aggahead.h), which takes every record
 * from then on: into its word table (keys of up to 16 bytes, 8-byte
 * combiners) or the general table, an aggmap.
 *
 * Records merge in arrival order in both tables, so each key's combiner
 * is exactly what merging each record at once gives (float sums
 * included); the order in which ct_each gives the keys is the table's.
 * A builtin combiner (agg.h's agg_spec.builtin) is updated in place; a
 * user's is called through the spec's create and merge_value (create
 * skipped where it is the identity).
 */
#ifndef EM_COMBTAB_H
#define EM_COMBTAB_H

#include <stdint.h>

#include "agg.h"
#include "agg8.h"
#include "aggahead.h"
#include "aggmap.h"

#define CT_DEPTH 16 /* records in flight in front of the 8-byte table */
#define CT_FLUSH 8  /* records a full FIFO merges in one go */

typedef struct combtab {
    const agg_spec *a;
    ebuf *out;        /* a user combiner's result */
    int use8;         /* keys are in t8 (until the first misfit) */
    int kw, cw;       /* t8's key and combiner widths, -1 until known */
    size_t expect8;   /* keys t8 is sized for at its first key, */
    size_t expect;    /* and map when the keys move there */
    agg8 t8;
    unsigned head, n; /* the FIFO in front of t8 */
    struct {
        uint64_t key;
        uint8_t v[8];
    } q[CT_DEPTH];
    aggmap map;       /* the general table, and its queue */
    aggahead ahead;
} combtab;

/* A table merging with a (its create and merge_value present), user
 * results written into out, the 8-byte table's hash made from seed
 * (agg8_seed: the shuffle's map side's).  Neither is owned.  The table
 * must not move after this (its queue points into it). */
void ct_init(combtab *t, const agg_spec *a, ebuf *out, uint64_t seed);
void ct_free(combtab *t);
/* The keys the table will likely hold (sizehint.h), in the 8-byte table
 * and in the general one: each is sized for them when it takes its first
 * key. */
static inline void ct_expect(combtab *t, size_t keys8, size_t keys) {
    t->expect8 = keys8;
    t->expect = keys;
}

/* Merge pair record r (r->key set; with a builtin, r->vlen == 8: the
 * caller checks both), perhaps later.  0, or EM_ENOMEM or a user
 * function's error, the message set. */
int ct__add(combtab *t, const em_rec *r);
static inline int ct_add(combtab *t, const em_rec *r) {
    /* Once in the general table, records of 8-byte values (a word count's)
     * go straight to its queue. */
    return !t->use8 && r->vlen == 8 ? ah_add(&t->ahead, r) : ct__add(t, r);
}

/* Merge every record added; 0 or an error as ct_add's. */
int ct_drain(combtab *t);

/* Keys held (after ct_drain), and the bytes the table counts against a
 * memory budget. */
size_t ct_count(const combtab *t);
static inline size_t ct_mem(const combtab *t) { return agg8_mem(&t->t8) + ah_mem(&t->ahead); }

/* Drain, then call fn with every key's record (key, combiner), stopping
 * at the first nonzero return, which it returns. */
int ct_each(combtab *t, rec_sink_fn fn, void *ctx);

/* Drop every key (after ct_drain or ct_each), keeping the memory. */
void ct_clear(combtab *t);

#endif
