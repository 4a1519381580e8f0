/*
 * restjson.c -- the JSON shapes of Spark's status API classes (see
 * restjson.h), field by field in Spark 3's order.  Metrics ember does not
 * measure (JVM GC and result serialization time, push-based shuffle) are
 * written as 0, so that readers of Spark's shapes find every field.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"
#include "restjson.h"

void rj_attempt(json_writer *w, const rest_app *a) {
    json_w_begin_object(w);
    k_os(w, "attemptId", a->attempt_id);
    int64_t end = a->end_ms ? a->end_ms : -1;
    int64_t last = a->last_updated_ms ? a->last_updated_ms : a->end_ms ? a->end_ms : a->start_ms;
    k_t(w, "startTime", a->start_ms);
    k_t(w, "endTime", end);
    k_t(w, "lastUpdated", last);
    k_i(w, "duration", a->end_ms ? a->end_ms - a->start_ms : 0);
    k_s(w, "sparkUser", a->user);
    k_b(w, "completed", a->end_ms != 0);
    k_s(w, "appSparkVersion", a->version ? a->version : EMBER_VERSION);
    k_i(w, "startTimeEpoch", a->start_ms);
    k_i(w, "endTimeEpoch", end);
    k_i(w, "lastUpdatedEpoch", last);
    json_w_end_object(w);
}

void rj_job(json_writer *w, const st_job *j) {
    json_w_begin_object(w);
    k_i(w, "jobId", j->id);
    k_s(w, "name", j->name);
    k_os(w, "description", j->description);
    k_ot(w, "submissionTime", j->submit_ms);
    k_ot(w, "completionTime", j->complete_ms);
    k_ints(w, "stageIds", j->stage_ids, j->nstages);
    k_os(w, "jobGroup", j->group);
    k_empty_arr(w, "jobTags");
    k_s(w, "status", status_job_name(j->status));
    int done = 0, skipped = 0;
    for (int k = 0; k < j->nstages; k++) {
        done += j->stage_state[k] == 1;
        skipped += j->stage_state[k] == 2;
    }
    k_i(w, "numTasks", j->ntasks);
    k_i(w, "numActiveTasks", j->active_tasks);
    k_i(w, "numCompletedTasks", j->completed_tasks);
    k_i(w, "numSkippedTasks", j->skipped_tasks);
    k_i(w, "numFailedTasks", j->failed_tasks);
    k_i(w, "numKilledTasks", j->killed_tasks);
    k_i(w, "numCompletedIndices", j->completed_indices);
    k_i(w, "numActiveStages", j->active_stages);
    k_i(w, "numCompletedStages", done);
    k_i(w, "numSkippedStages", skipped);
    k_i(w, "numFailedStages", j->failed_stages);
    k_killed(w, j->killed);
    json_w_end_object(w);
}

/* ------------------------------------------------------------- tasks */

int64_t rj_task_duration(const st_task *t, int64_t now) {
    if (t->finish_ms) return t->finish_ms - t->launch_ms;
    return t->launch_ms && now > t->launch_ms ? now - t->launch_ms : 0;
}

/* AppStatusUtils' gettingResultTime and schedulerDelay. */
static int64_t task_getting_result(const st_task *t, int64_t now) {
    if (!t->getting_result_ms) return 0;
    int64_t end = t->finish_ms ? t->finish_ms : now;
    return end > t->getting_result_ms ? end - t->getting_result_ms : 0;
}
static int64_t task_sched_delay(const st_task *t, int64_t now) {
    if (!t->has_metrics) return 0;
    int64_t d = rj_task_duration(t, now) - t->m.run_ms - t->m.deser_ms - task_getting_result(t, now);
    return d > 0 ? d : 0;
}

