/*
 * executor.c -- the executor process of cluster mode (see executor.h).
 *
 * Threads: the io loop (every connection: the driver's, the shuffle
 * server's clients, the connections this executor opens to fetch
 * segments), N task threads, and main, which waits for the end.  Task
 * threads take attempts from one FIFO under x.mu; what they need from the
 * network (a commit answer, a broadcast, a segment) they ask the loop for
 * with iol_post and wait on their request's condition variable.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "bcast.h"
#include "bigbuf.h"
#include "blockstore.h"
#include "conf.h"
#include "conn.h"
#include "ember.h"
#include "err.h"
#include "events.h"
#include "executor.h"
#include "faults.h"
#include "fnref.h"
#include "frame.h"
#include "log.h"
#include "msg.h"
#include "netconf.h"
#include "runner.h"
#include "shuffle.h"
#include "shuffle_server.h"
#include "srcdata.h"
#include "taskresult.h"

#define CHUNK ((size_t)256 << 10) /* a result's parts: CHUNK * 4 */
#define FETCH_TIMEOUT_S 120      /* Spark's spark.network.timeout */
#define FETCH_TIMEOUT_TEXT "120 s"
#define SERVE_HIGH ((size_t)4 << 20) /* a result's bytes queued on the driver's connection at most */

/* One attempt the driver launched. */
typedef struct xtask {
    struct xtask *next, *prev;
    uint64_t id;
    uint8_t *desc;
    size_t len;
    task_ctl ctl;
    uint64_t start_us;
} xtask;

/* A task thread's question to the driver (commit, broadcast). */
typedef struct dreq {
    struct dreq *next;
    uint64_t id;
    int tag;             /* M_ASK_COMMIT, M_FETCH_BCAST or M_FETCH_SOURCE */
    msg_val f[4];
    int done, rc;
    int granted, found;  /* the answer */
    uint8_t *data;       /* a broadcast's value */
    size_t len;
    ebuf src;            /* parallelized records, as their parts come (or the reason) */
    uint64_t src_len;    /* their length, once the first part came */
    int src_started;
    pthread_cond_t cv;
} dreq;

/* A segment fetch from another executor's shuffle server. */
typedef struct freq {
    struct freq *next;
    char host[64];
    int port;
    uint64_t rid;
    uint32_t shuffle, map;
    uint64_t attempt, len, got;
    int reduce;
    ebuf seg;            /* the segment's len bytes as they come (bigbuf.h:
                            a big one reuses the pages of the last) */
    int started;         /* its M_SEGMENT came */
    int done, rc;        /* x.mu */
    int transient;       /* x.mu: it failed because its connection did (worth a retry) */
    int dropped;         /* x.mu: nobody waits; whoever ends it frees it */
    uint64_t progress_us;  /* atomic: the last frame on its connection */
    char err[512];
    pthread_cond_t cv;
} freq;

/* A connection to another executor's shuffle server, with its requests in
 * the order they were sent (the server answers in that order). */
typedef struct fconn {
    struct fconn *next;
    conn *c;
    char key[80];
    int open;
    freq *head, *tail;   /* sent (or waiting for open), oldest first */
} fconn;

typedef struct executor {
    ioloop *l;
    conn_opts co;
    netconf nc;
    conn *driver;
    shuffle_server *server;
    char host[64], dhost[64];
    int dport, port, id, cores;
    char dir[900], self[128];
    char app[257];
    /* The worker's shuffle service, when the application uses it
     * (ember.shuffle.service.enabled and a worker that runs one): map
     * outputs go to shuffle_dir, the application's directory the worker
     * serves, and are found at "ember://HOST:service_port"; else they are
     * this executor's own, in dir, served by its own server. */
    int service_port;
    char shuffle_dir[900];
    blockstore *store;
    exec_env env;
    sr_fetcher fetcher;
    pthread_mutex_t mu;
    pthread_cond_t work, ended;
    xtask *qhead, *qtail, *running;
    dreq *reqs;          /* waiting for the driver's answer (mu) */
    uint64_t next_req;
    fconn *fconns;       /* the loop's thread only */
    int fetch_retries;   /* ember.shuffle.io.maxRetries */
    int64_t drop_fetches;    /* requests to drop (ember.test.faults dropfetch) */
    uint64_t fetch_retry_ms; /* ember.shuffle.io.retryWait */
    int stop, status;
    int registered;      /* the driver's connection opened */
    iol_timer hb;        /* the heartbeat (the loop's) */
    uint64_t hb_ms;      /* ember.executor.heartbeatInterval */
    char url[80];
    char why[512];
    pthread_t *threads;
} executor;

static executor x;

/* The end of the executor: main returns status. */
static void finish(int status, const char *why) {
    pthread_mutex_lock(&x.mu);
    if (!x.stop) {
        x.stop = 1;
        x.status = status;
        snprintf(x.why, sizeof x.why, "%s", why);
        pthread_cond_broadcast(&x.ended);
        pthread_cond_broadcast(&x.work);
    }
    pthread_mutex_unlock(&x.mu);
}

