/*
 * uidag.h -- a job's stage DAG drawn as inline SVG (uidag.c).
 */
#ifndef EM_UIDAG_H
#define EM_UIDAG_H

#include "uipagekit.h"

/* Job j's stages as an SVG graph (<svg id="dag">): a node per stage
 * (<g class="stage" data-stage-id="N">, class "stage skipped" when the job
 * skipped it) linking to its latest attempt's page, an edge (class
 * "edge", data-from and data-to) from each parent to its child, columns
 * by depth.  0 or EM_ENOMEM. */
int ui_dag(uipage *u, const st_job *j);

#endif
