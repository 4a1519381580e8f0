/*
 * context.c -- what the engine does with an open context: settings
 * (em_set, em_get), actions turned into jobs (ctx_run), cancellation and
 * job groups, statistics, the RDD registry's lifetimes and scopes, and the
 * guard em_close waits on.  The scheduler is reached only through the
 * context's table of operations (sched_ops.h, filled by engine/open.c).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blockstore.h"
#include "checkpoint.h"
#include "conf.h"
#include "ctx.h"
#include "err.h"
#include "rdd.h"

int em_set(em_ctx *ctx, const char *key, const char *value) {
    if (!ctx || !key) return em__seterr(EM_EINVAL, "em_set: NULL argument");
    if (!strcmp(key, "ember.master") || !strcmp(key, "ember.local.dir") || !strcmp(key, "ember.test.executors"))
        return em__seterr(EM_EINVAL, "em_set: %s cannot change after em_open", key);
    pthread_mutex_lock(&ctx->mu);
    int rc = em_conf_set(ctx->conf, key, value);
    pthread_mutex_unlock(&ctx->mu);
    return rc;
}

const char *em_get(em_ctx *ctx, const char *key) {
    static __thread char num[32];
    if (!ctx || !key) return NULL;
    if (!strcmp(key, "ember.master")) return ctx->master;
    if (!strcmp(key, "ember.default.parallelism")) { /* the effective value */
        snprintf(num, sizeof num, "%d", ctx_default_parallelism(ctx));
        return num;
    }
    return em_conf_get(ctx->conf, key);
}

/* Cluster mode: the cores of the executors registered now. */
static int ctx_cores(em_ctx *ctx) { return ctx->sched ? ctx->sched->cores(ctx->sched_state) : ctx->cores; }

int em_cores(em_ctx *ctx) { return ctx ? ctx_cores(ctx) : 0; }

void ctx_drop_cached(em_ctx *ctx, int rdd_id) {
    bs_remove(ctx->store, ctx->uid, rdd_id);
    ctx->sched->drop_cached(ctx->sched_state, ctx->uid, rdd_id);
}

void ctx_bcast_dropped(em_ctx *ctx, uint64_t id) {
    ctx->sched->drop_bcast(ctx->sched_state, id);
}

void em_cancel_all(em_ctx *ctx) {
    if (!ctx || !ctx->sched) return;
    ctx->sched->cancel_all(ctx->sched_state, "em_cancel_all");
}

/* The calling thread's job group, for one context at a time. */
static __thread em_ctx *group_ctx;
static __thread char group_name[128];

int em_set_job_group(em_ctx *ctx, const char *group) {
    if (!ctx) return em__seterr(EM_EINVAL, "em_set_job_group: NULL context");
    if (group && strlen(group) >= sizeof group_name)
        return em__seterr(EM_EINVAL, "em_set_job_group: group name longer than %d bytes", (int)sizeof group_name - 1);
    group_ctx = group && *group ? ctx : NULL;
    snprintf(group_name, sizeof group_name, "%s", group && *group ? group : "");
    return 0;
}

int em_cancel_job_group(em_ctx *ctx, const char *group) {
    if (!ctx || !group || !*group) return em__seterr(EM_EINVAL, "em_cancel_job_group: NULL context or empty group");
    return ctx->sched->cancel_group(ctx->sched_state, group);
}

/* Bytes of the regular files under path (its scratch directory). */
static int64_t tree_bytes(const char *path) {
    int64_t n = 0;
    DIR *d = opendir(path);
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[4096];
        struct stat st;
        if ((size_t)snprintf(p, sizeof p, "%s/%s", path, e->d_name) >= sizeof p || lstat(p, &st)) continue;
        if (S_ISDIR(st.st_mode)) n += tree_bytes(p);
        else if (S_ISREG(st.st_mode)) n += (int64_t)st.st_size;
    }
    closedir(d);
    return n;
}

void em_get_stats(em_ctx *ctx, em_stats *out) {
    if (!ctx || !out) return;
    /* Counters move while jobs run (atomically, in the scheduler): each is
     * read atomically, all of them int64_t.  The gauges first: one that has
     * fallen was lowered after the counts of what ended (dag_int.h's
     * STAT_GAUGE_ADD), so nothing running means every count is in. */
    out->tasks_running = __atomic_load_n(&ctx->stats.tasks_running, __ATOMIC_ACQUIRE);
    out->jobs_active = __atomic_load_n(&ctx->stats.jobs_active, __ATOMIC_ACQUIRE);
    const int64_t *src = (const int64_t *)&ctx->stats;
    int64_t *dst = (int64_t *)out;
    for (size_t i = 0; i < sizeof *out / sizeof(int64_t); i++)
        if (&dst[i] != &out->tasks_running && &dst[i] != &out->jobs_active)
            dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
    pthread_mutex_lock(&ctx->mu);
    out->live_rdds = ctx->nlive;
    pthread_mutex_unlock(&ctx->mu);
    ctx->sched->live_counts(ctx->sched_state, &out->live_shuffles, &out->live_stages);
    out->scratch_bytes = tree_bytes(ctx->local_dir);
    ctx->sched->memory_outputs(ctx->sched_state, &out->shuffle_memory_outputs, &out->shuffle_memory_bytes);
}

