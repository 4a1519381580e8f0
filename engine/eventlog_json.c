/*
 * eventlog_json.c -- app_event to one line of Spark's event-log JSON and
 * back (see eventlog_json.h for the format and what the reader accepts).
 *
 * The writer follows Spark 3.5's JsonProtocol field by field; the reader
 * looks each field up by name, so field order and unknown fields in the
 * input do not matter.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"
#include "eventlog_json.h"

/* ------------------------------------------------------------------ writer */

static void w_i64(json_writer *w, const char *k, int64_t v) {
    json_w_key_plain(w, k);
    json_w_i64(w, v);
}

static void w_bool(json_writer *w, const char *k, bool v) {
    json_w_key_plain(w, k);
    json_w_bool(w, v);
}

/* A string field; NULL is written as null, as Jackson writes a null String. */
static void w_str(json_writer *w, const char *k, const char *v) {
    json_w_key_plain(w, k);
    if (v) json_w_str(w, v);
    else json_w_null(w);
}

static void w_empty_array(json_writer *w, const char *k) {
    json_w_key_plain(w, k);
    json_w_begin_array(w);
    json_w_end_array(w);
}

static void w_empty_object(json_writer *w, const char *k) {
    json_w_key_plain(w, k);
    json_w_begin_object(w);
    json_w_end_object(w);
}

static void w_ints(json_writer *w, const char *k, const int *v, int n) {
    json_w_key_plain(w, k);
    json_w_begin_array(w);
    for (int i = 0; i < n; i++) json_w_i64(w, v[i]);
    json_w_end_array(w);
}

static void w_props(json_writer *w, const char *k, const ae_prop *p, int n) {
    json_w_key_plain(w, k);
    json_w_begin_object(w);
    for (int i = 0; i < n; i++) {
        json_w_key(w, p[i].key ? p[i].key : "");
        if (p[i].value) json_w_str(w, p[i].value);
        else json_w_null(w);
    }
    json_w_end_object(w);
}

static void w_storage(json_writer *w, const ae_storage *s) {
    json_w_key_plain(w, "Storage Level");
    json_w_begin_object(w);
    w_bool(w, "Use Disk", s->use_disk);
    w_bool(w, "Use Memory", s->use_memory);
    w_bool(w, "Use Off Heap", s->use_offheap);
    w_bool(w, "Deserialized", s->deserialized);
    w_i64(w, "Replication", s->replication);
    json_w_end_object(w);
}

static void w_rdd(json_writer *w, const ae_rdd *r) {
    json_w_begin_object(w);
    w_i64(w, "RDD ID", r->id);
    w_str(w, "Name", r->name);
    w_str(w, "Callsite", r->callsite);
    w_ints(w, "Parent IDs", r->parents, r->nparents);
    w_storage(w, &r->storage);
    w_bool(w, "Barrier", false);
    w_str(w, "DeterministicLevel", "DETERMINATE");
    w_i64(w, "Number of Partitions", r->nparts);
    w_i64(w, "Number of Cached Partitions", r->ncached);
    w_i64(w, "Memory Size", r->mem_size);
    w_i64(w, "Disk Size", r->disk_size);
    json_w_end_object(w);
}

static void w_stage(json_writer *w, const ae_stage *s) {
    json_w_begin_object(w);
    w_i64(w, "Stage ID", s->id);
    w_i64(w, "Stage Attempt ID", s->attempt);
    w_str(w, "Stage Name", s->name);
    w_i64(w, "Number of Tasks", s->ntasks);
    json_w_key_plain(w, "RDD Info");
    json_w_begin_array(w);
    for (int i = 0; i < s->nrdds; i++) w_rdd(w, &s->rdds[i]);
    json_w_end_array(w);
    w_ints(w, "Parent IDs", s->parents, s->nparents);
    w_str(w, "Details", s->details);
    if (s->submit_ms) w_i64(w, "Submission Time", s->submit_ms);
    if (s->complete_ms) w_i64(w, "Completion Time", s->complete_ms);
    if (s->failure) w_str(w, "Failure Reason", s->failure);
    w_empty_array(w, "Accumulables");
    w_i64(w, "Resource Profile Id", 0);
    w_bool(w, "Shuffle Push Enabled", false);
    w_i64(w, "Shuffle Push Mergers Count", 0);
    json_w_end_object(w);
}

static void w_task(json_writer *w, const ae_task *t) {
    json_w_key_plain(w, "Task Info");
    json_w_begin_object(w);
    w_i64(w, "Task ID", t->task_id);
    w_i64(w, "Index", t->index);
    w_i64(w, "Attempt", t->attempt);
    w_i64(w, "Partition ID", t->partition);
    w_i64(w, "Launch Time", t->launch_ms);
    w_str(w, "Executor ID", t->exec_id);
    w_str(w, "Host", t->host);
    w_str(w, "Locality", t->locality);
    w_bool(w, "Speculative", t->speculative);
    w_i64(w, "Getting Result Time", t->getting_result_ms);
    w_i64(w, "Finish Time", t->finish_ms);
    w_bool(w, "Failed", t->failed);
    w_bool(w, "Killed", t->killed);
    w_empty_array(w, "Accumulables");
    json_w_end_object(w);
}

static void w_bm(json_writer *w, const char *k, const char *exec, const char *host, int port) {
    json_w_key_plain(w, k);
    json_w_begin_object(w);
    w_str(w, "Executor ID", exec);
    w_str(w, "Host", host);
    w_i64(w, "Port", port);
    json_w_end_object(w);
}

