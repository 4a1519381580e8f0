/*
 * test_join_expect.c -- a hash join's build side that tells its record
 * count before its first record (pipe.h's expect) sizes the table once:
 * the keys of a reduce_by_key read into the join's task through a
 * map_values, and the same keys persisted and read from the cache.  A
 * build side that cannot tell (a filter's output) grows the table as
 * before.  Counted with hashjoin_regrown; every join checked whole.  And a
 * streamed side read from the cache queues its long records by address,
 * not copied (hashjoin_by_address), with the same joined records, and a
 * task killed while such a block streams through stops, as the runner's
 * sources do, within a check's worth of records (RUNNER_CHECK_EVERY).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "../test.h"
#include "ember.h"
#include "hashjoin.h"

#define KEYS 40000
#define PARTS 4

/* (k, 1) for k = i % KEYS: each key KEYS times less than the records. */
static int pair_of(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    uint8_t k[8], v[8];
    em_i64_enc(em_i64_dec(in->val) % KEYS, k);
    em_i64_enc(1, v);
    return em_emit_pair(out, k, 8, v, 8);
}

static int times_ten(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    return em_emit_i64(out, 10 * em_i64_dec(in->val));
}

static int even_key(const em_rec *in, const void *arg) {
    (void)arg;
    return em_i64_dec(in->key) % 2 == 0;
}

/* Joined records whose value is the tuple (k, 30 = 10 x 3 occurrences):
 * the left side holds k itself, the right 10 x its count. */
static int64_t right_joins(em_rdd *j) {
    em_batch *b = NULL;
    if (em_collect(j, &b)) return -1;
    int64_t ok = 0;
    for (size_t i = 0; i < em_batch_count(b); i++) {
        em_rec r;
        em_tuple t;
        if (em_batch_get(b, i, &r) || em_tuple_unpack(r.val, r.vlen, &t) || t.alen != 8 || t.blen != 8) continue;
        ok += em_i64_dec(t.a) == em_i64_dec(r.key) && em_i64_dec(t.b) == 30;
    }
    em_batch_free(b);
    return ok;
}

static int key_pair(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    return em_emit_pair(out, in->val, 8, in->val, 8);
}

TEST(join_build_side_told_its_count_sizes_the_table_once) {
    em_ctx *c = em_open("local[2]", NULL);
    CHECK(c);
    /* Left: (k, k) for every key, partitioned as the right side will be
     * (so the join reads both narrow and builds the right side). */
    em_rdd *keys = em_range(c, 0, KEYS, 1, PARTS);
    em_rdd *kp = em_map(keys, key_pair, NULL, 0);
    em_rdd *left = em_partition_by(kp, PARTS);
    CHECK(left);
    em_persist(left, EM_MEMORY_ONLY);
    int64_t n = 0;
    CHECK_OK(em_count(left, &n));
    CHECK_EQ_I64(n, KEYS);
    /* Right: each key's count over 3 x KEYS records, times ten. */
    em_rdd *recs = em_range(c, 0, 3 * KEYS, 1, PARTS);
    em_rdd *ones = em_map(recs, pair_of, NULL, 0);
    em_rdd *counts = em_reduce_by_key(ones, em_sum_i64, NULL, 0, PARTS);
    em_rdd *right = em_map_values(counts, times_ten, NULL, 0);
    CHECK(right);

    uint64_t g0 = hashjoin_regrown();
    em_rdd *j = em_join(left, right, PARTS);
    CHECK_EQ_I64(right_joins(j), KEYS);
    CHECK_EQ_I64((int64_t)(hashjoin_regrown() - g0), 0); /* the aggregation told its keys */

    em_persist(right, EM_MEMORY_ONLY);
    CHECK_OK(em_count(right, &n));
    CHECK_EQ_I64(n, KEYS);
    g0 = hashjoin_regrown();
    em_rdd *j2 = em_join(left, right, PARTS);
    CHECK_EQ_I64(right_joins(j2), KEYS);
    CHECK_EQ_I64((int64_t)(hashjoin_regrown() - g0), 0); /* the cached block told its records */

    /* A filter cannot tell how many pass: the table grows as it fills
     * (each partition's 5,000 keys pass 1,024 slots at half full). */
    em_rdd *half = em_filter(right, even_key, NULL, 0);
    g0 = hashjoin_regrown();
    em_rdd *j3 = em_join(left, half, PARTS);
    CHECK_EQ_I64(right_joins(j3), KEYS / 2);
    CHECK((int64_t)(hashjoin_regrown() - g0) >= PARTS);

    em_rdd_release(j3);
    em_rdd_release(half);
    em_rdd_release(j2);
    em_rdd_release(j);
    em_rdd_release(right);
    em_rdd_release(counts);
    em_rdd_release(ones);
    em_rdd_release(recs);
    em_rdd_release(left);
    em_rdd_release(kp);
    em_rdd_release(keys);
    em_close(c);
}

