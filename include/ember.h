/*
 * ember.h -- the public API of ember, a Spark-like dataflow engine in C.
 *
 * This header is the specification: every function a driver program may call
 * is declared and documented here, and nothing else is public.
 *
 * The model.  A driver opens a context (em_open), builds a lineage graph of
 * immutable, partitioned datasets (RDDs) with transformations (em_map,
 * em_reduce_by_key, ...) and runs actions (em_count, em_collect, ...).
 * Transformations are lazy: nothing runs until an action.  An action makes the
 * DAG scheduler cut the graph into stages at shuffle boundaries and run one
 * task per partition on the executors (threads in local[N]).
 *
 * Records.  A record is a byte string; a pair record has a key byte string
 * and a value byte string.  Both are seen through em_rec, a borrowed view that
 * is valid only for the duration of the callback that received it.  The
 * em_*_enc / em_*_dec helpers encode int64 and double so that the byte order
 * of the encoding equals numeric order; int64 keys therefore sort numerically.
 *
 * User functions.  Every transformation takes a function pointer plus an
 * argument blob (arg, arglen).  The blob is copied when the transformation is
 * declared -- it is the function's captured state, like a serialized closure
 * -- and the function receives a pointer to the copy (NULL when arglen is 0).
 * Functions must live in the driver's own executable (static functions are
 * fine) or be exported from a shared library; anything else is rejected when
 * the transformation is declared.  Functions run concurrently on several
 * threads, so they must not modify global state except through accumulators.
 *
 * User functions return 0 on success.  To fail the task, return a negative
 * code, preferably as `return em_fail("what went wrong: %s", x);`, which
 * records the message; the action then returns EM_EJOB and em_errmsg()
 * carries the task's own message.  em_emit() returns EM_STOP (> 0) when the
 * consumer needs no more records (take, first); a function may return that
 * value to stop early, and nothing is lost by ignoring it.
 *
 * Errors.  Functions returning int return 0 (EM_OK) or a negative EM_E* code;
 * functions returning pointers return NULL.  In both cases em_errmsg() gives
 * a message naming the cause (the file, the offset, the failing task) for the
 * calling thread's last failure.  Invalid arguments (NULL pointers, an RDD of
 * another context) give EM_EINVAL, never a crash.
 *
 * Ownership.  RDDs belong to their context and are freed by em_close.
 * Batches and strings an action returns belong to the caller
 * (em_batch_free, free).  Nothing the caller passes in is retained: data is
 * copied.
 *
 * Threads.  Several driver threads may use one context at once: making
 * RDDs, running actions (on their own RDDs or on shared ones), em_set,
 * em_get_stats, accumulators and broadcasts.  Their jobs run at the same
 * time on the one scheduler, started in the order their actions asked and
 * sharing stages: a shuffle two threads' jobs need is computed once and
 * reused.  em_cancel_all, em_set_job_group and em_cancel_job_group may
 * come from any thread, and so may em_close: it cancels the actions other
 * threads are running (they return EM_ECANCELED) and waits for them to
 * return before freeing.  Not allowed: using the context after em_close
 * returns, em_get of a key another thread is em_set-ting, and any action
 * from inside a user function (EM_ESTATE).
 */
#ifndef EMBER_H
#define EMBER_H

#include <stddef.h>
#include <stdint.h>

/* EM_API marks what libember exports.  The library is compiled with
 * -fvisibility=hidden, so libember.so exports exactly the functions declared
 * with it (the em_* API of this header and ember_ml.h), and the static
 * libember.a keeps every other name local but a few named em__ (see
 * docs/architecture.md).  Every name starting with em_ or EM_ is reserved
 * for ember. */
#if defined(__GNUC__)
#define EM_API __attribute__((visibility("default")))
#else
#define EM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define EMBER_VERSION "0.1.0"

/* ---------------------------------------------------------------- errors */

/* One table makes both the codes and their strings (see em_strerror). */
#define EM_ERRNO_MAP(XX)                                               \
    XX(EINVAL, -1, "invalid argument")                                 \
    XX(ENOMEM, -2, "out of memory")                                    \
    XX(EIO, -3, "input/output error")                                  \
    XX(ENOENT, -4, "no such file or directory")                        \
    XX(ECORRUPT, -5, "corrupt data")                                   \
    XX(EUSER, -6, "user function failed")                              \
    XX(EEMPTY, -7, "empty collection")                                 \
    XX(ETOOBIG, -8, "record too large")                                \
    XX(EJOB, -9, "job failed")                                         \
    XX(ESTATE, -10, "invalid state")                                   \
    XX(EPROTO, -11, "protocol error")                                  \
    XX(EFETCH, -12, "shuffle fetch failed")                            \
    XX(EFNREF, -13, "function cannot be named on the wire")           \
    XX(ECANCELED, -14, "job canceled")                                 \
    XX(EAUTH, -15, "authentication failed")                            \
    XX(EEXEC, -16, "no executor can run the application")

enum {
    EM_OK = 0,
    EM_STOP = 1, /* not an error: the consumer wants no more records */
#define EM__ERRDEF(name, val, str) EM_##name = (val),
    EM_ERRNO_MAP(EM__ERRDEF)
#undef EM__ERRDEF
};

/* Static description of a code: "empty collection" for EM_EEMPTY. */
EM_API const char *em_strerror(int code);

/* The message of the calling thread's last failure, with its cause
 * ("text_file: /data/x.gz: truncated gzip input at compressed offset 4096").
 * Never NULL; valid until the thread's next failing call. */
EM_API const char *em_errmsg(void);

/* Record a failure message from inside a user function and return EM_EUSER,
 * so a function can `return em_fail("bad row %d", n);`.  printf format.  A
 * NULL fmt records "user function failed (em_fail called with a NULL
 * format)". */
EM_API int em_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --------------------------------------------------------------- records */

typedef struct em_rec {
    const void *key; /* NULL for a plain record */
    size_t klen;
    const void *val; /* the record's bytes; for a pair, its value */
    size_t vlen;
} em_rec;

/* Order-preserving 8-byte encodings: memcmp order equals numeric order.
 * Each is a function of the library, and a macro of the same name that
 * calls the inline copy below: a function run per record decodes and
 * encodes with no call.  `(em_i64_dec)(p)` and `&em_i64_dec` reach the
 * library's function. */
EM_API void em_i64_enc(int64_t v, void *out8);
EM_API int64_t em_i64_dec(const void *p8);
EM_API void em_f64_enc(double v, void *out8);
EM_API double em_f64_dec(const void *p8);

