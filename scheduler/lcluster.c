/*
 * lcluster.c -- local-cluster's daemons (see lcluster.h): the master URL's
 * parsing, and the master and workers started, and stopped, as processes.
 *
 * Each daemon is this binary spawned with EMBER_ROLE set (the takeover
 * runs the daemon in place of the program) and EMBER_PARENT_PID, its
 * stdout and stderr appended to its log.  The master writes its ports to
 * EMBER_READY_FD once it listens; the workers go into its process group.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ember.h"
#include "err.h"
#include "lcluster.h"

#define START_WAIT_MS 20000   /* the master's start */
#define STOP_WAIT_MS 5000     /* SIGTERM, then SIGKILL */

extern char **environ;

struct lcluster {
    lcluster_opts o;
    char scratch[800];
    pid_t master_pid;
    pid_t *worker_pids;
};

int lcluster_parse_url(const char *s, int *w, int *c, int64_t *mem_mib) {
    if (strncmp(s, "local-cluster[", 14)) return 0;
    long v[3] = {0, 0, 1024};
    int n = 0;
    const char *p = s + 14;
    while (n < 3) {
        char *end;
        if (*p < '0' || *p > '9') break;
        v[n++] = strtol(p, &end, 10);
        p = end;
        if (*p != ',') break;
        p++;
    }
    if (n < 2 || *p != ']' || p[1] || v[0] < 1 || v[0] > 64 || v[1] < 1 || v[1] > 1024 || v[2] < 1 ||
        v[2] > (1L << 30)) {
        em__seterr(EM_EINVAL,
                   "master URL \"%s\": expected local-cluster[W,C] or local-cluster[W,C,M] with W workers (1 to "
                   "64) of C cores (1 to 1024) and M MiB each (default 1024)",
                   s);
        return -1;
    }
    *w = (int)v[0];
    *c = (int)v[1];
    *mem_mib = v[2];
    return 1;
}

/* Spawn this binary in role `role` with args, its stdout and stderr into
 * log, in process group pgid (0: a new one); ready_fd (>= 0) becomes its
 * fd 3 and EMBER_READY_FD.  The pid, or -1 (message set). */
static pid_t spawn_role(lcluster *lc, const char *role, char *const args[], const char *log, pid_t pgid,
                        int ready_fd) {
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 8, sizeof *env);
    char v[5][900];
    if (!env) return em__seterr(EM_ENOMEM, "out of memory"), -1;
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "EMBER_ROLE=", 11) && strncmp(environ[i], "EMBER_PARENT_PID=", 17) &&
            strncmp(environ[i], "EMBER_READY_FD=", 15) && strncmp(environ[i], "EMBER_SECRET_FILE=", 18) &&
            strncmp(environ[i], "EMBER_NETWORK_CRYPTO=", 21))
            env[j++] = environ[i];
    snprintf(v[0], sizeof v[0], "EMBER_ROLE=%s", role);
    snprintf(v[1], sizeof v[1], "EMBER_PARENT_PID=%d", (int)getpid());
    env[j++] = v[0];
    env[j++] = v[1];
    if (ready_fd >= 0) {
        snprintf(v[2], sizeof v[2], "EMBER_READY_FD=3");
        env[j++] = v[2];
    }
    if (lc->o.secret) {
        snprintf(v[3], sizeof v[3], "EMBER_SECRET_FILE=%s/secret", lc->scratch);
        env[j++] = v[3];
    }
    if (lc->o.encrypt) {
        snprintf(v[4], sizeof v[4], "EMBER_NETWORK_CRYPTO=1");
        env[j++] = v[4];
    }
    env[j] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (ready_fd >= 0) posix_spawn_file_actions_adddup2(&fa, ready_fd, 3);
    posix_spawnattr_setpgroup(&at, pgid);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", &fa, &at, args, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(env);
    if (rc) {
        em__seterr(EM_EIO, "local-cluster: cannot start the %s: %s", role, strerror(rc));
        return -1;
    }
    return pid;
}

