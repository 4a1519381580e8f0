/*
 * restjson.h -- the JSON shapes of Spark's status API classes, written from
 * a status store's records (rest.c routes the requests; restjson.c writes
 * ApplicationAttemptInfo, JobData, StageData, TaskData with its
 * TaskMetrics, TaskMetricDistributions, ExecutorSummary, RDDStorageInfo),
 * and the figures both the API and the UI's pages compute from a store
 * (a task's duration, its quantile summaries).  Internal to rest.c,
 * restjson.c and the pages (uipage*.c).
 *
 * Each writer appends one value with w (json.h: errors are sticky in w).
 * Records are read as they are: the caller holds the store's read lock.
 * An absent optional field is left out, as Spark's JSON mapper does.
 */
#ifndef EM_RESTJSON_H
#define EM_RESTJSON_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"
#include "rest.h"
#include "status.h"

#define REST_QUANTILES_MAX 64

/* A member with its value; the "o" forms only when present (a string not
 * NULL, a time above 0).  Times are written as rest_time does. */
static inline void k_i(json_writer *w, const char *k, int64_t v) {
    json_w_key(w, k);
    json_w_i64(w, v);
}
static inline void k_s(json_writer *w, const char *k, const char *v) {
    json_w_key(w, k);
    json_w_str(w, v ? v : "");
}
static inline void k_os(json_writer *w, const char *k, const char *v) {
    if (v) k_s(w, k, v);
}
static inline void k_b(json_writer *w, const char *k, int v) {
    json_w_key(w, k);
    json_w_bool(w, v != 0);
}
static inline void k_t(json_writer *w, const char *k, int64_t ms) {
    char t[32];
    rest_time(ms, t);
    k_s(w, k, t);
}
static inline void k_ot(json_writer *w, const char *k, int64_t ms) {
    if (ms > 0) k_t(w, k, ms);
}
static inline void k_empty_arr(json_writer *w, const char *k) {
    json_w_key(w, k);
    json_w_begin_array(w);
    json_w_end_array(w);
}
static inline void k_empty_obj(json_writer *w, const char *k) {
    json_w_key(w, k);
    json_w_begin_object(w);
    json_w_end_object(w);
}
static inline void k_ints(json_writer *w, const char *k, const int *v, int n) {
    json_w_key(w, k);
    json_w_begin_array(w);
    for (int i = 0; i < n; i++) json_w_i64(w, v[i]);
    json_w_end_array(w);
}
static inline void k_killed(json_writer *w, const st_killed *k) {
    json_w_key(w, "killedTasksSummary");
    json_w_begin_object(w);
    for (; k; k = k->next) k_i(w, k->reason, k->count);
    json_w_end_object(w);
}


/* The figures a task summary takes of one successful task, in the order
 * TaskMetricDistributions names them. */
/* The figures a summary takes of one task, in the order of dist_names. */
enum { D_DURATION, D_DESER, D_DESER_CPU, D_RUN, D_CPU, D_RESULT, D_GC, D_SER, D_GETTING, D_SCHED, D_PEAK, D_MEMSPILL,
       D_DISKSPILL, D_IN_BYTES, D_IN_RECS, D_OUT_BYTES, D_OUT_RECS, D_SR_BYTES, D_SR_RECS, D_SR_RBLOCKS, D_SR_LBLOCKS,
       D_SR_WAIT, D_SR_RBYTES, D_SR_RDISK, D_SR_BLOCKS, D_SW_BYTES, D_SW_RECS, D_SW_TIME, D_N };

/* A task summary: the quantiles asked for, and per figure its values at
 * them (v[f][0, nq)). */
typedef struct rj_dist {
    double q[REST_QUANTILES_MAX];
    int nq;
    double *v[D_N]; /* per figure: the values at the quantiles */
    double *mem;    /* what v points into (rj_dist_free) */
} rj_dist;

/* The figures of stage s's successful tasks that reported metrics, copied
 * (under the store's read lock) into *cols, allocated: figure f of the
 * i-th task at (*cols)[f * n + i].  n (0: *cols NULL), or EM_ENOMEM. */
int rj_dist_collect(const st_stage *s, int64_t now, double **cols);
/* d->v from cols (n > 0 tasks; reordered): per figure, the value at rank
 * floor(q * n) (clamped to n - 1) of each quantile q, Spark's rule,
 * found by selection (linear in n per quantile, no full sort).  0, or
 * EM_ENOMEM (message set); free with rj_dist_free. */
int rj_dist_compute(rj_dist *d, double *cols, int n);
void rj_dist_free(rj_dist *d);
/* A task's duration: finished, its run; running, up to now. */
int64_t rj_task_duration(const st_task *t, int64_t now);
/* StorageLevel.description: "Disk Memory Deserialized 1x Replicated". */
void rj_level_text(const ae_storage *l, char *out, size_t cap);

void rj_attempt(json_writer *w, const rest_app *a);
void rj_job(json_writer *w, const st_job *j);
/* A task; now (epoch ms) gives a running task's duration. */
void rj_task(json_writer *w, const status_store *st, const st_task *t, int64_t now);
/* A stage attempt; with details its tasks (by id), executor summaries
 * and speculation summary.  0, or EM_ENOMEM. */
int rj_stage(json_writer *w, const status_store *st, const st_stage *s, int details, int64_t now);
void rj_exec(json_writer *w, const st_exec *x);
/* A cached partition: the blocks of d that hold it start at index i (a
 * partition's blocks are neighbours in d->blocks); its block name, its
 * storage level as text (replicated once per executor holding it) and its
 * bytes summed over them.  Returns the index past its blocks. */
typedef struct rj_part {
    char name[48], level[96];
    int64_t mem, disk;
} rj_part;
int rj_partition(const st_rdd *d, int i, rj_part *p);
/* A cached RDD (RDDStorageInfo); with details (storage/rdd/{id}) its
 * data distribution over executors and its cached partitions. */
void rj_rdd(json_writer *w, const status_store *st, const st_rdd *d, int details);
void rj_summary(json_writer *w, const rj_dist *d);
/* Task t's figures into f[0, D_N). */
void rj_task_figures(const st_task *t, int64_t now, double *f);

#endif
