/*
 * test_master.c -- the master's decisions (scheduler/master.c) without
 * sockets or clocks: workers register and expire by heartbeat timeout,
 * losing their executors; executors are granted spread out (or packed),
 * one per worker with all its cores when no cores per executor are set,
 * within cores_max and the workers' memory; released resources go to the
 * next application (an executor its driver asks to kill holds its cores
 * until its worker reports the exit); waiting applications are granted in
 * the order they registered, and say whether they wait their turn or
 * could never be served (master_app_wait); the status JSON carries Spark's
 * master fields.  Recovery: the saved state loads into a RECOVERING master
 * whose grants are rebuilt from the workers' reports (confirmed, adopted,
 * killed, dropped), which waits for every worker and driver it knew and,
 * forced, drops those that did not come back; a corrupt state is refused
 * naming what is wrong; the state file (master_store.c) is replaced
 * atomically, checksummed, and locked.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "buf.h"
#include "ember.h"
#include "master.h"
#include "master_store.h"

typedef struct seen {
    int n;
    master_exec e[32];
} seen;

static void note(void *ud, const master_exec *e) {
    seen *s = ud;
    if (s->n < 32) s->e[s->n] = *e;
    s->n++;
}

/* A dead worker, noted as an executor of id -1 on it. */
static void dead_note(void *ud, const char *worker) {
    master_exec e;
    memset(&e, 0, sizeof e);
    e.id = -1;
    snprintf(e.worker, sizeof e.worker, "%s", worker);
    note(ud, &e);
}

static int cores_on(const seen *s, const char *worker) {
    int c = 0;
    for (int i = 0; i < s->n && i < 32; i++)
        if (!strcmp(s->e[i].worker, worker)) c += s->e[i].cores;
    return c;
}

static master *three_workers(int spread) {
    master_conf c = {"ember://127.0.0.1:7077", 5000, spread, 10};
    master *m = master_new(&c);
    if (!m) return NULL;
    const char *ids[] = {"w1", "w2", "w3"};
    for (int i = 0; i < 3; i++)
        if (master_register_worker(m, ids[i], "127.0.0.1", 7100 + i, 4, 3000, 0)) return NULL;
    return m;
}

TEST(master_spreads_one_executor_per_worker) {
    master *m = three_workers(1);
    CHECK(m);
    char id[MASTER_ID_MAX];
    seen s = {0};
    CHECK_OK(master_register_app(m, "wc", 6, 0, 1024, 0, id));
    CHECK_EQ_I64(master_schedule(m, note, &s), 3);
    CHECK_EQ_I64(cores_on(&s, "w1"), 2);
    CHECK_EQ_I64(cores_on(&s, "w2"), 2);
    CHECK_EQ_I64(cores_on(&s, "w3"), 2);
    CHECK_EQ_I64(master_schedule(m, note, &s), 0); /* at its cores_max */
    master_free(m);
}

TEST(master_packs_when_not_spreading) {
    master *m = three_workers(0);
    CHECK(m);
    char id[MASTER_ID_MAX];
    seen s = {0};
    CHECK_OK(master_register_app(m, "wc", 6, 0, 1024, 0, id));
    CHECK_EQ_I64(master_schedule(m, note, &s), 2);
    CHECK_EQ_I64(cores_on(&s, "w1"), 4);
    CHECK_EQ_I64(cores_on(&s, "w2"), 2);
    CHECK_EQ_I64(cores_on(&s, "w3"), 0);
    master_free(m);
}

TEST(master_cores_per_executor_and_memory) {
    /* 2 cores and 1024 MiB per executor on workers of 4 cores and 3000
     * MiB: two executors fit on each (cores and memory both allow two). */
    master *m = three_workers(1);
    CHECK(m);
    char id[MASTER_ID_MAX];
    seen s = {0};
    CHECK_OK(master_register_app(m, "big", 0, 2, 1024, 0, id));
    CHECK_EQ_I64(master_schedule(m, note, &s), 6);
    for (int i = 0; i < s.n; i++) CHECK_EQ_I64(s.e[i].cores, 2);
    CHECK_EQ_I64(cores_on(&s, "w2"), 4);
    /* Memory binds: 2000 MiB executors, one per worker. */
    master *m2 = three_workers(1);
    seen s2 = {0};
    CHECK_OK(master_register_app(m2, "fat", 0, 1, 2000, 0, id));
    CHECK_EQ_I64(master_schedule(m2, note, &s2), 3);
    master_free(m);
    master_free(m2);
}

