/*
 * block.h -- the packed block: up to a few thousand labeled rows of one
 * partition in one record, dense row-major or CSR.  Internal to mllib.
 *
 * A block is a plain record whose value is
 *     u8 pad | pad bytes | 64-byte header | arrays | trailing pad
 * header: "EMBK", u32 kind (ML_DENSE / ML_CSR), i64 rows, cols, nnz, then
 * reserved zeros.  Arrays (all 16-byte aligned):
 *     dense: f64 y[rows], f64 x[rows * cols] (row-major)
 *     CSR:   f64 y[rows], i64 indptr[rows + 1], f64 val[nnz], i32 idx[nnz]
 *
 * Alignment without copies.  The kernels read the arrays in place, as
 * doubles, from wherever the record lives: the builder's buffer while a
 * block is first pipelined, the cache's batch afterwards.  Both start
 * 16-byte aligned, and a block's whole encoded record (tag byte, varint
 * length, value) is padded to a multiple of 16 bytes, so every block in a
 * cached batch of blocks starts aligned too; the leading pad then puts the
 * arrays on 16-byte boundaries.  ml_block_view checks, and copies into the
 * caller's scratch only if a block was ever found misaligned (never, for
 * blocks made here).
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
} ml_block;

/* A block being built: lay out an empty block of the given shape in buf
 * (reset first); b's pointers are writable until the buffer changes.  For
 * CSR with nnz unknown in advance, build with the final nnz once known.
 * 0 or EM_ENOMEM / EM_EINVAL. */
int ml_block_alloc(ebuf *buf, int kind, int64_t rows, int64_t cols, int64_t nnz, ml_block *b);
/* Make room in buf for a block of this shape, so that ml_block_alloc lays
 * it out without growing buf itself.  buf is a bigbuf.h buffer: its memory
 * comes from, and goes back with bb_free to, the process's cache of
 * huge-page mappings, so a task that builds blocks (readers, generators)
 * does not fault in a fresh buffer.  0, or EM_ENOMEM / EM_EINVAL (message
 * set). */
int ml_block_reserve_big(ebuf *buf, int kind, int64_t rows, int64_t cols, int64_t nnz);
/* Emit the block laid out in buf by ml_block_alloc.  Returns em_emit's code. */
int ml_block_emit(em_emitter *out, const ebuf *buf);
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
 * kernels read it at the dense speed (a 10k x 10k LIBSVM file written in
 * full trains about 3x faster so).  The text reader stores each LIBSVM
 * block by this rule; the data set stays sparse for em_ml_is_sparse (its
 * scaling keeps zeros), whatever layout its blocks have. */
int ml_block_dense_better(int64_t rows, int64_t cols, int64_t nnz);

/* Rows per block for a shape: at most block_rows (default 4096) and about
 * 16 MiB of features. */
int64_t ml_block_rows(int64_t cols, double density, int block_rows);

#endif
