/*
 * conn.c -- framed, authenticated TCP connections on libuv (see conn.h).
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "auth.h"
#include "conn.h"
#include "ember.h"
#include "err.h"
#include "frame.h"
#include "log.h"
#include "msg.h"

enum { C_CONNECTING = 0, C_AUTH, C_OPEN, C_CLOSING };

struct conn {
    iol_owner owner;  /* first: the handles' data */
    uv_tcp_t tcp;
    uv_timer_t hs;    /* the handshake's deadline */
    int handles;      /* not yet closed, and requests pending: freed at 0 */
    uv_connect_t creq;
    uv_getaddrinfo_t gai; /* resolving the peer's host name (counted in handles) */
    int resolving;
    int port;         /* the peer's, while resolving */
    ioloop *loop;
    conn_opts o;
    uint8_t *secret;  /* a copy */
    conn_cb cb;
    void *ud;
    int state;
    int server;       /* accepted (the server side of the handshake) */
    int challenged;   /* a server that answered the peer's HELLO */
    int trusted;      /* authenticated, or its first frame handled: frames up
                         to max_frame (before: CONN_PREAUTH_FRAME) */
    listener *ls;     /* accepted and not trusted yet: counted there */
    conn *pprev, *pnext; /* in ls's list of those */
    frame_reader rd;
    auth_state auth;
    seal_state tx, rx;
    char peer[64];
    char reason[512];
    void (*drain)(conn *c, void *arg); /* once the queue is short again */
    void *drain_arg;
    /* Between conn_batch_begin and conn_batch_end: messages gathered in
     * batch (room for a frame's header first, then their bodies). */
    int batching, nbatch;
    ebuf batch;
};

struct listener {
    iol_owner owner;
    uv_tcp_t tcp;
    ioloop *loop;
    conn_opts o;
    uint8_t *secret;
    conn_cb cb;
    void *ud;
    char addr[64];
    conn *pending;       /* accepted, not trusted yet */
    int npending, preauth_max;
    uint64_t refused;    /* refused at the cap since the last warning */
    uint64_t refused_ms; /* when that warning was logged */
};

static const char *comp(const conn_opts *o) { return o->component ? o->component : "conn"; }

const char *conn_peer(const conn *c) { return c->peer; }

int conn_fd_share(int want) {
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) || r.rlim_cur == RLIM_INFINITY) return want;
    rlim_t q = r.rlim_cur / 4;
    if (q < 4) q = 4;
    return q < (rlim_t)want ? (int)q : want;
}

/* ------------------------------------------- failed authentications */

/* The last warning per peer address (and direction: a process's own
 * dialed connections and those it accepted are counted apart): at most
 * one line a second each. */
#define AUTH_LOG_SLOTS 64
static struct {
    char host[48];
    uint64_t ms;
    unsigned quiet; /* failures not logged since */
} auth_log[AUTH_LOG_SLOTS];
static pthread_mutex_t auth_log_mu = PTHREAD_MUTEX_INITIALIZER;

/* Log that authenticating the peer of c failed, at warn: kind ("wrong
 * secret", "no secret", "malformed handshake") and what happened. */
static void auth_failed(conn *c, const char *kind, const char *detail) {
    char host[48];
    const char *colon = strrchr(c->peer, ':');
    size_t hl = colon ? (size_t)(colon - c->peer) : strlen(c->peer);
    if (hl > sizeof host - 3) hl = sizeof host - 3;
    host[0] = c->server ? '<' : '>';
    memcpy(host + 1, c->peer, hl);
    host[hl + 1] = 0;
    static const char prefix[] = "authentication failed: ";
    if (!strncmp(detail, prefix, sizeof prefix - 1)) detail += sizeof prefix - 1;
    uint64_t now = uv_hrtime() / 1000000u;
    unsigned quiet = 0;
    pthread_mutex_lock(&auth_log_mu);
    int slot = 0;
    for (int i = 0; i < AUTH_LOG_SLOTS; i++) {
        if (!strcmp(auth_log[i].host, host)) {
            slot = i;
            break;
        }
        if (auth_log[i].ms < auth_log[slot].ms) slot = i; /* else the oldest is replaced */
    }
    int same = !strcmp(auth_log[slot].host, host);
    if (same && auth_log[slot].ms && now - auth_log[slot].ms < 1000) {
        auth_log[slot].quiet++;
        pthread_mutex_unlock(&auth_log_mu);
        return;
    }
    if (same) quiet = auth_log[slot].quiet;
    snprintf(auth_log[slot].host, sizeof auth_log[slot].host, "%s", host);
    auth_log[slot].ms = now;
    auth_log[slot].quiet = 0;
    pthread_mutex_unlock(&auth_log_mu);
    char more[96] = "";
    if (quiet) snprintf(more, sizeof more, " (and %u more of %s not logged)", quiet, host + 1);
    log_msg(LOG_WARN, comp(&c->o), "authentication failed: connection %s %s: %s (%s)%s", c->server ? "from" : "to",
            c->peer, kind, detail, more);
}

