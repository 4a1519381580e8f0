/*
 * history.c -- the history server's load of a large event log: the time
 * from starting bin/ember-history-server on a directory holding one
 * 100,000-task application's log (about 1 GB, Spark 3.5's format) to the
 * server being ready, its MB/s and peak RSS, beside `wc -l` and
 * `zstd -d` on the same file in the same run.
 *
 *   history [TASKS] [RUNS]      (defaults: 100000, 3)
 *
 * The log is generated once under bench/data/history-TASKS/ (plain/ and
 * zstd/, each a log directory of one application) by a generator here with
 * a fixed seed, so every run reads the same bytes: LogStart,
 * EnvironmentUpdate, ApplicationStart, ExecutorAdded and BlockManagerAdded
 * for 16 executors, 10 jobs of a map stage and a result stage, TaskStart
 * and TaskEnd per task with the full Task Metrics, Task Executor Metrics
 * and, as Spark writes them, the task's accumulables in Task Info
 * (Spark's internal.metrics.* and an SQL plan's metrics) and the stage's
 * in Stage Info; about 0.5% of the tasks fail with a stack trace and are
 * retried, about 0.5% get a speculative copy (one of the two is killed);
 * ApplicationEnd.
 *
 * The server's log lines go to bench/data/history-TASKS/server.log.
 *
 * Memory: VmHWM of the loaded server (read from /proc before it is
 * stopped with SIGTERM), beside an empty server's RSS.  The retained state
 * is estimated as the loaded server's RSS minus the empty server's.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define APP_ID "app-20261128000000-0001"
#define NEXEC 16
#define CORES 2
#define NJOBS 10

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* ------------------------------------------------------------ generator */

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t below(uint64_t n) { return rnd() % n; }

typedef struct out {
    FILE *f;
    char buf[1 << 16];
    size_t len;
    long long total, lines;
} out;

static void o_flush(out *o) {
    if (o->len && fwrite(o->buf, 1, o->len, o->f) != o->len) {
        perror("history: writing the event log");
        exit(1);
    }
    o->total += (long long)o->len;
    o->len = 0;
}

static void s(out *o, const char *t) {
    size_t n = strlen(t);
    if (o->len + n > sizeof o->buf) o_flush(o);
    memcpy(o->buf + o->len, t, n);
    o->len += n;
}

static void i64(out *o, long long v) {
    char b[24], *p = b + sizeof b;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    *--p = '\0';
    do *--p = (char)('0' + u % 10); while (u /= 10);
    if (v < 0) *--p = '-';
    s(o, p);
}

/* "key":value, with a comma before unless first */
static void kv(out *o, const char *k, long long v, int first) {
    s(o, first ? "\"" : ",\"");
    s(o, k);
    s(o, "\":");
    i64(o, v);
}

static void ks(out *o, const char *k, const char *v, int first) {
    s(o, first ? "\"" : ",\"");
    s(o, k);
    s(o, "\":\"");
    s(o, v);
    s(o, "\"");
}

static void kb(out *o, const char *k, int v) {
    s(o, ",\"");
    s(o, k);
    s(o, v ? "\":true" : "\":false");
}

static void eol(out *o) {
    s(o, "\n");
    o->lines++;
}

/* A task's metrics, drawn once and written in three forms. */
typedef struct tmet {
    long long deser, deser_cpu, run, cpu, result, gc, ser, peak, mspill, dspill;
    long long rblk, lblk, fwait, rbytes, rdisk, lbytes, rrec, rdur;
    long long wbytes, wtime, wrec, inbytes, inrec, outbytes, outrec;
} tmet;

static void draw(tmet *m, int map) {
    memset(m, 0, sizeof *m);
    m->deser = 2 + (long long)below(40);
    m->deser_cpu = m->deser * 700000 + (long long)below(900000);
    m->run = 200 + (long long)below(5000);
    m->cpu = m->run * 800000 + (long long)below(100000000);
    m->result = 1500 + (long long)below(3000);
    m->gc = (long long)below(60);
    m->ser = (long long)below(3);
    m->peak = (long long)below(4) * 16777216;
    if (below(50) == 0) {
        m->mspill = 134217728 + (long long)below(1 << 26);
        m->dspill = m->mspill / 3;
    }
    if (map) {
        m->inbytes = 134217728 - (long long)below(1 << 20);
        m->inrec = 1000000 + (long long)below(50000);
        m->wbytes = 4000000 + (long long)below(3000000);
        m->wtime = 20000000 + (long long)below(40000000);
        m->wrec = 200000 + (long long)below(100000);
    } else {
        m->rblk = 180 + (long long)below(40);
        m->lblk = 10 + (long long)below(20);
        m->fwait = (long long)below(200);
        m->rbytes = 3000000 + (long long)below(2000000);
        m->lbytes = 200000 + (long long)below(300000);
        m->rrec = 200000 + (long long)below(100000);
        m->rdur = (long long)below(400);
        m->outbytes = 2000000 + (long long)below(1000000);
        m->outrec = 100000 + (long long)below(50000);
    }
}

