/*
 * agg_run.c -- the adapters that let the shuffle code (agg.h's callbacks)
 * call a by-key operation's user functions: create, merge a value, merge
 * two combiners, each through an emitter that takes their one value.
 */
#include <string.h>

#include "combiners.h"
#include "err.h"
#include "fnref.h"
#include "pipe.h"
#include "recfmt.h"

static int call_comb(agg_run *a, em_comb_fn fn, const em_rec *x, const em_rec *y, ebuf *out) {
    em_emitter e = {a->rec_values ? EMIT_RECORD : EMIT_VALUE, NULL, NULL, out, 0, a->max_record, 0, 0};
    em_rec dx, dy;
    if (a->rec_values) { /* values are whole encoded records: decode them */
        if (rec_get(x->val, (const uint8_t *)x->val + x->vlen, &dx) != x->vlen ||
            rec_get(y->val, (const uint8_t *)y->val + y->vlen, &dy) != y->vlen)
            return em__seterr(EM_ECORRUPT, "aggregate: malformed partial record");
        x = &dx;
        y = &dy;
    }
    int rc = fn(x, y, &e, a->arg);
    if (rc < 0) return rc;
    if (e.count != 1) return em__seterr(EM_EUSER, "a combine function emitted %lld values (must be 1)", (long long)e.count);
    return 0;
}

static int ag_create(void *ctx, const em_rec *v, ebuf *out) {
    agg_run *a = ctx;
    if (a->create) {
        em_emitter e;
        emitter_init(&e, EMIT_VALUE, NULL, a->max_record);
        e.buf = out;
        int rc = a->create(v, &e, a->arg);
        if (rc < 0) return rc;
        if (e.count != 1) return em__seterr(EM_EUSER, "create_combiner emitted %lld values (must be 1)", (long long)e.count);
        return 0;
    }
    if (a->has_zero) return call_comb(a, a->merge_value, &a->zero, v, out);
    return ebuf_append(out, v->val, v->vlen) ? EM_ENOMEM : 0;
}

static int ag_merge_value(void *ctx, const em_rec *c, const em_rec *v, ebuf *out) {
    agg_run *a = ctx;
    return call_comb(a, a->merge_value, c, v, out);
}

static int ag_merge_comb(void *ctx, const em_rec *c1, const em_rec *c2, ebuf *out) {
    agg_run *a = ctx;
    return call_comb(a, a->merge_comb, c1, c2, out);
}

/* agg_spec's step_word: the user's function called with an emitter whose
 * target is a word (emit.h's EMIT_WORD).  Values are plain values here
 * (no rec_values: then the spec has no step_word). */
static int ag_step_word(void *ctx, int step, const em_rec *c, const em_rec *v, uint64_t *w, ebuf *out) {
    agg_run *a = ctx;
    if (step != AGG_CREATE)
        return agg_call_word(step == AGG_MERGE_VALUE ? a->merge_value : a->merge_comb, c, v, a->arg, a->max_record, w,
                             out);
    if (!a->create) /* merge_value(zero, v), or the value itself */
        return a->has_zero ? agg_call_word(a->merge_value, &a->zero, v, a->arg, a->max_record, w, out)
                           : agg_value_word(v, w, out);
    em_emitter e = {EMIT_WORD, NULL, NULL, out, 0, a->max_record, 0, 0};
    int rc = a->create(v, &e, a->arg);
    if (rc < 0) return rc;
    if (e.count != 1) return em__seterr(EM_EUSER, "create_combiner emitted %lld values (must be 1)", (long long)e.count);
    if (e.wlen > (size_t)INT32_MAX) return em__seterr(EM_ETOOBIG, "a combiner of %zu bytes", e.wlen);
    if (e.wlen <= 8) *w = e.word;
    return (int)e.wlen;
}

int agg_run_init(agg_run *a, const aggdesc *d, size_t max_record, agg_spec *spec) {
    memset(a, 0, sizeof *a);
    a->max_record = max_record;
    if (d->create.kind && !(a->create = (em_map_fn)fnref_resolve(&d->create))) return EM_EFNREF;
    if (!(a->merge_value = (em_comb_fn)fnref_resolve(&d->merge_value))) return EM_EFNREF;
    if (!(a->merge_comb = (em_comb_fn)fnref_resolve(&d->merge_comb))) return EM_EFNREF;
    a->arg = d->arg.len ? d->arg.p : NULL;
    a->has_zero = d->has_zero;
    a->rec_values = d->rec_values;
    a->zero.val = d->zero.p ? d->zero.p : (const uint8_t *)"";
    a->zero.vlen = d->zero.len;
    memset(spec, 0, sizeof *spec);
    spec->create = ag_create;
    spec->merge_value = ag_merge_value;
    spec->merge_comb = ag_merge_comb;
    spec->step_word = a->rec_values ? NULL : ag_step_word;
    spec->ctx = a;
    spec->create_identity = !a->create && !a->has_zero;
    if (spec->create_identity && a->merge_value == a->merge_comb && !a->rec_values) {
        spec->merge_fn = a->merge_value;
        spec->merge_arg = a->arg;
        spec->max_record = max_record;
    }
    int op = comb_builtin_of(a->merge_value);
    if (op && comb_builtin_of(a->merge_comb) == op && !a->create && !a->rec_values &&
        (!a->has_zero || a->zero.vlen == 8)) {
        spec->builtin = op;
        spec->has_zero = a->has_zero;
        if (a->has_zero) memcpy(spec->zero, a->zero.val, 8);
    }
    return 0;
}
