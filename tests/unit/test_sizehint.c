/*
 * test_sizehint.c -- per-shuffle table size hints: a shuffle gets what
 * its last table of that kind held, never another kind's, another
 * scope's (a second context's shuffle of the same id), nor another
 * shuffle's when two share an entry.
 */
#include <stdint.h>

#include "../test.h"
#include "sizehint.h"

TEST(sizehint_per_shuffle_scope_and_table) {
    const char *ctx1 = "/tmp/ember-hint-a", *ctx2 = "/tmp/ember-hint-b";
    CHECK_EQ_I64((int64_t)sh_get(ctx1, 0, SH_MAP8), 0);
    sh_put(ctx1, 0, SH_MAP8, 224000);
    sh_put(ctx1, 0, SH_REDUCE, 5);
    CHECK_EQ_I64((int64_t)sh_get(ctx1, 0, SH_MAP8), 224000);
    CHECK_EQ_I64((int64_t)sh_get(ctx1, 0, SH_MAP), 0);
    CHECK_EQ_I64((int64_t)sh_get(ctx1, 0, SH_REDUCE), 5);
    CHECK_EQ_I64((int64_t)sh_get(ctx2, 0, SH_MAP8), 0); /* another context's shuffle 0 */
    sh_put(ctx1, 1, SH_REDUCE8, (size_t)1 << 40);      /* saturates */
    CHECK_EQ_I64((int64_t)sh_get(ctx1, 1, SH_REDUCE8), (int64_t)UINT32_MAX);
    /* More shuffles than entries: some share one; each gets its own
     * count or none, never another's. */
    int none = 0, own = 0;
    for (unsigned id = 100; id < 100 + 3 * SH_SLOTS; id++) sh_put(ctx2, id, SH_MAP, 1000 + id);
    for (unsigned id = 100; id < 100 + 3 * SH_SLOTS; id++) {
        size_t v = sh_get(ctx2, id, SH_MAP);
        CHECK(v == 0 || v == 1000 + id);
        if (v) own++;
        else none++;
    }
    CHECK(own > 0 && own <= SH_SLOTS && none >= 2 * SH_SLOTS);
}