/* --------------------------------------------------- questions to the driver */

static void send_req(void *arg) {
    dreq *r = arg;
    int n = r->tag == M_ASK_COMMIT ? 4 : r->tag == M_FETCH_SOURCE ? 3 : 2;
    if (!x.driver || conn_send_msg(x.driver, r->tag, r->f, n)) {
        pthread_mutex_lock(&x.mu);
        r->done = 1;
        r->rc = em__seterr(EM_EIO, "executor %d: the driver's connection is gone", x.id);
        pthread_cond_signal(&r->cv);
        pthread_mutex_unlock(&x.mu);
    }
}

/* Ask the driver and wait for its answer (x.mu not held). */
static int ask_driver(dreq *r) {
    pthread_cond_init(&r->cv, NULL);
    pthread_mutex_lock(&x.mu);
    r->id = x.next_req++;
    r->f[0] = msg_u(r->id);
    r->next = x.reqs;
    x.reqs = r;
    pthread_mutex_unlock(&x.mu);
    int rc = iol_post(x.l, send_req, r);
    pthread_mutex_lock(&x.mu);
    if (rc) r->done = 1, r->rc = rc;
    while (!r->done && !x.stop) pthread_cond_wait(&r->cv, &x.mu);
    for (dreq **pp = &x.reqs; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    if (!r->done) r->rc = em__seterr(EM_EIO, "executor %d: stopping", x.id);
    pthread_mutex_unlock(&x.mu);
    pthread_cond_destroy(&r->cv);
    return r->rc;
}

static int ask_commit(void *c, uint32_t stage, int32_t partition, uint64_t attempt) {
    (void)c;
    dreq r;
    memset(&r, 0, sizeof r);
    r.tag = M_ASK_COMMIT;
    r.f[1] = msg_u(stage);
    r.f[2] = msg_u((uint64_t)partition);
    r.f[3] = msg_u(attempt);
    return ask_driver(&r) ? 0 : r.granted;
}

static int fetch_bcast(uint64_t id, void **data, size_t *len) {
    dreq r;
    memset(&r, 0, sizeof r);
    r.tag = M_FETCH_BCAST;
    r.f[1] = msg_u(id);
    int rc = ask_driver(&r);
    if (rc) return rc;
    if (!r.found) {
        /* The driver's reason, when it gave one. */
        int given = r.len > 0 && r.len < 400;
        em__seterr(EM_ENOENT, "broadcast %llu: %.*s", (unsigned long long)id, given ? (int)r.len : 0,
                   given ? (const char *)r.data : "");
        if (!given) em__seterr(EM_ENOENT, "broadcast %llu: the driver no longer has it", (unsigned long long)id);
        free(r.data);
        return EM_ENOENT;
    }
    *data = r.data;
    *len = r.len;
    return 0;
}

/* Partition part of parallelized records id (srcdata.h), from the driver:
 * its parts land in one buffer allocated at the full length when the first
 * comes, which the task then owns (and may keep as a cached block). */
static int fetch_source(uint64_t id, int part, uint8_t **data, size_t *len) {
    dreq r;
    memset(&r, 0, sizeof r);
    r.tag = M_FETCH_SOURCE;
    r.f[1] = msg_u(id);
    r.f[2] = msg_u((uint64_t)part);
    int rc = ask_driver(&r);
    if (rc) /* said again on this thread: the loop's thread may have said it */
        em__seterr(rc, "fetching partition %d of parallelized records %llu from the driver: %s", part,
                   (unsigned long long)id,
                   rc == EM_ENOMEM   ? "out of memory"
                   : rc == EM_EPROTO ? "its parts do not add up"
                                     : "the driver's connection is gone, or this executor is stopping");
    if (!rc && !r.found) {
        rc = em__seterr(EM_ENOENT, "partition %d of parallelized records %llu: %.*s", part, (unsigned long long)id,
                        (int)(r.src.len < 400 ? r.src.len : 400), r.src.p ? (const char *)r.src.p : "");
    }
    if (!rc && !r.src.p && ebuf_reserve(&r.src, 1)) rc = em__seterr(EM_ENOMEM, "out of memory");
    if (rc) {
        ebuf_free(&r.src);
        return rc;
    }
    *data = ebuf_steal(&r.src, len);
    return 0;
}

/* One part of a fetch_source's answer (x.mu held, on the loop's thread, so
 * no message is set): 1 when the answer is whole, 0 when more parts are to
 * come, EM_ENOMEM, or EM_EPROTO for a part that does not fit. */
static int source_part(dreq *r, const msg *m) {
    const uint8_t *p = m->f[3].p;
    size_t n = m->f[3].len;
    if (!r->src_started) {
        r->src_started = 1;
        r->found = (int)m->f[1].u;
        r->src_len = r->found ? m->f[2].u : n;
        if (r->src_len > SIZE_MAX / 2 || ebuf_reserve(&r->src, r->src_len ? (size_t)r->src_len : 1))
            return EM_ENOMEM;
    }
    if ((r->found && m->f[2].u != r->src_len) || (uint64_t)n > r->src_len - r->src.len) return EM_EPROTO;
    if (n) memcpy(r->src.p + r->src.len, p, n); /* room reserved above */
    r->src.len += n;
    return r->src.len == r->src_len;
}

/* An answer from the driver, on the loop's thread. */
static void answer(const msg *m) {
    pthread_mutex_lock(&x.mu);
    for (dreq *r = x.reqs; r; r = r->next)
        if (r->id == m->f[0].u && !r->done) {
            if (m->tag == M_SOURCE && r->tag == M_FETCH_SOURCE) {
                int whole = source_part(r, m);
                if (whole < 0) r->rc = whole;
                else if (!whole) break; /* more parts to come */
            } else if (m->tag == M_COMMIT_ANSWER && r->tag == M_ASK_COMMIT) r->granted = (int)m->f[1].u;
            else if (m->tag == M_BCAST && r->tag == M_FETCH_BCAST) {
                r->found = (int)m->f[1].u;
                if ((r->data = malloc(m->f[2].len ? m->f[2].len : 1))) {
                    memcpy(r->data, m->f[2].p, m->f[2].len);
                    r->len = m->f[2].len;
                } else r->rc = em__seterr(EM_ENOMEM, "broadcast: out of memory for %zu bytes", m->f[2].len);
            } else r->rc = em__seterr(EM_EPROTO, "executor: a %s answering a %s", msg_name(m->tag), msg_name(r->tag));
            r->done = 1;
            pthread_cond_signal(&r->cv);
            break;
        }
    pthread_mutex_unlock(&x.mu);
}

/* ---------------------------------------------------------- segment fetch */

static fconn *fconn_of(conn *c) {
    for (fconn *f = x.fconns; f; f = f->next)
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
    pthread_mutex_lock(&x.mu);
    int dropped = r->dropped;
    r->done = 1;
    r->rc = rc;
    r->transient = transient;
    if (why) snprintf(r->err, sizeof r->err, "%.*s", (int)sizeof r->err - 1, why);
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&x.mu);
    if (dropped) freq_free(r);
}

