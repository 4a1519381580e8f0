/*
 * eventlog_fixture.h -- what the event log tests share: the path of a log
 * under tests/data/eventlogs, whole files read and written, and every
 * event of a log read at once.
 */
#ifndef EM_EVENTLOG_FIXTURE_H
#define EM_EVENTLOG_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "appevent.h"
#include "eventlog_reader.h"

/* tests/data/eventlogs/NAME, found from this file's own path. */
static inline const char *data(const char *name) {
    static char p[4096];
    const char *f = __FILE__;
    const char *cut = strstr(f, "unit/eventlog_fixture.h");
    snprintf(p, sizeof p, "%.*sdata/eventlogs/%s", (int)(cut - f), f, name);
    return p;
}

/* The whole file (malloc'd, one byte to spare), its length in *len; NULL
 * (*len 0) when it cannot be opened. */
static inline void *slurp(const char *path, size_t *len) {
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    *len = p ? fread(p, 1, (size_t)n, f) : 0;
    fclose(f);
    return p;
}

/* The offset just past the first n lines of s (each must end in '\n'). */
static inline size_t after_lines(const char *s, int n) {
    size_t at = 0;
    for (int i = 0; i < n; i++) at = (size_t)(strchr(s + at, '\n') - s) + 1;
    return at;
}

/* Write p[0, n) to path, opened with mode ("wb": the whole file, "ab":
 * appended): 0 or -1. */
static inline int put_file(const char *path, const char *mode, const void *p, size_t n) {
    FILE *f = fopen(path, mode);
    if (!f) return -1;
    size_t w = fwrite(p, 1, n, f);
    return fclose(f) || w != n ? -1 : 0;
}

static inline int spill(const char *path, const void *p, size_t n) { return put_file(path, "wb", p, n); }
static inline int append_to(const char *path, const void *p, size_t n) { return put_file(path, "ab", p, n); }

/* All events of a log (at most max kept); returns the count or < 0. */
static inline int read_all(const char *path, app_event **ev, int max) {
    evlog_reader *r;
    int rc = evlog_reader_open(path, &r);
    if (rc) return rc;
    int n = 0;
    app_event *e;
    while ((rc = evlog_reader_next(r, &e)) == 1) {
        if (n < max) ev[n++] = e;
        else app_event_free(e);
    }
    evlog_reader_close(r);
    if (rc < 0) {
        for (int i = 0; i < n; i++) app_event_free(ev[i]);
        return rc;
    }
    return n;
}

static inline void free_all(app_event **ev, int n) {
    for (int i = 0; i < n; i++) app_event_free(ev[i]);
}

#endif