static __inline__ void em__i64_enc(int64_t v, void *out8) {
    uint64_t u = __builtin_bswap64((uint64_t)v ^ 0x8000000000000000ull); /* byte order = numeric order */
    __builtin_memcpy(out8, &u, 8);
}
static __inline__ int64_t em__i64_dec(const void *p8) {
    uint64_t u;
    __builtin_memcpy(&u, p8, 8);
    return (int64_t)(__builtin_bswap64(u) ^ 0x8000000000000000ull);
}
static __inline__ void em__f64_enc(double v, void *out8) {
    uint64_t u;
    __builtin_memcpy(&u, &v, 8);
    /* Negative numbers: flip all bits; positive: flip the sign bit. */
    u = __builtin_bswap64((u & 0x8000000000000000ull) ? ~u : u ^ 0x8000000000000000ull);
    __builtin_memcpy(out8, &u, 8);
}
static __inline__ double em__f64_dec(const void *p8) {
    uint64_t u;
    double v;
    __builtin_memcpy(&u, p8, 8);
    u = __builtin_bswap64(u);
    u = (u & 0x8000000000000000ull) ? u ^ 0x8000000000000000ull : ~u;
    __builtin_memcpy(&v, &u, 8);
    return v;
}
#define em_i64_enc(v, out8) em__i64_enc(v, out8)
#define em_i64_dec(p8) em__i64_dec(p8)
#define em_f64_enc(v, out8) em__f64_enc(v, out8)
#define em_f64_dec(p8) em__f64_dec(p8)

/* Two optional byte strings in one value: what join, the outer joins and
 * em_tuple_pack produce.  A missing side (outer joins) has present == 0. */
typedef struct em_tuple {
    int a_present, b_present;
    const void *a;
    size_t alen;
    const void *b;
    size_t blen;
} em_tuple;
/* Decode a join value; returns 0, or EM_ECORRUPT if v is not a tuple. */
EM_API int em_tuple_unpack(const void *v, size_t vlen, em_tuple *out);

/* A list of byte strings in one value: what group_by_key and cogroup
 * produce, and what em_glom produces for a whole partition.  Iterate with
 * *pos starting at 0: returns 1 and sets item/len, 0 at the end, EM_ECORRUPT
 * on a malformed list. */
EM_API int em_list_next(const void *list, size_t len, size_t *pos, const void **item, size_t *ilen);
/* The number of items in such a list into *n (Spark's Iterable.size: a
 * PageRank node's out-degree, a group's size) without a call per item.
 * Returns 0, EM_ECORRUPT on a malformed list (*n then 0), EM_EINVAL for a
 * NULL n or a NULL list with len > 0. */
EM_API int em_list_count(const void *list, size_t len, size_t *n);
/* For em_glom's value: the items are whole records, decoded into *rec. */
EM_API int em_list_next_rec(const void *list, size_t len, size_t *pos, em_rec *rec);
/* cogroup's value: the list of values from the first RDD and from the
 * second.  Returns 0 or EM_ECORRUPT. */
EM_API int em_cogroup_unpack(const void *v, size_t vlen, const void **la, size_t *lalen,
                             const void **lb, size_t *lblen);
/* em_cogroup_n's value of n sides: lists[i], lens[i] (arrays of n) get the
 * list of values from the i-th RDD (an empty list, length 0, where the key
 * is absent).  For n == 2 the same as em_cogroup_unpack.  Returns 0,
 * EM_ECORRUPT if v is not a cogroup value of n sides, or EM_EINVAL for
 * n < 1 or NULL arrays. */
EM_API int em_cogroup_unpack_n(const void *v, size_t vlen, int n, const void **lists, size_t *lens);

/* --------------------------------------------------------------- emitting */

typedef struct em_emitter em_emitter;

/* Emit a plain record / a pair / a record.  Data is copied or consumed before
 * the call returns.  Returns 0, EM_STOP when downstream wants no more, or a
 * negative code (e.g. EM_ETOOBIG past ember.record.maxBytes) that the caller
 * should return. */
EM_API int em_emit(em_emitter *out, const void *data, size_t len);
EM_API int em_emit_pair(em_emitter *out, const void *key, size_t klen, const void *val, size_t vlen);
EM_API int em_emit_rec(em_emitter *out, const em_rec *rec);
EM_API int em_emit_i64(em_emitter *out, int64_t v);
EM_API int em_emit_f64(em_emitter *out, double v);
/* The pair (key, encoded int64). */
EM_API int em_emit_pair_i64(em_emitter *out, const void *key, size_t klen, int64_t v);

/* The index of the partition the calling task is computing, -1 outside one. */
EM_API int em_task_partition(void);

/* In a function fed by em_text_file (directly or through narrow operators):
 * the file the current line comes from and the line's byte offset in the
 * file's text (uncompressed offset for .gz), as Spark's input_file_name.
 * For error messages that must name the file and line.  Returns 0, or
 * EM_ESTATE (with *path NULL and *offset 0) when the calling thread is not
 * reading a text line. */
EM_API int em_task_input(const char **path, uint64_t *offset);
/* The 1-based number of the line starting at byte `offset` of a text file
 * (plain or .gz): 1 + the newlines before it.  Reads the file up to offset,
 * so it is meant for error paths.  Returns the number, or < 0 (EM_ENOENT,
 * EM_EIO, EM_ECORRUPT) with the message set. */
EM_API int64_t em_text_line_number(const char *path, uint64_t offset);

/* --------------------------------------------------------- user functions */

/* map / flat_map / map_values / flat_map_values / key_by: called once per
 * input record; emits output records to out. */
typedef int (*em_map_fn)(const em_rec *in, em_emitter *out, const void *arg);
/* filter: returns 1 to keep, 0 to drop, negative to fail. */
typedef int (*em_pred_fn)(const em_rec *in, const void *arg);
/* Binary combination: reduce (a, b), fold and aggregate (acc, record),
 * reduce_by_key and friends (value, value).  Emits exactly one record.  For
 * the *_by_key operations a and b are plain records holding values. */
typedef int (*em_comb_fn)(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg);

/* Builtin combine functions, for the common aggregations: pass them like
 * any em_comb_fn (em_reduce_by_key(rdd, em_sum_i64, NULL, 0, 0), em_reduce,
 * em_fold_by_key, ...).  Values are 8-byte encodings (em_i64_enc,
 * em_f64_enc).  In a shuffle (reduce_by_key, fold_by_key, aggregate_by_key
 * and combine_by_key with the same builtin for both merges) the engine
 * recognises them and combines in place, with no call or emitter per record.
 * A value of another length fails the task with EM_EINVAL naming the
 * function.  Sums wrap around on int64 overflow (as Spark's Long); the
 * double minimum and maximum are NaN when either side is NaN (Java's
 * Math.min and Math.max). */
EM_API int em_sum_i64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg);
EM_API int em_min_i64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg);
EM_API int em_max_i64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg);
EM_API int em_sum_f64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg);
EM_API int em_min_f64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg);
EM_API int em_max_f64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg);

/* A pull iterator over one partition's records (map_partitions,
 * foreach_partition).  Returns 1 with *rec set, 0 at the end, or < 0. */
typedef struct em_iter em_iter;
EM_API int em_iter_next(em_iter *it, em_rec *rec);
typedef int (*em_part_fn)(int partition, em_iter *in, em_emitter *out, const void *arg);
typedef int (*em_foreach_fn)(const em_rec *rec, const void *arg);
typedef int (*em_foreach_part_fn)(int partition, em_iter *in, const void *arg);
/* zip_partitions: partition i of both RDDs, each through its iterator. */
typedef int (*em_zip_part_fn)(int partition, em_iter *a, em_iter *b, em_emitter *out, const void *arg);