static void w_end(json_writer *w, const app_event *e) {
    const ae_end *x = &e->end;
    json_w_key_plain(w, "Task End Reason");
    json_w_begin_object(w);
    const char *name = ae_reason_name(x->reason);
    if (x->reason == AE_UNKNOWN_REASON && x->class_name) name = x->class_name;
    w_str(w, "Reason", name);
    switch (x->reason) {
    case AE_FETCH_FAILED:
        if (x->bm_exec[0] || x->bm_host[0]) w_bm(w, "Block Manager Address", x->bm_exec, x->bm_host, x->bm_port);
        w_i64(w, "Shuffle ID", x->shuffle_id);
        w_i64(w, "Map ID", x->map_id);
        w_i64(w, "Map Index", x->map_index);
        w_i64(w, "Reduce ID", x->reduce_id);
        w_str(w, "Message", x->message);
        break;
    case AE_EXCEPTION:
        w_str(w, "Class Name", x->class_name);
        w_str(w, "Description", x->message);
        w_empty_array(w, "Stack Trace");
        w_str(w, "Full Stack Trace", NULL);
        w_empty_array(w, "Accumulator Updates");
        break;
    case AE_COMMIT_DENIED:
        w_i64(w, "Job ID", e->job_id);
        w_i64(w, "Partition ID", e->task.partition);
        w_i64(w, "Attempt Number", e->task.attempt);
        break;
    case AE_EXEC_LOST:
        w_str(w, "Executor ID", x->bm_exec);
        w_bool(w, "Exit Caused By App", x->caused_by_app);
        if (x->message) w_str(w, "Loss Reason", x->message);
        break;
    case AE_KILLED:
        w_str(w, "Kill Reason", x->message);
        w_empty_array(w, "Accumulator Updates");
        break;
    default: break;
    }
    json_w_end_object(w);
}

/* Spark's ExecutorMetricType names, in its order: "Task Executor Metrics"
 * (ember measures none of them per task, so all are 0). */
static const char *const exec_metric_names[] = {
    "JVMHeapMemory", "JVMOffHeapMemory", "OnHeapExecutionMemory", "OffHeapExecutionMemory",
    "OnHeapStorageMemory", "OffHeapStorageMemory", "OnHeapUnifiedMemory", "OffHeapUnifiedMemory",
    "DirectPoolMemory", "MappedPoolMemory", "ProcessTreeJVMVMemory", "ProcessTreeJVMRSSMemory",
    "ProcessTreePythonVMemory", "ProcessTreePythonRSSMemory", "ProcessTreeOtherVMemory",
    "ProcessTreeOtherRSSMemory", "MinorGCCount", "MinorGCTime", "MajorGCCount", "MajorGCTime",
    "TotalGCTime",
};

static const char *const push_metric_names[] = {
    "Corrupt Merged Block Chunks", "Merged Fetch Fallback Count", "Merged Remote Blocks Fetched",
    "Merged Local Blocks Fetched", "Merged Remote Chunks Fetched", "Merged Local Chunks Fetched",
    "Merged Remote Bytes Read", "Merged Local Bytes Read", "Merged Remote Requests Duration",
};

static void w_metrics(json_writer *w, const task_metrics *m) {
    json_w_key_plain(w, "Task Metrics");
    json_w_begin_object(w);
    w_i64(w, "Executor Deserialize Time", m->deser_ms);
    w_i64(w, "Executor Deserialize CPU Time", m->deser_cpu_ns);
    w_i64(w, "Executor Run Time", m->run_ms);
    w_i64(w, "Executor CPU Time", m->cpu_ns);
    w_i64(w, "Peak Execution Memory", m->peak_mem);
    w_i64(w, "Result Size", m->result_size);
    w_i64(w, "JVM GC Time", 0);
    w_i64(w, "Result Serialization Time", 0);
    w_i64(w, "Memory Bytes Spilled", m->mem_spilled);
    w_i64(w, "Disk Bytes Spilled", m->disk_spilled);
    json_w_key_plain(w, "Shuffle Read Metrics");
    json_w_begin_object(w);
    w_i64(w, "Remote Blocks Fetched", m->sr_remote_blocks);
    w_i64(w, "Local Blocks Fetched", m->sr_local_blocks);
    w_i64(w, "Fetch Wait Time", m->sr_fetch_wait_ms);
    w_i64(w, "Remote Bytes Read", m->sr_remote_bytes);
    w_i64(w, "Remote Bytes Read To Disk", m->sr_remote_disk_bytes);
    w_i64(w, "Local Bytes Read", m->sr_local_bytes);
    w_i64(w, "Total Records Read", m->sr_records);
    w_i64(w, "Remote Requests Duration", 0);
    json_w_key_plain(w, "Shuffle Push Read Metrics");
    json_w_begin_object(w);
    for (size_t i = 0; i < sizeof push_metric_names / sizeof *push_metric_names; i++)
        w_i64(w, push_metric_names[i], 0);
    json_w_end_object(w);
    json_w_end_object(w);
    json_w_key_plain(w, "Shuffle Write Metrics");
    json_w_begin_object(w);
    w_i64(w, "Shuffle Bytes Written", m->sw_bytes);
    w_i64(w, "Shuffle Write Time", m->sw_time_ns);
    w_i64(w, "Shuffle Records Written", m->sw_records);
    json_w_end_object(w);
    json_w_key_plain(w, "Input Metrics");
    json_w_begin_object(w);
    w_i64(w, "Bytes Read", m->in_bytes);
    w_i64(w, "Records Read", m->in_records);
    json_w_end_object(w);
    json_w_key_plain(w, "Output Metrics");
    json_w_begin_object(w);
    w_i64(w, "Bytes Written", m->out_bytes);
    w_i64(w, "Records Written", m->out_records);
    json_w_end_object(w);
    w_empty_array(w, "Updated Blocks");
    json_w_end_object(w);
}

static void w_exec_info(json_writer *w, const ae_exec *x) {
    json_w_key_plain(w, "Executor Info");
    json_w_begin_object(w);
    w_str(w, "Host", x->host);
    w_i64(w, "Total Cores", x->cores);
    json_w_key_plain(w, "Log Urls");
    json_w_begin_object(w);
    if (x->stdout_url) w_str(w, "stdout", x->stdout_url);
    if (x->stderr_url) w_str(w, "stderr", x->stderr_url);
    json_w_end_object(w);
    w_empty_object(w, "Attributes");
    w_empty_object(w, "Resources");
    w_i64(w, "Resource Profile Id", 0);
    json_w_end_object(w);
}

