/*
 * cluster.c -- the driver's cluster backend (see cluster.h).
 *
 * It serves what executors and workers fetch from the application through
 * appserve.h, and starts local-cluster's daemons through lcluster.h.
 *
 * Threads.  Every connection lives on the backend's io loop.  The
 * scheduler's thread calls launch, kill, flush and running_since: launches
 * gather in a list under mu and go to the loop at flush, in one post per
 * burst; the table of attempts in flight (which executor, since when) is
 * under mu too, since the loop ends attempts and the scheduler asks about
 * them.  Executors' records are the loop's; their count of cores is read
 * under mu.
 */
#include <pwd.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "appbin.h"
#include "appserve.h"
#include "cluster.h"
#include "cluster_int.h"
#include "conn.h"
#include "ember.h"
#include "err.h"
#include "fnref.h"
#include "idmap.h"
#include "lcluster.h"
#include "log.h"
#include "master.h"
#include "msg.h"
#include "taskresult.h"

#define START_WAIT_MS 20000   /* the application's registration */
#define RECONNECT_MS 1000     /* a lost master: the pause before each new try */

/* The backend's state: cluster_int.h. */


/* A message to every executor alive, or to one (exec >= 0). */
typedef struct bcast_msg {
    cluster *k;
    int exec, tag, n;
    msg_val f[3];
} bcast_msg;

static void send_to_exec(cexec *x, const bcast_msg *m) {
    if (x && x->alive && conn_send_msg(x->c, m->tag, m->f, m->n)) conn_close(x->c, em_errmsg());
}

static void send_to_execs(void *arg) {
    bcast_msg *m = arg;
    cluster *k = m->k;
    if (m->exec >= 0) send_to_exec(exec_of(k, m->exec), m);
    else
        for (int i = 0; i < k->nexec; i++) send_to_exec(&k->execs[i], m);
    free(m);
}

static void post_to_execs(cluster *k, int exec, int tag, int n, uint64_t a, uint64_t b, uint64_t c) {
    bcast_msg *m = calloc(1, sizeof *m);
    if (!m) return;
    m->k = k;
    m->exec = exec;
    m->tag = tag;
    m->n = n;
    m->f[0] = msg_u(a);
    m->f[1] = msg_u(b);
    m->f[2] = msg_u(c);
    if (iol_post(k->l, send_to_execs, m)) free(m);
}

static void c_drop_map_output(backend *b, int exec, uint32_t shuffle_id, int map, uint64_t attempt) {
    post_to_execs((cluster *)b, exec, M_DROP_MAP_OUTPUT, 3, shuffle_id, (uint64_t)map, attempt);
}

/* The others go to every executor. */
static void c_drop_shuffle(backend *b, uint32_t id) { post_to_execs((cluster *)b, -1, M_DROP_SHUFFLE, 1, id, 0, 0); }
static void c_drop_bcast(backend *b, uint64_t id) { post_to_execs((cluster *)b, -1, M_DROP_BCAST, 1, id, 0, 0); }
static void c_drop_rdd(backend *b, uint64_t ns, int rdd) { post_to_execs((cluster *)b, -1, M_DROP_RDD, 2, ns, rdd, 0); }

static int c_registered_cores(backend *b) {
    cluster *k = (cluster *)b;
    pthread_mutex_lock(&k->mu);
    int n = k->total_cores;
    pthread_mutex_unlock(&k->mu);
    return n;
}

static int c_cores(backend *b) {
    cluster *k = (cluster *)b;
    int n = c_registered_cores(b);
    /* local-cluster's are known before they register; otherwise those
     * registered, at least 2 (Spark's defaultParallelism). */
    int floor = k->lc_workers ? k->lc_workers * k->lc_cores : 2;
    return n > floor ? n : floor;
}

static int c_why_idle(backend *b, char *buf, size_t cap) {
    cluster *k = (cluster *)b;
    int final = 1;
    pthread_mutex_lock(&k->mu);
    if (k->wait_state == 1 + MASTER_APP_QUEUED) { /* Spark's WAITING application: its turn comes */
        snprintf(buf, cap, "the master %s: %s", k->master_url, k->wait_why);
        final = 0;
    } else if (k->granted && !k->why[0] && ev_now_us() - k->grant_us < k->register_wait_ms * 1000u) {
        /* An executor granted since the wait began has its own
         * maxRegisteredWait to register (a queued application's turn). */
        snprintf(buf, cap, "the master %s granted %d executor(s); waiting for them to register", k->master_url,
                 k->granted);
        final = 0;
    } else if (k->why[0]) snprintf(buf, cap, "no executor is alive after ember.scheduler.maxRegisteredWait: %s", k->why);
    else if (k->granted)
        snprintf(buf, cap,
                 "no executor is alive after ember.scheduler.maxRegisteredWait: the master granted %d but none "
                 "registered: they could not reach the driver at %s (set ember.driver.host to an address the "
                 "workers can reach)",
                 k->granted, k->url);
    else if (k->wait_state == 1 + MASTER_APP_UNSERVABLE)
        snprintf(buf, cap,
                 "Initial job has not accepted any resources after ember.scheduler.maxRegisteredWait: the master "
                 "%s granted no executor: %s (check its status page and the workers' logs)",
                 k->master_url, k->wait_why);
    else
        snprintf(buf, cap,
                 "Initial job has not accepted any resources after ember.scheduler.maxRegisteredWait: the master "
                 "%s granted no executor: no alive workers, or none with %d free cores and %lld MiB free memory "
                 "(check its status page and the workers' logs)",
                 k->master_url, k->exec_cores ? k->exec_cores : 1, (long long)k->exec_mem_mib);
    pthread_mutex_unlock(&k->mu);
    return final;
}