TEST(master_released_resources_go_to_the_next_app) {
    master *m = three_workers(1);
    CHECK(m);
    char a1[MASTER_ID_MAX], a2[MASTER_ID_MAX];
    seen s = {0}, k = {0};
    CHECK_OK(master_register_app(m, "first", 0, 0, 1024, 0, a1));
    CHECK_OK(master_register_app(m, "second", 0, 0, 1024, 10, a2));
    CHECK_EQ_I64(master_schedule(m, note, &s), 3); /* the first takes every core */
    for (int i = 0; i < s.n; i++) CHECK(!strcmp(s.e[i].app, a1));
    CHECK_OK(master_unregister_app(m, a1, 100, note, &k));
    CHECK_EQ_I64(k.n, 3);
    seen s2 = {0};
    CHECK_EQ_I64(master_schedule(m, note, &s2), 3);
    for (int i = 0; i < s2.n; i++) CHECK(!strcmp(s2.e[i].app, a2));
    /* The driver asks for one to be killed: its worker is told, and its
     * cores stay taken until the worker reports the exit. */
    seen kk = {0};
    CHECK_OK(master_kill_executor(m, a2, s2.e[0].id, note, &kk));
    CHECK_EQ_I64(kk.n, 1);
    CHECK_EQ_I64(kk.e[0].id, s2.e[0].id);
    CHECK(!strcmp(kk.e[0].worker, s2.e[0].worker));
    CHECK_EQ_I64(master_kill_executor(m, a2, 999, note, &kk), EM_ENOENT);
    CHECK_EQ_I64(master_kill_executor(m, "app-none", s2.e[0].id, note, &kk), EM_ENOENT);
    CHECK_EQ_I64(master_schedule(m, note, &kk), 0);
    /* An executor that exits frees its cores; a replacement is granted. */
    CHECK_OK(master_executor_exited(m, a2, s2.e[0].id, 1, "killed", 20, note, &kk, NULL, 0));
    seen s3 = {0};
    CHECK_EQ_I64(master_schedule(m, note, &s3), 1);
    CHECK(!strcmp(s3.e[0].worker, s2.e[0].worker));
    CHECK(s3.e[0].id != s2.e[0].id); /* a new executor id */
    CHECK_EQ_I64(master_executor_exited(m, a2, 999, 0, "", 20, note, &kk, NULL, 0), EM_ENOENT);
    master_free(m);
}

/* Spark's WAITING applications: on a worker of one core, three
 * applications registered in turn get it in that order, each once the one
 * before ended; a waiting one is QUEUED (named behind those ahead of it),
 * and one no worker could ever hold is UNSERVABLE, saying why. */
TEST(master_grants_waiting_apps_in_submission_order) {
    master_conf c = {"ember://127.0.0.1:7077", 5000, 1, 10};
    master *m = master_new(&c);
    CHECK(m);
    char why[600], a[3][MASTER_ID_MAX], big[MASTER_ID_MAX], greedy[MASTER_ID_MAX];
    /* No worker yet: nothing could hold it. */
    CHECK_OK(master_register_app(m, "a0", 0, 0, 256, 0, a[0]));
    CHECK_EQ_I64(master_app_wait(m, a[0], why, sizeof why), MASTER_APP_UNSERVABLE);
    CHECK_STR_CONTAINS(why, "no alive workers");
    CHECK_OK(master_register_worker(m, "w1", "127.0.0.1", 7100, 1, 512, 0));
    CHECK_EQ_I64(master_app_wait(m, a[0], why, sizeof why), MASTER_APP_QUEUED);
    CHECK_OK(master_register_app(m, "a1", 0, 0, 256, 1, a[1]));
    CHECK_OK(master_register_app(m, "a2", 0, 0, 256, 2, a[2]));
    CHECK_OK(master_register_app(m, "big", 0, 0, 1024, 3, big));      /* more memory than any worker */
    CHECK_OK(master_register_app(m, "greedy", 1, 2, 256, 4, greedy)); /* cores.max below its executor's */
    for (int turn = 0; turn < 3; turn++) {
        seen s = {0};
        CHECK_EQ_I64(master_schedule(m, note, &s), 1);
        CHECK(!strcmp(s.e[0].app, a[turn]));
        CHECK_EQ_I64(master_app_wait(m, a[turn], why, sizeof why), MASTER_APP_SERVED);
        for (int later = turn + 1; later < 3; later++) {
            CHECK_EQ_I64(master_app_wait(m, a[later], why, sizeof why), MASTER_APP_QUEUED);
            CHECK_STR_CONTAINS(why, "WAITING for cores held by other applications");
            char running[MASTER_ID_MAX + 16];
            snprintf(running, sizeof running, "%s (RUNNING)", a[turn]);
            CHECK_STR_CONTAINS(why, running);
        }
        ebuf j = EBUF_INIT;
        CHECK_OK(master_json(m, 10, 10, &j));
        CHECK_OK(ebuf_append(&j, "", 1));
        char want[128];
        snprintf(want, sizeof want, "\"id\":\"%s\"", a[turn]);
        const char *at = strstr((const char *)j.p, want);
        CHECK(at && strstr(at, "\"state\":\"RUNNING\""));
        if (turn < 2) {
            snprintf(want, sizeof want, "\"id\":\"%s\"", a[turn + 1]);
            at = strstr((const char *)j.p, want);
            CHECK(at && !strncmp(strstr(at, "\"state\":"), "\"state\":\"WAITING\"", 17));
        }
        ebuf_free(&j);
        CHECK_EQ_I64(master_schedule(m, note, &s), 0); /* the core is taken: the others wait */
        seen k = {0};
        CHECK_OK(master_unregister_app(m, a[turn], 100, note, &k));
        CHECK_EQ_I64(k.n, 1);
    }
    seen s = {0};
    CHECK_EQ_I64(master_schedule(m, note, &s), 0);
    CHECK_EQ_I64(master_app_wait(m, big, why, sizeof why), MASTER_APP_UNSERVABLE);
    CHECK_STR_CONTAINS(why, "no alive worker has 1 cores and 1024 MiB for one executor (the largest has 1 cores, 512 MiB)");
    CHECK_EQ_I64(master_app_wait(m, greedy, why, sizeof why), MASTER_APP_UNSERVABLE);
    CHECK_STR_CONTAINS(why, "ember.cores.max");
    CHECK_EQ_I64(master_app_wait(m, "app-none", why, sizeof why), EM_ENOENT);
    master_free(m);
}

