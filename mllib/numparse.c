/*
 * numparse.c -- the out-of-line parts of numparse.h: Eisel and Lemire's
 * decimal-to-double conversion and the general parser.
 *
 * np_eisel_lemire.  w * 10^q = w * 5^q * 2^q.  Normalize w (top bit set),
 * multiply it by T, the 128-bit truncation of 5^q with its top bit set
 * (pow5_table.h, made by scripts/gen_pow5.py), and keep the top 128 bits
 * P of the 192-bit product.  T is below 5^q's exact scaled value by less
 * than one unit of its last bit, and the dropped 64 bits are below one unit
 * of P's, so the exact scaled product lies in [P, P + 2) units of P's low
 * word.  The top 54 bits of P are the double's 53 bits and the rounding
 * bit.  They are certain unless the low word is within 2 of wrapping (a
 * carry could reach them); the rounding is certain unless the bits below
 * the rounding bit are (nearly) all zero with the rounding bit set, where
 * the decimal may be exactly halfway.  Those cases, results that would be
 * subnormal, and results that overflow are left to strtod: rare in data
 * (a uniformly random 17-digit decimal hits one with probability about
 * 2^-60).  The binary exponent is floor(q * log2(10)) + 63 + (1 if P's top
 * bit is set) - (the normalizing shift) + 1023; floor(q * log2(10)) is
 * (217706 * q) >> 16, exact for |q| <= 1650.
 */
#include <math.h>
#include <stdlib.h>

#include "numparse.h"
#include "pow5_table.h"

int np_eisel_lemire(uint64_t w, int64_t q, int neg, double *out) {
    if (w == 0 || q < NP_POW5_QMIN || q > NP_POW5_QMAX) return 0;
    int lz = __builtin_clzll(w);
    w <<= lz;
    const uint64_t *t = np_pow5[q - NP_POW5_QMIN];
    unsigned __int128 hi = (unsigned __int128)w * t[0], lo = (unsigned __int128)w * t[1];
    uint64_t ph = (uint64_t)(hi >> 64), pl = (uint64_t)hi, add = (uint64_t)(lo >> 64);
    pl += add;
    ph += pl < add;
    if (pl >= UINT64_MAX - 1) return 0; /* the exact product may carry into ph */
    int upper = (int)(ph >> 63), shift = upper + 9;
    uint64_t mant = ph >> shift; /* 54 bits: 53 and the rounding bit */
    uint64_t below = ph & ((1ull << shift) - 1);
    if ((mant & 1) && below == 0 && pl <= 1) return 0; /* maybe exactly halfway */
    int64_t e2 = ((217706 * q) >> 16) + 63 + upper - lz + 1023;
    mant = (mant + (mant & 1)) >> 1;
    if (mant >> 53) { /* rounding carried out: 2^53 */
        mant >>= 1;
        e2++;
    }
    if (e2 <= 0 || e2 >= 2047) return 0; /* subnormal or overflow: strtod decides */
    uint64_t bits = ((uint64_t)e2 << 52) | (mant & ((1ull << 52) - 1)) | ((uint64_t)(neg != 0) << 63);
    memcpy(out, &bits, sizeof bits);
    return 1;
}

/* strtod on a copy of [s, e): e, or NULL if strtod does not take all of it
 * or the value is not finite. */
static const char *by_strtod(const char *s, const char *e, double *out) {
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

const char *np_parse_f64_slow(const char *p, const char *end, double *out) {
    static const double p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char *s = p;
    int neg = 0, any = 0, nd = 0, dropped = 0;
    int64_t q = 0;
    uint64_t w = 0;
    if (p < end && (*p == '-' || *p == '+')) neg = *p++ == '-';
    /* The first 19 significant digits make w; later integer digits scale
     * by 10 each; a dropped nonzero digit makes w a truncation. */
    for (; p < end; p++) {
        unsigned d = (unsigned)(unsigned char)*p - '0';
        if (d > 9) break;
        any = 1;
        if (nd < 19) {
            if (w || d) {
                w = w * 10 + d;
                nd++;
            }
        } else {
            q++;
            dropped |= d != 0;
        }
    }
    if (p < end && *p == '.') {
        for (p++; p < end; p++) {
            unsigned d = (unsigned)(unsigned char)*p - '0';
            if (d > 9) break;
            any = 1;
            if (nd < 19) {
                if (w || d) {
                    w = w * 10 + d;
                    nd++;
                }
                q--;
            } else {
                dropped |= d != 0;
            }
        }
    }
    if (!any) return NULL;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        int eneg = 0, ed = 0;
        int64_t ev = 0;
        if (p < end && (*p == '-' || *p == '+')) eneg = *p++ == '-';
        for (; p < end; p++) {
            unsigned d = (unsigned)(unsigned char)*p - '0';
            if (d > 9) break;
            if (ev < 100000) ev = ev * 10 + d; /* past 10^100000 only strtod's answer (0 or inf) matters */
            ed++;
        }
        if (!ed) return NULL;
        q += eneg ? -ev : ev;
    }
    if (w == 0) {
        *out = neg ? -0.0 : 0.0;
        return p;
    }
    if (!dropped) {
        if (w <= (1ull << 53) && q >= -22 && q <= 22) {
            double v = (double)w;
            v = q < 0 ? v / p10[-q] : v * p10[q];
            *out = neg ? -v : v;
            return p;
        }
        if (np_eisel_lemire(w, q, neg, out)) return p;
    } else {
        /* The decimal lies strictly between w and w + 1 (times 10^q): if
         * both round to the same double, so does it. */
        double a, b;
        if (np_eisel_lemire(w, q, neg, &a) && np_eisel_lemire(w + 1, q, neg, &b) && a == b) {
            *out = a;
            return p;
        }
    }
    return by_strtod(s, p, out);
}
