/*
 * master.c -- the cluster master's state and decisions (see master.h).
 *
 * Granting follows Spark's standalone master: for each waiting application,
 * oldest first, the workers that can hold one more executor of it are
 * visited round robin; spreading out, each visit assigns one executor's
 * worth of cores (or, with no cores per executor set, one core to the one
 * executor an application has on a worker) and moves on, so the cores land
 * on as many workers as possible; otherwise a worker is filled before the
 * next.
 */
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"
#include "master.h"
#include "mpcheck.h"

typedef struct worker {
    char id[MASTER_ID_MAX];
    char host[256];
    int port;
    int cores, cores_used;
    int64_t mem_mib, mem_used;
    uint64_t last_beat;
    int alive;
    int unknown;            /* loaded from the saved state, not back yet */
    int reporting, expect, got; /* its report of the executors it runs */
    char webui[256];        /* its web UI's URL, "" when it has none (not saved) */
} worker;

typedef struct app {
    char id[MASTER_ID_MAX];
    char name[128];
    int cores_max, cores_per_exec;
    int64_t mem_mib;
    uint64_t start_ms, end_ms;
    int cores_granted;
    int next_exec;
    master_exec *execs;
    int nexecs, capexecs;
    int done;
    int failed;             /* removed after too many failed executors */
    int retries;            /* executors failed in a row (not saved) */
    int unknown;            /* loaded from the saved state, its driver not back yet */
    char user[64];          /* who runs it, and its driver's UI URL ("": none; not saved:
                               its driver says them again when it re-attaches) */
    char ui[256];
} app;

struct master {
    master_conf c;
    char url[256];
    worker *w;
    int nw, capw;
    app *a;
    int na, capa;
    int next_app;
    int recovering;
    uint64_t version;       /* master_version */
};

master *master_new(const master_conf *c) {
    master *m = calloc(1, sizeof *m);
    if (!m) {
        em__seterr(EM_ENOMEM, "master: out of memory");
        return NULL;
    }
    m->c = *c;
    snprintf(m->url, sizeof m->url, "%s", c->url ? c->url : "");
    m->c.url = m->url;
    return m;
}

void master_free(master *m) {
    if (!m) return;
    for (int i = 0; i < m->na; i++) free(m->a[i].execs);
    free(m->a);
    free(m->w);
    free(m);
}

static worker *find_worker(master *m, const char *id) {
    for (int i = 0; i < m->nw; i++)
        if (!strcmp(m->w[i].id, id)) return &m->w[i];
    return NULL;
}

static app *find_app(master *m, const char *id) {
    for (int i = 0; i < m->na; i++)
        if (!strcmp(m->a[i].id, id)) return &m->a[i];
    return NULL;
}

static int grow(void **v, int *cap, int n, size_t size) {
    if (n < *cap) return 0;
    int c = *cap ? *cap * 2 : 8;
    void *p = realloc(*v, size * (size_t)c);
    if (!p) return em__seterr(EM_ENOMEM, "master: out of memory");
    *v = p;
    *cap = c;
    return 0;
}

int master_register_worker(master *m, const char *id, const char *host, int port, int cores, int64_t mem_mib,
                           uint64_t now_ms) {
    if (!id || !*id || strlen(id) >= MASTER_ID_MAX || !host || !*host || strlen(host) >= 256 || port < 0 ||
        port > 65535 || cores < 1 || mem_mib < 1)
        return em__seterr(EM_EINVAL, "master: a worker registration with bad fields (id \"%s\", %d cores, %lld MiB)",
                          id ? id : "", cores, (long long)mem_mib);
    worker *w = find_worker(m, id);
    if (w && w->alive && (strcmp(w->host, host) || w->port != port))
        return em__seterr(EM_EINVAL, "master: worker id %s is already registered by %s:%d", id, w->host, w->port);
    if (!w) {
        if (grow((void **)&m->w, &m->capw, m->nw, sizeof *m->w)) return EM_ENOMEM;
        w = &m->w[m->nw++];
        memset(w, 0, sizeof *w);
        snprintf(w->id, sizeof w->id, "%s", id);
    }
    snprintf(w->host, sizeof w->host, "%s", host);
    w->port = port;
    w->cores = cores;
    w->mem_mib = mem_mib;
    w->last_beat = now_ms;
    w->alive = 1;
    w->unknown = 0;
    w->reporting = 0;
    m->version++;
    return 0;
}

int master_heartbeat(master *m, const char *id, uint64_t now_ms) {
    worker *w = find_worker(m, id);
    if (!w || !w->alive) return em__seterr(EM_ENOENT, "master: heartbeat from unknown worker %s", id);
    w->last_beat = now_ms;
    return 0;
}

/* Drop executor k of application a, freeing its resources on its worker. */
static void drop_exec(master *m, app *a, int k) {
    worker *w = find_worker(m, a->execs[k].worker);
    m->version++;
    if (w) {
        w->cores_used -= a->execs[k].cores;
        w->mem_used -= a->execs[k].mem_mib;
    }
    a->cores_granted -= a->execs[k].cores;
    a->execs[k] = a->execs[--a->nexecs];
}

