/*
 * bincache.h -- the worker's cache of application binaries, DIR/bin/<hash>
 * (the hex of the binary's hash, as fetched from a driver).  An executor
 * of a binary this worker ran before starts from its copy; without a bound
 * the directory grows by one binary per application build for ever.  It
 * is kept under ember.worker.binCache.maxBytes (default 1 GiB): the least
 * recently used binaries go first, never one an executor the worker runs
 * (or is about to start) uses.  A binary's last use is its file's
 * modification time, which bincache_touch sets when an executor starts
 * from it, so the order survives a worker's restart.  Only files named by
 * 64 hex digits count and may go.  A shared library kept for binaries
 * (applib.h: a directory named by its hash, linked from each binary's
 * <hash>.lib) goes with the last binary that links to it, unless in_use
 * claims it (a fetch in progress); links whose binary went go too.
 * Anything else in the directory (a fetch in progress) is left alone.
 */
#ifndef EM_BINCACHE_H
#define EM_BINCACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct bincache_entry {
    char name[65];    /* the binary's file name: 64 hex digits */
    uint64_t bytes;
    int64_t used_ns;  /* its last use (modification time) */
    int in_use;       /* an executor runs it: it stays */
    int evict;        /* set by bincache_choose */
} bincache_entry;

/* Choose which of the n entries go so that the others total at most
 * max_bytes: least recently used first (ties by name), never one in use.
 * Sets evict on each chosen one and returns how many.  When the binaries
 * in use alone pass max_bytes, every other one is chosen and the total
 * stays above the bound until they are no longer used. */
int bincache_choose(bincache_entry *v, size_t n, uint64_t max_bytes);

/* Trim the cache directory dir to max_bytes (bincache_choose over its
 * binaries; in_use(ud, name) says whether an executor uses one, or a fetch
 * a library directory of that name), then drop the libraries no binary
 * left links to.  The
 * bytes removed go to *freed (may be NULL).  0, or EM_EIO when dir cannot
 * be read (nothing removed); a file that cannot be removed is skipped. */
int bincache_trim(const char *dir, uint64_t max_bytes, int (*in_use)(void *ud, const char *name), void *ud,
                  uint64_t *freed);

/* Mark the binary at path as used now (its modification time). */
void bincache_touch(const char *path);

#endif
