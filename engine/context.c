/*
 * context.c -- em_open / em_close and the wiring of a context: it parses the
 * master URL, makes the scratch directory, starts the backend (local[N]
 * threads) and the DAG scheduler, and turns actions into jobs (ctx_run).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blockstore.h"
#include "conf.h"
#include "ctx.h"
#include "fsutil.h"
#include "dag.h"
#include "err.h"
#include "local.h"
#include "rdd.h"
#include "runner.h"
#include "vars.h"

static uint64_t next_uid = 1;

/* "local" -> 1, "local[N]" -> N, "local[*]" -> cores; else -1. */
static int parse_master(const char *m) {
    long n;
    char *end;
    if (!strcmp(m, "local")) return 1;
    if (strncmp(m, "local[", 6) != 0) return -1;
    if (!strcmp(m + 6, "*]")) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        return c > 0 ? (int)c : 1;
    }
    errno = 0;
    n = strtol(m + 6, &end, 10);
    if (errno || end == m + 6 || strcmp(end, "]") || n < 1 || n > 1024) return -1;
    return (int)n;
}

em_ctx *em_open(const char *master, const em_conf *conf) {
    em_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        em__seterr(EM_ENOMEM, "em_open: out of memory");
        return NULL;
    }
    if (!(ctx->conf = conf_dup(conf))) goto nomem;
    if (!master || !*master) master = getenv("EMBER_MASTER");
    if (!master || !*master) master = em_conf_get(ctx->conf, "ember.master");
    snprintf(ctx->master, sizeof ctx->master, "%s", master);
    if ((ctx->cores = parse_master(master)) < 0) {
        em__seterr(EM_EINVAL, "em_open: unsupported master URL \"%s\" (expected local, local[N] or local[*])",
                   master);
        goto fail;
    }
    ctx->uid = __atomic_fetch_add(&next_uid, 1, __ATOMIC_RELAXED) ^ ((uint64_t)getpid() << 32);
    {
        const char *base = em_conf_get(ctx->conf, "ember.local.dir");
        char tmpl[4096];
        snprintf(tmpl, sizeof tmpl, "%s/ember-%d-XXXXXX", base, (int)getpid());
        if (!mkdtemp(tmpl)) {
            em__seterr(EM_EIO, "em_open: cannot create a directory under ember.local.dir %s: %s", base,
                       strerror(errno));
            goto fail;
        }
        if (!(ctx->local_dir = strdup(tmpl))) goto nomem;
    }
    ctx->store = bs_new(ctx->local_dir, (size_t)conf_i64(ctx->conf, "ember.shuffle.memoryBytes") * 8);
    ctx->env = calloc(1, sizeof *ctx->env);
    if (!ctx->store || !ctx->env) goto nomem;
    ctx->env->local_dir = ctx->local_dir;
    ctx->env->store = ctx->store;
    if (!(ctx->be = local_backend_new(ctx->cores, ctx->env))) goto fail;
    if (!(ctx->dag = dag_new(ctx->be, &ctx->stats, ctx->uid))) goto nomem;
    return ctx;
nomem:
    em__seterr(EM_ENOMEM, "em_open: out of memory");
fail:
    em_close(ctx);
    return NULL;
}

void em_close(em_ctx *ctx) {
    if (!ctx) return;
    if (ctx->be) ctx->be->close(ctx->be);
    dag_free(ctx->dag);
    for (int i = 0; i < ctx->nrdds; i++) {
        rdd_free(ctx->rdds[i]);
        free(ctx->rdds[i]);
    }
    free(ctx->rdds);
    bs_free(ctx->store);
    free(ctx->env);
    vars_drop_ns(ctx->uid);
    if (ctx->local_dir) {
        rm_tree(ctx->local_dir);
        free(ctx->local_dir);
    }
    em_conf_free(ctx->conf);
    free(ctx);
}

int em_set(em_ctx *ctx, const char *key, const char *value) {
    if (!ctx || !key) return em__seterr(EM_EINVAL, "em_set: NULL argument");
    if (!strcmp(key, "ember.master") || !strcmp(key, "ember.local.dir"))
        return em__seterr(EM_EINVAL, "em_set: %s cannot change after em_open", key);
    return em_conf_set(ctx->conf, key, value);
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

int em_cores(em_ctx *ctx) { return ctx ? ctx->cores : 0; }

void em_get_stats(em_ctx *ctx, em_stats *out) {
    if (ctx && out) *out = ctx->stats;
}

void ctx_drop_internal(em_ctx *ctx, int first_rdd) {
    for (int i = first_rdd; i < ctx->nrdds; i++)
        if (ctx->rdds[i]->kind == RDD_SHUFFLED) dag_forget_shuffle(ctx->dag, ctx->rdds[i]->shuffle_id);
}

int ctx_default_parallelism(em_ctx *ctx) {
    int64_t p = conf_i64(ctx->conf, "ember.default.parallelism");
    return p > 0 ? (int)p : ctx->cores;
}

int ctx_check(const em_rdd *r, const char *fn) {
    return r ? 0 : em__seterr(EM_EINVAL, "%s: NULL RDD", fn);
}

static int progress_enabled(em_ctx *ctx) {
    const char *p = em_conf_get(ctx->conf, "ember.progress");
    if (p && !strcmp(p, "auto")) return isatty(2);
    return conf_bool(ctx->conf, "ember.progress");
}

int ctx_run(em_rdd *rdd, const plan_sink *sink, const int *parts, int nparts,
            int (*on_result)(void *c, int idx, struct task_result *res), void *c) {
    em_ctx *ctx = rdd->ctx;
    job_spec j;
    memset(&j, 0, sizeof j);
    j.rdd = rdd;
    j.sink = sink;
    j.parts = parts;
    j.nparts = nparts;
    j.on_result = on_result;
    j.cctx = c;
    int64_t mem = conf_i64(ctx->conf, "ember.shuffle.memoryBytes");
    int64_t blk = conf_i64(ctx->conf, "ember.shuffle.blockBytes");
    int64_t maxr = conf_i64(ctx->conf, "ember.record.maxBytes");
    int64_t lvl = conf_i64(ctx->conf, "ember.shuffle.compress.level");
    if (mem < 1 || blk < 1 || maxr < 1 || lvl < 0 || lvl > 9)
        return em__seterr(EM_EINVAL, "configuration out of range: ember.shuffle.memoryBytes, ember.shuffle.blockBytes "
                                     "and ember.record.maxBytes must be positive, ember.shuffle.compress.level 0..9");
    j.mem_budget = (uint64_t)mem;
    j.block_bytes = (uint64_t)blk;
    j.max_record = (uint64_t)maxr;
    j.level = (uint8_t)lvl;
    j.max_failures = (int)conf_i64(ctx->conf, "ember.task.maxFailures");
    if (j.max_failures < 1) j.max_failures = 1;
    j.progress = progress_enabled(ctx);
    return dag_run_job(ctx->dag, &j);
}
