/*
 * shuffle_fetch.c -- fetching map output segments from other executors'
 * shuffle servers (see shuffle_fetch.h): the requests, their connections,
 * the frames of the answers, retries and the silence timeout.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bigbuf.h"
#include "buf.h"
#include "conn.h"
#include "ember.h"
#include "err.h"
#include "events.h"
#include "frame.h"
#include "log.h"
#include "msg.h"
#include "runner.h"
#include "shuffle_fetch.h"

/* SF_TIMEOUT_S as text, for the reason a silent connection is closed with. */
#define SF_STR_(v) #v
#define SF_STR(v) SF_STR_(v)
#define FETCH_TIMEOUT_TEXT SF_STR(SF_TIMEOUT_S) " s"

/* A segment fetch from another executor's shuffle server. */
typedef struct freq {
    struct freq *next;
    shuffle_fetch *sf;
    char host[64];
    int port;
    uint64_t rid;
    uint32_t shuffle, map;
    uint64_t attempt;
    uint64_t len, got;   /* the segment's length, as its M_SEGMENT says, and
                            the bytes that came */
    int reduce;
    ebuf seg;            /* the segment's len bytes as they come (bigbuf.h:
                            a big one reuses the pages of the last) */
    int started;         /* its M_SEGMENT came */
    int no_room;         /* no memory for its len bytes: its chunks are
                            let go, and it fails when they end */
    int done, rc;        /* sf->mu */
    int transient;       /* sf->mu: it failed because its connection did (worth a retry) */
    int dropped;         /* sf->mu: nobody waits; whoever ends it frees it */
    int conn_lost;       /* sf->mu: its connection closed or failed with it
                            unanswered, and it is the one request on it
                            that counts the connection (runner_count_fetch) */
    uint64_t progress_us;  /* atomic: the last frame on its connection */
    char err[512];
    pthread_cond_t cv;
} freq;

/* A connection to another executor's shuffle server, with its requests in
 * the order they were sent (the server answers in that order). */
typedef struct sf_conn {
    struct sf_conn *next;
    conn *c;
    char key[80];
    int open;
    freq *head, *tail;   /* sent (or waiting for open), oldest first */
} fconn;

static fconn *fconn_of(shuffle_fetch *sf, conn *c) {
    for (fconn *f = sf->conns; f; f = f->next)
        if (f->c == c) return f;
    return NULL;
}

static void freq_free(freq *r) {
    bb_free(&r->seg);
    pthread_cond_destroy(&r->cv);
    free(r);
}

/* End request r with rc; transient: it failed with its connection, and is
 * worth sending again on a new one. */
static void freq_finish(freq *r, int rc, int transient, const char *why) {
    pthread_mutex_lock(&r->sf->mu);
    int dropped = r->dropped;
    r->done = 1;
    r->rc = rc;
    r->transient = transient;
    if (why) snprintf(r->err, sizeof r->err, "%.*s", (int)sizeof r->err - 1, why);
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->sf->mu);
    if (dropped) freq_free(r);
}

static void freq_end(freq *r, int rc, const char *why) { freq_finish(r, rc, 0, why); }

static void fetch_send(fconn *f, freq *r) {
    msg_val v[] = {msg_u(r->rid), msg_u(r->shuffle), msg_u(r->map), msg_u(r->attempt), msg_u((uint64_t)r->reduce)};
    if (conn_send_msg(f->c, M_FETCH_SEGMENT, v, 5)) conn_close(f->c, em_errmsg());
}

static void fetch_open(conn *c, void *ud) {
    shuffle_fetch *sf = ud;
    fconn *f = fconn_of(sf, c);
    if (!f) return;
    f->open = 1;
    msg_val a[] = {msg_str(sf->app)};
    if (conn_send_msg(c, M_SHUFFLE_OPEN, a, 1)) {
        conn_close(c, em_errmsg());
        return;
    }
    for (freq *r = f->head; r; r = r->next) fetch_send(f, r);
}

static void fetch_closed(conn *c, const char *reason, void *ud) {
    shuffle_fetch *sf = ud;
    for (fconn **pp = &sf->conns; *pp; pp = &(*pp)->next)
        if ((*pp)->c == c) {
            fconn *f = *pp;
            *pp = f->next;
            pthread_mutex_lock(&sf->mu); /* the connection counts once, for a request someone waits on */
            freq *w = f->head;
            while (w && w->dropped) w = w->next;
            if (w) w->conn_lost = 1;
            pthread_mutex_unlock(&sf->mu);
            char why[600];
            for (freq *r = f->head, *n; r; r = n) {
                n = r->next;
                snprintf(why, sizeof why, "executor at %s: %s", f->key, reason);
                freq_finish(r, EM_EFETCH, 1, why);
            }
            free(f);
            return;
        }
}