/* Worker w is gone: its executors are lost. */
static void kill_worker(master *m, worker *w, void (*lost)(void *ud, const master_exec *e), void *ud) {
    w->alive = 0;
    w->unknown = 0;
    w->reporting = 0;
    m->version++;
    for (int j = 0; j < m->na; j++)
        for (int k = 0; k < m->a[j].nexecs; k++)
            if (!strcmp(m->a[j].execs[k].worker, w->id)) {
                master_exec e = m->a[j].execs[k];
                drop_exec(m, &m->a[j], k--);
                if (lost) lost(ud, &e);
            }
    w->cores_used = 0;
    w->mem_used = 0;
}

int master_expire(master *m, uint64_t now_ms, void (*lost)(void *ud, const master_exec *e),
                  void (*dead)(void *ud, const char *worker), void *ud) {
    int died = 0;
    for (int i = 0; i < m->nw; i++) {
        worker *w = &m->w[i];
        if (!w->alive || now_ms - w->last_beat <= m->c.worker_timeout_ms) continue;
        kill_worker(m, w, lost, ud);
        if (dead) dead(ud, w->id);
        died++;
    }
    return died;
}

int master_worker_lost(master *m, const char *id, void (*lost)(void *ud, const master_exec *e), void *ud) {
    worker *w = find_worker(m, id);
    if (!w || !w->alive) return em__seterr(EM_ENOENT, "master: no live worker %s", id);
    kill_worker(m, w, lost, ud);
    return 0;
}

int master_register_app(master *m, const char *name, int cores_max, int cores_per_exec, int64_t mem_mib,
                        uint64_t now_ms, char id_out[MASTER_ID_MAX]) {
    if (cores_max < 0 || cores_per_exec < 0 || mem_mib < 1)
        return em__seterr(EM_EINVAL, "master: an application with bad resources (%d cores max, %d per executor, %lld MiB)",
                          cores_max, cores_per_exec, (long long)mem_mib);
    if (grow((void **)&m->a, &m->capa, m->na, sizeof *m->a)) return EM_ENOMEM;
    app *a = &m->a[m->na++];
    memset(a, 0, sizeof *a);
    snprintf(a->id, sizeof a->id, "app-%04d", m->next_app++);
    snprintf(a->name, sizeof a->name, "%s", name ? name : "");
    a->cores_max = cores_max;
    a->cores_per_exec = cores_per_exec;
    a->mem_mib = mem_mib;
    a->start_ms = now_ms;
    snprintf(id_out, MASTER_ID_MAX, "%s", a->id);
    m->version++;
    return 0;
}

/* Application a ends (failed or not): its executors are released,
 * kill(ud, e) for each. */
static void end_app(master *m, app *a, int failed, uint64_t now_ms, void (*kill)(void *ud, const master_exec *e),
                    void *ud) {
    while (a->nexecs) {
        master_exec e = a->execs[a->nexecs - 1];
        drop_exec(m, a, a->nexecs - 1);
        if (kill) kill(ud, &e);
    }
    a->done = 1;
    a->failed = failed;
    a->unknown = 0;
    a->end_ms = now_ms;
    m->version++;
}

int master_unregister_app(master *m, const char *id, uint64_t now_ms, void (*kill)(void *ud, const master_exec *e),
                          void *ud) {
    app *a = find_app(m, id);
    if (!a || a->done) return em__seterr(EM_ENOENT, "master: no running application %s", id);
    end_app(m, a, 0, now_ms, kill, ud);
    return 0;
}

int master_kill_executor(master *m, const char *id, int exec_id, void (*kill)(void *ud, const master_exec *e),
                         void *ud) {
    app *a = find_app(m, id);
    for (int k = 0; a && k < a->nexecs; k++)
        if (a->execs[k].id == exec_id) {
            a->execs[k].killing = 1;
            kill(ud, &a->execs[k]);
            return 0;
        }
    return em__seterr(EM_ENOENT, "master: no executor %d of application %s", exec_id, id);
}

int master_executor_exited(master *m, const char *id, int exec_id, int failed, const char *reason, uint64_t now_ms,
                           void (*kill)(void *ud, const master_exec *e), void *ud, char *why, size_t cap) {
    app *a = find_app(m, id);
    int k = 0;
    while (a && k < a->nexecs && a->execs[k].id != exec_id) k++;
    if (!a || k == a->nexecs) return em__seterr(EM_ENOENT, "master: no executor %d of application %s", exec_id, id);
    /* As Spark's master: a failure it did not cause counts; the
     * application goes only when nothing of it runs. */
    int counted = failed && !a->execs[k].killing;
    drop_exec(m, a, k);
    if (!counted || m->c.max_exec_retries < 0 || ++a->retries < m->c.max_exec_retries) return 0;
    for (int j = 0; j < a->nexecs; j++)
        if (a->execs[j].running) return 0;
    if (why)
        snprintf(why, cap,
                 "the master removed application %s (FAILED): %d executors in a row failed "
                 "(ember.deploy.maxExecutorRetries is %d), the last, executor %d: %s",
                 a->id, a->retries, m->c.max_exec_retries, exec_id, reason && *reason ? reason : "(no reason given)");
    end_app(m, a, 1, now_ms, kill, ud);
    return MASTER_APP_REMOVED;
}