/* Accumulator ids: per stage, in a block of 100. */
static const char *const acc_names[] = {
    "internal.metrics.executorDeserializeTime", "internal.metrics.executorDeserializeCpuTime",
    "internal.metrics.executorRunTime", "internal.metrics.executorCpuTime",
    "internal.metrics.resultSize", "internal.metrics.jvmGCTime",
    "internal.metrics.resultSerializationTime", "internal.metrics.peakExecutionMemory",
    "internal.metrics.memoryBytesSpilled", "internal.metrics.diskBytesSpilled",
    "internal.metrics.shuffle.read.remoteBlocksFetched", "internal.metrics.shuffle.read.localBlocksFetched",
    "internal.metrics.shuffle.read.fetchWaitTime", "internal.metrics.shuffle.read.remoteBytesRead",
    "internal.metrics.shuffle.read.remoteBytesReadToDisk", "internal.metrics.shuffle.read.localBytesRead",
    "internal.metrics.shuffle.read.recordsRead", "internal.metrics.shuffle.read.remoteReqsDuration",
    "internal.metrics.shuffle.write.bytesWritten", "internal.metrics.shuffle.write.writeTime",
    "internal.metrics.shuffle.write.recordsWritten", "internal.metrics.input.bytesRead",
    "internal.metrics.input.recordsRead", "internal.metrics.output.bytesWritten",
    "internal.metrics.output.recordsWritten",
};
#define NACC ((int)(sizeof acc_names / sizeof *acc_names))

/* An SQL plan's metrics (SQLMetric: values written as strings). */
static const char *const sql_map[] = {
    "number of output rows", "number of files read", "metadata time", "size of files read",
    "scan time", "number of partitions read", "dynamic partition pruning time", "number of output rows",
    "duration", "number of output rows", "spill size", "time in aggregation build",
    "peak memory", "number of sort fallback tasks", "avg hash probe bucket list iters", "duration",
    "shuffle records written", "shuffle write time", "shuffle bytes written", "data size",
    "number of partitions", "local merged chunks fetched", "corrupt merged block chunks", "number of output rows",
    "number of output rows", "build side size", "time to build hash map", "number of output rows",
    "sort time", "peak memory", "spill size", "number of output rows",
    "time in aggregation build", "peak memory", "spill size", "duration",
};
static const char *const sql_result[] = {
    "records read", "local bytes read", "fetch wait time", "remote bytes read",
    "local blocks read", "remote blocks read", "remote bytes read to disk", "remote reqs duration",
    "remote merged bytes read", "local merged blocks fetched", "merged fetch fallback count", "remote merged reqs duration",
    "number of output rows", "spill size", "time in aggregation build", "peak memory",
    "number of sort fallback tasks", "avg hash probe bucket list iters", "duration", "number of output rows",
    "number of written files", "written output", "number of dynamic part", "task commit time",
    "number of output rows", "sort time", "peak memory", "spill size",
    "number of output rows", "number of matched rows", "build side size", "time to build hash map",
    "number of output rows", "duration", "job commit time", "number of output rows",
};
#define NSQL 36

static void tm_values(const tmet *m, long long *v) {
    const long long x[NACC] = {m->deser, m->deser_cpu, m->run, m->cpu, m->result, m->gc, m->ser, m->peak,
                               m->mspill, m->dspill, m->rblk, m->lblk, m->fwait, m->rbytes, m->rdisk,
                               m->lbytes, m->rrec, m->rdur, m->wbytes, m->wtime, m->wrec, m->inbytes,
                               m->inrec, m->outbytes, m->outrec};
    memcpy(v, x, sizeof x);
}

/* Running totals of a stage's accumulators, for "Value". */
typedef struct stage_acc {
    long long v[NACC + NSQL];
} stage_acc;

static void w_accums(out *o, int stage, int map, const tmet *m, stage_acc *sa, int with_update) {
    long long v[NACC];
    tm_values(m, v);
    s(o, "[");
    int first = 1;
    for (int i = 0; i < NACC; i++) {
        /* Spark lists the accumulators a task updated: zero ones only for the core times */
        if (with_update && v[i] == 0 && i > 7) continue;
        if (with_update) sa->v[i] += v[i];
        s(o, first ? "{" : ",{");
        first = 0;
        kv(o, "ID", stage * 100 + i + 1, 1);
        ks(o, "Name", acc_names[i], 0);
        if (with_update) kv(o, "Update", v[i], 0);
        kv(o, "Value", sa->v[i], 0);
        kb(o, "Internal", 1);
        kb(o, "Count Failed Values", 1);
        s(o, "}");
    }
    const char *const *names = map ? sql_map : sql_result;
    for (int i = 0; i < NSQL; i++) {
        long long u = with_update ? (long long)below(2000000) : 0;
        sa->v[NACC + i] += u;
        char num[24];
        s(o, first ? "{" : ",{");
        first = 0;
        kv(o, "ID", stage * 100 + 50 + i, 1);
        ks(o, "Name", names[i], 0);
        if (with_update) {
            snprintf(num, sizeof num, "%lld", u);
            ks(o, "Update", num, 0);
        }
        snprintf(num, sizeof num, "%lld", sa->v[NACC + i]);
        ks(o, "Value", num, 0);
        kb(o, "Internal", 1);
        kb(o, "Count Failed Values", 1);
        ks(o, "Metadata", "sql", 0);
        s(o, "}");
    }
    s(o, "]");
}

