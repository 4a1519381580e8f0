/*
 * error.c -- error codes, their strings, and the per-thread last message.
 *
 * Messages live in a thread-local buffer, so a failure on an executor thread
 * never clobbers the driver's message; the task runner copies a task's
 * message into its result, and the scheduler puts it into the driver's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"

#define ERRMSG_MAX 1024
static __thread char errmsg[ERRMSG_MAX];
static __thread int lastcode;

const char *em_strerror(int code) {
    switch (code) {
    case EM_OK: return "success";
    case EM_STOP: return "stop requested";
#define EM__ERRSTR(name, val, str) \
    case EM_##name: return str;
        EM_ERRNO_MAP(EM__ERRSTR)
#undef EM__ERRSTR
    }
    return "unknown error";
}

const char *em_errmsg(void) { return errmsg[0] ? errmsg : "no error"; }

static void vset(const char *fmt, va_list ap) { vsnprintf(errmsg, sizeof errmsg, fmt, ap); }

int em__lasterr(void) { return lastcode ? lastcode : EM_EINVAL; }

void em__clearerr(void) {
    errmsg[0] = 0;
    lastcode = 0;
}

int em__seterr(int code, const char *fmt, ...) {
    va_list ap;
    lastcode = code;
    va_start(ap, fmt);
    vset(fmt, ap);
    va_end(ap);
    return code;
}

int em__preferr(int code, const char *fmt, ...) {
    char old[ERRMSG_MAX], pre[ERRMSG_MAX];
    memcpy(old, errmsg, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    /* Both halves bounded, so the result always fits. */
    snprintf(errmsg, sizeof errmsg, "%.400s: %.600s", pre, old[0] ? old : em_strerror(code));
    lastcode = code;
    return code;
}

void em__geterr(char *buf, size_t len) {
    if (!len) return;
    snprintf(buf, len, "%s", errmsg);
}

int em_fail(const char *fmt, ...) {
    va_list ap;
    lastcode = EM_EUSER;
    if (!fmt) { /* documented in ember.h: a fixed message, not a crash */
        snprintf(errmsg, sizeof errmsg, "user function failed (em_fail called with a NULL format)");
        return EM_EUSER;
    }
    va_start(ap, fmt);
    vset(fmt, ap);
    va_end(ap);
    return EM_EUSER;
}

void em__assert_fail(const char *what, const char *file, int line) {
    fprintf(stderr, "ember: assertion failed: %s (%s:%d)\n", what, file, line);
    abort();
}
