/*
 * events.c -- the scheduler's event queue (see events.h): a mutex, a
 * condition and a FIFO list.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "events.h"

void evq_init(evq *q) {
    pthread_condattr_t a;
    pthread_mutex_init(&q->mu, NULL);
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&q->cv, &a);
    pthread_condattr_destroy(&a);
    q->head = q->tail = NULL;
}

void ev_free(sched_event *ev) {
    if (!ev) return;
    task_result_clear(&ev->res);
    free(ev->out_url);
    free(ev->err_url);
    free(ev);
}

void evq_destroy(evq *q) {
    for (sched_event *e = q->head, *n; e; e = n) {
        n = e->next;
        ev_free(e);
    }
    q->head = q->tail = NULL;
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
}

void evq_post_locked(evq *q, sched_event *ev) {
    ev->next = NULL;
    if (q->tail) q->tail->next = ev;
    else q->head = ev;
    q->tail = ev;
    pthread_cond_signal(&q->cv);
}

void evq_post(evq *q, sched_event *ev) {
    pthread_mutex_lock(&q->mu);
    evq_post_locked(q, ev);
    pthread_mutex_unlock(&q->mu);
}

uint64_t ev_now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static void deadline(struct timespec *until, int timeout_ms) {
    clock_gettime(CLOCK_MONOTONIC, until);
    until->tv_sec += timeout_ms / 1000;
    until->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until->tv_nsec >= 1000000000L) {
        until->tv_sec++;
        until->tv_nsec -= 1000000000L;
    }
}

sched_event *evq_wait_all(evq *q, int timeout_ms) {
    struct timespec until;
    if (timeout_ms >= 0) deadline(&until, timeout_ms);
    pthread_mutex_lock(&q->mu);
    while (!q->head) {
        if (timeout_ms < 0) pthread_cond_wait(&q->cv, &q->mu);
        else if (pthread_cond_timedwait(&q->cv, &q->mu, &until) == ETIMEDOUT) break;
    }
    sched_event *ev = q->head;
    q->head = q->tail = NULL;
    pthread_mutex_unlock(&q->mu);
    return ev;
}
