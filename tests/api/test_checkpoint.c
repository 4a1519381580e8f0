/*
 * test_checkpoint.c -- em_checkpoint (Spark's reliable checkpoint) and
 * lineages too deep for recursion: 10,000 chained maps, thousands of
 * alternating unions and joins, and an iterative job that checkpoints
 * every 10 steps for 1,000 steps with flat counts of live RDDs, shuffles,
 * stages and files.  Every answer is checked against a direct computation.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ember.h"
#include "helpers.h"
#include "../test.h"

/* v -> v + 1 on plain int64 records. */
static int ck_inc(const em_rec *in, em_emitter *out, const void *arg) { return em_emit_i64(out, rec_i64(in) + 1); }
static int64_t plus_one(int64_t v) { return v + 1; }

/* On a pair's int64 value: v -> v + 1. */
static int ck_inc_value(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_i64(out, em_i64_dec(in->val) + 1);
}

/* A join's value (tuple of two int64s) -> their sum. */
static int ck_tuple_sum(const em_rec *in, em_emitter *out, const void *arg) {
    em_tuple t;
    if (em_tuple_unpack(in->val, in->vlen, &t) || !t.a_present || !t.b_present || t.alen != 8 || t.blen != 8)
        return em_fail("ck_tuple_sum: not a tuple of two int64s");
    return em_emit_i64(out, em_i64_dec(t.a) + em_i64_dec(t.b));
}

/* Entries (files and directories) under path, recursively; -1 if absent. */
static int count_entries(const char *path) {
    DIR *d = opendir(path);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[4096];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        n++;
        if (!lstat(p, &st) && S_ISDIR(st.st_mode)) n += count_entries(p);
    }
    closedir(d);
    return n;
}

static em_ctx *ckpt_ctx(const char *dir, int clean) {
    em_ctx *c = open_test_ctx_with("ember.checkpoint.dir", dir);
    if (c && clean && em_set(c, "ember.cleaner.referenceTracking.cleanCheckpoints", "true")) {
        em_close(c);
        return NULL;
    }
    return c;
}

/* The records 0..n-1 (+ add) in order. */
static int collect_is_seq(em_rdd *r, int64_t n, int64_t add) {
    em_batch *b;
    if (em_collect(r, &b)) return 0;
    int ok = (int64_t)em_batch_count(b) == n;
    for (int64_t i = 0; ok && i < n; i++) ok = batch_i64_at(b, (size_t)i) == i + add;
    em_batch_free(b);
    return ok;
}

TEST(api_checkpoint_truncates_lineage) {
    const char *dir = tmp_path("ckpt_basic");
    em_ctx *c = ckpt_ctx(dir, 0);
    CHECK(c);
    em_rdd *src = em_range(c, 0, 1000, 1, 4);
    em_rdd *r = em_map(src, ck_inc, NULL, 0);
    CHECK(src && r);
    em_rdd_release(src);
    CHECK_OK(em_checkpoint(r));
    CHECK_OK(em_checkpoint(r)); /* marking twice is harmless */
    CHECK_EQ_I64(em_is_checkpointed(r), 0);
    CHECK(em_checkpoint_file(r) == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "not checkpointed");
    int64_t n = 0;
    CHECK_OK(em_count(r, &n));
    CHECK_EQ_I64(n, 1000);
    CHECK_EQ_I64(em_is_checkpointed(r), 1);
    char *f = em_checkpoint_file(r);
    CHECK(f);
    CHECK(!strncmp(f, dir, strlen(dir)));
    /* One file per partition, nothing else (no temporary left). */
    CHECK_EQ_I64(count_entries(f), 4);
    char part[4200];
    for (int i = 0; i < 4; i++) {
        struct stat st;
        snprintf(part, sizeof part, "%s/part-%05d", f, i);
        CHECK(!stat(part, &st) && st.st_size > 24);
    }
    char *l = em_lineage(r);
    CHECK_STR_CONTAINS(l, "(4) map[");
    CHECK_STR_CONTAINS(l, "checkpoint[");
    CHECK_STR_CONTAINS(l, f);
    CHECK(!strstr(l, "range")); /* the parents are gone */
    free(l);
    free(f);
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.live_rdds, 1); /* the range was freed with the lineage */
    CHECK(collect_is_seq(r, 1000, 1));
    em_rdd *r2 = em_map(r, ck_inc, NULL, 0);
    CHECK(collect_is_seq(r2, 1000, 2));
    em_rdd_release(r2);
    em_rdd_release(r);
    em_close(c);
    /* Spark's default keeps the files after the application. */
    CHECK_EQ_I64(count_entries(dir), 1 + 1 + 4);
}