/* (k % KEYS, a list of 6 + k % 7 int64s): with its key longer than a
 * queue slot holds, as PageRank's links. */
static int list_of(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    int64_t k = em_i64_dec(in->val);
    uint8_t kb[8], v[13 * 8];
    size_t n = 6 + (size_t)(k % 7);
    em_i64_enc(k % KEYS, kb);
    for (size_t i = 0; i < n; i++) em_i64_enc(k + (int64_t)i, v + 8 * i);
    return em_emit_pair(out, kb, 8, v, 8 * n);
}

/* (k, 10 k) for the even keys. */
static int even_pair(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    uint8_t k[8], v[8];
    em_i64_enc(2 * em_i64_dec(in->val), k);
    em_i64_enc(20 * em_i64_dec(in->val), v);
    return em_emit_pair(out, k, 8, v, 8);
}

/* Joined records (k, (list, 10 k)) with the list as list_of made it. */
static int64_t list_joins(em_rdd *j) {
    em_batch *b = NULL;
    if (em_collect(j, &b)) return -1;
    int64_t ok = 0;
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(b, &pos, &r) == 1) {
        em_tuple t;
        int64_t k = em_i64_dec(r.key);
        if (em_tuple_unpack(r.val, r.vlen, &t) || t.blen != 8 || em_i64_dec(t.b) != 10 * k) continue;
        int good = t.alen == 8 * (6 + (size_t)(k % 7));
        for (size_t i = 0; good && i < t.alen / 8; i++) good = em_i64_dec((const uint8_t *)t.a + 8 * i) == k + (int64_t)i;
        ok += good;
    }
    em_batch_free(b);
    return ok;
}

TEST(join_streams_a_cached_side_by_address) {
    em_ctx *c = em_open("local[2]", NULL);
    CHECK(c);
    em_rdd *keys = em_range(c, 0, KEYS, 1, PARTS);
    em_rdd *lists = em_map(keys, list_of, NULL, 0);
    em_rdd *links = em_partition_by(lists, PARTS);
    em_rdd *half = em_range(c, 0, KEYS / 2, 1, PARTS);
    em_rdd *evens = em_map(half, even_pair, NULL, 0);
    em_rdd *ranks = em_partition_by(evens, PARTS);
    CHECK(links && ranks);
    /* Not cached: the lists come from a shuffle read, one by one. */
    uint64_t a0 = hashjoin_by_address();
    em_rdd *j = em_join(links, ranks, PARTS);
    CHECK_EQ_I64(list_joins(j), KEYS / 2);
    CHECK_EQ_I64((int64_t)(hashjoin_by_address() - a0), 0);
    /* Cached: the lists are streamed (the larger side) from the block's
     * bytes, every one by address. */
    em_persist(links, EM_MEMORY_ONLY);
    int64_t n = 0;
    CHECK_OK(em_count(links, &n));
    CHECK_EQ_I64(n, KEYS);
    a0 = hashjoin_by_address();
    em_rdd *j2 = em_join(links, ranks, PARTS);
    CHECK_EQ_I64(list_joins(j2), KEYS / 2);
    CHECK_EQ_I64((int64_t)(hashjoin_by_address() - a0), KEYS);
    em_rdd_release(j2);
    em_rdd_release(j);
    em_rdd_release(ranks);
    em_rdd_release(evens);
    em_rdd_release(half);
    em_rdd_release(links);
    em_rdd_release(lists);
    em_rdd_release(keys);
    em_close(c);
}

