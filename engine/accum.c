/*
 * accum.c -- the accumulator table and the per-task update collector (see
 * accum.h).
 *
 * The table is one list under a reader-writer lock.  The collector is
 * thread-local: a task thread between accum_task_begin and accum_task_end
 * records its additions there instead of in the table, and the same state
 * answers em_task_partition.
 */
#include <pthread.h>
#include <stdlib.h>

#include "accum.h"
#include "ctx.h"
#include "ember.h"
#include "err.h"

typedef struct avar {
    uint64_t ns;
    uint32_t id, type;
    int64_t i;
    double f;
    struct avar *next;
} avar;

enum { ACC_I64 = 1, ACC_F64 = 2 };

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static avar *avars;
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

void accum_task_begin(int partition) {
    cur.active = 1;
    cur.partition = partition;
    cur.n = 0;
    cur.lost = 0;
}

int accum_task_end(acc_update **out, int *n) {
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

void accum_merge(const acc_update *u, int n) {
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

void accum_drop_ns(uint64_t ns) {
    pthread_rwlock_wrlock(&lock);
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
