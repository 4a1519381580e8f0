/*
 * needlib.c -- a driver linked against libember.so and one more shared
 * library of its own (needlib_extra.c, libneedlib_extra.so), for
 * tests/cluster/scripts.sh: where the workers' dynamic loader cannot find
 * that library, the application fails at its first executor launch with a
 * message naming it.
 *
 *     needlib [MASTER]
 *
 * Counts a few parallelized numbers (the master from $EMBER_MASTER when
 * not given, as ember-submit sets it).  Prints "count N" and exits 0, or
 * the error and exits 1.
 */
#include <stdio.h>

#include "ember.h"
#include "needlib_extra.h"

int main(int argc, char **argv) {
    int64_t v[] = {1, 2, 3, 4, 5, 6, 7, 8}, n = 0;
    em_ctx *ctx = em_open(argc > 1 ? argv[1] : NULL, NULL);
    if (!ctx) {
        fprintf(stderr, "needlib: %s\n", em_errmsg());
        return 1;
    }
    em_rdd *r = em_parallelize_i64(ctx, v, sizeof v / sizeof v[0], needlib_extra_partitions());
    if (!r || em_count(r, &n)) {
        fprintf(stderr, "needlib: %s\n", em_errmsg());
        em_close(ctx);
        return 1;
    }
    printf("count %lld\n", (long long)n);
    em_close(ctx);
    return 0;
}