int master_executor_cannot_run(master *m, const char *id, int exec_id, const char *reason, uint64_t now_ms,
                               void (*kill)(void *ud, const master_exec *e), void *ud, char *why, size_t cap) {
    app *a = find_app(m, id);
    int k = 0;
    while (a && k < a->nexecs && a->execs[k].id != exec_id) k++;
    if (!a || k == a->nexecs) return em__seterr(EM_ENOENT, "master: no executor %d of application %s", exec_id, id);
    drop_exec(m, a, k);
    if (why)
        snprintf(why, cap, "the master removed application %s (FAILED): its executor %d cannot start: %s", a->id,
                 exec_id, reason && *reason ? reason : "(no reason given)");
    end_app(m, a, 1, now_ms, kill, ud);
    return MASTER_APP_REMOVED;
}

int master_executor_registered(master *m, const char *id, int exec_id) {
    app *a = find_app(m, id);
    for (int k = 0; a && !a->done && k < a->nexecs; k++)
        if (a->execs[k].id == exec_id) {
            a->execs[k].running = 1;
            a->retries = 0;
            return 0;
        }
    return em__seterr(EM_ENOENT, "master: no executor %d of application %s", exec_id, id);
}

/* Cores application a may still be granted. */
static int cores_left(const app *a, int total) {
    int limit = a->cores_max ? a->cores_max : total;
    return limit - a->cores_granted;
}

/* Whether worker w (with the cores and executors already assigned to a in
 * this round) can take one more executor's worth of cores. */
static int can_launch(const app *a, const worker *w, int to_assign, int assigned, int assigned_execs, int has_exec) {
    int min_cores = a->cores_per_exec ? a->cores_per_exec : 1;
    int one_per_worker = !a->cores_per_exec;
    if (to_assign < min_cores || w->cores - w->cores_used - assigned < min_cores) return 0;
    if (one_per_worker && (assigned_execs || has_exec)) return !has_exec; /* grow the one it is getting */
    return w->mem_mib - w->mem_used - (int64_t)assigned_execs * a->mem_mib >= a->mem_mib;
}

int master_schedule(master *m, void (*launch)(void *ud, const master_exec *e), void *ud) {
    int granted = 0, total = 0;
    if (m->recovering) return 0; /* as Spark's: nothing is granted before the cluster is known */
    for (int i = 0; i < m->nw; i++)
        if (m->w[i].alive) total += m->w[i].cores;
    for (int ai = 0; ai < m->na; ai++) {
        app *a = &m->a[ai];
        if (a->done) continue;
        int to_assign = cores_left(a, total);
        if (to_assign <= 0) continue;
        int *cores = calloc((size_t)m->nw + 1, sizeof(int)), *execs = calloc((size_t)m->nw + 1, sizeof(int));
        if (!cores || !execs) {
            free(cores);
            free(execs);
            return em__seterr(EM_ENOMEM, "master: out of memory");
        }
        int min_cores = a->cores_per_exec ? a->cores_per_exec : 1;
        for (int progress = 1; progress && to_assign >= min_cores;) {
            progress = 0;
            for (int i = 0; i < m->nw; i++) {
                worker *w = &m->w[i];
                int has = 0;
                for (int k = 0; k < a->nexecs && !a->cores_per_exec; k++) has |= !strcmp(a->execs[k].worker, w->id);
                while (w->alive && can_launch(a, w, to_assign, cores[i], execs[i], has)) {
                    to_assign -= min_cores;
                    cores[i] += min_cores;
                    execs[i] = a->cores_per_exec ? execs[i] + 1 : 1;
                    progress = 1;
                    if (m->c.spread_out) break; /* on to the next worker */
                }
            }
        }
        for (int i = 0; i < m->nw; i++) {
            if (!execs[i]) continue;
            worker *w = &m->w[i];
            int per = a->cores_per_exec ? a->cores_per_exec : cores[i];
            for (int n = 0; n < execs[i]; n++) {
                if (grow((void **)&a->execs, &a->capexecs, a->nexecs, sizeof *a->execs)) {
                    free(cores);
                    free(execs);
                    return EM_ENOMEM;
                }
                master_exec *e = &a->execs[a->nexecs++];
                memset(e, 0, sizeof *e);
                snprintf(e->app, sizeof e->app, "%s", a->id);
                e->id = a->next_exec++;
                snprintf(e->worker, sizeof e->worker, "%s", w->id);
                e->cores = per;
                e->mem_mib = a->mem_mib;
                w->cores_used += per;
                w->mem_used += a->mem_mib;
                a->cores_granted += per;
                granted++;
                m->version++;
                if (launch) launch(ud, e);
            }
        }
        free(cores);
        free(execs);
    }
    return granted;
}

