/*
 * conf.c -- configuration (see conf.h and the em_conf_* functions in
 * ember.h): the one table of known keys with their types, ranges and
 * defaults, the value parsers, a small key/value list per em_conf, and typed
 * getters.
 *
 * The table below is the single place a key is declared; docs/configuration.md
 * and the comment above em_conf_new in ember.h list the same keys, types,
 * ranges and defaults and must be kept in step with it.  Values are stored as
 * the strings the caller gave, but each is checked against its key's type and
 * range when it is set (em_conf_set, and so em_set): a typo or an impossible
 * value fails at once, naming the key, the value and what is allowed, rather
 * than falling back to a default in silence or failing the first job.  So
 * the getters parse values known to be good and have no fallback.  em_open
 * checks its copy once more (conf_validate): cheap, a guard should a value
 * ever reach a conf without em_conf_set, and the place for future checks
 * that span several keys.
 *
 * An em_conf is not synchronised: the context copies the caller's conf at
 * em_open (conf_dup) and changes its own copy only from the driver thread.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "codec.h"
#include "conf.h"
#include "ember.h"
#include "err.h"
#include "faults.h"
#include "taskdesc.h" /* SHUFFLE_MAX_PARTS */

#define KiB ((int64_t)1 << 10)
#define MiB ((int64_t)1 << 20)
#define TiB ((int64_t)1 << 40)

/* The largest record: it and its framing (two varints, at most 10 bytes)
 * must fit in one block of a shuffle or spill file, which the writers and
 * readers cap at BF_MAX_RAW (256 MiB).  One MiB of slack keeps the limit a
 * round number. */
#define RECORD_MAX ((int64_t)BF_MAX_RAW - MiB)

/* The smallest shuffle memory budget.  With map-side combining the writer
 * gives half its budget to partition buffers, so at 128 KiB that half still
 * holds one whole block of the default 64 KiB.  Far below it every few
 * records make a spilled run: with a 1-byte budget each record was a run of
 * its own, and a small job ran for minutes. */
#define MEMORY_FLOOR (128 * KiB)

static const char *const log_choices[] = {"error", "warn", "info", "debug", NULL};
static const char *const progress_choices[] = {"auto", "true", "false", NULL};
/* Names as bf_codec_id_of (codec.h) knows them; auto first, the default. */
static const char *const codec_choices[] = {"auto", "lz4", "zstd", "zlib", "prefix", "none", NULL};
static const char *const evlog_codec_choices[] = {"zstd", "lz4", NULL};
static const char *const recovery_choices[] = {"NONE", "FILESYSTEM", NULL};

