/*
 * dag.c -- the DAG scheduler (see dag.h).
 *
 * Map stages are kept per shuffle for the life of the context, so a later
 * job finds their outputs registered and skips them.  A job's result stage
 * is built per job.  Per stage and task the state is: pending, running or
 * done; the job loop waits for one result at a time and reacts to it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commit.h"
#include "dag.h"
#include "idmap.h"
#include "err.h"
#include "fnref.h"
#include "progress.h"
#include "taskbuild.h"
#include "vars.h"

enum { T_PENDING = 0, T_RUNNING = 1, T_DONE = 2 };

/* The counters are read by em_get_stats from any thread while a job runs:
 * updated atomically. */
#define STAT_ADD(d, field, v) __atomic_fetch_add(&(d)->stats->field, (v), __ATOMIC_RELAXED)
enum { A_RUNNING = 0, A_OK, A_FAILED, A_KILLED };

/* One attempt of one task: launched on an executor, ended some way. */
typedef struct attempt_rec {
    uint64_t task_id;
    int idx;            /* the task (index in its stage) */
    uint32_t number;    /* 0 for the task's first attempt in this job */
    int exec;           /* executor it ran on (-1 until it ended) */
    uint8_t state;      /* A_* */
    uint8_t speculative;
    uint64_t start_us, end_us;
} attempt_rec;

typedef struct stage {
    uint32_t id;
    em_rdd *rdd;       /* the RDD whose partitions the tasks compute */
    em_rdd *shuffled;  /* map stages: the shuffled RDD reading the output */
    int nparents;
    struct stage **parents;
    int ntasks;
    /* Map stages: per map output, the first task id launched after it was
     * last registered; an older reader's fetch failure is stale. */
    uint64_t *reg_task;
    /* Per job: */
    uint8_t *state;
    int *attempts;     /* failed attempts, against max_failures */
    uint32_t *launched; /* attempts launched: the next one's number */
    uint32_t *nrun;     /* attempts running now */
    attempt_rec *att;  /* every attempt launched, in launch order */
    int natt, capatt;
    int done, running;
    int waiting;       /* waits for parents */
    int counted;       /* counted in stats for this job */
    int fetch_failures;
    uint32_t mark;     /* == dag.gen: visited in this job */
} stage;

typedef struct inflight {
    stage *s;
    int idx;
    int att; /* index in s->att */
} inflight;

struct dag {
    backend *be;
    evq events;      /* what the backend and other threads report */
    commit_coord commits; /* output commits of the running job's tasks */
    uint64_t cancel_upto; /* jobs numbered up to this one are canceled */
    mapout mo;
    em_stats *stats;
    uint64_t ns;
    idmap maps;      /* shuffle id -> its map stage */
    uint32_t next_stage;
    uint64_t next_task;
    progress prog;
    /* Current job */
    const job_spec *job;
    stage *result;
    inflight *fl;
    uint64_t fl_base;
    size_t fl_cap;
    stage **waitq;
    int nwait, capwait;
    int nlive_maps;  /* map stages held (one per live shuffle) */
    uint32_t gen;    /* the current job's number, for stage marks */
    stage **active;  /* the current job's stages (its result stage and every
                        map stage it reaches): what per-event work scans */
    int nactive, capactive;
    int failed;
};

dag *dag_new(em_stats *stats, uint64_t cache_ns) {
    dag *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    evq_init(&d->events);
    cc_init(&d->commits);
    d->stats = stats;
    d->ns = cache_ns;
    d->next_task = 1;
    return d;
}

evq *dag_events(dag *d) { return &d->events; }

static void stage_free(stage *s);
static void stage_free_v(void *s) { stage_free(s); }

int dag_ask_commit(void *d, uint32_t stage_id, int32_t partition, uint64_t attempt) {
    return cc_ask(&((dag *)d)->commits, stage_id, partition, attempt);
}

void dag_set_backend(dag *d, backend *be) { d->be = be; }

