/*
 * worker.c -- the ember-worker daemon (see worker.h).  Everything but
 * main's wait for a signal runs on one io loop thread: the master's
 * connection, the binary fetches, the executor processes (uv_spawn, whose
 * exits libuv reports on the loop), the timers.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "appbin.h"
#include "applib.h"
#include "bincache.h"
#include "conf.h"
#include "conn.h"
#include "daemon.h"
#include "ember.h"
#include "err.h"
#include "frame.h"
#include "httpd.h"
#include "fsutil.h"
#include "log.h"
#include "msg.h"
#include "netconf.h"
#include "shuffle_files.h"
#include "shuffle_server.h"
#include "worker.h"
#include "worker_ui.h"

#define ID_MAX 64
#define TAIL_BYTES 4096     /* of an executor's stderr, in its exit report */
#define KILL_GRACE_MS 5000  /* SIGTERM, then SIGKILL after this */
#define RECONNECT_MS 1000
#define UI_PORT_TRIES 17    /* the web UI's port, then the next 16 up (Spark's spark.port.maxRetries) */

extern char **environ;

typedef struct wexec wexec;
typedef struct binfetch binfetch;

/* An application this worker launched executors for, until the master
 * says it finished: the shuffle service serves its map outputs while it
 * runs, also after its executors ended. */
typedef struct wapp {
    struct wapp *next;
    char id[ID_MAX];
} wapp;

typedef struct worker {
    ioloop *l;
    netconf nc;
    conn_opts co;
    char id[ID_MAX + 64], host[64], mhost[64], dir[700];
    int mport, cores;
    int64_t mem_mib;
    uint64_t hb_ms, ttl_ms;
    uint64_t bin_max;  /* ember.worker.binCache.maxBytes */
    conn *master;
    int registered;
    iol_timer hb, retry, sweep;
    wexec *execs;
    binfetch *fetches;
    int stopping;
    /* The shuffle service (ember.shuffle.service.enabled): its port, 0
     * when off; the applications it serves. */
    int svc_on, svc_port;
    shuffle_server *svc;
    wapp *apps;
    /* The web UI (worker_ui.h): its port (0: any), server and URL; the
     * master's web UI URL; the finished executors it shows (a ring of the
     * last ember.worker.ui.retainedExecutors). */
    int ui_port, prom;
    httpd *ui;
    char webui[128], master_webui[1025];
    struct wdone *done;
    int ndone, done_cap, done_next;
} worker;

/* A finished executor, as the web UI shows it. */
struct wdone {
    char app[ID_MAX];
    int id, cores;
    int64_t mem_mib;
    const char *state; /* EXITED, KILLED or FAILED */
};

/* One executor process. */
struct wexec {
    iol_owner owner;   /* first: the process handle's data */
    uv_process_t proc;
    uv_timer_t grace;  /* SIGKILL after SIGTERM */
    wexec *next;
    char app[ID_MAX];
    int id, cores;
    int64_t mem_mib;
    char driver[1025];
    uint8_t hash[32];
    char dir[900];
    char *conf;        /* EMBER_CONF=<the application's settings> */
    int started, killed, exited, closing;
    int open;          /* handles not yet closed: freed at 0 */
    binfetch *waiting; /* the fetch it waits for, before it starts */
};

/* What a binary fetch waits for: the library or the binary's message,
 * the library's chunks, the binary's message, the binary's chunks; done. */
enum { BF_HEAD, BF_LIB, BF_BIN_HEAD, BF_BIN, BF_DONE };

/* A fetch of an application's binary from its driver, and of the shared
 * libember it runs with when the driver sends one first (appbin.h). */
struct binfetch {
    binfetch *next;
    uint8_t hash[32];
    char driver[1025];
    conn *c;
    int fd, lib_fd;
    char tmp[900], path[800];
    char lib_tmp[1200], lib_path[1100], lib_hex[65];
    uint64_t len, got;  /* of the file coming in */
    uint8_t file_hash[32];
    crypto_generichash_state st;
    int phase;
};

static worker wk;

/* "host:port" into host and port.  0 or -1. */
static int split_addr(const char *s, char *host, size_t cap, int *port) {
    const char *colon = strrchr(s, ':');
    char *end;
    if (!colon || colon == s || (size_t)(colon - s) >= cap) return -1;
    long p = strtol(colon + 1, &end, 10);
    if (*end || p <= 0 || p > 65535) return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
    *port = (int)p;
    return 0;
}

static void app_dir(const char *app, char *out, size_t cap) { snprintf(out, cap, "%s/%s", wk.dir, app); }

/* Where the application's executors write their map outputs when the
 * shuffle service is on: one directory for all of them, which outlives
 * each. */
static void shuffle_dir(const char *app, char *out, size_t cap) { shuffle_service_dir(out, cap, wk.dir, app); }

static wapp *app_find(const char *app) {
    for (wapp *a = wk.apps; a; a = a->next)
        if (!strcmp(a->id, app)) return a;
    return NULL;
}

/* An id that names a directory right under the work directory: not empty,
 * no '/', not starting with '.' (so neither "." nor ".."). */
static int app_id_ok(const char *app, size_t len) {
    return len > 0 && len < ID_MAX && !memchr(app, '/', len) && !memchr(app, 0, len) && app[0] != '.';
}

/* The shuffle service's dir_of: only applications this worker runs
 * executors for, and their own directory. */
static int svc_dir_of(void *ctx, const char *app, char *dir, size_t cap) {
    (void)ctx;
    if (!app_id_ok(app, strlen(app)) || !app_find(app))
        return em__seterr(EM_ENOENT, "the shuffle service of worker %s serves no application \"%.64s\"", wk.id, app);
    shuffle_dir(app, dir, cap);
    return 0;
}

/* ------------------------------------------------------------- executors */

