/*
 * hll.h -- HyperLogLog sketches for em_count_approx_distinct (Spark's
 * countApproxDistinct).
 *
 * A sketch is 2^p one-byte registers (4 <= p <= HLL_MAX_P).  A record's
 * 64-bit hash gives the register (its top p bits) and a rank (one plus the
 * leading zeros of the other 64 - p bits, at most 65 - p); a register keeps
 * the largest rank it saw.  Sketches merge by taking each register's
 * maximum, so per-partition sketches combine in any order.
 *
 * A partition's sketch starts sparse, as HLL++'s: the distinct hashes
 * themselves, sorted, while there are at most 2^p / 8 of them (no more
 * bytes than the registers); past that, the registers.  A sparse sketch
 * counts exactly (up to 64-bit hash collisions); merging two gives the
 * union, dense once too large.  On the wire (hll_sketch_*): byte 0 is
 * HLL_SPARSE or HLL_DENSE, byte 1 is p, then the hashes (8 bytes each,
 * native order) or the 2^p registers.
 *
 * p comes from the relative standard deviation asked for as Spark's:
 * p = ceil(2 log2(1.054 / relative_sd)).  The estimate is Ertl's improved
 * raw estimator ("New cardinality estimation algorithms for HyperLogLog
 * sketches", 2017), which is unbiased over the whole range -- small counts
 * included, where plain HyperLogLog needs linear counting and HLL++ its
 * empirical bias tables -- with no tables at all.
 */
#ifndef EM_HLL_H
#define EM_HLL_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "ember.h"

#define HLL_MIN_P 4
#define HLL_MAX_P 18 /* 256 KiB of registers: relative_sd >= 0.0021 */

/* p for relative_sd: 0, or EM_EINVAL with a message when relative_sd is not
 * in [1.054 / 2^(HLL_MAX_P / 2), 1) (the accuracy the largest sketch gives). */
int hll_precision(double relative_sd, int *p);
/* Count hash h into the registers of a sketch of precision p. */
void hll_add(uint8_t *reg, int p, uint64_t h);
/* reg = max(reg, other), register by register. */
void hll_merge(uint8_t *reg, const uint8_t *other, int p);
/* The estimated number of distinct hashes counted, at most this: */
#define HLL_MAX_ESTIMATE 9.0e18
double hll_estimate(const uint8_t *reg, int p);
/* The 64-bit hash of a record (its key and value for a pair). */
uint64_t hll_hash(const em_rec *r);

enum { HLL_SPARSE = 0, HLL_DENSE = 1 };
/* The most hashes a sparse sketch of precision p holds. */
size_t hll_sparse_max(int p);
/* Sketch bytes [s, s + n): their precision and whether they are well
 * formed (1), else 0. */
int hll_sketch_check(const uint8_t *s, size_t n, int *p);
/* The estimate a well-formed sketch gives. */
double hll_sketch_estimate(const uint8_t *s, size_t n);
/* Append the merge of sketches x and y (the union of two sparse ones
 * while it fits, else registers) to out.  0, EM_EINVAL (either malformed,
 * or of different precisions) or EM_ENOMEM. */
int hll_sketch_merge(const uint8_t *x, size_t nx, const uint8_t *y, size_t ny, ebuf *out);

#endif