/* --------------------------------------------------- the master's connection */

static void reg_done(cluster *k, int state, const char *err) {
    pthread_mutex_lock(&k->mu);
    if (k->reg_state == 0) {
        k->reg_state = state;
        if (err) snprintf(k->reg_err, sizeof k->reg_err, "%.*s", (int)sizeof k->reg_err - 1, err);
        pthread_cond_broadcast(&k->reg_cv);
    }
    pthread_mutex_unlock(&k->mu);
}

/* Register the application; once it has an id (a master lost since), the
 * driver re-attaches to it instead: its executors keep running, and the
 * master (recovered from its saved state) keeps its grants. */
static void master_open(conn *c, void *ud) {
    cluster *k = ud;
    k->master_opened = 1;
    msg_val f[] = {msg_str(k->name), msg_str(k->url), msg_bin(fnref_binary_hash(), 32), msg_u((uint64_t)k->cores_max),
                   msg_u((uint64_t)k->exec_cores), msg_u((uint64_t)k->exec_mem_mib), msg_str(k->exec_conf),
                   msg_str(k->app_id), msg_str(k->ui_url), msg_str(k->user)};
    if (conn_send_msg(c, M_REGISTER_APP, f, 10)) conn_close(c, em_errmsg());
}

static void exec_exit_known(cluster *k, int id, int64_t code, int sig, const char *tail);

static void note_grant(cluster *k, int exec, const msg *m);
static void worker_lost(cluster *k, const char *worker);

static void master_frame(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud) {
    cluster *k = ud;
    msg m;
    char why[800];
    if (conn_take_msg(c, type, body, len, &m)) return;
    switch (m.tag) {
    case M_APP_REGISTERED:
        if (k->app_id[0]) {
            log_msg(LOG_WARN, "driver", "re-attached to application %s at %s", k->app_id, k->master_url);
            k->master_down = 0;
        } else {
            snprintf(k->app_id, sizeof k->app_id, "%.*s", (int)m.f[0].len, (const char *)m.f[0].p);
            log_msg(LOG_INFO, "driver", "application %s registered with %s", k->app_id, k->master_url);
        }
        reg_done(k, 1, NULL);
        break;
    case M_REGISTER_REFUSED:
        if (k->app_id[0]) { /* a re-attach: this master does not know the application */
            snprintf(why, sizeof why, "the master %s refused to re-attach application %s: %.*s", k->master_url,
                     k->app_id, (int)(m.f[0].len > 600 ? 600 : m.f[0].len), (const char *)m.f[0].p);
            log_msg(LOG_ERROR, "driver", "%s", why);
            k->reattach_refused = 1;
            pthread_mutex_lock(&k->mu);
            snprintf(k->why, sizeof k->why, "%s", why);
            pthread_mutex_unlock(&k->mu);
            conn_close(c, why);
            break;
        }
        snprintf(why, sizeof why, "the master %s refused the application: %.*s", k->master_url, (int)m.f[0].len,
                 (const char *)m.f[0].p);
        reg_done(k, EM_EINVAL, why);
        conn_close(c, why);
        break;
    case M_EXECUTOR_ADDED:
        pthread_mutex_lock(&k->mu);
        k->granted++;
        k->grant_us = ev_now_us();
        pthread_mutex_unlock(&k->mu);
        if (m.f[0].u <= INT32_MAX) note_grant(k, (int)m.f[0].u, &m);
        log_msg(LOG_DEBUG, "driver", "executor %llu granted on %.*s", (unsigned long long)m.f[0].u, (int)m.f[1].len,
                (const char *)m.f[1].p);
        break;
    case M_EXECUTOR_LOST: {
        char tail[400];
        snprintf(tail, sizeof tail, "%.*s", (int)(m.f[1].len > 399 ? 399 : m.f[1].len), (const char *)m.f[1].p);
        exec_exit_known(k, (int)m.f[0].u, m.f[2].i, (int)m.f[3].u, tail);
        pthread_mutex_lock(&k->mu);
        if (!k->refused_once)
            snprintf(k->why, sizeof k->why, "executor %llu exited: %.*s", (unsigned long long)m.f[0].u,
                     (int)(m.f[1].len > 1000 ? 1000 : m.f[1].len), (const char *)m.f[1].p);
        pthread_mutex_unlock(&k->mu);
        log_msg(LOG_WARN, "driver", "executor %llu lost: %.*s", (unsigned long long)m.f[0].u, (int)m.f[1].len,
                (const char *)m.f[1].p);
        break;
    }
    case M_APP_REMOVED: {
        /* Spark's "Master removed our application": every job fails,
         * now and later, with the master's reason. */
        snprintf(why, sizeof why, "%.*s", (int)(m.f[1].len < sizeof why - 1 ? m.f[1].len : sizeof why - 1),
                 (const char *)m.f[1].p);
        log_msg(LOG_ERROR, "driver", "%s", why);
        pthread_mutex_lock(&k->mu);
        snprintf(k->why, sizeof k->why, "%s", why);
        pthread_mutex_unlock(&k->mu);
        sched_event *ev = calloc(1, sizeof *ev);
        if (ev) {
            ev->kind = EV_APP_FAILED;
            ev->final = 1;
            ev->res.status = EM_EEXEC;
            snprintf(ev->res.errmsg, sizeof ev->res.errmsg, "%.*s", (int)sizeof ev->res.errmsg - 1, why);
            evq_post(k->events, ev);
        }
        break;
    }
    case M_APP_WAITING: /* about this application: the id is the master's business */
        pthread_mutex_lock(&k->mu);
        k->wait_state = 1 + (int)m.f[1].u;
        snprintf(k->wait_why, sizeof k->wait_why, "%.*s", (int)(m.f[2].len < sizeof k->wait_why - 1 ? m.f[2].len : sizeof k->wait_why - 1),
                 (const char *)m.f[2].p);
        pthread_mutex_unlock(&k->mu);
        if (m.f[1].u != MASTER_APP_SERVED)
            log_msg(LOG_INFO, "driver", "the master %s: %s", k->master_url, k->wait_why);
        break;
    case M_WORKER_LOST: {
        char wid[64];
        snprintf(wid, sizeof wid, "%.*s", (int)(m.f[0].len < 63 ? m.f[0].len : 63), (const char *)m.f[0].p);
        worker_lost(k, wid);
        break;
    }
    default:
        snprintf(why, sizeof why, "a %s message the driver does not take from its master", msg_name(m.tag));
        conn_close(c, why);
    }
    msg_free(&m);
    free(body);
}

