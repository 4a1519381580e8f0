/*
 * builtins.h -- ember's own functions that run as "user" functions inside
 * tasks (the pieces of join, distinct, count_by_key, keys, values, ...).
 * They are named on the wire by their index in em__builtins (fnref.h).
 */
#ifndef EM_BUILTINS_H
#define EM_BUILTINS_H

#include "ember.h"

int bi_keys(const em_rec *in, em_emitter *out, const void *arg);
int bi_values(const em_rec *in, em_emitter *out, const void *arg);
int bi_tag(const em_rec *in, em_emitter *out, const void *arg);       /* arg: 1 tag byte */
int bi_join(const em_rec *in, em_emitter *out, const void *arg);      /* arg: 1 byte: 0 inner, 1 left, 2 right, 3 full */
int bi_to_key(const em_rec *in, em_emitter *out, const void *arg);    /* record -> (record as a key, "") */
int bi_from_key(const em_rec *in, em_emitter *out, const void *arg);  /* inverse of bi_to_key */
int bi_keep_first(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg);
int bi_one(const em_rec *in, em_emitter *out, const void *arg);       /* value -> int64 1 */
int bi_key_eq(const em_rec *in, const void *arg);                     /* arg: the key */
int bi_tree_key(const em_rec *in, em_emitter *out, const void *arg);  /* arg: int64 modulus */
int bi_setop(const em_rec *in, em_emitter *out, const void *arg);     /* arg: 0 intersection, 1 subtract */
int bi_subtract_values(const em_rec *in, em_emitter *out, const void *arg);
int bi_value_one(const em_rec *in, em_emitter *out, const void *arg); /* r -> (r, int64 1) */
int bi_read_whole(const em_rec *in, em_emitter *out, const void *arg); /* path -> (path, content): wholetext.c */
/* count_approx_distinct (hll.c): a partition's sketch (arg: p, one byte), and a merge of two. */
int bi_hll_partition(int partition, em_iter *in, em_emitter *out, const void *arg);
int bi_hll_merge(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg);
/* pipe (pipecmd.c): a partition through an external command; arg: the packed command. */
int bi_pipe(int partition, em_iter *in, em_emitter *out, const void *arg);

#endif