TEST(api_checkpoint_needs_dir) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *r = em_range(c, 0, 10, 1, 2);
    CHECK_EQ_I64(em_checkpoint(r), EM_ESTATE);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.checkpoint.dir");
    CHECK_EQ_I64(em_checkpoint(NULL), EM_EINVAL);
    CHECK_EQ_I64(em_is_checkpointed(NULL), EM_EINVAL);
    CHECK(em_checkpoint_file(NULL) == NULL);
    int64_t n;
    CHECK_OK(em_count(r, &n));
    CHECK_EQ_I64(em_is_checkpointed(r), 0);
    em_close(c);
}

/* A shuffled RDD: its own shuffle and its parents' go with the lineage. */
TEST(api_checkpoint_shuffled) {
    const char *dir = tmp_path("ckpt_shuffled");
    em_ctx *c = ckpt_ctx(dir, 1);
    CHECK(c);
    int64_t m = 7;
    em_rdd *src = em_range(c, 0, 5000, 1, 3);
    em_rdd *pairs = em_map(src, fn_mod_key, &m, sizeof m);
    em_rdd *sums = em_reduce_by_key(pairs, fn_sum_i64, NULL, 0, 4);
    CHECK(sums);
    em_rdd_release(src);
    em_rdd_release(pairs);
    CHECK_OK(em_checkpoint(sums));
    em_batch *b;
    CHECK_OK(em_collect(sums, &b));
    CHECK(check_mod_sums(b, 5000, m));
    em_batch_free(b);
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.live_shuffles, 0);
    CHECK_EQ_I64(st.live_stages, 0);
    CHECK_EQ_I64(st.live_rdds, 1);
    int64_t before = st.stages_run;
    CHECK_OK(em_collect(sums, &b)); /* read from the files: one stage */
    CHECK(check_mod_sums(b, 5000, m));
    em_batch_free(b);
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.stages_run - before, 1);
    /* lookup still scans one partition: the partitioner is kept */
    uint8_t k[8];
    em_i64_enc(3, k);
    CHECK_OK(em_lookup(sums, k, 8, &b));
    CHECK_EQ_I64(em_batch_count(b), 1);
    em_batch_free(b);
    char *f = em_checkpoint_file(sums);
    CHECK(f && count_entries(f) == 4);
    em_rdd_release(sums); /* cleanCheckpoints: its files go with it */
    CHECK_EQ_I64(count_entries(f), -1);
    free(f);
    em_close(c);
    CHECK_EQ_I64(count_entries(dir), 0); /* the context's directory too */
}

/* Empty RDDs and empty partitions are checkpointed like any other. */
TEST(api_checkpoint_empty) {
    const char *dir = tmp_path("ckpt_empty");
    em_ctx *c = ckpt_ctx(dir, 1);
    CHECK(c);
    em_rdd *e = em_empty(c);
    CHECK_OK(em_checkpoint(e));
    int64_t n = -1;
    CHECK_OK(em_count(e, &n));
    CHECK_EQ_I64(n, 0);
    CHECK_EQ_I64(em_is_checkpointed(e), 1);
    em_rdd *r = em_range(c, 0, 3, 1, 8); /* five empty partitions */
    CHECK_OK(em_checkpoint(r));
    CHECK(collect_is_seq(r, 3, 0));
    CHECK_EQ_I64(em_is_checkpointed(r), 1);
    char *f = em_checkpoint_file(r);
    CHECK(f && count_entries(f) == 8);
    free(f);
    CHECK(collect_is_seq(r, 3, 0));
    em_close(c);
    CHECK_EQ_I64(count_entries(dir), 0);
}