static const conf_spec conf_keys[] = {
    /* The master URL itself is checked by em_open, which also takes it from
     * its argument or $EMBER_MASTER; here it need only be non-empty. */
    {.key = "ember.master", .def = "local[*]", .type = CONF_STRING},
    {.key = "ember.app.name", .def = "ember", .type = CONF_STRING},
    /* "0" stands for "the number of executor cores": the real default
     * depends on the master, so the context substitutes it when it reads
     * the key. */
    {.key = "ember.default.parallelism", .def = "0", .type = CONF_INT, .min = 0, .max = SHUFFLE_MAX_PARTS,
     .why_max = "the most partitions a shuffle may have"},
    {.key = "ember.task.maxFailures", .def = "4", .type = CONF_INT, .min = 1, .max = INT32_MAX},
    /* Spark's spark.stage.maxConsecutiveAttempts: failed attempts of a
     * stage (on fetch failures) in a row before its job fails. */
    {.key = "ember.stage.maxConsecutiveAttempts", .def = "4", .type = CONF_INT, .min = 1, .max = INT32_MAX},
    {.key = "ember.record.maxBytes", .def = "67108864", .type = CONF_SIZE, .min = KiB, .max = RECORD_MAX,
     .why_max = "a record must fit in one 256 MiB block of a shuffle or spill file"},
    /* 256 MiB: about what Spark's unified memory lets one of two tasks
     * use with its default 1g ((1g - 300m) * 0.6 = 434 MB of execution
     * memory, up to half of it per task with two running).  At 64 MiB a
     * reduce task of a 20M-record sort on 8 partitions spilled and merged
     * (2.5M records take 125 MB to sort in memory). */
    {.key = "ember.shuffle.memoryBytes", .def = "268435456", .type = CONF_SIZE, .min = MEMORY_FLOOR, .max = TiB,
     .why_min = "a smaller budget spills every few records and the shuffle crawls"},
    /* local[N] keeps a map output of at most maxBytes (its segments) in
     * memory instead of two files, while all such outputs total at most
     * totalBytes (executor/memout.h); 0 writes every output to files.  No
     * Spark equivalent: its map outputs are always files.  maxBytes is the
     * map side's default budget (ember.shuffle.memoryBytes): any output
     * that never spilled may stay.  totalBytes, 1 GiB, holds the 20M-pair
     * shuffles of bench/shuffle (343 MB uncompressed) with room to spare;
     * what is kept is memory the same outputs' files would take in the
     * page cache.  Kept blocks are coded with codec, by default
     * prefix (executor/prefixcodec.h): a 20M-pair reduce_by_key then keeps
     * 151 MB, not 343 MB uncompressed, and its peak RSS falls from 763 MB
     * to 556 MB (within 2x its 320 MB input) for 0.06-0.09 s (0.33-0.37 s
     * against 0.28-0.30 s uncompressed); lz4 kept 154 MB but cost 0.25 s,
     * a fifth of a map task's CPU.
     * none builds blocks in place, the fastest. */
    {.key = "ember.shuffle.inMemoryOutput.maxBytes", .def = "268435456", .type = CONF_SIZE, .min = 0, .max = 1024 * MiB},
    {.key = "ember.shuffle.inMemoryOutput.totalBytes", .def = "1073741824", .type = CONF_SIZE, .min = 0, .max = TiB},
    {.key = "ember.shuffle.inMemoryOutput.codec", .def = "prefix", .type = CONF_ENUM, .choices = codec_choices},
    {.key = "ember.shuffle.blockBytes", .def = "65536", .type = CONF_SIZE, .min = 4 * KiB, .max = 64 * MiB,
     .why_max = "a merge holds one block per spilled run in memory"},
    /* How the driver's map-output tracker keeps segment sizes (Spark's
     * spark.shuffle.minNumPartitionsToHighlyCompress and
     * spark.shuffle.accurateBlockThreshold, their defaults): a byte per
     * segment up to this many partitions, past it a map output's empty
     * segments, their average and its huge ones (scheduler/mapout.h). */
    {.key = "ember.shuffle.minNumPartitionsToHighlyCompress", .def = "2000", .type = CONF_INT, .min = 1,
     .max = SHUFFLE_MAX_PARTS, .why_max = "the most partitions a shuffle may have"},
    {.key = "ember.shuffle.accurateBlockThreshold", .def = "100m", .type = CONF_SIZE, .min = 1, .max = INT64_MAX},
    /* The codec of shuffle and spill blocks, as Spark's
     * spark.io.compression.codec (whose default is lz4; ours, auto, front
     * codes blocks it shrinks well and lz4s the others, and leaves map
     * outputs uncoded while the executors share one host: tasksched.c's
     * output_codec, bench/RESULTS.md),
     * and the levels of the codecs that take one: zstd's (Spark's default,
     * 1) and zlib's (the old key, which applies only to zlib). */
    {.key = "ember.io.compression.codec", .def = "auto", .type = CONF_ENUM, .choices = codec_choices},
    {.key = "ember.io.compression.zstd.level", .def = "1", .type = CONF_INT, .min = BF_ZSTD_MIN_LEVEL,
     .max = BF_ZSTD_MAX_LEVEL},
    {.key = "ember.shuffle.compress.level", .def = "1", .type = CONF_INT, .min = 0, .max = 9},
    /* LZ4_compress_fast's acceleration.  Spark's lz4-java compressor is
     * lz4's default, 1; 2 here: on blocks of random int64 keys (the sort's
     * in bench/shuffle) it compresses markedly faster for a few percent
     * more bytes, and decompresses as fast; blocks of small keys (the
     * reduce_by_key's) find a match at almost every step, which
     * acceleration does not change (bench/RESULTS.md has the figures). */
    {.key = "ember.io.compression.lz4.acceleration", .def = "2", .type = CONF_INT, .min = 1,
     .max = BF_LZ4_MAX_ACCEL},
    {.key = "ember.files.maxPartitionBytes", .def = "33554432", .type = CONF_SIZE, .min = KiB,
     .max = INT64_MAX},
    {.key = "ember.local.dir", .def = "/tmp", .type = CONF_STRING},
    /* Checkpoints (em_checkpoint): Spark 4's spark.checkpoint.dir, unset by
     * default; and whether a checkpointed RDD's files go when the RDD is
     * freed (Spark's default keeps them: they outlive the application). */
    {.key = "ember.checkpoint.dir", .def = "", .type = CONF_STRING},
    {.key = "ember.cleaner.referenceTracking.cleanCheckpoints", .def = "false", .type = CONF_BOOL},
    /* Event logs (eventlog.h), Spark's settings and defaults; the history
     * server's directory and port. */
    {.key = "ember.eventLog.enabled", .def = "false", .type = CONF_BOOL},
    {.key = "ember.eventLog.dir", .def = "/tmp/ember-events", .type = CONF_STRING},
    {.key = "ember.eventLog.compress", .def = "false", .type = CONF_BOOL},
    {.key = "ember.eventLog.compression.codec", .def = "zstd", .type = CONF_ENUM, .choices = evlog_codec_choices},
    {.key = "ember.eventLog.rolling.enabled", .def = "false", .type = CONF_BOOL},
    {.key = "ember.eventLog.rolling.maxFileSize", .def = "128m", .type = CONF_SIZE, .min = KiB, .max = TiB},
    {.key = "ember.eventLog.overwrite", .def = "false", .type = CONF_BOOL},
    {.key = "ember.eventLog.logBlockUpdates.enabled", .def = "false", .type = CONF_BOOL},
    {.key = "ember.scheduler.listenerbus.eventqueue.capacity", .def = "10000", .type = CONF_INT, .min = 1,
     .max = 100000000},
    {.key = "ember.history.fs.logDirectory", .def = "/tmp/ember-events", .type = CONF_STRING},
    {.key = "ember.history.fs.update.interval", .def = "10s", .type = CONF_DURATION, .unit_ms = 1, .min = 1,
     .max = 86400000},
    {.key = "ember.history.ui.port", .def = "18080", .type = CONF_INT, .min = 0, .max = 65535},
    {.key = "ember.history.retainedApplications", .def = "50", .type = CONF_INT, .min = 1, .max = 1000000},
    /* auto: draw the bar only when stderr is a terminal; true; false. */
    {.key = "ember.progress", .def = "auto", .type = CONF_ENUM, .choices = progress_choices},
    /* Excluding executors whose tasks fail, as Spark's excludeOnFailure
     * (its names and defaults: off; 1 attempt of a task per executor; 2
     * failed tasks of a stage; 2 failed tasks of successful stages for the
     * application, for an hour). */
    {.key = "ember.excludeOnFailure.enabled", .def = "false", .type = CONF_BOOL},
    {.key = "ember.excludeOnFailure.task.maxTaskAttemptsPerExecutor", .def = "1", .type = CONF_INT, .min = 1,
     .max = INT32_MAX},
    {.key = "ember.excludeOnFailure.stage.maxFailedTasksPerExecutor", .def = "2", .type = CONF_INT, .min = 1,
     .max = INT32_MAX},
    {.key = "ember.excludeOnFailure.application.maxFailedTasksPerExecutor", .def = "2", .type = CONF_INT, .min = 1,
     .max = INT32_MAX},
    {.key = "ember.excludeOnFailure.timeout", .def = "1h", .type = CONF_DURATION, .unit_ms = 1, .min = 1,
     .max = INT64_MAX / 1000},
    {.key = "ember.scheduler.excludeOnFailure.unschedulableTaskSetTimeout", .def = "120s", .type = CONF_DURATION,
     .unit_ms = 1, .min = 0, .max = INT64_MAX / 1000},
    /* Speculation, as Spark 4's (its defaults). */
    {.key = "ember.speculation", .def = "false", .type = CONF_BOOL},
    {.key = "ember.speculation.interval", .def = "100ms", .type = CONF_DURATION, .unit_ms = 1, .min = 1,
     .max = 3600000},
    {.key = "ember.speculation.multiplier", .def = "3", .type = CONF_DOUBLE, .dmin = 1, .dmax = 1e6},
    {.key = "ember.speculation.quantile", .def = "0.9", .type = CONF_DOUBLE, .dmin = 0, .dmax = 1},
    {.key = "ember.speculation.minTaskRuntime", .def = "100ms", .type = CONF_DURATION, .unit_ms = 1, .min = 0,
     .max = 3600000},
    /* Delay scheduling, as Spark's spark.locality.wait: how long a task
     * whose input is cached on a busy executor waits for it before running
     * elsewhere (0: never waits). */
    {.key = "ember.locality.wait", .def = "3s", .type = CONF_DURATION, .unit_ms = 1, .min = 0, .max = 86400000},
    /* Cluster mode's master: a worker silent this long is lost (Spark's
     * spark.worker.timeout is 60 s; seconds on a LAN), and whether an
     * application's executors spread across workers. */
    {.key = "ember.worker.timeout", .def = "10s", .type = CONF_DURATION, .unit_ms = 1, .min = 100, .max = 86400000},
    {.key = "ember.deploy.spreadOut", .def = "true", .type = CONF_BOOL},
    /* The master removes an application (FAILED) after this many of its
     * executors failed in a row while none of them runs (Spark's
     * spark.deploy.maxExecutorRetries, 10; -1: never).  A failure is an
     * exit the master did not ask for, with a code other than 0 or by a
     * signal; the count restarts when the driver accepts an executor. */
    {.key = "ember.deploy.maxExecutorRetries", .def = "10", .type = CONF_INT, .min = -1, .max = INT32_MAX},
    /* Whether the master keeps its state (workers, applications, their
     * executors) in a file so that a restarted master picks the running
     * cluster up again (Spark's spark.deploy.recoveryMode: NONE by default;
     * FILESYSTEM), and where: Spark's spark.deploy.recoveryDirectory is
     * empty by default; here FILESYSTEM needs it set, so that the state of
     * a cluster never lands in whatever directory a master was started in. */
    {.key = "ember.deploy.recoveryMode", .def = "NONE", .type = CONF_ENUM, .choices = recovery_choices},
    {.key = "ember.deploy.recoveryDirectory", .def = "", .type = CONF_STRING},
    /* A worker's heartbeat to the master (a quarter of the timeout, as
     * Spark's 15 s of 60 s), and how long it keeps a failed application's
     * executor logs (Spark's spark.worker.cleanup.appDataTtl: 7 days). */
    /* An executor's heartbeat to its driver, and how long the driver waits
     * for any frame of an executor before it declares it lost (and has its
     * worker kill it).  Spark's are 10 s and spark.network.timeout's 120 s;
     * on a LAN a stopped or cut-off executor is noticed in seconds. */
    {.key = "ember.executor.heartbeatInterval", .def = "1s", .type = CONF_DURATION, .unit_ms = 1, .min = 10,
     .max = 3600000},
    /* A segment fetch that fails with its connection (refused, reset) is
     * tried again this many times, this far apart, before it is a fetch
     * failure (Spark's 3 and 5 s; a LAN's transient failures pass in
     * milliseconds, and a dead executor should cost little). */
    {.key = "ember.shuffle.io.maxRetries", .def = "3", .type = CONF_INT, .min = 0, .max = 100},
    {.key = "ember.shuffle.io.retryWait", .def = "200ms", .type = CONF_DURATION, .unit_ms = 1, .min = 0,
     .max = 3600000},
    {.key = "ember.network.timeout", .def = "10s", .type = CONF_DURATION, .unit_ms = 1, .min = 100,
     .max = 86400000},
    {.key = "ember.worker.heartbeatInterval", .def = "2500ms", .type = CONF_DURATION, .unit_ms = 1, .min = 10,
     .max = 3600000},
    /* The worker's shuffle service (Spark's external shuffle service,
     * which Spark leaves off; on here): executors' map outputs are served
     * by their worker and outlive them.  Spark's port, 0: any free one. */
    {.key = "ember.shuffle.service.enabled", .def = "true", .type = CONF_BOOL},
    {.key = "ember.shuffle.service.port", .def = "7337", .type = CONF_INT, .min = 0, .max = 65535},
    {.key = "ember.worker.cleanup.appDataTtl", .def = "7d", .type = CONF_DURATION, .unit_ms = 1000, .min = 0,
     .max = (int64_t)3650 * 86400000},
    /* The worker's cache of application binaries (DIR/bin), least
     * recently used out first, never one an executor uses. */
    {.key = "ember.worker.binCache.maxBytes", .def = "1g", .type = CONF_SIZE, .min = 0, .max = INT64_MAX},
    /* The worker's web UI (Spark's spark.worker.ui.port, 8081; 0: any free
     * port) and how many finished executors its page and /json keep
     * (spark.worker.ui.retainedExecutors). */
    {.key = "ember.worker.ui.port", .def = "8081", .type = CONF_INT, .min = 0, .max = 65535},
    {.key = "ember.worker.ui.retainedExecutors", .def = "1000", .type = CONF_INT, .min = 0, .max = 1000000},
    /* The daemons' (and the driver's) metrics in the Prometheus text
     * format (Spark's spark.ui.prometheus.enabled, off by default). */
    {.key = "ember.ui.prometheus.enabled", .def = "false", .type = CONF_BOOL},
    /* Cluster mode's wire and security. */
    {.key = "ember.rpc.message.maxSize", .def = "128m", .type = CONF_SIZE, .min = 64 * KiB, .max = ((int64_t)1 << 31) - 1,
     .why_max = "a frame's length is 32 bits"},
    /* A reduce task's remote segment fetches in flight, in bytes (Spark's
     * spark.reducer.maxSizeInFlight); one segment is always fetched. */
    {.key = "ember.reducer.maxSizeInFlight", .def = "48m", .type = CONF_SIZE, .min = KiB, .max = INT64_MAX},
    /* A reduce task reads the map outputs another executor of its host
     * wrote from their files, without a socket (Spark's
     * spark.shuffle.readHostLocalDisk and its default, true):
     * local-cluster's executors fetched half of every shuffle through the
     * other's shuffle service, copying each byte four times more. */
    {.key = "ember.shuffle.readHostLocalDisk", .def = "true", .type = CONF_BOOL},
    /* After a fetch failure, whose outputs a reduce task checks: its
     * executor's, or with this its host's (Spark's
     * spark.files.fetchFailure.unRegisterOutputOnHost and its default). */
    {.key = "ember.files.fetchFailure.unRegisterOutputOnHost", .def = "false", .type = CONF_BOOL},
    {.key = "ember.authenticate.secret", .def = "", .type = CONF_STRING},
    {.key = "ember.authenticate.secretFile", .def = "", .type = CONF_STRING},
    {.key = "ember.network.crypto.enabled", .def = "false", .type = CONF_BOOL},
    {.key = "ember.network.insecure", .def = "false", .type = CONF_BOOL},
    /* Cluster mode's driver and its application. */
    {.key = "ember.driver.host", .def = "127.0.0.1", .type = CONF_STRING},
    {.key = "ember.driver.port", .def = "0", .type = CONF_INT, .min = 0, .max = 65535},
    {.key = "ember.driver.maxResultSize", .def = "1g", .type = CONF_SIZE, .min = 0, .max = INT64_MAX},
    {.key = "ember.scheduler.maxRegisteredWait", .def = "30s", .type = CONF_DURATION, .unit_ms = 1, .min = 0,
     .max = 86400000},
    {.key = "ember.scheduler.minRegisteredResourcesRatio", .def = "0", .type = CONF_DOUBLE, .dmin = 0, .dmax = 1},
    {.key = "ember.scheduler.maxRegisteredResourcesWaitingTime", .def = "30s", .type = CONF_DURATION, .unit_ms = 1,
     .min = 0, .max = 86400000},
    {.key = "ember.starvation.timeout", .def = "15s", .type = CONF_DURATION, .unit_ms = 1, .min = 1,
     .max = 86400000},
    {.key = "ember.executor.cores", .def = "0", .type = CONF_INT, .min = 0, .max = 1 << 16},
    {.key = "ember.executor.memory", .def = "1g", .type = CONF_SIZE, .min = MiB, .max = INT64_MAX},
    {.key = "ember.cores.max", .def = "0", .type = CONF_INT, .min = 0, .max = INT32_MAX},
    {.key = "ember.executor.taskQueue", .def = "1", .type = CONF_INT, .min = 0, .max = 64},
    {.key = "ember.executor.taskQueue.max", .def = "64", .type = CONF_INT, .min = 0, .max = 1024},
    /* Log lines of cluster mode (log.h): the driver's own default is warn,
     * so that a program's output is its own; the daemons' is info. */
    {.key = "ember.log.level", .def = "warn", .type = CONF_ENUM, .choices = log_choices},
    /* The driver's UI and /api/v1 (engine/ui.h, status.h): Spark's keys
     * and defaults; the port's next ones are tried up to maxRetries above
     * it; the store keeps at most so many jobs, stage attempts, tasks of
     * one stage attempt and removed executors. */
    {.key = "ember.ui.enabled", .def = "true", .type = CONF_BOOL},
    {.key = "ember.ui.port", .def = "4040", .type = CONF_INT, .min = 0, .max = 65535},
    {.key = "ember.port.maxRetries", .def = "16", .type = CONF_INT, .min = 0, .max = 1000},
    {.key = "ember.ui.retainedJobs", .def = "1000", .type = CONF_INT, .min = 1, .max = INT32_MAX},
    {.key = "ember.ui.retainedStages", .def = "1000", .type = CONF_INT, .min = 1, .max = INT32_MAX},
    {.key = "ember.ui.retainedTasks", .def = "100000", .type = CONF_INT, .min = 1, .max = INT32_MAX},
    {.key = "ember.ui.retainedDeadExecutors", .def = "100", .type = CONF_INT, .min = 0, .max = INT32_MAX},
    /* Tests only (engine/faults.h): never set them in production. */
    {.key = "ember.test.faults", .def = "", .type = CONF_FAULTS},
    {.key = "ember.test.faults.dir", .def = "", .type = CONF_STRING},
    /* local[N]'s threads split into this many executors (1 to N, fixed at
     * em_open), to test placement across executors without processes. */
    {.key = "ember.test.executors", .def = "1", .type = CONF_INT, .min = 1, .max = 1024},
};
#define NKEYS (sizeof conf_keys / sizeof conf_keys[0])

