/*
 * numparse.h -- decimal text to double, exactly as strtod rounds it, at
 * text-reader speed.  Internal to mllib (the LIBSVM and CSV readers).
 *
 * Grammar: [+-]digits[.digits][(e|E)[+-]digits], with digits on at least one
 * side of the point.  "nan", "inf" and hex floats are not numbers here, and
 * a value that overflows to infinity is rejected: data sets must be finite.
 * Underflow gives what strtod gives (a subnormal or a signed zero).
 *
 * How.  The digits are read 8 at a time where 8 bytes remain before the end
 * of the text (SWAR: one load, a mask of the digit bytes, three multiplies
 * to convert), else one at a time.  The decimal w * 10^q so found (w the
 * first 19 significant digits) becomes a double by the first of:
 *   1. Clinger's fast path: w <= 2^53 and |q| <= 22, so w and 10^|q| are
 *      exact doubles and one correctly rounded multiply or divide is the
 *      answer;
 *   2. Eisel and Lemire's method (np_eisel_lemire): w times a 128-bit
 *      truncation of 5^q, exact unless the product lies so near a rounding
 *      boundary that the truncation could matter -- then it says so;
 *      with more than 19 digits, w and w + 1 bracket the decimal, and
 *      agreeing answers are the answer;
 *   3. strtod on a NUL-terminated copy, for what is left (ties the method
 *      cannot settle, subnormal results, exponents past 10^+-308).
 * Every path gives strtod's bits; tests/unit/test_numparse.c and
 * tests/fuzz/fuzz_numparse.c check it.  Nothing allocates but path 3 for
 * tokens over 127 bytes.
 */
#ifndef EM_ML_NUMPARSE_H
#define EM_ML_NUMPARSE_H

#include <stdint.h>
#include <string.h>

/* Eisel-Lemire: w * 10^q (w > 0) correctly rounded into *out (negated if
 * neg).  Returns 1 when the result is certain, 0 when it is not (near a
 * tie, subnormal, out of range): then *out is unchanged. */
int np_eisel_lemire(uint64_t w, int64_t q, int neg, double *out);

/* The general parser (every path above) at p: returns the first byte after
 * the number, or NULL if no well-formed, finite number starts at p. */
const char *np_parse_f64_slow(const char *p, const char *end, double *out);

/* Up to 8 leading digit bytes of the 8 bytes at s: their count, and their
 * value in *v.  s must have 8 readable bytes. */
static inline int np_digits8(const char *s, uint64_t *v) {
    uint64_t x;
    memcpy(&x, s, 8);
    /* A byte is a digit iff its high nibble is 3 and stays 3 after adding
     * 6.  A carry out of a non-digit byte can only disturb later bytes,
     * never the first non-digit's position. */
    uint64_t bad = ((x & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull) |
                   (((x + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull);
    int n = bad ? __builtin_ctzll(bad) >> 3 : 8;
    if (!n) {
        *v = 0;
        return 0;
    }
    /* The n digits to the top bytes (first digit most significant), zeros
     * below, then pairs, quads, octets. */
    uint64_t d = (x - 0x3030303030303030ull) << (8 * (8 - n));
    d = ((d & 0x0F0F0F0F0F0F0F0Full) * 2561) >> 8;
    d = ((d & 0x00FF00FF00FF00FFull) * 6553601) >> 16;
    *v = ((d & 0x0000FFFF0000FFFFull) * 42949672960001ull) >> 32;
    return n;
}

/* A run of digits at p (before end): appends them to *m (as m * 10^n + run)
 * and returns their count n; stops after 19 so *m cannot wrap (the caller
 * treats a count of 19 or more as "too many for the fast path"). */
static inline int np_digit_run(const char *p, const char *end, uint64_t *m) {
    static const uint64_t p10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
    int n = 0;
    while (end - p - n >= 8) {
        uint64_t v;
        int k = np_digits8(p + n, &v);
        *m = *m * p10[k] + v;
        n += k;
        if (k < 8 || n >= 19) return n;
    }
    while (p + n < end && n < 19) {
        unsigned d = (unsigned)(unsigned char)p[n] - '0';
        if (d > 9) break;
        *m = *m * 10 + d;
        n++;
    }
    return n;
}

/* Parse a number at p (see the top): the first byte after it, or NULL.
 * The common case -- at most 19 digits in all, no more than 22 from the
 * point, exponent within 10^+-308 -- never leaves this function or
 * np_eisel_lemire. */
__attribute__((always_inline)) static inline const char *np_parse_f64(const char *p, const char *end,
                                                                     double *out) {
    static const double p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char *s = p;
    int neg = 0;
    uint64_t m = 0;
    if (p < end && (*p == '-' || *p == '+')) neg = *p++ == '-';
    int ni = np_digit_run(p, end, &m), nf = 0;
    p += ni;
    if (p < end && *p == '.') {
        nf = np_digit_run(p + 1, end, &m);
        p += 1 + nf;
    }
    /* 19 digits or more (the run stopped counting), or none at all: the
     * general parser decides. */
    if (ni + nf >= 19 || ni + nf == 0) return np_parse_f64_slow(s, end, out);
    int64_t q = -nf;
    if (p < end && (*p == 'e' || *p == 'E')) {
        const char *e = p + 1;
        int eneg = 0;
        if (e < end && (*e == '-' || *e == '+')) eneg = *e++ == '-';
        uint64_t ev = 0;
        int ne = np_digit_run(e, end, &ev);
        if (!ne || ne >= 6) return np_parse_f64_slow(s, end, out); /* no digits, or huge: let it decide */
        q += eneg ? -(int64_t)ev : (int64_t)ev;
        p = e + ne;
    }
    if (m == 0) {
        *out = neg ? -0.0 : 0.0;
        return p;
    }
    if (m <= (1ull << 53) && q >= -22 && q <= 22) {
        double v = (double)m;
        v = q < 0 ? v / p10[-q] : v * p10[q];
        *out = neg ? -v : v;
        return p;
    }
    if (np_eisel_lemire(m, q, neg, out)) return p;
    return np_parse_f64_slow(s, end, out);
}

#endif
