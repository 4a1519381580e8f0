/*
 * listen.c -- the scheduler's listener events (see listen.h): each built
 * from the scheduler's own state at the moment it happens and posted to
 * the bus.  Out of memory, an event is not built (the bus counts nothing:
 * listeners miss it, as they miss a dropped one); the scheduler goes on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "listen.h"

static const char *loc_name(int loc) {
    switch (loc) {
    case LOC_PROCESS: return "PROCESS_LOCAL";
    case LOC_NODE: return "NODE_LOCAL";
    case LOC_ANY: return "ANY";
    }
    return "NO_PREF";
}

/* s into out[0, cap), cut to fit and NUL-terminated (cap > 0): what
 * snprintf("%s") does, without its per-call cost on the task path. */
static void copy_str(char *out, size_t cap, const char *s) {
    size_t n = strlen(s);
    if (n >= cap) n = cap - 1;
    memcpy(out, s, n);
    out[n] = 0;
}

static void exec_name(const dag *d, int exec, char *out, size_t cap) {
    if (d->local_execs) {
        copy_str(out, cap, "driver");
        return;
    }
    char b[16], *e = b + sizeof b, *p = e;
    *--p = 0;
    unsigned v = exec < 0 ? 0u - (unsigned)exec : (unsigned)exec;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (exec < 0) *--p = '-';
    copy_str(out, cap, p);
}

static void exec_host(dag *d, int exec, char *out, size_t cap) {
    exec_rec *x = et_find(&d->execs, exec);
    copy_str(out, cap, x && x->host[0] ? x->host : "localhost");
}

/* The action a result stage runs, by its sink: the stage's name. */
static const char *action_name(const job *j) {
    switch (j->spec.sink->kind) {
    case SK_COLLECT: return "collect";
    case SK_COUNT: return "count";
    case SK_FOLD: return "fold";
    case SK_FOREACH: return "foreach";
    case SK_FOREACH_PART: return "foreach_partition";
    case SK_TAKE: return "take";
    case SK_SAVE: return "save_as_text_file";
    case SK_TOPN: return "top";
    case SK_KEYSAMPLE: return "sort_by_key";
    case SK_CHECKPOINT: return "checkpoint";
    }
    return "job";
}

static char *rdd_name(const em_rdd *r) {
    const char *n = r->name ? r->name : r->opname ? r->opname : "rdd";
    return strdup(n);
}

/* The RDDs of s's pipeline into si->rdds: its last RDD first, then back
 * through narrow dependencies to the shuffled RDDs it reads (which belong
 * to it, as Spark's ShuffledRDD to the stage reading it).  0 or -1. */
static int stage_rdds(dag *d, stage *s, ae_stage *si) {
    int cap = 8, top = 0, rc = 0;
    em_rdd **st = malloc(sizeof *st * (size_t)cap);
    if (!st) return -1;
    uint32_t gen = ++d->gen;
    st[top++] = s->rdd;
    s->rdd->sched_mark = gen;
    while (top && !rc) {
        em_rdd *r = st[--top];
        em_rdd *ps[RDD_MAX_PARENTS];
        int np = r->kind == RDD_SHUFFLED ? 0 : rdd_parents(r, ps);
        if (r->kind == RDD_SHUFFLED && r->parent) {
            ps[0] = r->parent; /* named as a parent, not walked */
            np = 1;
        }
        ae_rdd *ri = realloc(si->rdds, sizeof *ri * (size_t)(si->nrdds + 1));
        if (!ri) {
            rc = -1;
            break;
        }
        si->rdds = ri;
        ri = &si->rdds[si->nrdds++];
        memset(ri, 0, sizeof *ri);
        ri->id = r->id;
        ri->nparts = r->nparts;
        ri->name = rdd_name(r);
        ri->callsite = r->opname ? strdup(r->opname) : NULL;
        if (r->persist_level) {
            ri->storage.use_memory = r->persist_level != EM_DISK_ONLY;
            ri->storage.use_disk = r->persist_level != EM_MEMORY_ONLY;
            ri->storage.deserialized = 0;
            ri->storage.replication = 1;
            /* The partitions an executor cached when it computed them (the
             * scheduler's locality record; it does not hear of evictions). */
            for (int i = 0; r->cache_exec && i < r->nparts; i++) ri->ncached += r->cache_exec[i] >= 0;
        }
        if (np) {
            ri->parents = malloc(sizeof(int) * (size_t)np);
            if (!ri->parents) rc = -1;
            for (int i = 0; ri->parents && i < np; i++) ri->parents[i] = ps[i]->id;
            ri->nparents = ri->parents ? np : 0;
        }
        if (r->kind == RDD_SHUFFLED) continue;
        for (int i = np; i-- > 0 && !rc;) {
            if (ps[i]->sched_mark == gen) continue;
            ps[i]->sched_mark = gen;
            if (top == cap) {
                em_rdd **g = realloc(st, sizeof *st * (size_t)cap * 2);
                if (!g) {
                    rc = -1;
                    break;
                }
                st = g;
                cap *= 2;
            }
            st[top++] = ps[i];
        }
    }
    free(st);
    return rc;
}

