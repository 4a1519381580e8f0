/*
 * context.c -- em_open / em_close and the wiring of a context: it parses the
 * master URL, makes the scratch directory, starts the backend (local[N]
 * threads) and the DAG scheduler, and turns actions into jobs (ctx_run).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bigbuf.h"
#include "blockstore.h"
#include "cluster.h"
#include "conf.h"
#include "ctx.h"
#include "dag.h"
#include "err.h"
#include "executor.h"
#include "lcluster.h"
#include "local.h"
#include "log.h"
#include "masterd.h"
#include "netconf.h"
#include "worker.h"
#include "rdd.h"
#include "runner.h"
#include "scratch.h"
#include "vars.h"

static uint64_t next_uid = 1;

/*
 * The takeover (architecture section 3).  Cluster mode runs the driver's
 * own binary in other roles: a worker starts it as an executor, and a
 * driver of local-cluster starts it as the master and the workers.
 * EMBER_ROLE in the environment says which; then libember runs that role
 * before main and exits, so main never runs.  It lives in the object of
 * em_open, so that any program that can open a context, linked shared or
 * static, carries it.  EMBER_PARENT_PID makes the process die with the one
 * that started it (a parent-death signal, checked against a parent that
 * died before it was set).  The role's arguments are read from
 * /proc/self/cmdline: a constructor takes no parameters as far as the
 * compiler knows (with LTO, glibc's argc and argv do not arrive).
 */
#define TAKEOVER_ARGS 256
static int takeover_args(char **argv) {
    static char buf[65536];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC), argc = 0;
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0) close(fd);
    if (n <= 0) n = 0;
    buf[n] = 0;
    for (ssize_t i = 0; i < n && argc < TAKEOVER_ARGS - 1; i += (ssize_t)strlen(buf + i) + 1) argv[argc++] = buf + i;
    argv[argc] = NULL;
    return argc;
}

__attribute__((constructor)) static void em__takeover(void) {
    const char *role = getenv("EMBER_ROLE");
    if (!role || !*role) return;
    char *argv[TAKEOVER_ARGS];
    int argc = takeover_args(argv);
    const char *pp = getenv("EMBER_PARENT_PID");
    if (pp && *pp) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != (pid_t)atol(pp)) _exit(1);
    }
    int rc;
    if (!strcmp(role, "executor")) rc = executor_main();
    else if (!strcmp(role, "master")) rc = masterd_main(argc, argv);
    else if (!strcmp(role, "worker")) rc = worker_main(argc, argv);
    else {
        fprintf(stderr, "ember: unknown EMBER_ROLE \"%s\" (executor, master or worker)\n", role);
        rc = 2;
    }
    fflush(NULL);
    _exit(rc);
}

#define MASTER_MAX_THREADS 1024 /* local[N]: N executor threads at most */

/* "local" -> 1, "local[N]" -> N (1..MASTER_MAX_THREADS), "local[*]" ->
 * cores; else -1. */
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
    if (errno || end == m + 6 || strcmp(end, "]") || n < 1 || n > MASTER_MAX_THREADS) return -1;
    return (int)n;
}

