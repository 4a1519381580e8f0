/*
 * test_conn.c -- connections (engine/conn.c) over real TCP on 127.0.0.1:
 * frames echo back intact; garbage from a raw socket (a frame claiming
 * 4 GB, an unknown type, a frame before authentication) closes only that
 * connection, with the reason, and the listener serves the next client;
 * with a shared secret and encryption, a client with the secret talks, one
 * with a wrong secret or none is refused.  Every wait is for an event,
 * bounded, never a sleep.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"
#include "conn.h"
#include "ember.h"
#include "frame.h"
#include "log.h"
#include "msg.h"

typedef struct side {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int opened, closed, frames;
    uint8_t type[8];
    size_t len[8];
    uint8_t *body[8];
    char reason[512];
    int echo; /* a server: send every frame back */
    /* a client: frames to send once open */
    int nsend;
    uint8_t send_type[4];
    const void *send_body[4];
    size_t send_len[4];
} side;

static void side_init(side *s) {
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
}

static void side_free(side *s) {
    for (int i = 0; i < 8; i++) free(s->body[i]);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
}

static void on_open(conn *c, void *ud) {
    side *s = ud;
    for (int i = 0; i < s->nsend; i++) conn_send(c, s->send_type[i], s->send_body[i], s->send_len[i]);
    pthread_mutex_lock(&s->mu);
    s->opened++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void on_frame(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud) {
    side *s = ud;
    if (s->echo) conn_send(c, type, body, len);
    pthread_mutex_lock(&s->mu);
    if (s->frames < 8) {
        s->type[s->frames] = type;
        s->len[s->frames] = len;
        s->body[s->frames] = body;
        body = NULL;
    }
    s->frames++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    free(body);
}

static void on_close(conn *c, const char *reason, void *ud) {
    side *s = ud;
    pthread_mutex_lock(&s->mu);
    s->closed++;
    snprintf(s->reason, sizeof s->reason, "%s", reason);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static const conn_cb callbacks = {on_open, on_frame, on_close};

/* A count of the side's, read under its lock (the loop thread writes it). */
static int count_of(side *s, const int *n) {
    pthread_mutex_lock(&s->mu);
    int v = *n;
    pthread_mutex_unlock(&s->mu);
    return v;
}

/* The last close's reason, copied under the side's lock: the loop thread
 * writes it, and TSan sees no order through the sockets libuv reads. */
static const char *reason_of(side *s) {
    static char copy[sizeof s->reason];
    pthread_mutex_lock(&s->mu);
    snprintf(copy, sizeof copy, "%s", s->reason);
    pthread_mutex_unlock(&s->mu);
    return copy;
}

/* Wait (at most 20 s) until *field reaches want. */
static int side_wait(side *s, int *field, int want) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&s->mu);
    while (*field < want && pthread_cond_timedwait(&s->cv, &s->mu, &until) == 0) {}
    int ok = *field >= want;
    pthread_mutex_unlock(&s->mu);
    return ok;
}

typedef struct setup {
    ioloop *l;
    conn_opts o;
    side *s;
    listener *ls;
    int port;
    conn *c;
    int rc;
    const char *host; /* NULL: 127.0.0.1 */
} setup;

static void do_listen(void *a) {
    setup *u = a;
    u->rc = conn_listen(u->l, u->host ? u->host : "127.0.0.1", 0, &u->o, &callbacks, u->s, &u->ls, &u->port);
}

static void do_connect(void *a) {
    setup *u = a;
    u->rc = conn_connect(u->l, u->host ? u->host : "127.0.0.1", u->port, &u->o, &callbacks, u->s, &u->c);
}


static void do_close_listener(void *a) { listener_close(a); }

typedef struct close_req {
    side *s;
    conn *c;
} close_req;

/* On the loop's thread, where on_close also runs: c is still there
 * exactly when its side has not seen it close. */
static void do_close_if_open(void *a) {
    close_req *r = a;
    pthread_mutex_lock(&r->s->mu);
    int closed = r->s->closed;
    pthread_mutex_unlock(&r->s->mu);
    if (!closed) conn_close(r->c, "done");
}

/* A raw socket to the listener: send bytes, then wait for the server to
 * close it.  1 when it did (read gives 0 or a reset), 0 otherwise. */
static int raw_send_expect_close(int port, const void *bytes, size_t n) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {20, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int closed = 0;
    if (fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof sa) && write(fd, bytes, n) == (ssize_t)n) {
        char buf[256];
        ssize_t r;
        while ((r = read(fd, buf, sizeof buf)) > 0) {}
        closed = r == 0 || (r < 0 && errno == ECONNRESET);
    }
    if (fd >= 0) close(fd);
    return closed;
}

