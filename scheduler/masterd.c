/*
 * masterd.c -- the ember-master daemon (see masterd.h).  Everything but
 * main's wait for a signal runs on one io loop thread.
 */
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "conn.h"
#include "daemon.h"
#include "ember.h"
#include "err.h"
#include "frame.h"
#include "httpd.h"
#include "log.h"
#include "master.h"
#include "master_store.h"
#include "master_ui.h"
#include "masterd.h"
#include "msg.h"
#include "netconf.h"
#include "prom.h"
#include "urlquery.h"

#define MASTERD_FRAME_MAX ((size_t)1 << 20)

enum { P_UNKNOWN = 0, P_WORKER, P_DRIVER };

typedef struct peer {
    conn *c;
    int kind;
    char id[MASTER_ID_MAX]; /* worker id or application id */
    char addr[1025];        /* a worker's host; a driver's url (msg.c's bounds) */
    char webui[1025];       /* a worker's web UI URL ("" when none) */
    uint8_t hash[32];       /* a driver's: its binary's hash */
    char *conf;             /* a driver's: the settings its executors get */
    int told;               /* a driver's: its master_app_wait state last sent, plus 1 (0: none) */
} peer;

typedef struct masterd {
    ioloop *l;
    master *m;
    listener *ls;
    char host[64];
    int port, webport;
    char url[128];
    uint64_t timeout_ms;
    peer *peers;
    int npeers, cappeers;
    httpd *web; /* the status port */
    int prom;   /* ember.ui.prometheus.enabled: the metrics endpoints */
    iol_timer tick;
    master_conf mc;
    netconf nc;
    /* FILESYSTEM recovery: the state file, the state read from it at start
     * (until loaded), the version last saved, and when a recovery stops
     * waiting. */
    master_store *store;
    uint8_t *loaded;
    size_t loaded_len;
    uint64_t saved_version, recover_until;
    int recovering_at_start;
    int stopping; /* the daemon stops: closing connections lose nothing */
    int rc; /* start-up result */
    char err[512]; /* and its message (set on the loop's thread) */
} masterd;

static uint64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* The wall clock, for the times /json shows (epoch milliseconds). */
static uint64_t wall_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

static peer *peer_of(masterd *d, conn *c) {
    for (int i = 0; i < d->npeers; i++)
        if (d->peers[i].c == c) return &d->peers[i];
    return NULL;
}

static peer *peer_by_id(masterd *d, int kind, const char *id) {
    for (int i = 0; i < d->npeers; i++)
        if (d->peers[i].kind == kind && !strcmp(d->peers[i].id, id)) return &d->peers[i];
    return NULL;
}

/* Send a message; a failure closes that connection (logged there). */
static void send_msg(conn *c, int tag, const msg_val *f, int n) {
    if (conn_send_msg(c, tag, f, n)) {
        char why[256];
        snprintf(why, sizeof why, "cannot send %s: %s", msg_name(tag), em_errmsg());
        conn_close(c, why);
    }
}

/* ------------------------------------------------ carrying out decisions */

static void tell_lost(void *ud, const master_exec *e) {
    masterd *d = ud;
    peer *p = peer_by_id(d, P_DRIVER, e->app);
    log_msg(LOG_INFO, "master", "executor %s/%d on worker %s lost", e->app, e->id, e->worker);
    if (p) {
        msg_val f[] = {msg_u((uint64_t)e->id), msg_str("its worker was lost"), msg_i(0), msg_u(0)};
        send_msg(p->c, M_EXECUTOR_LOST, f, 4);
    }
}

/* A worker is lost: every driver hears it, since the map outputs its
 * shuffle service held went with it, whichever executors wrote them (those
 * that ended before it too). */
static void tell_worker_lost(masterd *d, const char *worker) {
    msg_val f[] = {msg_str(worker)};
    for (int i = 0; i < d->npeers; i++)
        if (d->peers[i].kind == P_DRIVER) send_msg(d->peers[i].c, M_WORKER_LOST, f, 1);
}

/* A worker found silent past ember.worker.timeout, after its executors
 * were lost (tell_lost): every driver hears of it. */
static void tell_worker_expired(void *ud, const char *worker) { tell_worker_lost(ud, worker); }

/* An application ended: every worker removes its shuffle files (a worker
 * that ran none of its executors knows nothing of it). */
