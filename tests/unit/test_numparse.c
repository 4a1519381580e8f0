/*
 * test_numparse.c -- mllib/numparse.h against strtod, bit for bit: hard
 * cases by hand (subnormals, 17 and more digits, exponent extremes, exact
 * halfway points and their neighbours, malformed tokens), then many
 * deterministic random decimals of every shape, and the Eisel-Lemire step
 * alone (it must decide nearly every case, and decide it right).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "numparse.h"

/* What the parser must do with s: the length of the number strtod reads at
 * its start (0 for none, or when the grammar rejects it: no digits, hex,
 * inf, nan, a dangling exponent, an infinite value) and its value. */
static size_t want_number(const char *s, double *v) {
    const char *p = s;
    size_t digits = 0;
    if (*p == '+' || *p == '-') p++;
    while (*p >= '0' && *p <= '9') p++, digits++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') p++, digits++;
    }
    if (!digits) return 0;
    if (*p == 'e' || *p == 'E') {
        const char *e = p + 1;
        if (*e == '+' || *e == '-') e++;
        if (!(*e >= '0' && *e <= '9')) return 0; /* "1e": not a number here */
        while (*e >= '0' && *e <= '9') e++;
        p = e;
    }
    size_t n = (size_t)(p - s);
    char *tmp = strndup(s, n), *stop;
    *v = strtod(tmp, &stop);
    int ok = stop == tmp + n && isfinite(*v);
    free(tmp);
    return ok ? n : 0;
}

/* 1 if np_parse_f64 agrees with strtod on s (also with s embedded in more
 * text, so that the 8-byte reads happen), else prints why and returns 0. */
static int agrees(const char *s) {
    double want = 0, got = 0;
    size_t n = want_number(s, &want);
    for (int pad = 0; pad < 2; pad++) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s%s", s, pad ? " 12345678:0.5 trailing" : "");
        size_t len = strlen(buf);
        const char *e = np_parse_f64(buf, buf + len, &got);
        if (!n) {
            if (e) {
                fprintf(stderr, "  \"%s\": parsed %zu bytes (%.17g), strtod finds no number\n", s, (size_t)(e - buf),
                        got);
                return 0;
            }
            continue;
        }
        if (!e || (size_t)(e - buf) != n || memcmp(&got, &want, sizeof got)) {
            fprintf(stderr, "  \"%s\": got %s%.17g (%zd bytes), strtod %.17g (%zu bytes)\n", s, e ? "" : "NULL ",
                    got, e ? (ssize_t)(e - buf) : (ssize_t)-1, want, n);
            return 0;
        }
    }
    return 1;
}

TEST(numparse_hard_cases) {
    static const char *cases[] = {
        /* simple, signs, points */
        "0", "-0", "+0", "0.0", "-0.0e5", "00000", "1", "-1", "+1", "1.", ".5", "-.5", "+.5e1", "1.5e3",
        "1E3", "1e+3", "1e-3", "123456789", "0.123456", "-0.0123457", "1.23457e-05", "42:7",
        /* 17 digits and more */
        "0.1", "0.30000000000000004", "3.141592653589793", "2.718281828459045", "1.7976931348623157e308",
        "1.7976931348623158e308", "2.2250738585072014e-308", "2.2250738585072011e-308",
        "12345678901234567890", "18446744073709551615", "18446744073709551616", "9999999999999999999",
        "99999999999999999999", "18446744073709551616e-5", "0.00000000000000000000000001234567890123456789",
        "123456789012345678901234567890e-20", "1234567890123456789.0123456789",
        "0.1000000000000000055511151231257827021181583404541015625",
        "0.1000000000000000055511151231257827021181583404541015624",
        "0.10000000000000000555111512312578270211815834045410156251",
        /* exact halfway points (round to even) and their neighbours */
        "9007199254740993", "9007199254740995", "9007199254740993.0000000000000001", "9007199254740992.9999999999",
        "1.00000000000000011102230246251565404236316680908203125",
        "1.00000000000000011102230246251565404236316680908203126",
        "1.00000000000000011102230246251565404236316680908203124",
        "1.00000000000000033306690738754696212708950042724609375", "4503599627370496.5", "4503599627370497.5",
        "2.0000000000000002220446049250313080847263336181640625", "7.2057594037927933e16",
        /* subnormals and underflow */
        "4.9406564584124654e-324", "5e-324", "2.4703282292062327e-324", "2.4703282292062328e-324",
        "2.4703282292062327208828439643411068618252990130716238221279284125033775363510437593264991818081799618989828234772285886546332835517796989819938739800539093906315035659515570226392290858392449105184435931802849936536152500319370457678249219365623669863658480757001585769269903706311928279558551332927834338409351978015531246597263579574622766465272827220056374006485499977096599470454020828166226237857393450736339007967761930577506740176324673600968951340535537458516661134223766678604162159680461914467291840300530057530849048765391711386591646239524912623653881879636239373280423891018672348497668235089863388587925628302755995657524455507255189313690836254779186948667994968324049705821028513185451396213837722826145437693412532098591327667236328125e-324",
        "1e-307", "1e-308", "1e-320", "1e-323", "1e-324", "3e-324", "1e-400", "-1e-400", "2.225073858507201e-308",
        /* exponent extremes */
        "1e308", "1e309", "-1e309", "1e400", "0e999999999", "0.0e-999999", "1e-99999999999999",
        "1e99999999999999", "0.000001e314", "100000e303", "10000000000000000000000e-330",
        /* not numbers here */
        "", "-", "+", ".", "-.", "e5", "1e", "1e+", "1e-", "--1", "+-1", "1..2", "inf", "nan", "Infinity",
        "0x10", "0x1p3", " 1", ":5",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) CHECK(agrees(cases[i]));
}

