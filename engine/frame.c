/*
 * frame.c -- the wire's framing (see frame.h).
 */
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"
#include "frame.h"

/* The body buffer's first size, and then it doubles as bytes come. */
#define FRAME_FIRST_CAP 4096

void fr_init(frame_reader *r, size_t max) {
    memset(r, 0, sizeof *r);
    r->max = max;
}

void fr_free(frame_reader *r) {
    free(r->body);
    r->body = NULL;
    r->have = r->cap = 0;
}

/* A control frame must say something; a chunk may be empty (the end). */
static int type_allows_empty(uint8_t type) { return type == FT_CHUNK; }

int fr_feed(frame_reader *r, const uint8_t *p, size_t n, size_t *used) {
    size_t i = 0;
    *used = 0;
    if (r->ready) return 1;
    while (r->hlen < FRAME_HEADER) {
        if (i == n) {
            *used = i;
            return 0;
        }
        r->hdr[r->hlen++] = p[i++];
        if (r->hlen == FRAME_HEADER) {
            r->len = (size_t)r->hdr[0] << 24 | (size_t)r->hdr[1] << 16 | (size_t)r->hdr[2] << 8 | r->hdr[3];
            r->type = r->hdr[4];
            *used = i;
            if (r->type < FT_MSG || r->type > FT_LAST)
                return em__seterr(EM_EPROTO, "frame of unknown type %u", r->type);
            if (r->len > r->max)
                return em__seterr(EM_EPROTO, "frame of %zu bytes exceeds ember.rpc.message.maxSize (%zu bytes)",
                                  r->len, r->max);
            if (!r->len && !type_allows_empty(r->type))
                return em__seterr(EM_EPROTO, "empty frame of type %u", r->type);
            r->have = 0;
        }
    }
    size_t want = r->len - r->have, take = n - i < want ? n - i : want;
    if (take) {
        if (r->have + take > r->cap) { /* grow with what came, not with what was claimed */
            size_t cap = r->cap ? r->cap : FRAME_FIRST_CAP;
            while (cap < r->have + take) cap *= 2;
            if (cap > r->len) cap = r->len;
            uint8_t *b = realloc(r->body, cap);
            if (!b) {
                *used = i;
                return em__seterr(EM_ENOMEM, "frame: out of memory for a %zu-byte body", r->len);
            }
            r->body = b;
            r->cap = cap;
        }
        memcpy(r->body + r->have, p + i, take);
        r->have += take;
        i += take;
    }
    *used = i;
    if (r->have < r->len) return 0;
    r->ready = 1;
    return 1;
}

uint8_t *fr_take(frame_reader *r, uint8_t *type, size_t *len) {
    uint8_t *b = NULL;
    *type = r->type;
    *len = r->len;
    if (r->ready && r->len) {
        b = r->body;
        r->body = NULL;
        r->cap = 0;
    }
    r->ready = 0;
    r->hlen = 0;
    r->have = 0;
    r->len = 0;
    return b;
}

int frame_fill_header(uint8_t *h, uint8_t type, size_t len, size_t max) {
    if (type < FT_MSG || type > FT_LAST) return em__seterr(EM_EINVAL, "frame: unknown type %u", type);
    if (len > max || len > UINT32_MAX)
        return em__seterr(EM_EINVAL, "frame: a %zu-byte body exceeds ember.rpc.message.maxSize (%zu bytes)", len,
                          max);
    h[0] = (uint8_t)(len >> 24);
    h[1] = (uint8_t)(len >> 16);
    h[2] = (uint8_t)(len >> 8);
    h[3] = (uint8_t)len;
    h[4] = type;
    return 0;
}

int frame_put_header(ebuf *out, uint8_t type, size_t len, size_t max) {
    uint8_t h[FRAME_HEADER];
    int rc = frame_fill_header(h, type, len, max);
    if (rc) return rc;
    return ebuf_append(out, h, sizeof h) ? em__seterr(EM_ENOMEM, "frame: out of memory") : 0;
}

int frame_put(ebuf *out, uint8_t type, const void *body, size_t len, size_t max) {
    int rc = frame_put_header(out, type, len, max);
    if (!rc && ebuf_append(out, body, len)) rc = em__seterr(EM_ENOMEM, "frame: out of memory");
    return rc;
}
