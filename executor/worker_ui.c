/*
 * worker_ui.c -- a worker's web UI: its page, /json, the executors' logs
 * and its metrics (see worker_ui.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ember.h"
#include "err.h"
#include "html.h"
#include "json.h"
#include "prom.h"
#include "urlquery.h"
#include "worker_ui.h"

#define HTML "text/html; charset=utf-8"
#define TEXT "text/plain; charset=utf-8"

static int answer_text(int *status, const char **ctype, ebuf *body, int code, const char *text) {
    *status = code;
    *ctype = TEXT;
    return ebuf_append(body, text, strlen(text)) ? EM_ENOMEM : 0;
}

/* "/logPage/?appId=A&executorId=E&logType=T" of an executor's log. */
static int log_href(ebuf *b, const char *app, int id, const char *type) {
    return ebuf_append(b, "/logPage/?appId=", 16) || urlq_encode(b, app) ||
           html_rawf(b, "&executorId=%d&logType=%s", id, type);
}

/* ------------------------------------------------------------- the page */

static int exec_table(ebuf *b, const char *id, const wui_exec *v, int n) {
    static const char *const hdr[] = {"ExecutorID", "State", "Cores", "Memory", "Application ID", "Logs"};
    int rc = html_table_begin(b, id, hdr, 6);
    for (int i = 0; i < n && !rc; i++) {
        char mem[HTML_FMT_MAX];
        ebuf h = EBUF_INIT;
        /* The links' text is escaped as an attribute by html_link. */
        rc = html_row_begin(b) || html_cell_i64(b, v[i].id) || html_cell(b, v[i].state) ||
             html_cell_i64(b, v[i].cores) ||
             html_cell_sorted(b, html_fmt_bytes(v[i].mem_mib << 20, mem, sizeof mem), v[i].mem_mib) ||
             html_cell(b, v[i].app) || html_raw(b, "<td>") || log_href(&h, v[i].app, v[i].id, "stdout") ||
             ebuf_append(&h, "", 1) || html_link(b, (const char *)h.p, "stdout") || html_raw(b, " ");
        h.len = 0;
        rc = rc || log_href(&h, v[i].app, v[i].id, "stderr") || ebuf_append(&h, "", 1) ||
             html_link(b, (const char *)h.p, "stderr") || html_raw(b, "</td>") || html_row_end(b);
        ebuf_free(&h);
    }
    return rc || html_table_end(b);
}

static int page(const wui_state *s, ebuf *b) {
    char title[300], t1[HTML_FMT_MAX], t2[HTML_FMT_MAX];
    snprintf(title, sizeof title, "ember worker %s", s->id);
    int rc = html_page_begin(b, "ember worker", title) || html_raw(b, "<ul class=\"facts\"><li><b>ID:</b> ") ||
             html_text(b, s->id) || html_raw(b, "</li><li><b>Master URL:</b> ") ||
             (s->master_webui[0] ? html_link(b, s->master_webui, s->master_url) : html_text(b, s->master_url)) ||
             html_rawf(b, "</li><li><b>Cores:</b> %d (%d Used)</li><li><b>Memory:</b> %s (%s Used)</li>", s->cores,
                       s->cores_used, html_fmt_bytes(s->mem_mib << 20, t1, sizeof t1),
                       html_fmt_bytes(s->mem_used << 20, t2, sizeof t2)) ||
             html_raw(b, "<li><b>JSON:</b> <a href=\"/json\">/json</a></li></ul>\n") ||
             html_heading(b, "running", "Running Executors") ||
             exec_table(b, "running-table", s->running, s->nrunning) ||
             html_heading(b, "finished", "Finished Executors") ||
             exec_table(b, "finished-table", s->finished, s->nfinished);
    return rc || html_page_end(b);
}

/* ------------------------------------------------------------- /json */

