/*
 * ioloop.h -- a libuv loop on its own thread, and a mailbox into it: any
 * thread may post a function to run on the loop's thread (uv_async).  Every
 * connection (conn.h) lives on one loop and is touched only from its
 * thread.
 */
#ifndef EM_IOLOOP_H
#define EM_IOLOOP_H

#include <uv.h>

typedef struct ioloop ioloop;

/* What a handle's data points to: its owner, whose close(owner, reason)
 * closes it (and whatever else the owner holds) when the loop stops with
 * the handle still open. */
typedef struct iol_owner {
    void (*close)(void *owner, const char *reason);
} iol_owner;

/* A timer that iol_stop closes if it is still open.  t.data points to the
 * timer itself (its owner), so a callback finds the struct that embeds it
 * by offsetof. */
typedef struct iol_timer {
    iol_owner owner;
    uv_timer_t t;
} iol_timer;
/* Initialize t on l's loop; from l's thread.  Cannot fail. */
void iol_timer_init(ioloop *l, iol_timer *t);

/* Start a loop thread.  NULL on failure (message set). */
ioloop *iol_start(const char *name);
/* Run fn(arg) on the loop's thread, soon.  0, or EM_ENOMEM / EM_ESTATE
 * (the loop is stopping; fn will not run). */
int iol_post(ioloop *l, void (*fn)(void *arg), void *arg);
/* Run fn(arg) on the loop's thread and wait for it to return. */
int iol_call(ioloop *l, void (*fn)(void *arg), void *arg);
/* Whether the calling thread is l's. */
int iol_here(ioloop *l);
uv_loop_t *iol_uv(ioloop *l);
/* Close every handle still open (their close callbacks run), stop the
 * thread and free the loop.  Not from the loop's thread. */
void iol_stop(ioloop *l);

#endif
