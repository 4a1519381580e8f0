/*
 * httpd.c -- a bounded HTTP/1.0 server on libuv (see httpd.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "ember.h"
#include "err.h"
#include "httpd.h"
#include "log.h"

/* ------------------------------------------------------------- parsing */

/* RFC 9110's tchar: what a method and a header name are made of. */
static int is_tchar(uint8_t c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return 1;
    static const char extra[] = "!#$%&'*+-.^_`|~";
    return c && memchr(extra, c, sizeof extra - 1) != NULL;
}

/* "METHOD SP /target SP HTTP/d.d" (len bytes, no line end).  0 or -1. */
static int parse_request_line(const uint8_t *p, size_t len, http_req *r) {
    size_t i = 0;
    while (i < len && is_tchar(p[i])) i++;
    if (i == 0 || i >= sizeof r->method || i == len || p[i] != ' ') return -1;
    memcpy(r->method, p, i);
    r->method[i] = 0;
    size_t t = ++i;
    while (i < len && p[i] != ' ') i++;
    if (i == t || p[t] != '/' || i == len) return -1;
    size_t path_end = t;
    while (path_end < i && p[path_end] != '?' && p[path_end] != '#') path_end++;
    if (path_end - t > HTTPD_PATH_MAX) return -1;
    memcpy(r->path, p + t, path_end - t);
    r->path[path_end - t] = 0;
    r->path_len = path_end - t;
    if (path_end < i && p[path_end] == '?') {
        size_t q = path_end + 1, q_end = q;
        while (q_end < i && p[q_end] != '#') q_end++;
        if (q_end - q > HTTPD_QUERY_MAX) return -1;
        memcpy(r->query, p + q, q_end - q);
        r->query[q_end - q] = 0;
        r->query_len = q_end - q;
    }
    const uint8_t *v = p + i + 1;
    size_t vlen = len - i - 1;
    if (vlen != 8 || memcmp(v, "HTTP/", 5) || v[5] < '0' || v[5] > '9' || v[6] != '.' || v[7] < '0' || v[7] > '9')
        return -1;
    r->head = !strcmp(r->method, "HEAD");
    return 0;
}

/* "name: value" (len bytes, no line end).  0 or -1. */
static int check_header(const uint8_t *p, size_t len) {
    size_t i = 0;
    while (i < len && is_tchar(p[i])) i++;
    return i > 0 && i < len && p[i] == ':' ? 0 : -1;
}

int http_parse(const uint8_t *p, size_t n, size_t max, http_req *r, size_t *used) {
    size_t lim = n < max ? n : max, s = 0;
    int first = 1;
    *used = 0;
    memset(r, 0, sizeof *r);
    for (;;) {
        size_t e = s;
        for (; e < lim && p[e] != '\n'; e++) {
            uint8_t c = p[e];
            if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) return HTTP_BAD;
            if (c == '\r' && e + 1 < lim && p[e + 1] != '\n') return HTTP_BAD;
        }
        if (e == lim) return lim >= max ? HTTP_BAD : HTTP_MORE;
        size_t len = e - s;
        if (len && p[e - 1] == '\r') len--;
        if (first) {
            if (parse_request_line(p + s, len, r)) return HTTP_BAD;
            first = 0;
        } else if (!len) {
            *used = e + 1;
            return HTTP_DONE;
        } else if (check_header(p + s, len)) {
            return HTTP_BAD;
        }
        s = e + 1;
    }
}

/* ------------------------------------------------------------- serving */

typedef struct hclient hclient;

struct httpd {
    iol_owner owner; /* first: the listener's data */
    uv_tcp_t tcp;
    ioloop *l;
    httpd_handler fn;
    void *ud;
    char comp[32];
    int max_conns;
    uint32_t request_ms;
    int nconns;      /* connections open (their descriptors: closed at once by
                        client_close) */
    int nclients;    /* clients not yet freed */
    int listening;   /* the listener's handle is not yet closed */
    int closing;
    hclient *clients;
    uint64_t refused, refused_ms;
    char addr[64];
};

struct hclient {
    iol_owner owner; /* first: both handles' data */
    uv_tcp_t tcp;
    uv_timer_t deadline;
    httpd *h;
    hclient *prev, *next;
    int handles; /* open: freed at 0 */
    int closing, answered;
    size_t n;
    uint8_t req[HTTPD_REQUEST_MAX];
};

static void maybe_free(httpd *h) {
    if (h->closing && !h->listening && !h->nclients) free(h);
}