/* The last lines of a daemon's log, for a start-up failure's message. */
static void log_tail(const char *path, char *out, size_t cap) {
    out[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    off_t end = lseek(fd, 0, SEEK_END);
    off_t from = end > (off_t)(cap - 1) ? end - (off_t)(cap - 1) : 0;
    ssize_t r = pread(fd, out, (size_t)(end - from), from);
    close(fd);
    out[r > 0 ? r : 0] = 0;
}

/* Start the master, then the workers: 0, or an error (message set), what
 * started left for lcluster_stop. */
static int start_daemons(lcluster *lc, int *mport) {
    int p[2];
    char log[900], line[64], tail[400], master_url[128];
    if (pipe2(p, O_CLOEXEC)) return em__seterr(EM_EIO, "local-cluster: pipe: %s", strerror(errno));
    snprintf(log, sizeof log, "%s/master.log", lc->scratch);
    char retries[64];
    snprintf(retries, sizeof retries, "ember.deploy.maxExecutorRetries=%d", lc->o.max_exec_retries);
    char *margs[] = {"ember-master", "--host", "127.0.0.1", "--port", "0", "--webui-port", "0", "--conf", retries, NULL};
    lc->master_pid = spawn_role(lc, "master", margs, log, 0, p[1]);
    close(p[1]);
    if (lc->master_pid < 0) {
        lc->master_pid = 0;
        close(p[0]);
        return EM_EIO;
    }
    /* Its ports, once it listens (or nothing, if it dies). */
    struct pollfd pf = {p[0], POLLIN, 0};
    ssize_t n = 0;
    if (poll(&pf, 1, START_WAIT_MS) == 1) n = read(p[0], line, sizeof line - 1);
    close(p[0]);
    line[n > 0 ? n : 0] = 0;
    if (n <= 0 || sscanf(line, "%d", mport) != 1) {
        log_tail(log, tail, sizeof tail);
        return em__seterr(EM_EIO, "local-cluster: the master did not start: %s", tail[0] ? tail : "(no output)");
    }
    snprintf(master_url, sizeof master_url, "ember://127.0.0.1:%d", *mport);
    if (!(lc->worker_pids = calloc((size_t)lc->o.workers, sizeof(pid_t))))
        return em__seterr(EM_ENOMEM, "out of memory");
    for (int i = 0; i < lc->o.workers; i++) {
        char cores[16], mem[32], dir[900];
        snprintf(cores, sizeof cores, "%d", lc->o.cores);
        snprintf(mem, sizeof mem, "%lldm", (long long)lc->o.mem_mib);
        snprintf(dir, sizeof dir, "%s/worker-%d", lc->scratch, i);
        snprintf(log, sizeof log, "%s/worker-%d.log", lc->scratch, i);
        /* The shuffle service on any free port (workers of one machine, and
         * tests running side by side, never collide), on when the
         * application uses it. */
        char *wargs[] = {"ember-worker", "--cores", cores, "--memory", mem, "--work-dir", dir, "--webui-port", "0",
                         "--conf", "ember.shuffle.service.port=0", "--conf",
                         lc->o.service ? "ember.shuffle.service.enabled=true" : "ember.shuffle.service.enabled=false",
                         master_url, NULL};
        pid_t pid = spawn_role(lc, "worker", wargs, log, lc->master_pid, -1);
        if (pid < 0) return EM_EIO;
        lc->worker_pids[i] = pid;
    }
    return 0;
}

lcluster *lcluster_start(const lcluster_opts *o, int *mport) {
    lcluster *lc = calloc(1, sizeof *lc);
    if (!lc) return em__seterr(EM_ENOMEM, "out of memory"), NULL;
    lc->o = *o;
    snprintf(lc->scratch, sizeof lc->scratch, "%s", o->scratch);
    lc->o.scratch = lc->scratch;
    if (start_daemons(lc, mport)) {
        lcluster_stop(lc); /* leaves the message as it is */
        return NULL;
    }
    return lc;
}

/* Wait for pid to end, up to ms; 1 when it did. */
static int wait_pid(pid_t pid, int ms) {
    for (int waited = 0;; waited += 10) {
        pid_t r = waitpid(pid, NULL, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD)) return 1;
        if (waited >= ms) return 0;
        struct timespec t = {0, 10 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
}

void lcluster_stop(lcluster *lc) {
    if (!lc) return;
    for (int i = 0; lc->worker_pids && i < lc->o.workers; i++)
        if (lc->worker_pids[i] > 0) kill(lc->worker_pids[i], SIGTERM);
    for (int i = 0; lc->worker_pids && i < lc->o.workers; i++)
        if (lc->worker_pids[i] > 0 && !wait_pid(lc->worker_pids[i], STOP_WAIT_MS)) {
            kill(lc->worker_pids[i], SIGKILL);
            wait_pid(lc->worker_pids[i], STOP_WAIT_MS);
        }
    if (lc->master_pid > 0) {
        kill(lc->master_pid, SIGTERM);
        if (!wait_pid(lc->master_pid, STOP_WAIT_MS)) {
            kill(lc->master_pid, SIGKILL);
            wait_pid(lc->master_pid, STOP_WAIT_MS);
        }
    }
    free(lc->worker_pids);
    free(lc);
}
