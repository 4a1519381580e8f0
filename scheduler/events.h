/*
 * events.h -- what the scheduler reacts to, and the queue that brings it.
 *
 * A backend reports the fate of every task attempt it launched and the
 * comings and goings of executors as events; driver threads post calls
 * (a job to start, a cancel, a shuffle to drop) that run on the scheduler's
 * own thread.  That thread takes them one at a time from one queue,
 * waiting with a timeout so that it can also act on time (speculation,
 * progress).  Posting never blocks on the scheduler: any thread may post,
 * one thread waits.
 */
#ifndef EM_EVENTS_H
#define EM_EVENTS_H

#include <pthread.h>
#include <stdint.h>

#include "taskresult.h"

typedef enum ev_kind {
    EV_TASK_ENDED = 1, /* an attempt finished: res holds its result (killed
                          attempts too: res.status EM_ECANCELED, killed 1) */
    EV_EXEC_ADDED,     /* an executor joined: exec, cores, address */
    EV_EXEC_LOST,      /* an executor is gone: exec, reason */
    EV_CALL,           /* run call(sched, arg) on the scheduler's thread */
    EV_APP_FAILED,     /* the application cannot run (an executor of another
                          binary): every job fails with res.status and
                          res.errmsg; when final is set (the master removed
                          the application) every later job too */
    EV_FAULTS_FIRED,   /* ember.test.faults rules took effect on executor
                          exec outside any attempt (its shuffle server
                          dropped requests): res.faults_fired of them */
} ev_kind;

typedef struct sched_event {
    struct sched_event *next;
    ev_kind kind;
    int exec;               /* executor id (task ended, added, lost) */
    int cores;              /* EV_EXEC_ADDED */
    int backlog;            /* EV_EXEC_ADDED: attempts it accepts beyond its
                               cores, queued (-1: any number; 0: one per core,
                               as a cluster's executors) */
    int backlog_max;        /* EV_EXEC_ADDED: the most it accepts beyond its
                               cores while its tasks are short beside the
                               round trip to it (below backlog: backlog) */
    int killed;             /* EV_TASK_ENDED: ended because it was killed */
    int queued_only;        /* EV_TASK_ENDED: killed in its executor's queue,
                               never started */
    int exec_gone;          /* EV_TASK_ENDED: no word from its executor (gone,
                               or the launch could not be sent) */
    int lost;               /* EV_TASK_ENDED: its executor was lost, not by
                               this attempt's doing (killed from outside, cut
                               off, its worker lost): not a task failure */
    uint64_t start_us, end_us; /* EV_TASK_ENDED: on the executor's clock */
    char text[128];         /* EV_EXEC_ADDED: address; EV_EXEC_LOST: reason */
    int final;              /* EV_APP_FAILED: for good */
    int keep_outputs;       /* EV_EXEC_LOST: its map outputs outlive it (its
                               worker's shuffle service serves them); else
                               they are lost with it */
    char host[64];          /* EV_EXEC_ADDED: the host it runs on (where a
                               speculative copy should not go) */
    char *out_url, *err_url;/* EV_EXEC_ADDED: where its worker serves its
                               stdout and stderr (malloc'd; NULL: nowhere) */
    task_result res;        /* EV_TASK_ENDED (res.task_id names the attempt) */
    int idx;                /* EV_TASK_ENDED: the task's index in its job,
                               when the scheduler hands a result on */
    void (*call)(void *sched, void *arg); /* EV_CALL */
    void *arg;
} sched_event;

typedef struct evq {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sched_event *head, *tail;
} evq;

void evq_init(evq *q);
/* Frees the events still queued (and their results). */
void evq_destroy(evq *q);
/* Queue ev (malloc'd; the queue owns it from now on). */
void evq_post(evq *q, sched_event *ev);
/* The same with q->mu already held.  A producer that posts from inside its
 * own critical section (the local backend, reporting an attempt and taking
 * the next one) may share q->mu as its lock, so one lock round trip does
 * both. */
void evq_post_locked(evq *q, sched_event *ev);
/* Every queued event, oldest first, as a list linked by next, waiting at
 * most timeout_ms for the first (NULL when the time passed with none):
 * one lock round trip for a burst of events. */
sched_event *evq_wait_all(evq *q, int timeout_ms);
void ev_free(sched_event *ev);

/* Microseconds on a monotonic clock, for attempt start and end times. */
uint64_t ev_now_us(void);

#endif