/* An echo client exchange with the server of u: 3 frames back intact. */
static int echo_roundtrip(setup *srv, const conn_opts *o) {
    side cs;
    side_init(&cs);
    static uint8_t big[100000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 13);
    cs.nsend = 3;
    cs.send_type[0] = FT_MSG, cs.send_body[0] = "a", cs.send_len[0] = 1;
    cs.send_type[1] = FT_CHUNK, cs.send_body[1] = big, cs.send_len[1] = sizeof big;
    cs.send_type[2] = FT_CHUNK, cs.send_body[2] = NULL, cs.send_len[2] = 0;
    setup cu = {srv->l, *o, &cs, NULL, srv->port, NULL, 0, srv->host};
    iol_call(srv->l, do_connect, &cu);
    int ok = cu.rc == 0 && side_wait(&cs, &cs.frames, 3);
    ok = ok && cs.type[0] == FT_MSG && cs.len[0] == 1 && cs.body[0][0] == 'a';
    ok = ok && cs.type[1] == FT_CHUNK && cs.len[1] == sizeof big && !memcmp(cs.body[1], big, sizeof big);
    ok = ok && cs.type[2] == FT_CHUNK && cs.len[2] == 0;
    close_req cr = {&cs, cu.c};
    if (cu.c) iol_call(srv->l, do_close_if_open, &cr);
    side_wait(&cs, &cs.closed, 1);
    side_free(&cs);
    return ok;
}

static void quiet_logs(void) { log_set_level(LOG_ERROR); }

TEST(conn_frames_echo_intact) {
    quiet_logs();
    side ss;
    side_init(&ss);
    ss.echo = 1;
    conn_opts o = {0, NULL, 0, 0, "test", 0, 0};
    setup u = {iol_start("test"), o, &ss, NULL, 0, NULL, 0, NULL};
    CHECK(u.l);
    iol_call(u.l, do_listen, &u);
    CHECK_OK(u.rc);
    CHECK(u.port > 0);
    CHECK(echo_roundtrip(&u, &o));
    CHECK(echo_roundtrip(&u, &o)); /* and again, a second client */
    CHECK(side_wait(&ss, &ss.closed, 2));
    iol_call(u.l, do_close_listener, u.ls);
    iol_stop(u.l);
    side_free(&ss);
}

TEST(conn_garbage_closes_only_that_connection) {
    quiet_logs();
    side ss;
    side_init(&ss);
    ss.echo = 1;
    conn_opts o = {1 << 20, NULL, 0, 0, "test", 0, 0};
    setup u = {iol_start("test"), o, &ss, NULL, 0, NULL, 0, NULL};
    CHECK(u.l);
    iol_call(u.l, do_listen, &u);
    CHECK_OK(u.rc);
    uint8_t huge[5] = {0xff, 0xff, 0xff, 0xff, FT_MSG};
    CHECK(raw_send_expect_close(u.port, huge, sizeof huge));
    CHECK(side_wait(&ss, &ss.closed, 1));
    CHECK_STR_CONTAINS(reason_of(&ss), "exceeds ember.rpc.message.maxSize");
    uint8_t unknown[8] = {0, 0, 0, 3, 77, 1, 2, 3};
    CHECK(raw_send_expect_close(u.port, unknown, sizeof unknown));
    CHECK(side_wait(&ss, &ss.closed, 2));
    CHECK_STR_CONTAINS(reason_of(&ss), "unknown type 77");
    uint8_t random[64];
    for (int i = 0; i < 64; i++) random[i] = (uint8_t)(i * 97 + 13);
    random[4] = 200; /* an unknown type in the first header */
    CHECK(raw_send_expect_close(u.port, random, sizeof random));
    CHECK(side_wait(&ss, &ss.closed, 3));
    /* The listener still serves a real client. */
    CHECK(echo_roundtrip(&u, &o));
    iol_call(u.l, do_close_listener, u.ls);
    iol_stop(u.l);
    side_free(&ss);
}

TEST(conn_secret_and_encryption) {
    quiet_logs();
    side ss;
    side_init(&ss);
    ss.echo = 1;
    static const char secret[] = "shared secret";
    conn_opts o = {1 << 20, secret, sizeof secret - 1, 1, "test", 0, 0};
    setup u = {iol_start("test"), o, &ss, NULL, 0, NULL, 0, NULL};
    CHECK(u.l);
    iol_call(u.l, do_listen, &u);
    CHECK_OK(u.rc);
    CHECK(echo_roundtrip(&u, &o)); /* the right secret, sealed frames */
    CHECK(side_wait(&ss, &ss.closed, 1));
    /* A wrong secret: the client refuses the server's proof, and closes. */
    side cs;
    side_init(&cs);
    conn_opts bad = {1 << 20, "wrong", 5, 1, "test", 0, 0};
    setup cu = {u.l, bad, &cs, NULL, u.port, NULL, 0, NULL};
    iol_call(u.l, do_connect, &cu);
    CHECK_OK(cu.rc);
    CHECK(side_wait(&cs, &cs.closed, 1));
    CHECK_EQ_I64(count_of(&cs, &cs.opened), 0);
    CHECK_STR_CONTAINS(reason_of(&cs), "did not prove the shared secret");
    CHECK(side_wait(&ss, &ss.closed, 2));
    side_free(&cs);
    /* No secret at all: a plain frame before authentication. */
    uint8_t hello[6] = {0, 0, 0, 1, FT_MSG, 0x90};
    CHECK(raw_send_expect_close(u.port, hello, sizeof hello));
    CHECK(side_wait(&ss, &ss.closed, 3));
    CHECK_STR_CONTAINS(reason_of(&ss), "a frame before authentication");
    CHECK_EQ_I64(count_of(&ss, &ss.frames), 3); /* only the good client's frames ever arrived */
    /* And the next good client is served. */
    CHECK(echo_roundtrip(&u, &o));
    iol_call(u.l, do_close_listener, u.ls);
    iol_stop(u.l);
    side_free(&ss);
}