struct em_conf {
    struct conf_kv { char *key, *val; } *v; /* keys set, in first-set order */
    size_t n, cap;
};

const conf_spec *conf_lookup(const char *key) {
    if (!key) return NULL;
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(conf_keys[i].key, key) == 0) return &conf_keys[i];
    return NULL;
}

int conf_known(const char *key) { return conf_lookup(key) != NULL; }

/* ----------------------------------------------------------------- parsers */

/* The text of s without blanks around it: [*b, *e). */
static void trim(const char *s, const char **b, const char **e) {
    const char *p = s, *q = s + strlen(s);
    while (p < q && isspace((unsigned char)*p)) p++;
    while (q > p && isspace((unsigned char)q[-1])) q--;
    *b = p;
    *e = q;
}

/* The decimal digits at *p (advanced past them) into *v.  -1 when there are
 * none; 1 when they do not fit in int64 (*v is then INT64_MAX). */
static int digits(const char **p, const char *e, int64_t *v) {
    const char *s = *p;
    int64_t n = 0;
    int over = 0;
    for (; s < e && isdigit((unsigned char)*s); s++) {
        int d = *s - '0';
        if (n > (INT64_MAX - d) / 10) over = 1;
        else n = n * 10 + d;
    }
    if (s == *p) return -1;
    *p = s;
    *v = over ? INT64_MAX : n;
    return over;
}