/* Persisting first, as Spark advises: the writing job reads the cache, so
 * the function runs once per record, not twice. */
TEST(api_checkpoint_reads_cache) {
    em_ctx *c = ckpt_ctx(tmp_path("ckpt_cache"), 1);
    CHECK(c);
    em_acc calls = em_acc_i64(c, "calls");
    em_rdd *src = em_range(c, 0, 200, 1, 2);
    em_rdd *plain = em_map(src, fn_count_calls, &calls, sizeof calls);
    CHECK_OK(em_checkpoint(plain));
    int64_t n;
    CHECK_OK(em_count(plain, &n));
    CHECK_EQ_I64(em_acc_value_i64(c, calls), 400); /* the count's job and the checkpoint's */
    em_rdd *kept = em_persist(em_map(src, fn_count_calls, &calls, sizeof calls), EM_MEMORY_ONLY);
    CHECK_OK(em_checkpoint(kept));
    CHECK_OK(em_count(kept, &n));
    CHECK_EQ_I64(n, 200);
    CHECK_EQ_I64(em_acc_value_i64(c, calls), 600);
    CHECK_EQ_I64(em_is_checkpointed(kept), 1);
    char *l = em_lineage(kept);
    CHECK_STR_CONTAINS(l, "Memory");
    CHECK_STR_CONTAINS(l, "checkpoint[");
    free(l);
    CHECK(collect_is_seq(kept, 200, 0));
    CHECK_EQ_I64(em_acc_value_i64(c, calls), 600); /* from the cache */
    em_close(c);
}

static int corrupt_part(const char *dir, int part, int unlink_it) {
    char p[4200];
    snprintf(p, sizeof p, "%s/part-%05d", dir, part);
    if (unlink_it) return unlink(p);
    int fd = open(p, O_RDWR);
    uint8_t b;
    int ok = fd >= 0 && pread(fd, &b, 1, 30) == 1;
    b ^= 0x40;
    ok = ok && pwrite(fd, &b, 1, 30) == 1;
    if (fd >= 0) close(fd);
    return ok ? 0 : -1;
}

/* A corrupt or lost file fails the job, naming the file: the lineage that
 * could recompute it is gone. */
TEST(api_checkpoint_corrupt_or_lost_file) {
    em_ctx *c = ckpt_ctx(tmp_path("ckpt_bad"), 1);
    CHECK(c);
    CHECK_OK(em_set(c, "ember.task.maxFailures", "2"));
    em_rdd *r = em_map(em_range(c, 0, 100, 1, 4), ck_inc, NULL, 0);
    CHECK_OK(em_checkpoint(r));
    int64_t n;
    CHECK_OK(em_count(r, &n));
    CHECK_EQ_I64(n, 100);
    /* What the files hold, read back, before they are damaged. */
    em_batch *b = NULL;
    CHECK_OK(em_collect(r, &b));
    int exact = expect_range(b, 100, plus_one, "the checkpointed records");
    em_batch_free(b);
    CHECK(exact);
    b = NULL;
    char *f = em_checkpoint_file(r);
    CHECK(f);
    CHECK_OK(corrupt_part(f, 1, 0));
    CHECK_EQ_I64(em_collect(r, &b), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "checkpoint file");
    CHECK_STR_CONTAINS(em_errmsg(), "part-00001");
    CHECK_STR_CONTAINS(em_errmsg(), "crc mismatch");
    CHECK_OK(corrupt_part(f, 2, 1));
    CHECK_EQ_I64(em_count(em_filter(r, fn_even_i64, NULL, 0), &n), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "part-0000");
    CHECK(strstr(em_errmsg(), "crc mismatch") || strstr(em_errmsg(), "No such file"));
    CHECK_OK(corrupt_part(f, 1, 1));
    CHECK_EQ_I64(em_count(r, &n), EM_EJOB);
    CHECK_STR_CONTAINS(em_errmsg(), "No such file");
    CHECK_STR_CONTAINS(em_errmsg(), f);
    free(f);
    /* the context goes on */
    CHECK_OK(em_collect(em_range(c, 0, 10, 1, 2), &b));
    exact = expect_range(b, 10, NULL, "the next job");
    em_batch_free(b);
    CHECK(exact);
    em_close(c);
}

