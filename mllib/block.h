/*
 * block.h -- the packed block: up to a few thousand labeled rows of one
 * partition in one record, dense row-major or CSR.  Internal to mllib.
 *
 * A block is a plain record whose value is
 *     u8 pad | pad bytes | 64-byte header | arrays | trailing pad
 * header: "EMBK", u32 kind (ML_DENSE / ML_CSR), i64 rows, cols, nnz, then
 * reserved zeros.  Arrays (all 16-byte aligned), the big one first:
 *     dense: f64 x[rows * cols] (row-major), f64 y[rows]
 *     CSR:   f64 val[nnz], i32 idx[nnz], i64 indptr[rows + 1], f64 y[rows]
 *
 * Alignment without copies.  The kernels read the arrays in place, as
 * doubles, from wherever the record lives: the cache's batch, or the
 * producer's buffer when a block is not cached.  Both start 16-byte
 * aligned, and a block's whole encoded record (tag byte, varint length,
 * value) is padded to a multiple of 16 bytes, so every block in a cached
 * batch of blocks starts aligned too; the leading pad then puts the arrays
 * on 16-byte boundaries, always ML_BLOCK_ARRAYS bytes after the record's
 * start.  ml_block_view checks, and copies into the caller's scratch only
 * if a block was ever found misaligned (never, for blocks made here).
 *
 * Built where it is kept.  A producer whose blocks are cached lays each
 * block out at the end of the cache's own buffer (ml_block_home,
 * cache_room in engine/emit.h), so caching it copies nothing and no buffer of
 * the producer's is faulted in besides the cache's; other producers get a
 * bigbuf.h buffer of their own.  Since the big array starts at a fixed
 * offset whatever the shape, a reader parses values straight into it
 * before it knows how many rows the block will hold.
 */
#ifndef EM_ML_BLOCK_H
#define EM_ML_BLOCK_H

#include <stdint.h>

#include "buf.h"
#include "ember.h"

enum { ML_DENSE = 1, ML_CSR = 2 };

typedef struct ml_block {
    int kind;
    int64_t rows, cols, nnz;
    double *y;
    double *x;          /* dense */
    int64_t *indptr;    /* CSR */
    double *val;        /* CSR */
    int32_t *idx;       /* CSR, 0-based column indexes */
    uint8_t *rec;       /* laid out for emitting: the record's encoding (NULL in a view) */
    size_t rec_len;
} ml_block;

/* The arrays start this many bytes after a block record's start. */
#define ML_BLOCK_ARRAYS 80

/* Bytes of a block record of this shape (its encoding), 0 for a bad or
 * too large shape. */
size_t ml_block_size(int kind, int64_t rows, int64_t cols, int64_t nnz);
/* Lay out an empty block of the given shape at at, which is 16-byte
 * aligned with ml_block_size bytes; b's pointers are writable while that
 * memory is.  The array bytes are not touched: a producer may have
 * written them already (ML_BLOCK_ARRAYS).  0 or EM_EINVAL. */
int ml_block_lay(uint8_t *at, int kind, int64_t rows, int64_t cols, int64_t nnz, ml_block *b);
/* As ml_block_lay, in buf (reset first). 0 or EM_ENOMEM / EM_EINVAL. */
int ml_block_alloc(ebuf *buf, int kind, int64_t rows, int64_t cols, int64_t nnz, ml_block *b);
/* Where to build the next block emitted through out: the end of the
 * cache's buffer when out feeds a cache directly (cache_room, emit.h), else buf,
 * a bigbuf.h buffer whose memory comes from, and goes back with bb_free
 * to, the process's cache of huge-page mappings (so a task that builds
 * blocks does not fault in a fresh buffer).  len bytes of room, 16-byte
 * aligned; the first keep bytes are those of the previous call's room for
 * the same block (it may move: use the address returned).  NULL (message
 * set) when out of memory. */
uint8_t *ml_block_home(em_emitter *out, ebuf *buf, size_t len, size_t keep);
/* ml_block_home and ml_block_lay: an empty block of this shape, laid out
 * where out keeps it if it can.  0, or EM_ENOMEM / EM_EINVAL (message set). */
int ml_block_alloc_out(em_emitter *out, ebuf *buf, int kind, int64_t rows, int64_t cols, int64_t nnz, ml_block *b);
/* Emit the block laid out by one of the above (where it lies: in the
 * cache's buffer it is kept without a copy).  Returns em_emit's code. */
int ml_block_emit(em_emitter *out, const ml_block *b);
/* Read a block record in place.  0, or EM_ECORRUPT (message set) for a
 * record that is not a well-formed block.  If the arrays are misaligned the
 * value is copied into *scratch (which must outlive the view). */
int ml_block_view(const em_rec *r, ml_block *b, ebuf *scratch);
/* As ml_block_view, but the contents of a CSR block's indptr and idx are
 * not checked, only the header and the array sizes: for callers that check
 * every offset and index as they read them (the logistic-regression
 * kernels), since a separate checking pass over the index arrays costs
 * about a fifth of a sparse gradient pass, every iteration. */
int ml_block_view_unchecked(const em_rec *r, ml_block *b, ebuf *scratch);

/* Whether rows x cols with nnz nonzeros is better stored dense than CSR:
 * when over 2/3 of the entries are nonzeros, where the dense layout (8
 * bytes an entry) is no larger than CSR (12 bytes a nonzero) and the
 * kernels read it at the dense speed.  The text reader stores each LIBSVM
 * block by this rule; the data set stays sparse for em_ml_is_sparse (its
 * scaling keeps zeros), whatever layout its blocks have. */
int ml_block_dense_better(int64_t rows, int64_t cols, int64_t nnz);

/* Rows per block for a shape: at most block_rows (default 4096) and about
 * 16 MiB of features. */
int64_t ml_block_rows(int64_t cols, double density, int block_rows);

#endif
