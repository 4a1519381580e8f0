/*
 * uipagekit.h -- what the UI's page files share (internal to uipages.c,
 * uipage_*.c, uidag.c and uitimeline.c; defined in uipagekit.c): the page
 * being answered, with its application's store read-locked while the
 * page renders, and the pieces several pages write (the frame with its
 * navigation bar, error pages, query integers, cells, a table of stage
 * attempts).
 *
 * Every writer returns 0, or EM_ENOMEM (message set) when the body cannot
 * grow; the router then answers 500.  A page that finds its request bad
 * (an unknown id: 404, a bad query: 400) replaces what it wrote by an
 * error page (up_error) and returns 0.
 */
#ifndef EM_UIPAGEKIT_H
#define EM_UIPAGEKIT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "status.h"

typedef struct uipage {
    status_store *st;     /* read-locked while the page renders */
    const status_app *app;
    const char *base;     /* the links' prefix: "" or "/history/ID[/ATTEMPT]" */
    const char *query;    /* the raw query, "" for none */
    size_t qlen;
    int64_t now;          /* running tasks' durations end here */
    int status;           /* the answer's status: 200 unless a page says */
    size_t start;         /* the body's length before the page */
    ebuf *b;
} uipage;

/* The navigation bar's tabs. */
enum { UP_TAB_JOBS, UP_TAB_STAGES, UP_TAB_STORAGE, UP_TAB_ENV, UP_TAB_EXECS, UP_NTABS };

/* The page's start (title escaped, tab marked) and end. */
int up_begin(uipage *u, const char *title, int tab);
int up_end(uipage *u);
/* base + the printf-formatted rest into out (cap bytes); out. */
char *up_href(const uipage *u, char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Replace what the page wrote by an error page: status (404, 400) and the
 * formatted message (escaped). */
int up_error(uipage *u, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Query parameter name as an integer in [min, max]: 1 with *out set, 0
 * when absent (*out untouched), -1 when bad (a 400 page written). */
int up_qint(uipage *u, const char *name, int64_t min, int64_t max, int64_t *out);
/* The latest attempt of stage id, or NULL. */
st_stage *up_latest_attempt(const status_store *st, int id);
/* A duration cell (sorting by ms), a size cell (sorting by bytes; empty
 * for 0) and a local time cell (sorting by epoch ms). */
int up_cell_dur(ebuf *b, int64_t ms);
int up_cell_bytes(ebuf *b, int64_t bytes);
int up_cell_time(ebuf *b, int64_t epoch_ms);
/* An item of a page's list of facts: <li><b>k:</b> v</li>, escaped. */
int up_fact(ebuf *b, const char *k, const char *v);
/* A stage attempt's duration: submitted to completed, or to now. */
int64_t up_stage_duration(const uipage *u, const st_stage *s);

/* A table (id) of the stage attempts v[0, n): id, description, submitted,
 * duration, tasks, input, output, shuffle read and write, and with
 * with_failure the failure reason. */
int up_stage_table(uipage *u, const char *id, st_stage *const *v, int n, int with_failure);

#endif
