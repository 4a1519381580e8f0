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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"
#include "master.h"

typedef struct worker {
    char id[MASTER_ID_MAX];
    char host[256];
    int port;
    int cores, cores_used;
    int64_t mem_mib, mem_used;
    uint64_t last_beat;
    int alive;
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
} app;

struct master {
    master_conf c;
    char url[256];
    worker *w;
    int nw, capw;
    app *a;
    int na, capa;
    int next_app;
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

int master_expire(master *m, uint64_t now_ms, void (*lost)(void *ud, const master_exec *e), void *ud) {
    int died = 0;
    for (int i = 0; i < m->nw; i++) {
        worker *w = &m->w[i];
        if (!w->alive || now_ms - w->last_beat <= m->c.worker_timeout_ms) continue;
        kill_worker(m, w, lost, ud);
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
    return 0;
}

int master_unregister_app(master *m, const char *id, uint64_t now_ms, void (*kill)(void *ud, const master_exec *e),
                          void *ud) {
    app *a = find_app(m, id);
    if (!a || a->done) return em__seterr(EM_ENOENT, "master: no running application %s", id);
    while (a->nexecs) {
        master_exec e = a->execs[a->nexecs - 1];
        drop_exec(m, a, a->nexecs - 1);
        if (kill) kill(ud, &e);
    }
    a->done = 1;
    a->end_ms = now_ms;
    return 0;
}

int master_kill_executor(master *m, const char *id, int exec_id, void (*kill)(void *ud, const master_exec *e),
                         void *ud) {
    app *a = find_app(m, id);
    for (int k = 0; a && k < a->nexecs; k++)
        if (a->execs[k].id == exec_id) {
            kill(ud, &a->execs[k]);
            return 0;
        }
    return em__seterr(EM_ENOENT, "master: no executor %d of application %s", exec_id, id);
}

int master_executor_exited(master *m, const char *id, int exec_id) {
    app *a = find_app(m, id);
    for (int k = 0; a && k < a->nexecs; k++)
        if (a->execs[k].id == exec_id) {
            drop_exec(m, a, k);
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
                if (launch) launch(ud, e);
            }
        }
        free(cores);
        free(execs);
    }
    return granted;
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

static int put_app(ebuf *b, const app *a, uint64_t now_ms) {
    int rc = put(b, "{\"id\":") || put_str(b, a->id) || put(b, ",\"name\":") || put_str(b, a->name) ||
             putf(b, ",\"starttime\":%lld", (long long)a->start_ms) || putf(b, ",\"cores\":%lld", a->cores_granted) ||
             putf(b, ",\"memoryperslave\":%lld", (long long)a->mem_mib) ||
             putf(b, ",\"duration\":%lld", (long long)((a->done ? a->end_ms : now_ms) - a->start_ms)) ||
             put(b, ",\"state\":") || put_str(b, a->done ? "FINISHED" : a->nexecs ? "RUNNING" : "WAITING") ||
             put(b, ",\"executors\":[");
    for (int k = 0; k < a->nexecs && !rc; k++)
        rc = put(b, k ? ",{" : "{") || putf(b, "\"id\":%lld", a->execs[k].id) || put(b, ",\"worker\":") ||
             put_str(b, a->execs[k].worker) || putf(b, ",\"cores\":%lld", a->execs[k].cores) ||
             putf(b, ",\"memory\":%lld}", (long long)a->execs[k].mem_mib);
    return rc || put(b, "]}");
}

int master_json(master *m, uint64_t now_ms, ebuf *out) {
    long long cores = 0, used = 0, mem = 0, memused = 0, alive = 0;
    int rc = put(out, "{\"url\":") || put_str(out, m->url) || put(out, ",\"workers\":[");
    for (int i = 0, first = 1; i < m->nw && !rc; i++, first = 0) {
        const worker *w = &m->w[i];
        char addr[300];
        snprintf(addr, sizeof addr, "%s:%d", w->host, w->port);
        rc = put(out, first ? "{" : ",{") || put(out, "\"id\":") || put_str(out, w->id) || put(out, ",\"host\":") ||
             put_str(out, w->host) || putf(out, ",\"port\":%lld", w->port) || put(out, ",\"address\":") ||
             put_str(out, addr) || putf(out, ",\"cores\":%lld", w->cores) ||
             putf(out, ",\"coresused\":%lld", w->cores_used) ||
             putf(out, ",\"coresfree\":%lld", w->cores - w->cores_used) ||
             putf(out, ",\"memory\":%lld", (long long)w->mem_mib) ||
             putf(out, ",\"memoryused\":%lld", (long long)w->mem_used) ||
             putf(out, ",\"memoryfree\":%lld", (long long)(w->mem_mib - w->mem_used)) || put(out, ",\"state\":") ||
             put_str(out, w->alive ? "ALIVE" : "DEAD") ||
             putf(out, ",\"lastheartbeat\":%lld}", (long long)w->last_beat);
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
            rc = (first ? 0 : put(out, ",")) || put_app(out, &m->a[i], now_ms);
            first = 0;
        }
    rc = rc || put(out, "],\"completedapps\":[");
    for (int i = 0, first = 1; i < m->na && !rc; i++)
        if (m->a[i].done) {
            rc = (first ? 0 : put(out, ",")) || put_app(out, &m->a[i], now_ms);
            first = 0;
        }
    rc = rc || put(out, "],\"status\":\"ALIVE\"}");
    return rc ? em__seterr(EM_ENOMEM, "master: out of memory") : 0;
}
