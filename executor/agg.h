/*
 * agg.h -- the aggregation interface the shuffle code calls, so it never sees
 * user-function plumbing.  The task runner builds an agg_spec around the
 * user's functions.
 *
 * Each function writes exactly one value (the new combiner) into out, which
 * the caller has reset; values and combiners are plain byte strings passed as
 * plain em_recs (key == NULL).  They return 0 or a negative code, the message
 * already set (em_errmsg).
 */
#ifndef EM_AGG_H
#define EM_AGG_H

#include <string.h>

#include "buf.h"
#include "combiners.h"
#include "emit.h"
#include "ember.h"
#include "err.h"
#include "recfmt.h" /* rec_sink_fn */

enum { AGG_CREATE, AGG_MERGE_VALUE, AGG_MERGE_COMB };

/* A by-key operation's user functions over plain values (not whole
 * records): create, or merge_value(zero, v) when has_zero, or the value
 * itself, for a key's first value; merge_value and merge_comb for the
 * rest; each emits exactly one value, of at most max_record bytes. */
typedef struct agg_user {
    em_map_fn create;
    em_comb_fn merge_value, merge_comb;
    const void *arg;
    em_rec zero;
    int has_zero;
    size_t max_record;
} agg_user;

typedef struct agg_spec {
    int (*create)(void *ctx, const em_rec *v, ebuf *out);                        /* value -> combiner */
    int (*merge_value)(void *ctx, const em_rec *c, const em_rec *v, ebuf *out);   /* combiner + value */
    int (*merge_comb)(void *ctx, const em_rec *c1, const em_rec *c2, ebuf *out);  /* combiner + combiner */
    void *ctx;
    /* Set when both merges are one builtin of combiners.h (values and
     * combiners are then 8 bytes, merged in place with comb_apply8): the
     * op, and the combiner a key's first value starts from (create(v) is
     * op(zero, v) when has_zero, else v itself).  The functions above stay
     * valid and give the same results. */
    int builtin;
    int has_zero;
    uint8_t zero[8];
    /* create(v) is v itself (no create function and no zero): a record can
     * pass to the reduce side as a combiner unchanged. */
    int create_identity;
    /* The user's functions behind the three above when values are plain
     * (NULL: none, as for values that are whole records), which agg_step
     * calls itself with a word emitter: one indirect call a step, no
     * buffer, for a table whose combiners are words (agg8.h).  The calls
     * are most of what a user's combiner costs a record over a builtin's
     * add in place. */
    const agg_user *user;
} agg_spec;

/* What a user's function (named fn in the error) left in word emitter e
 * after returning rc: a result of at most 8 bytes into *w (the emitter
 * wrote a longer one into its buffer).  Its length, or a negative code. */
static inline int agg_word_result(int rc, const em_emitter *e, const char *fn, uint64_t *w) {
    if (rc < 0) return rc;
    if (e->count != 1) return em__seterr(EM_EUSER, "%s emitted %lld values (must be 1)", fn, (long long)e->count);
    if (e->wlen > (size_t)INT32_MAX) return em__seterr(EM_ETOOBIG, "a combiner of %zu bytes", e->wlen);
    if (e->wlen <= 8) *w = e->word;
    return (int)e->wlen;
}

/* Call a user's combine function fn(c, v) with an emitter whose target is
 * a word (emit.h's EMIT_WORD): a result of at most 8 bytes into *w, zero
 * padded, a longer one into out.  Its length, or a negative code. */
static inline int agg_call_word(em_comb_fn fn, const em_rec *c, const em_rec *v, const void *arg, size_t max_record,
                                uint64_t *w, ebuf *out) {
    em_emitter e = {EMIT_WORD, NULL, NULL, out, 0, max_record, 0, 0};
    return agg_word_result(fn(c, v, &e, arg), &e, "a combine function", w);
}

/* A value as its own combiner (create_identity), into *w or out: its
 * length, or a negative code. */
static inline int agg_value_word(const em_rec *v, uint64_t *w, ebuf *out) {
    if (v->vlen > (size_t)INT32_MAX) return em__seterr(EM_ETOOBIG, "a value of %zu bytes", v->vlen);
    if (v->vlen <= 8) {
        *w = 0;
        if (v->vlen) memcpy(w, v->val, v->vlen);
    } else {
        ebuf_reset(out);
        if (ebuf_append(out, v->val, v->vlen)) return EM_ENOMEM;
    }
    return (int)v->vlen;
}

/* A builtin spec's combiner for a key's first value v (8 bytes). */
static inline void agg_builtin_create(const agg_spec *a, uint8_t *c, const uint8_t *v) {
    if (a->has_zero) {
        memcpy(c, a->zero, 8);
        comb_apply8(a->builtin, c, v);
    } else {
        memcpy(c, v, 8);
    }
}

/* A user's create function with an emitter whose target is a word, as
 * agg_call_word. */
static inline int agg_create_word(const agg_user *u, const em_rec *v, uint64_t *w, ebuf *out) {
    em_emitter e = {EMIT_WORD, NULL, NULL, out, 0, u->max_record, 0, 0};
    return agg_word_result(u->create(v, &e, u->arg), &e, "create_combiner", w);
}

/* One step of a user's combiner for a table of words -- AGG_CREATE (c
 * unused), AGG_MERGE_VALUE or AGG_MERGE_COMB: g's user functions called
 * directly, else its buffer functions.  A result of at most 8 bytes goes
 * into *w, zero padded; a longer one replaces out's content.  Its length,
 * or a negative code. */
static inline __attribute__((always_inline)) int agg_step(const agg_spec *g, int step, const em_rec *c, const em_rec *v, uint64_t *w, ebuf *out) {
    const agg_user *u = g->user;
    if (u) {
        if (step != AGG_CREATE)
            return agg_call_word(step == AGG_MERGE_VALUE ? u->merge_value : u->merge_comb, c, v, u->arg,
                                 u->max_record, w, out);
        if (u->create) return agg_create_word(u, v, w, out);
        return u->has_zero ? agg_call_word(u->merge_value, &u->zero, v, u->arg, u->max_record, w, out)
                           : agg_value_word(v, w, out);
    }
    ebuf_reset(out);
    int rc = step == AGG_CREATE        ? g->create(g->ctx, v, out)
             : step == AGG_MERGE_VALUE ? g->merge_value(g->ctx, c, v, out)
                                       : g->merge_comb(g->ctx, c, v, out);
    if (rc < 0) return rc;
    if (out->len > (size_t)INT32_MAX) return em__seterr(EM_ETOOBIG, "a combiner of %zu bytes", out->len);
    if (out->len <= 8) {
        *w = 0;
        if (out->len) memcpy(w, out->p, out->len);
    }
    return (int)out->len;
}

#endif
