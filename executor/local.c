/*
 * local.c -- the local[N] backend (see local.h).
 *
 * One mutex guards a FIFO of pending descriptions and a FIFO of results;
 * workers wait on one condition, the driver on another.  A task costs two
 * lock round trips and, at most, two wake-ups, which keeps thousands of
 * trivial tasks per job cheap.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "local.h"
#include "shuffle.h"

typedef struct ltask {
    struct ltask *next;
    uint64_t id;
    uint8_t *desc;
    size_t len;
    task_result res;
} ltask;

typedef struct local_backend {
    backend b;
    exec_env *env;
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    ltask *qhead, *qtail; /* pending */
    ltask *rhead, *rtail; /* finished */
    int stopping;
} local_backend;

static void *worker(void *arg) {
    local_backend *lb = arg;
    pthread_mutex_lock(&lb->mu);
    for (;;) {
        while (!lb->qhead && !lb->stopping) pthread_cond_wait(&lb->work, &lb->mu);
        if (!lb->qhead) break;
        ltask *t = lb->qhead;
        lb->qhead = t->next;
        if (!lb->qhead) lb->qtail = NULL;
        pthread_mutex_unlock(&lb->mu);

        runner_run(lb->env, t->desc, t->len, &t->res);
        t->desc = NULL; /* the runner owns and frees it */
        t->res.task_id = t->id;

        pthread_mutex_lock(&lb->mu);
        t->next = NULL;
        if (lb->rtail) lb->rtail->next = t;
        else lb->rhead = t;
        lb->rtail = t;
        pthread_cond_signal(&lb->done);
    }
    pthread_mutex_unlock(&lb->mu);
    return NULL;
}

static int l_submit(backend *b, uint64_t task_id, uint8_t *desc, size_t len) {
    local_backend *lb = (local_backend *)b;
    ltask *t = calloc(1, sizeof *t);
    if (!t) {
        free(desc);
        return em__seterr(EM_ENOMEM, "local backend: out of memory");
    }
    t->id = task_id;
    t->desc = desc;
    t->len = len;
    pthread_mutex_lock(&lb->mu);
    if (lb->qtail) lb->qtail->next = t;
    else lb->qhead = t;
    lb->qtail = t;
    pthread_cond_signal(&lb->work);
    pthread_mutex_unlock(&lb->mu);
    return 0;
}

static int l_wait(backend *b, task_result *out) {
    local_backend *lb = (local_backend *)b;
    pthread_mutex_lock(&lb->mu);
    while (!lb->rhead) pthread_cond_wait(&lb->done, &lb->mu);
    ltask *t = lb->rhead;
    lb->rhead = t->next;
    if (!lb->rhead) lb->rtail = NULL;
    pthread_mutex_unlock(&lb->mu);
    *out = t->res;
    free(t);
    return 0;
}

static void l_drop_shuffle(backend *b, uint32_t shuffle_id, int nmaps) {
    local_backend *lb = (local_backend *)b;
    shuffle_remove(lb->env->local_dir, shuffle_id, nmaps);
}

static int l_cores(backend *b) { return ((local_backend *)b)->n; }

static void l_close(backend *b) {
    local_backend *lb = (local_backend *)b;
    pthread_mutex_lock(&lb->mu);
    lb->stopping = 1;
    pthread_cond_broadcast(&lb->work);
    pthread_mutex_unlock(&lb->mu);
    for (int i = 0; i < lb->n; i++) pthread_join(lb->threads[i], NULL);
    for (ltask *t = lb->qhead, *nx; t; t = nx) {
        nx = t->next;
        free(t->desc);
        free(t);
    }
    for (ltask *t = lb->rhead, *nx; t; t = nx) {
        nx = t->next;
        task_result_clear(&t->res);
        free(t);
    }
    pthread_mutex_destroy(&lb->mu);
    pthread_cond_destroy(&lb->work);
    pthread_cond_destroy(&lb->done);
    free(lb->threads);
    free(lb);
}

backend *local_backend_new(int nthreads, exec_env *env) {
    local_backend *lb = calloc(1, sizeof *lb);
    if (!lb || !(lb->threads = calloc((size_t)nthreads, sizeof(pthread_t)))) {
        free(lb);
        em__seterr(EM_ENOMEM, "local backend: out of memory");
        return NULL;
    }
    lb->b.submit = l_submit;
    lb->b.wait = l_wait;
    lb->b.cores = l_cores;
    lb->b.drop_shuffle = l_drop_shuffle;
    lb->b.close = l_close;
    lb->env = env;
    pthread_mutex_init(&lb->mu, NULL);
    pthread_cond_init(&lb->work, NULL);
    pthread_cond_init(&lb->done, NULL);
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&lb->threads[i], NULL, worker, lb) != 0) {
            lb->n = i;
            l_close(&lb->b);
            em__seterr(EM_ENOMEM, "local backend: cannot start thread %d", i);
            return NULL;
        }
        lb->n = i + 1;
    }
    return &lb->b;
}