/* The last lines of the executor's stderr (at most TAIL_BYTES). */
static void stderr_tail(const wexec *e, char *out, size_t cap) {
    char path[1000];
    snprintf(path, sizeof path, "%s/stderr", e->dir);
    out[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    off_t end = lseek(fd, 0, SEEK_END);
    size_t want = cap - 1 < TAIL_BYTES ? cap - 1 : TAIL_BYTES;
    off_t from = end > (off_t)want ? end - (off_t)want : 0;
    ssize_t k = pread(fd, out, (size_t)(end - from), from);
    close(fd);
    if (k < 0) k = 0;
    out[k] = 0;
    if (from > 0) { /* start at a whole line */
        char *nl = strchr(out, '\n');
        if (nl) memmove(out, nl + 1, strlen(nl + 1) + 1);
    }
}

/* Whether any executor of app is alive (started or waiting). */
static int app_alive(const char *app) {
    for (wexec *e = wk.execs; e; e = e->next)
        if (!e->exited && !strcmp(e->app, app)) return 1;
    return 0;
}

static void exec_free(wexec *e) {
    for (wexec **pp = &wk.execs; *pp; pp = &(*pp)->next)
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    free(e->conf);
    free(e);
}

/* Whether one of app's executors failed: a marker in its directory, which
 * outlives the executors' records. */
static int app_marked_failed(const char *app) {
    char f[900];
    snprintf(f, sizeof f, "%s/%s/.failed", wk.dir, app);
    return access(f, F_OK) == 0;
}

/* The last of an executor's handles closed: it is freed, and the
 * application's directory goes with its last executor unless one of them
 * failed (kept for appDataTtl). */
static void handle_closed(wexec *e) {
    if (--e->open > 0) return;
    char app[ID_MAX];
    snprintf(app, sizeof app, "%s", e->app);
    exec_free(e);
    int left = 0;
    for (wexec *o = wk.execs; o; o = o->next) left |= !strcmp(o->app, app);
    /* With the shuffle service, the map outputs stay until the
     * application ends (app_finished). */
    if (!left && !app_find(app) && !app_marked_failed(app)) {
        char d[800];
        app_dir(app, d, sizeof d);
        rm_tree(d);
    }
}

static void proc_closed(uv_handle_t *h) { handle_closed((wexec *)((char *)h - offsetof(wexec, proc))); }

static void grace_closed(uv_handle_t *h) { handle_closed((wexec *)((char *)h - offsetof(wexec, grace))); }

/* Close the executor's handles; it is freed when both are closed. */
static void exec_close(wexec *e) {
    if (e->closing) return;
    e->closing = 1;
    e->open = e->started ? 2 : 1;
    if (e->started) uv_close((uv_handle_t *)&e->proc, proc_closed);
    uv_close((uv_handle_t *)&e->grace, grace_closed);
}

static void exec_ended(wexec *e, int64_t code, int sig, const char *why) {
    char tail[TAIL_BYTES + 1], lib[256], lwhy[512];
    int cannot_run = 0;
    if (why) snprintf(tail, sizeof tail, "%s", why);
    else stderr_tail(e, tail, sizeof tail);
    int failed = !e->killed && !wk.stopping && (code != 0 || sig != 0);
    if (failed && !why && applib_loader_error(code, sig, tail, lib, sizeof lib, lwhy, sizeof lwhy)) {
        /* No executor of this application can start here: the report says
         * which library and what to do, and the master removes it. */
        cannot_run = 1;
        snprintf(tail, sizeof tail,
                 "the dynamic loader cannot load %s, a shared library the program needs (%s): install it on "
                 "every worker where the loader finds it (a system library directory, or one in "
                 "/etc/ld.so.conf), or link the program statically against it",
                 lib, lwhy);
        log_msg(LOG_ERROR, "worker", "executor %s/%d cannot start: %s", e->app, e->id, tail);
    }
    e->exited = failed ? 2 : 1;
    if (wk.done_cap > 0) { /* the web UI's finished executors */
        struct wdone *dn = &wk.done[wk.done_next];
        snprintf(dn->app, sizeof dn->app, "%s", e->app);
        dn->id = e->id;
        dn->cores = e->cores;
        dn->mem_mib = e->mem_mib;
        dn->state = failed ? "FAILED" : e->killed ? "KILLED" : "EXITED";
        wk.done_next = (wk.done_next + 1) % wk.done_cap;
        if (wk.ndone < wk.done_cap) wk.ndone++;
    }
    if (failed) {
        /* Kept: a marker says so, and its time starts now (the sweep
         * removes the directory after the TTL). */
        char d[800], f[900];
        app_dir(e->app, d, sizeof d);
        snprintf(f, sizeof f, "%s/.failed", d);
        int fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd >= 0) close(fd);
        utimensat(AT_FDCWD, d, NULL, 0);
    }
    log_msg(failed ? LOG_WARN : LOG_INFO, "worker", "executor %s/%d exited (code %lld, signal %d)%s", e->app, e->id,
            (long long)code, sig, failed ? ": its logs are kept" : "");
    if (wk.master && wk.registered) {
        msg_val f[] = {msg_str(e->app), msg_u((uint64_t)e->id), msg_i(code), msg_u((uint64_t)sig), msg_str(tail),
                       msg_u((uint64_t)cannot_run)};
        if (conn_send_msg(wk.master, M_EXECUTOR_EXITED, f, 6)) conn_close(wk.master, em_errmsg());
    }
    exec_close(e);
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig) {
    wexec *e = (wexec *)((char *)p - offsetof(wexec, proc));
    uv_timer_stop(&e->grace);
    exec_ended(e, status, sig, NULL);
}

static void owner_close_exec(void *self, const char *reason) {
    (void)reason;
    wexec *e = self;
    if (e->started && !e->exited) uv_process_kill(&e->proc, SIGKILL);
    exec_close(e);
}

/* Start executor e from the cached binary at path, with the library
 * directory it runs with first on LD_LIBRARY_PATH (applib.h). */
