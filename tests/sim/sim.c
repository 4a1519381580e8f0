/*
 * sim.c -- the simulated cluster (see sim.h).
 *
 * The scheduler's thread calls launch, flush and kill; one thread of the
 * simulation plays every executor.  Launches gather on the scheduler's
 * thread and reach the simulation at flush in one lock round trip, as the
 * cluster backend's reach its loop; a kill goes to the simulation's inbox.
 * Each round the simulation takes its inbox, queues the launches on their
 * executors, starts what fits on their cores, ends what is due (a
 * min-heap of running attempts by end time), loses and adds executors
 * when their time comes, and posts the round's events to the scheduler in
 * one lock round trip.  An attempt is one allocation with the event that
 * reports its end (first, so that the scheduler's ev_free frees both).
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "conf.h"
#include "err.h"
#include "events.h"
#include "idmap.h"
#include "mapstatus.h"
#include "sim.h"
#include "taskdesc.h"

enum { A_QUEUED = 1, A_RUNNING };

typedef struct sattempt {
    sched_event ev; /* first: the scheduler frees the attempt with it */
    struct sattempt *next;
    uint64_t id;
    int exec;
    int state;
    uint8_t *desc;
    size_t len;
    task_desc *td;       /* decoded as it ends */
    int64_t held;        /* bytes it and its description take */
    uint64_t end_us;     /* running: when it ends */
    int heap_pos;        /* running: its place in the heap */
} sattempt;

typedef struct sexec {
    int alive, cores, running, queued, host;
    sattempt *qh, *qt;   /* waiting for a core, in launch order */
} sexec;

typedef struct sim {
    backend b;
    sim_opts o;
    evq *events;
    int cores_each, backlog, backlog_max;
    int total_cores;     /* of executors alive (atomic) */
    pthread_t thread;
    /* Shared, under mu: */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sattempt *inbox_h, *inbox_t;
    uint64_t *kills;
    size_t nkills, kcap;
    idmap live;          /* attempts not yet ended, by id */
    int stopping;
    /* The scheduler's thread: launched, not yet flushed. */
    sattempt *bh, *bt;
    /* The simulation's thread: */
    sexec *ex;
    int nexec, excap;
    sattempt **heap;
    int nheap, heapcap;
    int64_t in_flight;
    uint64_t next_loss_us;
    int loss_next;       /* round robin over executors */
    struct join { uint64_t at_us; int host; } *joins;
    int njoins, joincap;
    sched_event *oh, *ot; /* this round's events */
    uint64_t *dead;       /* this round's ended attempts, to leave live */
    size_t ndead, deadcap;
    struct probe *probe;  /* loss_probe: this round's, posted last */
    sim_stats st;         /* the simulation's thread's counts */
    int64_t launched;     /* the scheduler's thread's */
} sim;

static sim_opts installed;
static sim_stats last;    /* published each round, and at close */
static pthread_mutex_t stats_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t held;      /* bytes the simulation holds (atomic) */

/* A loss's timing (loss_probe): posted behind the loss's events; the
 * scheduler's thread runs it after them, and it queues itself once more,
 * to run after that round's launches: then the clock is read. */
typedef struct probe {
    evq *events;
    uint64_t t0_ns;
    int hops;
} probe;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void probe_run(void *sched, void *arg) {
    (void)sched;
    probe *p = arg;
    sched_event *ev = p->hops++ ? NULL : calloc(1, sizeof *ev);
    if (ev) {
        ev->kind = EV_CALL;
        ev->call = probe_run;
        ev->arg = p;
        ev->res.fetch_map = -1;
        evq_post(p->events, ev);
        return;
    }
    uint64_t dt = now_ns() - p->t0_ns;
    pthread_mutex_lock(&stats_mu);
    last.loss_probes++;
    last.loss_ns_total += (int64_t)dt;
    if ((int64_t)dt > last.loss_ns_max) last.loss_ns_max = (int64_t)dt;
    pthread_mutex_unlock(&stats_mu);
    free(p);
}

/* ------------------------------------------------------------ events */

static void emit(sim *s, sched_event *ev) {
    ev->next = NULL;
    if (s->ot) s->ot->next = ev;
    else s->oh = ev;
    s->ot = ev;
}