static void w_metrics(out *o, const tmet *m) {
    s(o, ",\"Task Metrics\":{");
    kv(o, "Executor Deserialize Time", m->deser, 1);
    kv(o, "Executor Deserialize CPU Time", m->deser_cpu, 0);
    kv(o, "Executor Run Time", m->run, 0);
    kv(o, "Executor CPU Time", m->cpu, 0);
    kv(o, "Peak Execution Memory", m->peak, 0);
    kv(o, "Result Size", m->result, 0);
    kv(o, "JVM GC Time", m->gc, 0);
    kv(o, "Result Serialization Time", m->ser, 0);
    kv(o, "Memory Bytes Spilled", m->mspill, 0);
    kv(o, "Disk Bytes Spilled", m->dspill, 0);
    s(o, ",\"Shuffle Read Metrics\":{");
    kv(o, "Remote Blocks Fetched", m->rblk, 1);
    kv(o, "Local Blocks Fetched", m->lblk, 0);
    kv(o, "Fetch Wait Time", m->fwait, 0);
    kv(o, "Remote Bytes Read", m->rbytes, 0);
    kv(o, "Remote Bytes Read To Disk", m->rdisk, 0);
    kv(o, "Local Bytes Read", m->lbytes, 0);
    kv(o, "Total Records Read", m->rrec, 0);
    kv(o, "Remote Requests Duration", m->rdur, 0);
    s(o, ",\"Push Based Shuffle\":{");
    kv(o, "Corrupt Merged Block Chunks", 0, 1);
    kv(o, "Merged Fetch Fallback Count", 0, 0);
    kv(o, "Merged Remote Blocks Fetched", 0, 0);
    kv(o, "Merged Local Blocks Fetched", 0, 0);
    kv(o, "Merged Remote Chunks Fetched", 0, 0);
    kv(o, "Merged Local Chunks Fetched", 0, 0);
    kv(o, "Merged Remote Bytes Read", 0, 0);
    kv(o, "Merged Local Bytes Read", 0, 0);
    kv(o, "Merged Remote Requests Duration", 0, 0);
    s(o, "}},\"Shuffle Write Metrics\":{");
    kv(o, "Shuffle Bytes Written", m->wbytes, 1);
    kv(o, "Shuffle Write Time", m->wtime, 0);
    kv(o, "Shuffle Records Written", m->wrec, 0);
    s(o, "},\"Input Metrics\":{");
    kv(o, "Bytes Read", m->inbytes, 1);
    kv(o, "Records Read", m->inrec, 0);
    s(o, "},\"Output Metrics\":{");
    kv(o, "Bytes Written", m->outbytes, 1);
    kv(o, "Records Written", m->outrec, 0);
    s(o, "},\"Updated Blocks\":[]}");
}

static const char *const exec_metric_names[] = {
    "JVMHeapMemory", "JVMOffHeapMemory", "OnHeapExecutionMemory", "OffHeapExecutionMemory",
    "OnHeapStorageMemory", "OffHeapStorageMemory", "OnHeapUnifiedMemory", "OffHeapUnifiedMemory",
    "DirectPoolMemory", "MappedPoolMemory", "ProcessTreeJVMVMemory", "ProcessTreeJVMRSSMemory",
    "ProcessTreePythonVMemory", "ProcessTreePythonRSSMemory", "ProcessTreeOtherVMemory",
    "ProcessTreeOtherRSSMemory", "MinorGCCount", "MinorGCTime", "MajorGCCount", "MajorGCTime",
    "TotalGCTime",
};

/* One task attempt as the generator lays it out. */
typedef struct task {
    long long id, launch, finish;
    int index, attempt, exec;
    int spec;    /* a speculative copy */
    int outcome; /* 0 success, 1 exception, 2 killed */
} task;

static void w_task_info(out *o, const task *t, int end, int stage, int map, const tmet *m, stage_acc *sa) {
    char ex[16], host[48];
    snprintf(ex, sizeof ex, "%d", t->exec + 1);
    snprintf(host, sizeof host, "worker-%02d.cluster.internal", t->exec + 1);
    s(o, ",\"Task Info\":{");
    kv(o, "Task ID", t->id, 1);
    kv(o, "Index", t->index, 0);
    kv(o, "Attempt", t->attempt, 0);
    kv(o, "Partition ID", t->index, 0);
    kv(o, "Launch Time", t->launch, 0);
    ks(o, "Executor ID", ex, 0);
    ks(o, "Host", host, 0);
    ks(o, "Locality", map ? "NODE_LOCAL" : "PROCESS_LOCAL", 0);
    kb(o, "Speculative", t->spec);
    kv(o, "Getting Result Time", 0, 0);
    kv(o, "Finish Time", end ? t->finish : 0, 0);
    kb(o, "Failed", end && t->outcome == 1);
    kb(o, "Killed", end && t->outcome == 2);
    s(o, ",\"Accumulables\":");
    if (end) w_accums(o, stage, map, m, sa, 1);
    else s(o, "[]");
    s(o, "}");
}

static void w_task_start(out *o, const task *t, int stage) {
    s(o, "{\"Event\":\"SparkListenerTaskStart\"");
    kv(o, "Stage ID", stage, 0);
    kv(o, "Stage Attempt ID", 0, 0);
    w_task_info(o, t, 0, stage, 0, NULL, NULL);
    s(o, "}");
    eol(o);
}

