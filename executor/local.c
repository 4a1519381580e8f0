/*
 * local.c -- the local[N] backend (see local.h).
 *
 * One executor (id 0) with N slots: N worker threads take attempts from one
 * FIFO.  For tests of placement (ember.test.executors) the N threads may be
 * split into E executors, ids 0..E-1, each with its own FIFO and threads,
 * which like a cluster's executors accept no more attempts than they have
 * threads; the one executor of plain local[N] accepts any number, queued
 * in its FIFO (there is nowhere else to run them).  One mutex, the scheduler's event queue's own, guards the FIFO, the
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

#include "curmetrics.h"
#include "err.h"
#include "local.h"
#include "shuffle.h"
#include "shuffle_files.h"

/* One attempt, allocated at launch with the event that will report its
 * end (first, so that the scheduler's ev_free frees the whole). */
typedef struct ltask {
    sched_event ev;
    struct ltask *next, *prev; /* in the queue, or in the running list */
    uint64_t id;
    int exec;
    uint8_t *desc;
    size_t len;
    task_ctl ctl;
} ltask;

/* One executor: its FIFO and the threads that serve it. */
typedef struct lexec {
    pthread_cond_t work;
    ltask *qhead, *qtail; /* queued, in launch order */
    int nthreads;
} lexec;

typedef struct local_backend {
    backend b;
    exec_env *env;
    evq *events;
    int n;                /* threads started */
    pthread_t *threads;
    struct worker_arg *args;
    int nexec;
    lexec *execs;
    pthread_mutex_t *mu; /* the scheduler's event queue's: one lock for both */
    ltask *bhead, *btail; /* launched, not yet flushed (the scheduler's thread only) */
    ltask *running;       /* doubly linked */
    int stopping;
} local_backend;

typedef struct worker_arg {
    local_backend *lb;
    int exec;
} worker_arg;

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
    ev->exec = t->exec;
    ev->killed = killed;
    ev->res.task_id = t->id;
    evq_post_locked(lb->events, ev);
}

void (*local_result_hook)(const task_result *res);