static void w_event(json_writer *w, const app_event *e) {
    json_w_begin_object(w);
    w_str(w, "Event", app_event_name(e));
    switch (e->kind) {
    case AE_LOG_START:
        w_str(w, "Spark Version", e->version);
        break;
    case AE_APP_START:
        w_str(w, "App Name", e->app_name);
        if (e->app_id) w_str(w, "App ID", e->app_id);
        w_i64(w, "Timestamp", e->time_ms);
        w_str(w, "User", e->user);
        if (e->attempt_id) w_str(w, "App Attempt ID", e->attempt_id);
        break;
    case AE_APP_END:
        w_i64(w, "Timestamp", e->time_ms);
        break;
    case AE_ENV_UPDATE:
        w_props(w, "JVM Information", e->props[AE_ENV_RUNTIME], e->nprops[AE_ENV_RUNTIME]);
        w_props(w, "Spark Properties", e->props[AE_ENV_SPARK], e->nprops[AE_ENV_SPARK]);
        w_props(w, "Hadoop Properties", e->props[AE_ENV_HADOOP], e->nprops[AE_ENV_HADOOP]);
        w_props(w, "System Properties", e->props[AE_ENV_SYSTEM], e->nprops[AE_ENV_SYSTEM]);
        w_empty_object(w, "Metrics Properties");
        w_props(w, "Classpath Entries", e->props[AE_ENV_CLASSPATH], e->nprops[AE_ENV_CLASSPATH]);
        break;
    case AE_EXEC_ADDED:
        w_i64(w, "Timestamp", e->time_ms);
        w_str(w, "Executor ID", e->exec.id);
        w_exec_info(w, &e->exec);
        break;
    case AE_EXEC_REMOVED:
        w_i64(w, "Timestamp", e->time_ms);
        w_str(w, "Executor ID", e->exec.id);
        w_str(w, "Removed Reason", e->reason);
        break;
    case AE_JOB_START:
        w_i64(w, "Job ID", e->job_id);
        w_i64(w, "Submission Time", e->time_ms);
        json_w_key_plain(w, "Stage Infos");
        json_w_begin_array(w);
        for (int i = 0; i < e->nstages; i++) w_stage(w, &e->stages[i]);
        json_w_end_array(w);
        json_w_key_plain(w, "Stage IDs");
        json_w_begin_array(w);
        for (int i = 0; i < e->nstages; i++) json_w_i64(w, e->stages[i].id);
        json_w_end_array(w);
        w_props(w, "Properties", e->props[0], e->nprops[0]);
        break;
    case AE_JOB_END:
        w_i64(w, "Job ID", e->job_id);
        w_i64(w, "Completion Time", e->time_ms);
        json_w_key_plain(w, "Job Result");
        json_w_begin_object(w);
        w_str(w, "Result", e->failed ? "JobFailed" : "JobSucceeded");
        if (e->failed) {
            json_w_key_plain(w, "Exception");
            json_w_begin_object(w);
            w_str(w, "Message", e->reason);
            w_empty_array(w, "Stack Trace");
            json_w_end_object(w);
        }
        json_w_end_object(w);
        break;
    case AE_STAGE_SUBMITTED:
    case AE_STAGE_COMPLETED: {
        static const ae_stage none;
        json_w_key_plain(w, "Stage Info");
        w_stage(w, e->nstages > 0 ? &e->stages[0] : &none);
        if (e->kind == AE_STAGE_SUBMITTED) w_props(w, "Properties", e->props[0], e->nprops[0]);
        break;
    }
    case AE_TASK_START:
        w_i64(w, "Stage ID", e->stage_id);
        w_i64(w, "Stage Attempt ID", e->stage_attempt);
        w_task(w, &e->task);
        break;
    case AE_TASK_GETTING_RESULT:
        w_task(w, &e->task);
        break;
    case AE_TASK_END:
        w_i64(w, "Stage ID", e->stage_id);
        w_i64(w, "Stage Attempt ID", e->stage_attempt);
        w_str(w, "Task Type", e->shuffle_map ? "ShuffleMapTask" : "ResultTask");
        w_end(w, e);
        w_task(w, &e->task);
        json_w_key_plain(w, "Task Executor Metrics");
        json_w_begin_object(w);
        for (size_t i = 0; i < sizeof exec_metric_names / sizeof *exec_metric_names; i++)
            w_i64(w, exec_metric_names[i], 0);
        json_w_end_object(w);
        if (e->has_metrics) w_metrics(w, &e->metrics);
        break;
    case AE_UNPERSIST_RDD:
        w_i64(w, "RDD ID", e->rdd_id);
        break;
    case AE_BLOCK_MANAGER_ADDED:
        w_bm(w, "Block Manager ID", e->exec.id, e->exec.host, e->exec.port);
        w_i64(w, "Maximum Memory", e->max_mem);
        w_i64(w, "Timestamp", e->time_ms);
        break;
    case AE_BLOCK_UPDATED: {
        char id[48] = "";
        if (e->rdd_id >= 0) snprintf(id, sizeof id, "rdd_%d_%d", e->rdd_id, e->block_part);
        json_w_key_plain(w, "Block Updated Info");
        json_w_begin_object(w);
        w_bm(w, "Block Manager ID", e->exec.id, e->exec.host, e->exec.port);
        w_str(w, "Block ID", id);
        w_storage(w, &e->block_level);
        w_i64(w, "Memory Size", e->block_mem);
        w_i64(w, "Disk Size", e->block_disk);
        json_w_end_object(w);
        break;
    }
    case AE_OTHER:
        break;
    }
    json_w_end_object(w);
}

int evjson_write(const app_event *e, ebuf *out) {
    if (!e || !out || e->kind < AE_LOG_START || e->kind > AE_OTHER)
        return em__seterr(EM_EINVAL, "evjson_write: no event, or an event of unknown kind");
    size_t start = out->len;
    json_writer w;
    json_w_init(&w, out);
    w_event(&w, e);
    int rc = json_w_finish(&w);
    if (rc) out->len = start;
    return rc;
}

