/*
 * open.c -- the wiring file: em_open and em_close, the only engine file
 * that knows the scheduler and the executors.  em_open parses the master
 * URL, makes the scratch directory, builds the DAG scheduler
 * (scheduler/dag.h) and the backend the URL names (local[N]'s executor
 * threads, executor/local.h, or cluster mode's, scheduler/cluster.h), and
 * gives the context the table of operations (sched_ops.h) through which
 * the rest of the engine reaches them.  It also holds the takeover, the
 * code that runs this same binary as an executor, a master or a worker.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "accum.h"
#include "appinfo.h"
#include "bcast.h"
#include "bigbuf.h"
#include "blockstore.h"
#include "bus.h"
#include "checkpoint.h"
#include "cluster.h"
#include "conf.h"
#include "ctx.h"
#include "dag.h"
#include "err.h"
#include "eventlog.h"
#include "events.h"
#include "executor.h"
#include "historyd.h"
#include "lcluster.h"
#include "local.h"
#include "log.h"
#include "masterd.h"
#include "netconf.h"
#include "rdd.h"
#include "scratch.h"
#include "status.h"
#include "ui.h"
#include "worker.h"

/* What a context's sched_state is: the scheduler and the backend em_open
 * made, and what they share. */
typedef struct wiring {
    dag *dag;
    backend *be;
    exec_env *env;        /* what the executors of this process share */
    struct netconf *net;  /* cluster mode: its connections' settings */
    int cluster;          /* the backend is cluster mode's */
    int hooked;           /* the backend is em_backend_hook's */
    int cores;            /* local[N]: N */
    /* Observability: the listener bus and its consumers (NULL when off),
     * the application's id and start. */
    lbus *bus;
    evlog *elog;
    int elog_failed;      /* a write failed: warned once */
    int elog_blocks;      /* ember.eventLog.logBlockUpdates.enabled */
    status_store *store;  /* the UI's (ember.ui.enabled) */
    rest_provider prov;
    ui_server *ui;
    char ui_url[128];     /* "" when there is no UI */
    char app_id[64];
    int64_t start_ms;
} wiring;

/* A context and its wiring, allocated and freed as one. */
typedef struct opened {
    em_ctx ctx; /* first: em_close frees the context's address */
    wiring w;
} opened;

static int w_run_job(void *s, const job_spec *j, const char *group) {
    return dag_run_job(((wiring *)s)->dag, j, group);
}
static void w_cancel_all(void *s, const char *why) { dag_cancel_all(((wiring *)s)->dag, why); }
static int w_cancel_group(void *s, const char *group) { return dag_cancel_group(((wiring *)s)->dag, group); }
static int w_hold(void *s) { return dag_hold(((wiring *)s)->dag); }
static void w_release(void *s) { dag_release(((wiring *)s)->dag); }
static int w_truncate(void *s, void (*fn)(void *), void *arg) { return dag_truncate(((wiring *)s)->dag, fn, arg); }
static void w_drop_shuffle(void *s, uint32_t shuffle_id) { dag_drop_shuffle(((wiring *)s)->dag, shuffle_id); }

static void w_drop_cached(void *s, uint64_t ns, int rdd_id) {
    wiring *w = s;
    if (w->be && w->be->drop_rdd) w->be->drop_rdd(w->be, ns, rdd_id);
    if (w->bus) { /* the UI's storage list and the event log hear of it */
        app_event *e = app_event_new(AE_UNPERSIST_RDD);
        if (e) e->rdd_id = rdd_id;
        lbus_post(w->bus, e);
    }
}

static void w_drop_bcast(void *s, uint64_t id) {
    wiring *w = s;
    if (w->be && w->be->drop_bcast) w->be->drop_bcast(w->be, id);
}

static void w_live_counts(void *s, int64_t *shuffles, int64_t *stages) {
    dag_live_counts(((wiring *)s)->dag, shuffles, stages);
}

/* Cluster mode: the cores of the executors registered now. */
static int w_cores(void *s) {
    wiring *w = s;
    return (w->cluster || w->hooked) && w->be ? w->be->cores(w->be) : w->cores;
}

static void w_memory_outputs(void *s, int64_t *count, int64_t *bytes) {
    wiring *w = s;
    memout_counts(w->env ? w->env->outputs : NULL, count, bytes);
}

static const sched_ops wired = {
    .run_job = w_run_job,
    .cancel_all = w_cancel_all,
    .cancel_group = w_cancel_group,
    .hold = w_hold,
    .release = w_release,
    .truncate = w_truncate,
    .drop_shuffle = w_drop_shuffle,
    .drop_cached = w_drop_cached,
    .drop_bcast = w_drop_bcast,
    .live_counts = w_live_counts,
    .cores = w_cores,
    .memory_outputs = w_memory_outputs,
};