/* Whether [p, e) is word, ignoring case. */
static int is_word(const char *p, const char *e, const char *word) {
    size_t n = (size_t)(e - p);
    return strlen(word) == n && strncasecmp(p, word, n) == 0;
}

/* A whole number followed by one of the units (the empty unit included, if
 * listed), scaled by the unit's factor: the common part of the size and
 * duration parsers. */
struct unit { const char *name; int64_t mult; };

static int parse_scaled(const char *s, const struct unit *units, size_t nunits, int64_t *out) {
    if (!s) return -1;
    const char *p, *e;
    trim(s, &p, &e);
    int64_t v;
    int over = digits(&p, e, &v);
    if (over < 0) return -1;
    for (size_t i = 0; i < nunits; i++) {
        if (!is_word(p, e, units[i].name)) continue;
        if (over || v > INT64_MAX / units[i].mult) {
            *out = INT64_MAX;
            return 1;
        }
        *out = v * units[i].mult;
        return 0;
    }
    return -1;
}

int conf_parse_int(const char *s, int64_t *out) {
    if (!s) return -1;
    const char *p, *e;
    trim(s, &p, &e);
    int neg = p < e && *p == '-';
    p += neg;
    int64_t v;
    int over = digits(&p, e, &v);
    if (over < 0 || p != e) return -1;
    *out = neg ? (over ? INT64_MIN : -v) : v;
    return over;
}

