/*
 * emit.c -- the emitter user functions write to and the partition iterator
 * (emit.h).
 */
#include <string.h>

#include "emit.h"
#include "err.h"
#include "recfmt.h"

void emitter_init(em_emitter *e, enum emit_mode mode, epipe *to, size_t max_record) {
    memset(e, 0, sizeof *e);
    e->mode = mode;
    e->to = to;
    e->max_record = max_record;
}

static int too_big(size_t n, size_t max) {
    return em__seterr(EM_ETOOBIG, "a function emitted a record of %zu bytes, over ember.record.maxBytes (%zu)",
                      n, max);
}

int em_emit_rec(em_emitter *out, const em_rec *r) {
    em_rec o;
    if (!out || !r || (r->klen && !r->key) || (r->vlen && !r->val))
        return em__seterr(EM_EINVAL, "em_emit: NULL emitter or record");
    if (r->klen + r->vlen > out->max_record) return too_big(r->klen + r->vlen, out->max_record);
    out->count++;
    switch (out->mode) {
    case EMIT_PUSH:
        if (!r->key) {
            o = *r; /* never hand out a NULL value pointer */
            if (!o.val) o.val = "";
            return epipe_push(out->to, &o);
        }
        return epipe_push(out->to, r);
    case EMIT_REKEY:
        if (r->key) return em__seterr(EM_EUSER, "map_values functions emit plain records, not pairs");
        o.key = out->in->key;
        o.klen = out->in->klen;
        o.val = r->val ? r->val : "";
        o.vlen = r->vlen;
        return epipe_push(out->to, &o);
    case EMIT_KEYBY:
        if (r->key) return em__seterr(EM_EUSER, "key_by functions emit the key as a plain record");
        if (out->count > 1) return em__seterr(EM_EUSER, "key_by function emitted more than one key");
        o.key = r->val ? r->val : "";
        o.klen = r->vlen;
        o.val = out->in->val;
        o.vlen = out->in->vlen;
        return epipe_push(out->to, &o);
    case EMIT_VALUE:
        if (r->key) return em__seterr(EM_EUSER, "combine functions of *_by_key emit plain values, not pairs");
        if (out->count > 1) return em__seterr(EM_EUSER, "a combine function emitted more than one value");
        return ebuf_append(out->buf, r->val, r->vlen) ? EM_ENOMEM : 0;
    case EMIT_RECORD:
        if (out->count > 1) return em__seterr(EM_EUSER, "a combine function emitted more than one record");
        return rec_append(out->buf, r);
    case EMIT_WORD:
        if (r->key) return em__seterr(EM_EUSER, "combine functions of *_by_key emit plain values, not pairs");
        if (out->count > 1) return em__seterr(EM_EUSER, "a combine function emitted more than one value");
        out->wlen = r->vlen;
        out->word = 0;
        if (r->vlen <= 8) {
            if (r->vlen) memcpy(&out->word, r->val, r->vlen);
            return 0;
        }
        ebuf_reset(out->buf);
        return ebuf_append(out->buf, r->val, r->vlen) ? EM_ENOMEM : 0;
    }
    return EM_EINVAL;
}

/* A combiner's one value of at most 8 bytes into the emitter's word:
 * the per-record path of a user's combine function over a table of
 * words.  1 when taken, 0 when the general path must decide. */
static inline int emit_word(em_emitter *out, const void *data, size_t len) {
    if (!out || out->mode != EMIT_WORD || out->count || len > 8 || len > out->max_record) return 0;
    out->count = 1;
    out->wlen = len;
    out->word = 0;
    memcpy(&out->word, data, len);
    return 1;
}

