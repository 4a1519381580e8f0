/*
 * shortkey.h -- a key of at most 16 bytes (a word, an id) held as two
 * 64-bit words, the form em_hash reads it in.
 *
 * sk_load reads n bytes as em_hash's short path does: two overlapping
 * 8-byte loads for 8 to 16 bytes, two overlapping 4-byte loads for 4 to
 * 7, the first, middle and last byte for 1 to 3.  Every byte of the key
 * is in one of the loads, so two keys of one length are equal exactly
 * when their words are: a table compares a stored key with a queued one
 * by two loads and two compares, no byte loop and no memcmp call.
 * sk_store writes the same bytes back (the loads' overlap is stored
 * twice, with the same values), and sk_hash is em_hash of the key.
 */
#ifndef EM_SHORTKEY_H
#define EM_SHORTKEY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SK_MAX 16 /* the longest key the words hold */

/* The multiply-xorshift em_hash is built on (wyhash-like mixing). */
static inline uint64_t sk_mix(uint64_t a, uint64_t b) {
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

#define SK_K1 0xA0761D6478BD642Full
#define SK_K2 0xE7037ED1A0B428DBull

/* The n <= SK_MAX bytes at p as words *a and *b (both 0 for n == 0). */
static inline void sk_load(const uint8_t *p, size_t n, uint64_t *a, uint64_t *b) {
    if (n >= 8) {
        memcpy(a, p, 8);
        memcpy(b, p + n - 8, 8);
    } else if (n >= 4) {
        uint32_t x, y;
        memcpy(&x, p, 4);
        memcpy(&y, p + n - 4, 4);
        *a = x;
        *b = y;
    } else {
        *a = n ? (uint64_t)p[0] << 16 | (uint64_t)p[n >> 1] << 8 | p[n - 1] : 0;
        *b = 0;
    }
}

/* The n <= SK_MAX bytes sk_load read as a and b, written to d. */
static inline void sk_store(uint8_t *d, size_t n, uint64_t a, uint64_t b) {
    if (n >= 8) {
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t x = (uint32_t)a, y = (uint32_t)b;
        memcpy(d, &x, 4);
        memcpy(d + n - 4, &y, 4);
    } else if (n) {
        d[0] = (uint8_t)(a >> 16);
        d[n >> 1] = (uint8_t)(a >> 8);
        d[n - 1] = (uint8_t)a;
    }
}

/* em_hash of the key sk_load read as a and b (n <= SK_MAX). */
static inline uint64_t sk_hash(uint64_t a, uint64_t b, size_t n) { return sk_mix(a ^ SK_K1 ^ n, b ^ SK_K2); }

#endif
