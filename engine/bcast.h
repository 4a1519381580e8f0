/*
 * bcast.h -- broadcast values: the process-wide table behind em_broadcast,
 * em_bcast_value and em_bcast_destroy.
 *
 * A handle is a plain id so that user functions can capture it in their
 * argument blobs.  Broadcast blobs live in a process table that local
 * executor threads read directly; an executor process fills its own table
 * from the driver on first use and keeps each value until the driver
 * drops it.
 */
#ifndef EM_BCAST_H
#define EM_BCAST_H

#include <stddef.h>
#include <stdint.h>

/* Register a broadcast under a given id in namespace (context) `ns`; the
 * table keeps a copy of the `len` bytes at `data`.  Returns 0, or
 * EM_ENOMEM with the table unchanged. */
int bcast_put(uint64_t ns, uint64_t id, const void *data, size_t len);
/* Executor processes: how em_bcast_value gets a broadcast this process
 * does not hold yet (from the driver, once; then it is kept until
 * bcast_drop).  fetch returns 0 with *data (malloc'd, taken) and *len,
 * EM_ENOENT for a broadcast the driver no longer has, or < 0. */
void bcast_set_fetch(int (*fetch)(uint64_t id, void **data, size_t *len));
/* Forget the broadcast `id` in every namespace (an executor told by the
 * driver that it is destroyed). */
void bcast_drop(uint64_t id);
/* Forget every broadcast of a namespace (a context being closed). */
void bcast_drop_ns(uint64_t ns);

#endif