static void *worker(void *arg) {
    local_backend *lb = ((worker_arg *)arg)->lb;
    lexec *x = &lb->execs[((worker_arg *)arg)->exec];
    pthread_mutex_lock(lb->mu);
    for (;;) {
        while (!x->qhead && !lb->stopping) pthread_cond_wait(&x->work, lb->mu);
        if (!x->qhead) break;
        ltask *t = x->qhead;
        x->qhead = t->next;
        if (!x->qhead) x->qtail = NULL;
        t->prev = NULL;
        t->next = lb->running;
        if (lb->running) lb->running->prev = t;
        lb->running = t;
        /* One clock for the event's times and the attempt's metrics. */
        t->ctl.start_ns = tm_now_ns();
        t->ev.start_us = (uint64_t)t->ctl.start_ns / 1000;
        pthread_mutex_unlock(lb->mu);

        runner_run(lb->env, t->desc, t->len, &t->ev.res, &t->ctl);
        t->desc = NULL; /* the runner owns and frees it */
        t->ev.end_us = (uint64_t)t->ctl.end_ns / 1000;
        if (local_result_hook) local_result_hook(&t->ev.res);

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
    if (exec != BE_ANY_EXEC && (exec < 0 || exec >= lb->nexec)) {
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
    t->ev.res.lost_maps = NULL;
    t->ev.res.blocks = NULL;
    t->ev.res.nblocks = 0;
    t->next = t->prev = NULL;
    t->id = task_id;
    t->exec = exec == BE_ANY_EXEC ? 0 : exec;
    t->desc = desc;
    t->len = len;
    t->ctl.cancel = 0;
    t->ctl.start_ns = t->ctl.end_ns = 0;
    if (lb->btail) lb->btail->next = t;
    else lb->bhead = t;
    lb->btail = t;
    return 0;
}

static void l_flush(backend *b) {
    local_backend *lb = (local_backend *)b;
    if (!lb->bhead) return;
    pthread_mutex_lock(lb->mu);
    for (ltask *t = lb->bhead, *n; t; t = n) {
        n = t->next;
        lexec *x = &lb->execs[t->exec];
        t->next = NULL;
        if (x->qtail) x->qtail->next = t;
        else x->qhead = t;
        x->qtail = t;
    }
    for (int i = 0; i < lb->nexec; i++) pthread_cond_broadcast(&lb->execs[i].work);
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
    for (int i = 0; i < lb->nexec; i++) {
        lexec *x = &lb->execs[i];
        for (ltask **pp = &x->qhead, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next)
            if ((*pp)->id == task_id) {
                ltask *t = *pp;
                *pp = t->next;
                if (x->qtail == t) x->qtail = prev;
                end_unstarted(lb, t);
                pthread_mutex_unlock(lb->mu);
                return 0;
            }
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
    memout_remove_shuffle(lb->env->outputs, shuffle_id);
}

static void l_drop_map_output(backend *b, int exec, uint32_t shuffle_id, int map, uint64_t attempt) {
    local_backend *lb = (local_backend *)b;
    shuffle_remove_output(lb->env->local_dir, shuffle_id, (uint32_t)map, attempt);
    memout_remove(lb->env->outputs, shuffle_id, (uint32_t)map, attempt);
}

static int l_cores(backend *b) { return ((local_backend *)b)->n; }

static void free_backend(local_backend *lb) {
    for (int i = 0; i < lb->nexec; i++) pthread_cond_destroy(&lb->execs[i].work);
    free(lb->execs);
    free(lb->args);
    free(lb->threads);
    free(lb);
}

static void l_close(backend *b) {
    local_backend *lb = (local_backend *)b;
    l_flush(b);
    pthread_mutex_lock(lb->mu);
    /* Queued attempts never start. */
    for (int i = 0; i < lb->nexec; i++) {
        lexec *x = &lb->execs[i];
        for (ltask *t = x->qhead, *nx; t; t = nx) {
            nx = t->next;
            free(t->desc);
            free(t); /* its event was never posted, and holds no result */
        }
        x->qhead = x->qtail = NULL;
        pthread_cond_broadcast(&x->work);
    }
    lb->stopping = 1;
    pthread_mutex_unlock(lb->mu);
    for (int i = 0; i < lb->n; i++) pthread_join(lb->threads[i], NULL);
    free_backend(lb);
}

/* Events made here and never posted (plain: no payload yet). */
static void free_events(sched_event *ev) {
    for (sched_event *next; ev; ev = next) {
        next = ev->next;
        free(ev);
    }
}

backend *local_backend_new(int nthreads, int nexec, exec_env *env, evq *events) {
    local_backend *lb = calloc(1, sizeof *lb);
    if (nexec < 1 || nexec > nthreads) nexec = 1;
    if (!lb || !(lb->threads = calloc((size_t)nthreads, sizeof(pthread_t))) ||
        !(lb->args = calloc((size_t)nthreads, sizeof(worker_arg))) || !(lb->execs = calloc((size_t)nexec, sizeof(lexec)))) {
        if (lb) {
            free(lb->threads);
            free(lb->args);
        }
        free(lb);
        em__seterr(EM_ENOMEM, "local backend: out of memory");
        return NULL;
    }
    /* The executors' announcements, made before any thread starts: an
     * executor the scheduler never hears of would leave local[1]'s jobs
     * waiting for it forever, so their allocation failing fails em_open. */
    sched_event *announce = NULL;
    for (int i = 0; i < nexec; i++) {
        sched_event *ev = calloc(1, sizeof *ev);
        if (!ev) {
            free_events(announce);
            free(lb->threads);
            free(lb->args);
            free(lb->execs);
            free(lb);
            em__seterr(EM_ENOMEM, "local backend: out of memory");
            return NULL;
        }
        ev->next = announce;
        announce = ev;
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
    lb->nexec = nexec;
    for (int i = 0; i < nexec; i++) {
        pthread_cond_init(&lb->execs[i].work, NULL);
        lb->execs[i].nthreads = nthreads / nexec + (i < nthreads % nexec); /* as even as it goes */
    }
    for (int i = 0, x = 0, k = 0; i < nthreads; i++) {
        lb->args[i].lb = lb;
        lb->args[i].exec = x;
        if (++k == lb->execs[x].nthreads) {
            x++;
            k = 0;
        }
        if (pthread_create(&lb->threads[i], NULL, worker, &lb->args[i]) != 0) {
            lb->n = i;
            free_events(announce);
            l_close(&lb->b);
            em__seterr(EM_ENOMEM, "local backend: cannot start thread %d", i);
            return NULL;
        }
        lb->n = i + 1;
    }
    for (int i = 0; i < nexec; i++) {
        sched_event *ev = announce;
        announce = ev->next;
        ev->next = NULL;
        ev->kind = EV_EXEC_ADDED;
        ev->exec = i;
        ev->cores = lb->execs[i].nthreads;
        ev->backlog = nexec == 1 ? -1 : 0; /* alone, it queues everything */
        snprintf(ev->host, sizeof ev->host, "localhost"); /* every executor of local[N] is here */
        ev->res.fetch_map = -1;
        if (nexec == 1) snprintf(ev->text, sizeof ev->text, "local[%d]", nthreads);
        else snprintf(ev->text, sizeof ev->text, "local[%d] executor %d of %d", nthreads, i, nexec);
        evq_post(events, ev);
    }
    return &lb->b;
}
