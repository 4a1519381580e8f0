/*
 * combiners.h -- the builtin combine functions of ember.h (em_sum_i64,
 * em_min_i64, ...) as operations the shuffle applies in place.
 *
 * A builtin combines two 8-byte encoded values into one.  Called through
 * em_comb_fn it is an ordinary function; recognised by comb_builtin_of it
 * lets the aggregation code update an 8-byte combiner where it lies, with
 * no indirect call, emitter or copy per record (comb_apply8).
 */
#ifndef EM_COMBINERS_H
#define EM_COMBINERS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ember.h"
#include "recfmt.h"

enum comb_builtin {
    CB_NONE = 0,
    CB_SUM_I64,
    CB_MIN_I64,
    CB_MAX_I64,
    CB_SUM_F64,
    CB_MIN_F64,
    CB_MAX_F64,
};

/* Which builtin fn is, or CB_NONE. */
int comb_builtin_of(em_comb_fn fn);
/* Its public name ("em_sum_i64"), for messages. */
const char *comb_builtin_name(int op);

/* The error for a value of vlen bytes given to builtin op: EM_EINVAL. */
int comb_bad_len(int op, size_t vlen);

/* c = op(c, v) on 8-byte encodings; op is not CB_NONE.  Inlined always:
 * it runs per record in the aggregation loops, where the switch on op (the
 * same every time) predicts well but a call does not come free (LTO may
 * keep it out of line otherwise). */
__attribute__((always_inline)) static inline void comb_apply8(int op, uint8_t *c, const uint8_t *v) {
    switch (op) {
    case CB_SUM_I64: enc_i64((int64_t)((uint64_t)dec_i64(c) + (uint64_t)dec_i64(v)), c); break;
    case CB_MIN_I64: if (memcmp(v, c, 8) < 0) memcpy(c, v, 8); break; /* the encoding keeps the order */
    case CB_MAX_I64: if (memcmp(v, c, 8) > 0) memcpy(c, v, 8); break;
    case CB_SUM_F64: enc_f64(dec_f64(c) + dec_f64(v), c); break;
    case CB_MIN_F64: {
        double x = dec_f64(c), y = dec_f64(v);
        if (isnan(x)) break;
        if (isnan(y) || y < x || (y == x && signbit(y))) memcpy(c, v, 8);
        break;
    }
    case CB_MAX_F64: {
        double x = dec_f64(c), y = dec_f64(v);
        if (isnan(x)) break;
        if (isnan(y) || y > x || (y == x && !signbit(y))) memcpy(c, v, 8);
        break;
    }
    default: break;
    }
}

#endif
