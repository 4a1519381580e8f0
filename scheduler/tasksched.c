/*
 * tasksched.c -- the task scheduler: how the stages' tasks run (see
 * tasksched.h).
 *
 * It owns the run queue, the launch of attempts through the backend and
 * their records (per task: launched, running, failed; per attempt: number,
 * executor, state, times), the active list that timed work scans, and the
 * rules an attempt's end follows: a winner kills its copies, a failure is
 * retried up to max_failures, a fetch failure hands the lost outputs to
 * dag.c.  Dispatch places attempts on executors with room, after the
 * locality wait and away from executors excludeOnFailure rules out; timed
 * work speculates slow tasks and redraws the progress line; the stuck
 * check fails jobs that cannot progress.  All of it runs on the
 * scheduler's thread.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accum.h"
#include "bus.h"
#include "commit.h"
#include "err.h"
#include "fnref.h"
#include "idmap.h"
#include "listen.h"
#include "log.h"
#include "mapstatus.h"
#include "placement.h"
#include "progress.h"
#include "taskbuild.h"
#include "tasksched.h"

#define RESULTS_PER_WAKE 256
#define DISPATCH_FLUSH_EVERY 32

/* An attempt to launch once an executor has room for it. */
typedef struct runq_entry {
    job *j;        /* NULL: taken (launched, dropped); removed at compaction */
    stage *s;
    int idx;
    int speculative;
    uint64_t since_us; /* queued at */
    uint64_t unsched_us; /* first found with every executor excluded for it (0: never) */
} runq_entry;

/* ---------------------------------------------------------- active list */

