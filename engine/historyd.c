/*
 * historyd.c -- the history server daemon (see historyd.h): its command
 * line, the first look at the log directory, the UI server over the
 * history's applications, a thread that looks again every update
 * interval, and the signals that stop it.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "daemon.h"
#include "ember.h"
#include "err.h"
#include "history.h"
#include "historyd.h"
#include "log.h"
#include "ui.h"

typedef struct scanner {
    history *h;
    int64_t every_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
} scanner;

static void *scan_main(void *arg) {
    scanner *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += s->every_ms / 1000;
        until.tv_nsec += (long)(s->every_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!s->stop && pthread_cond_timedwait(&s->cv, &s->mu, &until) != ETIMEDOUT) {}
        if (s->stop) break;
        pthread_mutex_unlock(&s->mu);
        int rc = history_scan(s->h);
        if (rc < 0) log_msg(LOG_WARN, "history", "%s", em_errmsg());
        else if (rc > 0) log_msg(LOG_INFO, "history", "loaded %d event logs", rc);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static const char usage[] =
    "usage: ember-history-server [--host HOST] [--port PORT] [--conf KEY=VALUE]... [LOG_DIR]\n"
    "  Serves the web UI and Spark's REST API (/api/v1) of every application whose\n"
    "  event log is in LOG_DIR (ember.history.fs.logDirectory, default\n"
    "  /tmp/ember-events): ember's and Apache Spark's logs, plain, zstd or lz4,\n"
    "  single files or eventlog_v2_ directories, finished or in progress.\n"
    "  HOST:PORT: where it listens (default 127.0.0.1 and ember.history.ui.port,\n"
    "  18080; PORT 0: any free port, which the log line names).\n"
    "  Settings: ember.history.fs.update.interval (10s: how often the directory\n"
    "  is read again), ember.history.retainedApplications (50: applications whose\n"
    "  UI stays loaded), ember.ui.retainedJobs, retainedStages, retainedTasks,\n"
    "  ember.log.level.  Stops on SIGTERM or SIGINT.\n";

int historyd_main(int argc, char **argv) {
    char host[256] = "127.0.0.1";
    int port = -1;
    const char *dir_arg = NULL;
    em_conf *conf = em_conf_new();
    if (!conf) return 1;
    const daemon_opt opts[] = {
        {.name = "--host", .kind = DA_STR, .out = host, .cap = sizeof host},
        {.name = "--port", .kind = DA_INT, .out = &port, .min = 0, .max = 65535},
        {.name = "--conf", .kind = DA_CONF},
        {.name = NULL},
    };
    const daemon_cmd cmd = {"ember-history-server", usage, opts, &dir_arg};
    int arc = daemon_args_parse(&cmd, argc, argv, conf);
    if (arc) {
        em_conf_free(conf);
        return arc == 1 ? 0 : 2;
    }
    if (port < 0) port = (int)conf_i64(conf, "ember.history.ui.port");
    history_conf hc;
    memset(&hc, 0, sizeof hc);
    hc.dir = dir_arg ? dir_arg : em_conf_get(conf, "ember.history.fs.logDirectory");
    hc.lim = (status_limits){(int)conf_i64(conf, "ember.ui.retainedJobs"), (int)conf_i64(conf, "ember.ui.retainedStages"),
                             (int)conf_i64(conf, "ember.ui.retainedTasks"),
                             (int)conf_i64(conf, "ember.ui.retainedDeadExecutors")};
    hc.retained_apps = (int)conf_i64(conf, "ember.history.retainedApplications");
    scanner s = {.every_ms = conf_duration_ms(conf, "ember.history.fs.update.interval")};
    int retries = (int)conf_i64(conf, "ember.port.maxRetries");
    history *h = history_new(&hc);
    em_conf_free(conf);
    if (!h) {
        fprintf(stderr, "ember-history-server: %s\n", em_errmsg());
        return 1;
    }
    /* The directory must be there, as Spark's history server requires. */
    int n = history_scan(h);
    if (n < 0) {
        fprintf(stderr, "ember-history-server: %s\n", em_errmsg());
        history_free(h);
        return 1;
    }
    sigset_t sigs;
    daemon_block_signals(&sigs);
    rest_provider p;
    history_provider(h, &p);
    ui_conf uc = {host, NULL, port, retries, 1, 0};
    ui_server *ui = NULL;
    if (ui_start(&uc, &p, &ui)) {
        fprintf(stderr, "ember-history-server: %s\n", em_errmsg());
        history_free(h);
        return 1;
    }
    s.h = h;
    pthread_mutex_init(&s.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s.cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_t th;
    int started = pthread_create(&th, NULL, scan_main, &s) == 0;
    if (!started) log_msg(LOG_WARN, "history", "cannot start the scanning thread: the directory is read once only");
    log_msg(LOG_INFO, "history", "listening on http://%s:%d, %d event logs of %s loaded, read again every %lld ms",
            host, ui_port(ui), n, hc.dir, (long long)s.every_ms);
    /* A test that started it on port 0 learns the port. */
    const char *rfd = getenv("EMBER_READY_FD");
    if (rfd && *rfd) {
        int fd = atoi(rfd);
        dprintf(fd, "%d\n", ui_port(ui));
        close(fd);
    }
    int sig = 0;
    sigwait(&sigs, &sig);
    log_msg(LOG_INFO, "history", "stopping on signal %d", sig);
    pthread_mutex_lock(&s.mu);
    s.stop = 1;
    pthread_cond_signal(&s.cv);
    pthread_mutex_unlock(&s.mu);
    if (started) pthread_join(th, NULL);
    ui_stop(ui);
    history_free(h);
    pthread_mutex_destroy(&s.mu);
    pthread_cond_destroy(&s.cv);
    return 0;
}
