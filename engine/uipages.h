/*
 * uipages.h -- the driver UI's HTML pages, rendered on the server from a
 * status store with the pages' kit (html.h): nothing is fetched from
 * elsewhere, so they work offline.
 */
#ifndef EM_UIPAGES_H
#define EM_UIPAGES_H

#include "buf.h"
#include "rest.h"

/* The jobs page of p's first application (its "/"): a table of its jobs,
 * newest first, with status, duration, stages and tasks done of total.
 * *status 200, or 404 when p has no application yet.  0, or EM_ENOMEM. */
int uipage_jobs(const rest_provider *p, int *status, ebuf *body);

#endif
