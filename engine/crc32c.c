/*
 * crc32c.c -- CRC-32C with the SSE4.2 crc32 instruction, or a table (see
 * crc32c.h).
 *
 * The instruction takes 8 bytes with a latency of 3 cycles.  Where it
 * issues once a cycle (Intel's cores), three streams run at once: as in
 * Mark Adler's crc32c.c (zlib's author), a long buffer is cut into three
 * equal spans whose CRCs run interleaved, and then joined: the CRC of span
 * 0 is moved past span 1's length of zeros (a linear operator, applied
 * with four byte tables built once) and xored with span 1's, and so on.
 * Spans of 8 KiB, then of 256 bytes, then single words.  Where the
 * instruction issues once in 3 cycles (AMD's cores), the three streams
 * cost nothing and gain nothing.  bench/RESULTS.md has the speeds.
 */
#include <pthread.h>
#include <string.h>

#include "crc32c.h"

#define POLY 0x82f63b78u /* reflected Castagnoli polynomial */
#define LONG_SPAN 8192
#define SHORT_SPAN 256

static uint32_t table[256];                /* one byte at a time */
static uint32_t zlong[4][256], zshort[4][256]; /* LONG_SPAN / SHORT_SPAN zeros */
static int have_hw;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The matrix mat (32 columns over GF(2)) times vec. */
static uint32_t gf2_times(const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    for (; vec; vec >>= 1, mat++)
        if (vec & 1) sum ^= *mat;
    return sum;
}

static void gf2_square(uint32_t *sq, const uint32_t *mat) {
    for (int n = 0; n < 32; n++) sq[n] = gf2_times(mat, mat[n]);
}

/* The operator that appends len zero bytes (a power of two) to a CRC, as
 * four tables of one byte each. */
static void zeros_tables(uint32_t z[4][256], size_t len) {
    uint32_t even[32], odd[32], row = 1;
    odd[0] = POLY; /* one zero bit */
    for (int n = 1; n < 32; n++, row <<= 1) odd[n] = row;
    gf2_square(even, odd); /* two bits */
    gf2_square(odd, even); /* four bits */
    const uint32_t *op = NULL;
    for (;;) { /* each square doubles: even holds one byte first */
        gf2_square(even, odd);
        len >>= 1;
        if (!len) {
            op = even;
            break;
        }
        gf2_square(odd, even);
        len >>= 1;
        if (!len) {
            op = odd;
            break;
        }
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 0; k < 4; k++) z[k][n] = gf2_times(op, n << (8 * k));
}

static uint32_t shift(const uint32_t z[4][256], uint32_t crc) {
    return z[0][crc & 0xff] ^ z[1][(crc >> 8) & 0xff] ^ z[2][(crc >> 16) & 0xff] ^ z[3][crc >> 24];
}

static void init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? c >> 1 ^ POLY : c >> 1;
        table[n] = c;
    }
    zeros_tables(zlong, LONG_SPAN);
    zeros_tables(zshort, SHORT_SPAN);
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    have_hw = __builtin_cpu_supports("sse4.2");
#endif
}

uint32_t crc32c_sw(uint32_t crc, const void *p, size_t n) {
    const uint8_t *b = p;
    pthread_once(&once, init);
    crc = ~crc;
    while (n--) crc = table[(crc ^ *b++) & 0xff] ^ crc >> 8;
    return ~crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

static inline uint64_t word(const uint8_t *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* Three spans of span bytes each, interleaved, while they fit. */
#define SPANS(span, z)                                                                                               \
    while ((size_t)(end - b) >= 3 * (span)) {                                                                        \
        uint64_t c1 = 0, c2 = 0;                                                                                     \
        for (const uint8_t *stop = b + (span); b < stop; b += 8) {                                                   \
            c0 = _mm_crc32_u64(c0, word(b));                                                                         \
            c1 = _mm_crc32_u64(c1, word(b + (span)));                                                                \
            c2 = _mm_crc32_u64(c2, word(b + 2 * (span)));                                                            \
        }                                                                                                            \
        c0 = shift(z, (uint32_t)c0) ^ (uint32_t)c1;                                                                  \
        c0 = shift(z, (uint32_t)c0) ^ (uint32_t)c2;                                                                  \
        b += 2 * (span);                                                                                             \
    }

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *b, size_t n) {
    const uint8_t *end = b + n;
    uint64_t c0 = ~crc;
    while (b < end && ((uintptr_t)b & 7)) c0 = _mm_crc32_u8((uint32_t)c0, *b++);
    SPANS(LONG_SPAN, zlong)
    SPANS(SHORT_SPAN, zshort)
    for (; end - b >= 8; b += 8) c0 = _mm_crc32_u64(c0, word(b));
    while (b < end) c0 = _mm_crc32_u8((uint32_t)c0, *b++);
    return ~(uint32_t)c0;
}
#endif

uint32_t crc32c(uint32_t crc, const void *p, size_t n) {
    pthread_once(&once, init);
#if defined(__x86_64__)
    if (have_hw) return crc_hw(crc, p, n);
#endif
    return crc32c_sw(crc, p, n);
}
