/*
 * extsort.h -- sorting more records than fit in memory, for the reduce side
 * of sorting shuffles (SR_SORT, SR_GROUP, SR_COGROUP) and for merging the
 * spilled runs of an aggregation (SR_AGG).
 *
 * Three pieces:
 *   es_runfile  sorted runs written one after another as blockfile runs into
 *               one temporary file, which is unlinked as soon as it is
 *               created: it disappears when closed, whatever happens.
 *   es_merger   a k-way merge (binary heap) of the runs of a runfile and an
 *               in-memory sorted sequence, yielding records in key order.
 *   extsort     records are copied into an arena with an index entry each
 *               (pairs of a key of one width and a value of one width
 *               that fit 32 bytes together live in the entries alone);
 *               past the memory budget the index is sorted and the records
 *               are spilled as a run; es_next then yields everything in
 *               order, merging when anything was spilled.
 * All merging is a single pass over all runs, as in Spark: each open run
 * costs one block of buffers.
 */
#ifndef EM_EXTSORT_H
#define EM_EXTSORT_H

#include <stddef.h>
#include <stdint.h>

#include "agg.h"
#include "blockfile.h"
#include "buf.h"
#include "ember.h"

/* ----------------------------------------------------------------- runfile */

typedef struct es_run { uint64_t off, len; } es_run;

typedef struct es_runfile {
    int fd;            /* -1 until the first run begins */
    char path[512];    /* the (already unlinked) file, for messages */
    const char *dir;   /* borrowed */
    bf_codec codec;
    size_t block_bytes;
    bf_writer w;
    uint64_t run_start;
    es_run *runs;
    size_t nruns, cap;
} es_runfile;

/* Never fails; the file is created by the first es_runfile_begin. */
void es_runfile_init(es_runfile *f, const char *dir, bf_codec codec, size_t block_bytes);
/* Start a run (creating the file the first time).  0, or EM_EIO with a
 * message naming the directory. */
int es_runfile_begin(es_runfile *f);
/* Append a record to the current run.  0, EM_ENOMEM or EM_EIO. */
int es_runfile_add(es_runfile *f, const em_rec *r);
/* Finish the current run.  0, EM_ENOMEM or EM_EIO. */
int es_runfile_end(es_runfile *f);
/* The bytes the run last ended took in the file (a spill's disk bytes). */
static inline uint64_t es_runfile_last_bytes(const es_runfile *f) { return f->w.off - f->run_start; }
/* Close (and so delete) the file. */
void es_runfile_free(es_runfile *f);

/* ------------------------------------------------------------------ merger */

/* Sets *r to the i-th record of an in-memory sorted sequence. */
typedef void (*es_mem_get)(void *ctx, size_t i, em_rec *r);

typedef struct es_src {
    bf_reader rd;      /* runs only */
    em_rec cur;
    size_t memi;       /* in-memory source: next index */
    int is_mem;
} es_src;

typedef struct es_merger {
    es_src *src;
    uint32_t *heap;
    size_t nsrc, nheap;
    int descending;
    int top_used;      /* the heap top was returned: advance it first */
    es_mem_get get;
    void *gctx;
    size_t nmem;
} es_merger;

/* Merge the runs of f (each sorted in the given direction) with nmem
 * in-memory records returned by get(gctx, i) (also sorted).  Reads the
 * first record of every run: 0, or < 0 (EM_ECORRUPT, EM_EIO, EM_ENOMEM);
 * call es_merger_free in both cases. */
int es_merger_open(es_merger *m, es_runfile *f, es_mem_get get, void *gctx, size_t nmem, int descending);
/* 1 with *r set (views valid until the next call), 0 at the end, or < 0. */
int es_merger_next(es_merger *m, em_rec *r);
void es_merger_free(es_merger *m);

/* Pull (key, combiner) pairs from m in key order, combine the combiners of
 * equal keys with agg->merge_comb, and pass one pair per key to sink.
 * Returns 0 (also when sink returned EM_STOP) or < 0 from the merge, the
 * aggregation or the sink. */
int es_merge_combine(es_merger *m, const agg_spec *agg, rec_sink_fn sink, void *sctx);

/* ----------------------------------------------------------------- extsort */

/* An index entry is ew 64-bit words (1 to ES_WORDS_MAX); word 0 is its
 * prefix, the first 8 key bytes as a big-endian integer, zero padded.  A
 * general entry's second word is the encoded record's arena offset in the
 * low ES_OFF_BITS bits and above them the key length, or 9 for any key
 * longer than 8 bytes.  A packed entry (one word) holds a flat record of
 * at most 8 bytes in all: the key's bytes, then the value's, zero padded,
 * as one big-endian integer, which orders by key and then by value (8-byte
 * keys with empty values, 4-byte keys with 4-byte values). */
#define ES_OFF_BITS 60
#define ES_WORDS_MAX 4

typedef struct extsort {
    ebuf arena;
    uint64_t *idx;     /* n entries of ew words, in idxb */
    ebuf idxb, tmpb;   /* tmpb: the radix sort's other half; the arena and
                          these are bigbuf.h buffers */
    size_t n, cap;     /* entries */
    int ew;            /* words an entry */
    size_t budget;
    int descending;
    int flat;          /* every record so far is a pair of a key of one
                          width and a value of one width that fit an
                          entry of at most ES_WORDS_MAX words: packed in
                          one when they fit 8 bytes, else the key in
                          kwords words as big-endian integers, zero padded
                          (keys up to 8 bytes take one, the prefix), the
                          value's bytes in the words after (int64 and
                          double pairs, keys with empty values, 4-byte
                          keys, 16-byte keys, 16-byte values).  The entry
                          holds the record and the arena is unused.  The
                          first other record copies them into the arena
                          as general entries and clears this for good.
                          Once sorted, the key words are byte-swapped back
                          to the keys' bytes, so records point into the
                          index. */
    int kwords;        /* flat: the key's words */
    int varkey;        /* flat: keys of lengths that vary, each shorter
                          than its kwords words: the last of its bytes
                          holds the length, and compares after the key's
                          bytes zero padded as bytes_cmp orders them (a
                          shorter key that is the start of a longer one
                          first).  A key of another length than the first
                          record's sets it (packed entries first become
                          two words; widening the entries by a
                          word where needed) while the entry still fits
                          ES_WORDS_MAX words: strings of up to 23 bytes
                          with int64 values. */
    int fk, fw;        /* flat: the keys' and values' widths, -1 before
                          any record (fk: the first key's, with varkey) */
    es_runfile runs;
    es_merger merger;
    int merging;       /* es_finish opened the merger */
    size_t next;       /* in-memory iteration position */
    int64_t spills;
    size_t peak;       /* the most bytes held (as the budget counts them) */
} extsort;

/* Sort by key (rec_key_cmp: plain records by value), ascending or not,
 * spilling to spill_dir past budget bytes.  Never fails. */
void es_init(extsort *s, const char *spill_dir, size_t budget, int descending, bf_codec codec, size_t block_bytes);
/* Copy a record in.  0, or EM_ENOMEM / EM_EIO / EM_ETOOBIG. */
int es_add(extsort *s, const em_rec *r);
/* No more records: sort, and open the merge if anything was spilled.
 * 0 or < 0. */
int es_finish(extsort *s);
/* After es_finish: 1 with *r (valid until the next call), 0 at the end,
 * or < 0. */
int es_next(extsort *s, em_rec *r);
/* Free memory and delete spill files.  The sorter's spills (when they
 * happen) and its peak bytes (here) go to the calling thread's attempt's
 * metrics (curmetrics.h). */
void es_free(extsort *s);

#endif
