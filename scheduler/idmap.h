/*
 * idmap.h -- a map from 64-bit ids (shuffle ids, task ids) to pointers: open
 * addressing with linear probing and backward-shift deletion, so its size
 * follows the entries alive, not the largest id ever used.  A long-lived
 * driver makes shuffle after shuffle and drops them: an array indexed by id
 * would grow with every one.  Not thread-safe.
 */
#ifndef EM_IDMAP_H
#define EM_IDMAP_H

#include <stdint.h>

typedef struct idmap {
    uint64_t *keys;
    void **vals; /* NULL: empty slot */
    uint32_t cap; /* a power of two, or 0 */
    uint32_t n;
} idmap;

void *idmap_get(const idmap *m, uint64_t id);
/* Insert or replace (p not NULL).  0, or -1 when out of memory. */
int idmap_put(idmap *m, uint64_t id, void *p);
/* Remove id; returns what it mapped to (NULL if absent). */
void *idmap_del(idmap *m, uint64_t id);
/* Call fn on every value (in no order); fn must not change the map. */
void idmap_foreach(const idmap *m, void (*fn)(void *val, void *c), void *c);
/* Call fn on every value (in no order), then free the table. */
void idmap_free(idmap *m, void (*fn)(void *));

/* For records in an array: id -> its index i (held as i + 1, never NULL).
 * 0, or -1 when out of memory; idmap_index is -1 for an id absent. */
static inline int idmap_put_index(idmap *m, uint64_t id, int i) {
    return idmap_put(m, id, (void *)((uintptr_t)(unsigned)i + 1));
}
static inline int idmap_index(const idmap *m, uint64_t id) { return (int)((uintptr_t)idmap_get(m, id)) - 1; }

#endif