static void reconnect_master(uv_timer_t *t);

static void master_closed(conn *c, const char *reason, void *ud) {
    (void)c;
    cluster *k = ud;
    char why[900];
    pthread_mutex_lock(&k->mu);
    int registering = k->reg_state == 0;
    k->wait_state = 0; /* the next master's word counts */
    pthread_mutex_unlock(&k->mu);
    /* The hint only fits a connection the master opened, then closed
     * before the application registered: a refused or failed connect
     * reached no master at all. */
    snprintf(why, sizeof why, "the master %s: %s%s", k->master_url, reason,
             registering && k->master_opened && !k->co.secret
                 ? " (a master that requires a shared secret closes a client without one: "
                   "set ember.authenticate.secret or secretFile)"
                 : "");
    k->master_opened = 0;
    k->master = NULL;
    reg_done(k, EM_EIO, why);
    if (k->stopping || k->reattach_refused) return;
    if (!k->master_down) {
        if (k->app_id[0])
            log_msg(LOG_WARN, "driver", "lost the master: %s; re-attaching every %d ms (the executors keep running)",
                    why, RECONNECT_MS);
        else log_msg(LOG_WARN, "driver", "lost the master: %s", why);
        pthread_mutex_lock(&k->mu);
        snprintf(k->why, sizeof k->why, "%s", why);
        pthread_mutex_unlock(&k->mu);
    }
    k->master_down = 1;
    /* A registered application tries again, until the master (restarted,
     * or reachable again) takes it back or refuses it. */
    if (k->app_id[0]) uv_timer_start(&k->reconnect.t, reconnect_master, RECONNECT_MS, 0);
}

static const conn_cb master_cb = {master_open, master_frame, master_closed};

static void reconnect_master(uv_timer_t *t) {
    cluster *k = (cluster *)((char *)t->data - offsetof(cluster, reconnect));
    if (k->master || k->stopping || k->reattach_refused) return;
    conn_opts o = k->co;
    o.component = "driver";
    if (conn_connect(k->l, k->mhost, k->mport, &o, &master_cb, k, &k->master)) {
        k->master = NULL;
        uv_timer_start(&k->reconnect.t, reconnect_master, RECONNECT_MS, 0);
    }
}

/* ------------------------------------------- executors and binary fetches */

static lconn *lconn_of(cluster *k, conn *c) {
    for (int i = 0; i < k->nlconn; i++)
        if (k->lconns[i].c == c) return &k->lconns[i];
    return NULL;
}

static void listen_open(conn *c, void *ud) {
    cluster *k = ud;
    if (k->nlconn == k->caplconn) {
        int cap = k->caplconn ? k->caplconn * 2 : 8;
        lconn *v = realloc(k->lconns, sizeof *v * (size_t)cap);
        if (!v) {
            conn_close(c, "the driver is out of memory");
            return;
        }
        k->lconns = v;
        k->caplconn = cap;
    }
    lconn *l = &k->lconns[k->nlconn++];
    memset(l, 0, sizeof *l);
    l->c = c;
    l->exec = -1;
}