/* --------------------------------------------------------------- context */

typedef struct em_ctx em_ctx;
typedef struct em_conf em_conf;
typedef struct em_rdd em_rdd;

/* Configuration: string keys and values.  Keys, their types and allowed
 * values, and their defaults (also in docs/configuration.md):
 *   ember.master                  string    local[*]  (overridden by em_open's
 *                                 argument, and by EMBER_MASTER when NULL;
 *                                 the URL is checked by em_open)
 *   ember.app.name                string    ember
 *   ember.default.parallelism     0..1048576  0: the number of executor
 *                                 cores
 *   ember.task.maxFailures        >= 1      4         attempts per task
 *   ember.record.maxBytes         1k..255m  67108864  largest record a
 *                                 function may emit (a record must fit in
 *                                 one 256 MiB block)
 *   ember.shuffle.memoryBytes     128k..1t  67108864  per-task budget for
 *                                 aggregation and sorting; past it, sorted
 *                                 runs spill (below the floor nearly every
 *                                 record would spill)
 *   ember.shuffle.blockBytes      4k..64m   65536     uncompressed size of
 *                                 shuffle and spill blocks
 *   ember.io.compression.codec    auto, lz4, zstd, zlib, prefix, none  auto
 *                                 codec of shuffle and spill blocks
 *                                 (Spark's spark.io.compression.codec;
 *                                 prefix: ember's front coding; auto: per
 *                                 block, prefix where it shrinks to 60%,
 *                                 else lz4, Spark's default)
 *   ember.shuffle.inMemoryOutput.codec  the same names  prefix  codec of
 *                                 the map outputs local[N] keeps in memory
 *   ember.io.compression.zstd.level -7..22  1         zstd's level (Spark's
 *                                 default)
 *   ember.shuffle.compress.level  0..9      1         zlib's level (only
 *                                 when the codec is zlib)
 *   ember.shuffle.minNumPartitionsToHighlyCompress 1..1048576 2000  a map
 *                                 output's sizes: a byte per segment up to
 *                                 this many partitions, highly compressed
 *                                 past it
 *   ember.shuffle.accurateBlockThreshold size 100m   highly compressed:
 *                                 a segment larger keeps its own size
 *   ember.files.maxPartitionBytes >= 1k     33554432  largest text_file split
 *   ember.local.dir               string    /tmp      where shuffle files and
 *                                 spills go
 *   ember.checkpoint.dir          string    (unset)   where em_checkpoint
 *                                 writes (Spark 4's spark.checkpoint.dir)
 *   ember.cleaner.referenceTracking.cleanCheckpoints bool false  remove a
 *                                 checkpointed RDD's files when it is freed
 *   ember.progress                auto, true, false   auto: the progress
 *                                 bar when stderr is a terminal
 *   ember.speculation             bool      false     speculative copies of
 *                                 slow tasks; first to finish wins
 *   ember.speculation.interval    1ms..1h   100ms     how often to look
 *   ember.speculation.multiplier  1..1e6    3         slow: running longer
 *                                 than this x the median success
 *   ember.speculation.quantile    0..1      0.9       share of a stage's
 *                                 tasks done before speculating
 *   ember.speculation.minTaskRuntime 0..1h  100ms     never speculate earlier
 *   ember.ui.enabled              bool      true      the UI and /api/v1
 *   ember.ui.port                 0..65535  4040      the UI's first port
 *   ember.port.maxRetries         0..1000   16        ports tried above it
 *   ember.ui.retainedJobs         >= 1      1000      jobs the UI keeps
 *   ember.ui.retainedStages       >= 1      1000      stage attempts kept
 *   ember.ui.retainedTasks        >= 1      100000    tasks kept per stage
 *                                 attempt
 *   ember.ui.retainedDeadExecutors >= 0     100       removed executors kept
 *   ember.ui.prometheus.enabled   bool      false     executors' metrics at
 *                                 /metrics/executors/prometheus
 *   ember.eventLog.enabled        bool      false     write Spark's event log
 *   ember.eventLog.dir            path /tmp/ember-events  where (must exist)
 *   ember.eventLog.compress       bool      false     compress it ...
 *   ember.eventLog.compression.codec zstd|lz4 zstd    ... with this codec
 *   ember.eventLog.rolling.enabled bool     false     eventlog_v2_ directory
 *   ember.eventLog.rolling.maxFileSize >= 1k 128m     its files' size
 *   ember.eventLog.overwrite      bool      false     replace a finished log
 *   ember.scheduler.listenerbus.eventqueue.capacity >= 1 10000  task events
 *                                 queued for the UI and the log
 *   ember.history.*               the history server's (docs/monitoring.md)
 *   ember.test.faults             fault spec  ""   tests only: injected
 *                                 failures, delays and corrupt shuffle
 *                                 output (docs/configuration.md)
 * Sizes are whole numbers of bytes with an optional suffix k, m, g or t, with
 * or without b, in any case (binary: 1kb = 1024): "65536", "64k", "8mb".
 * Durations are whole numbers with ms, s, m or h; a bare number counts the
 * key's documented unit (ms).  Booleans are true or false in any case.
 * Decimals are finite numbers such as 3 or 0.9.
 * Strings must not be empty; blanks around any other value are ignored. */
EM_API em_conf *em_conf_new(void);
/* Set key to value (copied; stored as given).  Returns 0, or EM_EINVAL for a
 * NULL argument, an unknown key, or a value malformed or out of range for
 * its key, with a message naming the key, the value and what is allowed; or
 * EM_ENOMEM.  On failure the conf is unchanged. */
EM_API int em_conf_set(em_conf *conf, const char *key, const char *value);
EM_API const char *em_conf_get(const em_conf *conf, const char *key);
EM_API void em_conf_free(em_conf *conf);
/* Take the configuration flags out of a driver program's command line, as
 * spark-submit does: every "--conf KEY=VALUE" in argv[1 .. *argc-1] before
 * a "--" is set in conf (em_conf_set) and removed from argv.  The other
 * arguments, and "--" with all that follows it, keep their order; *argc
 * counts what is left and argv[*argc] is NULL.  Returns 0; or, at the
 * first bad flag, EM_EINVAL with the message "--conf needs KEY=VALUE" (no
 * pair follows), "--conf 'KV': expected KEY=VALUE" (no key, no '=') or
 * "--conf KV: " and em_conf_set's message, or EM_ENOMEM; then argv and
 * *argc are unchanged and conf holds the flags before the bad one.
 * EM_EINVAL for a NULL conf or argc. */
EM_API int em_conf_parse_args(em_conf *conf, int *argc, char **argv);

/* Open a context.  master: "local", "local[N]", "local[*]", or NULL for
 * $EMBER_MASTER, then ember.master.  conf may be NULL; it is copied.
 * Returns NULL (see em_errmsg) on a bad master URL or configuration. */
