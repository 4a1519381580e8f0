/*
 * test_masterd.c -- the ember-master daemon as a real process on
 * 127.0.0.1 (ports chosen by the kernel, read from its log line): a worker
 * registers over TCP, an application registers and is granted an executor
 * (the worker is told to launch it, the driver that it was added); /json
 * shows it; garbage on the port closes only that connection; the worker's
 * connection dropping loses the executor at once (the driver is told);
 * SIGTERM, sent by PID, stops it with status 0.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"
#include "conn.h"
#include "ember.h"
#include "frame.h"
#include "log.h"
#include "msg.h"

typedef struct client {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int opened, closed;
    int tags[16];
    int ntags;
    char text[16][128]; /* each message's first string field, if any */
    char last[16][128]; /* and its last field, if a string */
    /* to send once open */
    int tag;
    msg_val f[MSG_MAX_FIELDS];
    int n;
} client;

static void cl_open(conn *c, void *ud) {
    client *k = ud;
    ebuf out = EBUF_INIT;
    if (msg_encode(&out, k->tag, k->f, k->n) || conn_send(c, FT_MSG, out.p, out.len))
        fprintf(stderr, "  cannot send %s: %s\n", msg_name(k->tag), em_errmsg());
    ebuf_free(&out);
    pthread_mutex_lock(&k->mu);
    k->opened = 1;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

static void cl_frame(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud) {
    client *k = ud;
    msg m;
    if (type == FT_MSG && !msg_decode(&m, body, len)) {
        pthread_mutex_lock(&k->mu);
        if (k->ntags < 16) {
            k->text[k->ntags][0] = k->last[k->ntags][0] = 0;
            const msg_val *z = m.n ? &m.f[m.n - 1] : NULL;
            if (z && z->p && z->len < 128) {
                memcpy(k->last[k->ntags], z->p, z->len);
                k->last[k->ntags][z->len] = 0;
            }
            for (int i = 0; i < m.n; i++)
                if (m.f[i].p && m.f[i].len < 128 && m.f[i].len) {
                    memcpy(k->text[k->ntags], m.f[i].p, m.f[i].len);
                    k->text[k->ntags][m.f[i].len] = 0;
                    break;
                }
            k->tags[k->ntags++] = m.tag;
        }
        pthread_cond_broadcast(&k->cv);
        pthread_mutex_unlock(&k->mu);
    }
    msg_free(&m);
    free(body);
}

static void cl_close(conn *c, const char *reason, void *ud) {
    client *k = ud;
    pthread_mutex_lock(&k->mu);
    k->closed = 1;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

static const conn_cb cl_cb = {cl_open, cl_frame, cl_close};

/* Wait (at most 20 s) for a message with that tag; its index or -1. */
static int wait_tag(client *k, int tag) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&k->mu);
    int found = -1;
    for (;;) {
        for (int i = 0; i < k->ntags && found < 0; i++)
            if (k->tags[i] == tag) found = i;
        if (found >= 0 || pthread_cond_timedwait(&k->cv, &k->mu, &until)) break;
    }
    pthread_mutex_unlock(&k->mu);
    return found;
}

typedef struct dial {
    ioloop *l;
    int port;
    client *k;
    conn *c;
    int rc;
} dial;

static void do_dial(void *a) {
    dial *d = a;
    conn_opts o = {0, NULL, 0, 0, "test", 0, 0};
    d->rc = conn_connect(d->l, "127.0.0.1", d->port, &o, &cl_cb, d->k, &d->c);
}

static void do_close(void *a) { conn_close(a, "the test closes it"); }

static void client_init(client *k, int tag, int n) {
    memset(k, 0, sizeof *k);
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    k->tag = tag;
    k->n = n;
}

/* GET path from the status port; the body in buf (NUL-terminated). */
static int http_get(int port, const char *path, char *buf, size_t cap) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    size_t n = 0;
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        if (fd >= 0) close(fd);
        return -1;
    }
    char req[256];
    int len = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\n\r\n", path);
    if (write(fd, req, (size_t)len) != len) n = cap;
    ssize_t r;
    while (n < cap - 1 && (r = read(fd, buf + n, cap - 1 - n)) > 0) n += (size_t)r;
    buf[n < cap ? n : cap - 1] = 0;
    close(fd);
    return 0;
}

/* Start bin/ember-master (next to this test binary's directory) on free
 * ports; read them from its first log line. */