static void freq_end(freq *r, int rc, const char *why) { freq_finish(r, rc, 0, why); }

static void fetch_send(fconn *f, freq *r) {
    msg_val v[] = {msg_u(r->rid), msg_u(r->shuffle), msg_u(r->map), msg_u(r->attempt), msg_u((uint64_t)r->reduce)};
    if (conn_send_msg(f->c, M_FETCH_SEGMENT, v, 5)) conn_close(f->c, em_errmsg());
}

static void fetch_open(conn *c, void *ud) {
    (void)ud;
    fconn *f = fconn_of(c);
    if (!f) return;
    f->open = 1;
    msg_val a[] = {msg_str(x.app)};
    if (conn_send_msg(c, M_SHUFFLE_OPEN, a, 1)) {
        conn_close(c, em_errmsg());
        return;
    }
    for (freq *r = f->head; r; r = r->next) fetch_send(f, r);
}

static void fetch_closed(conn *c, const char *reason, void *ud) {
    (void)ud;
    for (fconn **pp = &x.fconns; *pp; pp = &(*pp)->next)
        if ((*pp)->c == c) {
            fconn *f = *pp;
            *pp = f->next;
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
    (void)ud;
    fconn *f = fconn_of(c);
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
            if (r->got != r->len) {
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
        memcpy(r->seg.p + r->got, body, len); /* room for len bytes since begin */
        r->got += len;
        goto out;
    }
    if (type != FT_MSG || msg_decode(&m, body, len)) {
        conn_close(c, type != FT_MSG ? "an unexpected frame" : em_errmsg());
        goto out;
    }
    if (m.tag == M_SEGMENT && !r->started && m.f[0].u == r->rid) {
        if (m.f[1].u != r->len) {
            f->head = r->next;
            if (!f->head) f->tail = NULL;
            snprintf(why, sizeof why,
                     "executor at %s: shuffle %u map %u reduce partition %d is %llu bytes, the map task wrote %llu",
                     f->key, r->shuffle, r->map, r->reduce, (unsigned long long)m.f[1].u, (unsigned long long)r->len);
            freq_end(r, EM_EFETCH, why);
            conn_close(c, "a segment of the wrong length"); /* its chunks would follow */
            goto out;
        }
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
    char key[80];
    snprintf(key, sizeof key, "%s:%d", r->host, r->port);
    fconn *f = x.fconns;
    while (f && strcmp(f->key, key)) f = f->next;
    if (!f) {
        if (!(f = calloc(1, sizeof *f))) {
            freq_end(r, EM_ENOMEM, "out of memory");
            return;
        }
        snprintf(f->key, sizeof f->key, "%s", key);
        f->next = x.fconns;
        x.fconns = f;
        if (conn_connect(x.l, r->host, r->port, &x.co, &fetch_cb, NULL, &f->c)) {
            x.fconns = f->next;
            free(f);
            char why[600];
            snprintf(why, sizeof why, "executor at %s: %s", key, em_errmsg());
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

/* The peer has been silent too long: close the connection r waits on (its
 * close fails every request on it, r too). */
static void fetch_abort(void *arg) {
    uint64_t rid = (uint64_t)(uintptr_t)arg;
    for (fconn *f = x.fconns; f; f = f->next)
        for (freq *q = f->head; q; q = q->next)
            if (q->rid == rid) {
                conn_close(f->c, "fetch given up: no answer in " FETCH_TIMEOUT_TEXT);
                return;
            }
}

/* sr_fetcher's begin: the segment goes into a buffer of its length, which
 * the reader decodes in place.  Until 2026-11 it went into an anonymous
 * in-memory file (memfd), written as it came and read back with pread:
 * two more copies of every byte, and fresh shmem pages for each. */
static void *fetch_begin(void *fctx, const char *loc, uint32_t shuffle, uint32_t map, uint64_t attempt, int reduce,
                         uint64_t len) {
    (void)fctx;
    const char *hp = loc + 8, *colon = strchr(hp, ':');
    char *end;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || (size_t)(colon - hp) >= sizeof ((freq *)0)->host || port <= 0 || port > 65535 || *end != '/')
        return em__seterr(EM_EFETCH, "shuffle %u map %u: bad location \"%s\"", shuffle, map, loc), NULL;
    freq *r = calloc(1, sizeof *r);
    if (!r) return em__seterr(EM_EFETCH, "shuffle %u map %u: out of memory", shuffle, map), NULL;
    memcpy(r->host, hp, (size_t)(colon - hp));
    r->port = (int)port;
    r->shuffle = shuffle;
    r->map = map;
    r->attempt = attempt;
    r->reduce = reduce;
    r->len = len;
    r->progress_us = ev_now_us();
    r->seg = (ebuf)EBUF_INIT;
    if (bb_reserve(&r->seg, (size_t)len)) {
        em__seterr(EM_EFETCH, "shuffle %u map %u: no memory for its %llu byte segment", shuffle, map,
                   (unsigned long long)len);
        free(r);
        return NULL;
    }
    pthread_cond_init(&r->cv, NULL);
    pthread_mutex_lock(&x.mu);
    r->rid = x.next_req++;
    pthread_mutex_unlock(&x.mu);
    if (iol_post(x.l, fetch_start, r)) {
        em__seterr(EM_EFETCH, "shuffle %u map %u: the executor is stopping", shuffle, map);
        freq_free(r);
        return NULL;
    }
    return r;
}

/* sr_fetcher's drop: whoever ends it frees it (the loop, when its bytes
 * have come; here, if they have, and always after a successful end). */
static void fetch_drop(void *fctx, void *h) {
    (void)fctx;
    freq *r = h;
    pthread_mutex_lock(&x.mu);
    int done = r->done;
    r->dropped = 1;
    pthread_mutex_unlock(&x.mu);
    if (done) freq_free(r);
}

/* Wait for request r to end.  0 when it did (r->rc says how); EM_ECANCELED
 * when the attempt was killed meanwhile (r is dropped then).  *aborted:
 * its connection was closed for FETCH_TIMEOUT_S of silence. */
static int fetch_wait(void *fctx, freq *r, int *aborted) {
    uint64_t since = ev_now_us();
    pthread_mutex_lock(&x.mu);
    while (!r->done) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 200 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&r->cv, &x.mu, &until);
        if (r->done) break;
        if (runner_cancelled()) {
            pthread_mutex_unlock(&x.mu);
            em__seterr(EM_ECANCELED, "shuffle %u map %u: the task was killed while fetching", r->shuffle, r->map);
            fetch_drop(fctx, r);
            return EM_ECANCELED;
        }
        uint64_t p = __atomic_load_n(&r->progress_us, __ATOMIC_RELAXED), now = ev_now_us();
        if (!*aborted && now - (p > since ? p : since) > (uint64_t)FETCH_TIMEOUT_S * 1000000u) {
            *aborted = 1;
            pthread_mutex_unlock(&x.mu);
            if (iol_post(x.l, fetch_abort, (void *)(uintptr_t)r->rid)) *aborted = 0;
            pthread_mutex_lock(&x.mu);
        }
    }
    pthread_mutex_unlock(&x.mu);
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
 * at once; a peer silent for FETCH_TIMEOUT_S (a host gone without a word)
 * has its connection closed, which ends this request and every other on
 * it.  A request that failed with its connection (refused, reset) is sent
 * again on a new one, up to ember.shuffle.io.maxRetries times,
 * ember.shuffle.io.retryWait apart; then it is a fetch failure. */
static int fetch_end(void *fctx, void *h, const uint8_t **p) {
    freq *r = h;
    int aborted = 0;
    for (int tries = 0;; tries++) {
        if (fetch_wait(fctx, r, &aborted)) return EM_ECANCELED;
        pthread_mutex_lock(&x.mu);
        int again = r->rc == EM_EFETCH && r->transient && !aborted && tries < x.fetch_retries;
        pthread_mutex_unlock(&x.mu);
        if (!again) break;
        log_msg(LOG_WARN, "executor", "shuffle %u map %u: %s; retrying in %llu ms (%d of %d)", r->shuffle, r->map,
                r->err, (unsigned long long)x.fetch_retry_ms, tries + 1, x.fetch_retries);
        if (retry_pause(x.fetch_retry_ms)) {
            em__seterr(EM_ECANCELED, "shuffle %u map %u: the task was killed while fetching", r->shuffle, r->map);
            freq_free(r); /* ended, and held by no connection */
            return EM_ECANCELED;
        }
        /* Chunks are written at their offsets: the new answer overwrites
         * whatever part of the old one came. */
        pthread_mutex_lock(&x.mu);
        r->done = r->rc = r->transient = r->started = 0;
        r->got = 0;
        r->err[0] = 0;
        r->rid = x.next_req++;
        pthread_mutex_unlock(&x.mu);
        __atomic_store_n(&r->progress_us, ev_now_us(), __ATOMIC_RELAXED);
        if (iol_post(x.l, fetch_start, r)) {
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
    return 0;
}

/* --------------------------------------------------------- shuffle server */

/* The shuffle server's dir_of: this executor serves its own application's
 * outputs only. */
static int serve_dir_of(void *ctx, const char *app, char *dir, size_t cap) {
    (void)ctx;
    if (strcmp(app, x.app))
        return em__seterr(EM_ENOENT, "executor %d serves application %s, not %s", x.id, x.app, app);
    snprintf(dir, cap, "%s", x.shuffle_dir);
    return 0;
}

/* ------------------------------------------------------------ task threads */

typedef struct ended {
    struct ended *next;
    uint64_t id;
    int killed;
    uint64_t start_us, end_us;
    ebuf res;
    size_t sent;         /* of res, in result_part messages */
} ended;

/* Results too large for one frame, oldest first (the loop's). */
static ended *outq, *outq_tail;

static void ended_free(ended *e) {
    ebuf_free(&e->res);
    free(e);
}

static void send_task_ended(ended *e, int streamed) {
    msg_val f[] = {msg_u(e->id), msg_u((uint64_t)e->killed), msg_u(e->start_us), msg_u(e->end_us),
                   msg_bin(e->res.p, streamed ? 0 : e->res.len)};
    if (x.driver && conn_send_msg(x.driver, M_TASK_ENDED, f, 5))
        log_msg(LOG_WARN, "executor", "cannot report task %llu: %s", (unsigned long long)e->id, em_errmsg());
}

/* Stream the queued results as result_part messages, with at most
 * SERVE_HIGH bytes queued (the rest as the connection drains), each
 * followed by its task_ended.  Other messages go out between parts. */
static void result_pump(conn *c, void *arg) {
    (void)arg;
    size_t part = x.co.max_frame - 1024 < CHUNK * 4 ? x.co.max_frame - 1024 : CHUNK * 4;
    while (outq && conn_queued(c) < SERVE_HIGH) {
        ended *e = outq;
        if (e->sent < e->res.len) {
            size_t n = e->res.len - e->sent < part ? e->res.len - e->sent : part;
            msg_val f[] = {msg_u(e->id), msg_bin(e->res.p + e->sent, n)};
            if (conn_send_msg(c, M_RESULT_PART, f, 2)) {
                conn_close(c, em_errmsg());
                return;
            }
            e->sent += n;
            continue;
        }
        send_task_ended(e, 1);
        if (!(outq = e->next)) outq_tail = NULL;
        ended_free(e);
    }
    if (outq) conn_on_drain(c, result_pump, NULL);
}

static void send_ended(void *arg) {
    ended *e = arg;
    if (!x.driver) {
        ended_free(e);
        return;
    }
    if (e->res.len + 1024 <= x.co.max_frame) {
        send_task_ended(e, 0);
        ended_free(e);
        return;
    }
    int idle = !outq;
    if (outq_tail) outq_tail->next = e;
    else outq = e;
    outq_tail = e;
    if (idle) result_pump(x.driver, NULL);
}

/* Encode the result and hand it to the loop. */
static void report(xtask *t, task_result *res, uint64_t end_us) {
    ended *e = calloc(1, sizeof *e);
    if (!e) { /* the end cannot reach the driver: the attempt would wait forever */
        finish(1, "out of memory reporting the end of a task");
        return;
    }
    e->id = t->id;
    e->killed = __atomic_load_n(&t->ctl.cancel, __ATOMIC_RELAXED);
    e->start_us = t->start_us;
    e->end_us = end_us;
    if (taskresult_encode(res, &e->res)) {
        ebuf_free(&e->res);
        task_result_clear(res);
        res->status = EM_ENOMEM;
        snprintf(res->errmsg, sizeof res->errmsg, "out of memory encoding the task's result");
        taskresult_encode(res, &e->res);
    }
    if (iol_post(x.l, send_ended, e)) {
        ended_free(e);
        finish(1, "cannot hand a task's end to the network thread"); /* lost, so its attempts run again */
    }
}

static void *task_thread(void *arg) {
    (void)arg;
    pthread_mutex_lock(&x.mu);
    for (;;) {
        while (!x.qhead && !x.stop) pthread_cond_wait(&x.work, &x.mu);
        if (x.stop) break;
        xtask *t = x.qhead;
        x.qhead = t->next;
        if (!x.qhead) x.qtail = NULL;
        t->prev = NULL;
        t->next = x.running;
        if (x.running) x.running->prev = t;
        x.running = t;
        t->start_us = ev_now_us();
        pthread_mutex_unlock(&x.mu);

        task_result res;
        memset(&res, 0, sizeof res);
        res.fetch_map = -1;
        res.task_id = t->id;
        runner_run(&x.env, t->desc, t->len, &res, &t->ctl);
        t->desc = NULL;
        report(t, &res, ev_now_us());
        task_result_clear(&res);

        pthread_mutex_lock(&x.mu);
        if (t->prev) t->prev->next = t->next;
        else x.running = t->next;
        if (t->next) t->next->prev = t->prev;
        free(t);
    }
    pthread_mutex_unlock(&x.mu);
    return NULL;
}

/* --------------------------------------------------------------- driver */

static void launch(const msg *m) {
    xtask *t = calloc(1, sizeof *t);
    uint8_t *d = malloc(m->f[1].len);
    if (!t || !d) {
        free(t);
        free(d);
        task_result res;
        memset(&res, 0, sizeof res);
        res.status = EM_ENOMEM;
        res.fetch_map = -1;
        snprintf(res.errmsg, sizeof res.errmsg, "executor %d: out of memory for a task", x.id);
        xtask tmp;
        memset(&tmp, 0, sizeof tmp);
        tmp.id = m->f[0].u;
        report(&tmp, &res, ev_now_us());
        return;
    }
    memcpy(d, m->f[1].p, m->f[1].len);
    t->id = m->f[0].u;
    t->desc = d;
    t->len = m->f[1].len;
    pthread_mutex_lock(&x.mu);
    if (x.qtail) x.qtail->next = t;
    else x.qhead = t;
    x.qtail = t;
    pthread_cond_signal(&x.work);
    pthread_mutex_unlock(&x.mu);
}

static void kill_task(uint64_t id) {
    xtask *q = NULL, *prev = NULL;
    pthread_mutex_lock(&x.mu);
    for (xtask *t = x.qhead; t; prev = t, t = t->next)
        if (t->id == id) {
            if (prev) prev->next = t->next;
            else x.qhead = t->next;
            if (x.qtail == t) x.qtail = prev;
            q = t;
            break;
        }
    if (!q)
        for (xtask *t = x.running; t; t = t->next)
            if (t->id == id) __atomic_store_n(&t->ctl.cancel, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&x.mu);
    if (q) { /* queued: ends at once, killed */
        task_result res;
        memset(&res, 0, sizeof res);
        res.status = EM_ECANCELED;
        res.fetch_map = -1;
        snprintf(res.errmsg, sizeof res.errmsg, "killed before it started");
        q->ctl.cancel = 1;
        q->start_us = ev_now_us();
        report(q, &res, q->start_us);
        free(q->desc);
        free(q);
    }
}

/* A beat to the driver, from the loop's thread whatever the tasks do: a
 * driver that hears nothing from this executor (any frame) for
 * ember.network.timeout declares it lost. */
static void on_heartbeat(uv_timer_t *t) {
    (void)t;
    char id[32];
    snprintf(id, sizeof id, "executor %d", x.id);
    msg_val f[] = {msg_str(id)};
    if (x.driver && conn_send_msg(x.driver, M_HEARTBEAT, f, 1)) conn_close(x.driver, em_errmsg());
}

static void driver_open(conn *c, void *ud) {
    (void)ud;
    x.registered = 1;
    msg_val f[] = {msg_u((uint64_t)x.id), msg_str(x.host), msg_u((uint64_t)x.port), msg_u((uint64_t)x.cores),
                   msg_bin(fnref_binary_hash(), 32), msg_u(x.service_port > 0)};
    if (conn_send_msg(c, M_REGISTER_EXECUTOR, f, 6)) conn_close(c, em_errmsg());
    else uv_timer_start(&x.hb.t, on_heartbeat, x.hb_ms, x.hb_ms);
}

static void driver_frame(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud) {
    (void)ud;
    msg m;
    char why[700];
    if (conn_take_msg(c, type, body, len, &m)) return;
    switch (m.tag) {
    case M_LAUNCH_TASK: launch(&m); break;
    case M_KILL_TASK: kill_task(m.f[0].u); break;
    case M_DROP_SHUFFLE: shuffle_remove(x.shuffle_dir, (uint32_t)m.f[0].u); break;
    case M_DROP_MAP_OUTPUT:
        shuffle_remove_output(x.shuffle_dir, (uint32_t)m.f[0].u, (uint32_t)m.f[1].u, m.f[2].u);
        break;
    case M_DROP_BCAST: bcast_drop(m.f[0].u); break;
    case M_DROP_RDD: bs_remove(x.store, m.f[0].u, (int)m.f[1].u); break;
    case M_COMMIT_ANSWER:
    case M_BCAST:
    case M_SOURCE: answer(&m); break;
    case M_EXECUTOR_REFUSED:
        snprintf(why, sizeof why, "the driver refused this executor: %.*s", (int)m.f[0].len, (const char *)m.f[0].p);
        x.driver = NULL;
        conn_close(c, why);
        finish(1, why);
        break;
    default:
        snprintf(why, sizeof why, "a %s message the executor does not take", msg_name(m.tag));
        conn_close(c, why);
    }
    msg_free(&m);
    free(body);
}

static void driver_closed(conn *c, const char *reason, void *ud) {
    (void)c;
    (void)ud;
    x.driver = NULL;
    while (outq) {
        ended *e = outq;
        outq = e->next;
        ended_free(e);
    }
    outq_tail = NULL;
    char why[600];
    if (!x.registered) {
        snprintf(why, sizeof why, "could not reach the driver at %s: %s", x.url, reason);
        finish(1, why);
        return;
    }
    snprintf(why, sizeof why, "the driver's connection closed: %s", reason);
    finish(0, why);
}

static const conn_cb driver_cb = {driver_open, driver_frame, driver_closed};

typedef struct start_arg {
    int rc;
    char err[512];
} start_arg;

static void start(void *arg) {
    start_arg *a = arg;
    iol_timer_init(x.l, &x.hb);
    conn_opts so = x.co;
    so.component = "shuffle-server";
    ss_config sc = {serve_dir_of, NULL, x.drop_fetches};
    a->rc = ss_start(x.l, x.host, 0, &so, &sc, &x.server, &x.port);
    if (!a->rc) {
        snprintf(x.self, sizeof x.self, "ember://%s:%d", x.host, x.service_port > 0 ? x.service_port : x.port);
        x.env.self = x.self;
        a->rc = conn_connect(x.l, x.dhost, x.dport, &x.co, &driver_cb, NULL, &x.driver);
    }
    if (a->rc) em__geterr(a->err, sizeof a->err);
}

static int env_int(const char *name, long lo, long hi, long def, long *out) {
    const char *s = getenv(name);
    char *end;
    if (!s || !*s) {
        *out = def;
        return def < lo ? -1 : 0;
    }
    long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int executor_main(void) {
    long id, cores, mem;
    const char *url = getenv("EMBER_DRIVER_URL"), *dir = getenv("EMBER_EXECUTOR_DIR"),
               *host = getenv("EMBER_EXECUTOR_HOST"), *app = getenv("EMBER_APP_ID"),
               *sdir = getenv("EMBER_SHUFFLE_DIR");
    long sport;
    const char *colon = url ? strrchr(url, ':') : NULL;
    if (!colon || (size_t)(colon - url) >= sizeof x.dhost || env_int("EMBER_EXECUTOR_ID", 0, INT32_MAX, -1, &id) ||
        env_int("EMBER_EXECUTOR_CORES", 1, 1 << 16, -1, &cores) ||
        env_int("EMBER_EXECUTOR_MEMORY", 1, 1L << 30, 1024, &mem) ||
        env_int("EMBER_SHUFFLE_SERVICE_PORT", 0, 65535, 0, &sport) || !dir ||
        (app && strlen(app) >= sizeof x.app) || (sdir && strlen(sdir) >= sizeof x.shuffle_dir) ||
        strlen(dir) >= sizeof x.dir - 1 || (host && strlen(host) >= sizeof x.host)) {
        fprintf(stderr,
                "ember executor: bad environment: EMBER_DRIVER_URL=%s EMBER_EXECUTOR_ID=%s EMBER_EXECUTOR_CORES=%s "
                "EMBER_EXECUTOR_DIR=%s\n",
                url ? url : "(unset)", getenv("EMBER_EXECUTOR_ID") ? getenv("EMBER_EXECUTOR_ID") : "(unset)",
                getenv("EMBER_EXECUTOR_CORES") ? getenv("EMBER_EXECUTOR_CORES") : "(unset)", dir ? dir : "(unset)");
        return 1;
    }
    long dport;
    char *end;
    dport = strtol(colon + 1, &end, 10);
    if (*end || dport <= 0 || dport > 65535) {
        fprintf(stderr, "ember executor: bad driver address %s\n", url);
        return 1;
    }
    memcpy(x.dhost, url, (size_t)(colon - url));
    x.dport = (int)dport;
    snprintf(x.url, sizeof x.url, "%s", url);
    x.id = (int)id;
    x.cores = (int)cores;
    snprintf(x.dir, sizeof x.dir, "%s", dir);
    snprintf(x.app, sizeof x.app, "%s", app ? app : "");
    snprintf(x.host, sizeof x.host, "%s", host && *host ? host : "127.0.0.1");
    /* The application's settings, as its driver has them. */
    em_conf *conf = em_conf_new();
    if (!conf || conf_from_env(conf, "EMBER_CONF") || netconf_from_env(&x.nc)) {
        fprintf(stderr, "ember executor: %s\n", conf ? em_errmsg() : "out of memory");
        return 1;
    }
    x.co = netconf_opts(&x.nc, "executor");
    x.co.max_frame = (size_t)conf_size(conf, "ember.rpc.message.maxSize");
    /* The worker's shuffle service, when both the application and the
     * worker have it on. */
    if (conf_bool(conf, "ember.shuffle.service.enabled") && sport > 0 && sdir && *sdir) {
        x.service_port = (int)sport;
        snprintf(x.shuffle_dir, sizeof x.shuffle_dir, "%s", sdir);
    } else snprintf(x.shuffle_dir, sizeof x.shuffle_dir, "%s", x.dir);
    pthread_mutex_init(&x.mu, NULL);
    pthread_cond_init(&x.work, NULL);
    pthread_cond_init(&x.ended, NULL);
    x.next_req = 1;
    signal(SIGPIPE, SIG_IGN);
    if (!(x.store = bs_new(x.dir, (size_t)mem << 20))) {
        fprintf(stderr, "ember executor: %s\n", em_errmsg());
        return 1;
    }
    x.env.local_dir = x.dir;
    x.env.shuffle_dir = x.shuffle_dir;
    x.env.store = x.store;
    x.env.ask_commit = ask_commit;
    x.fetcher.begin = fetch_begin;
    x.fetcher.end = fetch_end;
    x.fetcher.drop = fetch_drop;
    x.fetcher.in_flight = (uint64_t)conf_size(conf, "ember.reducer.maxSizeInFlight");
    x.fetcher.host_local = conf_bool(conf, "ember.shuffle.readHostLocalDisk");
    x.fetcher.lost_host = conf_bool(conf, "ember.files.fetchFailure.unRegisterOutputOnHost");
    x.hb_ms = (uint64_t)conf_duration_ms(conf, "ember.executor.heartbeatInterval");
    x.fetch_retries = (int)conf_i64(conf, "ember.shuffle.io.maxRetries");
    x.fetch_retry_ms = (uint64_t)conf_duration_ms(conf, "ember.shuffle.io.retryWait");
    fault_rule rules[FAULTS_MAX];
    char fwhy[200];
    int nrules = faults_parse(em_conf_get(conf, "ember.test.faults"), rules, fwhy, sizeof fwhy);
    for (int i = 0; i < nrules; i++) {
        if (rules[i].kind == FAULT_DROP_FETCH) x.drop_fetches += rules[i].n;
        if (rules[i].kind == FAULT_EXEC_EXIT && (rules[i].n < 0 || x.id < rules[i].n)) {
            fprintf(stderr, "ember executor %d: exits with code %d at start (ember.test.faults execexit)\n", x.id,
                    (int)rules[i].code);
            return (int)rules[i].code;
        }
    }
    x.env.fetch = &x.fetcher;
    em_conf_free(conf);
    bcast_set_fetch(fetch_bcast);
    src_set_fetch(fetch_source);
    if (!(x.threads = calloc((size_t)x.cores, sizeof *x.threads)) || !(x.l = iol_start("executor"))) {
        fprintf(stderr, "ember executor: %s\n", em_errmsg());
        return 1;
    }
    start_arg a = {0, ""};
    iol_call(x.l, start, &a);
    if (a.rc) {
        fprintf(stderr, "ember executor %d: could not reach the driver at %s: %s\n", x.id, url, a.err);
        return 1;
    }
    for (int i = 0; i < x.cores; i++)
        if (pthread_create(&x.threads[i], NULL, task_thread, NULL)) {
            fprintf(stderr, "ember executor: cannot start task threads\n");
            return 1;
        }
    log_msg(LOG_INFO, "executor", "executor %d: %d cores, map outputs at %s%s, driver %s", x.id, x.cores, x.self,
            x.service_port > 0 ? " (the worker's shuffle service)" : "", url);
    pthread_mutex_lock(&x.mu);
    while (!x.stop) pthread_cond_wait(&x.ended, &x.mu);
    pthread_mutex_unlock(&x.mu);
    /* Idle task threads end at once; running tasks may be inside user code
     * that never returns: the process ends without waiting more than a
     * moment for them.  Its directory is the worker's to remove. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    for (int i = 0; i < x.cores; i++) pthread_timedjoin_np(x.threads[i], NULL, &until);
    if (x.status) fprintf(stderr, "ember executor %d: %s\n", x.id, x.why);
    else log_msg(LOG_INFO, "executor", "executor %d: %s", x.id, x.why);
    fflush(stderr);
    _exit(x.status);
}