TEST(master_expires_silent_workers) {
    master *m = three_workers(1);
    CHECK(m);
    char id[MASTER_ID_MAX];
    seen s = {0}, lost = {0};
    CHECK_OK(master_register_app(m, "wc", 0, 0, 1024, 0, id));
    CHECK_EQ_I64(master_schedule(m, note, &s), 3);
    CHECK_OK(master_heartbeat(m, "w1", 4000));
    CHECK_OK(master_heartbeat(m, "w2", 4000));
    CHECK_EQ_I64(master_expire(m, 5000, note, dead_note, &lost), 0); /* w3 at its limit, not over */
    CHECK_EQ_I64(master_expire(m, 5001, note, dead_note, &lost), 1);
    CHECK_EQ_I64(lost.n, 2); /* its executor, then the worker itself */
    CHECK(!strcmp(lost.e[0].worker, "w3"));
    CHECK(!strcmp(lost.e[1].worker, "w3") && lost.e[1].id == -1);
    CHECK_EQ_I64(master_heartbeat(m, "w3", 5002), EM_ENOENT); /* it must register again */
    CHECK_OK(master_register_worker(m, "w3", "127.0.0.1", 7102, 4, 3000, 5003));
    seen again = {0};
    CHECK_EQ_I64(master_schedule(m, note, &again), 1);
    CHECK(!strcmp(again.e[0].worker, "w3"));
    /* The same id from another address while alive: refused. */
    CHECK_EQ_I64(master_register_worker(m, "w1", "127.0.0.1", 9999, 4, 3000, 5004), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "already registered by 127.0.0.1:7100");
    CHECK_EQ_I64(master_register_worker(m, "w9", "127.0.0.1", 7200, 0, 3000, 5004), EM_EINVAL);
    master_free(m);
}

/* A worker that expires with no executor is reported dead too: its
 * shuffle service held outputs of executors that ended before it. */
TEST(master_expire_reports_idle_workers) {
    master *m = three_workers(1);
    CHECK(m);
    seen lost = {0};
    CHECK_OK(master_heartbeat(m, "w1", 4000));
    CHECK_OK(master_heartbeat(m, "w2", 4000));
    CHECK_EQ_I64(master_expire(m, 5001, note, dead_note, &lost), 1);
    CHECK_EQ_I64(lost.n, 1);
    CHECK(!strcmp(lost.e[0].worker, "w3") && lost.e[0].id == -1);
    CHECK_EQ_I64(master_expire(m, 5002, note, NULL, &lost), 0);
    master_free(m);
}

/* Spark's spark.deploy.maxExecutorRetries: executors failing in a row
 * remove an application once none of its executors runs; an executor its
 * driver accepted restarts the count; exits the master asked for, and
 * clean exits, do not count; -1 never removes. */
