/*
 * conn.h -- connections between ember processes: TCP on libuv, carrying
 * frames (frame.h), authenticated with the shared secret when one is set
 * (auth.h), sealed when encryption is on.  A connection lives on one io
 * loop (ioloop.h); every call here is made on that loop's thread, and every
 * callback comes on it.
 *
 * A malformed, oversized or unexpected frame, a failed handshake, a frame
 * before authentication, or a peer that goes away closes that connection
 * with a reason, logged with the peer's address; a listener keeps serving
 * every other connection.
 *
 * What a peer that has not authenticated can make a process hold is
 * bounded.  Until a connection is trusted -- authenticated, or, without a
 * secret, once an accepted connection's first frame has been handled
 * without closing it -- its frames may be at most CONN_PREAUTH_FRAME
 * bytes, whatever max_frame says; a larger length closes it at its
 * header.  A listener holds at most CONN_PREAUTH_MAX connections that are
 * not trusted yet (fewer when the descriptor limit is low: a quarter of
 * RLIMIT_NOFILE); further ones are accepted and closed at once, with a
 * warning logged at most once a second.  Every one of them closes when
 * handshake_ms passes.  A connection this process dialed trusts the peer
 * it chose once the handshake is done (at once without a secret).
 *
 * A failed authentication is logged at warn on the side that refuses it,
 * with the peer's address and the reason (a wrong secret, no secret, a
 * malformed handshake), at most one line per peer address a second.
 */
#ifndef EM_CONN_H
#define EM_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "ioloop.h"

typedef struct conn conn;
typedef struct listener listener;

typedef struct conn_opts {
    size_t max_frame;     /* ember.rpc.message.maxSize */
    const void *secret;   /* NULL: no authentication */
    size_t secret_len;
    int encrypt;          /* seal every frame after the handshake */
    const char *component; /* for log lines ("master", "worker", ...) */
    uint32_t handshake_ms; /* connect and authenticate (without a secret, an
                              accepted connection: send its first frame)
                              within this, or the connection closes (0:
                              CONN_HANDSHAKE_MS) */
    int preauth_max;       /* a listener's cap on connections not trusted yet
                              (0: CONN_PREAUTH_MAX) */
} conn_opts;

/* The largest frame a peer that is not trusted yet may send. */
#define CONN_PREAUTH_FRAME ((size_t)1 << 20)
/* Connections not trusted yet that one listener holds at most. */
#define CONN_PREAUTH_MAX 256

/* How long a connection may take to open: a peer that connects and then
 * says nothing (or one byte a second) holds nothing for longer. */
#define CONN_HANDSHAKE_MS 30000

typedef struct conn_cb {
    /* Ready: authenticated (or at once without a secret). */
    void (*on_open)(conn *c, void *ud);
    /* A frame from the peer; body (malloc'd, NULL when empty) is the
     * callee's. */
    void (*on_frame)(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud);
    /* Closed, for `reason`; c is freed when this returns. */
    void (*on_close)(conn *c, const char *reason, void *ud);
} conn_cb;

/* host (a numeric IPv4 address, or a name resolved with getaddrinfo to its
 * first IPv4 address, blocking the calling thread) and port as a socket
 * address.  0, or EM_EINVAL naming the host and the resolver's answer. */
struct sockaddr_in;
int conn_resolve(const char *host, int port, struct sockaddr_in *sa);
/* Listen on host:port (an address as conn_resolve's; port 0: any free one, then
 * *port_out says which).  Accepted connections use o, cb and ud.  0, or
 * EM_EIO with a message naming the address and the cause. */
int conn_listen(ioloop *l, const char *host, int port, const conn_opts *o, const conn_cb *cb, void *ud,
                listener **out, int *port_out);
void listener_close(listener *ls);
/* Connect to host:port (a numeric IPv4 address, or a name resolved without
 * blocking the loop); cb->on_open when ready, cb->on_close if it fails
 * (unknown host, refused, unreachable, the handshake: all within
 * handshake_ms). */
int conn_connect(ioloop *l, const char *host, int port, const conn_opts *o, const conn_cb *cb, void *ud, conn **out);
/* Queue a frame (sealed if the session is).  0, or EM_EINVAL / EM_ENOMEM /
 * EM_ESTATE (not open, or closing). */
int conn_send(conn *c, uint8_t type, const void *body, size_t len);
/* Encode message tag with its fields (msg.h) and queue it as an FT_MSG
 * frame.  0, or what msg_encode or conn_send returned. */
struct msg_val;
int conn_send_msg(conn *c, int tag, const struct msg_val *f, int n);
/* As conn_send_msg, for a message whose last field is bytes that are not
 * copied: they are written from where they lie, and must stay there until
 * done(arg) is called, once they are written or the connection closed.  On
 * an encrypted connection they are copied (sealing reads them anyway) and
 * done is called before this returns.  done is called in every case, on
 * failure too (before the return). */
int conn_send_msg_ref(conn *c, int tag, const struct msg_val *f, int n, void (*done)(void *arg), void *arg);
/* Messages sent from conn_batch_begin to conn_batch_end go out together
 * as one frame (FT_MSGS; FT_MSG when there is one) in one write, or in
 * several when they pass the frame limit; other frames sent in between go
 * after the messages before them.  The peer's on_frame gets each message
 * as an FT_MSG frame of its own.  Nested pairs count; the outermost end
 * sends.  End: 0, or why the batch could not be queued (the connection is
 * for the caller to close). */
void conn_batch_begin(conn *c);
int conn_batch_end(conn *c);
/* For on_frame callbacks that take only messages: decode frame (type,
 * body) into m.  0: the caller owns m and body (msg_free, free).  -1: it
 * was not a message, or not a valid one; body is freed and c closed with
 * the reason. */
struct msg;
int conn_take_msg(conn *c, uint8_t type, uint8_t *body, size_t len, struct msg *m);
/* Queue a frame whose body is len bytes of file fd at off.  On a
 * connection that is not encrypted, with nothing queued, the bytes go from
 * the file to the socket with sendfile(2) until the socket is full; the
 * rest is read and queued.  0, or as conn_send (EM_EIO: the file could not
 * be read; if part of the frame went out the connection is closed). */
int conn_send_file(conn *c, uint8_t type, int fd, uint64_t off, size_t len);
/* Bytes sent with sendfile(2) so far, by every connection (atomic). */
extern uint64_t conn_sendfile_bytes;
/* Bytes queued for the peer and not yet written, a batch's too. */
size_t conn_queued(const conn *c);
/* Call fn(c, arg) once, when a write completes with at most
 * CONN_DRAIN_LOW bytes left queued: how a sender of bulk data (a shuffle
 * segment, the binary) keeps a bounded amount in flight.  Not called once
 * the connection is closing. */
#define CONN_DRAIN_LOW ((size_t)1 << 20)
void conn_on_drain(conn *c, void (*fn)(conn *c, void *arg), void *arg);
/* A cap of `want` descriptors for one kind of connection, lowered to a
 * quarter of RLIMIT_NOFILE's soft limit (at least 4) so that one kind
 * never takes the descriptors every other needs. */
int conn_fd_share(int want);
/* Close with a reason (logged); on_close follows. */
void conn_close(conn *c, const char *reason);
/* "127.0.0.1:5000" */
const char *conn_peer(const conn *c);

#endif