static void w_task_end(out *o, const task *t, int stage, int map, stage_acc *sa) {
    tmet m;
    draw(&m, map);
    if (t->outcome) m.run /= 3;
    s(o, "{\"Event\":\"SparkListenerTaskEnd\"");
    kv(o, "Stage ID", stage, 0);
    kv(o, "Stage Attempt ID", 0, 0);
    ks(o, "Task Type", map ? "ShuffleMapTask" : "ResultTask", 0);
    s(o, ",\"Task End Reason\":{");
    if (t->outcome == 0) s(o, "\"Reason\":\"Success\"");
    else if (t->outcome == 1) {
        static const char *const frames[][3] = {
            {"org.apache.spark.sql.catalyst.expressions.GeneratedClass$GeneratedIteratorForCodegenStage1", "processNext", "Unknown Source"},
            {"org.apache.spark.sql.execution.BufferedRowIterator", "hasNext", "BufferedRowIterator.java"},
            {"org.apache.spark.sql.execution.WholeStageCodegenEvaluatorFactory$WholeStageCodegenPartitionEvaluator$$anon$1", "hasNext", "WholeStageCodegenEvaluatorFactory.scala"},
            {"scala.collection.Iterator$$anon$10", "hasNext", "Iterator.scala"},
            {"org.apache.spark.shuffle.sort.BypassMergeSortShuffleWriter", "write", "BypassMergeSortShuffleWriter.java"},
            {"org.apache.spark.shuffle.ShuffleWriteProcessor", "write", "ShuffleWriteProcessor.scala"},
            {"org.apache.spark.scheduler.ShuffleMapTask", "runTask", "ShuffleMapTask.scala"},
            {"org.apache.spark.scheduler.Task", "run", "Task.scala"},
            {"org.apache.spark.executor.Executor$TaskRunner", "$anonfun$run$3", "Executor.scala"},
            {"org.apache.spark.util.Utils$", "tryWithSafeFinally", "Utils.scala"},
            {"org.apache.spark.executor.Executor$TaskRunner", "run", "Executor.scala"},
            {"java.util.concurrent.ThreadPoolExecutor", "runWorker", "ThreadPoolExecutor.java"},
            {"java.util.concurrent.ThreadPoolExecutor$Worker", "run", "ThreadPoolExecutor.java"},
            {"java.lang.Thread", "run", "Thread.java"},
        };
        const int nf = (int)(sizeof frames / sizeof *frames);
        s(o, "\"Reason\":\"ExceptionFailure\",\"Class Name\":\"java.io.IOException\","
             "\"Description\":\"Connection reset by peer while reading block shuffle_3_1187_0\",\"Stack Trace\":[");
        for (int i = 0; i < nf; i++) {
            s(o, i ? ",{" : "{");
            ks(o, "Declaring Class", frames[i][0], 1);
            ks(o, "Method Name", frames[i][1], 0);
            ks(o, "File Name", frames[i][2], 0);
            kv(o, "Line Number", 40 + i * 37, 0);
            s(o, "}");
        }
        s(o, "],\"Full Stack Trace\":\"java.io.IOException: Connection reset by peer while reading block shuffle_3_1187_0");
        for (int i = 0; i < nf; i++) {
            char line[400];
            snprintf(line, sizeof line, "\\n\\tat %s.%s(%s:%d)", frames[i][0], frames[i][1], frames[i][2], 40 + i * 37);
            s(o, line);
        }
        s(o, "\\n\",\"Accumulator Updates\":");
        w_accums(o, stage, map, &m, sa, 1);
    } else {
        s(o, "\"Reason\":\"TaskKilled\",\"Kill Reason\":\"another attempt succeeded\",\"Accumulator Updates\":");
        w_accums(o, stage, map, &m, sa, 1);
    }
    s(o, "}");
    w_task_info(o, t, 1, stage, map, &m, sa);
    s(o, ",\"Task Executor Metrics\":{");
    for (size_t i = 0; i < sizeof exec_metric_names / sizeof *exec_metric_names; i++) {
        long long v = i < 12 ? 100000000 + (long long)below(900000000) : (long long)below(500);
        if (i >= 12 && i <= 15) v = 0;
        kv(o, exec_metric_names[i], v, i == 0);
    }
    s(o, "}");
    w_metrics(o, &m);
    s(o, "}");
    eol(o);
}

static void w_stage_info(out *o, int stage, int ntasks, int map, int parent, long long submit, long long done,
                         stage_acc *sa) {
    s(o, "{");
    kv(o, "Stage ID", stage, 1);
    kv(o, "Stage Attempt ID", 0, 0);
    ks(o, "Stage Name", map ? "parquet at Bench.scala:41" : "count at Bench.scala:44", 0);
    kv(o, "Number of Tasks", ntasks, 0);
    s(o, ",\"RDD Info\":[{");
    kv(o, "RDD ID", stage * 3, 1);
    ks(o, "Name", map ? "FileScanRDD" : "ShuffledRowRDD", 0);
    ks(o, "Scope", "{\\\"id\\\":\\\"12\\\",\\\"name\\\":\\\"Exchange\\\"}", 0);
    ks(o, "Callsite", map ? "parquet at Bench.scala:41" : "count at Bench.scala:44", 0);
    s(o, ",\"Parent IDs\":[]");
    s(o, ",\"Storage Level\":{\"Use Disk\":false,\"Use Memory\":false,\"Use Off Heap\":false,\"Deserialized\":false,\"Replication\":1}");
    kb(o, "Barrier", 0);
    ks(o, "DeterministicLevel", "DETERMINATE", 0);
    kv(o, "Number of Partitions", ntasks, 0);
    kv(o, "Number of Cached Partitions", 0, 0);
    kv(o, "Memory Size", 0, 0);
    kv(o, "Disk Size", 0, 0);
    s(o, "}],\"Parent IDs\":[");
    if (parent >= 0) i64(o, parent);
    s(o, "]");
    ks(o, "Details", "org.apache.spark.sql.Dataset.count(Dataset.scala:3615)\\nBench$.main(Bench.scala:44)", 0);
    if (submit) kv(o, "Submission Time", submit, 0);
    if (done) kv(o, "Completion Time", done, 0);
    s(o, ",\"Accumulables\":");
    if (sa) w_accums(o, stage, map, &(tmet){0}, sa, 0);
    else s(o, "[]");
    kv(o, "Resource Profile Id", 0, 0);
    kb(o, "Shuffle Push Enabled", 0);
    kv(o, "Shuffle Push Mergers Count", 0, 0);
    s(o, "}");
}

