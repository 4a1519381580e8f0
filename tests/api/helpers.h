/*
 * helpers.h -- small user functions and checks shared by the API tests.
 * Everything here uses only the public header, as a user's driver would.
 */
#ifndef EM_TEST_HELPERS_H
#define EM_TEST_HELPERS_H

#include "ember.h"

em_ctx *open_test_ctx(void);             /* test_master(), checked */
int fn_double_i64(const em_rec *in, em_emitter *out, const void *arg);
int fn_even_i64(const em_rec *in, const void *arg);
int fn_sum_i64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg);
int fn_split_words(const em_rec *in, em_emitter *out, const void *arg); /* -> (word, 1) */
int fn_mod_key(const em_rec *in, em_emitter *out, const void *arg);     /* i64 v -> (i64 v % *arg, i64 v) */
int64_t rec_i64(const em_rec *r);
/* Sum of all int64 values of a batch of plain records. */
int64_t batch_sum_i64(em_batch *b);

#endif