/* ----------------------------------------------------- a file as frames */

#define FILE_BYTES ((size_t)32 << 20)
#define FILE_FRAME ((size_t)256 << 10)

/* The file's byte at off. */
static uint8_t file_byte(size_t off) { return (uint8_t)(off * 7 + off / 4099); }

/* A server that sends the file as FILE_FRAME chunks, then an empty one,
 * when a client connects. */
typedef struct file_srv {
    int fd, rc;
} file_srv;

static void fs_open(conn *c, void *ud) {
    file_srv *f = ud;
    for (size_t off = 0; off < FILE_BYTES && !f->rc; off += FILE_FRAME)
        f->rc = conn_send_file(c, FT_CHUNK, f->fd, off, FILE_FRAME);
    if (!f->rc) f->rc = conn_send(c, FT_CHUNK, NULL, 0);
}
static void fs_frame(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud) { free(body); }
static void fs_close(conn *c, const char *reason, void *ud) {}
static const conn_cb fs_cb = {fs_open, fs_frame, fs_close};

/* A client checking every byte as it comes, slow at first so that the
 * sender's socket fills. */
typedef struct file_cli {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t got;
    int bad, done, closed;
} file_cli;

static void fc_open(conn *c, void *ud) {}
static void fc_frame(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud) {
    file_cli *f = ud;
    if (!f->got && len) usleep(200 * 1000);
    pthread_mutex_lock(&f->mu);
    if (type != FT_CHUNK || (len && len != FILE_FRAME)) f->bad = 1;
    for (size_t i = 0; i < len && !f->bad; i++)
        if (body[i] != file_byte(f->got + i)) f->bad = 1;
    f->got += len;
    if (!len) f->done = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    free(body);
}
static void fc_close(conn *c, const char *reason, void *ud) {
    file_cli *f = ud;
    pthread_mutex_lock(&f->mu);
    f->closed = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}
static const conn_cb fc_cb = {fc_open, fc_frame, fc_close};

typedef struct file_run {
    ioloop *sl, *cl;
    conn_opts o;
    file_srv *srv;
    file_cli *cli;
    listener *ls;
    conn *c;
    int port, rc;
} file_run;

static void fr_listen(void *a) {
    file_run *r = a;
    r->rc = conn_listen(r->sl, "127.0.0.1", 0, &r->o, &fs_cb, r->srv, &r->ls, &r->port);
}
static void fr_connect(void *a) {
    file_run *r = a;
    r->rc = conn_connect(r->cl, "127.0.0.1", r->port, &r->o, &fc_cb, r->cli, &r->c);
}
static void fr_close(void *a) {
    file_run *r = a;
    if (!r->cli->closed) conn_close(r->c, "done");
}

/* Send the file to a client on another loop; the bytes sendfile wrote. */
static uint64_t send_file_once(const conn_opts *o, int fd, int *intact) {
    file_srv srv = {fd, 0};
    file_cli cli;
    memset(&cli, 0, sizeof cli);
    pthread_mutex_init(&cli.mu, NULL);
    pthread_cond_init(&cli.cv, NULL);
    file_run r = {iol_start("srv"), iol_start("cli"), *o, &srv, &cli, NULL, NULL, 0, 0};
    uint64_t before = __atomic_load_n(&conn_sendfile_bytes, __ATOMIC_RELAXED);
    iol_call(r.sl, fr_listen, &r);
    if (!r.rc) iol_call(r.cl, fr_connect, &r);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&cli.mu);
    while (!r.rc && !cli.done && !cli.closed && !cli.bad &&
           pthread_cond_timedwait(&cli.cv, &cli.mu, &until) == 0) {}
    *intact = !r.rc && cli.done && !cli.bad && cli.got == FILE_BYTES;
    pthread_mutex_unlock(&cli.mu);
    if (r.c) iol_call(r.cl, fr_close, &r);
    iol_stop(r.cl);
    if (r.ls) iol_call(r.sl, do_close_listener, r.ls);
    iol_stop(r.sl);
    *intact = *intact && !srv.rc;
    pthread_mutex_destroy(&cli.mu);
    pthread_cond_destroy(&cli.cv);
    return __atomic_load_n(&conn_sendfile_bytes, __ATOMIC_RELAXED) - before;
}

/* conn_send_file: on a plain connection the file goes out with sendfile
 * until the socket is full, the rest queued; sealed, it is read and
 * encrypted.  Either way the peer gets every byte, in order. */
