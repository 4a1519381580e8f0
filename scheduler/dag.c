/*
 * dag.c -- stages and jobs: what the scheduler runs (see dag.h).
 *
 * Everything below the "scheduler thread" line runs on the scheduler's one
 * thread, which owns the stages, the jobs' scheduling state, the in-flight
 * table and the map-output tracker; driver threads only post calls and
 * wait on their job's mailbox (under jmu).  The thread's loop is here; how
 * an RDD's lineage is cut into stages is stage.c's, how a stage's tasks
 * are queued, launched and ended is tasksched.c's, and the state they all
 * work on is in dag_int.h.
 *
 * Map stages are kept per shuffle for the life of the shuffle, so a later
 * job finds their outputs registered and skips them, and a job arriving
 * while another computes a shuffle it needs waits for that stage instead of
 * running it again.  A map stage runs for one job at a time (s->job: whose
 * settings its tasks carry); if that job ends first, another job that
 * needs the stage takes it over, or its attempts are killed.  A job's
 * result stage is its own.  Per stage and task the state is pending,
 * running or done.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commit.h"
#include "dag.h"
#include "dag_int.h"
#include "err.h"
#include "idmap.h"
#include "listen.h"
#include "placement.h"
#include "progress.h"
#include "stage.h"
#include "tasksched.h"

/* A call a driver thread waits for. */
typedef struct sync_call {
    void (*fn)(dag *d, void *arg);
    void *arg;
    int done;
    struct sync_call *next; /* hold waiters */
} sync_call;

dag *dag_new(em_stats *stats, uint64_t cache_ns) {
    dag *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    /* local[N]'s executors (N <= 4, ids 0 up in order) join with no allocation on the
     * scheduler's thread, where its failure could only be reported late. */
    if (et_reserve(&d->execs, 4)) {
        et_free(&d->execs); /* what it had reserved before it failed */
        free(d);
        return NULL;
    }
    evq_init(&d->events);
    cc_init(&d->commits);
    pthread_mutex_init(&d->jmu, NULL);
    pthread_cond_init(&d->jcv, NULL);
    d->stats = stats;
    d->ns = cache_ns;
    d->next_task = 1;
    progress_init(&d->prog, 0);
    return d;
}

evq *dag_events(dag *d) { return &d->events; }

int dag_ask_commit(void *d, uint32_t stage_id, int32_t partition, uint64_t attempt) {
    return cc_ask(&((dag *)d)->commits, stage_id, partition, attempt);
}

static void stage_free_v(void *s) { stage_free(s); }

void dag_free(dag *d) {
    if (!d) return;
    idmap_free(&d->maps, stage_free_v);
    idmap_free(&d->inflight, free);
    for (inflight *f = d->free_fl, *n; f; f = n) {
        n = f->next_free;
        free(f);
    }
    et_free(&d->execs);
    free(d->runq);
    mo_free(&d->mo);
    free(d->waitq);
    free(d->active);
    evq_destroy(&d->events);
    cc_destroy(&d->commits);
    pthread_mutex_destroy(&d->jmu);
    pthread_cond_destroy(&d->jcv);
    free(d);
}

