/*
 * uipage_storage.h -- the storage page, /storage/, and a cached RDD's
 * page, /storage/rdd/?id=N (uipage_storage.c).
 */
#ifndef EM_UIPAGE_STORAGE_H
#define EM_UIPAGE_STORAGE_H

#include "uipagekit.h"

/* The cached RDDs (table storage-rdds).  0 or EM_ENOMEM. */
int uipage_storage(uipage *u);
/* One cached RDD: its facts, its data distribution over executors (table
 * rdd-distribution) and its cached partitions (table rdd-partitions).
 * 0 or EM_ENOMEM. */
int uipage_rdd(uipage *u);

#endif
