/*
 * backend.h -- the one seam between scheduling and execution.
 *
 * The scheduler launches serialized task descriptions on executors, asks
 * for attempts to be killed, and learns everything else as events posted
 * to its queue (events.h): every attempt launched ends with exactly one
 * EV_TASK_ENDED (its result, executor, start and end times; killed set if
 * a kill ended it), and executors announce themselves (EV_EXEC_ADDED, at
 * once for local[N]: one executor, id 0, N slots) and their loss
 * (EV_EXEC_LOST).  It never sees threads or sockets.  local[N] is a thread
 * pool in the driver (executor/local.c); the cluster backend sends the same
 * bytes to executor processes.
 */
#ifndef EM_BACKEND_H
#define EM_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "events.h"

/* Any executor (for launch). */
#define BE_ANY_EXEC (-1)

typedef struct backend backend;
struct backend {
    /* Its executors take queued attempts in launch order, each as an
     * attempt that ran there ends (its EV_TASK_ENDED is sent before the
     * thread takes the next): the scheduler knows from the ends which
     * queued attempt runs, and since when (running_since may be NULL).  An
     * attempt killed in the queue ends with queued_only set. */
    int fifo_starts;
    /* Start attempt task_id on executor exec (BE_ANY_EXEC: the backend
     * chooses); takes ownership of desc (malloc'd) in every case.  0, or
     * < 0 when it cannot be started (no EV_TASK_ENDED follows then).  An
     * executor runs at most its slots' worth of attempts at once; more are
     * queued on it in launch order. */
    int (*launch)(backend *b, uint64_t task_id, uint8_t *desc, size_t len, int exec);
    /* Attempts launched may wait in the caller's thread until flush (the
     * scheduler flushes after every burst of events): one hand-over for a
     * stage's thousand tasks.  Launch, kill and flush come from one thread. */
    void (*flush)(backend *b);
    /* Ask that attempt task_id stop: a queued attempt ends at once, a
     * running one at its next check between record batches and blocks
     * (milliseconds), or, inside a user function that does not return,
     * when that function returns.  Its EV_TASK_ENDED has killed set.  0,
     * or EM_ESTATE when the attempt already ended. */
    int (*kill)(backend *b, uint64_t task_id);
    /* Whether attempt task_id is running now (not queued, not ended); if so
     * *start_us is when it started (ev_now_us's clock).  For speculation.
     * NULL with fifo_starts. */
    int (*running_since)(backend *b, uint64_t task_id, uint64_t *start_us);
    /* Remove every map output of a shuffle the scheduler has forgotten, on
     * every executor. */
    void (*drop_shuffle)(backend *b, uint32_t shuffle_id);
    /* Remove one attempt's map output on executor exec (an attempt whose
     * output was not registered: another attempt's was). */
    void (*drop_map_output)(backend *b, int exec, uint32_t shuffle_id, int map, uint64_t attempt);
    /* Executor cores available in all. */
    int (*cores)(backend *b);
    /* Cores of the executors registered now (not a floor, not those only
     * granted): what ember.scheduler.minRegisteredResourcesRatio waits
     * for.  NULL: all are there from the start, as local[N]'s. */
    int (*registered_cores)(backend *b);
    /* Why no executor is alive, into buf: asked after tasks waited
     * ember.scheduler.maxRegisteredWait for one, and for the warning
     * logged every ember.starvation.timeout while they wait.  1: nothing
     * will come (no alive worker could ever hold an executor, executors
     * that exited or could not reach the driver): the jobs fail with buf;
     * 0: the application waits its turn for cores other applications hold,
     * and the jobs wait as long as it takes.  NULL: executors never go, as
     * local[N]'s. */
    int (*why_idle)(backend *b, char *buf, size_t cap);
    /* A broadcast was destroyed: drop it on every executor (NULL: they
     * share the driver's table). */
    void (*drop_bcast)(backend *b, uint64_t id);
    /* RDD rdd of the context whose cache key is ns was unpersisted or
     * released: drop its cached partitions on every executor, before any
     * attempt launched after this call runs there (RDD ids are reused).
     * NULL: executors share the driver's block store. */
    void (*drop_rdd)(backend *b, uint64_t ns, int rdd);
    /* Stop executors (kills queued attempts, waits for running ones, whose
     * events are dropped) and free the backend. */
    void (*close)(backend *b);
};

/* Tests and benchmarks only (tests/sim/sim.h): a backend for a master URL
 * of the program's own.  em_open offers it every URL first: claims says
 * whether the URL is its own (and sets the cores it gives), then open
 * builds the backend (NULL, with the message set, fails em_open).  Defined
 * by the wiring file (engine/open.c), NULL unless a test sets it. */
struct em_conf;
typedef struct backend_hook {
    int (*claims)(const char *master, int *cores);
    backend *(*open)(const char *master, const struct em_conf *conf, evq *events);
} backend_hook;
extern const backend_hook *em_backend_hook;

#endif