static void refuse(cluster *k, conn *c, lconn *l, const char *why) {
    msg_val f[] = {msg_str(why)};
    conn_send_msg(c, M_EXECUTOR_REFUSED, f, 1);
    l->kind = K_REFUSED;
    log_msg(LOG_ERROR, "driver", "refused executor from %s: %s", conn_peer(c), why);
    pthread_mutex_lock(&k->mu);
    snprintf(k->why, sizeof k->why, "%s", why);
    int first = !k->refused_once;
    k->refused_once = 1;
    pthread_mutex_unlock(&k->mu);
    if (first) { /* once: the application cannot run as it is */
        sched_event *ev = calloc(1, sizeof *ev);
        if (ev) {
            ev->kind = EV_APP_FAILED;
            ev->res.status = EM_EEXEC;
            snprintf(ev->res.errmsg, sizeof ev->res.errmsg, "%s", why);
            evq_post(k->events, ev);
        }
    }
}

static void register_exec(cluster *k, conn *c, lconn *l, const msg *m) {
    char why[600];
    if (sodium_memcmp(m->f[4].p, fnref_binary_hash(), 32)) {
        char mine[65], theirs[65];
        appbin_hex(fnref_binary_hash(), mine);
        appbin_hex(m->f[4].p, theirs);
        snprintf(why, sizeof why,
                 "executor %llu runs another binary than the driver's (its hash %.16s..., the driver's %.16s...): "
                 "an executor must run the driver's own program, linked with the same libember",
                 (unsigned long long)m->f[0].u, theirs, mine);
        refuse(k, c, l, why);
        return;
    }
    int id = (int)m->f[0].u;
    if (m->f[0].u > INT32_MAX || (exec_of(k, id) && exec_of(k, id)->alive)) {
        snprintf(why, sizeof why, "executor id %llu is registered already", (unsigned long long)m->f[0].u);
        refuse(k, c, l, why);
        return;
    }
    cexec *x = exec_of(k, id);
    if (!x) {
        if (k->nexec == k->capexec) {
            int cap = k->capexec ? k->capexec * 2 : 8;
            cexec *v = realloc(k->execs, sizeof *v * (size_t)cap);
            if (!v) {
                conn_close(c, "the driver is out of memory");
                return;
            }
            k->execs = v;
            k->capexec = cap;
        }
        if (id != k->nexec && idmap_put_index(&k->exec_moved, (uint64_t)id, k->nexec)) {
            conn_close(c, "the driver is out of memory");
            return;
        }
        x = &k->execs[k->nexec++];
    }
    memset(x, 0, sizeof *x);
    x->id = id;
    x->cores = (int)m->f[3].u;
    x->alive = 1;
    x->served = (int)m->f[5].u;
    x->c = c;
    x->heard_ms = uv_now(iol_uv(k->l));
    snprintf(x->addr, sizeof x->addr, "%.*s:%llu", (int)(m->f[1].len > 60 ? 60 : m->f[1].len),
             (const char *)m->f[1].p, (unsigned long long)m->f[2].u);
    l->kind = K_EXEC;
    l->exec = id;
    pthread_mutex_lock(&k->mu);
    k->total_cores += x->cores;
    pthread_mutex_unlock(&k->mu);
    sched_event *ev = calloc(1, sizeof *ev);
    if (ev) {
        ev->kind = EV_EXEC_ADDED;
        ev->exec = id;
        ev->cores = x->cores;
        ev->backlog = k->task_queue * x->cores;
        ev->backlog_max = k->task_queue_max * x->cores;
        snprintf(ev->text, sizeof ev->text, "%s", x->addr);
        /* The host it advertised for its shuffle server: where it runs. */
        snprintf(ev->host, sizeof ev->host, "%.*s", (int)(m->f[1].len > 63 ? 63 : m->f[1].len),
                 (const char *)m->f[1].p);
        for (int i = 0; i < k->ngrant; i++)
            if (k->grants[i].exec == id) {
                ev->out_url = k->grants[i].out_url ? strdup(k->grants[i].out_url) : NULL;
                ev->err_url = k->grants[i].err_url ? strdup(k->grants[i].err_url) : NULL;
            }
        evq_post(k->events, ev);
    }
    log_msg(LOG_INFO, "driver", "executor %d registered from %s: %d cores, shuffle server %s%s", id, conn_peer(c),
            x->cores, x->addr, x->served ? ", map outputs served by its worker" : "");
    /* The master hears it runs: the application's count of executors
     * failed in a row restarts (ember.deploy.maxExecutorRetries). */
    if (k->master && k->app_id[0]) {
        msg_val f[] = {msg_str(k->app_id), msg_u((uint64_t)id)};
        if (conn_send_msg(k->master, M_EXECUTOR_REGISTERED, f, 2)) conn_close(k->master, em_errmsg());
    }
}

/* Whether an executor's end was of its own making: a signal it raised
 * (a fault, an abort) or an exit with a non-zero code.  SIGKILL, SIGTERM,
 * SIGINT and SIGHUP come from outside (an operator, its worker, the
 * kernel's OOM killer). */
static int exit_is_crash(int64_t code, int sig) {
    if (sig) return sig != SIGKILL && sig != SIGTERM && sig != SIGINT && sig != SIGHUP;
    return code != 0;
}

