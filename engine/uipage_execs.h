/*
 * uipage_execs.h -- the executors page, /executors/ (uipage_execs.c).
 */
#ifndef EM_UIPAGE_EXECS_H
#define EM_UIPAGE_EXECS_H

#include "uipagekit.h"

/* The executors' totals (table executors-summary) and each executor
 * (table executors).  0 or EM_ENOMEM. */
int uipage_executors(uipage *u);

#endif