static pid_t start_master_nofile(int *port, int *webport, int *errfd, int nofile) {
    char exe[4096], path[4200];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    *slash = 0; /* .../BUILD/tests */
    slash = strrchr(exe, '/');
    *slash = 0; /* .../BUILD */
    snprintf(path, sizeof path, "%s/bin/ember-master", exe);
    int p[2];
    if (pipe(p)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failing test leaves no master behind */
        struct rlimit rl = {(rlim_t)nofile, (rlim_t)nofile};
        if (nofile > 0 && setrlimit(RLIMIT_NOFILE, &rl)) _exit(126);
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        execl(path, "ember-master", "--port", "0", "--webui-port", "0", "--conf", "ember.worker.timeout=1h", (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    char line[1024];
    size_t have = 0;
    while (have < sizeof line - 1) {
        ssize_t r = read(p[0], line + have, 1);
        if (r <= 0 || line[have] == '\n') break;
        have++;
    }
    line[have] = 0;
    const char *a = strstr(line, "listening on 127.0.0.1:"), *b = strstr(line, "status on http://127.0.0.1:");
    if (!a || !b) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(p[0]);
        return -1;
    }
    *port = atoi(a + strlen("listening on 127.0.0.1:"));
    *webport = atoi(b + strlen("status on http://127.0.0.1:"));
    *errfd = p[0];
    return pid;
}

static pid_t start_master(int *port, int *webport, int *errfd) { return start_master_nofile(port, webport, errfd, 0); }

TEST(masterd_registers_grants_and_stops) {
    log_set_level(LOG_ERROR);
    int port = 0, webport = 0, errfd = -1;
    pid_t pid = start_master(&port, &webport, &errfd);
    CHECK(pid > 0);
    ioloop *l = iol_start("test");
    CHECK(l);
    /* A worker registers. */
    client w;
    client_init(&w, M_REGISTER_WORKER, 6);
    w.f[0] = msg_str("w-1"), w.f[1] = msg_str("127.0.0.1"), w.f[2] = msg_u(7078), w.f[3] = msg_u(2), w.f[4] = msg_u(2048);
    w.f[5] = msg_u(0);
    dial dw = {l, port, &w, NULL, 0};
    iol_call(l, do_dial, &dw);
    CHECK_OK(dw.rc);
    CHECK(wait_tag(&w, M_WORKER_REGISTERED) >= 0);
    /* Garbage on the master's port: that connection closes, the master stays. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    CHECK(write(fd, "\xff\xff\xff\xff\x01garbage", 12) == 12);
    char junk[16];
    CHECK(read(fd, junk, sizeof junk) <= 0); /* closed by the master */
    close(fd);
    /* An application registers and gets an executor on the worker. */
    client a;
    static uint8_t hash[32];
    client_init(&a, M_REGISTER_APP, 8);
    a.f[0] = msg_str("wc"), a.f[1] = msg_str("127.0.0.1:40000"), a.f[2] = (msg_val){0, 0, hash, 32};
    a.f[3] = msg_u(0), a.f[4] = msg_u(0), a.f[5] = msg_u(1024);
    a.f[6] = msg_str("ember.reducer.maxSizeInFlight=1m\n");
    a.f[7] = msg_str(""); /* a new application */
    dial da = {l, port, &a, NULL, 0};
    iol_call(l, do_dial, &da);
    CHECK_OK(da.rc);
    int k = wait_tag(&a, M_APP_REGISTERED);
    CHECK(k >= 0);
    CHECK(!strncmp(a.text[k], "app-", 4));
    CHECK(wait_tag(&a, M_EXECUTOR_ADDED) >= 0);
    k = wait_tag(&w, M_LAUNCH_EXECUTOR);
    if (k < 0)
        for (int i = 0; i < w.ntags; i++) fprintf(stderr, "  worker got %s\n", msg_name(w.tags[i]));
    CHECK(k >= 0);
    CHECK(!strncmp(w.text[k], "app-", 4));
    CHECK(!strcmp(w.last[k], "ember.reducer.maxSizeInFlight=1m\n")); /* the executor's settings */
    char body[8192];
    CHECK_OK(http_get(webport, "/json", body, sizeof body));
    CHECK(strstr(body, "200 OK"));
    CHECK(strstr(body, "\"aliveworkers\":1"));
    CHECK(strstr(body, "\"cores\":2,\"coresused\":2,\"memory\":2048,\"memoryused\":1024"));
    CHECK(strstr(body, "\"name\":\"wc\""));
    CHECK_OK(http_get(webport, "/", body, sizeof body));
    CHECK(strstr(body, "text/html") && strstr(body, "ember master at ember://127.0.0.1:"));
    /* The worker's connection drops: its executor is lost at once. */
    iol_call(l, do_close, dw.c);
    CHECK(wait_tag(&a, M_EXECUTOR_LOST) >= 0);
    CHECK_OK(http_get(webport, "/json", body, sizeof body));
    CHECK(strstr(body, "\"aliveworkers\":0"));
    iol_call(l, do_close, da.c);
    iol_stop(l);
    /* SIGTERM by PID: a clean stop. */
    CHECK(kill(pid, SIGTERM) == 0);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(errfd);
}

static int raw_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
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

/* What the peer sends on fd until it closes it, within ms; the bytes in
 * buf.  1 when it closed. */
static int read_to_close(int fd, char *buf, size_t cap, int ms) {
    size_t n = 0;
    buf[0] = 0;
    for (;;) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, ms) != 1) return 0;
        char tmp[1024];
        ssize_t k = read(fd, tmp, sizeof tmp);
        if (k == 0 || (k < 0 && errno == ECONNRESET)) return 1;
        if (k < 0) return 0;
        size_t take = (size_t)k < cap - 1 - n ? (size_t)k : cap - 1 - n;
        memcpy(buf + n, tmp, take);
        n += take;
        buf[n] = 0;
    }
}

