/*
 * ctx.h -- the context: what one em_open made (the configuration, the RDD
 * registry, the driver's block store, the scheduler behind its table of
 * operations, sched_ops.h), and the calls the engine's files make on it.
 * Internal.
 */
#ifndef EM_CTX_H
#define EM_CTX_H

#include <pthread.h>
#include <stdint.h>

#include "ember.h"
#include "sched_ops.h"
#include "taskdesc.h"

struct blockstore;
struct task_result;

struct em_ctx {
    /* Several driver threads may use a context: mu guards the RDD registry
     * and the configuration; the scheduler has its own thread, to which
     * each action posts its job (dag.h). */
    pthread_mutex_t mu;
    pthread_cond_t idle;   /* users fell to 0 (em_close waits for it) */
    int users;             /* threads inside guarded calls (ctx_enter) */
    int closing;           /* em_close has begun: ctx_enter refuses */
    em_conf *conf;
    uint64_t uid;          /* namespace of its cache blocks and variables */
    int cores;
    char master[128];
    int cluster;           /* the backend is cluster mode's */
    char *local_dir;       /* this context's scratch directory */
    em_rdd **rdds;         /* by id; NULL where an RDD was freed */
    int nrdds, caprdds;    /* slots used, allocated */
    int *free_ids;         /* slots to reuse (ids of freed RDDs) */
    int nfree, capfree;
    int nlive;             /* RDDs alive */
    uint32_t next_shuffle;
    /* The scheduler and its executors, as the wiring file built them
     * (engine/open.c): every call goes through sched with sched_state. */
    const sched_ops *sched;
    void *sched_state;
    struct blockstore *store;
    em_stats stats;
    /* Checkpoints (engine/checkpoint.c), under mu: this context's directory
     * under ember.checkpoint.dir (made at the first em_checkpoint), the
     * setting it was made for, and how many RDDs are marked and not yet
     * written (a job's end looks for them only when there are some). */
    char *ckpt_base, *ckpt_base_for;
    int ckpt_marked;
};

/* Run `sink` over the given partitions of rdd (NULL parts: all).  on_result
 * gets each partition's output once.  0 or < 0 (message set). */
int ctx_run(em_rdd *rdd, const plan_sink *sink, const int *parts, int nparts,
            int (*on_result)(void *c, int idx, struct task_result *res), void *c);
/* The RDDs an action makes for itself (tree_aggregate's levels, ...): between
 * ctx_scope_begin and ctx_scope_end, every RDD this thread makes is also
 * recorded in the scope, and ctx_scope_end drops the reference the action
 * held on each, so they are freed (with their shuffle files) unless the
 * user's RDDs depend on them.  Scopes nest. */
typedef struct rdd_scope {
    struct rdd_scope *prev;
    em_rdd **v;
    int n, cap;
} rdd_scope;
void ctx_scope_begin(rdd_scope *sc);
void ctx_scope_end(rdd_scope *sc);
/* Called by rdd_release when an RDD's last reference goes: drop its
 * shuffle (outputs, files), its cached blocks and its registry slot. */
void ctx_rdd_gone(em_ctx *ctx, em_rdd *r);
/* Record r in the calling thread's open scope, if any (rdd_new). */
void ctx_scope_add(em_rdd *r);
/* Whether the calling thread runs a task's user functions; the task
 * runner says so around them (ctx_set_in_task, on its own thread). */
int ctx_in_task(void);
void ctx_set_in_task(int on);
/* Wait until no task attempt of any job runs on ctx and keep new jobs from
 * starting, until ctx_release_jobs (they start then, in order).  0, or
 * EM_ENOMEM (then nothing is held). */
int ctx_hold_jobs(em_ctx *ctx);
void ctx_release_jobs(em_ctx *ctx);
/* RDD rdd_id was unpersisted or released: its cached partitions go from
 * the driver's store and every executor's. */
void ctx_drop_cached(em_ctx *ctx, int rdd_id);
/* A broadcast was destroyed (bcast.c): executors drop their copies. */
void ctx_bcast_dropped(em_ctx *ctx, uint64_t id);
/* Every public call that runs jobs runs between ctx_enter and ctx_leave,
 * so that em_close from another thread can cancel its jobs and wait for it
 * to return before freeing anything.  ctx_enter fails with EM_ECANCELED
 * once em_close has begun.  They nest. */
int ctx_enter(em_ctx *ctx);
void ctx_leave(em_ctx *ctx);
/* The body of a guarded public function: return call's value, run between
 * ctx_enter and ctx_leave when ctx is not NULL (call checks NULLs). */
#define CTX_GUARDED(ctx, call)                       \
    do {                                             \
        em_ctx *g_ = (ctx);                          \
        int r_ = g_ ? ctx_enter(g_) : 0;             \
        if (r_) return r_;                           \
        r_ = (call);                                 \
        if (g_) ctx_leave(g_);                       \
        return r_;                                   \
    } while (0)
#define CTX_GUARDED_PTR(ctx, call)                   \
    do {                                             \
        em_ctx *g_ = (ctx);                          \
        if (g_ && ctx_enter(g_)) return NULL;        \
        __typeof__(call) p_ = (call);                \
        if (g_) ctx_leave(g_);                       \
        return p_;                                   \
    } while (0)
/* Truncate r's lineage on the scheduler's thread (sched_ops.truncate): fn
 * runs there.  0 or EM_ENOMEM. */
int ctx_truncate(em_ctx *ctx, void (*fn)(void *), void *arg);
/* Drop a shuffle no RDD reads any more (sched_ops.drop_shuffle). */
void ctx_drop_shuffle(em_ctx *ctx, uint32_t shuffle_id);
/* Default partition count for a new shuffle (0 = use parent's). */
int ctx_default_parallelism(em_ctx *ctx);
/* Validate an RDD argument: 0 or EM_EINVAL with "<fn>: NULL RDD". */
int ctx_check(const em_rdd *r, const char *fn);

#endif
