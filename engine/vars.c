/*
 * vars.c -- broadcast and accumulator tables (see vars.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "ember.h"
#include "err.h"
#include "vars.h"

typedef struct bvar {
    uint64_t ns, id;
    uint8_t *data;
    size_t len;
    struct bvar *next;
} bvar;

typedef struct avar {
    uint64_t ns;
    uint32_t id, type;
    int64_t i;
    double f;
    struct avar *next;
} avar;

enum { ACC_I64 = 1, ACC_F64 = 2 };

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static bvar *bvars;
static avar *avars;
static uint64_t next_bid = 1;
static uint32_t next_aid = 1;

typedef struct collector {
    int active;
    int partition;
    acc_update *u;
    int n, cap;
    int lost;     /* an update could not be recorded (ENOMEM) */
} collector;
static __thread collector cur = {0, -1, NULL, 0, 0, 0};

int em_task_partition(void) { return cur.active ? cur.partition : -1; }

void vars_task_begin(int partition) {
    cur.active = 1;
    cur.partition = partition;
    cur.n = 0;
    cur.lost = 0;
}

int vars_task_end(acc_update **out, int *n) {
    int lost = cur.lost;
    /* The list itself is the result: the thread keeps no buffer between
     * tasks (executor threads outlive contexts). */
    *out = cur.n ? cur.u : NULL;
    *n = cur.n;
    if (!cur.n) free(cur.u);
    cur.u = NULL;
    cur.n = cur.cap = 0;
    cur.active = 0;
    cur.partition = -1;
    cur.lost = 0;
    if (lost) {
        free(*out);
        *out = NULL;
        *n = 0;
        return em__seterr(EM_ENOMEM, "accumulator update lost: out of memory");
    }
    return 0;
}

/* ------------------------------------------------------------ broadcast */

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

int vars_bcast_put(uint64_t ns, uint64_t id, const void *data, size_t len) { return bput(ns, id, data, len); }

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

void vars_set_bcast_fetch(int (*fetch)(uint64_t id, void **data, size_t *len)) { bcast_fetch = fetch; }

void vars_bcast_drop(uint64_t id) {
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

/* --------------------------------------------------------- accumulators */

static em_acc acc_new(em_ctx *ctx, uint32_t type) {
    em_acc a = {0, 0};
    avar *v;
    if (!ctx) {
        em__seterr(EM_EINVAL, "em_acc: NULL context");
        return a;
    }
    if (!(v = calloc(1, sizeof *v))) {
        em__seterr(EM_ENOMEM, "em_acc: out of memory");
        return a;
    }
    pthread_rwlock_wrlock(&lock);
    v->ns = ctx->uid;
    v->id = next_aid++;
    v->type = type;
    v->next = avars;
    avars = v;
    pthread_rwlock_unlock(&lock);
    a.id = v->id;
    a.type = type;
    return a;
}

em_acc em_acc_i64(em_ctx *ctx, const char *name) { (void)name; return acc_new(ctx, ACC_I64); }
em_acc em_acc_f64(em_ctx *ctx, const char *name) { (void)name; return acc_new(ctx, ACC_F64); }

static void acc_apply(uint32_t id, uint32_t type, int64_t i, double f) {
    pthread_rwlock_wrlock(&lock);
    for (avar *v = avars; v; v = v->next)
        if (v->id == id) {
            if (v->type == ACC_I64 && type == ACC_I64) v->i += i;
            if (v->type == ACC_F64 && type == ACC_F64) v->f += f;
            break;
        }
    pthread_rwlock_unlock(&lock);
}

static void acc_add(em_acc a, int64_t i, double f) {
    if (!a.id) return;
    if (!cur.active) {
        acc_apply(a.id, a.type, i, f);
        return;
    }
    /* Inside a task: combine with an earlier update of the same id. */
    for (int k = 0; k < cur.n; k++)
        if (cur.u[k].id == a.id) {
            cur.u[k].i += i;
            cur.u[k].f += f;
            return;
        }
    if (cur.n == cur.cap) {
        int cap = cur.cap ? cur.cap * 2 : 8;
        acc_update *u = realloc(cur.u, sizeof *u * (size_t)cap);
        if (!u) { /* the task fails at its end rather than miscount */
            cur.lost = 1;
            return;
        }
        cur.u = u;
        cur.cap = cap;
    }
    cur.u[cur.n++] = (acc_update){a.id, a.type, i, f};
}

void em_acc_add_i64(em_acc a, int64_t v) { acc_add(a, v, 0); }
void em_acc_add_f64(em_acc a, double v) { acc_add(a, 0, v); }

void vars_merge(const acc_update *u, int n) {
    for (int k = 0; k < n; k++) acc_apply(u[k].id, u[k].type, u[k].i, u[k].f);
}

static avar *acc_find(em_ctx *ctx, em_acc a) {
    for (avar *v = avars; v; v = v->next)
        if (v->id == a.id && (!ctx || v->ns == ctx->uid)) return v;
    return NULL;
}

int64_t em_acc_value_i64(em_ctx *ctx, em_acc a) {
    pthread_rwlock_rdlock(&lock);
    avar *v = acc_find(ctx, a);
    int64_t r = v ? v->i : 0;
    pthread_rwlock_unlock(&lock);
    return r;
}

double em_acc_value_f64(em_ctx *ctx, em_acc a) {
    pthread_rwlock_rdlock(&lock);
    avar *v = acc_find(ctx, a);
    double r = v ? v->f : 0;
    pthread_rwlock_unlock(&lock);
    return r;
}

void vars_drop_ns(uint64_t ns) {
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
    for (avar **pp = &avars; *pp;) {
        if ((*pp)->ns == ns) {
            avar *d = *pp;
            *pp = d->next;
            free(d);
        } else {
            pp = &(*pp)->next;
        }
    }
    pthread_rwlock_unlock(&lock);
}