/* The status port, with raw sockets, of a master limited to 64
 * descriptors: a NUL byte in a request is answered 400 and closed; 70
 * idle connections take only the status port's share of descriptors (the
 * rest are answered 503), so a worker still registers on the cluster port
 * meanwhile; the idle ones are closed by the 10 s request deadline
 * (waited for at most 30 s); then /json is answered again. */
TEST(masterd_status_port_bounded) {
    log_set_level(LOG_ERROR);
    int port = 0, webport = 0, errfd = -1;
    pid_t pid = start_master_nofile(&port, &webport, &errfd, 64);
    CHECK(pid > 0);
    char buf[8192];
    int fd = raw_connect(webport);
    CHECK(fd >= 0);
    static const char nul[] = "GET /json\0 HTTP/1.0\r\n";
    CHECK(write(fd, nul, sizeof nul - 1) == (ssize_t)(sizeof nul - 1));
    CHECK(read_to_close(fd, buf, sizeof buf, 20000));
    close(fd);
    CHECK(!strncmp(buf, "HTTP/1.0 400 Bad Request\r\n", 26));
    int idle[70], held = 0;
    for (int i = 0; i < 70; i++) CHECK((idle[i] = raw_connect(webport)) >= 0);
    ioloop *l = iol_start("test");
    CHECK(l);
    client w;
    client_init(&w, M_REGISTER_WORKER, 6);
    w.f[0] = msg_str("w-1"), w.f[1] = msg_str("127.0.0.1"), w.f[2] = msg_u(7078), w.f[3] = msg_u(2), w.f[4] = msg_u(2048);
    w.f[5] = msg_u(0);
    dial dw = {l, port, &w, NULL, 0};
    iol_call(l, do_dial, &dw);
    CHECK_OK(dw.rc);
    CHECK(wait_tag(&w, M_WORKER_REGISTERED) >= 0);
    CHECK(!w.closed);
    for (int i = 0; i < 70; i++) {
        CHECK(read_to_close(idle[i], buf, sizeof buf, 30000));
        if (!buf[0]) held++; /* closed at the deadline, unanswered */
        else CHECK(!strncmp(buf, "HTTP/1.0 503 Service Unavailable\r\n", 34));
        close(idle[i]);
    }
    CHECK(held > 0 && held < 70);
    CHECK_OK(http_get(webport, "/json", buf, sizeof buf));
    if (!strstr(buf, "\"aliveworkers\":1")) fprintf(stderr, "  /json: %s\n", buf);
    CHECK(strstr(buf, "200 OK") && strstr(buf, "\"aliveworkers\":1"));
    iol_call(l, do_close, dw.c);
    iol_stop(l);
    CHECK(kill(pid, SIGTERM) == 0);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(errfd);
}