EM_API em_ctx *em_open(const char *master, const em_conf *conf);
/* Cancel the jobs running (other threads' actions return EM_ECANCELED;
 * em_close waits until they have returned, and until every task attempt,
 * including a speculative loser still in a user function, has ended), stop
 * executors, remove shuffle and spill files, free every RDD.  A context's scratch directory (ember-PID-XXXXXX under ember.local.dir) is
 * also removed when the process exits without em_close (exit, return from
 * main) and on SIGINT or SIGTERM: the first em_open installs, for each of
 * the two whose disposition is still the default, a handler that removes
 * the directories and re-raises the signal (a signal the program ignores or
 * handles itself is left alone).  em_open also sweeps directories left by
 * processes of the same user that no longer run (SIGKILL, a crash). */
EM_API void em_close(em_ctx *ctx);
/* Change a setting of an open context, for the jobs started afterwards (not
 * ember.master or ember.local.dir).  Checks the value as em_conf_set does:
 * 0, EM_EINVAL (message naming key, value and what is allowed; the setting
 * keeps its value) or EM_ENOMEM. */
EM_API int em_set(em_ctx *ctx, const char *key, const char *value);
EM_API const char *em_get(em_ctx *ctx, const char *key);
/* Number of executor cores (threads in local[N]). */
EM_API int em_cores(em_ctx *ctx);
/* Cancel the jobs running on ctx now: their running task attempts are
 * killed (at their next check between record batches; a user function that
 * never returns cannot be interrupted) and their actions return
 * EM_ECANCELED.  Jobs started after the call run normally.  Any thread may
 * call it (a watchdog thread, say); it returns at once. */
EM_API void em_cancel_all(em_ctx *ctx);
/* Job groups, as Spark's setJobGroup / cancelJobGroup.  em_set_job_group
 * names the group of the jobs the calling thread's actions start on ctx
 * from now on (NULL or "": none; at most 127 bytes, else EM_EINVAL); each
 * thread has its own.  em_cancel_job_group cancels the running jobs of
 * that group, from any thread: their actions return EM_ECANCELED with a
 * message naming the group.  It returns how many jobs it canceled (0 when
 * none runs), or < 0. */
EM_API int em_set_job_group(em_ctx *ctx, const char *group);
EM_API int em_cancel_job_group(em_ctx *ctx, const char *group);

/* Counters since em_open, for tests and monitoring.  Each field is read
 * atomically, not all of them at one instant; but the gauges ("now") are
 * read first, so a snapshot whose tasks_running is 0 holds every count of
 * the attempts that ended before it (tasks_run, tasks_killed, ...). */
typedef struct em_stats {
    int64_t jobs;             /* actions run (including internal jobs) */
    int64_t stages_run;       /* stages that ran at least one task */
    int64_t stages_skipped;   /* stages whose shuffle output was reused */
    int64_t tasks_run;        /* task attempts finished (ok or failed) */
    int64_t map_tasks_run;    /* attempts of shuffle map tasks */
    int64_t tasks_failed;     /* attempts that failed */
    int64_t tasks_killed;     /* attempts killed (a failed or canceled job's,
                                 a speculation's loser) */
    int64_t tasks_speculative;/* speculative attempts launched */
    int64_t speculative_wins; /* tasks a speculative attempt finished first */
    int64_t commits_denied;   /* output attempts refused by the commit
                                 coordinator (another attempt committed) */
    int64_t shuffle_bytes_written; /* compressed bytes of shuffle files */
    int64_t shuffle_records_written;
    int64_t spills;           /* sorted runs spilled to disk */
    int64_t input_bytes;      /* bytes read by text_file sources */
    int64_t cache_hits;       /* partitions served from the cache */
    int64_t jobs_active;      /* now: actions running (their jobs posted to
                                 the scheduler and not yet returned) */
    int64_t tasks_local;      /* attempts launched on the executor that holds
                                 their input partition in its cache */
    int64_t tasks_running;    /* now: task attempts running, with the losers
                                 of finished jobs still ending in the
                                 background */
    /* Now, for watching a long-lived driver stay flat: */
    int64_t live_rdds;        /* RDDs not yet freed (em_rdd_release) */
    int64_t live_shuffles;    /* shuffles whose outputs are tracked */
    int64_t live_stages;      /* map stages the scheduler keeps */
    int64_t scratch_bytes;    /* bytes of files in the scratch directory */
    int64_t shuffle_memory_outputs; /* map outputs kept in memory instead of
                                       files (local[N]; see
                                       ember.shuffle.inMemoryOutput) ... */
    int64_t shuffle_memory_bytes;   /* ... and their bytes */
    int64_t shuffle_segments_fetched;    /* cluster mode: shuffle segments
                                            reduce tasks fetched from other
                                            executors or shuffle services
                                            over the network ... */
    int64_t shuffle_segments_host_local; /* ... and those they read from
                                            the files of another executor
                                            of their host instead
                                            (ember.shuffle.readHostLocalDisk) */
    int64_t stage_attempts_failed;       /* stage attempts that failed on a
                                            fetch failure (a lost map output
                                            they read) */
    int64_t faults_fired;                /* ember.test.faults rules that took
                                            effect (fail, delay, corrupt,
                                            commit, delaycommit, hold,
                                            holdcommit, holdmove, holdend:
                                            one per attempt they struck;
                                            dropfetch: one per request
                                            dropped), in local threads and
                                            executor processes alike */
    int64_t shuffle_fetch_retries;       /* cluster mode: shuffle segment
                                            requests sent again after their
                                            connection failed ... */
    int64_t shuffle_fetch_conns_dropped; /* ... and fetch connections that
                                            closed or failed with a request
                                            unanswered (one per connection,
                                            however many requests it held) */
} em_stats;
EM_API void em_get_stats(em_ctx *ctx, em_stats *out);
/* The address of the context's web UI and REST API ("http://HOST:PORT",
 * Spark's uiWebUrl), valid until em_close; NULL when ember.ui.enabled is
 * false (or ctx is NULL). */
EM_API const char *em_ui_url(em_ctx *ctx);

/* --------------------------------------------------------------- sources */

/* n records from recs (plain when key == NULL, else pairs), split into
 * `partitions` contiguous slices (<= 0: ember.default.parallelism, and
 * without it the number of executor cores; the same for em_range and
 * em_text_file's min_partitions). */
EM_API em_rdd *em_parallelize(em_ctx *ctx, const em_rec *recs, size_t n, int partitions);
/* Convenience forms: int64 records, and NUL-terminated strings. */
EM_API em_rdd *em_parallelize_i64(em_ctx *ctx, const int64_t *v, size_t n, int partitions);
EM_API em_rdd *em_parallelize_str(em_ctx *ctx, const char *const *s, size_t n, int partitions);
/* An RDD with no partitions (Spark's emptyRDD): actions over it run no
 * task; fold, aggregate and tree_aggregate return their zero. */
