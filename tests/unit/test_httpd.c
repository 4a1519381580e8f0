/*
 * test_httpd.c -- the bounded HTTP server (engine/httpd.c): its request
 * parser on good, partial and malformed requests, and the server over raw
 * sockets on 127.0.0.1: a GET answered; a silent connection and a partial
 * request closed at the deadline (300 ms here; 10 s by default); a NUL
 * byte answered 400 at once; another method 405; connections over the cap
 * answered 503 and closed while a GET within the cap is answered.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../test.h"
#include "ember.h"
#include "httpd.h"
#include "ioloop.h"
#include "log.h"

static int parse(const char *s, size_t n, http_req *r) {
    size_t used;
    return http_parse((const uint8_t *)s, n, 8192, r, &used);
}
#define PARSE(lit, r) parse(lit, sizeof lit - 1, r)

TEST(http_parse_requests) {
    http_req r;
    CHECK_EQ_I64(PARSE("GET /json HTTP/1.0\r\n\r\n", &r), HTTP_DONE);
    CHECK(!strcmp(r.method, "GET") && !strcmp(r.path, "/json") && !r.head);
    CHECK_EQ_I64(PARSE("HEAD /a?b=c HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\nrest", &r), HTTP_DONE);
    CHECK(r.head && !strcmp(r.path, "/a") && r.path_len == 2);
    CHECK(!strcmp(r.query, "b=c") && r.query_len == 3);
    /* The query: raw, up to '#'; none, empty, and one over HTTPD_QUERY_MAX. */
    CHECK_EQ_I64(PARSE("GET /x?q=0.5,0.9&s=%2Dr#frag HTTP/1.1\r\n\r\n", &r), HTTP_DONE);
    CHECK(!strcmp(r.path, "/x") && !strcmp(r.query, "q=0.5,0.9&s=%2Dr") && r.query_len == 16);
    CHECK_EQ_I64(PARSE("GET /x? HTTP/1.1\r\n\r\n", &r), HTTP_DONE);
    CHECK(!strcmp(r.path, "/x") && r.query_len == 0 && !r.query[0]);
    CHECK_EQ_I64(PARSE("GET /x#a?b HTTP/1.1\r\n\r\n", &r), HTTP_DONE);
    CHECK(!strcmp(r.path, "/x") && r.query_len == 0);
    CHECK_EQ_I64(PARSE("GET /json HTTP/1.0\r\n\r\n", &r), HTTP_DONE);
    CHECK(r.query_len == 0 && !r.query[0]);
    size_t used;
    static const char lf[] = "GET / HTTP/1.1\nHost: x\n\n";
    CHECK_EQ_I64(http_parse((const uint8_t *)lf, sizeof lf - 1, 8192, &r, &used), HTTP_DONE);
    CHECK_EQ_I64(used, sizeof lf - 1);
    /* Not whole yet. */
    CHECK_EQ_I64(PARSE("", &r), HTTP_MORE);
    CHECK_EQ_I64(PARSE("GET / HTTP/1.0\r\n", &r), HTTP_MORE);
    CHECK_EQ_I64(PARSE("GET / HTTP/1.0\r\nHost: x\r", &r), HTTP_MORE);
    CHECK_EQ_I64(PARSE("GET /very-long-path-but-not-done", &r), HTTP_MORE);
    /* Malformed, at once: a NUL anywhere, control bytes, a bare CR. */
    CHECK_EQ_I64(PARSE("GET /\0 HTTP/1.0\r\n\r\n", &r), HTTP_BAD);
    CHECK_EQ_I64(PARSE("GET /\0", &r), HTTP_BAD);
    CHECK_EQ_I64(PARSE("GET / HTTP/1.0\r\nX: \x01\r\n", &r), HTTP_BAD);
    CHECK_EQ_I64(PARSE("GET / HTTP/1.0\rX", &r), HTTP_BAD);
    CHECK_EQ_I64(PARSE("GET / HTTP/1.0\r\nX: \x7f\r\n", &r), HTTP_BAD);
    /* Bad request lines and headers. */
    CHECK_EQ_I64(PARSE("\r\nGET / HTTP/1.0\r\n\r\n", &r), HTTP_BAD);
    CHECK_EQ_I64(PARSE("GET /\r\n\r\n", &r), HTTP_BAD);
    CHECK_EQ_I64(PARSE("GET json HTTP/1.0\r\n\r\n", &r), HTTP_BAD);
    CHECK_EQ_I64(PARSE("GET  / HTTP/1.0\r\n\r\n", &r), HTTP_BAD);
    CHECK_EQ_I64(PARSE("GET / HTTP/1.0 \r\n\r\n", &r), HTTP_BAD);
    CHECK_EQ_I64(PARSE("GET / FTP/1.0\r\n\r\n", &r), HTTP_BAD);
    CHECK_EQ_I64(PARSE("GETTINGLONG / HTTP/1.0\r\n\r\n", &r), HTTP_BAD);
    CHECK_EQ_I64(PARSE("G(T / HTTP/1.0\r\n\r\n", &r), HTTP_BAD);
    CHECK_EQ_I64(PARSE("GET / HTTP/1.0\r\nno colon\r\n\r\n", &r), HTTP_BAD);
    CHECK_EQ_I64(PARSE("GET / HTTP/1.0\r\n: empty name\r\n\r\n", &r), HTTP_BAD);
    /* Too long: max bytes without an end; a path over HTTPD_PATH_MAX. */
    char big[9000];
    memset(big, 'a', sizeof big);
    memcpy(big, "GET /", 5);
    CHECK_EQ_I64(parse(big, sizeof big, &r), HTTP_BAD);
    CHECK_EQ_I64(http_parse((const uint8_t *)big, 100, 100, &r, &used), HTTP_BAD);
    CHECK_EQ_I64(http_parse((const uint8_t *)big, 99, 100, &r, &used), HTTP_MORE);
    int n = snprintf(big, sizeof big, "GET /%0*d HTTP/1.0\r\n\r\n", HTTPD_PATH_MAX, 0);
    CHECK_EQ_I64(parse(big, (size_t)n, &r), HTTP_BAD);
    n = snprintf(big, sizeof big, "GET %0*d HTTP/1.0\r\n\r\n", HTTPD_PATH_MAX, 0);
    big[4] = '/';
    CHECK_EQ_I64(parse(big, (size_t)n, &r), HTTP_DONE);
    CHECK_EQ_I64(r.path_len, HTTPD_PATH_MAX);
    n = snprintf(big, sizeof big, "GET /q?%0*d HTTP/1.0\r\n\r\n", HTTPD_QUERY_MAX, 0);
    CHECK_EQ_I64(parse(big, (size_t)n, &r), HTTP_DONE);
    CHECK_EQ_I64(r.query_len, HTTPD_QUERY_MAX);
    n = snprintf(big, sizeof big, "GET /q?%0*d HTTP/1.0\r\n\r\n", HTTPD_QUERY_MAX + 1, 0);
    CHECK_EQ_I64(parse(big, (size_t)n, &r), HTTP_BAD);
}