/* 10,000 chained maps: built, run, drawn and freed without recursion. */
static void deep_maps(void) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rdd *r = em_range(c, 0, 100, 1, 2);
    for (int i = 0; i < 10000; i++) {
        em_rdd *next = em_map(r, ck_inc, NULL, 0);
        CHECK(next);
        em_rdd_release(r);
        r = next;
    }
    CHECK(collect_is_seq(r, 100, 10000));
    char *l = em_lineage(r);
    CHECK_STR_CONTAINS(l, "(2) map[");
    CHECK_STR_CONTAINS(l, "...");
    free(l);
    em_stats st;
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.live_rdds, 10001);
    em_rdd_release(r); /* frees the whole chain */
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.live_rdds, 0);
    em_close(c);
}

TEST(api_lineage_10000_maps) { deep_maps(); }

static void *deep_maps_thread(void *arg) {
    deep_maps();
    return NULL;
}

/* The driver's own walks (declaring, releasing, drawing, finding
 * checkpoints) on a thread with a 256 KiB stack. */
TEST(api_lineage_10000_maps_small_stack) {
    pthread_attr_t a;
    pthread_t t;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 * 1024);
    CHECK(!pthread_create(&t, &a, deep_maps_thread, NULL));
    pthread_join(t, NULL);
    pthread_attr_destroy(&a);
}

/* Unions and joins alternating, 10,500 RDDs and 3,000 shuffles in one
 * job: r := map_values(join(union(r, noise), ones)) adds 1 to each key's
 * value; the noise's keys are not in `ones`, so the join drops them. */
TEST(api_lineage_unions_joins_deep) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    em_rec recs[4], noise_recs[2], one_recs[4];
    uint8_t kb[8][8], zero[8], one[8];
    em_i64_enc(0, zero);
    em_i64_enc(1, one);
    for (int k = 0; k < 4; k++) {
        em_i64_enc(k, kb[k]);
        recs[k] = (em_rec){kb[k], 8, zero, 8};
        one_recs[k] = (em_rec){kb[k], 8, one, 8};
    }
    for (int k = 0; k < 2; k++) {
        em_i64_enc(100 + k, kb[4 + k]);
        noise_recs[k] = (em_rec){kb[4 + k], 8, zero, 8};
    }
    em_rdd *r = em_parallelize(c, recs, 4, 2);
    em_rdd *noise = em_parallelize(c, noise_recs, 2, 1);
    em_rdd *ones = em_parallelize(c, one_recs, 4, 2);
    CHECK(r && noise && ones);
    const int steps = 1500;
    for (int i = 0; i < steps; i++) {
        em_rdd *u = em_union(r, noise);
        em_rdd *j = em_join(u, ones, 2);
        em_rdd *next = em_map_values(j, ck_tuple_sum, NULL, 0);
        CHECK(next);
        em_rdd_release(r);
        em_rdd_release(u);
        em_rdd_release(j);
        r = next;
    }
    em_batch *b;
    CHECK_OK(em_collect(r, &b));
    CHECK_EQ_I64(em_batch_count(b), 4);
    size_t pos = 0;
    em_rec x;
    int64_t keys = 0;
    while (em_batch_next(b, &pos, &x) == 1) {
        keys += em_i64_dec(x.key);
        CHECK_EQ_I64(em_i64_dec(x.val), steps);
    }
    CHECK_EQ_I64(keys, 0 + 1 + 2 + 3);
    em_batch_free(b);
    em_stats st;
    em_get_stats(c, &st);
    /* Each join shuffles both its inputs (neither is hash-partitioned: a
     * union, a parallelized RDD), one shuffle dependency each. */
    CHECK_EQ_I64(st.live_shuffles, 2 * steps);
    em_rdd_release(r);
    em_rdd_release(noise);
    em_rdd_release(ones);
    em_get_stats(c, &st);
    CHECK_EQ_I64(st.live_rdds, 0);
    CHECK_EQ_I64(st.live_shuffles, 0);
    CHECK_EQ_I64(st.live_stages, 0);
    em_close(c);
}

