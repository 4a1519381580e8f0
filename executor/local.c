/*
 * local.c -- the local[N] backend (see local.h).
 *
 * One executor (id 0) with N slots: N worker threads take attempts from one
 * FIFO.  One mutex, the scheduler's event queue's own, guards the FIFO, the
 * list of running attempts and the queue of events, so a worker reports an
 * attempt's end and takes the next attempt in one critical section.
 * Launches gather on the scheduler's thread and join the FIFO at flush, in
 * one lock round trip per burst; an attempt then costs one allocation
 * holding both it and its end event and one lock round trip of its own
 * (end and next), which keeps thousands of trivial tasks per job cheap
 * (bench/tasks).  A kill removes a queued attempt (posting its end at
 * once) or raises a running one's cancel flag, which the runner checks
 * between record batches.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "local.h"
#include "shuffle.h"

/* One attempt, allocated at launch with the event that will report its
 * end (first, so that the scheduler's ev_free frees the whole). */
typedef struct ltask {
    sched_event ev;
    struct ltask *next, *prev; /* in the queue, or in the running list */
    uint64_t id;
    uint8_t *desc;
    size_t len;
    task_ctl ctl;
} ltask;

typedef struct local_backend {
    backend b;
    exec_env *env;
    evq *events;
    int n;
    pthread_t *threads;
    pthread_mutex_t *mu; /* the scheduler's event queue's: one lock for both */
    pthread_cond_t work;
    ltask *qhead, *qtail; /* queued, in launch order */
    ltask *bhead, *btail; /* launched, not yet flushed (the scheduler's thread only) */
    ltask *running;       /* doubly linked */
    int stopping;
} local_backend;

static void unlink_running(local_backend *lb, ltask *t) {
    if (t->prev) t->prev->next = t->next;
    else lb->running = t->next;
    if (t->next) t->next->prev = t->prev;
    t->next = t->prev = NULL;
}

/* Post the attempt's end (with lb->mu, the queue's lock, held); the event
 * (and t with it) belongs to the scheduler from then on. */
static void post_end(local_backend *lb, ltask *t, int killed) {
    sched_event *ev = &t->ev;
    ev->kind = EV_TASK_ENDED;
    ev->exec = 0;
    ev->killed = killed;
    ev->res.task_id = t->id;
    evq_post_locked(lb->events, ev);
}

static void *worker(void *arg) {
    local_backend *lb = arg;
    pthread_mutex_lock(lb->mu);
    for (;;) {
        while (!lb->qhead && !lb->stopping) pthread_cond_wait(&lb->work, lb->mu);
        if (!lb->qhead) break;
        ltask *t = lb->qhead;
        lb->qhead = t->next;
        if (!lb->qhead) lb->qtail = NULL;
        t->prev = NULL;
        t->next = lb->running;
        if (lb->running) lb->running->prev = t;
        lb->running = t;
        t->ev.start_us = ev_now_us();
        pthread_mutex_unlock(lb->mu);

        runner_run(lb->env, t->desc, t->len, &t->ev.res, &t->ctl);
        t->desc = NULL; /* the runner owns and frees it */
        t->ev.end_us = ev_now_us();

        /* One critical section reports this attempt and takes the next. */
        pthread_mutex_lock(lb->mu);
        unlink_running(lb, t);
        post_end(lb, t, __atomic_load_n(&t->ctl.cancel, __ATOMIC_RELAXED));
    }
    pthread_mutex_unlock(lb->mu);
    return NULL;
}

static int l_launch(backend *b, uint64_t task_id, uint8_t *desc, size_t len, int exec) {
    local_backend *lb = (local_backend *)b;
    if (exec != BE_ANY_EXEC && exec != 0) {
        free(desc);
        return em__seterr(EM_EINVAL, "local backend: no executor %d", exec);
    }
    /* Not zeroed whole: the runner fills the result; the rest is set here. */
    ltask *t = malloc(sizeof *t);
    if (!t) {
        free(desc);
        return em__seterr(EM_ENOMEM, "local backend: out of memory");
    }
    memset(&t->ev, 0, offsetof(sched_event, res));
    t->ev.res.data = NULL;
    t->ev.res.accs = NULL;
    t->next = t->prev = NULL;
    t->id = task_id;
    t->desc = desc;
    t->len = len;
    t->ctl.cancel = 0;
    if (lb->btail) lb->btail->next = t;
    else lb->bhead = t;
    lb->btail = t;
    return 0;
}

static void l_flush(backend *b) {
    local_backend *lb = (local_backend *)b;
    if (!lb->bhead) return;
    pthread_mutex_lock(lb->mu);
    if (lb->qtail) lb->qtail->next = lb->bhead;
    else lb->qhead = lb->bhead;
    lb->qtail = lb->btail;
    pthread_cond_broadcast(&lb->work);
    pthread_mutex_unlock(lb->mu);
    lb->bhead = lb->btail = NULL;
}

