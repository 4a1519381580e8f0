/*
 * status.c -- the application's status store (see status.h): listener
 * events folded into jobs, stages, tasks, executors and cached RDDs, with
 * Spark's counting rules and its retention limits.
 *
 * Each kind of record sits in a hash map by id (u64map below: open
 * addressing, linear probing, deletion by shifting back) and in a list in
 * creation order; finished jobs and stages sit in a second list in
 * finishing order, whose head is the next to drop when a limit is passed.
 * A stage's tasks are a list in launch order, so dropping its oldest
 * finished tasks skips at most the few still running.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

/* ------------------------------------------------------------- u64map */

typedef struct u64map {
    uint64_t *keys;
    void **vals; /* NULL: empty slot */
    uint32_t n, cap;
} u64map;

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static void *m_get(const u64map *m, uint64_t k) {
    if (!m->cap) return NULL;
    for (uint32_t i = (uint32_t)mix64(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->vals[i]) return NULL;
        if (m->keys[i] == k) return m->vals[i];
    }
}

static int m_put(u64map *m, uint64_t k, void *v);

static int m_grow(u64map *m) {
    uint32_t cap = m->cap ? m->cap * 2 : 16;
    u64map t = {calloc(cap, sizeof(uint64_t)), calloc(cap, sizeof(void *)), 0, cap};
    if (!t.keys || !t.vals) {
        free(t.keys);
        free(t.vals);
        return -1;
    }
    for (uint32_t i = 0; i < m->cap; i++)
        if (m->vals[i]) m_put(&t, m->keys[i], m->vals[i]);
    free(m->keys);
    free(m->vals);
    *m = t;
    return 0;
}

/* Insert or replace.  0, or -1 out of memory (m unchanged). */
static int m_put(u64map *m, uint64_t k, void *v) {
    if ((m->n + 1) * 4 > m->cap * 3 && m_grow(m)) return -1;
    uint32_t i = (uint32_t)mix64(k) & (m->cap - 1);
    while (m->vals[i] && m->keys[i] != k) i = (i + 1) & (m->cap - 1);
    if (!m->vals[i]) m->n++;
    m->keys[i] = k;
    m->vals[i] = v;
    return 0;
}

static void m_del(u64map *m, uint64_t k) {
    if (!m->cap) return;
    uint32_t mask = m->cap - 1, i = (uint32_t)mix64(k) & mask;
    while (m->vals[i] && m->keys[i] != k) i = (i + 1) & mask;
    if (!m->vals[i]) return;
    m->vals[i] = NULL;
    m->n--;
    /* Shift back the run after the hole. */
    for (uint32_t j = (i + 1) & mask; m->vals[j]; j = (j + 1) & mask) {
        uint32_t h = (uint32_t)mix64(m->keys[j]) & mask;
        /* Move j to i when its home h is not within (i, j]. */
        if (((j - h) & mask) >= ((j - i) & mask)) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            m->vals[j] = NULL;
            i = j;
        }
    }
}