em_ctx *em_open(const char *master, const em_conf *conf) {
    em_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        em__seterr(EM_ENOMEM, "em_open: out of memory");
        return NULL;
    }
    pthread_mutex_init(&ctx->mu, NULL);
    pthread_cond_init(&ctx->idle, NULL);
    /* Settings ember-submit passes ($EMBER_CONF), under the program's own
     * (which win, as a SparkConf's over spark-submit's flags). */
    if (!(ctx->conf = em_conf_new())) goto nomem;
    if (conf_from_env(ctx->conf, "EMBER_CONF")) {
        char why[600];
        em__geterr(why, sizeof why);
        em__seterr(EM_EINVAL, "em_open: %s", why);
        goto fail;
    }
    if (conf_merge(ctx->conf, conf)) goto fail;
    if (conf_validate(ctx->conf)) goto fail;
    /* Where the master came from, for the message if it is bad. */
    const char *from = "em_open's master argument";
    if (!master || !*master) {
        master = getenv("EMBER_MASTER");
        from = "$EMBER_MASTER";
    }
    if (!master || !*master) {
        master = em_conf_get(ctx->conf, "ember.master");
        from = "the ember.master setting";
    }
    snprintf(ctx->master, sizeof ctx->master, "%s", master);
    int lc_w = 0, lc_c = 0;
    int64_t lc_m = 0;
    int lc = cluster_parse_local(master, &lc_w, &lc_c, &lc_m);
    if (lc < 0) {
        char why[512];
        em__geterr(why, sizeof why);
        em__seterr(EM_EINVAL, "em_open: %s (from %s)", why, from);
        goto fail;
    }
    ctx->cluster = lc > 0 || !strncmp(master, "ember://", 8);
    if (ctx->cluster) ctx->cores = lc > 0 ? lc_w * lc_c : 2;
    else if ((ctx->cores = parse_master(master)) < 0) {
        em__seterr(EM_EINVAL,
                   "em_open: unsupported master URL \"%s\" from %s (expected local, local[N] with N from 1 "
                   "to %d, local[*], local-cluster[W,C], local-cluster[W,C,M] or ember://HOST:PORT)",
                   master, from, MASTER_MAX_THREADS);
        goto fail;
    }
    ctx->uid = __atomic_fetch_add(&next_uid, 1, __ATOMIC_RELAXED) ^ ((uint64_t)getpid() << 32);
    {
        /* Reclaim what dead drivers left, then make this context's own
         * directory, removed by em_close, at exit or on SIGINT/SIGTERM. */
        const char *base = em_conf_get(ctx->conf, "ember.local.dir");
        scratch_sweep(base);
        if (!(ctx->local_dir = scratch_create(base))) goto fail;
    }
    ctx->store = bs_new(ctx->local_dir, (size_t)conf_i64(ctx->conf, "ember.shuffle.memoryBytes") * 8);
    ctx->env = calloc(1, sizeof *ctx->env);
    if (!ctx->store || !ctx->env) goto nomem;
    ctx->env->local_dir = ctx->local_dir;
    ctx->env->store = ctx->store;
    if (!(ctx->dag = dag_new(&ctx->stats, ctx->uid))) goto nomem;
    ctx->env->ask_commit = dag_ask_commit;
    ctx->env->commit_ctx = ctx->dag;
    int nexec = (int)conf_i64(ctx->conf, "ember.test.executors");
    if (nexec > ctx->cores) {
        em__seterr(EM_EINVAL, "em_open: ember.test.executors is %d, more than the %d threads of %s", nexec,
                   ctx->cores, master);
        goto fail;
    }
    log_set_level(log_level_parse(em_conf_get(ctx->conf, "ember.log.level")));
    dag_set_register_wait(ctx->dag, conf_duration_ms(ctx->conf, "ember.scheduler.maxRegisteredWait"));
    dag_set_starvation_timeout(ctx->dag, conf_duration_ms(ctx->conf, "ember.starvation.timeout"));
    if (ctx->cluster) {
        /* A peer that goes away must not kill the driver: writes to its
         * socket fail instead (only where the program left the default). */
        struct sigaction sa;
        if (!sigaction(SIGPIPE, NULL, &sa) && sa.sa_handler == SIG_DFL && !(sa.sa_flags & SA_SIGINFO))
            signal(SIGPIPE, SIG_IGN);
        if (!(ctx->net = calloc(1, sizeof *ctx->net))) goto nomem;
        if (netconf_load(ctx->conf, ctx->net)) goto fail;
        cluster_opts co;
        memset(&co, 0, sizeof co);
        co.master = lc > 0 ? NULL : master;
        co.lc_workers = lc_w;
        co.lc_cores = lc_c;
        co.lc_mem_mib = lc_m;
        co.lc_service = conf_bool(ctx->conf, "ember.shuffle.service.enabled");
        co.lc_max_exec_retries = (int)conf_i64(ctx->conf, "ember.deploy.maxExecutorRetries");
        co.app_name = em_conf_get(ctx->conf, "ember.app.name");
        co.driver_host = em_conf_get(ctx->conf, "ember.driver.host");
        co.driver_port = (int)conf_i64(ctx->conf, "ember.driver.port");
        co.exec_cores = (int)conf_i64(ctx->conf, "ember.executor.cores");
        co.exec_mem_mib = conf_size(ctx->conf, "ember.executor.memory") >> 20;
        co.cores_max = (int)conf_i64(ctx->conf, "ember.cores.max");
        co.max_result = conf_size(ctx->conf, "ember.driver.maxResultSize");
        co.heartbeat_ms = (uint64_t)conf_duration_ms(ctx->conf, "ember.executor.heartbeatInterval");
        co.timeout_ms = (uint64_t)conf_duration_ms(ctx->conf, "ember.network.timeout");
        co.register_wait_ms = (uint64_t)conf_duration_ms(ctx->conf, "ember.scheduler.maxRegisteredWait");
        co.nc = ctx->net;
        co.scratch = ctx->local_dir;
        co.ask_commit = dag_ask_commit;
        co.commit_ctx = ctx->dag;
        char *lines = conf_lines(ctx->conf);
        if (!lines) goto nomem;
        co.exec_conf = lines;
        ctx->be = cluster_backend_new(&co, dag_events(ctx->dag));
        free(lines);
        if (!ctx->be) {
            char why[1024];
            em__geterr(why, sizeof why);
            em__seterr(EM_EIO, "em_open(\"%s\"): %s", master, why);
            goto fail;
        }
    } else {
        /* local[N]: map tasks and readers share this process, so small
         * outputs may stay in memory (memout.h). */
        size_t each = conf_size(ctx->conf, "ember.shuffle.inMemoryOutput.maxBytes");
        if (each && !(ctx->env->outputs = memout_new(each, conf_size(ctx->conf, "ember.shuffle.inMemoryOutput.totalBytes"),
                                                     conf_codec_of(ctx->conf, "ember.shuffle.inMemoryOutput.codec"))))
            goto nomem;
        if (!(ctx->be = local_backend_new(ctx->cores, nexec, ctx->env, dag_events(ctx->dag)))) goto fail;
    }
    if (dag_start(ctx->dag, ctx->be)) goto fail;
    return ctx;