/* Off its listener's count of connections not trusted yet. */
static void unlist(conn *c) {
    listener *ls = c->ls;
    if (!ls) return;
    if (c->pprev) c->pprev->pnext = c->pnext;
    else ls->pending = c->pnext;
    if (c->pnext) c->pnext->pprev = c->pprev;
    c->pprev = c->pnext = NULL;
    c->ls = NULL;
    ls->npending--;
}

/* Trusted from now on: frames up to max_frame. */
static void trust(conn *c) {
    c->trusted = 1;
    uv_timer_stop(&c->hs);
    c->rd.max = c->o.max_frame;
    unlist(c);
}

static void release(conn *c) {
    if (--c->handles) return;
    if (c->cb.on_close) c->cb.on_close(c, c->reason, c->ud);
    fr_free(&c->rd);
    ebuf_free(&c->batch);
    auth_wipe(&c->auth);
    sodium_memzero(&c->tx, sizeof c->tx);
    sodium_memzero(&c->rx, sizeof c->rx);
    if (c->secret) {
        sodium_memzero(c->secret, c->o.secret_len);
        free(c->secret);
    }
    free(c);
}

static void on_closed(uv_handle_t *h) { release((conn *)h->data); }

void conn_close(conn *c, const char *reason) {
    if (c->state == C_CLOSING) return;
    c->state = C_CLOSING;
    unlist(c);
    snprintf(c->reason, sizeof c->reason, "%s", reason ? reason : "closed");
    log_msg(LOG_DEBUG, comp(&c->o), "connection %s closed: %s", c->peer[0] ? c->peer : "(unconnected)", c->reason);
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (c->resolving) uv_cancel((uv_req_t *)&c->gai); /* on_resolved still comes, and releases */
    uv_close((uv_handle_t *)&c->hs, on_closed);
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void owner_close(void *self, const char *reason) { conn_close(self, reason); }

/* ------------------------------------------------------------- writing */

typedef struct wreq {
    uv_write_t req;
    conn *c;
    uint8_t *bytes;
    void (*done)(void *); /* the owner of bytes written from where they lie, or NULL */
    void *done_arg;
} wreq;

static void on_written(uv_write_t *req, int status) {
    wreq *w = (wreq *)req;
    conn *c = w->c;
    if (status < 0 && status != UV_ECANCELED) {
        char why[128];
        snprintf(why, sizeof why, "write failed: %s", uv_strerror(status));
        conn_close(c, why);
    }
    free(w->bytes);
    if (w->done) w->done(w->done_arg);
    free(w);
    if (c->drain && c->state == C_OPEN && conn_queued(c) <= CONN_DRAIN_LOW) {
        void (*fn)(conn *, void *) = c->drain;
        c->drain = NULL;
        fn(c, c->drain_arg);
    }
}

static int write_bytes(conn *c, ebuf *out);
static int can_send(conn *c);

/* The messages gathered, as one frame: FT_MSG for one, FT_MSGS for more. */
static int flush_batch(conn *c) {
    if (!c->nbatch) return 0;
    uint8_t type = c->nbatch == 1 ? FT_MSG : FT_MSGS;
    size_t len = c->batch.len - FRAME_HEADER;
    c->nbatch = 0;
    int rc = can_send(c);
    if (!rc && c->o.encrypt) {
        ebuf out = EBUF_INIT;
        if (!(rc = seal_frame(&c->tx, type, c->batch.p + FRAME_HEADER, len, &out, c->o.max_frame)))
            rc = write_bytes(c, &out);
        else ebuf_free(&out);
        ebuf_free(&c->batch);
        return rc;
    }
    if (!rc) rc = frame_fill_header(c->batch.p, type, len, c->o.max_frame);
    if (rc) {
        ebuf_free(&c->batch);
        return rc;
    }
    return write_bytes(c, &c->batch); /* takes it: the next batch starts empty */
}

void conn_batch_begin(conn *c) { c->batching++; }

int conn_batch_end(conn *c) {
    if (c->batching && --c->batching) return 0;
    return flush_batch(c);
}

/* Add a message to the batch, which goes out first when it would pass the
 * frame limit. */
static int batch_msg(conn *c, int tag, const msg_val *f, int n) {
    int rc;
    if ((rc = can_send(c))) return rc;
    size_t mark = c->batch.len;
    if (!mark) {
        if (ebuf_reserve(&c->batch, FRAME_HEADER)) return em__seterr(EM_ENOMEM, "connection: out of memory");
        c->batch.len = mark = FRAME_HEADER;
    }
    uint8_t h[FRAME_HEADER];
    if ((rc = msg_encode(&c->batch, tag, f, n)) ||
        (rc = frame_fill_header(h, FT_MSG, c->batch.len - mark, c->o.max_frame))) {
        c->batch.len = mark;
        return rc;
    }
    if (c->nbatch && c->batch.len - FRAME_HEADER > c->o.max_frame) { /* it alone in the next batch */
        size_t mlen = c->batch.len - mark;
        uint8_t *m = malloc(mlen);
        if (!m) {
            c->batch.len = mark;
            return em__seterr(EM_ENOMEM, "connection: out of memory");
        }
        memcpy(m, c->batch.p + mark, mlen);
        c->batch.len = mark;
        if ((rc = flush_batch(c)) || ebuf_reserve(&c->batch, FRAME_HEADER + mlen)) {
            free(m);
            return rc ? rc : em__seterr(EM_ENOMEM, "connection: out of memory");
        }
        c->batch.len = FRAME_HEADER;
        memcpy(c->batch.p + FRAME_HEADER, m, mlen);
        c->batch.len += mlen;
        free(m);
    }
    c->nbatch++;
    return 0;
}

int conn_send_msg_ref(conn *c, int tag, const msg_val *f, int n, void (*done)(void *arg), void *arg) {
    ebuf out = EBUF_INIT;
    int rc;
    if (c->o.encrypt || c->batching) { /* copied anyway */
        rc = conn_send_msg(c, tag, f, n);
        done(arg);
        return rc;
    }
    const msg_val *last = &f[n - 1];
    if (!(rc = can_send(c))) {
        if (ebuf_reserve(&out, FRAME_HEADER)) rc = em__seterr(EM_ENOMEM, "connection: out of memory");
        else {
            out.len = FRAME_HEADER;
            if (!(rc = msg_encode_head(&out, tag, f, n)))
                rc = frame_fill_header(out.p, FT_MSG, out.len - FRAME_HEADER + last->len, c->o.max_frame);
        }
    }
    wreq *w = rc ? NULL : malloc(sizeof *w);
    if (!rc && !w) rc = em__seterr(EM_ENOMEM, "connection: out of memory");
    if (rc) {
        ebuf_free(&out);
        done(arg);
        return rc;
    }
    w->c = c;
    w->done = done;
    w->done_arg = arg;
    uv_buf_t b[2] = {uv_buf_init((char *)out.p, (unsigned)out.len), uv_buf_init((char *)last->p, (unsigned)last->len)};
    w->bytes = ebuf_steal(&out, NULL);
    if ((rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, b, last->len ? 2 : 1, on_written))) {
        free(w->bytes);
        free(w);
        done(arg);
        return em__seterr(EM_EIO, "connection %s: %s", c->peer, uv_strerror(rc));
    }
    return 0;
}

