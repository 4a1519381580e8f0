/*
 * rest.c -- Spark's /api/v1 over status stores (see rest.h): the path
 * router, the query parameters and their checks, the filters, orders and
 * paging of each endpoint, and the shapes that are lists of applications,
 * environments and versions (restjson.c writes the per-record shapes).
 *
 * Every answer is built in memory under the
 * store's read lock; the caller sends it after.  A task summary copies
 * its tasks' figures out and sorts them after the unlock.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "conf.h"
#include "ember.h"
#include "err.h"
#include "httpd.h"
#include "json.h"
#include "rest.h"
#include "restjson.h"

#define REST_PARAMS_MAX 32
#define REST_SEGS_MAX 12

/* ------------------------------------------------------------- parsing */

typedef struct qparams {
    int n;
    char *k[REST_PARAMS_MAX], *v[REST_PARAMS_MAX];
    char buf[2 * (HTTPD_QUERY_MAX + 1) + REST_PARAMS_MAX * 2];
} qparams;

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decode s[0, n) into out (NUL-terminated); '+' is a space when plus.
 * The bytes written (at most n).  A bad escape is kept as it is. */
static size_t pct_decode(const char *s, size_t n, char *out, int plus) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int h, l;
        if (s[i] == '%' && i + 2 < n && (h = hexval((unsigned char)s[i + 1])) >= 0 &&
            (l = hexval((unsigned char)s[i + 2])) >= 0) {
            out[o++] = (char)(h * 16 + l);
            i += 2;
        } else {
            out[o++] = plus && s[i] == '+' ? ' ' : s[i];
        }
    }
    out[o] = 0;
    return o;
}

/* Split a raw query.  0, or -1 with too many parameters. */
static int parse_query(const char *q, qparams *p) {
    p->n = 0;
    char *b = p->buf;
    while (*q) {
        const char *amp = strchr(q, '&');
        size_t len = amp ? (size_t)(amp - q) : strlen(q);
        if (len) {
            if (p->n == REST_PARAMS_MAX) return -1;
            const char *eq = memchr(q, '=', len);
            size_t kl = eq ? (size_t)(eq - q) : len;
            p->k[p->n] = b;
            b += pct_decode(q, kl, b, 1) + 1;
            p->v[p->n] = b;
            b += (eq ? pct_decode(eq + 1, len - kl - 1, b, 1) : (*b = 0, 0)) + 1;
            p->n++;
        }
        q += len + (amp ? 1 : 0);
    }
    return 0;
}

static const char *qget(const qparams *p, const char *k) {
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->k[i], k)) return p->v[i];
    return NULL;
}

/* A whole non-negative decimal int.  0 or -1. */
static int parse_nat(const char *s, int64_t max, int64_t *out) {
    if (!s || !*s) return -1;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        v = v * 10 + (*s - '0');
        if (v > max) return -1;
    }
    *out = v;
    return 0;
}

/* "YYYY-MM-DD", "YYYY-MM-DDThh:mm:ss.mmmGMT" (also with Z, or without
 * the milliseconds), as Spark's SimpleDateParam: epoch ms.  0 or -1. */
static int parse_date(const char *s, int64_t *out) {
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int ms = 0;
    const char *e = strptime(s, "%Y-%m-%d", &tm);
    if (!e) return -1;
    if (*e == 'T') {
        e = strptime(e + 1, "%H:%M:%S", &tm);
        if (!e) return -1;
        if (*e == '.') {
            int d = 0;
            for (e++; *e >= '0' && *e <= '9' && d < 3; e++, d++) ms = ms * 10 + (*e - '0');
            if (d != 3) return -1;
        }
        if (!strcmp(e, "GMT") || !strcmp(e, "Z") || !strcmp(e, "UTC")) e += strlen(e);
    }
    if (*e) return -1;
    *out = (int64_t)timegm(&tm) * 1000 + ms;
    return 0;
}

