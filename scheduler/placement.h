/*
 * placement.h -- where task attempts go: the table of executors the backend
 * announced (their cores, how many attempts each accepts beyond them, how
 * many it holds now), the choice of an executor for an attempt, and the
 * locality of cached partitions (which executor last computed a partition
 * of a persisted RDD).  Used by the scheduler's thread only; it knows
 * nothing of jobs, stages or the run queue (dag.c, tasksched.c).
 */
#ifndef EM_PLACEMENT_H
#define EM_PLACEMENT_H

#include "idmap.h"
#include "rdd.h"

typedef struct exec_rec {
    int id;
    int cores;
    int backlog;   /* attempts it accepts beyond its cores now (-1: any number) */
    int backlog_min, backlog_max; /* what backlog may be (tasksched.c's
                                     adaptive queues) */
    int assigned;  /* attempts launched on it, not yet ended */
    int alive;
    /* ember.excludeOnFailure: failed tasks of successful stages counted
     * against it, and until when it gets no task (ev_now_us; 0: never
     * excluded). */
    int failed_tasks;
    uint64_t excluded_until_us;
    char host[64];  /* the host it runs on ("" unknown) */
    int off_host;   /* host is not the table's first executor's */
    /* Its place in the table's index (placement.c): in the idle list of
     * its free cores, or, with none free, in the queue list of the
     * attempts its queue still takes, or in neither. */
    int tier;       /* 0: in no list; 1: idle; 2: queue */
    int room;       /* its level in that tier's lists */
    int bnext, bprev; /* in its list: indexes into the table, -1 */
    /* With a backend's fifo_starts: the attempts sent into its queue, in
     * launch order (task ids; some may have ended since). */
    uint64_t *waitq;
    int wq_head, wq_n, wq_cap;
} exec_rec;

/* Lists of executors by level (1 .. n-1), each in the order its executors
 * reached that level, and the highest level any holds (0: none). */
typedef struct level_lists {
    int *head, *tail;  /* per level: first and last executor, -1 */
    int n, top;
} level_lists;

/* The executors, and an index of them so that a choice and the counts the
 * scheduler asks for after every event cost the same with 1,000
 * executors as with 2: executors with free cores by how many (a task
 * goes to an idle core before any queue), then executors whose cores are
 * all busy by the attempts their queue still takes; equal executors take
 * tasks in turn.  An executor that accepts any number (backlog -1, as
 * local[N]'s one) is counted apart.  assigned, alive and backlog change
 * only through et_assign, et_set_alive and et_set_backlog, which keep the
 * index. */
typedef struct exec_table {
    exec_rec *v;
    int n, cap;
    level_lists idle, queue;
    int unbounded;     /* alive executors that accept any number */
    int idle_cores;    /* free cores of the executors alive */
    int alive_cores;   /* cores of the executors alive */
    int queued_execs;  /* executors alive holding attempts beyond their cores */
    /* The host of the first executor that joined, and how many executors
     * alive run on another (et_one_host). */
    char host0[64];
    int off_host0;
    /* An executor's slot is its id when executors join in id order; the
     * ids of those that joined out of order, to their slots. */
    idmap moved;
} exec_table;

/* Executor id, NULL when none: constant time in any join order. */
exec_rec *et_find(exec_table *t, int id);
/* An executor joined (or announced itself again) on host (NULL: unknown),
 * accepting backlog attempts beyond its cores, and up to backlog_max when
 * the scheduler deepens its queue: 0, or EM_ENOMEM. */
int et_add(exec_table *t, int id, int cores, int backlog, int backlog_max, const char *host);
/* Whether every executor alive runs on one host, the first executor's
 * (an unknown host, as local[N]'s threads have, is one host): then no
 * block an executor writes is read across a network.  Constant time. */
static inline int et_one_host(const exec_table *t) { return t->off_host0 == 0; }
/* Room for n executors, so that the first n et_add calls allocate
 * nothing (for executors that join in id order from 0, of fewer than 8
 * cores and queue slots or accepting any number; one out of order takes
 * an entry in the moved map): 0, or EM_ENOMEM. */
int et_reserve(exec_table *t, int n);
void et_free(exec_table *t);
/* x takes (delta 1) or gives back (delta -1) an attempt. */
void et_assign(exec_table *t, exec_rec *x, int delta);
/* x accepts backlog attempts beyond its cores from now on. */
void et_set_backlog(exec_table *t, exec_rec *x, int backlog);
/* x is alive (it joined again) or lost. */
void et_set_alive(exec_table *t, exec_rec *x, int alive);
/* Append task_id to x's queue of waiting attempts: 0 or EM_ENOMEM. */
int et_wait_push(exec_rec *x, uint64_t task_id);
/* The oldest of x's waiting attempts (removed), 0 when none. */
uint64_t et_wait_pop(exec_rec *x);
/* Which executors an attempt may not go to (an exclusion): skip(ctx, x)
 * is asked of each executor et_choose considers, and only of those. */
typedef struct et_filter {
    int (*skip)(void *ctx, const exec_rec *x);
    void *ctx;
} et_filter;

/* Whether x may take one more attempt now. */
int et_has_room(const exec_rec *x);
int et_any_room(const exec_table *t);
/* The executor for an attempt whose input is cached on executor pref (-1:
 * none known): pref if it has room; else, once the attempt's locality wait
 * is over (waited_out) or when pref is gone, the executor with the most
 * room, avoiding `avoid` (a speculative copy's original): an executor on
 * another host first, then another executor of its host, and `avoid`
 * itself only when no other has room and it has a free core (a copy in
 * its queue would start only after the original).  An executor f skips (f NULL:
 * none) is never chosen.
 * Room counts free cores before queue slots: an executor with a free core
 * before any whose cores are busy, however deep its queue.  Of executors
 * with as much room, the one that has had it longest.
 * NULL: none has room, or the attempt should wait for pref.  Constant time
 * without avoid and f; with them (a speculative copy, an exclusion) a
 * walk of the index by room that stops at the first fit, passing over
 * (and asking f of) the executors of avoid's host and the skipped ones.  An
 * executor that accepts any number (local[N]'s) makes it look at every
 * executor. */
exec_rec *et_choose(exec_table *t, int pref, int avoid, int waited_out, const et_filter *f);

/* The executor holding partition part of r's input in its cache: r or an
 * ancestor through one-to-one narrow dependencies (an operator, a union,
 * a cogroup's narrow inputs) that is persisted and was last computed
 * there.  -1: none known. */
int cache_pref(em_rdd *r, int part);
/* An attempt computed partition part of r on executor exec: every
 * persisted RDD on that path now has it cached there (a preference only:
 * a block evicted since is recomputed wherever the task runs). */
void note_cache(em_rdd *r, int part, int exec);

#endif