static void w_props(out *o, const char *name, int n, const char *prefix) {
    s(o, ",\"");
    s(o, name);
    s(o, "\":{");
    for (int i = 0; i < n; i++) {
        char k[96], v[96];
        snprintf(k, sizeof k, "%s.setting%d", prefix, i);
        snprintf(v, sizeof v, "value-%d-%llu", i, (unsigned long long)below(1000000));
        ks(o, k, v, i == 0);
    }
    s(o, "}");
}

/* The counts the generated log holds, to check the server against. */
typedef struct gen_counts {
    long long tasks, failed, killed, speculative;
} gen_counts;

/* One stage's tasks: starts and ends interleaved as on a cluster of
 * NEXEC * CORES slots, retries of failures and speculative copies added
 * at the end of the stage. */
static void w_stage_tasks(out *o, int stage, int map, int nparts, long long *next_id, long long *clock,
                          stage_acc *sa, gen_counts *gc) {
    int slots = NEXEC * CORES, cap = nparts + nparts / 16 + 64, n = 0;
    task *ts = malloc((size_t)cap * sizeof *ts);
    if (!ts) {
        perror("history");
        exit(1);
    }
    for (int i = 0; i < nparts; i++) {
        task *t = &ts[n++];
        memset(t, 0, sizeof *t);
        t->index = i;
        int r = (int)below(1000);
        if (r < 5) t->outcome = 1;
        else if (r < 10 && n < cap - 2) {
            /* a straggler: a speculative copy wins, the original is killed */
            t->outcome = 2;
            task *c = &ts[n++];
            memset(c, 0, sizeof *c);
            c->index = i;
            c->attempt = 1;
            c->spec = 1;
        }
        if (t->outcome == 1 && n < cap - 1) {
            task *c = &ts[n++];
            memset(c, 0, sizeof *c);
            c->index = i;
            c->attempt = 1;
        }
    }
    long long t0 = *clock;
    for (int i = 0; i < n; i++) {
        task *t = &ts[i];
        t->id = (*next_id)++;
        t->exec = (int)(i % NEXEC);
        t->launch = t0 + (i / slots) * 900 + (long long)below(300);
        t->finish = t->launch + 200 + (long long)below(2000);
        gc->tasks++;
        gc->failed += t->outcome == 1;
        gc->killed += t->outcome == 2;
        gc->speculative += t->spec;
    }
    for (int i = 0; i < n + slots; i++) {
        if (i >= slots) w_task_end(o, &ts[i - slots], stage, map, sa);
        if (i < n) w_task_start(o, &ts[i], stage);
    }
    *clock = ts[n - 1].finish + 10;
    free(ts);
}