nomem:
    em__seterr(EM_ENOMEM, "em_open: out of memory");
fail:
    em_close(ctx);
    return NULL;
}

void em_close(em_ctx *ctx) {
    if (!ctx) return;
    /* Other threads' actions: their jobs are canceled, and they return
     * (EM_ECANCELED) before anything is freed. */
    pthread_mutex_lock(&ctx->mu);
    ctx->closing = 1;
    pthread_mutex_unlock(&ctx->mu);
    dag_refuse(ctx->dag);
    pthread_mutex_lock(&ctx->mu);
    while (ctx->users) pthread_cond_wait(&ctx->idle, &ctx->mu);
    pthread_mutex_unlock(&ctx->mu);
    dag_stop(ctx->dag); /* every attempt ended, losers included */
    if (ctx->be) ctx->be->close(ctx->be);
    bb_trim(); /* the task buffers kept for reuse (bigbuf.h) */
    dag_free(ctx->dag);
    ckpt_ctx_close(ctx);
    for (int i = 0; i < ctx->nrdds; i++) { /* whatever is left, whatever its references */
        if (!ctx->rdds[i]) continue;
        rdd_free(ctx->rdds[i]);
        free(ctx->rdds[i]);
    }
    free(ctx->rdds);
    free(ctx->free_ids);
    bs_free(ctx->store);
    if (ctx->env) memout_free(ctx->env->outputs);
    free(ctx->env);
    if (ctx->net) {
        netconf_free(ctx->net);
        free(ctx->net);
    }
    vars_drop_ns(ctx->uid);
    if (ctx->local_dir) {
        scratch_remove(ctx->local_dir);
        free(ctx->local_dir);
    }
    em_conf_free(ctx->conf);
    pthread_mutex_destroy(&ctx->mu);
    pthread_cond_destroy(&ctx->idle);
    free(ctx);
}

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
static int ctx_cores(em_ctx *ctx) { return ctx->cluster && ctx->be ? ctx->be->cores(ctx->be) : ctx->cores; }