static int fail_exec(master *m, const char *app, int id, seen *k, char *why, size_t cap) {
    return master_executor_exited(m, app, id, 1, "exited with code 3", 100, note, k, why, cap);
}

TEST(master_removes_app_after_max_executor_retries) {
    master_conf c = {"ember://127.0.0.1:7077", 5000, 1, 3};
    master *m = master_new(&c);
    CHECK(m);
    CHECK_OK(master_register_worker(m, "w1", "127.0.0.1", 7100, 2, 3000, 0));
    char a[MASTER_ID_MAX];
    char why[600];
    seen s = {0}, k = {0};
    CHECK_OK(master_register_app(m, "crashy", 0, 1, 512, 0, a));
    CHECK_EQ_I64(master_schedule(m, note, &s), 2); /* executors 0 and 1 */
    /* 0 runs (its driver accepted it); 1 fails three times over: the
     * application stays while 0 runs. */
    CHECK_OK(master_executor_registered(m, a, s.e[0].id));
    CHECK_EQ_I64(fail_exec(m, a, s.e[1].id, &k, why, sizeof why), 0);
    for (int i = 0; i < 3; i++) {
        seen r = {0};
        CHECK_EQ_I64(master_schedule(m, note, &r), 1);
        CHECK_EQ_I64(fail_exec(m, a, r.e[0].id, &k, why, sizeof why), 0);
    }
    /* A replacement is granted (not yet accepted by the driver); then 0
     * fails too: five in a row with none running, over the limit. */
    seen last = {0};
    CHECK_EQ_I64(master_schedule(m, note, &last), 1);
    CHECK_EQ_I64(fail_exec(m, a, s.e[0].id, &k, why, sizeof why), MASTER_APP_REMOVED);
    CHECK_STR_CONTAINS(why, "the master removed application app-0000 (FAILED): 5 executors in a row failed");
    CHECK_STR_CONTAINS(why, "ember.deploy.maxExecutorRetries is 3");
    CHECK_STR_CONTAINS(why, "exited with code 3");
    CHECK_EQ_I64(k.n, 1); /* the replacement was killed */
    CHECK_EQ_I64(k.e[0].id, last.e[0].id);
    seen none = {0};
    CHECK_EQ_I64(master_schedule(m, note, &none), 0);
    ebuf b = EBUF_INIT;
    CHECK_OK(master_json(m, 200, 200, &b));
    CHECK(b.len && memmem(b.p, b.len, "\"state\":\"FAILED\"", 16));
    ebuf_free(&b);
    CHECK_EQ_I64(master_executor_registered(m, a, 99), EM_ENOENT);
    master_free(m);
}

/* An executor whose worker cannot load a library the program needs
 * removes its application at the first launch, though the retries allow
 * more and another executor of it runs: no executor of it can start there. */
TEST(master_removes_app_whose_executor_cannot_run) {
    master_conf c = {"ember://127.0.0.1:7077", 5000, 1, 10};
    master *m = master_new(&c);
    CHECK(m);
    CHECK_OK(master_register_worker(m, "w1", "127.0.0.1", 7100, 2, 3000, 0));
    char a[MASTER_ID_MAX], why[600];
    seen s = {0}, k = {0};
    CHECK_OK(master_register_app(m, "needlib", 0, 1, 512, 0, a));
    CHECK_EQ_I64(master_schedule(m, note, &s), 2);
    CHECK_OK(master_executor_registered(m, a, s.e[0].id));
    CHECK_EQ_I64(master_executor_cannot_run(m, a, s.e[1].id, "the dynamic loader cannot load libx.so", 100, note, &k,
                                            why, sizeof why),
                 MASTER_APP_REMOVED);
    CHECK_STR_CONTAINS(why, "the master removed application app-0000 (FAILED): its executor 1 cannot start: "
                            "the dynamic loader cannot load libx.so");
    CHECK_EQ_I64(k.n, 1); /* the one running is killed */
    CHECK_EQ_I64(k.e[0].id, s.e[0].id);
    seen none = {0};
    CHECK_EQ_I64(master_schedule(m, note, &none), 0);
    CHECK_EQ_I64(master_executor_cannot_run(m, a, 7, "", 100, note, &k, why, sizeof why), EM_ENOENT);
    master_free(m);
}

