/*
 * parse.h -- fast number parsing for the text readers.  Internal to mllib.
 *
 * The readers spend nearly all their time turning digits into doubles, so
 * the common case avoids strtod: a decimal with at most 19 significant
 * digits and a power of ten within 10^22 is exact as one multiplication or
 * division of two exactly representable doubles (Clinger's fast path), and
 * so gives the same, correctly rounded, result as strtod.  Anything else
 * (more digits, a large exponent) goes through strtod on a NUL-terminated
 * copy.  Neither path allocates, and "nan", "inf" and hex floats are not
 * numbers here: data sets must be finite.
 */
#ifndef EM_ML_PARSE_H
#define EM_ML_PARSE_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline int ml_is_space(char c) { return c == ' ' || c == '\t'; }

/* Slow path: strtod on a copy of [s, e).  Returns e, or NULL if strtod does
 * not take all of it or the value is not finite. */
static inline const char *ml_parse_f64_slow(const char *s, const char *e, double *out) {
    char small[128], *tmp = small;
    size_t n = (size_t)(e - s);
    if (n >= sizeof small && !(tmp = malloc(n + 1))) return NULL; /* long tokens: rare */
    memcpy(tmp, s, n);
    tmp[n] = 0;
    char *stop;
    double v = strtod(tmp, &stop);
    int ok = stop == tmp + n && isfinite(v);
    if (tmp != small) free(tmp);
    if (!ok) return NULL;
    *out = v;
    return e;
}

/* Parse [+-]digits[.digits][(e|E)[+-]digits] (digits on at least one side
 * of the point) at p.  Returns the first byte after the number, or NULL if
 * there is no well-formed, finite number at p.  The caller checks that a
 * delimiter follows. */
__attribute__((always_inline)) static inline const char *ml_parse_f64(const char *p, const char *end,
                                                                     double *out) {
    static const double ml_p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char *s = p;
    int neg = 0, any = 0, nd = 0;
    long e10 = 0;
    uint64_t m = 0;
    if (p < end && (*p == '-' || *p == '+')) neg = *p++ == '-';
    for (; p < end; p++) {
        unsigned d = (unsigned)(unsigned char)*p - '0';
        if (d > 9) break;
        any = 1;
        if (m || d) {
            m = m * 10 + d; /* wraps past 19 digits: then nd > 19 sends us to strtod */
            nd++;
        }
    }
    if (p < end && *p == '.') {
        p++;
        for (; p < end; p++) {
            unsigned d = (unsigned)(unsigned char)*p - '0';
            if (d > 9) break;
            any = 1;
            if (m || d) {
                m = m * 10 + d;
                nd++;
            }
            e10--;
        }
    }
    if (!any) return NULL;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        int eneg = 0, ed = 0;
        long ev = 0;
        if (p < end && (*p == '-' || *p == '+')) eneg = *p++ == '-';
        for (; p < end; p++) {
            unsigned d = (unsigned)(unsigned char)*p - '0';
            if (d > 9) break;
            if (ev < 100000) ev = ev * 10 + d;
            ed++;
        }
        if (!ed) return NULL;
        e10 += eneg ? -ev : ev;
    }
    if (nd <= 19) {
        if (m == 0) {
            *out = neg ? -0.0 : 0.0;
            return p;
        }
        if (m <= (1ull << 53) && e10 >= -22 && e10 <= 22) {
            double v = (double)m;
            v = e10 < 0 ? v / ml_p10[-e10] : v * ml_p10[e10];
            *out = neg ? -v : v;
            return p;
        }
    }
    return ml_parse_f64_slow(s, p, out);
}

#endif
