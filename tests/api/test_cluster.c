/*
 * test_cluster.c -- cluster mode with real processes on 127.0.0.1: tasks
 * run in executor processes that workers started; a driver killed with
 * SIGKILL leaves no daemon or executor behind (checked by PID); a job with
 * no worker to run on fails after ember.scheduler.maxRegisteredWait with
 * the reason; an executor started from another binary is refused, with a
 * message that fails the job.  Every process a test starts is stopped and
 * waited for by PID.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

extern char **environ;

static int fn_pid(const em_rec *in, em_emitter *out, const void *arg) { return em_emit_i64(out, (int64_t)getpid()); }

/* fn_double_i64's values, for want_range. */
static int64_t times2(int64_t v) { return 2 * v; }

/* Whether this call made the marker file at path (it did not exist): the
 * first of the attempts racing for it, across processes. */
static int made_marker(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return 0;
    close(fd);
    return 1;
}

/* Start `exe` (NULL: this test binary) in a role, with extra environment
 * variables; fd 3 of the child is ready_fd when >= 0.  Its pid or -1. */
static pid_t spawn_role(const char *exe, const char *role, char *const args[], const char *const *extra, int ready_fd,
                        const char *log) {
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 16, sizeof *env);
    char rolev[64];
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "EMBER_", 6)) env[j++] = environ[i];
    snprintf(rolev, sizeof rolev, "EMBER_ROLE=%s", role);
    env[j++] = rolev;
    for (int i = 0; extra && extra[i]; i++) env[j++] = (char *)extra[i];
    env[j] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (ready_fd >= 0) posix_spawn_file_actions_adddup2(&fa, ready_fd, 3);
    pid_t pid;
    int rc = posix_spawn(&pid, exe ? exe : "/proc/self/exe", &fa, NULL, args, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    return rc ? -1 : pid;
}

/* A master of our own (this binary in its role); its port, or -1. */
static pid_t start_master(int *port) {
    int p[2];
    if (pipe2(p, O_CLOEXEC)) return -1;
    char *args[] = {"ember-master", "--port", "0", "--webui-port", "0", NULL};
    const char *extra[] = {"EMBER_READY_FD=3", NULL};
    pid_t pid = spawn_role(NULL, "master", args, extra, p[1], tmp_path("master.log"));
    close(p[1]);
    char line[64] = "";
    struct pollfd pf = {p[0], POLLIN, 0};
    ssize_t k = poll(&pf, 1, 20000) == 1 ? read(p[0], line, sizeof line - 1) : -1;
    close(p[0]);
    if (pid < 0 || k <= 0 || sscanf(line, "%d", port) != 1) {
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        return -1;
    }
    return pid;
}

static int stop_pid(pid_t pid) {
    int st = 0;
    kill(pid, SIGTERM);
    for (int i = 0; i < 500; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid) return st;
        struct timespec t = {0, 10000000};
        nanosleep(&t, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return st;
}

/* A local-cluster context with the application's settings in kv (pairs,
 * NULL-terminated). */
static em_ctx *open_cluster_kv(const char *master, const char *const *kv) {
    em_conf *conf = em_conf_new();
    test_conf_set(conf, "ember.local.dir", test_scratchdir());
    for (; kv && kv[0]; kv += 2) test_conf_set(conf, kv[0], kv[1]);
    em_ctx *c = em_open(master, conf);
    if (!c) fprintf(stderr, "  em_open(%s): %s\n", master, em_errmsg());
    em_conf_free(conf);
    return c;
}

static em_ctx *open_cluster(const char *master, const char *k1, const char *v1, const char *k2, const char *v2) {
    const char *kv[] = {k1, v1, k1 ? k2 : NULL, v2, NULL};
    return open_cluster_kv(master, kv);
}

/* The parent pid of a process, from /proc; -1 when it is gone. */
static pid_t parent_of(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *rp = strrchr(buf, ')');
    char state;
    int ppid;
    if (!rp || sscanf(rp + 2, "%c %d", &state, &ppid) != 2) return -1;
    return state == 'Z' || state == 'X' ? -1 : (pid_t)ppid;
}

TEST(cluster_tasks_run_in_executor_processes) {
    em_ctx *c = open_cluster("local-cluster[2,1,512]", NULL, NULL, NULL, NULL);
    CHECK(c);
    em_batch *b;
    CHECK_OK(em_collect(em_map(em_range(c, 0, 8, 1, 8), fn_pid, NULL, 0), &b));
    size_t pos = 0;
    em_rec r;
    int n = 0;
    while (em_batch_next(b, &pos, &r) == 1) {
        pid_t pid = (pid_t)rec_i64(&r);
        CHECK(pid != getpid());
        /* An executor, child of a worker, child of this driver. */
        pid_t worker = parent_of(pid);
        CHECK(worker > 0 && parent_of(worker) == getpid());
        n++;
    }
    CHECK_EQ_I64(n, 8);
    em_batch_free(b);
    CHECK_EQ_I64(em_cores(c), 2);
    em_close(c);
}

TEST(cluster_sigkill_driver_leaves_no_process) {
    int p[2];
    CHECK(pipe(p) == 0);
    /* The killed driver's scratch directory is made here, so that this
     * test's cleanup removes it. */
    test_scratchdir();
    pid_t drv = fork();
    CHECK(drv >= 0);
    if (drv == 0) {
        close(p[0]);
        em_ctx *c = open_cluster("local-cluster[2,1,512]", NULL, NULL, NULL, NULL);
        em_batch *b;
        if (!c || em_collect(em_map(em_range(c, 0, 4, 1, 4), fn_pid, NULL, 0), &b)) _exit(1);
        size_t pos = 0;
        em_rec r;
        char line[64];
        while (em_batch_next(b, &pos, &r) == 1) {
            int k = snprintf(line, sizeof line, "%lld\n", (long long)rec_i64(&r));
            if (write(p[1], line, (size_t)k) != k) _exit(1);
        }
        /* The daemons: this process's children. */
        char path[64], buf[4096];
        snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)getpid(), (int)getpid());
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        buf[n] = 0;
        /* Children of the io loop's thread, which started them: every task. */
        char cmd[128];
        snprintf(cmd, sizeof cmd, "cat /proc/%d/task/*/children", (int)getpid());
        FILE *pf = popen(cmd, "r");
        n = pf ? fread(buf, 1, sizeof buf - 1, pf) : 0;
        if (pf) pclose(pf);
        buf[n] = 0;
        for (char *t = strtok(buf, " \n"); t; t = strtok(NULL, " \n")) {
            int k = snprintf(line, sizeof line, "%s\n", t);
            if (write(p[1], line, (size_t)k) != k) _exit(1);
        }
        if (write(p[1], "end\n", 4) != 4) _exit(1);
        for (;;) pause();
    }
    close(p[1]);
    FILE *in = fdopen(p[0], "r");
    CHECK(in);
    char line[64];
    pid_t pids[64];
    int n = 0, ended = 0;
    while (n < 64 && fgets(line, sizeof line, in)) {
        if (!strcmp(line, "end\n")) {
            ended = 1;
            break;
        }
        pid_t v = (pid_t)atol(line);
        int dup = 0;
        for (int i = 0; i < n; i++) dup |= pids[i] == v;
        if (v > 0 && !dup && v != drv) pids[n++] = v;
    }
    fclose(in);
    kill(drv, SIGKILL);
    waitpid(drv, NULL, 0);
    CHECK(ended);
    CHECK(n >= 4); /* a master, two workers, one executor at least */
    /* Every one of them dies (parent-death signals down the tree). */
    int alive = n;
    for (int tries = 0; tries < 1000 && alive; tries++) {
        alive = 0;
        for (int i = 0; i < n; i++) alive += parent_of(pids[i]) > 0;
        struct timespec t = {0, 10000000};
        if (alive) nanosleep(&t, NULL);
    }
    for (int i = 0; i < n; i++)
        if (parent_of(pids[i]) > 0) fprintf(stderr, "  pid %d still runs\n", (int)pids[i]);
    CHECK_EQ_I64(alive, 0);
}