TEST(master_executor_retries_reset_and_exclusions) {
    master_conf c = {"ember://127.0.0.1:7077", 5000, 1, 2};
    master *m = master_new(&c);
    CHECK(m);
    CHECK_OK(master_register_worker(m, "w1", "127.0.0.1", 7100, 1, 3000, 0));
    char a[MASTER_ID_MAX], why[600];
    seen k = {0};
    CHECK_OK(master_register_app(m, "resets", 0, 1, 512, 0, a));
    /* fail, accepted, fail, accepted, ...: never two in a row. */
    for (int i = 0; i < 5; i++) {
        seen r = {0};
        CHECK_EQ_I64(master_schedule(m, note, &r), 1);
        if (i) CHECK_OK(master_executor_registered(m, a, r.e[0].id));
        CHECK_EQ_I64(fail_exec(m, a, r.e[0].id, &k, why, sizeof why), 0);
        seen r2 = {0};
        CHECK_EQ_I64(master_schedule(m, note, &r2), 1);
        CHECK_OK(master_executor_registered(m, a, r2.e[0].id));
        /* Killed on the driver's request, or a clean exit: not counted. */
        CHECK_OK(master_kill_executor(m, a, r2.e[0].id, note, &k));
        CHECK_EQ_I64(fail_exec(m, a, r2.e[0].id, &k, why, sizeof why), 0);
        seen r3 = {0};
        CHECK_EQ_I64(master_schedule(m, note, &r3), 1);
        CHECK_OK(master_executor_exited(m, a, r3.e[0].id, 0, "", 100, note, &k, why, sizeof why));
    }
    /* Two failures in a row, nothing running: removed. */
    seen r = {0};
    CHECK_EQ_I64(master_schedule(m, note, &r), 1);
    CHECK_EQ_I64(fail_exec(m, a, r.e[0].id, &k, why, sizeof why), 0);
    seen r2 = {0};
    CHECK_EQ_I64(master_schedule(m, note, &r2), 1);
    CHECK_EQ_I64(fail_exec(m, a, r2.e[0].id, &k, why, sizeof why), MASTER_APP_REMOVED);
    master_free(m);
    /* -1: never removed. */
    master_conf never = {"ember://127.0.0.1:7077", 5000, 1, -1};
    m = master_new(&never);
    CHECK(m);
    CHECK_OK(master_register_worker(m, "w1", "127.0.0.1", 7100, 1, 3000, 0));
    CHECK_OK(master_register_app(m, "forever", 0, 1, 512, 0, a));
    for (int i = 0; i < 50; i++) {
        seen q = {0};
        CHECK_EQ_I64(master_schedule(m, note, &q), 1);
        CHECK_EQ_I64(fail_exec(m, a, q.e[0].id, &k, why, sizeof why), 0);
    }
    master_free(m);
}

TEST(master_json_has_spark_fields) {
    master *m = three_workers(1);
    CHECK(m);
    char id[MASTER_ID_MAX];
    seen s = {0};
    CHECK_OK(master_register_app(m, "say \"hi\"", 6, 0, 1024, 0, id));
    CHECK_EQ_I64(master_schedule(m, note, &s), 3);
    ebuf out = EBUF_INIT;
    CHECK_OK(master_json(m, 50, 50, &out));
    CHECK_OK(ebuf_append(&out, "", 1));
    const char *j = (const char *)out.p;
    CHECK(strstr(j, "\"url\":\"ember://127.0.0.1:7077\""));
    CHECK(strstr(j, "\"aliveworkers\":3"));
    CHECK(strstr(j, "\"cores\":12,\"coresused\":6,\"memory\":9000,\"memoryused\":3072"));
    CHECK(strstr(j, "\"name\":\"say \\\"hi\\\"\""));
    CHECK(strstr(j, "\"state\":\"RUNNING\""));
    CHECK(strstr(j, "\"completedapps\":[]"));
    CHECK(strstr(j, "\"status\":\"ALIVE\""));
    ebuf_free(&out);
    master_free(m);
}

/* /json's times are epoch milliseconds, as Spark's: a monotonic time
 * shifted by the wall clock's distance from the monotonic one. */
TEST(master_json_times_are_epoch_ms) {
    master *m = three_workers(1);
    CHECK(m);
    char id[MASTER_ID_MAX];
    CHECK_OK(master_register_app(m, "app", 6, 0, 1024, 40, id));
    CHECK_OK(master_heartbeat(m, "w1", 45));
    ebuf out = EBUF_INIT;
    CHECK_OK(master_json(m, 50, 1764300000050ull, &out));
    CHECK_OK(ebuf_append(&out, "", 1));
    const char *j = (const char *)out.p;
    CHECK(strstr(j, "\"starttime\":1764300000040"));
    CHECK(strstr(j, "\"lastheartbeat\":1764300000045"));
    CHECK(strstr(j, "\"duration\":10"));
    ebuf_free(&out);
    master_free(m);
}

