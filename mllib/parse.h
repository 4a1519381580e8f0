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

/* The common LIBSVM feature in one step: "index:value" followed by a blank,
 * the index of 1 to 8 digits, the value [-]digits[.digits] with at most 8
 * digits on each side of the point (at least one in all), the whole token
 * and its blank within the first 16 bytes at p, and 24 bytes readable at p.
 * Returns the byte after the value (the blank) with *idx (not checked: 0
 * allowed) and *v, exactly as ml_parse_f64 would give them; NULL for any
 * other text, which the general path then reads (and reports, if bad).
 *
 * Why.  The general path finds each digit run's end from the one before
 * (index, ':', integer digits, '.', fraction): a chain of dependent loads,
 * masks and bit scans of about 45 cycles a feature, which bounds the
 * LIBSVM parse.  Here one 16-byte load and one mask of the non-digit bytes
 * give every boundary of the token at once, and a mask of its blanks the
 * byte returned: the next token's load waits only on that load, and the
 * checks branch (predicted) beside it.  The digits are converted off that
 * chain, their counts known (ml_digits_n).  The value is the Clinger fast
 * path of np_parse_f64 (under 10^16, at most 8 decimals: m / 10^nf, one
 * correctly rounded division, or the signed zero), so the bits are the
 * same. */
#if defined(__SSE2__)
#include <emmintrin.h>

/* The value of the n digits (1 to 8) at s, known to be digits; s must have
 * 8 readable bytes.  np_digits8 without finding n. */
static inline uint64_t ml_digits_n(const char *s, int n) {
    uint64_t x;
    memcpy(&x, s, 8);
    uint64_t d = (x - 0x3030303030303030ull) << (8 * (8 - n));
    d = ((d & 0x0F0F0F0F0F0F0F0Full) * 2561) >> 8;
    d = ((d & 0x00FF00FF00FF00FFull) * 6553601) >> 16;
    return ((d & 0x0000FFFF0000FFFFull) * 42949672960001ull) >> 32;
}

static inline const char *ml_libsvm_pair(const char *p, const char *end, int64_t *idx, double *v) {
    static const double p10[9] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8};
    static const uint64_t u10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
    if (end - p < 24) return NULL;
    __m128i x = _mm_loadu_si128((const __m128i *)p);
    /* '0'..'9' moved to -128..-119: a digit is a signed byte below -118. */
    __m128i t = _mm_sub_epi8(x, _mm_set1_epi8((char)('0' + 128)));
    unsigned nd = ~(unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(t, _mm_set1_epi8((char)(-128 + 10)))) & 0xFFFFu;
    /* The first blank ends the token: the byte returned, found from the
     * load alone, so the next token's load waits on no other step (the
     * checks below branch, predicted, off that chain). */
    unsigned sp = (unsigned)_mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(' ')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\t'))));
    if (!nd || !sp) return NULL;
    int c = __builtin_ctz(nd), e = __builtin_ctz(sp); /* the ':', the blank */
    if (c < 1 || c > 8 || p[c] != ':') return NULL;
    int neg = p[c + 1] == '-', s = c + 1 + neg;
    unsigned r = nd >> s;
    if (s >= 16 || !r) return NULL;
    int j = s + __builtin_ctz(r), k = j; /* j: the end of the integer digits; k: of the value */
    if (p[j] == '.') {
        r = nd >> (j + 1);
        if (j + 1 >= 16 || !r) return NULL;
        k = j + 1 + __builtin_ctz(r);
    }
    int ni = j - s, nf = k > j ? k - j - 1 : 0;
    if (k != e) return NULL; /* not a blank after the value */
    if (ni > 8 || nf > 8 || ni + nf == 0) return NULL;
    *idx = (int64_t)ml_digits_n(p, c);
    uint64_t a = ni ? ml_digits_n(p + s, ni) : 0, b = nf ? ml_digits_n(p + j + 1, nf) : 0;
    uint64_t m = a * u10[nf] + b;
    double d = (double)m;
    if (m == 0)
        d = 0.0;
    else if (nf)
        d = d / p10[nf];
    *v = neg ? -d : d;
    return p + e;
}
#else
static inline const char *ml_libsvm_pair(const char *p, const char *end, int64_t *idx, double *v) {
    (void)p, (void)end, (void)idx, (void)v;
    return NULL; /* no 16-byte compare here: the general path reads every feature */
}
#endif

#endif
