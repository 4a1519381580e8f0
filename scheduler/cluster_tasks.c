/*
 * cluster_tasks.c -- the attempts the driver's cluster backend has in
 * flight (cluster_int.h).  The scheduler's thread launches: attempts
 * gather under mu and go to the loop at flush, where each executor's go
 * out in one batch (one frame, one write).  The loop hears from each
 * executor its attempts' result parts and ends, which become the
 * scheduler's EV_TASK_ENDED.  An executor takes queued attempts in launch
 * order as running ones end (backend.h's fifo_starts): the scheduler
 * knows from the ends which one runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "ember.h"
#include "err.h"
#include "log.h"
#include "taskresult.h"

void ck_task_free(ctask *t) {
    if (!t) return;
    ebuf_free(&t->part);
    free(t);
}

void ck_post_ended(cluster *k, uint64_t id, int exec, const char *why, int lost) {
    sched_event *ev = calloc(1, sizeof *ev);
    if (!ev) return;
    ev->kind = EV_TASK_ENDED;
    ev->exec = exec;
    ev->lost = lost;
    ev->exec_gone = 1;
    ev->start_us = ev->end_us = ev_now_us();
    ev->res.task_id = id;
    ev->res.status = EM_EEXEC;
    ev->res.fetch_map = -1;
    snprintf(ev->res.errmsg, sizeof ev->res.errmsg, "%s", why);
    evq_post(k->events, ev);
}

/* The loop's side of flush: each executor's launches in one batch (one
 * frame, one write). */
static void send_launches(void *arg) {
    cluster *k = arg;
    pthread_mutex_lock(&k->mu);
    pend *p = k->ph;
    k->ph = k->pt = NULL;
    pthread_mutex_unlock(&k->mu);
    int batched = -1; /* the executors batched to, chained by batch_next */
    for (pend *n; p; p = n) {
        n = p->next;
        cexec *x = exec_of(k, p->exec);
        int rc = -1;
        if (x && x->alive) {
            if (!x->batching) {
                x->batching = 1;
                x->batch_next = batched;
                batched = x->id;
                conn_batch_begin(x->c);
            }
            msg_val f[] = {msg_u(p->id), msg_bin(p->desc, p->len)};
            rc = conn_send_msg(x->c, M_LAUNCH_TASK, f, 2);
        }
        if (rc) {
            /* An executor that went before its task was sent: the task
             * never ran, so its attempt is lost, not failed (the task is
             * not to blame); a send that failed on a live connection is. */
            int gone = !x || !x->alive;
            char why[700];
            snprintf(why, sizeof why, "executor %d: cannot send the task: %s", p->exec,
                     gone ? "the executor is gone (not counted as a task failure)" : em_errmsg());
            pthread_mutex_lock(&k->mu);
            ctask *t = idmap_del(&k->tasks, p->id);
            pthread_mutex_unlock(&k->mu);
            if (t) ck_post_ended(k, p->id, p->exec, why, gone);
            ck_task_free(t);
        }
        free(p->desc);
        free(p);
    }
    for (cexec *x; batched >= 0 && (x = exec_of(k, batched)); batched = x->batch_next) {
        x->batching = 0;
        if (x->alive && conn_batch_end(x->c)) conn_close(x->c, em_errmsg());
    }
}

int ck_launch(backend *b, uint64_t task_id, uint8_t *desc, size_t len, int exec) {
    cluster *k = (cluster *)b;
    pend *p = malloc(sizeof *p);
    ctask *t = calloc(1, sizeof *t);
    if (!p || !t || exec < 0) {
        free(p);
        free(t);
        free(desc);
        return exec < 0 ? em__seterr(EM_EINVAL, "cluster backend: no executor named for task %llu",
                                     (unsigned long long)task_id)
                        : em__seterr(EM_ENOMEM, "cluster backend: out of memory");
    }
    p->next = NULL;
    p->id = task_id;
    p->desc = desc;
    p->len = len;
    p->exec = exec;
    t->id = task_id;
    t->exec = exec;
    pthread_mutex_lock(&k->mu);
    if (idmap_put(&k->tasks, task_id, t)) {
        pthread_mutex_unlock(&k->mu);
        free(p);
        free(t);
        free(desc);
        return em__seterr(EM_ENOMEM, "cluster backend: out of memory");
    }
    if (k->pt) k->pt->next = p;
    else k->ph = p;
    k->pt = p;
    pthread_mutex_unlock(&k->mu);
    return 0;
}

