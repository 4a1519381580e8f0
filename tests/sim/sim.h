/*
 * sim.h -- a simulated cluster inside the driver, for the scheduler's
 * tests and benchmarks (bench/scale): E executors of C cores, master URL
 * "sim[E,C]", which only a program that calls sim_install knows.
 *
 * It is a backend (scheduler/backend.h) like the cluster's: executors
 * that hold a queue beyond their cores (ember.executor.taskQueue) and take
 * queued attempts in launch order (fifo_starts), hosts of per_host
 * executors each, executors lost and replaced.  One thread plays every
 * executor.  Each attempt's description goes through the real decoder
 * (engine/taskdesc.h) when it starts; after task_us (task_us * slow_factor
 * on a slow executor) it ends with a result of the shape its sink expects:
 *
 *   SK_SHUFFLE  segment sizes: seg_bytes for every reduce partition;
 *               its location "sim://exec-N"
 *   SK_COUNT    the records of a range partition (the slice's length,
 *               through any maps), or of a reduce partition one per map
 *               whose segment is not empty: so a test checks the answer
 *   SK_FOREACH  nothing
 *   others      a task failure naming the sink, which is not simulated
 *
 * A description the decoder refuses fails its attempt with the decoder's
 * message (a test's proof that the bytes a real executor gets decode).
 * Losses: every loss_every_ms the next alive executor (round robin) is
 * lost, as a cluster backend reports one whose heartbeats stopped: its
 * loss first (map outputs with it), then the end of each attempt it held
 * (lost, not failed); a new executor, with the next id, joins its host
 * replace_ms later.
 */
#ifndef EM_TEST_SIM_H
#define EM_TEST_SIM_H

#include <stdint.h>

typedef struct sim_opts {
    uint64_t task_us;     /* how long each attempt runs (0: ends as it starts) */
    uint64_t seg_bytes;   /* SK_SHUFFLE: each segment's size (default 64) */
    int per_host;         /* executors per host (default 50) */
    uint64_t loss_every_ms; /* 0: none lost */
    uint64_t replace_ms;  /* after a loss, a new executor joins (default 100) */
    int slow_every;       /* every slow_every-th executor (id % slow_every ==
                             slow_every - 1) is slow; 0: none */
    double slow_factor;   /* its attempts run this many times longer */
    int bad_status_maps;  /* the first attempt of each of the shuffle-map
                             tasks 0 .. bad_status_maps-1 answers with its
                             map status cut short (a malformed result) */
    int loss_probe;       /* time the scheduler's handling of each loss
                             (sim_stats' loss_ns): a call queued behind the
                             loss's events queues another behind the
                             scheduler's next round, which reads the clock */
} sim_opts;

/* What the simulated executors saw, for tests (counts, not times). */
typedef struct sim_stats {
    int64_t launched;     /* attempts handed to the backend */
    int64_t started;      /* taken from an executor's queue onto a core */
    int64_t ended;        /* ends posted (run, killed, or lost with their executor) */
    int64_t killed_queued, killed_running;
    int64_t lost_attempts;/* ended because their executor was lost */
    int64_t losses, joins;/* executors lost; executors that joined (first ones too) */
    int64_t decode_failed;
    int64_t maps_plain, maps_coded; /* SK_SHUFFLE attempts whose output
                                       codec is none, or another */
    int64_t max_in_flight;/* most attempts held at once (queued and running) */
    int64_t max_queued;   /* most attempts one executor held beyond its cores */
    int64_t loss_probes, loss_ns_total, loss_ns_max; /* loss_probe */
} sim_stats;

/* Make em_open know "sim[E,C]" (E 1..100,000 executors, C 1..1,024 cores)
 * with these options (copied; NULL: defaults).  Call before em_open; the
 * options apply to contexts opened after. */
void sim_install(const sim_opts *o);
/* Forget "sim[E,C]" again, as a program that never installed it. */
void sim_uninstall(void);
/* The counts of the most recently opened sim context, as of its
 * simulation's last round (kept after it closes, until the next opens). */
void sim_get_stats(sim_stats *out);
/* Bytes the simulated executors hold now (their attempts and the
 * descriptions they were sent), for a benchmark that subtracts them from
 * the driver's heap. */
int64_t sim_held_bytes(void);

#endif