int em_emit(em_emitter *out, const void *data, size_t len) {
    if (!data && len) return em__seterr(EM_EINVAL, "em_emit: NULL data with a length");
    if (emit_word(out, data ? data : "", len)) return 0;
    if (out && out->mode == EMIT_VALUE && len <= out->max_record && out->count == 0 && (data || !len)) {
        out->count = 1; /* a combiner's one value: straight into the buffer */
        return ebuf_append(out->buf, data, len) ? EM_ENOMEM : 0;
    }
    em_rec r = {NULL, 0, data, len};
    return em_emit_rec(out, &r);
}

int em_emit_pair(em_emitter *out, const void *key, size_t klen, const void *val, size_t vlen) {
    if (out && out->mode == EMIT_PUSH && key && val && klen + vlen <= out->max_record) {
        em_rec r = {key, klen, val, vlen};
        out->count++; /* the flat_map -> next pipe hot path, checked first */
        return epipe_push(out->to, &r);
    }
    if ((!key && klen) || (!val && vlen)) return em__seterr(EM_EINVAL, "em_emit_pair: NULL key or value with a length");
    em_rec r = {key ? key : "", klen, val ? val : "", vlen};
    return em_emit_rec(out, &r);
}

/* An 8-byte value that emit_word8 did not take: a combiner's into its
 * buffer with the length known here; any other, the general way.  Out of
 * line and given the value's bytes as a word, so that em_emit_i64's path
 * into a word needs no frame. */
static __attribute__((noinline)) int emit_value8(em_emitter *out, uint64_t w) {
    uint8_t b[8];
    memcpy(b, &w, 8);
    if (out && out->mode == EMIT_VALUE && out->count == 0 && 8 <= out->max_record) {
        out->count = 1;
        return ebuf_append(out->buf, b, 8) ? EM_ENOMEM : 0;
    }
    return em_emit(out, b, 8);
}

/* Encoded value w into the emitter's word (a combiner's result over a
 * table of words: a user's a + b), else emit_value8. */
static inline int emit_word8(em_emitter *out, uint64_t w) {
    if (out && out->mode == EMIT_WORD && !out->count && out->max_record >= 8) {
        out->count = 1;
        out->wlen = 8;
        out->word = w;
        return 0;
    }
    return emit_value8(out, w);
}

int em_emit_i64(em_emitter *out, int64_t v) {
    uint64_t w;
    em_i64_enc(v, &w);
    return emit_word8(out, w);
}

int em_emit_f64(em_emitter *out, double v) {
    uint64_t w;
    em_f64_enc(v, &w);
    return emit_word8(out, w);
}

int em_emit_pair_i64(em_emitter *out, const void *key, size_t klen, int64_t v) {
    uint8_t b[8];
    em_i64_enc(v, b);
    return em_emit_pair(out, key, klen, b, 8);
}

int em_iter_next(em_iter *it, em_rec *rec) {
    if (rec) memset(rec, 0, sizeof *rec); /* defined whatever happens */
    if (!it || !rec) return em__seterr(EM_EINVAL, "em_iter_next: NULL argument");
    if (it->p >= it->end) return 0;
    size_t n = rec_get(it->p, it->end, rec);
    if (!n) return em__seterr(EM_ECORRUPT, "partition iterator: malformed record");
    it->p += n;
    return 1;
}

int emit_call_comb(em_comb_fn fn, const void *arg, const em_rec *a, const em_rec *b, size_t max_record,
                   ebuf *out) {
    em_emitter e;
    emitter_init(&e, EMIT_RECORD, NULL, max_record);
    e.buf = out;
    int rc = fn(a, b, &e, arg);
    if (rc < 0) return rc;
    if (e.count != 1) return em__seterr(EM_EUSER, "a combine function emitted %lld records (must be 1)", (long long)e.count);
    return 0;
}

int cache_room(em_emitter *out, size_t len, size_t keep, uint8_t **at) {
    *at = NULL;
    if (!out || out->mode != EMIT_PUSH || !out->to) return 0;
    const epipe_head *h = (const epipe_head *)out->to;
    return h->room ? h->room(out->to, len, keep, at) : 0;
}