int conn_send_msg(conn *c, int tag, const msg_val *f, int n) {
    ebuf out = EBUF_INIT;
    int rc;
    if (c->batching) return batch_msg(c, tag, f, n);
    if (c->o.encrypt) { /* sealing copies the message anyway */
        if (!(rc = msg_encode(&out, tag, f, n))) rc = conn_send(c, FT_MSG, out.p, out.len);
        ebuf_free(&out);
        return rc;
    }
    /* The message is encoded after room for the frame's header, filled in
     * once its length is known: the fields' bytes (a result part, records)
     * are copied once, not twice. */
    if ((rc = can_send(c))) return rc;
    if (ebuf_reserve(&out, FRAME_HEADER)) return em__seterr(EM_ENOMEM, "connection: out of memory");
    out.len = FRAME_HEADER;
    if (!(rc = msg_encode(&out, tag, f, n)))
        rc = frame_fill_header(out.p, FT_MSG, out.len - FRAME_HEADER, c->o.max_frame);
    if (rc) {
        ebuf_free(&out);
        return rc;
    }
    return write_bytes(c, &out);
}

int conn_take_msg(conn *c, uint8_t type, uint8_t *body, size_t len, msg *m) {
    char why[700];
    if (type != FT_MSG) {
        snprintf(why, sizeof why, "a frame that is not a message (type %u)", type);
    } else if (msg_decode(m, body, len)) {
        snprintf(why, sizeof why, "%s", em_errmsg());
        msg_free(m);
    } else {
        return 0;
    }
    free(body);
    conn_close(c, why);
    return -1;
}