static uint64_t next_uid = 1;

const backend_hook *em_backend_hook;

/*
 * The takeover (architecture section 3).  Cluster mode runs the driver's
 * own binary in other roles: a worker starts it as an executor, and a
 * driver of local-cluster starts it as the master and the workers (a test
 * starts it as the history server).
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

#ifdef EMBER_COVERAGE
void __gcov_dump(void);
#endif

__attribute__((constructor)) static void em__takeover(void) {
    const char *role = getenv("EMBER_ROLE");
    if (!role || !*role) return;
    char *argv[TAKEOVER_ARGS];
    int argc = takeover_args(argv);
    const char *pp = getenv("EMBER_PARENT_PID");
    if (pp && *pp) {
#ifdef EMBER_COVERAGE
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* make coverage: the counts get written first */
#else
        prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
        if (getppid() != (pid_t)atol(pp)) _exit(1);
    }
    int rc;
    if (!strcmp(role, "executor")) rc = executor_main();
    else if (!strcmp(role, "master")) rc = masterd_main(argc, argv);
    else if (!strcmp(role, "worker")) rc = worker_main(argc, argv);
    else if (!strcmp(role, "history-server")) rc = historyd_main(argc, argv);
    else {
        fprintf(stderr, "ember: unknown EMBER_ROLE \"%s\" (executor, master, worker or history-server)\n", role);
        rc = 2;
    }
    fflush(NULL);
#ifdef EMBER_COVERAGE
    __gcov_dump(); /* make coverage: _exit skips the writing of the counts */
#endif
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

/* The memory of the driver's block store (local[N]'s executors cache
 * there). */
static int64_t local_store_mem(const em_conf *c) { return conf_i64(c, "ember.shuffle.memoryBytes") * 8; }

/* ------------------------------------------------------ observability */

/* The event log's consumer: each event a line; the file is flushed at the
 * events after which a reader of the .inprogress log (the history server)
 * should see everything so far. */
static void log_event(void *ud, const app_event *e) {
    wiring *w = ud;
    if (w->elog_failed || (e->kind == AE_BLOCK_UPDATED && !w->elog_blocks)) return;
    int rc = evlog_write(w->elog, e);
    if (!rc && (e->kind == AE_JOB_END || e->kind == AE_STAGE_COMPLETED || e->kind == AE_APP_START ||
                e->kind == AE_EXEC_ADDED || e->kind == AE_EXEC_REMOVED || e->kind == AE_APP_END))
        rc = evlog_flush(w->elog);
    if (rc) {
        w->elog_failed = 1;
        log_msg(LOG_WARN, "eventlog", "%s: no more events are written to it", em_errmsg());
    }
}

/* The UI (ember.ui.enabled): its store and its server, on the driver's
 * host (ember.driver.host), before the backend, which tells the master
 * where it is.  0, or < 0 with the message set: no port of the range was
 * free fails em_open, as it fails Spark's context. */
static int ui_open(em_ctx *ctx, wiring *w) {
    const em_conf *c = ctx->conf;
    if (!conf_bool(c, "ember.ui.enabled")) return 0;
    status_limits lim = {(int)conf_i64(c, "ember.ui.retainedJobs"), (int)conf_i64(c, "ember.ui.retainedStages"),
                         (int)conf_i64(c, "ember.ui.retainedTasks"),
                         (int)conf_i64(c, "ember.ui.retainedDeadExecutors")};
    if (!(w->store = status_new(&lim))) return EM_ENOMEM;
    rest_single(&w->prov, w->store);
    ui_conf uc;
    memset(&uc, 0, sizeof uc);
    uc.bind_host = em_conf_get(c, "ember.driver.host");
    uc.port = (int)conf_i64(c, "ember.ui.port");
    uc.max_retries = (int)conf_i64(c, "ember.port.maxRetries");
    uc.prometheus = conf_bool(c, "ember.ui.prometheus.enabled");
    int rc = ui_start(&uc, &w->prov, &w->ui);
    if (rc) return em__preferr(rc, "the UI (ember.ui.port; ember.ui.enabled=false turns it off)");
    snprintf(w->ui_url, sizeof w->ui_url, "http://%s:%d", uc.bind_host, ui_port(w->ui));
    return 0;
}

/* Start what observes the application (before the scheduler starts, so
 * that it sees every event): the UI's store, the event log
 * (ember.eventLog.enabled), the listener bus that feeds them, and the
 * application's first events.  0, or < 0 with the message set (an event
 * log directory that does not exist fails em_open, as it fails Spark's
 * context). */