TEST(cluster_no_worker_fails_with_reason) {
    int port;
    pid_t m = start_master(&port);
    CHECK(m > 0);
    char url[64];
    snprintf(url, sizeof url, "ember://127.0.0.1:%d", port);
    em_ctx *c = open_cluster(url, "ember.scheduler.maxRegisteredWait", "300ms", NULL, NULL);
    int64_t n = 0;
    int rc = c ? em_count(em_range(c, 0, 10, 1, 2), &n) : -1;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", em_errmsg());
    em_close(c);
    stop_pid(m);
    CHECK(c);
    CHECK_EQ_I64(rc, EM_EEXEC);
    if (!strstr(msg, "Initial job has not accepted any resources") || !strstr(msg, "no alive workers"))
        fprintf(stderr, "  message: %s\n", msg);
    CHECK(strstr(msg, "Initial job has not accepted any resources") && strstr(msg, "no alive workers"));
}

/* A loopback port of the kernel's choice, bound to a socket that does
 * not listen: *fd, or closed when fd is NULL (a port free now, for
 * ember.driver.port). */
static int bound_port(int *fdp) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int port = -1;
    if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof a) && !getsockname(fd, (struct sockaddr *)&a, &len))
        port = ntohs(a.sin_port);
    if (fdp) *fdp = fd;
    else if (fd >= 0) close(fd);
    return port;
}

static int free_port(void) { return bound_port(NULL); }

/* A master URL where nothing listens: em_open says the connection was
 * refused, without the hint about shared secrets (no master closed it).
 * The port stays bound, not listening, until the test ends: no daemon of
 * another test can take it meanwhile. */
TEST(cluster_refused_master_no_secret_hint) {
    int fd = -1, port = bound_port(&fd);
    CHECK(port > 0);
    char url[64];
    snprintf(url, sizeof url, "ember://127.0.0.1:%d", port);
    em_ctx *c = open_cluster(url, NULL, NULL, NULL, NULL);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", em_errmsg());
    em_close(c);
    close(fd);
    CHECK(!c);
    if (strstr(msg, "secret")) fprintf(stderr, "  message: %s\n", msg);
    CHECK(!strstr(msg, "secret"));
    CHECK_STR_CONTAINS(msg, url);
}

TEST(cluster_executor_of_another_binary_refused) {
    /* Another program linked with libember: the worker daemon's binary,
     * next to this test binary's directory. */
    char exe[1024], other[1100];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    CHECK(k > 0);
    exe[k] = 0;
    char *slash = strrchr(exe, '/');
    CHECK(slash);
    *slash = 0;
    snprintf(other, sizeof other, "%s/../bin/ember-worker", exe);
    CHECK(access(other, X_OK) == 0);
    int port, dport = free_port();
    CHECK(dport > 0);
    pid_t m = start_master(&port);
    CHECK(m > 0);
    char url[64], dp[16];
    snprintf(url, sizeof url, "ember://127.0.0.1:%d", port);
    snprintf(dp, sizeof dp, "%d", dport);
    em_ctx *c = open_cluster(url, "ember.driver.port", dp, "ember.scheduler.maxRegisteredWait", "3s");
    pid_t x = -1;
    int rc = -1, st = 0;
    char msg[1024] = "";
    if (c) {
        char durl[64], dir[600];
        snprintf(durl, sizeof durl, "EMBER_DRIVER_URL=127.0.0.1:%d", dport);
        snprintf(dir, sizeof dir, "EMBER_EXECUTOR_DIR=%s", test_tmpdir());
        const char *extra[] = {durl, "EMBER_EXECUTOR_ID=7", "EMBER_EXECUTOR_CORES=1", dir, NULL};
        char *args[] = {"ember-worker", NULL};
        x = spawn_role(other, "executor", args, extra, -1, tmp_path("executor.log"));
        int64_t n;
        rc = em_count(em_range(c, 0, 10, 1, 2), &n);
        snprintf(msg, sizeof msg, "%s", em_errmsg());
        if (x > 0) waitpid(x, &st, 0);
    }
    em_close(c);
    stop_pid(m);
    CHECK(c && x > 0);
    CHECK_EQ_I64(rc, EM_EEXEC);
    if (!strstr(msg, "runs another binary than the driver's")) fprintf(stderr, "  message: %s\n", msg);
    CHECK(strstr(msg, "runs another binary than the driver's"));
    /* The executor ended at once, saying why. */
    size_t len = 0;
    char *log = read_file_all(tmp_path("executor.log"), &len);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 1) fprintf(stderr, "  executor status %d, log:\n%s\n", st, log ? log : "");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    CHECK(log && strstr(log, "the driver refused this executor"));
    free(log);
}

#define SECRET "a shared secret of 32 bytes or more, for tests only"

TEST(cluster_authenticated_encrypted_shuffle) {
    em_ctx *c = open_cluster("local-cluster[2,1,512]", "ember.authenticate.secret", SECRET,
                             "ember.network.crypto.enabled", "true");
    CHECK(c);
    int64_t m = 7;
    em_batch *b;
    /* A shuffle: map outputs travel between executors over sealed
     * connections. */
    CHECK_OK(em_collect(em_reduce_by_key(em_map(em_range(c, 0, 1000, 1, 4), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                         NULL, 0, 3),
                        &b));
    size_t pos = 0;
    em_rec r;
    int64_t total = 0, keys = 0;
    while (em_batch_next(b, &pos, &r) == 1) {
        total += em_i64_dec(r.val);
        keys++;
    }
    em_batch_free(b);
    /* Parallelized records: executors fetch their partitions (1.6 MB each,
     * several sealed parts) from the driver. */
    enum { N = 400000 };
    int64_t *v = malloc(sizeof *v * N);
    CHECK(v);
    for (int i = 0; i < N; i++) v[i] = i;
    int64_t n = 0;
    em_rdd *par = em_parallelize_i64(c, v, N, 2);
    free(v);
    CHECK_OK(em_count(par, &n));
    CHECK_OK(em_reduce(par, fn_sum_i64, NULL, 0, &b));
    CHECK_OK(em_batch_get(b, 0, &r));
    int64_t sum = em_i64_dec(r.val);
    em_batch_free(b);
    em_close(c);
    CHECK_EQ_I64(keys, 7);
    CHECK_EQ_I64(total, 999 * 1000 / 2);
    CHECK_EQ_I64(n, N);
    CHECK_EQ_I64(sum, (int64_t)N * (N - 1) / 2);
}

TEST(cluster_wrong_or_missing_secret_refused) {
    int p[2];
    CHECK(pipe2(p, O_CLOEXEC) == 0);
    char *args[] = {"ember-master", "--port", "0", "--webui-port", "0", "--conf", "ember.authenticate.secret=" SECRET,
                    NULL};
    const char *extra[] = {"EMBER_READY_FD=3", NULL};
    pid_t m = spawn_role(NULL, "master", args, extra, p[1], tmp_path("master.log"));
    close(p[1]);
    char line[64] = "";
    int port = 0;
    struct pollfd pf = {p[0], POLLIN, 0};
    ssize_t k = poll(&pf, 1, 20000) == 1 ? read(p[0], line, sizeof line - 1) : -1;
    close(p[0]);
    CHECK(m > 0);
    if (k <= 0 || sscanf(line, "%d", &port) != 1) {
        stop_pid(m);
        CHECK(!"the master did not start");
    }
    char url[64];
    snprintf(url, sizeof url, "ember://127.0.0.1:%d", port);
    em_ctx *wrong = open_cluster(url, "ember.authenticate.secret", "another secret, also long enough to pass", NULL,
                                 NULL);
    char msg1[1024];
    snprintf(msg1, sizeof msg1, "%s", em_errmsg());
    em_ctx *none = open_cluster(url, NULL, NULL, NULL, NULL);
    char msg2[1024];
    snprintf(msg2, sizeof msg2, "%s", em_errmsg());
    /* The master still serves a client that knows the secret. */
    em_ctx *right = open_cluster(url, "ember.authenticate.secret", SECRET, NULL, NULL);
    em_close(wrong);
    em_close(none);
    em_close(right);
    int st = stop_pid(m);
    size_t len = 0;
    char *log = read_file_all(tmp_path("master.log"), &len);
    CHECK(!wrong && !none && right);
    if (!strstr(msg1, "authentication")) fprintf(stderr, "  wrong secret: %s\n", msg1);
    CHECK(strstr(msg1, "authentication"));
    if (!strstr(msg2, "cannot register the application")) fprintf(stderr, "  no secret: %s\n", msg2);
    CHECK(strstr(msg2, "cannot register the application"));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* The refusal logged at warn with the peer's address and the reason
     * (the one without a secret, from the same address within a second,
     * is counted on the next line from it, not logged). */
    const char *at = log ? strstr(log, "authentication failed: connection from 127.0.0.1:") : NULL;
    const char *bol = at, *eol = at ? strchr(at, '\n') : NULL;
    while (bol && bol > log && bol[-1] != '\n') bol--;
    int warned = at && eol && strstr(bol, " warn ") && strstr(bol, " warn ") < eol && strstr(at, "wrong secret") &&
                 strstr(at, "wrong secret") < eol;
    if (!warned) fprintf(stderr, "  master.log:\n%s\n", log ? log : "(none)");
    free(log);
    CHECK(warned);
}

/* Send bytes to 127.0.0.1:port on a fresh connection and close it. */
static int send_garbage(int port, const void *p, size_t n) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof a) && write(fd, p, n) == (ssize_t)n;
    if (fd >= 0) close(fd);
    return ok ? 0 : -1;
}