/* Publish the round: the ended attempts leave live (so a kill of them
 * finds nothing), the counts, then the events. */
static void emit_flush(sim *s) {
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->ndead; i++) idmap_del(&s->live, s->dead[i]);
    s->ndead = 0;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&stats_mu);
    sim_stats keep = last; /* the probes' figures are the scheduler's thread's */
    last = s->st;
    last.launched = __atomic_load_n(&s->launched, __ATOMIC_RELAXED);
    last.loss_probes = keep.loss_probes;
    last.loss_ns_total = keep.loss_ns_total;
    last.loss_ns_max = keep.loss_ns_max;
    pthread_mutex_unlock(&stats_mu);
    if (s->probe) {
        sched_event *ev = calloc(1, sizeof *ev);
        if (ev) {
            ev->kind = EV_CALL;
            ev->call = probe_run;
            ev->arg = s->probe;
            ev->res.fetch_map = -1;
            emit(s, ev);
            s->probe->t0_ns = now_ns();
        } else {
            free(s->probe);
        }
        s->probe = NULL;
    }
    if (!s->oh) return;
    pthread_mutex_lock(&s->events->mu);
    for (sched_event *e = s->oh, *n; e; e = n) {
        n = e->next;
        evq_post_locked(s->events, e);
    }
    pthread_mutex_unlock(&s->events->mu);
    s->oh = s->ot = NULL;
}

static void hold(int64_t n) { __atomic_fetch_add(&held, n, __ATOMIC_RELAXED); }

/* ------------------------------------------------------------ the heap */

static void heap_set(sim *s, int i, sattempt *a) {
    s->heap[i] = a;
    a->heap_pos = i;
}

static void heap_up(sim *s, int i) {
    sattempt *a = s->heap[i];
    while (i > 0) {
        int p = (i - 1) / 2;
        if (s->heap[p]->end_us <= a->end_us) break;
        heap_set(s, i, s->heap[p]);
        i = p;
    }
    heap_set(s, i, a);
}

static void heap_down(sim *s, int i) {
    sattempt *a = s->heap[i];
    for (;;) {
        int c = 2 * i + 1;
        if (c >= s->nheap) break;
        if (c + 1 < s->nheap && s->heap[c + 1]->end_us < s->heap[c]->end_us) c++;
        if (s->heap[c]->end_us >= a->end_us) break;
        heap_set(s, i, s->heap[c]);
        i = c;
    }
    heap_set(s, i, a);
}

static int heap_push(sim *s, sattempt *a) {
    if (s->nheap == s->heapcap) {
        int cap = s->heapcap ? s->heapcap * 2 : 1024;
        sattempt **h = realloc(s->heap, sizeof *h * (size_t)cap);
        if (!h) return -1;
        s->heap = h;
        s->heapcap = cap;
    }
    s->heap[s->nheap++] = a;
    heap_up(s, s->nheap - 1);
    return 0;
}

static void heap_remove(sim *s, sattempt *a) {
    int i = a->heap_pos;
    sattempt *last_one = s->heap[--s->nheap];
    if (i == s->nheap) return;
    heap_set(s, i, last_one);
    heap_up(s, i);
    heap_down(s, last_one->heap_pos);
}

/* ------------------------------------------------------------ results */

/* Records of a count: through the operators that keep every record, to a
 * range's slice or a reduce partition's non-empty segments.  -1 when the
 * plan holds anything else. */
static int64_t count_of(const plan_node *n) {
    for (;;) {
        if (!n) return -1;
        switch (n->type) {
        case PN_RANGE: return (int64_t)n->count;
        case PN_SHUFFLE: {
            int64_t c = 0;
            for (int m = 0; m < n->nmaps; m++) c += n->seglens && n->seglens[m] != 0;
            return c;
        }
        case PN_OP:
            if (n->op != OP_MAP && n->op != OP_MAP_VALUES && n->op != OP_KEY_BY) return -1;
            n = n->nchild == 1 ? n->child[0] : NULL;
            break;
        default: return -1;
        }
    }
}

static void fail_res(task_result *r, int code, const char *why) {
    r->status = code;
    snprintf(r->errmsg, sizeof r->errmsg, "%s", why);
}