/* s's "Stage Info" as of now, for the attempt ui_attempt.  0 or -1 (si
 * then holds nothing to free). */
static int stage_info(dag *d, stage *s, const job *j, ae_stage *si) {
    memset(si, 0, sizeof *si);
    si->id = (int)s->id;
    si->attempt = (int)s->ui_attempt;
    si->ntasks = s->ntasks;
    if (s->shuffled) si->name = strdup(s->shuffled->opname ? s->shuffled->opname : "shuffle");
    else si->name = strdup(j ? action_name(j) : "result");
    int rc = si->name ? 0 : -1;
    if (!rc && s->nparents) {
        si->parents = malloc(sizeof(int) * (size_t)s->nparents);
        if (!si->parents) rc = -1;
        for (int i = 0; !rc && i < s->nparents; i++) si->parents[i] = (int)s->parents[i]->id;
        if (!rc) si->nparents = s->nparents;
    }
    if (!rc) rc = stage_rdds(d, s, si);
    if (rc) ae_stage_clear(si);
    return rc;
}

static void props_group(app_event *e, const job *j) {
    if (!j->group) return;
    e->props[0] = calloc(1, sizeof(ae_prop));
    if (!e->props[0]) return;
    e->props[0][0].key = strdup("ember.jobGroup.id");
    e->props[0][0].value = strdup(j->group);
    e->nprops[0] = 1;
}

void lis_job_start(dag *d, job *j) {
    j->ui_id = -1;
    if (!d->bus) return;
    j->ui_id = d->next_job_id++;
    app_event *e = app_event_new(AE_JOB_START);
    if (!e) return;
    e->job_id = j->ui_id;
    e->time_ms = lbus_now_ms();
    props_group(e, j);
    /* Every stage the job needs: its result stage and their ancestors, by
     * a walk over the stage graph (each once). */
    if (j->result) {
        int cap = 8, top = 0, ok = 1;
        stage **st = malloc(sizeof *st * (size_t)cap);
        uint32_t gen = ++d->gen;
        if (!st) ok = 0;
        else {
            st[top++] = j->result;
            j->result->mark = gen;
        }
        while (ok && top) {
            stage *s = st[--top];
            ae_stage *v = realloc(e->stages, sizeof *v * (size_t)(e->nstages + 1));
            if (!v) {
                ok = 0;
                break;
            }
            e->stages = v;
            /* stage_info walks RDDs with its own marks: the stage marks
             * are a separate field. */
            if (stage_info(d, s, j, &e->stages[e->nstages])) {
                ok = 0;
                break;
            }
            e->nstages++;
            for (int i = 0; i < s->nparents; i++) {
                stage *p = s->parents[i];
                if (p->mark == gen) continue;
                p->mark = gen;
                if (top == cap) {
                    stage **g = realloc(st, sizeof *st * (size_t)cap * 2);
                    if (!g) {
                        ok = 0;
                        break;
                    }
                    st = g;
                    cap *= 2;
                }
                st[top++] = p;
            }
        }
        free(st);
        if (!ok) {
            app_event_free(e);
            return;
        }
    }
    lbus_post(d->bus, e);
}

