/*
 * needlib_extra.c -- libneedlib_extra.so (see needlib_extra.h).
 */
#include "needlib_extra.h"

int needlib_extra_partitions(void) { return 2; }