/* The result a's sink expects, into a->ev.res. */
static void make_result(sim *s, sattempt *a) {
    task_result *r = &a->ev.res;
    const task_desc *td = a->td;
    if (!td) return; /* its decoding failed: the message is set */
    switch (td->sink.kind) {
    case SK_SHUFFLE: {
        int np = td->sink.nparts;
        uint64_t *segs = malloc(sizeof *segs * (size_t)(np > 0 ? np : 1));
        ebuf b = {0};
        if (segs)
            for (int i = 0; i < np; i++) segs[i] = s->o.seg_bytes;
        if (!segs || ms_encode(segs, np, td->sink.n, &b)) {
            free(segs);
            ebuf_free(&b);
            fail_res(r, EM_ENOMEM, "sim: out of memory");
            return;
        }
        free(segs);
        if (td->partition < s->o.bad_status_maps && td->attempt == 0 && b.len) b.len--;
        r->data = ebuf_steal(&b, &r->len);
        snprintf(r->loc, sizeof r->loc, "sim://exec-%d", a->exec);
        return;
    }
    case SK_COUNT: {
        int64_t c = count_of(td->root);
        if (c < 0) {
            fail_res(r, EM_EINVAL, "sim: this count's plan is not simulated (only maps over a range or a shuffle)");
            return;
        }
        if (!(r->data = malloc(sizeof c))) {
            fail_res(r, EM_ENOMEM, "sim: out of memory");
            return;
        }
        memcpy(r->data, &c, sizeof c);
        r->len = sizeof c;
        return;
    }
    case SK_FOREACH: return;
    default: {
        char why[80];
        snprintf(why, sizeof why, "sim: sink %d is not simulated", td->sink.kind);
        fail_res(r, EM_EINVAL, why);
    }
    }
}

/* ------------------------------------------------------------ attempts */

/* The description's bytes leave the simulation's account (freed, or
 * handed to the decoder, whose task_desc is freed at the attempt's end). */
static void desc_unheld(sattempt *a) {
    int64_t own = (int64_t)malloc_usable_size(a);
    hold(-(a->held - own));
    a->held = own;
}

static void a_release(sattempt *a) {
    if (a->desc) {
        desc_unheld(a);
        free(a->desc);
        a->desc = NULL;
    }
    if (a->td) taskdesc_free(a->td);
    a->td = NULL;
}

/* Post a's end (already unlinked from its executor and the heap). */
static void a_end(sim *s, sattempt *a, int killed) {
    a_release(a);
    hold(-(int64_t)malloc_usable_size(a));
    if (s->ndead == s->deadcap) {
        size_t cap = s->deadcap ? s->deadcap * 2 : 1024;
        uint64_t *d = realloc(s->dead, sizeof *d * cap);
        if (!d) abort(); /* a test's simulation: nowhere to report it */
        s->dead = d;
        s->deadcap = cap;
    }
    s->dead[s->ndead++] = a->id;
    s->st.ended++;
    a->ev.kind = EV_TASK_ENDED;
    a->ev.exec = a->exec;
    a->ev.killed = killed;
    a->ev.res.task_id = a->id;
    if (!a->ev.end_us) a->ev.end_us = ev_now_us();
    s->in_flight--;
    emit(s, &a->ev);
}

/* Run a until its end time. */
static void a_start(sim *s, sattempt *a, uint64_t now) {
    sexec *x = &s->ex[a->exec];
    a->state = A_RUNNING;
    x->running++;
    s->st.started++;
    a->ev.start_us = now;
    uint64_t run = s->o.task_us;
    if (s->o.slow_every > 0 && a->exec % s->o.slow_every == s->o.slow_every - 1)
        run = (uint64_t)((double)run * s->o.slow_factor);
    a->end_us = now + run;
    if (heap_push(s, a)) {
        fail_res(&a->ev.res, EM_ENOMEM, "sim: out of memory");
        x->running--;
        a_end(s, a, 0);
    }
}

/* Start what fits on x's cores. */
static void x_fill(sim *s, int e, uint64_t now) {
    sexec *x = &s->ex[e];
    while (x->alive && x->qh && x->running < x->cores) {
        sattempt *a = x->qh;
        x->qh = a->next;
        if (!x->qh) x->qt = NULL;
        a->next = NULL;
        x->queued--;
        a_start(s, a, now);
    }
}