static void write_metrics(json_writer *w, const task_metrics *m) {
    json_w_key(w, "taskMetrics");
    json_w_begin_object(w);
    k_i(w, "executorDeserializeTime", m->deser_ms);
    k_i(w, "executorDeserializeCpuTime", m->deser_cpu_ns);
    k_i(w, "executorRunTime", m->run_ms);
    k_i(w, "executorCpuTime", m->cpu_ns);
    k_i(w, "resultSize", m->result_size);
    k_i(w, "jvmGcTime", 0);
    k_i(w, "resultSerializationTime", 0);
    k_i(w, "memoryBytesSpilled", m->mem_spilled);
    k_i(w, "diskBytesSpilled", m->disk_spilled);
    k_i(w, "peakExecutionMemory", m->peak_mem);
    json_w_key(w, "inputMetrics");
    json_w_begin_object(w);
    k_i(w, "bytesRead", m->in_bytes);
    k_i(w, "recordsRead", m->in_records);
    json_w_end_object(w);
    json_w_key(w, "outputMetrics");
    json_w_begin_object(w);
    k_i(w, "bytesWritten", m->out_bytes);
    k_i(w, "recordsWritten", m->out_records);
    json_w_end_object(w);
    json_w_key(w, "shuffleReadMetrics");
    json_w_begin_object(w);
    k_i(w, "remoteBlocksFetched", m->sr_remote_blocks);
    k_i(w, "localBlocksFetched", m->sr_local_blocks);
    k_i(w, "fetchWaitTime", m->sr_fetch_wait_ms);
    k_i(w, "remoteBytesRead", m->sr_remote_bytes);
    k_i(w, "remoteBytesReadToDisk", m->sr_remote_disk_bytes);
    k_i(w, "localBytesRead", m->sr_local_bytes);
    k_i(w, "recordsRead", m->sr_records);
    k_i(w, "remoteReqsDuration", 0);
    json_w_key(w, "shufflePushReadMetrics");
    json_w_begin_object(w);
    static const char *const push[] = {"corruptMergedBlockChunks", "mergedFetchFallbackCount",
                                       "remoteMergedBlocksFetched", "localMergedBlocksFetched",
                                       "remoteMergedChunksFetched", "localMergedChunksFetched",
                                       "remoteMergedBytesRead",     "localMergedBytesRead",
                                       "remoteMergedReqsDuration"};
    for (size_t i = 0; i < sizeof push / sizeof *push; i++) k_i(w, push[i], 0);
    json_w_end_object(w);
    json_w_end_object(w);
    json_w_key(w, "shuffleWriteMetrics");
    json_w_begin_object(w);
    k_i(w, "bytesWritten", m->sw_bytes);
    k_i(w, "writeTime", m->sw_time_ns);
    k_i(w, "recordsWritten", m->sw_records);
    json_w_end_object(w);
    json_w_end_object(w);
}

static void write_logs(json_writer *w, const st_exec *x) {
    json_w_key(w, "executorLogs");
    json_w_begin_object(w);
    if (x && x->stdout_url) k_s(w, "stdout", x->stdout_url);
    if (x && x->stderr_url) k_s(w, "stderr", x->stderr_url);
    json_w_end_object(w);
}

void rj_task(json_writer *w, const status_store *st, const st_task *t, int64_t now) {
    json_w_begin_object(w);
    k_i(w, "taskId", t->task_id);
    k_i(w, "index", t->index);
    k_i(w, "attempt", t->attempt);
    k_i(w, "partitionId", t->partition);
    k_t(w, "launchTime", t->launch_ms);
    k_ot(w, "resultFetchStart", t->getting_result_ms);
    k_i(w, "duration", rj_task_duration(t, now));
    k_s(w, "executorId", t->exec_id);
    k_s(w, "host", t->host);
    k_s(w, "status", status_task_name(t->status));
    k_s(w, "taskLocality", t->locality[0] ? t->locality : "PROCESS_LOCAL");
    k_b(w, "speculative", t->speculative);
    k_empty_arr(w, "accumulatorUpdates");
    k_os(w, "errorMessage", t->error);
    if (t->has_metrics) write_metrics(w, &t->m);
    write_logs(w, status_exec(st, t->exec_id));
    k_i(w, "schedulerDelay", task_sched_delay(t, now));
    k_i(w, "gettingResultTime", task_getting_result(t, now));
    json_w_end_object(w);
}