size_t conn_queued(const conn *c) {
    return uv_stream_get_write_queue_size((const uv_stream_t *)&c->tcp) + c->batch.len;
}

void conn_on_drain(conn *c, void (*fn)(conn *c, void *arg), void *arg) {
    c->drain = fn;
    c->drain_arg = arg;
}

/* Write out's bytes (taken). */
static int write_bytes(conn *c, ebuf *out) {
    if (!out->len) return 0;
    wreq *w = malloc(sizeof *w);
    if (!w) {
        ebuf_free(out);
        return em__seterr(EM_ENOMEM, "connection: out of memory");
    }
    size_t len;
    w->c = c;
    w->done = NULL;
    w->bytes = ebuf_steal(out, &len);
    uv_buf_t b = uv_buf_init((char *)w->bytes, (unsigned)len);
    int rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_written);
    if (rc) {
        free(w->bytes);
        free(w);
        return em__seterr(EM_EIO, "connection %s: %s", c->peer, uv_strerror(rc));
    }
    return 0;
}

/* Bytes queued for a peer beyond which it is taken as not reading. */
#define CONN_QUEUE_MAX ((size_t)256 << 20)

/* Whether a frame may be queued on c: 0, or why not (a peer that does not
 * read what is sent to it is closed). */
static int can_send(conn *c) {
    if (c->state != C_OPEN) return em__seterr(EM_ESTATE, "connection %s: not open", c->peer);
    if (uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) > CONN_QUEUE_MAX) {
        conn_close(c, "the peer does not read what is sent to it (256 MiB queued)");
        return em__seterr(EM_EIO, "connection %s: the peer does not read", c->peer);
    }
    return 0;
}

int conn_send(conn *c, uint8_t type, const void *body, size_t len) {
    int rc0 = flush_batch(c);
    if (!rc0) rc0 = can_send(c);
    if (rc0) return rc0;
    ebuf out = EBUF_INIT;
    int rc = c->o.encrypt ? seal_frame(&c->tx, type, body, len, &out, c->o.max_frame)
                          : frame_put(&out, type, body, len, c->o.max_frame);
    if (rc) {
        ebuf_free(&out);
        return rc;
    }
    return write_bytes(c, &out);
}

uint64_t conn_sendfile_bytes; /* atomic: bytes sendfile(2) wrote, all connections */