/* "killed by signal 11 (Segmentation fault)" or "exited with code 3", and
 * its stderr's last lines. */
static void describe_exit(char *out, size_t n, int64_t code, int sig, const char *tail) {
    if (!sig && !code) { /* not an exit: the master's reason (its worker was lost) */
        snprintf(out, n, "%s", tail && *tail ? tail : "its worker was lost");
        return;
    }
    int k = sig ? snprintf(out, n, "its process was killed by signal %d (%s)", sig, strsignal(sig))
                : snprintf(out, n, "its process exited with code %lld", (long long)code);
    if (tail && *tail && k > 0 && (size_t)k < n) snprintf(out + k, n - (size_t)k, "; the last lines of its stderr: %s", tail);
}

/* End a lost executor's attempts: failures when crash, else attempts
 * that run again without counting. */
static void post_lost(cluster *k, int exec, const uint64_t *ids, size_t n, const char *why, int crash) {
    for (size_t i = 0; i < n; i++) ck_post_ended(k, ids[i], exec, why, !crash);
}

/* The master's word on how executor id ended (or that its worker was
 * lost: code and signal 0). */
static void exec_exit_known(cluster *k, int id, int64_t code, int sig, const char *tail) {
    char how[900], why[1700];
    for (lost_exec **pp = &k->lost; *pp; pp = &(*pp)->next) {
        lost_exec *e = *pp;
        if (e->exec != id) continue;
        describe_exit(how, sizeof how, code, sig, tail);
        int crash = exit_is_crash(code, sig);
        snprintf(why, sizeof why, "%s; %s%s", e->why, how, crash ? "" : " (not counted as a task failure)");
        post_lost(k, e->exec, e->ids, e->n, why, crash);
        *pp = e->next;
        free(e->ids);
        free(e);
        return;
    }
    cexec *x = exec_of(k, id);
    if (x && x->alive) { /* its connection has yet to close */
        x->exit_known = 1;
        x->exit_code = code;
        x->exit_sig = sig;
        snprintf(x->exit_tail, sizeof x->exit_tail, "%s", tail ? tail : "");
    }
}

/* Attempts whose executor's end went untold past the wait (or all of
 * them, when the driver stops): they run again, not counted. */
static void flush_lost(cluster *k, uint64_t now, int all) {
    char why[900];
    for (lost_exec **pp = &k->lost; *pp;) {
        lost_exec *e = *pp;
        if (!all && now < e->deadline_ms) {
            pp = &e->next;
            continue;
        }
        snprintf(why, sizeof why, "%s (not counted as a task failure)", e->why);
        post_lost(k, e->exec, e->ids, e->n, why, 0);
        *pp = e->next;
        free(e->ids);
        free(e);
    }
}

/* An executor's connection closed: it is lost, and its attempts end --
 * once the master tells how its process ended (see lost_exec). */
static void exec_lost(cluster *k, cexec *x, const char *reason) {
    char why[700];
    snprintf(why, sizeof why, "executor %d lost: %s", x->id, reason);
    x->alive = 0;
    size_t n = 0;
    pthread_mutex_lock(&k->mu);
    k->total_cores -= x->cores;
    if (!k->stopping && !k->why[0]) snprintf(k->why, sizeof k->why, "%s", why);
    uint64_t *ids = malloc(sizeof *ids * (k->tasks.n + 1));
    for (uint32_t i = 0; ids && i < k->tasks.cap; i++) {
        ctask *t = k->tasks.vals[i];
        if (t && t->exec == x->id) ids[n++] = t->id;
    }
    for (size_t i = 0; i < n; i++) ck_task_free(idmap_del(&k->tasks, ids[i]));
    pthread_mutex_unlock(&k->mu);
    /* The loss first: no slot its attempts' ends free is offered again. */
    sched_event *ev = calloc(1, sizeof *ev);
    if (ev) {
        ev->kind = EV_EXEC_LOST;
        ev->exec = x->id;
        ev->keep_outputs = x->served && !x->worker_lost;
        snprintf(ev->text, sizeof ev->text, "%.127s", reason);
        evq_post(k->events, ev);
    }
    lost_exec *e = NULL;
    if (x->exit_known) {
        char how[900], full[1700];
        describe_exit(how, sizeof how, x->exit_code, x->exit_sig, x->exit_tail);
        int crash = exit_is_crash(x->exit_code, x->exit_sig);
        snprintf(full, sizeof full, "%s; %s%s", why, how, crash ? "" : " (not counted as a task failure)");
        post_lost(k, x->id, ids, n, full, crash);
    } else if (n && !k->stopping && k->master && (e = calloc(1, sizeof *e))) {
        e->exec = x->id;
        e->ids = ids;
        e->n = n;
        ids = NULL;
        snprintf(e->why, sizeof e->why, "%s", why);
        e->deadline_ms = uv_now(iol_uv(k->l)) + LOST_WAIT_MS;
        e->next = k->lost;
        k->lost = e;
    } else {
        post_lost(k, x->id, ids, n, why, 0);
    }
    free(ids);
    if (!k->stopping) log_msg(LOG_WARN, "driver", "%s", why);
}

