/*
 * ioloop.c -- a libuv loop on its own thread with a mailbox (see ioloop.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"
#include "ioloop.h"

typedef struct post {
    struct post *next;
    void (*fn)(void *);
    void *arg;
} post;

struct ioloop {
    uv_loop_t loop;
    uv_async_t wake;
    pthread_t thread;
    pthread_mutex_t mu;   /* the mailbox */
    post *head, *tail;
    int stopping;
    char name[32];
};

/* Close a handle still open at stop through its owner (iol_owner). */
static void close_one(uv_handle_t *h, void *arg) {
    ioloop *l = arg;
    if (h == (uv_handle_t *)&l->wake || uv_is_closing(h)) return;
    iol_owner *o = h->data;
    if (o && o->close) o->close(o, "the io loop is stopping");
    else uv_close(h, NULL);
}

static void run_posts(uv_async_t *a) {
    ioloop *l = a->data;
    pthread_mutex_lock(&l->mu);
    post *p = l->head;
    l->head = l->tail = NULL;
    int stop = l->stopping;
    pthread_mutex_unlock(&l->mu);
    for (post *n; p; p = n) {
        n = p->next;
        p->fn(p->arg);
        free(p);
    }
    if (stop) { /* every handle closes (its owner's close runs), then uv_run returns */
        uv_walk(&l->loop, close_one, l);
        if (!uv_is_closing((uv_handle_t *)&l->wake)) uv_close((uv_handle_t *)&l->wake, NULL);
    }
}

static void *loop_main(void *arg) {
    ioloop *l = arg;
    uv_run(&l->loop, UV_RUN_DEFAULT);
    return NULL;
}

ioloop *iol_start(const char *name) {
    ioloop *l = calloc(1, sizeof *l);
    if (!l) {
        em__seterr(EM_ENOMEM, "io loop: out of memory");
        return NULL;
    }
    snprintf(l->name, sizeof l->name, "%s", name ? name : "io");
    pthread_mutex_init(&l->mu, NULL);
    int rc = uv_loop_init(&l->loop);
    if (!rc) {
        rc = uv_async_init(&l->loop, &l->wake, run_posts);
        if (rc) uv_loop_close(&l->loop);
    }
    if (rc) {
        pthread_mutex_destroy(&l->mu);
        free(l);
        em__seterr(EM_EIO, "io loop: %s", uv_strerror(rc));
        return NULL;
    }
    l->wake.data = l;
    if (pthread_create(&l->thread, NULL, loop_main, l)) {
        uv_close((uv_handle_t *)&l->wake, NULL);
        uv_run(&l->loop, UV_RUN_DEFAULT);
        uv_loop_close(&l->loop);
        pthread_mutex_destroy(&l->mu);
        free(l);
        em__seterr(EM_ENOMEM, "io loop: cannot start its thread");
        return NULL;
    }
    return l;
}

int iol_post(ioloop *l, void (*fn)(void *), void *arg) {
    post *p = malloc(sizeof *p);
    if (!p) return em__seterr(EM_ENOMEM, "io loop: out of memory");
    p->next = NULL;
    p->fn = fn;
    p->arg = arg;
    pthread_mutex_lock(&l->mu);
    if (l->stopping) {
        pthread_mutex_unlock(&l->mu);
        free(p);
        return em__seterr(EM_ESTATE, "io loop %s: stopping", l->name);
    }
    if (l->tail) l->tail->next = p;
    else l->head = p;
    l->tail = p;
    pthread_mutex_unlock(&l->mu);
    uv_async_send(&l->wake);
    return 0;
}

typedef struct call_wait {
    void (*fn)(void *);
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
} call_wait;

static void call_tramp(void *a) {
    call_wait *w = a;
    w->fn(w->arg);
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

int iol_call(ioloop *l, void (*fn)(void *), void *arg) {
    if (iol_here(l)) {
        fn(arg);
        return 0;
    }
    call_wait w = {fn, arg, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    int rc = iol_post(l, call_tramp, &w);
    if (!rc) {
        pthread_mutex_lock(&w.mu);
        while (!w.done) pthread_cond_wait(&w.cv, &w.mu);
        pthread_mutex_unlock(&w.mu);
    }
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
    return rc;
}

int iol_here(ioloop *l) { return pthread_equal(pthread_self(), l->thread); }

uv_loop_t *iol_uv(ioloop *l) { return &l->loop; }

void iol_stop(ioloop *l) {
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    l->stopping = 1;
    pthread_mutex_unlock(&l->mu);
    uv_async_send(&l->wake); /* runs what was posted, then closes every handle */
    pthread_join(l->thread, NULL);
    uv_loop_close(&l->loop);
    for (post *p = l->head, *n; p; p = n) { /* posted too late to run */
        n = p->next;
        free(p);
    }
    pthread_mutex_destroy(&l->mu);
    free(l);
}

static void timer_owner_close(void *self, const char *reason) {
    (void)reason;
    uv_timer_t *t = &((iol_timer *)self)->t;
    if (!uv_is_closing((uv_handle_t *)t)) uv_close((uv_handle_t *)t, NULL);
}

void iol_timer_init(ioloop *l, iol_timer *t) {
    t->owner.close = timer_owner_close;
    uv_timer_init(iol_uv(l), &t->t); /* only fails for a bad loop */
    t->t.data = &t->owner;
}