void dag_cancel_upto(dag *d, uint64_t seq) {
    uint64_t cur = __atomic_load_n(&d->cancel_upto, __ATOMIC_ACQUIRE);
    while (cur < seq && !__atomic_compare_exchange_n(&d->cancel_upto, &cur, seq, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {}
    evq_post_kind(&d->events, EV_WAKE); /* if it fails, the job notices at its next event */
}

static void stage_free(stage *s) {
    if (!s) return;
    free(s->parents);
    free(s->state);
    free(s->attempts);
    free(s->launched);
    free(s->nrun);
    free(s->att);
    free(s->reg_task);
    free(s);
}

void dag_free(dag *d) {
    if (!d) return;
    idmap_free(&d->maps, stage_free_v);
    mo_free(&d->mo);
    free(d->fl);
    free(d->waitq);
    free(d->active);
    evq_destroy(&d->events);
    cc_destroy(&d->commits);
    free(d);
}

mapout *dag_mapout(dag *d) { return &d->mo; }

void dag_drop_shuffle(dag *d, uint32_t id) {
    if (mo_find(&d->mo, id) && d->be->drop_shuffle) d->be->drop_shuffle(d->be, id);
    mo_remove(&d->mo, id);
    stage *s = idmap_del(&d->maps, id);
    if (s) {
        /* No stage names it as a parent any more: the shuffled RDDs reading
         * those stages held this one's RDD, and are gone. */
        stage_free(s);
        __atomic_fetch_sub(&d->nlive_maps, 1, __ATOMIC_RELAXED); /* read by em_get_stats */
    }
}

void dag_live_counts(dag *d, int64_t *shuffles, int64_t *stages) {
    *shuffles = __atomic_load_n(&d->mo.n, __ATOMIC_RELAXED);
    *stages = __atomic_load_n(&d->nlive_maps, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------- stage building */

typedef struct visit {
    uint8_t *seen;
    int cap;
} visit;

static int visit_once(visit *v, int id) {
    if (id >= v->cap) {
        int cap = id * 2 + 64;
        uint8_t *s = realloc(v->seen, (size_t)cap);
        if (!s) return -1;
        memset(s + v->cap, 0, (size_t)(cap - v->cap));
        v->seen = s;
        v->cap = cap;
    }
    if (v->seen[id]) return 0;
    v->seen[id] = 1;
    return 1;
}

static stage *map_stage(dag *d, em_rdd *shuffled);

/* Add the map stages of the shuffles reachable from r through narrow
 * dependencies to s->parents. */
static int find_parents(dag *d, stage *s, em_rdd *r, visit *v) {
    int k = visit_once(v, r->id);
    if (k <= 0) return k;
    if (r->kind == RDD_SHUFFLED) {
        stage *p = map_stage(d, r);
        if (!p) return -1;
        for (int i = 0; i < s->nparents; i++)
            if (s->parents[i] == p) return 0;
        stage **ps = realloc(s->parents, sizeof *ps * (size_t)(s->nparents + 1));
        if (!ps) return -1;
        s->parents = ps;
        s->parents[s->nparents++] = p;
        return 0;
    }
    if (r->parent && find_parents(d, s, r->parent, v) < 0) return -1;
    if (r->parent2 && find_parents(d, s, r->parent2, v) < 0) return -1;
    return 0;
}

static stage *stage_new(dag *d, em_rdd *rdd, em_rdd *shuffled, int ntasks) {
    stage *s = calloc(1, sizeof *s);
    visit v = {NULL, 0};
    if (!s) return NULL;
    s->rdd = rdd;
    s->shuffled = shuffled;
    s->ntasks = ntasks;
    s->state = calloc((size_t)ntasks + 1, 1);
    s->attempts = calloc((size_t)ntasks + 1, sizeof(int));
    s->launched = calloc((size_t)ntasks + 1, sizeof(uint32_t));
    s->nrun = calloc((size_t)ntasks + 1, sizeof(uint32_t));
    if (shuffled) s->reg_task = calloc((size_t)ntasks + 1, sizeof(uint64_t));
    if (!s->state || !s->attempts || !s->launched || !s->nrun || (shuffled && !s->reg_task) || find_parents(d, s, rdd, &v) < 0) {
        free(v.seen);
        stage_free(s);
        return NULL;
    }
    free(v.seen);
    s->id = d->next_stage++; /* after its parents, as Spark numbers them */
    return s;
}

static stage *map_stage(dag *d, em_rdd *shuffled) {
    uint32_t id = shuffled->shuffle_id;
    stage *s = idmap_get(&d->maps, id);
    if (s) return s;
    s = stage_new(d, shuffled->parent, shuffled, shuffled->parent->nparts);
    if (!s) return NULL;
    if (!mo_get(&d->mo, id, s->ntasks, shuffled->nparts) || idmap_put(&d->maps, id, s)) {
        stage_free(s);
        return NULL;
    }
    __atomic_fetch_add(&d->nlive_maps, 1, __ATOMIC_RELAXED);
    return s;
}

static int count_rec(em_rdd *r, visit *v) {
    int n = 0;
    if (visit_once(v, r->id) <= 0) return 0;
    if (r->kind == RDD_SHUFFLED) n++;
    if (r->parent) n += count_rec(r->parent, v);
    if (r->parent2) n += count_rec(r->parent2, v);
    return n;
}

int dag_count_stages(em_rdd *rdd) {
    visit v = {NULL, 0};
    int n = 1 + count_rec(rdd, &v);
    free(v.seen);
    return n;
}

/* ------------------------------------------------------------- running */

static int stage_complete(dag *d, stage *s) {
    if (!s->shuffled) return s->done == s->ntasks;
    shuffle_out *so = mo_find(&d->mo, s->shuffled->shuffle_id);
    return so && so->navail == so->nmaps;
}

static int launch_attempt(dag *d, stage *s, int idx, int speculative) {
    const job_spec *j = d->job;
    task_desc t;
    plan_sink ms;
    ebuf out = EBUF_INIT;
    int part = s->shuffled ? idx : (j->parts ? j->parts[idx] : idx);

    memset(&t, 0, sizeof t);
    t.task_id = d->next_task++;
    t.stage_id = s->id;
    t.attempt = s->launched[idx];
    t.faults = j->faults;
    t.partition = part;
    memcpy(t.binhash, fnref_binary_hash(), 32);
    t.mem_budget = j->mem_budget;
    t.block_bytes = j->block_bytes;
    t.max_record = j->max_record;
    t.level = j->level;
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
        t.sink = *j->sink;
    }
    int rc = taskbuild_encode(&t, s->rdd, part, &d->mo, d->ns, &out);
    if (rc) {
        ebuf_free(&out);
        return rc;
    }
    /* Record the task before submitting: its result may come at once. */
    uint64_t slot = t.task_id - d->fl_base;
    if (slot >= d->fl_cap) {
        size_t cap = d->fl_cap ? d->fl_cap * 2 : 256;
        while (cap <= slot) cap *= 2;
        inflight *fl = realloc(d->fl, sizeof *fl * cap);
        if (!fl) {
            ebuf_free(&out);
            return em__seterr(EM_ENOMEM, "scheduler: out of memory");
        }
        memset(fl + d->fl_cap, 0, sizeof *fl * (cap - d->fl_cap));
        d->fl = fl;
        d->fl_cap = cap;
    }
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
    attempt_rec *a = &s->att[s->natt];
    memset(a, 0, sizeof *a);
    a->task_id = t.task_id;
    a->idx = idx;
    a->number = t.attempt;
    a->exec = -1;
    a->state = A_RUNNING;
    a->speculative = (uint8_t)speculative;
    d->fl[slot].s = s;
    d->fl[slot].idx = idx;
    d->fl[slot].att = s->natt++;
    s->launched[idx]++;
    s->nrun[idx]++;
    s->state[idx] = T_RUNNING;
    s->running++;
    size_t len;
    uint8_t *bytes = ebuf_steal(&out, &len);
    rc = d->be->launch(d->be, t.task_id, bytes, len, BE_ANY_EXEC);
    if (rc) {
        s->state[idx] = T_PENDING;
        s->running--;
        s->natt--;
        s->launched[idx]--;
        s->nrun[idx]--;
        d->fl[slot].s = NULL;
    }
    return rc;
}

static int launch(dag *d, stage *s, int idx) { return launch_attempt(d, s, idx, 0); }

static int submit_stage(dag *d, stage *s);

static int launch_pending(dag *d, stage *s) {
    int any = 0;
    for (int i = 0; i < s->ntasks; i++)
        if (s->state[i] == T_PENDING) {
            int rc = launch(d, s, i);
            if (rc) return rc;
            any = 1;
        }
    if (any && !s->counted) {
        s->counted = 1;
        STAT_ADD(d, stages_run, 1);
    }
    return 0;
}

/* Run the stage's pending tasks now if its parents are complete, else
 * submit the missing parents and wait for them. */
static int submit_stage(dag *d, stage *s) {
    int missing = 0;
    for (int i = 0; i < s->nparents; i++) {
        stage *p = s->parents[i];
        if (!stage_complete(d, p)) {
            missing = 1;
            int rc = submit_stage(d, p);
            if (rc) return rc;
        } else if (!p->counted) {
            p->counted = 1; /* outputs reused: the stage is skipped */
            STAT_ADD(d, stages_skipped, 1);
        }
    }
    if (!missing) return launch_pending(d, s);
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
    }
    return 0;
}

static int resubmit_waiting(dag *d) {
    for (int i = 0; i < d->nwait; i++) {
        stage *s = d->waitq[i];
        int ready = 1;
        for (int k = 0; k < s->nparents; k++)
            if (!stage_complete(d, s->parents[k])) ready = 0;
        if (!ready) continue;
        s->waiting = 0;
        d->waitq[i--] = d->waitq[--d->nwait];
        int rc = launch_pending(d, s);
        if (rc) return rc;
    }
    return 0;
}

/* Prepare a map stage for this job: outputs the tracker lacks are pending. */
static int reset_stage(dag *d, stage *s) {
    if (s->mark == d->gen) return 0; /* a mark, not a bitmap by stage id: no
                                        cost that grows with the context's age */
    s->mark = d->gen;
    if (d->nactive == d->capactive) {
        int cap = d->capactive ? d->capactive * 2 : 16;
        stage **a = realloc(d->active, sizeof *a * (size_t)cap);
        if (!a) return -1;
        d->active = a;
        d->capactive = cap;
    }
    d->active[d->nactive++] = s;
    shuffle_out *so = s->shuffled ? mo_find(&d->mo, s->shuffled->shuffle_id) : NULL;
    s->done = s->running = 0;
    s->natt = 0;
    s->waiting = s->counted = s->fetch_failures = 0;
    for (int i = 0; i < s->ntasks; i++) {
        int have = so && so->m[i].have;
        s->state[i] = have ? T_DONE : T_PENDING;
        s->attempts[i] = 0;
        s->launched[i] = 0;
        s->nrun[i] = 0;
        s->done += have;
    }
    for (int i = 0; i < s->nparents; i++)
        if (reset_stage(d, s->parents[i]) < 0) return -1;
    return 0;
}

static int fail_job(dag *d, stage *s, int idx, int times, const task_result *res) {
    int part = s->shuffled ? idx : (d->job->parts ? d->job->parts[idx] : idx);
    d->failed = em__seterr(EM_EJOB, "Task %d in stage %u failed %d times; most recent failure: %s", part, s->id,
                           times, res->errmsg[0] ? res->errmsg : em_strerror(res->status));
    return d->failed;
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
}

/* Count a successful task's accumulator additions -- once per task: a map
 * output recomputed after a fetch failure was counted when it first
 * succeeded. */
static void merge_once(dag *d, stage *s, int idx, const task_result *res) {
    if (s->shuffled) {
        shuffle_out *so = mo_find(&d->mo, s->shuffled->shuffle_id);
        if (so && so->merged[idx]) return;
        if (so) so->merged[idx] = 1;
    }
    vars_merge(res->accs, res->naccs);
}

/* The attempt an ended event names, taken off the in-flight table with its
 * record completed; NULL for an attempt of no running job (stale). */
static stage *attempt_ended(dag *d, const sched_event *ev, int *idx, int *att) {
    const task_result *res = &ev->res;
    uint64_t slot = res->task_id - d->fl_base;
    if (res->task_id < d->fl_base || slot >= d->fl_cap || !d->fl[slot].s) return NULL;
    stage *s = d->fl[slot].s;
    attempt_rec *a = &s->att[d->fl[slot].att];
    *idx = d->fl[slot].idx;
    *att = d->fl[slot].att;
    d->fl[slot].s = NULL;
    s->running--;
    s->nrun[*idx]--;
    a->exec = ev->exec;
    a->start_us = ev->start_us;
    a->end_us = ev->end_us;
    a->state = ev->killed ? A_KILLED : res->status ? A_FAILED : A_OK;
    account(d, s, ev);
    return s;
}

/* Attempts of task idx still running. */
static int running_attempts(const stage *s, int idx) { return (int)s->nrun[idx]; }

/* An attempt (speculative or not) finished task idx first: the others are
 * killed (their ends come as late duplicates, their results and outputs
 * discarded). */
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
    shuffle_out *so = mo_find(&d->mo, s->shuffled->shuffle_id);
    if (so && so->m[idx].have && so->m[idx].attempt == ev->res.task_id) return;
    d->be->drop_map_output(d->be, ev->exec, s->shuffled->shuffle_id, idx, ev->res.task_id);
}

/* Forget map output m of a shuffle (lost or corrupt) and remove its files. */
static void lose_output(dag *d, shuffle_out *so, int m) {
    if (so->m[m].have && d->be->drop_map_output)
        d->be->drop_map_output(d->be, so->m[m].exec, so->id, m, so->m[m].attempt);
    mo_unset(so, m);
}

static int react(dag *d, stage *s, int idx, int speculative, sched_event *ev) {
    task_result *res = &ev->res;
    if (s->state[idx] == T_DONE) return 0; /* a late duplicate */
    if (d->failed) return 0;               /* the job is over: only waiting for its attempts */

    if (res->status == 0 && !ev->killed) {
        merge_once(d, s, idx, res);
        s->state[idx] = T_DONE;
        s->done++;
        won(d, s, idx, speculative);
        if (s->shuffled) {
            shuffle_out *so = mo_find(&d->mo, s->shuffled->shuffle_id);
            uint64_t *segs = NULL;
            if (res->len == sizeof(uint64_t) * (size_t)s->shuffled->nparts) {
                segs = (uint64_t *)res->data;
                res->data = NULL;
            }
            if (mo_set(so, idx, ev->exec, res->task_id, res->loc, segs))
                return d->failed = em__seterr(EM_ENOMEM, "scheduler: out of memory");
            s->reg_task[idx] = d->next_task;
            if (stage_complete(d, s)) return resubmit_waiting(d);
            return 0;
        }
        int rc = d->job->on_result(d->job->cctx, idx, res);
        if (rc < 0) d->failed = rc;
        return rc;
    }
    /* A failed or killed attempt is not replaced while another attempt of
     * the task still runs: that one may yet succeed. */
    int others = running_attempts(s, idx) > 0;
    if (!others) s->state[idx] = T_PENDING;
    /* Denied a commit (another attempt committed) or killed while the job
     * goes on: not a failure, run it again if nothing else runs it. */
    if (res->commit_denied || ev->killed) return others ? 0 : launch(d, s, idx);
    if (res->status == EM_EFETCH && res->fetch_map >= 0 && idmap_get(&d->maps, res->fetch_shuffle)) {
        /* The map output is gone or corrupt: forget it, rerun that map task,
         * then this one.  Every reader of a lost output reports it; only the
         * first report of a registered output counts against the limit, and
         * a reader launched before the output was registered again just
         * runs again. */
        stage *p = idmap_get(&d->maps, res->fetch_shuffle);
        shuffle_out *so = mo_find(&d->mo, res->fetch_shuffle);
        int m = res->fetch_map;
        if (so && m < so->nmaps && m < p->ntasks && so->m[m].have && res->task_id >= p->reg_task[m]) {
            if (++s->fetch_failures > d->job->max_failures) return fail_job(d, s, idx, s->fetch_failures, res);
            lose_output(d, so, m);
            if (p->state[m] == T_DONE) {
                p->state[m] = T_PENDING;
                p->done--;
            }
        }
        return submit_stage(d, s);
    }
    if (++s->attempts[idx] >= d->job->max_failures) return fail_job(d, s, idx, s->attempts[idx], res);
    return others ? 0 : launch(d, s, idx);
}

/* An attempt that ends after its job failed or was canceled.  A map output
 * that succeeded is still good for later jobs, which will not rerun its
 * task: it is registered, and its accumulator additions count now. */
static void keep_late_output(dag *d, stage *s, int idx, sched_event *ev) {
    task_result *res = &ev->res;
    if (res->status != 0 || ev->killed || !s->shuffled || s->state[idx] == T_DONE ||
        res->len != sizeof(uint64_t) * (size_t)s->shuffled->nparts)
        return;
    merge_once(d, s, idx, res);
    s->state[idx] = T_DONE;
    if (!mo_set(mo_find(&d->mo, s->shuffled->shuffle_id), idx, ev->exec, res->task_id, res->loc,
                (uint64_t *)res->data))
        s->reg_task[idx] = d->next_task;
    res->data = NULL;
}

static int handle(dag *d, sched_event *ev) {
    int idx, att;
    stage *s = attempt_ended(d, ev, &idx, &att);
    if (!s) return 0; /* stale */
    if (ev->res.status && !ev->res.commit_denied && s == d->result && d->job->sink->kind == SK_SAVE)
        /* Its authorization to commit, if it had one, is free again. */
        cc_attempt_failed(&d->commits, s->id, d->job->parts ? d->job->parts[idx] : idx, ev->res.task_id);
    int rc = react(d, s, idx, s->att[att].speculative, ev);
    drop_unregistered(d, s, idx, ev);
    return rc;
}

static void drain_one(dag *d, sched_event *ev) {
    int idx, att;
    stage *s = attempt_ended(d, ev, &idx, &att);
    if (!s) return;
    keep_late_output(d, s, idx, ev);
    drop_unregistered(d, s, idx, ev);
}

static int running_total(dag *d) {
    int n = 0;
    for (int i = 0; i < d->nactive; i++) n += d->active[i]->running;
    return n;
}

/* Ask the backend to stop every running attempt of the job. */
static void kill_running(dag *d, stage *s) {
    if (!s || !s->running) return;
    for (int i = 0; i < s->natt; i++)
        if (s->att[i].state == A_RUNNING) d->be->kill(d->be, s->att[i].task_id); /* EM_ESTATE: it just ended */
}

static void kill_all(dag *d) {
    for (int i = 0; i < d->nactive; i++) kill_running(d, d->active[i]);
}

/* Whether em_cancel_all covered this job; if so the job fails with
 * EM_ECANCELED. */
static int check_cancel(dag *d, uint64_t seq) {
    if (d->failed || __atomic_load_n(&d->cancel_upto, __ATOMIC_ACQUIRE) < seq) return 0;
    d->failed = em__seterr(EM_ECANCELED, "job canceled (em_cancel_all)");
    return 1;
}

static void show_progress(dag *d, const job_spec *j) {
    stage *cur = d->nwait ? NULL : d->result;
    for (int i = 0; i < d->nactive && !cur; i++)
        if (d->active[i]->running) cur = d->active[i];
    if (cur) { /* running as Spark shows it: tasks on cores, not queued */
        int cores = d->be->cores(d->be), running = cur->running < cores ? cur->running : cores;
        progress_update(&d->prog, (int)cur->id, cur->done, running, cur->ntasks, 0);
    }
}

/* The progress line is redrawn at least this often while a job waits. */
#define PROGRESS_TICK_MS 200

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Speculation, as Spark's: once `quantile` of a stage's tasks have
 * succeeded in this job, a task whose one running attempt has run longer
 * than multiplier x the median duration of those successes (and longer
 * than minTaskRuntime) gets one more attempt.  The first to finish wins
 * (won() kills the rest).  0 or < 0 (a copy could not be launched). */
static int speculate(dag *d, const job_spec *j) {
    uint64_t now = ev_now_us();
    for (int k = 0; k < d->nactive; k++) {
        stage *s = d->active[k];
        if (!s->running || s->waiting || !d->be->running_since) continue;
        int need = (int)floor(j->spec_quantile * s->ntasks), nok = 0;
        if (need < 1) need = 1;
        for (int i = 0; i < s->natt; i++) nok += s->att[i].state == A_OK;
        if (nok < need) continue;
        uint64_t *dur = malloc(sizeof *dur * (size_t)nok);
        if (!dur) return em__seterr(EM_ENOMEM, "scheduler: out of memory");
        int n = 0;
        for (int i = 0; i < s->natt; i++)
            if (s->att[i].state == A_OK)
                dur[n++] = s->att[i].end_us > s->att[i].start_us ? s->att[i].end_us - s->att[i].start_us : 0;
        qsort(dur, (size_t)n, sizeof *dur, cmp_u64);
        double threshold = j->spec_multiplier * (double)dur[n / 2];
        free(dur);
        if (threshold < (double)j->spec_min_ms * 1000.0) threshold = (double)j->spec_min_ms * 1000.0;
        int natt = s->natt; /* copies are appended: not looked at this round */
        for (int i = 0; i < natt; i++) {
            attempt_rec a = s->att[i];
            uint64_t start;
            if (a.state != A_RUNNING || s->state[a.idx] != T_RUNNING || s->nrun[a.idx] != 1) continue;
            if (!d->be->running_since(d->be, a.task_id, &start) || (double)(now - start) <= threshold) continue;
            int rc = launch_attempt(d, s, a.idx, 1);
            if (rc) return rc;
            STAT_ADD(d, tasks_speculative, 1);
        }
    }
    return 0;
}

int dag_run_job(dag *d, const job_spec *j, uint64_t seq) {
    int ntasks = j->parts ? j->nparts : j->rdd->nparts;
    stage *rs = stage_new(d, j->rdd, NULL, ntasks);
    int rc = 0;
    if (!rs) return em__seterr(EM_ENOMEM, "scheduler: out of memory");
    d->job = j;
    d->result = rs;
    d->failed = 0;
    d->nwait = 0;
    d->fl_base = d->next_task;
    if (d->fl_cap) memset(d->fl, 0, sizeof *d->fl * d->fl_cap);
    STAT_ADD(d, jobs, 1);
    progress_init(&d->prog, j->progress);
    d->nactive = 0;
    d->gen++;
    if (reset_stage(d, rs) < 0) rc = em__seterr(EM_ENOMEM, "scheduler: out of memory");
    int commits = j->sink->kind == SK_SAVE;
    if (commits && !rc) rc = cc_stage_open(&d->commits, rs->id, j->rdd->nparts);

    if (ntasks > 0 && !rc && !check_cancel(d, seq)) rc = submit_stage(d, rs);
    if (rc) d->failed = rc;
    uint64_t next_spec = ev_now_us() + (uint64_t)j->spec_interval_ms * 1000u;
    int timeout = j->progress ? PROGRESS_TICK_MS : -1;
    if (j->speculation && (timeout < 0 || j->spec_interval_ms < timeout)) timeout = j->spec_interval_ms;
    while (!d->failed && rs->done < rs->ntasks && !check_cancel(d, seq)) {
        if (j->speculation && ev_now_us() >= next_spec) {
            int sr = speculate(d, j);
            if (sr < 0) {
                d->failed = sr;
                break;
            }
            next_spec = ev_now_us() + (uint64_t)j->spec_interval_ms * 1000u;
        }
        /* Reported before each wait, so also as the job starts: a stage's
         * clock (drawn after 500 ms) starts when its tasks are launched. */
        if (j->progress) show_progress(d, j);
        if (running_total(d) == 0) {
            d->failed = em__seterr(EM_ESTATE, "scheduler: no task is running and the job is not done");
            break;
        }
        sched_event *ev = evq_wait(&d->events, timeout);
        if (!ev) continue;
        int hr = 0;
        switch (ev->kind) {
        case EV_TASK_ENDED: hr = handle(d, ev); break;
        case EV_EXEC_ADDED: /* local[N]'s one executor: nothing to place by yet */
        case EV_EXEC_LOST:  /* no executor process can be lost before cluster mode */
        case EV_WAKE: break;
        }
        if (hr < 0 && !d->failed) d->failed = hr; /* e.g. a task that could not be launched */
        ev_free(ev);
    }
    /* Let nothing of this job outlive it: what still runs is killed (a
     * failed or canceled job), and every attempt's end is awaited. */
    if (running_total(d) > 0) kill_all(d);
    while (running_total(d) > 0) {
        sched_event *ev = evq_wait(&d->events, -1);
        if (ev->kind == EV_TASK_ENDED) drain_one(d, ev);
        ev_free(ev);
    }
    progress_clear(&d->prog);
    if (commits) cc_stage_close(&d->commits, rs->id);
    rc = d->failed;
    stage_free(rs);
    d->nactive = 0;
    d->result = NULL;
    d->job = NULL;
    return rc;
}
