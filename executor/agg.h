/*
 * agg.h -- the aggregation interface the shuffle code calls, so it never sees
 * user-function plumbing.  The task runner builds an agg_spec around the
 * user's functions.
 *
 * Each function writes exactly one value (the new combiner) into out, which
 * the caller has reset; values and combiners are plain byte strings passed as
 * plain em_recs (key == NULL).  They return 0 or a negative code, the message
 * already set (em_errmsg).
 */
#ifndef EM_AGG_H
#define EM_AGG_H

#include "buf.h"
#include "ember.h"

typedef struct agg_spec {
    int (*create)(void *ctx, const em_rec *v, ebuf *out);                        /* value -> combiner */
    int (*merge_value)(void *ctx, const em_rec *c, const em_rec *v, ebuf *out);   /* combiner + value */
    int (*merge_comb)(void *ctx, const em_rec *c1, const em_rec *c2, ebuf *out);  /* combiner + combiner */
    void *ctx;
} agg_spec;

/* Receives output records; returns 0, EM_STOP to stop early, or < 0. */
typedef int (*rec_sink_fn)(void *sctx, const em_rec *r);

#endif
