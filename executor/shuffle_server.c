/*
 * shuffle_server.c -- serving segments of map outputs (see
 * shuffle_server.h).  Everything runs on the loop's thread.  Answers go
 * out in the order the requests came: a segment a chunk at a time, with
 * at most SERVE_HIGH bytes queued on the connection and the rest as it
 * drains, straight from the file (conn_send_file's sendfile) where the
 * connection is not encrypted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ember.h"
#include "err.h"
#include "frame.h"
#include "msg.h"
#include "shuffle.h"
#include "shuffle_server.h"

#define CHUNK ((size_t)256 << 10)     /* a segment's chunks: what a full socket leaves to copy */
#define SERVE_HIGH ((size_t)4 << 20)  /* a segment's bytes queued per connection at most */
#define DIR_MAX 900
#define APP_MAX 256                   /* msg.c's bound on an app id */

/* One answer to give, in the order the requests came. */
typedef struct sjob {
    struct sjob *next;
    msg_val rid;
    int fd;              /* -1: an error answer */
    uint64_t off, end;
    int code;
    char err[400];
    int started;
} sjob;

/* A client's connection: the application it opened and its answers still
 * to send. */
typedef struct sconn {
    struct sconn *next;
    conn *c;
    size_t chunk;        /* bytes per chunk frame */
    int opened;          /* shuffle_open came */
    int code;            /* < 0: the application is not served here */
    char dir[DIR_MAX];   /* its outputs' directory (code 0), or the reason */
    sjob *head, *tail;
} sconn;

struct shuffle_server {
    listener *ls;
    ss_config cfg;
    size_t chunk;
    sconn *conns;
};

static sconn *sconn_of(shuffle_server *s, conn *c, int make) {
    for (sconn *k = s->conns; k; k = k->next)
        if (k->c == c) return k;
    if (!make) return NULL;
    sconn *k = calloc(1, sizeof *k);
    if (!k) return NULL;
    k->c = c;
    k->chunk = s->chunk;
    k->next = s->conns;
    s->conns = k;
    return k;
}

static void sjob_pop(sconn *k) {
    sjob *j = k->head;
    k->head = j->next;
    if (!k->head) k->tail = NULL;
    if (j->fd >= 0) close(j->fd);
    free(j);
}

/* Send what fits; ask to be called again when the connection drains. */
static void pump(conn *c, void *arg) {
    sconn *k = arg;
    int rc = 0;
    while (k->head && !rc && conn_queued(c) < SERVE_HIGH) {
        sjob *j = k->head;
        if (!j->started) {
            j->started = 1;
            if (j->fd < 0) {
                msg_val f[] = {msg_i(j->code), msg_str(j->err)};
                rc = conn_send_msg(c, M_ERROR, f, 2);
                if (!rc) sjob_pop(k);
            } else {
                msg_val f[] = {j->rid, msg_u(j->end - j->off)};
                rc = conn_send_msg(c, M_SEGMENT, f, 2);
            }
            continue;
        }
        if (j->off < j->end) {
            size_t want = j->end - j->off < k->chunk ? (size_t)(j->end - j->off) : k->chunk;
            if (!(rc = conn_send_file(c, FT_CHUNK, j->fd, j->off, want))) j->off += want;
            continue;
        }
        rc = conn_send(c, FT_CHUNK, NULL, 0); /* the end */
        if (!rc) sjob_pop(k);
    }
    /* Half a segment was sent: the reader cannot be told apart from a good
     * one but by closing. */
    if (rc) conn_close(c, em_errmsg());
    else if (k->head) conn_on_drain(c, pump, k);
}

/* shuffle_open: which application's outputs this connection reads. */
static void open_app(shuffle_server *s, sconn *k, const msg *m) {
    char app[APP_MAX + 1];
    size_t n = m->f[0].len < APP_MAX ? m->f[0].len : APP_MAX;
    memcpy(app, m->f[0].p, n);
    app[n] = 0;
    k->opened = 1;
    k->code = 0;
    if (strlen(app) != m->f[0].len) k->code = em__seterr(EM_EINVAL, "application id with a NUL byte");
    else k->code = s->cfg.dir_of(s->cfg.ctx, app, k->dir, sizeof k->dir);
    if (k->code) snprintf(k->dir, sizeof k->dir, "%s", em_errmsg());
}

