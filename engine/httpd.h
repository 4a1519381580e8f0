/*
 * httpd.h -- the small HTTP server every ember process that serves pages
 * or JSON uses (the master's status port, a worker's web UI, the driver's
 * UI).  One request per connection, answered with HTTP/1.0 and
 * "Connection: close"; GET and HEAD only.
 *
 * It is bounded against any peer:
 *   - at most max_conns connections at once (HTTPD_MAX_CONNS, lowered by
 *     conn_fd_share to a quarter of the descriptor limit, so that the
 *     status port never takes the descriptors the process's cluster port
 *     needs); one more is answered 503 and closed, with a warning logged
 *     at most once a second;
 *   - a connection has request_ms (HTTPD_REQUEST_MS, 10 s) from its
 *     accept to send its request and take the answer, then it is closed;
 *   - a request (its line and headers) is at most HTTPD_REQUEST_MAX
 *     bytes, parsed by length (http_parse): a NUL or another control byte,
 *     a bad request line or header, or a request too long is answered 400
 *     and closed at once; a method other than GET and HEAD 405.
 * Descriptors the process runs out of (EMFILE) are libuv's to handle: it
 * accepts and closes the waiting connections with its reserve descriptor,
 * so the loop does not spin.
 */
#ifndef EM_HTTPD_H
#define EM_HTTPD_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "ioloop.h"

#define HTTPD_MAX_CONNS 128
#define HTTPD_REQUEST_MS 10000
#define HTTPD_REQUEST_MAX 8192
#define HTTPD_PATH_MAX 1024
#define HTTPD_QUERY_MAX 1024

/* A parsed request: the method, the path (the target up to '?' or '#', as
 * sent: no percent-decoding) and the query (what follows '?' up to '#' or
 * the end, raw: the handler splits and decodes it; "" when there is none),
 * each NUL-terminated. */
typedef struct http_req {
    char method[8];
    char path[HTTPD_PATH_MAX + 1];
    size_t path_len;
    char query[HTTPD_QUERY_MAX + 1];
    size_t query_len;
    int head; /* HEAD: the answer has no body */
} http_req;

enum { HTTP_MORE = 0, HTTP_DONE = 1, HTTP_BAD = -1 };

/* Parse the first n bytes a client sent (at most max are ever taken).
 * HTTP_DONE: a whole request (line, headers, the empty line) is in p, *r
 * says what it asks for and *used how many bytes it took; HTTP_MORE: no
 * error yet, and fewer than max bytes came; HTTP_BAD: malformed (a NUL or
 * another control byte but tab, CR before anything but LF, a request line
 * that is not "METHOD SP /target SP HTTP/1.x", a header line without a
 * name and a colon, a path over HTTPD_PATH_MAX, a query over
 * HTTPD_QUERY_MAX) or max bytes with no end.
 * Pure: no I/O, no allocation; reads p[0..n) only. */
int http_parse(const uint8_t *p, size_t n, size_t max, http_req *r, size_t *used);

/* What a handler answers: status 200, 404, ...; ctype (static) the body's
 * Content-Type; body (appended to) the bytes.  On an error the handler
 * returns nonzero and the client gets 500. */
typedef int (*httpd_handler)(void *ud, const http_req *r, int *status, const char **ctype, ebuf *body);

typedef struct httpd_opts {
    int max_conns;       /* 0: HTTPD_MAX_CONNS (then conn_fd_share) */
    uint32_t request_ms; /* 0: HTTPD_REQUEST_MS */
    const char *component; /* for log lines */
} httpd_opts;

typedef struct httpd httpd;

/* Listen on host:port (port 0: any free one, *port_out says which), on l's
 * thread.  fn answers each whole request, on l's thread.  0, or EM_EINVAL
 * / EM_EIO / EM_ENOMEM with a message naming the address (nothing is left
 * open). */
int httpd_start(ioloop *l, const char *host, int port, const httpd_opts *o, httpd_handler fn, void *ud, httpd **out,
                int *port_out);
/* Stop listening and close every connection; the memory goes once the
 * handles are closed.  On l's thread (iol_stop does the same). */
void httpd_close(httpd *h);
/* Connections open now (on l's thread). */
int httpd_conns(const httpd *h);

#endif
