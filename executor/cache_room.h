/*
 * cache_room.h -- laying a record out where the cache keeps it, so that
 * keeping it copies nothing.
 *
 * A task that caches its output passes every record through the cache tee
 * (ops.c), which appends the record's encoding to one big buffer: the
 * partition as the block store will hold it.  A function that makes big
 * records -- mllib's blocks, megabytes each -- would otherwise build each in
 * a buffer of its own and have the tee copy it, a pass over the whole data
 * set, and fault in that buffer's pages as well as the cache's.  Here it
 * may build the record at the end of the tee's buffer itself, where the tee
 * would have copied it; the tee then sees the value already in place and
 * only writes its length in front.
 *
 * Internal to ember (mllib uses it).
 */
#ifndef EM_CACHE_ROOM_H
#define EM_CACHE_ROOM_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"

/* If out pushes straight into a cache tee (the emitter of a map or flat_map
 * whose RDD is cached), sets *at to the address where the tee will encode
 * the next record it keeps, with room for len bytes from there.  The first
 * keep bytes at that address are carried over from the previous call's
 * room (the room may move as the buffer grows: use the new address).  A
 * plain record emitted next through out whose encoding -- tag 0, varint
 * length, value, as recfmt.h's rec_put places them -- the caller wrote at
 * that address, its value at *at + 1 + varint_len(vlen), is kept without
 * copying its value.  The address is valid until the next record is
 * emitted through out or cache_room is called again.  *at is NULL when out
 * feeds no cache tee directly: the caller lays its record out elsewhere and
 * emits it as usual.  Returns 0, or EM_ENOMEM (message set; *at NULL, the
 * records kept before unchanged). */
int cache_room(em_emitter *out, size_t len, size_t keep, uint8_t **at);
/* How many records the cache tees of this process kept in place, without
 * copying them: for tests and benchmarks. */
uint64_t cache_room_kept(void);

#endif
