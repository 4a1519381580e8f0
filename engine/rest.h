/*
 * rest.h -- Spark's REST API, /api/v1, over status stores: the same paths,
 * query parameters, JSON field names (camelCase) and shapes as Spark 3's,
 * times written as Spark writes them ("YYYY-MM-DDThh:mm:ss.mmmGMT"), so
 * that scripts written against Spark's API work against ember's.
 *
 * Paths, under /api/v1 ([app] is an application's id, optionally followed
 * by /[attempt-id]):
 *   /version                                   {"spark": version}
 *   /applications[?status=completed|running&limit=&minDate=&maxDate=
 *                  &minEndDate=&maxEndDate=]
 *   /applications/[app]
 *   /applications/[app]/jobs[?status=running|succeeded|failed|unknown]
 *   /applications/[app]/jobs/[job-id]
 *   /applications/[app]/stages[?status=active|complete|pending|failed|
 *                  skipped&details=true|false]
 *   /applications/[app]/stages/[stage-id]              every attempt
 *   /applications/[app]/stages/[stage-id]/[attempt]
 *   /applications/[app]/stages/[stage-id]/[attempt]/taskSummary
 *                  [?quantiles=0.05,0.25,0.5,0.75,0.95]
 *   /applications/[app]/stages/[stage-id]/[attempt]/taskList
 *                  [?offset=0&length=20&sortBy=ID|runtime|-runtime
 *                   &status=running|success|failed|killed]
 *   /applications/[app]/executors              the active ones
 *   /applications/[app]/allexecutors           active and removed
 *   /applications/[app]/storage/rdd            cached RDDs
 *   /applications/[app]/storage/rdd/[rdd-id]
 *   /applications/[app]/environment            secrets redacted
 * An unknown application, id or path is answered 404 with a plain message
 * as Spark's ("unknown job: 7"); a bad query parameter 400 naming it.
 * Query parameters are split on '&' and percent-decoded ('+' is a space).
 *
 * The API serves several applications: a provider lists them and lends
 * their stores, one per request.  The driver's provider has its one store
 * (rest_single); the history server's has many.
 */
#ifndef EM_REST_H
#define EM_REST_H

#include <stdint.h>

#include "buf.h"
#include "status.h"

/* One application attempt as /applications lists it. */
typedef struct rest_app {
    const char *id, *name, *attempt_id, *user, *version; /* NULL: absent */
    int64_t start_ms, end_ms; /* end_ms 0: running */
    int64_t last_updated_ms;  /* 0: end_ms, else start_ms */
} rest_app;

typedef struct rest_provider {
    void *ud;
    /* Call fn(arg, a) for each application attempt, the newest first, the
     * attempts of one application one after another.  fn only formats. */
    void (*each)(void *ud, void (*fn)(void *arg, const rest_app *a), void *arg);
    /* The store of application app_id (attempt_id NULL: its only or latest
     * attempt), lent until release; NULL when there is none. */
    status_store *(*acquire)(void *ud, const char *app_id, const char *attempt_id);
    /* Give back a store acquire lent; NULL for a provider whose stores need
     * no giving back (rest_single). */
    void (*release)(void *ud, status_store *st);
} rest_provider;

/* The provider of a driver: st's one application.  p borrows st, which
 * must outlive it. */
void rest_single(rest_provider *p, status_store *st);

/* Answer a GET of path (starting "/api/v1") with query (raw, "" for
 * none), as an httpd handler would: *status, *ctype (static) and the body
 * appended to body.  0, or EM_ENOMEM (body then holds part of an answer:
 * the caller answers 500). */
int rest_answer(const rest_provider *p, const char *path, const char *query, int *status, const char **ctype,
                ebuf *body);

/* Spark's time format for a time in epoch milliseconds:
 * "YYYY-MM-DDThh:mm:ss.mmmGMT" (out: at least 32 bytes). */
void rest_time(int64_t ms, char *out);

#endif