void ts_activate(dag *d, stage *s) {
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

/* Whether a task of s failed on x. */
static int failed_on(const stage *s, const exec_rec *x) {
    for (int i = 0; i < s->nfails; i++)
        if (s->fails[i].exec == x->id) return 1;
    return 0;
}

/* Task idx of s, placed at now: whether it may not go to an executor. */
typedef struct excl_query {
    const job *j;
    const stage *s;
    int idx;
    uint64_t now;
} excl_query;

/* et_filter's skip under ember.excludeOnFailure: x is excluded for the
 * task, or a task of s failed on it and it has no free core (it gets the
 * task only on a free core, never in its queue, ember.executor.taskQueue:
 * a queued attempt would run there before a second failure could exclude
 * it for the stage), or its queue is deeper than ember.executor.taskQueue
 * (adaptive queues deepen it for short tasks: an executor that fails
 * every task at once would fail a deep queue's worth before the first
 * failure's exclusion took effect).  Asked only of the executors the
 * choice looks at. */
static int excl_skip(void *ctx, const exec_rec *x) {
    const excl_query *q = ctx;
    return excluded_for(q->j, q->s, q->idx, x, q->now) || (x->assigned >= x->cores && failed_on(q->s, x)) ||
           (x->backlog >= 0 && x->assigned >= x->cores + x->backlog_min);
}

/* Whether any executor alive may run the task of q (asked only when none
 * could take it now: a walk of every executor). */
static int any_allowed(const dag *d, const excl_query *q) {
    for (int i = 0; i < d->execs.n; i++) {
        const exec_rec *x = &d->execs.v[i];
        if (x->alive && !excluded_for(q->j, q->s, q->idx, x, q->now)) return 1;
    }
    return 0;
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

/* ------------------------------------------- launch and the run queue */

/* The codec of a map task's output.  auto stores it as it is while every
 * executor runs on one host (local-cluster, local[N], a one-worker
 * cluster): no reader then fetches it across a network, and on one host
 * a byte goes through the page cache and back faster than front coding
 * or lz4 codes and decodes it (bench/RESULTS.md, "Map outputs on one
 * host"; the reduce side reads such files directly, readHostLocalDisk).
 * An executor that joins later on another host reads the plain blocks
 * as any others.  A codec named in the setting is always used. */
static bf_codec output_codec(const exec_table *execs, bf_codec c) {
    return c.id == BF_AUTO && et_one_host(execs) ? (bf_codec){BF_NONE, 0} : c;
}

/* Launch an attempt of task idx of s, for j, on executor x. */
static int launch_attempt(dag *d, job *j, stage *s, int idx, int speculative, exec_rec *x, int loc) {
    const job_spec *js = &j->spec;
    task_desc t;
    plan_sink ms;
    ebuf out = EBUF_INIT;
    int part = s->shuffled ? idx : job_part(j, idx);

    memset(&t, 0, sizeof t);
    t.task_id = d->next_task++;
    t.stage_id = s->id;
    /* A moved copy is the same attempt, elsewhere: its number is the one
     * of the attempt it moves (that one may yet have started: then two
     * attempts share it, as a speculative pair shares the task). */
    int renumber = 1;
    t.attempt = s->launched[idx];
    if (speculative == MOVED_COPY)
        for (int i = s->natt; i-- > 0;)
            if (s->att[i].idx == idx && s->att[i].state == A_RUNNING && s->att[i].revoked) {
                t.attempt = s->att[i].number;
                renumber = 0;
                break;
            }
    t.faults = js->faults;
    t.faults_dir = js->faults_dir;
    t.partition = part;
    memcpy(t.binhash, fnref_binary_hash(), 32);
    t.mem_budget = js->mem_budget;
    t.block_bytes = js->block_bytes;
    t.max_record = js->max_record;
    t.codec = js->codec;
    t.out_codec = output_codec(&d->execs, js->codec);
    if (s->shuffled) {
        em_rdd *r = s->shuffled;
        memset(&ms, 0, sizeof ms);
        ms.kind = SK_SHUFFLE;
        ms.shuffle_id = r->shuffle_id;
        shuffle_out *so = mo_find(&d->mo, r->shuffle_id);
        ms.n = so ? mo_accurate(so) : 0; /* the map status's form */
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
    a->loc = (uint8_t)loc;
    a->ui_attempt = s->ui_attempt;
    if (d->bus) a->launch_ms = lbus_now_ms();
    a->launch_us = ev_now_us();
    f->s = s;
    f->idx = idx;
    f->att = s->natt++;
    f->j = j;
    if (renumber) s->launched[idx]++;
    s->nrun[idx]++;
    s->state[idx] = T_RUNNING;
    s->running++;
    d->running++;
    et_assign(&d->execs, x, 1);
    STAT_GAUGE_ADD(d, tasks_running, 1);
    j->nrun++;
    ts_activate(d, s);
    size_t len;
    uint8_t *bytes = ebuf_steal(&out, &len);
    /* Beyond its free cores: it waits in the executor's queue. */
    a->waiting = (uint8_t)(x->assigned > x->cores && d->be->fifo_starts);
    a->queued_launch = a->waiting;
    a->run_us = a->launch_us;
    if (a->waiting && et_wait_push(x, t.task_id)) a->waiting = 0; /* out of memory: taken as running */
    rc = d->be->launch(d->be, t.task_id, bytes, len, x->id);
    if (rc) {
        if (a->waiting) x->wq_n--; /* the last pushed */
        et_assign(&d->execs, x, -1);
        idmap_del(&d->inflight, t.task_id);
        f->next_free = d->free_fl;
        d->free_fl = f;
        s->state[idx] = s->nrun[idx] > 1 ? T_RUNNING : T_PENDING;
        s->running--;
        d->running--;
        STAT_GAUGE_ADD(d, tasks_running, -1);
        j->nrun--;
        s->natt--;
        if (renumber) s->launched[idx]--;
        s->nrun[idx]--;
    } else if (!a->waiting) {
        lis_task_start(d, s, a, part);
    }
    return rc;
}

/* Attempt a of task idx (waiting in its executor's queue) starts now. */
static void wait_over(dag *d, job *j, stage *s, attempt_rec *a, int idx) {
    a->waiting = 0;
    a->run_us = ev_now_us();
    lis_task_start(d, s, a, s->shuffled ? idx : job_part(j, idx));
}

/* An attempt that ran on x ended: the thread it freed takes the oldest
 * attempt still waiting in x's queue (backend.h's fifo_starts). */
static void next_starts(dag *d, exec_rec *x) {
    uint64_t id;
    while ((id = et_wait_pop(x))) {
        inflight *f = idmap_get(&d->inflight, id);
        if (f && f->s->att[f->att].waiting) {
            wait_over(d, f->j, f->s, &f->s->att[f->att], f->idx);
            return;
        }
    }
}

/* Whether attempt a runs now, and since when (*start, ev_now_us's clock). */
static int attempt_running(dag *d, const attempt_rec *a, uint64_t *start) {
    if (a->waiting) return 0;
    if (d->be->fifo_starts) {
        *start = a->run_us;
        return 1;
    }
    return d->be->running_since && d->be->running_since(d->be, a->task_id, start);
}

/* Ask for an attempt of task idx: it joins the run queue, and dispatch
 * (after every burst of events) launches it where there is room.  0 or
 * EM_ENOMEM. */
static int enqueue(dag *d, job *j, stage *s, int idx, int speculative) {
    if (d->nrunq == d->caprunq && d->runq_head && d->runq_head >= d->nrunq / 2) { /* the front is half empty: reuse it */
        memmove(d->runq, d->runq + d->runq_head, sizeof *d->runq * (size_t)(d->nrunq - d->runq_head));
        d->nrunq -= d->runq_head;
        d->runq_head = 0;
    }
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
    ts_activate(d, s);
    lis_task_wanted(d, s);
    return 0;
}

int ts_launch(dag *d, job *j, stage *s, int idx) { return enqueue(d, j, s, idx, 0); }

/* Take entry e out of the queue (compacted away later). */
static void runq_take(runq_entry *e) {
    if (!e->j) return;
    e->s->queued[e->idx]--;
    e->j = NULL;
}

/* Drop the queue's entries of a job, or of a stage, or move a stage's
 * entries from one job to another. */
void ts_runq_drop_job(dag *d, job *j) {
    for (int i = d->runq_head; i < d->nrunq; i++)
        if (d->runq[i].j == j) runq_take(&d->runq[i]);
}

void ts_runq_drop_stage(dag *d, stage *s) {
    for (int i = d->runq_head; i < d->nrunq; i++)
        if (d->runq[i].j && d->runq[i].s == s) runq_take(&d->runq[i]);
}

void ts_runq_move(dag *d, stage *s, job *from, job *to) {
    for (int i = d->runq_head; i < d->nrunq; i++)
        if (d->runq[i].s == s && d->runq[i].j == from) d->runq[i].j = to;
}

/* Drop the entries taken out of the queue's first ones, up to index upto:
 * those still queued among them move up against the rest, in order, and
 * the queue starts at the first of them.  The cost is what dispatch
 * looked at, not the queue's length. */
static void runq_compact(dag *d, int upto) {
    int w = upto;
    for (int i = upto; i-- > d->runq_head;)
        if (d->runq[i].j) {
            if (--w != i) d->runq[w] = d->runq[i];
        }
    d->runq_head = w;
    if (d->runq_head == d->nrunq) d->runq_head = d->nrunq = 0;
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

/* ----------------------------------------------------------- dispatch */

static int parents_ready(dag *d, stage *s) {
    for (int i = 0; i < s->nparents; i++)
        if (!dag__stage_complete(d, s->parents[i])) return 0;
    return 1;
}

/* One pass of dispatch; returns whether a stage must be submitted again
 * (an entry's parent lost an output since it was queued). */
static int dispatch_pass(dag *d) {
    uint64_t now = ev_now_us();
    d->locality_due_us = 0;
    int full = !et_any_room(&d->execs), launched = 0, again = 0, seen = d->runq_head;
    for (job *j = d->jobs; j && !full; j = j->next) {
        if (j->launch_rc) continue;
        for (int i = d->runq_head; i < d->nrunq && !full; i++) {
            runq_entry *e = &d->runq[i];
            if (i >= seen) seen = i + 1;
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
            excl_query q = {j, s, e->idx, now};
            et_filter excl = {excl_skip, &q};
            exec_rec *x = et_choose(&d->execs, pref, e->speculative ? running_exec(s, e->idx) : -1, now >= due,
                                    j->spec.excl_enabled ? &excl : NULL);
            if (!x && j->spec.excl_enabled && d->execs.n && !any_allowed(d, &q)) {
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
            if (!x) {
                if (!et_any_room(&d->execs)) full = 1;
                else if (!d->locality_due_us || due < d->locality_due_us) d->locality_due_us = due;
                continue;
            }
            int idx = e->idx, spec = e->speculative;
            runq_take(e);
            if (s->state[idx] == T_PENDING && spec) spec = 0; /* its original ended: a plain retry */
            int loc = pref < 0 ? LOC_NO_PREF : x->id == pref ? LOC_PROCESS : LOC_ANY;
            int rc = launch_attempt(d, j, s, idx, spec, x, loc);
            if (rc) {
                j->launch_rc = rc;
                em__geterr(j->launch_msg, sizeof j->launch_msg);
                break;
            }
            if (pref >= 0 && x->id == pref) STAT_ADD(d, tasks_local, 1);
            if (spec == 1) STAT_ADD(d, tasks_speculative, 1);
            /* A stage's thousand tasks: executors start on the first ones
             * while the rest are encoded. */
            if (++launched % DISPATCH_FLUSH_EVERY == 0) d->be->flush(d->be);
        }
    }
    runq_compact(d, seen);
    /* Launches that failed fail their jobs, now that the queue is whole. */
    for (job *j = d->jobs, *next; j; j = next) {
        next = j->next;
        if (j->launch_rc) {
            int rc = j->launch_rc;
            j->launch_rc = 0;
            dag__job_fail_msg(d, j, rc, j->launch_msg);
        }
    }
    return again;
}

/* Launch what the queue holds where there is room, earlier jobs first, in
 * the order asked within a job.  A stage whose parent lost an output since
 * its tasks were queued waits for that parent again (its map task is
 * queued by then), as dag__submit_stage makes it. */
static int steal_queued(dag *d);

void ts_dispatch(dag *d) {
    for (int round = 0; d->nrunq > d->runq_head && round < 4; round++) {
        if (!dispatch_pass(d)) break;
        for (int i = 0; i < d->nactive; i++) {
            stage *s = d->active[i];
            if (!s->resubmit) continue;
            s->resubmit = 0;
            if (!s->job || s->job->finishing || s->dropped || s->waiting) continue;
            int rc = dag__submit_stage(d, s->job, s);
            if (rc) dag__job_fail_here(d, s->job, rc);
        }
    }
    if (steal_queued(d)) dispatch_pass(d);
}

/* ------------------------------------------ a stage's tasks for a job */

/* The stage starts running for j.  A map stage that was idle starts a new
 * attempt of itself: failure counts start again (attempt numbers go on:
 * each attempt of a task has its own). */
void ts_take_stage(dag *d, stage *s, job *j) {
    if (s->job == j) return;
    ts_activate(d, s); /* every stage a job holds is in the list release_stages scans */
    if (s->job) { /* from a job that is finishing: its attempts and queued tasks are j's now */
        ts_move_attempts(d, s, s->job, j);
        ts_runq_move(d, s, s->job, j);
    } else {
        s->consec_failed = 0;
        s->fail_why[0] = 0;
        s->nfails = 0;
        for (int i = 0; i < s->ntasks; i++) s->attempts[i] = 0;
        if (!s->running) {
            s->natt = 0;
            rm_clear(&s->ok_us);
        }
    }
    s->job = j;
}

int ts_launch_pending(dag *d, job *j, stage *s) {
    int any = 0;
    ts_take_stage(d, s, j);
    for (int i = 0; i < s->ntasks; i++)
        if (s->state[i] == T_PENDING && !s->queued[i]) {
            int rc = ts_launch(d, j, s, i);
            if (rc) return rc;
            any = 1;
        }
    if (any && s->counted != j->seq) {
        s->counted = j->seq;
        STAT_ADD(d, stages_run, 1);
    }
    return 0;
}

/* Kill a running attempt.  When the backend takes the kill (it has not
 * seen the attempt end), the attempt's end counts as killed even if it
 * reports success: an executor in another process may finish before the
 * kill reaches it, and the outcome must not depend on that race (in
 * local[N] the kill flag is set before any later end is posted).  The
 * backend's EM_ESTATE means the end is already on its way, as it is. */
static void kill_attempt(dag *d, attempt_rec *a) {
    if (d->be->kill(d->be, a->task_id) == 0) a->kill_sent = 1;
}

void ts_kill_stage(dag *d, stage *s) {
    if (!s->running) return;
    for (int i = 0; i < s->natt; i++)
        if (s->att[i].state == A_RUNNING) kill_attempt(d, &s->att[i]);
}

/* Move the running attempts of stage s from job `from` to job `to`. */
void ts_move_attempts(dag *d, stage *s, job *from, job *to) {
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

/* --------------------------------------------------- an attempt's end */

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
    STAT_ADD(d, faults_fired, res->faults_fired);
    STAT_ADD(d, shuffle_fetch_retries, res->fetch_retries);
    STAT_ADD(d, shuffle_fetch_conns_dropped, res->fetch_conns_dropped);
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
    if (speculative == 1) STAT_ADD(d, speculative_wins, 1);
    if (!s->nrun[idx]) return;
    for (int i = 0; i < s->natt; i++)
        if (s->att[i].idx == idx && s->att[i].state == A_RUNNING) kill_attempt(d, &s->att[i]);
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
            if (dag__register_output(d, s, idx, ev)) {
                dag__job_fail_here(d, j, EM_ENOMEM);
                return 0;
            }
            if (dag__stage_complete(d, s)) {
                lis_stage_completed(d, s, NULL);
                exclude_after_stage(d, j, s);
                s->consec_failed = 0; /* a stage attempt succeeded */
                s->fail_why[0] = 0;
                s->job = NULL;
                dag__resubmit_waiting(d);
            }
            return 0;
        }
        /* Results that together outgrow ember.driver.maxResultSize fail
         * the job before they exhaust the driver (Spark's check). */
        j->result_bytes += res->len;
        if (j->spec.max_result_bytes && j->result_bytes > j->spec.max_result_bytes) {
            s->state[idx] = T_PENDING; /* not handed on */
            s->done--;
            dag__job_failf(d, j, EM_ETOOBIG,
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
            lis_stage_completed(d, s, NULL);
            exclude_after_stage(d, j, s);
            j->finishing = 1;
            if (j->save) ts_kill_stage(d, s); /* losers: they end as soon as they look */
            dag__try_end(d, j);
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
    if (res->commit_denied || ev->killed || ev->lost) rc = others ? 0 : ts_launch(d, j, s, idx);
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
            if (!counted++ && res->task_id >= s->first_task && dag__stage_attempt_failed(d, j, s, res)) return 0;
            dag__lose_output(d, so, m);
            if (p->state[m] == T_DONE) {
                p->state[m] = T_PENDING;
                p->done--;
            }
        }
        if (!others) rc = dag__submit_stage(d, j, s);
    } else {
        if (j->spec.excl_enabled) note_failure(s, idx, ev->exec);
        if (++s->attempts[idx] >= j->spec.max_failures) {
            dag__fail_dependents(d, s, idx, s->attempts[idx], res, j);
            return 0;
        }
        rc = others ? 0 : ts_launch(d, j, s, idx);
    }
    if (rc) dag__job_fail_here(d, j, rc);
    return 0;
}

/* A map attempt that ends with no job running its stage (its job ended
 * first).  An output that succeeded is still good for later jobs, which
 * will not rerun its task: it is registered, and its accumulator additions
 * count now. */
static void keep_late_output(dag *d, stage *s, int idx, sched_event *ev) {
    task_result *res = &ev->res;
    if (res->status != 0 || ev->killed || !s->shuffled || s->dropped || s->state[idx] == T_DONE)
        return; /* a success's map status was checked as it ended */
    merge_once(d, s, idx, res);
    if (!dag__register_output(d, s, idx, ev)) {
        s->state[idx] = T_DONE;
        s->done++;
        if (dag__stage_complete(d, s)) {
            lis_stage_completed(d, s, NULL);
            dag__resubmit_waiting(d);
        }
    }
}

/* ------------------------------------------------- adaptive queues */

/*
 * An executor's queue (ember.executor.taskQueue per core) hides the round
 * trip between a task's end and the next launch only while the queue's
 * tasks last as long as that trip: with tasks much shorter than it, an
 * executor idles most of the time.  So the queue deepens, per core, to
 * the round trip over a task's run (a power of two, so that it changes
 * seldom), between taskQueue and ember.executor.taskQueue.max.  The round
 * trip is sampled on attempts launched onto a free core: from their launch
 * to their end here, less their run on the executor.  Worked out every
 * QUEUE_ADAPT_EVERY successes, and for each executor as it joins.
 *
 * Past QUEUED_MAX attempts queued beyond the cores of the whole cluster
 * the depth halves: one driver decides some 10^5 to 10^6 tasks a second,
 * a few thousand in a round trip of milliseconds, and a deeper
 * queue over a thousand executors only builds descriptions early (a
 * 100,000-task stage all at once), which costs memory and cache and which
 * a loss, a kill or a better placement must undo.  A few executors keep
 * the depth their round trip calls for.
 */
#define QUEUE_ADAPT_EVERY 64
#define QUEUE_DEPTH_MAX 1024
#define QUEUED_MAX 4096

static void queue_apply(dag *d, exec_rec *x) {
    if (!x->alive || x->backlog < 0 || x->backlog_max <= x->backlog_min) return;
    long b = (long)d->q_depth * x->cores;
    if (b < x->backlog_min) b = x->backlog_min;
    if (b > x->backlog_max) b = x->backlog_max;
    if (b != x->backlog) et_set_backlog(&d->execs, x, (int)b);
}

int ts_queue_depth(uint64_t rtt_us, uint64_t run_us, int cores) {
    uint64_t want = rtt_us / (run_us ? run_us : 1) + 1;
    int depth = 1;
    while ((uint64_t)depth < want && depth < QUEUE_DEPTH_MAX) depth *= 2;
    while (depth > 1 && (int64_t)depth * (cores > 0 ? cores : 1) > QUEUED_MAX) depth /= 2;
    return depth;
}

void ts_exec_added(dag *d, exec_rec *x) {
    if (d->q_depth) queue_apply(d, x);
}

static void queue_sample(dag *d, const attempt_rec *a, uint64_t run) {
    if (!a->queued_launch) {
        uint64_t now = ev_now_us(), trip = now > a->launch_us ? now - a->launch_us : 0;
        trip = trip > run ? trip - run : 0;
        d->q_rtt_us = d->q_rtt_us ? (7 * d->q_rtt_us + trip) / 8 : trip;
    }
    d->q_run_us = d->q_have_run ? (7 * d->q_run_us + run) / 8 : run;
    d->q_have_run = 1;
    if (++d->q_samples < QUEUE_ADAPT_EVERY || !d->q_rtt_us) return;
    d->q_samples = 0;
    int depth = ts_queue_depth(d->q_rtt_us, d->q_run_us, d->execs.alive_cores);
    if (depth == d->q_depth) return;
    d->q_depth = depth;
    for (int i = 0; i < d->execs.n; i++) queue_apply(d, &d->execs.v[i]);
}

/* A shuffle-map attempt's success carries its segment sizes as a map
 * status (mapstatus.h), which comes from an executor: a malformed one
 * makes the attempt a failure that names it, retried as any other. */
static void check_map_status(const stage *s, sched_event *ev) {
    task_result *res = &ev->res;
    const char *why = NULL;
    if (!ms_check(res->data, res->len, s->out_parts, &why)) return;
    res->status = EM_EPROTO;
    snprintf(res->errmsg, sizeof res->errmsg, "executor %d sent a malformed shuffle-map result: %s", ev->exec, why);
    free(res->data);
    res->data = NULL;
    res->len = 0;
}

/* An attempt ended.  Returns 1 when the event was handed on (a result). */
int ts_task_ended(dag *d, sched_event *ev) {
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
    if (x) et_assign(&d->execs, x, -1);
    /* Waiting in its executor's queue: an end from there (a kill, the
     * executor gone) means it never ran, and is no failure of the task;
     * any other means it did (its end overtook the one before it: a
     * result streamed in parts). */
    if (a->waiting && (ev->queued_only || ev->exec_gone)) ev->lost = 1;
    else if (a->waiting) wait_over(d, j, s, a, idx);
    else if (x && x->alive && !ev->exec_gone && !ev->queued_only) next_starts(d, x);
    a->exec = ev->exec;
    a->start_us = ev->start_us;
    a->end_us = ev->end_us;
    if (a->kill_sent) ev->killed = 1;
    if (s->shuffled && !ev->killed && !ev->res.status) check_map_status(s, ev);
    a->state = ev->killed ? A_KILLED : ev->res.status ? A_FAILED : A_OK;
    if (a->state == A_OK) {
        uint64_t dur = ev->end_us > ev->start_us ? ev->end_us - ev->start_us : 0;
        if (!a->waiting) s->task_us = s->task_us ? (7 * s->task_us + dur) / 8 : dur;
        (void)rm_add(&s->ok_us, dur); /* out of memory: the median of the others */
        if (d->be->fifo_starts) queue_sample(d, a, dur);
    }
    if (s->state[idx] == T_RUNNING && !s->nrun[idx] && (!s->job || s->dropped))
        s->state[idx] = T_PENDING; /* no job to rerun it: pending when one comes */
    /* One that never left its executor's queue (killed there, moved, its
     * executor lost) never ran: neither a task run nor seen by listeners.
     * One that moved (revoked) is counted once, as its copy, even if it
     * had started before the kill reached it. */
    if (!a->waiting) {
        if (!a->revoked) account(d, s, ev);
        lis_blocks_cached(d, ev);
        lis_task_end(d, s, a, s->shuffled ? idx : job_part(j, idx), ev);
    }
    /* An output that cannot be registered (a failed or killed attempt, a
     * late duplicate, a dropped shuffle) goes first; then the attempt stops
     * counting as running, before react, which may end the job and wake
     * its caller: an action that returned never sees its own last attempt
     * running, and a reader that sees none running sees no loser's files. */
    int doomed = ev->killed || ev->res.status || s->dropped || s->state[idx] == T_DONE;
    if (doomed) drop_unregistered(d, s, idx, ev);
    STAT_GAUGE_ADD(d, tasks_running, -1);

    int kept = 0;
    if (!s->shuffled && !j->over && j->save && ev->res.status && !ev->res.commit_denied && j->result == s)
        /* Its authorization to commit, if it had one, is free again. */
        cc_attempt_failed(&d->commits, s->id, job_part(j, idx), ev->res.task_id);
    if (s->job && !s->dropped && !s->job->finishing) kept = react(d, s->job, s, idx, a->speculative, ev);
    else if (s->shuffled) keep_late_output(d, s, idx, ev);
    if (!doomed) drop_unregistered(d, s, idx, ev); /* registered by now, unless out of memory */

    j->nrun--;
    if (j->ended) {
        if (!j->nrun) dag__sched_release(d, j);
    } else {
        dag__try_end(d, j);
    }
    if (s->dropped && !s->running) dag__retire_stage(d, s);
    return kept;
}

/* ------------------------------------------------------- work stealing */

/* An attempt waits in its executor's queue (ember.executor.taskQueue)
 * behind the ones running there, which may run for long, or for good.
 * Once nothing is left to launch and an executor has an idle core, an
 * attempt that has waited STEAL_AFTER_MS, and 4 times its stage's usual
 * task (a running average of its successes: so it waits behind a
 * straggler, not behind a task of the usual length), without starting
 * moves: a copy
 * (MOVED_COPY: counted neither as speculative nor as a win) is queued to
 * run elsewhere, and the waiting attempt is killed where it waits, which
 * ends it at once unless its executor cannot answer (stopped, cut off).
 * Its end is then not a task run.  Had it started meanwhile, it and the
 * copy race as a speculative pair: the first to finish wins.  One per idle
 * core at a time. */
#define STEAL_AFTER_MS 100

typedef struct steal_ctx {
    dag *d;
    int idle, moved;
    uint64_t now, due;
} steal_ctx;

static void steal_one(void *val, void *arg) {
    inflight *f = val;
    steal_ctx *c = arg;
    stage *s = f->s;
    attempt_rec *a = &s->att[f->att];
    uint64_t start;
    if (c->idle <= 0 || a->state != A_RUNNING || a->kill_sent || a->revoked || s->nrun[f->idx] != 1 ||
        s->queued[f->idx] || !s->job || s->job != f->j || f->j->finishing || s->dropped)
        return;
    exec_rec *x = et_find(&c->d->execs, a->exec);
    if (!x || x->assigned <= x->cores || attempt_running(c->d, a, &start)) return;
    uint64_t wait = (uint64_t)STEAL_AFTER_MS * 1000u;
    if (4 * s->task_us > wait) wait = 4 * s->task_us;
    uint64_t due = a->launch_us + wait;
    if (c->now < due) {
        if (!c->due || due < c->due) c->due = due;
        return;
    }
    int rc = enqueue(c->d, f->j, s, f->idx, MOVED_COPY);
    if (rc) {
        dag__job_fail_here(c->d, f->j, rc);
        return;
    }
    a->revoked = 1;
    (void)c->d->be->kill(c->d->be, a->task_id); /* EM_ESTATE: it ended already */
    c->idle--;
    c->moved++;
}

/* Copies queued (dispatch launches them). */
static int steal_queued(dag *d) {
    if (d->nrunq > d->runq_head || !d->running || (!d->be->running_since && !d->be->fifo_starts)) {
        d->steal_due_us = 0;
        return 0;
    }
    /* Nothing waiting was due before then: the attempts looked at last
     * time wait on, and one launched since waits STEAL_AFTER_MS at least. */
    uint64_t now = ev_now_us();
    if (d->steal_due_us && now < d->steal_due_us) return 0;
    d->steal_due_us = 0;
    int idle = d->execs.idle_cores;
    if (!idle || !d->execs.queued_execs) return 0;
    steal_ctx c = {d, idle, 0, now, 0};
    idmap_foreach(&d->inflight, steal_one, &c);
    d->steal_due_us = c.due ? c.due : now + (uint64_t)STEAL_AFTER_MS * 1000u;
    return c.moved;
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

/* Speculation, as Spark's: once `quantile` of a stage's tasks have
 * succeeded since it was submitted, a task whose one running attempt has
 * run longer than multiplier x the median duration of those successes (and
 * longer than minTaskRuntime) gets one more attempt.  The first to finish
 * wins (won() kills the rest).  Settings are those of the job the stage
 * runs for.  Each scan sets each active stage's threshold, then looks at
 * the attempts in flight, not at every attempt of a stage: a scan of a
 * 100,000-task stage costs what its running attempts do. */
typedef struct spec_ctx {
    dag *d;
    uint64_t now;
    job *failed; /* a copy could not be queued: that job fails after the scan */
    int rc;
} spec_ctx;

static void spec_one(void *val, void *arg) {
    inflight *f = val;
    spec_ctx *c = arg;
    stage *s = f->s;
    job *j = s->job;
    const attempt_rec *a = &s->att[f->att];
    uint64_t start;
    if (c->failed || s->spec_scan != c->d->spec_scans || !j || j->finishing || a->state != A_RUNNING ||
        s->state[f->idx] != T_RUNNING || s->nrun[f->idx] != 1 || s->queued[f->idx])
        return;
    if (!attempt_running(c->d, a, &start) || (double)(c->now - start) <= s->spec_us) return;
    int rc = enqueue(c->d, j, s, f->idx, 1); /* counted as speculative when launched */
    if (rc) {
        c->failed = j;
        c->rc = rc;
    }
}

static void speculate(dag *d) {
    if (!d->be->running_since && !d->be->fifo_starts) return;
    int any = 0;
    d->spec_scans++; /* a stage this scan sets no threshold for gets no copy */
    for (int k = 0; k < d->nactive; k++) {
        stage *s = d->active[k];
        job *j = s->job;
        if (!j || j->finishing || !j->spec.speculation || !s->running || s->waiting) continue;
        const job_spec *js = &j->spec;
        int need = (int)floor(js->spec_quantile * s->ntasks);
        if (need < 1) need = 1;
        if (rm_count(&s->ok_us) < need) continue;
        double threshold = js->spec_multiplier * (double)rm_median(&s->ok_us);
        if (threshold < (double)js->spec_min_ms * 1000.0) threshold = (double)js->spec_min_ms * 1000.0;
        s->spec_us = threshold;
        s->spec_scan = d->spec_scans;
        any = 1;
    }
    if (!any) return;
    spec_ctx c = {d, ev_now_us(), NULL, 0};
    idmap_foreach(&d->inflight, spec_one, &c);
    if (c.failed) dag__job_fail_here(d, c.failed, c.rc);
}

/* Milliseconds until timed work is due (-1: none). */
int ts_next_timeout(dag *d) {
    int t = d->prog_job ? PROGRESS_TICK_MS : -1, spec = 0;
    if (d->locality_due_us) {
        uint64_t now = ev_now_us();
        int until = d->locality_due_us > now ? (int)((d->locality_due_us - now + 999) / 1000) : 0;
        if (t < 0 || until < t) t = until;
    }
    if (d->steal_due_us) {
        uint64_t now = ev_now_us();
        int until = d->steal_due_us > now ? (int)((d->steal_due_us - now + 999) / 1000) : 0;
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

void ts_timed_work(dag *d) {
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

/* ---------------------------------------------------- the stuck check */

/* Jobs that cannot progress (nothing runs, nothing will): a scheduler bug
 * made visible instead of a hang. */
static int any_alive(const exec_table *t) {
    for (int i = 0; i < t->n; i++)
        if (t->v[i].alive) return 1;
    return 0;
}

void ts_check_stuck(dag *d) {
    /* Tasks wait and no executor is alive: past the wait, the backend
     * says why (cluster mode; local[N]'s executors never go). */
    if (d->nrunq > d->runq_head && !d->running && !any_alive(&d->execs) && d->be->why_idle) {
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
                dag__fail_all(d, EM_EEXEC, why);
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
    if (d->running || d->locality_due_us || (d->nrunq > d->runq_head && !et_any_room(&d->execs))) return;
    for (job *j = d->jobs, *next; j; j = next) {
        next = j->next;
        if (!j->finishing)
            dag__job_failf(d, j, EM_ESTATE, "scheduler: no task is running and the job is not done");
    }
}

