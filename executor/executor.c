/*
 * executor.c -- the executor process of cluster mode (see executor.h).
 *
 * It owns the task threads and their queue, the attempts' cancel flags,
 * the heartbeat and the driver's connection: the questions tasks ask the
 * driver (commit, broadcast, parallelized records) and the results they
 * send it.  Its shuffle server serves its map outputs (shuffle_server.c);
 * the segments its tasks read from other executors are fetched by the
 * client of shuffle_fetch.c, whose state it holds.
 *
 * Threads: the io loop (every connection: the driver's, the shuffle
 * server's clients, the connections the fetch client opens), N task
 * threads, and main, which waits for the end.  Task threads take attempts
 * from one FIFO under ex.mu; what they need from the network (a commit
 * answer, a broadcast, a segment) they ask the loop for with iol_post and
 * wait on their request's condition variable.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bcast.h"
#include "blockstore.h"
#include "conf.h"
#include "conn.h"
#include "curmetrics.h"
#include "ember.h"
#include "err.h"
#include "events.h"
#include "executor.h"
#include "faults.h"
#include "fnref.h"
#include "log.h"
#include "msg.h"
#include "netconf.h"
#include "runner.h"
#include "shuffle.h"
#include "shuffle_files.h"
#include "shuffle_fetch.h"
#include "shuffle_server.h"
#include "srcdata.h"
#include "taskresult.h"

#define CHUNK ((size_t)256 << 10) /* a result's parts: CHUNK * 4 */
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

/* The process's state, one per executor process (ex below). */
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
    sr_fetcher fetcher;  /* fetch's, as the tasks' readers call it */
    shuffle_fetch fetch; /* the segments this executor's tasks fetch */
    struct ended *outq, *outq_tail; /* results too large for one frame,
                                       oldest first (the loop's) */
    struct ended *outbox, *outbox_tail; /* ends for the loop to send,
                                       oldest first (mu) */
    pthread_mutex_t mu;
    pthread_cond_t work, ended;
    xtask *qhead, *qtail, *running;
    dreq *reqs;          /* waiting for the driver's answer (mu) */
    uint64_t next_req;
    int64_t drop_fetches;    /* requests to drop (ember.test.faults dropfetch) */
    int stop, status;
    int registered;      /* the driver's connection opened */
    iol_timer hb;        /* the heartbeat (the loop's) */
    uint64_t hb_ms;      /* ember.executor.heartbeatInterval */
    char url[80];
    char why[512];
    pthread_t *threads;
} executor;

static executor ex;

/* The end of the executor: main returns status. */
static void finish(int status, const char *why) {
    pthread_mutex_lock(&ex.mu);
    if (!ex.stop) {
        ex.stop = 1;
        ex.status = status;
        snprintf(ex.why, sizeof ex.why, "%s", why);
        pthread_cond_broadcast(&ex.ended);
        pthread_cond_broadcast(&ex.work);
    }
    pthread_mutex_unlock(&ex.mu);
}

/* --------------------------------------------------- questions to the driver */

static void send_req(void *arg) {
    dreq *r = arg;
    int n = r->tag == M_ASK_COMMIT ? 4 : r->tag == M_FETCH_SOURCE ? 3 : 2;
    if (!ex.driver || conn_send_msg(ex.driver, r->tag, r->f, n)) {
        pthread_mutex_lock(&ex.mu);
        r->done = 1;
        r->rc = em__seterr(EM_EIO, "executor %d: the driver's connection is gone", ex.id);
        pthread_cond_signal(&r->cv);
        pthread_mutex_unlock(&ex.mu);
    }
}