/* Read len bytes of fd at off into out.  0 or EM_EIO. */
static int read_file(ebuf *out, int fd, uint64_t off, size_t len) {
    if (ebuf_reserve(out, len)) return em__seterr(EM_ENOMEM, "connection: out of memory");
    size_t got = 0;
    while (got < len) {
        ssize_t k = pread(fd, out->p + out->len + got, len - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return em__seterr(EM_EIO, "reading a file to send: %s", k < 0 ? strerror(errno) : "it shrank");
        got += (size_t)k;
    }
    out->len += len;
    return 0;
}

int conn_send_file(conn *c, uint8_t type, int fd, uint64_t off, size_t len) {
    if (c->state != C_OPEN) return em__seterr(EM_ESTATE, "connection %s: not open", c->peer);
    ebuf out = EBUF_INIT;
    int rc = flush_batch(c);
    if (rc) return rc;
    if (c->o.encrypt) { /* sealed: the bytes pass through here anyway */
        if (!(rc = read_file(&out, fd, off, len))) rc = conn_send(c, type, out.p, len);
        ebuf_free(&out);
        return rc;
    }
    if ((rc = frame_put_header(&out, type, len, c->o.max_frame))) {
        ebuf_free(&out);
        return rc;
    }
    /* With nothing queued, the header and then the file go straight into
     * the socket, until it is full; the rest of the frame is read and
     * queued the ordinary way, so the drain callback still comes. */
    size_t sent = 0, hlen = out.len;
    uv_os_fd_t s;
    if (!conn_queued(c) && !uv_fileno((const uv_handle_t *)&c->tcp, &s)) {
        uv_buf_t b = uv_buf_init((char *)out.p, (unsigned)hlen);
        int k = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
        if (k > 0) sent = (size_t)k;
        while (sent >= hlen && sent - hlen < len) {
            off_t o = (off_t)(off + (sent - hlen));
            ssize_t n = sendfile(s, fd, &o, len - (sent - hlen));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break; /* full (EAGAIN), or an error the queued write meets */
            sent += (size_t)n;
            __atomic_add_fetch(&conn_sendfile_bytes, (uint64_t)n, __ATOMIC_RELAXED);
        }
    }
    if (sent == hlen + len) {
        ebuf_free(&out);
        return 0;
    }
    if (sent < hlen) {
        memmove(out.p, out.p + sent, hlen - sent);
        out.len = hlen - sent;
        sent = hlen;
    } else out.len = 0;
    if ((rc = read_file(&out, fd, off + (sent - hlen), len - (sent - hlen)))) {
        ebuf_free(&out);
        if (sent > 0) conn_close(c, em_errmsg()); /* half a frame went out */
        return rc;
    }
    return write_bytes(c, &out);
}

/* ------------------------------------------------------------- reading */

static void opened(conn *c) {
    ebuf out = EBUF_INIT;
    if (c->o.encrypt && c->secret) {
        if (seal_tx_start(&c->tx, &c->auth, &out, c->o.max_frame) || write_bytes(c, &out)) {
            ebuf_free(&out);
            conn_close(c, em_errmsg());
            return;
        }
    }
    c->state = C_OPEN;
    if (c->secret || !c->server) trust(c); /* else once its first frame is handled */
    log_msg(LOG_DEBUG, comp(&c->o), "connection %s open%s", c->peer, c->secret ? " (authenticated)" : "");
    if (c->cb.on_open) c->cb.on_open(c, c->ud);
}

/* An FT_MSGS frame: each of its messages to on_frame as an FT_MSG frame
 * of its own, in order, until the connection closes. */
static int take_batch(conn *c, uint8_t *body, size_t len) {
    size_t off = 0, mlen;
    int rc;
    while ((rc = msgs_next(body, len, &off, &mlen)) == 1 && c->state == C_OPEN) {
        uint8_t *m = malloc(mlen);
        if (!m) {
            free(body);
            conn_close(c, "out of memory taking a batch of messages");
            return -1;
        }
        memcpy(m, body + off - mlen, mlen);
        if (c->cb.on_frame) c->cb.on_frame(c, FT_MSG, m, mlen, c->ud);
        else free(m);
    }
    free(body);
    if (rc < 0 && c->state == C_OPEN) conn_close(c, em_errmsg());
    if (c->state != C_OPEN) return -1;
    if (!c->trusted) trust(c);
    return 0;
}

/* One whole frame from the peer.  Returns -1 when the connection closed. */
static int handle_frame(conn *c, uint8_t type, uint8_t *body, size_t len) {
    char why[600];
    if (c->state == C_AUTH) {
        if (type != FT_AUTH) {
            free(body);
            auth_failed(c, "no secret", "a frame before authentication");
            conn_close(c, "a frame before authentication");
            return -1;
        }
        ebuf out = EBUF_INIT;
        int rc = auth_step(&c->auth, body, len, &out);
        free(body);
        if (rc || write_bytes(c, &out)) {
            snprintf(why, sizeof why, "%s", em_errmsg());
            ebuf_free(&out);
            if (rc == EM_EAUTH)
                auth_failed(c, c->auth.failure == AUTH_WRONG_SECRET ? "wrong secret" : "malformed handshake", why);
            else log_msg(LOG_WARN, comp(&c->o), "connection %s: %s", c->peer, why);
            conn_close(c, why);
            return -1;
        }
        if (c->server) c->challenged = 1;
        if (c->auth.done) opened(c);
        return c->state == C_CLOSING ? -1 : 0;
    }
    if (c->state != C_OPEN) {
        free(body);
        return -1;
    }
    if (type == FT_AUTH) {
        free(body);
        if (!c->secret) auth_failed(c, "no secret", "the peer authenticates, and no secret is set on this side");
        conn_close(c, "an authentication frame out of turn (a secret is set on one side only?)");
        return -1;
    }
    if (c->o.encrypt) {
        if (type != FT_SEALED) {
            free(body);
            conn_close(c, "a frame that is not sealed on an encrypted connection");
            return -1;
        }
        uint8_t itype, *inner;
        size_t ilen;
        int rc = seal_open(&c->rx, &c->auth, body, len, &itype, &inner, &ilen);
        free(body);
        if (rc) {
            snprintf(why, sizeof why, "%s", em_errmsg());
            log_msg(LOG_WARN, comp(&c->o), "connection %s: %s", c->peer, why);
            conn_close(c, why);
            return -1;
        }
        if (!itype) return 0; /* the peer's stream header */
        type = itype;
        body = inner;
        len = ilen;
    } else if (type == FT_SEALED) {
        free(body);
        conn_close(c, "a sealed frame on a connection that is not encrypted");
        return -1;
    }
    if (type == FT_MSGS) return take_batch(c, body, len);
    if (c->cb.on_frame) c->cb.on_frame(c, type, body, len, c->ud);
    else free(body);
    if (c->state == C_CLOSING) return -1;
    if (!c->trusted) trust(c);
    return 0;
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)h;
    size_t n = suggested < 65536 ? suggested : 65536;
    buf->base = malloc(n);
    buf->len = buf->base ? n : 0;
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    conn *c = (conn *)s->data;
    char why[600];
    if (nread < 0) {
        free(buf->base);
        /* A client refuses a server whose proof fails by closing: the
         * server hears only that. */
        if (c->state == C_AUTH && c->server && c->challenged)
            auth_failed(c, "wrong secret", "the peer closed the connection after this side's challenge, which "
                                           "proves the secret: it holds another one");
        if (nread == UV_EOF) conn_close(c, "the peer closed the connection");
        else {
            snprintf(why, sizeof why, "read failed: %s", uv_strerror((int)nread));
            conn_close(c, why);
        }
        return;
    }
    const uint8_t *p = (const uint8_t *)buf->base;
    size_t n = (size_t)nread;
    while (n && c->state != C_CLOSING) {
        size_t used = 0;
        int rc = fr_feed(&c->rd, p, n, &used);
        p += used;
        n -= used;
        if (rc < 0) {
            if (!c->trusted && c->rd.max < c->o.max_frame && c->rd.hlen == FRAME_HEADER && c->rd.len > c->rd.max)
                snprintf(why, sizeof why, "a frame of %zu bytes before authentication (at most %zu until then)",
                         c->rd.len, c->rd.max);
            else snprintf(why, sizeof why, "%s", em_errmsg());
            if (c->state == C_AUTH) {
                auth_failed(c, "malformed handshake", why);
                } else log_msg(LOG_WARN, comp(&c->o), "connection %s: %s", c->peer, why);
            conn_close(c, why);
            break;
        }
        if (rc == 1) {
            uint8_t type;
            size_t len;
            uint8_t *body = fr_take(&c->rd, &type, &len);
            if (handle_frame(c, type, body, len) < 0) break;
        }
    }
    free(buf->base);
}