static void client_freed(uv_handle_t *hd) {
    hclient *k = hd->data;
    if (--k->handles) return;
    httpd *h = k->h;
    free(k);
    h->nclients--;
    maybe_free(h);
}

static void client_close(hclient *k) {
    if (k->closing) return;
    k->closing = 1;
    k->h->nconns--;
    if (k->prev) k->prev->next = k->next;
    else k->h->clients = k->next;
    if (k->next) k->next->prev = k->prev;
    uv_close((uv_handle_t *)&k->deadline, client_freed);
    uv_close((uv_handle_t *)&k->tcp, client_freed);
}

static void client_owner_close(void *self, const char *reason) {
    (void)reason;
    client_close(self);
}

static const char *status_text(int status) {
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 503: return "Service Unavailable";
    default: return "Internal Server Error";
    }
}

/* The whole answer: head, and body unless HEAD. */
static int build(ebuf *out, int status, const char *ctype, const ebuf *body, int head) {
    char line[320];
    int n = snprintf(line, sizeof line,
                     "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n",
                     status, status_text(status), ctype, body->len, status == 405 ? "Allow: GET, HEAD\r\n" : "");
    if (ebuf_append(out, line, (size_t)n)) return -1;
    return !head && body->len && ebuf_append(out, body->p, body->len) ? -1 : 0;
}

typedef struct hwrite {
    uv_write_t req;
    hclient *k;
    uint8_t *bytes;
} hwrite;

static void written(uv_write_t *req, int status) {
    hwrite *w = (hwrite *)req;
    (void)status;
    client_close(w->k);
    free(w->bytes);
    free(w);
}

static void send_answer(hclient *k, int status, const char *ctype, const ebuf *body, int head) {
    ebuf out = EBUF_INIT;
    hwrite *w = NULL;
    if (build(&out, status, ctype, body, head) || !(w = malloc(sizeof *w))) {
        ebuf_free(&out);
        client_close(k);
        return;
    }
    size_t len;
    w->k = k;
    w->bytes = ebuf_steal(&out, &len);
    uv_buf_t b = uv_buf_init((char *)w->bytes, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&k->tcp, &b, 1, written)) {
        free(w->bytes);
        free(w);
        client_close(k);
    }
}

static void send_text(hclient *k, int status, const char *text, int head) {
    ebuf body = EBUF_INIT;
    if (ebuf_append(&body, text, strlen(text))) {
        client_close(k);
        return;
    }
    send_answer(k, status, "text/plain; charset=utf-8", &body, head);
    ebuf_free(&body);
}

static void answer(hclient *k, const http_req *r) {
    httpd *h = k->h;
    if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD")) {
        send_text(k, 405, "method not allowed: GET and HEAD only\n", 0);
        return;
    }
    ebuf body = EBUF_INIT;
    int status = 200;
    const char *ctype = "text/plain; charset=utf-8";
    if (h->fn(h->ud, r, &status, &ctype, &body)) {
        ebuf_free(&body);
        send_text(k, 500, "internal error\n", r->head);
        return;
    }
    send_answer(k, status, ctype, &body, r->head);
    ebuf_free(&body);
}

static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf) {
    hclient *k = hd->data;
    (void)suggested;
    buf->base = (char *)k->req + k->n;
    buf->len = sizeof k->req - k->n;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    hclient *k = s->data;
    (void)buf;
    if (nread < 0) {
        client_close(k);
        return;
    }
    if (k->answered) return;
    k->n += (size_t)nread;
    http_req r;
    size_t used;
    int rc = http_parse(k->req, k->n, sizeof k->req, &r, &used);
    if (rc == HTTP_MORE) return;
    uv_read_stop(s);
    k->answered = 1;
    if (rc == HTTP_BAD) send_text(k, 400, "bad request\n", 0);
    else answer(k, &r);
}

static void on_deadline(uv_timer_t *t) { client_close(t->data); }

static void refused_closed(uv_handle_t *hd) { free(hd); }

/* Over the cap: the connection is accepted, told 503 if its socket takes
 * it at once, and closed. */