static void m_free(u64map *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static uint64_t str_key(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static uint64_t stage_key(int id, int attempt) { return (uint64_t)(uint32_t)id << 32 | (uint32_t)attempt; }

/* ------------------------------------------------------------- the store */

struct status_store {
    pthread_rwlock_t lock;
    atomic_int rwait; /* readers waiting for the lock */
    status_limits lim;
    status_app app;
    ae_prop *env[AE_ENV_SECTIONS];
    int nenv[AE_ENV_SECTIONS];
    u64map jobs, stages, tasks, execs, rdds;
    st_job *job_head, *job_tail, *jfin_head, *jfin_tail;
    st_stage *stage_head, *stage_tail, *sfin_head, *sfin_tail;
    st_exec *exec_head, *exec_tail;
    st_rdd *rdd_head, *rdd_tail;
    int njobs, nstages, ndead, max_attempt;
    uint32_t exec_serial;
};

/* Doubly linked list helpers over any struct with the named links. */
#define L_APPEND(head, tail, x, PREV, NEXT)                                                                            \
    do {                                                                                                               \
        (x)->PREV = (tail);                                                                                            \
        (x)->NEXT = NULL;                                                                                              \
        if (tail) (tail)->NEXT = (x);                                                                                  \
        else (head) = (x);                                                                                             \
        (tail) = (x);                                                                                                  \
    } while (0)
#define L_REMOVE(head, tail, x, PREV, NEXT)                                                                            \
    do {                                                                                                               \
        if ((x)->PREV) (x)->PREV->NEXT = (x)->NEXT;                                                                    \
        else (head) = (x)->NEXT;                                                                                       \
        if ((x)->NEXT) (x)->NEXT->PREV = (x)->PREV;                                                                    \
        else (tail) = (x)->PREV;                                                                                       \
        (x)->PREV = (x)->NEXT = NULL;                                                                                  \
    } while (0)

static char *dup_s(const char *s) { return s ? strdup(s) : NULL; }
static void set_s(char **dst, const char *s) {
    if (!s) return;
    char *c = strdup(s);
    if (!c) return;
    free(*dst);
    *dst = c;
}
static int *dup_ints(const int *p, int n) {
    if (n <= 0 || !p) return NULL;
    int *c = malloc((size_t)n * sizeof *c);
    if (c) memcpy(c, p, (size_t)n * sizeof *c);
    return c;
}
static void copy_id(char *dst, size_t cap, const char *s) {
    size_t n = strnlen(s, cap - 1);
    memcpy(dst, s, n);
    dst[n] = 0;
}

const char *status_job_name(int s) {
    static const char *const n[] = {"RUNNING", "SUCCEEDED", "FAILED", "UNKNOWN"};
    return s >= 0 && s <= SJ_UNKNOWN ? n[s] : "UNKNOWN";
}
const char *status_stage_name(int s) {
    static const char *const n[] = {"PENDING", "ACTIVE", "COMPLETE", "FAILED", "SKIPPED"};
    return s >= 0 && s <= SS_SKIPPED ? n[s] : "PENDING";
}
const char *status_task_name(int s) {
    static const char *const n[] = {"RUNNING", "SUCCESS", "FAILED", "KILLED"};
    return s >= 0 && s <= ST_KILLED ? n[s] : "UNKNOWN";
}

status_store *status_new(const status_limits *lim) {
    status_store *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    /* Readers first (the default): the readers are a UI's one loop thread
     * (or a few), each holding the lock for one answer, so the bus thread
     * waits at most that long; preferring the writer would starve the UI
     * for as long as events keep coming. */
    pthread_rwlock_init(&st->lock, NULL);
    st->lim.retained_jobs = lim && lim->retained_jobs > 0 ? lim->retained_jobs : STATUS_RETAINED_JOBS;
    st->lim.retained_stages = lim && lim->retained_stages > 0 ? lim->retained_stages : STATUS_RETAINED_STAGES;
    st->lim.retained_tasks = lim && lim->retained_tasks > 0 ? lim->retained_tasks : STATUS_RETAINED_TASKS;
    st->lim.retained_dead_execs =
        lim && lim->retained_dead_execs > 0 ? lim->retained_dead_execs : STATUS_RETAINED_DEAD_EXECS;
    return st;
}

static void killed_free(st_killed *k) {
    while (k) {
        st_killed *n = k->next;
        free(k->reason);
        free(k);
        k = n;
    }
}

static void killed_add(st_killed **list, const char *reason) {
    if (!reason) reason = "unknown";
    for (st_killed *k = *list; k; k = k->next)
        if (!strcmp(k->reason, reason)) {
            k->count++;
            return;
        }
    st_killed *k = calloc(1, sizeof *k);
    if (!k || !(k->reason = strdup(reason))) {
        free(k);
        return;
    }
    k->count = 1;
    k->next = *list;
    *list = k;
}

static void task_free(st_task *t) {
    free(t->error);
    free(t);
}

static void stage_free(st_stage *s) {
    for (st_task *t = s->tasks; t;) {
        st_task *n = t->next;
        task_free(t);
        t = n;
    }
    for (st_execsum *e = s->execsums; e;) {
        st_execsum *n = e->next;
        free(e);
        e = n;
    }
    killed_free(s->killed);
    free(s->name);
    free(s->details);
    free(s->description);
    free(s->failure);
    free(s->rdd_ids);
    free(s->parents);
    free(s->job_ids);
    free(s->done_idx);
    free(s);
}

static void job_free(st_job *j) {
    for (int i = 0; i < j->nstages; i++) free(j->done_idx ? j->done_idx[i] : NULL);
    free(j->done_idx);
    free(j->stage_ids);
    free(j->stage_ntasks);
    free(j->stage_state);
    killed_free(j->killed);
    free(j->name);
    free(j->description);
    free(j->group);
    free(j);
}

static void exec_free(st_exec *x) {
    free(x->remove_reason);
    free(x->stdout_url);
    free(x->stderr_url);
    free(x);
}

/* An RDD's counts from its block records. */
static void rdd_take_blocks(st_rdd *r) {
    r->ncached = r->blocks.nparts;
    r->mem = r->blocks.mem;
    r->disk = r->blocks.disk;
}

static void rdd_free(st_rdd *r) {
    rdd_blocks_free(&r->blocks);
    free(r->name);
    free(r);
}

static void env_clear(status_store *st) {
    for (int s = 0; s < AE_ENV_SECTIONS; s++) {
        for (int i = 0; i < st->nenv[s]; i++) {
            free(st->env[s][i].key);
            free(st->env[s][i].value);
        }
        free(st->env[s]);
        st->env[s] = NULL;
        st->nenv[s] = 0;
    }
}

void status_free(status_store *st) {
    if (!st) return;
    for (st_job *j = st->job_head; j;) {
        st_job *n = j->next;
        job_free(j);
        j = n;
    }
    for (st_stage *s = st->stage_head; s;) {
        st_stage *n = s->next;
        stage_free(s);
        s = n;
    }
    for (st_exec *x = st->exec_head; x;) {
        st_exec *n = x->next;
        exec_free(x);
        x = n;
    }
    for (st_rdd *r = st->rdd_head; r;) {
        st_rdd *n = r->next;
        rdd_free(r);
        r = n;
    }
    env_clear(st);
    free(st->app.name);
    free(st->app.id);
    free(st->app.attempt_id);
    free(st->app.user);
    free(st->app.version);
    m_free(&st->jobs);
    m_free(&st->stages);
    m_free(&st->tasks);
    m_free(&st->execs);
    m_free(&st->rdds);
    pthread_rwlock_destroy(&st->lock);
    free(st);
}

/* A reader waiting for the lock counts itself in rwait, and the writer
 * lets it in before taking the lock again: else a steady stream of events
 * would re-take the lock each time before the woken reader runs, and shut
 * the UI out for as long as a stage runs. */
void status_rdlock(status_store *st) {
    atomic_fetch_add(&st->rwait, 1);
    pthread_rwlock_rdlock(&st->lock);
    atomic_fetch_sub(&st->rwait, 1);
}
void status_unlock(status_store *st) { pthread_rwlock_unlock(&st->lock); }

/* ------------------------------------------------------------- lookups */

const status_app *status_app_info(const status_store *st) { return &st->app; }
const ae_prop *status_env(const status_store *st, int sec, int *n) {
    if (sec < 0 || sec >= AE_ENV_SECTIONS) {
        *n = 0;
        return NULL;
    }
    *n = st->nenv[sec];
    return st->env[sec];
}
st_job *status_jobs(const status_store *st) { return st->job_head; }
st_stage *status_stages(const status_store *st) { return st->stage_head; }
st_exec *status_execs(const status_store *st) { return st->exec_head; }
st_rdd *status_rdds(const status_store *st) { return st->rdd_head; }
int status_njobs(const status_store *st) { return st->njobs; }
int status_nstages(const status_store *st) { return st->nstages; }
st_job *status_job(const status_store *st, int id) { return m_get(&st->jobs, (uint64_t)(uint32_t)id); }
st_stage *status_stage(const status_store *st, int id, int attempt) {
    return m_get(&st->stages, stage_key(id, attempt));
}
st_task *status_task(const status_store *st, int64_t task_id) { return m_get(&st->tasks, (uint64_t)task_id); }
st_rdd *status_rdd(const status_store *st, int id) { return m_get(&st->rdds, (uint64_t)(uint32_t)id); }
int status_max_attempt(const status_store *st) { return st->max_attempt; }

st_exec *status_exec(const status_store *st, const char *id) {
    st_exec *x = m_get(&st->execs, str_key(id));
    if (x && !strcmp(x->id, id)) return x;
    /* A hash collision (or a map that could not grow): the list has it. */
    for (x = st->exec_head; x; x = x->next)
        if (!strcmp(x->id, id)) return x;
    return NULL;
}

/* ------------------------------------------------------------- executors */

static st_exec *exec_get(status_store *st, const char *id, int64_t now) {
    if (!id || !*id) id = "driver";
    st_exec *x = status_exec(st, id);
    if (x) return x;
    if (!(x = calloc(1, sizeof *x))) return NULL;
    copy_id(x->id, sizeof x->id, id);
    x->active = 1;
    x->add_ms = now;
    x->serial = ++st->exec_serial;
    if (!m_get(&st->execs, str_key(x->id))) m_put(&st->execs, str_key(x->id), x);
    L_APPEND(st->exec_head, st->exec_tail, x, prev, next);
    return x;
}

static void exec_drop(status_store *st, st_exec *x) {
    if (m_get(&st->execs, str_key(x->id)) == x) m_del(&st->execs, str_key(x->id));
    L_REMOVE(st->exec_head, st->exec_tail, x, prev, next);
    exec_free(x);
}

static void on_exec_added(status_store *st, const app_event *e) {
    st_exec *x = exec_get(st, e->exec.id, e->time_ms);
    if (!x) return;
    if (!x->active) st->ndead--;
    x->active = 1;
    x->remove_ms = 0;
    x->add_ms = e->time_ms ? e->time_ms : x->add_ms;
    if (e->exec.host[0]) copy_id(x->host, sizeof x->host, e->exec.host);
    if (e->exec.port) x->port = e->exec.port;
    if (e->exec.cores) x->cores = e->exec.cores;
    if (e->kind == AE_BLOCK_MANAGER_ADDED && e->max_mem) x->max_mem = e->max_mem;
    set_s(&x->stdout_url, e->exec.stdout_url);
    set_s(&x->stderr_url, e->exec.stderr_url);
}

static void on_exec_removed(status_store *st, const app_event *e) {
    st_exec *x = status_exec(st, e->exec.id[0] ? e->exec.id : "driver");
    if (!x || !x->active) return;
    x->active = 0;
    x->remove_ms = e->time_ms;
    set_s(&x->remove_reason, e->reason);
    st->ndead++;
    /* Its cached partitions went with it. */
    for (st_rdd *r = st->rdd_head; r; r = r->next) {
        if (!r->has_blocks) continue;
        rdd_blocks_drop_exec(&r->blocks, x->id, &x->rdd_blocks, &x->mem_used, &x->disk_used);
        rdd_take_blocks(r);
    }
    /* Past the limit, the first removed go. */
    while (st->ndead > st->lim.retained_dead_execs) {
        st_exec *old = NULL;
        for (st_exec *y = st->exec_head; y; y = y->next)
            if (!y->active && (!old || y->remove_ms < old->remove_ms)) old = y;
        if (!old) break;
        exec_drop(st, old);
        st->ndead--;
    }
}

/* ------------------------------------------------------------- stages */

static void stage_set_info(status_store *st, st_stage *s, const ae_stage *in) {
    set_s(&s->name, in->name);
    set_s(&s->details, in->details);
    if (in->ntasks > 0) s->ntasks = in->ntasks;
    if (in->nrdds > 0) {
        int *ids = malloc((size_t)in->nrdds * sizeof *ids);
        if (ids) {
            for (int i = 0; i < in->nrdds; i++) ids[i] = in->rdds[i].id;
            free(s->rdd_ids);
            s->rdd_ids = ids;
            s->nrdds = in->nrdds;
        }
    }
    if (in->nparents > 0) {
        int *p = dup_ints(in->parents, in->nparents);
        if (p) {
            free(s->parents);
            s->parents = p;
            s->nparents = in->nparents;
        }
    }
    if (in->submit_ms) s->submit_ms = in->submit_ms;
    if (in->complete_ms) s->complete_ms = in->complete_ms;
    if (in->failure) set_s(&s->failure, in->failure);
    (void)st;
}

static st_stage *stage_find_or_new(status_store *st, int id, int attempt, const ae_stage *in) {
    st_stage *s = status_stage(st, id, attempt);
    if (s) return s;
    if (!(s = calloc(1, sizeof *s))) return NULL;
    s->id = id;
    s->attempt = attempt;
    s->status = SS_PENDING;
    if (m_put(&st->stages, stage_key(id, attempt), s)) {
        free(s);
        return NULL;
    }
    if (in) stage_set_info(st, s, in);
    /* Ask again for the times at submission: a stage is new here. */
    s->submit_ms = 0;
    s->complete_ms = 0;
    free(s->failure);
    s->failure = NULL;
    L_APPEND(st->stage_head, st->stage_tail, s, prev, next);
    st->nstages++;
    if (attempt > st->max_attempt) st->max_attempt = attempt;
    return s;
}

static void stage_drop(status_store *st, st_stage *s) {
    for (st_task *t = s->tasks; t; t = t->next) m_del(&st->tasks, (uint64_t)t->task_id);
    m_del(&st->stages, stage_key(s->id, s->attempt));
    L_REMOVE(st->stage_head, st->stage_tail, s, prev, next);
    if (s->in_fin) L_REMOVE(st->sfin_head, st->sfin_tail, s, fprev, fnext);
    st->nstages--;
    stage_free(s);
}

static void stage_finished(status_store *st, st_stage *s) {
    if (!s->in_fin) {
        L_APPEND(st->sfin_head, st->sfin_tail, s, fprev, fnext);
        s->in_fin = 1;
    }
    while (st->nstages > st->lim.retained_stages && st->sfin_head) stage_drop(st, st->sfin_head);
}

static int stage_has_job(const st_stage *s, int job) {
    for (int i = 0; i < s->njobs; i++)
        if (s->job_ids[i] == job) return 1;
    return 0;
}

static void stage_add_job(st_stage *s, int job) {
    if (stage_has_job(s, job)) return;
    int *p = realloc(s->job_ids, (size_t)(s->njobs + 1) * sizeof *p);
    if (!p) return;
    p[s->njobs++] = job;
    s->job_ids = p;
}

static int job_stage_slot(const st_job *j, int stage_id) {
    for (int i = 0; i < j->nstages; i++)
        if (j->stage_ids[i] == stage_id) return i;
    return -1;
}

static st_rdd *rdd_get(status_store *st, int id) {
    st_rdd *x = status_rdd(st, id);
    if (x) return x;
    if (!(x = calloc(1, sizeof *x))) return NULL;
    x->id = id;
    if (m_put(&st->rdds, (uint64_t)(uint32_t)id, x)) {
        free(x);
        return NULL;
    }
    L_APPEND(st->rdd_head, st->rdd_tail, x, prev, next);
    return x;
}

/* The cached RDDs a stage names: created, and their counts taken. */
static void note_rdds(status_store *st, const ae_stage *in) {
    for (int i = 0; i < in->nrdds; i++) {
        const ae_rdd *r = &in->rdds[i];
        if (!r->storage.use_memory && !r->storage.use_disk && !r->storage.use_offheap) continue;
        st_rdd *x = rdd_get(st, r->id);
        if (!x) continue;
        set_s(&x->name, r->name);
        x->level = r->storage;
        if (r->nparts) x->nparts = r->nparts;
        if (!x->has_blocks && (r->ncached || r->mem_size || r->disk_size)) {
            x->ncached = r->ncached;
            x->mem = r->mem_size;
            x->disk = r->disk_size;
        }
    }
}

static const char *prop(const app_event *e, const char *key) {
    for (int i = 0; i < e->nprops[0]; i++)
        if (e->props[0][i].key && !strcmp(e->props[0][i].key, key)) return e->props[0][i].value;
    return NULL;
}

static void on_stage_submitted(status_store *st, const app_event *e) {
    if (e->nstages < 1) return;
    const ae_stage *in = &e->stages[0];
    st_stage *s = stage_find_or_new(st, in->id, in->attempt, in);
    if (!s) return;
    stage_set_info(st, s, in);
    if (!s->submit_ms) s->submit_ms = in->submit_ms ? in->submit_ms : e->time_ms;
    int was_active = s->status == SS_ACTIVE;
    s->status = SS_ACTIVE;
    if (s->in_fin) {
        L_REMOVE(st->sfin_head, st->sfin_tail, s, fprev, fnext);
        s->in_fin = 0;
    }
    set_s(&s->description, prop(e, "ember.job.description"));
    /* Its jobs: the running ones that list its id (a retry's attempt is
     * not in their JobStart). */
    for (st_job *j = st->job_head; j; j = j->next) {
        if (j->status != SJ_RUNNING) continue;
        int k = job_stage_slot(j, in->id);
        if (k < 0) continue;
        stage_add_job(s, j->id);
        if (j->stage_state[k] == 1) j->stage_state[k] = 0;
        if (!was_active) j->active_stages++;
    }
    note_rdds(st, in);
}

static void on_stage_completed(status_store *st, const app_event *e) {
    if (e->nstages < 1) return;
    const ae_stage *in = &e->stages[0];
    st_stage *s = stage_find_or_new(st, in->id, in->attempt, in);
    if (!s) return;
    int was_active = s->status == SS_ACTIVE;
    stage_set_info(st, s, in);
    if (!s->complete_ms) s->complete_ms = e->time_ms;
    s->status = in->failure ? SS_FAILED : s->submit_ms ? SS_COMPLETE : SS_SKIPPED;
    for (int i = 0; i < s->njobs; i++) {
        st_job *j = status_job(st, s->job_ids[i]);
        if (!j) continue;
        int k = job_stage_slot(j, s->id);
        if (s->status == SS_COMPLETE) {
            if (k >= 0) j->stage_state[k] = 1;
        } else if (s->status == SS_SKIPPED) {
            if (k >= 0 && j->stage_state[k] != 2) {
                j->stage_state[k] = 2;
                j->skipped_tasks += s->ntasks;
            }
        } else {
            j->failed_stages++;
        }
        if (was_active && j->active_stages > 0) j->active_stages--;
    }
    note_rdds(st, in);
    stage_finished(st, s);
}

/* ------------------------------------------------------------- jobs */

static void on_job_start(status_store *st, const app_event *e) {
    st_job *j = status_job(st, e->job_id);
    if (j) return; /* a repeated start: the first stands */
    if (!(j = calloc(1, sizeof *j))) return;
    j->id = e->job_id;
    j->status = SJ_RUNNING;
    j->submit_ms = e->time_ms;
    int n = e->nstages > 0 ? e->nstages : 0;
    j->nstages = n;
    if (n) {
        j->stage_ids = calloc((size_t)n, sizeof *j->stage_ids);
        j->stage_ntasks = calloc((size_t)n, sizeof *j->stage_ntasks);
        j->stage_state = calloc((size_t)n, 1);
        j->done_idx = calloc((size_t)n, sizeof *j->done_idx);
        if (!j->stage_ids || !j->stage_ntasks || !j->stage_state || !j->done_idx) {
            j->nstages = 0;
            job_free(j);
            return;
        }
    }
    const ae_stage *last = NULL;
    for (int i = 0; i < n; i++) {
        const ae_stage *in = &e->stages[i];
        j->stage_ids[i] = in->id;
        j->stage_ntasks[i] = in->ntasks;
        if (!last || in->id > last->id) last = in;
    }
    j->name = dup_s(last && last->name ? last->name : "");
    j->description = dup_s(prop(e, "ember.job.description"));
    j->group = dup_s(prop(e, "ember.jobGroup.id"));
    if (m_put(&st->jobs, (uint64_t)(uint32_t)j->id, j)) {
        job_free(j);
        return;
    }
    L_APPEND(st->job_head, st->job_tail, j, prev, next);
    st->njobs++;
    for (int i = 0; i < n; i++) {
        const ae_stage *in = &e->stages[i];
        st_stage *s = stage_find_or_new(st, in->id, in->attempt, in);
        /* A stage an earlier job finished is not run again: this job
         * skips it (on_job_end counts it), and its tasks are not the
         * job's, as Spark counts them. */
        int done = in->complete_ms || (s && (s->status == SS_COMPLETE || s->status == SS_SKIPPED));
        if (!done) j->ntasks += in->ntasks;
        if (s && (s->status == SS_PENDING || s->status == SS_ACTIVE)) stage_add_job(s, j->id);
    }
}

static void job_drop(status_store *st, st_job *j) {
    m_del(&st->jobs, (uint64_t)(uint32_t)j->id);
    L_REMOVE(st->job_head, st->job_tail, j, prev, next);
    if (j->in_fin) L_REMOVE(st->jfin_head, st->jfin_tail, j, fprev, fnext);
    st->njobs--;
    job_free(j);
}

static void on_job_end(status_store *st, const app_event *e) {
    st_job *j = status_job(st, e->job_id);
    if (!j || j->status != SJ_RUNNING) return;
    j->status = e->failed ? SJ_FAILED : SJ_SUCCEEDED;
    j->complete_ms = e->time_ms;
    /* Stages it never ran are skipped: pending ones become SKIPPED; one
     * an earlier job completed stays as it is, skipped for this job. */
    for (int k = 0; k < j->nstages; k++) {
        if (j->stage_state[k]) continue;
        st_stage *latest = NULL;
        for (int a = 0; a <= st->max_attempt; a++) {
            st_stage *s = status_stage(st, j->stage_ids[k], a);
            if (s) latest = s;
        }
        if (!latest) continue;
        if (latest->status == SS_PENDING) {
            latest->status = SS_SKIPPED;
            stage_finished(st, latest);
        } else if (latest->status == SS_ACTIVE || latest->status == SS_FAILED || stage_has_job(latest, j->id)) {
            continue;
        }
        j->stage_state[k] = 2;
        j->skipped_tasks += j->stage_ntasks[k];
    }
    L_APPEND(st->jfin_head, st->jfin_tail, j, fprev, fnext);
    j->in_fin = 1;
    while (st->njobs > st->lim.retained_jobs && st->jfin_head) job_drop(st, st->jfin_head);
}

/* ------------------------------------------------------------- tasks */

static void task_set_info(st_task *t, const ae_task *in) {
    t->task_id = in->task_id;
    t->index = in->index;
    t->attempt = in->attempt;
    t->partition = in->partition;
    if (in->launch_ms) t->launch_ms = in->launch_ms;
    if (in->getting_result_ms) t->getting_result_ms = in->getting_result_ms;
    if (in->finish_ms) t->finish_ms = in->finish_ms;
    if (in->exec_id[0]) copy_id(t->exec_id, sizeof t->exec_id, in->exec_id);
    if (in->host[0]) copy_id(t->host, sizeof t->host, in->host);
    if (in->locality[0]) copy_id(t->locality, sizeof t->locality, in->locality);
    t->speculative = in->speculative;
}

/* Drop the stage's oldest finished tasks past the limit. */
static void stage_trim_tasks(status_store *st, st_stage *s) {
    st_task *t = s->tasks;
    while (s->ntasks_kept > st->lim.retained_tasks && t) {
        st_task *n = t->next;
        if (t->status != ST_RUNNING) {
            m_del(&st->tasks, (uint64_t)t->task_id);
            L_REMOVE(s->tasks, s->tasks_tail, t, prev, next);
            s->ntasks_kept--;
            task_free(t);
        }
        t = n;
    }
}

static void on_task_start(status_store *st, const app_event *e) {
    if (status_task(st, e->task.task_id)) return;
    st_stage *s = stage_find_or_new(st, e->stage_id, e->stage_attempt, NULL);
    if (!s) return;
    if (s->status == SS_PENDING) s->status = SS_ACTIVE;
    st_task *t = calloc(1, sizeof *t);
    if (!t) return;
    task_set_info(t, &e->task);
    if (!t->launch_ms) t->launch_ms = e->time_ms;
    t->status = ST_RUNNING;
    t->stage = s;
    if (m_put(&st->tasks, (uint64_t)t->task_id, t)) {
        free(t);
        return;
    }
    L_APPEND(s->tasks, s->tasks_tail, t, prev, next);
    s->ntasks_kept++;
    s->active_tasks++;
    if (t->launch_ms && (!s->first_launch_ms || t->launch_ms < s->first_launch_ms)) s->first_launch_ms = t->launch_ms;
    for (int i = 0; i < s->njobs; i++) {
        st_job *j = status_job(st, s->job_ids[i]);
        if (j) j->active_tasks++;
    }
    st_exec *x = exec_get(st, t->exec_id, e->time_ms);
    if (x) {
        x->active_tasks++;
        x->total_tasks++;
        if (!x->host[0]) copy_id(x->host, sizeof x->host, t->host);
    }
    stage_trim_tasks(st, s);
}

static void on_task_getting_result(status_store *st, const app_event *e) {
    st_task *t = status_task(st, e->task.task_id);
    if (t) t->getting_result_ms = e->task.getting_result_ms ? e->task.getting_result_ms : e->time_ms;
}

/* The end reason as Spark's toErrorString writes it; NULL for success. */
static char *reason_text(const ae_end *r) {
    char *s = NULL;
    const char *msg = r->message ? r->message : "";
    int n = -1;
    switch (r->reason) {
    case AE_SUCCESS: return NULL;
    case AE_FETCH_FAILED:
        n = asprintf(&s,
                     "FetchFailed(BlockManagerId(%s, %s, %d, None), shuffleId=%d, mapIndex=%d, mapId=%lld, "
                     "reduceId=%d, message=\n%s\n)",
                     r->bm_exec, r->bm_host, r->bm_port, r->shuffle_id, r->map_index, (long long)r->map_id,
                     r->reduce_id, msg);
        break;
    case AE_EXCEPTION:
        n = asprintf(&s, "%s: %s", r->class_name ? r->class_name : "Exception", msg);
        break;
    case AE_KILLED: return strdup(r->message ? r->message : "unknown reason");
    case AE_EXEC_LOST:
        n = asprintf(&s, "ExecutorLostFailure (executor %s exited %s) Reason: %s", r->bm_exec,
                     r->caused_by_app ? "caused by one of the running tasks" : "unrelated to the running tasks", msg);
        break;
    case AE_RESUBMITTED: return strdup("Resubmitted (resubmitted due to lost executor)");
    case AE_RESULT_LOST: return strdup("TaskResultLost (result lost from block manager)");
    case AE_COMMIT_DENIED:
        n = asprintf(&s, "TaskCommitDenied (Driver denied task commit)%s%s", *msg ? ": " : "", msg);
        break;
    default:
        n = asprintf(&s, "%s", r->class_name ? r->class_name : "UnknownReason");
        break;
    }
    return n < 0 ? NULL : s;
}

static st_execsum *execsum_get(st_stage *s, const st_exec *x) {
    for (st_execsum *e = s->execsums; e; e = e->next)
        if (e->serial == x->serial) return e;
    st_execsum *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    copy_id(e->exec_id, sizeof e->exec_id, x->id);
    e->serial = x->serial;
    e->next = s->execsums;
    s->execsums = e;
    return e;
}

static void bit_set_new(uint8_t **bits, int *cap, int i, int *count) {
    if (i < 0 || i >= (1 << 28)) return;
    if (i >= *cap) {
        int nc = *cap ? *cap : 64;
        while (nc <= i) nc *= 2;
        uint8_t *p = realloc(*bits, (size_t)nc / 8);
        if (!p) return;
        memset(p + *cap / 8, 0, (size_t)(nc - *cap) / 8);
        *bits = p;
        *cap = nc;
    }
    if (!((*bits)[i / 8] & (1u << (i % 8)))) {
        (*bits)[i / 8] |= (uint8_t)(1u << (i % 8));
        (*count)++;
    }
}

static void on_task_end(status_store *st, const app_event *e) {
    const ae_end *r = &e->end;
    int completed = r->reason == AE_SUCCESS;
    int killed = r->reason == AE_KILLED || r->reason == AE_COMMIT_DENIED;
    int failed = !completed && !killed;
    st_task *t = status_task(st, e->task.task_id);
    st_stage *s = t ? t->stage : status_stage(st, e->stage_id, e->stage_attempt);
    int was_running = 0, had_metrics = 0;
    char *err = reason_text(r);
    if (t) {
        was_running = t->status == ST_RUNNING;
        had_metrics = t->has_metrics;
        if (!was_running && r->reason == AE_RESUBMITTED) {
            /* A finished map task whose output went with its executor:
             * counted failed, its record stays as it ended. */
        } else {
            task_set_info(t, &e->task);
            t->status = completed ? ST_SUCCESS : killed ? ST_KILLED : ST_FAILED;
            free(t->error);
            t->error = err;
            err = NULL;
            if (e->has_metrics) {
                t->m = e->metrics;
                t->has_metrics = 1;
            }
        }
    } else if (s) {
        /* An end without its start (a dropped event): kept as it ended. */
        if ((t = calloc(1, sizeof *t))) {
            task_set_info(t, &e->task);
            t->status = completed ? ST_SUCCESS : killed ? ST_KILLED : ST_FAILED;
            t->error = err;
            err = NULL;
            t->has_metrics = e->has_metrics;
            if (e->has_metrics) t->m = e->metrics;
            t->stage = s;
            if (m_put(&st->tasks, (uint64_t)t->task_id, t)) {
                task_free(t);
                t = NULL;
            } else {
                L_APPEND(s->tasks, s->tasks_tail, t, prev, next);
                s->ntasks_kept++;
            }
        }
    }
    free(err);
    int add_metrics = e->has_metrics && !had_metrics;
    int64_t duration = e->task.finish_ms && e->task.launch_ms ? e->task.finish_ms - e->task.launch_ms : 0;
    st_exec *x = exec_get(st, e->task.exec_id, e->time_ms);
    if (s) {
        if (was_running && s->active_tasks > 0) s->active_tasks--;
        s->completed_tasks += completed;
        s->failed_tasks += failed;
        s->killed_tasks += killed;
        if (completed) bit_set_new(&s->done_idx, &s->done_cap, e->task.index, &s->completed_indices);
        if (killed) killed_add(&s->killed, r->reason == AE_KILLED ? r->message : "TaskCommitDenied");
        if (add_metrics) task_metrics_add(&s->m, &e->metrics);
        st_execsum *es = x ? execsum_get(s, x) : NULL;
        if (es) {
            es->task_time += duration;
            es->succeeded += completed;
            es->failed += failed;
            es->killed += killed;
            if (add_metrics) task_metrics_add(&es->m, &e->metrics);
        }
        for (int i = 0; i < s->njobs; i++) {
            st_job *j = status_job(st, s->job_ids[i]);
            if (!j) continue;
            if (was_running && j->active_tasks > 0) j->active_tasks--;
            j->completed_tasks += completed;
            j->failed_tasks += failed;
            j->killed_tasks += killed;
            if (killed) killed_add(&j->killed, r->reason == AE_KILLED ? r->message : "TaskCommitDenied");
            int k = job_stage_slot(j, s->id);
            if (completed && k >= 0) {
                int cap = j->stage_ntasks[k] > 0 ? j->stage_ntasks[k] : 0;
                /* The bitmap's capacity follows its stage's task count. */
                int c = cap ? ((cap + 63) / 64) * 64 : 0;
                if (!j->done_idx[k] && c) j->done_idx[k] = calloc((size_t)c / 8, 1);
                if (j->done_idx[k] && e->task.index >= 0 && e->task.index < c) {
                    uint8_t *b = j->done_idx[k];
                    int i2 = e->task.index;
                    if (!(b[i2 / 8] & (1u << (i2 % 8)))) {
                        b[i2 / 8] |= (uint8_t)(1u << (i2 % 8));
                        j->completed_indices++;
                    }
                }
            }
        }
    }
    if (x) {
        if (was_running && x->active_tasks > 0) x->active_tasks--;
        x->completed_tasks += completed;
        x->failed_tasks += failed;
        if (r->reason != AE_RESUBMITTED) {
            x->total_duration += duration;
            if (add_metrics) {
                x->input_bytes += e->metrics.in_bytes;
                x->shuffle_read += e->metrics.sr_remote_bytes + e->metrics.sr_local_bytes;
                x->shuffle_write += e->metrics.sw_bytes;
            }
        }
    }
    if (s) stage_trim_tasks(st, s);
}

/* ------------------------------------------------------------- the rest */

static void on_app_start(status_store *st, const app_event *e) {
    set_s(&st->app.name, e->app_name);
    set_s(&st->app.id, e->app_id);
    set_s(&st->app.attempt_id, e->attempt_id);
    set_s(&st->app.user, e->user);
    st->app.start_ms = e->time_ms;
}

static void on_env(status_store *st, const app_event *e) {
    env_clear(st);
    for (int s = 0; s < AE_ENV_SECTIONS; s++) {
        int n = e->nprops[s];
        if (n <= 0) continue;
        ae_prop *p = calloc((size_t)n, sizeof *p);
        if (!p) continue;
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (!e->props[s][i].key) continue;
            p[k].key = strdup(e->props[s][i].key);
            p[k].value = strdup(e->props[s][i].value ? e->props[s][i].value : "");
            if (!p[k].key || !p[k].value) {
                free(p[k].key);
                free(p[k].value);
                continue;
            }
            k++;
        }
        st->env[s] = p;
        st->nenv[s] = k;
    }
}

/* A partition cached, moved or removed on an executor. */
static void on_block_updated(status_store *st, const app_event *e) {
    if (e->rdd_id < 0) return; /* a broadcast's block: not on the storage page */
    const char *id = e->exec.id[0] ? e->exec.id : "driver";
    int removed = !e->block_level.use_memory && !e->block_level.use_disk && !e->block_level.use_offheap;
    st_rdd *r = removed ? status_rdd(st, e->rdd_id) : rdd_get(st, e->rdd_id);
    if (!r) return;
    st_exec *x = status_exec(st, id);
    int nb = 0;
    int64_t mem = 0, disk = 0;
    if (rdd_blocks_put(&r->blocks, e->block_part, id, removed, e->block_mem, e->block_disk, e->block_level.use_disk,
                       &nb, &mem, &disk))
        return;
    r->has_blocks = 1;
    rdd_take_blocks(r);
    if (!r->level.use_memory && !r->level.use_disk) r->level = e->block_level;
    if (x) {
        x->rdd_blocks += nb;
        x->mem_used += mem;
        x->disk_used += disk;
    }
}

static void on_unpersist(status_store *st, const app_event *e) {
    st_rdd *r = status_rdd(st, e->rdd_id);
    if (!r) return;
    for (int i = 0; i < r->blocks.n; i++) { /* the executors no longer hold them */
        st_exec *x = status_exec(st, r->blocks.b[i].exec_id);
        if (!x) continue;
        x->rdd_blocks--;
        x->mem_used -= r->blocks.b[i].mem;
        x->disk_used -= r->blocks.b[i].disk;
    }
    m_del(&st->rdds, (uint64_t)(uint32_t)r->id);
    L_REMOVE(st->rdd_head, st->rdd_tail, r, prev, next);
    rdd_free(r);
}

void status_on_event(status_store *st, const app_event *e) {
    for (int i = 0; i < 100 && atomic_load(&st->rwait); i++) sched_yield();
    pthread_rwlock_wrlock(&st->lock);
    if (e->time_ms > st->app.last_ms) st->app.last_ms = e->time_ms;
    switch (e->kind) {
    case AE_APP_START: on_app_start(st, e); break;
    case AE_APP_END: st->app.end_ms = e->time_ms; break;
    case AE_LOG_START: set_s(&st->app.version, e->version); break;
    case AE_ENV_UPDATE: on_env(st, e); break;
    case AE_EXEC_ADDED:
    case AE_BLOCK_MANAGER_ADDED: on_exec_added(st, e); break;
    case AE_EXEC_REMOVED: on_exec_removed(st, e); break;
    case AE_JOB_START: on_job_start(st, e); break;
    case AE_JOB_END: on_job_end(st, e); break;
    case AE_STAGE_SUBMITTED: on_stage_submitted(st, e); break;
    case AE_STAGE_COMPLETED: on_stage_completed(st, e); break;
    case AE_TASK_START: on_task_start(st, e); break;
    case AE_TASK_GETTING_RESULT: on_task_getting_result(st, e); break;
    case AE_TASK_END: on_task_end(st, e); break;
    case AE_UNPERSIST_RDD: on_unpersist(st, e); break;
    case AE_BLOCK_UPDATED: on_block_updated(st, e); break;
    default: break;
    }
    pthread_rwlock_unlock(&st->lock);
}

void status_listener(void *ud, const app_event *e) { status_on_event(ud, e); }