static void tell_app_finished(masterd *d, const char *app) {
    msg_val f[] = {msg_str(app)};
    for (int i = 0; i < d->npeers; i++)
        if (d->peers[i].kind == P_WORKER) send_msg(d->peers[i].c, M_APP_FINISHED, f, 1);
}

static void tell_kill(void *ud, const master_exec *e) {
    masterd *d = ud;
    peer *w = peer_by_id(d, P_WORKER, e->worker);
    if (w) {
        msg_val f[] = {msg_str(e->app), msg_u((uint64_t)e->id)};
        send_msg(w->c, M_KILL_EXECUTOR, f, 2);
    }
}

static void tell_launch(void *ud, const master_exec *e) {
    masterd *d = ud;
    peer *w = peer_by_id(d, P_WORKER, e->worker);
    peer *p = peer_by_id(d, P_DRIVER, e->app);
    log_msg(LOG_INFO, "master", "granting executor %s/%d on worker %s (%d cores, %lld MiB)", e->app, e->id, e->worker,
            e->cores, (long long)e->mem_mib);
    if (w && p) {
        msg_val f[] = {msg_str(e->app), msg_u((uint64_t)e->id), msg_u((uint64_t)e->cores), msg_u((uint64_t)e->mem_mib),
                       msg_str(p->addr), msg_bin(p->hash, 32), msg_str(p->conf ? p->conf : "")};
        send_msg(w->c, M_LAUNCH_EXECUTOR, f, 7);
        /* The executor's logs on its worker's web UI (its logPage). */
        char out[1500] = "", err[1500] = "";
        if (w->webui[0]) {
            ebuf q = EBUF_INIT;
            if (!urlq_encode(&q, e->app) && !ebuf_append(&q, "", 1)) {
                snprintf(out, sizeof out, "%s/logPage/?appId=%s&executorId=%d&logType=stdout", w->webui,
                         (const char *)q.p, e->id);
                snprintf(err, sizeof err, "%s/logPage/?appId=%s&executorId=%d&logType=stderr", w->webui,
                         (const char *)q.p, e->id);
            }
            ebuf_free(&q);
        }
        msg_val g[] = {msg_u((uint64_t)e->id), msg_str(e->worker), msg_str(w->addr), msg_u((uint64_t)e->cores),
                       msg_str(out), msg_str(err)};
        send_msg(p->c, M_EXECUTOR_ADDED, g, 6);
    }
}

/* Each driver hears when its application's wait changes (app_waiting):
 * whether it waits its turn for cores, or could never be served. */
static void tell_waiting(masterd *d) {
    for (int i = 0; i < d->npeers; i++) {
        peer *p = &d->peers[i];
        char why[600];
        int st = p->kind == P_DRIVER ? master_app_wait(d->m, p->id, why, sizeof why) : -1;
        if (st < 0 || st + 1 == p->told) continue;
        if (st != MASTER_APP_SERVED) log_msg(LOG_INFO, "master", "application %s waits: %s", p->id, why);
        p->told = st + 1;
        msg_val f[] = {msg_str(p->id), msg_u((uint64_t)st), msg_str(why)};
        send_msg(p->c, M_APP_WAITING, f, 3);
    }
}

/* After anything that may have changed the state: a recovery that has
 * heard from everything it waits for (or has waited ember.worker.timeout)
 * ends, and the state is saved when it changed. */
static void after_change(masterd *d) {
    uint64_t now = now_ms();
    if (master_recovering(d->m) &&
        master_recovery_done(d->m, now >= d->recover_until, now, tell_kill, tell_lost, d)) {
        log_msg(LOG_INFO, "master", "recovery done%s: ALIVE",
                now >= d->recover_until ? " (ember.worker.timeout passed: what did not come back is dropped)" : "");
        master_schedule(d->m, tell_launch, d);
    }
    tell_waiting(d);
    if (!d->store || master_version(d->m) == d->saved_version) return;
    ebuf b = EBUF_INIT;
    if (master_save(d->m, &b) || master_store_write(d->store, b.p, b.len))
        log_msg(LOG_ERROR, "master", "%s", em_errmsg());
    else d->saved_version = master_version(d->m);
    ebuf_free(&b);
}

/* ------------------------------------------------------------- messages */