void rest_time(int64_t ms, char *out) {
    int64_t sec = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
    int milli = (int)(ms - sec * 1000);
    time_t t = (time_t)sec;
    struct tm tm;
    gmtime_r(&t, &tm);
    char b[96];
    snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02d.%03dGMT", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
             tm.tm_hour, tm.tm_min, tm.tm_sec, milli);
    snprintf(out, 32, "%.31s", b);
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------- a request */

typedef struct req {
    const rest_provider *p;
    qparams q;
    int *status;
    const char **ctype;
    ebuf *body;
    json_writer w;
    int64_t now;
    int err; /* EM_ENOMEM once a text answer could not be written */
} req;

/* A plain-text answer (status 404, 400): the body replaced. */
static int fail(req *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(req *r, int status, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg - 1, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if (n > (int)sizeof msg - 2) n = (int)sizeof msg - 2;
    /* A name echoed from the path may hold any decoded byte: the answer
     * stays one line of text. */
    for (int i = 0; i < n; i++)
        if ((unsigned char)msg[i] < 0x20 || msg[i] == 0x7f) msg[i] = '?';
    msg[n++] = '\n';
    ebuf_reset(r->body);
    *r->status = status;
    *r->ctype = "text/plain; charset=utf-8";
    if (ebuf_append(r->body, msg, (size_t)n)) r->err = EM_ENOMEM;
    return 1;
}

static int bad_param(req *r, const char *name, const char *expected, const char *got) {
    return fail(r, 400, "Bad value for parameter \"%s\".  Expected a %s, got \"%s\"", name, expected, got);
}

/* ------------------------------------------------------------- applications */

typedef struct app_list {
    req *r;
    const char *only;  /* one application's id, or NULL */
    int status;        /* 0 any, 1 completed, 2 running */
    int64_t limit, min_date, max_date, min_end, max_end;
    int listed;
    char open_id[256]; /* the application whose attempts are being written */
    int open;
} app_list;

static void list_one(void *arg, const rest_app *a) {
    app_list *l = arg;
    json_writer *w = &l->r->w;
    const char *id = a->id ? a->id : "";
    if (l->only && strcmp(l->only, id)) return;
    if (l->status == 1 && !a->end_ms) return;
    if (l->status == 2 && a->end_ms) return;
    if (l->min_date && a->start_ms < l->min_date) return;
    if (l->max_date && a->start_ms > l->max_date) return;
    if (l->min_end && (!a->end_ms || a->end_ms < l->min_end)) return;
    if (l->max_end && (!a->end_ms || a->end_ms > l->max_end)) return;
    if (l->open && !strcmp(l->open_id, id)) {
        rj_attempt(w, a);
        return;
    }
    if (l->open) {
        json_w_end_array(w);
        json_w_end_object(w);
        l->open = 0;
    }
    if (l->limit >= 0 && l->listed >= l->limit) return;
    l->listed++;
    snprintf(l->open_id, sizeof l->open_id, "%s", id);
    l->open = 1;
    json_w_begin_object(w);
    k_s(w, "id", id);
    k_s(w, "name", a->name);
    json_w_key(w, "attempts");
    json_w_begin_array(w);
    rj_attempt(w, a);
}

static void list_close(app_list *l) {
    if (!l->open) return;
    json_w_end_array(&l->r->w);
    json_w_end_object(&l->r->w);
    l->open = 0;
}

static int date_param(req *r, const char *name, int64_t *out) {
    const char *v = qget(&r->q, name);
    *out = 0;
    if (v && parse_date(v, out)) return bad_param(r, name, "date", v);
    return 0;
}

static int applications(req *r, const char *only) {
    app_list l;
    memset(&l, 0, sizeof l);
    l.r = r;
    l.only = only;
    l.limit = -1;
    const char *s = qget(&r->q, "status");
    if (s) {
        if (!strcasecmp(s, "completed")) l.status = 1;
        else if (!strcasecmp(s, "running")) l.status = 2;
        else return bad_param(r, "status", "ApplicationStatus (completed, running)", s);
    }
    if ((s = qget(&r->q, "limit")) && parse_nat(s, INT32_MAX, &l.limit)) return bad_param(r, "limit", "int", s);
    if (date_param(r, "minDate", &l.min_date) || date_param(r, "maxDate", &l.max_date) ||
        date_param(r, "minEndDate", &l.min_end) || date_param(r, "maxEndDate", &l.max_end))
        return 1;
    if (only) {
        l.limit = -1;
        l.status = 0;
        l.min_date = l.max_date = l.min_end = l.max_end = 0;
    } else {
        json_w_begin_array(&r->w);
    }
    r->p->each(r->p->ud, list_one, &l);
    if (only && !l.open) return fail(r, 404, "no such app: %s", only);
    list_close(&l);
    if (!only) json_w_end_array(&r->w);
    return 0;
}

/* ------------------------------------------------------------- jobs */

static int cmp_job_desc(const void *a, const void *b) {
    int x = (*(st_job *const *)a)->id, y = (*(st_job *const *)b)->id;
    return x < y ? 1 : x > y ? -1 : 0;
}

static int jobs(req *r, status_store *st) {
    unsigned want = 0; /* bit per status; 0: all */
    for (int i = 0; i < r->q.n; i++) {
        if (strcmp(r->q.k[i], "status")) continue;
        const char *v = r->q.v[i];
        int s = !strcasecmp(v, "running") ? SJ_RUNNING : !strcasecmp(v, "succeeded") ? SJ_SUCCEEDED
              : !strcasecmp(v, "failed") ? SJ_FAILED : !strcasecmp(v, "unknown") ? SJ_UNKNOWN : -1;
        if (s < 0) return bad_param(r, "status", "JobExecutionStatus (running, succeeded, failed, unknown)", v);
        want |= 1u << s;
    }
    int n = status_njobs(st), k = 0;
    st_job **v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return r->err = EM_ENOMEM;
    for (st_job *j = status_jobs(st); j && k < n; j = j->next)
        if (!want || (want & (1u << j->status))) v[k++] = j;
    qsort(v, (size_t)k, sizeof *v, cmp_job_desc);
    json_w_begin_array(&r->w);
    for (int i = 0; i < k; i++) rj_job(&r->w, v[i]);
    json_w_end_array(&r->w);
    free(v);
    return 0;
}

/* ------------------------------------------------------------- stages */

static int cmp_stage_desc(const void *a, const void *b) {
    const st_stage *x = *(st_stage *const *)a, *y = *(st_stage *const *)b;
    if (x->id != y->id) return x->id < y->id ? 1 : -1;
    return x->attempt < y->attempt ? 1 : x->attempt > y->attempt ? -1 : 0;
}

/* The "details" parameter: 0/1, or -1 after a 400. */
static int details_param(req *r, int def) {
    const char *v = qget(&r->q, "details");
    if (!v) return def;
    if (!strcasecmp(v, "true")) return 1;
    if (!strcasecmp(v, "false")) return 0;
    bad_param(r, "details", "boolean", v);
    return -1;
}

static int stages(req *r, status_store *st) {
    unsigned want = 0;
    for (int i = 0; i < r->q.n; i++) {
        if (strcmp(r->q.k[i], "status")) continue;
        const char *v = r->q.v[i];
        int s = !strcasecmp(v, "active") ? SS_ACTIVE : !strcasecmp(v, "complete") ? SS_COMPLETE
              : !strcasecmp(v, "pending") ? SS_PENDING : !strcasecmp(v, "failed") ? SS_FAILED
              : !strcasecmp(v, "skipped") ? SS_SKIPPED : -1;
        if (s < 0) return bad_param(r, "status", "StageStatus (active, complete, pending, failed, skipped)", v);
        want |= 1u << s;
    }
    int details = details_param(r, 0);
    if (details < 0) return 1;
    int n = status_nstages(st), k = 0;
    st_stage **v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return r->err = EM_ENOMEM;
    for (st_stage *s = status_stages(st); s && k < n; s = s->next)
        if (!want || (want & (1u << s->status))) v[k++] = s;
    qsort(v, (size_t)k, sizeof *v, cmp_stage_desc);
    json_w_begin_array(&r->w);
    for (int i = 0; i < k && !r->err; i++)
        if (rj_stage(&r->w, st, v[i], details, r->now)) r->err = EM_ENOMEM;
    json_w_end_array(&r->w);
    free(v);
    return r->err;
}

static int stage_attempts(req *r, status_store *st, int id) {
    int details = details_param(r, 1);
    if (details < 0) return 1;
    int any = 0;
    for (int a = 0; a <= status_max_attempt(st); a++) any |= status_stage(st, id, a) != NULL;
    if (!any) return fail(r, 404, "unknown stage: %d", id);
    json_w_begin_array(&r->w);
    for (int a = 0; a <= status_max_attempt(st) && !r->err; a++) {
        st_stage *s = status_stage(st, id, a);
        if (s && rj_stage(&r->w, st, s, details, r->now)) r->err = EM_ENOMEM;
    }
    json_w_end_array(&r->w);
    return r->err;
}

/* The stage attempt, or NULL after a 404 naming the attempts there are. */
static st_stage *find_attempt(req *r, status_store *st, int id, int attempt) {
    st_stage *s = status_stage(st, id, attempt);
    if (s) return s;
    char found[256];
    size_t n = 0;
    found[0] = 0;
    for (int a = 0; a <= status_max_attempt(st); a++)
        if (status_stage(st, id, a) && n < sizeof found - 16)
            n += (size_t)snprintf(found + n, sizeof found - n, "%s%d", n ? "," : "", a);
    if (n) fail(r, 404, "unknown attempt for stage %d.  Found attempts: [%s]", id, found);
    else fail(r, 404, "unknown stage: %d", id);
    return NULL;
}

/* ------------------------------------------------------------- taskList */

typedef struct tsort {
    int64_t key;
    st_task *t;
} tsort;

static int cmp_tsort(const void *a, const void *b) {
    const tsort *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->t->task_id < y->t->task_id ? -1 : x->t->task_id > y->t->task_id;
}

static int task_list(req *r, status_store *st, st_stage *s) {
    int64_t offset = 0, length = 20;
    const char *v;
    if ((v = qget(&r->q, "offset")) && parse_nat(v, INT32_MAX, &offset)) return bad_param(r, "offset", "int", v);
    if ((v = qget(&r->q, "length")) && parse_nat(v, INT32_MAX, &length)) return bad_param(r, "length", "int", v);
    int sort = 0; /* 0 ID, 1 runtime up, 2 runtime down */
    if ((v = qget(&r->q, "sortBy"))) {
        if (!strcmp(v, "ID")) sort = 0;
        else if (!strcmp(v, "runtime") || !strcasecmp(v, "INCREASING_RUNTIME")) sort = 1;
        else if (!strcmp(v, "-runtime") || !strcasecmp(v, "DECREASING_RUNTIME")) sort = 2;
        else return bad_param(r, "sortBy", "TaskSorting (ID, runtime, -runtime)", v);
    }
    int want = -1;
    if ((v = qget(&r->q, "status"))) {
        want = !strcasecmp(v, "running") ? ST_RUNNING : !strcasecmp(v, "success") ? ST_SUCCESS
             : !strcasecmp(v, "failed") ? ST_FAILED : !strcasecmp(v, "killed") ? ST_KILLED : -2;
        if (want == -2) return bad_param(r, "status", "TaskStatus (running, success, failed, killed)", v);
    }
    tsort *a = malloc((size_t)(s->ntasks_kept ? s->ntasks_kept : 1) * sizeof *a);
    if (!a) return r->err = EM_ENOMEM;
    int n = 0;
    for (st_task *t = s->tasks; t && n < s->ntasks_kept; t = t->next) {
        if (want >= 0 && t->status != want) continue;
        int64_t rt = t->has_metrics ? t->m.run_ms : -1;
        a[n].key = sort == 0 ? t->task_id : sort == 1 ? rt : -rt;
        a[n++].t = t;
    }
    qsort(a, (size_t)n, sizeof *a, cmp_tsort);
    json_w_begin_array(&r->w);
    for (int64_t i = offset; i < n && i < offset + length; i++) rj_task(&r->w, st, a[i].t, r->now);
    json_w_end_array(&r->w);
    free(a);
    return 0;
}

static int quantiles_param(req *r, rj_dist *d) {
    const char *v = qget(&r->q, "quantiles");
    if (!v) v = "0.05,0.25,0.5,0.75,0.95";
    d->nq = 0;
    const char *p = v;
    for (;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        char one[64];
        if (len == 0 || len >= sizeof one || d->nq == REST_QUANTILES_MAX) return bad_param(r, "quantiles", "double", v);
        memcpy(one, p, len);
        one[len] = 0;
        char *end;
        double q = strtod(one, &end);
        if (*end || end == one || !(q >= 0 && q <= 1)) return bad_param(r, "quantiles", "double", one);
        d->q[d->nq++] = q;
        if (!c) break;
        p = c + 1;
    }
    return 0;
}

/* Copies the successful tasks' figures under the lock (the caller holds
 * it); unlocks; selects the quantiles and writes.  1 when it answered
 * with an error. */
static int task_summary(req *r, status_store *st, st_stage *s, int *unlocked) {
    rj_dist d;
    memset(&d, 0, sizeof d);
    if (quantiles_param(r, &d)) return 1;
    double *col;
    int n = rj_dist_collect(s, r->now, &col);
    if (n < 0) return r->err = n;
    if (!n) return fail(r, 404, "No tasks reported metrics for %d / %d yet.", s->id, s->attempt);
    status_unlock(st);
    *unlocked = 1;
    int rc = rj_dist_compute(&d, col, n);
    if (!rc) rj_summary(&r->w, &d);
    rj_dist_free(&d);
    free(col);
    return rc ? (r->err = rc) : 0;
}

static int executors(req *r, status_store *st, int all) {
    json_w_begin_array(&r->w);
    for (st_exec *x = status_execs(st); x; x = x->next)
        if (all || x->active) rj_exec(&r->w, x);
    json_w_end_array(&r->w);
    return 0;
}

static int rdds(req *r, status_store *st) {
    json_w_begin_array(&r->w);
    for (st_rdd *d = status_rdds(st); d; d = d->next)
        if (d->ncached > 0) rj_rdd(&r->w, st, d, 0);
    json_w_end_array(&r->w);
    return 0;
}

/* ------------------------------------------------------------- environment */

static int cmp_prop(const void *a, const void *b) {
    return strcmp(((const ae_prop *)a)->key, ((const ae_prop *)b)->key);
}

static int write_props(req *r, const char *k, const ae_prop *p, int n, int redacting) {
    json_writer *w = &r->w;
    ae_prop *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return r->err = EM_ENOMEM;
    if (n) memcpy(v, p, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, cmp_prop);
    json_w_key(w, k);
    json_w_begin_array(w);
    for (int i = 0; i < n; i++) {
        json_w_begin_array(w);
        json_w_str(w, v[i].key);
        /* Spark's redaction regex, on the key and on the value. */
        int hide = redacting && (conf_redacted(v[i].key) || conf_redacted(v[i].value));
        json_w_str(w, hide ? CONF_REDACTED : v[i].value);
        json_w_end_array(w);
    }
    json_w_end_array(w);
    free(v);
    return 0;
}

static const char *env_get(const status_store *st, int sec, const char *key) {
    int n;
    const ae_prop *p = status_env(st, sec, &n);
    for (int i = 0; i < n; i++)
        if (!strcmp(p[i].key, key)) return p[i].value;
    return "";
}

static int environment(req *r, status_store *st) {
    json_writer *w = &r->w;
    json_w_begin_object(w);
    json_w_key(w, "runtime");
    json_w_begin_object(w);
    k_s(w, "javaVersion", env_get(st, AE_ENV_RUNTIME, "Java Version"));
    k_s(w, "javaHome", env_get(st, AE_ENV_RUNTIME, "Java Home"));
    k_s(w, "scalaVersion", env_get(st, AE_ENV_RUNTIME, "Scala Version"));
    json_w_end_object(w);
    static const struct {
        const char *k;
        int sec;
    } secs[] = {{"sparkProperties", AE_ENV_SPARK},
                {"hadoopProperties", AE_ENV_HADOOP},
                {"systemProperties", AE_ENV_SYSTEM},
                {"metricsProperties", -1},
                {"classpathEntries", AE_ENV_CLASSPATH}};
    for (size_t i = 0; i < sizeof secs / sizeof *secs; i++) {
        int n = 0;
        const ae_prop *p = secs[i].sec >= 0 ? status_env(st, secs[i].sec, &n) : NULL;
        if (write_props(r, secs[i].k, p, n, secs[i].sec != AE_ENV_CLASSPATH)) return r->err;
    }
    k_empty_arr(w, "resourceProfiles");
    json_w_end_object(w);
    return 0;
}

/* ------------------------------------------------------------- routing */

static int is_resource(const char *s) {
    static const char *const names[] = {"jobs",        "stages", "executors", "allexecutors",
                                        "storage",     "environment", "logs", "streaming"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(s, names[i])) return 1;
    return 0;
}

static int seg_int(const char *s, int *out) {
    int64_t v;
    if (parse_nat(s, INT32_MAX, &v)) return -1;
    *out = (int)v;
    return 0;
}

static int not_found(req *r) { return fail(r, 404, "unknown resource"); }

/* seg[0..n): what follows /applications/[app][/attempt]; st held (read
 * lock taken here). */
static int app_resource(req *r, status_store *st, char **seg, int n) {
    int unlocked = 0, rc = 0, id, at;
    status_rdlock(st);
    const char *s0 = seg[0];
    if (!strcmp(s0, "jobs") && n == 1) {
        rc = jobs(r, st);
    } else if (!strcmp(s0, "jobs") && n == 2) {
        st_job *j;
        if (seg_int(seg[1], &id)) rc = not_found(r);
        else if (!(j = status_job(st, id))) rc = fail(r, 404, "unknown job: %d", id);
        else rj_job(&r->w, j);
    } else if (!strcmp(s0, "stages") && n == 1) {
        rc = stages(r, st);
    } else if (!strcmp(s0, "stages") && n >= 2 && n <= 4) {
        if (seg_int(seg[1], &id)) {
            rc = not_found(r);
        } else if (n == 2) {
            rc = stage_attempts(r, st, id);
        } else if (seg_int(seg[2], &at)) {
            rc = not_found(r);
        } else {
            st_stage *s = find_attempt(r, st, id, at);
            if (!s) rc = 1;
            else if (n == 3) {
                int details = details_param(r, 1);
                rc = details < 0 ? 1 : (r->err = rj_stage(&r->w, st, s, details, r->now));
            } else if (!strcmp(seg[3], "taskSummary")) rc = task_summary(r, st, s, &unlocked);
            else if (!strcmp(seg[3], "taskList")) rc = task_list(r, st, s);
            else rc = not_found(r);
        }
    } else if (!strcmp(s0, "executors") && n == 1) {
        rc = executors(r, st, 0);
    } else if (!strcmp(s0, "allexecutors") && n == 1) {
        rc = executors(r, st, 1);
    } else if (!strcmp(s0, "storage") && n >= 2 && n <= 3 && !strcmp(seg[1], "rdd")) {
        st_rdd *d;
        if (n == 2) rc = rdds(r, st);
        else if (seg_int(seg[2], &id)) rc = not_found(r);
        else if (!(d = status_rdd(st, id))) rc = fail(r, 404, "no rdd found w/ id %d", id);
        else rj_rdd(&r->w, st, d, 1);
    } else if (!strcmp(s0, "environment") && n == 1) {
        rc = environment(r, st);
    } else {
        rc = not_found(r);
    }
    if (!unlocked) status_unlock(st);
    return rc;
}

typedef struct single {
    status_store *st;
} single;

static void single_each(void *ud, void (*fn)(void *arg, const rest_app *a), void *arg) {
    status_store *st = ud;
    status_rdlock(st);
    const status_app *s = status_app_info(st);
    rest_app a = {s->id ? s->id : "", s->name, s->attempt_id, s->user, s->version, s->start_ms, s->end_ms, 0};
    if (s->id) fn(arg, &a);
    status_unlock(st);
}

static status_store *single_acquire(void *ud, const char *app_id, const char *attempt_id) {
    status_store *st = ud;
    status_rdlock(st);
    const status_app *s = status_app_info(st);
    int ok = s->id && !strcmp(s->id, app_id) &&
             (!attempt_id || (s->attempt_id && !strcmp(s->attempt_id, attempt_id)));
    status_unlock(st);
    return ok ? st : NULL;
}

void rest_single(rest_provider *p, status_store *st) {
    p->ud = st;
    p->each = single_each;
    p->acquire = single_acquire;
    p->release = NULL;
}

int rest_answer(const rest_provider *p, const char *path, const char *query, int *status, const char **ctype,
                ebuf *body) {
    req *r = calloc(1, sizeof *r);
    if (!r) return em__seterr(EM_ENOMEM, "rest: out of memory");
    r->p = p;
    r->status = status;
    r->ctype = ctype;
    r->body = body;
    r->now = now_ms();
    *status = 200;
    *ctype = "application/json";
    json_w_init(&r->w, body);
    int rc = 0;
    /* Split the path after /api/v1 into decoded segments. */
    char segbuf[HTTPD_PATH_MAX + 1], *seg[REST_SEGS_MAX];
    int n = 0;
    const char *s = path;
    if (strncmp(s, "/api/v1", 7) || (s[7] && s[7] != '/')) {
        not_found(r);
        goto out;
    }
    s += 7;
    char *b = segbuf;
    while (*s) {
        while (*s == '/') s++;
        if (!*s) break;
        const char *e = strchr(s, '/');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (n == REST_SEGS_MAX || (size_t)(b - segbuf) + len + 1 > sizeof segbuf) {
            not_found(r);
            goto out;
        }
        seg[n++] = b;
        b += pct_decode(s, len, b, 0) + 1;
        s += len;
    }
    if (parse_query(query ? query : "", &r->q)) {
        fail(r, 400, "too many query parameters (at most %d)", REST_PARAMS_MAX);
        goto out;
    }
    if (n == 1 && !strcmp(seg[0], "version")) {
        json_w_begin_object(&r->w);
        k_s(&r->w, "spark", EMBER_VERSION);
        json_w_end_object(&r->w);
    } else if (n >= 1 && !strcmp(seg[0], "applications")) {
        if (n == 1) {
            applications(r, NULL);
        } else if (n == 2) {
            applications(r, seg[1]);
        } else {
            const char *attempt = NULL;
            int first = 2;
            if (!is_resource(seg[2])) {
                attempt = seg[2];
                first = 3;
            }
            status_store *st = p->acquire(p->ud, seg[1], attempt);
            if (!st && attempt) fail(r, 404, "unknown app %s, attempt %s", seg[1], attempt);
            else if (!st) fail(r, 404, "no such app: %s", seg[1]);
            else if (first == n) {
                /* /applications/[app]/[attempt]: the attempt alone. */
                status_rdlock(st);
                const status_app *s2 = status_app_info(st);
                rest_app a = {s2->id, s2->name, s2->attempt_id, s2->user, s2->version, s2->start_ms, s2->end_ms, 0};
                rj_attempt(&r->w, &a);
                status_unlock(st);
            } else {
                app_resource(r, st, seg + first, n - first);
            }
            if (st && p->release) p->release(p->ud, st);
        }
    } else {
        not_found(r);
    }
out:
    if (!r->err && *status == 200 && (rc = json_w_finish(&r->w))) {
        ebuf_reset(body);
        if (rc != EM_ENOMEM) {
            *status = 500;
            rc = 0;
        }
    }
    if (r->err) rc = em__seterr(EM_ENOMEM, "rest: out of memory answering %s", path);
    free(r);
    return rc;
}
