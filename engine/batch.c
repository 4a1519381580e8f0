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

size_t batch_count_recs(const uint8_t *p, size_t len) {
    size_t n = 0, pos = 0, k;
    em_rec r;
    while (pos < len) {
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