static void fetch_frame(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud) {
    shuffle_fetch *sf = ud;
    fconn *f = fconn_of(sf, c);
    freq *r = f ? f->head : NULL;
    char why[700];
    msg m;
    memset(&m, 0, sizeof m);
    if (!r) {
        conn_close(c, "a frame no fetch asked for");
        goto out;
    }
    uint64_t now = ev_now_us();
    for (freq *q = r; q; q = q->next) __atomic_store_n(&q->progress_us, now, __ATOMIC_RELAXED);
    if (type == FT_CHUNK) {
        if (!r->started) {
            conn_close(c, "a chunk before its segment's header");
            goto out;
        }
        if (!len) { /* the end */
            f->head = r->next;
            if (!f->head) f->tail = NULL;
            if (r->no_room) {
                snprintf(why, sizeof why, "no memory for the %llu bytes of shuffle %u map %u from executor at %s",
                         (unsigned long long)r->len, r->shuffle, r->map, f->key);
                freq_end(r, EM_EFETCH, why);
            } else if (r->got != r->len) {
                snprintf(why, sizeof why, "executor at %s sent %llu of the %llu bytes of shuffle %u map %u", f->key,
                         (unsigned long long)r->got, (unsigned long long)r->len, r->shuffle, r->map);
                freq_end(r, EM_EFETCH, why);
            } else freq_end(r, 0, NULL);
            goto out;
        }
        if (r->got + len > r->len) {
            conn_close(c, "a segment longer than announced");
            goto out;
        }
        if (!r->no_room) memcpy(r->seg.p + r->got, body, len); /* room for r->len bytes since M_SEGMENT */
        r->got += len;
        goto out;
    }
    if (type != FT_MSG || msg_decode(&m, body, len)) {
        conn_close(c, type != FT_MSG ? "an unexpected frame" : em_errmsg());
        goto out;
    }
    if (m.tag == M_SEGMENT && !r->started && m.f[0].u == r->rid) {
        /* The server's length is the segment's: the tracker's is an
         * estimate (scheduler/mapout.h).  The bytes are checked as they
         * are decoded, block by block (blockfile.h's CRCs).  A length this
         * process cannot hold fails the request, not the connection. */
        r->len = m.f[1].u;
        r->no_room = r->len > SIZE_MAX / 2 || bb_reserve(&r->seg, (size_t)r->len) != 0;
        r->started = 1;
    } else if (m.tag == M_ERROR && !r->started) {
        f->head = r->next;
        if (!f->head) f->tail = NULL;
        snprintf(why, sizeof why, "executor at %s: %.*s", f->key, (int)m.f[1].len, (const char *)m.f[1].p);
        freq_end(r, EM_EFETCH, why);
    } else {
        snprintf(why, sizeof why, "a %s message out of turn", msg_name(m.tag));
        conn_close(c, why);
    }
out:
    msg_free(&m);
    free(body);
}

static const conn_cb fetch_cb = {fetch_open, fetch_frame, fetch_closed};

static void fetch_start(void *arg) {
    freq *r = arg;
    shuffle_fetch *sf = r->sf;
    char key[80];
    snprintf(key, sizeof key, "%s:%d", r->host, r->port);
    fconn *f = sf->conns;
    while (f && strcmp(f->key, key)) f = f->next;
    if (!f) {
        if (!(f = calloc(1, sizeof *f))) {
            freq_end(r, EM_ENOMEM, "out of memory");
            return;
        }
        snprintf(f->key, sizeof f->key, "%s", key);
        f->next = sf->conns;
        sf->conns = f;
        if (conn_connect(sf->l, r->host, r->port, &sf->co, &fetch_cb, sf, &f->c)) {
            sf->conns = f->next;
            free(f);
            char why[600];
            snprintf(why, sizeof why, "executor at %s: %s", key, em_errmsg());
            r->conn_lost = 1; /* published by freq_finish's lock */
            freq_finish(r, EM_EFETCH, 1, why);
            return;
        }
    }
    r->next = NULL;
    if (f->tail) f->tail->next = r;
    else f->head = r;
    f->tail = r;
    if (f->open) fetch_send(f, r);
}

