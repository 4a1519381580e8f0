/*
 * uipage_storage.h -- the storage page, /storage/ (uipage_storage.c).
 */
#ifndef EM_UIPAGE_STORAGE_H
#define EM_UIPAGE_STORAGE_H

#include "uipagekit.h"

/* The cached RDDs (table storage-rdds).  0 or EM_ENOMEM. */
int uipage_storage(uipage *u);

#endif