void lis_stage_submitted(dag *d, stage *s) {
    if (!d->bus || s->ui_open) return;
    if (s->ui_used) s->ui_attempt++;
    s->ui_used = 1;
    s->ui_open = 1;
    s->ui_submit_ms = lbus_now_ms();
    app_event *e = app_event_new(AE_STAGE_SUBMITTED);
    if (!e) return;
    e->stages = calloc(1, sizeof *e->stages);
    if (!e->stages || stage_info(d, s, s->job, &e->stages[0])) {
        app_event_free(e);
        return;
    }
    e->nstages = 1;
    e->stages[0].submit_ms = s->ui_submit_ms;
    if (s->job) props_group(e, s->job);
    lbus_post(d->bus, e);
}

void lis_stage_completed(dag *d, stage *s, const char *why) {
    if (!d->bus || !s->ui_open) return;
    s->ui_open = 0;
    app_event *e = app_event_new(AE_STAGE_COMPLETED);
    if (!e) return;
    e->stages = calloc(1, sizeof *e->stages);
    if (!e->stages || stage_info(d, s, s->job, &e->stages[0])) {
        app_event_free(e);
        return;
    }
    e->nstages = 1;
    e->stages[0].submit_ms = s->ui_submit_ms;
    e->stages[0].complete_ms = lbus_now_ms();
    if (why) e->stages[0].failure = strdup(why);
    lbus_post(d->bus, e);
}

void lis_job_end(dag *d, job *j) {
    if (!d->bus || j->ui_id < 0) return;
    /* Stage attempts of the job still open: the job's end ends them. */
    const char *why = j->rc ? (j->msg[0] ? j->msg : "job failed") : "Job ended before the stage completed";
    for (int i = 0; i < d->nactive; i++)
        if (d->active[i]->job == j) lis_stage_completed(d, d->active[i], why);
    if (j->result && j->result->job == j) lis_stage_completed(d, j->result, j->rc ? why : NULL);
    app_event *e = app_event_new(AE_JOB_END);
    if (!e) return;
    e->job_id = j->ui_id;
    e->time_ms = lbus_now_ms();
    e->failed = j->rc != 0;
    if (j->rc) e->reason = strdup(j->msg[0] ? j->msg : "job failed");
    lbus_post(d->bus, e);
}

static void fill_task(dag *d, const attempt_rec *a, int part, int exec, ae_task *t) {
    t->task_id = (int64_t)a->task_id;
    t->index = a->idx;
    t->attempt = (int)a->number;
    t->partition = part;
    t->launch_ms = a->launch_ms;
    exec_name(d, exec, t->exec_id, sizeof t->exec_id);
    exec_host(d, exec, t->host, sizeof t->host);
    copy_str(t->locality, sizeof t->locality, loc_name(a->loc));
    t->speculative = a->speculative == 1; /* a moved copy (MOVED_COPY) is not */
}

void lis_task_start(dag *d, stage *s, const attempt_rec *a, int part) {
    if (!d->bus) return;
    app_event *e = app_event_new(AE_TASK_START);
    if (!e) return;
    e->stage_id = (int)s->id;
    e->stage_attempt = (int)a->ui_attempt;
    e->shuffle_map = s->shuffled != NULL;
    fill_task(d, a, part, a->exec, &e->task);
    lbus_post(d->bus, e);
}

