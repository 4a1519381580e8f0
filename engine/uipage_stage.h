/*
 * uipage_stage.h -- a stage attempt's page, /stages/stage/ (uipage_stage.c).
 */
#ifndef EM_UIPAGE_STAGE_H
#define EM_UIPAGE_STAGE_H

#include "uipagekit.h"

/* The page of the stage attempt ?id=N&attempt=A (attempt 0 by default):
 * its figures, timeline, summary metrics, per-executor totals and one
 * page of its tasks (&task.offset= from 0, &task.length= 1 to 100000,
 * default 100, &task.sort=index|id|duration|launch, &task.desc=true|false).
 * An unknown stage attempt is a 404 page, a bad parameter a 400 one.
 * 0 or EM_ENOMEM. */
int uipage_stage(uipage *u);

#endif