static int obs_open(em_ctx *ctx, wiring *w) {
    const em_conf *c = ctx->conf;
    int elog = conf_bool(c, "ember.eventLog.enabled");
    if (!elog && !w->store) return 0;
    if (!(w->bus = lbus_new((int)conf_i64(c, "ember.scheduler.listenerbus.eventqueue.capacity")))) return EM_ENOMEM;
    if (elog) {
        evlog_conf ec;
        memset(&ec, 0, sizeof ec);
        ec.dir = em_conf_get(c, "ember.eventLog.dir");
        ec.compress = conf_bool(c, "ember.eventLog.compress");
        ec.codec = em_conf_get(c, "ember.eventLog.compression.codec");
        ec.rolling = conf_bool(c, "ember.eventLog.rolling.enabled");
        ec.max_file_size = conf_size(c, "ember.eventLog.rolling.maxFileSize");
        ec.overwrite = conf_bool(c, "ember.eventLog.overwrite");
        int rc = evlog_open(&ec, w->app_id, &w->elog);
        if (rc) return em__preferr(rc, "ember.eventLog.dir");
        w->elog_blocks = conf_bool(c, "ember.eventLog.logBlockUpdates.enabled");
        lbus_add(w->bus, log_event, w);
    }
    if (w->store) lbus_add(w->bus, status_listener, w->store);
    int rc = lbus_start(w->bus);
    if (rc) return rc;
    lbus_post(w->bus, appinfo_env(c, ctx->master, w->app_id));
    lbus_post(w->bus, appinfo_start(em_conf_get(c, "ember.app.name"), w->app_id, w->start_ms));
    /* What an executor's block store keeps in memory: the driver's own
     * store in local[N] (context.c), an executor process's memory in a
     * cluster. */
    int64_t store_mem = w->cluster ? conf_size(c, "ember.executor.memory") : local_store_mem(c);
    dag_set_bus(w->dag, w->bus, !w->cluster, store_mem);
    return 0;
}

/* After the scheduler stopped: the application's end, every event handed
 * on, the log finished. */
static void obs_close(wiring *w) {
    if (w->bus) {
        lbus_post(w->bus, appinfo_end(lbus_now_ms()));
        lbus_free(w->bus); /* hands on what is queued */
        w->bus = NULL;
    }
    if (w->elog && evlog_close(w->elog)) log_msg(LOG_WARN, "eventlog", "%s", em_errmsg());
    w->elog = NULL;
    ui_stop(w->ui);
    w->ui = NULL;
    status_free(w->store);
    w->store = NULL;
}

const char *em_ui_url(em_ctx *ctx) {
    if (!ctx) return NULL;
    wiring *w = ctx->sched_state;
    return w->ui_url[0] ? w->ui_url : NULL;
}

/* Spark's waitBackendReady: with ember.cores.max set, scheduling begins
 * once executors of minRegisteredResourcesRatio of those cores have
 * registered, or after maxRegisteredResourcesWaitingTime, whichever is
 * first (standalone's expected resources are ember.cores.max: without it,
 * or with the ratio 0, at once). */
static void await_registered(em_ctx *ctx, wiring *w) {
    double ratio = conf_double(ctx->conf, "ember.scheduler.minRegisteredResourcesRatio");
    int64_t max = conf_i64(ctx->conf, "ember.cores.max");
    int64_t wait_ms = conf_duration_ms(ctx->conf, "ember.scheduler.maxRegisteredResourcesWaitingTime");
    if (ratio <= 0 || max <= 0 || !w->be->registered_cores) return;
    uint64_t end = ev_now_us() + (uint64_t)wait_ms * 1000u;
    int have;
    while ((have = w->be->registered_cores(w->be)) < ratio * (double)max && ev_now_us() < end)
        usleep(10 * 1000);
    if (have >= ratio * (double)max)
        log_msg(LOG_INFO, "driver", "scheduling begins with %d of ember.cores.max %lld cores registered "
                "(ember.scheduler.minRegisteredResourcesRatio %g)", have, (long long)max, ratio);
    else
        log_msg(LOG_INFO, "driver", "scheduling begins after ember.scheduler.maxRegisteredResourcesWaitingTime "
                "with %d of ember.cores.max %lld cores registered (ember.scheduler.minRegisteredResourcesRatio %g)",
                have, (long long)max, ratio);
}