/* Spark's suffixes (JavaUtils.byteStringAs), binary multiples. */
static const struct unit size_units[] = {
    {"", 1},          {"b", 1},          {"k", KiB},        {"kb", KiB},       {"m", MiB},
    {"mb", MiB},      {"g", KiB * MiB},  {"gb", KiB * MiB}, {"t", TiB},        {"tb", TiB},
};

int conf_parse_size(const char *s, int64_t *out) {
    return parse_scaled(s, size_units, sizeof size_units / sizeof size_units[0], out);
}

int conf_parse_duration(const char *s, int64_t unit_ms, int64_t *out) {
    const struct unit units[] = {
        {"", unit_ms}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"min", 60000}, {"h", 3600000}, {"d", 86400000},
    };
    return parse_scaled(s, units, sizeof units / sizeof units[0], out);
}

/* Only Spark's spellings: 1/0, yes/no and on/off are refused, so a value
 * means the same here as in a Spark configuration. */
int conf_parse_bool(const char *s, int *out) {
    if (!s) return -1;
    const char *p, *e;
    trim(s, &p, &e);
    if (is_word(p, e, "true")) *out = 1;
    else if (is_word(p, e, "false")) *out = 0;
    else return -1;
    return 0;
}

int conf_parse_double(const char *s, double *out) {
    if (!s) return -1;
    const char *p, *e;
    trim(s, &p, &e);
    char buf[64];
    if (e <= p || (size_t)(e - p) >= sizeof buf) return -1;
    for (const char *q = p; q < e; q++)
        if (!strchr("0123456789+-.eE", *q)) return -1; /* no hex, inf, nan */
    memcpy(buf, p, (size_t)(e - p));
    buf[e - p] = 0;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end || end == buf || errno || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* --------------------------------------------------------------- checking */

/* v in the key's unit, for messages: "9", "131072 bytes (128k)",
 * "3000 ms (3s)". */
static const char *show(const conf_spec *k, int64_t v, char *buf, size_t len) {
    static const struct unit sizes[] = {{"t", TiB}, {"g", KiB * MiB}, {"m", MiB}, {"k", KiB}};
    static const struct unit times[] = {{"h", 3600000}, {"m", 60000}, {"s", 1000}};
    const struct unit *u = NULL;
    size_t nu = 0;
    const char *what = "";
    if (k->type == CONF_SIZE) {
        u = sizes;
        nu = sizeof sizes / sizeof sizes[0];
        what = " bytes";
    } else if (k->type == CONF_DURATION) {
        u = times;
        nu = sizeof times / sizeof times[0];
        what = " ms";
    }
    int n = snprintf(buf, len, "%" PRId64 "%s", v, what);
    for (size_t i = 0; i < nu; i++) {
        if (v > 0 && v % u[i].mult == 0) {
            snprintf(buf + n, len - (size_t)n, " (%" PRId64 "%s)", v / u[i].mult, u[i].name);
            break;
        }
    }
    return buf;
}

/* The allowed syntax of a malformed value, for the message. */
static int malformed(const conf_spec *k, const char *value) {
    char choices[256] = "";
    switch (k->type) {
    case CONF_INT:
        return em__seterr(EM_EINVAL, "%s: \"%.200s\" is not a whole number", k->key, value);
    case CONF_SIZE:
        return em__seterr(EM_EINVAL,
                          "%s: \"%.200s\" is not a size (a whole number of bytes, optionally followed by k, m, g "
                          "or t, with or without b: 65536, 64k, 8mb)",
                          k->key, value);
    case CONF_DURATION:
        return em__seterr(EM_EINVAL,
                          "%s: \"%.200s\" is not a duration (a whole number of %s, or one followed by ms, s, m "
                          "or h: 250ms, 3s, 5m)",
                          k->key, value, k->unit_ms == 1 ? "milliseconds" : "seconds");
    case CONF_BOOL:
        return em__seterr(EM_EINVAL, "%s: \"%.200s\" is not a boolean (true or false)", k->key, value);
    case CONF_ENUM:
        for (const char *const *c = k->choices; *c; c++) {
            size_t n = strlen(choices);
            snprintf(choices + n, sizeof choices - n, "%s%s", n ? ", " : "", *c);
        }
        return em__seterr(EM_EINVAL, "%s: \"%.200s\" is not one of %s", k->key, value, choices);
    case CONF_DOUBLE:
        return em__seterr(EM_EINVAL, "%s: \"%.200s\" is not a number (a decimal such as 3, 0.9 or 1.5)", k->key,
                          value);
    case CONF_STRING:
    case CONF_FAULTS:
        break;
    }
    return em__seterr(EM_EINVAL, "%s: \"\" is not allowed (the value must not be empty)", k->key);
}

static int out_of_range(const conf_spec *k, const char *value, int64_t v) {
    char buf[64];
    int low = v < k->min;
    const char *why = low ? k->why_min : k->why_max;
    return em__seterr(EM_EINVAL, "%s: \"%.200s\" is %s the %s of %s%s%s", k->key, value, low ? "below" : "above",
                      low ? "minimum" : "maximum", show(k, low ? k->min : k->max, buf, sizeof buf),
                      why ? ": " : "", why ? why : "");
}

int conf_check(const conf_spec *k, const char *value) {
    EM_ASSERT(k && value);
    int64_t v = 0;
    int b, rc = 0;
    switch (k->type) {
    case CONF_STRING:
        return *value ? 0 : malformed(k, value);
    case CONF_FAULTS: {
        fault_rule rules[FAULTS_MAX];
        char why[160];
        if (faults_parse(value, rules, why, sizeof why) < 0)
            return em__seterr(EM_EINVAL, "%s: \"%.200s\" is not a fault spec: %s", k->key, value, why);
        return 0;
    }
    case CONF_BOOL:
        return conf_parse_bool(value, &b) ? malformed(k, value) : 0;
    case CONF_DOUBLE: {
        double d;
        if (conf_parse_double(value, &d)) return malformed(k, value);
        if (d < k->dmin || d > k->dmax)
            return em__seterr(EM_EINVAL, "%s: \"%.200s\" is outside [%g, %g]%s%s", k->key, value, k->dmin, k->dmax,
                              k->why_max ? ": " : "", k->why_max ? k->why_max : "");
        return 0;
    }
    case CONF_ENUM: {
        const char *p, *e;
        trim(value, &p, &e);
        for (const char *const *c = k->choices; *c; c++)
            if (is_word(p, e, *c)) return 0;
        return malformed(k, value);
    }
    case CONF_INT: rc = conf_parse_int(value, &v); break;
    case CONF_SIZE: rc = conf_parse_size(value, &v); break;
    case CONF_DURATION: rc = conf_parse_duration(value, k->unit_ms, &v); break;
    }
    if (rc < 0) return malformed(k, value);
    /* A value past int64 is past either bound, and *out says which. */
    if (rc > 0 || v < k->min || v > k->max) return out_of_range(k, value, v);
    return 0;
}

int conf_validate(const em_conf *c) {
    if (!c) return 0;
    for (size_t i = 0; i < c->n; i++) {
        const conf_spec *k = conf_lookup(c->v[i].key);
        EM_ASSERT(k); /* only known keys are ever stored */
        int rc = conf_check(k, c->v[i].val);
        if (rc) return rc;
    }
    return 0;
}

/* ------------------------------------------------------------ the em_conf */

em_conf *em_conf_new(void) {
    em_conf *c = calloc(1, sizeof *c);
    if (!c) em__seterr(EM_ENOMEM, "em_conf_new: out of memory");
    return c;
}

void em_conf_free(em_conf *c) {
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].key);
        free(c->v[i].val);
    }
    free(c->v);
    free(c);
}

