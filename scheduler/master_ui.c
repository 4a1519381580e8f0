/*
 * master_ui.c -- the master's page and metrics (see master_ui.h).
 */
#include <stdio.h>
#include <string.h>

#include "ember.h"
#include "err.h"
#include "html.h"
#include "master_ui.h"
#include "prom.h"

/* "512.0 MiB" of a count of MiB. */
static char *mib(int64_t v, char *out, size_t cap) { return html_fmt_bytes(v * ((int64_t)1 << 20), out, cap); }

static int workers_table(ebuf *b, const master *m, int64_t epoch) {
    static const char *const hdr[] = {"Worker Id", "Address", "State", "Cores", "Memory", "Last Heartbeat"};
    int rc = html_heading(b, "workers", "Workers") || html_table_begin(b, "workers-table", hdr, 6);
    for (int i = 0; i < master_nworkers(m) && !rc; i++) {
        master_worker_view w;
        master_worker_at(m, i, &w);
        char addr[300], t[HTML_FMT_MAX], a[HTML_FMT_MAX], u[HTML_FMT_MAX], cores[64], mem[128];
        snprintf(addr, sizeof addr, "%s:%d", w.host, w.port);
        snprintf(cores, sizeof cores, "%d (%d used)", w.cores, w.cores_used);
        snprintf(mem, sizeof mem, "%s (%s used)", mib(w.mem_mib, a, sizeof a), mib(w.mem_used, u, sizeof u));
        int64_t beat = (int64_t)w.last_beat_ms + epoch;
        rc = html_row_begin(b) || (w.webui[0] ? html_cell_link(b, w.webui, w.id) : html_cell(b, w.id)) ||
             html_cell(b, addr) || html_cell(b, w.state) || html_cell_sorted(b, cores, w.cores) ||
             html_cell_sorted(b, mem, w.mem_mib) || html_cell_sorted(b, html_fmt_time(beat, t, sizeof t), beat) ||
             html_row_end(b);
    }
    return rc || html_table_end(b);
}

/* The executors of an application, one line each, linked to their
 * worker's page when it has one. */
static int exec_list(ebuf *b, const master *m, const master_app_view *a) {
    int rc = html_raw(b, "<td>");
    for (int k = 0; k < a->nexecs && !rc; k++) {
        const master_exec *e = &a->execs[k];
        const char *webui = "";
        for (int i = 0; i < master_nworkers(m); i++) {
            master_worker_view w;
            master_worker_at(m, i, &w);
            if (!strcmp(w.id, e->worker)) webui = w.webui;
        }
        char mem[HTML_FMT_MAX];
        rc = (k ? html_raw(b, "<br>") : 0) || html_rawf(b, "%d on ", e->id) ||
             (webui[0] ? html_link(b, webui, e->worker) : html_text(b, e->worker)) ||
             html_rawf(b, " (%d cores, %s)", e->cores, mib(e->mem_mib, mem, sizeof mem));
    }
    return rc || html_raw(b, "</td>");
}

/* which: 0 running, 1 waiting, 2 completed. */
static int apps_table(ebuf *b, const master *m, int which, uint64_t now_ms, int64_t epoch) {
    static const char *const title[] = {"Running Applications", "Waiting Applications", "Completed Applications"};
    static const char *const ids[] = {"running", "waiting", "completed"};
    static const char *const hdr[] = {"Application ID", "Name",  "Cores",    "Memory per Executor", "Submitted Time",
                                      "User",           "State", "Duration", "Executors"};
    char tid[32];
    snprintf(tid, sizeof tid, "%s-table", ids[which]);
    int rc = html_heading(b, ids[which], title[which]) || html_table_begin(b, tid, hdr, 9);
    for (int i = master_napps(m) - 1; i >= 0 && !rc; i--) { /* the newest first, as Spark's */
        master_app_view a;
        master_app_at(m, i, &a);
        int is = a.done ? 2 : !strcmp(a.state, "WAITING") ? 1 : 0;
        if (is != which) continue;
        char cores[32], mem[HTML_FMT_MAX], t[HTML_FMT_MAX], d[HTML_FMT_MAX];
        int64_t start = (int64_t)a.start_ms + epoch, dur = (int64_t)((a.done ? a.end_ms : now_ms) - a.start_ms);
        snprintf(cores, sizeof cores, "%d", a.cores_granted);
        rc = html_row_begin(b) || html_cell(b, a.id) ||
             (a.ui[0] && !a.done ? html_cell_link(b, a.ui, a.name) : html_cell(b, a.name)) ||
             html_cell_sorted(b, cores, a.cores_granted) ||
             html_cell_sorted(b, mib(a.mem_mib, mem, sizeof mem), a.mem_mib) ||
             html_cell_sorted(b, html_fmt_time(start, t, sizeof t), start) || html_cell(b, a.user) ||
             html_cell(b, a.state) || html_cell_sorted(b, html_fmt_duration(dur, d, sizeof d), dur) ||
             exec_list(b, m, &a) || html_row_end(b);
    }
    return rc || html_table_end(b);
}