/* --------------------------------------------------------- setting up */

static void handshake_late(uv_timer_t *t) {
    conn *c = t->data;
    char why[160];
    snprintf(why, sizeof why, "%s within %u ms",
             c->state == C_CONNECTING ? "not connected" : c->state == C_OPEN ? "no first message" : "no handshake",
             c->o.handshake_ms ? c->o.handshake_ms : CONN_HANDSHAKE_MS);
    if (c->state == C_AUTH) {
        auth_failed(c, "malformed handshake", why);
    }
    conn_close(c, why);
}

static conn *conn_new(ioloop *l, const conn_opts *o, const uint8_t *secret, const conn_cb *cb, void *ud) {
    conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->owner.close = owner_close;
    c->loop = l;
    c->o = *o;
    if (!c->o.max_frame) c->o.max_frame = FRAME_MAX_DEFAULT;
    if (secret && o->secret_len) {
        if (!(c->secret = malloc(o->secret_len))) {
            free(c);
            return NULL;
        }
        memcpy(c->secret, secret, o->secret_len);
    }
    c->o.secret = c->secret;
    c->cb = *cb;
    c->ud = ud;
    /* Until trusted, a peer's frames are small (trust raises the limit). */
    fr_init(&c->rd, c->o.max_frame < CONN_PREAUTH_FRAME ? c->o.max_frame : CONN_PREAUTH_FRAME);
    if (uv_tcp_init(iol_uv(l), &c->tcp)) {
        free(c->secret);
        free(c);
        return NULL;
    }
    c->tcp.data = c;
    uv_timer_init(iol_uv(l), &c->hs); /* cannot fail */
    c->hs.data = c;
    c->handles = 2;
    uv_timer_start(&c->hs, handshake_late, c->o.handshake_ms ? c->o.handshake_ms : CONN_HANDSHAKE_MS, 0);
    return c;
}

static void name_peer(conn *c) {
    struct sockaddr_storage sa;
    int len = sizeof sa;
    char host[48] = "?";
    int port = 0;
    if (!uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&sa, &len) && sa.ss_family == AF_INET) {
        uv_ip4_name((struct sockaddr_in *)&sa, host, sizeof host);
        port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
    }
    snprintf(c->peer, sizeof c->peer, "%s:%d", host, port);
}