void lis_task_end(dag *d, stage *s, const attempt_rec *a, int part, const sched_event *ev) {
    if (!d->bus) return;
    const task_result *res = &ev->res;
    app_event *e = app_event_new(AE_TASK_END);
    if (!e) return;
    e->stage_id = (int)s->id;
    e->stage_attempt = (int)a->ui_attempt;
    e->shuffle_map = s->shuffled != NULL;
    fill_task(d, a, part, ev->exec, &e->task);
    e->task.finish_ms = lbus_now_ms();
    e->has_metrics = 1;
    e->metrics = res->m;
    ae_end *x = &e->end;
    const char *msg = res->errmsg[0] ? res->errmsg : em_strerror(res->status);
    if (res->commit_denied) {
        x->reason = AE_COMMIT_DENIED;
        x->message = strdup("another attempt committed the partition's output");
        e->task.failed = 1;
    } else if (ev->killed) {
        x->reason = AE_KILLED;
        x->message = strdup(res->errmsg[0] ? res->errmsg : "killed");
        e->task.killed = 1;
    } else if (ev->lost) {
        x->reason = AE_EXEC_LOST;
        exec_name(d, ev->exec, x->bm_exec, sizeof x->bm_exec);
        x->message = strdup(msg);
        e->task.failed = 1;
    } else if (res->status == EM_EFETCH) {
        x->reason = AE_FETCH_FAILED;
        x->shuffle_id = (int)res->fetch_shuffle;
        x->map_id = res->fetch_map;
        x->map_index = res->fetch_map;
        x->reduce_id = part;
        stage *p = idmap_get(&d->maps, res->fetch_shuffle);
        shuffle_out *so = p ? mo_find(&d->mo, res->fetch_shuffle) : NULL;
        if (so && res->fetch_map >= 0 && res->fetch_map < so->nmaps) {
            exec_name(d, so->m[res->fetch_map].exec, x->bm_exec, sizeof x->bm_exec);
            exec_host(d, so->m[res->fetch_map].exec, x->bm_host, sizeof x->bm_host);
        }
        x->message = strdup(msg);
        e->task.failed = 1;
    } else if (res->status) {
        x->reason = AE_EXCEPTION;
        x->class_name = strdup(em_strerror(res->status));
        x->message = strdup(msg);
        e->task.failed = 1;
    }
    lbus_post(d->bus, e);
}

void lis_blocks_cached(dag *d, const sched_event *ev) {
    if (!d->bus) return;
    for (uint32_t i = 0; i < ev->res.nblocks; i++) {
        const cached_block *b = &ev->res.blocks[i];
        app_event *e = app_event_new(AE_BLOCK_UPDATED);
        if (!e) return;
        exec_name(d, ev->exec, e->exec.id, sizeof e->exec.id);
        exec_host(d, ev->exec, e->exec.host, sizeof e->exec.host);
        e->rdd_id = b->rdd;
        e->block_part = b->part;
        /* Where the store put it: a disk block's file has a header, so
         * its size is never 0; an empty partition in memory is 0 bytes. */
        e->block_level.use_disk = b->disk > 0;
        e->block_level.use_memory = b->disk == 0;
        e->block_level.replication = 1;
        e->block_mem = b->mem;
        e->block_disk = b->disk;
        lbus_post(d->bus, e);
    }
}

void lis_exec_added(dag *d, const sched_event *ev) {
    if (!d->bus) return;
    app_event *e = app_event_new(AE_EXEC_ADDED);
    if (!e) return;
    e->time_ms = lbus_now_ms();
    exec_name(d, ev->exec, e->exec.id, sizeof e->exec.id);
    snprintf(e->exec.host, sizeof e->exec.host, "%s", ev->host[0] ? ev->host : "localhost");
    e->exec.cores = ev->cores;
    if (ev->out_url) e->exec.stdout_url = strdup(ev->out_url);
    if (ev->err_url) e->exec.stderr_url = strdup(ev->err_url);
    lbus_post(d->bus, e);
    /* Its block store, as Spark announces a block manager. */
    if (!(e = app_event_new(AE_BLOCK_MANAGER_ADDED))) return;
    e->time_ms = lbus_now_ms();
    exec_name(d, ev->exec, e->exec.id, sizeof e->exec.id);
    snprintf(e->exec.host, sizeof e->exec.host, "%s", ev->host[0] ? ev->host : "localhost");
    e->max_mem = d->store_mem;
    lbus_post(d->bus, e);
}

void lis_exec_lost(dag *d, const sched_event *ev) {
    if (!d->bus) return;
    app_event *e = app_event_new(AE_EXEC_REMOVED);
    if (!e) return;
    e->time_ms = lbus_now_ms();
    exec_name(d, ev->exec, e->exec.id, sizeof e->exec.id);
    e->reason = strdup(ev->text[0] ? ev->text : "executor lost");
    lbus_post(d->bus, e);
}
