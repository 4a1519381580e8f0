/*
 * uipage_stages.h -- the stages page, /stages/ (uipage_stages.c).
 */
#ifndef EM_UIPAGE_STAGES_H
#define EM_UIPAGE_STAGES_H

#include "uipagekit.h"

/* Every stage attempt kept, in tables by state (stages-active,
 * stages-pending, stages-completed, stages-skipped, stages-failed),
 * newest first.  0 or EM_ENOMEM. */
int uipage_stages(uipage *u);

#endif