/* The master says a worker was lost: the map outputs of every executor it
 * ran are gone (its shuffle service with it).  An executor still alive
 * here will be lost as its connection closes; its outputs go now. */
static void worker_lost(cluster *k, const char *worker) {
    if (k->stopping) return;
    for (int i = 0; i < k->ngrant; i++) {
        if (strcmp(k->grants[i].worker, worker)) continue;
        cexec *x = exec_of(k, k->grants[i].exec);
        if (x) x->worker_lost = 1;
        sched_event *ev = calloc(1, sizeof *ev);
        if (!ev) continue;
        ev->kind = EV_EXEC_LOST;
        ev->exec = k->grants[i].exec;
        snprintf(ev->text, sizeof ev->text, "its worker %.60s was lost", worker);
        evq_post(k->events, ev);
    }
    log_msg(LOG_WARN, "driver", "worker %s lost: the map outputs of its executors are lost", worker);
}

static char *url_of(const msg *m, int i) {
    if (m->n <= i || !m->f[i].len) return NULL;
    return strndup((const char *)m->f[i].p, m->f[i].len);
}

/* Note the worker of a granted executor, and where it serves the
 * executor's logs. */
static void note_grant(cluster *k, int exec, const msg *m) {
    const msg_val *worker = &m->f[1];
    if (k->ngrant == k->capgrant) {
        int cap = k->capgrant ? k->capgrant * 2 : 8;
        struct grant *v = realloc(k->grants, sizeof *v * (size_t)cap);
        if (!v) return; /* (its outputs are then lost by fetch failures, as without the service) */
        k->grants = v;
        k->capgrant = cap;
    }
    struct grant *g = &k->grants[k->ngrant++];
    g->exec = exec;
    snprintf(g->worker, sizeof g->worker, "%.*s", (int)(worker->len < 63 ? worker->len : 63), (const char *)worker->p);
    g->out_url = url_of(m, 4);
    g->err_url = url_of(m, 5);
}

static void listen_frame(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud) {
    cluster *k = ud;
    lconn *l = lconn_of(k, c);
    msg m;
    char why[800];
    if (!l) {
        free(body);
        conn_close(c, "a connection the driver does not know");
        return;
    }
    if (conn_take_msg(c, type, body, len, &m)) return;
    if (l->kind == K_EXEC) { /* any frame is a sign of life */
        cexec *x = exec_of(k, l->exec);
        if (x && x->c == c) x->heard_ms = uv_now(iol_uv(k->l));
    }
    /* A connection registers once, as an executor, or fetches the binary;
     * an executor sends the rest.  Anything else closes it. */
    int tag = l->kind == K_UNKNOWN ? (m.tag == M_REGISTER_EXECUTOR || m.tag == M_FETCH_BINARY ? m.tag : -1)
              : l->kind == K_EXEC  ? (m.tag == M_REGISTER_EXECUTOR || m.tag == M_FETCH_BINARY ? -1 : m.tag)
                                   : -1;
    switch (tag) {
    case M_REGISTER_EXECUTOR: register_exec(k, c, l, &m); break;
    case M_FETCH_BINARY: appserve_binary(k->serve, &l->serve, c, &m); break;
    case M_TASK_ENDED: ck_task_ended(k, c, &m, l->exec); break;
    case M_RESULT_PART: ck_result_part(k, c, &m, l->exec); break;
    case M_ASK_COMMIT: {
        int granted = k->ask_commit ? k->ask_commit(k->commit_ctx, (uint32_t)m.f[1].u, (int32_t)m.f[2].u, m.f[3].u) : 1;
        msg_val f[] = {m.f[0], msg_u((uint64_t)granted)};
        if (conn_send_msg(c, M_COMMIT_ANSWER, f, 2)) conn_close(c, em_errmsg());
        break;
    }
    case M_FETCH_BCAST: appserve_bcast(k->serve, c, &m); break;
    case M_FETCH_SOURCE: appserve_source(k->serve, &l->serve, c, &m); break;
    case M_HEARTBEAT: { /* heard, above; and faults that fired in the executor outside its tasks */
        sched_event *ev = m.f[1].u ? calloc(1, sizeof *ev) : NULL;
        if (ev) { /* counted in order with the ends of tasks heard of after */
            ev->kind = EV_FAULTS_FIRED;
            ev->exec = l->exec;
            ev->res.faults_fired = (int64_t)m.f[1].u;
            evq_post(k->events, ev);
        }
        break;
    }
    default:
        snprintf(why, sizeof why, "a %s message the driver does not take here", msg_name(m.tag));
        conn_close(c, why);
    }
    msg_free(&m);
    free(body);
}

static void listen_closed(conn *c, const char *reason, void *ud) {
    cluster *k = ud;
    lconn *l = lconn_of(k, c);
    if (!l) return;
    if (l->kind == K_EXEC) {
        cexec *x = exec_of(k, l->exec);
        if (x && x->alive && x->c == c) exec_lost(k, x, reason);
    }
    appserve_conn_free(l->serve);
    *l = k->lconns[--k->nlconn];
}

static const conn_cb listen_cb = {listen_open, listen_frame, listen_closed};

