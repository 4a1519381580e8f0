/*
 * test_master.c -- the master's decisions (scheduler/master.c) without
 * sockets or clocks: workers register and expire by heartbeat timeout,
 * losing their executors; executors are granted spread out (or packed),
 * one per worker with all its cores when no cores per executor are set,
 * within cores_max and the workers' memory; released resources go to the
 * next application (an executor its driver asks to kill holds its cores
 * until its worker reports the exit); the status JSON carries Spark's
 * master fields.
 */
#include <stdio.h>
#include <string.h>

#include "../test.h"
#include "buf.h"
#include "ember.h"
#include "master.h"

typedef struct seen {
    int n;
    master_exec e[32];
} seen;

static void note(void *ud, const master_exec *e) {
    seen *s = ud;
    if (s->n < 32) s->e[s->n] = *e;
    s->n++;
}

static int cores_on(const seen *s, const char *worker) {
    int c = 0;
    for (int i = 0; i < s->n && i < 32; i++)
        if (!strcmp(s->e[i].worker, worker)) c += s->e[i].cores;
    return c;
}

static master *three_workers(int spread) {
    master_conf c = {"ember://127.0.0.1:7077", 5000, spread};
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
    CHECK_OK(master_executor_exited(m, a2, s2.e[0].id));
    seen s3 = {0};
    CHECK_EQ_I64(master_schedule(m, note, &s3), 1);
    CHECK(!strcmp(s3.e[0].worker, s2.e[0].worker));
    CHECK(s3.e[0].id != s2.e[0].id); /* a new executor id */
    CHECK_EQ_I64(master_executor_exited(m, a2, 999), EM_ENOENT);
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
    CHECK_EQ_I64(master_expire(m, 5000, note, &lost), 0); /* w3 at its limit, not over */
    CHECK_EQ_I64(master_expire(m, 5001, note, &lost), 1);
    CHECK_EQ_I64(lost.n, 1);
    CHECK(!strcmp(lost.e[0].worker, "w3"));
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

TEST(master_json_has_spark_fields) {
    master *m = three_workers(1);
    CHECK(m);
    char id[MASTER_ID_MAX];
    seen s = {0};
    CHECK_OK(master_register_app(m, "say \"hi\"", 6, 0, 1024, 0, id));
    CHECK_EQ_I64(master_schedule(m, note, &s), 3);
    ebuf out = EBUF_INIT;
    CHECK_OK(master_json(m, 50, &out));
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