/* ------------------------------------------------------------------ reader */

/* The reader's state: the document and the path of object keys down to the
 * field being read, for error messages. */
typedef struct rd {
    const json_doc *d;
    const char *path[8];
    int depth;
} rd;

static void push(rd *r, const char *k) {
    if (r->depth < (int)(sizeof r->path / sizeof *r->path)) r->path[r->depth] = k;
    r->depth++;
}

static void pop(rd *r) { r->depth--; }

static int bad(rd *r, const char *key, const char *what) {
    char where[512];
    size_t n = 0;
    where[0] = '\0';
    int d = r->depth < 8 ? r->depth : 8;
    for (int i = 0; i < d && n < sizeof where; i++)
        n += (size_t)snprintf(where + n, sizeof where - n, "\"%s\".", r->path[i]);
    return em__seterr(EM_ECORRUPT, "event log: %s\"%s\" %s", n < sizeof where ? where : "", key, what);
}

static int r_i64(rd *r, const json_node *o, const char *k, int64_t *dst) {
    const json_node *n = json_get(r->d, o, k);
    if (!n) return 0;
    if (!json_as_i64(n, dst)) return bad(r, k, "is not an integer");
    return 0;
}

static int r_int(rd *r, const json_node *o, const char *k, int *dst) {
    int64_t v;
    const json_node *n = json_get(r->d, o, k);
    if (!n) return 0;
    if (!json_as_i64(n, &v)) return bad(r, k, "is not an integer");
    if (v < INT_MIN || v > INT_MAX) return bad(r, k, "is out of range");
    *dst = (int)v;
    return 0;
}

static int r_metric(rd *r, const json_node *o, const char *k, int64_t *dst) {
    int rc = r_i64(r, o, k, dst);
    if (*dst < 0) *dst = 0;
    return rc;
}

static int r_bool(rd *r, const json_node *o, const char *k, uint8_t *dst) {
    bool b;
    const json_node *n = json_get(r->d, o, k);
    if (!n) return 0;
    if (!json_as_bool(n, &b)) return bad(r, k, "is not a boolean");
    *dst = b;
    return 0;
}

/* A string field: *s (NULL when absent or null), borrowed from the doc. */
static int r_sv(rd *r, const json_node *o, const char *k, const char **s) {
    const json_node *n = json_get(r->d, o, k);
    *s = NULL;
    if (!n || json_is_null(n)) return 0;
    if (!json_as_str(r->d, n, s, NULL)) return bad(r, k, "is not a string");
    return 0;
}

static int r_str(rd *r, const json_node *o, const char *k, char **dst) {
    const char *s;
    int rc = r_sv(r, o, k, &s);
    if (rc || !s) return rc;
    free(*dst);
    *dst = strdup(s);
    return *dst ? 0 : EM_ENOMEM;
}