TEST(conn_send_file_frames_intact) {
    quiet_logs();
    char path[] = "/tmp/ember-test-sendfile-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
    uint8_t *buf = malloc(FILE_BYTES);
    for (size_t i = 0; i < FILE_BYTES; i++) buf[i] = file_byte(i);
    CHECK(write(fd, buf, FILE_BYTES) == (ssize_t)FILE_BYTES);
    free(buf);
    int intact = 0;
    conn_opts plain = {1 << 20, NULL, 0, 0, "test", 0, 0};
    uint64_t n = send_file_once(&plain, fd, &intact);
    CHECK(intact);
    CHECK(n > 0 && n < FILE_BYTES); /* some by sendfile, the rest once the socket was full */
    static const char secret[] = "shared secret";
    conn_opts sealed = {1 << 20, secret, sizeof secret - 1, 1, "test", 0, 0};
    CHECK_EQ_I64(send_file_once(&sealed, fd, &intact), 0);
    CHECK(intact);
    close(fd);
}

/* A client that connects and never completes the handshake (silent, or a
 * byte now and then) is closed at the deadline, with the reason; the
 * listener serves the next good client. */
TEST(conn_handshake_deadline) {
    quiet_logs();
    side ss;
    side_init(&ss);
    ss.echo = 1;
    static const char secret[] = "shared secret";
    conn_opts o = {1 << 20, secret, sizeof secret - 1, 0, "test", 300, 0};
    setup u = {iol_start("test"), o, &ss, NULL, 0, NULL, 0, NULL};
    CHECK(u.l);
    iol_call(u.l, do_listen, &u);
    CHECK_OK(u.rc);
    CHECK(raw_send_expect_close(u.port, "\0", 1)); /* one byte of a length, then nothing */
    CHECK(side_wait(&ss, &ss.closed, 1));
    CHECK_STR_CONTAINS(reason_of(&ss), "no handshake within 300 ms");
    CHECK_EQ_I64(count_of(&ss, &ss.opened), 0);
    CHECK(echo_roundtrip(&u, &o));
    iol_call(u.l, do_close_listener, u.ls);
    iol_stop(u.l);
    side_free(&ss);
}

/* Host names resolve (getaddrinfo, off the loop's thread for connect):
 * listen and connect by "localhost"; a name that cannot resolve (.invalid
 * never does, RFC 2606) closes the connection with the reason, and the
 * loop serves the next client. */
TEST(conn_host_names) {
    quiet_logs();
    side ss;
    side_init(&ss);
    ss.echo = 1;
    conn_opts o = {1 << 20, NULL, 0, 0, "test", 10000, 0};
    setup u = {iol_start("test"), o, &ss, NULL, 0, NULL, 0, "localhost"};
    CHECK(u.l);
    iol_call(u.l, do_listen, &u);
    CHECK_OK(u.rc);
    CHECK(echo_roundtrip(&u, &o));
    side bad;
    side_init(&bad);
    setup ub = {u.l, o, &bad, NULL, u.port, NULL, 0, "no-such-host.invalid"};
    iol_call(u.l, do_connect, &ub);
    CHECK_OK(ub.rc);
    CHECK(side_wait(&bad, &bad.closed, 1));
    CHECK_STR_CONTAINS(reason_of(&bad), "cannot resolve no-such-host.invalid:");
    CHECK_EQ_I64(count_of(&bad, &bad.opened), 0);
    CHECK(echo_roundtrip(&u, &o)); /* and the next client by name is served */
    setup ul = {u.l, o, &bad, NULL, 0, NULL, 0, "no-such-host.invalid"};
    iol_call(u.l, do_listen, &ul);
    CHECK_EQ_I64(ul.rc, EM_EINVAL);
    struct sockaddr_in sa;
    CHECK_EQ_I64(conn_resolve("no-such-host.invalid", 1, &sa), EM_EINVAL); /* the message, on this thread */
    CHECK_STR_CONTAINS(em_errmsg(), "cannot resolve host \"no-such-host.invalid\"");
    CHECK_OK(conn_resolve("localhost", 7077, &sa));
    CHECK_EQ_I64(ntohl(sa.sin_addr.s_addr) >> 24, 127);
    CHECK_EQ_I64(ntohs(sa.sin_port), 7077);
    iol_call(u.l, do_close_listener, u.ls);
    iol_stop(u.l);
    side_free(&bad);
    side_free(&ss);
}

/* A raw socket connected to 127.0.0.1:port (20 s receive timeout), or -1. */
static int raw_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {20, 0};
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Write all n bytes of p to fd.  1 when they went. */
static int raw_write(int fd, const void *p, size_t n) {
    const uint8_t *b = p;
    while (n) {
        ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
        if (k <= 0) return 0;
        b += k;
        n -= (size_t)k;
    }
    return 1;
}

/* Whether fd's peer closes it (read gives 0 or a reset within 20 s). */
static int raw_closed(int fd) {
    char buf[256];
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0) {}
    return r == 0 || (r < 0 && errno == ECONNRESET);
}

/* Before a connection is trusted its frames are at most 1 MiB, whatever
 * max_frame says: a raw peer announcing 2 MiB is closed at the header.
 * Without a secret, a first frame handled raises the limit (a 2 MiB frame
 * after it arrives); with a secret, the handshake does. */
