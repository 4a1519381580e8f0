/*
 * batch.c -- caller-owned batches of records (see batch.h).
 */
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "err.h"
#include "recfmt.h"

em_batch *batch_from(ebuf *b, size_t n) {
    em_batch *r = calloc(1, sizeof *r);
    if (!r) {
        ebuf_free(b);
        em__seterr(EM_ENOMEM, "out of memory");
        return NULL;
    }
    r->p = ebuf_steal(b, &r->len);
    r->n = n;
    return r;
}

/* Records whose two lengths take a byte each (keys under 127 bytes, values
 * under 128: int64 pairs, words) are stepped over without rec_get; the
 * rest, and any record that would end past len, take rec_get's checks.
 * Stepping from record to record is a chain of dependent loads (where the
 * next one starts depends on this one's lengths), so a run of records of
 * the same shape (the same two length bytes: fixed-width pairs) is counted
 * with strides instead, whose loads do not wait for each other. */
size_t batch_count_recs(const uint8_t *p, size_t len) {
    size_t n = 0, pos = 0, k;
    em_rec r;
    while (pos < len) {
        uint8_t kb = p[pos];
        if (kb < 0x80) {
            size_t voff = 1 + (kb ? kb - 1u : 0u); /* the value's length byte, from the record's start */
            if (pos + voff < len && p[pos + voff] < 0x80 && pos + voff + 1 + p[pos + voff] <= len) {
                uint8_t vb = p[pos + voff];
                size_t stride = voff + 1 + vb;
                pos += stride;
                n++;
                while (pos + stride <= len && p[pos] == kb && p[pos + voff] == vb) {
                    pos += stride;
                    n++;
                }
                continue;
            }
        }
        if (!(k = rec_get(p + pos, p + len, &r))) return (size_t)-1;
        pos += k;
        n++;
    }
    return n;
}

size_t em_batch_count(const em_batch *b) { return b ? b->n : 0; }

int em_batch_next(const em_batch *b, size_t *pos, em_rec *rec) {
    if (rec) memset(rec, 0, sizeof *rec); /* defined whatever happens */
    if (!b || !pos || !rec) return em__seterr(EM_EINVAL, "em_batch_next: NULL argument");
    if (*pos >= b->len) return 0;
    size_t k = rec_get(b->p + *pos, b->p + b->len, rec);
    if (!k) return em__seterr(EM_ECORRUPT, "em_batch_next: malformed batch");
    *pos += k;
    return 1;
}

int em_batch_get(em_batch *b, size_t i, em_rec *rec) {
    if (rec) memset(rec, 0, sizeof *rec); /* defined whatever happens */
    if (!b || !rec || i >= b->n) return em__seterr(EM_EINVAL, "em_batch_get: index %zu out of range", i);
    if (!b->idx) {
        size_t pos = 0;
        if (!(b->idx = malloc(sizeof *b->idx * (b->n + 1)))) return em__seterr(EM_ENOMEM, "out of memory");
        for (size_t k = 0; k < b->n; k++) {
            em_rec r;
            b->idx[k] = pos;
            pos += rec_get(b->p + pos, b->p + b->len, &r);
        }
    }
    return rec_get(b->p + b->idx[i], b->p + b->len, rec) ? 0 : EM_ECORRUPT;
}

void em_batch_free(em_batch *b) {
    if (!b) return;
    free(b->p);
    free(b->idx);
    free(b);
}