/* Store (key, value), replacing the value of a key already set in place.
 * 0, or EM_ENOMEM with the conf unchanged. */
static int put(em_conf *c, const char *key, const char *value) {
    char *nv = strdup(value);
    if (!nv) return em__seterr(EM_ENOMEM, "em_conf_set: out of memory");
    for (size_t i = 0; i < c->n; i++) {
        if (strcmp(c->v[i].key, key) == 0) {
            free(c->v[i].val);
            c->v[i].val = nv;
            return 0;
        }
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        struct conf_kv *v = realloc(c->v, cap * sizeof *v);
        if (!v) { free(nv); return em__seterr(EM_ENOMEM, "em_conf_set: out of memory"); }
        c->v = v;
        c->cap = cap;
    }
    char *nk = strdup(key);
    if (!nk) { free(nv); return em__seterr(EM_ENOMEM, "em_conf_set: out of memory"); }
    c->v[c->n].key = nk;
    c->v[c->n].val = nv;
    c->n++;
    return 0;
}

/* Keys ember had and replaced: setting one is refused, naming its
 * successor, rather than as unknown. */
static const struct { const char *key, *instead; } conf_replaced[] = {
    {"ember.shuffle.inMemoryOutput.compress",
     "ember.shuffle.inMemoryOutput.codec (for true use lz4, for false none)"},
};

