/*
 * dag_int.h -- the scheduler's state, internal to dag.c, stage.c and
 * tasksched.c.
 *
 * The dag, its stages, jobs, attempt records, in-flight attempts and run
 * queue entries, which every part of the scheduler works on; and what
 * dag.c offers tasksched.c: failing and ending jobs, a stage's completion
 * and submission, and the map outputs an attempt registers or loses.  Only
 * those three files and their headers include it: the rest of the tree
 * sees dag.h.  Everything here belongs to the scheduler's thread, except
 * where a field says it is shared (the job mailbox under jmu, counters
 * em_get_stats reads).
 */
#ifndef EM_DAG_INT_H
#define EM_DAG_INT_H

#include <pthread.h>
#include <stdint.h>

#include "commit.h"
#include "dag.h"
#include "idmap.h"
#include "median.h"
#include "placement.h"
#include "progress.h"

/* A task's state in its stage (stage.state). */
enum { T_PENDING = 0, T_RUNNING = 1, T_DONE = 2 };

/* The counters are read by em_get_stats from any thread while jobs run:
 * updated atomically.  A gauge that falls (tasks_running, jobs_active)
 * falls after the counts of what ended, with release order: em_get_stats
 * reads the gauges first (acquire), so a reader that sees nothing running
 * sees every count of what ran. */
#define STAT_ADD(d, field, v) __atomic_fetch_add(&(d)->stats->field, (v), __ATOMIC_RELAXED)
#define STAT_GAUGE_ADD(d, field, v) __atomic_fetch_add(&(d)->stats->field, (v), __ATOMIC_RELEASE)

/* An attempt's state (attempt_rec.state). */
enum { A_RUNNING = 0, A_OK, A_FAILED, A_KILLED };

#define JOB_MSG_MAX 1024

/* One attempt of one task: launched on an executor, ended some way. */
#define MOVED_COPY 2

typedef struct attempt_rec {
    uint64_t task_id;
    int idx;            /* the task (index in its stage) */
    uint32_t number;    /* 0 for the task's first attempt */
    int exec;           /* executor it ran on (-1 until it ended) */
    uint8_t state;      /* A_* */
    uint8_t speculative; /* 1: a speculative copy; MOVED_COPY: a copy of one
                            that waited in a queue (tasksched.c's steal) */
    uint8_t loc;        /* its locality (listen.h's LOC_*) */
    uint8_t kill_sent;  /* the backend took a kill for it before its end:
                           the end counts as killed, whatever it says */
    uint8_t revoked;    /* killed in its executor's queue, to run on an idle
                           executor instead (tasksched.c's steal) */
    uint8_t waiting;    /* launched into its executor's queue and not yet
                           started there (backend.h's fifo_starts): listeners
                           and counts have not seen it */
    uint8_t queued_launch; /* launched into the queue, not onto a free core */
    uint32_t ui_attempt;/* the stage attempt it ran in, as listeners saw it */
    uint64_t start_us, end_us;
    int64_t launch_ms;  /* when it was launched (epoch) */
    uint64_t launch_us; /* the same, on ev_now_us's clock */
    uint64_t run_us;    /* with fifo_starts: when it started (ev_now_us) */
} attempt_rec;

typedef struct job job;