EM_API em_rdd *em_empty(em_ctx *ctx);
/* The int64 records start, start+step, ... up to end (exclusive), any
 * int64 bounds and step (step 0 is EM_EINVAL). */
EM_API em_rdd *em_range(em_ctx *ctx, int64_t start, int64_t end, int64_t step, int partitions);
/* Drop the caller's reference to rdd (every function returning an RDD
 * gives the caller one).  The RDD is freed once nothing refers to it: no
 * RDD made from it, no running job.  When a shuffled RDD is freed its
 * shuffle's files are removed; when a persisted one is, its cached blocks.
 * So a long-lived driver that releases what it no longer needs keeps flat
 * memory and scratch disk.  The caller must not use rdd afterwards (RDDs
 * made from it stay valid).  NULL is ignored; from inside a user function
 * it does nothing.  Without it, RDDs live until em_close. */
EM_API void em_rdd_release(em_rdd *rdd);
/* Lines of a text file, of every file in a directory, or of every file a
 * glob pattern matches, without their line terminators ("\n" or "\r\n").
 * Files ending in .gz are read through zlib, one partition per file; plain
 * files are split by byte range into about max(min_partitions, size /
 * ember.files.maxPartitionBytes) partitions, each line read exactly once.
 * Names starting with '.' or '_' in a directory are skipped (_SUCCESS).  A
 * directory with no files gives an RDD of no partitions, as Spark does.  A
 * missing path, or a glob matching nothing, is reported here (NULL);
 * unreadable or corrupt input is reported by the action, naming the file and
 * offset.  .gz files must be gzip (a bare zlib stream is corrupt input);
 * concatenated members and zero padding after the last are read. */
EM_API em_rdd *em_text_file(em_ctx *ctx, const char *path, int min_partitions);
/* Spark's wholeTextFiles: one (path, content) pair per file of path (a
 * file, a directory's files not starting with '.' or '_', or a glob, as
 * em_text_file takes them, in sorted order), the path absolute.  Files
 * whose name ends in ".gz" are inflated.  Consecutive files share a
 * partition: min(files, min_partitions) partitions (<= 0: the default
 * parallelism); an empty directory gives an empty RDD.  NULL with the
 * message naming path when it does not exist; a file that cannot be read
 * when the task runs, or that is larger than ember.record.maxBytes, fails
 * the job naming it. */
EM_API em_rdd *em_whole_text_files(em_ctx *ctx, const char *path, int min_partitions);

/* ------------------------------------------------- narrow transformations */

EM_API em_rdd *em_map(em_rdd *rdd, em_map_fn fn, const void *arg, size_t arglen);  /* exactly one output */
EM_API em_rdd *em_filter(em_rdd *rdd, em_pred_fn fn, const void *arg, size_t arglen);
EM_API em_rdd *em_flat_map(em_rdd *rdd, em_map_fn fn, const void *arg, size_t arglen);
/* fn sees the partition's records through a pull iterator. */
EM_API em_rdd *em_map_partitions(em_rdd *rdd, em_part_fn fn, const void *arg, size_t arglen);
/* Spark's pipe: each partition's records written, one line each ("key\tvalue"
 * for pairs), to the stdin of an external command started for the
 * partition, whose stdout lines (without "\n") become the partition's
 * plain records.  argv: the command (looked up in PATH) and its arguments,
 * NULL-terminated, run without a shell; env: "NAME=value" entries added to
 * the environment, NULL-terminated, or NULL.  The command gets no
 * descriptor but its stdin, stdout and stderr.  Input and output flow at
 * once, so any amount of either works.  A command that exits with a status other
 * than 0 or dies of a signal fails the task with the command, the status
 * and the end of its stderr; one that cannot be started fails it naming
 * why.  A command that never ends holds its task (kills do not reach it). */
EM_API em_rdd *em_pipe(em_rdd *rdd, const char *const *argv, const char *const *env);
/* On pairs: fn sees the value as a plain record and emits plain records
 * (exactly one for map_values); each becomes a pair with the original key. */
EM_API em_rdd *em_map_values(em_rdd *rdd, em_map_fn fn, const void *arg, size_t arglen);
EM_API em_rdd *em_flat_map_values(em_rdd *rdd, em_map_fn fn, const void *arg, size_t arglen);
/* fn emits one plain record, the key; the output is the pair (key, record
 * bytes).  The input record should be plain. */
EM_API em_rdd *em_key_by(em_rdd *rdd, em_map_fn fn, const void *arg, size_t arglen);
/* Keys or values of a pair RDD, as plain records. */
EM_API em_rdd *em_keys(em_rdd *rdd);
EM_API em_rdd *em_values(em_rdd *rdd);
/* Partitions of a followed by partitions of b. */
EM_API em_rdd *em_union(em_rdd *a, em_rdd *b);
/* One record per partition: a list (em_list_next_rec) of its records. */
EM_API em_rdd *em_glom(em_rdd *rdd);
/* The pair (x, y) for every record x of a and y of b (Spark's cartesian),
 * plain records (a pair fails the task).  Partition i * nb + j pairs a's
 * partition i with b's j (nb: b's count), without a shuffle; each task
 * holds b's partition in memory.  NULL (EM_EINVAL) for NULL RDDs, RDDs of
 * different contexts, or more than INT_MAX partitions. */
EM_API em_rdd *em_cartesian(em_rdd *a, em_rdd *b);
/* The pairs (a_k, b_k) of the k-th records of partition i of each, without
 * a shuffle (Spark's zip), plain records.  Both must have as many
 * partitions (else NULL here, EM_EINVAL naming both counts) and as many
 * records in each partition (else the task fails, naming the partition
 * and both sizes).  Each task holds b's partition in memory. */
EM_API em_rdd *em_zip(em_rdd *a, em_rdd *b);
/* fn(i, iterator over a's partition i, iterator over b's, out, arg) emits
 * partition i (Spark's zipPartitions).  Equal partition counts, else NULL
 * (EM_EINVAL naming both).  Both partitions are held in memory. */
EM_API em_rdd *em_zip_partitions(em_rdd *a, em_rdd *b, em_zip_part_fn fn, const void *arg, size_t arglen);
/* Deterministic sample for a given seed: Bernoulli with probability
 * fraction (without replacement), or Poisson(fraction) copies (with). */
EM_API em_rdd *em_sample(em_rdd *rdd, int with_replacement, double fraction, uint64_t seed);
/* Merge contiguous partitions into n, without a shuffle (n >= current:
 * unchanged partitioning). */
EM_API em_rdd *em_coalesce(em_rdd *rdd, int n);
/* Pairs (record bytes, int64 index) numbered in partition order.  Like
 * Spark, this runs a job to count the partitions first (NULL on failure). */
EM_API em_rdd *em_zip_with_index(em_rdd *rdd);
/* Pairs (record bytes, int64 id), Spark's zipWithUniqueId: the i-th
 * record of partition k of n gets k + i * n.  Unique, not consecutive; no
 * job runs.  Plain records (a pair fails the task). */