/* A task killed inside a cached block's batch stops within
 * RUNNER_CHECK_EVERY records (and the join's queue) of its kill flag: the
 * slow function after the join counts the records it sees once the cancel
 * was made; without the join's own check the whole block (STREAMED
 * records a task) would run. */
#define STREAMED 100000
static int canceling, slow_started;
static int64_t after_cancel;

static int slow_value(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    __atomic_store_n(&slow_started, 1, __ATOMIC_RELEASE);
    if (__atomic_load_n(&canceling, __ATOMIC_ACQUIRE)) __atomic_fetch_add(&after_cancel, 1, __ATOMIC_RELAXED);
    struct timespec t = {0, 20000}; /* 20 us: a block of STREAMED takes 2 s */
    nanosleep(&t, NULL);
    return em_emit_rec(out, in);
}

static int long_value(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    uint8_t k[8], v[64] = {0};
    em_i64_enc(em_i64_dec(in->val), k);
    return em_emit_pair(out, k, 8, v, sizeof v);
}

static void *cancel_once_started(void *c) {
    wait_for(cond_flag, &slow_started, WAIT_MS, "the slow function to run");
    __atomic_store_n(&canceling, 1, __ATOMIC_RELEASE);
    em_cancel_all(c);
    return NULL;
}

TEST(join_cached_batch_killed_within_a_check) {
    em_ctx *c = em_open("local[2]", NULL);
    CHECK(c);
    em_rdd *lk = em_range(c, 0, 2 * STREAMED, 1, 2);
    em_rdd *lv = em_map(lk, long_value, NULL, 0);
    em_rdd *left = em_partition_by(lv, 2);
    em_rdd *rk = em_range(c, 0, 2 * STREAMED, 1, 2);
    em_rdd *rv = em_map(rk, key_pair, NULL, 0);
    em_rdd *right = em_partition_by(rv, 2);
    CHECK(left && right);
    em_persist(left, EM_MEMORY_ONLY);
    int64_t n = 0;
    CHECK_OK(em_count(left, &n));
    CHECK_EQ_I64(n, 2 * STREAMED);
    em_rdd *j = em_join(left, right, 2);
    em_rdd *slow = j ? em_map(j, slow_value, NULL, 0) : NULL;
    CHECK(slow);
    __atomic_store_n(&canceling, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&slow_started, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&after_cancel, 0, __ATOMIC_RELEASE);
    uint64_t a0 = hashjoin_by_address();
    pthread_t th;
    CHECK(pthread_create(&th, NULL, cancel_once_started, c) == 0);
    CHECK_EQ_I64(em_count(slow, &n), EM_ECANCELED);
    pthread_join(th, NULL);
    CHECK(hashjoin_by_address() > a0); /* the block streamed by address */
    /* Each of the two tasks sees a check's worth of records and the join's
     * queue after its kill flag is set, and what passes while the cancel
     * reaches it (generously bounded: a slow sanitizer build); a task
     * that never looked would see all of its STREAMED. */
    CHECK(__atomic_load_n(&after_cancel, __ATOMIC_ACQUIRE) < STREAMED / 2);
    em_rdd_release(slow);
    em_rdd_release(j);
    em_rdd_release(right);
    em_rdd_release(rv);
    em_rdd_release(rk);
    em_rdd_release(left);
    em_rdd_release(lv);
    em_rdd_release(lk);
    em_close(c);
}