static void write_execsum(json_writer *w, const st_execsum *e) {
    json_w_key(w, e->exec_id);
    json_w_begin_object(w);
    k_i(w, "taskTime", e->task_time);
    k_i(w, "failedTasks", e->failed);
    k_i(w, "succeededTasks", e->succeeded);
    k_i(w, "killedTasks", e->killed);
    k_i(w, "inputBytes", e->m.in_bytes);
    k_i(w, "inputRecords", e->m.in_records);
    k_i(w, "outputBytes", e->m.out_bytes);
    k_i(w, "outputRecords", e->m.out_records);
    k_i(w, "shuffleRead", e->m.sr_remote_bytes + e->m.sr_local_bytes);
    k_i(w, "shuffleReadRecords", e->m.sr_records);
    k_i(w, "shuffleWrite", e->m.sw_bytes);
    k_i(w, "shuffleWriteRecords", e->m.sw_records);
    k_i(w, "memoryBytesSpilled", e->m.mem_spilled);
    k_i(w, "diskBytesSpilled", e->m.disk_spilled);
    k_b(w, "isBlacklistedForStage", 0);
    k_b(w, "isExcludedForStage", 0);
    json_w_end_object(w);
}

static int cmp_task_id(const void *a, const void *b) {
    int64_t x = (*(st_task *const *)a)->task_id, y = (*(st_task *const *)b)->task_id;
    return x < y ? -1 : x > y;
}

int rj_stage(json_writer *w, const status_store *st, const st_stage *s, int details, int64_t now) {
    const task_metrics *m = &s->m;
    json_w_begin_object(w);
    k_s(w, "status", status_stage_name(s->status));
    k_i(w, "stageId", s->id);
    k_i(w, "attemptId", s->attempt);
    k_i(w, "numTasks", s->ntasks);
    k_i(w, "numActiveTasks", s->active_tasks);
    k_i(w, "numCompleteTasks", s->completed_tasks);
    k_i(w, "numFailedTasks", s->failed_tasks);
    k_i(w, "numKilledTasks", s->killed_tasks);
    k_i(w, "numCompletedIndices", s->completed_indices);
    k_ot(w, "submissionTime", s->submit_ms);
    k_ot(w, "firstTaskLaunchedTime", s->first_launch_ms);
    k_ot(w, "completionTime", s->complete_ms);
    k_os(w, "failureReason", s->failure);
    k_i(w, "executorDeserializeTime", m->deser_ms);
    k_i(w, "executorDeserializeCpuTime", m->deser_cpu_ns);
    k_i(w, "executorRunTime", m->run_ms);
    k_i(w, "executorCpuTime", m->cpu_ns);
    k_i(w, "resultSize", m->result_size);
    k_i(w, "jvmGcTime", 0);
    k_i(w, "resultSerializationTime", 0);
    k_i(w, "memoryBytesSpilled", m->mem_spilled);
    k_i(w, "diskBytesSpilled", m->disk_spilled);
    k_i(w, "peakExecutionMemory", m->peak_mem);
    k_i(w, "inputBytes", m->in_bytes);
    k_i(w, "inputRecords", m->in_records);
    k_i(w, "outputBytes", m->out_bytes);
    k_i(w, "outputRecords", m->out_records);
    k_i(w, "shuffleRemoteBlocksFetched", m->sr_remote_blocks);
    k_i(w, "shuffleLocalBlocksFetched", m->sr_local_blocks);
    k_i(w, "shuffleFetchWaitTime", m->sr_fetch_wait_ms);
    k_i(w, "shuffleRemoteBytesRead", m->sr_remote_bytes);
    k_i(w, "shuffleRemoteBytesReadToDisk", m->sr_remote_disk_bytes);
    k_i(w, "shuffleLocalBytesRead", m->sr_local_bytes);
    k_i(w, "shuffleReadBytes", m->sr_remote_bytes + m->sr_local_bytes);
    k_i(w, "shuffleReadRecords", m->sr_records);
    static const char *const merged[] = {
        "shuffleCorruptMergedBlockChunks",  "shuffleMergedFetchFallbackCount", "shuffleMergedRemoteBlocksFetched",
        "shuffleMergedLocalBlocksFetched",  "shuffleMergedRemoteChunksFetched", "shuffleMergedLocalChunksFetched",
        "shuffleMergedRemoteBytesRead",     "shuffleMergedLocalBytesRead",      "shuffleRemoteReqsDuration",
        "shuffleMergedRemoteReqsDuration"};
    for (size_t i = 0; i < sizeof merged / sizeof *merged; i++) k_i(w, merged[i], 0);
    k_i(w, "shuffleWriteBytes", m->sw_bytes);
    k_i(w, "shuffleWriteTime", m->sw_time_ns);
    k_i(w, "shuffleWriteRecords", m->sw_records);
    k_s(w, "name", s->name);
    k_os(w, "description", s->description);
    k_s(w, "details", s->details);
    k_s(w, "schedulingPool", "default");
    k_ints(w, "rddIds", s->rdd_ids, s->nrdds);
    k_empty_arr(w, "accumulatorUpdates");
    if (details) {
        st_task **v = malloc((size_t)(s->ntasks_kept ? s->ntasks_kept : 1) * sizeof *v);
        if (!v) return EM_ENOMEM;
        int n = 0, spec[5] = {0};
        for (st_task *t = s->tasks; t && n < s->ntasks_kept; t = t->next) {
            v[n++] = t;
            if (t->speculative) {
                spec[0]++;
                spec[1] += t->status == ST_RUNNING;
                spec[2] += t->status == ST_SUCCESS;
                spec[3] += t->status == ST_FAILED;
                spec[4] += t->status == ST_KILLED;
            }
        }
        qsort(v, (size_t)n, sizeof *v, cmp_task_id);
        json_w_key(w, "tasks");
        json_w_begin_object(w);
        for (int i = 0; i < n; i++) {
            char key[24];
            snprintf(key, sizeof key, "%lld", (long long)v[i]->task_id);
            json_w_key(w, key);
            rj_task(w, st, v[i], now);
        }
        json_w_end_object(w);
        free(v);
        json_w_key(w, "executorSummary");
        json_w_begin_object(w);
        for (const st_execsum *e = s->execsums; e; e = e->next) write_execsum(w, e);
        json_w_end_object(w);
        json_w_key(w, "speculationSummary");
        json_w_begin_object(w);
        k_i(w, "numTasks", spec[0]);
        k_i(w, "numActiveTasks", spec[1]);
        k_i(w, "numCompletedTasks", spec[2]);
        k_i(w, "numFailedTasks", spec[3]);
        k_i(w, "numKilledTasks", spec[4]);
        json_w_end_object(w);
    }
    k_killed(w, s->killed);
    k_i(w, "resourceProfileId", 0);
    k_b(w, "isShufflePushEnabled", 0);
    k_i(w, "shuffleMergersCount", 0);
    json_w_end_object(w);
    return 0;
}