static void on_open(conn *c, void *ud) {
    masterd *d = ud;
    if (d->npeers == d->cappeers) {
        int cap = d->cappeers ? d->cappeers * 2 : 16;
        peer *v = realloc(d->peers, sizeof *v * (size_t)cap);
        if (!v) {
            conn_close(c, "the master is out of memory");
            return;
        }
        d->peers = v;
        d->cappeers = cap;
    }
    peer *p = &d->peers[d->npeers++];
    memset(p, 0, sizeof *p);
    p->c = c;
}

static int copy_str(char *dst, size_t cap, const msg_val *v) {
    if (v->len >= cap) return em__seterr(EM_EINVAL, "a field of %zu bytes, over this master's %zu", v->len, cap - 1);
    memcpy(dst, v->p, v->len);
    dst[v->len] = 0;
    return 0;
}

static void on_frame(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud) {
    masterd *d = ud;
    msg m;
    char why[600];
    if (conn_take_msg(c, type, body, len, &m)) return;
    peer *p = peer_of(d, c);
    char id[MASTER_ID_MAX] = "", host[256] = "";
    switch (m.tag) {
    case M_REGISTER_WORKER:
        if (p && p->kind != P_UNKNOWN) {
            msg_val f[] = {msg_str("this connection has registered already")};
            send_msg(c, M_REGISTER_REFUSED, f, 1);
            break;
        }
        if (copy_str(id, sizeof id, &m.f[0]) || copy_str(host, sizeof host, &m.f[1]) ||
            master_register_worker(d->m, id, host, (int)m.f[2].u, (int)m.f[3].u, (int64_t)m.f[4].u, now_ms())) {
            msg_val f[] = {msg_str(em_errmsg())};
            send_msg(c, M_REGISTER_REFUSED, f, 1);
            break;
        }
        for (int i = 0; i < d->npeers; i++) /* its old connection (a network cut): forgotten, closed */
            if (d->peers[i].c != c && d->peers[i].kind == P_WORKER && !strcmp(d->peers[i].id, id)) {
                d->peers[i].kind = P_UNKNOWN;
                conn_close(d->peers[i].c, "the worker registered again on another connection");
            }
        p = peer_of(d, c);
        if (p) {
            p->kind = P_WORKER;
            snprintf(p->id, sizeof p->id, "%s", id);
            snprintf(p->addr, sizeof p->addr, "%s", host);
            snprintf(p->webui, sizeof p->webui, "%.*s", (int)m.f[6].len, m.f[6].p ? (const char *)m.f[6].p : "");
            master_worker_set_webui(d->m, id, p->webui);
        }
        log_msg(LOG_INFO, "master", "worker %s registered from %s: %d cores, %llu MiB, %llu executors running", id,
                conn_peer(c), (int)m.f[3].u, (unsigned long long)m.f[4].u, (unsigned long long)m.f[5].u);
        {
            char web[128];
            snprintf(web, sizeof web, "http://%s:%d", d->host, d->webport);
            msg_val f[] = {msg_str(d->url), msg_str(web)};
            send_msg(c, M_WORKER_REGISTERED, f, 2);
        }
        /* Its executor_running messages follow: the grants are rebuilt
         * from them once they all came. */
        master_worker_report(d->m, id, (int)m.f[5].u, tell_lost, d);
        master_schedule(d->m, tell_launch, d);
        break;
    case M_EXECUTOR_RUNNING: {
        if (!p || p->kind != P_WORKER || copy_str(id, sizeof id, &m.f[0])) break;
        int rc = master_executor_running(d->m, p->id, id, (int)m.f[1].u, (int)m.f[2].u, (int64_t)m.f[3].u, tell_kill,
                                         tell_lost, d);
        if (rc == MASTER_KILLED && !peer_by_id(d, P_DRIVER, id)) {
            /* An application this master does not run (it restarted
             * without its state, or the application ended meanwhile): for
             * the worker it has finished, and its shuffle files go. */
            msg_val f[] = {msg_str(id)};
            send_msg(c, M_APP_FINISHED, f, 1);
        }
        if (rc == MASTER_ADOPTED || rc == MASTER_KILLED)
            log_msg(rc == MASTER_KILLED ? LOG_WARN : LOG_INFO, "master", "worker %s runs executor %s/%d: %s", p->id,
                    id, (int)m.f[1].u,
                    rc == MASTER_ADOPTED ? "adopted (its grant was not saved)"
                                         : "killed (its application is not running here)");
        master_schedule(d->m, tell_launch, d);
        break;
    }
    case M_HEARTBEAT:
        if (copy_str(id, sizeof id, &m.f[0]) || master_heartbeat(d->m, id, now_ms())) {
            msg_val f[] = {msg_str("unknown worker: register again")};
            send_msg(c, M_REGISTER_REFUSED, f, 1);
        }
        break;
    case M_REGISTER_APP: {
        char name[128] = "", url[1025] = "";
        if ((p && p->kind != P_UNKNOWN) || copy_str(name, sizeof name, &m.f[0]) || copy_str(url, sizeof url, &m.f[1])) {
            msg_val f[] = {msg_str(p && p->kind != P_UNKNOWN ? "this connection has registered already"
                                                          : "a name or driver address too long")};
            send_msg(c, M_REGISTER_REFUSED, f, 1);
            break;
        }
        int again = m.f[7].len > 0; /* a driver that lost its master re-attaches */
        if (again ? copy_str(id, sizeof id, &m.f[7]) ||
                        master_reattach_app(d->m, id, name, (int)m.f[3].u, (int)m.f[4].u, (int64_t)m.f[5].u)
                  : master_register_app(d->m, name, (int)m.f[3].u, (int)m.f[4].u, (int64_t)m.f[5].u, now_ms(), id)) {
            msg_val f[] = {msg_str(em_errmsg())};
            send_msg(c, M_REGISTER_REFUSED, f, 1);
            break;
        }
        for (int i = 0; again && i < d->npeers; i++) /* its old connection: forgotten, closed */
            if (d->peers[i].c != c && d->peers[i].kind == P_DRIVER && !strcmp(d->peers[i].id, id)) {
                d->peers[i].kind = P_UNKNOWN;
                conn_close(d->peers[i].c, "the driver re-attached on another connection");
            }
        p = peer_of(d, c);
        if (p) {
            p->kind = P_DRIVER;
            snprintf(p->id, sizeof p->id, "%s", id);
            snprintf(p->addr, sizeof p->addr, "%s", url);
            memcpy(p->hash, m.f[2].p, 32);
            free(p->conf);
            if ((p->conf = malloc(m.f[6].len + 1))) {
                memcpy(p->conf, m.f[6].p, m.f[6].len);
                p->conf[m.f[6].len] = 0;
            }
        }
        {
            char user[64], ui[1025];
            snprintf(user, sizeof user, "%.*s", (int)m.f[9].len, m.f[9].p ? (const char *)m.f[9].p : "");
            snprintf(ui, sizeof ui, "%.*s", (int)m.f[8].len, m.f[8].p ? (const char *)m.f[8].p : "");
            master_app_set_info(d->m, id, user, ui);
        }
        log_msg(LOG_INFO, "master", "application %s (%s) %s from %s", id, name, again ? "re-attached" : "registered",
                conn_peer(c));
        msg_val f[] = {msg_str(id)};
        send_msg(c, M_APP_REGISTERED, f, 1);
        master_schedule(d->m, tell_launch, d);
        break;
    }
    case M_UNREGISTER_APP:
        if (!copy_str(id, sizeof id, &m.f[0]) && !master_unregister_app(d->m, id, now_ms(), tell_kill, d)) {
            log_msg(LOG_INFO, "master", "application %s finished", id);
            tell_app_finished(d, id);
            master_schedule(d->m, tell_launch, d);
        }
        break;
    case M_KILL_EXECUTOR: /* from a driver, about its own executor */
        if (!p || p->kind != P_DRIVER || copy_str(id, sizeof id, &m.f[0]) || strcmp(id, p->id)) {
            msg_val f[] = {msg_i(EM_EINVAL), msg_str("only an application's driver may kill its executors")};
            send_msg(c, M_ERROR, f, 2);
        } else if (!master_kill_executor(d->m, id, (int)m.f[1].u, tell_kill, d)) {
            log_msg(LOG_INFO, "master", "application %s asked to kill its executor %d", id, (int)m.f[1].u);
        }
        break;
    case M_EXECUTOR_EXITED: {
        if (!p || p->kind != P_WORKER || copy_str(id, sizeof id, &m.f[0])) break;
        char reason[600], removed[900];
        int sig = (int)m.f[3].u, r = sig ? snprintf(reason, sizeof reason, "killed by signal %d (%s)", sig, strsignal(sig))
                                         : snprintf(reason, sizeof reason, "exited with code %lld", (long long)m.f[2].i);
        if (m.f[4].len && r > 0 && (size_t)r < sizeof reason)
            snprintf(reason + r, sizeof reason - (size_t)r, "; the last lines of its stderr: %.*s",
                     (int)(m.f[4].len < 400 ? m.f[4].len : 400), (const char *)m.f[4].p);
        int rc;
        if (m.f[5].u) { /* the worker's reason names the library it cannot load */
            snprintf(reason, sizeof reason, "%.*s", (int)(m.f[4].len < sizeof reason ? m.f[4].len : sizeof reason - 1),
                     (const char *)m.f[4].p);
            rc = master_executor_cannot_run(d->m, id, (int)m.f[1].u, reason, now_ms(), tell_kill, d, removed,
                                            sizeof removed);
        } else
            rc = master_executor_exited(d->m, id, (int)m.f[1].u, m.f[2].i != 0 || m.f[3].u != 0, reason, now_ms(),
                                        tell_kill, d, removed, sizeof removed);
        if (rc < 0) break;
        peer *drv = peer_by_id(d, P_DRIVER, id);
        if (drv) {
            msg_val f[] = {m.f[1], m.f[4], m.f[2], m.f[3]};
            send_msg(drv->c, M_EXECUTOR_LOST, f, 4);
        }
        if (rc == MASTER_APP_REMOVED) {
            log_msg(LOG_ERROR, "master", "%s", removed);
            tell_app_finished(d, id);
            if (drv) {
                msg_val f[] = {msg_str(id), msg_str(removed)};
                send_msg(drv->c, M_APP_REMOVED, f, 2);
            }
        }
        master_schedule(d->m, tell_launch, d);
        break;
    }
    case M_EXECUTOR_REGISTERED: /* from a driver, about its own executor */
        if (p && p->kind == P_DRIVER && !copy_str(id, sizeof id, &m.f[0]) && !strcmp(id, p->id))
            master_executor_registered(d->m, id, (int)m.f[1].u);
        break;
    default:
        snprintf(why, sizeof why, "a %s message the master does not take", msg_name(m.tag));
        msg_free(&m);
        free(body);
        conn_close(c, why);
        return;
    }
    msg_free(&m);
    free(body);
    after_change(d);
}