/* On any failure the conf is unchanged. */
int em_conf_set(em_conf *c, const char *key, const char *value) {
    if (!c || !key || !value) return em__seterr(EM_EINVAL, "em_conf_set: NULL argument");
    const conf_spec *k = conf_lookup(key);
    for (size_t i = 0; !k && i < sizeof conf_replaced / sizeof conf_replaced[0]; i++)
        if (strcmp(key, conf_replaced[i].key) == 0)
            return em__seterr(EM_EINVAL, "configuration key %s was replaced by %s", key, conf_replaced[i].instead);
    if (!k) return em__seterr(EM_EINVAL, "unknown configuration key: %s", key);
    int rc = conf_check(k, value);
    return rc ? rc : put(c, key, value);
}

/* The value set, else the default; NULL for an unknown key.  A NULL conf
 * reads the defaults.  The string belongs to the conf (or the table) and
 * stays valid until the key is set again or the conf is freed. */
const char *em_conf_get(const em_conf *c, const char *key) {
    const conf_spec *k = conf_lookup(key);
    if (!k) return NULL;
    if (c)
        for (size_t i = 0; i < c->n; i++)
            if (strcmp(c->v[i].key, key) == 0) return c->v[i].val;
    return k->def;
}

em_conf *conf_dup(const em_conf *c) {
    em_conf *d = em_conf_new();
    if (!d || !c) return d;
    for (size_t i = 0; i < c->n; i++) {
        if (put(d, c->v[i].key, c->v[i].val) != 0) {
            em_conf_free(d);
            return NULL;
        }
    }
    return d;
}

int conf_from_env(em_conf *c, const char *var) {
    const char *s = getenv(var);
    if (!s || !*s) return 0;
    char line[4096], origin[512] = "", where[600];
    int n = 0;
    while (*s) {
        const char *nl = strchr(s, '\n'), *end = nl ? nl : s + strlen(s);
        size_t len = (size_t)(end - s);
        n++;
        if (origin[0]) snprintf(where, sizeof where, "%s", origin);
        else snprintf(where, sizeof where, "$%s: line %d", var, n);
        if (len >= sizeof line) return em__seterr(EM_EINVAL, "%s is longer than %zu bytes", where, sizeof line - 1);
        memcpy(line, s, len);
        line[len] = 0;
        char *eq = strchr(line, '=');
        if (!strncmp(line, "#from ", 6)) {
            snprintf(origin, sizeof origin, "%.*s", (int)sizeof origin - 1, line + 6);
        } else if (len && line[0] != '#') {
            if (!eq) return em__seterr(EM_EINVAL, "%s: \"%s\" is not KEY=VALUE", where, line);
            *eq = 0;
            if (em_conf_set(c, line, eq + 1)) {
                char why[512];
                em__geterr(why, sizeof why);
                return em__seterr(EM_EINVAL, "%s: %s", where, why);
            }
            origin[0] = 0;
        }
        s = nl ? nl + 1 : end;
    }
    return 0;
}