static uint64_t next64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Random decimals of every shape: 1 to 25 digits, the point anywhere or
 * nowhere, leading zeros, exponents across the whole range, %.17g and
 * %.6g renderings of random doubles. */
TEST(numparse_random_against_strtod) {
    uint64_t s = 20261123;
    char buf[128];
    for (int i = 0; i < 300000; i++) {
        uint64_t r = next64(&s);
        int kind = (int)(r % 4);
        if (kind == 0) {
            double v;
            uint64_t bits = next64(&s);
            memcpy(&v, &bits, sizeof v);
            if (!isfinite(v)) continue;
            snprintf(buf, sizeof buf, (r >> 8) & 1 ? "%.17g" : "%.6g", v);
        } else if (kind == 1) {
            double v = (double)(next64(&s) >> 11) * 0x1p-53 * 2 - 1;
            snprintf(buf, sizeof buf, "%.*g", 1 + (int)((r >> 8) % 17), v);
        } else {
            int nd = 1 + (int)((r >> 8) % 25), dot = (int)((r >> 16) % (nd + 2)), k = 0, lead = (int)((r >> 24) % 4);
            if ((r >> 28) & 1) buf[k++] = '-';
            for (int j = 0; j < lead; j++) buf[k++] = '0';
            for (int j = 0; j < nd; j++) {
                if (j == dot) buf[k++] = '.';
                buf[k++] = (char)('0' + next64(&s) % 10);
            }
            if (kind == 3) k += snprintf(buf + k, sizeof buf - (size_t)k, "e%d", (int)((r >> 32) % 700) - 350);
            buf[k] = 0;
        }
        if (!agrees(buf)) CHECK(0);
    }
}

/* np_eisel_lemire alone: right whenever it answers, and it answers nearly
 * always for random mantissas of up to 19 digits whose values are normal
 * doubles (w < 10^19 and 10^-280 <= 10^q <= 10^280). */
TEST(numparse_eisel_lemire_decides) {
    uint64_t s = 7;
    int answered = 0, n = 200000;
    char buf[64];
    for (int i = 0; i < n; i++) {
        uint64_t w = next64(&s) % 10000000000000000000ull + 1;
        int64_t q = (int64_t)(next64(&s) % 561) - 280;
        double got, want;
        snprintf(buf, sizeof buf, "%llue%lld", (unsigned long long)w, (long long)q);
        want = strtod(buf, NULL);
        if (np_eisel_lemire(w, q, 0, &got)) {
            answered++;
            CHECK(!memcmp(&got, &want, sizeof got));
        }
    }
    CHECK(answered >= n - n / 1000);
    double v = 1;
    CHECK(np_eisel_lemire(0, 5, 0, &v) == 0 && v == 1); /* zero: the caller's */
    CHECK(np_eisel_lemire(1, 309, 0, &v) == 0 && v == 1); /* overflow: strtod's */
    CHECK(np_eisel_lemire(1, -343, 0, &v) == 0 && v == 1); /* below the table */
    CHECK(np_eisel_lemire(5, -324, 0, &v) == 0 && v == 1); /* subnormal */
    CHECK(np_eisel_lemire(17, 0, 1, &v) == 1 && v == -17);
}

/* The 8-byte digit reader on every prefix length, and stopping at every
 * kind of byte that is not a digit. */
TEST(numparse_digits8) {
    uint64_t v;
    CHECK(np_digits8("12345678", &v) == 8 && v == 12345678);
    CHECK(np_digits8("00000001", &v) == 8 && v == 1);
    CHECK(np_digits8("99999999", &v) == 8 && v == 99999999);
    const char stops[] = {'/', ':', ' ', '.', 'e', '\n', '\0', (char)0xFA, (char)0xFF, (char)0x80};
    for (size_t k = 0; k < sizeof stops; k++)
        for (int n = 0; n < 8; n++) {
            char b[8];
            uint64_t want = 0;
            for (int j = 0; j < 8; j++) b[j] = (char)('1' + (j % 9));
            for (int j = 0; j < n; j++) want = want * 10 + (uint64_t)(b[j] - '0');
            b[n] = stops[k];
            CHECK_EQ_I64(np_digits8(b, &v), n);
            CHECK_EQ_I64(v, want);
        }
}