/* An executor silent for ember.network.timeout (stopped, hung, cut off:
 * its connection may stay open for hours) is lost: its worker is asked to
 * kill it, and its connection closes, which fails its attempts. */
static void on_watch(uv_timer_t *t) {
    cluster *k = (cluster *)((char *)t->data - offsetof(cluster, watch));
    uint64_t now = uv_now(iol_uv(k->l)), prev = k->watch_ms;
    k->watch_ms = now;
    flush_lost(k, now, 0);
    if (prev && now - prev > k->timeout_ms / 2) { /* this loop was held up: frames may wait unread */
        for (int i = 0; i < k->nexec; i++) k->execs[i].heard_ms = now;
        return;
    }
    for (int i = 0; i < k->nexec; i++) {
        cexec *x = &k->execs[i];
        if (!x->alive || now - x->heard_ms < k->timeout_ms) continue;
        char why[200];
        snprintf(why, sizeof why, "no heartbeat for %llu ms (ember.network.timeout is %llu ms)",
                 (unsigned long long)(now - x->heard_ms), (unsigned long long)k->timeout_ms);
        if (k->master && k->app_id[0]) {
            msg_val f[] = {msg_str(k->app_id), msg_u((uint64_t)x->id)};
            if (conn_send_msg(k->master, M_KILL_EXECUTOR, f, 2)) conn_close(k->master, em_errmsg());
        }
        exec_lost(k, x, why);
        conn_close(x->c, why);
    }
}

/* ------------------------------------------------------------ start, stop */

typedef struct start_arg {
    cluster *k;
    int rc;
    char err[800];
} start_arg;

static void start_fn(void *arg) {
    start_arg *a = arg;
    cluster *k = a->k;
    conn_opts o = k->co;
    o.component = "driver";
    iol_timer_init(k->l, &k->watch);
    iol_timer_init(k->l, &k->reconnect);
    uint64_t every = k->timeout_ms / 4 ? k->timeout_ms / 4 : 1;
    uv_timer_start(&k->watch.t, on_watch, every, every);
    a->rc = conn_listen(k->l, k->dhost, k->dport, &o, &listen_cb, k, &k->ls, &k->port);
    if (!a->rc && k->lc_workers) {
        lcluster_opts lo = {.workers = k->lc_workers,
                            .cores = k->lc_cores,
                            .mem_mib = k->lc_mem_mib,
                            .max_exec_retries = k->lc_max_exec_retries,
                            .service = k->lc_service,
                            .scratch = k->scratch,
                            .secret = k->co.secret != NULL,
                            .encrypt = k->co.encrypt};
        if ((k->lc = lcluster_start(&lo, &k->mport))) {
            snprintf(k->mhost, sizeof k->mhost, "127.0.0.1");
            snprintf(k->master_url, sizeof k->master_url, "ember://127.0.0.1:%d", k->mport);
        } else {
            a->rc = EM_EIO;
        }
    }
    if (!a->rc) {
        snprintf(k->url, sizeof k->url, "%s:%d", k->dhost, k->port);
        a->rc = conn_connect(k->l, k->mhost, k->mport, &o, &master_cb, k, &k->master);
    }
    if (a->rc) em__geterr(a->err, sizeof a->err);
}

static void stop_fn(void *arg) {
    cluster *k = arg;
    k->stopping = 1;
    flush_lost(k, 0, 1);
    if (k->master && k->app_id[0]) {
        msg_val f[] = {msg_str(k->app_id)};
        conn_send_msg(k->master, M_UNREGISTER_APP, f, 1);
    }
    /* The daemons go first, so that executors end by their workers rather
     * than by a lost driver. */
    lcluster_stop(k->lc);
    k->lc = NULL;
}

static void task_free(void *p) { ck_task_free(p); }

static void c_close(backend *b) {
    cluster *k = (cluster *)b;
    if (k->l) {
        iol_call(k->l, stop_fn, k);
        iol_stop(k->l); /* every connection closes */
    }
    lcluster_stop(k->lc);
    for (pend *p = k->ph, *n; p; p = n) {
        n = p->next;
        free(p->desc);
        free(p);
    }
    idmap_free(&k->tasks, task_free);
    free(k->execs);
    idmap_free(&k->exec_moved, NULL);
    for (int i = 0; i < k->ngrant; i++) {
        free(k->grants[i].out_url);
        free(k->grants[i].err_url);
    }
    free(k->grants);
    free(k->lconns);
    appserve_free(k->serve);
    free(k->exec_conf);
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->reg_cv);
    free(k);
}

const char *cluster_app_id(backend *be) {
    /* Written once, before the registration wait cluster_backend_new
     * returned from. */
    return ((cluster *)be)->app_id;
}

