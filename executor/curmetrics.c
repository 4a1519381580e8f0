/*
 * curmetrics.c -- the calling thread's attempt's metrics and its CPU
 * clock, read sparingly (see curmetrics.h).
 */
#include "curmetrics.h"

__thread task_metrics *cur_task_metrics;
__thread int64_t tm_cpu_at = -1, tm_cpu_wall_at, tm_cpu_owed;

static int64_t thread_cpu_ns(void) {
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)) return 0;
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void tm_cpu_first(int64_t begin_ns) {
    tm_cpu_at = thread_cpu_ns();
    tm_cpu_wall_at = begin_ns;
    tm_cpu_owed = 0;
}

/* A read ending an attempt of wall ns: its share of the window's CPU. */
int64_t tm_cpu_read(int64_t wall) {
    int64_t now = thread_cpu_ns(), window = tm_cpu_at >= 0 ? now - tm_cpu_at : wall;
    int64_t spent = tm_cpu_owed + wall;
    tm_cpu_at = now;
    tm_cpu_owed = 0;
    if (window >= spent) return wall;
    return window <= 0 ? 0 : (int64_t)((double)window * (double)wall / (double)spent);
}
