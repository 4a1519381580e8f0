/*
 * numeric.h -- the builtin task functions of the numeric actions
 * (numeric.c): stats accumulators and histogram counts.  They are named on
 * the wire by their index in em__builtins.
 */
#ifndef EM_NUMERIC_H
#define EM_NUMERIC_H

#include "ember.h"

int bi_stats_add(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg);   /* arg: type byte */
int bi_stats_merge(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg);
int bi_hist_add(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg);    /* arg: type, bounds */
int bi_hist_merge(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg);

#endif
