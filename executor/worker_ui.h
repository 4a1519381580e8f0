/*
 * worker_ui.h -- what a worker's web UI serves (Spark's worker page, port
 * 8081): its page (/) with its executors, running and finished, and links
 * to their logs; /json with Spark's worker fields; an executor's stdout or
 * stderr, as a page (/logPage/) or as text (/log), read from its
 * directory under the work directory with bounds; and, with
 * ember.ui.prometheus.enabled, /metrics/prometheus (Spark's worker
 * source).  Pure but for reading the logs: worker.c gives the state.
 *
 * The log endpoints take appId, executorId, logType (stdout or stderr) and
 * optionally offset and byteLength (default: the last 100 KiB; at most
 * WUI_LOG_MAX bytes a request).  Only a file of an executor directory
 * right under the work directory is ever read: appId must be a plain
 * directory name (no '/', no "..", not starting with '.', no control
 * byte), executorId a number, and no component may be a symbolic link;
 * anything else is 400, a log that is not there 404.
 */
#ifndef EM_WORKER_UI_H
#define EM_WORKER_UI_H

#include <stdint.h>

#include "buf.h"
#include "httpd.h"

#define WUI_LOG_DEFAULT (100 * 1024)
#define WUI_LOG_MAX (1024 * 1024)

/* One executor as the page shows it.  state: LAUNCHING, RUNNING, or once
 * finished EXITED, KILLED or FAILED. */
typedef struct wui_exec {
    const char *app, *state;
    int id, cores;
    int64_t mem_mib;
} wui_exec;

typedef struct wui_state {
    const char *id, *host, *dir;     /* dir: the work directory (absolute) */
    const char *master_url, *master_webui, *webui; /* "" when not known */
    int cores, cores_used;
    int64_t mem_mib, mem_used;
    const wui_exec *running;         /* alive: launching or running */
    int nrunning;
    const wui_exec *finished;        /* the newest first */
    int nfinished;
    int prom;                        /* ember.ui.prometheus.enabled */
} wui_state;

/* Answer request r from state s (httpd.h's handler contract: status,
 * ctype and body set; 0, or nonzero for a 500). */
int worker_ui_answer(const wui_state *s, const http_req *r, int *status, const char **ctype, ebuf *body);

#endif