em_ctx *em_open(const char *master, const em_conf *conf) {
    opened *o = calloc(1, sizeof *o);
    if (!o) {
        em__seterr(EM_ENOMEM, "em_open: out of memory");
        return NULL;
    }
    em_ctx *ctx = &o->ctx;
    wiring *w = &o->w;
    ctx->sched = &wired;
    ctx->sched_state = w;
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
    w->hooked = em_backend_hook && em_backend_hook->claims(master, &ctx->cores);
    int lc = w->hooked ? 0 : lcluster_parse_url(master, &lc_w, &lc_c, &lc_m);
    if (lc < 0) {
        char why[512];
        em__geterr(why, sizeof why);
        em__seterr(EM_EINVAL, "em_open: %s (from %s)", why, from);
        goto fail;
    }
    ctx->cluster = w->cluster = lc > 0 || !strncmp(master, "ember://", 8);
    if (ctx->cluster) ctx->cores = lc > 0 ? lc_w * lc_c : 2;
    else if (!w->hooked && (ctx->cores = parse_master(master)) < 0) {
        em__seterr(EM_EINVAL,
                   "em_open: unsupported master URL \"%s\" from %s (expected local, local[N] with N from 1 "
                   "to %d, local[*], local-cluster[W,C], local-cluster[W,C,M] or ember://HOST:PORT)",
                   master, from, MASTER_MAX_THREADS);
        goto fail;
    }
    w->cores = ctx->cores;
    w->start_ms = lbus_now_ms();
    ctx->uid = __atomic_fetch_add(&next_uid, 1, __ATOMIC_RELAXED) ^ ((uint64_t)getpid() << 32);
    {
        /* Reclaim what dead drivers left, then make this context's own
         * directory, removed by em_close, at exit or on SIGINT/SIGTERM. */
        const char *base = em_conf_get(ctx->conf, "ember.local.dir");
        scratch_sweep(base);
        if (!(ctx->local_dir = scratch_create(base))) goto fail;
    }
    ctx->store = bs_new(ctx->local_dir, (size_t)local_store_mem(ctx->conf));
    w->env = calloc(1, sizeof *w->env);
    if (!ctx->store || !w->env) goto nomem;
    w->env->local_dir = ctx->local_dir;
    w->env->store = ctx->store;
    if (!(w->dag = dag_new(&ctx->stats, ctx->uid))) goto nomem;
    w->env->ask_commit = dag_ask_commit;
    w->env->commit_ctx = w->dag;
    int nexec = (int)conf_i64(ctx->conf, "ember.test.executors");
    if (nexec > ctx->cores) {
        em__seterr(EM_EINVAL, "em_open: ember.test.executors is %d, more than the %d threads of %s", nexec,
                   ctx->cores, master);
        goto fail;
    }
    log_set_level(log_level_parse(em_conf_get(ctx->conf, "ember.log.level")));
    dag_set_register_wait(w->dag, conf_duration_ms(ctx->conf, "ember.scheduler.maxRegisteredWait"));
    dag_set_starvation_timeout(w->dag, conf_duration_ms(ctx->conf, "ember.starvation.timeout"));
    dag_set_map_statuses(w->dag, conf_i64(ctx->conf, "ember.shuffle.minNumPartitionsToHighlyCompress"),
                         conf_size(ctx->conf, "ember.shuffle.accurateBlockThreshold"));
    if (ui_open(ctx, w)) goto fail;
    if (w->hooked) {
        if (!(w->be = em_backend_hook->open(master, ctx->conf, dag_events(w->dag)))) goto fail;
    } else if (ctx->cluster) {
        /* A peer that goes away must not kill the driver: writes to its
         * socket fail instead (only where the program left the default). */
        struct sigaction sa;
        if (!sigaction(SIGPIPE, NULL, &sa) && sa.sa_handler == SIG_DFL && !(sa.sa_flags & SA_SIGINFO))
            signal(SIGPIPE, SIG_IGN);
        if (!(w->net = calloc(1, sizeof *w->net))) goto nomem;
        if (netconf_load(ctx->conf, w->net)) goto fail;
        cluster_opts co;
        memset(&co, 0, sizeof co);
        co.master = lc > 0 ? NULL : master;
        co.lc_workers = lc_w;
        co.lc_cores = lc_c;
        co.lc_mem_mib = lc_m;
        co.lc_service = conf_bool(ctx->conf, "ember.shuffle.service.enabled");
        co.lc_max_exec_retries = (int)conf_i64(ctx->conf, "ember.deploy.maxExecutorRetries");
        co.app_name = em_conf_get(ctx->conf, "ember.app.name");
        co.ui_url = w->ui_url[0] ? w->ui_url : NULL;
        co.driver_host = em_conf_get(ctx->conf, "ember.driver.host");
        co.driver_port = (int)conf_i64(ctx->conf, "ember.driver.port");
        co.exec_cores = (int)conf_i64(ctx->conf, "ember.executor.cores");
        co.exec_mem_mib = conf_size(ctx->conf, "ember.executor.memory") >> 20;
        co.cores_max = (int)conf_i64(ctx->conf, "ember.cores.max");
        co.task_queue = (int)conf_i64(ctx->conf, "ember.executor.taskQueue");
        co.task_queue_max = (int)conf_i64(ctx->conf, "ember.executor.taskQueue.max");
        co.max_result = conf_size(ctx->conf, "ember.driver.maxResultSize");
        co.heartbeat_ms = (uint64_t)conf_duration_ms(ctx->conf, "ember.executor.heartbeatInterval");
        co.timeout_ms = (uint64_t)conf_duration_ms(ctx->conf, "ember.network.timeout");
        co.register_wait_ms = (uint64_t)conf_duration_ms(ctx->conf, "ember.scheduler.maxRegisteredWait");
        co.nc = w->net;
        co.scratch = ctx->local_dir;
        co.ask_commit = dag_ask_commit;
        co.commit_ctx = w->dag;
        char *lines = conf_lines(ctx->conf);
        if (!lines) goto nomem;
        co.exec_conf = lines;
        w->be = cluster_backend_new(&co, dag_events(w->dag));
        free(lines);
        if (!w->be) {
            char why[1024];
            em__geterr(why, sizeof why);
            em__seterr(EM_EIO, "em_open(\"%s\"): %s", master, why);
            goto fail;
        }
    } else {
        /* local[N]: map tasks and readers share this process, so small
         * outputs may stay in memory (memout.h). */
        size_t each = conf_size(ctx->conf, "ember.shuffle.inMemoryOutput.maxBytes");
        if (each && !(w->env->outputs = memout_new(each, conf_size(ctx->conf, "ember.shuffle.inMemoryOutput.totalBytes"),
                                                     conf_codec_of(ctx->conf, "ember.shuffle.inMemoryOutput.codec"))))
            goto nomem;
        if (!(w->be = local_backend_new(ctx->cores, nexec, w->env, dag_events(w->dag)))) goto fail;
    }
    if (w->cluster) snprintf(w->app_id, sizeof w->app_id, "%s", cluster_app_id(w->be));
    else appinfo_local_id(w->start_ms, w->app_id, sizeof w->app_id);
    if (obs_open(ctx, w)) goto fail;
    if (dag_start(w->dag, w->be)) goto fail;
    if (w->cluster) await_registered(ctx, w);
    return ctx;
nomem:
    em__seterr(EM_ENOMEM, "em_open: out of memory");
fail:
    em_close(ctx);
    return NULL;
}

