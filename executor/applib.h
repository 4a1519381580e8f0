/*
 * applib.h -- on a worker, the shared libraries an application's executor
 * needs (appbin.h says how libember.so travels with the binary).
 *
 * The cache: the binary kept as <bin>/<hex of the binary hash> runs with
 * the library directory <bin>/<hex of the library's contents hash>/ (which
 * holds the library under the name the program asks for) when a link
 * <bin>/<hex of the binary hash>.lib points to it; without the link it
 * needs none (libember linked in statically).  The link is made before the
 * binary is kept, so a kept binary never lacks it; a link whose directory
 * is gone makes the binary fetched again.
 *
 * The failure: an executor whose dynamic loader cannot load a library the
 * program needs exits with code 127 before any of ember runs, having
 * written "PROGRAM: error while loading shared libraries: NAME: REASON" to
 * its stderr.  No executor of that application can start on that worker,
 * so the worker reports it as such (executor_exited, cannot run) and the
 * master removes the application at once, with a message naming the
 * library and what to do, instead of after ember.deploy.maxExecutorRetries
 * launches.
 */
#ifndef EM_APPLIB_H
#define EM_APPLIB_H

#include <stddef.h>
#include <stdint.h>

/* The library directory the binary cached at bin runs with: 1, with its
 * path in dir (cap bytes); 0 when it needs none; -1 when it needs one that
 * is gone (or whose path does not fit), so the binary must be fetched
 * again. */
int applib_dir(const char *bin, char *dir, size_t cap);

/* Record that the binary cached at bin runs with the library directory
 * libhex beside it: the link bin.lib -> libhex, replaced atomically.  0,
 * or EM_EIO with a message naming the link. */
int applib_link(const char *bin, const char *libhex);

/* Whether an executor's end (its exit code, the signal that ended it, the
 * last lines of its stderr, NUL-terminated) is its dynamic loader failing
 * to load a library the program needs: 1, with the library's name in lib
 * (lcap bytes) and the loader's reason in why (wcap bytes), both cut to
 * fit; else 0 and nothing written. */
int applib_loader_error(int64_t code, int sig, const char *tail, char *lib, size_t lcap, char *why, size_t wcap);

#endif