int master_app_wait(const master *m, const char *id, char *why, size_t cap) {
    const app *a = NULL;
    char dummy[1];
    if (!why) why = dummy, cap = sizeof dummy;
    why[0] = 0;
    for (int i = 0; i < m->na && !a; i++)
        if (!strcmp(m->a[i].id, id)) a = &m->a[i];
    if (!a) return em__seterr(EM_ENOENT, "master: no application %s", id);
    if (a->done || a->nexecs) return MASTER_APP_SERVED;
    int min_cores = a->cores_per_exec ? a->cores_per_exec : 1, alive = 0, fits = 0, big_cores = 0;
    int64_t big_mem = 0;
    for (int i = 0; i < m->nw; i++) {
        const worker *w = &m->w[i];
        if (!w->alive) continue;
        alive++;
        fits |= w->cores >= min_cores && w->mem_mib >= a->mem_mib;
        if (w->cores > big_cores || (w->cores == big_cores && w->mem_mib > big_mem)) {
            big_cores = w->cores;
            big_mem = w->mem_mib;
        }
    }
    if (m->recovering) {
        snprintf(why, cap, "application %s is WAITING: the master is RECOVERING (no executor is granted until the "
                 "workers it knew came back)", a->id);
        return MASTER_APP_QUEUED;
    }
    if (a->cores_max && a->cores_max < min_cores) {
        snprintf(why, cap, "application %s asks for at most %d cores (ember.cores.max) but %d per executor "
                 "(ember.executor.cores)", a->id, a->cores_max, min_cores);
        return MASTER_APP_UNSERVABLE;
    }
    if (!alive) {
        snprintf(why, cap, "no alive workers");
        return MASTER_APP_UNSERVABLE;
    }
    if (!fits) {
        snprintf(why, cap, "no alive worker has %d cores and %lld MiB for one executor (the largest has %d cores, "
                 "%lld MiB)", min_cores, (long long)a->mem_mib, big_cores, (long long)big_mem);
        return MASTER_APP_UNSERVABLE;
    }
    /* The applications registered before it that hold or wait for cores. */
    int n = snprintf(why, cap, "application %s is WAITING for cores held by other applications", a->id), ahead = 0;
    for (int i = 0; i < m->na && &m->a[i] != a && n > 0 && (size_t)n < cap; i++) {
        if (m->a[i].done) continue;
        n += snprintf(why + n, cap - (size_t)n, "%s%s (%s)", ahead++ ? ", " : ": ", m->a[i].id,
                      m->a[i].nexecs ? "RUNNING" : "WAITING");
    }
    return MASTER_APP_QUEUED;
}

/* ------------------------------------------------------------- recovery */

/* The report of worker w is complete: its executors not reported are
 * gone. */
static void finish_report(master *m, worker *w, void (*lost)(void *ud, const master_exec *e), void *ud) {
    w->reporting = 0;
    for (int j = 0; j < m->na; j++)
        for (int k = 0; k < m->a[j].nexecs; k++) {
            master_exec *x = &m->a[j].execs[k];
            if (!x->unconfirmed || strcmp(x->worker, w->id)) continue;
            master_exec e = *x;
            drop_exec(m, &m->a[j], k--);
            if (lost) lost(ud, &e);
        }
}

int master_worker_report(master *m, const char *id, int n, void (*lost)(void *ud, const master_exec *e), void *ud) {
    worker *w = find_worker(m, id);
    if (!w || !w->alive || n < 0) return em__seterr(EM_ENOENT, "master: no live worker %s to report", id);
    for (int j = 0; j < m->na; j++)
        for (int k = 0; k < m->a[j].nexecs; k++)
            if (!strcmp(m->a[j].execs[k].worker, id)) m->a[j].execs[k].unconfirmed = 1;
    w->reporting = 1;
    w->expect = n;
    w->got = 0;
    if (!n) finish_report(m, w, lost, ud);
    return 0;
}

int master_executor_running(master *m, const char *wid, const char *aid, int exec_id, int cores, int64_t mem_mib,
                            void (*kill)(void *ud, const master_exec *e), void (*lost)(void *ud, const master_exec *e),
                            void *ud) {
    worker *w = find_worker(m, wid);
    if (!w || !w->alive || !w->reporting)
        return em__seterr(EM_ENOENT, "master: worker %s reports an executor outside a report", wid);
    if (exec_id < 0 || cores < 1 || mem_mib < 1 || strlen(aid) >= MASTER_ID_MAX)
        return em__seterr(EM_EINVAL, "master: worker %s reports an executor with bad fields", wid);
    int rc = MASTER_KILLED;
    app *a = find_app(m, aid);
    master_exec *x = NULL;
    for (int k = 0; a && k < a->nexecs && !x; k++)
        if (a->execs[k].id == exec_id) x = &a->execs[k];
    if (a && !a->done && x && !strcmp(x->worker, wid)) {
        x->unconfirmed = 0;
        x->running = 1; /* it outlived a master: it ran */
        rc = MASTER_CONFIRMED;
    } else if (a && !a->done && !x) {
        if (grow((void **)&a->execs, &a->capexecs, a->nexecs, sizeof *a->execs)) return EM_ENOMEM;
        x = &a->execs[a->nexecs++];
        memset(x, 0, sizeof *x);
        snprintf(x->app, sizeof x->app, "%s", a->id);
        x->id = exec_id;
        snprintf(x->worker, sizeof x->worker, "%s", wid);
        x->cores = cores;
        x->mem_mib = mem_mib;
        x->running = 1;
        w->cores_used += cores;
        w->mem_used += mem_mib;
        a->cores_granted += cores;
        if (a->next_exec <= exec_id) a->next_exec = exec_id + 1;
        m->version++;
        rc = MASTER_ADOPTED;
    } else if (kill) { /* not this master's, or granted elsewhere: the worker's copy goes */
        master_exec e;
        memset(&e, 0, sizeof e);
        snprintf(e.app, sizeof e.app, "%s", aid);
        e.id = exec_id;
        snprintf(e.worker, sizeof e.worker, "%s", wid);
        e.cores = cores;
        e.mem_mib = mem_mib;
        kill(ud, &e);
    }
    if (++w->got >= w->expect) finish_report(m, w, lost, ud);
    return rc;
}

