/*
 * block.c -- packed blocks (see block.h for the layout and why).
 */
#include <stdlib.h>
#include <string.h>

#include "bigbuf.h"
#include "block.h"
#include "emit.h"
#include "err.h"

#define HDR 64
#define ALIGN 16

static size_t up16(size_t n) { return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1); }

/* Bytes of the arrays after the header, with every product and sum checked:
 * a corrupt header must not wrap around to a small size. */
static int arrays_size(int kind, int64_t rows, int64_t cols, int64_t nnz, size_t *out) {
    if (rows < 0 || cols < 0 || nnz < 0 || rows > (1LL << 40) || cols > (1LL << 40) || nnz > (1LL << 40))
        return EM_EINVAL;
    size_t r = (size_t)rows, c = (size_t)cols, z = (size_t)nnz, rc, t, sum;
    if (kind == ML_DENSE) {
        if (__builtin_mul_overflow(r, c, &rc) || __builtin_mul_overflow(rc, (size_t)8, &t) || t > SIZE_MAX / 2)
            return EM_EINVAL;
        sum = up16(8 * r) + up16(t);
    } else if (kind == ML_CSR) {
        sum = up16(8 * r) + up16(8 * (r + 1)) + up16(8 * z) + up16(4 * z); /* each term < 2^44 */
    } else {
        return EM_EINVAL;
    }
    if (sum > ((size_t)1 << 46)) return EM_EINVAL; /* no block is 64 TiB */
    *out = sum;
    return 0;
}

/* Point b's arrays into the header-aligned area at p: the big array first
 * (x, or val), so that it starts at ML_BLOCK_ARRAYS whatever the block's
 * rows and nonzeros turn out to be, and a reader can parse into it before
 * it knows them. */
static void place(ml_block *b, uint8_t *p) {
    size_t r = (size_t)b->rows, z = (size_t)b->nnz;
    b->x = NULL;
    b->indptr = NULL;
    b->val = NULL;
    b->idx = NULL;
    if (b->kind == ML_DENSE) {
        b->x = (double *)p;
        p += up16(8 * r * (size_t)b->cols);
    } else {
        b->val = (double *)p;
        p += up16(8 * z);
        b->idx = (int32_t *)p;
        p += up16(4 * z);
        b->indptr = (int64_t *)p;
        p += up16(8 * (r + 1));
    }
    b->y = (double *)p;
}

/* Zero the bytes between the arrays' ends and their 16-byte rounding, and
 * the record's trailing pad up to end, so a block's bytes are all defined. */
static void zero_gaps(const ml_block *b, uint8_t *end) {
    size_t r = (size_t)b->rows, z = (size_t)b->nnz;
    if (b->kind == ML_DENSE) {
        uint8_t *x = (uint8_t *)b->x;
        size_t n = 8 * r * (size_t)b->cols;
        memset(x + n, 0, up16(n) - n);
    } else {
        uint8_t *v = (uint8_t *)b->val, *ix = (uint8_t *)b->idx, *ip = (uint8_t *)b->indptr;
        memset(v + 8 * z, 0, up16(8 * z) - 8 * z);
        memset(ix + 4 * z, 0, up16(4 * z) - 4 * z);
        memset(ip + 8 * (r + 1), 0, up16(8 * (r + 1)) - 8 * (r + 1));
    }
    uint8_t *y = (uint8_t *)b->y;
    memset(y + 8 * r, 0, (size_t)(end - (y + 8 * r)));
}

/* The encoding's sizes for arrays of arr bytes: *pre (tag and varint),
 * *pad (after the value's pad byte) and the value's length. */
static size_t value_len(size_t arr, size_t *pre, size_t *pad) {
    /* vlen depends on the pads and the pads on varint_len(vlen): settle by
     * trying the few possible varint lengths. */
    for (size_t vl = 1; vl <= VARINT_MAX; vl++) {
        *pre = 1 + vl;                            /* tag + varint */
        *pad = (ALIGN - (*pre + 1 + HDR) % ALIGN) % ALIGN;
        size_t core = 1 + *pad + HDR + arr;
        size_t tail = (ALIGN - (*pre + core) % ALIGN) % ALIGN;
        size_t vlen = core + tail;
        if (varint_len(vlen) == vl) return vlen;
    }
    return 0;
}