TEST(cluster_driver_port_survives_garbage) {
    int dport = free_port();
    CHECK(dport > 0);
    char dp[16];
    snprintf(dp, sizeof dp, "%d", dport);
    em_ctx *c = open_cluster("local-cluster[1,1,512]", "ember.driver.port", dp, NULL, NULL);
    CHECK(c);
    int64_t n = 0;
    CHECK_OK(em_count(em_range(c, 0, 100, 1, 2), &n));
    CHECK_EQ_I64(n, 100);
    uint8_t rnd[4096];
    srand(7);
    for (size_t i = 0; i < sizeof rnd; i++) rnd[i] = (uint8_t)rand();
    const uint8_t huge[] = {0xff, 0xff, 0xff, 0xf0, 1};       /* a frame claiming 4 GB */
    const uint8_t cut[] = {0, 0, 0, 40, 1, 0x95, 1, 2};        /* a frame cut short */
    const uint8_t badtype[] = {0, 0, 0, 1, 99, 0};             /* an unknown frame type */
    const uint8_t notmsg[] = {0, 0, 0, 3, 1, 0xc1, 0xc1, 0xc1}; /* not msgpack */
    CHECK_OK(send_garbage(dport, rnd, sizeof rnd));
    CHECK_OK(send_garbage(dport, huge, sizeof huge));
    CHECK_OK(send_garbage(dport, cut, sizeof cut));
    CHECK_OK(send_garbage(dport, badtype, sizeof badtype));
    CHECK_OK(send_garbage(dport, notmsg, sizeof notmsg));
    /* A client that sends a byte and stays: it holds one connection. */
    int slow = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)dport);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(slow >= 0 && !connect(slow, (struct sockaddr *)&a, sizeof a) && write(slow, huge, 1) == 1);
    /* The driver serves the next job, on the same executors. */
    em_batch *b;
    CHECK_OK(em_collect(em_map(em_range(c, 0, 4, 1, 4), fn_double_i64, NULL, 0), &b));
    int exact = expect_range(b, 4, times2, "the job after the garbage");
    em_batch_free(b);
    CHECK(exact);
    CHECK_OK(em_collect(em_range(c, 0, 100, 1, 2), &b));
    exact = expect_range(b, 100, NULL, "the next job");
    em_batch_free(b);
    CHECK(exact);
    close(slow);
    em_close(c);
}

TEST(cluster_max_result_size) {
    em_ctx *c = open_test_ctx_with("ember.driver.maxResultSize", "16k");
    CHECK(c);
    em_batch *b = NULL;
    /* 10,000 records of 8 bytes (and their lengths) in 4 results: past 16 KiB. */
    int rc = em_collect(em_range(c, 0, 10000, 1, 4), &b);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", em_errmsg());
    CHECK_EQ_I64(rc, EM_ETOOBIG);
    if (!strstr(msg, "ember.driver.maxResultSize")) fprintf(stderr, "  message: %s\n", msg);
    CHECK(strstr(msg, "is bigger than ember.driver.maxResultSize (16384 bytes)"));
    /* Small results still come back. */
    int64_t n = 0;
    CHECK_OK(em_count(em_range(c, 0, 10000, 1, 4), &n));
    CHECK_EQ_I64(n, 10000);
    em_close(c);
}

/* i -> (i, 1000 bytes that do not compress, derived from i). */
static int fn_wide_pair(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t i = rec_i64(in);
    uint8_t k[8], v[1000];
    uint64_t s = (uint64_t)i * 0x9E3779B97F4A7C15ull + 1;
    for (size_t j = 0; j < sizeof v; j++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        v[j] = (uint8_t)s;
    }
    em_i64_enc(i, k);
    return em_emit_pair(out, k, 8, v, sizeof v);
}

/* Segments of many megabytes between executors: each goes out a chunk at
 * a time as the connection drains, and arrives whole. */
TEST(cluster_large_segments_stream) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    /* 30,000 records of about 1 KB in 2 maps, to 1 reducer: 15 MB segments. */
    em_batch *b;
    CHECK_OK(em_collect(em_sort_by_key(em_map(em_range(c, 0, 30000, 1, 2), fn_wide_pair, NULL, 0), 1, 1), &b));
    size_t pos = 0;
    em_rec r;
    int64_t n = 0, prev = -1, ok = 1;
    while (em_batch_next(b, &pos, &r) == 1) {
        int64_t k = em_i64_dec(r.key);
        ok &= k == prev + 1 && r.vlen == 1000;
        prev = k;
        n++;
    }
    em_batch_free(b);
    em_close(c);
    CHECK_EQ_I64(n, 30000);
    CHECK(ok);
}

/* The driver's settings reach its executors (through the master and the
 * worker): with a 64 KiB ember.rpc.message.maxSize the binary goes out in
 * chunks that fit, and a 180 KB result comes back in result_part messages
 * that fit (an executor with the default 128 MiB would send one frame the
 * driver refuses); with ember.reducer.maxSizeInFlight of 1 KiB segments are
 * fetched one at a time, with the same result.  A result streamed past
 * ember.driver.maxResultSize fails its task, naming the setting. */
/* reduce_by_key of (i % 100, i) over 0..19999 on 4 maps and 3 reducers:
 * 1 when the 100 sums are exact (a message says what came instead). */
