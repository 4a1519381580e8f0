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
 * The ring holds `cap` events; a task start that finds it full is dropped,
 * and the task's end after it.  The other events are always queued: the
 * ring grows for them (`alloc`), and the bus thread takes at most `cap` at
 * a time into its batch.
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
    uint64_t *gone;         /* tasks whose start was dropped (their ends go too) */
    size_t gone_n, gone_cap;
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

/* ------------------------------------------- tasks whose start was dropped */

/* An open-addressing set of task ids (stored as id + 1; 0 is an empty
 * slot), with linear probing and backward-shift deletion.  Under b->mu. */
static size_t slot_of(uint64_t key, size_t mask) {
    key *= 0x9e3779b97f4a7c15ull;
    return (size_t)(key >> 32) & mask;
}

static int gone_add(lbus *b, uint64_t key) {
    if ((b->gone_n + 1) * 2 > b->gone_cap) {
        size_t cap = b->gone_cap ? b->gone_cap * 2 : 64;
        uint64_t *v = calloc(cap, sizeof *v);
        if (!v) return -1;
        for (size_t i = 0; i < b->gone_cap; i++) {
            if (!b->gone[i]) continue;
            size_t j = slot_of(b->gone[i], cap - 1);
            while (v[j]) j = (j + 1) & (cap - 1);
            v[j] = b->gone[i];
        }
        free(b->gone);
        b->gone = v;
        b->gone_cap = cap;
    }
    size_t mask = b->gone_cap - 1, j = slot_of(key, mask);
    while (b->gone[j] && b->gone[j] != key) j = (j + 1) & mask;
    if (!b->gone[j]) b->gone_n++;
    b->gone[j] = key;
    return 0;
}

/* Whether key is in the set; taken out of it if so. */
static int gone_take(lbus *b, uint64_t key) {
    if (!b->gone_n) return 0;
    size_t mask = b->gone_cap - 1, j = slot_of(key, mask);
    while (b->gone[j] && b->gone[j] != key) j = (j + 1) & mask;
    if (!b->gone[j]) return 0;
    /* Backward shift: entries after the hole that probed past it move up. */
    for (size_t k = (j + 1) & mask; b->gone[k]; k = (k + 1) & mask) {
        size_t home = slot_of(b->gone[k], mask);
        if (((k - home) & mask) >= ((k - j) & mask)) {
            b->gone[j] = b->gone[k];
            j = k;
        }
    }
    b->gone[j] = 0;
    b->gone_n--;
    return 1;
}

/* What a post does with e when the queue holds `cap` events or more. */
enum { QUEUE, DROP };

/* Task starts are the many: past the capacity they are dropped, and the
 * end of a task whose start was dropped is dropped too, so that a
 * consumer sees both or neither (the ends of the starts it saw come, and
 * there are no more of those than the queue held).  The other events
 * (jobs, stages, executors, the application, a block update per partition
 * cached) are few, and a consumer
 * that missed one would keep a job running or an executor alive forever:
 * they are always queued.  Under b->mu. */
static int when_full(lbus *b, const app_event *e) {
    switch (e->kind) {
    case AE_TASK_START:
        return gone_add(b, (uint64_t)e->task.task_id + 1) ? QUEUE : DROP;
    case AE_TASK_GETTING_RESULT: return DROP;
    default: return QUEUE;
    }
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
    int drop = e->kind == AE_TASK_END && gone_take(b, (uint64_t)e->task.task_id + 1);
    if (!drop && b->n >= b->cap) drop = when_full(b, e) == DROP;
    if (!drop && b->n == b->alloc && grow(b)) drop = 1; /* no memory */
    if (drop) {
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
    free(b->gone);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    pthread_cond_destroy(&b->idle);
    free(b);
}
