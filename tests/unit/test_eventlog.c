/*
 * test_eventlog.c -- event logs (engine/eventlog_json.c, eventlog.c,
 * eventlog_reader.c): every event kind written as Spark writes it and read
 * back to the same bytes; hand-written Spark 3.5 and 1.6 logs
 * (tests/data/eventlogs/) read field by field; zstd, lz4-java block and
 * rolling-directory logs; .inprogress logs with a torn last line; a
 * corrupt line named by line number and field; the writer's names,
 * renames, rolling and errors.  test_eventlog_lz4.c checks lz4 logs' bytes.
 */
#include <dirent.h>
#include <errno.h>
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "../test.h"
#include "eventlog_fixture.h"
#include "appevent.h"
#include "buf.h"
#include "ember.h"
#include "eventlog.h"
#include "eventlog_json.h"
#include "eventlog_reader.h"
#include "history.h"


static char *sdup(const char *s) { return strdup(s); }

static void set_task(ae_task *t, int64_t id) {
    t->task_id = id;
    t->index = (int)id % 7;
    t->attempt = 1;
    t->partition = (int)id % 7;
    t->launch_ms = 1700000000000 + id;
    t->finish_ms = 1700000000500 + id;
    t->getting_result_ms = 1700000000400 + id;
    strcpy(t->exec_id, "3");
    strcpy(t->host, "worker-\"1\".example");
    strcpy(t->locality, "NODE_LOCAL");
    t->speculative = 1;
}

static void set_stage(ae_stage *s, int id) {
    s->id = id;
    s->attempt = 1;
    s->name = sdup("reduceByKey at wc.c:42");
    s->details = sdup("wc.c:42\nmain");
    s->ntasks = 8;
    s->nrdds = 2;
    s->rdds = calloc(2, sizeof *s->rdds);
    for (int i = 0; i < 2; i++) {
        ae_rdd *r = &s->rdds[i];
        r->id = id * 10 + i;
        r->name = sdup(i ? "textFile" : "map");
        r->callsite = sdup("wc.c:40");
        r->nparents = i ? 0 : 1;
        if (r->nparents) {
            r->parents = malloc(sizeof(int));
            r->parents[0] = id * 10 + 1;
        }
        r->storage.use_memory = 1;
        r->storage.use_offheap = (uint8_t)i;
        r->storage.deserialized = 1;
        r->storage.replication = 2;
        r->nparts = 8;
        r->ncached = 3;
        r->mem_size = 1 << 20;
        r->disk_size = 77;
    }
    s->nparents = 1;
    s->parents = malloc(sizeof(int));
    s->parents[0] = id - 1;
    s->submit_ms = 1700000000100;
    s->complete_ms = 1700000000900;
    s->failure = sdup("FetchFailed: \u00e9t\u00e9");
}

static void add_props(app_event *e, int sec, int n) {
    e->props[sec] = calloc((size_t)n, sizeof(ae_prop));
    e->nprops[sec] = n;
    for (int i = 0; i < n; i++) {
        char k[32], v[32];
        snprintf(k, sizeof k, "ember.key%d.%d", sec, i);
        snprintf(v, sizeof v, "value \"%d\"\t", i);
        e->props[sec][i].key = sdup(k);
        e->props[sec][i].value = sdup(v);
    }
}

/* One event of kind k with every field it has set; reason picks the task
 * end reason for AE_TASK_END. */