/* Connected (either side): start reading, and the handshake if any. */
static void start(conn *c) {
    /* Frames are whole messages, written at once: Nagle's algorithm would
     * only hold a small one back until the peer's delayed ACK (40 ms). */
    uv_tcp_nodelay(&c->tcp, 1);
    int rc = uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
    if (rc) {
        char why[128];
        snprintf(why, sizeof why, "cannot read: %s", uv_strerror(rc));
        conn_close(c, why);
        return;
    }
    if (!c->secret) {
        opened(c);
        return;
    }
    c->state = C_AUTH;
    if (c->server) {
        if (auth_server_start(&c->auth, c->secret, c->o.secret_len)) conn_close(c, em_errmsg());
        return;
    }
    ebuf out = EBUF_INIT;
    if (auth_client_start(&c->auth, c->secret, c->o.secret_len, &out) || write_bytes(c, &out)) {
        ebuf_free(&out);
        conn_close(c, em_errmsg());
    }
}

static void on_connected(uv_connect_t *req, int status) {
    conn *c = req->data;
    if (c->state == C_CLOSING) return;
    if (status < 0) {
        char why[160];
        snprintf(why, sizeof why, "cannot connect to %s: %s", c->peer, uv_strerror(status));
        conn_close(c, why);
        return;
    }
    start(c);
}

/* The first IPv4 address of a getaddrinfo answer, with port. */
static int first_ipv4(const struct addrinfo *ai, int port, struct sockaddr_in *sa) {
    for (; ai; ai = ai->ai_next) {
        if (ai->ai_family != AF_INET) continue;
        memcpy(sa, ai->ai_addr, sizeof *sa);
        sa->sin_port = htons((uint16_t)port);
        return 0;
    }
    return -1;
}

static const struct addrinfo ipv4_hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};

int conn_resolve(const char *host, int port, struct sockaddr_in *sa) {
    if (!host || !*host) return em__seterr(EM_EINVAL, "no host");
    if (!uv_ip4_addr(host, port, sa)) return 0;
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, NULL, &ipv4_hints, &ai);
    if (rc) return em__seterr(EM_EINVAL, "cannot resolve host \"%s\": %s", host, gai_strerror(rc));
    rc = first_ipv4(ai, port, sa);
    freeaddrinfo(ai);
    return rc ? em__seterr(EM_EINVAL, "host \"%s\" has no IPv4 address", host) : 0;
}

static int start_connect(conn *c, const struct sockaddr_in *sa) {
    c->creq.data = c;
    return uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr *)sa, on_connected);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *ai) {
    conn *c = req->data;
    struct sockaddr_in sa;
    c->resolving = 0;
    int found = status == 0 && !first_ipv4(ai, c->port, &sa);
    uv_freeaddrinfo(ai);
    if (c->state != C_CLOSING) {
        char why[200];
        int rc = 0;
        if (!found) {
            snprintf(why, sizeof why, "cannot resolve %s: %s", c->peer,
                     status ? uv_strerror(status) : "no IPv4 address");
            conn_close(c, why);
        } else if ((rc = start_connect(c, &sa))) {
            snprintf(why, sizeof why, "cannot connect to %s: %s", c->peer, uv_strerror(rc));
            conn_close(c, why);
        }
    }
    release(c);
}

int conn_connect(ioloop *l, const char *host, int port, const conn_opts *o, const conn_cb *cb, void *ud, conn **out) {
    struct sockaddr_in sa;
    *out = NULL;
    if (!host || !*host) return em__seterr(EM_EINVAL, "connect: no host");
    conn *c = conn_new(l, o, o->secret, cb, ud);
    if (!c) return em__seterr(EM_ENOMEM, "connect: out of memory");
    snprintf(c->peer, sizeof c->peer, "%s:%d", host, port);
    int rc;
    if (!uv_ip4_addr(host, port, &sa)) {
        rc = start_connect(c, &sa);
    } else { /* a host name: resolved on the loop's thread pool, then connected */
        c->gai.data = c;
        c->port = port;
        if (!(rc = uv_getaddrinfo(iol_uv(l), &c->gai, on_resolved, host, NULL, &ipv4_hints))) {
            c->resolving = 1;
            c->handles++;
        }
    }
    if (rc) {
        c->cb.on_close = NULL; /* the caller hears it from the return code */
        conn_close(c, uv_strerror(rc));
        return em__seterr(EM_EIO, "connect to %s:%d: %s", host, port, uv_strerror(rc));
    }
    *out = c;
    return 0;
}

static void refused_closed(uv_handle_t *h) { free(h); }

/* At the cap of connections not trusted yet: accept the next one and
 * close it at once (the backlog does not fill with it), with a warning at
 * most once a second. */
