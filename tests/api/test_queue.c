/*
 * test_queue.c -- applications that queue at the master (Spark's WAITING
 * state), with real processes on 127.0.0.1: a master and one worker of one
 * core (this test binary in their roles), two drivers in this process.
 * While the first application holds the only core, the second registers,
 * is WAITING in the master's /json and its job waits well past
 * ember.scheduler.maxRegisteredWait; once the first ends, the master grants
 * the core to the second and its job runs, every task after the first
 * application's job had finished (its tasks see the marker written then).
 * A waiting job ends at em_cancel_all and at em_close.  Every process is
 * stopped and waited for by PID; the daemons also die with the test
 * (EMBER_PARENT_PID).
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"
#include "roles.h"


/* A failed requirement inside a helper that returns 0 (so that the test
 * still stops what it started). */
#define REQ(c)                                                                      \
    do {                                                                            \
        if (!(c)) {                                                                 \
            fprintf(stderr, "  %s:%d: REQ(%s) failed\n", __FILE__, __LINE__, #c);   \
            return 0;                                                               \
        }                                                                           \
    } while (0)



typedef struct one_core {
    pid_t master, worker;
    int port, webport;
    char url[64];
} one_core;

static void stop_cluster(one_core *k) {
    stop_pid(k->worker);
    stop_pid(k->master);
    k->worker = k->master = 0;
}

/* GET /json from the status port into buf (NUL-terminated); 0 or -1. */
static int get_json(int port, char *buf, size_t cap) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    buf[0] = 0;
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        if (fd >= 0) close(fd);
        return -1;
    }
    static const char req[] = "GET /json HTTP/1.0\r\n\r\n";
    size_t n = 0;
    ssize_t r;
    if (write(fd, req, sizeof req - 1) != (ssize_t)sizeof req - 1) {
        close(fd);
        return -1;
    }
    while (n < cap - 1 && (r = read(fd, buf + n, cap - 1 - n)) > 0) n += (size_t)r;
    buf[n] = 0;
    close(fd);
    return 0;
}

/* The state of application app in the JSON ("" when it is not there). */
static void app_state(const char *json, const char *app, char *out, size_t cap) {
    char want[96];
    snprintf(want, sizeof want, "\"id\":\"%s\"", app);
    const char *at = strstr(json, want), *st = at ? strstr(at, "\"state\":\"") : NULL;
    out[0] = 0;
    if (!st) return;
    st += 9;
    size_t n = strcspn(st, "\"");
    snprintf(out, cap, "%.*s", (int)(n < cap - 1 ? n : cap - 1), st);
}

/* Poll /json (every 20 ms, at most 20 s) until application app is in
 * state; 1 when it was. */
static int wait_app_state(int webport, const char *app, const char *state) {
    static char json[65536];
    char st[32] = "";
    for (int i = 0; i < 1000; i++) {
        if (!get_json(webport, json, sizeof json)) {
            app_state(json, app, st, sizeof st);
            if (!strcmp(st, state)) return 1;
        }
        sleep_ms(20);
    }
    fprintf(stderr, "  %s never was %s (last %s) in:\n%s\n", app, state, st, json);
    return 0;
}

/* A master and one worker of 1 core and 512 MiB on free ports; 1 once
 * the worker registered. */
static int start_one_core(one_core *k) {
    memset(k, 0, sizeof *k);
    int p[2];
    REQ(!pipe2(p, O_CLOEXEC));
    char *margs[] = {"ember-master", "--port", "0", "--webui-port", "0", NULL};
    k->master = spawn_role("master", margs, p[1], tmp_path("master.log"));
    close(p[1]);
    char line[64] = "";
    struct pollfd pf = {p[0], POLLIN, 0};
    ssize_t n = k->master > 0 && poll(&pf, 1, 20000) == 1 ? read(p[0], line, sizeof line - 1) : -1;
    close(p[0]);
    REQ(n > 0 && sscanf(line, "%d %d", &k->port, &k->webport) == 2);
    snprintf(k->url, sizeof k->url, "ember://127.0.0.1:%d", k->port);
    char *wargs[] = {"ember-worker", "--cores", "1", "--memory", "512m", "--work-dir", (char *)tmp_path("w"),
                     "--webui-port", "0", "--conf", "ember.shuffle.service.port=0", k->url, NULL};
    k->worker = spawn_role("worker", wargs, -1, tmp_path("worker.log"));
    REQ(k->worker > 0);
    static char json[16384];
    for (int i = 0; i < 1000; i++) {
        if (!get_json(k->webport, json, sizeof json) && strstr(json, "\"aliveworkers\":1")) return 1;
        sleep_ms(20);
    }
    REQ(!"the worker registered");
    return 0;
}

