/*
 * history.h -- the applications of an event log directory, as the history
 * server shows them: each log there (ember's, or Apache Spark's 1.x to
 * 3.x: plain, zstd or lz4, finished or .inprogress, single files or
 * eventlog_v2_ rolling directories) replayed into a status store of its
 * own (status.h) and lent to /api/v1 and the pages through a rest_provider
 * (rest.h).
 *
 * history_scan looks at the directory: a log not seen before is loaded, one
 * whose size or modification time changed is loaded again (into a new
 * store, swapped in when whole: readers keep the old one until they give it
 * back), one that is gone is dropped.  A single log file in progress whose
 * store is loaded is not loaded again when it grows: the scan reads the
 * lines appended since into its store (readers see them as they come).  A log that cannot be read, or a line
 * of it that is corrupt, is logged with its path and line; the events
 * before a bad line and after it are kept.
 *
 * Memory: every application keeps its listing (id, name, times, user); the
 * stores of at most retained_apps of them (ember.history.retainedApplications,
 * Spark's 50) stay loaded, the least recently used going first, and one
 * asked for again is loaded again on demand.  A store itself is bounded by
 * the UI's retention limits, and a log is read a buffer at a time, so a
 * large log does not need memory in proportion to its size.
 *
 * Thread-safety: one thread scans; any thread may use the provider.
 */
#ifndef EM_HISTORY_H
#define EM_HISTORY_H

#include <stdint.h>

#include "rest.h"
#include "status.h"

#define HISTORY_RETAINED_APPS 50

typedef struct history_conf {
    const char *dir;      /* ember.history.fs.logDirectory (copied) */
    status_limits lim;    /* the stores' limits (ember.ui.retained*) */
    int retained_apps;    /* <= 0: HISTORY_RETAINED_APPS */
} history_conf;

typedef struct history history;

/* A history of c->dir, empty until the first scan.  NULL (message set)
 * when out of memory. */
history *history_new(const history_conf *c);
/* Look at the directory once (see above).  Returns the number of logs
 * loaded or loaded again, or EM_ENOENT / EM_EIO naming the directory when
 * it cannot be read (what was loaded stays). */
int history_scan(history *h);
/* The provider over h's applications; h must outlive it. */
void history_provider(history *h, rest_provider *p);
/* Applications listed now. */
int history_count(history *h);
/* Logs loaded whole, and reads on into a followed log's store, so far. */
void history_counts(history *h, int64_t *loads, int64_t *appends);
/* Free h and every store (none may be lent out). */
void history_free(history *h);

/* Load one log into a new store (history_scan's step, on its own for the
 * benchmark): 0 with *out set, or < 0 naming the path.  Corrupt lines are
 * skipped and counted in *bad (may be NULL). */
int history_load(const char *path, const status_limits *lim, status_store **out, int64_t *bad);

#endif
