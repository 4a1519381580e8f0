/*
 * ui.h -- the driver's UI server: the application's pages and Spark's
 * /api/v1 on ember.ui.port (Spark's 4040), served by a loop thread of its
 * own so that the scheduler never waits for a browser.
 *
 * If the port is taken, the next ones are tried, up to
 * ember.port.maxRetries above it, as Spark does; the port taken is logged
 * ("ember UI at http://HOST:PORT") and ui_port says which.  Requests are
 * bounded as every ember HTTP port's (httpd.h).  /api/v1/... goes to
 * rest.h; the pages to uipages.h.
 */
#ifndef EM_UI_H
#define EM_UI_H

#include "rest.h"

/* Spark's defaults: spark.ui.port, spark.port.maxRetries. */
#define UI_PORT 4040
#define UI_MAX_RETRIES 16

typedef struct ui_conf {
    const char *bind_host;   /* the address to listen on; NULL: 0.0.0.0 */
    const char *public_host; /* the host the log line names; NULL: bind_host,
                                or the machine's name for 0.0.0.0 */
    int port;                /* ember.ui.port; 0: any free one */
    int max_retries;         /* ember.port.maxRetries; < 0: UI_MAX_RETRIES */
    int history;             /* 1: the history server's paths ("/" lists the
                                applications, each under /history/<app-id>);
                                0: a driver's (its application at "/") */
    int prometheus;          /* ember.ui.prometheus.enabled: the executors'
                                metrics at /metrics/executors/prometheus */
} ui_conf;

typedef struct ui_server ui_server;

/* Start serving p's applications (p is copied; what it lends must outlive
 * the server).  0 with *out set, or EM_EIO (every port tried is taken, or
 * the address is bad) / EM_ENOMEM, with a message naming the address and
 * the ports tried; nothing is left running. */
int ui_start(const ui_conf *c, const rest_provider *p, ui_server **out);
/* The port it listens on. */
int ui_port(const ui_server *u);
/* Close the port and every connection, stop the thread, free u.  NULL is
 * ignored.  Not from a request handler. */
void ui_stop(ui_server *u);

#endif