static void generate(const char *path, int ntasks, gen_counts *gc) {
    out *o = calloc(1, sizeof *o);
    if (!o || !(o->f = fopen(path, "w"))) {
        perror(path);
        exit(1);
    }
    memset(gc, 0, sizeof *gc);
    long long clock = 1764288000000LL;
    s(o, "{\"Event\":\"SparkListenerLogStart\",\"Spark Version\":\"3.5.3\"}");
    eol(o);
    s(o, "{\"Event\":\"SparkListenerResourceProfileAdded\",\"Resource Profile Id\":0,\"Executor Resource Requests\":"
         "{\"cores\":{\"Resource Name\":\"cores\",\"Amount\":2,\"Discovery Script\":\"\",\"Vendor\":\"\"},"
         "\"memory\":{\"Resource Name\":\"memory\",\"Amount\":8192,\"Discovery Script\":\"\",\"Vendor\":\"\"}},"
         "\"Task Resource Requests\":{\"cpus\":{\"Resource Name\":\"cpus\",\"Amount\":1.0}}}");
    eol(o);
    s(o, "{\"Event\":\"SparkListenerEnvironmentUpdate\"");
    w_props(o, "JVM Information", 3, "java");
    w_props(o, "Spark Properties", 60, "spark");
    w_props(o, "Hadoop Properties", 400, "hadoop");
    w_props(o, "System Properties", 80, "sys");
    s(o, ",\"Metrics Properties\":{}");
    w_props(o, "Classpath Entries", 250, "/opt/spark/jars/lib");
    s(o, "}");
    eol(o);
    s(o, "{\"Event\":\"SparkListenerApplicationStart\",\"App Name\":\"history bench\",\"App ID\":\"" APP_ID "\"");
    kv(o, "Timestamp", clock, 0);
    s(o, ",\"User\":\"bench\"}");
    eol(o);
    for (int e = 0; e < NEXEC; e++) {
        char ex[16], host[48];
        snprintf(ex, sizeof ex, "%d", e + 1);
        snprintf(host, sizeof host, "worker-%02d.cluster.internal", e + 1);
        s(o, "{\"Event\":\"SparkListenerExecutorAdded\"");
        kv(o, "Timestamp", clock + 2000 + e * 37, 0);
        ks(o, "Executor ID", ex, 0);
        s(o, ",\"Executor Info\":{");
        ks(o, "Host", host, 1);
        kv(o, "Total Cores", CORES, 0);
        s(o, ",\"Log Urls\":{");
        char url[160];
        snprintf(url, sizeof url, "http://%s:8081/logPage/?appId=" APP_ID "&executorId=%d&logType=stdout", host, e + 1);
        ks(o, "stdout", url, 1);
        snprintf(url, sizeof url, "http://%s:8081/logPage/?appId=" APP_ID "&executorId=%d&logType=stderr", host, e + 1);
        ks(o, "stderr", url, 0);
        s(o, "},\"Attributes\":{},\"Resources\":{},\"Resource Profile Id\":0,\"Registration Time\":");
        i64(o, clock + 2000 + e * 37);
        s(o, "}}");
        eol(o);
        s(o, "{\"Event\":\"SparkListenerBlockManagerAdded\",\"Block Manager ID\":{");
        ks(o, "Executor ID", ex, 1);
        ks(o, "Host", host, 0);
        kv(o, "Port", 40000 + e, 0);
        s(o, "}");
        kv(o, "Maximum Memory", 4773925273LL, 0);
        kv(o, "Timestamp", clock + 2000 + e * 37, 0);
        s(o, ",\"Maximum Onheap Memory\":4773925273,\"Maximum Offheap Memory\":0}");
        eol(o);
    }
    clock += 5000;
    long long next_id = 0;
    int per_stage = ntasks / (2 * NJOBS);
    for (int j = 0; j < NJOBS; j++) {
        int ms = 2 * j, rs = 2 * j + 1;
        int nmap = per_stage, nres = j == NJOBS - 1 ? ntasks - per_stage * (2 * NJOBS - 1) : per_stage;
        nmap = nmap * 99 / 100, nres = nres * 99 / 100; /* the retries and copies make up the rest */
        s(o, "{\"Event\":\"SparkListenerJobStart\"");
        kv(o, "Job ID", j, 0);
        kv(o, "Submission Time", clock, 0);
        s(o, ",\"Stage Infos\":[");
        w_stage_info(o, ms, nmap, 1, -1, 0, 0, NULL);
        s(o, ",");
        w_stage_info(o, rs, nres, 0, ms, 0, 0, NULL);
        s(o, "],\"Stage IDs\":[");
        i64(o, ms);
        s(o, ",");
        i64(o, rs);
        s(o, "],\"Properties\":{\"spark.sql.execution.id\":\"");
        i64(o, j);
        s(o, "\",\"spark.job.description\":\"count at Bench.scala:44\",\"spark.rdd.scope\":\"{\\\"id\\\":\\\"31\\\",\\\"name\\\":\\\"collect\\\"}\"}}");
        eol(o);
        for (int k = 0; k < 2; k++) {
            int st = k ? rs : ms, map = !k, nt = k ? nres : nmap;
            stage_acc sa;
            memset(&sa, 0, sizeof sa);
            long long submit = clock;
            s(o, "{\"Event\":\"SparkListenerStageSubmitted\",\"Stage Info\":");
            w_stage_info(o, st, nt, map, k ? ms : -1, submit, 0, NULL);
            s(o, ",\"Properties\":{\"spark.sql.execution.id\":\"");
            i64(o, j);
            s(o, "\"}}");
            eol(o);
            w_stage_tasks(o, st, map, nt, &next_id, &clock, &sa, gc);
            s(o, "{\"Event\":\"SparkListenerStageCompleted\",\"Stage Info\":");
            w_stage_info(o, st, nt, map, k ? ms : -1, submit, clock, &sa);
            s(o, "}");
            eol(o);
        }
        s(o, "{\"Event\":\"SparkListenerJobEnd\"");
        kv(o, "Job ID", j, 0);
        kv(o, "Completion Time", clock, 0);
        s(o, ",\"Job Result\":{\"Result\":\"JobSucceeded\"}}");
        eol(o);
        clock += 100;
    }
    s(o, "{\"Event\":\"SparkListenerApplicationEnd\"");
    kv(o, "Timestamp", clock + 500, 0);
    s(o, "}");
    eol(o);
    o_flush(o);
    if (fclose(o->f)) {
        perror(path);
        exit(1);
    }
    free(o);
}

/* ------------------------------------------------------------ measuring */

/* Run argv with stdout to `out_path` (NULL: /dev/null); its wall time, or
 * -1 when it fails. */
static double run_cmd(char *const argv[], const char *out_path) {
    double t0 = now();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int fd = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0) _exit(127);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    double t = now() - t0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? t : -1;
}

/* kB of a /proc/PID/status field ("VmHWM:"), -1 when absent. */
static long long proc_kb(pid_t pid, const char *field) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long long v = -1;
    size_t fl = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, fl)) v = atoll(line + fl);
    fclose(f);
    return v;
}

/* GET path from 127.0.0.1:port; the body (malloc'd, NUL-terminated) or NULL. */
static char *http_get(int port, const char *path) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return NULL;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) || write(fd, req, (size_t)n) != n) {
        close(fd);
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap);
    for (ssize_t got; b;) {
        if (len + 1 == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
        }
        got = read(fd, b + len, cap - len - 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        len += (size_t)got;
    }
    close(fd);
    if (!b) return NULL;
    b[len] = '\0';
    char *body = strstr(b, "\r\n\r\n");
    if (!body) {
        free(b);
        return NULL;
    }
    memmove(b, body + 4, strlen(body + 4) + 1);
    return b;
}