static void json_execs(json_writer *w, const char *key, const wui_exec *v, int n) {
    json_w_key(w, key);
    json_w_begin_array(w);
    for (int i = 0; i < n; i++) {
        json_w_begin_object(w);
        json_w_key(w, "id");
        json_w_i64(w, v[i].id);
        json_w_key(w, "memory");
        json_w_i64(w, v[i].mem_mib);
        json_w_key(w, "appid");
        json_w_str(w, v[i].app);
        json_w_key(w, "appdesc"); /* what the worker knows of it */
        json_w_begin_object(w);
        json_w_key(w, "cores");
        json_w_i64(w, v[i].cores);
        json_w_key(w, "memoryperslave");
        json_w_i64(w, v[i].mem_mib);
        json_w_end_object(w);
        json_w_key(w, "cores");
        json_w_i64(w, v[i].cores);
        json_w_key(w, "state");
        json_w_str(w, v[i].state);
        json_w_end_object(w);
    }
    json_w_end_array(w);
}

static int json(const wui_state *s, ebuf *b) {
    json_writer w;
    json_w_init(&w, b);
    json_w_begin_object(&w);
    json_w_key(&w, "id");
    json_w_str(&w, s->id);
    json_w_key(&w, "masterurl");
    json_w_str(&w, s->master_url);
    json_w_key(&w, "masterwebuiurl");
    json_w_str(&w, s->master_webui);
    json_w_key(&w, "cores");
    json_w_i64(&w, s->cores);
    json_w_key(&w, "coresused");
    json_w_i64(&w, s->cores_used);
    json_w_key(&w, "coresfree");
    json_w_i64(&w, s->cores - s->cores_used);
    json_w_key(&w, "memory");
    json_w_i64(&w, s->mem_mib);
    json_w_key(&w, "memoryused");
    json_w_i64(&w, s->mem_used);
    json_w_key(&w, "memoryfree");
    json_w_i64(&w, s->mem_mib - s->mem_used);
    json_execs(&w, "executors", s->running, s->nrunning);
    json_execs(&w, "finishedexecutors", s->finished, s->nfinished);
    json_w_end_object(&w);
    return json_w_finish(&w);
}

/* ------------------------------------------------------------- the logs */

/* A directory name right under the work directory. */
static int app_ok(const char *a) {
    size_t n = strlen(a);
    if (!n || n > 255 || a[0] == '.' || strstr(a, "..") || strchr(a, '/') || strchr(a, '\\')) return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)a[i] < 0x20 || a[i] == 0x7f) return 0;
    return 1;
}

/* A whole number from 0 to max, or -1. */
static long long number(const char *v, long long max) {
    if (!*v || strlen(v) > 18) return -1;
    long long x = 0;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        x = x * 10 + (*p - '0');
    }
    return x <= max ? x : -1;
}

/* Open dir/app/exec/type, following no symbolic link below dir.  The
 * descriptor, or -1 with errno. */