static app_event *sample(ae_kind k, ae_reason reason) {
    app_event *e = app_event_new(k);
    e->time_ms = 1700000000123;
    switch (k) {
    case AE_LOG_START: e->version = sdup("0.1.0"); break;
    case AE_APP_START:
        e->app_name = sdup("word count");
        e->app_id = sdup("app-20231128-0001");
        e->attempt_id = sdup("1");
        e->user = sdup("alice");
        break;
    case AE_ENV_UPDATE:
        for (int s = 0; s < AE_ENV_SECTIONS; s++) add_props(e, s, s + 1);
        break;
    case AE_EXEC_ADDED:
        strcpy(e->exec.id, "7");
        strcpy(e->exec.host, "10.1.2.3");
        e->exec.cores = 4;
        e->exec.stdout_url = sdup("http://10.1.2.3:8081/logPage/?executorId=7&logType=stdout");
        e->exec.stderr_url = sdup("http://10.1.2.3:8081/logPage/?executorId=7&logType=stderr");
        break;
    case AE_EXEC_REMOVED:
        strcpy(e->exec.id, "7");
        e->reason = sdup("worker lost");
        break;
    case AE_JOB_START:
        e->job_id = 3;
        e->nstages = 2;
        e->stages = calloc(2, sizeof(ae_stage));
        set_stage(&e->stages[0], 4);
        set_stage(&e->stages[1], 5);
        add_props(e, 0, 2);
        break;
    case AE_JOB_END:
        e->job_id = 3;
        e->failed = 1;
        e->reason = sdup("Job aborted due to stage failure");
        break;
    case AE_STAGE_SUBMITTED:
    case AE_STAGE_COMPLETED:
        e->nstages = 1;
        e->stages = calloc(1, sizeof(ae_stage));
        set_stage(&e->stages[0], 4);
        if (k == AE_STAGE_SUBMITTED) add_props(e, 0, 3);
        break;
    case AE_TASK_START:
    case AE_TASK_GETTING_RESULT:
    case AE_TASK_END:
        e->stage_id = 4;
        e->stage_attempt = 1;
        set_task(&e->task, 99);
        if (k != AE_TASK_END) break;
        e->shuffle_map = 1;
        e->task.failed = reason != AE_SUCCESS;
        e->end.reason = reason;
        e->end.message = reason == AE_SUCCESS || reason == AE_COMMIT_DENIED ? NULL : sdup("it went wrong");
        if (reason == AE_EXCEPTION) e->end.class_name = sdup("EmberUserError");
        if (reason == AE_UNKNOWN_REASON) e->end.class_name = sdup("SomeFutureReason");
        if (reason == AE_FETCH_FAILED || reason == AE_EXEC_LOST) {
            strcpy(e->end.bm_exec, "2");
            strcpy(e->end.bm_host, "10.1.2.4");
            e->end.bm_port = reason == AE_FETCH_FAILED ? 7337 : 0;
            e->end.shuffle_id = reason == AE_FETCH_FAILED ? 1 : 0;
            e->end.map_id = reason == AE_FETCH_FAILED ? 12345678901LL : 0;
            e->end.map_index = reason == AE_FETCH_FAILED ? 5 : -1;
            e->end.reduce_id = reason == AE_FETCH_FAILED ? 2 : 0;
            e->end.caused_by_app = reason == AE_EXEC_LOST;
            if (reason == AE_EXEC_LOST) e->end.bm_host[0] = '\0';
        }
        if (reason == AE_COMMIT_DENIED) {
            e->job_id = 3;
            e->end.message = sdup("TaskCommitDenied (Driver denied task commit) for job: 3, partition: 1, attemptNumber: 1");
        }
        e->has_metrics = 1;
        int64_t *m = (int64_t *)&e->metrics;
        for (int i = 0; i < TASK_METRICS_N; i++) m[i] = 1000 + i;
        break;
    case AE_UNPERSIST_RDD: e->rdd_id = 17; break;
    case AE_BLOCK_MANAGER_ADDED:
        strcpy(e->exec.id, "driver");
        strcpy(e->exec.host, "10.1.2.3");
        e->exec.port = 40123;
        e->max_mem = 1LL << 30;
        break;
    case AE_BLOCK_UPDATED:
        strcpy(e->exec.id, "3");
        strcpy(e->exec.host, "10.1.2.5");
        e->exec.port = 40124;
        e->rdd_id = 12;
        e->block_part = 345;
        e->block_level.use_disk = 1;
        e->block_level.replication = 1;
        e->block_disk = 5000000000LL;
        break;
    case AE_OTHER: e->other = sdup("org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd"); break;
    default: break;
    }
    if (reason == AE_COMMIT_DENIED) e->task.partition = 1;
    return e;
}

static const char *text(ebuf *b) {
    ebuf_reserve(b, 1);
    b->p[b->len] = '\0';
    return (const char *)b->p;
}

/* write -> read -> write gives the same bytes; the read event is returned
 * in *back. */
static int round_trip(const app_event *e, app_event **back, ebuf *w1) {
    ebuf w2 = EBUF_INIT;
    json_doc d = JSON_DOC_INIT;
    *back = NULL;
    w1->len = 0;
    int rc = evjson_write(e, w1);
    if (!rc) rc = evjson_read(w1->p, w1->len, &d, back);
    if (!rc) rc = evjson_write(*back, &w2);
    if (!rc && (w1->len != w2.len || memcmp(w1->p, w2.p, w1->len))) {
        fprintf(stderr, "  differs:\n  %s\n  %s\n", text(w1), text(&w2));
        rc = -100;
    }
    ebuf_free(&w2);
    json_doc_free(&d);
    return rc;
}

TEST(eventlog_json_round_trip_every_kind) {
    ebuf w = EBUF_INIT;
    for (int k = AE_LOG_START; k <= AE_OTHER; k++) {
        int nr = k == AE_TASK_END ? AE_UNKNOWN_REASON + 1 : 1;
        for (int r = 0; r < nr; r++) {
            app_event *e = sample((ae_kind)k, (ae_reason)r), *b;
            CHECK_OK(round_trip(e, &b, &w));
            CHECK_EQ_I64(b->kind, k);
            CHECK(w.len > 0 && w.p[w.len - 1] == '}');
            if (k == AE_TASK_END) {
                CHECK_EQ_I64(b->end.reason, r);
                CHECK(!memcmp(&b->metrics, &e->metrics, sizeof e->metrics));
                CHECK_EQ_I64(b->task.task_id, 99);
                CHECK(!strcmp(b->task.host, "worker-\"1\".example"));
            }
            if (k == AE_JOB_START) {
                CHECK_EQ_I64(b->nstages, 2);
                CHECK_EQ_I64(b->stages[1].id, 5);
                CHECK_EQ_I64(b->stages[1].rdds[1].storage.use_offheap, 1);
                CHECK_EQ_I64(b->stages[1].rdds[0].parents[0], 51);
                CHECK(!strcmp(b->stages[0].failure, e->stages[0].failure));
                CHECK_EQ_I64(b->nprops[0], 2);
            }
            if (k == AE_ENV_UPDATE)
                for (int s = 0; s < AE_ENV_SECTIONS; s++) CHECK_EQ_I64(b->nprops[s], s + 1);
            if (k == AE_BLOCK_UPDATED) {
                CHECK_STR_CONTAINS(text(&w), "\"Block Updated Info\":{\"Block Manager ID\":{\"Executor ID\":\"3\","
                                             "\"Host\":\"10.1.2.5\",\"Port\":40124},\"Block ID\":\"rdd_12_345\","
                                             "\"Storage Level\":{\"Use Disk\":true,\"Use Memory\":false,");
                CHECK_STR_CONTAINS(text(&w), "\"Memory Size\":0,\"Disk Size\":5000000000}}");
                CHECK_EQ_I64(b->rdd_id, 12);
                CHECK_EQ_I64(b->block_part, 345);
                CHECK_EQ_I64(b->block_disk, 5000000000LL);
                CHECK(!strcmp(b->exec.id, "3"));
            }
            app_event_free(e);
            app_event_free(b);
        }
    }
    ebuf_free(&w);
}