static void on_close(conn *c, const char *reason, void *ud) {
    masterd *d = ud;
    peer *p = peer_of(d, c);
    if (!p) return;
    if (d->stopping) { /* workers, executors and applications outlive a stopped master */
        free(p->conf);
        *p = d->peers[--d->npeers];
        return;
    }
    char id[MASTER_ID_MAX];
    snprintf(id, sizeof id, "%s", p->id);
    int kind = p->kind;
    if (kind == P_WORKER && !master_worker_lost(d->m, id, tell_lost, d)) {
        log_msg(LOG_WARN, "master", "worker %s lost: %s", id, reason);
        tell_worker_lost(d, id);
    }
    if (kind == P_DRIVER && !master_unregister_app(d->m, id, now_ms(), tell_kill, d)) {
        log_msg(LOG_INFO, "master", "application %s ended: its driver disconnected (%s)", id, reason);
        tell_app_finished(d, id);
    }
    free(p->conf);
    *p = d->peers[--d->npeers];
    if (kind == P_WORKER || kind == P_DRIVER) master_schedule(d->m, tell_launch, d);
    after_change(d);
}

static const conn_cb callbacks = {on_open, on_frame, on_close};

/* ---------------------------------------------------------- status port */

/* The status port's answers: /json, the page at /, the metrics when
 * ember.ui.prometheus.enabled, 404 for the rest. */