TEST(conn_preauth_frame_limit) {
    quiet_logs();
    side ss;
    side_init(&ss);
    conn_opts o = {(size_t)128 << 20, NULL, 0, 0, "test", 10000, 0};
    setup u = {iol_start("test"), o, &ss, NULL, 0, NULL, 0, NULL};
    CHECK(u.l);
    iol_call(u.l, do_listen, &u);
    CHECK_OK(u.rc);
    size_t big = (size_t)2 << 20;
    uint8_t h[FRAME_HEADER];
    CHECK_OK(frame_fill_header(h, FT_CHUNK, big, (size_t)128 << 20));
    CHECK(raw_send_expect_close(u.port, h, sizeof h));
    CHECK(side_wait(&ss, &ss.closed, 1));
    CHECK_STR_CONTAINS(reason_of(&ss), "a frame of 2097152 bytes before authentication");
    CHECK_EQ_I64(count_of(&ss, &ss.frames), 0);
    /* A small first frame, then the big one: both delivered. */
    uint8_t *stream = calloc(1, FRAME_HEADER + 1 + FRAME_HEADER + big);
    CHECK(stream);
    CHECK_OK(frame_fill_header(stream, FT_MSG, 1, 1 << 20));
    stream[FRAME_HEADER] = 'a';
    memcpy(stream + FRAME_HEADER + 1, h, sizeof h);
    int fd = raw_connect(u.port);
    int sent = fd >= 0 && raw_write(fd, stream, FRAME_HEADER + 1 + FRAME_HEADER + big);
    free(stream);
    CHECK(sent);
    CHECK(side_wait(&ss, &ss.frames, 2));
    CHECK_EQ_I64(ss.len[1], big);
    close(fd);
    CHECK(side_wait(&ss, &ss.closed, 2));
    iol_call(u.l, do_close_listener, u.ls);
    iol_stop(u.l);
    side_free(&ss);
    /* With a secret: 2 MiB before the handshake closes; after it, a 2 MiB
     * frame goes both ways. */
    side s2;
    side_init(&s2);
    s2.echo = 1;
    static const char secret[] = "shared secret";
    conn_opts so = {(size_t)128 << 20, secret, sizeof secret - 1, 0, "test", 10000, 0};
    setup u2 = {iol_start("test"), so, &s2, NULL, 0, NULL, 0, NULL};
    CHECK(u2.l);
    iol_call(u2.l, do_listen, &u2);
    CHECK_OK(u2.rc);
    CHECK(raw_send_expect_close(u2.port, h, sizeof h));
    CHECK(side_wait(&s2, &s2.closed, 1));
    CHECK_STR_CONTAINS(reason_of(&s2), "before authentication");
    side cs;
    side_init(&cs);
    uint8_t *body = malloc(big);
    CHECK(body);
    for (size_t i = 0; i < big; i++) body[i] = (uint8_t)(i * 31);
    cs.nsend = 1;
    cs.send_type[0] = FT_CHUNK, cs.send_body[0] = body, cs.send_len[0] = big;
    setup cu = {u2.l, so, &cs, NULL, u2.port, NULL, 0, NULL};
    iol_call(u2.l, do_connect, &cu);
    CHECK_OK(cu.rc);
    CHECK(side_wait(&cs, &cs.frames, 1));
    CHECK(cs.len[0] == big && !memcmp(cs.body[0], body, big));
    free(body);
    close_req cr = {&cs, cu.c};
    iol_call(u2.l, do_close_if_open, &cr);
    CHECK(side_wait(&cs, &cs.closed, 1));
    iol_call(u2.l, do_close_listener, u2.ls);
    iol_stop(u2.l);
    side_free(&cs);
    side_free(&s2);
}

/* A listener holds at most preauth_max connections that are not trusted
 * yet: with 4 silent ones held, a 5th is closed at once; once one of the
 * 4 sends a first frame (trusted now), a new connection is served. */
TEST(conn_preauth_connection_cap) {
    quiet_logs();
    side ss;
    side_init(&ss);
    conn_opts o = {1 << 20, NULL, 0, 0, "test", 20000, 4};
    setup u = {iol_start("test"), o, &ss, NULL, 0, NULL, 0, NULL};
    CHECK(u.l);
    iol_call(u.l, do_listen, &u);
    CHECK_OK(u.rc);
    int fds[4];
    for (int i = 0; i < 4; i++) CHECK((fds[i] = raw_connect(u.port)) >= 0);
    CHECK(side_wait(&ss, &ss.opened, 4)); /* no secret: open at once, not trusted yet */
    int fd = raw_connect(u.port);
    CHECK(fd >= 0);
    CHECK(raw_closed(fd));
    close(fd);
    CHECK_EQ_I64(count_of(&ss, &ss.opened), 4);
    uint8_t fr[FRAME_HEADER + 1];
    CHECK_OK(frame_fill_header(fr, FT_MSG, 1, 1 << 20));
    fr[FRAME_HEADER] = 'a';
    CHECK(raw_write(fds[0], fr, sizeof fr));
    CHECK(side_wait(&ss, &ss.frames, 1));
    CHECK((fd = raw_connect(u.port)) >= 0);
    CHECK(raw_write(fd, fr, sizeof fr));
    CHECK(side_wait(&ss, &ss.frames, 2));
    CHECK_EQ_I64(count_of(&ss, &ss.opened), 5);
    close(fd);
    for (int i = 0; i < 4; i++) close(fds[i]);
    CHECK(side_wait(&ss, &ss.closed, 5));
    iol_call(u.l, do_close_listener, u.ls);
    iol_stop(u.l);
    side_free(&ss);
}