/* --------------------------------------------------------- the server */

static int answer(void *ud, const http_req *r, int *status, const char **ctype, ebuf *body) {
    (void)ud;
    if (strcmp(r->path, "/")) {
        *status = 404;
        return ebuf_append(body, "not found\n", 10);
    }
    *ctype = "text/plain";
    return ebuf_append(body, "hello\n", 6);
}

typedef struct srv {
    ioloop *l;
    httpd_opts o;
    httpd *h;
    int port, rc, conns;
} srv;

static void do_start(void *a) {
    srv *s = a;
    s->rc = httpd_start(s->l, "127.0.0.1", 0, &s->o, answer, NULL, &s->h, &s->port);
}

static void do_stop(void *a) { httpd_close(((srv *)a)->h); }

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

/* Read what the server sends on fd until it closes it (at most 20 s);
 * the bytes in buf (NUL-terminated).  1 when it closed, 0 otherwise. */
static int read_to_close(int fd, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = 0;
    for (;;) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 20000) != 1) return 0;
        char tmp[4096];
        ssize_t k = read(fd, tmp, sizeof tmp);
        if (k == 0 || (k < 0 && errno == ECONNRESET)) return 1;
        if (k < 0) return 0;
        size_t take = (size_t)k < cap - 1 - n ? (size_t)k : cap - 1 - n;
        memcpy(buf + n, tmp, take);
        n += take;
        buf[n] = 0;
    }
}

/* Send req (n bytes) on a new connection; the answer, read to the close. */
static int exchange(int port, const char *req, size_t n, char *buf, size_t cap) {
    int fd = raw_connect(port);
    if (fd < 0) return 0;
    int ok = send(fd, req, n, MSG_NOSIGNAL) == (ssize_t)n && read_to_close(fd, buf, cap);
    close(fd);
    return ok;
}
#define EXCHANGE(port, lit, buf) exchange(port, lit, sizeof lit - 1, buf, sizeof buf)