static void serve_frame(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud) {
    shuffle_server *s = ud;
    msg m;
    char why[600];
    if (conn_take_msg(c, type, body, len, &m)) return;
    sconn *k = sconn_of(s, c, 1);
    const char *bad = NULL;
    if (!k) bad = "the shuffle server is out of memory";
    else if (m.tag == M_SHUFFLE_OPEN && k->opened) bad = "a second shuffle_open";
    else if (m.tag == M_FETCH_SEGMENT && !k->opened) bad = "a fetch_segment before shuffle_open";
    else if (m.tag != M_SHUFFLE_OPEN && m.tag != M_FETCH_SEGMENT) {
        snprintf(why, sizeof why, "a %s message, which the shuffle server does not take", msg_name(m.tag));
        bad = why;
    } else if (m.tag == M_FETCH_SEGMENT && s->cfg.drop_fetches > 0) {
        s->cfg.drop_fetches--;
        if (s->cfg.dropped) s->cfg.dropped(s->cfg.ctx);
        bad = "dropped a segment request (ember.test.faults dropfetch)";
    }
    if (bad) {
        msg_free(&m);
        free(body);
        conn_close(c, bad);
        return;
    }
    if (m.tag == M_SHUFFLE_OPEN) {
        open_app(s, k, &m);
        msg_free(&m);
        free(body);
        return;
    }
    sjob *j = calloc(1, sizeof *j);
    if (!j) {
        msg_free(&m);
        free(body);
        conn_close(c, "the shuffle server is out of memory");
        return;
    }
    j->rid = m.f[0];
    if (k->code) {
        j->fd = -1;
        j->code = k->code;
        snprintf(j->err, sizeof j->err, "%.399s", k->dir);
    } else {
        j->fd = shuffle_locate(k->dir, (uint32_t)m.f[1].u, (uint32_t)m.f[2].u, m.f[3].u, (int)m.f[4].u, &j->off,
                               &j->end);
        if (j->fd < 0) {
            j->code = j->fd;
            snprintf(j->err, sizeof j->err, "%s", em_errmsg());
            j->fd = -1;
        }
    }
    if (k->tail) k->tail->next = j;
    else k->head = j;
    k->tail = j;
    msg_free(&m);
    free(body);
    if (k->head == j) pump(c, k); /* else it waits for those before it */
}

static void serve_closed(conn *c, const char *reason, void *ud) {
    (void)reason;
    shuffle_server *s = ud;
    for (sconn **pp = &s->conns; *pp; pp = &(*pp)->next)
        if ((*pp)->c == c) {
            sconn *k = *pp;
            *pp = k->next;
            while (k->head) sjob_pop(k);
            free(k);
            return;
        }
}

static const conn_cb serve_cb = {NULL, serve_frame, serve_closed};

int ss_start(ioloop *l, const char *host, int port, const conn_opts *co, const ss_config *cfg, shuffle_server **out,
             int *port_out) {
    shuffle_server *s = calloc(1, sizeof *s);
    if (!s) return em__seterr(EM_ENOMEM, "shuffle server: out of memory");
    s->cfg = *cfg;
    s->chunk = co->max_frame - 64 < CHUNK ? co->max_frame - 64 : CHUNK; /* room for sealing */
    int rc = conn_listen(l, host, port, co, &serve_cb, s, &s->ls, port_out);
    if (rc) {
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

void ss_free(shuffle_server *s) {
    if (!s) return;
    while (s->conns) {
        sconn *k = s->conns;
        s->conns = k->next;
        while (k->head) sjob_pop(k);
        free(k);
    }
    free(s);
}
