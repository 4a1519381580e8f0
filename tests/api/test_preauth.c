/*
 * test_preauth.c -- what a peer that has not authenticated can make a
 * process hold (engine/conn.c's limits), on every listening port of
 * local-cluster: the master's cluster port, a worker's shuffle service, an
 * executor's shuffle server and the driver's port.  Each test opens 64 raw
 * connections that each announce a 128 MiB frame and send 8 MiB of zeros,
 * runs a shuffle job meanwhile (its answer exact), and then, with the 64
 * connections still open, checks that the process behind the port grew by
 * less than 16 MB (VmRSS in /proc/PID/status).  The processes and ports
 * are found in /proc: the daemons are the driver's children (the master by
 * its EMBER_ROLE), an executor reports its pid and its listening ports from
 * a task, the worker is the executor's parent.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

#define FLOOD_CONNS 64
#define FLOOD_CLAIM ((uint32_t)128 << 20) /* the length each frame announces */
#define FLOOD_SEND ((size_t)8 << 20)      /* the bytes each connection sends */
#define GROWTH_MAX_KB (16 * 1024)

/* The TCP ports process pid listens on (IPv4), from /proc/PID/fd's
 * sockets and /proc/PID/net/tcp; how many (at most cap). */
static int listening_ports(int pid, int *ports, int cap) {
    char path[128];
    unsigned long inodes[256];
    int ni = 0, n = 0;
    snprintf(path, sizeof path, "/proc/%d/fd", pid);
    DIR *d = opendir(path);
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)) && ni < 256) {
        char link[400], target[128];
        snprintf(link, sizeof link, "%s/%s", path, e->d_name);
        ssize_t k = readlink(link, target, sizeof target - 1);
        if (k <= 0) continue;
        target[k] = 0;
        if (sscanf(target, "socket:[%lu]", &inodes[ni]) == 1) ni++;
    }
    closedir(d);
    snprintf(path, sizeof path, "/proc/%d/net/tcp", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[512];
    while (fgets(line, sizeof line, f) && n < cap) {
        unsigned addr, port, st;
        unsigned long inode;
        if (sscanf(line, " %*d: %x:%x %*x:%*x %x %*x:%*x %*x:%*x %*x %*u %*u %lu", &addr, &port, &st, &inode) != 4)
            continue;
        if (st != 0x0A) continue; /* LISTEN */
        for (int i = 0; i < ni; i++)
            if (inodes[i] == inode) ports[n++] = (int)port;
    }
    fclose(f);
    return n;
}

/* VmRSS of pid in kB, or -1. */
static long rss_kb(int pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1) break;
    if (f) fclose(f);
    return kb;
}

/* Whether pid's environment holds var (e.g. "EMBER_ROLE=master"). */
static int env_has(int pid, const char *var) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", pid);
    size_t len = 0;
    char *env = read_file_all(path, &len);
    int found = 0;
    for (size_t i = 0; env && i < len && !found; i += strlen(env + i) + 1) found = !strcmp(env + i, var);
    free(env);
    return found;
}

/* The master local-cluster started: a child of this process (of any of
 * its threads) with EMBER_ROLE=master.  Its pid or -1. */
static int find_master(void) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)getpid());
    DIR *d = opendir(path);
    int found = -1;
    struct dirent *e;
    while (d && found < 0 && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char cp[400];
        snprintf(cp, sizeof cp, "%s/%s/children", path, e->d_name);
        char *kids = read_file_all(cp, NULL);
        for (char *s = kids, *t; s && found < 0 && (t = strtok(s, " \n")); s = NULL)
            if (env_has(atoi(t), "EMBER_ROLE=master")) found = atoi(t);
        free(kids);
    }
    if (d) closedir(d);
    return found;
}