int conf_set_arg(em_conf *c, const char *kv) {
    char key[256];
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof key)
        return em__seterr(EM_EINVAL, "--conf %s: expected KEY=VALUE", kv);
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = 0;
    return em_conf_set(c, key, eq + 1);
}

int conf_is_set(const em_conf *c, const char *key) {
    for (size_t i = 0; c && i < c->n; i++)
        if (!strcmp(c->v[i].key, key)) return 1;
    return 0;
}

char *conf_lines(const em_conf *c) {
    ebuf b = EBUF_INIT;
    for (size_t i = 0; c && i < c->n; i++) {
        const char *k = c->v[i].key, *v = c->v[i].val;
        if (!strncmp(k, "ember.authenticate.", 19) || strchr(v, '\n')) continue;
        if (ebuf_append(&b, k, strlen(k)) || ebuf_append(&b, "=", 1) || ebuf_append(&b, v, strlen(v)) ||
            ebuf_append(&b, "\n", 1)) {
            ebuf_free(&b);
            em__seterr(EM_ENOMEM, "out of memory");
            return NULL;
        }
    }
    if (ebuf_append(&b, "", 1)) {
        ebuf_free(&b);
        em__seterr(EM_ENOMEM, "out of memory");
        return NULL;
    }
    return (char *)b.p;
}

void conf_each(const em_conf *c, void (*fn)(void *arg, const char *key, const char *value), void *arg) {
    for (size_t i = 0; c && i < c->n; i++) fn(arg, c->v[i].key, c->v[i].val);
}

int conf_redacted(const char *key) {
    static const char *const words[] = {"secret", "password", "token", "accesskey", "access.key", NULL};
    for (int w = 0; words[w]; w++) {
        size_t n = strlen(words[w]);
        for (const char *p = key; *p; p++)
            if (!strncasecmp(p, words[w], n)) return 1;
    }
    return 0;
}

int conf_merge(em_conf *dst, const em_conf *src) {
    for (size_t i = 0; src && i < src->n; i++)
        if (put(dst, src->v[i].key, src->v[i].val)) return em__seterr(EM_ENOMEM, "out of memory");
    return 0;
}

/* --------------------------------------------------------------- getters */

/* The value of a numeric key (checked when set, so it parses). */
static int64_t read_num(const em_conf *c, const char *key, int types) {
    const conf_spec *k = conf_lookup(key);
    EM_ASSERT(k && (types & (1 << k->type)));
    const char *s = em_conf_get(c, key);
    int64_t v = 0;
    int rc = k->type == CONF_INT    ? conf_parse_int(s, &v)
             : k->type == CONF_SIZE ? conf_parse_size(s, &v)
                                    : conf_parse_duration(s, k->unit_ms, &v);
    EM_ASSERT(rc == 0);
    return v;
}

int64_t conf_i64(const em_conf *c, const char *key) {
    return read_num(c, key, 1 << CONF_INT | 1 << CONF_SIZE | 1 << CONF_DURATION);
}

int64_t conf_size(const em_conf *c, const char *key) { return read_num(c, key, 1 << CONF_SIZE); }

int64_t conf_duration_ms(const em_conf *c, const char *key) { return read_num(c, key, 1 << CONF_DURATION); }

double conf_double(const em_conf *c, const char *key) {
    const conf_spec *k = conf_lookup(key);
    EM_ASSERT(k && k->type == CONF_DOUBLE);
    double d = 0;
    int rc = conf_parse_double(em_conf_get(c, key), &d);
    EM_ASSERT(rc == 0);
    return d;
}

bf_codec conf_codec(const em_conf *c) { return conf_codec_of(c, "ember.io.compression.codec"); }

bf_codec conf_codec_of(const em_conf *c, const char *key) {
    const char *p, *e;
    char name[16];
    trim(em_conf_get(c, key), &p, &e);
    size_t n = (size_t)(e - p) < sizeof name ? (size_t)(e - p) : sizeof name - 1;
    memcpy(name, p, n);
    name[n] = 0;
    int id = bf_codec_id_of(name);
    EM_ASSERT(id >= 0); /* the value was one of codec_choices when set */
    bf_codec k = {(uint8_t)id, 0};
    if (id == BF_ZLIB) k.level = (int8_t)conf_i64(c, "ember.shuffle.compress.level");
    if (id == BF_ZSTD) k.level = (int8_t)conf_i64(c, "ember.io.compression.zstd.level");
    if (id == BF_LZ4 || id == BF_AUTO) k.level = (int8_t)conf_i64(c, "ember.io.compression.lz4.acceleration");
    return k;
}

int conf_bool(const em_conf *c, const char *key) {
    const conf_spec *k = conf_lookup(key);
    EM_ASSERT(k && k->type == CONF_BOOL);
    int b = 0;
    int rc = conf_parse_bool(em_conf_get(c, key), &b);
    EM_ASSERT(rc == 0);
    return b;
}
