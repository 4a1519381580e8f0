/*
 * uipage_env.h -- the environment page, /environment/ (uipage_env.c).
 */
#ifndef EM_UIPAGE_ENV_H
#define EM_UIPAGE_ENV_H

#include "uipagekit.h"

/* The environment's sections (tables env-runtime, env-spark, env-hadoop,
 * env-system, env-classpath), secrets redacted.  0 or EM_ENOMEM. */
int uipage_environment(uipage *u);

#endif