size_t ml_block_size(int kind, int64_t rows, int64_t cols, int64_t nnz) {
    size_t arr, pre, pad, vlen;
    if (arrays_size(kind, rows, cols, nnz, &arr) || !(vlen = value_len(arr, &pre, &pad))) return 0;
    return pre + vlen;
}

/* Layout at p (16-byte aligned, ml_block_size bytes): [tag 0][varint
 * vlen][value...], the record encoding, so ml_block_emit can hand out the
 * value in place.  The value: pad byte, pad, header, arrays, trailing
 * zeros up to a 16-byte record size.  The arrays' bytes are not touched. */
static void lay(uint8_t *p, int kind, int64_t rows, int64_t cols, int64_t nnz, size_t arr, ml_block *b) {
    size_t pre, pad, vlen = value_len(arr, &pre, &pad);
    /* Only the header and the padding are written here: the caller writes
     * every array element (a memset would add a pass over the whole
     * block), maybe before the layout (ML_BLOCK_ARRAYS). */
    memset(p, 0, pre + 1 + pad + HDR);
    p[0] = 0;
    varint_put(p + 1, vlen);
    uint8_t *v = p + pre;
    v[0] = (uint8_t)pad;
    uint8_t *h = v + 1 + pad;
    memcpy(h, "EMBK", 4);
    uint32_t k = (uint32_t)kind;
    memcpy(h + 4, &k, 4);
    memcpy(h + 8, &rows, 8);
    memcpy(h + 16, &cols, 8);
    memcpy(h + 24, &nnz, 8);
    b->kind = kind;
    b->rows = rows;
    b->cols = cols;
    b->nnz = nnz;
    b->rec = p;
    b->rec_len = pre + vlen;
    place(b, h + HDR);
    zero_gaps(b, p + pre + vlen);
}

static int bad_shape(int64_t rows, int64_t cols, int64_t nnz) {
    return em__seterr(EM_EINVAL, "mllib: bad block shape %lld x %lld (nnz %lld)", (long long)rows, (long long)cols,
                      (long long)nnz);
}

int ml_block_alloc(ebuf *buf, int kind, int64_t rows, int64_t cols, int64_t nnz, ml_block *b) {
    size_t arr, n;
    if (!buf || !b || arrays_size(kind, rows, cols, nnz, &arr)) return bad_shape(rows, cols, nnz);
    if (!(n = ml_block_size(kind, rows, cols, nnz))) return em__seterr(EM_EINVAL, "mllib: block too large");
    ebuf_reset(buf);
    if (ebuf_reserve(buf, n)) return em__seterr(EM_ENOMEM, "mllib: out of memory for a %zu-byte block", n);
    lay(buf->p, kind, rows, cols, nnz, arr, b);
    buf->len = n;
    return 0;
}

int ml_block_lay(uint8_t *at, int kind, int64_t rows, int64_t cols, int64_t nnz, ml_block *b) {
    size_t arr;
    if (!at || !b || arrays_size(kind, rows, cols, nnz, &arr)) return bad_shape(rows, cols, nnz);
    if ((uintptr_t)at % ALIGN || !ml_block_size(kind, rows, cols, nnz))
        return em__seterr(EM_EINVAL, "mllib: block too large, or misplaced");
    lay(at, kind, rows, cols, nnz, arr, b);
    return 0;
}

uint8_t *ml_block_home(em_emitter *out, ebuf *buf, size_t len, size_t keep) {
    uint8_t *p;
    if (cache_room(out, len, keep, &p)) return NULL;
    if (p && (uintptr_t)p % ALIGN == 0) return p;
    /* Not a cache, or one holding records that misalign its end (never,
     * for blocks: they are 16-byte multiples): a buffer of our own, its
     * bytes kept up to keep as the room's would be.  The cache's end does
     * not move while a block is built, so every call for one block makes
     * the same choice. */
    buf->len = keep;
    if (bb_reserve(buf, len - keep)) {
        em__seterr(EM_ENOMEM, "mllib: out of memory for a %zu-byte block", len);
        return NULL;
    }
    buf->len = 0;
    return buf->p;
}