void ck_flush(backend *b) {
    cluster *k = (cluster *)b;
    pthread_mutex_lock(&k->mu);
    int any = k->ph != NULL;
    pthread_mutex_unlock(&k->mu);
    if (any && iol_post(k->l, send_launches, k)) log_msg(LOG_ERROR, "driver", "cannot hand tasks to the io loop");
}

typedef struct kill_arg {
    cluster *k;
    uint64_t id;
    int exec;
} kill_arg;

static void send_kill(void *arg) {
    kill_arg *a = arg;
    cexec *x = exec_of(a->k, a->exec);
    if (x && x->alive) {
        msg_val f[] = {msg_u(a->id)};
        if (conn_send_msg(x->c, M_KILL_TASK, f, 1)) conn_close(x->c, em_errmsg());
    }
    free(a);
}

int ck_kill(backend *b, uint64_t task_id) {
    cluster *k = (cluster *)b;
    pthread_mutex_lock(&k->mu);
    ctask *t = idmap_get(&k->tasks, task_id);
    int exec = t ? t->exec : -1;
    pthread_mutex_unlock(&k->mu);
    if (!t) return EM_ESTATE;
    kill_arg *a = malloc(sizeof *a);
    if (!a) return em__seterr(EM_ENOMEM, "cluster backend: out of memory");
    a->k = k;
    a->id = task_id;
    a->exec = exec;
    if (iol_post(k->l, send_kill, a)) free(a);
    return 0;
}

/* A part of a result too large for one frame: kept with its task while
 * the parts stay within ember.driver.maxResultSize. */
void ck_result_part(cluster *k, conn *c, const msg *m, int exec) {
    pthread_mutex_lock(&k->mu);
    ctask *t = idmap_get(&k->tasks, m->f[0].u);
    int rc = 0;
    if (t && t->exec == exec) {
        t->part_bytes += m->f[1].len;
        if (k->max_result && t->part_bytes > (uint64_t)k->max_result) ebuf_free(&t->part);
        else rc = ebuf_append(&t->part, m->f[1].p, m->f[1].len);
    }
    pthread_mutex_unlock(&k->mu);
    if (rc) conn_close(c, "the driver is out of memory");
}

void ck_task_ended(cluster *k, conn *c, const msg *m, int exec) {
    sched_event *ev = calloc(1, sizeof *ev);
    if (!ev) {
        conn_close(c, "the driver is out of memory");
        return;
    }
    /* Only an attempt this executor runs: another's id is not its to end. */
    pthread_mutex_lock(&k->mu);
    ctask *t = idmap_get(&k->tasks, m->f[0].u);
    if (t && t->exec == exec) idmap_del(&k->tasks, m->f[0].u);
    else t = NULL;
    pthread_mutex_unlock(&k->mu);
    if (!t) { /* a late or bogus end */
        free(ev);
        return;
    }
    ev->res.task_id = m->f[0].u;
    if (m->f[4].len || !k->max_result || t->part_bytes <= (uint64_t)k->max_result) {
        const uint8_t *p = m->f[4].len ? m->f[4].p : t->part.p;
        size_t len = m->f[4].len ? m->f[4].len : t->part.len;
        if (taskresult_decode(p, len, &ev->res)) {
            ck_task_free(t);
            free(ev);
            conn_close(c, em_errmsg());
            return;
        }
    } else { /* streamed past the limit, and dropped */
        ev->res.status = EM_ETOOBIG;
        ev->res.fetch_map = -1;
        snprintf(ev->res.errmsg, sizeof ev->res.errmsg,
                 "the task's result is %llu bytes, more than ember.driver.maxResultSize (%lld bytes)",
                 (unsigned long long)t->part_bytes, (long long)k->max_result);
    }
    /* Times on the driver's clock: the executor's duration, ending now. */
    uint64_t now = ev_now_us(), dur = m->f[3].u > m->f[2].u ? m->f[3].u - m->f[2].u : 0;
    ck_task_free(t);
    ev->queued_only = m->n > 5 && m->f[5].u;
    ev->kind = EV_TASK_ENDED;
    ev->exec = exec;
    ev->killed = (int)m->f[1].u;
    ev->end_us = now;
    ev->start_us = dur < now ? now - dur : 0;
    evq_post(k->events, ev);
}