/* a ran its time: its description through the decoder (the bytes a real
 * executor gets), its result, its end, and the next on its cores. */
static void a_finish(sim *s, sattempt *a, uint64_t now) {
    sexec *x = &s->ex[a->exec];
    x->running--;
    uint8_t *d = a->desc;
    a->desc = NULL;
    desc_unheld(a);
    if (taskdesc_decode(d, a->len, &a->td)) {
        a->td = NULL;
        fail_res(&a->ev.res, EM_EPROTO, em_errmsg());
        s->st.decode_failed++;
    } else if (a->td->sink.kind == SK_SHUFFLE) {
        if (a->td->out_codec.id == BF_NONE) s->st.maps_plain++;
        else s->st.maps_coded++;
    }
    make_result(s, a);
    a->ev.end_us = now;
    a_end(s, a, 0);
    x_fill(s, a->exec, now);
}

/* An attempt that cannot run: its executor is gone. */
static void a_gone(sim *s, sattempt *a, const char *why) {
    a->ev.exec_gone = 1;
    a->ev.lost = 1;
    a->ev.res.status = EM_EEXEC;
    snprintf(a->ev.res.errmsg, sizeof a->ev.res.errmsg, "%s", why);
    s->st.lost_attempts++;
    a_end(s, a, 0);
}

static void take_launch(sim *s, sattempt *a, uint64_t now) {
    s->in_flight++;
    if (a->exec < 0 || a->exec >= s->nexec || !s->ex[a->exec].alive) {
        char why[96];
        snprintf(why, sizeof why, "sim: executor %d is not alive", a->exec);
        a_gone(s, a, why);
        return;
    }
    sexec *x = &s->ex[a->exec];
    a->state = A_QUEUED;
    if (x->qt) x->qt->next = a;
    else x->qh = a;
    x->qt = a;
    x->queued++;
    x_fill(s, a->exec, now);
    if (x->queued > s->st.max_queued) s->st.max_queued = x->queued;
}

static void take_kill(sim *s, uint64_t id) {
    pthread_mutex_lock(&s->mu);
    sattempt *a = idmap_get(&s->live, id);
    pthread_mutex_unlock(&s->mu);
    if (!a || !a->state) return; /* ended meanwhile */
    sexec *x = &s->ex[a->exec];
    if (a->state == A_QUEUED) {
        for (sattempt **pp = &x->qh, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next)
            if (*pp == a) {
                *pp = a->next;
                if (x->qt == a) x->qt = prev;
                break;
            }
        a->next = NULL;
        x->queued--;
        a->ev.queued_only = 1;
        a->ev.res.status = EM_ECANCELED;
        snprintf(a->ev.res.errmsg, sizeof a->ev.res.errmsg, "task killed before it started");
        s->st.killed_queued++;
        a_end(s, a, 1);
        return;
    }
    heap_remove(s, a);
    x->running--;
    a->ev.res.status = EM_ECANCELED;
    snprintf(a->ev.res.errmsg, sizeof a->ev.res.errmsg, "task killed");
    s->st.killed_running++;
    a_end(s, a, 1);
    x_fill(s, a->exec, ev_now_us());
}

/* ------------------------------------------------------------ executors */

static int exec_add(sim *s, int host) {
    if (s->nexec == s->excap) {
        int cap = s->excap ? s->excap * 2 : 64;
        sexec *n = realloc(s->ex, sizeof *n * (size_t)cap);
        if (!n) return -1;
        s->ex = n;
        s->excap = cap;
    }
    sched_event *ev = calloc(1, sizeof *ev);
    if (!ev) return -1;
    int id = s->nexec++;
    sexec *x = &s->ex[id];
    memset(x, 0, sizeof *x);
    x->alive = 1;
    x->cores = s->cores_each;
    x->host = host;
    __atomic_fetch_add(&s->total_cores, x->cores, __ATOMIC_RELAXED);
    ev->kind = EV_EXEC_ADDED;
    ev->exec = id;
    ev->cores = x->cores;
    ev->backlog = s->backlog * x->cores;
    ev->backlog_max = s->backlog_max * x->cores;
    ev->res.fetch_map = -1;
    snprintf(ev->host, sizeof ev->host, "simhost-%d", host);
    snprintf(ev->text, sizeof ev->text, "sim executor %d on simhost-%d", id, host);
    s->st.joins++;
    emit(s, ev);
    return 0;
}

