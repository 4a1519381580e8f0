/*
 * appevent.c -- allocating, copying and freeing listener events, and their
 * Spark names (see appevent.h).
 */
#include <stdlib.h>
#include <string.h>

#include "appevent.h"
#include "ember.h"
#include "err.h"

app_event *app_event_new(ae_kind k) {
    app_event *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->kind = k;
    e->task.partition = -1;
    e->end.map_index = -1;
    return e;
}

static void rdd_clear(ae_rdd *r) {
    free(r->name);
    free(r->callsite);
    free(r->parents);
}

void ae_stage_clear(ae_stage *s) {
    free(s->name);
    free(s->details);
    for (int i = 0; i < s->nrdds; i++) rdd_clear(&s->rdds[i]);
    free(s->rdds);
    free(s->parents);
    free(s->failure);
    memset(s, 0, sizeof *s);
}

static int dup_str(char **dst, const char *src) {
    *dst = NULL;
    if (!src) return 0;
    *dst = strdup(src);
    return *dst ? 0 : EM_ENOMEM;
}

static int dup_ints(int **dst, const int *src, int n) {
    *dst = NULL;
    if (n <= 0) return 0;
    *dst = malloc((size_t)n * sizeof(int));
    if (!*dst) return EM_ENOMEM;
    memcpy(*dst, src, (size_t)n * sizeof(int));
    return 0;
}

int ae_stage_copy(ae_stage *dst, const ae_stage *src) {
    *dst = *src;
    dst->name = dst->details = dst->failure = NULL;
    dst->rdds = NULL;
    dst->parents = NULL;
    dst->nrdds = 0;
    int rc = dup_str(&dst->name, src->name);
    if (!rc) rc = dup_str(&dst->details, src->details);
    if (!rc) rc = dup_str(&dst->failure, src->failure);
    if (!rc) rc = dup_ints(&dst->parents, src->parents, src->nparents);
    if (!rc && src->nrdds > 0) {
        dst->rdds = calloc((size_t)src->nrdds, sizeof(ae_rdd));
        if (!dst->rdds) rc = EM_ENOMEM;
        for (int i = 0; !rc && i < src->nrdds; i++) {
            ae_rdd *d = &dst->rdds[i];
            const ae_rdd *r = &src->rdds[i];
            *d = *r;
            d->name = d->callsite = NULL;
            d->parents = NULL;
            dst->nrdds = i + 1;
            rc = dup_str(&d->name, r->name);
            if (!rc) rc = dup_str(&d->callsite, r->callsite);
            if (!rc) rc = dup_ints(&d->parents, r->parents, r->nparents);
        }
    }
    if (rc) ae_stage_clear(dst);
    return rc;
}

void app_event_free(app_event *e) {
    if (!e) return;
    free(e->version);
    free(e->app_name);
    free(e->app_id);
    free(e->attempt_id);
    free(e->user);
    for (int s = 0; s < AE_ENV_SECTIONS; s++) {
        for (int i = 0; i < e->nprops[s]; i++) {
            free(e->props[s][i].key);
            free(e->props[s][i].value);
        }
        free(e->props[s]);
    }
    free(e->exec.stdout_url);
    free(e->exec.stderr_url);
    free(e->reason);
    for (int i = 0; i < e->nstages; i++) ae_stage_clear(&e->stages[i]);
    free(e->stages);
    free(e->end.class_name);
    free(e->end.message);
    free(e->other);
    free(e);
}

const char *app_event_name(const app_event *e) {
    switch (e->kind) {
    case AE_LOG_START: return "SparkListenerLogStart";
    case AE_APP_START: return "SparkListenerApplicationStart";
    case AE_APP_END: return "SparkListenerApplicationEnd";
    case AE_ENV_UPDATE: return "SparkListenerEnvironmentUpdate";
    case AE_EXEC_ADDED: return "SparkListenerExecutorAdded";
    case AE_EXEC_REMOVED: return "SparkListenerExecutorRemoved";
    case AE_JOB_START: return "SparkListenerJobStart";
    case AE_JOB_END: return "SparkListenerJobEnd";
    case AE_STAGE_SUBMITTED: return "SparkListenerStageSubmitted";
    case AE_STAGE_COMPLETED: return "SparkListenerStageCompleted";
    case AE_TASK_START: return "SparkListenerTaskStart";
    case AE_TASK_GETTING_RESULT: return "SparkListenerTaskGettingResult";
    case AE_TASK_END: return "SparkListenerTaskEnd";
    case AE_UNPERSIST_RDD: return "SparkListenerUnpersistRDD";
    case AE_BLOCK_MANAGER_ADDED: return "SparkListenerBlockManagerAdded";
    case AE_BLOCK_UPDATED: return "SparkListenerBlockUpdated";
    case AE_OTHER: return e->other ? e->other : "";
    }
    return "";
}

const char *ae_reason_name(ae_reason r) {
    switch (r) {
    case AE_SUCCESS: return "Success";
    case AE_FETCH_FAILED: return "FetchFailed";
    case AE_EXCEPTION: return "ExceptionFailure";
    case AE_KILLED: return "TaskKilled";
    case AE_EXEC_LOST: return "ExecutorLostFailure";
    case AE_RESUBMITTED: return "Resubmitted";
    case AE_RESULT_LOST: return "TaskResultLost";
    case AE_COMMIT_DENIED: return "TaskCommitDenied";
    case AE_UNKNOWN_REASON: return "UnknownReason";
    }
    return "UnknownReason";
}