/* Post the end of an attempt that never started (killed, or the backend
 * closing): lb->mu held. */
static void end_unstarted(local_backend *lb, ltask *t) {
    free(t->desc);
    memset(&t->ev.res, 0, sizeof t->ev.res);
    t->ev.res.status = EM_ECANCELED;
    snprintf(t->ev.res.errmsg, sizeof t->ev.res.errmsg, "task killed before it started");
    t->ev.res.fetch_map = -1;
    post_end(lb, t, 1);
}

static int l_kill(backend *b, uint64_t task_id) {
    local_backend *lb = (local_backend *)b;
    pthread_mutex_lock(lb->mu);
    for (ltask **pp = &lb->bhead, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next)
        if ((*pp)->id == task_id) { /* not flushed yet */
            ltask *t = *pp;
            *pp = t->next;
            if (lb->btail == t) lb->btail = prev;
            end_unstarted(lb, t);
            pthread_mutex_unlock(lb->mu);
            return 0;
        }
    for (ltask *t = lb->running; t; t = t->next)
        if (t->id == task_id) {
            __atomic_store_n(&t->ctl.cancel, 1, __ATOMIC_RELAXED);
            pthread_mutex_unlock(lb->mu);
            return 0;
        }
    for (ltask **pp = &lb->qhead, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next)
        if ((*pp)->id == task_id) {
            ltask *t = *pp;
            *pp = t->next;
            if (lb->qtail == t) lb->qtail = prev;
            end_unstarted(lb, t);
            pthread_mutex_unlock(lb->mu);
            return 0;
        }
    pthread_mutex_unlock(lb->mu);
    return EM_ESTATE;
}

static int l_running_since(backend *b, uint64_t task_id, uint64_t *start_us) {
    local_backend *lb = (local_backend *)b;
    int found = 0;
    pthread_mutex_lock(lb->mu);
    for (ltask *t = lb->running; t && !found; t = t->next)
        if (t->id == task_id) {
            *start_us = t->ev.start_us;
            found = 1;
        }
    pthread_mutex_unlock(lb->mu);
    return found;
}

static void l_drop_shuffle(backend *b, uint32_t shuffle_id) {
    local_backend *lb = (local_backend *)b;
    shuffle_remove(lb->env->local_dir, shuffle_id);
}

static void l_drop_map_output(backend *b, int exec, uint32_t shuffle_id, int map, uint64_t attempt) {
    local_backend *lb = (local_backend *)b;
    shuffle_remove_output(lb->env->local_dir, shuffle_id, (uint32_t)map, attempt);
}

static int l_cores(backend *b) { return ((local_backend *)b)->n; }

static void l_close(backend *b) {
    local_backend *lb = (local_backend *)b;
    l_flush(b);
    pthread_mutex_lock(lb->mu);
    /* Queued attempts never start. */
    for (ltask *t = lb->qhead, *nx; t; t = nx) {
        nx = t->next;
        free(t->desc);
        free(t); /* its event was never posted, and holds no result */
    }
    lb->qhead = lb->qtail = NULL;
    lb->stopping = 1;
    pthread_cond_broadcast(&lb->work);
    pthread_mutex_unlock(lb->mu);
    for (int i = 0; i < lb->n; i++) pthread_join(lb->threads[i], NULL);
    pthread_cond_destroy(&lb->work);
    free(lb->threads);
    free(lb);
}

backend *local_backend_new(int nthreads, exec_env *env, evq *events) {
    local_backend *lb = calloc(1, sizeof *lb);
    if (!lb || !(lb->threads = calloc((size_t)nthreads, sizeof(pthread_t)))) {
        free(lb);
        em__seterr(EM_ENOMEM, "local backend: out of memory");
        return NULL;
    }
    lb->b.launch = l_launch;
    lb->b.flush = l_flush;
    lb->b.kill = l_kill;
    lb->b.cores = l_cores;
    lb->b.drop_shuffle = l_drop_shuffle;
    lb->b.drop_map_output = l_drop_map_output;
    lb->b.running_since = l_running_since;
    lb->b.close = l_close;
    lb->env = env;
    lb->events = events;
    lb->mu = &events->mu;
    pthread_cond_init(&lb->work, NULL);
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&lb->threads[i], NULL, worker, lb) != 0) {
            lb->n = i;
            l_close(&lb->b);
            em__seterr(EM_ENOMEM, "local backend: cannot start thread %d", i);
            return NULL;
        }
        lb->n = i + 1;
    }
    sched_event *ev = calloc(1, sizeof *ev);
    if (ev) { /* one executor, id 0, with a slot per thread */
        ev->kind = EV_EXEC_ADDED;
        ev->exec = 0;
        ev->cores = nthreads;
        ev->res.fetch_map = -1;
        snprintf(ev->text, sizeof ev->text, "local[%d]", nthreads);
        evq_post(events, ev);
    }
    return &lb->b;
}
