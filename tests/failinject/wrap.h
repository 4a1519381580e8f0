/*
 * wrap.h -- the failure injector of the failinject test: the n-th call of
 * one kind (allocation, write, open, rename, fsync) made by the library
 * fails, SQLite's simulated I/O and malloc errors.
 *
 * The failinject binary is linked with -Wl,--wrap for every function
 * listed below (the Makefile's FAILINJECT_WRAP), so each call the
 * library's objects make goes through __wrap_NAME in wrap.c.  While a kind
 * is armed, its calls are counted (atomically: every thread of the library
 * counts); the n-th one fails once, as the real call fails (NULL or -1
 * with errno ENOMEM, ENOSPC or EIO), and every other call goes through.
 * Disarmed, the wrappers only forward.  Nothing here is part of the
 * shipped library: only this test binary is linked with the wrappers.
 *
 *   malloc  malloc, calloc, realloc (to a nonzero size), strdup, strndup,
 *           posix_memalign                                     ENOMEM
 *   write   write (not to standard error), pwrite, fwrite (not to
 *           stderr), fclose (after closing: its last flush)    ENOSPC
 *   open    open, openat, fopen, fdopen, mkostemp, mkdtemp,
 *           mkdir                                              EIO
 *   rename  rename, link                                       EIO
 *   fsync   fsync, fdatasync                                   EIO
 */
#ifndef FI_WRAP_H
#define FI_WRAP_H

#include <stdint.h>

enum { FI_NONE = 0, FI_MALLOC, FI_WRITE, FI_OPEN, FI_RENAME, FI_FSYNC, FI_NKINDS };

/* The kind's name ("malloc", ...), or "none". */
const char *fi_kind_name(int kind);
/* The kind named, or -1. */
int fi_kind_parse(const char *name);
/* Count the calls of kind from now on and fail the n-th (n >= 1).  Arming
 * again resets the count. */
void fi_arm(int kind, int64_t n);
/* Stop counting.  Returns the number of calls of the armed kind counted
 * since fi_arm (the failure fired when it is >= n). */
int64_t fi_disarm(void);
/* 1 when the armed failure has fired. */
int fi_fired(void);

#endif
