/*
 * test_sizehint.c -- per-shuffle table size hints: a shuffle gets what
 * its last table of that kind held, never another shuffle's (two ids
 * sharing an entry), nor another kind of table's.
 */
#include "../test.h"
#include "sizehint.h"

TEST(sizehint_per_shuffle_and_table) {
    unsigned a = 1000003, b = a + SH_SLOTS; /* the same entry */
    CHECK_EQ_I64((int64_t)sh_get(a, SH_MAP8), 0);
    sh_put(a, SH_MAP8, 224000);
    sh_put(a, SH_REDUCE, 5);
    CHECK_EQ_I64((int64_t)sh_get(a, SH_MAP8), 224000);
    CHECK_EQ_I64((int64_t)sh_get(a, SH_MAP), 0);
    CHECK_EQ_I64((int64_t)sh_get(a, SH_REDUCE), 5);
    CHECK_EQ_I64((int64_t)sh_get(b, SH_MAP8), 0);
    sh_put(b, SH_MAP8, 7);
    CHECK_EQ_I64((int64_t)sh_get(b, SH_MAP8), 7);
    CHECK_EQ_I64((int64_t)sh_get(a, SH_MAP8), 0); /* taken over: no hint */
    sh_put(a, SH_MAP, (size_t)1 << 40);          /* saturates */
    CHECK_EQ_I64((int64_t)sh_get(a, SH_MAP), (int64_t)UINT32_MAX);
}
