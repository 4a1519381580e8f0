/*
 * test_idmap.c -- the id -> pointer map of scheduler/idmap.c against a plain
 * array, through inserts, replacements and deletions in pseudo-random
 * order (deletions shift runs back, across the table's end too), and the
 * table shrinking as entries go.
 */
#include <stdlib.h>

#include "../test.h"
#include "ember.h"
#include "idmap.h"

TEST(idmap_matches_an_array) {
    enum { N = 5000 };
    static char cells[N];
    void *want[N] = {0};
    idmap m = {0};
    uint64_t x = 88172645463325252ull;
    for (int step = 0; step < 200000; step++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint32_t id = (uint32_t)(x % N);
        if ((x >> 32) % 3) {
            CHECK_OK(idmap_put(&m, id, &cells[id]));
            want[id] = &cells[id];
        } else {
            CHECK(idmap_del(&m, id) == want[id]);
            want[id] = NULL;
        }
        if (step % 10007 == 0)
            for (uint32_t k = 0; k < N; k++) CHECK(idmap_get(&m, k) == want[k]);
    }
    uint32_t n = 0;
    for (uint32_t k = 0; k < N; k++) {
        CHECK(idmap_get(&m, k) == want[k]);
        n += want[k] != NULL;
    }
    CHECK_EQ_I64(m.n, n);
    for (uint32_t k = 0; k < N; k++) idmap_del(&m, k);
    CHECK_EQ_I64(m.n, 0);
    CHECK(m.cap <= 16); /* shrunk back */
    CHECK(idmap_get(&m, 7) == NULL);
    idmap_free(&m, NULL);
}
