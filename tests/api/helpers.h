/*
 * helpers.h -- small user functions and checks shared by the API tests.
 * Everything here uses only the public header, as a user's driver would.
 */
#ifndef EM_TEST_HELPERS_H
#define EM_TEST_HELPERS_H

#include "ember.h"
#include "oracle.h" /* exact result oracles: want_set, expect_multiset */

em_ctx *open_test_ctx(void);             /* test_master(), checked */
int fn_double_i64(const em_rec *in, em_emitter *out, const void *arg);
int fn_even_i64(const em_rec *in, const void *arg);
int fn_sum_i64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg);
int fn_split_words(const em_rec *in, em_emitter *out, const void *arg); /* -> (word, 1) */
int fn_mod_key(const em_rec *in, em_emitter *out, const void *arg);     /* i64 v -> (i64 v % *arg, i64 v) */
int64_t rec_i64(const em_rec *r);
/* Sum of all int64 values of a batch of plain records. */
int64_t batch_sum_i64(em_batch *b);


/* ---- added for test_sources/narrow/actions/errors/vars ---- */
#include <stdint.h>
/* A context on test_master() with one setting (key may be NULL). */
em_ctx *open_test_ctx_with(const char *key, const char *value);
/* Write len bytes to path; 0 or -1. */
int write_file(const char *path, const void *data, size_t len);
/* Read a whole file into a malloc'd buffer (NUL-terminated); NULL if absent. */
char *read_file_all(const char *path, size_t *len);
/* path = test_tmpdir()/name in a static rotating buffer. */
const char *tmp_path(const char *name);
/* The i-th record of a batch as int64 (-999999 if not 8 bytes). */
int64_t batch_i64_at(em_batch *b, size_t i);
/* 1 when the batch holds exactly the int64 values v[0..n) in order. */
int batch_eq_i64(em_batch *b, const int64_t *v, size_t n);
/* FNV-1a of bytes, and an order-independent checksum helper. */
uint64_t fnv1a(const void *p, size_t n);
/* Identity map that adds 1 to the em_acc passed as arg. */
int fn_count_calls(const em_rec *in, em_emitter *out, const void *arg);
/* 1 when b holds (k, sum of v in [0, n) with v % m == k) for every k < m,
 * each key exactly once, checked against a direct loop (after fn_mod_key
 * and fn_sum_i64); else 0, printing the first difference. */
int check_mod_sums(em_batch *b, int64_t n, int64_t m);
/* Wait until no task attempt runs on c (the losers an action left to end
 * in the background), then fill *st.  Waits by polling the count, at most
 * 60 s (then the caller's checks of *st fail). */
void wait_no_tasks(em_ctx *c, em_stats *st);
/* Identity map (emits the record unchanged). */
int fn_identity(const em_rec *in, em_emitter *out, const void *arg);
/* i64 v -> pair (i64 v, i64 v * 10). */
int fn_pair_x10(const em_rec *in, em_emitter *out, const void *arg);

/* The same records (keys and values, byte for byte) in the same order. */
int batches_equal(em_batch *a, em_batch *b);

/* ---- fault gates (engine/faults.h's hold and holdcommit) ---- */
/* This test's gates directory, test_tmpdir()/gates (made on first use):
 * the value for ember.test.faults.dir. */
const char *gates_dir(void);
/* Wait (at most WAIT_MS) until attempt `attempt` of partition `part` of
 * stage `stage` is held at gate: 1, or 0 having said what it waited for. */
int gate_wait_held(const char *gate, int stage, int part, int attempt);
/* Whether that attempt was ever held at gate (its marker exists). */
int gate_was_held(const char *gate, int stage, int part, int attempt);
/* Release every attempt held at gate, now and later: 0 or -1. */
int gate_release(const char *gate);
/* Wait (at most WAIT_MS) until em_stats' field, read by get, satisfies
 * get(st) >= at_least: 1 (with *st the stats seen), or 0 having said
 * "what". */
int wait_stat(em_ctx *c, em_stats *st, int64_t (*get)(const em_stats *), int64_t at_least, const char *what);

#endif