static int mod_sums_exact(em_ctx *c) {
    int64_t m = 100;
    em_batch *b = NULL;
    if (em_collect(em_reduce_by_key(em_map(em_range(c, 0, 20000, 1, 4), fn_mod_key, &m, sizeof m), fn_sum_i64, NULL,
                                    0, 3),
                   &b)) {
        fprintf(stderr, "  reduce_by_key: %s\n", em_errmsg());
        return 0;
    }
    int exact = expect_mod_sums(b, 20000, 100, "reduce_by_key");
    em_batch_free(b);
    return exact;
}

TEST(cluster_executors_take_the_drivers_settings) {
    em_ctx *c = open_cluster("local-cluster[2,1,512]", "ember.rpc.message.maxSize", "64k",
                             "ember.reducer.maxSizeInFlight", "1k");
    CHECK(c);
    CHECK(mod_sums_exact(c));
    /* 20,000 records in one partition: a result of about 180 KB. */
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_range(c, 0, 20000, 1, 1), &b));
    size_t pos = 0;
    em_rec r;
    int64_t n = 0, ok = 1;
    while (em_batch_next(b, &pos, &r) == 1) ok &= rec_i64(&r) == n++;
    em_batch_free(b);
    CHECK_EQ_I64(n, 20000);
    CHECK(ok);
    em_close(c);
    c = open_cluster("local-cluster[1,1,512]", "ember.rpc.message.maxSize", "64k", "ember.driver.maxResultSize",
                     "100k");
    CHECK(c);
    b = NULL;
    CHECK(em_collect(em_range(c, 0, 20000, 1, 1), &b) < 0);
    CHECK_STR_CONTAINS(em_errmsg(), "more than ember.driver.maxResultSize (102400 bytes)");
    em_close(c);
}

/* The first call (on record 0) writes its executor's pid to the file named
 * by arg and stops that whole executor with SIGSTOP: its connection stays
 * open, only its heartbeats stop. */
static int fn_stop_executor_once(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t v = rec_i64(in);
    if (v == 0) {
        int fd = open((const char *)arg, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd >= 0) {
            char s[32];
            int n = snprintf(s, sizeof s, "%d\n", (int)getpid());
            if (write(fd, s, (size_t)n) != n) return em_fail("cannot write the pid");
            close(fd);
            raise(SIGSTOP);
        }
    }
    return em_emit_i64(out, v);
}

/* An executor stopped with SIGSTOP mid-job (speculation off): the driver
 * hears no heartbeat for ember.network.timeout, declares it lost, its
 * attempts run again on the other executor and the answer is exact; its
 * worker kills the stopped process (checked by PID). */
TEST(cluster_stopped_executor_lost_by_heartbeat) {
    em_ctx *c = open_cluster("local-cluster[2,1,512]", "ember.network.timeout", "1500ms",
                             "ember.executor.heartbeatInterval", "100ms");
    CHECK(c);
    const char *marker = tmp_path("stopped.pid");
    em_batch *b = NULL;
    em_stats s0, s1;
    em_get_stats(c, &s0);
    CHECK_OK(em_collect(em_map(em_range(c, 0, 8, 1, 8), fn_stop_executor_once, marker, strlen(marker) + 1), &b));
    em_get_stats(c, &s1);
    int exact = expect_range(b, 8, NULL, "the values after the stopped executor");
    em_batch_free(b);
    CHECK(exact);
    /* The stopped attempt, the one its executor of one core ran. */
    CHECK_EQ_I64(s1.tasks_failed - s0.tasks_failed, 1);
    FILE *f = fopen(marker, "r");
    int pid = 0;
    CHECK(f && fscanf(f, "%d", &pid) == 1 && pid > 0);
    fclose(f);
    /* Killed by its worker (SIGTERM, then SIGKILL after the grace): gone
     * well before em_close would take it with the worker. */
    int gone = 0;
    for (int i = 0; i < 400 && !gone; i++) {
        gone = parent_of(pid) < 0;
        if (!gone) usleep(50 * 1000);
    }
    if (!gone) kill(pid, SIGKILL); /* leave nothing behind, then fail */
    CHECK(gone);
    em_close(c);
    /* A heartbeat interval not below the timeout is refused, naming both. */
    c = open_cluster("local-cluster[1,1,512]", "ember.network.timeout", "1s", "ember.executor.heartbeatInterval",
                     "1s");
    CHECK(!c);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.executor.heartbeatInterval (1000 ms) must be less than "
                                    "ember.network.timeout (1000 ms)");
}

/* Segments read by the reduce tasks of mod_sums_exact's job on c, fetched
 * over the network (*fetched) and read from another executor's files on
 * the same host (*near), over up to 20 jobs until one reads across
 * executors (*crossed: both executors hold map outputs some reducer of the
 * other read); every job's answer must be exact. */
static int both_executors_up(em_ctx *c);

static int cross_reads(em_ctx *c, int64_t *fetched, int64_t *near, int *crossed) {
    *fetched = *near = 0;
    *crossed = 0;
    if (!both_executors_up(c)) return 0;
    for (int i = 0; i < 20 && !*crossed; i++) {
        em_stats s0, s1;
        em_get_stats(c, &s0);
        if (!mod_sums_exact(c)) return 0;
        em_get_stats(c, &s1);
        *fetched += s1.shuffle_segments_fetched - s0.shuffle_segments_fetched;
        *near += s1.shuffle_segments_host_local - s0.shuffle_segments_host_local;
        *crossed = *fetched + *near > 0;
    }
    return 1;
}

/* ember.shuffle.readHostLocalDisk (on by default): the executors of
 * local-cluster share a host, so a reducer reads the other executor's map
 * outputs from their files and fetches none, with the worker's shuffle
 * service and without it; off, it fetches them through the service. */
TEST(cluster_host_local_reads_skip_the_network) {
    /* The defaults; without the service; host-local reads off. */
    static const char *const key[] = {NULL, "ember.shuffle.service.enabled", "ember.shuffle.readHostLocalDisk"};
    for (int i = 0; i < 3; i++) {
        int64_t fetched, near;
        int crossed;
        em_ctx *c = open_cluster("local-cluster[2,1,512]", key[i], key[i] ? "false" : NULL, NULL, NULL);
        CHECK(c);
        CHECK(cross_reads(c, &fetched, &near, &crossed));
        CHECK(crossed);
        if (i < 2) {
            CHECK_EQ_I64(fetched, 0);
            CHECK(near > 0);
        } else {
            CHECK(fetched > 0);
            CHECK_EQ_I64(near, 0);
        }
        em_close(c);
    }
}

/* partition_by of (i % 100, i) over 0..19999 on 4 maps and 3 reducers, on
 * c once both of its executors run tasks: 1 when every i came back
 * exactly once, under its key (a message says what came instead), with
 * what the job cost in *d (every em_stats count, as a difference).  No
 * map-side combining: each segment holds about 1,700 records, so that
 * with ember.reducer.maxSizeInFlight at 1k a reducer has one request in
 * flight at a time. */