TEST(eventlog_json_spark_names_and_defaults) {
    ebuf w = EBUF_INIT;
    app_event *e = sample(AE_TASK_END, AE_FETCH_FAILED);
    CHECK_OK(evjson_write(e, &w));
    const char *t = text(&w);
    CHECK(!strncmp(t, "{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":4,\"Stage Attempt ID\":1,\"Task Type\":\"ShuffleMapTask\","
                      "\"Task End Reason\":{\"Reason\":\"FetchFailed\",\"Block Manager Address\":{\"Executor ID\":\"2\","
                      "\"Host\":\"10.1.2.4\",\"Port\":7337},\"Shuffle ID\":1,\"Map ID\":12345678901,\"Map Index\":5,"
                      "\"Reduce ID\":2,\"Message\":\"it went wrong\"},\"Task Info\":{\"Task ID\":99,",
                   strlen("{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":4,\"Stage Attempt ID\":1,\"Task Type\":\"ShuffleMapTask\","
                          "\"Task End Reason\":{\"Reason\":\"FetchFailed\",\"Block Manager Address\":{\"Executor ID\":\"2\","
                          "\"Host\":\"10.1.2.4\",\"Port\":7337},\"Shuffle ID\":1,\"Map ID\":12345678901,\"Map Index\":5,"
                          "\"Reduce ID\":2,\"Message\":\"it went wrong\"},\"Task Info\":{\"Task ID\":99,")));
    CHECK_STR_CONTAINS(t, "\"Killed\":false,\"Accumulables\":[]},\"Task Executor Metrics\":{\"JVMHeapMemory\":0,");
    CHECK_STR_CONTAINS(t, "\"TotalGCTime\":0},\"Task Metrics\":{\"Executor Deserialize Time\":1000,");
    CHECK_STR_CONTAINS(t, "\"JVM GC Time\":0,\"Result Serialization Time\":0,");
    CHECK_STR_CONTAINS(t, "\"Shuffle Push Read Metrics\":{\"Corrupt Merged Block Chunks\":0,");
    CHECK_STR_CONTAINS(t, "\"Output Metrics\":{\"Bytes Written\":1010,\"Records Written\":1011},\"Updated Blocks\":[]}}");
    app_event_free(e);
    /* lines of the hand-written Spark 3.5 log whose every field ember keeps
     * come back byte for byte */
    FILE *f = fopen(data("app-20240101120000-0001"), "r");
    CHECK(f);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int same = 0;
    json_doc d = JSON_DOC_INIT;
    while ((n = getline(&line, &cap, f)) > 0) {
        if (!strstr(line, "TaskStart") && !strstr(line, "LogStart") && !strstr(line, "ExecutorRemoved") &&
            !strstr(line, "ApplicationStart") && !strstr(line, "ApplicationEnd") && !strstr(line, "UnpersistRDD") &&
            !strstr(line, "JobEnd"))
            continue;
        app_event *x;
        CHECK_OK(evjson_read((uint8_t *)line, (size_t)n, &d, &x));
        w.len = 0;
        CHECK_OK(evjson_write(x, &w));
        app_event_free(x);
        if ((size_t)n - 1 != w.len || memcmp(line, w.p, w.len)) fprintf(stderr, "  %s  %s\n", line, text(&w));
        CHECK((size_t)n - 1 == w.len && !memcmp(line, w.p, w.len));
        same++;
    }
    CHECK_EQ_I64(same, 11);
    free(line);
    fclose(f);
    json_doc_free(&d);
    ebuf_free(&w);
}



/* The checks of the hand-written Spark 3.5 log (27 events), wherever it
 * was read from. */
