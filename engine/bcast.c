/*
 * bcast.c -- the broadcast table (see bcast.h).
 *
 * One list under a reader-writer lock: lookups from task threads take it
 * shared, registration and removal exclusive.  An executor process fetches
 * a value it lacks through the hook bcast_set_fetch installs, one fetch at
 * a time.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bcast.h"
#include "ctx.h"
#include "ember.h"
#include "err.h"

typedef struct bvar {
    uint64_t ns, id;
    uint8_t *data;
    size_t len;
    struct bvar *next;
} bvar;

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static bvar *bvars;
static uint64_t next_bid = 1;

static int bput(uint64_t ns, uint64_t id, const void *data, size_t len) {
    bvar *b = calloc(1, sizeof *b);
    if (!b || !(b->data = malloc(len ? len : 1))) {
        free(b);
        return em__seterr(EM_ENOMEM, "broadcast: out of memory for %zu bytes", len);
    }
    if (len) memcpy(b->data, data, len);
    b->ns = ns;
    b->id = id;
    b->len = len;
    pthread_rwlock_wrlock(&lock);
    b->next = bvars;
    bvars = b;
    pthread_rwlock_unlock(&lock);
    return 0;
}

int bcast_put(uint64_t ns, uint64_t id, const void *data, size_t len) { return bput(ns, id, data, len); }

em_bcast em_broadcast(em_ctx *ctx, const void *data, size_t len) {
    em_bcast b = {0};
    if (!ctx || (!data && len)) {
        em__seterr(EM_EINVAL, "em_broadcast: NULL context or data");
        return b;
    }
    pthread_rwlock_wrlock(&lock);
    uint64_t id = next_bid++;
    pthread_rwlock_unlock(&lock);
    if (bput(ctx->uid, id, data, len) == 0) b.id = id;
    return b;
}

static int (*bcast_fetch)(uint64_t id, void **data, size_t *len);
static pthread_mutex_t fetch_mu = PTHREAD_MUTEX_INITIALIZER;

void bcast_set_fetch(int (*fetch)(uint64_t id, void **data, size_t *len)) { bcast_fetch = fetch; }

void bcast_drop(uint64_t id) {
    pthread_rwlock_wrlock(&lock);
    for (bvar **pp = &bvars; *pp;)
        if ((*pp)->id == id) {
            bvar *d = *pp;
            *pp = d->next;
            free(d->data);
            free(d);
        } else pp = &(*pp)->next;
    pthread_rwlock_unlock(&lock);
}

static const void *bfind(uint64_t id, size_t *len) {
    const void *p = NULL;
    pthread_rwlock_rdlock(&lock);
    for (bvar *v = bvars; v; v = v->next)
        if (v->id == id) {
            p = v->data;
            if (len) *len = v->len;
            break;
        }
    pthread_rwlock_unlock(&lock);
    return p;
}

const void *em_bcast_value(em_bcast b, size_t *len) {
    const void *p = bfind(b.id, len);
    if (!p && bcast_fetch && b.id) {
        /* One fetch at a time: a second thread asking for the same value
         * finds it when the first is done. */
        pthread_mutex_lock(&fetch_mu);
        if (!(p = bfind(b.id, len))) {
            void *data = NULL;
            size_t n = 0;
            if (!bcast_fetch(b.id, &data, &n) && !bput(0, b.id, data, n)) p = bfind(b.id, len);
            free(data);
        }
        pthread_mutex_unlock(&fetch_mu);
        if (!p) return NULL; /* the fetch's message */
    }
    if (!p) em__seterr(EM_EINVAL, "broadcast %llu is unknown or destroyed", (unsigned long long)b.id);
    return p;
}

void em_bcast_destroy(em_ctx *ctx, em_bcast b) {
    bvar **pp, *dead = NULL;
    if (!ctx) {
        em__seterr(EM_EINVAL, "em_bcast_destroy: NULL context (a broadcast belongs to one context)");
        return;
    }
    if (ctx_in_task()) {
        em__seterr(EM_ESTATE, "em_bcast_destroy: called from inside a user function");
        return;
    }
    /* Pinned while a job runs: wait for the running job to end, and free
     * before the next starts. */
    if (ctx_hold_jobs(ctx)) return; /* out of memory: the broadcast stays */
    pthread_rwlock_wrlock(&lock);
    for (pp = &bvars; *pp; pp = &(*pp)->next)
        if ((*pp)->id == b.id && (*pp)->ns == ctx->uid) {
            dead = *pp;
            *pp = dead->next;
            break;
        }
    pthread_rwlock_unlock(&lock);
    if (dead) ctx_bcast_dropped(ctx, b.id); /* executors' copies too */
    ctx_release_jobs(ctx);
    if (dead) {
        free(dead->data);
        free(dead);
    }
}

void bcast_drop_ns(uint64_t ns) {
    pthread_rwlock_wrlock(&lock);
    for (bvar **pp = &bvars; *pp;) {
        if ((*pp)->ns == ns) {
            bvar *d = *pp;
            *pp = d->next;
            free(d->data);
            free(d);
        } else {
            pp = &(*pp)->next;
        }
    }
    pthread_rwlock_unlock(&lock);
}