/* An iterative job: 1,000 steps, a shuffle every 10, a checkpoint every
 * 10.  What is alive (RDDs, shuffles, map stages, checkpoint files,
 * scratch bytes) stays the same from one checkpoint to the next, and the
 * answer is exact. */
TEST(api_checkpoint_iterative_1000_steps) {
    const char *dir = tmp_path("ckpt_iter");
    em_ctx *c = ckpt_ctx(dir, 1);
    CHECK(c);
    em_rec recs[8];
    uint8_t kb[8][8], zero[8];
    em_i64_enc(0, zero);
    for (int k = 0; k < 8; k++) {
        em_i64_enc(k, kb[k]);
        recs[k] = (em_rec){kb[k], 8, zero, 8};
    }
    em_rdd *r = em_parallelize(c, recs, 8, 2);
    CHECK(r);
    int64_t first[5] = {0}, scratch0 = -1;
    int files0 = -1;
    for (int i = 1; i <= 1000; i++) {
        em_rdd *next = i % 10 == 5 ? em_reduce_by_key(r, fn_sum_i64, NULL, 0, 2) : em_map_values(r, ck_inc_value, NULL, 0);
        CHECK(next);
        em_rdd_release(r);
        r = next;
        if (i % 10) continue;
        CHECK_OK(em_checkpoint(em_persist(r, EM_MEMORY_ONLY)));
        int64_t n;
        CHECK_OK(em_count(r, &n));
        CHECK_EQ_I64(n, 8);
        CHECK_EQ_I64(em_is_checkpointed(r), 1);
        em_stats st;
        em_get_stats(c, &st);
        int files = count_entries(dir);
        if (i == 20) { /* from the second checkpoint on, nothing grows */
            first[0] = st.live_rdds;
            first[1] = st.live_shuffles;
            first[2] = st.live_stages;
            scratch0 = st.scratch_bytes;
            files0 = files;
        } else if (i > 20) {
            CHECK_EQ_I64(st.live_rdds, first[0]);
            CHECK_EQ_I64(st.live_shuffles, first[1]);
            CHECK_EQ_I64(st.live_stages, first[2]);
            /* (in cluster mode the scratch directory also holds the
             * executors' logs, which grow) */
            if (!strncmp(em_get(c, "ember.master"), "local[", 6)) CHECK_EQ_I64(st.scratch_bytes, scratch0);
            CHECK_EQ_I64(files, files0);
        }
    }
    CHECK_EQ_I64(first[0], 1);
    CHECK_EQ_I64(first[1], 0);
    CHECK_EQ_I64(files0, 1 + 1 + 2); /* checkpoint-XXXXXX, rdd-ID, two parts */
    em_batch *b;
    CHECK_OK(em_collect(r, &b));
    CHECK_EQ_I64(em_batch_count(b), 8);
    size_t pos = 0;
    em_rec x;
    while (em_batch_next(b, &pos, &x) == 1) CHECK_EQ_I64(em_i64_dec(x.val), 900); /* 1,000 steps, 100 of them shuffles */
    em_batch_free(b);
    em_rdd_release(r);
    em_close(c);
    CHECK_EQ_I64(count_entries(dir), 0);
}