int master_reattach_app(master *m, const char *id, const char *name, int cores_max, int cores_per_exec,
                        int64_t mem_mib) {
    app *a = find_app(m, id);
    if (!a || a->done)
        return em__seterr(EM_ENOENT,
                          "master: application %s is not running here (the master restarted without its recovery "
                          "state, see ember.deploy.recoveryMode, or the application ended)",
                          id);
    if (cores_max < 0 || cores_per_exec < 0 || mem_mib < 1)
        return em__seterr(EM_EINVAL, "master: an application with bad resources (%d cores max, %d per executor, %lld MiB)",
                          cores_max, cores_per_exec, (long long)mem_mib);
    snprintf(a->name, sizeof a->name, "%s", name ? name : "");
    a->cores_max = cores_max;
    a->cores_per_exec = cores_per_exec;
    a->mem_mib = mem_mib;
    a->unknown = 0;
    m->version++;
    return 0;
}

int master_recovering(const master *m) { return m->recovering; }

int master_recovery_done(master *m, int force, uint64_t now_ms, void (*kill)(void *ud, const master_exec *e),
                         void (*lost)(void *ud, const master_exec *e), void *ud) {
    if (!m->recovering) return 1;
    int waiting = 0;
    for (int i = 0; i < m->nw; i++) waiting |= m->w[i].unknown || m->w[i].reporting;
    for (int i = 0; i < m->na; i++) waiting |= m->a[i].unknown;
    if (waiting && !force) return 0;
    for (int i = 0; i < m->nw; i++) {
        worker *w = &m->w[i];
        if (w->unknown) kill_worker(m, w, lost, ud);
        else if (w->reporting) finish_report(m, w, lost, ud);
    }
    for (int i = 0; i < m->na; i++)
        if (m->a[i].unknown) master_unregister_app(m, m->a[i].id, now_ms, kill, ud);
    m->recovering = 0;
    m->version++;
    return 1;
}

uint64_t master_version(const master *m) { return m->version; }

/* ---------------------------------------------------- the saved state */

#define STATE_FORMAT "ember-master-state"
#define STATE_VERSION 1

static int pk_str(msgpack_packer *pk, const char *s) {
    size_t n = strlen(s);
    return msgpack_pack_str(pk, n) || msgpack_pack_str_body(pk, s, n);
}

static int save_write(void *data, const char *buf, size_t len) { return ebuf_append(data, buf, len) ? -1 : 0; }

int master_save(const master *m, ebuf *out) {
    msgpack_packer pk;
    size_t start = out->len;
    msgpack_packer_init(&pk, out, save_write);
    int nw = 0, na = 0;
    for (int i = 0; i < m->nw; i++) nw += m->w[i].alive || m->w[i].unknown;
    for (int i = 0; i < m->na; i++) na += !m->a[i].done;
    int bad = msgpack_pack_array(&pk, 5) || pk_str(&pk, STATE_FORMAT) || msgpack_pack_uint64(&pk, STATE_VERSION) ||
              msgpack_pack_uint64(&pk, (uint64_t)m->next_app) || msgpack_pack_array(&pk, (size_t)nw);
    for (int i = 0; i < m->nw && !bad; i++) {
        const worker *w = &m->w[i];
        if (!w->alive && !w->unknown) continue;
        bad = msgpack_pack_array(&pk, 5) || pk_str(&pk, w->id) || pk_str(&pk, w->host) ||
              msgpack_pack_uint64(&pk, (uint64_t)w->port) || msgpack_pack_uint64(&pk, (uint64_t)w->cores) ||
              msgpack_pack_uint64(&pk, (uint64_t)w->mem_mib);
    }
    bad = bad || msgpack_pack_array(&pk, (size_t)na);
    for (int i = 0; i < m->na && !bad; i++) {
        const app *a = &m->a[i];
        if (a->done) continue;
        bad = msgpack_pack_array(&pk, 8) || pk_str(&pk, a->id) || pk_str(&pk, a->name) ||
              msgpack_pack_uint64(&pk, (uint64_t)a->cores_max) ||
              msgpack_pack_uint64(&pk, (uint64_t)a->cores_per_exec) || msgpack_pack_uint64(&pk, (uint64_t)a->mem_mib) ||
              msgpack_pack_uint64(&pk, a->start_ms) || msgpack_pack_uint64(&pk, (uint64_t)a->next_exec) ||
              msgpack_pack_array(&pk, (size_t)a->nexecs);
        for (int k = 0; k < a->nexecs && !bad; k++) {
            const master_exec *x = &a->execs[k];
            bad = msgpack_pack_array(&pk, 4) || msgpack_pack_uint64(&pk, (uint64_t)x->id) || pk_str(&pk, x->worker) ||
                  msgpack_pack_uint64(&pk, (uint64_t)x->cores) || msgpack_pack_uint64(&pk, (uint64_t)x->mem_mib);
        }
    }
    if (bad) {
        out->len = start;
        return em__seterr(EM_ENOMEM, "master: out of memory");
    }
    return 0;
}