/* A request to give up on the connection of request rid (fetch_abort's
 * argument, the poster's to allocate and the loop's to free). */
typedef struct abort_req {
    shuffle_fetch *sf;
    uint64_t rid;
} abort_req;

/* The peer has been silent too long: close the connection request a->rid
 * waits on (its close fails every request on it, that one too). */
static void fetch_abort(void *arg) {
    abort_req *a = arg;
    for (fconn *f = a->sf->conns; f; f = f->next)
        for (freq *q = f->head; q; q = q->next)
            if (q->rid == a->rid) {
                conn_close(f->c, "fetch given up: no answer in " FETCH_TIMEOUT_TEXT);
                free(a);
                return;
            }
    free(a);
}

/* Post fetch_abort for request rid: 0, or nonzero when it could not be
 * (out of memory, the loop stopping). */
static int post_abort(shuffle_fetch *sf, uint64_t rid) {
    abort_req *a = malloc(sizeof *a);
    if (!a) return 1;
    a->sf = sf;
    a->rid = rid;
    if (iol_post(sf->l, fetch_abort, a)) {
        free(a);
        return 1;
    }
    return 0;
}

/* sr_fetcher's begin: the segment goes into a buffer of the length its
 * server announces, which the reader decodes in place (no file between the
 * socket and the decoder). */
static void *fetch_begin(void *fctx, const char *loc, uint32_t shuffle, uint32_t map, uint64_t attempt, int reduce) {
    shuffle_fetch *sf = fctx;
    const char *hp = loc + 8, *colon = strchr(hp, ':');
    char *end;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || (size_t)(colon - hp) >= sizeof ((freq *)0)->host || port <= 0 || port > 65535 || *end != '/')
        return em__seterr(EM_EFETCH, "shuffle %u map %u: bad location \"%s\"", shuffle, map, loc), NULL;
    freq *r = calloc(1, sizeof *r);
    if (!r) return em__seterr(EM_EFETCH, "shuffle %u map %u: out of memory", shuffle, map), NULL;
    r->sf = sf;
    memcpy(r->host, hp, (size_t)(colon - hp));
    r->port = (int)port;
    r->shuffle = shuffle;
    r->map = map;
    r->attempt = attempt;
    r->reduce = reduce;
    r->progress_us = ev_now_us();
    r->seg = (ebuf)EBUF_INIT;
    pthread_cond_init(&r->cv, NULL);
    pthread_mutex_lock(&sf->mu);
    r->rid = sf->next_rid++;
    pthread_mutex_unlock(&sf->mu);
    if (iol_post(sf->l, fetch_start, r)) {
        em__seterr(EM_EFETCH, "shuffle %u map %u: the executor is stopping", shuffle, map);
        freq_free(r);
        return NULL;
    }
    return r;
}

/* sr_fetcher's drop: whoever ends it frees it (the loop, when its bytes
 * have come; here, if they have, and always after a successful end). */
static void fetch_drop(void *fctx, void *h) {
    shuffle_fetch *sf = fctx;
    freq *r = h;
    pthread_mutex_lock(&sf->mu);
    int done = r->done;
    r->dropped = 1;
    pthread_mutex_unlock(&sf->mu);
    if (done) freq_free(r);
}

/* Wait for request r to end.  0 when it did (r->rc says how); EM_ECANCELED
 * when the attempt was killed meanwhile (r is dropped then).  *aborted:
 * its connection was closed for SF_TIMEOUT_S of silence. */
static int fetch_wait(shuffle_fetch *sf, freq *r, int *aborted) {
    uint64_t since = ev_now_us();
    pthread_mutex_lock(&sf->mu);
    while (!r->done) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 200 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&r->cv, &sf->mu, &until);
        if (r->done) break;
        if (runner_cancelled()) {
            pthread_mutex_unlock(&sf->mu);
            em__seterr(EM_ECANCELED, "shuffle %u map %u: the task was killed while fetching", r->shuffle, r->map);
            fetch_drop(sf, r);
            return EM_ECANCELED;
        }
        uint64_t p = __atomic_load_n(&r->progress_us, __ATOMIC_RELAXED), now = ev_now_us();
        if (!*aborted && now - (p > since ? p : since) > (uint64_t)SF_TIMEOUT_S * 1000000u) {
            *aborted = 1;
            uint64_t rid = r->rid;
            pthread_mutex_unlock(&sf->mu);
            if (post_abort(sf, rid)) *aborted = 0;
            pthread_mutex_lock(&sf->mu);
        }
    }
    pthread_mutex_unlock(&sf->mu);
    return 0;
}