/* JSON of m, NUL-terminated, in out. */
static int json_of(master *m, ebuf *out) {
    ebuf_reset(out);
    return master_json(m, 100, 100, out) || ebuf_append(out, "", 1);
}

/* Three workers of 4 cores, "wc" (cores max 6) with an executor of 2
 * cores on each, saved into state; *app is its id. */
static int saved_cluster(ebuf *state, char app[MASTER_ID_MAX]) {
    master *m = three_workers(1);
    seen s = {0};
    if (!m || master_register_app(m, "wc", 6, 0, 1024, 7, app) || master_schedule(m, note, &s) != 3) return -1;
    int rc = master_save(m, state);
    master_free(m);
    return rc;
}

TEST(master_recovers_from_saved_state) {
    ebuf st = EBUF_INIT, j = EBUF_INIT;
    char app[MASTER_ID_MAX];
    CHECK_OK(saved_cluster(&st, app));
    master_conf c = {"ember://127.0.0.1:7077", 5000, 1, 10};
    master *m = master_new(&c);
    CHECK(m);
    CHECK_OK(master_load(m, st.p, st.len, 1000));
    CHECK(master_recovering(m));
    CHECK_OK(json_of(m, &j));
    CHECK(strstr((char *)j.p, "\"status\":\"RECOVERING\""));
    CHECK(strstr((char *)j.p, "\"state\":\"UNKNOWN\""));
    CHECK(strstr((char *)j.p, "\"aliveworkers\":0"));
    seen none = {0}, lost = {0}, killed = {0};
    /* Nothing is granted while it recovers, even to a new application. */
    char app2[MASTER_ID_MAX];
    CHECK_OK(master_register_app(m, "later", 0, 0, 1024, 1000, app2));
    CHECK(strcmp(app2, app) != 0); /* the application numbers go on */
    CHECK_EQ_I64(master_schedule(m, note, &none), 0);
    /* w1 and w2 come back, each running its executor (ids 0 and 1, the
     * order the saved master granted them); w3 does not. */
    CHECK_OK(master_register_worker(m, "w1", "127.0.0.1", 7100, 4, 3000, 1100));
    CHECK_OK(master_worker_report(m, "w1", 1, note, &lost));
    CHECK_EQ_I64(master_executor_running(m, "w1", app, 0, 2, 1024, note, note, &killed), MASTER_CONFIRMED);
    CHECK_OK(master_register_worker(m, "w2", "127.0.0.1", 7101, 4, 3000, 1100));
    CHECK_OK(master_worker_report(m, "w2", 1, note, &lost));
    CHECK_EQ_I64(master_executor_running(m, "w2", app, 1, 2, 1024, note, note, &killed), MASTER_CONFIRMED);
    CHECK_EQ_I64(master_recovery_done(m, 0, 1200, note, note, &lost), 0); /* its driver and w3: not yet */
    CHECK_OK(master_reattach_app(m, app, "wc", 6, 0, 1024));
    CHECK_EQ_I64(master_recovery_done(m, 0, 1200, note, note, &lost), 0); /* w3 */
    CHECK_EQ_I64(lost.n + killed.n, 0);
    /* The timeout: w3 is dead, its executor lost; the master is ALIVE. */
    CHECK_EQ_I64(master_recovery_done(m, 1, 6000, note, note, &lost), 1);
    CHECK(!master_recovering(m));
    CHECK_EQ_I64(lost.n, 1);
    CHECK(!strcmp(lost.e[0].worker, "w3") && lost.e[0].id == 2);
    CHECK_OK(json_of(m, &j));
    CHECK(strstr((char *)j.p, "\"status\":\"ALIVE\""));
    CHECK(strstr((char *)j.p, "\"aliveworkers\":2,\"cores\":8,\"coresused\":4"));
    CHECK(strstr((char *)j.p, "\"state\":\"DEAD\""));
    /* wc holds 4 of its 6 cores on w1 and w2 (one executor per worker):
     * nothing more for it there; "later" takes what is left. */
    seen g = {0};
    CHECK_EQ_I64(master_schedule(m, note, &g), 2);
    for (int i = 0; i < g.n; i++) CHECK(!strcmp(g.e[i].app, app2));
    /* w3 back: wc's next executor is id 3, past the saved ones. */
    CHECK_OK(master_register_worker(m, "w3", "127.0.0.1", 7102, 4, 3000, 6100));
    CHECK_OK(master_worker_report(m, "w3", 0, note, &lost));
    seen g2 = {0};
    CHECK(master_schedule(m, note, &g2) >= 1);
    CHECK(!strcmp(g2.e[0].app, app) && g2.e[0].id == 3 && g2.e[0].cores == 2);
    master_free(m);
    ebuf_free(&st);
    ebuf_free(&j);
}