/* Readers of the saved state's objects: each checks the type and bounds,
 * else sets *why and returns -1. */
static int get_arr(const msgpack_object *o, uint32_t n, const char *what, const char **why) {
    if (o->type != MSGPACK_OBJECT_ARRAY || (n && o->via.array.size != n)) return *why = what, -1;
    return 0;
}

static int get_u(const msgpack_object *o, uint64_t max, uint64_t *v, const char *what, const char **why) {
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > max) return *why = what, -1;
    *v = o->via.u64;
    return 0;
}

static int get_s(const msgpack_object *o, char *dst, size_t cap, int nonempty, const char *what, const char **why) {
    if (o->type != MSGPACK_OBJECT_STR || o->via.str.size >= cap || (nonempty && !o->via.str.size) ||
        memchr(o->via.str.ptr, 0, o->via.str.size))
        return *why = what, -1;
    memcpy(dst, o->via.str.ptr, o->via.str.size);
    dst[o->via.str.size] = 0;
    return 0;
}

/* Forget everything (a failed load). */
static void reset(master *m) {
    for (int i = 0; i < m->na; i++) free(m->a[i].execs);
    m->na = m->nw = 0;
    m->next_app = 0;
    m->recovering = 0;
}

static int load_state(master *m, const msgpack_object *o, uint64_t now_ms, const char **why) {
    char fmt[32];
    uint64_t v, u[6];
    if (get_arr(o, 5, "not an array of 5", why) || get_s(&o->via.array.ptr[0], fmt, sizeof fmt, 1, "no format name", why))
        return -1;
    if (strcmp(fmt, STATE_FORMAT)) return *why = "not an ember master state", -1;
    if (get_u(&o->via.array.ptr[1], UINT32_MAX, &v, "no version", why)) return -1;
    if (v != STATE_VERSION) return *why = "a format version this master does not read", -1;
    if (get_u(&o->via.array.ptr[2], 9999999, &v, "a bad next application number", why)) return -1;
    m->next_app = (int)v;
    const msgpack_object *ws = &o->via.array.ptr[3], *as = &o->via.array.ptr[4];
    if (get_arr(ws, 0, "no list of workers", why) || get_arr(as, 0, "no list of applications", why)) return -1;
    for (uint32_t i = 0; i < ws->via.array.size; i++) {
        const msgpack_object *x = &ws->via.array.ptr[i];
        char id[MASTER_ID_MAX], host[256];
        if (get_arr(x, 5, "a worker not an array of 5", why) ||
            get_s(&x->via.array.ptr[0], id, sizeof id, 1, "a bad worker id", why) ||
            get_s(&x->via.array.ptr[1], host, sizeof host, 1, "a bad worker host", why) ||
            get_u(&x->via.array.ptr[2], 65535, &u[0], "a bad worker port", why) ||
            get_u(&x->via.array.ptr[3], 1u << 20, &u[1], "a bad worker core count", why) ||
            get_u(&x->via.array.ptr[4], INT64_MAX, &u[2], "a bad worker memory", why))
            return -1;
        if (find_worker(m, id)) return *why = "a worker listed twice", -1;
        if (u[1] < 1 || u[2] < 1) return *why = "a worker without cores or memory", -1;
        if (grow((void **)&m->w, &m->capw, m->nw, sizeof *m->w)) return *why = "out of memory", -1;
        worker *w = &m->w[m->nw++];
        memset(w, 0, sizeof *w);
        snprintf(w->id, sizeof w->id, "%s", id);
        snprintf(w->host, sizeof w->host, "%s", host);
        w->port = (int)u[0];
        w->cores = (int)u[1];
        w->mem_mib = (int64_t)u[2];
        w->last_beat = now_ms;
        w->unknown = 1;
    }
    for (uint32_t i = 0; i < as->via.array.size; i++) {
        const msgpack_object *x = &as->via.array.ptr[i];
        char id[MASTER_ID_MAX], name[128];
        if (get_arr(x, 8, "an application not an array of 8", why) ||
            get_s(&x->via.array.ptr[0], id, sizeof id, 1, "a bad application id", why) ||
            get_s(&x->via.array.ptr[1], name, sizeof name, 0, "a bad application name", why) ||
            get_u(&x->via.array.ptr[2], INT32_MAX, &u[0], "a bad cores max", why) ||
            get_u(&x->via.array.ptr[3], 1u << 20, &u[1], "a bad cores per executor", why) ||
            get_u(&x->via.array.ptr[4], INT64_MAX, &u[2], "a bad application memory", why) ||
            get_u(&x->via.array.ptr[5], UINT64_MAX, &u[3], "a bad start time", why) ||
            get_u(&x->via.array.ptr[6], INT32_MAX, &u[4], "a bad next executor id", why) ||
            get_arr(&x->via.array.ptr[7], 0, "no list of executors", why))
            return -1;
        if (find_app(m, id)) return *why = "an application listed twice", -1;
        if (u[2] < 1) return *why = "an application without memory", -1;
        if (grow((void **)&m->a, &m->capa, m->na, sizeof *m->a)) return *why = "out of memory", -1;
        app *a = &m->a[m->na++];
        memset(a, 0, sizeof *a);
        snprintf(a->id, sizeof a->id, "%s", id);
        snprintf(a->name, sizeof a->name, "%s", name);
        a->cores_max = (int)u[0];
        a->cores_per_exec = (int)u[1];
        a->mem_mib = (int64_t)u[2];
        a->start_ms = u[3] < now_ms ? u[3] : now_ms; /* a clock restarted since (a reboot): now */
        a->next_exec = (int)u[4];
        a->unknown = 1;
        const msgpack_object *es = &x->via.array.ptr[7];
        for (uint32_t k = 0; k < es->via.array.size; k++) {
            const msgpack_object *y = &es->via.array.ptr[k];
            char wid[MASTER_ID_MAX];
            if (get_arr(y, 4, "an executor not an array of 4", why) ||
                get_u(&y->via.array.ptr[0], INT32_MAX - 1, &u[0], "a bad executor id", why) ||
                get_s(&y->via.array.ptr[1], wid, sizeof wid, 1, "a bad executor worker", why) ||
                get_u(&y->via.array.ptr[2], 1u << 20, &u[1], "a bad executor core count", why) ||
                get_u(&y->via.array.ptr[3], INT64_MAX, &u[2], "a bad executor memory", why))
                return -1;
            worker *w = find_worker(m, wid);
            if (!w) return *why = "an executor on a worker not listed", -1;
            if (u[1] < 1 || u[2] < 1) return *why = "an executor without cores or memory", -1;
            if ((int)u[0] >= a->next_exec) return *why = "an executor id past its application's next", -1;
            for (int j = 0; j < a->nexecs; j++)
                if (a->execs[j].id == (int)u[0]) return *why = "an executor listed twice", -1;
            if (grow((void **)&a->execs, &a->capexecs, a->nexecs, sizeof *a->execs)) return *why = "out of memory", -1;
            master_exec *e = &a->execs[a->nexecs++];
            memset(e, 0, sizeof *e);
            snprintf(e->app, sizeof e->app, "%s", a->id);
            e->id = (int)u[0];
            snprintf(e->worker, sizeof e->worker, "%s", wid);
            e->cores = (int)u[1];
            e->mem_mib = (int64_t)u[2];
            e->unconfirmed = 1;
            w->cores_used += e->cores;
            w->mem_used += e->mem_mib;
            a->cores_granted += e->cores;
        }
    }
    return 0;
}