TEST(httpd_answers_and_deadline) {
    log_set_level(LOG_ERROR);
    srv s = {iol_start("test"), {4, 300, "test"}, NULL, 0, 0, 0};
    CHECK(s.l);
    iol_call(s.l, do_start, &s);
    CHECK_OK(s.rc);
    char buf[4096];
    CHECK(EXCHANGE(s.port, "GET / HTTP/1.0\r\n\r\n", buf));
    CHECK(!strncmp(buf, "HTTP/1.0 200 OK\r\n", 17));
    CHECK_STR_CONTAINS(buf, "Content-Length: 6\r\n");
    CHECK_STR_CONTAINS(buf, "\r\n\r\nhello\n");
    CHECK(EXCHANGE(s.port, "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", buf));
    CHECK(!strncmp(buf, "HTTP/1.0 200 OK\r\n", 17) && !strstr(buf, "hello"));
    CHECK(EXCHANGE(s.port, "GET /nothing HTTP/1.0\r\n\r\n", buf));
    CHECK(!strncmp(buf, "HTTP/1.0 404 Not Found\r\n", 24));
    CHECK(EXCHANGE(s.port, "POST / HTTP/1.0\r\n\r\n", buf));
    CHECK(!strncmp(buf, "HTTP/1.0 405 Method Not Allowed\r\n", 33));
    CHECK_STR_CONTAINS(buf, "Allow: GET, HEAD\r\n");
    /* A NUL byte: 400 at once, not at the deadline (no end of request). */
    CHECK(EXCHANGE(s.port, "GET /\0", buf));
    CHECK(!strncmp(buf, "HTTP/1.0 400 Bad Request\r\n", 26));
    CHECK(EXCHANGE(s.port, "GARBAGE\r\n\r\n", buf));
    CHECK(!strncmp(buf, "HTTP/1.0 400 Bad Request\r\n", 26));
    /* Silent, and a partial request: closed at the deadline, unanswered. */
    CHECK(EXCHANGE(s.port, "", buf));
    CHECK_EQ_I64(strlen(buf), 0);
    CHECK(EXCHANGE(s.port, "GET / HTTP/1.0\r\nHost: x\r\n", buf));
    CHECK_EQ_I64(strlen(buf), 0);
    /* A request that does not end within HTTPD_REQUEST_MAX bytes: 400. */
    char big[HTTPD_REQUEST_MAX];
    memset(big, 'a', sizeof big);
    memcpy(big, "GET /", 5);
    CHECK(exchange(s.port, big, sizeof big, buf, sizeof buf));
    CHECK(!strncmp(buf, "HTTP/1.0 400 Bad Request\r\n", 26));
    iol_call(s.l, do_stop, &s);
    iol_stop(s.l);
}

/* At most max_conns at once: with 3 of 4 held silent a GET is answered;
 * with 4 held, the next connection gets 503 and is closed; once the held
 * ones go, a GET is answered again. */
TEST(httpd_connection_cap) {
    log_set_level(LOG_ERROR);
    srv s = {iol_start("test"), {4, 20000, "test"}, NULL, 0, 0, 0};
    CHECK(s.l);
    iol_call(s.l, do_start, &s);
    CHECK_OK(s.rc);
    int held[4];
    char buf[4096];
    for (int i = 0; i < 3; i++) CHECK((held[i] = raw_connect(s.port)) >= 0);
    CHECK(EXCHANGE(s.port, "GET / HTTP/1.0\r\n\r\n", buf));
    CHECK(!strncmp(buf, "HTTP/1.0 200 OK\r\n", 17));
    CHECK((held[3] = raw_connect(s.port)) >= 0);
    for (int i = 0; i < 3; i++) { /* over the cap: refused before they send */
        CHECK(EXCHANGE(s.port, "", buf));
        CHECK(!strncmp(buf, "HTTP/1.0 503 Service Unavailable\r\n", 34));
    }
    for (int i = 0; i < 4; i++) close(held[i]);
    int answered = 0;
    for (int i = 0; i < 1000 && !answered; i++) { /* the server sees the 4 close, in its own time */
        CHECK(EXCHANGE(s.port, "GET / HTTP/1.0\r\n\r\n", buf));
        answered = !strncmp(buf, "HTTP/1.0 200 OK\r\n", 17);
    }
    CHECK(answered);
    iol_call(s.l, do_stop, &s);
    iol_stop(s.l);
}