static void refuse_one(listener *ls, uv_stream_t *server) {
    uv_tcp_t *t = malloc(sizeof *t);
    if (!t) return;
    if (uv_tcp_init(iol_uv(ls->loop), t)) {
        free(t);
        return;
    }
    t->data = NULL;
    uv_accept(server, (uv_stream_t *)t);
    uv_close((uv_handle_t *)t, refused_closed);
    ls->refused++;
    uint64_t now = uv_now(iol_uv(ls->loop));
    if (ls->refused_ms && now - ls->refused_ms < 1000) return;
    log_msg(LOG_WARN, comp(&ls->o),
            "listener %s: %d connections have not authenticated yet: %llu new one%s refused", ls->addr,
            ls->npending, (unsigned long long)ls->refused, ls->refused == 1 ? "" : "s");
    ls->refused = 0;
    ls->refused_ms = now;
}

static void on_accept(uv_stream_t *server, int status) {
    listener *ls = server->data;
    if (status < 0) {
        log_msg(LOG_WARN, comp(&ls->o), "listener %s: accept failed: %s", ls->addr, uv_strerror(status));
        return;
    }
    if (ls->npending >= ls->preauth_max) {
        refuse_one(ls, server);
        return;
    }
    conn *c = conn_new(ls->loop, &ls->o, ls->secret, &ls->cb, ls->ud);
    if (!c) {
        log_msg(LOG_ERROR, comp(&ls->o), "listener %s: out of memory for a connection", ls->addr);
        return;
    }
    c->server = 1;
    c->ls = ls;
    c->pnext = ls->pending;
    if (ls->pending) ls->pending->pprev = c;
    ls->pending = c;
    ls->npending++;
    if (uv_accept(server, (uv_stream_t *)&c->tcp)) {
        conn_close(c, "accept failed");
        return;
    }
    name_peer(c);
    start(c);
}

static void listener_closed(uv_handle_t *h) {
    listener *ls = h->data;
    if (ls->secret) {
        sodium_memzero(ls->secret, ls->o.secret_len);
        free(ls->secret);
    }
    free(ls);
}

void listener_close(listener *ls) {
    while (ls->pending) unlist(ls->pending); /* they outlive it */
    if (!uv_is_closing((uv_handle_t *)&ls->tcp)) uv_close((uv_handle_t *)&ls->tcp, listener_closed);
}

static void listener_owner_close(void *self, const char *reason) {
    (void)reason;
    listener_close(self);
}

int conn_listen(ioloop *l, const char *host, int port, const conn_opts *o, const conn_cb *cb, void *ud,
                listener **out, int *port_out) {
    struct sockaddr_in sa;
    *out = NULL;
    if (conn_resolve(host, port, &sa)) return em__preferr(EM_EINVAL, "listen on %s:%d", host, port);
    listener *ls = calloc(1, sizeof *ls);
    if (!ls) return em__seterr(EM_ENOMEM, "listen: out of memory");
    ls->owner.close = listener_owner_close;
    ls->loop = l;
    ls->o = *o;
    ls->cb = *cb;
    ls->ud = ud;
    ls->preauth_max = conn_fd_share(o->preauth_max > 0 ? o->preauth_max : CONN_PREAUTH_MAX);
    if (o->secret && o->secret_len) {
        if (!(ls->secret = malloc(o->secret_len))) {
            free(ls);
            return em__seterr(EM_ENOMEM, "listen: out of memory");
        }
        memcpy(ls->secret, o->secret, o->secret_len);
    }
    ls->o.secret = ls->secret;
    int rc = uv_tcp_init(iol_uv(l), &ls->tcp);
    if (rc) {
        free(ls->secret);
        free(ls);
        return em__seterr(EM_EIO, "listen on %s:%d: %s", host, port, uv_strerror(rc));
    }
    ls->tcp.data = ls;
    rc = uv_tcp_bind(&ls->tcp, (const struct sockaddr *)&sa, 0);
    if (!rc) rc = uv_listen((uv_stream_t *)&ls->tcp, 128, on_accept);
    if (rc) {
        listener_close(ls);
        return em__seterr(EM_EIO, "listen on %s:%d: %s", host, port, uv_strerror(rc));
    }
    struct sockaddr_storage got;
    int len = sizeof got;
    int bound = port;
    if (!uv_tcp_getsockname(&ls->tcp, (struct sockaddr *)&got, &len) && got.ss_family == AF_INET)
        bound = ntohs(((struct sockaddr_in *)&got)->sin_port);
    snprintf(ls->addr, sizeof ls->addr, "%s:%d", host, bound);
    if (port_out) *port_out = bound;
    *out = ls;
    return 0;
}