static int check_spark3(app_event **ev, int n) {
    if (n != 27) return fprintf(stderr, "  %d events\n", n), 1;
    if (ev[0]->kind != AE_LOG_START || strcmp(ev[0]->version, "3.5.1")) return 2;
    if (ev[1]->kind != AE_OTHER || strcmp(ev[1]->other, "SparkListenerResourceProfileAdded")) return 3;
    if (ev[2]->kind != AE_BLOCK_MANAGER_ADDED || ev[2]->max_mem != 455501414 || ev[2]->exec.port != 40001) return 4;
    if (ev[3]->kind != AE_ENV_UPDATE || ev[3]->nprops[AE_ENV_SPARK] != 4 || ev[3]->nprops[AE_ENV_HADOOP] != 1 ||
        strcmp(ev[3]->props[AE_ENV_SYSTEM][0].value, "alice"))
        return 5;
    if (ev[4]->kind != AE_APP_START || strcmp(ev[4]->app_id, "app-20240101120000-0001") || ev[4]->attempt_id) return 6;
    if (ev[5]->kind != AE_EXEC_ADDED || strcmp(ev[5]->exec.id, "1") || ev[5]->exec.cores != 2 ||
        !strstr(ev[5]->exec.stderr_url, "logType=stderr"))
        return 7;
    app_event *js = ev[7];
    if (js->kind != AE_JOB_START || js->nstages != 2 || js->stages[1].nparents != 1 || js->stages[0].nrdds != 2 ||
        strcmp(js->stages[0].rdds[1].name, "textFile") || js->nprops[0] != 2)
        return 8;
    app_event *ok = ev[11], *exc = ev[12], *spec = ev[14], *killed = ev[16], *ff = ev[20];
    if (ok->kind != AE_TASK_END || ok->end.reason != AE_SUCCESS || !ok->shuffle_map || ok->metrics.sw_bytes != 5120 ||
        ok->metrics.in_records != 1000 || ok->metrics.cpu_ns != 410000000 || ok->task.finish_ms != 1704110402520)
        return 9;
    if (exc->end.reason != AE_EXCEPTION || strcmp(exc->end.class_name, "java.lang.RuntimeException") ||
        strcmp(exc->end.message, "boom") || !exc->task.failed)
        return 10;
    if (spec->kind != AE_TASK_START || !spec->task.speculative || spec->task.attempt != 2 || ev[15]->task.speculative ||
        ev[15]->end.reason != AE_SUCCESS || ev[15]->task.attempt != 1)
        return 11;
    if (killed->end.reason != AE_KILLED || !killed->task.killed || !killed->task.speculative ||
        strcmp(killed->end.message, "another attempt succeeded"))
        return 12;
    if (ff->end.reason != AE_FETCH_FAILED || ff->shuffle_map || ff->end.map_id != 3 || ff->end.map_index != 1 ||
        strcmp(ff->end.bm_exec, "2") || ff->end.bm_port != 40002 || ff->metrics.sr_local_bytes != 2048 ||
        ff->metrics.sr_fetch_wait_ms != 30 || strcmp(ff->task.locality, "NODE_LOCAL"))
        return 13;
    if (ev[21]->kind != AE_STAGE_COMPLETED || !strstr(ev[21]->stages[0].failure, "FetchFailedException")) return 14;
    if (ev[22]->kind != AE_OTHER || !strstr(ev[22]->other, "SQLExecutionStart")) return 15;
    if (ev[24]->kind != AE_JOB_END || !ev[24]->failed || !strstr(ev[24]->reason, "maximum allowable")) return 16;
    if (ev[26]->kind != AE_APP_END || ev[26]->time_ms != 1704110403400) return 17;
    return 0;
}

TEST(eventlog_read_spark3_log) {
    app_event *ev[64];
    int n = read_all(data("app-20240101120000-0001"), ev, 64);
    if (n < 0) fprintf(stderr, "  %s\n", em_errmsg());
    CHECK_EQ_I64(check_spark3(ev, n), 0);
    free_all(ev, n);
}

TEST(eventlog_read_spark1_log) {
    app_event *ev[64];
    int n = read_all(data("local-1450000000000"), ev, 64);
    if (n < 0) fprintf(stderr, "  %s\n", em_errmsg());
    CHECK_EQ_I64(n, 24);
    CHECK(!strcmp(ev[0]->version, "1.6.3"));
    CHECK(ev[1]->kind == AE_BLOCK_MANAGER_ADDED && !strcmp(ev[1]->exec.id, "driver"));
    CHECK(ev[2]->kind == AE_ENV_UPDATE && ev[2]->nprops[AE_ENV_HADOOP] == 0 && ev[2]->nprops[AE_ENV_SPARK] == 3);
    CHECK(ev[4]->kind == AE_EXEC_ADDED && !strcmp(ev[4]->exec.id, "driver") && !ev[4]->exec.stdout_url);
    app_event *js = ev[5];
    CHECK(js->kind == AE_JOB_START && js->nstages == 2);
    CHECK_EQ_I64(js->stages[0].rdds[0].storage.use_offheap, 1); /* "Use Tachyon" */
    CHECK_EQ_I64(js->stages[0].rdds[0].storage.use_memory, 1);
    CHECK_EQ_I64(js->stages[0].rdds[1].storage.use_offheap, 0);
    app_event *t0 = ev[9];
    CHECK(t0->kind == AE_TASK_END && t0->end.reason == AE_SUCCESS && !strcmp(t0->task.exec_id, "driver"));
    CHECK_EQ_I64(t0->task.partition, -1);
    CHECK_EQ_I64(t0->metrics.sw_bytes, 1500);
    CHECK_EQ_I64(t0->metrics.in_bytes, 1800);
    CHECK_EQ_I64(t0->metrics.deser_cpu_ns, 0);
    app_event *x = ev[10];
    CHECK(x->end.reason == AE_EXCEPTION && !strcmp(x->end.class_name, "java.io.IOException") && !x->has_metrics);
    CHECK(ev[11]->kind == AE_TASK_START && ev[11]->task.speculative);
    app_event *ff = ev[16];
    CHECK(ff->end.reason == AE_FETCH_FAILED && ff->end.map_index == -1 && ff->end.map_id == 1 && !strcmp(ff->end.bm_exec, "driver"));
    CHECK_EQ_I64(ev[18]->metrics.sr_records, 58);
    app_event *j1 = ev[21]; /* no "Stage Infos": one stage per "Stage IDs" */
    CHECK(j1->kind == AE_JOB_START && j1->nstages == 1 && j1->stages[0].id == 2 && !strcmp(j1->stages[0].name, "unknown"));
    CHECK(ev[22]->kind == AE_JOB_END && !ev[22]->failed);
    free_all(ev, n);
}