static void exec_spawn(wexec *e, const char *path) {
    char d[1000], out[1000], err[1000], libdir[1200];
    char *ldpath = NULL;
    snprintf(d, sizeof d, "%s/local", e->dir);
    if ((mkdir(e->dir, 0700) && errno != EEXIST) || (mkdir(d, 0700) && errno != EEXIST)) {
        snprintf(err, sizeof err, "cannot make the executor's directory %s: %s", e->dir, strerror(errno));
        exec_ended(e, -1, 0, err);
        return;
    }
    snprintf(out, sizeof out, "%s/stdout", e->dir);
    snprintf(err, sizeof err, "%s/stderr", e->dir);
    int lib = applib_dir(path, libdir, sizeof libdir);
    if (lib < 0) { /* gone since exec_prepare looked: the next launch fetches it again */
        snprintf(err, sizeof err, "the library directory of the binary %s is gone", path);
        exec_ended(e, -1, 0, err);
        return;
    }
    int ofd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    int efd = open(err, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (lib == 1) {
        const char *cur = getenv("LD_LIBRARY_PATH");
        size_t len = sizeof "LD_LIBRARY_PATH=" + strlen(libdir) + (cur && *cur ? strlen(cur) + 1 : 0);
        if ((ldpath = malloc(len)))
            snprintf(ldpath, len, "LD_LIBRARY_PATH=%s%s%s", libdir, cur && *cur ? ":" : "", cur && *cur ? cur : "");
    }
    /* The environment: the worker's, but for its own role's variables. */
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 16, sizeof *env);
    char vars[16][1100];
    int nv = 0;
    if (ofd < 0 || efd < 0 || !env || (lib == 1 && !ldpath)) {
        if (ofd >= 0) close(ofd);
        if (efd >= 0) close(efd);
        free(env);
        free(ldpath);
        exec_ended(e, -1, 0, "cannot open the executor's stdout and stderr files");
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "EMBER_", 6) && (!ldpath || strncmp(environ[i], "LD_LIBRARY_PATH=", 16)))
            env[k++] = environ[i];
    if (ldpath) env[k++] = ldpath;
    snprintf(vars[nv++], sizeof vars[0], "EMBER_ROLE=executor");
    snprintf(vars[nv++], sizeof vars[0], "EMBER_PARENT_PID=%d", (int)getpid());
    snprintf(vars[nv++], sizeof vars[0], "EMBER_DRIVER_URL=%s", e->driver);
    snprintf(vars[nv++], sizeof vars[0], "EMBER_EXECUTOR_ID=%d", e->id);
    snprintf(vars[nv++], sizeof vars[0], "EMBER_APP_ID=%s", e->app);
    snprintf(vars[nv++], sizeof vars[0], "EMBER_EXECUTOR_CORES=%d", e->cores);
    snprintf(vars[nv++], sizeof vars[0], "EMBER_EXECUTOR_MEMORY=%lld", (long long)e->mem_mib);
    snprintf(vars[nv++], sizeof vars[0], "EMBER_EXECUTOR_DIR=%s", d);
    snprintf(vars[nv++], sizeof vars[0], "EMBER_EXECUTOR_HOST=%s", wk.host);
    snprintf(vars[nv++], sizeof vars[0], "EMBER_NETWORK_CRYPTO=%d", wk.co.encrypt ? 1 : 0);
    if (wk.nc.secret) snprintf(vars[nv++], sizeof vars[0], "EMBER_SECRET_FILE=%s/secret", wk.dir);
    if (wk.svc_port > 0) {
        char sd[900];
        shuffle_dir(e->app, sd, sizeof sd);
        snprintf(vars[nv++], sizeof vars[0], "EMBER_SHUFFLE_SERVICE_PORT=%d", wk.svc_port);
        snprintf(vars[nv++], sizeof vars[0], "EMBER_SHUFFLE_DIR=%s", sd);
    }
    for (int i = 0; i < nv; i++) env[k++] = vars[i];
    env[k++] = e->conf;
    env[k] = NULL;
    char *args[] = {(char *)path, NULL};
    uv_stdio_container_t stdio[3];
    stdio[0].flags = UV_IGNORE;
    stdio[1].flags = UV_INHERIT_FD;
    stdio[1].data.fd = ofd;
    stdio[2].flags = UV_INHERIT_FD;
    stdio[2].data.fd = efd;
    uv_process_options_t o;
    memset(&o, 0, sizeof o);
    o.exit_cb = on_exit_cb;
    o.file = path;
    o.args = args;
    o.env = env;
    o.cwd = e->dir;
    o.stdio = stdio;
    o.stdio_count = 3;
    e->proc.data = e;
    int rc = uv_spawn(iol_uv(wk.l), &e->proc, &o);
    close(ofd);
    close(efd);
    free(env);
    free(ldpath);
    if (rc) {
        char why[1200];
        snprintf(why, sizeof why, "cannot start the executor %s: %s", path, uv_strerror(rc));
        /* libuv: the handle is closed even after a failed spawn; counted
         * as one of the executor's open handles. */
        e->started = 1;
        e->exited = 1;
        exec_ended(e, -1, 0, why);
        return;
    }
    e->started = 1;
    log_msg(LOG_INFO, "worker", "started executor %s/%d (pid %d, %d cores) for driver %s", e->app, e->id,
            e->proc.pid, e->cores, e->driver);
}

/* -------------------------------------------------------- binary fetches */

static void cached_path(const uint8_t hash[32], char *out, size_t cap) {
    char hex[65];
    appbin_hex(hash, hex);
    snprintf(out, cap, "%s/bin/%s", wk.dir, hex);
}

/* Whether an executor this worker runs or is about to start uses the
 * binary named name, or a fetch in progress the library directory of that
 * name (bincache_trim's question). */
static int bin_in_use(void *ud, const char *name) {
    (void)ud;
    char hex[65];
    for (wexec *e = wk.execs; e; e = e->next) {
        appbin_hex(e->hash, hex);
        if (!strcmp(hex, name)) return 1;
    }
    for (binfetch *b = wk.fetches; b; b = b->next)
        if (!strcmp(b->lib_hex, name)) return 1;
    return 0;
}

/* Keep DIR/bin under ember.worker.binCache.maxBytes. */
static void trim_bins(void) {
    char dir[800];
    uint64_t freed = 0;
    snprintf(dir, sizeof dir, "%s/bin", wk.dir);
    if (bincache_trim(dir, wk.bin_max, bin_in_use, NULL, &freed)) log_msg(LOG_WARN, "worker", "%s", em_errmsg());
    else if (freed)
        log_msg(LOG_INFO, "worker", "removed %llu bytes of binaries no executor uses from %s "
                "(ember.worker.binCache.maxBytes %llu)", (unsigned long long)freed, dir,
                (unsigned long long)wk.bin_max);
}

