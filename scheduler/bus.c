/*
 * bus.c -- the listener bus (see bus.h): a ring of event pointers under a
 * mutex, one thread that takes what is queued in a batch and hands each
 * event to the consumers in turn.
 *
 * The poster signals the bus thread only when the ring was empty: the
 * thread, once woken, takes everything queued before it waits again, so a
 * burst of task events costs one wake-up, not one per event.  Woken for a
 * short queue, the thread first lets it fill for LBUS_GATHER_US: a stream
 * of task events then costs a wake-up per interval, not one per event
 * (the consumers see an event that much later; the poster never waits).
 *
 * The ring holds `cap` events; a task event that finds it full is dropped.
 * The other events are always queued: the ring grows for them (`alloc`),
 * and the bus thread takes at most `cap` at a time into its batch.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bus.h"
#include "ember.h"
#include "err.h"
#include "log.h"

/* How long the bus thread, woken for a queue under a quarter full, lets
 * it fill before it takes it. */
#define LBUS_GATHER_US 1000

/* Dropped events are reported at most this often after the first. */
#define DROP_WARN_MS 60000

struct lbus {
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* the bus thread waits for events */
    pthread_cond_t idle;    /* lbus_wait_empty waits for a handed count */
    app_event **ring;
    app_event **batch;      /* the bus thread's: what it took from the ring */
    int cap;                /* the capacity: task events past it are dropped */
    int alloc;              /* the ring's size (>= cap: the other events
                               are never dropped, the ring grows for them) */
    int head, n;            /* the queued events: ring[head .. head+n), mod alloc */
    uint64_t posted;        /* events queued, ever (not dropped) */
    uint64_t handed;        /* events handed to every consumer, ever */
    int64_t dropped;
    int64_t last_warn_ms;   /* 0: no warning yet */
    int started, stopping;
    pthread_t thread;
    struct {
        lbus_fn fn;
        void *ud;
    } cons[LBUS_MAX_CONSUMERS];
    int ncons;
};

int64_t lbus_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

lbus *lbus_new(int capacity) {
    lbus *b = calloc(1, sizeof *b);
    if (capacity <= 0) capacity = LBUS_CAPACITY;
    if (b) {
        b->ring = malloc(sizeof *b->ring * (size_t)capacity);
        b->batch = malloc(sizeof *b->batch * (size_t)capacity);
    }
    if (!b || !b->ring || !b->batch) {
        if (b) {
            free(b->ring);
            free(b->batch);
        }
        free(b);
        em__seterr(EM_ENOMEM, "listener bus: out of memory");
        return NULL;
    }
    b->cap = b->alloc = capacity;
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    pthread_cond_init(&b->idle, &a);
    pthread_condattr_destroy(&a);
    return b;
}

int lbus_add(lbus *b, lbus_fn fn, void *ud) {
    if (b->started || b->ncons == LBUS_MAX_CONSUMERS)
        return em__seterr(EM_EINVAL, "listener bus: cannot add a consumer (started, or %d already)",
                          LBUS_MAX_CONSUMERS);
    b->cons[b->ncons].fn = fn;
    b->cons[b->ncons].ud = ud;
    b->ncons++;
    return 0;
}

static void *bus_main(void *arg) {
    lbus *b = arg;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->n && !b->stopping) pthread_cond_wait(&b->cv, &b->mu);
        if (!b->n) break; /* stopping, and everything handed on */
        if (!b->stopping && b->n < b->cap / 4) {
            pthread_mutex_unlock(&b->mu);
            struct timespec gather = {0, LBUS_GATHER_US * 1000L};
            nanosleep(&gather, NULL);
            pthread_mutex_lock(&b->mu);
        }
        /* Take them all: the posters go on while the consumers work. */
        int n = 0;
        for (; b->n && n < b->cap; b->n--) {
            b->batch[n++] = b->ring[b->head];
            b->head = (b->head + 1) % b->alloc;
        }
        pthread_mutex_unlock(&b->mu);
        for (int i = 0; i < n; i++) {
            for (int c = 0; c < b->ncons; c++) b->cons[c].fn(b->cons[c].ud, b->batch[i]);
            app_event_free(b->batch[i]);
        }
        pthread_mutex_lock(&b->mu);
        b->handed += (uint64_t)n;
        pthread_cond_broadcast(&b->idle);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