/* Sleep ms in steps, returning early (nonzero) if the attempt is killed. */
static int retry_pause(uint64_t ms) {
    for (uint64_t slept = 0; slept < ms; slept += 20) {
        if (runner_cancelled()) return 1;
        usleep(20 * 1000);
    }
    return runner_cancelled();
}

/* sr_fetcher's end.  The loop ends every request it holds (a closed
 * connection fails them).  A killed attempt drops its request and returns
 * at once; a peer silent for SF_TIMEOUT_S (a host gone without a word)
 * has its connection closed, which ends this request and every other on
 * it.  A request that failed with its connection (refused, reset) is sent
 * again on a new one, up to sf->retries times, sf->retry_ms apart; then it
 * is a fetch failure.  Each retry, and each connection that failed under
 * it, is counted in the attempt's result (runner_count_fetch). */
static int fetch_end(void *fctx, void *h, const uint8_t **p, uint64_t *len) {
    shuffle_fetch *sf = fctx;
    freq *r = h;
    int aborted = 0;
    for (int tries = 0;; tries++) {
        if (fetch_wait(sf, r, &aborted)) return EM_ECANCELED;
        pthread_mutex_lock(&sf->mu);
        int again = r->rc == EM_EFETCH && r->transient && !aborted && tries < sf->retries, lost = r->conn_lost;
        r->conn_lost = 0;
        pthread_mutex_unlock(&sf->mu);
        runner_count_fetch(again, lost);
        if (!again) break;
        log_msg(LOG_WARN, "executor", "shuffle %u map %u: %s; retrying in %llu ms (%d of %d)", r->shuffle, r->map,
                r->err, (unsigned long long)sf->retry_ms, tries + 1, sf->retries);
        if (retry_pause(sf->retry_ms)) {
            em__seterr(EM_ECANCELED, "shuffle %u map %u: the task was killed while fetching", r->shuffle, r->map);
            freq_free(r); /* ended, and held by no connection */
            return EM_ECANCELED;
        }
        /* Chunks are written at their offsets: the new answer overwrites
         * whatever part of the old one came. */
        pthread_mutex_lock(&sf->mu);
        r->done = r->rc = r->transient = r->started = r->no_room = 0;
        r->got = r->len = 0;
        r->err[0] = 0;
        r->rid = sf->next_rid++;
        pthread_mutex_unlock(&sf->mu);
        __atomic_store_n(&r->progress_us, ev_now_us(), __ATOMIC_RELAXED);
        if (iol_post(sf->l, fetch_start, r)) {
            em__seterr(EM_EFETCH, "shuffle %u map %u: the executor is stopping", r->shuffle, r->map);
            freq_free(r);
            return EM_EFETCH;
        }
    }
    int rc = r->rc;
    uint32_t shuffle = r->shuffle, map = r->map;
    int reduce = r->reduce;
    if (rc) {
        if (rc == EM_ENOMEM) em__seterr(EM_ENOMEM, "shuffle %u map %u: out of memory", shuffle, map);
        else
            em__seterr(EM_EFETCH, "shuffle %u map %u reduce partition %d: %s", shuffle, map, reduce,
                       r->err[0] ? r->err : "the fetch failed");
        freq_free(r);
        return rc == EM_ENOMEM ? EM_ENOMEM : EM_EFETCH;
    }
    *p = r->seg.p; /* r stays, done, until the reader drops it */
    *len = r->len;
    return 0;
}

void sf_init(shuffle_fetch *sf, ioloop *l, const conn_opts *co, const char *app, int retries, uint64_t retry_ms) {
    memset(sf, 0, sizeof *sf);
    sf->l = l;
    sf->co = *co;
    sf->app = app;
    sf->retries = retries;
    sf->retry_ms = retry_ms;
    pthread_mutex_init(&sf->mu, NULL);
    sf->next_rid = 1;
}

void sf_fetcher(shuffle_fetch *sf, sr_fetcher *fetcher) {
    fetcher->begin = fetch_begin;
    fetcher->end = fetch_end;
    fetcher->drop = fetch_drop;
    fetcher->ctx = sf;
}
