/*
 * sizehint.c -- per-shuffle hints of aggregation table sizes
 * (sizehint.h).  An entry packs the shuffle's tag (high 32 bits) and the
 * key count (low 32, saturated) into one word, read and written whole.
 */
#include <stdint.h>
#include <string.h>

#include "recfmt.h"
#include "sizehint.h"

static uint64_t hints[SH_TABLES][SH_SLOTS];

/* The shuffle's tag: its id mixed into the scope's hash. */
static uint32_t tag_of(const char *scope, unsigned shuffle_id) {
    uint64_t h = em_hash(scope ? scope : "", scope ? strlen(scope) : 0);
    return (uint32_t)((h ^ shuffle_id) * 0x9e3779b97f4a7c15ULL >> 32);
}

size_t sh_get(const char *scope, unsigned shuffle_id, int table) {
    uint32_t tag = tag_of(scope, shuffle_id);
    uint64_t e = __atomic_load_n(&hints[table][tag % SH_SLOTS], __ATOMIC_RELAXED);
    return e >> 32 == tag ? (size_t)(uint32_t)e : 0;
}

void sh_put(const char *scope, unsigned shuffle_id, int table, size_t keys) {
    uint32_t tag = tag_of(scope, shuffle_id);
    uint64_t n = keys > UINT32_MAX ? UINT32_MAX : keys;
    __atomic_store_n(&hints[table][tag % SH_SLOTS], (uint64_t)tag << 32 | n, __ATOMIC_RELAXED);
}
