/*
 * log.c -- event lines on stderr (see log.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static int level = LOG_INFO;
static const char *const names[] = {"error", "warn", "info", "debug"};

int log_level_parse(const char *name) {
    for (int i = 0; i < 4; i++)
        if (name && !strcasecmp(name, names[i])) return i;
    return -1;
}

void log_set_level(int l) { __atomic_store_n(&level, l, __ATOMIC_RELAXED); }

int log_enabled(int l) { return l <= __atomic_load_n(&level, __ATOMIC_RELAXED); }

void log_msg(int l, const char *component, const char *fmt, ...) {
    if (!log_enabled(l)) return;
    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    int n = (int)strftime(line, sizeof line, "%Y-%m-%d %H:%M:%S", &tm);
    n += snprintf(line + n, sizeof line - (size_t)n, ".%03ld %-5s %s: ", ts.tv_nsec / 1000000L, names[l], component);
    va_list ap;
    va_start(ap, fmt);
    if (n < (int)sizeof line) n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof line - 1) n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(2, line, (size_t)n);
    (void)w; /* nowhere to report a failed log write */
}