static void refuse(httpd *h, uv_stream_t *server) {
    uv_tcp_t *t = malloc(sizeof *t);
    if (!t) return;
    if (uv_tcp_init(iol_uv(h->l), t)) {
        free(t);
        return;
    }
    t->data = NULL;
    if (!uv_accept(server, (uv_stream_t *)t)) {
        static const char busy[] = "HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                                   "Content-Length: 5\r\nConnection: close\r\n\r\nbusy\n";
        uv_buf_t b = uv_buf_init((char *)busy, sizeof busy - 1);
        uv_try_write((uv_stream_t *)t, &b, 1);
    }
    uv_close((uv_handle_t *)t, refused_closed);
    h->refused++;
    uint64_t now = uv_now(iol_uv(h->l));
    if (h->refused_ms && now - h->refused_ms < 1000) return;
    log_msg(LOG_WARN, h->comp, "status port %s: %d connections open: %llu new one%s refused", h->addr, h->nconns,
            (unsigned long long)h->refused, h->refused == 1 ? "" : "s");
    h->refused = 0;
    h->refused_ms = now;
}

static void on_accept(uv_stream_t *server, int status) {
    httpd *h = server->data;
    if (status < 0) {
        log_msg(LOG_WARN, h->comp, "status port %s: accept failed: %s", h->addr, uv_strerror(status));
        return;
    }
    if (h->closing) return;
    if (h->nconns >= h->max_conns) {
        refuse(h, server);
        return;
    }
    hclient *k = malloc(sizeof *k);
    if (!k) return;
    memset(k, 0, offsetof(hclient, req));
    k->owner.close = client_owner_close;
    k->h = h;
    if (uv_tcp_init(iol_uv(h->l), &k->tcp)) {
        free(k);
        return;
    }
    uv_timer_init(iol_uv(h->l), &k->deadline); /* cannot fail */
    k->tcp.data = k->deadline.data = k;
    k->handles = 2;
    h->nconns++;
    h->nclients++;
    k->next = h->clients;
    if (h->clients) h->clients->prev = k;
    h->clients = k;
    uv_timer_start(&k->deadline, on_deadline, h->request_ms, 0);
    if (uv_accept(server, (uv_stream_t *)&k->tcp) || uv_read_start((uv_stream_t *)&k->tcp, on_alloc, on_read))
        client_close(k);
}

static void listener_closed(uv_handle_t *hd) {
    httpd *h = hd->data;
    h->listening = 0;
    maybe_free(h);
}

void httpd_close(httpd *h) {
    if (!h || h->closing) return;
    h->closing = 1;
    while (h->clients) client_close(h->clients);
    uv_close((uv_handle_t *)&h->tcp, listener_closed);
}

static void httpd_owner_close(void *self, const char *reason) {
    (void)reason;
    httpd_close(self);
}

int httpd_conns(const httpd *h) { return h->nconns; }

int httpd_start(ioloop *l, const char *host, int port, const httpd_opts *o, httpd_handler fn, void *ud, httpd **out,
                int *port_out) {
    struct sockaddr_in sa;
    *out = NULL;
    if (conn_resolve(host, port, &sa)) return em__preferr(EM_EINVAL, "status port %s:%d", host, port);
    httpd *h = calloc(1, sizeof *h);
    if (!h) return em__seterr(EM_ENOMEM, "status port: out of memory");
    h->owner.close = httpd_owner_close;
    h->l = l;
    h->fn = fn;
    h->ud = ud;
    snprintf(h->comp, sizeof h->comp, "%s", o && o->component ? o->component : "http");
    h->max_conns = conn_fd_share(o && o->max_conns > 0 ? o->max_conns : HTTPD_MAX_CONNS);
    h->request_ms = o && o->request_ms ? o->request_ms : HTTPD_REQUEST_MS;
    int rc = uv_tcp_init(iol_uv(l), &h->tcp);
    if (rc) {
        free(h);
        return em__seterr(EM_EIO, "status port %s:%d: %s", host, port, uv_strerror(rc));
    }
    h->tcp.data = h;
    h->listening = 1;
    rc = uv_tcp_bind(&h->tcp, (const struct sockaddr *)&sa, 0);
    if (!rc) rc = uv_listen((uv_stream_t *)&h->tcp, 128, on_accept);
    if (rc) {
        httpd_close(h);
        return em__seterr(EM_EIO, "status port %s:%d: %s", host, port, uv_strerror(rc));
    }
    struct sockaddr_storage got;
    int len = sizeof got;
    int bound = port;
    if (!uv_tcp_getsockname(&h->tcp, (struct sockaddr *)&got, &len) && got.ss_family == AF_INET)
        bound = ntohs(((struct sockaddr_in *)&got)->sin_port);
    snprintf(h->addr, sizeof h->addr, "%s:%d", host, bound);
    if (port_out) *port_out = bound;
    *out = h;
    return 0;
}
