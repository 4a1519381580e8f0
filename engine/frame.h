/*
 * frame.h -- the wire's framing.  Every message between ember processes
 * travels as a frame: a 4-byte big-endian body length, a 1-byte type, then
 * the body (a msgpack message for control frames, raw bytes for the chunks
 * of bulk data, fixed layouts for the authentication handshake, ciphertext
 * once a session is encrypted).
 *
 * A frame_reader takes bytes as they arrive, in pieces of any size, and
 * yields whole frames.  It trusts nothing: a length over the limit
 * (ember.rpc.message.maxSize), an unknown type or an empty control frame is
 * an error that closes the connection, and the body buffer grows with the
 * bytes that actually came, so a peer claiming 4 GB and sending a byte a
 * second holds no more memory than it sent.  Pure code: no sockets.
 */
#ifndef EM_FRAME_H
#define EM_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define FRAME_HEADER 5
/* ember.rpc.message.maxSize's default, as Spark's spark.rpc.message.maxSize. */
#define FRAME_MAX_DEFAULT ((size_t)128 << 20)

enum frame_type {
    FT_MSG = 1,    /* a msgpack message (msg.h) */
    FT_CHUNK = 2,  /* a piece of bulk data; an empty one ends the data */
    FT_AUTH = 3,   /* a step of the authentication handshake (auth.h) */
    FT_SEALED = 4, /* an encrypted frame (auth.h): the type and body inside */
    FT_MSGS = 5,   /* one or more msgpack messages back to back (msg.h's msgs_next) */
};
#define FT_LAST FT_MSGS

typedef struct frame_reader {
    size_t max;          /* the largest body accepted */
    uint8_t hdr[FRAME_HEADER];
    size_t hlen;         /* header bytes read so far */
    uint8_t type;
    size_t len;          /* body length, once the header is whole */
    uint8_t *body;
    size_t have, cap;
    int ready;           /* a whole frame waits for fr_take */
} frame_reader;

void fr_init(frame_reader *r, size_t max);
void fr_free(frame_reader *r);
/* Feed up to n bytes.  Returns 1 once a whole frame is ready (take it with
 * fr_take before feeding more), 0 when all of them were consumed and more
 * are needed, or EM_EPROTO (message set: the length and the limit, or the
 * type) for a frame that must close the connection; EM_ENOMEM.  *used is
 * set to the bytes consumed in every case. */
int fr_feed(frame_reader *r, const uint8_t *p, size_t n, size_t *used);
/* The ready frame: its type, its body (malloc'd, the caller frees it; NULL
 * for an empty body) and length.  The reader starts on the next frame. */
uint8_t *fr_take(frame_reader *r, uint8_t *type, size_t *len);

/* Append a frame's header for a body of len bytes; then the caller appends
 * the body.  0, EM_EINVAL (len over max, an unknown type) or EM_ENOMEM. */
int frame_put_header(ebuf *out, uint8_t type, size_t len, size_t max);
/* Append a whole frame. */
int frame_put(ebuf *out, uint8_t type, const void *body, size_t len, size_t max);
/* Write a frame's header at h (FRAME_HEADER bytes), for a body already in
 * place after it.  0 or EM_EINVAL, as frame_put_header. */
int frame_fill_header(uint8_t *h, uint8_t type, size_t len, size_t max);

#endif