int master_ui_page(const master *m, const char *url, uint64_t now_ms, uint64_t wall_ms, ebuf *out) {
    int64_t epoch = (int64_t)wall_ms - (int64_t)now_ms;
    long long alive = 0, cores = 0, used = 0, mem = 0, memused = 0, running = 0, waiting = 0, done = 0;
    for (int i = 0; i < master_nworkers(m); i++) {
        master_worker_view w;
        master_worker_at(m, i, &w);
        if (strcmp(w.state, "ALIVE")) continue;
        alive++;
        cores += w.cores;
        used += w.cores_used;
        mem += w.mem_mib;
        memused += w.mem_used;
    }
    for (int i = 0; i < master_napps(m); i++) {
        master_app_view a;
        master_app_at(m, i, &a);
        if (a.done) done++;
        else if (!strcmp(a.state, "WAITING")) waiting++;
        else running++;
    }
    char title[300], a[HTML_FMT_MAX], u[HTML_FMT_MAX];
    snprintf(title, sizeof title, "ember master at %s", url);
    int rc = html_page_begin(out, "ember master", title) || html_raw(out, "<ul class=\"facts\"><li><b>URL:</b> ") ||
             html_text(out, url) ||
             html_rawf(out, "</li><li><b>Alive Workers:</b> %lld</li><li><b>Cores in use:</b> %lld Total, %lld Used"
                            "</li><li><b>Memory in use:</b> ",
                       alive, cores, used) ||
             html_rawf(out, "%s Total, %s Used</li>", mib(mem, a, sizeof a), mib(memused, u, sizeof u)) ||
             html_rawf(out, "<li><b>Applications:</b> %lld <a href=\"#running\">Running</a>, %lld "
                            "<a href=\"#waiting\">Waiting</a>, %lld <a href=\"#completed\">Completed</a></li>"
                            "<li><b>Status:</b> %s</li><li><b>JSON:</b> <a href=\"/json\">/json</a></li></ul>\n",
                       running, waiting, done, master_recovering(m) ? "RECOVERING" : "ALIVE") ||
             workers_table(out, m, epoch);
    for (int w = 0; w < 3 && !rc; w++) rc = apps_table(out, m, w, now_ms, epoch);
    return rc || html_page_end(out);
}

int master_ui_metrics(const master *m, ebuf *out) {
    long long alive = 0, apps = 0, waiting = 0;
    for (int i = 0; i < master_nworkers(m); i++) {
        master_worker_view w;
        master_worker_at(m, i, &w);
        alive += !strcmp(w.state, "ALIVE");
    }
    for (int i = 0; i < master_napps(m); i++) {
        master_app_view a;
        master_app_at(m, i, &a);
        apps += !a.done;
        waiting += !a.done && !strcmp(a.state, "WAITING");
    }
    return prom_spark_gauge(out, "master", "workers", "Workers the master knows (alive, dead or not back yet).",
                       master_nworkers(m)) ||
           prom_spark_gauge(out, "master", "aliveWorkers", "Workers alive.", (double)alive) ||
           prom_spark_gauge(out, "master", "apps", "Applications running or waiting.", (double)apps) ||
           prom_spark_gauge(out, "master", "waitingApps", "Applications waiting for executors.", (double)waiting);
}

/* name with every byte a metric name may not hold made '_'. */
static void metric_part(const char *name, char *out, size_t cap) {
    size_t k = 0;
    for (const char *c = name ? name : ""; *c && k + 1 < cap; c++)
        out[k++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ? *c : '_';
    out[k] = 0;
}

int master_ui_app_metrics(const master *m, uint64_t now_ms, uint64_t wall_ms, ebuf *out) {
    int64_t epoch = (int64_t)wall_ms - (int64_t)now_ms;
    int rc = 0;
    for (int i = 0; i < master_napps(m) && !rc; i++) {
        master_app_view a;
        master_app_at(m, i, &a);
        if (a.done) continue;
        char name[128], key[200];
        metric_part(a.name, name, sizeof name);
        snprintf(key, sizeof key, "%s_%lld_runtime_ms", name, (long long)((int64_t)a.start_ms + epoch));
        rc = prom_spark_gauge(out, "application", key, "How long the application has run, ms.",
                              (double)(now_ms - a.start_ms));
        snprintf(key, sizeof key, "%s_%lld_cores", name, (long long)((int64_t)a.start_ms + epoch));
        rc = rc || prom_spark_gauge(out, "application", key, "Cores granted to the application's executors.",
                                    (double)a.cores_granted);
    }
    return rc;
}