static int status_answer(void *ud, const http_req *r, int *status, const char **ctype, ebuf *body) {
    masterd *d = ud;
    if (!strcmp(r->path, "/json") || !strcmp(r->path, "/json/")) {
        *ctype = "application/json";
        return master_json(d->m, now_ms(), wall_ms(), body);
    }
    if (!strcmp(r->path, "/")) {
        *ctype = "text/html; charset=utf-8";
        return master_ui_page(d->m, d->url, now_ms(), wall_ms(), body);
    }
    if (d->prom && (!strcmp(r->path, "/metrics/master/prometheus") || !strcmp(r->path, "/metrics/prometheus"))) {
        *ctype = PROM_CTYPE;
        return master_ui_metrics(d->m, body);
    }
    if (d->prom && !strcmp(r->path, "/metrics/applications/prometheus")) {
        *ctype = PROM_CTYPE;
        return master_ui_app_metrics(d->m, now_ms(), wall_ms(), body);
    }
    *status = 404;
    return ebuf_append(body, "not found\n", 10);
}

/* ------------------------------------------------------------ the loop */

static void on_tick(uv_timer_t *t) {
    masterd *d = (masterd *)((char *)t->data - offsetof(masterd, tick));
    if (master_expire(d->m, now_ms(), tell_lost, tell_worker_expired, d)) master_schedule(d->m, tell_launch, d);
    after_change(d);
}