TEST(eventlog_read_compressed_and_rolling) {
    app_event *ev[64];
    const char *logs[] = {"app-20240101120000-0003.zstd", "app-20240101120000-0004.lz4", "eventlog_v2_app-20240101130000-0002"};
    for (int i = 0; i < 3; i++) {
        int n = read_all(data(logs[i]), ev, 64);
        if (n < 0) fprintf(stderr, "  %s: %s\n", logs[i], em_errmsg());
        CHECK_EQ_I64(check_spark3(ev, n), 0);
        free_all(ev, n);
    }
    evlog_reader *r;
    CHECK_OK(evlog_reader_open(data(logs[2]), &r));
    CHECK(!evlog_reader_in_progress(r));
    evlog_reader_close(r);
    CHECK_EQ_I64(evlog_reader_open(data("nope.snappy"), &r), EM_ENOENT);
    CHECK_STR_CONTAINS(em_errmsg(), "nope.snappy");
}



TEST(eventlog_read_lz4_java_block_stream) {
    /* what Spark's lz4 codec writes: lz4-java's LZ4Block stream, here one
     * raw block and the end mark, then a second stream of one LZ4 block
     * and its end mark (Spark reads concatenated streams) */
    size_t len;
    char *plain = slurp(data("app-20240101120000-0001"), &len);
    CHECK(plain);
    ebuf b = EBUF_INIT;
    size_t half = 4000;
    uint8_t h[21];
    memcpy(h, "LZ4Block", 8);
    h[8] = 0x10 | 6; /* raw, 64 KiB blocks */
    put_u32le(h + 9, (uint32_t)half);
    put_u32le(h + 13, (uint32_t)half);
    put_u32le(h + 17, XXH32(plain, half, 0x9747b28c) & 0x0FFFFFFF);
    ebuf_append(&b, h, 21);
    ebuf_append(&b, plain, half);
    uint8_t end[21];
    memcpy(end, "LZ4Block", 8);
    end[8] = 0x10 | 6;
    memset(end + 9, 0, 12);
    ebuf_append(&b, end, 21);
    char *c = malloc((size_t)LZ4_compressBound((int)(len - half)));
    int cn = LZ4_compress_default(plain + half, c, (int)(len - half), LZ4_compressBound((int)(len - half)));
    CHECK(cn > 0);
    h[8] = 0x20 | 6;
    put_u32le(h + 9, (uint32_t)cn);
    put_u32le(h + 13, (uint32_t)(len - half));
    put_u32le(h + 17, XXH32(plain + half, len - half, 0x9747b28c) & 0x0FFFFFFF);
    ebuf_append(&b, h, 21);
    ebuf_append(&b, c, (size_t)cn);
    ebuf_append(&b, end, 21);
    char path[4096];
    snprintf(path, sizeof path, "%s/app-1.lz4", test_tmpdir());
    CHECK(!spill(path, b.p, b.len));
    app_event *ev[64];
    int n = read_all(path, ev, 64);
    if (n < 0) fprintf(stderr, "  %s\n", em_errmsg());
    CHECK_EQ_I64(check_spark3(ev, n), 0);
    free_all(ev, n);
    /* cut inside the LZ4 block: an error for a finished log */
    CHECK(!spill(path, b.p, 21 + half + 21 + 30));
    CHECK_EQ_I64(read_all(path, ev, 64), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "app-1.lz4");
    free(c);
    free(plain);
    ebuf_free(&b);
}

