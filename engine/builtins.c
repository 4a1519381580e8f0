/*
 * builtins.c -- ember's own task functions (see builtins.h) and the table
 * that names them on the wire.  They use only the public API, like user
 * functions, plus the value encodings of recfmt.h.
 */
#include <string.h>

#include "builtins.h"
#include "err.h"
#include "fnref.h"
#include "numeric.h"
#include "recfmt.h"

/* Scratch space for building one output value: on the stack when small
 * (the common case, no allocation per record), else on the heap. */
typedef struct scratch {
    ebuf b;
    uint8_t small[4096];
} scratch;

static uint8_t *scratch_get(scratch *s, size_t n) {
    if (n <= sizeof s->small) return s->small;
    ebuf_reset(&s->b);
    return ebuf_reserve(&s->b, n) ? NULL : s->b.p;
}

int bi_keys(const em_rec *in, em_emitter *out, const void *arg) {
    if (!in->key) return em_fail("keys: the record is not a pair");
    return em_emit(out, in->key, in->klen);
}

int bi_values(const em_rec *in, em_emitter *out, const void *arg) { return em_emit(out, in->val, in->vlen); }

/* (k, v) -> (k, tag v): what cogroup used before its tasks tagged each input
 * themselves (PN_COGROUP); kept, as the table below is append only. */
int bi_tag(const em_rec *in, em_emitter *out, const void *arg) {
    scratch s;
    s.b = (ebuf)EBUF_INIT; /* small stays uninitialized: no 4 KiB clear per record */
    if (!in->key) return em_fail("cogroup/join: the record is not a pair");
    uint8_t *p = scratch_get(&s, in->vlen + 1);
    if (!p) return EM_ENOMEM;
    p[0] = *(const uint8_t *)arg;
    if (in->vlen) memcpy(p + 1, in->val, in->vlen);
    int rc = em_emit_pair(out, in->key, in->klen, p, in->vlen + 1);
    ebuf_free(&s.b);
    return rc;
}

/* flat_map_values over a cogroup value: the joined tuples. */
static int emit_tuple(em_emitter *out, const void *x, size_t xl, int xp, const void *y, size_t yl, int yp) {
    scratch s;
    s.b = (ebuf)EBUF_INIT; /* small stays uninitialized: no 4 KiB clear per record */
    size_t n = tuple_size(xl, xp, yl, yp);
    uint8_t *p = scratch_get(&s, n);
    if (!p) return EM_ENOMEM;
    tuple_put(p, x, xl, xp, y, yl, yp);
    int rc = em_emit(out, p, n);
    ebuf_free(&s.b);
    return rc;
}

int bi_join(const em_rec *in, em_emitter *out, const void *arg) {
    uint8_t kind = *(const uint8_t *)arg;
    const void *la, *lb, *x, *y;
    size_t lalen, lblen, xl, yl, pa = 0, pb;
    int rc, ra, rb;
    if (em_cogroup_unpack(in->val, in->vlen, &la, &lalen, &lb, &lblen)) return em_fail("join: malformed cogroup value");
    int left = kind == 1 || kind == 3, right = kind == 2 || kind == 3;
    if (!lalen && !lblen) return 0;
    if (!lblen) { /* only a */
        if (!left) return 0;
        while ((ra = em_list_next(la, lalen, &pa, &x, &xl)) == 1) {
            if ((rc = emit_tuple(out, x, xl, 1, NULL, 0, 0))) return rc;
        }
        return ra;
    }
    if (!lalen) { /* only b */
        if (!right) return 0;
        pb = 0;
        while ((rb = em_list_next(lb, lblen, &pb, &y, &yl)) == 1) {
            if ((rc = emit_tuple(out, NULL, 0, 0, y, yl, 1))) return rc;
        }
        return rb;
    }
    while ((ra = em_list_next(la, lalen, &pa, &x, &xl)) == 1) {
        pb = 0;
        while ((rb = em_list_next(lb, lblen, &pb, &y, &yl)) == 1) {
            if ((rc = emit_tuple(out, x, xl, 1, y, yl, 1))) return rc;
        }
        if (rb < 0) return rb;
    }
    return ra;
}

/* distinct, intersection, subtract: the whole record becomes the key.  A
 * pair of an 8-byte key and an 8-byte value (int64 pairs, a graph's
 * edges) is its 16 bytes as they are: a key the reduce side's word table
 * holds (agg16.h), where an encoded one of 18 bytes would go to the
 * general table.  Any other record is its encoding (rec_put), a zero byte
 * appended where that is 16 bytes long, so that a key of 16 bytes is
 * always such a pair and the keys of two records are equal exactly when
 * the records are (key_rec). */
#define PAIR_KEY 16

int bi_to_key(const em_rec *in, em_emitter *out, const void *arg) {
    if (in->key && in->klen == 8 && in->vlen == 8) {
        uint8_t k[PAIR_KEY];
        memcpy(k, in->key, 8);
        memcpy(k + 8, in->val, 8);
        return em_emit_pair(out, k, PAIR_KEY, "", 0);
    }
    scratch s;
    s.b = (ebuf)EBUF_INIT; /* small stays uninitialized: no 4 KiB clear per record */
    size_t n = rec_encoded_size(in);
    uint8_t *p = scratch_get(&s, n + 1);
    if (!p) return EM_ENOMEM;
    rec_put(p, in);
    if (n == PAIR_KEY) p[n++] = 0;
    int rc = em_emit_pair(out, p, n, "", 0);
    ebuf_free(&s.b);
    return rc;
}

