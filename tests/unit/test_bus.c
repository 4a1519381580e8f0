/*
 * test_bus.c -- the listener bus (scheduler/bus.c): events reach every
 * consumer in the order posted; a full queue drops task starts and the
 * ends of those tasks, counts them, never blocks the poster, and keeps
 * every other event;
 * lbus_wait_empty waits for what was posted; freeing hands the queued
 * events on first.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "bus.h"
#include "ember.h"

typedef struct seen {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;
    int ids[4096];
    int hold;    /* the consumer waits while set */
    int entered; /* it has been called at least once */
} seen;

/* Whether the consumer has been called (a wait_for condition). */
static int has_entered(void *p) {
    seen *s = p;
    pthread_mutex_lock(&s->mu);
    int e = s->entered;
    pthread_mutex_unlock(&s->mu);
    return e;
}

static void take(void *ud, const app_event *e) {
    seen *s = ud;
    pthread_mutex_lock(&s->mu);
    s->entered = 1;
    pthread_cond_broadcast(&s->cv);
    while (s->hold) pthread_cond_wait(&s->cv, &s->mu);
    if (s->n < 4096) s->ids[s->n] = e->job_id;
    s->n++;
    pthread_mutex_unlock(&s->mu);
}

static void seen_init(seen *s) {
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
}

static app_event *job(int id) {
    app_event *e = app_event_new(AE_JOB_START);
    e->job_id = id;
    return e;
}

/* A task's start or end (task id id, also marked in job_id, which the
 * bus never reads). */
static app_event *task_ev(ae_kind k, int id) {
    app_event *e = app_event_new(k);
    e->job_id = id;
    e->task.task_id = id;
    return e;
}

TEST(bus_every_consumer_in_order) {
    seen a, b;
    seen_init(&a);
    seen_init(&b);
    lbus *bus = lbus_new(0);
    CHECK(bus);
    CHECK_OK(lbus_add(bus, take, &a));
    CHECK_OK(lbus_add(bus, take, &b));
    CHECK_OK(lbus_start(bus));
    CHECK(lbus_add(bus, take, &a) == EM_EINVAL); /* after the start */
    for (int i = 0; i < 3000; i++) lbus_post(bus, job(i));
    CHECK_OK(lbus_wait_empty(bus, 10000));
    CHECK_EQ_I64(a.n, 3000);
    CHECK_EQ_I64(b.n, 3000);
    for (int i = 0; i < 3000; i++) CHECK(a.ids[i] == i && b.ids[i] == i);
    CHECK_EQ_I64(lbus_dropped(bus), 0);
    lbus_free(bus);
}

TEST(bus_full_queue_drops_and_counts) {
    seen a;
    seen_init(&a);
    a.hold = 1;
    lbus *bus = lbus_new(8);
    CHECK(bus);
    CHECK_OK(lbus_add(bus, take, &a));
    CHECK_OK(lbus_start(bus));
    /* The consumer holds the first event: the ring takes 8 more task
     * starts and the other 92 are dropped without waiting.  The ends of
     * the 8 are queued past the capacity, the ends of the 92 dropped; the
     * job events posted then are all kept (the ring grows), in order. */
    lbus_post(bus, task_ev(AE_TASK_START, 0));
    CHECK(wait_for(has_entered, &a, WAIT_MS, "the consumer to take the first event"));
    for (int i = 1; i <= 100; i++) lbus_post(bus, task_ev(AE_TASK_START, i));
    for (int i = 1; i <= 100; i++) lbus_post(bus, task_ev(AE_TASK_END, i));
    for (int i = 101; i <= 130; i++) lbus_post(bus, job(i));
    int64_t dropped = lbus_dropped(bus);
    CHECK_EQ_I64(dropped, 92 + 92);
    CHECK(lbus_wait_empty(bus, 50) == EM_ESTATE); /* held: not handed on */
    pthread_mutex_lock(&a.mu);
    a.hold = 0;
    pthread_cond_broadcast(&a.cv);
    pthread_mutex_unlock(&a.mu);
    CHECK_OK(lbus_wait_empty(bus, 10000));
    CHECK_EQ_I64(a.n, 9 + 8 + 30);
    for (int i = 0; i < 9; i++) CHECK_EQ_I64(a.ids[i], i);          /* starts 0..8 */
    for (int i = 9; i < 17; i++) CHECK_EQ_I64(a.ids[i], i - 8);     /* ends 1..8 */
    for (int i = 17; i < a.n; i++) CHECK_EQ_I64(a.ids[i], 101 + (i - 17)); /* every job event */
    lbus_free(bus);
}

TEST(bus_free_hands_on_the_queue) {
    seen a;
    seen_init(&a);
    lbus *bus = lbus_new(0);
    CHECK_OK(lbus_add(bus, take, &a));
    CHECK_OK(lbus_start(bus));
    for (int i = 0; i < 500; i++) lbus_post(bus, job(i));
    lbus_free(bus); /* no wait first: the free drains */
    CHECK_EQ_I64(a.n, 500);
    /* Never started: queued events are freed, none handed on (and posts
     * before the start are dropped at once, as after the stop). */
    seen b;
    seen_init(&b);
    bus = lbus_new(0);
    CHECK_OK(lbus_add(bus, take, &b));
    lbus_post(bus, job(1));
    lbus_free(bus);
    CHECK_EQ_I64(b.n, 0);
}
