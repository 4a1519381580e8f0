/*
 * bus.h -- the listener bus: a bounded queue that carries the scheduler's
 * listener events (appevent.h) to their consumers -- the UI's status store,
 * the event log writer -- on a thread of its own, as Spark's
 * LiveListenerBus does.
 *
 * Posting never waits for a consumer: a task's start posted while the
 * queue holds `capacity` events (ember.scheduler.listenerbus.eventqueue.
 * capacity, Spark's 10000) is dropped and counted, and so is that task's
 * end when it comes; the first drop, then one a minute at most, logs a
 * warning with the count so far.  The other events (jobs, stages,
 * executors, the application: a few per job, and the ends of the tasks
 * whose start was queued) are never dropped, so a consumer that falls
 * behind misses whole tasks but never keeps a task, a job or an executor
 * running that ended, and the queue holds at most about twice its
 * capacity.  Consumers see
 * every event that was not dropped, in the order posted, one at a time on
 * the bus thread; a consumer that is slow only makes the queue longer.
 */
#ifndef EM_BUS_H
#define EM_BUS_H

#include <stdint.h>

#include "appevent.h"

#define LBUS_CAPACITY 10000
#define LBUS_MAX_CONSUMERS 4

typedef struct lbus lbus;

/* A consumer: called on the bus thread with each event (which it must not
 * keep: the bus frees it after the last consumer). */
typedef void (*lbus_fn)(void *ud, const app_event *e);

/* A bus of capacity events (<= 0: LBUS_CAPACITY), not yet started.  NULL
 * when out of memory (message set). */
lbus *lbus_new(int capacity);
/* Add a consumer, before lbus_start: 0, or EM_EINVAL (more than
 * LBUS_MAX_CONSUMERS, or the bus has started). */
int lbus_add(lbus *b, lbus_fn fn, void *ud);
/* Start the bus thread: 0, or EM_EIO naming the cause. */
int lbus_start(lbus *b);
/* Queue e for the consumers; the bus owns e from now on (freed at once
 * when dropped, or when the bus is not started or has stopped).  Any
 * thread; never waits for a consumer (a task event finding the queue
 * full is dropped, see above). */
void lbus_post(lbus *b, app_event *e);
/* Wait until every event posted before the call has been handed to the
 * consumers, at most timeout_ms: 0, or EM_ESTATE when the time passed. */
int lbus_wait_empty(lbus *b, int timeout_ms);
/* Events dropped so far because the queue was full. */
int64_t lbus_dropped(lbus *b);
/* Hand the queued events on, stop the thread and free the bus (and the
 * events still queued when it never started).  NULL is ignored. */
void lbus_free(lbus *b);

/* Milliseconds since the epoch (CLOCK_REALTIME): the time events carry. */
int64_t lbus_now_ms(void);

#endif