int master_load(master *m, const uint8_t *p, size_t n, uint64_t now_ms) {
    if (m->nw || m->na) return em__seterr(EM_ESTATE, "master: load into a master that has state");
    const char *why = mp_precheck(p, n);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    if (!why && (msgpack_unpack_next(&u, (const char *)p, n, &off) != MSGPACK_UNPACK_SUCCESS || off != n))
        why = "not one msgpack object";
    if (!why) load_state(m, &u.data, now_ms, &why);
    msgpack_unpacked_destroy(&u);
    if (why) {
        reset(m);
        return em__seterr(EM_ECORRUPT, "master state: %s", why);
    }
    m->recovering = m->nw > 0 || m->na > 0;
    m->version++;
    return 0;
}

/* ----------------------------------------------------------------- JSON */

static int put(ebuf *b, const char *s) { return ebuf_append(b, s, strlen(s)); }

static int putf(ebuf *b, const char *fmt, long long v) {
    char t[64];
    snprintf(t, sizeof t, fmt, v);
    return put(b, t);
}

/* A JSON string: quotes, and escapes for what JSON requires. */
static int put_str(ebuf *b, const char *s) {
    int rc = put(b, "\"");
    for (; *s && !rc; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            char e[3] = {'\\', (char)ch, 0};
            rc = put(b, e);
        } else if (ch < 0x20) {
            rc = putf(b, "\\u%04llx", ch);
        } else {
            rc = ebuf_append(b, s, 1);
        }
    }
    return rc ? rc : put(b, "\"");
}

static int put_app(ebuf *b, const app *a, uint64_t now_ms, int64_t epoch) {
    int rc = put(b, "{\"id\":") || put_str(b, a->id) || put(b, ",\"name\":") || put_str(b, a->name) ||
             putf(b, ",\"starttime\":%lld", (long long)((int64_t)a->start_ms + epoch)) || putf(b, ",\"cores\":%lld", a->cores_granted) ||
             putf(b, ",\"memoryperslave\":%lld", (long long)a->mem_mib) ||
             putf(b, ",\"memoryperexecutor\":%lld", (long long)a->mem_mib) || put(b, ",\"user\":") ||
             put_str(b, a->user) ||
             putf(b, ",\"duration\":%lld", (long long)((a->done ? a->end_ms : now_ms) - a->start_ms)) ||
             put(b, ",\"state\":") ||
             put_str(b, a->failed ? "FAILED" : a->done ? "FINISHED" : a->unknown ? "UNKNOWN" : a->nexecs ? "RUNNING" : "WAITING") ||
             put(b, ",\"executors\":[");
    for (int k = 0; k < a->nexecs && !rc; k++)
        rc = put(b, k ? ",{" : "{") || putf(b, "\"id\":%lld", a->execs[k].id) || put(b, ",\"worker\":") ||
             put_str(b, a->execs[k].worker) || putf(b, ",\"cores\":%lld", a->execs[k].cores) ||
             putf(b, ",\"memory\":%lld}", (long long)a->execs[k].mem_mib);
    return rc || put(b, "]}");
}