static void fetch_done(binfetch *b, const char *why) {
    for (binfetch **pp = &wk.fetches; *pp; pp = &(*pp)->next)
        if (*pp == b) {
            *pp = b->next;
            break;
        }
    if (b->fd >= 0) close(b->fd);
    if (why) unlink(b->tmp);
    if (b->lib_fd >= 0) { /* a library that did not come whole */
        close(b->lib_fd);
        unlink(b->lib_tmp);
    }
    char msgbuf[1400];
    if (why) snprintf(msgbuf, sizeof msgbuf, "could not fetch the application's binary from the driver at %s: %s",
                      b->driver, why);
    for (wexec *e = wk.execs; e; e = e->next)
        if (e->waiting == b) {
            e->waiting = NULL;
            if (why) exec_ended(e, -1, 0, msgbuf);
            else exec_spawn(e, b->path);
        }
    if (!why) trim_bins(); /* a binary more: the cache may pass its bound */
    free(b);
}

static void fetch_open(conn *c, void *ud) {
    binfetch *b = ud;
    msg_val f[] = {msg_bin(b->hash, 32)};
    if (conn_send_msg(c, M_FETCH_BINARY, f, 1)) conn_close(c, em_errmsg());
}

/* The library message: where its bytes go (applib.h).  0, or -1 with the
 * reason in why. */