static int pairs_exact(em_ctx *c, em_stats *d) {
    if (!both_executors_up(c)) return 0;
    em_stats s0, s1;
    em_get_stats(c, &s0);
    int64_t m = 100, n = 20000, got = 0, bad = 0;
    em_batch *b = NULL;
    if (em_collect(em_partition_by(em_map(em_range(c, 0, n, 1, 4), fn_mod_key, &m, sizeof m), 3), &b)) {
        fprintf(stderr, "  partition_by: %s\n", em_errmsg());
        return 0;
    }
    em_get_stats(c, &s1);
    char *seen = calloc((size_t)n, 1);
    size_t pos = 0;
    em_rec r;
    while (seen && em_batch_next(b, &pos, &r) == 1) {
        int64_t k = em_i64_dec(r.key), v = em_i64_dec(r.val);
        got++;
        if (v < 0 || v >= n || k != v % m || seen[v]++) bad++;
    }
    em_batch_free(b);
    free(seen);
    const int64_t *a0 = (const int64_t *)&s0, *a1 = (const int64_t *)&s1;
    int64_t *out = (int64_t *)d;
    for (size_t i = 0; i < sizeof *d / sizeof(int64_t); i++) out[i] = a1[i] - a0[i];
    if (got == n && !bad) return 1;
    fprintf(stderr, "  partition_by: %lld records, %lld duplicated, out of range or under a wrong key\n",
            (long long)got, (long long)bad);
    return 0;
}

/* Fetches with the driver's segment sizes highly compressed (a map
 * output's segments at their average, or, all huge, a byte each): the
 * reader takes each length from its server's answer, and the window of
 * fetches in flight counts the estimates, so every record arrives once. */
TEST(cluster_fetches_with_estimated_sizes) {
    static const char *const threshold[] = {"1", "1g"};
    for (int t = 0; t < 2; t++) {
        const char *kv[] = {"ember.shuffle.minNumPartitionsToHighlyCompress", "2",
                            "ember.shuffle.accurateBlockThreshold", threshold[t],
                            "ember.shuffle.readHostLocalDisk", "false",
                            "ember.reducer.maxSizeInFlight", "1k", NULL};
        em_ctx *c = open_cluster_kv("local-cluster[2,1,512]", kv);
        CHECK(c);
        em_stats d;
        CHECK(pairs_exact(c, &d));
        CHECK(d.shuffle_segments_fetched > 0);
        CHECK_EQ_I64(d.tasks_failed, 0);
        em_close(c);
    }
}

/* A segment request whose connection drops (the fault hook makes each
 * executor's server drop its first one) is sent again on a new connection:
 * no task fails and no map output is recomputed.  With retries off, the
 * same drop is a fetch failure: the map output is recomputed, and the
 * answer is still exact.
 *
 * How many servers drop a request: one per executor asked for a segment.
 * Each executor runs at least one of the 4 maps and, in practice, one of
 * the 3 reducers, so both are, but nothing makes the scheduler give the
 * second executor a reducer (it may run all three on one while the other
 * is busy): 1 or 2 drops.  Whatever their number, each is one fault fired,
 * one connection dropped and (one request in flight per reducer) one
 * request retried. */
TEST(cluster_fetch_retried_after_dropped_connection) {
    /* (Fetches from executors' own servers: the worker's shuffle service
     * has no fault hook; and fetched, not read from the other executor's
     * files.) */
    const char *kv[] = {"ember.test.faults", "dropfetch:n=1", "ember.shuffle.service.enabled", "false",
                        "ember.shuffle.readHostLocalDisk", "false", "ember.reducer.maxSizeInFlight", "1k", NULL};
    em_ctx *c = open_cluster_kv("local-cluster[2,1,512]", kv);
    CHECK(c);
    em_stats d;
    CHECK(pairs_exact(c, &d));
    CHECK(d.faults_fired == 1 || d.faults_fired == 2);
    CHECK_EQ_I64(d.shuffle_fetch_conns_dropped, d.faults_fired);
    CHECK_EQ_I64(d.shuffle_fetch_retries, d.faults_fired);
    CHECK_EQ_I64(d.tasks_failed, 0);
    CHECK_EQ_I64(d.stage_attempts_failed, 0);
    CHECK_EQ_I64(d.map_tasks_run, 4);
    CHECK_EQ_I64(d.tasks_run, 7);
    /* The servers drop no more: the same job again costs nothing extra. */
    CHECK(pairs_exact(c, &d));
    CHECK_EQ_I64(d.faults_fired, 0);
    CHECK_EQ_I64(d.shuffle_fetch_conns_dropped, 0);
    CHECK_EQ_I64(d.shuffle_fetch_retries, 0);
    CHECK_EQ_I64(d.tasks_run, 7);
    em_close(c);
    const char *kv0[] = {"ember.test.faults", "dropfetch:n=1", "ember.shuffle.service.enabled", "false",
                         "ember.shuffle.readHostLocalDisk", "false", "ember.reducer.maxSizeInFlight", "1k",
                         "ember.shuffle.io.maxRetries", "0", NULL};
    c = open_cluster_kv("local-cluster[2,1,512]", kv0);
    CHECK(c);
    CHECK(pairs_exact(c, &d));
    CHECK(d.faults_fired == 1 || d.faults_fired == 2);
    CHECK_EQ_I64(d.shuffle_fetch_retries, 0);
    /* Each drop a reducer reports (its attempt's result counts the
     * dropped connection) fails that attempt and loses the one map output
     * it was fetching (the reader's check fetches the others of that
     * executor, which its server no longer drops): that map runs again.
     * The reducer running on the other executor then (one core each: one
     * at most) fails too if it reads that output after the driver removed
     * it and before it is made again (not a new loss: no map runs for it).
     * A server's drop is counted when it happens (faults_fired), a
     * reader's only with its attempt's result, and a second drop's reader
     * may not end as a failure of its own: its attempt may be killed
     * (counted as killed, the drop with it, no map run again for it), or
     * end after its stage attempt already failed.  So 1 to faults_fired
     * drops are reported, the first always with a failed attempt and a
     * map run again, and the counts below lie between what one drop and
     * what every drop would cause.  Two drops fail one stage attempt when
     * both strike reducers of the first, two when the second strikes the
     * stage's next attempt. */
    int64_t drops = d.shuffle_fetch_conns_dropped;
    CHECK(drops >= 1 && drops <= d.faults_fired);
    CHECK(d.tasks_failed >= 1 && d.tasks_failed + d.tasks_killed >= drops && d.tasks_failed <= 2 * d.faults_fired);
    CHECK(d.map_tasks_run >= 4 + 1 && d.map_tasks_run <= 4 + d.faults_fired);
    CHECK(d.tasks_run - d.map_tasks_run >= 3 + d.tasks_failed &&
          d.tasks_run - d.map_tasks_run <= 3 + d.tasks_failed + d.tasks_killed + (d.faults_fired - drops));
    CHECK(d.stage_attempts_failed >= 1 && d.stage_attempts_failed <= d.faults_fired);
    em_close(c);
}

/* ------------------------------------------------------- lost executors */

/* v == 3 kills its own executor with SIGKILL, once (the first to create
 * the marker file arg): a kill from outside as far as the driver knows. */
static int fn_kill_executor_once(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t v = rec_i64(in);
    if (v == 3) {
        if (made_marker(arg)) raise(SIGKILL);
    }
    return em_emit_i64(out, v);
}

/* v == 3 aborts its executor, every time: the task's own crash. */
static int fn_abort_on_3(const em_rec *in, em_emitter *out, const void *arg) {
    if (rec_i64(in) == 3) abort();
    return em_emit_i64(out, rec_i64(in));
}

/* Run jobs until both executors of a local-cluster[2,1] have run tasks
 * (the scheduler knows both): 1 or 0. */
static int both_executors_up(em_ctx *c) {
    for (int i = 0; i < 100; i++) {
        em_batch *pb = NULL;
        if (em_collect(em_map(em_range(c, 0, 8, 1, 8), fn_pid, NULL, 0), &pb)) return 0;
        size_t pos = 0;
        em_rec r;
        int64_t first = -1;
        int two = 0;
        while (em_batch_next(pb, &pos, &r) == 1) {
            if (first < 0) first = rec_i64(&r);
            two |= rec_i64(&r) != first;
        }
        em_batch_free(pb);
        if (two) return 1;
        usleep(50 * 1000);
    }
    return 0;
}