/* Send bytes to the listener from a raw socket bound to source address
 * src (any 127.x.y.z: all of them are the loopback), then wait for the
 * server to close it.  1 when it did. */
static int raw_from(const char *src, int port, const void *bytes, size_t n) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa, me;
    memset(&me, 0, sizeof me);
    me.sin_family = AF_INET;
    inet_pton(AF_INET, src, &me.sin_addr);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {20, 0};
    int closed = 0;
    if (fd >= 0 && !setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) &&
        !bind(fd, (struct sockaddr *)&me, sizeof me) && !connect(fd, (struct sockaddr *)&sa, sizeof sa) &&
        raw_write(fd, bytes, n))
        closed = raw_closed(fd);
    if (fd >= 0) close(fd);
    return closed;
}

/* Lines of the file at path that contain every one of the n needles. */
static int count_lines(const char *path, const char *const *needles, int n) {
    FILE *f = fopen(path, "r");
    char line[2048];
    int count = 0;
    while (f && fgets(line, sizeof line, f)) {
        int all = 1;
        for (int i = 0; i < n && all; i++) all = strstr(line, needles[i]) != NULL;
        count += all;
    }
    if (f) fclose(f);
    return count;
}

/* A failed authentication is logged at warn on the side that refuses it,
 * with the peer's address and the reason -- a wrong secret (the server
 * hears only that the client closed after its challenge), no secret (a
 * message before the handshake), a malformed handshake -- at most one line
 * per peer address a second: five failures from one address in a row give
 * one line.  (Each peer is its own 127.x.y.z source address.) */
