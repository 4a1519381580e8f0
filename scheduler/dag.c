/*
 * dag.c -- the DAG scheduler (see dag.h).
 *
 * Everything below the "scheduler thread" line runs on the scheduler's one
 * thread, which owns the stages, the jobs' scheduling state, the in-flight
 * table and the map-output tracker; driver threads only post calls and
 * wait on their job's mailbox (under jmu).
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
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accum.h"
#include "commit.h"
#include "dag.h"
#include "err.h"
#include "fnref.h"
#include "idmap.h"
#include "log.h"
#include "placement.h"
#include "progress.h"
#include "taskbuild.h"

enum { T_PENDING = 0, T_RUNNING = 1, T_DONE = 2 };

/* The counters are read by em_get_stats from any thread while jobs run:
 * updated atomically. */
#define STAT_ADD(d, field, v) __atomic_fetch_add(&(d)->stats->field, (v), __ATOMIC_RELAXED)
enum { A_RUNNING = 0, A_OK, A_FAILED, A_KILLED };

#define JOB_MSG_MAX 1024
#define RESULTS_PER_WAKE 256
#define DISPATCH_FLUSH_EVERY 32

/* One attempt of one task: launched on an executor, ended some way. */
typedef struct attempt_rec {
    uint64_t task_id;
    int idx;            /* the task (index in its stage) */
    uint32_t number;    /* 0 for the task's first attempt */
    int exec;           /* executor it ran on (-1 until it ended) */
    uint8_t state;      /* A_* */
    uint8_t speculative;
    uint64_t start_us, end_us;
} attempt_rec;

typedef struct job job;

typedef struct stage {
    uint32_t id;
    em_rdd *rdd;       /* the RDD whose partitions the tasks compute */
    em_rdd *shuffled;  /* map stages: the shuffled RDD reading the output
                          (not read once dropped: it may be freed) */
    uint32_t shuffle_id; /* map stages: its shuffle, and how many partitions */
    int out_parts;       /* the shuffle has (copies: valid after the drop) */
    int nparents;
    struct stage **parents;
    int ntasks;
    /* Map stages: per map output, the first task id launched after it was
     * last registered; an older reader's fetch failure is stale. */
    uint64_t *reg_task;
    uint8_t *state;
    int *attempts;      /* failed attempts, against max_failures */
    uint32_t *launched; /* attempts launched: the next one's number */
    uint32_t *nrun;     /* attempts running now */
    uint8_t *queued;    /* entries in the run queue (an attempt to launch) */
    attempt_rec *att;   /* attempts launched since the stage was last idle */
    int natt, capatt;
    int done, running;
    /* Stage attempts, as Spark's: the first fetch failure reported by an
     * attempt of the current stage attempt fails it, and the tasks
     * launched from then on make the next one; reports from attempts
     * launched before (task id below first_task) only lose their outputs.
     * consec_failed counts the failed stage attempts since the stage last
     * completed, against ember.stage.maxConsecutiveAttempts; fail_why
     * names their outputs and causes. */
    uint32_t stage_attempt;
    uint64_t first_task;
    int consec_failed;
    char fail_why[600];
    job *job;           /* the job it runs for; NULL when idle */
    uint8_t active;     /* in d->active */
    uint8_t waiting;    /* in d->waitq: waits for parents */
    uint8_t dropped;    /* map stage of a dropped shuffle, or result stage of
                           an ended job: freed at its last attempt's end */
    uint8_t resubmit;   /* dispatch found a parent incomplete: submit again */
    uint64_t counted;   /* the last job (seq) whose stats counted it */
    uint32_t mark;      /* == dag.gen: visited by the current walk */
    /* ember.excludeOnFailure: per (task, executor) pair, the failed
     * attempts there since the stage was last idle. */
    struct fail_rec {
        int idx, exec, n;
    } *fails;
    int nfails, capfails;
} stage;

/* An attempt running now: its stage, task and record, and the job it
 * runs for (whose count of running attempts it is in). */
typedef struct inflight {
    stage *s;
    int idx;
    int att; /* index in s->att */
    job *j;
    struct inflight *next_free; /* on d->free_fl */
} inflight;

struct job {
    job *next;          /* d->jobs (running) or d->held (not started) */
    uint64_t seq;
    job_spec spec;      /* sink and parts live in the caller's frame, which
                           outlives the job's use of them (until ended) */
    char *group;
    stage *result;
    int rc;             /* 0, or why it failed */
    char msg[JOB_MSG_MAX];
    int finishing;      /* every partition has a winner, or it failed: no
                           more launches */
    int save;           /* its tasks write output (SK_SAVE) */
    int launch_rc;      /* a launch failed during dispatch: failed after it */
    char launch_msg[JOB_MSG_MAX];
    int dirty;          /* in d->dirty: results to hand on after the burst */
    int wake;           /* and its caller to wake then */
    int nqueued;        /* results handed on */
    job *next_dirty;
    sched_event *phead, *ptail; /* results not yet handed on (scheduler only) */
    int over;           /* end_job ran */
    int nrun;           /* attempts running for it */
    job *next_dead;     /* on d->dead: the scheduler lets go after the burst */
    /* Shared with the calling thread, under d->jmu: */
    sched_event *rhead, *rtail; /* successful results for on_result */
    uint64_t result_bytes;      /* of every result handed on */
    int ended;
    int refs;           /* the caller, the scheduler, each abort request */
    pthread_cond_t cv;
};

struct dag {
    backend *be;
    evq events;      /* what the backend and driver threads post */
    commit_coord commits; /* output commits of running jobs' tasks */
    mapout mo;
    em_stats *stats;
    uint64_t ns;
    idmap maps;      /* shuffle id -> its map stage */
    idmap inflight;  /* task id -> inflight */
    inflight *free_fl; /* inflight records to reuse */
    uint32_t next_stage;
    uint64_t next_task;
    uint64_t next_seq;
    progress prog;
    job *prog_job;   /* the job whose progress is drawn */
    job *jobs, *jobs_tail; /* running, in start order */
    job *held, *held_tail; /* posted while held, in order */
    job *dirty;      /* jobs with results to wake their callers for */
    job *dead;       /* jobs the scheduler lets go after this burst */
    /* Executors, as the backend announced them, and the attempts waiting
     * for a place on one (in the order asked; dispatched by job order). */
    exec_table execs;
    struct runq_entry *runq;
    int nrunq, caprunq;
    uint64_t locality_due_us; /* the earliest locality wait to end, 0: none */
    stage **waitq;
    int nwait, capwait;
    stage **active;  /* stages with running attempts or waiting: what
                        per-event and timed work scans */
    int nactive, capactive;
    int running;     /* attempts running, all stages */
    int nlive_maps;  /* map stages held (one per live shuffle) */
    uint32_t gen;    /* walk marks */
    int holds;       /* dag_hold calls not yet released */
    struct sync_call *hold_waiters;
    int stopping;
    uint64_t next_spec_us;
    /* Cluster mode: tasks wait with no executor alive since starved_us
     * (0: not waiting).  At ask_us (register_wait_ms after, then every
     * register_wait_ms again) the backend says whether anything will
     * come: if not, their jobs fail with its reason
     * (ember.scheduler.maxRegisteredWait); while the application waits its
     * turn for cores they wait, with a warning at warn_us, every
     * starvation_ms (Spark's spark.starvation.timeout). */
    uint64_t starved_us, ask_us, warn_us;
    int64_t register_wait_ms, starvation_ms;
    /* The application is over (EV_APP_FAILED, final): every job fails at
     * once with this code and message. */
    int app_failed;
    char app_failed_msg[512];
    /* Threads */
    pthread_t thread;
    int started;
    pthread_mutex_t jmu; /* job mailboxes, sync calls, closing */
    pthread_cond_t jcv;  /* sync calls done */
    int closing;
};