backend *cluster_backend_new(const cluster_opts *o, evq *events) {
    cluster *k = calloc(1, sizeof *k);
    if (!k) return em__seterr(EM_ENOMEM, "out of memory"), NULL;
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->reg_cv, NULL);
    k->events = events;
    k->co = netconf_opts(o->nc, "driver");
    snprintf(k->name, sizeof k->name, "%s", o->app_name ? o->app_name : "ember");
    snprintf(k->ui_url, sizeof k->ui_url, "%s", o->ui_url ? o->ui_url : "");
    struct passwd pw, *pwp = NULL;
    char pwbuf[1024];
    if (!getpwuid_r(geteuid(), &pw, pwbuf, sizeof pwbuf, &pwp) && pwp)
        snprintf(k->user, sizeof k->user, "%s", pw.pw_name);
    snprintf(k->dhost, sizeof k->dhost, "%s", o->driver_host ? o->driver_host : "127.0.0.1");
    k->dport = o->driver_port;
    /* Absolute: the daemons start in directories of their own. */
    char *abs = realpath(o->scratch, NULL);
    snprintf(k->scratch, sizeof k->scratch, "%s", abs ? abs : o->scratch);
    free(abs);
    k->lc_workers = o->master ? 0 : o->lc_workers;
    k->lc_cores = o->lc_cores;
    k->lc_mem_mib = o->lc_mem_mib;
    k->lc_service = o->lc_service;
    k->lc_max_exec_retries = o->lc_max_exec_retries;
    k->exec_cores = o->master ? o->exec_cores : o->lc_cores;
    k->exec_mem_mib = o->master ? o->exec_mem_mib : (o->exec_mem_mib < o->lc_mem_mib ? o->exec_mem_mib : o->lc_mem_mib);
    k->cores_max = o->cores_max;
    k->task_queue = o->task_queue;
    k->task_queue_max = o->task_queue_max;
    k->max_result = o->max_result;
    k->timeout_ms = o->timeout_ms;
    k->register_wait_ms = o->register_wait_ms;
    if (o->heartbeat_ms >= o->timeout_ms) {
        c_close(&k->b);
        return em__seterr(EM_EINVAL,
                          "ember.executor.heartbeatInterval (%llu ms) must be less than ember.network.timeout "
                          "(%llu ms)",
                          (unsigned long long)o->heartbeat_ms, (unsigned long long)o->timeout_ms), NULL;
    }
    if (!(k->exec_conf = strdup(o->exec_conf ? o->exec_conf : ""))) {
        c_close(&k->b);
        return em__seterr(EM_ENOMEM, "out of memory"), NULL;
    }
    if (!(k->serve = appserve_new(k->co.max_frame))) {
        c_close(&k->b);
        return NULL;
    }
    if (strlen(k->exec_conf) > 65536) {
        c_close(&k->b);
        return em__seterr(EM_EINVAL, "the settings are %zu bytes: executors take at most 65536",
                          strlen(k->exec_conf)), NULL;
    }
    k->ask_commit = o->ask_commit;
    k->commit_ctx = o->commit_ctx;
    k->b.fifo_starts = 1;
    k->b.launch = ck_launch;
    k->b.flush = ck_flush;
    k->b.kill = ck_kill;
    k->b.drop_shuffle = c_drop_shuffle;
    k->b.drop_map_output = c_drop_map_output;
    k->b.cores = c_cores;
    k->b.registered_cores = c_registered_cores;
    k->b.why_idle = c_why_idle;
    k->b.drop_bcast = c_drop_bcast;
    k->b.drop_rdd = c_drop_rdd;
    k->b.close = c_close;
    if (o->master) {
        snprintf(k->master_url, sizeof k->master_url, "%s", o->master);
        const char *hp = o->master + 8, *colon = strrchr(hp, ':');
        char *end;
        long port = colon ? strtol(colon + 1, &end, 10) : 0;
        if (strncmp(o->master, "ember://", 8) || !colon || (size_t)(colon - hp) >= sizeof k->mhost || *end ||
            port <= 0 || port > 65535) {
            em__seterr(EM_EINVAL, "master URL \"%s\": expected ember://HOST:PORT", o->master);
            c_close(&k->b);
            return NULL;
        }
        memcpy(k->mhost, hp, (size_t)(colon - hp));
        k->mport = (int)port;
    }
    char secret_path[900];
    snprintf(secret_path, sizeof secret_path, "%s/secret", k->scratch);
    if (netconf_check_bind(o->nc, k->dhost, "driver") ? em__preferr(EM_EINVAL, "ember.driver.host") :
        (k->co.secret && k->lc_workers && netconf_write_secret(o->nc, secret_path))) {
        c_close(&k->b);
        return NULL;
    }
    start_arg a = {k, 0, ""};
    if (!(k->l = iol_start("driver-net"))) {
        c_close(&k->b);
        return NULL;
    }
    iol_call(k->l, start_fn, &a);
    if (a.rc) {
        c_close(&k->b);
        em__seterr(EM_EIO, "%s", a.err);
        return NULL;
    }
    /* The application's registration. */
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += START_WAIT_MS / 1000;
    pthread_mutex_lock(&k->mu);
    while (!k->reg_state && pthread_cond_timedwait(&k->reg_cv, &k->mu, &dl) == 0) {}
    int st = k->reg_state;
    char err[600];
    snprintf(err, sizeof err, "%s", st ? k->reg_err : "no answer from the master");
    pthread_mutex_unlock(&k->mu);
    if (st != 1) {
        c_close(&k->b);
        em__seterr(EM_EIO, "cannot register the application: %s", err);
        return NULL;
    }
    return &k->b;
}