TEST(conn_auth_failures_logged) {
    log_set_level(LOG_WARN);
    char logpath[1024];
    snprintf(logpath, sizeof logpath, "%s/log", test_tmpdir());
    fflush(stderr);
    int saved = dup(2), lf = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(saved >= 0 && lf >= 0);
    dup2(lf, 2);
    close(lf);
    side ss;
    side_init(&ss);
    static const char secret[] = "shared secret";
    conn_opts o = {1 << 20, secret, sizeof secret - 1, 0, "test", 10000, 0};
    setup u = {iol_start("test"), o, &ss, NULL, 0, NULL, 0, NULL};
    int ok = u.l != NULL;
    if (ok) iol_call(u.l, do_listen, &u);
    ok = ok && u.rc == 0;
    /* A client with another secret, from 127.0.0.1. */
    side cs;
    side_init(&cs);
    conn_opts bad = {1 << 20, "wrong", 5, 0, "test", 10000, 0};
    setup cu = {u.l, bad, &cs, NULL, u.port, NULL, 0, NULL};
    if (ok) iol_call(u.l, do_connect, &cu);
    ok = ok && cu.rc == 0 && side_wait(&cs, &cs.closed, 1) && side_wait(&ss, &ss.closed, 1);
    /* No secret: a message first, from 127.0.0.2, five times. */
    uint8_t msgf[FRAME_HEADER + 1];
    frame_fill_header(msgf, FT_MSG, 1, 1 << 20);
    msgf[FRAME_HEADER] = 0x90;
    for (int i = 0; i < 5 && ok; i++) ok = raw_from("127.0.0.2", u.port, msgf, sizeof msgf);
    /* A malformed handshake (a HELLO of the wrong size), from 127.0.0.3. */
    uint8_t hello[FRAME_HEADER + 3] = {0, 0, 0, 3, FT_AUTH, 1, 2, 3};
    ok = ok && raw_from("127.0.0.3", u.port, hello, sizeof hello);
    ok = ok && side_wait(&ss, &ss.closed, 7);
    if (u.l) {
        if (u.ls) iol_call(u.l, do_close_listener, u.ls);
        iol_stop(u.l);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    side_free(&cs);
    side_free(&ss);
    CHECK(ok);
    const char *wrong[] = {"warn", "authentication failed: connection from 127.0.0.1:", "wrong secret"};
    const char *none[] = {"warn", "authentication failed: connection from 127.0.0.2:", "no secret"};
    const char *malformed[] = {"warn", "authentication failed: connection from 127.0.0.3:", "malformed handshake",
                               "wrong size"};
    const char *any[] = {"authentication failed"};
    char *all = NULL;
    FILE *f = fopen(logpath, "r");
    if (f) {
        static char text[16384];
        size_t k = fread(text, 1, sizeof text - 1, f);
        text[k] = 0;
        all = text;
        fclose(f);
    }
    if (count_lines(logpath, any, 1) != 4) fprintf(stderr, "  the log:\n%s", all ? all : "(none)\n");
    CHECK_EQ_I64(count_lines(logpath, wrong, 3), 1);
    CHECK_EQ_I64(count_lines(logpath, none, 3), 1);
    CHECK_EQ_I64(count_lines(logpath, malformed, 4), 1);
    CHECK_EQ_I64(count_lines(logpath, any, 1), 4); /* and the client's own refusal of the server */
}

/* Without a secret, an accepted connection that sends no first frame is
 * closed at the handshake deadline as one that does not authenticate
 * (else silent connections would hold the cap's places for good); one
 * that did send it stays open past it. */
TEST(conn_first_message_deadline) {
    quiet_logs();
    side ss;
    side_init(&ss);
    conn_opts o = {1 << 20, NULL, 0, 0, "test", 300, 0};
    setup u = {iol_start("test"), o, &ss, NULL, 0, NULL, 0, NULL};
    CHECK(u.l);
    iol_call(u.l, do_listen, &u);
    CHECK_OK(u.rc);
    int talker = raw_connect(u.port);
    CHECK(talker >= 0);
    uint8_t fr[FRAME_HEADER + 1];
    CHECK_OK(frame_fill_header(fr, FT_MSG, 1, 1 << 20));
    fr[FRAME_HEADER] = 'a';
    CHECK(raw_write(talker, fr, sizeof fr));
    CHECK(side_wait(&ss, &ss.frames, 1));
    CHECK(raw_send_expect_close(u.port, "", 0));
    CHECK(side_wait(&ss, &ss.closed, 1));
    CHECK_STR_CONTAINS(reason_of(&ss), "no first message within 300 ms");
    CHECK(raw_write(talker, fr, sizeof fr)); /* past the deadline, still served */
    CHECK(side_wait(&ss, &ss.frames, 2));
    CHECK_EQ_I64(count_of(&ss, &ss.closed), 1);
    close(talker);
    CHECK(side_wait(&ss, &ss.closed, 2));
    iol_call(u.l, do_close_listener, u.ls);
    iol_stop(u.l);
    side_free(&ss);
}

/* ------------------------------------------------------------ batches */

typedef struct batch_send {
    ioloop *l;
    conn *c;
    int port, rc, nmsg;
    int chunk_after; /* a raw chunk after this many messages (0: none) */
    side open;       /* its opened count */
} batch_send;

static void bs_open(conn *c, void *ud) {
    side *s = &((batch_send *)ud)->open;
    pthread_mutex_lock(&s->mu);
    s->opened++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}
static void bs_frame(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud) { free(body); }
static void bs_close(conn *c, const char *reason, void *ud) {}
static const conn_cb bs_cb = {bs_open, bs_frame, bs_close};

static void bs_connect(void *a) {
    batch_send *b = a;
    conn_opts o = {0, NULL, 0, 0, "test", 0, 0};
    b->rc = conn_connect(b->l, "127.0.0.1", b->port, &o, &bs_cb, b, &b->c);
}

/* On the loop: the messages (kill_task 1, 2, ...) in one batch, with the
 * chunk among them. */
static void bs_send(void *a) {
    batch_send *b = a;
    conn_batch_begin(b->c);
    conn_batch_begin(b->c); /* nested: the outer end sends */
    for (int i = 1; i <= b->nmsg && !b->rc; i++) {
        msg_val f[] = {msg_u((uint64_t)i)};
        b->rc = conn_send_msg(b->c, M_KILL_TASK, f, 1);
        if (!b->rc && i == b->chunk_after) b->rc = conn_send(b->c, FT_CHUNK, "x", 1);
    }
    if (!b->rc) b->rc = conn_batch_end(b->c);
    if (!b->rc) b->rc = conn_batch_end(b->c);
}

static void bs_close_conn(void *a) { conn_close(((batch_send *)a)->c, "done"); }

/* Read one frame from fd: its type and body (malloc'd).  1, or 0. */
static int raw_frame(int fd, uint8_t *type, uint8_t **body, size_t *len) {
    uint8_t h[FRAME_HEADER];
    size_t got = 0;
    while (got < FRAME_HEADER) {
        ssize_t k = read(fd, h + got, FRAME_HEADER - got);
        if (k <= 0) return 0;
        got += (size_t)k;
    }
    *len = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
    *type = h[4];
    *body = malloc(*len ? *len : 1);
    for (got = 0; got < *len;) {
        ssize_t k = read(fd, *body + got, *len - got);
        if (k <= 0) return 0;
        got += (size_t)k;
    }
    return 1;
}

/* The kill_task ids of an FT_MSGS (or FT_MSG) body, into ids: how many, or
 * -1 when one is not a kill_task. */
static int batch_ids(const uint8_t *body, size_t len, uint64_t *ids, int cap) {
    size_t off = 0, mlen;
    int n = 0, rc;
    while ((rc = msgs_next(body, len, &off, &mlen)) == 1 && n < cap) {
        msg m;
        int bad = msg_decode(&m, body + off - mlen, mlen) || m.tag != M_KILL_TASK;
        if (!bad) ids[n++] = m.f[0].u;
        msg_free(&m);
        if (bad) return -1;
    }
    return rc < 0 ? -1 : n;
}

/* Messages sent between conn_batch_begin and _end reach the socket as one
 * FT_MSGS frame, in order; a chunk sent among them follows the messages
 * before it and goes before those after it. */
TEST(conn_batch_one_frame_in_order) {
    quiet_logs();
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(ls >= 0 && !bind(ls, (struct sockaddr *)&sa, sizeof sa) && !listen(ls, 4));
    CHECK(!getsockname(ls, (struct sockaddr *)&sa, &sl));
    ioloop *l = iol_start("test");
    CHECK(l);
    batch_send b;
    memset(&b, 0, sizeof b);
    b.l = l;
    b.port = ntohs(sa.sin_port);
    b.nmsg = 5;
    side_init(&b.open);
    iol_call(l, bs_connect, &b);
    CHECK_OK(b.rc);
    int fd = accept(ls, NULL, NULL);
    CHECK(fd >= 0);
    CHECK(side_wait(&b.open, &b.open.opened, 1));
    struct timeval tv = {20, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    iol_call(l, bs_send, &b);
    CHECK_OK(b.rc);
    uint8_t type, *body = NULL;
    size_t len;
    uint64_t ids[8];
    CHECK(raw_frame(fd, &type, &body, &len));
    CHECK_EQ_I64(type, FT_MSGS);
    CHECK_EQ_I64(batch_ids(body, len, ids, 8), 5);
    for (int i = 0; i < 5; i++) CHECK_EQ_I64(ids[i], i + 1);
    free(body);
    /* Now with a chunk after the second: 2 messages, the chunk, 3 more. */
    b.chunk_after = 2;
    iol_call(l, bs_send, &b);
    CHECK_OK(b.rc);
    CHECK(raw_frame(fd, &type, &body, &len));
    CHECK_EQ_I64(type, FT_MSGS);
    CHECK_EQ_I64(batch_ids(body, len, ids, 8), 2);
    CHECK(ids[0] == 1 && ids[1] == 2);
    free(body);
    CHECK(raw_frame(fd, &type, &body, &len));
    CHECK(type == FT_CHUNK && len == 1 && body[0] == 'x');
    free(body);
    CHECK(raw_frame(fd, &type, &body, &len));
    CHECK_EQ_I64(type, FT_MSGS);
    CHECK_EQ_I64(batch_ids(body, len, ids, 8), 3);
    CHECK(ids[0] == 3 && ids[2] == 5);
    free(body);
    /* A batch of one is a plain message. */
    b.chunk_after = 0;
    b.nmsg = 1;
    iol_call(l, bs_send, &b);
    CHECK_OK(b.rc);
    CHECK(raw_frame(fd, &type, &body, &len));
    CHECK_EQ_I64(type, FT_MSG);
    CHECK_EQ_I64(batch_ids(body, len, ids, 8), 1);
    free(body);
    iol_call(l, bs_close_conn, &b);
    iol_stop(l);
    side_free(&b.open);
    close(fd);
    close(ls);
}

/* A peer's FT_MSGS frame reaches on_frame as one FT_MSG frame per message,
 * in order; one whose bytes are not whole messages closes the connection,
 * naming the batch, after the whole messages before them. */
TEST(conn_batch_received_split_and_checked) {
    quiet_logs();
    side ss;
    side_init(&ss);
    conn_opts o = {1 << 20, NULL, 0, 0, "test", 0, 0};
    setup u = {iol_start("test"), o, &ss, NULL, 0, NULL, 0, NULL};
    CHECK(u.l);
    iol_call(u.l, do_listen, &u);
    CHECK_OK(u.rc);
    ebuf body = EBUF_INIT;
    for (int i = 1; i <= 3; i++) {
        msg_val f[] = {msg_u((uint64_t)i)};
        CHECK_OK(msg_encode(&body, M_KILL_TASK, f, 1));
    }
    ebuf fr = EBUF_INIT;
    CHECK_OK(frame_put(&fr, FT_MSGS, body.p, body.len, 1 << 20));
    int fd = raw_connect(u.port);
    CHECK(fd >= 0);
    CHECK(raw_write(fd, fr.p, fr.len));
    CHECK(side_wait(&ss, &ss.frames, 3));
    uint64_t ids[3];
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_I64(ss.type[i], FT_MSG);
        CHECK_EQ_I64(batch_ids(ss.body[i], ss.len[i], ids, 1), 1);
        CHECK_EQ_I64(ids[0], i + 1);
    }
    /* Two whole messages, then a truncated one. */
    ebuf bad = EBUF_INIT;
    CHECK_OK(ebuf_append(&bad, body.p, body.len - 1));
    fr.len = 0;
    CHECK_OK(frame_put(&fr, FT_MSGS, bad.p, bad.len, 1 << 20));
    CHECK(raw_write(fd, fr.p, fr.len));
    CHECK(raw_closed(fd));
    CHECK(side_wait(&ss, &ss.closed, 1));
    CHECK_STR_CONTAINS(reason_of(&ss), "batch of messages");
    CHECK_EQ_I64(count_of(&ss, &ss.frames), 5);
    close(fd);
    iol_call(u.l, do_close_listener, u.ls);
    iol_stop(u.l);
    ebuf_free(&body);
    ebuf_free(&bad);
    ebuf_free(&fr);
    side_free(&ss);
}