void dag_live_counts(dag *d, int64_t *shuffles, int64_t *stages) {
    *shuffles = __atomic_load_n(&d->mo.n, __ATOMIC_RELAXED);
    *stages = __atomic_load_n(&d->nlive_maps, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------ driver threads */

static void post_call(dag *d, void (*fn)(void *, void *), void *arg, sched_event *ev) {
    memset(ev, 0, offsetof(sched_event, res));
    memset(&ev->res, 0, sizeof ev->res);
    ev->kind = EV_CALL;
    ev->exec = -1;
    ev->res.fetch_map = -1;
    ev->call = fn;
    ev->arg = arg;
    ev->next = NULL;
    evq_post(&d->events, ev);
}

static void reply(dag *d, sync_call *c) {
    pthread_mutex_lock(&d->jmu);
    c->done = 1;
    pthread_cond_broadcast(&d->jcv);
    pthread_mutex_unlock(&d->jmu);
}

static void sync_tramp(void *dv, void *cv) {
    dag *d = dv;
    sync_call *c = cv;
    c->fn(d, c->arg);
    reply(d, c);
}

/* Run fn(d, arg) on the scheduler's thread and wait for it. */
static int call_sync(dag *d, void (*fn)(dag *, void *), void *arg) {
    sync_call c = {fn, arg, 0, NULL};
    sched_event *ev = malloc(sizeof *ev);
    if (!ev) return em__seterr(EM_ENOMEM, "scheduler: out of memory");
    post_call(d, sync_tramp, &c, ev);
    pthread_mutex_lock(&d->jmu);
    while (!c.done) pthread_cond_wait(&d->jcv, &d->jmu);
    pthread_mutex_unlock(&d->jmu);
    return 0;
}

static void job_unref_locked(job *j) {
    if (--j->refs) return;
    pthread_cond_destroy(&j->cv);
    for (sched_event *e = j->rhead, *n; e; e = n) {
        n = e->next;
        ev_free(e);
    }
    for (sched_event *e = j->phead, *n; e; e = n) {
        n = e->next;
        ev_free(e);
    }
    free(j->group);
    free(j);
}

static void job_unref(dag *d, job *j) {
    pthread_mutex_lock(&d->jmu);
    job_unref_locked(j);
    pthread_mutex_unlock(&d->jmu);
}

/* The scheduler is done with j (ended, none of its attempts runs): it lets
 * go at the end of the burst, so that no loop of this burst meets a freed
 * job. */
void dag__sched_release(dag *d, job *j) {
    j->next_dead = d->dead;
    d->dead = j;
}

static void release_dead(dag *d) {
    if (!d->dead) return;
    pthread_mutex_lock(&d->jmu);
    for (job *j = d->dead, *n; j; j = n) {
        n = j->next_dead;
        job_unref_locked(j);
    }
    pthread_mutex_unlock(&d->jmu);
    d->dead = NULL;
}

static void start_job_call(void *d, void *j);
static void abort_job_call(void *d, void *a);

typedef struct abort_req {
    job *j;
    int rc;
    char msg[JOB_MSG_MAX];
} abort_req;

int dag_run_job(dag *d, const job_spec *spec, const char *group) {
    job *j = calloc(1, sizeof *j);
    sched_event *ev = malloc(sizeof *ev);
    if (!j || !ev || (group && !(j->group = strdup(group)))) {
        if (j) free(j->group);
        free(j);
        free(ev);
        return em__seterr(EM_ENOMEM, "scheduler: out of memory");
    }
    j->spec = *spec;
    j->save = spec->sink->kind == SK_SAVE;
    j->refs = 2; /* the caller's and the scheduler's */
    j->ui_id = -1;
    pthread_cond_init(&j->cv, NULL);
    pthread_mutex_lock(&d->jmu);
    if (d->closing) {
        pthread_mutex_unlock(&d->jmu);
        pthread_cond_destroy(&j->cv);
        free(j->group);
        free(j);
        free(ev);
        return em__seterr(EM_ECANCELED, "job canceled: the context is closing (em_close)");
    }
    pthread_mutex_unlock(&d->jmu);
    post_call(d, start_job_call, j, ev);
    /* Counted once posted: a caller that sees it and then cancels posts
     * its request after the job's start, which the scheduler reads in
     * order. */
    STAT_GAUGE_ADD(d, jobs_active, 1);

    int failed = 0;
    pthread_mutex_lock(&d->jmu);
    for (;;) {
        if (j->rhead) {
            sched_event *e = j->rhead;
            j->rhead = j->rtail = NULL;
            pthread_mutex_unlock(&d->jmu);
            for (sched_event *n; e; e = n) {
                n = e->next;
                if (!failed) {
                    int idx = e->idx;
                    int rc = spec->on_result(spec->cctx, idx, &e->res);
                    if (rc < 0) {
                        /* The job fails with the action's message. */
                        abort_req *a = malloc(sizeof *a);
                        sched_event *aev = malloc(sizeof *aev);
                        failed = rc;
                        if (a && aev) {
                            pthread_mutex_lock(&d->jmu);
                            j->refs++; /* the request's: the job may end before it is read */
                            pthread_mutex_unlock(&d->jmu);
                            a->j = j;
                            a->rc = rc;
                            em__geterr(a->msg, sizeof a->msg);
                            post_call(d, abort_job_call, a, aev);
                        } else { /* the job runs to its end; its result is dropped */
                            free(a);
                            free(aev);
                            failed = em__seterr(EM_ENOMEM, "scheduler: out of memory");
                        }
                    }
                }
                ev_free(e);
            }
            pthread_mutex_lock(&d->jmu);
            continue;
        }
        if (j->ended) break;
        pthread_cond_wait(&j->cv, &d->jmu);
    }
    int rc = j->rc;
    if (rc) em__seterr(rc, "%s", j->msg);
    else if (failed) rc = failed; /* its message is this thread's */
    job_unref_locked(j);
    pthread_mutex_unlock(&d->jmu);
    STAT_GAUGE_ADD(d, jobs_active, -1);
    return rc;
}

typedef struct cancel_req {
    char *group; /* NULL: every job */
    const char *why;
    int n;
} cancel_req;

static void cancel_fn(dag *d, void *arg);

void dag_cancel_all(dag *d, const char *why) {
    cancel_req r = {NULL, why, 0};
    call_sync(d, cancel_fn, &r); /* out of memory: nothing to cancel with */
}

int dag_cancel_group(dag *d, const char *group) {
    cancel_req r = {(char *)group, NULL, 0};
    if (call_sync(d, cancel_fn, &r)) return -1;
    return r.n;
}

static void release_fn(dag *d, void *arg);

/* Replies once no attempt runs (sched_main). */
static void hold_tramp(void *dv, void *cv) {
    dag *d = dv;
    sync_call *c = cv;
    d->holds++;
    c->next = d->hold_waiters;
    d->hold_waiters = c;
}

int dag_hold(dag *d) {
    sync_call c = {NULL, NULL, 0, NULL};
    sched_event *ev = malloc(sizeof *ev);
    if (!ev) return em__seterr(EM_ENOMEM, "scheduler: out of memory");
    post_call(d, hold_tramp, &c, ev);
    pthread_mutex_lock(&d->jmu);
    while (!c.done) pthread_cond_wait(&d->jcv, &d->jmu);
    pthread_mutex_unlock(&d->jmu);
    return 0;
}

void dag_release(dag *d) {
    while (call_sync(d, release_fn, NULL)) { /* must not be lost: retry */
        struct timespec t = {0, 1000000L};
        nanosleep(&t, NULL);
    }
}

typedef struct truncate_req {
    void (*fn)(void *);
    void *arg;
} truncate_req;

static void reparent_v(void *s, void *d) { stage_reparent(d, s); }

/* On the scheduler's thread, which alone walks the graph into stages and
 * tasks: change it, then let every stage find its parents anew. */
static void truncate_fn(dag *d, void *arg) {
    truncate_req *t = arg;
    t->fn(t->arg);
    idmap_foreach(&d->maps, reparent_v, d);
    for (job *j = d->jobs; j; j = j->next)
        if (j->result) stage_reparent(d, j->result);
}

int dag_truncate(dag *d, void (*fn)(void *), void *arg) {
    truncate_req t = {fn, arg};
    return call_sync(d, truncate_fn, &t);
}

static void drop_fn(dag *d, void *arg);

void dag_drop_shuffle(dag *d, uint32_t id) {
    if (!d->started) {
        drop_fn(d, &id);
        return;
    }
    while (call_sync(d, drop_fn, &id)) { /* its files must go: retry */
        struct timespec t = {0, 1000000L};
        nanosleep(&t, NULL);
    }
}

static void *sched_main(void *arg);

void dag_set_register_wait(dag *d, int64_t ms) { d->register_wait_ms = ms; }

void dag_set_bus(dag *d, struct lbus *bus, int local, int64_t store_mem) {
    d->bus = bus;
    d->local_execs = local;
    d->store_mem = store_mem;
}

void dag_set_starvation_timeout(dag *d, int64_t ms) { d->starvation_ms = ms; }

void dag_set_map_statuses(dag *d, int64_t highly_min, int64_t accurate) { mo_configure(&d->mo, highly_min, accurate); }

int dag_start(dag *d, backend *be) {
    d->be = be;
    if (pthread_create(&d->thread, NULL, sched_main, d))
        return em__seterr(EM_ENOMEM, "scheduler: cannot start its thread");
    d->started = 1;
    return 0;
}

void dag_refuse(dag *d) {
    if (!d || !d->started) return;
    pthread_mutex_lock(&d->jmu);
    d->closing = 1;
    pthread_mutex_unlock(&d->jmu);
    dag_cancel_all(d, "the context is closing (em_close)");
}

static void stop_fn(dag *d, void *arg);

void dag_stop(dag *d) {
    if (!d || !d->started) return;
    pthread_mutex_lock(&d->jmu);
    d->closing = 1; /* no job starts from now on */
    pthread_mutex_unlock(&d->jmu);
    while (call_sync(d, stop_fn, NULL)) {
        struct timespec t = {0, 1000000L};
        nanosleep(&t, NULL);
    }
    pthread_join(d->thread, NULL);
    d->started = 0;
}

/* ==================================================== scheduler thread */

static void unwait(dag *d, stage *s) {
    if (!s->waiting) return;
    for (int i = 0; i < d->nwait; i++)
        if (d->waitq[i] == s) {
            d->waitq[i] = d->waitq[--d->nwait];
            break;
        }
    s->waiting = 0;
}

/* Drop idle stages from the active list, and free stages left to die. */
static void prune_active(dag *d) {
    for (int i = 0; i < d->nactive; i++) {
        stage *s = d->active[i];
        if (s->running || s->waiting) continue;
        if (s->job && !s->dropped) {
            if (!s->shuffled || !dag__stage_complete(d, s)) continue; /* its job holds it */
            s->job = NULL;
        }
        s->active = 0;
        d->active[i--] = d->active[--d->nactive];
        if (s->dropped) {
            ts_runq_drop_stage(d, s);
            stage_free(s);
        }
    }
}

/* A stage nothing runs for any more: freed now, or at its last attempt's
 * end. */
void dag__retire_stage(dag *d, stage *s) {
    unwait(d, s);
    s->job = NULL;
    s->dropped = 1;
    if (!s->running && !s->active) { /* else prune_active frees it */
        ts_runq_drop_stage(d, s);
        stage_free(s);
    }
}

int dag__stage_complete(dag *d, stage *s) {
    if (!s->shuffled) return s->done == s->ntasks;
    shuffle_out *so = mo_find(&d->mo, s->shuffle_id);
    return so && so->navail == so->nmaps;
}

/* Stage s has looked at its parents (missing: some are incomplete): run
 * its pending tasks for j now, or wait for the parents. */
static int submit_one(dag *d, job *j, stage *s, int missing) {
    if (!missing) return ts_launch_pending(d, j, s);
    ts_take_stage(d, s, j);
    if (!s->waiting) {
        if (d->nwait == d->capwait) {
            int cap = d->capwait ? d->capwait * 2 : 8;
            stage **w = realloc(d->waitq, sizeof *w * (size_t)cap);
            if (!w) return em__seterr(EM_ENOMEM, "scheduler: out of memory");
            d->waitq = w;
            d->capwait = cap;
        }
        d->waitq[d->nwait++] = s;
        s->waiting = 1;
        ts_activate(d, s);
    }
    return 0;
}

/* Run the stage's pending tasks for j now if its parents are complete, else
 * submit the missing parents and wait for them.  A parent another job is
 * computing is waited for, not run again.  Parents are submitted before
 * their children, each once, by a walk over an explicit stack (a chain of
 * 10,000 shuffles must not recurse 10,000 deep, and stages sharing a
 * parent must not submit it once per path). */
int dag__submit_stage(dag *d, job *j, stage *s) {
    typedef struct sframe {
        stage *s;
        int next, missing;
    } sframe;
    sframe *st = malloc(sizeof *st * 16);
    int n = 0, cap = 16, rc = 0;
    uint32_t gen = ++d->gen;
    if (!st) return em__seterr(EM_ENOMEM, "scheduler: out of memory");
    st[n++] = (sframe){s, 0, 0};
    s->mark = gen;
    while (n && !rc) {
        sframe *f = &st[n - 1];
        if (f->next == f->s->nparents) {
            rc = submit_one(d, j, f->s, f->missing);
            n--;
            continue;
        }
        stage *p = f->s->parents[f->next++];
        if (dag__stage_complete(d, p)) {
            if (p->counted != j->seq) {
                p->counted = j->seq; /* outputs reused: the stage is skipped */
                STAT_ADD(d, stages_skipped, 1);
            }
            continue;
        }
        f->missing = 1;
        if (p->job && p->job != j && !p->job->finishing) continue; /* computed for another job */
        if (p->mark == gen) continue;                              /* submitted by this walk */
        p->mark = gen;
        if (n == cap) {
            sframe *g = realloc(st, sizeof *st * (size_t)cap * 2);
            if (!g) {
                rc = em__seterr(EM_ENOMEM, "scheduler: out of memory");
                break;
            }
            st = g;
            cap *= 2;
        }
        st[n++] = (sframe){p, 0, 0};
    }
    free(st);
    return rc;
}

/* A map stage completed: launch the stages that waited for it. */
void dag__resubmit_waiting(dag *d) {
    for (int i = 0; i < d->nwait; i++) {
        stage *s = d->waitq[i];
        job *j = s->job;
        int ready = 1;
        for (int k = 0; k < s->nparents; k++)
            if (!dag__stage_complete(d, s->parents[k])) ready = 0;
        if (!ready || !j) continue;
        s->waiting = 0;
        d->waitq[i] = d->waitq[--d->nwait];
        i = -1; /* the queue changed under launches: look again from the start */
        int rc = ts_launch_pending(d, j, s);
        if (rc) dag__job_fail_here(d, j, rc);
    }
}

/* Whether j needs stage s (s is its result stage or reachable from it):
 * a walk over an explicit stack, each stage once. */
static int job_uses(dag *d, job *j, stage *s) {
    if (!j->result) return 0;
    uint32_t gen = ++d->gen;
    stage **st = malloc(sizeof *st * 16);
    int n = 0, cap = 16, found = 0;
    if (!st) return 1; /* out of memory: assume it does (the stage keeps running) */
    st[n++] = j->result;
    j->result->mark = gen;
    while (n && !found) {
        stage *cur = st[--n];
        if (cur == s) found = 1;
        for (int i = 0; i < cur->nparents && !found; i++) {
            stage *p = cur->parents[i];
            if (p->mark == gen) continue;
            p->mark = gen;
            if (n == cap) {
                stage **g = realloc(st, sizeof *st * (size_t)cap * 2);
                if (!g) {
                    found = 1;
                    break;
                }
                st = g;
                cap *= 2;
            }
            st[n++] = p;
        }
    }
    free(st);
    return found;
}

/* j is over (succeeded or failed): the stages that ran for it go to another
 * job that needs them, or stop. */
static void release_stages(dag *d, job *j) {
    for (int i = 0; i < d->nactive; i++) {
        stage *s = d->active[i];
        if (s->job != j || s == j->result) continue;
        job *other = NULL;
        for (job *o = d->jobs; o && !other; o = o->next)
            if (o != j && !o->finishing && job_uses(d, o, s)) other = o;
        if (other) {
            s->job = other;
            ts_move_attempts(d, s, j, other);
            ts_runq_move(d, s, j, other);
            if (!s->waiting) { /* its pending tasks (a failed launch's too) go to the queue */
                int rc = dag__submit_stage(d, other, s);
                if (rc) dag__job_fail_here(d, other, rc);
            }
        } else {
            unwait(d, s);
            s->job = NULL;
            if (!dag__stage_complete(d, s)) ts_kill_stage(d, s);
            for (int t = 0; t < s->ntasks; t++)
                if (s->state[t] == T_RUNNING && !s->nrun[t]) s->state[t] = T_PENDING;
        }
    }
}

/* Fail job j (once) with code and message: its attempts are killed, and it
 * ends when none runs. */
void dag__job_fail_msg(dag *d, job *j, int code, const char *msg) {
    if (j->finishing) return;
    j->finishing = 1;
    j->rc = code;
    snprintf(j->msg, sizeof j->msg, "%s", msg);
    if (j->result) {
        unwait(d, j->result);
        ts_kill_stage(d, j->result);
    }
    release_stages(d, j);
    ts_runq_drop_job(d, j); /* what it queued and nobody took over */
    dag__try_end(d, j);
}

void dag__job_failf(dag *d, job *j, int code, const char *fmt, ...) {
    char msg[JOB_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dag__job_fail_msg(d, j, code, msg);
}

/* Fail j with this thread's em_errmsg. */
void dag__job_fail_here(dag *d, job *j, int code) {
    char msg[JOB_MSG_MAX];
    em__geterr(msg, sizeof msg);
    dag__job_fail_msg(d, j, code, msg);
}

/* A task failed for good: every job that needs its stage fails. */
/* Fail j with msg, and every other job that uses map stage s. */
static void fail_users(dag *d, stage *s, job *j, const char *msg) {
    dag__job_fail_msg(d, j, EM_EJOB, msg);
    if (!s->shuffled) return;
    for (job *o = d->jobs, *next; o; o = next) {
        next = o->next; /* o may end and go */
        if (!o->finishing && job_uses(d, o, s)) dag__job_fail_msg(d, o, EM_EJOB, msg);
    }
}

void dag__fail_dependents(dag *d, stage *s, int idx, int times, const task_result *res, job *j) {
    int part = s->shuffled ? idx : job_part(j, idx);
    char msg[JOB_MSG_MAX];
    snprintf(msg, sizeof msg, "Task %d in stage %u failed %d times; most recent failure: %s", part, s->id, times,
             res->errmsg[0] ? res->errmsg : em_strerror(res->status));
    fail_users(d, s, j, msg);
}

/* Hand the burst's results on to their callers' mailboxes, waking the
 * callers due a wake-up. */
static void wake_dirty(dag *d) {
    if (!d->dirty) return;
    pthread_mutex_lock(&d->jmu);
    for (job *j = d->dirty, *n; j; j = n) {
        n = j->next_dirty;
        if (j->phead) {
            if (j->rtail) j->rtail->next = j->phead;
            else j->rhead = j->phead;
            j->rtail = j->ptail;
            j->phead = j->ptail = NULL;
        }
        if (j->wake) pthread_cond_signal(&j->cv);
        j->dirty = j->wake = 0;
        j->next_dirty = NULL;
    }
    d->dirty = NULL;
    pthread_mutex_unlock(&d->jmu);
}

static void end_job(dag *d, job *j) {
    job **pp = &d->jobs;
    job *prev = NULL;
    while (*pp && *pp != j) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp) {
        *pp = j->next;
        if (d->jobs_tail == j) d->jobs_tail = prev;
    }
    j->next = NULL;
    j->over = 1;
    lis_job_end(d, j);
    if (j->result && j->save) cc_stage_close(&d->commits, j->result->id);
    release_stages(d, j);
    ts_runq_drop_job(d, j);
    if (j->result) dag__retire_stage(d, j->result); /* freed at its last loser's end */
    j->result = NULL;
    if (d->prog_job == j) {
        progress_clear(&d->prog);
        d->prog_job = NULL;
    }
    wake_dirty(d); /* its results before its end (and before it may go) */
    pthread_mutex_lock(&d->jmu);
    j->ended = 1;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&d->jmu);
    if (!j->nrun) dag__sched_release(d, j);
}

/* End j if it is finishing and may end now: a failed job once none of its
 * attempts runs (its caller then removes what they wrote); else at once.
 * A save's losers may still run: their output cannot reach the directory
 * (the coordinator closes the stage at the job's end, see actions.c). */
void dag__try_end(dag *d, job *j) {
    if (!j->finishing || j->over) return;
    if (j->rc && j->nrun) return;
    end_job(d, j);
}

/* Forget map output m of a shuffle (lost or corrupt) and remove its files. */
void dag__lose_output(dag *d, shuffle_out *so, int m) {
    if (so->m[m].have && d->be->drop_map_output)
        d->be->drop_map_output(d->be, so->m[m].exec, so->id, m, so->m[m].attempt);
    mo_unset(so, m);
}

/* Executor exec is gone, and the map outputs it served with it (as
 * Spark's without an external shuffle service): forget them at once rather
 * than wait for every reader's fetch to miss them.  A map stage running
 * for a job runs the lost tasks again; a stage that reads a lost output
 * finds its parent incomplete when its next task is dispatched (or when a
 * running one's fetch fails) and submits it again. */
static void lose_exec_outputs(dag *d, int exec) {
    for (uint32_t i = 0; i < d->maps.cap; i++) {
        stage *p = d->maps.vals[i];
        if (!p || p->dropped) continue;
        shuffle_out *so = mo_find(&d->mo, p->shuffle_id);
        for (int m = 0; so && m < so->nmaps && m < p->ntasks; m++) {
            if (!so->m[m].have || so->m[m].exec != exec) continue;
            dag__lose_output(d, so, m);
            if (p->state[m] != T_DONE) continue;
            p->state[m] = T_PENDING;
            p->done--;
            if (p->job && !p->job->finishing && !p->waiting && !p->nrun[m] && !p->queued[m] && ts_launch(d, p->job, p, m))
                dag__job_fail_here(d, p->job, EM_ENOMEM);
        }
    }
}

/* Register map output idx of s from a successful attempt; takes the
 * compressed segment sizes from the result (checked as it ended).  0 or
 * EM_ENOMEM. */
int dag__register_output(dag *d, stage *s, int idx, sched_event *ev) {
    task_result *res = &ev->res;
    shuffle_out *so = mo_find(&d->mo, s->shuffle_id);
    uint8_t *sizes = res->data;
    size_t len = res->len;
    res->data = NULL;
    res->len = 0;
    if (!so) {
        free(sizes);
        return em__seterr(EM_ENOMEM, "scheduler: out of memory");
    }
    int rc = mo_set(so, idx, ev->exec, res->task_id, res->loc, sizes, len);
    if (rc == -1) return em__seterr(EM_EPROTO, "scheduler: a malformed map status");
    if (rc) return em__seterr(EM_ENOMEM, "scheduler: out of memory");
    s->reg_task[idx] = d->next_task;
    return 0;
}

/* A fetch failure reported by an attempt of s's current stage attempt
 * (res names the output): that stage attempt failed, and the next begins
 * with the next task launched.  After ember.stage.maxConsecutiveAttempts
 * failed attempts in a row, the job fails (and those that use s), naming
 * the outputs that kept failing and why: returns 1 then, else 0. */
int dag__stage_attempt_failed(dag *d, job *j, stage *s, const task_result *res) {
    size_t n = strlen(s->fail_why);
    if (n < sizeof s->fail_why - 1)
        snprintf(s->fail_why + n, sizeof s->fail_why - n, "%sattempt %u: shuffle %u map %d (%.120s)", n ? "; " : "",
                 s->stage_attempt, res->fetch_shuffle, res->fetch_map,
                 res->errmsg[0] ? res->errmsg : em_strerror(res->status));
    s->stage_attempt++;
    s->first_task = d->next_task;
    if (d->bus) {
        char why[700];
        snprintf(why, sizeof why, "FetchFailed: shuffle %u map %d: %.500s", res->fetch_shuffle, res->fetch_map,
                 res->errmsg[0] ? res->errmsg : em_strerror(res->status));
        lis_stage_completed(d, s, why);
    }
    STAT_ADD(d, stage_attempts_failed, 1);
    if (++s->consec_failed < j->spec.max_stage_attempts) return 0;
    char msg[JOB_MSG_MAX];
    snprintf(msg, sizeof msg,
             "Stage %u failed %d consecutive attempts (ember.stage.maxConsecutiveAttempts) on fetch failures of "
             "the map outputs it reads: %s",
             s->id, s->consec_failed, s->fail_why);
    fail_users(d, s, j, msg);
    return 1;
}

/* ----------------------------------------------------------- the calls */

static void start_job(dag *d, job *j) {
    const job_spec *js = &j->spec;
    int ntasks = js->parts ? js->nparts : js->rdd->nparts;
    j->seq = ++d->next_seq;
    j->next = NULL;
    if (d->jobs_tail) d->jobs_tail->next = j;
    else d->jobs = j;
    d->jobs_tail = j;
    STAT_ADD(d, jobs, 1);
    if (js->progress && !d->prog_job) {
        progress_init(&d->prog, 1);
        d->prog_job = j;
    }
    if (js->speculation) {
        uint64_t next = ev_now_us() + (uint64_t)js->spec_interval_ms * 1000u;
        if (!d->next_spec_us || next < d->next_spec_us) d->next_spec_us = next;
    }
    stage *rs = stage_new(d, js->rdd, NULL, ntasks);
    if (!rs) {
        dag__job_failf(d, j, EM_ENOMEM, "scheduler: out of memory");
        return;
    }
    j->result = rs;
    rs->job = j;
    if (js->sink->kind == SK_SAVE && cc_stage_open(&d->commits, rs->id, js->rdd->nparts)) {
        dag__job_failf(d, j, EM_ENOMEM, "scheduler: out of memory");
        return;
    }
    lis_job_start(d, j);
    if (ntasks == 0) {
        j->finishing = 1;
        dag__try_end(d, j);
        return;
    }
    int rc = dag__submit_stage(d, j, rs);
    if (rc) dag__job_fail_here(d, j, rc);
}

/* A job canceled before it started. */
static void fail_unstarted(dag *d, job *j, int code, const char *msg) {
    STAT_ADD(d, jobs, 1);
    j->next = NULL;
    dag__job_fail_msg(d, j, code, msg);
}

static void start_job_call(void *dv, void *jv) {
    dag *d = dv;
    job *j = jv;
    pthread_mutex_lock(&d->jmu);
    int closing = d->closing;
    pthread_mutex_unlock(&d->jmu);
    if (closing || d->stopping) { /* posted just before em_close refused new jobs */
        fail_unstarted(d, j, EM_ECANCELED, "job canceled: the context is closing (em_close)");
        return;
    }
    if (d->app_failed) { /* the master removed the application */
        fail_unstarted(d, j, d->app_failed, d->app_failed_msg);
        return;
    }
    if (d->holds) {
        j->next = NULL;
        if (d->held_tail) d->held_tail->next = j;
        else d->held = j;
        d->held_tail = j;
        return;
    }
    start_job(d, j);
}

static void abort_job_call(void *dv, void *av) {
    dag *d = dv;
    abort_req *a = av;
    /* Once finishing, the caller's own failure is what it returns. */
    if (!a->j->finishing) dag__job_fail_msg(d, a->j, a->rc, a->msg);
    job_unref(d, a->j); /* the request's reference */
    free(a);
}

static void cancel_fn(dag *d, void *arg) {
    cancel_req *r = arg;
    char msg[JOB_MSG_MAX];
    if (r->group) snprintf(msg, sizeof msg, "job canceled (job group \"%s\" canceled)", r->group);
    else snprintf(msg, sizeof msg, "job canceled (%s)", r->why);
    /* Jobs held back first: they have not started. */
    for (job *j = d->held, *prev = NULL, *next; j; j = next) {
        next = j->next;
        if (r->group && (!j->group || strcmp(j->group, r->group))) {
            prev = j;
            continue;
        }
        if (prev) prev->next = next;
        else d->held = next;
        if (d->held_tail == j) d->held_tail = prev;
        r->n++;
        fail_unstarted(d, j, EM_ECANCELED, msg);
    }
    for (job *j = d->jobs, *next; j; j = next) {
        next = j->next;
        if (j->finishing || (r->group && (!j->group || strcmp(j->group, r->group)))) continue;
        r->n++;
        dag__job_fail_msg(d, j, EM_ECANCELED, msg);
    }
}

static void release_fn(dag *d, void *arg) {
    (void)arg;
    if (d->holds && --d->holds) return;
    while (d->held) {
        job *j = d->held;
        d->held = j->next;
        if (!d->held) d->held_tail = NULL;
        if (d->app_failed) fail_unstarted(d, j, d->app_failed, d->app_failed_msg);
        else start_job(d, j);
    }
}

static void drop_fn(dag *d, void *arg) {
    uint32_t id = *(uint32_t *)arg;
    if (mo_find(&d->mo, id) && d->be && d->be->drop_shuffle) d->be->drop_shuffle(d->be, id);
    mo_remove(&d->mo, id);
    stage *s = idmap_del(&d->maps, id);
    if (s) {
        /* No stage names it as a parent any more: the shuffled RDDs reading
         * it held this one's RDD, and are gone.  A loser still running
         * keeps it until its end. */
        __atomic_fetch_sub(&d->nlive_maps, 1, __ATOMIC_RELAXED); /* read by em_get_stats */
        dag__retire_stage(d, s);
    }
}

static void stop_fn(dag *d, void *arg) {
    cancel_req r = {NULL, "the context is closing (em_close)", 0};
    (void)arg;
    d->stopping = 1;
    d->holds = 0;
    cancel_fn(d, &r);
}

/* Every job not yet finishing fails with code and msg. */
void dag__fail_all(dag *d, int code, const char *msg) {
    for (job *j = d->jobs, *next; j; j = next) {
        next = j->next;
        if (!j->finishing) dag__job_fail_msg(d, j, code, msg);
    }
}

/* -------------------------------------------------- the thread's loop */

/* Take the events in bursts; after each, the timed work, dispatch, one
 * hand-over of the launches, the callers' results, the stuck check, and
 * what the burst left to free or to answer. */
static void *sched_main(void *arg) {
    dag *d = arg;
    for (;;) {
        if (d->stopping && !d->jobs && !d->running) break;
        sched_event *ev = evq_wait_all(&d->events, ts_next_timeout(d));
        for (sched_event *next; ev; ev = next) {
            next = ev->next;
            int kept = 0;
            switch (ev->kind) {
            case EV_TASK_ENDED: kept = ts_task_ended(d, ev); break;
            case EV_CALL: ev->call(d, ev->arg); break;
            case EV_EXEC_ADDED:
                if (et_add(&d->execs, ev->exec, ev->cores, ev->backlog, ev->backlog_max, ev->host)) {
                    /* An executor the scheduler cannot track would leave
                     * local[N]'s jobs waiting for it forever: the
                     * application fails instead, naming the cause. */
                    d->app_failed = EM_ENOMEM;
                    snprintf(d->app_failed_msg, sizeof d->app_failed_msg,
                             "scheduler: out of memory registering executor %d", ev->exec);
                    dag__fail_all(d, d->app_failed, d->app_failed_msg);
                } else {
                    ts_exec_added(d, et_find(&d->execs, ev->exec));
                }
                lis_exec_added(d, ev);
                break;
            case EV_EXEC_LOST: {
                /* Its attempts end as the backend posts them; its map
                 * outputs went with it, unless its worker's shuffle
                 * service serves them (until the backend says the worker
                 * was lost too). */
                exec_rec *x = et_find(&d->execs, ev->exec);
                if (x) {
                    et_set_alive(&d->execs, x, 0);
                    x->wq_n = x->wq_head = 0; /* its queue went with it */
                }
                lis_exec_lost(d, ev);
                if (!ev->keep_outputs) lose_exec_outputs(d, ev->exec);
                break;
            }
            case EV_APP_FAILED:
                if (ev->final) {
                    d->app_failed = ev->res.status;
                    snprintf(d->app_failed_msg, sizeof d->app_failed_msg, "%s", ev->res.errmsg);
                }
                dag__fail_all(d, ev->res.status, ev->res.errmsg);
                break;
            case EV_FAULTS_FIRED: STAT_ADD(d, faults_fired, ev->res.faults_fired); break;
            }
            if (!kept) ev_free(ev);
        }
        ts_timed_work(d);
        ts_dispatch(d);
        d->be->flush(d->be); /* the burst's launches, in one hand-over */
        wake_dirty(d);
        ts_check_stuck(d);
        prune_active(d);
        release_dead(d);
        if (!d->running && d->nrunq == d->runq_head && d->hold_waiters) {
            sync_call *w = d->hold_waiters;
            d->hold_waiters = NULL;
            for (sync_call *n; w; w = n) {
                n = w->next;
                reply(d, w);
            }
        }
    }
    /* Late events of stopped work (none should remain) go with the queue. */
    return NULL;
}