/* The distinct executor processes the tasks of one job over 8 partitions
 * ran in. */
static int pids_of_first_job(em_ctx *c) {
    em_batch *b = NULL;
    if (em_collect(em_map(em_range(c, 0, 8, 1, 8), fn_pid, NULL, 0), &b)) return -1;
    size_t pos = 0;
    em_rec r;
    int64_t seen[8];
    int n = 0;
    while (em_batch_next(b, &pos, &r) == 1) {
        int64_t p = rec_i64(&r);
        int k = 0;
        while (k < n && seen[k] != p) k++;
        if (k == n && n < 8) seen[n++] = p;
    }
    em_batch_free(b);
    return n;
}

/* ember.scheduler.minRegisteredResourcesRatio of ember.cores.max: em_open
 * returns once both executors have registered, so the first job's first
 * round of offers has a slot on each (it cannot run all on the first to
 * come).  Expected cores that never come: scheduling begins after
 * maxRegisteredResourcesWaitingTime, on those there are. */
TEST(cluster_min_registered_ratio_waits_for_cores) {
    const char *all[] = {"ember.cores.max", "2", "ember.scheduler.minRegisteredResourcesRatio", "1", NULL};
    em_ctx *c = open_cluster_kv("local-cluster[2,1,512]", all);
    CHECK(c);
    CHECK_EQ_I64(pids_of_first_job(c), 2);
    em_close(c);
    const char *more[] = {"ember.cores.max", "3", "ember.scheduler.minRegisteredResourcesRatio", "1",
                          "ember.scheduler.maxRegisteredResourcesWaitingTime", "200ms", NULL};
    CHECK((c = open_cluster_kv("local-cluster[2,1,512]", more)));
    CHECK(pids_of_first_job(c) >= 1);
    em_close(c);
    em_conf *bad = em_conf_new();
    CHECK(em_conf_set(bad, "ember.scheduler.minRegisteredResourcesRatio", "1.5") == EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.scheduler.minRegisteredResourcesRatio");
    em_conf_free(bad);
}

/* An executor killed from outside (SIGKILL) mid-stage: its attempts run
 * again elsewhere without counting as task failures, so the job succeeds
 * even with ember.task.maxFailures = 1. */
TEST(cluster_killed_executor_not_a_task_failure) {
    em_ctx *c = open_cluster("local-cluster[2,1,512]", "ember.task.maxFailures", "1", NULL, NULL);
    CHECK(c);
    CHECK(both_executors_up(c));
    const char *marker = tmp_path("killed.marker");
    em_batch *b = NULL;
    em_stats s0, s1;
    em_get_stats(c, &s0);
    CHECK_OK(em_collect(em_map(em_range(c, 0, 8, 1, 8), fn_kill_executor_once, marker, strlen(marker) + 1), &b));
    em_get_stats(c, &s1);
    int exact = expect_range(b, 8, NULL, "the values after the killed executor");
    em_batch_free(b);
    CHECK(exact);
    /* The killed attempt ended, the one its executor of one core ran. */
    CHECK_EQ_I64(s1.tasks_failed - s0.tasks_failed, 1);
    CHECK(access(marker, F_OK) == 0);
    em_close(c);
}

/* An executor killed while a reduce stage runs, without the worker's
 * shuffle service: the map outputs it held are forgotten at once and
 * recomputed, and the sums are exact. */
/* The marker made (once), holding the pid of the process that made it. */
static int made_pid_marker(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return 0;
    char b[32];
    int n = snprintf(b, sizeof b, "%d\n", (int)getpid());
    int ok = write(fd, b, (size_t)n) == n;
    close(fd);
    return ok;
}

static int fn_kill_on_key0(const em_rec *in, em_emitter *out, const void *arg) {
    if (em_i64_dec(in->key) == 0) {
        if (made_pid_marker(arg)) raise(SIGKILL);
    }
    return em_emit_pair(out, in->key, in->klen, in->val, in->vlen);
}

/* fn_mod_key with m = 10 over the 6 partitions of [0, n) that also notes,
 * at each partition's first value (n * p / 6), the pid of the process
 * that ran the partition's first attempt: DIR/map-P.pid, made once. */
typedef struct where_arg {
    int64_t n;
    char dir[600];
} where_arg;

static int fn_mod_key_where(const em_rec *in, em_emitter *out, const void *arg) {
    const where_arg *a = arg;
    int64_t v = rec_i64(in), m = 10;
    for (int p = 0; p < 6; p++)
        if (v == a->n * p / 6) {
            char path[700];
            snprintf(path, sizeof path, "%s/map-%d.pid", a->dir, p);
            made_pid_marker(path);
        }
    return fn_mod_key(in, out, &m);
}

/* The map partitions whose first attempt ran in the process whose pid the
 * marker holds (-1 when a file is missing). */
static int maps_ran_by(const char *dir, const char *marker) {
    char path[700], *s = read_file_all(marker, NULL);
    int pid = s ? atoi(s) : 0, n = 0;
    free(s);
    if (pid <= 0) return -1;
    for (int p = 0; p < 6; p++) {
        snprintf(path, sizeof path, "%s/map-%d.pid", dir, p);
        if (!(s = read_file_all(path, NULL))) return -1;
        n += atoi(s) == pid;
        free(s);
    }
    return n;
}

/* Sums of n numbers by key mod 10 through a shuffle into reduce_parts,
 * then killer over the sums (it kills something once, making the marker
 * with its pid): 1 when the job succeeds with exact sums and the kill
 * happened, with the map tasks the job ran in *maps, how many of the 6
 * maps' first attempts ran in the killed process in *lost, and the
 * shuffled RDD in *sums. */
static int killed_reduce(em_ctx *c, const char *marker_name, int64_t n, int reduce_parts, em_map_fn killer,
                         em_rdd **sums, int64_t *maps, int *lost) {
    const char *marker = tmp_path(marker_name);
    where_arg w = {.n = n};
    snprintf(w.dir, sizeof w.dir, "%s", test_tmpdir());
    *sums = em_reduce_by_key(em_map(em_range(c, 0, n, 1, 6), fn_mod_key_where, &w, sizeof w), fn_sum_i64, NULL, 0,
                             reduce_parts);
    em_rdd *out = em_map(*sums, killer, marker, strlen(marker) + 1);
    em_batch *b = NULL;
    em_stats s0, s1;
    em_get_stats(c, &s0);
    int ok = em_collect(out, &b) == 0;
    if (!ok) fprintf(stderr, "  collect: %s\n", em_errmsg());
    em_get_stats(c, &s1);
    ok = ok && expect_mod_sums(b, n, 10, "the sums after the kill") && access(marker, F_OK) == 0;
    em_batch_free(b);
    *maps = s1.map_tasks_run - s0.map_tasks_run;
    *lost = maps_ran_by(w.dir, marker);
    return ok && *lost >= 0;
}

TEST(cluster_killed_executor_outputs_recomputed) {
    em_ctx *c = open_cluster("local-cluster[2,1,512]", "ember.task.maxFailures", "2",
                             "ember.shuffle.service.enabled", "false");
    CHECK(c);
    CHECK(both_executors_up(c));
    em_rdd *sums;
    int64_t maps;
    int lost;
    CHECK(killed_reduce(c, "killed-reduce.marker", 20000, 2, fn_kill_on_key0, &sums, &maps, &lost));
    /* 6 map tasks, and again, once each, those whose outputs died with the
     * executor. */
    CHECK(lost >= 1);
    CHECK_EQ_I64(maps, 6 + lost);
    em_close(c);
}

/* ------------------------------------------------- the shuffle service */

/* The same, with the worker's shuffle service (on by default): the killed
 * executor's worker lives, so its map outputs stay, served by the worker,
 * and no map task runs again: exactly the 6 map tasks. */
TEST(cluster_shuffle_service_keeps_killed_executor_outputs) {
    em_ctx *c = open_cluster("local-cluster[2,1,512]", "ember.task.maxFailures", "2", NULL, NULL);
    CHECK(c);
    CHECK(both_executors_up(c));
    em_rdd *sums;
    int64_t maps;
    int lost;
    em_stats s0, s1;
    em_get_stats(c, &s0);
    CHECK(killed_reduce(c, "killed-svc.marker", 20000, 2, fn_kill_on_key0, &sums, &maps, &lost));
    CHECK(lost >= 1); /* the killed executor had made outputs */
    em_get_stats(c, &s1);
    CHECK_EQ_I64(maps, 6);
    CHECK_EQ_I64(s1.stages_skipped - s0.stages_skipped, 0);
    /* The outputs are still there for the next job on the same shuffle:
     * its map stage is skipped. */
    em_batch *b = NULL;
    CHECK_OK(em_collect(sums, &b));
    em_stats s2;
    em_get_stats(c, &s2);
    int exact = expect_mod_sums(b, 20000, 10, "the sums from the kept outputs");
    em_batch_free(b);
    CHECK(exact);
    CHECK_EQ_I64(s2.map_tasks_run - s1.map_tasks_run, 0);
    em_close(c);
}

typedef struct excl_wait {
    em_ctx *c;
    int pid;
} excl_wait;

/* For wait_for: a job of 12 tasks ran on three distinct executors. */
static int three_executors_ran(void *arg) {
    const excl_wait *w = arg;
    em_batch *pb = NULL;
    if (em_collect(em_map(em_range(w->c, 0, 12, 1, 12), fn_pid, NULL, 0), &pb)) return 0;
    int64_t pids[3] = {0, 0, 0};
    int n = 0;
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(pb, &pos, &r) == 1) {
        int64_t p = rec_i64(&r);
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= pids[k] == p;
        if (!seen && n < 3) pids[n++] = p;
    }
    em_batch_free(pb);
    return n == 3;
}

