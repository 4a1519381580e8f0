/*
 * oracle.h -- exact result oracles for the API tests: a job's whole result
 * compared with the expected multiset of records, byte for byte.
 *
 * A want_set holds the records a job must return, each a plain record (no
 * key) or a pair.  expect_multiset sorts both sides (plain before pair, then
 * key bytes, then value bytes; a shorter byte string sorts before a longer
 * one it prefixes) and walks them together, so a lost record, a duplicate,
 * a changed value and a pair that comes back plain all show as a
 * difference, wherever in the result they are.  A count and a sum cannot
 * tell a lost partition from a duplicate of another one of the same size;
 * this can.
 *
 * Uses only the public header, as a user's driver would.
 */
#ifndef EM_TEST_ORACLE_H
#define EM_TEST_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"

typedef struct want_set want_set;

/* An empty set (caller frees with want_free), or NULL when out of memory.
 * Every function below accepts NULL for the set: the adders do nothing and
 * the comparators report "out of memory" and return 0, so a call site
 * needs no check of its own. */
want_set *want_new(void);
void want_free(want_set *w);
/* Add one record: a plain int64, an (int64, int64) pair, or any bytes
 * (key NULL: a plain record of val[0..vlen); else a pair).  The bytes are
 * copied.  A failed allocation marks the set, and comparing it fails. */
void want_i64(want_set *w, int64_t v);
void want_pair_i64(want_set *w, int64_t k, int64_t v);
void want_bytes(want_set *w, const void *key, size_t klen, const void *val, size_t vlen);
/* The number of records added. */
size_t want_count(const want_set *w);

/* 1 when got holds exactly the records of w, in any order, each as often
 * as in w; else 0, printing to stderr `what`, both counts, and the first
 * (up to 5) differences as "missing" (in w, not in got), "extra" (in got,
 * not in w) or "differs" (a pair whose key matches and value does not),
 * with the remaining number.  A field of 8 bytes prints as an int64, other
 * fields as escaped bytes.  Neither got nor w is changed. */
int expect_multiset(em_batch *got, const want_set *w, const char *what);
/* expect_multiset, then want_free(w): for one-line call sites,
 *     CHECK(expect_multiset_take(b, want_range(8, NULL), "the values"));  */
int expect_multiset_take(em_batch *got, want_set *w, const char *what);

/* The plain int64 records f(i) for i in [0, n) (f NULL: i itself), as
 * em_range(ctx, 0, n, 1, p) then em_map with f's counterpart returns. */
want_set *want_range(int64_t n, int64_t (*f)(int64_t));
/* The plain records "0", "1", ... of the numbers in [0, n) as decimal
 * text, without a terminator (what a map to text emits). */
want_set *want_range_text(int64_t n);
/* The pairs (k, sum of v in [0, n) with v % m == k) for k in [0, m), each
 * once, the sums from a direct loop: the result of em_range(0, n), then
 * fn_mod_key with m, then reduce by key with fn_sum_i64.  k ranges over
 * [0, min(n, m)): a key that no value reaches is not in the result. */
want_set *want_mod_sums(int64_t n, int64_t m);
/* The pairs (v % m, v) for v in [0, n): em_range then fn_mod_key. */
want_set *want_mod_pairs(int64_t n, int64_t m);

/* One-line forms of expect_multiset_take with the sets above. */
int expect_range(em_batch *got, int64_t n, int64_t (*f)(int64_t), const char *what);
int expect_mod_sums(em_batch *got, int64_t n, int64_t m, const char *what);
/* Collect em_range(c, 0, n, 1, parts) and expect exactly [0, n): the job
 * a test runs after a fault to show the context still works.  1, or 0
 * having said why (the action's error, or the differences). */
int expect_range_job(em_ctx *c, int64_t n, int parts, const char *what);

#endif