TEST(eventlog_read_inprogress_torn_line) {
    size_t len;
    char *plain = slurp(data("local-1450000000000"), &len);
    CHECK(plain);
    /* the first 5 lines and half of the 6th */
    size_t cut = after_lines(plain, 5) + 40;
    char path[4096];
    snprintf(path, sizeof path, "%s/local-1.inprogress", test_tmpdir());
    CHECK(!spill(path, plain, cut));
    app_event *ev[64];
    evlog_reader *r;
    CHECK_OK(evlog_reader_open(path, &r));
    CHECK(evlog_reader_in_progress(r));
    evlog_reader_close(r);
    CHECK_EQ_I64(read_all(path, ev, 64), 5);
    CHECK_EQ_I64(ev[4]->kind, AE_EXEC_ADDED);
    free_all(ev, 5);
    /* the same bytes in a finished log: the torn line is corrupt */
    snprintf(path, sizeof path, "%s/local-1", test_tmpdir());
    CHECK(!spill(path, plain, cut));
    CHECK_EQ_I64(read_all(path, ev, 64), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "line 6");
    /* a rolling directory in progress with its last file torn */
    char dir[4096], f[4200];
    snprintf(dir, sizeof dir, "%s/eventlog_v2_local-1", test_tmpdir());
    CHECK(!mkdir(dir, 0700));
    snprintf(f, sizeof f, "%s/events_1_local-1", dir);
    size_t two = after_lines(plain, 2);
    CHECK(!spill(f, plain, two));
    snprintf(f, sizeof f, "%s/events_2_local-1", dir);
    CHECK(!spill(f, plain + two, cut - two));
    snprintf(f, sizeof f, "%s/appstatus_local-1.inprogress", dir);
    CHECK(!spill(f, "", 0));
    CHECK_OK(evlog_reader_open(dir, &r));
    CHECK(evlog_reader_in_progress(r));
    evlog_reader_close(r);
    CHECK_EQ_I64(read_all(dir, ev, 64), 5);
    free_all(ev, 5);
    free(plain);
    /* a zstd log in progress, flushed after each event, cut inside its
     * last block */
    char zdir[2048];
    snprintf(zdir, sizeof zdir, "%s/z", test_tmpdir());
    CHECK(!mkdir(zdir, 0700));
    evlog_conf conf = {.dir = zdir, .compress = true};
    evlog *l;
    CHECK_OK(evlog_open(&conf, "app-z", &l));
    for (int i = 0; i < 30; i++) {
        app_event *e = sample(AE_TASK_END, AE_SUCCESS);
        e->task.task_id = i;
        CHECK_OK(evlog_write(l, e));
        CHECK_OK(evlog_flush(l));
        app_event_free(e);
    }
    snprintf(path, sizeof path, "%s/app-z.zstd.inprogress", zdir);
    plain = slurp(path, &len);
    CHECK(plain);
    CHECK_OK(evlog_close(l));
    CHECK(!spill(path, plain, len - 10));
    int n = read_all(path, ev, 64);
    if (n < 0) fprintf(stderr, "  %s\n", em_errmsg());
    CHECK_EQ_I64(n, 30); /* the log start and 29 of the 30 */
    CHECK_EQ_I64(ev[29]->task.task_id, 28);
    free_all(ev, n);
    snprintf(path, sizeof path, "%s/app-y.zstd", zdir);
    CHECK(!spill(path, plain, len - 10));
    CHECK_EQ_I64(read_all(path, ev, 64), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "app-y.zstd: the zstd stream ends");
    free(plain);
}

/* The jobs the history shows of application id (-1: not found). */
static int history_jobs(history *h, const char *id, status_store **seen) {
    rest_provider p;
    history_provider(h, &p);
    status_store *st = p.acquire(p.ud, id, NULL);
    if (!st) return -1;
    status_rdlock(st);
    int n = status_njobs(st);
    status_unlock(st);
    if (seen) *seen = st;
    p.release(p.ud, st);
    return n;
}

/* A log in progress that grows is read on, into the same store, not
 * loaded again: a plain file written in pieces (a torn line completed by
 * the next piece), and a zstd one as the writer flushes it.  Once
 * finished (renamed), the log is loaded whole under its new name. */
TEST(eventlog_history_follows_a_log_in_progress) {
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/follow", test_tmpdir());
    CHECK(!mkdir(dir, 0700));
    history_conf hc = {.dir = dir};
    history *h = history_new(&hc);
    CHECK(h);
    int64_t loads, appends;
    /* Spark 1.6's log: the first job's start (line 6) and half of the
     * next line, then the rest. */
    size_t len;
    char *plain = slurp(data("local-1450000000000"), &len);
    CHECK(plain);
    size_t cut = after_lines(plain, 6) + 30;
    snprintf(path, sizeof path, "%s/local-1450000000000.inprogress", dir);
    CHECK(!spill(path, plain, cut));
    CHECK_EQ_I64(history_scan(h), 1);
    status_store *first = NULL, *then = NULL;
    CHECK_EQ_I64(history_jobs(h, "local-1450000000000", &first), 1);
    CHECK_EQ_I64(history_scan(h), 0); /* unchanged */
    CHECK(!append_to(path, plain + cut, len - cut));
    CHECK_EQ_I64(history_scan(h), 1);
    CHECK_EQ_I64(history_jobs(h, "local-1450000000000", &then), 2);
    CHECK(then == first);
    history_counts(h, &loads, &appends);
    CHECK_EQ_I64(loads, 1);
    CHECK_EQ_I64(appends, 1);
    free(plain);
    CHECK(!unlink(path));
    /* zstd, written by the event log writer into the history's directory. */
    evlog_conf conf = {.dir = dir, .compress = true};
    evlog *l;
    CHECK_OK(evlog_open(&conf, "app-20231128-0001", &l));
    app_event *e = sample(AE_APP_START, AE_SUCCESS);
    CHECK_OK(evlog_write(l, e));
    app_event_free(e);
    for (int job = 0; job < 5; job++) {
        e = sample(AE_JOB_START, AE_SUCCESS);
        e->job_id = job;
        CHECK_OK(evlog_write(l, e));
        app_event_free(e);
        e = sample(AE_JOB_END, AE_SUCCESS);
        e->job_id = job;
        CHECK_OK(evlog_write(l, e));
        app_event_free(e);
        CHECK_OK(evlog_flush(l));
        CHECK_EQ_I64(history_scan(h), 1);
        CHECK_EQ_I64(history_jobs(h, "app-20231128-0001", job ? &then : &first), job + 1);
        CHECK(then == first || !job);
    }
    history_counts(h, &loads, &appends);
    CHECK_EQ_I64(loads, 2);
    CHECK_EQ_I64(appends, 5);
    CHECK_OK(evlog_close(l)); /* app-20231128-0001.zstd */
    CHECK_EQ_I64(history_scan(h), 1);
    CHECK_EQ_I64(history_count(h), 1);
    CHECK_EQ_I64(history_jobs(h, "app-20231128-0001", NULL), 5);
    history_counts(h, &loads, &appends);
    CHECK_EQ_I64(loads, 3);
    history_free(h);
}

