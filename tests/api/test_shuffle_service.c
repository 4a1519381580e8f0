/*
 * test_shuffle_service.c -- a worker's shuffle service (executor/
 * shuffle_server.c in the worker) on local-cluster, spoken to over a raw
 * socket: malformed requests do not bring it down, and it does not serve
 * what is outside the applications it runs executors for.  The recovery
 * tests of the service (a killed executor's outputs kept, a lost worker's
 * recomputed) are in test_cluster.c.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../test.h"
#include "buf.h"
#include "ember.h"
#include "frame.h"
#include "helpers.h"
#include "msg.h"

static em_ctx *open_lc(const char *master) {
    em_conf *conf = em_conf_new();
    test_conf_set(conf, "ember.local.dir", test_scratchdir());
    em_ctx *c = em_open(master, conf);
    if (!c) fprintf(stderr, "  em_open(%s): %s\n", master, em_errmsg());
    em_conf_free(conf);
    return c;
}

static int fn_service_port(const em_rec *in, em_emitter *out, const void *arg) {
    const char *p = getenv("EMBER_SHUFFLE_SERVICE_PORT");
    return em_emit_i64(out, p ? atoi(p) : 0);
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

/* Append message tag with its fields as a frame to out. */
static int put_msg(ebuf *out, int tag, const msg_val *f, int n) {
    ebuf b = EBUF_INIT;
    int rc = msg_encode(&b, tag, f, n);
    if (!rc) rc = frame_put(out, FT_MSG, b.p, b.len, 1 << 20);
    ebuf_free(&b);
    return rc;
}

/* The next frame from fd (through reader r) within 10 s, as the text of
 * its error message into text: 1 when it is an error message, 0 when the
 * connection closed or it is something else, -1 on a timeout. */
static int read_error(int fd, frame_reader *r, char *text, size_t cap) {
    uint8_t buf[1];
    text[0] = 0;
    for (;;) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 10000) != 1) return -1;
        if (read(fd, buf, 1) != 1) return 0; /* a byte at a time: nothing of the next frame is read */
        size_t used;
        int rc = fr_feed(r, buf, 1, &used);
        if (rc < 0) return 0;
        if (rc == 1) {
            uint8_t type;
            size_t len;
            uint8_t *body = fr_take(r, &type, &len);
            msg m;
            int ok = type == FT_MSG && !msg_decode(&m, body, len) && m.tag == M_ERROR;
            if (ok) snprintf(text, cap, "%.*s", (int)(m.f[1].len < cap - 1 ? m.f[1].len : cap - 1), (const char *)m.f[1].p);
            if (type == FT_MSG) msg_free(&m);
            free(body);
            return ok;
        }
    }
}

/* Whether fd is closed by its peer within 10 s (what it sends before is
 * read and dropped). */
static int closed_by_peer(int fd) {
    uint8_t buf[4096];
    for (;;) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 10000) != 1) return 0;
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) return 1;
    }
}

/* Malformed requests to a worker's shuffle service: garbage, a fetch
 * before shuffle_open, and an application id that tries to leave the work
 * directory.  The first two close their connection, the third is answered
 * with an error; the worker stays up and the next shuffle job reads its
 * outputs from it. */
TEST(shuffle_service_survives_malformed_requests) {
    em_ctx *c = open_lc("local-cluster[1,1,512]");
    CHECK(c);
    em_batch *b = NULL;
    CHECK_OK(em_collect(em_map(em_range(c, 0, 1, 1, 1), fn_service_port, NULL, 0), &b));
    size_t pos = 0;
    em_rec r;
    CHECK(em_batch_next(b, &pos, &r) == 1);
    int port = (int)rec_i64(&r);
    em_batch_free(b);
    CHECK(port > 0 && port != 7337); /* local-cluster's are any free port */
    /* Garbage: not a frame. */
    int fd = connect_local(port);
    CHECK(fd >= 0);
    const char junk[] = "\xff\xff\xff\xff\x09GET / HTTP/1.0\r\n\r\n";
    CHECK(write(fd, junk, sizeof junk - 1) == (ssize_t)(sizeof junk - 1));
    CHECK(closed_by_peer(fd));
    close(fd);
    /* A fetch before shuffle_open. */
    ebuf out = EBUF_INIT;
    msg_val fs[] = {msg_u(1), msg_u(0), msg_u(0), msg_u(1), msg_u(0)};
    CHECK_OK(put_msg(&out, M_FETCH_SEGMENT, fs, 5));
    fd = connect_local(port);
    CHECK(fd >= 0);
    CHECK(write(fd, out.p, out.len) == (ssize_t)out.len);
    CHECK(closed_by_peer(fd));
    close(fd);
    /* An application id out of the work directory, then a fetch: an
     * error answer naming the refusal; the connection stays usable. */
    out.len = 0;
    msg_val op[] = {msg_str("..")};
    CHECK_OK(put_msg(&out, M_SHUFFLE_OPEN, op, 1));
    CHECK_OK(put_msg(&out, M_FETCH_SEGMENT, fs, 5));
    CHECK_OK(put_msg(&out, M_FETCH_SEGMENT, fs, 5));
    fd = connect_local(port);
    CHECK(fd >= 0);
    CHECK(write(fd, out.p, out.len) == (ssize_t)out.len);
    frame_reader fr;
    fr_init(&fr, 1 << 20);
    for (int i = 0; i < 2; i++) {
        char text[300];
        CHECK(read_error(fd, &fr, text, sizeof text) == 1);
        CHECK_STR_CONTAINS(text, "serves no application");
    }
    fr_free(&fr);
    close(fd);
    ebuf_free(&out);
    /* The worker serves the next job's outputs: exact, no map task rerun. */
    int64_t mk = 7;
    em_stats s0, s1;
    em_get_stats(c, &s0);
    b = NULL;
    CHECK_OK(em_collect(em_reduce_by_key(em_map(em_range(c, 0, 7000, 1, 4), fn_mod_key, &mk, sizeof mk), fn_sum_i64,
                                         NULL, 0, 3),
                        &b));
    em_get_stats(c, &s1);
    int exact = expect_mod_sums(b, 7000, 7, "the sums the worker served");
    em_batch_free(b);
    CHECK(exact);
    CHECK_EQ_I64(s1.map_tasks_run - s0.map_tasks_run, 4);
    em_close(c);
}

