/*
 * buf.h -- growable byte buffers and varints, the storage of every batch,
 * block and message.  Internal to ember.
 *
 * An ebuf owns its bytes (p may be NULL while cap is 0).  Appends grow it
 * geometrically; on allocation failure they return EM_ENOMEM and leave the
 * buffer unchanged.
 */
#ifndef EM_BUF_H
#define EM_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct ebuf {
    uint8_t *p;
    size_t len, cap;
} ebuf;

#define EBUF_INIT {NULL, 0, 0}

/* Copy n bytes, n small in the common case: fixed-size moves (which the
 * compiler emits inline) for up to 16 bytes, memcpy past that. */
static inline void copy_small(uint8_t *d, const uint8_t *s, size_t n) {
    if (n >= 8 && n <= 16) {
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &b, 8);
    } else if (n >= 4 && n < 8) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &b, 4);
    } else if (n > 16) {
        memcpy(d, s, n);
    } else {
        for (size_t i = 0; i < n; i++) d[i] = s[i];
    }
}

/* Make room for `extra` more bytes.  0 or EM_ENOMEM. */
int ebuf_grow(ebuf *b, size_t extra);
static inline int ebuf_reserve(ebuf *b, size_t extra) {
    return (b->cap - b->len >= extra) ? 0 : ebuf_grow(b, extra);
}
static inline int ebuf_append(ebuf *b, const void *p, size_t n) {
    if (ebuf_reserve(b, n)) return -2;
    if (n) memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}
static inline void ebuf_reset(ebuf *b) { b->len = 0; }
void ebuf_free(ebuf *b);
/* Hand the bytes to the caller (who frees them); the buffer becomes empty. */
uint8_t *ebuf_steal(ebuf *b, size_t *len);

/* LEB128 varints: at most 10 bytes. */
#define VARINT_MAX 10
static inline size_t varint_put(uint8_t *p, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) { p[n++] = (uint8_t)(v | 0x80); v >>= 7; }
    p[n++] = (uint8_t)v;
    return n;
}
static inline size_t varint_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}
/* Decode from [p, end).  Returns bytes consumed, 0 on truncated/overlong. */
static inline size_t varint_get(const uint8_t *p, const uint8_t *end, uint64_t *v) {
    uint64_t r = 0;
    unsigned shift = 0;
    size_t n = 0;
    while (p + n < end && n < VARINT_MAX) {
        uint8_t c = p[n++];
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) { *v = r; return n; }
        shift += 7;
    }
    return 0;
}
static inline int ebuf_put_varint(ebuf *b, uint64_t v) {
    if (ebuf_reserve(b, VARINT_MAX)) return -2;
    b->len += varint_put(b->p + b->len, v);
    return 0;
}

/* Little-endian fixed-width helpers for file headers and indexes. */
static inline void put_u32le(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline uint32_t get_u32le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void put_u64le(uint8_t *p, uint64_t v) { put_u32le(p, (uint32_t)v); put_u32le(p + 4, (uint32_t)(v >> 32)); }
static inline uint64_t get_u64le(const uint8_t *p) { return (uint64_t)get_u32le(p) | (uint64_t)get_u32le(p + 4) << 32; }

#endif