void em_close(em_ctx *ctx) {
    if (!ctx) return;
    wiring *w = ctx->sched_state;
    /* Other threads' actions: their jobs are canceled, and they return
     * (EM_ECANCELED) before anything is freed. */
    pthread_mutex_lock(&ctx->mu);
    ctx->closing = 1;
    pthread_mutex_unlock(&ctx->mu);
    dag_refuse(w->dag);
    pthread_mutex_lock(&ctx->mu);
    while (ctx->users) pthread_cond_wait(&ctx->idle, &ctx->mu);
    pthread_mutex_unlock(&ctx->mu);
    dag_stop(w->dag); /* every attempt ended, losers included */
    obs_close(w);
    if (w->be) w->be->close(w->be);
    bb_trim(); /* the task buffers kept for reuse (bigbuf.h) */
    dag_free(w->dag);
    ckpt_ctx_close(ctx);
    for (int i = 0; i < ctx->nrdds; i++) { /* whatever is left, whatever its references */
        if (!ctx->rdds[i]) continue;
        rdd_free(ctx->rdds[i]);
        free(ctx->rdds[i]);
    }
    free(ctx->rdds);
    free(ctx->free_ids);
    bs_free(ctx->store);
    if (w->env) memout_free(w->env->outputs);
    free(w->env);
    if (w->net) {
        netconf_free(w->net);
        free(w->net);
    }
    bcast_drop_ns(ctx->uid);
    accum_drop_ns(ctx->uid);
    if (ctx->local_dir) {
        scratch_remove(ctx->local_dir);
        free(ctx->local_dir);
    }
    em_conf_free(ctx->conf);
    pthread_mutex_destroy(&ctx->mu);
    pthread_cond_destroy(&ctx->idle);
    free(ctx);
}
