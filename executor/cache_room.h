/*
 * cache_room.h -- the count of records the cache tees kept in place: laid
 * out by their function where the tee keeps them (cache_room, emit.h), so
 * keeping them copied nothing.
 */
#ifndef EM_CACHE_ROOM_H
#define EM_CACHE_ROOM_H

#include <stdint.h>

/* How many records the cache tees of this process kept in place, without
 * copying them: for tests and benchmarks. */
uint64_t cache_room_kept(void);

#endif