static int connect_local(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Whether port answers HTTP (the master's status port). */
static int speaks_http(int port) {
    int fd = connect_local(port);
    char buf[8] = "";
    static const char req[] = "GET /json HTTP/1.0\r\n\r\n";
    struct pollfd pf = {fd, POLLIN, 0};
    int yes = fd >= 0 && write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1) && poll(&pf, 1, 10000) == 1 &&
              read(fd, buf, 5) == 5 && !memcmp(buf, "HTTP/", 5);
    if (fd >= 0) close(fd);
    return yes;
}

typedef struct flood {
    int port;
    int fds[FLOOD_CONNS];
    size_t sent[FLOOD_CONNS];
    int opened, ended; /* connected; done (all sent, or the peer closed it) */
} flood;

static const uint8_t zeros[1 << 16];

/* Open the connections, announce a frame of FLOOD_CLAIM bytes on each and
 * send FLOOD_SEND bytes of its body, until every one sent them all or was
 * closed by the peer (or nothing moved for 60 s).  The connections stay
 * open. */
static void *flood_run(void *arg) {
    flood *f = arg;
    for (int i = 0; i < FLOOD_CONNS; i++) {
        f->sent[i] = 0;
        if ((f->fds[i] = connect_local(f->port)) < 0) continue;
        f->opened++;
        uint8_t h[5] = {FLOOD_CLAIM >> 24, (FLOOD_CLAIM >> 16) & 255, (FLOOD_CLAIM >> 8) & 255, FLOOD_CLAIM & 255, 1};
        if (send(f->fds[i], h, sizeof h, MSG_NOSIGNAL) != (ssize_t)sizeof h) f->sent[i] = FLOOD_SEND;
        fcntl(f->fds[i], F_SETFL, O_NONBLOCK);
    }
    for (;;) {
        struct pollfd pf[FLOOD_CONNS];
        int idx[FLOOD_CONNS], n = 0;
        for (int i = 0; i < FLOOD_CONNS; i++)
            if (f->fds[i] >= 0 && f->sent[i] < FLOOD_SEND) {
                pf[n] = (struct pollfd){f->fds[i], POLLOUT, 0};
                idx[n++] = i;
            }
        if (!n || poll(pf, (nfds_t)n, 60000) <= 0) break;
        for (int j = 0; j < n; j++) {
            int i = idx[j];
            if (!pf[j].revents) continue;
            size_t want = FLOOD_SEND - f->sent[i] < sizeof zeros ? FLOOD_SEND - f->sent[i] : sizeof zeros;
            ssize_t k = send(f->fds[i], zeros, want, MSG_NOSIGNAL);
            if (k > 0) f->sent[i] += (size_t)k;
            else if (k < 0 && errno != EAGAIN && errno != EINTR) f->sent[i] = FLOOD_SEND; /* closed by the peer */
        }
    }
    for (int i = 0; i < FLOOD_CONNS; i++) f->ended += f->fds[i] < 0 || f->sent[i] >= FLOOD_SEND;
    return NULL;
}

static void flood_close(flood *f) {
    for (int i = 0; i < FLOOD_CONNS; i++)
        if (f->fds[i] >= 0) close(f->fds[i]);
}

static em_ctx *open_lc(void) {
    em_conf *conf = em_conf_new();
    test_conf_set(conf, "ember.local.dir", test_scratchdir());
    test_conf_set(conf, "ember.shuffle.service.enabled", "true");
    em_ctx *c = em_open("local-cluster[1,1,512]", conf);
    if (!c) fprintf(stderr, "  em_open: %s\n", em_errmsg());
    em_conf_free(conf);
    return c;
}

/* An exact shuffle job: sums of 0..6999 by value mod 7. */
static int job_exact(em_ctx *c) {
    int64_t mk = 7;
    em_batch *b = NULL;
    int rc = em_collect(
        em_reduce_by_key(em_map(em_range(c, 0, 7000, 1, 4), fn_mod_key, &mk, sizeof mk), fn_sum_i64, NULL, 0, 3), &b);
    if (rc) fprintf(stderr, "  job: %s\n", em_errmsg());
    int ok = !rc && check_mod_sums(b, 7000, 7);
    em_batch_free(b);
    return ok;
}

/* In an executor: its pid, the worker's shuffle service port, then the
 * ports it listens on itself. */
static int fn_exec_ports(const em_rec *in, em_emitter *out, const void *arg) {
    const char *svc = getenv("EMBER_SHUFFLE_SERVICE_PORT");
    int ports[8], n = listening_ports((int)getpid(), ports, 8), rc = em_emit_i64(out, (int64_t)getpid());
    if (!rc) rc = em_emit_i64(out, svc ? atoi(svc) : 0);
    for (int i = 0; i < n && !rc; i++) rc = em_emit_i64(out, ports[i]);
    return rc;
}

enum { P_MASTER, P_SERVICE, P_EXECUTOR, P_DRIVER };

/* The pid and port of the target (one of P_*) on context c: 0, or -1. */
static int target_of(em_ctx *c, int which, int *pid, int *port) {
    em_batch *b = NULL;
    *pid = *port = -1;
    if (which == P_DRIVER || which == P_MASTER) {
        int self = which == P_DRIVER ? (int)getpid() : find_master(), ports[8];
        int n = self > 0 ? listening_ports(self, ports, 8) : 0;
        /* Each listens on its own port and serves HTTP on another (the
         * master's status, the driver's UI). */
        for (int i = 0; i < n; i++)
            if (!speaks_http(ports[i])) *port = ports[i];
        *pid = self;
        return n == 2 && *port > 0 ? 0 : -1;
    }
    if (em_collect(em_flat_map(em_range(c, 0, 1, 1, 1), fn_exec_ports, NULL, 0), &b)) {
        fprintf(stderr, "  fn_exec_ports: %s\n", em_errmsg());
        return -1;
    }
    size_t pos = 0, n = 0;
    em_rec r;
    int64_t v[8];
    while (n < 8 && em_batch_next(b, &pos, &r) == 1) v[n++] = rec_i64(&r);
    em_batch_free(b);
    if (n < 3) {
        fprintf(stderr, "  the executor reported %zu numbers\n", n);
        return -1;
    }
    if (which == P_EXECUTOR) {
        *pid = (int)v[0];
        *port = (int)v[2];
        return n == 3 ? 0 : -1; /* the executor listens on its shuffle server only */
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)v[0]); /* the worker: the executor's parent */
    char *st = read_file_all(path, NULL), *rp = st ? strrchr(st, ')') : NULL;
    int ppid = 0;
    if (rp) sscanf(rp + 2, "%*c %d", &ppid);
    free(st);
    *pid = ppid;
    *port = (int)v[1];
    return ppid > 0 && *port > 0 ? 0 : -1;
}