TEST(eventlog_read_corrupt_line_names_line_and_field) {
    const char *log = "{\"Event\":\"SparkListenerLogStart\",\"Spark Version\":\"3.5.1\"}\n"
                      "\n"
                      "{\"Event\":\"SparkListenerTaskStart\",\"Stage ID\":0,\"Task Info\":{\"Task ID\":\"seven\"}}\n"
                      "{\"Event\":\"SparkListenerApplicationEnd\",\"Timestamp\":5}\n"
                      "{\"Stage ID\":0}\n"
                      "{\"Event\":\"SparkListenerJobEnd\",\"Job ID\":0,\"Job Result\":{\"Result\":\"JobFailed\",\"Exception\":{\"Message\":7}}}\n"
                      "{\"Event\":\"SparkListenerApplicationEnd\",\"Timestamp\":5,}\n";
    char path[4096];
    snprintf(path, sizeof path, "%s/bad", test_tmpdir());
    CHECK(!spill(path, log, strlen(log)));
    evlog_reader *r;
    app_event *e;
    CHECK_OK(evlog_reader_open(path, &r));
    CHECK_EQ_I64(evlog_reader_next(r, &e), 1);
    app_event_free(e);
    CHECK_EQ_I64(evlog_reader_next(r, &e), EM_ECORRUPT);
    CHECK(!e);
    CHECK_STR_CONTAINS(em_errmsg(), "bad: line 3: event log: \"Task Info\".\"Task ID\" is not an integer");
    CHECK_EQ_I64(evlog_reader_next(r, &e), 1); /* the next line reads */
    CHECK_EQ_I64(e->kind, AE_APP_END);
    app_event_free(e);
    CHECK_EQ_I64(evlog_reader_next(r, &e), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "line 5: event log: no \"Event\"");
    CHECK_EQ_I64(evlog_reader_next(r, &e), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "line 6: event log: \"Job Result\".\"Exception\".\"Message\" is not a string");
    CHECK_EQ_I64(evlog_reader_next(r, &e), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "line 7: event log: json:");
    CHECK_EQ_I64(evlog_reader_next(r, &e), 0);
    evlog_reader_close(r);
}

static int count_dir(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (!strncmp(de->d_name, prefix, strlen(prefix))) n++;
    closedir(d);
    return n;
}

static int exists(const char *dir, const char *name) {
    char p[4200];
    struct stat st;
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p) return 0;
    return stat(p, &st) == 0;
}

TEST(eventlog_writer_single_file) {
    const char *codecs[] = {NULL, "zstd", "lz4"};
    const char *ext[] = {"", ".zstd", ".lz4"};
    for (int c = 0; c < 3; c++) {
        char dir[4096], name[256], path[4500];
        snprintf(dir, sizeof dir, "%s/ev%d", test_tmpdir(), c);
        CHECK(!mkdir(dir, 0700));
        evlog_conf conf = {.dir = dir, .compress = c > 0, .codec = codecs[c], .attempt_id = "1"};
        evlog *l;
        CHECK_OK(evlog_open(&conf, "App 7:x/Y.z", &l));
        /* Spark's sanitizeDirName, then "_" and the attempt */
        snprintf(name, sizeof name, "app-7-x-y_z_1%s", ext[c]);
        snprintf(path, sizeof path, "%s/%s.inprogress", dir, name);
        CHECK(!strcmp(evlog_path(l), path));
        for (int i = 0; i < 200; i++) {
            app_event *e = sample(AE_TASK_END, (ae_reason)(i % (AE_UNKNOWN_REASON + 1)));
            e->task.task_id = i;
            CHECK_OK(evlog_write(l, e));
            app_event_free(e);
        }
        CHECK_OK(evlog_flush(l));
        app_event *ev[256];
        int n = read_all(path, ev, 256); /* in progress, flushed: every line */
        if (n < 0) fprintf(stderr, "  %s\n", em_errmsg());
        CHECK_EQ_I64(n, 201);
        CHECK(ev[0]->kind == AE_LOG_START && !strcmp(ev[0]->version, EMBER_VERSION));
        CHECK_EQ_I64(ev[200]->task.task_id, 199);
        free_all(ev, n);
        CHECK_OK(evlog_close(l));
        CHECK(!exists(dir, "app-7-x-y_z_1.inprogress") && exists(dir, name));
        snprintf(path, sizeof path, "%s/%s", dir, name);
        n = read_all(path, ev, 256);
        CHECK_EQ_I64(n, 201);
        CHECK_EQ_I64(ev[77]->end.reason, 76 % (AE_UNKNOWN_REASON + 1));
        free_all(ev, n);
        /* the finished log exists: no overwrite, an error naming it */
        CHECK_EQ_I64(evlog_open(&conf, "App 7:x/Y.z", &l), EM_EIO);
        CHECK_STR_CONTAINS(em_errmsg(), name);
        conf.overwrite = true;
        CHECK_OK(evlog_open(&conf, "App 7:x/Y.z", &l));
        CHECK(!exists(dir, name));
        CHECK_OK(evlog_close(l));
        n = read_all(path, ev, 256);
        CHECK_EQ_I64(n, 1);
        free_all(ev, n);
    }
}