/* The record bi_to_key made key k of klen bytes from: 0, or -1 when k is
 * no such key. */
static int key_rec(const void *k, size_t klen, em_rec *r) {
    const uint8_t *p = k;
    if (!p) return -1;
    if (klen == PAIR_KEY) {
        *r = (em_rec){p, 8, p + 8, 8};
        return 0;
    }
    size_t n = rec_get(p, p + klen, r);
    if (n == klen) return 0;
    return n == PAIR_KEY && klen == PAIR_KEY + 1 && p[PAIR_KEY] == 0 ? 0 : -1;
}

int bi_from_key(const em_rec *in, em_emitter *out, const void *arg) {
    em_rec r;
    if (key_rec(in->key, in->klen, &r)) return em_fail("distinct: malformed key");
    return em_emit_rec(out, &r);
}

int bi_keep_first(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return em_emit(out, a->val, a->vlen);
}

int bi_one(const em_rec *in, em_emitter *out, const void *arg) { return em_emit_i64(out, 1); }

int bi_key_eq(const em_rec *in, const void *arg) {
    const uint8_t *a = arg;
    uint64_t n = 0;
    size_t m = varint_get(a, a + VARINT_MAX + 1, &n);
    return m && in->key && in->klen == n && (!n || !memcmp(in->key, a + m, n));
}

/* tree_aggregate: key a partial by its partition index modulo arg. */
int bi_tree_key(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t mod;
    memcpy(&mod, arg, 8);
    uint8_t k[8];
    em_i64_enc((int64_t)em_task_partition() % mod, k);
    return em_emit_pair(out, k, 8, in->val, in->vlen);
}


/* intersection and subtract, over cogroup((encoded record, ""), ...): arg 0
 * emits the record once when both sides hold it (intersection); arg 1
 * emits it once per copy on the left when the right lacks it (subtract,
 * which keeps duplicates, as Spark's). */
int bi_setop(const em_rec *in, em_emitter *out, const void *arg) {
    const void *la, *lb, *item;
    size_t lalen, lblen, ilen, pos = 0;
    em_rec r;
    int rc;
    if (!in->key || em_cogroup_unpack(in->val, in->vlen, &la, &lalen, &lb, &lblen))
        return em_fail("intersection/subtract: malformed cogroup value");
    if (key_rec(in->key, in->klen, &r)) return em_fail("intersection/subtract: malformed key");
    if (*(const uint8_t *)arg == 0) return lalen && lblen ? em_emit_rec(out, &r) : 0;
    if (lblen) return 0;
    while ((rc = em_list_next(la, lalen, &pos, &item, &ilen)) == 1)
        if ((rc = em_emit_rec(out, &r))) return rc;
    return rc;
}

/* subtract_by_key: flat_map_values over cogroup(a, b): a's values of the
 * keys b lacks. */
int bi_subtract_values(const em_rec *in, em_emitter *out, const void *arg) {
    const void *la, *lb, *item;
    size_t lalen, lblen, ilen, pos = 0;
    int rc;
    if (em_cogroup_unpack(in->val, in->vlen, &la, &lalen, &lb, &lblen))
        return em_fail("subtract_by_key: malformed cogroup value");
    if (lblen) return 0;
    while ((rc = em_list_next(la, lalen, &pos, &item, &ilen)) == 1)
        if ((rc = em_emit(out, item, ilen))) return rc;
    return rc;
}

/* count_by_value: a plain record r becomes (r, int64 1). */
int bi_value_one(const em_rec *in, em_emitter *out, const void *arg) {
    if (in->key) return em_fail("count_by_value takes plain records, got a pair");
    return em_emit_pair_i64(out, in->val, in->vlen, 1);
}

/* The table: append only, so indexes stay stable across versions. */
void *const em__builtins[] = {
    (void *)bi_keys,      (void *)bi_values,    (void *)bi_tag,     (void *)bi_join,       (void *)bi_to_key,
    (void *)bi_from_key,  (void *)bi_keep_first, (void *)bi_one,    (void *)em_sum_i64,    (void *)bi_key_eq,
    (void *)bi_tree_key,  (void *)em_min_i64,   (void *)em_max_i64, (void *)em_sum_f64,    (void *)em_min_f64,
    (void *)em_max_f64,   (void *)bi_stats_add, (void *)bi_stats_merge, (void *)bi_hist_add, (void *)bi_hist_merge,
    (void *)bi_setop,     (void *)bi_subtract_values, (void *)bi_value_one, (void *)bi_read_whole,
    (void *)bi_hll_partition, (void *)bi_hll_merge, (void *)bi_pipe,
};
const int em__nbuiltins = (int)(sizeof em__builtins / sizeof em__builtins[0]);