/* ------------------------------------------------------------- taskSummary */

void rj_task_figures(const st_task *t, int64_t now, double *f) {
    const task_metrics *m = &t->m;
    f[D_DURATION] = (double)rj_task_duration(t, now);
    f[D_DESER] = (double)m->deser_ms;
    f[D_DESER_CPU] = (double)m->deser_cpu_ns;
    f[D_RUN] = (double)m->run_ms;
    f[D_CPU] = (double)m->cpu_ns;
    f[D_RESULT] = (double)m->result_size;
    f[D_GC] = 0;
    f[D_SER] = 0;
    f[D_GETTING] = (double)task_getting_result(t, now);
    f[D_SCHED] = (double)task_sched_delay(t, now);
    f[D_PEAK] = (double)m->peak_mem;
    f[D_MEMSPILL] = (double)m->mem_spilled;
    f[D_DISKSPILL] = (double)m->disk_spilled;
    f[D_IN_BYTES] = (double)m->in_bytes;
    f[D_IN_RECS] = (double)m->in_records;
    f[D_OUT_BYTES] = (double)m->out_bytes;
    f[D_OUT_RECS] = (double)m->out_records;
    f[D_SR_BYTES] = (double)(m->sr_remote_bytes + m->sr_local_bytes);
    f[D_SR_RECS] = (double)m->sr_records;
    f[D_SR_RBLOCKS] = (double)m->sr_remote_blocks;
    f[D_SR_LBLOCKS] = (double)m->sr_local_blocks;
    f[D_SR_WAIT] = (double)m->sr_fetch_wait_ms;
    f[D_SR_RBYTES] = (double)m->sr_remote_bytes;
    f[D_SR_RDISK] = (double)m->sr_remote_disk_bytes;
    f[D_SR_BLOCKS] = (double)(m->sr_remote_blocks + m->sr_local_blocks);
    f[D_SW_BYTES] = (double)m->sw_bytes;
    f[D_SW_RECS] = (double)m->sw_records;
    f[D_SW_TIME] = (double)m->sw_time_ns;
}

