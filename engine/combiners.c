/*
 * combiners.c -- the builtin combine functions of ember.h, callable like
 * any user function, and their recognition by the shuffle (combiners.h).
 */
#include "combiners.h"
#include "err.h"

static const char *const names[] = {
    NULL, "em_sum_i64", "em_min_i64", "em_max_i64", "em_sum_f64", "em_min_f64", "em_max_f64",
};

const char *comb_builtin_name(int op) {
    return op > CB_NONE && op <= CB_MAX_F64 ? names[op] : "a combine function";
}

int comb_bad_len(int op, size_t vlen) {
    return em__seterr(EM_EINVAL, "%s: a value of %zu bytes (it combines 8-byte encodings: em_%s_enc)",
                      comb_builtin_name(op), vlen, op >= CB_SUM_F64 ? "f64" : "i64");
}

/* One builtin called as a function: both values checked, one emitted. */
static int call(int op, const em_rec *a, const em_rec *b, em_emitter *out) {
    if (a->vlen != 8) return comb_bad_len(op, a->vlen);
    if (b->vlen != 8) return comb_bad_len(op, b->vlen);
    uint8_t c[8];
    memcpy(c, a->val, 8);
    comb_apply8(op, c, b->val);
    return em_emit(out, c, 8);
}

int em_sum_i64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return call(CB_SUM_I64, a, b, out);
}
int em_min_i64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return call(CB_MIN_I64, a, b, out);
}
int em_max_i64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return call(CB_MAX_I64, a, b, out);
}
int em_sum_f64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return call(CB_SUM_F64, a, b, out);
}
int em_min_f64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return call(CB_MIN_F64, a, b, out);
}
int em_max_f64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return call(CB_MAX_F64, a, b, out);
}

int comb_builtin_of(em_comb_fn fn) {
    if (fn == em_sum_i64) return CB_SUM_I64;
    if (fn == em_min_i64) return CB_MIN_I64;
    if (fn == em_max_i64) return CB_MAX_I64;
    if (fn == em_sum_f64) return CB_SUM_F64;
    if (fn == em_min_f64) return CB_MIN_F64;
    if (fn == em_max_f64) return CB_MAX_F64;
    return CB_NONE;
}