static void copy_fixed(char *dst, size_t cap, const char *s) {
    size_t n = strlen(s);
    if (n >= cap) {
        n = cap - 1;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static int r_fixed(rd *r, const json_node *o, const char *k, char *dst, size_t cap) {
    const char *s;
    int rc = r_sv(r, o, k, &s);
    if (!rc && s) copy_fixed(dst, cap, s);
    return rc;
}

/* An executor id: Spark 1.x names the driver "<driver>". */
static int r_exec_id(rd *r, const json_node *o, const char *k, char *dst, size_t cap) {
    int rc = r_fixed(r, o, k, dst, cap);
    if (!rc && !strcmp(dst, "<driver>")) copy_fixed(dst, cap, "driver");
    return rc;
}

/* A member that must be an object (or array) when present; *c NULL when
 * absent or null. */
static int r_child(rd *r, const json_node *o, const char *k, json_type t, const json_node **c) {
    const json_node *n = json_get(r->d, o, k);
    *c = NULL;
    if (!n || json_is_null(n)) return 0;
    if (n->type != t) return bad(r, k, t == JSON_OBJECT ? "is not an object" : "is not an array");
    *c = n;
    return 0;
}

static int r_ints(rd *r, const json_node *o, const char *k, int **dst, int *n) {
    const json_node *a;
    int rc = r_child(r, o, k, JSON_ARRAY, &a);
    if (rc || !a || a->n == 0) return rc;
    int *v = malloc(a->n * sizeof(int));
    if (!v) return EM_ENOMEM;
    int i = 0;
    for (const json_node *c = json_first(r->d, a); c; c = json_next(r->d, c)) {
        int64_t x;
        if (!json_as_i64(c, &x) || x < INT_MIN || x > INT_MAX) {
            free(v);
            return bad(r, k, "holds a value that is not an int");
        }
        v[i++] = (int)x;
    }
    free(*dst);
    *dst = v;
    *n = i;
    return 0;
}

static int r_props(rd *r, const json_node *o, const char *k, ae_prop **dst, int *n) {
    const json_node *p;
    int rc = r_child(r, o, k, JSON_OBJECT, &p);
    if (rc || !p || p->n == 0) return rc;
    ae_prop *v = calloc(p->n, sizeof *v);
    if (!v) return EM_ENOMEM;
    int i = 0;
    for (const json_node *c = json_first(r->d, p); c && !rc; c = json_next(r->d, c)) {
        const char *s = NULL;
        if (!json_as_str(r->d, c, &s, NULL) && !json_is_null(c)) {
            push(r, k);
            rc = bad(r, json_key(r->d, c, NULL), "is not a string");
            pop(r);
            break;
        }
        v[i].key = strdup(json_key(r->d, c, NULL));
        v[i].value = json_is_null(c) ? NULL : strdup(s);
        if (!v[i].key || (!json_is_null(c) && !v[i].value)) rc = EM_ENOMEM;
        i++;
    }
    if (rc) {
        for (int j = 0; j < i; j++) {
            free(v[j].key);
            free(v[j].value);
        }
        free(v);
        return rc;
    }
    *dst = v;
    *n = i;
    return 0;
}

static int r_storage(rd *r, const json_node *o, ae_storage *s) {
    const json_node *l;
    int rc = r_child(r, o, "Storage Level", JSON_OBJECT, &l);
    if (rc || !l) return rc;
    push(r, "Storage Level");
    if (!rc) rc = r_bool(r, l, "Use Disk", &s->use_disk);
    if (!rc) rc = r_bool(r, l, "Use Memory", &s->use_memory);
    if (!rc) rc = r_bool(r, l, "Use Tachyon", &s->use_offheap);
    if (!rc) rc = r_bool(r, l, "Use ExternalBlockStore", &s->use_offheap);
    if (!rc) rc = r_bool(r, l, "Use Off Heap", &s->use_offheap);
    if (!rc) rc = r_bool(r, l, "Deserialized", &s->deserialized);
    if (!rc) rc = r_int(r, l, "Replication", &s->replication);
    pop(r);
    return rc;
}

static int r_rdd(rd *r, const json_node *o, ae_rdd *x) {
    if (o->type != JSON_OBJECT) return bad(r, "RDD Info", "holds a value that is not an object");
    push(r, "RDD Info");
    int rc = r_int(r, o, "RDD ID", &x->id);
    if (!rc) rc = r_str(r, o, "Name", &x->name);
    if (!rc) rc = r_str(r, o, "Callsite", &x->callsite);
    if (!rc) rc = r_ints(r, o, "Parent IDs", &x->parents, &x->nparents);
    if (!rc) rc = r_storage(r, o, &x->storage);
    if (!rc) rc = r_int(r, o, "Number of Partitions", &x->nparts);
    if (!rc) rc = r_int(r, o, "Number of Cached Partitions", &x->ncached);
    if (!rc) rc = r_i64(r, o, "Memory Size", &x->mem_size);
    if (!rc) rc = r_i64(r, o, "Disk Size", &x->disk_size);
    pop(r);
    return rc;
}

static int r_stage(rd *r, const json_node *o, const char *name, ae_stage *s) {
    if (o->type != JSON_OBJECT) return bad(r, name, "is not an object");
    push(r, name);
    int rc = r_int(r, o, "Stage ID", &s->id);
    if (!rc) rc = r_int(r, o, "Stage Attempt ID", &s->attempt);
    if (!rc) rc = r_str(r, o, "Stage Name", &s->name);
    if (!rc) rc = r_int(r, o, "Number of Tasks", &s->ntasks);
    const json_node *a = NULL;
    if (!rc) rc = r_child(r, o, "RDD Info", JSON_ARRAY, &a);
    if (!rc && a && a->n > 0) {
        s->rdds = calloc(a->n, sizeof *s->rdds);
        if (!s->rdds) rc = EM_ENOMEM;
        for (const json_node *c = json_first(r->d, a); c && !rc; c = json_next(r->d, c))
            rc = r_rdd(r, c, &s->rdds[s->nrdds++]);
    }
    if (!rc) rc = r_ints(r, o, "Parent IDs", &s->parents, &s->nparents);
    if (!rc) rc = r_str(r, o, "Details", &s->details);
    if (!rc) rc = r_i64(r, o, "Submission Time", &s->submit_ms);
    if (!rc) rc = r_i64(r, o, "Completion Time", &s->complete_ms);
    if (!rc) rc = r_str(r, o, "Failure Reason", &s->failure);
    pop(r);
    return rc;
}

/* "Stage Info" of a stage event into stages[0]. */
static int r_stage_info(rd *r, const json_node *root, app_event *e) {
    const json_node *s;
    int rc = r_child(r, root, "Stage Info", JSON_OBJECT, &s);
    if (rc || !s) return rc;
    e->stages = calloc(1, sizeof *e->stages);
    if (!e->stages) return EM_ENOMEM;
    e->nstages = 1;
    return r_stage(r, s, "Stage Info", &e->stages[0]);
}

static int r_task(rd *r, const json_node *root, ae_task *t) {
    const json_node *o;
    int rc = r_child(r, root, "Task Info", JSON_OBJECT, &o);
    if (rc || !o) return rc;
    push(r, "Task Info");
    if (!rc) rc = r_i64(r, o, "Task ID", &t->task_id);
    if (!rc) rc = r_int(r, o, "Index", &t->index);
    if (!rc) rc = r_int(r, o, "Attempt", &t->attempt);
    if (!rc) rc = r_int(r, o, "Partition ID", &t->partition);
    if (!rc) rc = r_i64(r, o, "Launch Time", &t->launch_ms);
    if (!rc) rc = r_exec_id(r, o, "Executor ID", t->exec_id, sizeof t->exec_id);
    if (!rc) rc = r_fixed(r, o, "Host", t->host, sizeof t->host);
    if (!rc) rc = r_fixed(r, o, "Locality", t->locality, sizeof t->locality);
    if (!rc) rc = r_bool(r, o, "Speculative", &t->speculative);
    if (!rc) rc = r_i64(r, o, "Getting Result Time", &t->getting_result_ms);
    if (!rc) rc = r_i64(r, o, "Finish Time", &t->finish_ms);
    if (!rc) rc = r_bool(r, o, "Failed", &t->failed);
    if (!rc) rc = r_bool(r, o, "Killed", &t->killed);
    pop(r);
    return rc;
}

static int r_bm(rd *r, const json_node *o, const char *k, char *exec, size_t ecap, char *host, size_t hcap, int *port) {
    const json_node *b;
    int rc = r_child(r, o, k, JSON_OBJECT, &b);
    if (rc || !b) return rc;
    push(r, k);
    rc = r_exec_id(r, b, "Executor ID", exec, ecap);
    if (!rc) rc = r_fixed(r, b, "Host", host, hcap);
    if (!rc) rc = r_int(r, b, "Port", port);
    pop(r);
    return rc;
}

static const struct {
    const char *name;
    ae_reason r;
} reasons[] = {
    {"Success", AE_SUCCESS},
    {"FetchFailed", AE_FETCH_FAILED},
    {"ExceptionFailure", AE_EXCEPTION},
    {"TaskKilled", AE_KILLED},
    {"ExecutorLostFailure", AE_EXEC_LOST},
    {"Resubmitted", AE_RESUBMITTED},
    {"TaskResultLost", AE_RESULT_LOST},
    {"TaskCommitDenied", AE_COMMIT_DENIED},
    {"UnknownReason", AE_UNKNOWN_REASON},
};

static int r_end(rd *r, const json_node *root, app_event *e) {
    ae_end *x = &e->end;
    const json_node *o;
    int rc = r_child(r, root, "Task End Reason", JSON_OBJECT, &o);
    if (rc || !o) return rc;
    push(r, "Task End Reason");
    const char *name = NULL;
    rc = r_sv(r, o, "Reason", &name);
    if (!rc && name) {
        x->reason = AE_UNKNOWN_REASON;
        bool known = false;
        for (size_t i = 0; i < sizeof reasons / sizeof *reasons; i++)
            if (!strcmp(name, reasons[i].name)) {
                x->reason = reasons[i].r;
                known = true;
            }
        if (!known && !(x->class_name = strdup(name))) rc = EM_ENOMEM;
    }
    switch (x->reason) {
    case AE_FETCH_FAILED:
        if (!rc) rc = r_bm(r, o, "Block Manager Address", x->bm_exec, sizeof x->bm_exec, x->bm_host, sizeof x->bm_host, &x->bm_port);
        if (!rc) rc = r_int(r, o, "Shuffle ID", &x->shuffle_id);
        if (!rc) rc = r_i64(r, o, "Map ID", &x->map_id);
        if (!rc) rc = r_int(r, o, "Map Index", &x->map_index);
        if (!rc) rc = r_int(r, o, "Reduce ID", &x->reduce_id);
        if (!rc) rc = r_str(r, o, "Message", &x->message);
        break;
    case AE_EXCEPTION:
        if (!rc) rc = r_str(r, o, "Class Name", &x->class_name);
        if (!rc) rc = r_str(r, o, "Description", &x->message);
        break;
    case AE_COMMIT_DENIED:
        if (!rc) rc = r_int(r, o, "Job ID", &e->job_id);
        if (!rc) rc = r_int(r, o, "Partition ID", &e->task.partition);
        if (!rc) rc = r_int(r, o, "Attempt Number", &e->task.attempt);
        if (!rc) {
            char m[160];
            snprintf(m, sizeof m, "TaskCommitDenied (Driver denied task commit) for job: %d, partition: %d, attemptNumber: %d",
                     e->job_id, e->task.partition, e->task.attempt);
            if (!(x->message = strdup(m))) rc = EM_ENOMEM;
        }
        break;
    case AE_EXEC_LOST:
        if (!rc) rc = r_exec_id(r, o, "Executor ID", x->bm_exec, sizeof x->bm_exec);
        if (!rc) rc = r_bool(r, o, "Exit Caused By App", &x->caused_by_app);
        if (!rc) rc = r_str(r, o, "Loss Reason", &x->message);
        break;
    case AE_KILLED:
        if (!rc) rc = r_str(r, o, "Kill Reason", &x->message);
        break;
    default: break;
    }
    pop(r);
    return rc;
}

static int r_group(rd *r, const json_node *o, const char *k, const char *const *names, int64_t *const *dst, int n) {
    const json_node *g;
    int rc = r_child(r, o, k, JSON_OBJECT, &g);
    if (rc || !g) return rc;
    push(r, k);
    for (int i = 0; i < n && !rc; i++) rc = r_metric(r, g, names[i], dst[i]);
    pop(r);
    return rc;
}

static int r_metrics(rd *r, const json_node *root, app_event *e) {
    const json_node *o;
    int rc = r_child(r, root, "Task Metrics", JSON_OBJECT, &o);
    if (rc || !o) return rc;
    task_metrics *m = &e->metrics;
    e->has_metrics = 1;
    push(r, "Task Metrics");
    static const char *const top[] = {
        "Executor Deserialize Time", "Executor Deserialize CPU Time", "Executor Run Time",
        "Executor CPU Time", "Peak Execution Memory", "Result Size", "Memory Bytes Spilled",
        "Disk Bytes Spilled",
    };
    int64_t *const topd[] = {&m->deser_ms, &m->deser_cpu_ns, &m->run_ms, &m->cpu_ns,
                             &m->peak_mem, &m->result_size, &m->mem_spilled, &m->disk_spilled};
    for (int i = 0; i < 8 && !rc; i++) rc = r_metric(r, o, top[i], topd[i]);
    static const char *const sr[] = {
        "Remote Blocks Fetched", "Local Blocks Fetched", "Fetch Wait Time", "Remote Bytes Read",
        "Remote Bytes Read To Disk", "Local Bytes Read", "Total Records Read",
    };
    int64_t *const srd[] = {&m->sr_remote_blocks, &m->sr_local_blocks, &m->sr_fetch_wait_ms,
                            &m->sr_remote_bytes, &m->sr_remote_disk_bytes, &m->sr_local_bytes,
                            &m->sr_records};
    if (!rc) rc = r_group(r, o, "Shuffle Read Metrics", sr, srd, 7);
    static const char *const sw[] = {"Shuffle Bytes Written", "Shuffle Write Time", "Shuffle Records Written"};
    int64_t *const swd[] = {&m->sw_bytes, &m->sw_time_ns, &m->sw_records};
    if (!rc) rc = r_group(r, o, "Shuffle Write Metrics", sw, swd, 3);
    static const char *const in[] = {"Bytes Read", "Records Read"};
    int64_t *const ind[] = {&m->in_bytes, &m->in_records};
    if (!rc) rc = r_group(r, o, "Input Metrics", in, ind, 2);
    static const char *const out[] = {"Bytes Written", "Records Written"};
    int64_t *const outd[] = {&m->out_bytes, &m->out_records};
    if (!rc) rc = r_group(r, o, "Output Metrics", out, outd, 2);
    pop(r);
    return rc;
}

static int r_job_start(rd *r, const json_node *root, app_event *e) {
    int rc = r_int(r, root, "Job ID", &e->job_id);
    if (!rc) rc = r_i64(r, root, "Submission Time", &e->time_ms);
    const json_node *infos = NULL, *ids = NULL;
    if (!rc) rc = r_child(r, root, "Stage Infos", JSON_ARRAY, &infos);
    if (!rc) rc = r_child(r, root, "Stage IDs", JSON_ARRAY, &ids);
    const json_node *a = infos ? infos : ids;
    if (!rc && a && a->n > 0) {
        e->stages = calloc(a->n, sizeof *e->stages);
        if (!e->stages) rc = EM_ENOMEM;
        for (const json_node *c = json_first(r->d, a); c && !rc; c = json_next(r->d, c)) {
            ae_stage *s = &e->stages[e->nstages++];
            if (infos) {
                rc = r_stage(r, c, "Stage Infos", s);
            } else {
                int64_t id;
                if (!json_as_i64(c, &id) || id < INT_MIN || id > INT_MAX) rc = bad(r, "Stage IDs", "holds a value that is not an int");
                else if (!(s->name = strdup("unknown"))) rc = EM_ENOMEM;
                else s->id = (int)id;
            }
        }
    }
    if (!rc) rc = r_props(r, root, "Properties", &e->props[0], &e->nprops[0]);
    return rc;
}

static int r_job_end(rd *r, const json_node *root, app_event *e) {
    int rc = r_int(r, root, "Job ID", &e->job_id);
    if (!rc) rc = r_i64(r, root, "Completion Time", &e->time_ms);
    const json_node *res = NULL;
    if (!rc) rc = r_child(r, root, "Job Result", JSON_OBJECT, &res);
    if (rc || !res) return rc;
    push(r, "Job Result");
    const char *s = NULL;
    rc = r_sv(r, res, "Result", &s);
    if (!rc && s && !strcmp(s, "JobFailed")) {
        e->failed = 1;
        const json_node *x = NULL;
        rc = r_child(r, res, "Exception", JSON_OBJECT, &x);
        if (!rc && x) {
            push(r, "Exception");
            rc = r_str(r, x, "Message", &e->reason);
            pop(r);
        }
    }
    pop(r);
    return rc;
}

static int r_exec_added(rd *r, const json_node *root, app_event *e) {
    int rc = r_i64(r, root, "Timestamp", &e->time_ms);
    if (!rc) rc = r_exec_id(r, root, "Executor ID", e->exec.id, sizeof e->exec.id);
    const json_node *o = NULL, *urls = NULL;
    if (!rc) rc = r_child(r, root, "Executor Info", JSON_OBJECT, &o);
    if (rc || !o) return rc;
    push(r, "Executor Info");
    rc = r_fixed(r, o, "Host", e->exec.host, sizeof e->exec.host);
    if (!rc) rc = r_int(r, o, "Total Cores", &e->exec.cores);
    if (!rc) rc = r_child(r, o, "Log Urls", JSON_OBJECT, &urls);
    if (!rc && urls) {
        push(r, "Log Urls");
        rc = r_str(r, urls, "stdout", &e->exec.stdout_url);
        if (!rc) rc = r_str(r, urls, "stderr", &e->exec.stderr_url);
        pop(r);
    }
    pop(r);
    return rc;
}

static const struct {
    const char *name;
    ae_kind k;
} kinds[] = {
    {"SparkListenerLogStart", AE_LOG_START},
    {"SparkListenerApplicationStart", AE_APP_START},
    {"SparkListenerApplicationEnd", AE_APP_END},
    {"SparkListenerEnvironmentUpdate", AE_ENV_UPDATE},
    {"SparkListenerExecutorAdded", AE_EXEC_ADDED},
    {"SparkListenerExecutorRemoved", AE_EXEC_REMOVED},
    {"SparkListenerJobStart", AE_JOB_START},
    {"SparkListenerJobEnd", AE_JOB_END},
    {"SparkListenerStageSubmitted", AE_STAGE_SUBMITTED},
    {"SparkListenerStageCompleted", AE_STAGE_COMPLETED},
    {"SparkListenerTaskStart", AE_TASK_START},
    {"SparkListenerTaskGettingResult", AE_TASK_GETTING_RESULT},
    {"SparkListenerTaskEnd", AE_TASK_END},
    {"SparkListenerUnpersistRDD", AE_UNPERSIST_RDD},
    {"SparkListenerBlockManagerAdded", AE_BLOCK_MANAGER_ADDED},
    {"SparkListenerBlockUpdated", AE_BLOCK_UPDATED},
};

/* "rdd_<rdd>_<part>" into rdd and part, both in [0, INT32_MAX]; another
 * block's name (broadcast_0, a shuffle's) leaves rdd at -1. */
static void block_name(const char *id, int *rdd, int *part) {
    *rdd = -1;
    if (!id || strncmp(id, "rdd_", 4)) return;
    char *end;
    errno = 0;
    long a = strtol(id + 4, &end, 10);
    if (errno || end == id + 4 || *end != '_' || a < 0 || a > INT32_MAX || !(end[1] >= '0' && end[1] <= '9')) return;
    const char *q = end + 1;
    long b = strtol(q, &end, 10);
    if (errno || *end || b < 0 || b > INT32_MAX) return;
    *rdd = (int)a;
    *part = (int)b;
}

static int r_block_updated(rd *r, const json_node *root, app_event *e) {
    const json_node *b;
    e->rdd_id = -1;
    int rc = r_child(r, root, "Block Updated Info", JSON_OBJECT, &b);
    if (rc || !b) return rc;
    push(r, "Block Updated Info");
    const char *id = NULL;
    rc = r_bm(r, b, "Block Manager ID", e->exec.id, sizeof e->exec.id, e->exec.host, sizeof e->exec.host, &e->exec.port);
    if (!rc) rc = r_sv(r, b, "Block ID", &id);
    if (!rc) block_name(id, &e->rdd_id, &e->block_part);
    if (!rc) rc = r_storage(r, b, &e->block_level);
    if (!rc) rc = r_i64(r, b, "Memory Size", &e->block_mem);
    if (!rc) rc = r_i64(r, b, "Disk Size", &e->block_disk);
    if (!rc && (e->block_mem < 0 || e->block_disk < 0)) rc = bad(r, "Memory Size", "or \"Disk Size\" is negative");
    pop(r);
    return rc;
}

static int r_event(rd *r, const json_node *root, app_event *e) {
    int rc = 0;
    switch (e->kind) {
    case AE_LOG_START:
        return r_str(r, root, "Spark Version", &e->version);
    case AE_APP_START:
        rc = r_str(r, root, "App Name", &e->app_name);
        if (!rc) rc = r_str(r, root, "App ID", &e->app_id);
        if (!rc) rc = r_i64(r, root, "Timestamp", &e->time_ms);
        if (!rc) rc = r_str(r, root, "User", &e->user);
        if (!rc) rc = r_str(r, root, "App Attempt ID", &e->attempt_id);
        return rc;
    case AE_APP_END:
        return r_i64(r, root, "Timestamp", &e->time_ms);
    case AE_ENV_UPDATE:
        rc = r_props(r, root, "JVM Information", &e->props[AE_ENV_RUNTIME], &e->nprops[AE_ENV_RUNTIME]);
        if (!rc) rc = r_props(r, root, "Spark Properties", &e->props[AE_ENV_SPARK], &e->nprops[AE_ENV_SPARK]);
        if (!rc) rc = r_props(r, root, "Hadoop Properties", &e->props[AE_ENV_HADOOP], &e->nprops[AE_ENV_HADOOP]);
        if (!rc) rc = r_props(r, root, "System Properties", &e->props[AE_ENV_SYSTEM], &e->nprops[AE_ENV_SYSTEM]);
        if (!rc) rc = r_props(r, root, "Classpath Entries", &e->props[AE_ENV_CLASSPATH], &e->nprops[AE_ENV_CLASSPATH]);
        return rc;
    case AE_EXEC_ADDED:
        return r_exec_added(r, root, e);
    case AE_EXEC_REMOVED:
        rc = r_i64(r, root, "Timestamp", &e->time_ms);
        if (!rc) rc = r_exec_id(r, root, "Executor ID", e->exec.id, sizeof e->exec.id);
        if (!rc) rc = r_str(r, root, "Removed Reason", &e->reason);
        return rc;
    case AE_JOB_START:
        return r_job_start(r, root, e);
    case AE_JOB_END:
        return r_job_end(r, root, e);
    case AE_STAGE_SUBMITTED:
        rc = r_stage_info(r, root, e);
        if (!rc) rc = r_props(r, root, "Properties", &e->props[0], &e->nprops[0]);
        return rc;
    case AE_STAGE_COMPLETED:
        return r_stage_info(r, root, e);
    case AE_TASK_START:
    case AE_TASK_END: {
        rc = r_int(r, root, "Stage ID", &e->stage_id);
        if (!rc) rc = r_int(r, root, "Stage Attempt ID", &e->stage_attempt);
        if (!rc) rc = r_task(r, root, &e->task);
        if (rc || e->kind == AE_TASK_START) return rc;
        const char *type = NULL;
        rc = r_sv(r, root, "Task Type", &type);
        if (!rc && type && !strcmp(type, "ShuffleMapTask")) e->shuffle_map = 1;
        /* the task info first: a commit denial's fields override it */
        if (!rc) rc = r_end(r, root, e);
        if (!rc) rc = r_metrics(r, root, e);
        return rc;
    }
    case AE_TASK_GETTING_RESULT:
        return r_task(r, root, &e->task);
    case AE_UNPERSIST_RDD:
        return r_int(r, root, "RDD ID", &e->rdd_id);
    case AE_BLOCK_MANAGER_ADDED:
        rc = r_bm(r, root, "Block Manager ID", e->exec.id, sizeof e->exec.id, e->exec.host, sizeof e->exec.host, &e->exec.port);
        if (!rc) rc = r_i64(r, root, "Maximum Memory", &e->max_mem);
        if (!rc) rc = r_i64(r, root, "Timestamp", &e->time_ms);
        return rc;
    case AE_BLOCK_UPDATED:
        return r_block_updated(r, root, e);
    case AE_OTHER:
        return 0;
    }
    return 0;
}

int evjson_read(const uint8_t *line, size_t len, json_doc *doc, app_event **out) {
    *out = NULL;
    json_limits lim = {EVJSON_MAX_DEPTH, EVJSON_MAX_NODES, EVJSON_MAX_BYTES};
    int rc = json_parse(line, len, &lim, doc);
    if (rc) return rc == EM_ECORRUPT ? em__preferr(rc, "event log") : rc;
    rd r = {doc, {0}, 0};
    const json_node *root = json_root(doc);
    if (root->type != JSON_OBJECT) return em__seterr(EM_ECORRUPT, "event log: a line that is not a JSON object");
    const char *name;
    const json_node *ev = json_get(doc, root, "Event");
    if (!ev) return em__seterr(EM_ECORRUPT, "event log: no \"Event\"");
    if (!json_as_str(doc, ev, &name, NULL)) return bad(&r, "Event", "is not a string");
    ae_kind k = AE_OTHER;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (!strcmp(name, kinds[i].name)) k = kinds[i].k;
    app_event *e = app_event_new(k);
    if (!e) return em__seterr(EM_ENOMEM, "event log: out of memory");
    if (k == AE_OTHER && !(e->other = strdup(name))) rc = EM_ENOMEM;
    if (!rc) rc = r_event(&r, root, e);
    if (rc) {
        app_event_free(e);
        if (rc == EM_ENOMEM) em__seterr(rc, "event log: out of memory");
        return rc;
    }
    *out = e;
    return 0;
}