EM_API em_rdd *em_zip_with_unique_id(em_rdd *rdd);
/* Split rdd into n RDDs (out[0..n)), Spark's randomSplit: weights (n >= 1
 * finite numbers >= 0, not all 0) are normalized to ranges of [0, 1); each
 * record gets one uniform draw from a generator seeded by seed and its
 * partition, and goes to the split whose range holds it.  So the splits
 * are disjoint, together hold every record once, and are the same for the
 * same seed (given a parent whose partitions come out in the same order).
 * No job runs here; each split recomputes the parent (cache it to compute
 * it once).  0, or EM_EINVAL (message naming the weight) with out[] NULL. */
EM_API int em_random_split(em_rdd *rdd, const double *weights, int n, uint64_t seed, em_rdd **out);

/* --------------------------------------------------- wide transformations */
/* partitions <= 0 means: the parent's partition count (or
 * ember.default.parallelism when set explicitly); with several parents
 * (cogroup, the joins, intersection), the largest parent's count, as
 * Spark's defaultPartitioner.  Only em_repartition requires a count (>= 1).
 * Pair input expected where the operation works by key.
 *
 * Partitioner awareness, as Spark's: an RDD made by a hash shuffle
 * (em_partition_by, the by-key operations, the joins, cogroup) or by
 * em_filter, em_map_values or em_flat_map_values over one is
 * hash-partitioned.  The by-key operations (reduce, aggregate, fold,
 * combine, group) over a hash-partitioned RDD with partitions <= 0 take its
 * count, and with the same count run with no shuffle: each partition is
 * aggregated where it is (em_lineage shows no stage boundary; no map task
 * runs).  Cogroup and the joins (Spark's CoGroupedRDD) read an input
 * hash-partitioned into their count one-to-one, in their own task (a narrow
 * dependency), and shuffle only the other inputs; with partitions <= 0 they
 * take the count of the largest input that has a partitioner. */

/* Merge the values of each key with fn (associative, commutative), with
 * map-side combining. */
EM_API em_rdd *em_reduce_by_key(em_rdd *rdd, em_comb_fn fn, const void *arg, size_t arglen, int partitions);
/* Per key: acc = seq(zero, v) ..., partial accs merged with comb. */
EM_API em_rdd *em_aggregate_by_key(em_rdd *rdd, const void *zero, size_t zlen, em_comb_fn seq,
                                   em_comb_fn comb, const void *arg, size_t arglen, int partitions);
/* create(v) makes a combiner (emits one record) from the first value of a key
 * in a partition; merge_value(c, v) adds a value; merge_comb(c1, c2) merges. */
EM_API em_rdd *em_combine_by_key(em_rdd *rdd, em_map_fn create, em_comb_fn merge_value,
                                 em_comb_fn merge_comb, const void *arg, size_t arglen, int partitions);
EM_API em_rdd *em_fold_by_key(em_rdd *rdd, const void *zero, size_t zlen, em_comb_fn fn,
                              const void *arg, size_t arglen, int partitions);
/* (key, list of values), the list read with em_list_next. */
EM_API em_rdd *em_group_by_key(em_rdd *rdd, int partitions);
/* (key, cogroup value) for every key of a or b; see em_cogroup_unpack. */
EM_API em_rdd *em_cogroup(em_rdd *a, em_rdd *b, int partitions);
/* The same over n RDDs (2 <= n <= 16; Spark's cogroup takes up to 4):
 * (key, value of n lists) for every key of any of them, the i-th list
 * holding the i-th RDD's values of the key, empty where it has none; read
 * with em_cogroup_unpack_n.  One RDD: an input not hash-partitioned into
 * its count is shuffled, the others read one-to-one.  NULL (EM_EINVAL) for n out of
 * range, a NULL RDD or RDDs of different contexts. */
EM_API em_rdd *em_cogroup_n(em_rdd *const *rdds, int n, int partitions);
/* (key, tuple(va, vb)) for every pair of values of a key present in both
 * (the cross product per key); the outer joins also emit keys present in
 * one side only, with the other side missing in the tuple. */
EM_API em_rdd *em_join(em_rdd *a, em_rdd *b, int partitions);
EM_API em_rdd *em_left_outer_join(em_rdd *a, em_rdd *b, int partitions);
EM_API em_rdd *em_right_outer_join(em_rdd *a, em_rdd *b, int partitions);
EM_API em_rdd *em_full_outer_join(em_rdd *a, em_rdd *b, int partitions);
/* Each distinct record (plain or pair) once. */
EM_API em_rdd *em_distinct(em_rdd *rdd, int partitions);
/* The distinct records (plain or pair) present in both a and b, once
 * each, as Spark's intersection (a cogroup of the records as keys). */
EM_API em_rdd *em_intersection(em_rdd *a, em_rdd *b, int partitions);
/* The records of a not present in b, keeping a's duplicates (Spark's
 * subtract).  partitions <= 0: a's partition count (Spark's). */
EM_API em_rdd *em_subtract(em_rdd *a, em_rdd *b, int partitions);
/* The pairs of a whose key b lacks (Spark's subtractByKey; b's values are
 * ignored).  partitions <= 0: a's partition count. */
EM_API em_rdd *em_subtract_by_key(em_rdd *a, em_rdd *b, int partitions);
/* The records sorted by the key fn emits for each (as em_key_by), in
 * ascending or descending byte order of the keys (Spark's sortBy): the
 * records themselves, without the keys.  Runs a sampling job, as
 * em_sort_by_key. */
EM_API em_rdd *em_sort_by(em_rdd *rdd, em_map_fn fn, const void *arg, size_t arglen, int ascending,
                          int partitions);
/* (key, list of the records with that key), the key emitted by fn for each
 * record (as em_key_by): Spark's groupBy. */
EM_API em_rdd *em_group_by(em_rdd *rdd, em_map_fn fn, const void *arg, size_t arglen, int partitions);
/* Sorted by key bytes (int64 keys: numerically), globally: partition i's keys
 * all precede partition i+1's.  Range partitioner from sampled keys. */
EM_API em_rdd *em_sort_by_key(em_rdd *rdd, int ascending, int partitions);
/* Hash-partition pairs by key into `partitions`. */
EM_API em_rdd *em_partition_by(em_rdd *rdd, int partitions);
/* Redistribute any records evenly over `partitions` (>= 1, else NULL with
 * EM_EINVAL, as Spark's) with a shuffle: each input partition deals its
 * records round robin, starting at a position drawn from a generator
 * seeded with the partition's index (Spark's), so even short input
 * partitions fill every output partition alike. */
EM_API em_rdd *em_repartition(em_rdd *rdd, int partitions);

/* ------------------------------------------------------------ persistence */

enum { EM_MEMORY_ONLY = 1, EM_MEMORY_AND_DISK = 2, EM_DISK_ONLY = 3 };
/* Keep computed partitions (in memory, or in files under ember.local.dir) the
 * first time an action computes them; later actions read them.  Returns rdd. */