int ml_block_alloc_out(em_emitter *out, ebuf *buf, int kind, int64_t rows, int64_t cols, int64_t nnz, ml_block *b) {
    size_t arr, n;
    if (!buf || !b || arrays_size(kind, rows, cols, nnz, &arr)) return bad_shape(rows, cols, nnz);
    if (!(n = ml_block_size(kind, rows, cols, nnz))) return em__seterr(EM_EINVAL, "mllib: block too large");
    uint8_t *p = ml_block_home(out, buf, n, 0);
    if (!p) return em__lasterr();
    lay(p, kind, rows, cols, nnz, arr, b);
    return 0;
}

int ml_block_emit(em_emitter *out, const ml_block *b) {
    uint64_t vlen = 0;
    size_t n = b->rec && b->rec_len > 1 ? varint_get(b->rec + 1, b->rec + b->rec_len, &vlen) : 0;
    if (!n) return em__seterr(EM_EINVAL, "mllib: no block laid out");
    return em_emit(out, b->rec + 1 + n, (size_t)vlen);
}

static int view(const em_rec *r, ml_block *b, ebuf *scratch, int check) {
    const uint8_t *v = r->val;
    size_t arr;
    if (r->key || r->vlen < 1 + HDR || (size_t)v[0] + 1 + HDR > r->vlen) goto bad;
    const uint8_t *h = v + 1 + v[0];
    if (memcmp(h, "EMBK", 4)) goto bad;
    uint32_t k;
    memcpy(&k, h + 4, 4);
    memcpy(&b->rows, h + 8, 8);
    memcpy(&b->cols, h + 16, 8);
    memcpy(&b->nnz, h + 24, 8);
    b->kind = (int)k;
    if (arrays_size(b->kind, b->rows, b->cols, b->nnz, &arr) || (size_t)(h + HDR - v) + arr > r->vlen) goto bad;
    uint8_t *data = (uint8_t *)(h + HDR);
    if ((uintptr_t)data % ALIGN) {
        ebuf_reset(scratch);
        if (ebuf_reserve(scratch, arr + ALIGN)) return em__seterr(EM_ENOMEM, "mllib: out of memory");
        uint8_t *a = (uint8_t *)(((uintptr_t)scratch->p + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
        memcpy(a, data, arr);
        data = a;
    }
    place(b, data);
    b->rec = NULL;
    b->rec_len = 0;
    if (check && b->kind == ML_CSR) {
        if (b->indptr[0] != 0 || b->indptr[b->rows] != b->nnz) goto bad;
        for (int64_t i = 0; i < b->rows; i++)
            if (b->indptr[i + 1] < b->indptr[i]) goto bad;
        for (int64_t j = 0; j < b->nnz; j++)
            if (b->idx[j] < 0 || b->idx[j] >= b->cols) goto bad;
    }
    return 0;
bad:
    return em__seterr(EM_ECORRUPT, "mllib: a record is not a well-formed block");
}

int ml_block_view(const em_rec *r, ml_block *b, ebuf *scratch) { return view(r, b, scratch, 1); }

int ml_block_view_unchecked(const em_rec *r, ml_block *b, ebuf *scratch) { return view(r, b, scratch, 0); }

int ml_block_dense_better(int64_t rows, int64_t cols, int64_t nnz) {
    if (rows <= 0 || cols <= 0 || nnz < 0 || rows > (1LL << 40) || cols > (1LL << 40)) return 0;
    /* rows * cols may overflow where nnz cannot be that large: compare in
     * doubles, exact below 2^53 and decisive above. */
    return 3.0 * (double)nnz >= 2.0 * (double)rows * (double)cols;
}

int64_t ml_block_rows(int64_t cols, double density, int block_rows) {
    int64_t max = block_rows > 0 ? block_rows : 4096;
    if (!(density > 0) || density > 1) density = 1;
    double per_row = (double)(cols > 0 ? cols : 1) * density * (density < 1 ? 12 : 8) + 8;
    int64_t by_size = (int64_t)((16.0 * 1024 * 1024) / per_row);
    if (by_size < 1) by_size = 1;
    return by_size < max ? by_size : max;
}