/* A reduce task that kills its executor's worker (SIGKILL by its PID; the
 * executor dies with it) and then its executor: the worker's map outputs
 * are lost and recomputed on the two workers left, and the sums are
 * exact.  The workers stand for hosts, so reducers fetch (with
 * readHostLocalDisk a retried reducer could read the dead worker's files,
 * still on disk, before the driver hears of the loss, and then no map
 * need run again). */
static int fn_kill_worker_on_key0(const em_rec *in, em_emitter *out, const void *arg) {
    if (em_i64_dec(in->key) == 0) {
        if (made_pid_marker(arg)) {
            kill(getppid(), SIGKILL);
            raise(SIGKILL);
        }
    }
    return em_emit_pair(out, in->key, in->klen, in->val, in->vlen);
}

TEST(cluster_shuffle_service_lost_worker_outputs_recomputed) {
    em_ctx *c = open_cluster("local-cluster[3,1,512]", "ember.task.maxFailures", "2",
                             "ember.shuffle.readHostLocalDisk", "false");
    CHECK(c);
    /* All three up first: the first three map tasks go to their idle
     * cores, so whichever executor the killing reducer runs on made an
     * output (with two up, a third could join only for the reduce). */
    excl_wait w = {c, 0};
    CHECK(wait_for(three_executors_ran, &w, WAIT_MS, "a job of 12 tasks to run on all three executors"));
    em_rdd *sums;
    int64_t maps;
    int lost;
    CHECK(killed_reduce(c, "killed-worker.marker", 30000, 3, fn_kill_worker_on_key0, &sums, &maps, &lost));
    /* 6 map tasks, then again, once each, those whose worker was lost
     * (the killed executor's: one executor a worker). */
    CHECK(lost >= 1);
    CHECK_EQ_I64(maps, 6 + lost);
    em_close(c);
}

/* A task that crashes its executor (abort) fails the job after
 * ember.task.maxFailures attempts, with a message naming the signal; the
 * next job runs on replacement executors. */
TEST(cluster_crashing_task_fails_job_naming_signal) {
    em_ctx *c = open_cluster("local-cluster[2,1,512]", "ember.task.maxFailures", "2", NULL, NULL);
    CHECK(c);
    em_batch *b = NULL;
    int rc = em_collect(em_map(em_range(c, 0, 8, 1, 8), fn_abort_on_3, NULL, 0), &b);
    CHECK(rc != 0);
    CHECK_STR_CONTAINS(em_errmsg(), "killed by signal 6");
    CHECK_STR_CONTAINS(em_errmsg(), "lost");
    b = NULL;
    CHECK_OK(em_collect(em_map(em_range(c, 0, 8, 1, 8), fn_double_i64, NULL, 0), &b));
    int exact = expect_range(b, 8, times2, "the next job's values");
    em_batch_free(b);
    CHECK(exact);
    em_close(c);
}

/* ------------------------------------------------- excludeOnFailure */

/* The executor that runs v == 0 first is bad: it records its pid in the
 * marker file arg; every task run there fails. */
static int fn_fail_on_bad_executor(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t v = rec_i64(in);
    const char *marker = arg;
    if (v == 0) {
        int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd >= 0) {
            char s[32];
            int n = snprintf(s, sizeof s, "%d\n", (int)getpid());
            if (write(fd, s, (size_t)n) != n) return em_fail("cannot write the pid");
            close(fd);
        }
    }
    FILE *f = fopen(marker, "r");
    int bad = 0;
    if (f) {
        if (fscanf(f, "%d", &bad) != 1) bad = 0;
        fclose(f);
    }
    if (bad == (int)getpid()) return em_fail("this executor is bad");
    return em_emit_i64(out, v);
}

static int fn_fail_on_5(const em_rec *in, em_emitter *out, const void *arg) {
    if (rec_i64(in) == 5) return em_fail("partition 5 fails everywhere");
    return em_emit_i64(out, rec_i64(in));
}

/* Whether a job of n tasks ran any on process pid. */
static int ran_on(em_ctx *c, int n, int pid, int *ok) {
    em_batch *b = NULL;
    *ok = !em_collect(em_map(em_range(c, 0, n, 1, n), fn_pid, NULL, 0), &b);
    size_t pos = 0;
    em_rec r;
    int found = 0;
    while (*ok && em_batch_next(b, &pos, &r) == 1) found |= rec_i64(&r) == pid;
    em_batch_free(b);
    return found;
}

/* For wait_for: a job of 30 tasks ran a task on process w->pid. */
static int ran_on_pid(void *arg) {
    const excl_wait *w = arg;
    int ok;
    return ran_on(w->c, 30, w->pid, &ok) && ok;
}

/* Run fn_fail_on_bad_executor's job of 12 tasks on c (marker: its bad
 * executor's pid): 1 when every partition's value came exactly once, in
 * order (the ones that failed too), and the bad executor failed one or two
 * of them (task 0's first attempt, and at most one more before the stage
 * left it out). */
