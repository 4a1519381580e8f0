/*
 * uiprom.c -- the driver's executor metrics for Prometheus (see uiprom.h).
 * Each metric is one family, its samples one per executor of each
 * application, labelled as Spark labels them (application_id,
 * application_name, executor_id).
 */
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "prom.h"
#include "status.h"
#include "uiprom.h"

typedef struct metric {
    const char *name, *type, *help;
} metric;

static const metric metrics[] = {
    {"metrics_executor_totalCores", "gauge", "Cores of the executor."},
    {"metrics_executor_maxTasks", "gauge", "Tasks the executor runs at once."},
    {"metrics_executor_activeTasks", "gauge", "Tasks running on the executor now."},
    {"metrics_executor_failedTasks_total", "counter", "Task attempts that failed on the executor."},
    {"metrics_executor_completedTasks_total", "counter", "Task attempts that succeeded on the executor."},
    {"metrics_executor_totalTasks_total", "counter", "Task attempts that ended on the executor."},
    {"metrics_executor_totalDuration_seconds_total", "counter", "Time its tasks ran, in seconds."},
    {"metrics_executor_totalGCTime_seconds_total", "counter", "Garbage collection time (always 0: ember has none)."},
    {"metrics_executor_totalInputBytes_bytes_total", "counter", "Bytes its tasks read as input."},
    {"metrics_executor_totalShuffleRead_bytes_total", "counter", "Shuffle bytes its tasks read."},
    {"metrics_executor_totalShuffleWrite_bytes_total", "counter", "Shuffle bytes its tasks wrote."},
    {"metrics_executor_maxMemory_bytes", "gauge", "Memory the executor may use for storage."},
};
#define NMETRICS ((int)(sizeof metrics / sizeof metrics[0]))

static double value_of(int m, const st_exec *x) {
    switch (m) {
    case 0: return x->cores;
    case 1: return x->cores;
    case 2: return x->active_tasks;
    case 3: return x->failed_tasks;
    case 4: return x->completed_tasks;
    case 5: return x->total_tasks;
    case 6: return (double)x->total_duration / 1000.0;
    case 7: return 0;
    case 8: return (double)x->input_bytes;
    case 9: return (double)x->shuffle_read;
    case 10: return (double)x->shuffle_write;
    case 11: return (double)x->max_mem;
    }
    return 0;
}

/* The applications' ids and names, copied out of the provider's listing
 * (its each must not call back into it). */
typedef struct app_list {
    char **id, **attempt, **name;
    int n, cap, failed;
} app_list;

static char *dup(const char *s) { return s ? strdup(s) : NULL; }

static void note_app(void *arg, const rest_app *a) {
    app_list *l = arg;
    if (l->failed) return;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        char **i = realloc(l->id, sizeof *i * (size_t)cap), **t = i ? realloc(l->attempt, sizeof *t * (size_t)cap) : NULL;
        if (i) l->id = i;
        if (t) l->attempt = t;
        char **m = t ? realloc(l->name, sizeof *m * (size_t)cap) : NULL;
        if (!m) {
            l->failed = 1;
            return;
        }
        l->name = m;
        l->cap = cap;
    }
    l->id[l->n] = dup(a->id);
    l->attempt[l->n] = dup(a->attempt_id);
    l->name[l->n] = dup(a->name);
    if (!l->id[l->n]) l->failed = 1;
    l->n++;
}

static void list_free(app_list *l) {
    for (int i = 0; i < l->n; i++) {
        free(l->id[i]);
        free(l->attempt[i]);
        free(l->name[i]);
    }
    free(l->id);
    free(l->attempt);
    free(l->name);
}

/* One metric's samples: every active executor of application i. */
static int samples(const rest_provider *p, const app_list *l, int i, int m, ebuf *b) {
    status_store *st = p->acquire(p->ud, l->id[i], l->attempt[i]);
    if (!st) return 0;
    int rc = 0;
    status_rdlock(st);
    for (st_exec *x = status_execs(st); x && !rc; x = x->next) {
        if (!x->active) continue;
        prom_label lab[] = {{"application_id", l->id[i]},
                            {"application_name", l->name[i] ? l->name[i] : ""},
                            {"executor_id", x->id}};
        rc = prom_sample(b, metrics[m].name, lab, 3, value_of(m, x));
    }
    status_unlock(st);
    if (p->release) p->release(p->ud, st);
    return rc;
}

int uiprom_executors(const rest_provider *p, ebuf *body) {
    app_list l;
    memset(&l, 0, sizeof l);
    p->each(p->ud, note_app, &l);
    int rc = l.failed ? EM_ENOMEM : 0;
    for (int m = 0; m < NMETRICS && !rc; m++) {
        rc = prom_family(body, metrics[m].name, metrics[m].type, metrics[m].help);
        for (int i = 0; i < l.n && !rc; i++) rc = samples(p, &l, i, m, body);
    }
    list_free(&l);
    return rc ? EM_ENOMEM : 0;
}
