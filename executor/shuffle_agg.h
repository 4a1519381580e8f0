/*
 * shuffle_agg.h -- the reduce side's aggregation (shuffle_read.c's SR_AGG,
 * and the local aggregation of sr_local): a shuffle's blocks merged by key
 * into a table, spilled as sorted runs past the memory budget, and every
 * key's combiner given to a sink at the end, the runs merged in.
 *
 * Three tables, the first that holds every record so far (sa_ctx says
 * when each gives way): 16-byte slots of a key word and a combiner word
 * while keys have one width of up to 8 bytes (agg8.h), 32-byte slots of
 * two key words, a length and a combiner word while keys are of up to 16
 * bytes (agg16.h), then the general table of any key and combiner
 * (aggmap.h).  A block is decoded whole, then merged in order with the
 * home slots of the records ahead being fetched.
 */
#ifndef EM_SHUFFLE_AGG_H
#define EM_SHUFFLE_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "agg16.h"
#include "agg8.h"
#include "aggmap.h"
#include "extsort.h"
#include "shuffle.h"

typedef struct sa_ctx sa_ctx;
struct sa_ctx {
    const sr_opts *o;
    /* Records aggregate in t8 (agg8.h) while every key has one width kw
     * and every combiner one width cw, both at most 8 bytes (the slot's
     * words hold them zero padded): a builtin's 8 bytes, merged in place,
     * or a user function's, called on the slot's bytes (int64 keys; 4-byte
     * keys; values of 0 or 4 bytes).  A key of another width moves the
     * keys to t16 (agg16.h) while every key is at most SK_MAX bytes (a
     * word count's words, distinct's (int64, int64) records), combiners
     * still of one width; a longer key, or a user combiner of another
     * width, moves them to map, which takes every record from then on. */
    int use8, use16;
    int combined;     /* the block's records are combiners: the read's
                         map_side_combined, but for blocks of values
                         (BF_VALUES, a map task that gave up combining) */
    int kw, cw;       /* -1 until the first key, the first combiner */
    agg8 t8;
    agg16 t16;
    aggmap map;
    ebuf out;
    es_runfile runs;
    int64_t spills;
    size_t peak;      /* the most bytes a table held */
    em_rec *recs;     /* the block being aggregated ... */
    uint64_t *hash;   /* ... its keys' hashes (or t8's key words) ... */
    uint64_t *wa, *wb; /* ... and t16's key words (sk_load) */
    size_t cap;
};

/* Start an aggregation of o's mode SR_AGG (o->agg its functions, o outliving
 * it): 0, or EM_EINVAL without the functions it needs. */
int sa_open(sa_ctx *a, const sr_opts *o);
/* Aggregate the encoded records [p, p + len), a block with flags (its
 * header's, BF_VALUES) whose *nrec records it counts: read_all's block
 * consumer, ctx the sa_ctx.  A malformed record sets *bad (the map
 * output's fault).  0 or a negative code, the message set. */
int sa_block(void *ctx, const uint8_t *p, size_t len, unsigned flags, uint64_t *nrec, int *bad);
/* Pass every key's combiner to sink (with o->expect told the count first
 * when nothing was spilled), merging the spilled runs. */
int sa_finish(sa_ctx *a, rec_sink_fn sink, void *sctx);
/* End it: its peak bytes go to the attempt's metrics, its table's size to
 * the next task's hint (sizehint.h); everything freed. */
void sa_close(sa_ctx *a);

#endif
