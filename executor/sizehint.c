/*
 * sizehint.c -- per-shuffle hints of aggregation table sizes
 * (sizehint.h).  An entry packs the shuffle id (high 32 bits) and the
 * key count (low 32, saturated) into one word, read and written whole.
 */
#include <stdint.h>

#include "sizehint.h"

static uint64_t hints[SH_TABLES][SH_SLOTS];

size_t sh_get(unsigned shuffle_id, int table) {
    uint64_t e = __atomic_load_n(&hints[table][shuffle_id % SH_SLOTS], __ATOMIC_RELAXED);
    return e >> 32 == shuffle_id ? (size_t)(uint32_t)e : 0;
}

void sh_put(unsigned shuffle_id, int table, size_t keys) {
    uint64_t n = keys > UINT32_MAX ? UINT32_MAX : keys;
    __atomic_store_n(&hints[table][shuffle_id % SH_SLOTS], (uint64_t)shuffle_id << 32 | n, __ATOMIC_RELAXED);
}
