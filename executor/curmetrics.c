/*
 * curmetrics.c -- the calling thread's attempt's metrics and its CPU
 * clock, read sparingly (see curmetrics.h).
 */
#include "curmetrics.h"

__thread task_metrics *cur_task_metrics;

/* The thread's last read of its CPU clock (cpu_at, -1 before the first),
 * when it was made (wall_at), and the CPU time given since to attempts
 * that ended without a read (owed). */
static __thread int64_t cpu_at = -1, wall_at, owed;

static int64_t thread_cpu_ns(void) {
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)) return 0;
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void tm_cpu_begin(int64_t begin_ns) {
    if (cpu_at >= 0) return;
    cpu_at = thread_cpu_ns();
    wall_at = begin_ns;
    owed = 0;
}

int64_t tm_cpu_end(int64_t begin_ns, int64_t end_ns) {
    int64_t wall = end_ns > begin_ns ? end_ns - begin_ns : 0;
    if (cpu_at >= 0 && end_ns - wall_at < TM_CPU_READ_EVERY_NS) {
        owed += wall;
        return wall;
    }
    int64_t now = thread_cpu_ns(), window = cpu_at >= 0 ? now - cpu_at : wall, spent = owed + wall;
    cpu_at = now;
    wall_at = end_ns;
    owed = 0;
    if (window >= spent) return wall;
    return window <= 0 ? 0 : (int64_t)((double)window * (double)wall / (double)spent);
}