/* Ask the driver and wait for its answer (ex.mu not held). */
static int ask_driver(dreq *r) {
    pthread_cond_init(&r->cv, NULL);
    pthread_mutex_lock(&ex.mu);
    r->id = ex.next_req++;
    r->f[0] = msg_u(r->id);
    r->next = ex.reqs;
    ex.reqs = r;
    pthread_mutex_unlock(&ex.mu);
    int rc = iol_post(ex.l, send_req, r);
    pthread_mutex_lock(&ex.mu);
    if (rc) r->done = 1, r->rc = rc;
    while (!r->done && !ex.stop) pthread_cond_wait(&r->cv, &ex.mu);
    for (dreq **pp = &ex.reqs; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    if (!r->done) r->rc = em__seterr(EM_EIO, "executor %d: stopping", ex.id);
    pthread_mutex_unlock(&ex.mu);
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

/* One part of a fetch_source's answer (ex.mu held, on the loop's thread, so
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
    pthread_mutex_lock(&ex.mu);
    for (dreq *r = ex.reqs; r; r = r->next)
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
    pthread_mutex_unlock(&ex.mu);
}

/* --------------------------------------------------------- shuffle server */

/* The shuffle server's dir_of: this executor serves its own application's
 * outputs only. */
static int serve_dir_of(void *ctx, const char *app, char *dir, size_t cap) {
    (void)ctx;
    if (strcmp(app, ex.app))
        return em__seterr(EM_ENOENT, "executor %d serves application %s, not %s", ex.id, ex.app, app);
    snprintf(dir, cap, "%s", ex.shuffle_dir);
    return 0;
}

/* ------------------------------------------------------------ task threads */

/* An attempt's end. */
typedef struct ended {
    struct ended *next;
    uint64_t id;
    int queued;          /* killed in the queue, never started */
    int killed;
    uint64_t start_us, end_us;
    ebuf res;
    size_t sent;         /* of res, in result_part messages */
} ended;


static void ended_free(ended *e) {
    ebuf_free(&e->res);
    free(e);
}

static void send_task_ended(ended *e, int streamed) {
    msg_val f[] = {msg_u(e->id), msg_u((uint64_t)e->killed), msg_u(e->start_us), msg_u(e->end_us),
                   msg_bin(e->res.p, streamed ? 0 : e->res.len), msg_u((uint64_t)e->queued)};
    if (ex.driver && conn_send_msg(ex.driver, M_TASK_ENDED, f, 6))
        log_msg(LOG_WARN, "executor", "cannot report task %llu: %s", (unsigned long long)e->id, em_errmsg());
}

/* Stream the queued results as result_part messages, with at most
 * SERVE_HIGH bytes queued (the rest as the connection drains), each
 * followed by its task_ended.  Other messages go out between parts. */
static void result_pump(conn *c, void *arg) {
    (void)arg;
    size_t part = ex.co.max_frame - 1024 < CHUNK * 4 ? ex.co.max_frame - 1024 : CHUNK * 4;
    while (ex.outq && conn_queued(c) < SERVE_HIGH) {
        ended *e = ex.outq;
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
        if (!(ex.outq = e->next)) ex.outq_tail = NULL;
        ended_free(e);
    }
    if (ex.outq) conn_on_drain(c, result_pump, NULL);
}

static void send_ended(ended *e) {
    if (!ex.driver) {
        ended_free(e);
        return;
    }
    if (e->res.len + 1024 <= ex.co.max_frame) {
        send_task_ended(e, 0);
        ended_free(e);
        return;
    }
    int idle = !ex.outq;
    if (ex.outq_tail) ex.outq_tail->next = e;
    else ex.outq = e;
    ex.outq_tail = e;
    if (idle) result_pump(ex.driver, NULL);
}

/* The loop's side of the outbox: the ends the task threads reported
 * since the last time, in one batch (one frame, one write). */
static void send_outbox(void *arg) {
    (void)arg;
    pthread_mutex_lock(&ex.mu);
    ended *e = ex.outbox;
    ex.outbox = ex.outbox_tail = NULL;
    pthread_mutex_unlock(&ex.mu);
    conn *c = ex.driver;
    if (c) conn_batch_begin(c);
    for (ended *n; e; e = n) {
        n = e->next;
        e->next = NULL;
        send_ended(e);
    }
    if (c && c == ex.driver && conn_batch_end(c)) conn_close(c, em_errmsg());
}

/* To the driver, after what was reported before: the outbox is posted to
 * the loop when it was empty, so a burst of ends goes out together and a
 * lone one at once. */
static void post_report(ended *e) {
    pthread_mutex_lock(&ex.mu);
    int was_empty = !ex.outbox;
    if (ex.outbox_tail) ex.outbox_tail->next = e;
    else ex.outbox = e;
    ex.outbox_tail = e;
    pthread_mutex_unlock(&ex.mu);
    if (was_empty && iol_post(ex.l, send_outbox, NULL))
        finish(1, "cannot hand a task's end to the network thread"); /* lost, so its attempts run again */
}

/* Encode the result and hand it to the loop. */
static void report(xtask *t, task_result *res, uint64_t end_us, int queued) {
    ended *e = calloc(1, sizeof *e);
    if (!e) { /* the end cannot reach the driver: the attempt would wait forever */
        finish(1, "out of memory reporting the end of a task");
        return;
    }
    e->id = t->id;
    e->queued = queued;
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
    post_report(e);
}

static void *task_thread(void *arg) {
    (void)arg;
    pthread_mutex_lock(&ex.mu);
    for (;;) {
        while (!ex.qhead && !ex.stop) pthread_cond_wait(&ex.work, &ex.mu);
        if (ex.stop) break;
        xtask *t = ex.qhead;
        ex.qhead = t->next;
        if (!ex.qhead) ex.qtail = NULL;
        t->prev = NULL;
        t->next = ex.running;
        if (ex.running) ex.running->prev = t;
        ex.running = t;
        /* One clock for the attempt's times and its metrics. */
        t->ctl.start_ns = tm_now_ns();
        t->start_us = (uint64_t)t->ctl.start_ns / 1000;
        pthread_mutex_unlock(&ex.mu);

        task_result res;
        memset(&res, 0, sizeof res);
        res.fetch_map = -1;
        res.task_id = t->id;
        runner_run(&ex.env, t->desc, t->len, &res, &t->ctl);
        t->desc = NULL;
        report(t, &res, (uint64_t)t->ctl.end_ns / 1000, 0);
        task_result_clear(&res);

        pthread_mutex_lock(&ex.mu);
        if (t->prev) t->prev->next = t->next;
        else ex.running = t->next;
        if (t->next) t->next->prev = t->prev;
        free(t);
    }
    pthread_mutex_unlock(&ex.mu);
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
        snprintf(res.errmsg, sizeof res.errmsg, "executor %d: out of memory for a task", ex.id);
        xtask tmp;
        memset(&tmp, 0, sizeof tmp);
        tmp.id = m->f[0].u;
        report(&tmp, &res, ev_now_us(), 0);
        return;
    }
    memcpy(d, m->f[1].p, m->f[1].len);
    t->id = m->f[0].u;
    t->desc = d;
    t->len = m->f[1].len;
    pthread_mutex_lock(&ex.mu);
    if (ex.qtail) ex.qtail->next = t;
    else ex.qhead = t;
    ex.qtail = t;
    pthread_cond_signal(&ex.work);
    pthread_mutex_unlock(&ex.mu);
}

static void kill_task(uint64_t id) {
    xtask *q = NULL, *prev = NULL;
    pthread_mutex_lock(&ex.mu);
    for (xtask *t = ex.qhead; t; prev = t, t = t->next)
        if (t->id == id) {
            if (prev) prev->next = t->next;
            else ex.qhead = t->next;
            if (ex.qtail == t) ex.qtail = prev;
            q = t;
            break;
        }
    if (!q)
        for (xtask *t = ex.running; t; t = t->next)
            if (t->id == id) __atomic_store_n(&t->ctl.cancel, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&ex.mu);
    if (q) { /* queued: ends at once, killed */
        task_result res;
        memset(&res, 0, sizeof res);
        res.status = EM_ECANCELED;
        res.fetch_map = -1;
        snprintf(res.errmsg, sizeof res.errmsg, "killed before it started");
        q->ctl.cancel = 1;
        q->start_us = ev_now_us();
        report(q, &res, q->start_us, 1);
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
    snprintf(id, sizeof id, "executor %d", ex.id);
    msg_val f[] = {msg_str(id)};
    if (ex.driver && conn_send_msg(ex.driver, M_HEARTBEAT, f, 1)) conn_close(ex.driver, em_errmsg());
}

/* The shuffle server dropped a request (ember.test.faults dropfetch): the
 * driver counts it from a heartbeat sent before the connection closes, so
 * it hears of it before the end of the task that fetched again. */
static void fetch_dropped(void *ctx) {
    (void)ctx;
    char id[32];
    snprintf(id, sizeof id, "executor %d", ex.id);
    msg_val f[] = {msg_str(id), msg_u(1)};
    if (ex.driver && conn_send_msg(ex.driver, M_HEARTBEAT, f, 2)) conn_close(ex.driver, em_errmsg());
}

static void driver_open(conn *c, void *ud) {
    (void)ud;
    ex.registered = 1;
    msg_val f[] = {msg_u((uint64_t)ex.id), msg_str(ex.host), msg_u((uint64_t)ex.port), msg_u((uint64_t)ex.cores),
                   msg_bin(fnref_binary_hash(), 32), msg_u(ex.service_port > 0)};
    if (conn_send_msg(c, M_REGISTER_EXECUTOR, f, 6)) conn_close(c, em_errmsg());
    else uv_timer_start(&ex.hb.t, on_heartbeat, ex.hb_ms, ex.hb_ms);
}

static void driver_frame(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud) {
    (void)ud;
    msg m;
    char why[700];
    if (conn_take_msg(c, type, body, len, &m)) return;
    switch (m.tag) {
    case M_LAUNCH_TASK: launch(&m); break;
    case M_KILL_TASK: kill_task(m.f[0].u); break;
    case M_DROP_SHUFFLE: shuffle_remove(ex.shuffle_dir, (uint32_t)m.f[0].u); break;
    case M_DROP_MAP_OUTPUT:
        shuffle_remove_output(ex.shuffle_dir, (uint32_t)m.f[0].u, (uint32_t)m.f[1].u, m.f[2].u);
        break;
    case M_DROP_BCAST: bcast_drop(m.f[0].u); break;
    case M_DROP_RDD: bs_remove(ex.store, m.f[0].u, (int)m.f[1].u); break;
    case M_COMMIT_ANSWER:
    case M_BCAST:
    case M_SOURCE: answer(&m); break;
    case M_EXECUTOR_REFUSED:
        snprintf(why, sizeof why, "the driver refused this executor: %.*s", (int)m.f[0].len, (const char *)m.f[0].p);
        ex.driver = NULL;
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
    ex.driver = NULL;
    while (ex.outq) {
        ended *e = ex.outq;
        ex.outq = e->next;
        ended_free(e);
    }
    ex.outq_tail = NULL;
    char why[600];
    if (!ex.registered) {
        snprintf(why, sizeof why, "could not reach the driver at %s: %s", ex.url, reason);
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
    iol_timer_init(ex.l, &ex.hb);
    conn_opts so = ex.co;
    so.component = "shuffle-server";
    ss_config sc = {serve_dir_of, NULL, ex.drop_fetches, fetch_dropped};
    a->rc = ss_start(ex.l, ex.host, 0, &so, &sc, &ex.server, &ex.port);
    if (!a->rc) {
        snprintf(ex.self, sizeof ex.self, "ember://%s:%d", ex.host, ex.service_port > 0 ? ex.service_port : ex.port);
        ex.env.self = ex.self;
        a->rc = conn_connect(ex.l, ex.dhost, ex.dport, &ex.co, &driver_cb, NULL, &ex.driver);
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

#ifdef EMBER_COVERAGE
void __gcov_dump(void);

/* make coverage only: the worker stops its executors with SIGTERM, which
 * would end the process without writing its counts.  Main blocks SIGTERM
 * before any thread starts, so every thread inherits the mask; this thread
 * takes the signal, writes the counts, and dies of the same signal, so the
 * worker sees the exit it would see in any other build. */
static void *coverage_sigterm(void *arg) {
    sigset_t *set = arg;
    int sig;
    if (sigwait(set, &sig)) return NULL;
    __gcov_dump();
    signal(SIGTERM, SIG_DFL);
    pthread_sigmask(SIG_UNBLOCK, set, NULL);
    raise(SIGTERM);
    return NULL;
}

static void coverage_catch_sigterm(void) {
    static sigset_t set;
    pthread_t t;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) == 0 && pthread_create(&t, NULL, coverage_sigterm, &set) == 0)
        pthread_detach(t);
}
#endif

int executor_main(void) {
    long id, cores, mem;
    const char *url = getenv("EMBER_DRIVER_URL"), *dir = getenv("EMBER_EXECUTOR_DIR"),
               *host = getenv("EMBER_EXECUTOR_HOST"), *app = getenv("EMBER_APP_ID"),
               *sdir = getenv("EMBER_SHUFFLE_DIR");
    long sport;
    const char *colon = url ? strrchr(url, ':') : NULL;
    if (!colon || (size_t)(colon - url) >= sizeof ex.dhost || env_int("EMBER_EXECUTOR_ID", 0, INT32_MAX, -1, &id) ||
        env_int("EMBER_EXECUTOR_CORES", 1, 1 << 16, -1, &cores) ||
        env_int("EMBER_EXECUTOR_MEMORY", 1, 1L << 30, 1024, &mem) ||
        env_int("EMBER_SHUFFLE_SERVICE_PORT", 0, 65535, 0, &sport) || !dir ||
        (app && strlen(app) >= sizeof ex.app) || (sdir && strlen(sdir) >= sizeof ex.shuffle_dir) ||
        strlen(dir) >= sizeof ex.dir - 1 || (host && strlen(host) >= sizeof ex.host)) {
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
    memcpy(ex.dhost, url, (size_t)(colon - url));
    ex.dport = (int)dport;
    snprintf(ex.url, sizeof ex.url, "%s", url);
    ex.id = (int)id;
    ex.cores = (int)cores;
    snprintf(ex.dir, sizeof ex.dir, "%s", dir);
    snprintf(ex.app, sizeof ex.app, "%s", app ? app : "");
    snprintf(ex.host, sizeof ex.host, "%s", host && *host ? host : "127.0.0.1");
    /* The application's settings, as its driver has them. */
    em_conf *conf = em_conf_new();
    if (!conf || conf_from_env(conf, "EMBER_CONF") || netconf_from_env(&ex.nc)) {
        fprintf(stderr, "ember executor: %s\n", conf ? em_errmsg() : "out of memory");
        return 1;
    }
    ex.co = netconf_opts(&ex.nc, "executor");
    ex.co.max_frame = (size_t)conf_size(conf, "ember.rpc.message.maxSize");
    /* The worker's shuffle service, when both the application and the
     * worker have it on. */
    if (conf_bool(conf, "ember.shuffle.service.enabled") && sport > 0 && sdir && *sdir) {
        ex.service_port = (int)sport;
        snprintf(ex.shuffle_dir, sizeof ex.shuffle_dir, "%s", sdir);
    } else snprintf(ex.shuffle_dir, sizeof ex.shuffle_dir, "%s", ex.dir);
    pthread_mutex_init(&ex.mu, NULL);
    pthread_cond_init(&ex.work, NULL);
    pthread_cond_init(&ex.ended, NULL);
    ex.next_req = 1;
    signal(SIGPIPE, SIG_IGN);
#ifdef EMBER_COVERAGE
    coverage_catch_sigterm();
#endif
    if (!(ex.store = bs_new(ex.dir, (size_t)mem << 20))) {
        fprintf(stderr, "ember executor: %s\n", em_errmsg());
        return 1;
    }
    ex.env.local_dir = ex.dir;
    ex.env.shuffle_dir = ex.shuffle_dir;
    ex.env.store = ex.store;
    ex.env.ask_commit = ask_commit;
    ex.fetcher.in_flight = (uint64_t)conf_size(conf, "ember.reducer.maxSizeInFlight");
    ex.fetcher.host_local = conf_bool(conf, "ember.shuffle.readHostLocalDisk");
    ex.fetcher.lost_host = conf_bool(conf, "ember.files.fetchFailure.unRegisterOutputOnHost");
    ex.hb_ms = (uint64_t)conf_duration_ms(conf, "ember.executor.heartbeatInterval");
    int fetch_retries = (int)conf_i64(conf, "ember.shuffle.io.maxRetries");
    uint64_t fetch_retry_ms = (uint64_t)conf_duration_ms(conf, "ember.shuffle.io.retryWait");
    fault_rule rules[FAULTS_MAX];
    char fwhy[200];
    int nrules = faults_parse(em_conf_get(conf, "ember.test.faults"), rules, fwhy, sizeof fwhy);
    for (int i = 0; i < nrules; i++) {
        if (rules[i].kind == FAULT_DROP_FETCH) ex.drop_fetches += rules[i].n;
        if (rules[i].kind == FAULT_EXEC_EXIT && (rules[i].n < 0 || ex.id < rules[i].n)) {
            fprintf(stderr, "ember executor %d: exits with code %d at start (ember.test.faults execexit)\n", ex.id,
                    (int)rules[i].code);
            return (int)rules[i].code;
        }
    }
    ex.env.fetch = &ex.fetcher;
    em_conf_free(conf);
    bcast_set_fetch(fetch_bcast);
    src_set_fetch(fetch_source);
    if (!(ex.threads = calloc((size_t)ex.cores, sizeof *ex.threads)) || !(ex.l = iol_start("executor"))) {
        fprintf(stderr, "ember executor: %s\n", em_errmsg());
        return 1;
    }
    sf_init(&ex.fetch, ex.l, &ex.co, ex.app, fetch_retries, fetch_retry_ms);
    sf_fetcher(&ex.fetch, &ex.fetcher);
    start_arg a = {0, ""};
    iol_call(ex.l, start, &a);
    if (a.rc) {
        fprintf(stderr, "ember executor %d: could not reach the driver at %s: %s\n", ex.id, url, a.err);
        return 1;
    }
    for (int i = 0; i < ex.cores; i++)
        if (pthread_create(&ex.threads[i], NULL, task_thread, NULL)) {
            fprintf(stderr, "ember executor: cannot start task threads\n");
            return 1;
        }
    log_msg(LOG_INFO, "executor", "executor %d: %d cores, map outputs at %s%s, driver %s", ex.id, ex.cores, ex.self,
            ex.service_port > 0 ? " (the worker's shuffle service)" : "", url);
    pthread_mutex_lock(&ex.mu);
    while (!ex.stop) pthread_cond_wait(&ex.ended, &ex.mu);
    pthread_mutex_unlock(&ex.mu);
    /* Idle task threads end at once; running tasks may be inside user code
     * that never returns: the process ends without waiting more than a
     * moment for them.  Its directory is the worker's to remove. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    for (int i = 0; i < ex.cores; i++) pthread_timedjoin_np(ex.threads[i], NULL, &until);
    if (ex.status) fprintf(stderr, "ember executor %d: %s\n", ex.id, ex.why);
    else log_msg(LOG_INFO, "executor", "executor %d: %s", ex.id, ex.why);
    fflush(stderr);
#ifdef EMBER_COVERAGE
    __gcov_dump(); /* make coverage: _exit skips the writing of the counts */
#endif
    _exit(ex.status);
}