/* An attempt to launch once an executor has room for it. */
typedef struct runq_entry {
    job *j;        /* NULL: taken (launched, dropped); removed at compaction */
    stage *s;
    int idx;
    int speculative;
    uint64_t since_us; /* queued at */
    uint64_t unsched_us; /* first found with every executor excluded for it (0: never) */
} runq_entry;

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

static void stage_free(stage *s) {
    if (!s) return;
    free(s->parents);
    free(s->state);
    free(s->attempts);
    free(s->launched);
    free(s->nrun);
    free(s->queued);
    free(s->att);
    free(s->reg_task);
    free(s->fails);
    free(s);
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

/* ------------------------------------------------------- stage building */

/* Every walk here is iterative, over an explicit stack, and visits each
 * RDD or stage once (marks against d->gen): a lineage of 10,000 RDDs or
 * shuffles neither overflows the scheduler thread's stack nor costs more
 * than its size. */

typedef struct rddvec {
    em_rdd **v;
    int n, cap;
} rddvec;

static int rv_push(rddvec *a, em_rdd *r) {
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 16;
        em_rdd **v = realloc(a->v, sizeof *v * (size_t)cap);
        if (!v) return -1;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = r;
    return 0;
}

/* Append to out the shuffled RDDs reachable from r through narrow
 * dependencies, in the order a depth-first walk taking first parents first
 * meets them (the order Spark numbers parent stages in).  0 or -1. */
static int narrow_shuffles(dag *d, em_rdd *r, rddvec *out) {
    rddvec st = {NULL, 0, 0};
    uint32_t gen = ++d->gen;
    int rc = rv_push(&st, r);
    while (!rc && st.n) {
        em_rdd *x = st.v[--st.n];
        if (x->sched_mark == gen) continue;
        x->sched_mark = gen;
        if (x->kind == RDD_SHUFFLED) {
            rc = rv_push(out, x);
        } else {
            em_rdd *ps[RDD_MAX_PARENTS];
            for (int i = rdd_parents(x, ps); i-- > 0 && !rc;) rc = rv_push(&st, ps[i]);
        }
    }
    free(st.v);
    return rc;
}

/* s->parents := the map stages of ps (which all exist).  0 or -1 (s
 * unchanged). */
static int set_parents(dag *d, stage *s, em_rdd **ps, int nps) {
    stage **v = nps ? malloc(sizeof *v * (size_t)nps) : NULL;
    int n = 0;
    if (nps && !v) return -1;
    for (int i = 0; i < nps; i++) {
        stage *p = idmap_get(&d->maps, ps[i]->shuffle_id);
        int dup = 0;
        for (int k = 0; k < n && !dup; k++) dup = v[k] == p;
        if (!p) {
            free(v);
            return -1;
        }
        if (!dup) v[n++] = p;
    }
    free(s->parents);
    s->parents = v;
    s->nparents = n;
    return 0;
}

static stage *stage_alloc(em_rdd *rdd, em_rdd *shuffled, int ntasks) {
    stage *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->rdd = rdd;
    s->shuffled = shuffled;
    s->ntasks = ntasks;
    s->state = calloc((size_t)ntasks + 1, 1);
    s->attempts = calloc((size_t)ntasks + 1, sizeof(int));
    s->launched = calloc((size_t)ntasks + 1, sizeof(uint32_t));
    s->nrun = calloc((size_t)ntasks + 1, sizeof(uint32_t));
    s->queued = calloc((size_t)ntasks + 1, 1);
    if (shuffled) s->reg_task = calloc((size_t)ntasks + 1, sizeof(uint64_t));
    if (!s->state || !s->attempts || !s->launched || !s->nrun || !s->queued || (shuffled && !s->reg_task)) {
        stage_free(s);
        return NULL;
    }
    return s;
}

/* One stage to make: the work item of stage_new's walk. */
typedef struct mkframe {
    em_rdd *rdd, *shuffled;
    int ntasks;
    int scanned;
    rddvec ps; /* its parent shuffles, once scanned */
} mkframe;

/* Make the stage computing rdd (a map stage when shuffled is set, else a
 * job's result stage), first making the map stages of the shuffles it
 * depends on that do not exist yet, parents before children (their ids
 * are smaller, as Spark numbers them).  A walk over an explicit stack, so
 * a chain of 10,000 shuffles is made without recursion.  NULL on ENOMEM. */
static stage *stage_new(dag *d, em_rdd *rdd, em_rdd *shuffled, int ntasks) {
    mkframe *st = malloc(sizeof *st * 16);
    int n = 0, cap = 16, fail = !st;
    stage *made = NULL;
    if (st) st[n++] = (mkframe){rdd, shuffled, ntasks, 0, {NULL, 0, 0}};
    while (n && !fail) {
        mkframe *f = &st[n - 1];
        if (f->shuffled && n > 1 && idmap_get(&d->maps, f->shuffled->shuffle_id)) {
            free(f->ps.v); /* made meanwhile, by another branch */
            n--;
            continue;
        }
        if (!f->scanned) {
            f->scanned = 1;
            if (narrow_shuffles(d, f->rdd, &f->ps)) {
                fail = 1;
                break;
            }
            int fi = n - 1; /* f moves when st grows */
            for (int i = f->ps.n; i-- > 0;) {
                em_rdd *p = st[fi].ps.v[i];
                if (idmap_get(&d->maps, p->shuffle_id)) continue;
                if (n == cap) {
                    mkframe *g = realloc(st, sizeof *st * (size_t)cap * 2);
                    if (!g) {
                        fail = 1;
                        break;
                    }
                    st = g;
                    cap *= 2;
                }
                st[n++] = (mkframe){p->parent, p, p->parent->nparts, 0, {NULL, 0, 0}};
            }
            continue;
        }
        stage *s = stage_alloc(f->rdd, f->shuffled, f->ntasks);
        if (!s || set_parents(d, s, f->ps.v, f->ps.n)) {
            stage_free(s);
            fail = 1;
            break;
        }
        s->id = d->next_stage++; /* after its parents, as Spark numbers them */
        if (f->shuffled) {
            uint32_t id = f->shuffled->shuffle_id;
            s->shuffle_id = id;
            s->out_parts = f->shuffled->nparts;
            if (!mo_get(&d->mo, id, s->ntasks, f->shuffled->nparts) || idmap_put(&d->maps, id, s)) {
                stage_free(s);
                fail = 1;
                break;
            }
            __atomic_fetch_add(&d->nlive_maps, 1, __ATOMIC_RELAXED);
        }
        free(f->ps.v);
        n--;
        if (!n) made = s;
    }
    while (n) free(st[--n].ps.v);
    free(st);
    return made;
}

static stage *map_stage(dag *d, em_rdd *shuffled) {
    stage *s = idmap_get(&d->maps, shuffled->shuffle_id);
    return s ? s : stage_new(d, shuffled->parent, shuffled, shuffled->parent->nparts);
}

/* Compute s->parents again from its RDD's lineage (which a checkpoint
 * truncated), making any map stage missing.  0 or -1 (s unchanged). */
static int reparent(dag *d, stage *s) {
    rddvec ps = {NULL, 0, 0};
    int rc = narrow_shuffles(d, s->rdd, &ps);
    for (int i = 0; !rc && i < ps.n; i++)
        if (!map_stage(d, ps.v[i])) rc = -1;
    if (!rc) rc = set_parents(d, s, ps.v, ps.n);
    free(ps.v);
    return rc;
}

int dag_count_stages(em_rdd *rdd) {
    rddvec st = {NULL, 0, 0};
    uint8_t *seen = NULL;
    int cap = 0, n = 1;
    if (rv_push(&st, rdd)) return -1;
    while (st.n) {
        em_rdd *x = st.v[--st.n];
        if (x->id >= cap) {
            int c = x->id * 2 + 64;
            uint8_t *s = realloc(seen, (size_t)c);
            if (!s) {
                n = -1;
                break;
            }
            memset(s + cap, 0, (size_t)(c - cap));
            seen = s;
            cap = c;
        }
        if (seen[x->id]) continue;
        seen[x->id] = 1;
        if (x->kind == RDD_SHUFFLED) n++;
        em_rdd *ps[RDD_MAX_PARENTS];
        int np = rdd_parents(x, ps), bad = 0;
        for (int i = np; i-- > 0 && !bad;) bad = rv_push(&st, ps[i]);
        if (bad) {
            n = -1;
            break;
        }
    }
    free(st.v);
    free(seen);
    return n;
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
static void sched_release(dag *d, job *j) {
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
    STAT_ADD(d, jobs_active, 1);
    pthread_mutex_unlock(&d->jmu);
    post_call(d, start_job_call, j, ev);

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
    STAT_ADD(d, jobs_active, -1);
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

static void reparent_v(void *s, void *d) { reparent(d, s); }

/* On the scheduler's thread, which alone walks the graph into stages and
 * tasks: change it, then let every stage find its parents anew. */
static void truncate_fn(dag *d, void *arg) {
    truncate_req *t = arg;
    t->fn(t->arg);
    idmap_foreach(&d->maps, reparent_v, d);
    for (job *j = d->jobs; j; j = j->next)
        if (j->result) reparent(d, j->result);
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

void dag_set_starvation_timeout(dag *d, int64_t ms) { d->starvation_ms = ms; }

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

static void activate(dag *d, stage *s) {
    if (s->active) return;
    if (d->nactive == d->capactive) {
        int cap = d->capactive ? d->capactive * 2 : 16;
        stage **a = realloc(d->active, sizeof *a * (size_t)cap);
        if (!a) return; /* not scanned by timed work; still tracked by its attempts */
        d->active = a;
        d->capactive = cap;
    }
    d->active[d->nactive++] = s;
    s->active = 1;
}

static void unwait(dag *d, stage *s) {
    if (!s->waiting) return;
    for (int i = 0; i < d->nwait; i++)
        if (d->waitq[i] == s) {
            d->waitq[i] = d->waitq[--d->nwait];
            break;
        }
    s->waiting = 0;
}

static int stage_complete(dag *d, stage *s);
static void runq_drop_stage(dag *d, stage *s);

/* Drop idle stages from the active list, and free stages left to die. */
static void prune_active(dag *d) {
    for (int i = 0; i < d->nactive; i++) {
        stage *s = d->active[i];
        if (s->running || s->waiting) continue;
        if (s->job && !s->dropped) {
            if (!s->shuffled || !stage_complete(d, s)) continue; /* its job holds it */
            s->job = NULL;
        }
        s->active = 0;
        d->active[i--] = d->active[--d->nactive];
        if (s->dropped) {
            runq_drop_stage(d, s);
            stage_free(s);
        }
    }
}

/* A stage nothing runs for any more: freed now, or at its last attempt's
 * end. */
static void retire_stage(dag *d, stage *s) {
    unwait(d, s);
    s->job = NULL;
    s->dropped = 1;
    if (!s->running && !s->active) { /* else prune_active frees it */
        runq_drop_stage(d, s);
        stage_free(s);
    }
}

static int stage_complete(dag *d, stage *s) {
    if (!s->shuffled) return s->done == s->ntasks;
    shuffle_out *so = mo_find(&d->mo, s->shuffle_id);
    return so && so->navail == so->nmaps;
}

static void job_failf(dag *d, job *j, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void job_fail_msg(dag *d, job *j, int code, const char *msg);
static void job_fail_here(dag *d, job *j, int code);

static int job_part(const job *j, int idx) { return j->spec.parts ? j->spec.parts[idx] : idx; }

/* ------------------------------------------------ excludeOnFailure */

/* A counted failure of task idx on executor exec (for exclusion; a
 * record that cannot grow is only a missed exclusion). */
static void note_failure(stage *s, int idx, int exec) {
    for (int i = 0; i < s->nfails; i++)
        if (s->fails[i].idx == idx && s->fails[i].exec == exec) {
            s->fails[i].n++;
            return;
        }
    if (s->nfails == s->capfails) {
        int cap = s->capfails ? 2 * s->capfails : 8;
        struct fail_rec *f = realloc(s->fails, sizeof *f * (size_t)cap);
        if (!f) return;
        s->fails = f;
        s->capfails = cap;
    }
    s->fails[s->nfails++] = (struct fail_rec){idx, exec, 1};
}

/* Whether executor x may not run task idx of s (Spark's rules: excluded
 * for the application, for the task, or for the stage). */
static int excluded_for(const job *j, const stage *s, int idx, const exec_rec *x, uint64_t now) {
    if (x->excluded_until_us > now) return 1;
    int tasks = 0;
    for (int i = 0; i < s->nfails; i++) {
        const struct fail_rec *f = &s->fails[i];
        if (f->exec != x->id) continue;
        if (f->idx == idx && f->n >= j->spec.excl_task_per_exec) return 1;
        tasks++;
    }
    return tasks >= j->spec.excl_stage_per_exec;
}

/* Set every executor's skip for task idx of s; the number of executors
 * alive that may run it. */
static int mark_excluded(dag *d, const job *j, const stage *s, int idx, uint64_t now) {
    int allowed = 0;
    for (int i = 0; i < d->execs.n; i++) {
        exec_rec *x = &d->execs.v[i];
        x->skip = excluded_for(j, s, idx, x, now);
        allowed += x->alive && !x->skip;
    }
    return allowed;
}

/* Stage s succeeded: the executors where its tasks failed have them
 * counted, and one reaching the application's limit is excluded for the
 * timeout (its count starts again). */
static void exclude_after_stage(dag *d, const job *j, stage *s) {
    if (!j->spec.excl_enabled || !s->nfails) return;
    uint64_t now = ev_now_us();
    for (int i = 0; i < s->nfails; i++) {
        exec_rec *x = et_find(&d->execs, s->fails[i].exec);
        if (!x || ++x->failed_tasks < j->spec.excl_app_per_exec) continue;
        x->failed_tasks = 0;
        x->excluded_until_us = now + (uint64_t)j->spec.excl_timeout_ms * 1000u;
        log_msg(LOG_WARN, "driver",
                "executor %d excluded for %lld ms: %d tasks failed on it (ember.excludeOnFailure.application)", x->id,
                (long long)j->spec.excl_timeout_ms, j->spec.excl_app_per_exec);
    }
    s->nfails = 0;
}

/* Launch an attempt of task idx of s, for j, on executor x. */
static int launch_attempt(dag *d, job *j, stage *s, int idx, int speculative, exec_rec *x) {
    const job_spec *js = &j->spec;
    task_desc t;
    plan_sink ms;
    ebuf out = EBUF_INIT;
    int part = s->shuffled ? idx : job_part(j, idx);

    memset(&t, 0, sizeof t);
    t.task_id = d->next_task++;
    t.stage_id = s->id;
    t.attempt = s->launched[idx];
    t.faults = js->faults;
    t.partition = part;
    memcpy(t.binhash, fnref_binary_hash(), 32);
    t.mem_budget = js->mem_budget;
    t.block_bytes = js->block_bytes;
    t.max_record = js->max_record;
    t.codec = js->codec;
    if (s->shuffled) {
        em_rdd *r = s->shuffled;
        memset(&ms, 0, sizeof ms);
        ms.kind = SK_SHUFFLE;
        ms.shuffle_id = r->shuffle_id;
        ms.nparts = r->nparts;
        ms.partitioner = r->partitioner;
        ms.descending = r->descending;
        ms.combine = r->combine;
        ms.bounds.p = r->bounds.p;
        ms.bounds.len = r->bounds.len;
        ms.agg = r->agg;
        t.sink = ms;
    } else {
        t.sink = *js->sink;
    }
    int rc = taskbuild_encode(&t, s->rdd, part, &d->mo, d->ns, &out);
    if (rc) {
        ebuf_free(&out);
        return rc;
    }
    /* Recorded before it is launched: its end may come at once. */
    if (s->natt == s->capatt) {
        int cap = s->capatt ? s->capatt * 2 : s->ntasks + 8;
        attempt_rec *a = realloc(s->att, sizeof *a * (size_t)cap);
        if (!a) {
            ebuf_free(&out);
            return em__seterr(EM_ENOMEM, "scheduler: out of memory");
        }
        s->att = a;
        s->capatt = cap;
    }
    inflight *f = d->free_fl;
    if (f) d->free_fl = f->next_free;
    else f = malloc(sizeof *f);
    if (!f || idmap_put(&d->inflight, t.task_id, f)) {
        free(f);
        ebuf_free(&out);
        return em__seterr(EM_ENOMEM, "scheduler: out of memory");
    }
    attempt_rec *a = &s->att[s->natt];
    memset(a, 0, sizeof *a);
    a->task_id = t.task_id;
    a->idx = idx;
    a->number = t.attempt;
    a->exec = x->id;
    a->state = A_RUNNING;
    a->speculative = (uint8_t)speculative;
    f->s = s;
    f->idx = idx;
    f->att = s->natt++;
    f->j = j;
    s->launched[idx]++;
    s->nrun[idx]++;
    s->state[idx] = T_RUNNING;
    s->running++;
    d->running++;
    x->assigned++;
    STAT_ADD(d, tasks_running, 1);
    j->nrun++;
    activate(d, s);
    size_t len;
    uint8_t *bytes = ebuf_steal(&out, &len);
    rc = d->be->launch(d->be, t.task_id, bytes, len, x->id);
    if (rc) {
        x->assigned--;
        idmap_del(&d->inflight, t.task_id);
        f->next_free = d->free_fl;
        d->free_fl = f;
        s->state[idx] = s->nrun[idx] > 1 ? T_RUNNING : T_PENDING;
        s->running--;
        d->running--;
        STAT_ADD(d, tasks_running, -1);
        j->nrun--;
        s->natt--;
        s->launched[idx]--;
        s->nrun[idx]--;
    }
    return rc;
}

/* Ask for an attempt of task idx: it joins the run queue, and dispatch
 * (after every burst of events) launches it where there is room.  0 or
 * EM_ENOMEM. */
static int enqueue(dag *d, job *j, stage *s, int idx, int speculative) {
    if (d->nrunq == d->caprunq) {
        int cap = d->caprunq ? d->caprunq * 2 : 256;
        runq_entry *q = realloc(d->runq, sizeof *q * (size_t)cap);
        if (!q) return em__seterr(EM_ENOMEM, "scheduler: out of memory");
        d->runq = q;
        d->caprunq = cap;
    }
    runq_entry *e = &d->runq[d->nrunq++];
    e->j = j;
    e->s = s;
    e->idx = idx;
    e->speculative = speculative;
    e->since_us = ev_now_us();
    e->unsched_us = 0;
    s->queued[idx]++;
    activate(d, s);
    return 0;
}

static int launch(dag *d, job *j, stage *s, int idx) { return enqueue(d, j, s, idx, 0); }

/* Take entry e out of the queue (compacted away later). */
static void runq_take(runq_entry *e) {
    if (!e->j) return;
    e->s->queued[e->idx]--;
    e->j = NULL;
}

/* Drop the queue's entries of a job, or of a stage, or move a stage's
 * entries from one job to another. */
static void runq_drop_job(dag *d, job *j) {
    for (int i = 0; i < d->nrunq; i++)
        if (d->runq[i].j == j) runq_take(&d->runq[i]);
}

static void runq_drop_stage(dag *d, stage *s) {
    for (int i = 0; i < d->nrunq; i++)
        if (d->runq[i].j && d->runq[i].s == s) runq_take(&d->runq[i]);
}

static void runq_move(dag *d, stage *s, job *from, job *to) {
    for (int i = 0; i < d->nrunq; i++)
        if (d->runq[i].s == s && d->runq[i].j == from) d->runq[i].j = to;
}

static void runq_compact(dag *d) {
    int n = 0;
    for (int i = 0; i < d->nrunq; i++)
        if (d->runq[i].j) d->runq[n++] = d->runq[i];
    d->nrunq = n;
}

/* The executor of task idx's running attempt, -1 if none. */
static int running_exec(const stage *s, int idx) {
    for (int i = s->natt; i-- > 0;)
        if (s->att[i].idx == idx && s->att[i].state == A_RUNNING) return s->att[i].exec;
    return -1;
}

/* Whether a queued entry still asks for something: its job runs the
 * stage, and the task is pending (or, for a speculative copy, runs in one
 * attempt only). */
static int entry_valid(const runq_entry *e) {
    const stage *s = e->s;
    if (e->j->finishing || s->dropped || s->job != e->j) return 0;
    if (s->state[e->idx] == T_PENDING) return s->nrun[e->idx] == 0;
    return e->speculative && s->state[e->idx] == T_RUNNING && s->nrun[e->idx] == 1;
}

static int submit_stage(dag *d, job *j, stage *s);

static int parents_ready(dag *d, stage *s) {
    for (int i = 0; i < s->nparents; i++)
        if (!stage_complete(d, s->parents[i])) return 0;
    return 1;
}

/* One pass of dispatch; returns whether a stage must be submitted again
 * (an entry's parent lost an output since it was queued). */
static int dispatch_pass(dag *d) {
    uint64_t now = ev_now_us();
    d->locality_due_us = 0;
    int full = !et_any_room(&d->execs), launched = 0, again = 0;
    for (job *j = d->jobs; j && !full; j = j->next) {
        if (j->launch_rc) continue;
        for (int i = 0; i < d->nrunq && !full; i++) {
            runq_entry *e = &d->runq[i];
            if (e->j != j) continue;
            if (!entry_valid(e)) {
                runq_take(e);
                continue;
            }
            stage *s = e->s;
            if (!parents_ready(d, s)) { /* a map output was lost meanwhile */
                runq_take(e);
                s->resubmit = again = 1;
                continue;
            }
            int part = s->shuffled ? e->idx : job_part(j, e->idx);
            int pref = cache_pref(s->rdd, part);
            uint64_t due = e->since_us + (uint64_t)j->spec.locality_wait_ms * 1000u;
            int excl = j->spec.excl_enabled;
            if (excl && !mark_excluded(d, j, s, e->idx, now) && d->execs.n) {
                /* Every executor is excluded for it: wait for another
                 * (a replacement, one yet to register) for
                 * unschedulableTaskSetTimeout, then fail the job, as
                 * Spark aborts such a task set. */
                if (!e->unsched_us) e->unsched_us = now;
                uint64_t dl = e->unsched_us + (uint64_t)j->spec.excl_unsched_ms * 1000u;
                if (now >= dl) {
                    j->launch_rc = EM_EJOB;
                    snprintf(j->launch_msg, sizeof j->launch_msg,
                             "Task %d in stage %u cannot run anywhere: every executor is excluded for it after its "
                             "failures there (ember.excludeOnFailure), and none came in %lld ms",
                             e->idx, s->id, (long long)j->spec.excl_unsched_ms);
                    break;
                }
                if (!d->locality_due_us || dl < d->locality_due_us) d->locality_due_us = dl;
                continue;
            }
            e->unsched_us = 0;
            exec_rec *x = et_choose(&d->execs, pref, e->speculative ? running_exec(s, e->idx) : -1, now >= due, excl);
            if (!x) {
                if (!et_any_room(&d->execs)) full = 1;
                else if (!d->locality_due_us || due < d->locality_due_us) d->locality_due_us = due;
                continue;
            }
            int idx = e->idx, spec = e->speculative;
            runq_take(e);
            if (s->state[idx] == T_PENDING && spec) spec = 0; /* its original ended: a plain retry */
            int rc = launch_attempt(d, j, s, idx, spec, x);
            if (rc) {
                j->launch_rc = rc;
                em__geterr(j->launch_msg, sizeof j->launch_msg);
                break;
            }
            if (pref >= 0 && x->id == pref) STAT_ADD(d, tasks_local, 1);
            if (spec) STAT_ADD(d, tasks_speculative, 1);
            /* A stage's thousand tasks: executors start on the first ones
             * while the rest are encoded. */
            if (++launched % DISPATCH_FLUSH_EVERY == 0) d->be->flush(d->be);
        }
    }
    runq_compact(d);
    /* Launches that failed fail their jobs, now that the queue is whole. */
    for (job *j = d->jobs, *next; j; j = next) {
        next = j->next;
        if (j->launch_rc) {
            int rc = j->launch_rc;
            j->launch_rc = 0;
            job_fail_msg(d, j, rc, j->launch_msg);
        }
    }
    return again;
}

/* Launch what the queue holds where there is room, earlier jobs first, in
 * the order asked within a job.  A stage whose parent lost an output since
 * its tasks were queued waits for that parent again (its map task is
 * queued by then), as submit_stage makes it. */
static void dispatch(dag *d) {
    for (int round = 0; d->nrunq && round < 4; round++) {
        if (!dispatch_pass(d)) return;
        for (int i = 0; i < d->nactive; i++) {
            stage *s = d->active[i];
            if (!s->resubmit) continue;
            s->resubmit = 0;
            if (!s->job || s->job->finishing || s->dropped || s->waiting) continue;
            int rc = submit_stage(d, s->job, s);
            if (rc) job_fail_here(d, s->job, rc);
        }
    }
}

/* The stage starts running for j.  A map stage that was idle starts a new
 * attempt of itself: failure counts start again (attempt numbers go on:
 * each attempt of a task has its own). */
static void move_attempts(dag *d, stage *s, job *from, job *to);

static void take_stage(dag *d, stage *s, job *j) {
    if (s->job == j) return;
    activate(d, s); /* every stage a job holds is in the list release_stages scans */
    if (s->job) { /* from a job that is finishing: its attempts and queued tasks are j's now */
        move_attempts(d, s, s->job, j);
        runq_move(d, s, s->job, j);
    } else {
        s->consec_failed = 0;
        s->fail_why[0] = 0;
        s->nfails = 0;
        for (int i = 0; i < s->ntasks; i++) s->attempts[i] = 0;
        if (!s->running) s->natt = 0;
    }
    s->job = j;
}

static int launch_pending(dag *d, job *j, stage *s) {
    int any = 0;
    take_stage(d, s, j);
    for (int i = 0; i < s->ntasks; i++)
        if (s->state[i] == T_PENDING && !s->queued[i]) {
            int rc = launch(d, j, s, i);
            if (rc) return rc;
            any = 1;
        }
    if (any && s->counted != j->seq) {
        s->counted = j->seq;
        STAT_ADD(d, stages_run, 1);
    }
    return 0;
}

/* Stage s has looked at its parents (missing: some are incomplete): run
 * its pending tasks for j now, or wait for the parents. */
static int submit_one(dag *d, job *j, stage *s, int missing) {
    if (!missing) return launch_pending(d, j, s);
    take_stage(d, s, j);
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
        activate(d, s);
    }
    return 0;
}

/* Run the stage's pending tasks for j now if its parents are complete, else
 * submit the missing parents and wait for them.  A parent another job is
 * computing is waited for, not run again.  Parents are submitted before
 * their children, each once, by a walk over an explicit stack (a chain of
 * 10,000 shuffles must not recurse 10,000 deep, and stages sharing a
 * parent must not submit it once per path). */
static int submit_stage(dag *d, job *j, stage *s) {
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
        if (stage_complete(d, p)) {
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
static void resubmit_waiting(dag *d) {
    for (int i = 0; i < d->nwait; i++) {
        stage *s = d->waitq[i];
        job *j = s->job;
        int ready = 1;
        for (int k = 0; k < s->nparents; k++)
            if (!stage_complete(d, s->parents[k])) ready = 0;
        if (!ready || !j) continue;
        s->waiting = 0;
        d->waitq[i] = d->waitq[--d->nwait];
        i = -1; /* the queue changed under launches: look again from the start */
        int rc = launch_pending(d, j, s);
        if (rc) job_fail_here(d, j, rc);
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

static void kill_stage(dag *d, stage *s) {
    if (!s->running) return;
    for (int i = 0; i < s->natt; i++)
        if (s->att[i].state == A_RUNNING) d->be->kill(d->be, s->att[i].task_id); /* EM_ESTATE: it just ended */
}

/* Move the running attempts of stage s from job `from` to job `to`. */
static void move_attempts(dag *d, stage *s, job *from, job *to) {
    for (int i = 0; i < s->natt; i++) {
        if (s->att[i].state != A_RUNNING) continue;
        inflight *f = idmap_get(&d->inflight, s->att[i].task_id);
        if (f && f->j == from) {
            f->j = to;
            from->nrun--;
            to->nrun++;
        }
    }
}

static void try_end(dag *d, job *j);

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
            move_attempts(d, s, j, other);
            runq_move(d, s, j, other);
            if (!s->waiting) { /* its pending tasks (a failed launch's too) go to the queue */
                int rc = submit_stage(d, other, s);
                if (rc) job_fail_here(d, other, rc);
            }
        } else {
            unwait(d, s);
            s->job = NULL;
            if (!stage_complete(d, s)) kill_stage(d, s);
            for (int t = 0; t < s->ntasks; t++)
                if (s->state[t] == T_RUNNING && !s->nrun[t]) s->state[t] = T_PENDING;
        }
    }
}

/* Fail job j (once) with code and message: its attempts are killed, and it
 * ends when none runs. */
static void job_fail_msg(dag *d, job *j, int code, const char *msg) {
    if (j->finishing) return;
    j->finishing = 1;
    j->rc = code;
    snprintf(j->msg, sizeof j->msg, "%s", msg);
    if (j->result) {
        unwait(d, j->result);
        kill_stage(d, j->result);
    }
    release_stages(d, j);
    runq_drop_job(d, j); /* what it queued and nobody took over */
    try_end(d, j);
}

static void job_failf(dag *d, job *j, int code, const char *fmt, ...) {
    char msg[JOB_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    job_fail_msg(d, j, code, msg);
}

/* Fail j with this thread's em_errmsg. */
static void job_fail_here(dag *d, job *j, int code) {
    char msg[JOB_MSG_MAX];
    em__geterr(msg, sizeof msg);
    job_fail_msg(d, j, code, msg);
}

/* A task failed for good: every job that needs its stage fails. */
/* Fail j with msg, and every other job that uses map stage s. */
static void fail_users(dag *d, stage *s, job *j, const char *msg) {
    job_fail_msg(d, j, EM_EJOB, msg);
    if (!s->shuffled) return;
    for (job *o = d->jobs, *next; o; o = next) {
        next = o->next; /* o may end and go */
        if (!o->finishing && job_uses(d, o, s)) job_fail_msg(d, o, EM_EJOB, msg);
    }
}

static void fail_dependents(dag *d, stage *s, int idx, int times, const task_result *res, job *j) {
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
    if (j->result && j->save) cc_stage_close(&d->commits, j->result->id);
    release_stages(d, j);
    runq_drop_job(d, j);
    if (j->result) retire_stage(d, j->result); /* freed at its last loser's end */
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
    if (!j->nrun) sched_release(d, j);
}

/* End j if it is finishing and may end now: a failed job once none of its
 * attempts runs (its caller then removes what they wrote); else at once.
 * A save's losers may still run: their output cannot reach the directory
 * (the coordinator closes the stage at the job's end, see actions.c). */
static void try_end(dag *d, job *j) {
    if (!j->finishing || j->over) return;
    if (j->rc && j->nrun) return;
    end_job(d, j);
}

static void account(dag *d, stage *s, const sched_event *ev) {
    const task_result *res = &ev->res;
    STAT_ADD(d, tasks_run, 1);
    if (s->shuffled) STAT_ADD(d, map_tasks_run, 1);
    if (res->commit_denied) STAT_ADD(d, commits_denied, 1); /* even if a kill came too */
    else if (ev->killed) STAT_ADD(d, tasks_killed, 1);
    else if (res->status) STAT_ADD(d, tasks_failed, 1);
    STAT_ADD(d, shuffle_bytes_written, (int64_t)res->shuffle_bytes);
    STAT_ADD(d, shuffle_records_written, (int64_t)res->shuffle_records);
    STAT_ADD(d, spills, res->spills);
    STAT_ADD(d, input_bytes, (int64_t)res->input_bytes);
    STAT_ADD(d, cache_hits, res->cache_hits);
    STAT_ADD(d, shuffle_segments_fetched, res->segs_fetched);
    STAT_ADD(d, shuffle_segments_host_local, res->segs_host_local);
}

/* Count a successful task's accumulator additions -- once per task: a map
 * output recomputed after a fetch failure was counted when it first
 * succeeded. */
static void merge_once(dag *d, stage *s, int idx, const task_result *res) {
    if (s->shuffled) {
        shuffle_out *so = mo_find(&d->mo, s->shuffle_id);
        if (so && so->merged[idx]) return;
        if (so) so->merged[idx] = 1;
    }
    accum_merge(res->accs, res->naccs);
}

/* An attempt finished task idx first: the others are killed (their ends
 * come as late duplicates, their results and outputs discarded). */
static void won(dag *d, stage *s, int idx, int speculative) {
    if (speculative) STAT_ADD(d, speculative_wins, 1);
    if (!s->nrun[idx]) return;
    for (int i = 0; i < s->natt; i++)
        if (s->att[i].idx == idx && s->att[i].state == A_RUNNING)
            d->be->kill(d->be, s->att[i].task_id); /* EM_ESTATE: it has just ended */
}

/* A map attempt's output that is not the registered one (a failed or
 * killed attempt, a late duplicate) is removed: only registered outputs
 * stay on disk. */
static void drop_unregistered(dag *d, stage *s, int idx, const sched_event *ev) {
    if (!s->shuffled || !d->be->drop_map_output) return;
    shuffle_out *so = s->dropped ? NULL : mo_find(&d->mo, s->shuffle_id);
    if (so && so->m[idx].have && so->m[idx].attempt == ev->res.task_id) return;
    d->be->drop_map_output(d->be, ev->exec, s->shuffle_id, idx, ev->res.task_id);
}

/* Forget map output m of a shuffle (lost or corrupt) and remove its files. */
static void lose_output(dag *d, shuffle_out *so, int m) {
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
            lose_output(d, so, m);
            if (p->state[m] != T_DONE) continue;
            p->state[m] = T_PENDING;
            p->done--;
            if (p->job && !p->job->finishing && !p->waiting && !p->nrun[m] && !p->queued[m] && launch(d, p->job, p, m))
                job_fail_here(d, p->job, EM_ENOMEM);
        }
    }
}

/* Register map output idx of s from a successful attempt; takes the
 * per-reduce segment sizes from the result.  0 or EM_ENOMEM. */
static int register_output(dag *d, stage *s, int idx, sched_event *ev) {
    task_result *res = &ev->res;
    shuffle_out *so = mo_find(&d->mo, s->shuffle_id);
    uint64_t *segs = NULL;
    if (res->len == sizeof(uint64_t) * (size_t)s->out_parts) {
        segs = (uint64_t *)res->data;
        res->data = NULL;
    }
    if (!so || mo_set(so, idx, ev->exec, res->task_id, res->loc, segs))
        return em__seterr(EM_ENOMEM, "scheduler: out of memory");
    s->reg_task[idx] = d->next_task;
    return 0;
}

/* A fetch failure reported by an attempt of s's current stage attempt
 * (res names the output): that stage attempt failed, and the next begins
 * with the next task launched.  After ember.stage.maxConsecutiveAttempts
 * failed attempts in a row, the job fails (and those that use s), naming
 * the outputs that kept failing and why: returns 1 then, else 0. */
static int stage_attempt_failed(dag *d, job *j, stage *s, const task_result *res) {
    size_t n = strlen(s->fail_why);
    if (n < sizeof s->fail_why - 1)
        snprintf(s->fail_why + n, sizeof s->fail_why - n, "%sattempt %u: shuffle %u map %d (%.120s)", n ? "; " : "",
                 s->stage_attempt, res->fetch_shuffle, res->fetch_map,
                 res->errmsg[0] ? res->errmsg : em_strerror(res->status));
    s->stage_attempt++;
    s->first_task = d->next_task;
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

/* An attempt of s ended while j runs s.  Returns 1 when the event went to
 * the job's mailbox (a result for on_result), else 0. */
static int react(dag *d, job *j, stage *s, int idx, int speculative, sched_event *ev) {
    task_result *res = &ev->res;
    if (s->state[idx] == T_DONE) return 0; /* a late duplicate */

    if (res->status == 0 && !ev->killed) {
        merge_once(d, s, idx, res);
        note_cache(s->rdd, s->shuffled ? idx : job_part(j, idx), ev->exec);
        s->state[idx] = T_DONE;
        s->done++;
        won(d, s, idx, speculative);
        if (s->shuffled) {
            if (register_output(d, s, idx, ev)) {
                job_fail_here(d, j, EM_ENOMEM);
                return 0;
            }
            if (stage_complete(d, s)) {
                exclude_after_stage(d, j, s);
                s->consec_failed = 0; /* a stage attempt succeeded */
                s->fail_why[0] = 0;
                s->job = NULL;
                resubmit_waiting(d);
            }
            return 0;
        }
        /* Results that together outgrow ember.driver.maxResultSize fail
         * the job before they exhaust the driver (Spark's check). */
        j->result_bytes += res->len;
        if (j->spec.max_result_bytes && j->result_bytes > j->spec.max_result_bytes) {
            s->state[idx] = T_PENDING; /* not handed on */
            s->done--;
            job_failf(d, j, EM_ETOOBIG,
                      "Total size of serialized results of %d tasks (%llu bytes) is bigger than "
                      "ember.driver.maxResultSize (%llu bytes)",
                      s->done + 1, (unsigned long long)j->result_bytes,
                      (unsigned long long)j->spec.max_result_bytes);
            return 0;
        }
        /* A result: to the caller's thread, in completion order, handed
         * on after the burst (wake_dirty: one lock for all).  The caller is
         * woken at the job's end, and on the way every RESULTS_PER_WAKE
         * results: a wake-up per result would cost more than a short
         * task. */
        ev->idx = idx;
        ev->next = NULL;
        if (j->ptail) j->ptail->next = ev;
        else j->phead = ev;
        j->ptail = ev;
        if (++j->nqueued % RESULTS_PER_WAKE == 0) j->wake = 1;
        if (!j->dirty) {
            j->dirty = 1;
            j->next_dirty = d->dirty;
            d->dirty = j;
        }
        if (s->done == s->ntasks) {
            exclude_after_stage(d, j, s);
            j->finishing = 1;
            if (j->save) kill_stage(d, s); /* losers: they end as soon as they look */
            try_end(d, j);
        }
        return 1;
    }
    /* A failed or killed attempt is not replaced while another attempt of
     * the task still runs: that one may yet succeed. */
    int others = s->nrun[idx] > 0 || s->queued[idx] > 0; /* a copy queued will run */
    if (!s->nrun[idx]) s->state[idx] = T_PENDING;
    int rc = 0;
    /* Denied a commit (another attempt committed), killed while the job
     * goes on, or lost with an executor that did not die of it: not a
     * failure, run it again if nothing else runs it. */
    if (res->commit_denied || ev->killed || ev->lost) rc = others ? 0 : launch(d, j, s, idx);
    else if (res->status == EM_EFETCH && res->fetch_map >= 0 && idmap_get(&d->maps, res->fetch_shuffle)) {
        /* The map output is gone or corrupt, and with it those the
         * reader's check found lost (Spark's fileLost: the executor's
         * outputs go together, here only those that are really lost):
         * forget them, rerun those map tasks, then this one.  Every reader
         * of a lost output reports it; only the first report of registered
         * outputs counts against the limit, and a reader launched before an
         * output was registered again just runs again. */
        stage *p = idmap_get(&d->maps, res->fetch_shuffle);
        shuffle_out *so = mo_find(&d->mo, res->fetch_shuffle);
        int counted = 0;
        for (uint32_t k = 0; so && k <= res->nlost; k++) {
            int m = k ? res->lost_maps[k - 1] : res->fetch_map;
            if (m >= so->nmaps || m >= p->ntasks || !so->m[m].have || res->task_id < p->reg_task[m]) continue;
            if (!counted++ && res->task_id >= s->first_task && stage_attempt_failed(d, j, s, res)) return 0;
            lose_output(d, so, m);
            if (p->state[m] == T_DONE) {
                p->state[m] = T_PENDING;
                p->done--;
            }
        }
        if (!others) rc = submit_stage(d, j, s);
    } else {
        if (j->spec.excl_enabled) note_failure(s, idx, ev->exec);
        if (++s->attempts[idx] >= j->spec.max_failures) {
            fail_dependents(d, s, idx, s->attempts[idx], res, j);
            return 0;
        }
        rc = others ? 0 : launch(d, j, s, idx);
    }
    if (rc) job_fail_here(d, j, rc);
    return 0;
}

/* A map attempt that ends with no job running its stage (its job ended
 * first).  An output that succeeded is still good for later jobs, which
 * will not rerun its task: it is registered, and its accumulator additions
 * count now. */
static void keep_late_output(dag *d, stage *s, int idx, sched_event *ev) {
    task_result *res = &ev->res;
    if (res->status != 0 || ev->killed || !s->shuffled || s->dropped || s->state[idx] == T_DONE ||
        res->len != sizeof(uint64_t) * (size_t)s->out_parts)
        return;
    merge_once(d, s, idx, res);
    if (!register_output(d, s, idx, ev)) {
        s->state[idx] = T_DONE;
        s->done++;
        if (stage_complete(d, s)) resubmit_waiting(d);
    }
}

/* An attempt ended.  Returns 1 when the event was handed on (a result). */
static int handle_end(dag *d, sched_event *ev) {
    inflight *f = idmap_del(&d->inflight, ev->res.task_id);
    if (!f) return 0; /* not ours: cannot happen, but nothing to do */
    stage *s = f->s;
    job *j = f->j;
    int idx = f->idx, att = f->att;
    f->next_free = d->free_fl; /* kept for the next launch: no malloc per task */
    d->free_fl = f;
    attempt_rec *a = &s->att[att];
    s->running--;
    s->nrun[idx]--;
    d->running--;
    exec_rec *x = et_find(&d->execs, ev->exec);
    if (x) x->assigned--;
    a->exec = ev->exec;
    a->start_us = ev->start_us;
    a->end_us = ev->end_us;
    a->state = ev->killed ? A_KILLED : ev->res.status ? A_FAILED : A_OK;
    if (s->state[idx] == T_RUNNING && !s->nrun[idx] && (!s->job || s->dropped))
        s->state[idx] = T_PENDING; /* no job to rerun it: pending when one comes */
    account(d, s, ev);
    /* An output that cannot be registered (a failed or killed attempt, a
     * late duplicate, a dropped shuffle) goes first; then the attempt stops
     * counting as running, before react, which may end the job and wake
     * its caller: an action that returned never sees its own last attempt
     * running, and a reader that sees none running sees no loser's files. */
    int doomed = ev->killed || ev->res.status || s->dropped || s->state[idx] == T_DONE;
    if (doomed) drop_unregistered(d, s, idx, ev);
    STAT_ADD(d, tasks_running, -1);

    int kept = 0;
    if (!s->shuffled && !j->over && j->save && ev->res.status && !ev->res.commit_denied && j->result == s)
        /* Its authorization to commit, if it had one, is free again. */
        cc_attempt_failed(&d->commits, s->id, job_part(j, idx), ev->res.task_id);
    if (s->job && !s->dropped && !s->job->finishing) kept = react(d, s->job, s, idx, a->speculative, ev);
    else if (s->shuffled) keep_late_output(d, s, idx, ev);
    if (!doomed) drop_unregistered(d, s, idx, ev); /* registered by now, unless out of memory */

    j->nrun--;
    if (j->ended) {
        if (!j->nrun) sched_release(d, j);
    } else {
        try_end(d, j);
    }
    if (s->dropped && !s->running) retire_stage(d, s);
    return kept;
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
        job_failf(d, j, EM_ENOMEM, "scheduler: out of memory");
        return;
    }
    j->result = rs;
    rs->job = j;
    if (js->sink->kind == SK_SAVE && cc_stage_open(&d->commits, rs->id, js->rdd->nparts)) {
        job_failf(d, j, EM_ENOMEM, "scheduler: out of memory");
        return;
    }
    if (ntasks == 0) {
        j->finishing = 1;
        try_end(d, j);
        return;
    }
    int rc = submit_stage(d, j, rs);
    if (rc) job_fail_here(d, j, rc);
}

/* A job canceled before it started. */
static void fail_unstarted(dag *d, job *j, int code, const char *msg) {
    STAT_ADD(d, jobs, 1);
    j->next = NULL;
    job_fail_msg(d, j, code, msg);
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
    if (!a->j->finishing) job_fail_msg(d, a->j, a->rc, a->msg);
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
        job_fail_msg(d, j, EM_ECANCELED, msg);
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
        retire_stage(d, s);
    }
}

static void stop_fn(dag *d, void *arg) {
    cancel_req r = {NULL, "the context is closing (em_close)", 0};
    (void)arg;
    d->stopping = 1;
    d->holds = 0;
    cancel_fn(d, &r);
}

/* --------------------------------------------------------- timed work */

/* The progress line is redrawn at least this often while a job waits. */
#define PROGRESS_TICK_MS 200

static void show_progress(dag *d) {
    job *j = d->prog_job;
    if (!j || !j->result) return;
    stage *cur = j->result->waiting ? NULL : j->result;
    for (int i = 0; i < d->nactive && !cur; i++)
        if (d->active[i]->running && d->active[i]->job == j) cur = d->active[i];
    if (cur) { /* running as Spark shows it: tasks on cores, not queued */
        int cores = d->be->cores(d->be), running = cur->running < cores ? cur->running : cores;
        progress_update(&d->prog, (int)cur->id, cur->done, running, cur->ntasks, 0);
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Speculation, as Spark's: once `quantile` of a stage's tasks have
 * succeeded since it was submitted, a task whose one running attempt has
 * run longer than multiplier x the median duration of those successes (and
 * longer than minTaskRuntime) gets one more attempt.  The first to finish
 * wins (won() kills the rest).  Settings are those of the job the stage
 * runs for. */
static void speculate(dag *d) {
    uint64_t now = ev_now_us();
    for (int k = 0; k < d->nactive; k++) {
        stage *s = d->active[k];
        job *j = s->job;
        if (!j || j->finishing || !j->spec.speculation || !s->running || s->waiting || !d->be->running_since) continue;
        const job_spec *js = &j->spec;
        int need = (int)floor(js->spec_quantile * s->ntasks), nok = 0;
        if (need < 1) need = 1;
        for (int i = 0; i < s->natt; i++) nok += s->att[i].state == A_OK;
        if (nok < need) continue;
        uint64_t *dur = malloc(sizeof *dur * (size_t)nok);
        if (!dur) continue; /* tried again at the next interval */
        int n = 0;
        for (int i = 0; i < s->natt; i++)
            if (s->att[i].state == A_OK)
                dur[n++] = s->att[i].end_us > s->att[i].start_us ? s->att[i].end_us - s->att[i].start_us : 0;
        qsort(dur, (size_t)n, sizeof *dur, cmp_u64);
        double threshold = js->spec_multiplier * (double)dur[n / 2];
        free(dur);
        if (threshold < (double)js->spec_min_ms * 1000.0) threshold = (double)js->spec_min_ms * 1000.0;
        int natt = s->natt; /* copies are appended: not looked at this round */
        for (int i = 0; i < natt && !j->finishing; i++) {
            attempt_rec a = s->att[i];
            uint64_t start;
            if (a.state != A_RUNNING || s->state[a.idx] != T_RUNNING || s->nrun[a.idx] != 1 || s->queued[a.idx])
                continue;
            if (!d->be->running_since(d->be, a.task_id, &start) || (double)(now - start) <= threshold) continue;
            int rc = enqueue(d, j, s, a.idx, 1); /* counted as speculative when launched */
            if (rc) job_fail_here(d, j, rc);
        }
    }
}

/* Milliseconds until timed work is due (-1: none). */
static int next_timeout(dag *d) {
    int t = d->prog_job ? PROGRESS_TICK_MS : -1, spec = 0;
    if (d->locality_due_us) {
        uint64_t now = ev_now_us();
        int until = d->locality_due_us > now ? (int)((d->locality_due_us - now + 999) / 1000) : 0;
        if (t < 0 || until < t) t = until;
    }
    if (d->starved_us) {
        uint64_t due = d->ask_us < d->warn_us ? d->ask_us : d->warn_us, now = ev_now_us();
        int until = due > now ? (int)((due - now + 999) / 1000) : 0;
        if (t < 0 || until < t) t = until;
    }
    int interval = -1;
    for (job *j = d->jobs; j; j = j->next)
        if (j->spec.speculation && !j->finishing) {
            spec = 1;
            if (interval < 0 || j->spec.spec_interval_ms < interval) interval = j->spec.spec_interval_ms;
        }
    if (!spec) {
        d->next_spec_us = 0;
        return t;
    }
    uint64_t now = ev_now_us();
    if (!d->next_spec_us) d->next_spec_us = now + (uint64_t)interval * 1000u;
    int until = d->next_spec_us > now ? (int)((d->next_spec_us - now + 999) / 1000) : 0;
    return t < 0 || until < t ? until : t;
}

static void timed_work(dag *d) {
    if (d->next_spec_us && ev_now_us() >= d->next_spec_us) {
        int interval = -1;
        speculate(d);
        for (job *j = d->jobs; j; j = j->next)
            if (j->spec.speculation && (interval < 0 || j->spec.spec_interval_ms < interval))
                interval = j->spec.spec_interval_ms;
        d->next_spec_us = interval < 0 ? 0 : ev_now_us() + (uint64_t)interval * 1000u;
    }
    if (d->prog_job) show_progress(d);
}

/* Jobs that cannot progress (nothing runs, nothing will): a scheduler bug
 * made visible instead of a hang. */
static int any_alive(const exec_table *t) {
    for (int i = 0; i < t->n; i++)
        if (t->v[i].alive) return 1;
    return 0;
}

/* Every job not yet finishing fails with code and msg. */
static void fail_all(dag *d, int code, const char *msg) {
    for (job *j = d->jobs, *next; j; j = next) {
        next = j->next;
        if (!j->finishing) job_fail_msg(d, j, code, msg);
    }
}

static void check_stuck(dag *d) {
    /* Tasks wait and no executor is alive: past the wait, the backend
     * says why (cluster mode; local[N]'s executors never go). */
    if (d->nrunq && !d->running && !any_alive(&d->execs) && d->be->why_idle) {
        uint64_t now = ev_now_us(), wait_us = (uint64_t)d->register_wait_ms * 1000u;
        uint64_t warn_every_us = (uint64_t)(d->starvation_ms > 0 ? d->starvation_ms : 15000) * 1000u;
        if (!d->starved_us) {
            d->starved_us = now;
            d->ask_us = now + wait_us;
            d->warn_us = now + warn_every_us;
        }
        char why[1024];
        if (now >= d->ask_us) {
            if (d->be->why_idle(d->be, why, sizeof why)) {
                d->starved_us = 0;
                fail_all(d, EM_EEXEC, why);
                return;
            }
            d->ask_us = now + (wait_us > 100000u ? wait_us : 100000u); /* and again later: it may never come */
        }
        if (now >= d->warn_us) {
            d->be->why_idle(d->be, why, sizeof why);
            log_msg(LOG_WARN, "scheduler",
                    "Initial job has not accepted any resources; check your cluster UI to ensure that workers are "
                    "registered and have sufficient resources (%s)",
                    why);
            d->warn_us = now + warn_every_us;
        }
        return;
    }
    d->starved_us = 0;
    /* (No executor yet, or a task waits for a time -- the executor holding
     * its input, or one it is not excluded from: waiting is right.) */
    if (d->running || d->locality_due_us || (d->nrunq && !et_any_room(&d->execs))) return;
    for (job *j = d->jobs, *next; j; j = next) {
        next = j->next;
        if (!j->finishing)
            job_failf(d, j, EM_ESTATE, "scheduler: no task is running and the job is not done");
    }
}

static void *sched_main(void *arg) {
    dag *d = arg;
    for (;;) {
        if (d->stopping && !d->jobs && !d->running) break;
        sched_event *ev = evq_wait_all(&d->events, next_timeout(d));
        for (sched_event *next; ev; ev = next) {
            next = ev->next;
            int kept = 0;
            switch (ev->kind) {
            case EV_TASK_ENDED: kept = handle_end(d, ev); break;
            case EV_CALL: ev->call(d, ev->arg); break;
            case EV_EXEC_ADDED: et_add(&d->execs, ev->exec, ev->cores, ev->backlog, ev->host); break; /* ENOMEM: an executor never used */
            case EV_EXEC_LOST: {
                /* Its attempts end as the backend posts them; its map
                 * outputs went with it, unless its worker's shuffle
                 * service serves them (until the backend says the worker
                 * was lost too). */
                exec_rec *x = et_find(&d->execs, ev->exec);
                if (x) x->alive = 0;
                if (!ev->keep_outputs) lose_exec_outputs(d, ev->exec);
                break;
            }
            case EV_APP_FAILED:
                if (ev->final) {
                    d->app_failed = ev->res.status;
                    snprintf(d->app_failed_msg, sizeof d->app_failed_msg, "%s", ev->res.errmsg);
                }
                fail_all(d, ev->res.status, ev->res.errmsg);
                break;
            }
            if (!kept) ev_free(ev);
        }
        timed_work(d);
        dispatch(d);
        d->be->flush(d->be); /* the burst's launches, in one hand-over */
        wake_dirty(d);
        check_stuck(d);
        prune_active(d);
        release_dead(d);
        if (!d->running && !d->nrunq && d->hold_waiters) {
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