typedef struct stage {
    uint32_t id;
    em_rdd *rdd;       /* the RDD whose partitions the tasks compute */
    em_rdd *shuffled;  /* map stages: the shuffled RDD reading the output
                          (not read once dropped: it may be freed) */
    uint32_t shuffle_id; /* map stages: its shuffle, and how many partitions */
    int out_parts;       /* the shuffle has (copies: valid after the drop) */
    int nparents;
    struct stage **parents;
    int ntasks;
    /* Map stages: per map output, the first task id launched after it was
     * last registered; an older reader's fetch failure is stale. */
    uint64_t *reg_task;
    uint8_t *state;
    int *attempts;      /* failed attempts, against max_failures */
    uint32_t *launched; /* attempts launched: the next one's number */
    uint32_t *nrun;     /* attempts running now */
    uint8_t *queued;    /* entries in the run queue (an attempt to launch) */
    attempt_rec *att;   /* attempts launched since the stage was last idle */
    int natt, capatt;
    run_median ok_us;   /* the durations of those that succeeded (speculation) */
    double spec_us;     /* how long an attempt runs before it gets a copy,
                           as speculate()'s scan number spec_scan set it */
    uint64_t spec_scan; /* the scan that set spec_us (dag.spec_scans) */
    int done, running;
    /* Stage attempts, as Spark's: the first fetch failure reported by an
     * attempt of the current stage attempt fails it, and the tasks
     * launched from then on make the next one; reports from attempts
     * launched before (task id below first_task) only lose their outputs.
     * consec_failed counts the failed stage attempts since the stage last
     * completed, against ember.stage.maxConsecutiveAttempts; fail_why
     * names their outputs and causes. */
    uint32_t stage_attempt;
    uint64_t first_task;
    int consec_failed;
    char fail_why[600];
    job *job;           /* the job it runs for; NULL when idle */
    uint8_t active;     /* in d->active */
    uint8_t waiting;    /* in d->waitq: waits for parents */
    uint8_t dropped;    /* map stage of a dropped shuffle, or result stage of
                           an ended job: freed at its last attempt's end */
    uint8_t resubmit;   /* dispatch found a parent incomplete: submit again */
    uint64_t counted;   /* the last job (seq) whose stats counted it */
    uint32_t mark;      /* == dag.gen: visited by the current walk */
    /* As listeners see it (listen.h): a stage attempt is open, its number
     * (the next one's once closed), when it was submitted, and whether any
     * attempt was ever opened. */
    uint8_t ui_open, ui_used;
    uint32_t ui_attempt;
    int64_t ui_submit_ms;
    /* ember.excludeOnFailure: per (task, executor) pair, the failed
     * attempts there since the stage was last idle. */
    struct fail_rec {
        int idx, exec, n;
    } *fails;
    int nfails, capfails;
    uint64_t task_us;  /* its successful attempts' duration, a running
                          average (tasksched.c's steal) */
} stage;

/* An attempt running now: its stage, task and record, and the job it
 * runs for (whose count of running attempts it is in). */
typedef struct inflight {
    stage *s;
    int idx;
    int att; /* index in s->att */
    job *j;
    struct inflight *next_free; /* on d->free_fl */
} inflight;

struct job {
    job *next;          /* d->jobs (running) or d->held (not started) */
    uint64_t seq;
    job_spec spec;      /* sink and parts live in the caller's frame, which
                           outlives the job's use of them (until ended) */
    char *group;
    stage *result;
    int rc;             /* 0, or why it failed */
    char msg[JOB_MSG_MAX];
    int finishing;      /* every partition has a winner, or it failed: no
                           more launches */
    int save;           /* its tasks write output (SK_SAVE) */
    int launch_rc;      /* a launch failed during dispatch: failed after it */
    char launch_msg[JOB_MSG_MAX];
    int dirty;          /* in d->dirty: results to hand on after the burst */
    int wake;           /* and its caller to wake then */
    int nqueued;        /* results handed on */
    job *next_dirty;
    sched_event *phead, *ptail; /* results not yet handed on (scheduler only) */
    int over;           /* end_job ran */
    int nrun;           /* attempts running for it */
    int ui_id;          /* its Spark job id, for listeners (-1: none) */
    job *next_dead;     /* on d->dead: the scheduler lets go after the burst */
    /* Shared with the calling thread, under d->jmu: */
    sched_event *rhead, *rtail; /* successful results for on_result */
    uint64_t result_bytes;      /* of every result handed on */
    int ended;
    int refs;           /* the caller, the scheduler, each abort request */
    pthread_cond_t cv;
};

