/*
 * parse.h -- fast number parsing for the text readers.  Internal to mllib.
 *
 * The readers spend most of their time turning digits into doubles:
 * numparse.h does it, exactly as strtod rounds, without strtod in all but
 * rare cases.  "nan", "inf" and hex floats are not numbers here: data sets
 * must be finite.
 */
#ifndef EM_ML_PARSE_H
#define EM_ML_PARSE_H

#include "numparse.h"

static inline int ml_is_space(char c) { return c == ' ' || c == '\t'; }

/* Parse a number at p (numparse.h: exact, as strtod).  Returns the first
 * byte after the number, or NULL if there is no well-formed, finite number
 * at p.  The caller checks that a delimiter follows. */
__attribute__((always_inline)) static inline const char *ml_parse_f64(const char *p, const char *end,
                                                                     double *out) {
    return np_parse_f64(p, end, out);
}

#endif
