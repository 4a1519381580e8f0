/*
 * needlib_extra.h -- the one function of libneedlib_extra.so, the shared
 * library tests/cluster/needlib.c needs besides libember.so.
 */
#ifndef NEEDLIB_EXTRA_H
#define NEEDLIB_EXTRA_H

/* How many partitions needlib's data gets (2). */
int needlib_extra_partitions(void);

#endif