/* A driver on url with executors of 256 MiB, plus one setting pair (and
 * a second). */
static em_ctx *open_app(const char *url, const char *k1, const char *v1, const char *k2, const char *v2) {
    em_conf *conf = em_conf_new();
    test_conf_set(conf, "ember.local.dir", test_scratchdir());
    test_conf_set(conf, "ember.executor.memory", "256m");
    if (k1) test_conf_set(conf, k1, v1);
    if (k2) test_conf_set(conf, k2, v2);
    em_ctx *c = em_open(url, conf);
    if (!c) fprintf(stderr, "  em_open(%s): %s\n", url, em_errmsg());
    em_conf_free(conf);
    return c;
}

/* The first application's tasks: each makes "<dir>/started", then holds
 * its executor's core until "<dir>/release" exists (at most 60 s). */
static int fn_hold(const em_rec *in, em_emitter *out, const void *arg) {
    char path[700];
    snprintf(path, sizeof path, "%s/started", (const char *)arg);
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    if (fd >= 0) close(fd);
    snprintf(path, sizeof path, "%s/release", (const char *)arg);
    for (int i = 0; i < 6000 && access(path, F_OK); i++) sleep_ms(10);
    return em_emit_i64(out, rec_i64(in));
}

/* The second application's tasks: 1 when the first application's job had
 * finished when they ran ("<dir>/first-done" exists), else 0. */
static int fn_after_first(const em_rec *in, em_emitter *out, const void *arg) {
    char path[700];
    snprintf(path, sizeof path, "%s/first-done", (const char *)arg);
    return em_emit_i64(out, access(path, F_OK) == 0);
}

typedef struct job {
    em_ctx *c;
    em_map_fn fn;
    const char *dir;
    const char *group; /* the job group of its thread, or NULL */
    int rc;
    int64_t n, sum;
    char err[1024];
    volatile int done;
} job;