/* The sum of every "key":N in text. */
static long long sum_of(const char *text, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    long long sum = 0;
    for (const char *p = strstr(text, pat); p; p = strstr(p + 1, pat)) sum += atoll(p + strlen(pat));
    return sum;
}

typedef struct served {
    double secs;            /* spawn to ready */
    long long hwm_kb, rss_kb;
    long long done, failed, killed; /* the jobs' task counts in /api/v1, -1: not asked */
    int done_wanted;                /* ask for them (after the memory is read) */
} served;

/* Start the server on dir, wait for its port, read its memory, stop it. */
static int serve(const char *bin, const char *dir, served *r) {
    int p[2];
    if (pipe(p)) return -1;
    double t0 = now();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        close(p[0]);
        char fd[16];
        snprintf(fd, sizeof fd, "%d", p[1]);
        setenv("EMBER_READY_FD", fd, 1);
        /* its log lines go beside the logs it reads */
        char log[400];
        snprintf(log, sizeof log, "%s/../server.log", dir);
        int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (lfd >= 0) dup2(lfd, 2);
        execl(bin, bin, "--port", "0", "--conf", "ember.history.fs.update.interval=1h", dir, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    char buf[32];
    ssize_t n;
    while ((n = read(p[0], buf, sizeof buf - 1)) < 0 && errno == EINTR) {}
    r->secs = now() - t0;
    close(p[0]);
    int ok = n > 0 && atoi(buf) > 0;
    r->hwm_kb = proc_kb(pid, "VmHWM:");
    r->rss_kb = proc_kb(pid, "VmRSS:");
    r->done = r->failed = r->killed = -1;
    char *jobs = ok && r->done_wanted ? http_get(atoi(buf), "/api/v1/applications/" APP_ID "/jobs") : NULL;
    if (jobs) {
        r->done = sum_of(jobs, "numCompletedTasks");
        r->failed = sum_of(jobs, "numFailedTasks");
        r->killed = sum_of(jobs, "numKilledTasks");
        free(jobs);
    }
    kill(pid, SIGTERM);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    /* Stopped: exit status 0, or SIGTERM's default action when the signal
     * went to a thread that does not block it (OpenBLAS's pool, started
     * when the library loads, before the daemon blocks the signal). */
    if (ok && ((WIFEXITED(st) && WEXITSTATUS(st) == 0) || (WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM))) return 0;
    fprintf(stderr, "history: the server on %s: %s, %s %d\n", dir, ok ? "ready" : "never ready",
            WIFEXITED(st) ? "exit status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return -1;
}

static int exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && sb.st_size > 0;
}

static long long file_size(const char *p) {
    struct stat sb;
    return stat(p, &sb) ? -1 : (long long)sb.st_size;
}

static const char usage[] =
    "usage: history [TASKS] [RUNS]   (defaults: 100000, 3; TASKS >= 1000)\n"
    "  Generates bench/data/history-TASKS/ once (an event log of TASKS tasks in\n"
    "  Spark 3.5's format, and its zstd copy), then times ember-history-server\n"
    "  (next to this program, ../bin/) loading each, best of RUNS, beside\n"
    "  wc -l and zstd -d on the same files, with its peak RSS.\n";

int main(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(usage, stdout);
        return 0;
    }
    int ntasks = argc > 1 ? atoi(argv[1]) : 100000;
    int runs = argc > 2 ? atoi(argv[2]) : 3;
    if (ntasks < 1000 || runs < 1) {
        fputs(usage, stderr);
        return 2;
    }
    /* The server binary: build/bin/, next to build/bench/. */
    char bin[4096];
    snprintf(bin, sizeof bin, "%s", argv[0]);
    char *slash = strrchr(bin, '/');
    if (slash) snprintf(slash + 1, sizeof bin - (size_t)(slash + 1 - bin), "../bin/ember-history-server");
    else snprintf(bin, sizeof bin, "../bin/ember-history-server");
    if (access(bin, X_OK)) {
        fprintf(stderr, "history: %s not found (make daemons)\n", bin);
        return 1;
    }

    char base[256], plain_dir[300], zstd_dir[300], empty_dir[300], plain[400], zst[400];
    snprintf(base, sizeof base, "bench/data/history-%d", ntasks);
    snprintf(plain_dir, sizeof plain_dir, "%s/plain", base);
    snprintf(zstd_dir, sizeof zstd_dir, "%s/zstd", base);
    snprintf(empty_dir, sizeof empty_dir, "%s/empty", base);
    snprintf(plain, sizeof plain, "%s/" APP_ID, plain_dir);
    snprintf(zst, sizeof zst, "%s/" APP_ID ".zstd", zstd_dir);
    mkdir("bench/data", 0755);
    mkdir(base, 0755);
    mkdir(plain_dir, 0755);
    mkdir(zstd_dir, 0755);
    mkdir(empty_dir, 0755);
    gen_counts gc;
    char counts[420];
    snprintf(counts, sizeof counts, "%s/counts", base);
    FILE *cf = fopen(counts, "r");
    int have = cf && fscanf(cf, "%lld %lld %lld %lld", &gc.tasks, &gc.failed, &gc.killed, &gc.speculative) == 4;
    if (cf) fclose(cf);
    if (!have || !exists(plain)) {
        double t0 = now();
        generate(plain, ntasks, &gc);
        printf("generated %s: %.1f MB, %lld tasks in %.1f s\n", plain, file_size(plain) / 1e6, gc.tasks, now() - t0);
        unlink(zst);
        cf = fopen(counts, "w");
        if (!cf || fprintf(cf, "%lld %lld %lld %lld\n", gc.tasks, gc.failed, gc.killed, gc.speculative) < 0 || fclose(cf)) {
            perror(counts);
            return 1;
        }
    }
    if (!exists(zst)) {
        char *zargv[] = {"zstd", "-q", "-f", "-T2", "-3", plain, "-o", zst, NULL};
        if (run_cmd(zargv, NULL) < 0) {
            fprintf(stderr, "history: zstd failed (is the zstd CLI installed?)\n");
            return 1;
        }
    }
    double mb = file_size(plain) / 1e6, zmb = file_size(zst) / 1e6;
    /* Warm the page cache for both files: every figure below reads from memory. */
    char *cat_argv[] = {"cat", plain, zst, NULL};
    run_cmd(cat_argv, NULL);

    double best_plain = 1e9, best_zstd = 1e9, best_wc = 1e9, best_zd = 1e9, best_empty = 1e9;
    long long hwm = 0, rss = 0, zhwm = 0, empty_rss = 0, lines = 0;
    for (int r = 0; r < runs; r++) {
        served sv = {.done_wanted = 1};
        if (serve(bin, plain_dir, &sv)) {
            fprintf(stderr, "history: the server on %s did not start or stop cleanly\n", plain_dir);
            return 1;
        }
        if (sv.secs < best_plain) best_plain = sv.secs;
        if (sv.hwm_kb > hwm) hwm = sv.hwm_kb;
        if (sv.rss_kb > rss) rss = sv.rss_kb;
        if (sv.done != gc.tasks - gc.failed - gc.killed || sv.failed != gc.failed || sv.killed != gc.killed) {
            fprintf(stderr, "history: /api/v1 counts %lld tasks done, %lld failed, %lld killed; the log holds %lld, %lld, %lld\n",
                    sv.done, sv.failed, sv.killed, gc.tasks - gc.failed - gc.killed, gc.failed, gc.killed);
            return 1;
        }
        if (serve(bin, zstd_dir, &sv)) {
            fprintf(stderr, "history: the server on %s did not start or stop cleanly\n", zstd_dir);
            return 1;
        }
        if (sv.secs < best_zstd) best_zstd = sv.secs;
        if (sv.hwm_kb > zhwm) zhwm = sv.hwm_kb;
        if (sv.done != gc.tasks - gc.failed - gc.killed || sv.failed != gc.failed || sv.killed != gc.killed) {
            fprintf(stderr, "history: /api/v1 on the zstd log counts %lld tasks done, %lld failed, %lld killed\n",
                    sv.done, sv.failed, sv.killed);
            return 1;
        }
        sv.done_wanted = 0;
        if (serve(bin, empty_dir, &sv)) {
            fprintf(stderr, "history: the server on %s did not start or stop cleanly\n", empty_dir);
            return 1;
        }
        if (sv.secs < best_empty) best_empty = sv.secs;
        if (sv.rss_kb > empty_rss) empty_rss = sv.rss_kb;
        char *wc_argv[] = {"wc", "-l", plain, NULL};
        char wc_out[420];
        snprintf(wc_out, sizeof wc_out, "%s/wc.out", base);
        double t = run_cmd(wc_argv, wc_out);
        if (t > 0 && t < best_wc) best_wc = t;
        FILE *f = fopen(wc_out, "r");
        if (f) {
            if (fscanf(f, "%lld", &lines) != 1) lines = 0;
            fclose(f);
        }
        unlink(wc_out);
        char *zd_argv[] = {"zstd", "-q", "-d", "-c", zst, NULL};
        t = run_cmd(zd_argv, NULL);
        if (t > 0 && t < best_zd) best_zd = t;
    }
    double retained_mb = (rss - empty_rss) / 1024.0;
    printf("event log: %s, %.1f MB, %lld lines, %lld tasks (%lld failed and retried, %lld speculative copies), zstd copy %.1f MB\n",
           plain, mb, lines, gc.tasks, gc.failed, gc.speculative, zmb);
    printf("/api/v1 after the load     : %lld tasks done, %lld failed, %lld killed, as in the log\n",
           gc.tasks - gc.failed - gc.killed, gc.failed, gc.killed);
    printf("history server load, plain : %7.3f s  %7.1f MB/s  peak RSS %7.1f MB (best of %d; empty server starts in %.3f s)\n",
           best_plain, mb / best_plain, hwm / 1024.0, runs, best_empty);
    printf("history server load, zstd  : %7.3f s  %7.1f MB/s of the plain text  peak RSS %7.1f MB\n", best_zstd,
           mb / best_zstd, zhwm / 1024.0);
    printf("wc -l on the plain file    : %7.3f s  %7.1f MB/s (reference: the read bound)\n", best_wc, mb / best_wc);
    printf("zstd -d -c > /dev/null     : %7.3f s  %7.1f MB/s of the plain text (reference)\n", best_zd, mb / best_zd);
    printf("retained state             : %7.1f MB, %.0f bytes a task (loaded server's RSS %.1f MB minus an empty server's %.1f MB)\n",
           retained_mb, retained_mb * 1048576.0 / (double)gc.tasks, rss / 1024.0, empty_rss / 1024.0);
    printf("peak over retained         : %7.2fx (peak RSS minus the empty server's, over the retained state; target 2)\n",
           (hwm - empty_rss) / 1024.0 / retained_mb);
    return 0;
}