static void k_dist(json_writer *w, const char *k, const rj_dist *d, int f) {
    json_w_key(w, k);
    json_w_begin_array(w);
    for (int i = 0; i < d->nq; i++) json_w_f64(w, d->v[f][i]);
    json_w_end_array(w);
}

void rj_summary(json_writer *w, const rj_dist *d) {
    json_w_begin_object(w);
    json_w_key(w, "quantiles");
    json_w_begin_array(w);
    for (int i = 0; i < d->nq; i++) json_w_f64(w, d->q[i]);
    json_w_end_array(w);
    static const char *const top[] = {"duration",         "executorDeserializeTime", "executorDeserializeCpuTime",
                                      "executorRunTime",  "executorCpuTime",         "resultSize",
                                      "jvmGcTime",        "resultSerializationTime", "gettingResultTime",
                                      "schedulerDelay",   "peakExecutionMemory",     "memoryBytesSpilled",
                                      "diskBytesSpilled"};
    for (int f = 0; f <= D_DISKSPILL; f++) k_dist(w, top[f], d, f);
    json_w_key(w, "inputMetrics");
    json_w_begin_object(w);
    k_dist(w, "bytesRead", d, D_IN_BYTES);
    k_dist(w, "recordsRead", d, D_IN_RECS);
    json_w_end_object(w);
    json_w_key(w, "outputMetrics");
    json_w_begin_object(w);
    k_dist(w, "bytesWritten", d, D_OUT_BYTES);
    k_dist(w, "recordsWritten", d, D_OUT_RECS);
    json_w_end_object(w);
    json_w_key(w, "shuffleReadMetrics");
    json_w_begin_object(w);
    k_dist(w, "readBytes", d, D_SR_BYTES);
    k_dist(w, "readRecords", d, D_SR_RECS);
    k_dist(w, "remoteBlocksFetched", d, D_SR_RBLOCKS);
    k_dist(w, "localBlocksFetched", d, D_SR_LBLOCKS);
    k_dist(w, "fetchWaitTime", d, D_SR_WAIT);
    k_dist(w, "remoteBytesRead", d, D_SR_RBYTES);
    k_dist(w, "remoteBytesReadToDisk", d, D_SR_RDISK);
    k_dist(w, "totalBlocksFetched", d, D_SR_BLOCKS);
    k_dist(w, "remoteReqsDuration", d, D_GC); /* always 0 */
    json_w_key(w, "shufflePushReadMetricsDist");
    json_w_begin_object(w);
    static const char *const push[] = {"corruptMergedBlockChunks", "mergedFetchFallbackCount",
                                       "remoteMergedBlocksFetched", "localMergedBlocksFetched",
                                       "remoteMergedChunksFetched", "localMergedChunksFetched",
                                       "remoteMergedBytesRead",     "localMergedBytesRead",
                                       "remoteMergedReqsDuration"};
    for (size_t i = 0; i < sizeof push / sizeof *push; i++) k_dist(w, push[i], d, D_GC);
    json_w_end_object(w);
    json_w_end_object(w);
    json_w_key(w, "shuffleWriteMetrics");
    json_w_begin_object(w);
    k_dist(w, "writeBytes", d, D_SW_BYTES);
    k_dist(w, "writeRecords", d, D_SW_RECS);
    k_dist(w, "writeTime", d, D_SW_TIME);
    json_w_end_object(w);
    json_w_end_object(w);
}