static void *run_job(void *arg) {
    job *j = arg;
    em_batch *b = NULL;
    if (j->group) em_set_job_group(j->c, j->group);
    j->rc = em_collect(em_map(em_range(j->c, 0, 4, 1, 2), j->fn, j->dir, strlen(j->dir) + 1), &b);
    snprintf(j->err, sizeof j->err, "%s", j->rc ? em_errmsg() : "");
    if (!j->rc) {
        j->n = (int64_t)em_batch_count(b);
        j->sum = batch_sum_i64(b);
    }
    em_batch_free(b);
    __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static int is_done(job *j) { return __atomic_load_n(&j->done, __ATOMIC_ACQUIRE); }

/* The first application's job runs and holds the core: 1 once its task
 * started there and the master shows it RUNNING. */
static int hold_core(one_core *k, em_ctx *c1, job *a, pthread_t *t, const char *dir) {
    memset(a, 0, sizeof *a);
    a->c = c1;
    a->fn = fn_hold;
    a->dir = dir;
    REQ(!pthread_create(t, NULL, run_job, a));
    char started[700];
    snprintf(started, sizeof started, "%s/started", dir);
    for (int i = 0; i < 1000 && access(started, F_OK); i++) sleep_ms(20);
    REQ(access(started, F_OK) == 0);
    REQ(wait_app_state(k->webport, "app-0000", "RUNNING"));
    return 1;
}

static int queue_body(one_core *k, em_ctx **c1, em_ctx **c2) {
    const char *dir = tmp_path("");
    char path[700];
    REQ(start_one_core(k));
    REQ((*c1 = open_app(k->url, NULL, NULL, NULL, NULL)));
    job a, b;
    pthread_t ta, tb;
    REQ(hold_core(k, *c1, &a, &ta, dir));
    /* The second application: registered, WAITING, its job waits. */
    /* Its executor, once granted, must register within the wait: long
     * enough for an executor process started under a sanitizer on a busy
     * host. */
    REQ((*c2 = open_app(k->url, "ember.scheduler.maxRegisteredWait", "1500ms", "ember.starvation.timeout", "100ms")));
    REQ(wait_app_state(k->webport, "app-0001", "WAITING"));
    memset(&b, 0, sizeof b);
    b.c = *c2;
    b.fn = fn_after_first;
    b.dir = dir;
    if (pthread_create(&tb, NULL, run_job, &b)) {
        snprintf(path, sizeof path, "%s/release", dir);
        write_file(path, "", 0);
        pthread_join(ta, NULL);
        REQ(!"the second job's thread started");
    }
    /* Twice ember.scheduler.maxRegisteredWait: a job that gave up after
     * it would have failed by now. */
    sleep_ms(3000);
    int waited = !is_done(&b);
    static char json[65536];
    char st[32] = "";
    if (!get_json(k->webport, json, sizeof json)) app_state(json, "app-0001", st, sizeof st);
    /* The first job finishes, then its application ends: the core goes to
     * the second. */
    snprintf(path, sizeof path, "%s/release", dir);
    REQ(!write_file(path, "", 0));
    pthread_join(ta, NULL);
    snprintf(path, sizeof path, "%s/first-done", dir);
    REQ(!write_file(path, "", 0));
    em_close(*c1);
    *c1 = NULL;
    pthread_join(tb, NULL);
    if (!waited || b.rc) fprintf(stderr, "  the second job: rc %d: %s\n", b.rc, b.err);
    REQ(waited);
    REQ(!strcmp(st, "WAITING"));
    REQ(a.rc == 0 && a.n == 4 && a.sum == 6);
    REQ(b.rc == 0 && b.n == 4);
    REQ(b.sum == 4); /* every task of the second ran after the first's job finished */
    REQ(wait_app_state(k->webport, "app-0000", "FINISHED"));
    REQ(wait_app_state(k->webport, "app-0001", "RUNNING"));
    return 1;
}

/* Two applications on one core: the second waits in the master's queue
 * past ember.scheduler.maxRegisteredWait and runs once the first ended. */
TEST(cluster_second_app_waits_for_cores) {
    one_core k;
    em_ctx *c1 = NULL, *c2 = NULL;
    int ok = queue_body(&k, &c1, &c2);
    em_close(c1);
    em_close(c2);
    stop_cluster(&k);
    CHECK(ok);
}

/* Wait until a job runs on c (at most 20 s); 1 when one does. */
static int wait_job_active(em_ctx *c) {
    for (int i = 0; i < 1000; i++) {
        em_stats st;
        em_get_stats(c, &st);
        if (st.jobs_active > 0) return 1;
        sleep_ms(20);
    }
    return 0;
}

static int cancel_body(one_core *k, em_ctx **c1, em_ctx **c2) {
    const char *dir = tmp_path("");
    char path[700];
    snprintf(path, sizeof path, "%s/release", dir);
    REQ(start_one_core(k));
    REQ((*c1 = open_app(k->url, NULL, NULL, NULL, NULL)));
    job a, b, c;
    pthread_t ta, tb, tc;
    REQ(hold_core(k, *c1, &a, &ta, dir));
    int ok = 0;
    if ((*c2 = open_app(k->url, "ember.scheduler.maxRegisteredWait", "100ms", NULL, NULL))) {
        /* em_cancel_all ends a waiting job. */
        memset(&b, 0, sizeof b);
        b.c = *c2;
        b.fn = fn_after_first;
        b.dir = dir;
        if (!pthread_create(&tb, NULL, run_job, &b)) {
            int active = wait_job_active(*c2);
            em_cancel_all(*c2);
            pthread_join(tb, NULL);
            if (b.rc != EM_ECANCELED) fprintf(stderr, "  em_cancel_all: rc %d: %s\n", b.rc, b.err);
            /* So does em_close, from another thread. */
            memset(&c, 0, sizeof c);
            c.c = *c2;
            c.fn = fn_after_first;
            c.dir = dir;
            if (!pthread_create(&tc, NULL, run_job, &c)) {
                int active2 = wait_job_active(*c2);
                em_close(*c2);
                *c2 = NULL;
                pthread_join(tc, NULL);
                if (c.rc != EM_ECANCELED) fprintf(stderr, "  em_close: rc %d: %s\n", c.rc, c.err);
                ok = active && active2 && b.rc == EM_ECANCELED && c.rc == EM_ECANCELED;
            }
        }
    }
    write_file(path, "", 0);
    pthread_join(ta, NULL);
    REQ(ok);
    REQ(a.rc == 0);
    return 1;
}

/* A job waiting for the master's grant ends at em_cancel_all and at
 * em_close. */
TEST(cluster_waiting_app_canceled_or_closed) {
    one_core k;
    em_ctx *c1 = NULL, *c2 = NULL;
    int ok = cancel_body(&k, &c1, &c2);
    em_close(c1);
    em_close(c2);
    stop_cluster(&k);
    CHECK(ok);
}