int em_cores(em_ctx *ctx) { return ctx ? ctx_cores(ctx) : 0; }

void ctx_drop_cached(em_ctx *ctx, int rdd_id) {
    bs_remove(ctx->store, ctx->uid, rdd_id);
    if (ctx->be && ctx->be->drop_rdd) ctx->be->drop_rdd(ctx->be, ctx->uid, rdd_id);
}

void ctx_bcast_dropped(em_ctx *ctx, uint64_t id) {
    if (ctx->be && ctx->be->drop_bcast) ctx->be->drop_bcast(ctx->be, id);
}

void em_cancel_all(em_ctx *ctx) {
    if (!ctx || !ctx->dag) return;
    dag_cancel_all(ctx->dag, "em_cancel_all");
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
    return dag_cancel_group(ctx->dag, group);
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
     * read atomically, all of them int64_t. */
    const int64_t *src = (const int64_t *)&ctx->stats;
    int64_t *dst = (int64_t *)out;
    for (size_t i = 0; i < sizeof *out / sizeof(int64_t); i++) dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
    pthread_mutex_lock(&ctx->mu);
    out->live_rdds = ctx->nlive;
    pthread_mutex_unlock(&ctx->mu);
    dag_live_counts(ctx->dag, &out->live_shuffles, &out->live_stages);
    out->scratch_bytes = tree_bytes(ctx->local_dir);
    memout_counts(ctx->env ? ctx->env->outputs : NULL, &out->shuffle_memory_outputs, &out->shuffle_memory_bytes);
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

int ctx_in_task(void) { return runner_in_task(); }

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

int ctx_hold_jobs(em_ctx *ctx) { return dag_hold(ctx->dag); }

void ctx_release_jobs(em_ctx *ctx) { dag_release(ctx->dag); }

void em_rdd_release(em_rdd *rdd) {
    if (!rdd || runner_in_task()) return; /* not from inside a user function */
    rdd_release(rdd);
}

int ctx_truncate(em_ctx *ctx, void (*fn)(void *), void *arg) { return dag_truncate(ctx->dag, fn, arg); }

void ctx_drop_shuffle(em_ctx *ctx, uint32_t shuffle_id) { dag_drop_shuffle(ctx->dag, shuffle_id); }

void ctx_rdd_gone(em_ctx *ctx, em_rdd *r) {
    ckpt_rdd_gone(ctx, r);
    if (r->kind == RDD_SHUFFLED) dag_drop_shuffle(ctx->dag, r->shuffle_id); /* no live RDD reads it now */
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
    if (runner_in_task())
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
    char *faults_copy = faults && *faults ? strdup(faults) : NULL;
    int nomem = faults && *faults && !faults_copy;
    pthread_mutex_unlock(&ctx->mu);
    if (nomem) return em__seterr(EM_ENOMEM, "out of memory");
    j.faults = faults_copy;
    rdd_retain(rdd); /* another thread's em_rdd_release must wait for the job */
    int rc = dag_run_job(ctx->dag, &j, group_ctx == ctx ? group_name : NULL);
    if (!rc) rc = ckpt_after_job(rdd); /* Spark's RDD.doCheckpoint after runJob */
    rdd_release(rdd);
    free(faults_copy);
    return rc;
}