/* Lose the next alive executor: its loss, then its attempts' ends. */
static void exec_lose(sim *s, uint64_t now) {
    int e = -1;
    for (int k = 0; k < s->nexec; k++) {
        int c = (s->loss_next + k) % s->nexec;
        if (s->ex[c].alive) {
            e = c;
            break;
        }
    }
    if (e < 0) return;
    s->loss_next = e + 1;
    sexec *x = &s->ex[e];
    sched_event *ev = calloc(1, sizeof *ev);
    if (!ev) return;
    x->alive = 0;
    __atomic_fetch_sub(&s->total_cores, x->cores, __ATOMIC_RELAXED);
    ev->kind = EV_EXEC_LOST;
    ev->exec = e;
    ev->res.fetch_map = -1;
    snprintf(ev->text, sizeof ev->text, "sim: executor %d stopped sending heartbeats", e);
    emit(s, ev);
    s->st.losses++;
    char why[96];
    snprintf(why, sizeof why, "executor %d lost: sim: it stopped sending heartbeats", e);
    sattempt *ran = NULL; /* its running attempts, out of the heap */
    for (int i = 0; i < s->nheap; i++)
        if (s->heap[i]->exec == e) {
            s->heap[i]->next = ran;
            ran = s->heap[i];
        }
    for (sattempt *a = ran, *n; a; a = n) {
        n = a->next;
        a->next = NULL;
        heap_remove(s, a);
        a_gone(s, a, why);
    }
    x->running = 0;
    for (sattempt *a = x->qh, *n; a; a = n) {
        n = a->next;
        a->next = NULL;
        a_gone(s, a, why);
    }
    x->qh = x->qt = NULL;
    x->queued = 0;
    if (s->o.loss_probe && !s->probe && (s->probe = calloc(1, sizeof *s->probe))) s->probe->events = s->events;
    if (s->njoins == s->joincap) {
        int cap = s->joincap ? s->joincap * 2 : 16;
        struct join *j = realloc(s->joins, sizeof *j * (size_t)cap);
        if (!j) return;
        s->joins = j;
        s->joincap = cap;
    }
    s->joins[s->njoins].at_us = now + s->o.replace_ms * 1000u;
    s->joins[s->njoins].host = x->host;
    s->njoins++;
}

/* ------------------------------------------------------------ the thread */

static uint64_t next_deadline(const sim *s) {
    uint64_t t = UINT64_MAX;
    if (s->nheap) t = s->heap[0]->end_us;
    if (s->o.loss_every_ms && s->next_loss_us < t) t = s->next_loss_us;
    for (int i = 0; i < s->njoins; i++)
        if (s->joins[i].at_us < t) t = s->joins[i].at_us;
    return t;
}

static void *sim_main(void *arg) {
    sim *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->stopping && !s->inbox_h && !s->nkills) {
            uint64_t d = next_deadline(s), now = ev_now_us();
            if (d <= now) break;
            if (d == UINT64_MAX) {
                pthread_cond_wait(&s->cv, &s->mu);
                continue;
            }
            struct timespec until = {(time_t)(d / 1000000u), (long)(d % 1000000u) * 1000L};
            pthread_cond_timedwait(&s->cv, &s->mu, &until);
        }
        if (s->stopping) break;
        sattempt *in = s->inbox_h;
        s->inbox_h = s->inbox_t = NULL;
        size_t nk = s->nkills;
        uint64_t *kills = NULL;
        if (nk && (kills = malloc(sizeof *kills * nk))) memcpy(kills, s->kills, sizeof *kills * nk);
        s->nkills = 0;
        pthread_mutex_unlock(&s->mu);

        uint64_t now = ev_now_us();
        for (sattempt *a = in, *n; a; a = n) {
            n = a->next;
            a->next = NULL;
            take_launch(s, a, now);
        }
        if (s->in_flight > s->st.max_in_flight) s->st.max_in_flight = s->in_flight;
        for (size_t i = 0; kills && i < nk; i++) take_kill(s, kills[i]);
        free(kills);
        now = ev_now_us();
        while (s->nheap && s->heap[0]->end_us <= now) {
            sattempt *a = s->heap[0];
            heap_remove(s, a);
            a_finish(s, a, now);
        }
        if (s->o.loss_every_ms && s->next_loss_us <= now) {
            exec_lose(s, now);
            s->next_loss_us = now + s->o.loss_every_ms * 1000u;
        }
        for (int i = 0; i < s->njoins;)
            if (s->joins[i].at_us <= now) {
                exec_add(s, s->joins[i].host);
                s->joins[i] = s->joins[--s->njoins];
            } else {
                i++;
            }
        emit_flush(s);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ------------------------------------------------------------ the backend */

