/*
 * curmetrics.h -- the task metrics (taskmetrics.h) of the attempt the
 * calling thread runs, for code deep inside a task to add to without a
 * parameter: the shuffle writer and reader, the external sorter, the
 * aggregation and join tables.  Internal to executor/.
 *
 * The runner (runner.h) points the thread at its attempt's result for the
 * length of runner_run.  Outside an attempt (a unit test of one module, a
 * thread that runs no task) there is none and the helpers do nothing.
 * Callers add per spill, per segment or per structure, never per record.
 */
#ifndef EM_CURMETRICS_H
#define EM_CURMETRICS_H

#include <stdint.h>
#include <time.h>

#include "taskmetrics.h"

/* The calling thread's attempt's metrics, or NULL. */
extern __thread task_metrics *cur_task_metrics;

/* A spill: in-memory bytes of the data written out, and their bytes on
 * disk (Spark's "Memory Bytes Spilled" and "Disk Bytes Spilled"). */
static inline void tm_spilled(uint64_t mem_bytes, uint64_t disk_bytes) {
    task_metrics *m = cur_task_metrics;
    if (!m) return;
    m->mem_spilled += (int64_t)mem_bytes;
    m->disk_spilled += (int64_t)disk_bytes;
}

/* A structure's peak bytes (an aggregation table, a sort buffer, a join's
 * table, a shuffle writer's buffers), added when the structure is done
 * with: Spark's "Peak Execution Memory" is the sum of the peaks of the
 * structures a task made. */
static inline void tm_peak(uint64_t bytes) {
    task_metrics *m = cur_task_metrics;
    if (m) m->peak_mem += (int64_t)bytes;
}

/* Nanoseconds on the monotonic clock (vDSO: no system call). */
static inline int64_t tm_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The CPU time of an attempt that ran on the calling thread from begin_ns
 * to end_ns (tm_now_ns), from the thread's CPU clock.
 *
 * Reading that clock is a system call (CLOCK_THREAD_CPUTIME_ID has no
 * vDSO path), about a microsecond on a virtual machine: as long as a
 * whole trivial task.  So a thread reads it at the end of an attempt only
 * when TM_CPU_READ_EVERY_NS or more have passed since its last read.  An
 * attempt that ends sooner (it took less than that, on a thread that read
 * the clock a moment ago) is given its wall time, which a short attempt
 * that keeps its thread spends on the CPU.  An attempt that ends with a
 * read shares the clock's advance since the last read with the attempts
 * given their wall time in between, in proportion to wall time: it gets
 * its wall time scaled by the window's CPU time over the wall time of the
 * window's attempts (at most 1).  So an attempt of a millisecond or more is measured by the
 * clock (within the estimates of the short attempts of at most a
 * millisecond before it), short ones in a burst are estimated, and every
 * result lies in [0, end_ns - begin_ns].  tm_cpu_begin must be called as
 * each attempt begins (it reads the clock once, the first time a thread
 * runs an attempt). */
#define TM_CPU_READ_EVERY_NS 1000000

/* Their state, inline for the common case of no read: the thread's last
 * read of its CPU clock (-1 before the first), when it was made, and the
 * CPU time given since to attempts that ended without a read; and the
 * reads themselves (curmetrics.c). */
extern __thread int64_t tm_cpu_at, tm_cpu_wall_at, tm_cpu_owed;
void tm_cpu_first(int64_t begin_ns);
int64_t tm_cpu_read(int64_t wall);

static inline void tm_cpu_begin(int64_t begin_ns) {
    if (tm_cpu_at < 0) tm_cpu_first(begin_ns);
}

static inline int64_t tm_cpu_end(int64_t begin_ns, int64_t end_ns) {
    int64_t wall = end_ns > begin_ns ? end_ns - begin_ns : 0;
    if (tm_cpu_at >= 0 && end_ns - tm_cpu_wall_at < TM_CPU_READ_EVERY_NS) {
        tm_cpu_owed += wall;
        return wall;
    }
    tm_cpu_wall_at = end_ns;
    return tm_cpu_read(wall);
}

#endif
