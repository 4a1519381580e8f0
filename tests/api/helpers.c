/*
 * helpers.c -- see helpers.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "helpers.h"

em_ctx *open_test_ctx(void) {
    em_ctx *c = em_open(test_master(), NULL);
    if (!c) fprintf(stderr, "  em_open(%s): %s\n", test_master(), em_errmsg());
    return c;
}

int64_t rec_i64(const em_rec *r) { return r->vlen == 8 ? em_i64_dec(r->val) : -999999; }

int fn_double_i64(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_i64(out, rec_i64(in) * 2);
}

int fn_even_i64(const em_rec *in, const void *arg) { return rec_i64(in) % 2 == 0; }

int fn_sum_i64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return em_emit_i64(out, em_i64_dec(a->val) + em_i64_dec(b->val));
}

int fn_split_words(const em_rec *in, em_emitter *out, const void *arg) {
    const char *p = in->val, *end = p + in->vlen;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        const char *w = p;
        while (p < end && *p != ' ' && *p != '\t') p++;
        if (p > w) {
            int rc = em_emit_pair_i64(out, w, (size_t)(p - w), 1);
            if (rc) return rc;
        }
    }
    return 0;
}

int fn_mod_key(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t m = *(const int64_t *)arg, v = rec_i64(in);
    uint8_t k[8], vv[8];
    em_i64_enc(v % m, k);
    em_i64_enc(v, vv);
    return em_emit_pair(out, k, 8, vv, 8);
}

int64_t batch_sum_i64(em_batch *b) {
    size_t pos = 0;
    em_rec r;
    int64_t s = 0;
    while (em_batch_next(b, &pos, &r) == 1) s += rec_i64(&r);
    return s;
}