static void start(masterd *d);

/* Start on the loop's thread; the message crosses to main's thread. */
static void start_fn(void *arg) {
    masterd *d = arg;
    start(d);
    if (d->rc) em__geterr(d->err, sizeof d->err);
}

static void start(masterd *d) {
    /* Control messages are small: a small frame limit bounds what one
     * message can make msgpack-c allocate. */
    conn_opts o = netconf_opts(&d->nc, "master");
    o.max_frame = MASTERD_FRAME_MAX;
    d->rc = conn_listen(d->l, d->host, d->port, &o, &callbacks, d, &d->ls, &d->port);
    if (d->rc) return;
    snprintf(d->url, sizeof d->url, "ember://%s:%d", d->host, d->port);
    /* No callback runs before this returns: the loop thread is here. */
    d->mc.url = d->url;
    if (!(d->m = master_new(&d->mc))) {
        d->rc = EM_ENOMEM;
        return;
    }
    if (d->loaded && (d->rc = master_load(d->m, d->loaded, d->loaded_len, now_ms()))) {
        d->rc = em__preferr(EM_ECORRUPT, "the master's recovery state %s", master_store_path(d->store));
        return;
    }
    d->recover_until = now_ms() + d->timeout_ms;
    d->recovering_at_start = master_recovering(d->m);
    d->saved_version = master_version(d->m);
    httpd_opts ho = {0, 0, "master"};
    if ((d->rc = httpd_start(d->l, d->host, d->webport, &ho, status_answer, d, &d->web, &d->webport))) return;
    iol_timer_init(d->l, &d->tick);
    uint64_t every = d->timeout_ms / 4 ? d->timeout_ms / 4 : 1;
    uv_timer_start(&d->tick.t, on_tick, every, every);
}

static void set_stopping(void *arg) { ((masterd *)arg)->stopping = 1; }

static const char usage[] =
    "usage: ember-master [--host HOST] [--port PORT] [--webui-port PORT] [--conf KEY=VALUE]...\n"
    "                    [--insecure]\n"
    "  Runs the cluster master: workers and applications connect to HOST:PORT\n"
    "  (default 127.0.0.1:7077), its state is served on HOST:WEBUI_PORT (default\n"
    "  8080) as /json and a page at /.  PORT 0: any free port (the log line says\n"
    "  which).  ember.ui.prometheus.enabled (false) adds /metrics/master/prometheus,\n"
    "  /metrics/prometheus and /metrics/applications/prometheus.\n"
    "  Settings: ember.worker.timeout (10s), ember.deploy.spreadOut (true),\n"
    "  ember.deploy.maxExecutorRetries (10: executors failed in a row before an\n"
    "  application with none running is removed; -1: never),\n"
    "  ember.log.level (info), ember.authenticate.secret or secretFile (or\n"
    "  $EMBER_SECRET_FILE), ember.network.crypto.enabled,\n"
    "  ember.deploy.recoveryMode (NONE; FILESYSTEM keeps the master's state in\n"
    "  ember.deploy.recoveryDirectory so that a restarted master picks up the\n"
    "  running workers and applications).  A HOST other than a\n"
    "  loopback address needs a secret, or --insecure.  Stops on SIGTERM or SIGINT.\n";