TEST(eventlog_writer_rolls_over_max_file_size) {
    int plain_files = 0;
    for (int z = 0; z < 2; z++) {
        char dir[4096], logdir[4200];
        snprintf(dir, sizeof dir, "%s/roll%d", test_tmpdir(), z);
        CHECK(!mkdir(dir, 0700));
        evlog_conf conf = {.dir = dir, .rolling = true, .max_file_size = 8192, .compress = z == 1};
        evlog *l;
        CHECK_OK(evlog_open(&conf, "app-20231128000000-0042", &l));
        snprintf(logdir, sizeof logdir, "%s/eventlog_v2_app-20231128000000-0042", dir);
        CHECK(!strcmp(evlog_path(l), logdir));
        CHECK(exists(logdir, "appstatus_app-20231128000000-0042.inprogress"));
        int nev = 100;
        for (int i = 0; i < nev; i++) {
            app_event *e = sample(AE_TASK_END, AE_SUCCESS);
            e->task.task_id = i;
            CHECK_OK(evlog_write(l, e));
            app_event_free(e);
            if (i % 10 == 9) CHECK_OK(evlog_flush(l));
        }
        CHECK_OK(evlog_close(l));
        CHECK(!exists(logdir, "appstatus_app-20231128000000-0042.inprogress"));
        CHECK(exists(logdir, "appstatus_app-20231128000000-0042"));
        int files = count_dir(logdir, "events_");
        CHECK(files >= 2);
        CHECK(exists(logdir, z ? "events_1_app-20231128000000-0042.zstd" : "events_1_app-20231128000000-0042"));
        /* every file within the limit (each line is far below it), counted
         * before compression */
        for (int i = 1; i <= files; i++) {
            char p[4400];
            struct stat st;
            snprintf(p, sizeof p, "%s/events_%d_app-20231128000000-0042%s", logdir, i, z ? ".zstd" : "");
            CHECK(stat(p, &st) == 0);
            CHECK(st.st_size <= 8192);
            /* a line is under 2 KiB: every file but the last is nearly full */
            if (!z && i < files) CHECK(st.st_size > 8192 - 2048);
        }
        /* the same lines roll at the same places, compressed or not */
        if (!z) plain_files = files;
        else CHECK_EQ_I64(files, plain_files);
        evlog_reader *r;
        CHECK_OK(evlog_reader_open(logdir, &r));
        app_event *e;
        int n = 0, rc;
        while ((rc = evlog_reader_next(r, &e)) == 1) {
            if (n == 0) CHECK(e->kind == AE_LOG_START);
            else CHECK_EQ_I64(e->task.task_id, n - 1);
            app_event_free(e);
            n++;
        }
        evlog_reader_close(r);
        CHECK_EQ_I64(rc, 0);
        CHECK_EQ_I64(n, nev + 1);
        /* again without overwrite: the directory exists */
        CHECK_EQ_I64(evlog_open(&conf, "app-20231128000000-0042", &l), EM_EIO);
        CHECK_STR_CONTAINS(em_errmsg(), "eventlog_v2_app-20231128000000-0042");
    }
}

TEST(eventlog_writer_errors) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/no-such-dir", test_tmpdir());
    evlog_conf conf = {.dir = dir};
    evlog *l;
    CHECK_EQ_I64(evlog_open(&conf, "app-1", &l), EM_ENOENT);
    CHECK(!l);
    CHECK_STR_CONTAINS(em_errmsg(), dir);
    conf.dir = test_tmpdir();
    conf.compress = true;
    conf.codec = "snappy";
    CHECK_EQ_I64(evlog_open(&conf, "app-1", &l), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "snappy");
    conf.compress = false;
    conf.rolling = true;
    conf.max_file_size = 100;
    CHECK_EQ_I64(evlog_open(&conf, "app-1", &l), EM_EINVAL);
    CHECK_EQ_I64(count_dir(test_tmpdir(), ""), 2); /* "." and ".." */
}
