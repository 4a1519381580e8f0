/*
 * wrap.c -- the __wrap_ functions of the failinject binary (wrap.h): each
 * counts its call when its kind is armed and fails the n-th one, else calls
 * the real function (__real_NAME, which the linker's --wrap binds to libc's
 * or the sanitizer's).
 */
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "wrap.h"

static atomic_int armed_kind;
static atomic_llong fail_at;
static atomic_llong calls;

static const char *const kind_names[FI_NKINDS] = {"none", "malloc", "write", "open", "rename", "fsync"};

const char *fi_kind_name(int kind) { return kind > 0 && kind < FI_NKINDS ? kind_names[kind] : "none"; }

int fi_kind_parse(const char *name) {
    for (int k = 1; k < FI_NKINDS; k++)
        if (!strcmp(name, kind_names[k])) return k;
    return -1;
}

void fi_arm(int kind, int64_t n) {
    atomic_store(&armed_kind, FI_NONE);
    atomic_store(&calls, 0);
    atomic_store(&fail_at, n);
    atomic_store(&armed_kind, kind);
}

int64_t fi_disarm(void) {
    atomic_store(&armed_kind, FI_NONE);
    return atomic_load(&calls);
}

int fi_fired(void) { return atomic_load(&calls) >= atomic_load(&fail_at); }

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __real_pwrite(int fd, const void *buf, size_t n, off_t off);
int __real_open(const char *path, int flags, ...);
int __real_openat(int dirfd, const char *path, int flags, ...);
FILE *__real_fopen(const char *path, const char *mode);
int __real_mkostemp(char *tmpl, int flags);
char *__real_mkdtemp(char *tmpl);
int __real_mkdir(const char *path, mode_t mode);
int __real_rename(const char *from, const char *to);
int __real_link(const char *from, const char *to);
int __real_fsync(int fd);
int __real_fdatasync(int fd);
size_t __real_fwrite(const void *p, size_t size, size_t n, FILE *f);
int __real_fclose(FILE *f);
FILE *__real_fdopen(int fd, const char *mode);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off);
int __wrap_open(const char *path, int flags, ...);
int __wrap_openat(int dirfd, const char *path, int flags, ...);
FILE *__wrap_fopen(const char *path, const char *mode);
int __wrap_mkostemp(char *tmpl, int flags);
char *__wrap_mkdtemp(char *tmpl);
int __wrap_mkdir(const char *path, mode_t mode);
int __wrap_rename(const char *from, const char *to);
int __wrap_link(const char *from, const char *to);
int __wrap_fsync(int fd);
int __wrap_fdatasync(int fd);
size_t __wrap_fwrite(const void *p, size_t size, size_t n, FILE *f);
int __wrap_fclose(FILE *f);
FILE *__wrap_fdopen(int fd, const char *mode);

/* 1 when this call of kind is the one to fail; then the call's stack goes
 * to standard error (backtrace_symbols_fd allocates nothing), so a failed
 * run's report shows where the failure was injected. */
static int should_fail(int kind) {
    if (atomic_load_explicit(&armed_kind, memory_order_relaxed) != kind) return 0;
    if (atomic_fetch_add(&calls, 1) + 1 != atomic_load(&fail_at)) return 0;
    void *pcs[24];
    int n = backtrace(pcs, 24);
    static const char head[] = "failinject: the injected failure, at:\n";
    if (__real_write(STDERR_FILENO, head, sizeof head - 1) < 0) return 1;
    backtrace_symbols_fd(pcs + 1, n - 1, STDERR_FILENO);
    return 1;
}

#define FAIL_IF(kind, err, ret)                                                    \
    do {                                                                           \
        if (should_fail(kind)) {                                                   \
            errno = (err);                                                         \
            return ret;                                                            \
        }                                                                          \
    } while (0)

void *__wrap_malloc(size_t n) {
    FAIL_IF(FI_MALLOC, ENOMEM, NULL);
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size) {
    FAIL_IF(FI_MALLOC, ENOMEM, NULL);
    return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n) {
    if (n) FAIL_IF(FI_MALLOC, ENOMEM, NULL);
    return __real_realloc(p, n);
}

char *__wrap_strdup(const char *s) {
    FAIL_IF(FI_MALLOC, ENOMEM, NULL);
    return __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n) {
    FAIL_IF(FI_MALLOC, ENOMEM, NULL);
    return __real_strndup(s, n);
}

int __wrap_posix_memalign(void **p, size_t align, size_t n) {
    if (should_fail(FI_MALLOC)) return ENOMEM;
    return __real_posix_memalign(p, align, n);
}

ssize_t __wrap_write(int fd, const void *buf, size_t n) {
    /* Standard error stays writable: the library's log lines are not the
     * I/O under test, and the child's report must get out. */
    if (fd != STDERR_FILENO) FAIL_IF(FI_WRITE, ENOSPC, -1);
    return __real_write(fd, buf, n);
}

ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off) {
    FAIL_IF(FI_WRITE, ENOSPC, -1);
    return __real_pwrite(fd, buf, n, off);
}

int __wrap_open(const char *path, int flags, ...) {
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    FAIL_IF(FI_OPEN, EIO, -1);
    return __real_open(path, flags, mode);
}

int __wrap_openat(int dirfd, const char *path, int flags, ...) {
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    FAIL_IF(FI_OPEN, EIO, -1);
    return __real_openat(dirfd, path, flags, mode);
}

FILE *__wrap_fopen(const char *path, const char *mode) {
    FAIL_IF(FI_OPEN, EIO, NULL);
    return __real_fopen(path, mode);
}

int __wrap_mkostemp(char *tmpl, int flags) {
    FAIL_IF(FI_OPEN, EIO, -1);
    return __real_mkostemp(tmpl, flags);
}

char *__wrap_mkdtemp(char *tmpl) {
    FAIL_IF(FI_OPEN, EIO, NULL);
    return __real_mkdtemp(tmpl);
}

int __wrap_mkdir(const char *path, mode_t mode) {
    FAIL_IF(FI_OPEN, EIO, -1);
    return __real_mkdir(path, mode);
}

int __wrap_rename(const char *from, const char *to) {
    FAIL_IF(FI_RENAME, EIO, -1);
    return __real_rename(from, to);
}

int __wrap_link(const char *from, const char *to) {
    FAIL_IF(FI_RENAME, EIO, -1);
    return __real_link(from, to);
}

int __wrap_fsync(int fd) {
    FAIL_IF(FI_FSYNC, EIO, -1);
    return __real_fsync(fd);
}

int __wrap_fdatasync(int fd) {
    FAIL_IF(FI_FSYNC, EIO, -1);
    return __real_fdatasync(fd);
}

size_t __wrap_fwrite(const void *p, size_t size, size_t n, FILE *f) {
    if (f != stderr) FAIL_IF(FI_WRITE, ENOSPC, 0);
    return __real_fwrite(p, size, n, f);
}

/* The stream is closed either way (as fclose does when its last flush
 * fails); the failure is the flush's. */
int __wrap_fclose(FILE *f) {
    int rc = __real_fclose(f);
    if (should_fail(FI_WRITE)) {
        errno = ENOSPC;
        return EOF;
    }
    return rc;
}

FILE *__wrap_fdopen(int fd, const char *mode) {
    FAIL_IF(FI_OPEN, EIO, NULL);
    return __real_fdopen(fd, mode);
}