/* ------------------------------------------------------- RDD lifetimes */

static __thread rdd_scope *open_scope;

void ctx_scope_begin(rdd_scope *sc) {
    sc->v = NULL;
    sc->n = sc->cap = 0;
    sc->prev = open_scope;
    open_scope = sc;
}

void ctx_scope_add(em_rdd *r) {
    rdd_scope *sc = open_scope;
    if (!sc) return;
    if (sc->n == sc->cap) {
        int cap = sc->cap ? sc->cap * 2 : 16;
        em_rdd **v = realloc(sc->v, sizeof *v * (size_t)cap);
        if (!v) return; /* not recorded: freed only by em_close */
        sc->v = v;
        sc->cap = cap;
    }
    rdd_retain(r); /* the scope's own reference, dropped at its end */
    sc->v[sc->n++] = r;
}

void ctx_scope_end(rdd_scope *sc) {
    open_scope = sc->prev;
    /* Newest first: children drop their parents' references before the
     * parents' own are dropped. */
    for (int i = sc->n; i-- > 0;) {
        rdd_release(sc->v[i]); /* the scope's */
        rdd_release(sc->v[i]); /* the creator's: the action never hands it out */
    }
    free(sc->v);
}

/* Set by the task runner around a task's user functions, on its thread. */
static __thread int in_task;

int ctx_in_task(void) { return in_task; }

void ctx_set_in_task(int on) { in_task = on; }

int ctx_enter(em_ctx *ctx) {
    pthread_mutex_lock(&ctx->mu);
    int closing = ctx->closing;
    if (!closing) ctx->users++;
    pthread_mutex_unlock(&ctx->mu);
    return closing ? em__seterr(EM_ECANCELED, "the context is closing (em_close)") : 0;
}

void ctx_leave(em_ctx *ctx) {
    pthread_mutex_lock(&ctx->mu);
    if (!--ctx->users) pthread_cond_broadcast(&ctx->idle);
    pthread_mutex_unlock(&ctx->mu);
}

int ctx_hold_jobs(em_ctx *ctx) { return ctx->sched->hold(ctx->sched_state); }

void ctx_release_jobs(em_ctx *ctx) { ctx->sched->release(ctx->sched_state); }

void em_rdd_release(em_rdd *rdd) {
    if (!rdd || ctx_in_task()) return; /* not from inside a user function */
    rdd_release(rdd);
}

int ctx_truncate(em_ctx *ctx, void (*fn)(void *), void *arg) { return ctx->sched->truncate(ctx->sched_state, fn, arg); }

void ctx_drop_shuffle(em_ctx *ctx, uint32_t shuffle_id) {
    ctx->sched->drop_shuffle(ctx->sched_state, shuffle_id);
}

void ctx_rdd_gone(em_ctx *ctx, em_rdd *r) {
    ckpt_rdd_gone(ctx, r);
    if (r->kind == RDD_SHUFFLED) ctx_drop_shuffle(ctx, r->shuffle_id); /* no live RDD reads it now */
    if (r->persist_level) ctx_drop_cached(ctx, r->id);
    pthread_mutex_lock(&ctx->mu);
    ctx->rdds[r->id] = NULL;
    ctx->nlive--;
    if (ctx->nfree == ctx->capfree) {
        int cap = ctx->capfree ? ctx->capfree * 2 : 64;
        int *f = realloc(ctx->free_ids, sizeof *f * (size_t)cap);
        if (f) {
            ctx->free_ids = f;
            ctx->capfree = cap;
        }
    }
    if (ctx->nfree < ctx->capfree) ctx->free_ids[ctx->nfree++] = r->id; /* else the slot stays unused */
    pthread_mutex_unlock(&ctx->mu);
}

int ctx_default_parallelism(em_ctx *ctx) {
    int64_t p = conf_i64(ctx->conf, "ember.default.parallelism");
    return p > 0 ? (int)p : ctx_cores(ctx);
}

int ctx_check(const em_rdd *r, const char *fn) {
    return r ? 0 : em__seterr(EM_EINVAL, "%s: NULL RDD", fn);
}