static void flood_port(int which) {
    em_ctx *c = open_lc();
    CHECK(c);
    int pid, port;
    if (target_of(c, which, &pid, &port)) {
        em_close(c);
        CHECK(!"the target process or its port was not found");
    }
    if (!job_exact(c)) { /* warm: every process has run a shuffle job once */
        em_close(c);
        CHECK(!"the first job");
    }
    long before = rss_kb(pid);
    flood f = {.port = port};
    pthread_t t;
    if (pthread_create(&t, NULL, flood_run, &f)) {
        em_close(c);
        CHECK(!"pthread_create");
    }
    int exact = job_exact(c);
    pthread_join(t, NULL);
    long after = rss_kb(pid); /* with the 64 connections still open */
    flood_close(&f);
    int exact2 = job_exact(c);
    em_close(c);
    fprintf(stderr, "  pid %d port %d: VmRSS %ld kB -> %ld kB; %d connections opened, %d ended\n", pid, port, before,
            after, f.opened, f.ended);
    CHECK(exact && exact2);
    CHECK(before > 0 && after > 0);
    CHECK_EQ_I64(f.opened, FLOOD_CONNS);
    CHECK(after - before < GROWTH_MAX_KB);
}

TEST(preauth_flood_master_port) { flood_port(P_MASTER); }
TEST(preauth_flood_shuffle_service) { flood_port(P_SERVICE); }
TEST(preauth_flood_executor_port) { flood_port(P_EXECUTOR); }
TEST(preauth_flood_driver_port) { flood_port(P_DRIVER); }