struct dag {
    backend *be;
    evq events;      /* what the backend and driver threads post */
    commit_coord commits; /* output commits of running jobs' tasks */
    mapout mo;
    em_stats *stats;
    uint64_t ns;
    idmap maps;      /* shuffle id -> its map stage */
    idmap inflight;  /* task id -> inflight */
    inflight *free_fl; /* inflight records to reuse */
    uint32_t next_stage;
    uint64_t next_task;
    uint64_t next_seq;
    progress prog;
    job *prog_job;   /* the job whose progress is drawn */
    job *jobs, *jobs_tail; /* running, in start order */
    job *held, *held_tail; /* posted while held, in order */
    job *dirty;      /* jobs with results to wake their callers for */
    job *dead;       /* jobs the scheduler lets go after this burst */
    /* Executors, as the backend announced them, and the attempts waiting
     * for a place on one (in the order asked; dispatched by job order). */
    exec_table execs;
    struct runq_entry *runq; /* entries [runq_head, nrunq) (those taken out have j NULL) */
    int runq_head, nrunq, caprunq;
    uint64_t locality_due_us; /* the earliest locality wait to end, 0: none */
    stage **waitq;
    int nwait, capwait;
    stage **active;  /* stages with running attempts or waiting: what
                        per-event and timed work scans */
    int nactive, capactive;
    int running;     /* attempts running, all stages */
    int nlive_maps;  /* map stages held (one per live shuffle) */
    uint32_t gen;    /* walk marks */
    int holds;       /* dag_hold calls not yet released */
    struct sync_call *hold_waiters;
    int stopping;
    uint64_t next_spec_us;
    uint64_t spec_scans;  /* speculate()'s scans so far (stage.spec_scan) */
    uint64_t steal_due_us;    /* the next queued attempt to move may move then (0: none) */
    /* Adaptive queues (tasksched.c): running averages of the round trip
     * to an executor and of a task's run, the queue depth per core they
     * call for, and the successes since it was last worked out. */
    uint64_t q_rtt_us, q_run_us;
    int q_depth, q_samples, q_have_run;
    /* Cluster mode: tasks wait with no executor alive since starved_us
     * (0: not waiting).  At ask_us (register_wait_ms after, then every
     * register_wait_ms again) the backend says whether anything will
     * come: if not, their jobs fail with its reason
     * (ember.scheduler.maxRegisteredWait); while the application waits its
     * turn for cores they wait, with a warning at warn_us, every
     * starvation_ms (Spark's spark.starvation.timeout). */
    uint64_t starved_us, ask_us, warn_us;
    int64_t register_wait_ms, starvation_ms;
    /* The application is over (EV_APP_FAILED, final): every job fails at
     * once with this code and message. */
    int app_failed;
    char app_failed_msg[512];
    /* Threads */
    pthread_t thread;
    int started;
    pthread_mutex_t jmu; /* job mailboxes, sync calls, closing */
    pthread_cond_t jcv;  /* sync calls done */
    int closing;
    /* Listeners (listen.h): their bus (NULL: none), whether executors are
     * the driver's own threads (local[N]: "driver"), the next job id. */
    struct lbus *bus;
    int local_execs;
    int64_t store_mem;   /* an executor's block store's memory (dag_set_bus) */
    int next_job_id;
};

/* The partition task idx of a job's result stage computes. */
static inline int job_part(const job *j, int idx) { return j->spec.parts ? j->spec.parts[idx] : idx; }

/* ------------------------------------------- dag.c, for tasksched.c */

/* Fail job j (once) with code and message: its attempts are killed, and it
 * ends when none runs.  _failf formats the message; _fail_here takes this
 * thread's em_errmsg. */
void dag__job_fail_msg(dag *d, job *j, int code, const char *msg);
void dag__job_failf(dag *d, job *j, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void dag__job_fail_here(dag *d, job *j, int code);
/* Task idx of s failed `times` times: j and every job using s fail. */
void dag__fail_dependents(dag *d, stage *s, int idx, int times, const task_result *res, job *j);
/* Every job not yet finishing fails with code and msg. */
void dag__fail_all(dag *d, int code, const char *msg);
/* End j if it is finishing and may end now. */
void dag__try_end(dag *d, job *j);
/* The scheduler is done with j: it lets go at the end of the burst. */
void dag__sched_release(dag *d, job *j);

/* Whether every task of s succeeded (a map stage: every output is
 * registered). */
int dag__stage_complete(dag *d, stage *s);
/* Run s's pending tasks for j if its parents are complete, else submit the
 * missing parents and wait for them.  0 or EM_ENOMEM. */
int dag__submit_stage(dag *d, job *j, stage *s);
/* A map stage completed: launch the stages that waited for it. */
void dag__resubmit_waiting(dag *d);
/* A stage nothing runs for any more: freed now, or at its last attempt's
 * end. */
void dag__retire_stage(dag *d, stage *s);
/* A fetch failure from s's current stage attempt: the next attempt begins;
 * 1 when that was the last allowed and the jobs using s failed, else 0. */
int dag__stage_attempt_failed(dag *d, job *j, stage *s, const task_result *res);

/* Register map output idx of s from a successful attempt.  0 or
 * EM_ENOMEM. */
int dag__register_output(dag *d, stage *s, int idx, sched_event *ev);
/* Forget map output m of a shuffle and remove its files. */
void dag__lose_output(dag *d, shuffle_out *so, int m);

#endif