static int progress_enabled(em_ctx *ctx) {
    const char *p = em_conf_get(ctx->conf, "ember.progress");
    return !strcasecmp(p, "auto") ? isatty(2) : !strcasecmp(p, "true"); /* checked when set */
}

int ctx_run(em_rdd *rdd, const plan_sink *sink, const int *parts, int nparts,
            int (*on_result)(void *c, int idx, struct task_result *res), void *c) {
    em_ctx *ctx = rdd->ctx;
    job_spec j;
    /* On an executor thread the job would wait for a slot its own caller
     * holds (local[1] hangs): refused, as Spark refuses actions in tasks. */
    if (ctx_in_task())
        return em__seterr(EM_ESTATE, "an action was called from inside a task's user function: actions run only "
                                     "in the driver, outside map, filter, reduce and the other functions");
    memset(&j, 0, sizeof j);
    j.rdd = rdd;
    j.sink = sink;
    j.parts = parts;
    j.nparts = nparts;
    j.on_result = on_result;
    j.cctx = c;
    /* Every value was checked against its key's range when it was set
     * (conf.c), so these need no checks of their own.  Read under mu:
     * another thread may em_set meanwhile. */
    pthread_mutex_lock(&ctx->mu);
    j.mem_budget = (uint64_t)conf_size(ctx->conf, "ember.shuffle.memoryBytes");
    j.block_bytes = (uint64_t)conf_size(ctx->conf, "ember.shuffle.blockBytes");
    j.max_record = (uint64_t)conf_size(ctx->conf, "ember.record.maxBytes");
    j.codec = conf_codec(ctx->conf);
    j.max_failures = (int)conf_i64(ctx->conf, "ember.task.maxFailures");
    j.max_stage_attempts = (int)conf_i64(ctx->conf, "ember.stage.maxConsecutiveAttempts");
    j.progress = progress_enabled(ctx);
    j.speculation = conf_bool(ctx->conf, "ember.speculation");
    j.spec_interval_ms = (int)conf_duration_ms(ctx->conf, "ember.speculation.interval");
    j.spec_multiplier = conf_double(ctx->conf, "ember.speculation.multiplier");
    j.spec_quantile = conf_double(ctx->conf, "ember.speculation.quantile");
    j.spec_min_ms = conf_duration_ms(ctx->conf, "ember.speculation.minTaskRuntime");
    j.locality_wait_ms = conf_duration_ms(ctx->conf, "ember.locality.wait");
    j.max_result_bytes = (uint64_t)conf_size(ctx->conf, "ember.driver.maxResultSize");
    j.excl_enabled = conf_bool(ctx->conf, "ember.excludeOnFailure.enabled");
    j.excl_task_per_exec = (int)conf_i64(ctx->conf, "ember.excludeOnFailure.task.maxTaskAttemptsPerExecutor");
    j.excl_stage_per_exec = (int)conf_i64(ctx->conf, "ember.excludeOnFailure.stage.maxFailedTasksPerExecutor");
    j.excl_app_per_exec = (int)conf_i64(ctx->conf, "ember.excludeOnFailure.application.maxFailedTasksPerExecutor");
    j.excl_timeout_ms = conf_duration_ms(ctx->conf, "ember.excludeOnFailure.timeout");
    j.excl_unsched_ms = conf_duration_ms(ctx->conf, "ember.scheduler.excludeOnFailure.unschedulableTaskSetTimeout");
    const char *faults = em_conf_get(ctx->conf, "ember.test.faults");
    const char *fdir = faults && *faults ? em_conf_get(ctx->conf, "ember.test.faults.dir") : NULL;
    char *faults_copy = faults && *faults ? strdup(faults) : NULL;
    char *fdir_copy = fdir && *fdir ? strdup(fdir) : NULL;
    int nomem = (faults && *faults && !faults_copy) || (fdir && *fdir && !fdir_copy);
    pthread_mutex_unlock(&ctx->mu);
    if (nomem) {
        free(faults_copy);
        free(fdir_copy);
        return em__seterr(EM_ENOMEM, "out of memory");
    }
    j.faults = faults_copy;
    j.faults_dir = fdir_copy;
    rdd_retain(rdd); /* another thread's em_rdd_release must wait for the job */
    int rc = ctx->sched->run_job(ctx->sched_state, &j, group_ctx == ctx ? group_name : NULL);
    if (!rc) rc = ckpt_after_job(rdd); /* Spark's RDD.doCheckpoint after runJob */
    rdd_release(rdd);
    free(faults_copy);
    free(fdir_copy);
    return rc;
}