static int s_launch(backend *b, uint64_t task_id, uint8_t *desc, size_t len, int exec) {
    sim *s = (sim *)b;
    sattempt *a = calloc(1, sizeof *a);
    if (!a) {
        free(desc);
        return em__seterr(EM_ENOMEM, "sim: out of memory");
    }
    a->ev.res.fetch_map = -1;
    a->id = task_id;
    a->exec = exec == BE_ANY_EXEC ? 0 : exec;
    a->desc = desc;
    a->len = len;
    a->held = (int64_t)(malloc_usable_size(a) + malloc_usable_size(desc));
    hold(a->held);
    if (s->bt) s->bt->next = a;
    else s->bh = a;
    s->bt = a;
    __atomic_fetch_add(&s->launched, 1, __ATOMIC_RELAXED);
    return 0;
}

static void s_flush(backend *b) {
    sim *s = (sim *)b;
    if (!s->bh) return;
    pthread_mutex_lock(&s->mu);
    for (sattempt *a = s->bh; a; a = a->next) idmap_put(&s->live, a->id, a);
    if (s->inbox_t) s->inbox_t->next = s->bh;
    else s->inbox_h = s->bh;
    s->inbox_t = s->bt;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    s->bh = s->bt = NULL;
}

static int s_kill(backend *b, uint64_t task_id) {
    sim *s = (sim *)b;
    for (sattempt *a = s->bh; a; a = a->next)
        if (a->id == task_id) {
            s_flush(b); /* the kill follows its launch */
            break;
        }
    pthread_mutex_lock(&s->mu);
    int rc = EM_ESTATE;
    if (idmap_get(&s->live, task_id)) {
        if (s->nkills == s->kcap) {
            size_t cap = s->kcap ? s->kcap * 2 : 64;
            uint64_t *k = realloc(s->kills, sizeof *k * cap);
            if (!k) {
                pthread_mutex_unlock(&s->mu);
                return em__seterr(EM_ENOMEM, "sim: out of memory");
            }
            s->kills = k;
            s->kcap = cap;
        }
        s->kills[s->nkills++] = task_id;
        pthread_cond_signal(&s->cv);
        rc = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static void s_drop_shuffle(backend *b, uint32_t shuffle_id) {
    (void)b;
    (void)shuffle_id;
}

static void s_drop_map_output(backend *b, int exec, uint32_t shuffle_id, int map, uint64_t attempt) {
    (void)b;
    (void)exec;
    (void)shuffle_id;
    (void)map;
    (void)attempt;
}

static int s_cores(backend *b) { return __atomic_load_n(&((sim *)b)->total_cores, __ATOMIC_RELAXED); }

static int s_why_idle(backend *b, char *buf, size_t cap) {
    (void)b;
    snprintf(buf, cap, "sim: every executor is lost; new ones join ember's sim replace_ms after a loss");
    return 0;
}

static void free_attempt(void *p) {
    sattempt *a = p;
    a_release(a);
    hold(-(int64_t)malloc_usable_size(a));
    task_result_clear(&a->ev.res);
    free(a);
}

/* Everything but the thread (stopped, or never started). */
static void sim_free(sim *s) {
    for (sattempt *a = s->bh, *n; a; a = n) {
        n = a->next;
        free_attempt(a);
    }
    for (sattempt *a = s->inbox_h, *n; a; a = n) { /* in live too */
        n = a->next;
        idmap_del(&s->live, a->id);
        free_attempt(a);
    }
    for (size_t i = 0; i < s->ndead; i++) idmap_del(&s->live, s->dead[i]); /* in oh */
    idmap_free(&s->live, free_attempt); /* queued and running */
    for (sched_event *e = s->oh, *n; e; e = n) {
        n = e->next;
        ev_free(e);
    }
    pthread_mutex_lock(&stats_mu);
    last.launched = __atomic_load_n(&s->launched, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&stats_mu);
    free(s->heap);
    free(s->ex);
    free(s->joins);
    free(s->kills);
    free(s->dead);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

static void s_close(backend *b) {
    sim *s = (sim *)b;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    sim_free(s);
}

/* "sim[E,C]" -> 0 with *e and *c, else -1. */
static int parse_url(const char *m, int *e, int *c) {
    char tail;
    if (sscanf(m, "sim[%d,%d]%c", e, c, &tail) != 2 || strncmp(m, "sim[", 4) != 0) return -1;
    if (*e < 1 || *e > 100000 || *c < 1 || *c > 1024) return -1;
    return 0;
}

static int sim_claims(const char *master, int *cores) {
    int e, c;
    if (strncmp(master, "sim[", 4) != 0) return 0;
    /* A malformed sim URL is still this hook's: em_open's message names it. */
    *cores = parse_url(master, &e, &c) ? 1 : e * c;
    return 1;
}

static backend *sim_open(const char *master, const struct em_conf *conf, evq *events) {
    int e, c;
    if (parse_url(master, &e, &c)) {
        em__seterr(EM_EINVAL, "em_open: bad master URL \"%s\" (expected sim[E,C], E 1..100000, C 1..1024)", master);
        return NULL;
    }
    sim *s = calloc(1, sizeof *s);
    if (!s) {
        em__seterr(EM_ENOMEM, "sim: out of memory");
        return NULL;
    }
    s->o = installed;
    if (!s->o.seg_bytes) s->o.seg_bytes = 64;
    if (s->o.per_host < 1) s->o.per_host = 50;
    if (!s->o.replace_ms) s->o.replace_ms = 100;
    if (s->o.slow_factor <= 0) s->o.slow_factor = 1;
    s->events = events;
    s->cores_each = c;
    s->backlog = (int)conf_i64(conf, "ember.executor.taskQueue");
    s->backlog_max = (int)conf_i64(conf, "ember.executor.taskQueue.max");
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    s->b.fifo_starts = 1;
    s->b.launch = s_launch;
    s->b.flush = s_flush;
    s->b.kill = s_kill;
    s->b.drop_shuffle = s_drop_shuffle;
    s->b.drop_map_output = s_drop_map_output;
    s->b.cores = s_cores;
    s->b.why_idle = s_why_idle;
    s->b.close = s_close;
    pthread_mutex_lock(&stats_mu);
    memset(&last, 0, sizeof last);
    pthread_mutex_unlock(&stats_mu);
    for (int i = 0; i < e; i++)
        if (exec_add(s, i / s->o.per_host)) {
            em__seterr(EM_ENOMEM, "sim: out of memory");
            sim_free(s);
            return NULL;
        }
    emit_flush(s); /* every executor is there before the first job */
    s->next_loss_us = ev_now_us() + s->o.loss_every_ms * 1000u;
    if (pthread_create(&s->thread, NULL, sim_main, s)) {
        em__seterr(EM_ENOMEM, "sim: cannot start its thread");
        sim_free(s);
        return NULL;
    }
    return &s->b;
}

static const backend_hook hook = {sim_claims, sim_open};

void sim_install(const sim_opts *o) {
    memset(&installed, 0, sizeof installed);
    if (o) installed = *o;
    em_backend_hook = &hook;
}

void sim_uninstall(void) { em_backend_hook = NULL; }

void sim_get_stats(sim_stats *out) {
    pthread_mutex_lock(&stats_mu);
    *out = last;
    pthread_mutex_unlock(&stats_mu);
}

int64_t sim_held_bytes(void) { return __atomic_load_n(&held, __ATOMIC_RELAXED); }
