/*
 * fuzz_hll.c -- count_approx_distinct's sketches (engine/hll.h), as they
 * come back from tasks: the input's first byte says where it splits into
 * two sketches.
 *
 * Properties:
 *   - hll_sketch_check accepts only well-formed sketches, whose estimate is
 *     finite and not negative (a sparse one: its number of hashes);
 *   - merging two accepted sketches of one precision gives an accepted
 *     sketch of that precision, and merging a sketch with itself changes no
 *     dense estimate (nor raises a sparse one); merging anything else is
 *     refused.
 */
#include <math.h>
#include <string.h>

#include "buf.h"
#include "fuzz.h"
#include "hll.h"

static void check_one(const uint8_t *s, size_t n, int p) {
    double e = hll_sketch_estimate(s, n);
    FZ_CHECK(isfinite(e) && e >= 0, "estimate %g", e);
    if (s[0] == HLL_SPARSE) FZ_CHECK(e == (double)((n - 2) / 8), "sparse estimate %g", e);
    ebuf m = EBUF_INIT;
    FZ_CHECK(hll_sketch_merge(s, n, s, n, &m) == 0, "self merge refused");
    int pm;
    FZ_CHECK(hll_sketch_check(m.p, m.len, &pm) && pm == p, "self merge malformed");
    double em = hll_sketch_estimate(m.p, m.len);
    /* A sparse sketch with repeated hashes (never made by a task, but
     * well formed) loses them in a union: only ever fewer. */
    FZ_CHECK(s[0] == HLL_SPARSE ? em <= e : em == e, "self merge estimate %g, was %g", em, e);
    ebuf_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t cut = 1 + (size - 1) * data[0] / 256;
    const uint8_t *a = data + 1, *b = data + cut;
    size_t na = cut - 1, nb = size - cut;
    int pa = 0, pb = 0;
    int oka = hll_sketch_check(a, na, &pa), okb = hll_sketch_check(b, nb, &pb);
    if (oka) check_one(a, na, pa);
    if (okb) check_one(b, nb, pb);
    ebuf m = EBUF_INIT;
    int rc = hll_sketch_merge(a, na, b, nb, &m);
    if (!oka || !okb || pa != pb) {
        FZ_CHECK(rc != 0, "a malformed or mismatched pair merged");
    } else {
        int pm;
        FZ_CHECK(rc == 0 && hll_sketch_check(m.p, m.len, &pm) && pm == pa, "merge malformed");
    }
    ebuf_free(&m);
    return 0;
}