int master_json(master *m, uint64_t now_ms, uint64_t wall_ms, ebuf *out) {
    int64_t epoch = (int64_t)wall_ms - (int64_t)now_ms; /* monotonic to epoch */
    long long cores = 0, used = 0, mem = 0, memused = 0, alive = 0;
    int rc = put(out, "{\"url\":") || put_str(out, m->url) || put(out, ",\"workers\":[");
    for (int i = 0, first = 1; i < m->nw && !rc; i++, first = 0) {
        const worker *w = &m->w[i];
        char addr[300];
        snprintf(addr, sizeof addr, "%s:%d", w->host, w->port);
        rc = put(out, first ? "{" : ",{") || put(out, "\"id\":") || put_str(out, w->id) || put(out, ",\"host\":") ||
             put_str(out, w->host) || putf(out, ",\"port\":%lld", w->port) || put(out, ",\"address\":") ||
             put_str(out, addr) || put(out, ",\"webuiaddress\":") || put_str(out, w->webui) ||
             putf(out, ",\"cores\":%lld", w->cores) ||
             putf(out, ",\"coresused\":%lld", w->cores_used) ||
             putf(out, ",\"coresfree\":%lld", w->cores - w->cores_used) ||
             putf(out, ",\"memory\":%lld", (long long)w->mem_mib) ||
             putf(out, ",\"memoryused\":%lld", (long long)w->mem_used) ||
             putf(out, ",\"memoryfree\":%lld", (long long)(w->mem_mib - w->mem_used)) || put(out, ",\"state\":") ||
             put_str(out, w->alive ? "ALIVE" : w->unknown ? "UNKNOWN" : "DEAD") ||
             putf(out, ",\"lastheartbeat\":%lld}", (long long)((int64_t)w->last_beat + epoch));
        if (w->alive) {
            alive++;
            cores += w->cores;
            used += w->cores_used;
            mem += w->mem_mib;
            memused += w->mem_used;
        }
    }
    rc = rc || put(out, "]") || putf(out, ",\"aliveworkers\":%lld", alive) || putf(out, ",\"cores\":%lld", cores) ||
         putf(out, ",\"coresused\":%lld", used) || putf(out, ",\"memory\":%lld", mem) ||
         putf(out, ",\"memoryused\":%lld", memused) || put(out, ",\"activeapps\":[");
    for (int i = 0, first = 1; i < m->na && !rc; i++)
        if (!m->a[i].done) {
            rc = (first ? 0 : put(out, ",")) || put_app(out, &m->a[i], now_ms, epoch);
            first = 0;
        }
    rc = rc || put(out, "],\"completedapps\":[");
    for (int i = 0, first = 1; i < m->na && !rc; i++)
        if (m->a[i].done) {
            rc = (first ? 0 : put(out, ",")) || put_app(out, &m->a[i], now_ms, epoch);
            first = 0;
        }
    rc = rc || put(out, "],\"status\":") || put_str(out, m->recovering ? "RECOVERING" : "ALIVE") || put(out, "}");
    return rc ? em__seterr(EM_ENOMEM, "master: out of memory") : 0;
}

/* ------------------------------------------------------------ the views */

int master_worker_set_webui(master *m, const char *id, const char *url) {
    worker *w = find_worker(m, id);
    if (!w) return em__seterr(EM_ENOENT, "master: no worker %s", id);
    snprintf(w->webui, sizeof w->webui, "%s", url ? url : "");
    return 0;
}

int master_app_set_info(master *m, const char *id, const char *user, const char *ui_url) {
    app *a = find_app(m, id);
    if (!a) return em__seterr(EM_ENOENT, "master: no application %s", id);
    snprintf(a->user, sizeof a->user, "%s", user ? user : "");
    snprintf(a->ui, sizeof a->ui, "%s", ui_url ? ui_url : "");
    return 0;
}

int master_nworkers(const master *m) { return m->nw; }
int master_napps(const master *m) { return m->na; }

void master_worker_at(const master *m, int i, master_worker_view *v) {
    const worker *w = &m->w[i];
    v->id = w->id;
    v->host = w->host;
    v->port = w->port;
    v->webui = w->webui;
    v->state = w->alive ? "ALIVE" : w->unknown ? "UNKNOWN" : "DEAD";
    v->cores = w->cores;
    v->cores_used = w->cores_used;
    v->mem_mib = w->mem_mib;
    v->mem_used = w->mem_used;
    v->last_beat_ms = w->last_beat;
}

void master_app_at(const master *m, int i, master_app_view *v) {
    const app *a = &m->a[i];
    v->id = a->id;
    v->name = a->name;
    v->user = a->user;
    v->ui = a->ui;
    v->state = a->failed ? "FAILED" : a->done ? "FINISHED" : a->unknown ? "UNKNOWN" : a->nexecs ? "RUNNING" : "WAITING";
    v->done = a->done;
    v->cores_max = a->cores_max;
    v->cores_granted = a->cores_granted;
    v->mem_mib = a->mem_mib;
    v->start_ms = a->start_ms;
    v->end_ms = a->end_ms;
    v->execs = a->execs;
    v->nexecs = a->nexecs;
}
