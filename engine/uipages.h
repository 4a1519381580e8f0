/*
 * uipages.h -- the UI's HTML pages, rendered on the server from the status
 * stores a provider (rest.h) lends: no script or stylesheet from
 * elsewhere, so they work offline.  Spark's pages at Spark's paths, under
 * an application's base: "" for a driver's one application, and
 * "/history/<app-id>[/<attempt-id>]" on the history server.
 *
 *   /jobs/                        active, completed and failed jobs
 *   /jobs/job/?id=N               a job: its stages and their DAG (SVG)
 *   /stages/                      active, pending, completed, skipped and
 *                                 failed stage attempts
 *   /stages/stage/?id=N&attempt=A a stage attempt: summary metrics,
 *                                 per executor, a task timeline and the
 *                                 task table (&task.offset=&task.length=
 *                                 &task.sort=index|id|duration|launch
 *                                 &task.desc=true|false)
 *   /storage/                     cached RDDs
 *   /environment/                 runtime, ember and system properties
 *   /executors/                   executors, active and removed
 * An unknown application, job or stage is answered 404 with a page saying
 * so; a bad query parameter 400 naming it.
 */
#ifndef EM_UIPAGES_H
#define EM_UIPAGES_H

#include "buf.h"
#include "rest.h"

/* The page at page (the path below the application's base: "/jobs/",
 * "/stages/stage/", ...; "" or "/" is the jobs page) with query (raw, ""
 * for none) of application app_id (attempt_id NULL: its latest attempt)
 * of p; links start with base.  *status 200, 404 or 400 and the HTML in
 * body.  0, or EM_ENOMEM (the caller answers 500). */
int uipage_app(const rest_provider *p, const char *app_id, const char *attempt_id, const char *base,
               const char *page, const char *query, int *status, ebuf *body);
/* The history server's list of p's applications (its "/"), each linking
 * to /history/<app-id>[/<attempt-id>]/jobs/.  0, or EM_ENOMEM. */
int uipage_apps(const rest_provider *p, int *status, ebuf *body);
/* Route a GET of path: with history, "/" lists the applications and
 * "/history/<app-id>[/<attempt-id>]/<page>" is a page of one; without,
 * path is a page of p's first application (the driver's only one).
 * Anything else is answered 404.  0, or EM_ENOMEM. */
int uipage_route(const rest_provider *p, int history, const char *path, const char *query, int *status,
                 ebuf *body);

#endif