static int open_log(const char *dir, const char *app, const char *exec, const char *type) {
    int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0) return -1;
    int a = openat(d, app, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(d);
    if (a < 0) return -1;
    int e = openat(a, exec, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(a);
    if (e < 0) return -1;
    int f = openat(e, type, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    close(e);
    return f;
}

static int logs(const wui_state *s, const http_req *r, int as_page, int *status, const char **ctype, ebuf *body) {
    char app[256], exec[32], type[16], off[32] = "", len[32] = "";
    const char *q = r->query;
    size_t ql = r->query_len;
    if (urlq_get(q, ql, "appId", app, sizeof app) != 1 || !app_ok(app))
        return answer_text(status, ctype, body, 400, "bad request: appId must name an application directory\n");
    if (urlq_get(q, ql, "executorId", exec, sizeof exec) != 1 || number(exec, 1000000000) < 0)
        return answer_text(status, ctype, body, 400, "bad request: executorId must be a number\n");
    if (urlq_get(q, ql, "logType", type, sizeof type) != 1 || (strcmp(type, "stdout") && strcmp(type, "stderr")))
        return answer_text(status, ctype, body, 400, "bad request: logType must be stdout or stderr\n");
    if (urlq_get(q, ql, "offset", off, sizeof off) < 0 || urlq_get(q, ql, "byteLength", len, sizeof len) < 0 ||
        (off[0] && number(off, INT64_MAX / 2) < 0) || (len[0] && number(len, INT64_MAX / 2) < 0))
        return answer_text(status, ctype, body, 400, "bad request: offset and byteLength must be numbers\n");
    int fd = open_log(s->dir, app, exec, type);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        int gone = fd < 0 && (errno == ENOENT || errno == ENOTDIR);
        if (fd >= 0) close(fd);
        return answer_text(status, ctype, body, gone || fd >= 0 ? 404 : 400,
                           gone || fd >= 0 ? "not found: no such executor log on this worker\n"
                                           : "bad request: not an executor's log\n");
    }
    long long size = (long long)st.st_size;
    long long want = len[0] ? number(len, INT64_MAX / 2) : WUI_LOG_DEFAULT;
    if (want > WUI_LOG_MAX) want = WUI_LOG_MAX;
    long long from = off[0] ? number(off, INT64_MAX / 2) : size - want;
    if (from < 0) from = 0;
    if (from > size) from = size;
    long long n = size - from < want ? size - from : want;
    char *text = malloc((size_t)n + 1);
    ssize_t got = text ? pread(fd, text, (size_t)n, (off_t)from) : -1;
    close(fd);
    if (got < 0) {
        free(text);
        return text ? answer_text(status, ctype, body, 500, "cannot read the log\n") : EM_ENOMEM;
    }
    char head[512];
    snprintf(head, sizeof head, "==== Bytes %lld-%lld of %lld of %s/%s/%s ====\n", from, from + (long long)got, size,
             app, exec, type);
    int rc;
    if (!as_page) {
        *ctype = TEXT;
        rc = html_raw(body, head) || (got && ebuf_append(body, text, (size_t)got));
    } else {
        char title[400];
        snprintf(title, sizeof title, "%s of executor %s of %s", type, exec, app);
        *ctype = HTML;
        ebuf h = EBUF_INIT;
        rc = html_page_begin(body, "ember worker", title) || html_raw(body, "<p>") || html_text(body, head) ||
             html_raw(body, "</p><p><a href=\"/\">Back to the worker</a>");
        if (!rc && from > 0) {
            long long prev = from - want > 0 ? from - want : 0;
            rc = log_href(&h, app, (int)number(exec, 1000000000), type) ||
                 html_rawf(&h, "&offset=%lld&byteLength=%lld", prev, from - prev) || ebuf_append(&h, "", 1) ||
                 html_raw(body, " &middot; ") || html_link(body, (const char *)h.p, "earlier bytes");
        }
        rc = rc || html_raw(body, "</p><pre class=\"log\">") || html_textn(body, text, (size_t)got) ||
             html_raw(body, "</pre>") || html_page_end(body);
        ebuf_free(&h);
    }
    free(text);
    return rc;
}

/* ------------------------------------------------------------- metrics */

static int metrics(const wui_state *s, ebuf *b) {
    return prom_spark_gauge(b, "worker", "executors", "Executors running on the worker.", s->nrunning) ||
           prom_spark_gauge(b, "worker", "coresUsed", "Cores the worker's executors hold.", s->cores_used) ||
           prom_spark_gauge(b, "worker", "memUsed_MB", "Memory (MiB) the worker's executors hold.",
                            (double)s->mem_used) ||
           prom_spark_gauge(b, "worker", "coresFree", "Cores of the worker free.", s->cores - s->cores_used) ||
           prom_spark_gauge(b, "worker", "memFree_MB", "Memory (MiB) of the worker free.",
                            (double)(s->mem_mib - s->mem_used));
}

int worker_ui_answer(const wui_state *s, const http_req *r, int *status, const char **ctype, ebuf *body) {
    if (!strcmp(r->path, "/")) {
        *ctype = HTML;
        return page(s, body);
    }
    if (!strcmp(r->path, "/json") || !strcmp(r->path, "/json/")) {
        *ctype = "application/json";
        return json(s, body);
    }
    if (!strcmp(r->path, "/logPage") || !strcmp(r->path, "/logPage/")) return logs(s, r, 1, status, ctype, body);
    if (!strcmp(r->path, "/log") || !strcmp(r->path, "/log/")) return logs(s, r, 0, status, ctype, body);
    if (s->prom && !strcmp(r->path, "/metrics/prometheus")) {
        *ctype = PROM_CTYPE;
        return metrics(s, body);
    }
    return answer_text(status, ctype, body, 404, "not found\n");
}
