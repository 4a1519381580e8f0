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
    em_emitter e = {a->rec_values ? EMIT_RECORD : EMIT_VALUE, NULL, NULL, out, 0, a->u.max_record, 0, 0};
    em_rec dx, dy;
    if (a->rec_values) { /* values are whole encoded records: decode them */
        if (rec_get(x->val, (const uint8_t *)x->val + x->vlen, &dx) != x->vlen ||
            rec_get(y->val, (const uint8_t *)y->val + y->vlen, &dy) != y->vlen)
            return em__seterr(EM_ECORRUPT, "aggregate: malformed partial record");
        x = &dx;
        y = &dy;
    }
    int rc = fn(x, y, &e, a->u.arg);
    if (rc < 0) return rc;
    if (e.count != 1) return em__seterr(EM_EUSER, "a combine function emitted %lld values (must be 1)", (long long)e.count);
    return 0;
}

static int ag_create(void *ctx, const em_rec *v, ebuf *out) {
    agg_run *a = ctx;
    if (a->u.create) {
        em_emitter e;
        emitter_init(&e, EMIT_VALUE, NULL, a->u.max_record);
        e.buf = out;
        int rc = a->u.create(v, &e, a->u.arg);
        if (rc < 0) return rc;
        if (e.count != 1) return em__seterr(EM_EUSER, "create_combiner emitted %lld values (must be 1)", (long long)e.count);
        return 0;
    }
    if (a->u.has_zero) return call_comb(a, a->u.merge_value, &a->u.zero, v, out);
    return ebuf_append(out, v->val, v->vlen) ? EM_ENOMEM : 0;
}

static int ag_merge_value(void *ctx, const em_rec *c, const em_rec *v, ebuf *out) {
    agg_run *a = ctx;
    return call_comb(a, a->u.merge_value, c, v, out);
}

static int ag_merge_comb(void *ctx, const em_rec *c1, const em_rec *c2, ebuf *out) {
    agg_run *a = ctx;
    return call_comb(a, a->u.merge_comb, c1, c2, out);
}

int agg_run_init(agg_run *a, const aggdesc *d, size_t max_record, agg_spec *spec) {
    memset(a, 0, sizeof *a);
    agg_user *u = &a->u;
    u->max_record = max_record;
    if (d->create.kind && !(u->create = (em_map_fn)fnref_resolve(&d->create))) return EM_EFNREF;
    if (!(u->merge_value = (em_comb_fn)fnref_resolve(&d->merge_value))) return EM_EFNREF;
    if (!(u->merge_comb = (em_comb_fn)fnref_resolve(&d->merge_comb))) return EM_EFNREF;
    u->arg = d->arg.len ? d->arg.p : NULL;
    u->has_zero = d->has_zero;
    u->zero.val = d->zero.p ? d->zero.p : (const uint8_t *)"";
    u->zero.vlen = d->zero.len;
    a->rec_values = d->rec_values;
    memset(spec, 0, sizeof *spec);
    spec->create = ag_create;
    spec->merge_value = ag_merge_value;
    spec->merge_comb = ag_merge_comb;
    spec->user = a->rec_values ? NULL : u;
    spec->ctx = a;
    spec->create_identity = !u->create && !u->has_zero;
    int op = comb_builtin_of(u->merge_value);
    if (op && comb_builtin_of(u->merge_comb) == op && !u->create && !a->rec_values &&
        (!u->has_zero || u->zero.vlen == 8)) {
        spec->builtin = op;
        spec->has_zero = u->has_zero;
        if (u->has_zero) memcpy(spec->zero, u->zero.val, 8);
    }
    return 0;
}
