/*
 * ctx.h -- the context: the one place that wires the parts together (the
 * configuration, the RDD registry, the DAG scheduler, the backend and its
 * executors).  Internal.
 */
#ifndef EM_CTX_H
#define EM_CTX_H

#include <pthread.h>
#include <stdint.h>

#include "ember.h"
#include "taskdesc.h"

struct dag;
struct backend;
struct blockstore;
struct exec_env;
struct task_result;

struct em_ctx {
    /* Several driver threads may use a context: mu guards the RDD registry
     * and the configuration; jobs run one at a time, in the order their
     * actions asked (tickets), and the scheduler is used only by the thread
     * holding the current ticket. */
    pthread_mutex_t mu;
    pthread_cond_t turn;
    uint64_t tickets;      /* taken (the last job's number) */
    uint64_t serving;      /* the number of the job that may run */
    em_conf *conf;
    uint64_t uid;          /* namespace of its cache blocks and variables */
    int cores;
    char master[64];
    char *local_dir;       /* this context's scratch directory */
    em_rdd **rdds;
    int nrdds, caprdds;
    uint32_t next_shuffle;
    struct dag *dag;
    struct backend *be;
    struct blockstore *store;
    struct exec_env *env;
    em_stats stats;
};

/* Run `sink` over the given partitions of rdd (NULL parts: all).  on_result
 * gets each partition's output once.  0 or < 0 (message set). */
int ctx_run(em_rdd *rdd, const plan_sink *sink, const int *parts, int nparts,
            int (*on_result)(void *c, int idx, struct task_result *res), void *c);
/* Forget the shuffles of RDDs [first_rdd, ctx->nrdds) -- internal RDDs an
 * action made for itself -- and remove their files. */
void ctx_drop_internal(em_ctx *ctx, int first_rdd);
/* The number of RDDs made so far (the next one's id). */
int ctx_rdd_count(em_ctx *ctx);
/* Default partition count for a new shuffle (0 = use parent's). */
int ctx_default_parallelism(em_ctx *ctx);
/* Validate an RDD argument: 0 or EM_EINVAL with "<fn>: NULL RDD". */
int ctx_check(const em_rdd *r, const char *fn);

#endif