int masterd_main(int argc, char **argv) {
    masterd d;
    memset(&d, 0, sizeof d);
    snprintf(d.host, sizeof d.host, "127.0.0.1");
    d.port = 7077;
    d.webport = 8080;
    em_conf *conf = em_conf_new();
    if (!conf) return 1;
    const daemon_opt opts[] = {
        {.name = "--insecure", .kind = DA_SET_TRUE, .key = "ember.network.insecure"},
        {.name = "--host", .kind = DA_STR, .out = d.host, .cap = sizeof d.host},
        {.name = "--port", .kind = DA_INT, .out = &d.port, .min = 0, .max = 65535},
        {.name = "--webui-port", .kind = DA_INT, .out = &d.webport, .min = 0, .max = 65535},
        {.name = "--conf", .kind = DA_CONF},
        {.name = NULL},
    };
    const daemon_cmd cmd = {"ember-master", usage, opts, NULL};
    int arc = daemon_args_parse(&cmd, argc, argv, conf);
    if (arc) {
        em_conf_free(conf);
        return arc == 1 ? 0 : 2;
    }
    d.timeout_ms = (uint64_t)conf_duration_ms(conf, "ember.worker.timeout");
    d.mc.worker_timeout_ms = d.timeout_ms;
    d.mc.spread_out = conf_bool(conf, "ember.deploy.spreadOut");
    d.mc.max_exec_retries = (int)conf_i64(conf, "ember.deploy.maxExecutorRetries");
    d.prom = conf_bool(conf, "ember.ui.prometheus.enabled");
    int filesystem = !strcasecmp(em_conf_get(conf, "ember.deploy.recoveryMode"), "FILESYSTEM");
    char rdir[900];
    int rdir_ok = snprintf(rdir, sizeof rdir, "%s", em_conf_get(conf, "ember.deploy.recoveryDirectory")) <
                  (int)sizeof rdir;
    int nrc = netconf_load(conf, &d.nc);
    em_conf_free(conf);
    if (nrc || netconf_check_bind(&d.nc, d.host, "ember-master")) {
        fprintf(stderr, "ember-master: %s\n", em_errmsg());
        netconf_free(&d.nc);
        return 1;
    }
    /* FILESYSTEM recovery: the state of a master that ran before, read
     * before anything listens; a corrupt one stops the start (as Spark's
     * master does) rather than forget a running cluster. */
    if (filesystem && (!rdir[0] || !rdir_ok)) {
        fprintf(stderr, "ember-master: ember.deploy.recoveryMode is FILESYSTEM but ember.deploy.recoveryDirectory %s\n",
                rdir_ok ? "is not set (the directory that keeps the master's state)" : "is too long");
        netconf_free(&d.nc);
        return 2;
    }
    int src = 0;
    if (filesystem && (!(d.store = master_store_open(rdir)) ||
                       (src = master_store_read(d.store, &d.loaded, &d.loaded_len)))) {
        fprintf(stderr, "ember-master: %s%s\n", em_errmsg(),
                src == EM_ECORRUPT ? " (delete the file to start with an empty state)" : "");
        master_store_close(d.store);
        netconf_free(&d.nc);
        return 1;
    }
    /* Signals are taken by sigwait below, not by the loop thread. */
    sigset_t sigs;
    daemon_block_signals(&sigs);
    if (!(d.l = iol_start("master"))) {
        fprintf(stderr, "ember-master: %s\n", em_errmsg());
        return 1;
    }
    iol_call(d.l, start_fn, &d);
    free(d.loaded);
    d.loaded = NULL;
    if (d.rc) {
        fprintf(stderr, "ember-master: %s%s\n", d.err,
                d.rc == EM_ECORRUPT ? " (delete the file to start with an empty state)" : "");
        iol_stop(d.l);
        master_free(d.m);
        master_store_close(d.store);
        netconf_free(&d.nc);
        return 1;
    }
    log_msg(LOG_INFO, "master", "listening on %s:%d, status on http://%s:%d/json, worker timeout %llu ms", d.host,
            d.port, d.host, d.webport, (unsigned long long)d.timeout_ms);
    if (d.store)
        log_msg(LOG_INFO, "master", "recovery mode FILESYSTEM: state in %s%s", master_store_path(d.store),
                d.rc == 0 && d.recovering_at_start ? "; RECOVERING: waiting for the workers and drivers it knew, "
                                                     "for at most ember.worker.timeout"
                                                   : "");
    /* A driver that started this master (local-cluster) learns its ports. */
    const char *rfd = getenv("EMBER_READY_FD");
    if (rfd && *rfd) {
        int fd = atoi(rfd);
        dprintf(fd, "%d %d\n", d.port, d.webport);
        close(fd);
    }
    int sig = 0;
    sigwait(&sigs, &sig);
    log_msg(LOG_INFO, "master", "stopping on signal %d", sig);
    iol_call(d.l, set_stopping, &d);
    iol_stop(d.l); /* closes every connection and listener */
    master_free(d.m);
    master_store_close(d.store);
    for (int i = 0; i < d.npeers; i++) free(d.peers[i].conf);
    free(d.peers);
    netconf_free(&d.nc);
    return 0;
}