int lbus_start(lbus *b) {
    int rc = pthread_create(&b->thread, NULL, bus_main, b);
    if (rc) return em__seterr(EM_EIO, "listener bus: cannot start its thread: %s", strerror(rc));
    pthread_mutex_lock(&b->mu);
    b->started = 1;
    pthread_mutex_unlock(&b->mu);
    return 0;
}

/* Task events are the many: past the capacity they are dropped.  The
 * others (jobs, stages, executors, the application) are few, and a
 * consumer that missed one would keep a job running or an executor alive
 * forever: they are always queued. */
static int is_task_event(const app_event *e) {
    return e->kind == AE_TASK_START || e->kind == AE_TASK_END || e->kind == AE_TASK_GETTING_RESULT;
}

/* Double the ring, its events kept in order from index 0.  Under b->mu.
 * 0 or -1. */
static int grow(lbus *b) {
    int alloc = b->alloc * 2;
    app_event **r = malloc(sizeof *r * (size_t)alloc);
    if (!r) return -1;
    for (int i = 0; i < b->n; i++) r[i] = b->ring[(b->head + i) % b->alloc];
    free(b->ring);
    b->ring = r;
    b->head = 0;
    b->alloc = alloc;
    return 0;
}

void lbus_post(lbus *b, app_event *e) {
    if (!e) return;
    pthread_mutex_lock(&b->mu);
    if (!b->started || b->stopping) {
        pthread_mutex_unlock(&b->mu);
        app_event_free(e);
        return;
    }
    if (b->n >= b->cap && !is_task_event(e)) {
        if (b->n == b->alloc && grow(b)) { /* no memory: dropped as a task event would be */
            pthread_mutex_unlock(&b->mu);
            app_event_free(e);
            return;
        }
    } else if (b->n >= b->cap) {
        int64_t now = lbus_now_ms(), count = ++b->dropped;
        int warn = !b->last_warn_ms || now - b->last_warn_ms >= DROP_WARN_MS;
        if (warn) b->last_warn_ms = now;
        pthread_mutex_unlock(&b->mu);
        app_event_free(e);
        if (warn)
            log_msg(LOG_WARN, "listener-bus",
                    "dropped %lld events so far: the queue holds %d "
                    "(ember.scheduler.listenerbus.eventqueue.capacity) and a consumer (the UI's store or "
                    "the event log) is behind",
                    (long long)count, b->cap);
        return;
    }
    b->ring[(b->head + b->n) % b->alloc] = e;
    if (!b->n++) pthread_cond_signal(&b->cv);
    b->posted++;
    pthread_mutex_unlock(&b->mu);
}

int lbus_wait_empty(lbus *b, int timeout_ms) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int rc = 0;
    pthread_mutex_lock(&b->mu);
    uint64_t want = b->posted;
    while (b->started && b->handed < want && !rc)
        if (pthread_cond_timedwait(&b->idle, &b->mu, &until) == ETIMEDOUT) rc = 1;
    pthread_mutex_unlock(&b->mu);
    return rc ? em__seterr(EM_ESTATE, "listener bus: events still queued after %d ms", timeout_ms) : 0;
}

int64_t lbus_dropped(lbus *b) {
    pthread_mutex_lock(&b->mu);
    int64_t n = b->dropped;
    pthread_mutex_unlock(&b->mu);
    return n;
}

void lbus_free(lbus *b) {
    if (!b) return;
    pthread_mutex_lock(&b->mu);
    int started = b->started;
    b->stopping = 1;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    if (started) pthread_join(b->thread, NULL);
    for (; b->n; b->n--) { /* only when it never started */
        app_event_free(b->ring[b->head]);
        b->head = (b->head + 1) % b->alloc;
    }
    free(b->ring);
    free(b->batch);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    pthread_cond_destroy(&b->idle);
    free(b);
}