EM_API em_rdd *em_cache(em_rdd *rdd);
EM_API em_rdd *em_persist(em_rdd *rdd, int level);
/* Drop kept partitions; later actions recompute them from lineage. */
EM_API int em_unpersist(em_rdd *rdd);

/* ------------------------------------------------------------ checkpoints */

/* Mark rdd for checkpointing (Spark's reliable RDD.checkpoint): after the
 * next action that computes it succeeds, one more job writes each of its
 * partitions to a file under ember.checkpoint.dir (in
 * checkpoint-XXXXXX/rdd-ID/part-NNNNN, each with a CRC32 of its records,
 * written under a temporary name and linked into place, so a file is
 * complete or absent), and then its lineage is truncated: the RDD reads
 * its files from then on, its parents are dropped (and freed, with their
 * shuffle files and cached blocks, when nothing else refers to them), and
 * em_lineage shows the files instead of the lineage.  For long iterative
 * jobs, whose lineage would otherwise grow with every step.
 *
 * As Spark asks, call it before the first action on rdd (a call after one
 * takes effect at the next action), and persist rdd first (em_persist):
 * the writing job then reads the cached partitions instead of computing
 * them a second time.  Partitions must be deterministic, as for any
 * recomputation.  The directory must be one every executor can write and
 * read at the same path: any directory on one machine (local[N],
 * local-cluster), shared storage (NFS, a cluster file system) in a real
 * cluster.  A checkpoint file found missing or corrupt by a later job
 * fails that job, naming the file (the lineage that could recompute it is
 * gone).  The files are kept after em_close unless
 * ember.cleaner.referenceTracking.cleanCheckpoints is true (Spark's
 * default false); then an RDD's files are removed when it is freed
 * (em_rdd_release, em_close).
 *
 * Returns 0 (also when rdd is already marked or checkpointed), EM_ESTATE
 * when ember.checkpoint.dir is not set or when called from inside a user
 * function, EM_EIO when the directory cannot be made, EM_EINVAL for NULL.
 * A failure writing the files makes the action that triggered it fail
 * with the cause, and leaves rdd marked for the next action. */
EM_API int em_checkpoint(em_rdd *rdd);
/* 1 when rdd's checkpoint is written and its lineage truncated, 0 when
 * not (yet), EM_EINVAL for NULL.  Spark's isCheckpointed. */
EM_API int em_is_checkpointed(em_rdd *rdd);
/* The directory holding rdd's checkpoint files (caller frees), or NULL
 * when rdd is not checkpointed (EM_ESTATE in em_errmsg).  Spark's
 * getCheckpointFile. */
EM_API char *em_checkpoint_file(em_rdd *rdd);

/* ---------------------------------------------------------------- batches */

/* Records an action returns, owned by the caller. */
typedef struct em_batch em_batch;
EM_API size_t em_batch_count(const em_batch *b);
/* The i-th record (a view valid until em_batch_free). 0 or EM_EINVAL.  The
 * reading calls (em_batch_get, em_batch_next, em_iter_next,
 * em_list_next_rec) clear *rec first, so it is defined even on failure. */
EM_API int em_batch_get(em_batch *b, size_t i, em_rec *rec);
/* Sequential read: *pos starts at 0; returns 1 with *rec set, 0 at the end. */
EM_API int em_batch_next(const em_batch *b, size_t *pos, em_rec *rec);
EM_API void em_batch_free(em_batch *b);

/* ---------------------------------------------------------------- actions */
/* Every action returns 0 or a negative code (EM_EJOB when a task failed
 * maxFailures times: em_errmsg() then holds the task's own message).  The
 * context stays usable after a failed action. */

EM_API int em_collect(em_rdd *rdd, em_batch **out);
EM_API int em_count(em_rdd *rdd, int64_t *out);
/* The first record; EM_EEMPTY on an empty RDD. */
EM_API int em_first(em_rdd *rdd, em_batch **out);
/* The first n records in partition order, scanning 1 partition, then more
 * (as Spark: up to 4x more per round) only while too few were found. */
EM_API int em_take(em_rdd *rdd, size_t n, em_batch **out);
/* One record (out holds it): EM_EEMPTY ("empty collection") when empty. */
EM_API int em_reduce(em_rdd *rdd, em_comb_fn fn, const void *arg, size_t arglen, em_batch **out);
/* fold returns the zero value for an empty RDD; the zero is copied for each
 * partition and for the final merge. */
EM_API int em_fold(em_rdd *rdd, const em_rec *zero, em_comb_fn fn, const void *arg, size_t arglen,
                   em_batch **out);
EM_API int em_aggregate(em_rdd *rdd, const em_rec *zero, em_comb_fn seq, em_comb_fn comb,
                        const void *arg, size_t arglen, em_batch **out);
/* As Spark: partials combined in `depth` levels (>= 1, default 2 when 0)
 * through small shuffles, the last on the driver. */
EM_API int em_tree_aggregate(em_rdd *rdd, const em_rec *zero, em_comb_fn seq, em_comb_fn comb,
                             const void *arg, size_t arglen, int depth, em_batch **out);
EM_API int em_tree_reduce(em_rdd *rdd, em_comb_fn fn, const void *arg, size_t arglen, int depth,
                          em_batch **out);
EM_API int em_foreach(em_rdd *rdd, em_foreach_fn fn, const void *arg, size_t arglen);
EM_API int em_foreach_partition(em_rdd *rdd, em_foreach_part_fn fn, const void *arg, size_t arglen);
/* Pairs (key, int64 count). */
EM_API int em_count_by_key(em_rdd *rdd, em_batch **out);
/* Pairs (record, int64 count) for each distinct plain record (Spark's
 * countByValue; a pair record fails the job). */
EM_API int em_count_by_value(em_rdd *rdd, em_batch **out);
/* The number of distinct records, estimated (Spark's countApproxDistinct):
 * a HyperLogLog sketch of 2^p registers per partition, p =
 * ceil(2 log2(1.054 / relative_sd)) as Spark's (at least 4), so the
 * estimate's relative standard deviation is about relative_sd; Spark's
 * default is 0.05.  Pairs count as distinct by key and value together.
 * relative_sd must be in [0.0021, 1) (2^18 registers at most): else
 * EM_EINVAL.  0 for an empty RDD. */
EM_API int em_count_approx_distinct(em_rdd *rdd, double relative_sd, int64_t *out);
/* num records drawn at random (Spark's takeSample): without replacement,
 * num distinct ones (all of them, shuffled, when the RDD has no more); with
 * replacement, exactly num (none from an empty RDD).  The same seed gives
 * the same records.  Runs a count, then samples (Spark's fraction, which
 * falls short with probability 1e-4; then it samples again), and shuffles
 * on the driver. */
EM_API int em_take_sample(em_rdd *rdd, int with_replacement, size_t num, uint64_t seed, em_batch **out);
/* Pairs with one record per key (the last value seen for a key). */
EM_API int em_collect_as_map(em_rdd *rdd, em_batch **out);
/* The values of key, as plain records (only the key's partition is scanned
 * when the RDD is hash-partitioned). */
