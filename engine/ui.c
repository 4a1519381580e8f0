/*
 * ui.c -- the driver's UI server (see ui.h): a loop thread, an httpd on the
 * first free port from ember.ui.port, and the routing of a request to the
 * REST API or a page.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ember.h"
#include "err.h"
#include "httpd.h"
#include "ioloop.h"
#include "log.h"
#include "prom.h"
#include "ui.h"
#include "uipages.h"
#include "uiprom.h"

struct ui_server {
    ioloop *l;
    httpd *h;
    rest_provider p;
    int port, history, prometheus;
};

static int answer(void *ud, const http_req *r, int *status, const char **ctype, ebuf *body) {
    ui_server *u = ud;
    if (!strncmp(r->path, "/api/v1", 7) && (!r->path[7] || r->path[7] == '/'))
        return rest_answer(&u->p, r->path, r->query, status, ctype, body);
    if (u->prometheus && !strcmp(r->path, "/metrics/executors/prometheus")) {
        *ctype = PROM_CTYPE;
        return uiprom_executors(&u->p, body);
    }
    *ctype = "text/html; charset=utf-8";
    return uipage_route(&u->p, u->history, r->path, r->query, status, body);
}

typedef struct start_call {
    ui_server *u;
    const char *host;
    int port, rc;
    char msg[256]; /* the loop thread's message, carried back */
} start_call;

static void do_start(void *arg) {
    start_call *c = arg;
    httpd_opts o = {0, 0, "ui"};
    c->rc = httpd_start(c->u->l, c->host, c->port, &o, answer, c->u, &c->u->h, &c->u->port);
    if (c->rc) em__geterr(c->msg, sizeof c->msg);
}

static void do_close(void *arg) {
    ui_server *u = arg;
    httpd_close(u->h);
    u->h = NULL;
}

int ui_start(const ui_conf *c, const rest_provider *p, ui_server **out) {
    *out = NULL;
    const char *host = c && c->bind_host ? c->bind_host : "0.0.0.0";
    int port = c ? c->port : UI_PORT;
    int retries = c && c->max_retries >= 0 ? c->max_retries : UI_MAX_RETRIES;
    if (port < 0 || port > 65535) return em__seterr(EM_EINVAL, "ember.ui.port: %d is not a port", port);
    if (port == 0) retries = 0;
    ui_server *u = calloc(1, sizeof *u);
    if (!u) return em__seterr(EM_ENOMEM, "ui: out of memory");
    u->p = *p;
    u->history = c ? c->history : 0;
    u->prometheus = c ? c->prometheus : 0;
    if (!(u->l = iol_start("ui"))) {
        free(u);
        return em__lasterr();
    }
    int rc = EM_EIO;
    start_call sc;
    for (int i = 0; i <= retries && port + i <= 65535; i++) {
        memset(&sc, 0, sizeof sc);
        sc.u = u;
        sc.host = host;
        sc.port = port + i;
        iol_call(u->l, do_start, &sc);
        if (!(rc = sc.rc) || rc != EM_EIO) break;
    }
    if (rc) {
        iol_stop(u->l);
        free(u);
        if (retries) return em__seterr(rc, "ui: ports %d to %d taken; the last: %s", port, port + retries, sc.msg);
        return em__seterr(rc, "ui: %s", sc.msg);
    }
    char name[256];
    const char *shown = c && c->public_host ? c->public_host : host;
    if (!strcmp(shown, "0.0.0.0")) shown = !gethostname(name, sizeof name) ? (name[sizeof name - 1] = 0, name) : "localhost";
    /* As Spark warns that its UI could not bind the port asked for: a
     * user who opens 4040 must learn that this application is elsewhere. */
    if (c && c->port && u->port != c->port)
        log_msg(LOG_WARN, "ui", "port %d was taken: ember UI at http://%s:%d", c->port, shown, u->port);
    else log_msg(LOG_INFO, "ui", "ember UI at http://%s:%d", shown, u->port);
    *out = u;
    return 0;
}

int ui_port(const ui_server *u) { return u->port; }

void ui_stop(ui_server *u) {
    if (!u) return;
    iol_call(u->l, do_close, u);
    iol_stop(u->l);
    free(u);
}