int rj_dist_collect(const st_stage *s, int64_t now, double **cols) {
    *cols = NULL;
    int n = 0;
    for (const st_task *t = s->tasks; t; t = t->next) n += t->status == ST_SUCCESS && t->has_metrics;
    if (!n) return 0;
    double *col = malloc((size_t)n * D_N * sizeof *col);
    if (!col) return em__seterr(EM_ENOMEM, "task summary: out of memory");
    int i = 0;
    double f[D_N];
    for (const st_task *t = s->tasks; t && i < n; t = t->next) {
        if (t->status != ST_SUCCESS || !t->has_metrics) continue;
        rj_task_figures(t, now, f);
        for (int k = 0; k < D_N; k++) col[(size_t)k * (size_t)n + (size_t)i] = f[k];
        i++;
    }
    *cols = col;
    return n;
}

/* Rearrange c[lo, hi] so that c[k] holds the value of rank k, the smaller
 * ones before it and the larger after (Hoare's selection). */
static void select_rank(double *c, int lo, int hi, int k) {
    while (lo < hi) {
        double pv = c[lo + (hi - lo) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (c[i] < pv) i++;
            while (c[j] > pv) j--;
            if (i <= j) {
                double t = c[i];
                c[i++] = c[j];
                c[j--] = t;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return;
    }
}

int rj_dist_compute(rj_dist *d, double *cols, int n) {
    d->mem = malloc((size_t)(d->nq ? d->nq : 1) * D_N * sizeof *d->mem);
    if (!d->mem) return em__seterr(EM_ENOMEM, "task summary: out of memory");
    int at[REST_QUANTILES_MAX], order[REST_QUANTILES_MAX];
    for (int q = 0; q < d->nq; q++) {
        int64_t r = (int64_t)(d->q[q] * n);
        at[q] = (int)(r > n - 1 ? n - 1 : r < 0 ? 0 : r);
        order[q] = q;
    }
    for (int i = 1; i < d->nq; i++) /* the ranks ascending */
        for (int j = i; j > 0 && at[order[j]] < at[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int k = 0; k < D_N; k++) {
        double *c = cols + (size_t)k * (size_t)n;
        d->v[k] = d->mem + (size_t)k * (size_t)d->nq;
        int lo = 0;
        for (int i = 0; i < d->nq; i++) {
            int r = at[order[i]];
            if (r >= lo) {
                select_rank(c, lo, n - 1, r);
                lo = r + 1;
            }
            d->v[k][order[i]] = c[r];
        }
    }
    return 0;
}

void rj_dist_free(rj_dist *d) {
    free(d->mem);
    d->mem = NULL;
}


/* ------------------------------------------------------------- executors */

void rj_exec(json_writer *w, const st_exec *x) {
    json_w_begin_object(w);
    k_s(w, "id", x->id);
    char hp[96];
    if (x->port) snprintf(hp, sizeof hp, "%s:%d", x->host, x->port);
    else snprintf(hp, sizeof hp, "%s", x->host);
    k_s(w, "hostPort", hp);
    k_b(w, "isActive", x->active);
    k_i(w, "rddBlocks", x->rdd_blocks);
    k_i(w, "memoryUsed", x->mem_used);
    k_i(w, "diskUsed", x->disk_used);
    k_i(w, "totalCores", x->cores);
    k_i(w, "maxTasks", x->cores);
    k_i(w, "activeTasks", x->active_tasks);
    k_i(w, "failedTasks", x->failed_tasks);
    k_i(w, "completedTasks", x->completed_tasks);
    k_i(w, "totalTasks", x->total_tasks);
    k_i(w, "totalDuration", x->total_duration);
    k_i(w, "totalGCTime", 0);
    k_i(w, "totalInputBytes", x->input_bytes);
    k_i(w, "totalShuffleRead", x->shuffle_read);
    k_i(w, "totalShuffleWrite", x->shuffle_write);
    k_b(w, "isBlacklisted", 0);
    k_i(w, "maxMemory", x->max_mem);
    k_t(w, "addTime", x->add_ms);
    k_ot(w, "removeTime", x->remove_ms);
    if (!x->active) k_os(w, "removeReason", x->remove_reason);
    write_logs(w, x);
    k_empty_arr(w, "blacklistedInStages");
    k_empty_obj(w, "attributes");
    k_empty_obj(w, "resources");
    k_i(w, "resourceProfileId", 0);
    k_b(w, "isExcluded", 0);
    k_empty_arr(w, "excludedInStages");
    json_w_end_object(w);
}

/* ------------------------------------------------------------- storage */

void rj_level_text(const ae_storage *l, char *out, size_t cap) {
    snprintf(out, cap, "%s%s%s%dx Replicated", l->use_disk ? "Disk " : "",
             l->use_memory ? (l->use_offheap ? "Memory (off heap) " : "Memory ") : "",
             l->deserialized ? "Deserialized " : "Serialized ", l->replication);
}

/* Each executor's share of the RDD (RDDDataDistribution). */
static void rdd_distribution(json_writer *w, const status_store *st, const st_rdd *d) {
    json_w_key_plain(w, "dataDistribution");
    json_w_begin_array(w);
    for (const st_exec *x = status_execs(st); x; x = x->next) {
        int64_t mem, disk;
        if (!rdd_blocks_on(&d->blocks, x->id, &mem, &disk)) continue;
        char hp[96];
        if (x->port) snprintf(hp, sizeof hp, "%s:%d", x->host, x->port);
        else snprintf(hp, sizeof hp, "%s", x->host);
        int64_t left = x->max_mem > x->mem_used ? x->max_mem - x->mem_used : 0;
        json_w_begin_object(w);
        k_s(w, "address", hp);
        k_i(w, "memoryUsed", mem);
        k_i(w, "memoryRemaining", left);
        k_i(w, "diskUsed", disk);
        k_i(w, "onHeapMemoryUsed", mem);
        k_i(w, "offHeapMemoryUsed", 0);
        k_i(w, "onHeapMemoryRemaining", left);
        k_i(w, "offHeapMemoryRemaining", 0);
        json_w_end_object(w);
    }
    json_w_end_array(w);
}

int rj_partition(const st_rdd *d, int i, rj_part *p) {
    const rdd_block *b = &d->blocks.b[i];
    int j = i;
    p->mem = p->disk = 0;
    for (; j < d->blocks.n && d->blocks.b[j].part == b->part; j++) {
        p->mem += d->blocks.b[j].mem;
        p->disk += d->blocks.b[j].disk;
    }
    snprintf(p->name, sizeof p->name, "rdd_%d_%d", d->id, b->part);
    ae_storage l = {.use_disk = b->on_disk, .use_memory = !b->on_disk, .replication = j - i};
    rj_level_text(&l, p->level, sizeof p->level);
    return j;
}

/* Each cached partition (RDDPartitionInfo). */
static void rdd_partitions(json_writer *w, const st_rdd *d) {
    json_w_key_plain(w, "partitions");
    json_w_begin_array(w);
    for (int i = 0, j; i < d->blocks.n; i = j) {
        rj_part p;
        j = rj_partition(d, i, &p);
        json_w_begin_object(w);
        k_s(w, "blockName", p.name);
        k_s(w, "storageLevel", p.level);
        k_i(w, "memoryUsed", p.mem);
        k_i(w, "diskUsed", p.disk);
        json_w_key_plain(w, "executors");
        json_w_begin_array(w);
        for (int k = i; k < j; k++) json_w_str(w, d->blocks.b[k].exec_id);
        json_w_end_array(w);
        json_w_end_object(w);
    }
    json_w_end_array(w);
}

void rj_rdd(json_writer *w, const status_store *st, const st_rdd *d, int details) {
    char lv[96];
    rj_level_text(&d->level, lv, sizeof lv);
    json_w_begin_object(w);
    k_i(w, "id", d->id);
    k_s(w, "name", d->name);
    k_i(w, "numPartitions", d->nparts);
    k_i(w, "numCachedPartitions", d->ncached);
    k_s(w, "storageLevel", lv);
    k_i(w, "memoryUsed", d->mem);
    k_i(w, "diskUsed", d->disk);
    if (details) {
        rdd_distribution(w, st, d);
        rdd_partitions(w, d);
    }
    json_w_end_object(w);
}