static int run_with_bad_executor(em_ctx *c, const char *marker) {
    static const int64_t want[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    em_batch *b = NULL;
    em_stats s0, s1;
    em_get_stats(c, &s0);
    int rc = em_collect(em_map(em_range(c, 0, 12, 1, 12), fn_fail_on_bad_executor, marker, strlen(marker) + 1), &b);
    em_get_stats(c, &s1);
    int exact = !rc && batch_eq_i64(b, want, 12);
    em_batch_free(b);
    int64_t failed = s1.tasks_failed - s0.tasks_failed;
    if (rc) fprintf(stderr, "  the job with a bad executor failed: %s\n", em_errmsg());
    if (failed < 1 || failed > 2) fprintf(stderr, "  %lld tasks failed, not 1 or 2\n", (long long)failed);
    return exact && failed >= 1 && failed <= 2;
}

/* ember.excludeOnFailure: a task does not run again where it failed, a
 * stage stops using an executor where two of its tasks failed, and after
 * the stage an executor with failed tasks is left out of later jobs until
 * the timeout; a task that no executor may run fails its job at once.
 * The timeout decides no outcome: first it is 1 ms (the bad executor,
 * excluded after its stage, takes tasks again), then 1 h (it stays out for
 * the rest of the test). */
TEST(cluster_exclude_on_failure) {
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.local.dir", test_scratchdir()));
    CHECK_OK(em_conf_set(conf, "ember.excludeOnFailure.enabled", "true"));
    CHECK_OK(em_conf_set(conf, "ember.excludeOnFailure.application.maxFailedTasksPerExecutor", "1"));
    CHECK_OK(em_conf_set(conf, "ember.excludeOnFailure.timeout", "1ms"));
    CHECK_OK(em_conf_set(conf, "ember.scheduler.excludeOnFailure.unschedulableTaskSetTimeout", "300ms"));
    em_ctx *c = em_open("local-cluster[3,1,512]", conf);
    em_conf_free(conf);
    CHECK(c);
    /* All three executors up first: the stage below always has two good
     * ones to go to. */
    excl_wait w = {c, 0};
    CHECK(wait_for(three_executors_ran, &w, WAIT_MS, "a job of 12 tasks to run on all three executors"));
    const char *marker = tmp_path("bad.pid");
    CHECK(run_with_bad_executor(c, marker));
    FILE *f = fopen(marker, "r");
    int bad = 0;
    CHECK(f && fscanf(f, "%d", &bad) == 1 && bad > 0);
    fclose(f);
    /* Past the timeout (1 ms) the bad executor takes tasks again. */
    w.pid = bad;
    CHECK(wait_for(ran_on_pid, &w, WAIT_MS, "the bad executor to run a task again after its 1 ms exclusion"));
    /* The same executor fails again, now with a timeout of 1 h: excluded
     * for the application, the next jobs run elsewhere. */
    CHECK_OK(em_set(c, "ember.excludeOnFailure.timeout", "1h"));
    CHECK(run_with_bad_executor(c, marker));
    int ok;
    CHECK(!ran_on(c, 12, bad, &ok));
    CHECK(ok);
    CHECK(!ran_on(c, 30, bad, &ok));
    CHECK(ok);
    /* A task that fails on every executor that may run it: once both good
     * executors are excluded for it, it waits 300 ms for another, then
     * fails its job. */
    em_batch *b = NULL;
    int rc = em_collect(em_map(em_range(c, 0, 8, 1, 8), fn_fail_on_5, NULL, 0), &b);
    CHECK(rc != 0);
    CHECK_STR_CONTAINS(em_errmsg(), "cannot run anywhere");
    em_close(c);
}

/* ------------------------------------------- executors that keep failing */

/* Executors that cannot start (each exits with code 3 before it
 * registers): after ember.deploy.maxExecutorRetries of them the master
 * removes the application (Spark's "Master removed our application:
 * FAILED"); the job fails with the master's reason at once, not after the
 * registration wait, and so does every later job. */
TEST(cluster_executor_start_failures_remove_app) {
    const char *kv[] = {"ember.test.faults", "execexit:code=3", "ember.deploy.maxExecutorRetries", "3",
                        "ember.scheduler.maxRegisteredWait", "120s", NULL};
    em_ctx *c = open_cluster_kv("local-cluster[1,1,512]", kv);
    CHECK(c);
    int64_t n = 0;
    CHECK_EQ_I64(em_count(em_range(c, 0, 10, 1, 2), &n), EM_EEXEC);
    CHECK_STR_CONTAINS(em_errmsg(), "the master removed application app-0000 (FAILED)");
    CHECK_STR_CONTAINS(em_errmsg(), "3 executors in a row failed (ember.deploy.maxExecutorRetries is 3)");
    CHECK_STR_CONTAINS(em_errmsg(), "the last, executor 2: exited with code 3");
    CHECK_STR_CONTAINS(em_errmsg(), "execexit");
    CHECK_EQ_I64(em_count(em_range(c, 0, 10, 1, 2), &n), EM_EEXEC);
    CHECK_STR_CONTAINS(em_errmsg(), "3 executors in a row failed");
    em_close(c);
}

/* The executors' stderr files under the context's scratch directory
 * (local-cluster's workers keep them in each executor's directory) that
 * contain what; -1 when there is no executor directory at all. */
static int executor_logs_saying(const char *what) {
    char pat[700];
    glob_t g;
    memset(&g, 0, sizeof g);
    snprintf(pat, sizeof pat, "%s/ember-*/worker-*/app-*/*/stderr", test_scratchdir());
    if (glob(pat, 0, NULL, &g) || !g.gl_pathc) {
        globfree(&g);
        return -1;
    }
    int n = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        char *s = read_file_all(g.gl_pathv[i], NULL);
        n += s && strstr(s, what);
        free(s);
    }
    globfree(&g);
    return n;
}

/* Fewer failures than the limit: the third executor starts, the job runs.
 * The two failures happened: two executors' logs say they exited at the
 * fault. */
TEST(cluster_executor_start_failures_within_limit) {
    const char *kv[] = {"ember.test.faults", "execexit:n=2,code=3", "ember.deploy.maxExecutorRetries", "3", NULL};
    em_ctx *c = open_cluster_kv("local-cluster[1,1,512]", kv);
    CHECK(c);
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_map(em_range(c, 0, 8, 1, 4), fn_identity, NULL, 0), &b));
    int exact = expect_range(b, 8, NULL, "the values on the third executor");
    em_batch_free(b);
    CHECK(exact);
    CHECK_EQ_I64(executor_logs_saying("exits with code 3 at start (ember.test.faults execexit)"), 2);
    /* execexit is not among em_stats' faults (an executor that exits
     * before it registers never reports): the logs above are its proof. */
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.faults_fired, 0);
    em_close(c);
}

/* v == 3 kills its own executor with SIGKILL, the first three times (the
 * markers arg.0, .1, .2 count them). */
static int fn_kill_executor_thrice(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t v = rec_i64(in);
    for (int i = 0; v == 3 && i < 3; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s.%d", (const char *)arg, i);
        if (made_marker(path)) raise(SIGKILL);
    }
    return em_emit_i64(out, v);
}

/* An executor the driver accepted restarts the count: with a limit of 2
 * and one worker, the single executor dies three times mid-task, each
 * time after its replacement registered, and the job still succeeds. */
TEST(cluster_registered_executors_restart_retry_count) {
    const char *kv[] = {"ember.deploy.maxExecutorRetries", "2", NULL};
    em_ctx *c = open_cluster_kv("local-cluster[1,1,512]", kv);
    CHECK(c);
    const char *marker = tmp_path("thrice.marker");
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_map(em_range(c, 0, 8, 1, 8), fn_kill_executor_thrice, marker, strlen(marker) + 1), &b));
    int exact = expect_range(b, 8, NULL, "the values after three executors died");
    em_batch_free(b);
    CHECK(exact);
    char last[600];
    snprintf(last, sizeof last, "%s.2", marker);
    CHECK(access(last, F_OK) == 0); /* three executors died */
    em_close(c);
}