static int lib_begin(binfetch *b, const msg *m, char *why, size_t cap) {
    char name[256], dir[800];
    if (!appbin_libname_ok((const char *)m->f[0].p, m->f[0].len)) {
        snprintf(why, cap, "the driver sent a library named \"%.*s\", not a file name this worker keeps",
                 (int)(m->f[0].len < 64 ? m->f[0].len : 64), (const char *)m->f[0].p);
        return -1;
    }
    memcpy(name, m->f[0].p, m->f[0].len);
    name[m->f[0].len] = 0;
    appbin_hex(m->f[2].p, b->lib_hex);
    snprintf(dir, sizeof dir, "%s/bin/%s", wk.dir, b->lib_hex);
    snprintf(b->lib_path, sizeof b->lib_path, "%s/%s", dir, name);
    snprintf(b->lib_tmp, sizeof b->lib_tmp, "%s.tmp-%d-%p", b->lib_path, (int)getpid(), (void *)b);
    if ((mkdir(dir, 0700) && errno != EEXIST) ||
        (b->lib_fd = open(b->lib_tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
        snprintf(why, cap, "%s: %s", b->lib_tmp, strerror(errno));
        return -1;
    }
    b->phase = BF_LIB;
    b->len = m->f[1].u;
    b->got = 0;
    memcpy(b->file_hash, m->f[2].p, 32);
    crypto_generichash_init(&b->st, NULL, 0, 32);
    return 0;
}

/* A file came whole (the empty chunk): checked against its hash, kept.  The
 * library goes to its place at once; the binary last, after the link to
 * its library, so a kept binary has everything it needs.  0, or -1 with
 * the reason in why. */
static int file_end(binfetch *b, char *why, size_t cap) {
    int lib = b->phase == BF_LIB, fd = lib ? b->lib_fd : b->fd;
    const char *what = lib ? "library" : "binary", *tmp = lib ? b->lib_tmp : b->tmp, *path = lib ? b->lib_path : b->path;
    uint8_t h[32];
    crypto_generichash_final(&b->st, h, 32);
    if (b->got != b->len) {
        snprintf(why, cap, "the %s ended short of its length", what);
        return -1;
    }
    if (sodium_memcmp(h, b->file_hash, 32)) {
        snprintf(why, cap, "the %s's contents do not match its hash", what);
        return -1;
    }
    if (!lib && b->lib_hex[0] && applib_link(b->path, b->lib_hex)) {
        snprintf(why, cap, "%s", em_errmsg());
        return -1;
    }
    if (fchmod(fd, 0700) || fsync(fd) || rename(tmp, path)) {
        snprintf(why, cap, "keeping %s: %s", path, strerror(errno));
        return -1;
    }
    if (lib) {
        close(b->lib_fd);
        b->lib_fd = -1;
    }
    log_msg(LOG_INFO, "worker", "fetched the application's %s (%llu bytes) from %s%s%s", what,
            (unsigned long long)b->len, b->driver, lib ? ": " : "", lib ? b->lib_path : "");
    b->phase = lib ? BF_BIN_HEAD : BF_DONE;
    return 0;
}

static void fetch_frame(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud) {
    binfetch *b = ud;
    msg m;
    char why[1400];
    memset(&m, 0, sizeof m);
    int receiving = b->phase == BF_LIB || b->phase == BF_BIN;
    if (type == FT_MSG && (b->phase == BF_HEAD || b->phase == BF_BIN_HEAD)) {
        if (msg_decode(&m, body, len)) conn_close(c, em_errmsg());
        else if (m.tag == M_ERROR) {
            snprintf(why, sizeof why, "the driver says: %.*s", (int)m.f[1].len, (const char *)m.f[1].p);
            conn_close(c, why);
        } else if (m.tag == M_LIBRARY && b->phase == BF_HEAD) {
            if (lib_begin(b, &m, why, sizeof why)) conn_close(c, why);
        } else if (m.tag != M_BINARY) conn_close(c, "a message that is not the binary");
        else {
            b->phase = BF_BIN;
            b->len = m.f[0].u;
            b->got = 0;
            memcpy(b->file_hash, m.f[1].p, 32);
            crypto_generichash_init(&b->st, NULL, 0, 32);
        }
    } else if (type == FT_CHUNK && receiving && len) {
        int fd = b->phase == BF_LIB ? b->lib_fd : b->fd;
        if (b->got + len > b->len) conn_close(c, "more bytes than the file's length");
        else {
            size_t off = 0;
            while (off < len) {
                ssize_t k = write(fd, body + off, len - off);
                if (k < 0 && errno == EINTR) continue;
                if (k <= 0) break;
                off += (size_t)k;
            }
            if (off < len) {
                snprintf(why, sizeof why, "writing %s: %s", b->phase == BF_LIB ? b->lib_tmp : b->tmp, strerror(errno));
                conn_close(c, why);
            } else {
                crypto_generichash_update(&b->st, body, len);
                b->got += len;
            }
        }
    } else if (type == FT_CHUNK && receiving) { /* the end of the file */
        if (file_end(b, why, sizeof why)) conn_close(c, why);
        else if (b->phase == BF_DONE) conn_close(c, "the binary is here"); /* not a failure */
    } else conn_close(c, "an unexpected frame");
    msg_free(&m);
    free(body);
}

static void fetch_closed(conn *c, const char *reason, void *ud) {
    (void)c;
    binfetch *b = ud;
    fetch_done(b, b->phase == BF_DONE ? NULL : reason);
}

static const conn_cb fetch_cb = {fetch_open, fetch_frame, fetch_closed};

/* Make sure e's binary is here: start it at once, or once it is fetched. */
static void exec_prepare(wexec *e) {
    char path[800], libdir[1200];
    cached_path(e->hash, path, sizeof path);
    if (!access(path, X_OK) && applib_dir(path, libdir, sizeof libdir) >= 0) {
        bincache_touch(path); /* most recently used */
        exec_spawn(e, path);
        return;
    }
    for (binfetch *b = wk.fetches; b; b = b->next)
        if (!memcmp(b->hash, e->hash, 32)) {
            e->waiting = b;
            return;
        }
    binfetch *b = calloc(1, sizeof *b);
    char host[256];
    int port;
    if (!b || split_addr(e->driver, host, sizeof host, &port)) {
        free(b);
        exec_ended(e, -1, 0, "a bad driver address");
        return;
    }
    memcpy(b->hash, e->hash, 32);
    snprintf(b->driver, sizeof b->driver, "%s", e->driver);
    snprintf(b->path, sizeof b->path, "%s", path);
    snprintf(b->tmp, sizeof b->tmp, "%s.tmp-%d-%p", path, (int)getpid(), (void *)b);
    b->lib_fd = -1;
    b->fd = open(b->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    b->next = wk.fetches;
    wk.fetches = b;
    e->waiting = b;
    if (b->fd < 0) {
        char why[1200];
        snprintf(why, sizeof why, "%s: %s", b->tmp, strerror(errno));
        fetch_done(b, why);
        return;
    }
    conn_opts o = wk.co;
    o.component = "worker";
    if (conn_connect(wk.l, host, port, &o, &fetch_cb, b, &b->c)) fetch_done(b, em_errmsg());
}

/* -------------------------------------------------------------- master */

static void launch(const msg *m) {
    wexec *e = calloc(1, sizeof *e);
    if (!e) return;
    if (m->f[0].len >= sizeof e->app || m->f[4].len >= sizeof e->driver ||
        !app_id_ok((const char *)m->f[0].p, m->f[0].len)) {
        free(e);
        log_msg(LOG_WARN, "worker", "refused a launch with a bad application id or driver address");
        return;
    }
    memcpy(e->app, m->f[0].p, m->f[0].len);
    e->id = (int)m->f[1].u;
    e->cores = (int)m->f[2].u;
    e->mem_mib = (int64_t)m->f[3].u;
    memcpy(e->driver, m->f[4].p, m->f[4].len);
    memcpy(e->hash, m->f[5].p, 32);
    if (!(e->conf = malloc(m->f[6].len + sizeof "EMBER_CONF="))) {
        free(e);
        log_msg(LOG_WARN, "worker", "refused a launch: out of memory");
        return;
    }
    memcpy(e->conf, "EMBER_CONF=", 11);
    memcpy(e->conf + 11, m->f[6].p, m->f[6].len);
    e->conf[11 + m->f[6].len] = 0;
    char d[800];
    app_dir(e->app, d, sizeof d);
    snprintf(e->dir, sizeof e->dir, "%s/%d", d, e->id);
    e->owner.close = owner_close_exec;
    uv_timer_init(iol_uv(wk.l), &e->grace);
    e->grace.data = e;
    e->next = wk.execs;
    wk.execs = e;
    char sd[900];
    shuffle_dir(e->app, sd, sizeof sd);
    if ((mkdir(d, 0700) && errno != EEXIST) || (wk.svc_port > 0 && mkdir(sd, 0700) && errno != EEXIST)) {
        char why[1000];
        snprintf(why, sizeof why, "cannot make %s: %s", errno == EEXIST ? sd : d, strerror(errno));
        exec_ended(e, -1, 0, why);
        return;
    }
    if (wk.svc_port > 0 && !app_find(e->app)) {
        wapp *a = calloc(1, sizeof *a);
        if (a) { /* (else its outputs go with its last executor, as without the service) */
            snprintf(a->id, sizeof a->id, "%s", e->app);
            a->next = wk.apps;
            wk.apps = a;
        }
    }
    exec_prepare(e);
}

static void on_grace(uv_timer_t *t) {
    wexec *e = (wexec *)((char *)t - offsetof(wexec, grace));
    if (e->started && !e->exited) uv_process_kill(&e->proc, SIGKILL);
}

static void kill_exec(const char *app, int id) {
    for (wexec *e = wk.execs; e; e = e->next)
        if (!strcmp(e->app, app) && e->id == id && !e->exited) {
            e->killed = 1;
            if (e->started) {
                uv_process_kill(&e->proc, SIGTERM);
                uv_process_kill(&e->proc, SIGCONT); /* a stopped executor takes the SIGTERM now */
                uv_timer_start(&e->grace, on_grace, KILL_GRACE_MS, 0);
            } else if (e->waiting) {
                e->waiting = NULL;
                exec_ended(e, -1, 0, "killed before it started");
            }
        }
}

/* The master says the application ended: its map outputs go now, and its
 * directory with its last executor (or now, when none is left), unless one
 * failed (its logs are kept for appDataTtl). */
static void app_finished(const char *app) {
    wapp *a = NULL;
    for (wapp **pp = &wk.apps; *pp; pp = &(*pp)->next)
        if (!strcmp((*pp)->id, app)) {
            a = *pp;
            *pp = a->next;
            break;
        }
    if (!a) return;
    free(a);
    char d[900];
    shuffle_dir(app, d, sizeof d);
    rm_tree(d);
    for (wexec *e = wk.execs; e; e = e->next)
        if (!strcmp(e->app, app)) return;
    if (!app_marked_failed(app)) {
        app_dir(app, d, sizeof d);
        rm_tree(d);
    }
    log_msg(LOG_INFO, "worker", "application %s finished: its shuffle files are removed", app);
}

/* Register, then report every executor still alive (started, or waiting
 * for its binary): a master that restarted rebuilds its grants from the
 * report, and kills what it does not know. */
static void master_open(conn *c, void *ud) {
    (void)ud;
    uint64_t n = 0;
    for (wexec *e = wk.execs; e; e = e->next) n += !e->exited;
    msg_val f[] = {msg_str(wk.id), msg_str(wk.host), msg_u((uint64_t)wk.svc_port), msg_u((uint64_t)wk.cores),
                   msg_u((uint64_t)wk.mem_mib), msg_u(n), msg_str(wk.webui)};
    int rc = conn_send_msg(c, M_REGISTER_WORKER, f, 7);
    for (wexec *e = wk.execs; e && !rc; e = e->next)
        if (!e->exited) {
            msg_val g[] = {msg_str(e->app), msg_u((uint64_t)e->id), msg_u((uint64_t)e->cores),
                           msg_u((uint64_t)e->mem_mib)};
            rc = conn_send_msg(c, M_EXECUTOR_RUNNING, g, 4);
        }
    if (rc) conn_close(c, em_errmsg());
}

static void master_frame(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud) {
    (void)ud;
    msg m;
    char why[700];
    if (conn_take_msg(c, type, body, len, &m)) return;
    switch (m.tag) {
    case M_WORKER_REGISTERED:
        if (!wk.registered) log_msg(LOG_INFO, "worker", "registered with %.*s as %s", (int)m.f[0].len,
                                   (const char *)m.f[0].p, wk.id);
        wk.registered = 1;
        snprintf(wk.master_webui, sizeof wk.master_webui, "%.*s", (int)m.f[1].len,
                 m.f[1].p ? (const char *)m.f[1].p : "");
        break;
    case M_REGISTER_REFUSED:
        snprintf(why, sizeof why, "the master refused this worker: %.*s", (int)m.f[0].len, (const char *)m.f[0].p);
        wk.registered = 0;
        conn_close(c, why); /* and register again, after a pause */
        break;
    case M_LAUNCH_EXECUTOR: launch(&m); break;
    case M_APP_FINISHED: {
        char app[ID_MAX];
        if (app_id_ok((const char *)m.f[0].p, m.f[0].len) && m.f[0].len < sizeof app) {
            memcpy(app, m.f[0].p, m.f[0].len);
            app[m.f[0].len] = 0;
            app_finished(app);
        }
        break;
    }
    case M_KILL_EXECUTOR: {
        char app[ID_MAX];
        if (m.f[0].len < sizeof app) {
            memcpy(app, m.f[0].p, m.f[0].len);
            app[m.f[0].len] = 0;
            kill_exec(app, (int)m.f[1].u);
        }
        break;
    }
    default:
        snprintf(why, sizeof why, "a %s message the worker does not take", msg_name(m.tag));
        conn_close(c, why);
    }
    msg_free(&m);
    free(body);
}

static void connect_master(void);

static void master_closed(conn *c, const char *reason, void *ud) {
    (void)c;
    (void)ud;
    if (wk.stopping) /* a stopping worker does not come back */
        log_msg(LOG_INFO, "worker", "left the master %s:%d: the worker is stopping", wk.mhost, wk.mport);
    else
        log_msg(LOG_WARN, "worker", "master %s:%d: %s; registering again in %d ms", wk.mhost, wk.mport, reason,
                RECONNECT_MS);
    wk.master = NULL;
    wk.registered = 0;
    if (!wk.stopping) uv_timer_start(&wk.retry.t, (uv_timer_cb)connect_master, RECONNECT_MS, 0);
}

static const conn_cb master_cb = {master_open, master_frame, master_closed};

static void connect_master(void) {
    if (wk.master || wk.stopping) return;
    if (conn_connect(wk.l, wk.mhost, wk.mport, &wk.co, &master_cb, NULL, &wk.master)) {
        wk.master = NULL;
        uv_timer_start(&wk.retry.t, (uv_timer_cb)connect_master, RECONNECT_MS, 0);
    }
}

static void on_heartbeat(uv_timer_t *t) {
    (void)t;
    if (!wk.master || !wk.registered) return;
    msg_val f[] = {msg_str(wk.id)};
    if (conn_send_msg(wk.master, M_HEARTBEAT, f, 1)) conn_close(wk.master, em_errmsg());
}

/* Failed applications' directories past the TTL go; the binary cache
 * keeps to its bound. */
static void on_sweep(uv_timer_t *t) {
    (void)t;
    char cmd_dir[800];
    snprintf(cmd_dir, sizeof cmd_dir, "%s", wk.dir);
    uv_fs_t req;
    if (uv_fs_scandir(NULL, &req, cmd_dir, 0, NULL) < 0) return;
    uv_dirent_t ent;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    while (uv_fs_scandir_next(&req, &ent) != UV_EOF) {
        if (ent.type != UV_DIRENT_DIR || !strncmp(ent.name, "bin", 4) || app_alive(ent.name)) continue;
        char d[900];
        struct stat sb;
        snprintf(d, sizeof d, "%s/%s", wk.dir, ent.name);
        if (!stat(d, &sb) && (uint64_t)(now.tv_sec - sb.st_mtime) * 1000u >= wk.ttl_ms) {
            log_msg(LOG_INFO, "worker", "removing %s (kept for ember.worker.cleanup.appDataTtl)", d);
            rm_tree(d);
        }
    }
    uv_fs_req_cleanup(&req);
    trim_bins();
}

typedef struct start_arg {
    int rc;
    char err[512];
} start_arg;

/* The web UI's answers, from the worker's state now (worker_ui.h). */
static int ui_answer(void *ud, const http_req *r, int *status, const char **ctype, ebuf *body) {
    (void)ud;
    int n = 0;
    for (wexec *e = wk.execs; e; e = e->next) n += !e->exited;
    wui_exec *run = calloc((size_t)n + 1, sizeof *run), *fin = calloc((size_t)wk.ndone + 1, sizeof *fin);
    if (!run || !fin) {
        free(run);
        free(fin);
        return em__seterr(EM_ENOMEM, "worker web UI: out of memory");
    }
    char master[200];
    snprintf(master, sizeof master, "ember://%s:%d", wk.mhost, wk.mport);
    wui_state s = {wk.id, wk.host, wk.dir, master, wk.master_webui, wk.webui, wk.cores, 0, wk.mem_mib, 0,
                   run, 0, fin, 0, wk.prom};
    for (wexec *e = wk.execs; e; e = e->next)
        if (!e->exited) {
            run[s.nrunning++] = (wui_exec){e->app, e->started ? "RUNNING" : "LAUNCHING", e->id, e->cores, e->mem_mib};
            s.cores_used += e->cores;
            s.mem_used += e->mem_mib;
        }
    for (int i = 1; i <= wk.ndone; i++) { /* the newest first */
        const struct wdone *dn = &wk.done[(wk.done_next - i + wk.done_cap) % wk.done_cap];
        fin[s.nfinished++] = (wui_exec){dn->app, dn->state, dn->id, dn->cores, dn->mem_mib};
    }
    int rc = worker_ui_answer(&s, r, status, ctype, body);
    free(run);
    free(fin);
    return rc;
}

/* The web UI on its port, or the next free one of UI_PORT_TRIES (port 0:
 * any).  0, or the error of the last try. */
static int ui_start(void) {
    httpd_opts ho = {0, 0, "worker"};
    int rc = 0, bound = 0;
    for (int i = 0; i < (wk.ui_port ? UI_PORT_TRIES : 1) && wk.ui_port + i <= 65535; i++) {
        if (!(rc = httpd_start(wk.l, wk.host, wk.ui_port ? wk.ui_port + i : 0, &ho, ui_answer, NULL, &wk.ui, &bound)))
            break;
    }
    if (rc) return rc;
    snprintf(wk.webui, sizeof wk.webui, "http://%s:%d", wk.host, bound);
    wk.ui_port = bound;
    return 0;
}

static void start(void *arg) {
    start_arg *a = arg;
    if (wk.svc_on) {
        conn_opts so = wk.co;
        so.component = "shuffle-service";
        ss_config sc = {svc_dir_of, NULL, 0, NULL};
        if ((a->rc = ss_start(wk.l, wk.host, wk.svc_port, &so, &sc, &wk.svc, &wk.svc_port))) {
            int k = snprintf(a->err, sizeof a->err, "the shuffle service (ember.shuffle.service.port %d): ", wk.svc_port);
            em__geterr(a->err + k, sizeof a->err - (size_t)k);
            return;
        }
    }
    if ((a->rc = ui_start())) {
        snprintf(a->err, sizeof a->err, "the web UI (ember.worker.ui.port %d): ", wk.ui_port);
        em__geterr(a->err + strlen(a->err), sizeof a->err - strlen(a->err));
        return;
    }
    iol_timer_init(wk.l, &wk.hb);
    iol_timer_init(wk.l, &wk.retry);
    iol_timer_init(wk.l, &wk.sweep);
    uv_timer_start(&wk.hb.t, on_heartbeat, wk.hb_ms, wk.hb_ms);
    uv_timer_start(&wk.sweep.t, on_sweep, 0, 60000);
    connect_master();
    a->rc = 0;
}

#ifdef EMBER_COVERAGE
/* make coverage: a SIGKILL that lands while an executor writes its counts
 * leaves a truncated .gcda that every later process fails to merge.  The
 * stopping worker sends SIGTERM instead, which the executor takes only after
 * its counts are written (executor.c), and waits for it (stop_wait). */
#define STOP_SIGNAL SIGTERM
#else
#define STOP_SIGNAL SIGKILL
#endif

/* SIGTERM: every executor is killed; the loop then stops. */
static void stop_all(void *arg) {
    (void)arg;
    wk.stopping = 1;
    for (wexec *e = wk.execs; e; e = e->next)
        if (e->started && !e->exited) {
            e->killed = 1;
            uv_process_kill(&e->proc, STOP_SIGNAL);
            if (STOP_SIGNAL != SIGKILL) uv_process_kill(&e->proc, SIGCONT);
        }
    if (wk.master) conn_close(wk.master, "the worker is stopping");
}

#ifdef EMBER_COVERAGE
static void count_running(void *arg) {
    int n = 0;
    for (wexec *e = wk.execs; e; e = e->next) n += e->started && !e->exited;
    *(int *)arg = n;
}

/* Waits up to KILL_GRACE_MS for the executors stop_all signalled to end. */
static void stop_wait(void) {
    for (int i = 0; i < KILL_GRACE_MS / 10; i++) {
        int n;
        iol_call(wk.l, count_running, &n);
        if (!n) return;
        usleep(10000);
    }
}
#endif

static const char usage[] =
    "usage: ember-worker [--host HOST] [--cores N] [--memory SIZE] [--work-dir DIR]\n"
    "                    [--webui-port PORT] [--conf KEY=VALUE]... [--insecure] MASTER\n"
    "  Runs a worker of the cluster whose master is MASTER (ember://HOST:PORT): it\n"
    "  launches the executors the master grants, as processes, with their logs and\n"
    "  files under DIR/<application>/<executor>/ (default ./work).  HOST is the\n"
    "  address executors listen on and advertise (default 127.0.0.1); N the cores\n"
    "  it offers (default: all of this machine's); SIZE its memory (default 1g).\n"
    "  Its web UI (/, /json, executors' logs at /logPage/) is on HOST:PORT (default\n"
    "  ember.worker.ui.port, 8081, or the next free port of the 16 above it; 0: any\n"
    "  free port; the log line says which).  ember.ui.prometheus.enabled (false)\n"
    "  adds /metrics/prometheus.\n"
    "  Settings: ember.worker.heartbeatInterval (2500ms),\n"
    "  ember.worker.cleanup.appDataTtl (7d), ember.worker.binCache.maxBytes (1g),\n"
    "  ember.shuffle.service.enabled (true),\n"
    "  ember.shuffle.service.port (7337; 0: any free port), ember.authenticate.secret(File),\n"
    "  ember.network.crypto.enabled, ember.log.level.  Stops on SIGTERM or SIGINT.\n";

/* --memory: a bare number is MiB, as Spark's (1024 is 1g); else a size
 * with its unit, at least 1m.  0, or 1 when bad. */
static int parse_memory(const char *v, void *out) {
    char mib[64];
    int64_t b;
    int bare = *v && !strpbrk(v, "kKmMgGtTbB");
    int bad = bare && snprintf(mib, sizeof mib, "%sm", v) >= (int)sizeof mib;
    bad = bad || conf_parse_size(bare ? mib : v, &b) || b < ((int64_t)1 << 20);
    *(int64_t *)out = bad ? 0 : b >> 20;
    return bad;
}

int worker_main(int argc, char **argv) {
    memset(&wk, 0, sizeof wk);
    snprintf(wk.host, sizeof wk.host, "127.0.0.1");
    snprintf(wk.dir, sizeof wk.dir, "work");
    wk.cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    wk.mem_mib = 1024;
    const char *master = NULL;
    int insecure = 0, webui_port = -1;
    em_conf *conf = em_conf_new();
    if (!conf) return 1;
    const daemon_opt opts[] = {
        {.name = "--insecure", .kind = DA_FLAG, .out = &insecure},
        {.name = "--host", .kind = DA_STR, .out = wk.host, .cap = sizeof wk.host},
        {.name = "--work-dir", .kind = DA_STR, .out = wk.dir, .cap = sizeof wk.dir},
        {.name = "--cores", .kind = DA_INT, .out = &wk.cores, .min = 1, .max = 1 << 16},
        {.name = "--memory", .kind = DA_FN, .out = &wk.mem_mib, .fn = parse_memory},
        {.name = "--webui-port", .kind = DA_INT, .out = &webui_port, .min = 0, .max = 65535},
        {.name = "--conf", .kind = DA_CONF},
        {.name = NULL},
    };
    const daemon_cmd cmd = {"ember-worker", usage, opts, &master};
    int arc = daemon_args_parse(&cmd, argc, argv, conf);
    if (arc) {
        em_conf_free(conf);
        return arc == 1 ? 0 : 2;
    }
    if (!master || strncmp(master, "ember://", 8) || split_addr(master + 8, wk.mhost, sizeof wk.mhost, &wk.mport)) {
        fprintf(stderr, "ember-worker: %s: the master's URL must be ember://HOST:PORT\n",
                master ? master : "no master given");
        fputs(usage, stderr);
        em_conf_free(conf);
        return 2;
    }
    if (insecure) em_conf_set(conf, "ember.network.insecure", "true");
    wk.hb_ms = (uint64_t)conf_duration_ms(conf, "ember.worker.heartbeatInterval");
    wk.ttl_ms = (uint64_t)conf_duration_ms(conf, "ember.worker.cleanup.appDataTtl");
    wk.bin_max = (uint64_t)conf_i64(conf, "ember.worker.binCache.maxBytes");
    wk.svc_on = conf_bool(conf, "ember.shuffle.service.enabled");
    wk.svc_port = wk.svc_on ? (int)conf_i64(conf, "ember.shuffle.service.port") : 0;
    wk.ui_port = webui_port >= 0 ? webui_port : (int)conf_i64(conf, "ember.worker.ui.port");
    wk.prom = conf_bool(conf, "ember.ui.prometheus.enabled");
    wk.done_cap = (int)conf_i64(conf, "ember.worker.ui.retainedExecutors");
    if (wk.done_cap > 0 && !(wk.done = calloc((size_t)wk.done_cap, sizeof *wk.done))) {
        fprintf(stderr, "ember-worker: out of memory\n");
        em_conf_free(conf);
        return 1;
    }
    int rc = netconf_load(conf, &wk.nc);
    em_conf_free(conf);
    if (rc || netconf_check_bind(&wk.nc, wk.host, "ember-worker")) {
        fprintf(stderr, "ember-worker: %s\n", em_errmsg());
        return 1;
    }
    wk.co = netconf_opts(&wk.nc, "worker");
    char bin[800];
    snprintf(bin, sizeof bin, "%s/bin", wk.dir);
    if ((mkdir(wk.dir, 0700) && errno != EEXIST) || (mkdir(bin, 0700) && errno != EEXIST)) {
        fprintf(stderr, "ember-worker: cannot make the work directory %s: %s\n", wk.dir, strerror(errno));
        return 1;
    }
    /* Absolute: executors start in directories of their own. */
    char *abs = realpath(wk.dir, NULL);
    if (!abs || strlen(abs) >= sizeof wk.dir) {
        fprintf(stderr, "ember-worker: the work directory %s: %s\n", wk.dir, abs ? "path too long" : strerror(errno));
        free(abs);
        return 1;
    }
    snprintf(wk.dir, sizeof wk.dir, "%s", abs);
    free(abs);
    /* Executors get the secret through a file only the worker's user reads. */
    char sf[800];
    snprintf(sf, sizeof sf, "%s/secret", wk.dir);
    if (wk.nc.secret && netconf_write_secret(&wk.nc, sf)) {
        fprintf(stderr, "ember-worker: %s\n", em_errmsg());
        return 1;
    }
    {
        char stamp[32];
        time_t t = time(NULL);
        struct tm tm;
        strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", localtime_r(&t, &tm));
        snprintf(wk.id, sizeof wk.id, "worker-%s-%s-%d", stamp, wk.host, (int)getpid());
    }
    sigset_t sigs;
    daemon_block_signals(&sigs);
    if (!(wk.l = iol_start("worker"))) {
        fprintf(stderr, "ember-worker: %s\n", em_errmsg());
        return 1;
    }
    start_arg a = {0, ""};
    iol_call(wk.l, start, &a);
    if (a.rc) {
        fprintf(stderr, "ember-worker: %s\n", a.err);
        iol_stop(wk.l);
        if (wk.nc.secret) unlink(sf);
        netconf_free(&wk.nc);
        return 1;
    }
    log_msg(LOG_INFO, "worker", "%s: %d cores, %lld MiB, work directory %s, master %s", wk.id, wk.cores,
            (long long)wk.mem_mib, wk.dir, master);
    if (wk.svc_on) log_msg(LOG_INFO, "worker", "shuffle service on %s:%d", wk.host, wk.svc_port);
    log_msg(LOG_INFO, "worker", "web UI on %s", wk.webui);
    int sig = 0;
    sigwait(&sigs, &sig);
    log_msg(LOG_INFO, "worker", "stopping on signal %d", sig);
    iol_call(wk.l, stop_all, NULL);
#ifdef EMBER_COVERAGE
    stop_wait();
#endif
    iol_stop(wk.l); /* closes every handle: the executors are gone */
    /* (Directories went with their executors' handles as the loop
     * stopped, but for failed applications' and those the shuffle service
     * kept: with the service gone their map outputs are of no use.) */
    while (wk.apps) {
        wapp *ap = wk.apps;
        wk.apps = ap->next;
        char d[900];
        shuffle_dir(ap->id, d, sizeof d);
        rm_tree(d);
        if (!app_marked_failed(ap->id)) {
            app_dir(ap->id, d, sizeof d);
            rm_tree(d);
        }
        free(ap);
    }
    ss_free(wk.svc);
    free(wk.done);
    if (wk.nc.secret) unlink(sf); /* the executors' copy of the secret goes with them */
    netconf_free(&wk.nc);
    return 0;
}