EM_API int em_lookup(em_rdd *rdd, const void *key, size_t klen, em_batch **out);
/* The n smallest / largest records (ordered by key bytes then value bytes). */
EM_API int em_take_ordered(em_rdd *rdd, size_t n, em_batch **out);
EM_API int em_top(em_rdd *rdd, size_t n, em_batch **out);
/* Write each record as one line ("key\tvalue" for pairs) to
 * dir/part-NNNNN, one file per partition, then dir/_SUCCESS.  Files are
 * written under a temporary sibling, dir.ember-tmp-PID/_attempt_TASK/, and
 * moved to dir.ember-tmp-PID/part-NNNNN by the one attempt per partition
 * the commit coordinator allows (first to ask); when all have committed,
 * the sibling is renamed to dir, so dir is complete or absent.  EM_EIO if
 * dir exists. */
EM_API int em_save_as_text_file(em_rdd *rdd, const char *dir);
/* The same, compressed with codec (Spark's saveAsTextFile(path, codec)):
 * "gzip" writes dir/part-NNNNN.gz, each a gzip file (zlib's default
 * level) that gunzip and em_text_file read back; NULL or "none" is
 * em_save_as_text_file.  An empty partition gives a valid empty gzip file.
 * EM_EINVAL for another codec name. */
EM_API int em_save_as_text_file_codec(em_rdd *rdd, const char *dir, const char *codec);

/* ------------------------------------------------------ numeric actions */
/* Over RDDs of 8-byte numbers (Spark's DoubleRDDFunctions): type says how
 * each record's bytes (a pair's value) are read, EM_NUM_I64 (em_i64_enc)
 * or EM_NUM_F64 (em_f64_enc); int64 values are taken as doubles.  A record
 * of another length fails the job (EM_EJOB, naming its length).  One job
 * each; EM_EINVAL for a NULL argument or an unknown type. */
enum { EM_NUM_I64 = 1, EM_NUM_F64 = 2 };
/* Spark's StatCounter.  Of an empty RDD: count 0, sum 0, mean, variances
 * and deviations NaN, max -inf, min +inf.  variance and stdev are the
 * population's (divided by count, Spark's variance()), the sample_ ones
 * divided by count - 1 (NaN below 2 values).  A NaN value makes max, min,
 * mean and the variances NaN. */
typedef struct em_stat_counter {
    int64_t count;
    double sum, mean, variance, stdev, sample_variance, sample_stdev, max, min;
} em_stat_counter;
/* Computed in one pass: partials per partition (Welford's update) merged
 * with Chan's formula, stable however the values are partitioned. */
EM_API int em_num_stats(em_rdd *rdd, int type, em_stat_counter *out);
/* The fields of em_num_stats, each by its own job: sum (0 when empty),
 * mean, population variance and standard deviation (NaN when empty). */
EM_API int em_sum(em_rdd *rdd, int type, double *out);
EM_API int em_mean(em_rdd *rdd, int type, double *out);
EM_API int em_variance(em_rdd *rdd, int type, double *out);
EM_API int em_stdev(em_rdd *rdd, int type, double *out);
/* Spark's histogram(bucketCount): bucket_count (>= 1) even buckets from
 * the minimum to the maximum, computed by one job for the range and one
 * for the counts.  bounds (bucket_count + 1 doubles) and counts
 * (bucket_count) are filled for the *nbuckets buckets made: bucket_count,
 * or 1 ([min, min]) when all values are equal.  Bucket i holds bounds[i]
 * <= x < bounds[i+1]; the last one also x == max.  EM_EEMPTY for an empty
 * RDD, EM_EINVAL when it holds an infinity or NaN (no finite range). */
EM_API int em_histogram(em_rdd *rdd, int type, int bucket_count, double *bounds, int64_t *counts,
                        int *nbuckets);
/* Spark's histogram(buckets): counts[i] (nbounds - 1 of them) is the
 * number of values with bounds[i] <= x < bounds[i+1], the last bucket
 * closed (x == bounds[nbounds-1] counts); values outside and NaN are not
 * counted.  bounds: nbounds >= 2 strictly ascending numbers (else
 * EM_EINVAL naming the bound).  An empty RDD gives zero counts. */
EM_API int em_histogram_buckets(em_rdd *rdd, int type, const double *bounds, int nbounds, int64_t *counts);
/* The largest / smallest record, ordered as em_top orders them (key bytes,
 * then value bytes: numerically for em_i64_enc and em_f64_enc records),
 * for any RDD; out holds one record.  EM_EEMPTY ("empty collection") on an
 * empty RDD. */
EM_API int em_max(em_rdd *rdd, em_batch **out);
EM_API int em_min(em_rdd *rdd, em_batch **out);

/* ------------------------------------------------ broadcast, accumulators */

/* A read-only blob every task can read.  Handles are plain values: capture
 * them in a function's arg blob.  id 0 is never valid. */
typedef struct em_bcast { uint64_t id; } em_bcast;
/* Copies data; on failure returns id 0 (see em_errmsg). */
EM_API em_bcast em_broadcast(em_ctx *ctx, const void *data, size_t len);
/* In a task or on the driver: the blob, or NULL if unknown/destroyed.  The
 * pointer stays valid until em_bcast_destroy or em_close. */
EM_API const void *em_bcast_value(em_bcast b, size_t *len);
/* Free a broadcast of ctx.  Safe at any time from any driver thread: the
 * broadcast is pinned while a job runs (its tasks may hold the pointer), so
 * this waits for the running job to end; jobs started afterwards find it
 * destroyed (em_bcast_value returns NULL).  A broadcast belongs to its
 * context: one of another context, an unknown id, a NULL ctx, or a call
 * from inside a user function is ignored (message set). */
EM_API void em_bcast_destroy(em_ctx *ctx, em_bcast b);

/* Sums that tasks add to and the driver reads.  Each successful task's
 * additions count once, however often it was attempted. */
typedef struct em_acc { uint32_t id; uint32_t type; } em_acc;
EM_API em_acc em_acc_i64(em_ctx *ctx, const char *name);
EM_API em_acc em_acc_f64(em_ctx *ctx, const char *name);
/* From a task (counted when it succeeds) or the driver (counted at once). */
EM_API void em_acc_add_i64(em_acc a, int64_t v);
EM_API void em_acc_add_f64(em_acc a, double v);
EM_API int64_t em_acc_value_i64(em_ctx *ctx, em_acc a);
EM_API double em_acc_value_f64(em_ctx *ctx, em_acc a);

/* ---------------------------------------------------------------- lineage */

EM_API int em_num_partitions(em_rdd *rdd);
/* Name shown in the lineage; returns rdd. */
EM_API em_rdd *em_set_name(em_rdd *rdd, const char *name);
/* A printable lineage, as Spark's toDebugString: one line per RDD, indented
 * one level more at each shuffle (stage boundary).  Caller frees. */
EM_API char *em_lineage(em_rdd *rdd);

#ifdef __cplusplus
}
#endif
#endif /* EMBER_H */