TEST(master_report_confirms_adopts_kills_drops) {
    ebuf st = EBUF_INIT;
    char app[MASTER_ID_MAX];
    CHECK_OK(saved_cluster(&st, app));
    master_conf c = {"ember://127.0.0.1:7077", 5000, 1, 10};
    master *m = master_new(&c);
    CHECK(m);
    CHECK_OK(master_load(m, st.p, st.len, 0));
    seen lost = {0}, killed = {0};
    /* w1 runs three: its own (0), one of wc the state missed (7: granted
     * just before the old master stopped), and one of an application this
     * master never heard of. */
    CHECK_OK(master_register_worker(m, "w1", "127.0.0.1", 7100, 4, 3000, 10));
    CHECK_OK(master_worker_report(m, "w1", 3, note, &lost));
    CHECK_EQ_I64(master_executor_running(m, "w1", app, 0, 2, 1024, note, note, &killed), MASTER_CONFIRMED);
    CHECK_EQ_I64(master_executor_running(m, "w1", app, 7, 1, 512, note, note, &killed), MASTER_ADOPTED);
    CHECK_EQ_I64(master_executor_running(m, "w1", "app-9999", 0, 1, 512, note, note, &killed), MASTER_KILLED);
    CHECK_EQ_I64(killed.n, 1);
    CHECK(!strcmp(killed.e[0].app, "app-9999") && !strcmp(killed.e[0].worker, "w1"));
    /* Past its report: ignored. */
    CHECK_EQ_I64(master_executor_running(m, "w1", app, 8, 1, 512, note, note, &killed), EM_ENOENT);
    /* w2 runs nothing any more: its saved executor (1) is lost at once. */
    CHECK_OK(master_register_worker(m, "w2", "127.0.0.1", 7101, 4, 3000, 10));
    CHECK_OK(master_worker_report(m, "w2", 0, note, &lost));
    CHECK_EQ_I64(lost.n, 1);
    CHECK(lost.e[0].id == 1 && !strcmp(lost.e[0].worker, "w2"));
    /* w3 says it runs wc's executor 0, which the master has on w1: the
     * stray copy is killed. */
    CHECK_OK(master_register_worker(m, "w3", "127.0.0.1", 7102, 4, 3000, 10));
    CHECK_OK(master_worker_report(m, "w3", 1, note, &lost));
    seen w3 = {0}; /* what is killed, then what is lost (one ud for both) */
    CHECK_EQ_I64(master_executor_running(m, "w3", app, 0, 2, 1024, note, note, &w3), MASTER_KILLED);
    CHECK_EQ_I64(w3.n, 2);
    CHECK(w3.e[0].id == 0 && !strcmp(w3.e[0].worker, "w3"));
    CHECK(w3.e[1].id == 2 && !strcmp(w3.e[1].worker, "w3")); /* its own saved one was not reported */
    /* An unknown application cannot re-attach; wc can, and then every
     * one is back: ALIVE without waiting. */
    CHECK_EQ_I64(master_reattach_app(m, "app-4242", "x", 0, 0, 1024), EM_ENOENT);
    CHECK_STR_CONTAINS(em_errmsg(), "application app-4242 is not running here");
    CHECK_OK(master_reattach_app(m, app, "wc", 6, 0, 1024));
    CHECK_EQ_I64(master_recovery_done(m, 0, 20, note, note, &lost), 1);
    ebuf j = EBUF_INIT;
    CHECK_OK(json_of(m, &j));
    /* w1: executors 0 (2 cores) and 7 (1 core). */
    CHECK(strstr((char *)j.p, "\"aliveworkers\":3,\"cores\":12,\"coresused\":3"));
    CHECK(strstr((char *)j.p, "{\"id\":7,\"worker\":\"w1\",\"cores\":1"));
    /* The next executor of wc is 8: granted on w2 (cores_max 6, 3 held). */
    seen g = {0};
    CHECK(master_schedule(m, note, &g) >= 1);
    CHECK_EQ_I64(g.e[0].id, 8);
    /* An executor that exits is not in the saved state any more. */
    uint64_t v = master_version(m);
    CHECK_OK(master_executor_exited(m, app, 7, 0, "", 0, NULL, NULL, NULL, 0));
    CHECK(master_version(m) != v);
    CHECK_OK(master_heartbeat(m, "w1", 30));
    v = master_version(m);
    CHECK_OK(master_heartbeat(m, "w1", 40));
    CHECK(master_version(m) == v); /* heartbeats change nothing saved */
    master_free(m);
    ebuf_free(&st);
    ebuf_free(&j);
}

TEST(master_load_refuses_corrupt_state) {
    ebuf st = EBUF_INIT;
    char app[MASTER_ID_MAX];
    CHECK_OK(saved_cluster(&st, app));
    master_conf c = {"ember://127.0.0.1:7077", 5000, 1, 10};
    /* Cut short anywhere: refused, and the master stays empty and ALIVE. */
    for (size_t cut = 0; cut < st.len; cut += 7) {
        master *m = master_new(&c);
        CHECK(m);
        CHECK_EQ_I64(master_load(m, st.p, cut, 0), EM_ECORRUPT);
        CHECK_STR_CONTAINS(em_errmsg(), "master state: ");
        CHECK(!master_recovering(m));
        seen s = {0};
        CHECK_OK(master_register_worker(m, "w1", "127.0.0.1", 7100, 4, 3000, 0));
        CHECK_EQ_I64(master_schedule(m, note, &s), 0);
        master_free(m);
    }
    /* Not ours: a msgpack array of another shape; an executor on a worker
     * the state does not list. */
    master *m = master_new(&c);
    CHECK(m);
    static const uint8_t other[] = {0x93, 0x01, 0x02, 0x03};
    CHECK_EQ_I64(master_load(m, other, sizeof other, 0), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "not an array of 5");
    ebuf bad = EBUF_INIT;
    CHECK_OK(ebuf_append(&bad, st.p, st.len));
    uint8_t *w3 = memmem(bad.p, bad.len, "\xa2w3", 3);
    CHECK(w3);
    w3[2] = '9'; /* the worker w9 is listed, and its executor names w3 */
    CHECK_EQ_I64(master_load(m, bad.p, bad.len, 0), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "an executor on a worker not listed");
    /* An empty state: nothing to recover, ALIVE at once. */
    master *e = master_new(&c);
    ebuf empty = EBUF_INIT;
    CHECK(e);
    CHECK_OK(master_save(e, &empty));
    CHECK_OK(master_load(m, empty.p, empty.len, 0));
    CHECK(!master_recovering(m));
    master_free(e);
    master_free(m);
    ebuf_free(&empty);
    ebuf_free(&bad);
    ebuf_free(&st);
}

TEST(master_store_atomic_checksummed_locked) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/recovery", test_tmpdir());
    master_store *s = master_store_open(dir);
    CHECK(s);
    uint8_t *body = (uint8_t *)"x";
    size_t len = 1;
    CHECK_OK(master_store_read(s, &body, &len)); /* no file yet */
    CHECK(!body && !len);
    /* A second master on the same directory is refused. */
    CHECK(!master_store_open(dir));
    CHECK_STR_CONTAINS(em_errmsg(), "is in use by another master");
    CHECK_OK(master_store_write(s, (const uint8_t *)"first", 5));
    CHECK_OK(master_store_write(s, (const uint8_t *)"second state", 12));
    CHECK_OK(master_store_read(s, &body, &len));
    CHECK(len == 12 && !memcmp(body, "second state", 12));
    free(body);
    char tmp[700];
    snprintf(tmp, sizeof tmp, "%s/master-state.tmp", dir);
    CHECK(access(tmp, F_OK) != 0); /* renamed into place */
    /* Empty state: a header alone. */
    CHECK_OK(master_store_write(s, (const uint8_t *)"", 0));
    CHECK_OK(master_store_read(s, &body, &len));
    CHECK(body && len == 0);
    free(body);
    /* One byte flipped in the body: a checksum mismatch naming the file. */
    CHECK_OK(master_store_write(s, (const uint8_t *)"second state", 12));
    const char *path = master_store_path(s);
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    CHECK(pwrite(fd, "S", 1, MASTER_STORE_HEADER) == 1);
    close(fd);
    CHECK_EQ_I64(master_store_read(s, &body, &len), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), path);
    CHECK_STR_CONTAINS(em_errmsg(), "is corrupt: checksum mismatch");
    /* Cut short: the header's length disagrees. */
    CHECK(truncate(path, MASTER_STORE_HEADER + 3) == 0);
    CHECK_EQ_I64(master_store_read(s, &body, &len), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "its header says 12 bytes of state, the file holds 3");
    CHECK(truncate(path, 5) == 0);
    CHECK_EQ_I64(master_store_read(s, &body, &len), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "shorter than its header");
    master_store_close(s);
    /* The lock goes with the master. */
    s = master_store_open(dir);
    CHECK(s);
    master_store_close(s);
}
