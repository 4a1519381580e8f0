/*
 * test_shuffle.c -- shuffle write + read in every mode, with expected
 * results computed independently here; spills under tiny budgets; fetch
 * failures; early stop; and that no temporary or spill file is left.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "bigbuf.h"
#include "err.h"
#include "recfmt.h"
#include "shuffle.h"
#include "shuffle_files.h"
#include "shuffle_index.h"
#include "sizehint.h"

#define MEM_NONE ((bf_codec){BF_NONE, 0})

/* ------------------------------------------------------------ helpers */

/* int64 sums: the aggregation the tests use. */
static int sum_create(void *ctx, const em_rec *v, ebuf *out) {
    if (v->vlen != 8) return em_fail("bad value length %zu", v->vlen);
    return ebuf_append(out, v->val, 8);
}
static int sum_merge(void *ctx, const em_rec *c, const em_rec *v, ebuf *out) {
    if (c->vlen != 8 || v->vlen != 8) return em_fail("bad lengths");
    uint8_t b[8];
    em_i64_enc(em_i64_dec(c->val) + em_i64_dec(v->val), b);
    return ebuf_append(out, b, 8);
}
static const agg_spec SUM = {.create = sum_create, .merge_value = sum_merge, .merge_comb = sum_merge};
/* The same sums as the builtin em_sum_i64, combined in place. */
static const agg_spec SUM_BUILTIN = {.create = sum_create, .merge_value = sum_merge, .merge_comb = sum_merge,
                                     .builtin = CB_SUM_I64, .create_identity = 1};

static int part_hash(void *pctx, const em_rec *r) {
    int n = *(const int *)pctx;
    return (int)(em_hash(r->key, r->klen) % (uint64_t)n);
}

/* The records of a map task: (key, value) int64 pairs from gen. */
typedef void (*gen_fn)(uint32_t map, size_t i, int64_t *k, int64_t *v);

typedef struct wcfg {
    const char *dir;
    uint32_t shuffle_id;
    int nmaps, nparts;
    size_t nrec;          /* records per map */
    gen_fn gen;
    const agg_spec *combine;
    size_t mem_budget;
    size_t block_bytes;
    sw_result res;        /* of the last map */
    uint64_t records;     /* written, all maps */
    int64_t spills;
    memout_store *mem;    /* outputs may be kept here (NULL: files) */
} wcfg;

/* NULL, or record i of map m's key and value widths for write_maps: the
 * last bytes of their 8-byte encodings (up to 8). */
static void (*write_shape)(uint32_t m, size_t i, size_t *kw, size_t *vw);

static int write_maps(wcfg *c) {
    c->records = 0;
    c->spills = 0;
    for (int m = 0; m < c->nmaps; m++) {
        sw_opts o = {c->dir, c->shuffle_id, (uint32_t)m, 0, c->nparts, part_hash, &c->nparts, c->combine,
                     c->mem_budget ? c->mem_budget : 1 << 20, {BF_LZ4, 0}, c->block_bytes ? c->block_bytes : 4096, c->mem, NULL};
        shuffle_writer *w = sw_open(&o);
        if (!w) return -1;
        for (size_t i = 0; i < c->nrec; i++) {
            int64_t k, v;
            uint8_t kb[8], vb[8];
            c->gen((uint32_t)m, i, &k, &v);
            em_i64_enc(k, kb);
            em_i64_enc(v, vb);
            em_rec r = {kb, 8, vb, 8};
            if (write_shape) {
                write_shape((uint32_t)m, i, &r.klen, &r.vlen);
                r.key = kb + 8 - r.klen;
                r.val = vb + 8 - r.vlen;
            }
            int rc = sw_add(w, &r);
            if (rc) {
                sw_abort(w);
                return rc;
            }
        }
        free(c->res.seg_bytes);
        int rc = sw_commit(w, &c->res);
        if (rc) return rc;
        c->records += c->res.records;
        c->spills += c->res.spills;
    }
    return 0;
}

/* A sink collecting records into a batch-encoded buffer. */
typedef struct collect {
    ebuf buf;
    size_t n, stop_after;
} collect;

static int collect_sink(void *ctx, const em_rec *r) {
    collect *c = ctx;
    if (rec_append(&c->buf, r)) return EM_ENOMEM;
    c->n++;
    return c->stop_after && c->n >= c->stop_after ? EM_STOP : 0;
}

static int collect_next(const collect *c, size_t *pos, em_rec *r) {
    if (*pos >= c->buf.len) return 0;
    size_t n = rec_get(c->buf.p + *pos, c->buf.p + c->buf.len, r);
    *pos += n;
    return n > 0;
}

static const char *dirs_of(const char *dir, int nmaps, const char **dirs) {
    for (int m = 0; m < nmaps; m++) dirs[m] = dir;
    return dir;
}

static sr_opts ropts(const char *const *dirs, uint32_t sid, int reduce, int nmaps, enum sr_mode mode,
                     const char *spill_dir, size_t budget) {
    sr_opts o = {sid, reduce, nmaps, dirs, NULL, mode, &SUM, 0, 0, budget, spill_dir, {BF_ZSTD, 1}, 4096, NULL, 0, NULL, NULL, NULL, 0, NULL, 0};
    return o;
}

/* A fresh subdirectory of the test's temporary directory. */
static const char *subdir(const char *name) {
    static char bufs[4][512];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, 512, "%s/%s", test_tmpdir(), name);
    mkdir(b, 0755);
    return b;
}

/* Whether dir holds only committed map outputs (no temporary or spill
 * files); with allow_outputs == 0 it must be empty. */
static int dir_clean(const char *dir, int allow_outputs) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int ok = 1;
    if (!d) return 0;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..")) continue;
        size_t l = strlen(n);
        int output = !strncmp(n, "shuffle_", 8) && !strchr(n, '-') &&
                     ((l > 5 && !strcmp(n + l - 5, ".data")) || (l > 6 && !strcmp(n + l - 6, ".index")));
        if (!allow_outputs || !output) {
            fprintf(stderr, "  leftover file %s/%s\n", dir, n);
            ok = 0;
        }
    }
    closedir(d);
    return ok;
}

static int64_t key_of(const em_rec *r) { return em_i64_dec(r->key); }
static int64_t val_of(const em_rec *r) { return em_i64_dec(r->val); }

/* ----------------------------------------------------------- generators */

#define NKEYS 500
static void gen_small(uint32_t m, size_t i, int64_t *k, int64_t *v) {
    *k = (int64_t)((i * 7 + m * 13) % NKEYS) - 100; /* negative keys too */
    *v = (int64_t)(i % 10) + m;
}

/* Unique keys: a bijection of (map, i) scrambled by an odd multiplier. */
static void gen_unique(uint32_t m, size_t i, int64_t *k, int64_t *v) {
    uint64_t x = ((uint64_t)m << 32 | i) * 0x9E3779B97F4A7C15ull;
    *k = (int64_t)x;
    *v = (int64_t)(m * 1000000 + i);
}

/* ------------------------------------------------------------------ tests */

TEST(shuffle_pass_exact_order) {
    const char *dir = subdir("out"), *dirs[3];
    dirs_of(dir, 3, dirs);
    wcfg c = {dir, 1, 3, 4, 5000, gen_small, NULL, 0, 0, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    CHECK_EQ_I64(c.records, 15000);
    uint64_t total = 0;
    for (int r = 0; r < 4; r++) {
        collect col = {EBUF_INIT, 0, 0};
        sr_stats st;
        sr_opts o = ropts(dirs, 1, r, 3, SR_PASS, dir, 1 << 20);
        CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
        CHECK_EQ_I64(st.records_read, col.n);
        CHECK(st.bytes_read > 0);
        /* Expected: map 0's records of partition r in order, then map 1's... */
        size_t pos = 0;
        em_rec got;
        for (uint32_t m = 0; m < 3; m++)
            for (size_t i = 0; i < 5000; i++) {
                int64_t k, v;
                uint8_t kb[8];
                gen_small(m, i, &k, &v);
                em_i64_enc(k, kb);
                if ((int)(em_hash(kb, 8) % 4) != r) continue;
                CHECK(collect_next(&col, &pos, &got));
                CHECK_EQ_I64(key_of(&got), k);
                CHECK_EQ_I64(val_of(&got), v);
            }
        CHECK(!collect_next(&col, &pos, &got));
        total += col.n;
        ebuf_free(&col.buf);
    }
    CHECK_EQ_I64(total, 15000);
    free(c.res.seg_bytes);
    CHECK(dir_clean(dir, 1));
}

/* Sums per key expected from gen over nmaps x nrec records. */
static void expected_sums(gen_fn gen, int nmaps, size_t nrec, int64_t *sum, int *seen) {
    memset(sum, 0, NKEYS * sizeof *sum);
    memset(seen, 0, NKEYS * sizeof *seen);
    for (int m = 0; m < nmaps; m++)
        for (size_t i = 0; i < nrec; i++) {
            int64_t k, v;
            gen((uint32_t)m, i, &k, &v);
            sum[k + 100] += v;
            seen[k + 100] = 1;
        }
}

TEST(shuffle_agg_exact_sums) {
    const char *dir = subdir("out"), *dirs[4];
    dirs_of(dir, 4, dirs);
    wcfg c = {dir, 2, 4, 3, 20000, gen_small, NULL, 0, 0, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    int64_t sum[NKEYS];
    int seen[NKEYS];
    expected_sums(gen_small, 4, 20000, sum, seen);
    int nkeys = 0;
    for (int r = 0; r < 3; r++) {
        collect col = {EBUF_INIT, 0, 0};
        sr_stats st;
        sr_opts o = ropts(dirs, 2, r, 4, SR_AGG, dir, 1 << 20);
        CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
        CHECK_EQ_I64(st.spills, 0);
        size_t pos = 0;
        em_rec rec;
        while (collect_next(&col, &pos, &rec)) {
            int64_t k = key_of(&rec) + 100;
            CHECK(k >= 0 && k < NKEYS && seen[k] == 1);
            seen[k] = 2; /* each key once */
            CHECK_EQ_I64(val_of(&rec), sum[k]);
            nkeys++;
        }
        ebuf_free(&col.buf);
    }
    CHECK_EQ_I64(nkeys, NKEYS);
    free(c.res.seg_bytes);
}

/* Keys that repeat locally: 50 keys per stretch of 5000 records, 500 in
 * all, so a small combine table combines well within a stretch. */
static void gen_local(uint32_t m, size_t i, int64_t *k, int64_t *v) {
    *k = (int64_t)(i % 50 + 50 * ((i / 5000 + m) % 10)) - 100;
    *v = (int64_t)(i % 10) + m;
}

/* Map-side combining with a tiny budget: the table is flushed several
 * times per map, so more records than keys are written, yet the reduce
 * side's sums are exact. */
TEST(shuffle_map_side_combine_flushes) {
    const char *dir = subdir("out"), *dirs[3];
    dirs_of(dir, 3, dirs);
    wcfg c = {dir, 3, 3, 4, 50000, gen_local, &SUM, 8192, 0, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    CHECK(c.records > 3 * NKEYS);       /* each map sees every key: partial */
    CHECK(c.records < 3 * 50000 / 10);  /* but it combined */
    int64_t sum[NKEYS];
    int seen[NKEYS], nkeys = 0;
    uint64_t nread = 0;
    expected_sums(gen_local, 3, 50000, sum, seen);
    for (int r = 0; r < 4; r++) {
        collect col = {EBUF_INIT, 0, 0};
        sr_stats st;
        sr_opts o = ropts(dirs, 3, r, 3, SR_AGG, dir, 1 << 20);
        o.map_side_combined = 1;
        CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
        nread += st.records_read;
        size_t pos = 0;
        em_rec rec;
        while (collect_next(&col, &pos, &rec)) {
            int64_t k = key_of(&rec) + 100;
            CHECK(seen[k] == 1);
            seen[k] = 2;
            CHECK_EQ_I64(val_of(&rec), sum[k]);
            nkeys++;
        }
        ebuf_free(&col.buf);
    }
    CHECK_EQ_I64(nkeys, NKEYS);
    CHECK_EQ_I64(nread, c.records);
    /* A generous budget combines each map completely. */
    wcfg c2 = {dir, 4, 3, 4, 50000, gen_local, &SUM, 1 << 20, 0, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c2));
    CHECK_EQ_I64(c2.records, 3 * NKEYS);
    free(c.res.seg_bytes);
    free(c2.res.seg_bytes);
    CHECK(dir_clean(dir, 1));
}

/* Distinct keys for the first 100,000 records of a map, then 10 keys. */
static void gen_adapt(uint32_t m, size_t i, int64_t *k, int64_t *v) {
    *k = i < 100000 ? 1000000 * (int64_t)(m + 1) + (int64_t)i : (int64_t)(i % 10);
    *v = 1;
}

/* Adaptive partial aggregation: a map whose first 100,000 records hardly
 * combine stops combining (every record is written), one whose keys repeat
 * keeps combining; the reduce side's sums are exact either way, with the
 * spec's functions and with the builtin sum. */
TEST(shuffle_map_side_combine_adapts) {
    const char *dir = subdir("out"), *dirs[2];
    dirs_of(dir, 2, dirs);
    const agg_spec *specs[2] = {&SUM, &SUM_BUILTIN};
    for (int s = 0; s < 2; s++) {
        uint32_t sid = (uint32_t)(20 + s);
        wcfg c = {dir, sid, 2, 4, 150000, gen_adapt, specs[s], 64 << 20, 0, {0}, 0, 0, NULL};
        CHECK_OK(write_maps(&c));
        CHECK_EQ_I64(c.records, 2 * 150000); /* 100,000 keys dumped, then 50,000 passed */
        int64_t small[10] = {0}, uniq = 0, nread = 0;
        for (int r = 0; r < 4; r++) {
            collect col = {EBUF_INIT, 0, 0};
            sr_stats st;
            sr_opts o = ropts(dirs, sid, r, 2, SR_AGG, dir, 1 << 20);
            o.agg = specs[s];
            o.map_side_combined = 1;
            CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
            nread += (int64_t)st.records_read;
            size_t pos = 0;
            em_rec rec;
            while (collect_next(&col, &pos, &rec)) {
                int64_t k = key_of(&rec);
                if (k >= 0 && k < 10) small[k] += val_of(&rec);
                else if (val_of(&rec) == 1) uniq++;
            }
            ebuf_free(&col.buf);
        }
        CHECK_EQ_I64(nread, 2 * 150000);
        CHECK_EQ_I64(uniq, 2 * 100000);
        for (int k = 0; k < 10; k++) CHECK_EQ_I64(small[k], 2 * 5000);
        free(c.res.seg_bytes);
        /* 500 keys from the start: combined completely. */
        wcfg c2 = {dir, sid + 10, 2, 4, 150000, gen_small, specs[s], 64 << 20, 0, {0}, 0, 0, NULL};
        CHECK_OK(write_maps(&c2));
        CHECK_EQ_I64(c2.records, 2 * NKEYS);
        free(c2.res.seg_bytes);
    }
    CHECK(dir_clean(dir, 1));
}

/* (sum, count) of int64 values: a 16-byte combiner that create makes of
 * a value, so that records passed uncombined cannot go as combiners; each
 * function's calls counted. */
static int64_t cs_creates, cs_merges, cs_combs;
static int cs_put(ebuf *out, int64_t sum, int64_t n) {
    uint8_t b[16];
    em_i64_enc(sum, b);
    em_i64_enc(n, b + 8);
    return ebuf_append(out, b, 16);
}
static int cs_create(void *ctx, const em_rec *v, ebuf *out) {
    if (v->vlen != 8) return em_fail("create: value of %zu bytes", v->vlen);
    cs_creates++;
    return cs_put(out, em_i64_dec(v->val), 1);
}
static int cs_merge_value(void *ctx, const em_rec *c, const em_rec *v, ebuf *out) {
    if (c->vlen != 16 || v->vlen != 8) return em_fail("merge_value: %zu and %zu bytes", c->vlen, v->vlen);
    cs_merges++;
    const uint8_t *cb = c->val;
    return cs_put(out, em_i64_dec(cb) + em_i64_dec(v->val), em_i64_dec(cb + 8) + 1);
}
static int cs_merge_comb(void *ctx, const em_rec *x, const em_rec *y, ebuf *out) {
    if (x->vlen != 16 || y->vlen != 16) return em_fail("merge_comb: %zu and %zu bytes", x->vlen, y->vlen);
    cs_combs++;
    const uint8_t *a = x->val, *b = y->val;
    return cs_put(out, em_i64_dec(a) + em_i64_dec(b), em_i64_dec(a + 8) + em_i64_dec(b + 8));
}
static const agg_spec COUNTSUM = {.create = cs_create, .merge_value = cs_merge_value, .merge_comb = cs_merge_comb};

/* A map task that gives up combining with a user create writes the rest
 * of its records as values, in blocks marked BF_VALUES, calling no user
 * function for them; the reduce side creates or merges those as values
 * and the combiners before them as combiners: the counts of each call are
 * exact, and so are the (sum, count) pairs.  The same kept in memory
 * uncompressed, front coded, and spilled from memory to files (blocks
 * coded again keep their mark). */
TEST(shuffle_adapt_passes_values) {
    const char *dir = subdir("values"), *dirs[2];
    dirs_of(dir, 2, dirs);
    memout_store *plain = memout_new(1 << 20, 64 << 20, MEM_NONE);
    memout_store *prefix = memout_new(1 << 20, 64 << 20, (bf_codec){BF_PREFIX, 0});
    CHECK(plain && prefix);
    memout_store *stores[4] = {NULL, plain, prefix, prefix};
    for (int s = 0; s < 4; s++) {
        uint32_t sid = (uint32_t)(40 + s);
        cs_creates = cs_merges = cs_combs = 0;
        wcfg c = {dir, sid, 2, 4, 150000, gen_adapt, &COUNTSUM, s == 3 ? 256 << 10 : 64 << 20, 0, {0}, 0, 0,
                  stores[s]};
        CHECK_OK(write_maps(&c));
        CHECK_EQ_I64(c.records, 2 * 150000);
        if (s == 3) CHECK(c.spills > 0);
        CHECK_EQ_I64(cs_creates, 2 * 100000); /* the distinct keys before the switch */
        CHECK_EQ_I64(cs_merges + cs_combs, 0);
        cs_creates = 0;
        int64_t sums[10] = {0}, counts[10] = {0}, uniq = 0, nread = 0;
        for (int r = 0; r < 4; r++) {
            collect col = {EBUF_INIT, 0, 0};
            sr_stats st;
            sr_opts o = ropts(dirs, sid, r, 2, SR_AGG, dir, 64 << 20); /* no reduce-side spill */
            o.agg = &COUNTSUM;
            o.map_side_combined = 1;
            o.mem = stores[s];
            CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
            nread += (int64_t)st.records_read;
            size_t pos = 0;
            em_rec rec;
            while (collect_next(&col, &pos, &rec)) {
                CHECK_EQ_I64(rec.vlen, 16);
                int64_t k = key_of(&rec), sum = em_i64_dec(rec.val), n = em_i64_dec((const uint8_t *)rec.val + 8);
                if (k >= 0 && k < 10) {
                    sums[k] += sum;
                    counts[k] += n;
                } else if (sum == 1 && n == 1) {
                    uniq++;
                }
            }
            ebuf_free(&col.buf);
        }
        CHECK_EQ_I64(nread, 2 * 150000);
        CHECK_EQ_I64(uniq, 2 * 100000);
        for (int k = 0; k < 10; k++) {
            CHECK_EQ_I64(sums[k], 2 * 5000);
            CHECK_EQ_I64(counts[k], 2 * 5000);
        }
        /* The ten small keys came only as values: one create each, the
         * rest merged as values; no two combiners met. */
        CHECK_EQ_I64(cs_creates, 10);
        CHECK_EQ_I64(cs_merges, 2 * 50000 - 10);
        CHECK_EQ_I64(cs_combs, 0);
        free(c.res.seg_bytes);
    }
    memout_free(plain);
    memout_free(prefix);
    CHECK(dir_clean(dir, 1));
}

/* 200k records, 5000 keys, 64 KiB budget on the reduce side. */
#define BIGN 200000
#define BIGK 5000
static void gen_bigagg(uint32_t m, size_t i, int64_t *k, int64_t *v) {
    *k = (int64_t)((i * 2654435761u + m) % BIGK);
    *v = (int64_t)(i & 1023) - 300;
}

TEST(shuffle_agg_reduce_spills) {
    const char *dir = subdir("out"), *spill = subdir("spill"), *dirs[2];
    dirs_of(dir, 2, dirs);
    wcfg c = {dir, 5, 2, 1, BIGN / 2, gen_bigagg, NULL, 1 << 20, 0, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    free(c.res.seg_bytes);
    static int64_t sum[BIGK];
    static int seen[BIGK];
    for (uint32_t m = 0; m < 2; m++)
        for (size_t i = 0; i < BIGN / 2; i++) {
            int64_t k, v;
            gen_bigagg(m, i, &k, &v);
            sum[k] += v;
        }
    for (int mc = 0; mc < 1; mc++) {
        collect col = {EBUF_INIT, 0, 0};
        sr_stats st;
        sr_opts o = ropts(dirs, 5, 0, 2, SR_AGG, spill, 64 << 10);
        CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
        CHECK(st.spills > 1);
        CHECK_EQ_I64(st.records_read, BIGN);
        CHECK_EQ_I64(col.n, BIGK);
        size_t pos = 0;
        em_rec rec;
        int64_t prev = -1;
        while (collect_next(&col, &pos, &rec)) {
            int64_t k = key_of(&rec);
            CHECK(k >= 0 && k < BIGK && !seen[k]);
            CHECK(k > prev); /* merged output comes in key order */
            prev = k;
            seen[k] = 1;
            CHECK_EQ_I64(val_of(&rec), sum[k]);
        }
        ebuf_free(&col.buf);
    }
    CHECK(dir_clean(spill, 0));
    CHECK(dir_clean(dir, 1));
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* A user combiner whose width depends on the data: a key's sum is 8 bytes
 * while it is at most grow_limit, and 16 (the sum, then 8 bytes of 0x77)
 * once past it.  Values are positive, so a key's combiner ends 16 bytes
 * wide exactly when its whole sum passes the limit, whatever the order of
 * the merges. */
static int64_t grow_limit;
static void gen_grow(uint32_t m, size_t i, int64_t *k, int64_t *v) {
    *k = (int64_t)((i * 2654435761u + m) % BIGK);
    *v = (int64_t)(i & 1023) + 1;
}
static int grow_create(void *ctx, const em_rec *v, ebuf *out) {
    if (v->vlen != 8) return em_fail("bad value length %zu", v->vlen);
    return ebuf_append(out, v->val, 8);
}
static int grow_merge(void *ctx, const em_rec *c, const em_rec *v, ebuf *out) {
    if ((c->vlen != 8 && c->vlen != 16) || (v->vlen != 8 && v->vlen != 16)) return em_fail("bad lengths");
    int64_t s = em_i64_dec(c->val) + em_i64_dec(v->val);
    uint8_t b[16];
    em_i64_enc(s, b);
    memset(b + 8, 0x77, 8);
    return ebuf_append(out, b, c->vlen == 16 || v->vlen == 16 || s > grow_limit ? 16 : 8);
}
static const agg_spec GROW = {.create = grow_create, .merge_value = grow_merge, .merge_comb = grow_merge};

/* A user's functions (agg_user) over the three buffer functions of
 * user_base, as a by-key operation's reach a table of words (agg_run.c):
 * each emits the one value the buffer function wrote. */
static const agg_spec *user_base;
static int emit_buf(int rc, ebuf *b, em_emitter *out) {
    if (rc >= 0) rc = em_emit(out, b->p, b->len);
    ebuf_free(b);
    return rc;
}
static int user_create(const em_rec *v, em_emitter *out, const void *arg) {
    ebuf b = EBUF_INIT;
    return emit_buf(user_base->create(NULL, v, &b), &b, out);
}
static int user_merge_value(const em_rec *c, const em_rec *v, em_emitter *out, const void *arg) {
    ebuf b = EBUF_INIT;
    return emit_buf(user_base->merge_value(NULL, c, v, &b), &b, out);
}
static int user_merge_comb(const em_rec *c1, const em_rec *c2, em_emitter *out, const void *arg) {
    ebuf b = EBUF_INIT;
    return emit_buf(user_base->merge_comb(NULL, c1, c2, &b), &b, out);
}
static const agg_user USER = {user_create, user_merge_value, user_merge_comb, NULL, {NULL, 0, NULL, 0}, 0, 1 << 20};
/* base, or (word) base with USER, which agg_step calls instead. */
static agg_spec spec_of(const agg_spec *base, int word) {
    agg_spec g = *base;
    user_base = base;
    if (word) g.user = &USER;
    return g;
}

/* The reduce side's 8-byte key table with a user combiner that outgrows
 * 8 bytes part way: the keys move to the general table and every sum and
 * width is still exact, combined or not, spilled or not (spills before
 * and after the move merge together), through the buffer functions or
 * the user's functions. */
TEST(shuffle_agg_user_combiner_changes_width) {
    const char *dir = subdir("out"), *spill_dirs[2] = {subdir("spill-big"), subdir("spill-small")}, *dirs[2];
    dirs_of(dir, 2, dirs);
    wcfg c = {dir, 7, 2, 1, BIGN / 2, gen_grow, NULL, 1 << 20, 0, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    free(c.res.seg_bytes);
    static int64_t sum[BIGK], sorted[BIGK];
    memset(sum, 0, sizeof sum);
    for (uint32_t m = 0; m < 2; m++)
        for (size_t i = 0; i < BIGN / 2; i++) {
            int64_t k, v;
            gen_grow(m, i, &k, &v);
            sum[k] += v;
        }
    memcpy(sorted, sum, sizeof sum);
    qsort(sorted, BIGK, sizeof *sorted, cmp_i64);
    grow_limit = sorted[BIGK / 2]; /* about half the keys end wide */
    int wide_want = 0;
    for (int k = 0; k < BIGK; k++) wide_want += sum[k] > grow_limit;
    CHECK(wide_want > 0 && wide_want < BIGK);
    for (int mode = 0; mode < 8; mode++) { /* combined, spilled, through the user's functions */
        int combined = mode & 1, spill = mode >> 1 & 1;
        agg_spec g = spec_of(&GROW, mode >> 2);
        const char *sp = spill_dirs[spill];
        collect col = {EBUF_INIT, 0, 0};
        sr_stats st;
        static int seen[BIGK];
        memset(seen, 0, sizeof seen);
        sr_opts o = ropts(dirs, 7, 0, 2, SR_AGG, sp, spill ? 16 << 10 : 1 << 20);
        o.agg = &g;
        o.map_side_combined = combined;
        CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
        if (spill) CHECK(st.spills > 1);
        else CHECK_EQ_I64(st.spills, 0);
        CHECK_EQ_I64(st.records_read, BIGN);
        CHECK_EQ_I64(col.n, BIGK);
        size_t pos = 0;
        em_rec rec;
        int wide = 0;
        while (collect_next(&col, &pos, &rec)) {
            int64_t k = key_of(&rec);
            CHECK(k >= 0 && k < BIGK && !seen[k]);
            seen[k] = 1;
            CHECK(rec.vlen == (sum[k] > grow_limit ? 16u : 8u));
            CHECK_EQ_I64(val_of(&rec), sum[k]);
            wide += rec.vlen == 16;
        }
        CHECK_EQ_I64(wide, wide_want);
        ebuf_free(&col.buf);
        CHECK(dir_clean(sp, 0));
    }
}

/* The reduce side's table of keys and combiners of one width each, up
 * to 8 bytes, with a user combiner: 4-byte keys and 4-byte sums, 8-byte
 * keys with 0-byte combiners (distinct keys), 2-byte values summed into
 * 4 bytes, and the same with a few 8-byte keys among the 4-byte ones (the
 * keys move to the general table part way; a key's two widths are two
 * keys).  Exact per key, combined on the map side or not, spilled or
 * not. */
static size_t narrow_kw, narrow_vw, narrow_cw;
static int narrow_mixed;
static void narrow_shape(uint32_t m, size_t i, size_t *kw, size_t *vw) {
    *kw = narrow_mixed && m == 1 && i % 997 == 5 ? 8 : narrow_kw;
    *vw = narrow_vw;
}
static uint64_t be_get(const uint8_t *p, size_t n) {
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) x = x << 8 | p[i];
    return x;
}
static int narrow_put(ebuf *out, uint64_t x) {
    uint8_t b[8];
    for (size_t i = narrow_cw; i-- > 0; x >>= 8) b[i] = (uint8_t)x;
    return ebuf_append(out, b, narrow_cw);
}
/* A value's number: its big-endian bytes (the low ones of the int64's
 * encoding, whose high bit is 0 for the small positive values here);
 * no bytes count 1. */
static uint64_t narrow_num(const em_rec *v) {
    return v->vlen == 8 ? (uint64_t)em_i64_dec(v->val) : v->vlen ? be_get(v->val, v->vlen) : 1;
}
static int narrow_create(void *ctx, const em_rec *v, ebuf *out) { return narrow_put(out, narrow_num(v)); }
static int narrow_merge_value(void *ctx, const em_rec *c, const em_rec *v, ebuf *out) {
    if (c->vlen != narrow_cw) return em_fail("combiner of %zu bytes", c->vlen);
    return narrow_put(out, be_get(c->val, c->vlen) + narrow_num(v));
}
static int narrow_merge_comb(void *ctx, const em_rec *c, const em_rec *d, ebuf *out) {
    if (c->vlen != narrow_cw || d->vlen != narrow_cw) return em_fail("combiners of %zu, %zu bytes", c->vlen, d->vlen);
    return narrow_put(out, be_get(c->val, c->vlen) + be_get(d->val, d->vlen));
}
static const agg_spec NARROW = {.create = narrow_create, .merge_value = narrow_merge_value,
                                .merge_comb = narrow_merge_comb};

TEST(shuffle_agg_narrow_widths) {
    struct { size_t kw, vw, cw; int mixed; } cases[] = {
        {4, 4, 4, 0}, {8, 0, 0, 0}, {4, 2, 4, 0}, {4, 4, 4, 1}, {8, 0, 0, 1}, {2, 8, 8, 0},
    };
    static uint64_t want[2][BIGK]; /* [an 8-byte key among narrow ones][k] */
    static int seen[2][BIGK];
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        narrow_kw = cases[ci].kw;
        narrow_vw = cases[ci].vw;
        narrow_cw = cases[ci].cw;
        narrow_mixed = cases[ci].mixed;
        const char *dir = subdir("out"), *spill_dirs[2] = {subdir("spill-big"), subdir("spill-small")}, *dirs[2];
        dirs_of(dir, 2, dirs);
        uint32_t sid = 20 + (uint32_t)ci;
        wcfg c = {dir, sid, 2, 1, BIGN / 2, gen_grow, NULL, 1 << 20, 0, {0}, 0, 0, NULL};
        write_shape = narrow_shape;
        int wrc = write_maps(&c);
        write_shape = NULL;
        CHECK_OK(wrc);
        free(c.res.seg_bytes);
        memset(want, 0, sizeof want);
        size_t nkeys = 0;
        for (uint32_t m = 0; m < 2; m++)
            for (size_t i = 0; i < BIGN / 2; i++) {
                int64_t k, v;
                size_t kw, vw;
                gen_grow(m, i, &k, &v);
                narrow_shape(m, i, &kw, &vw);
                int wide = narrow_kw != 8 && kw == 8;
                nkeys += !want[wide][k];
                want[wide][k] += vw ? (uint64_t)v : 1;
            }
        for (int mode = 0; mode < 4; mode++) {
            int combined = mode & 1, spill = mode >> 1;
            const char *sp = spill_dirs[spill];
            collect col = {EBUF_INIT, 0, 0};
            sr_stats st;
            sr_opts o = ropts(dirs, sid, 0, 2, SR_AGG, sp, spill ? 16 << 10 : 1 << 20);
            /* Combined: the map side's records read as combiners (where
             * a value is a combiner's bytes). */
            o.agg = &NARROW;
            o.map_side_combined = combined && narrow_vw == narrow_cw && narrow_vw < 8;
            CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
            if (spill) CHECK(st.spills > 1);
            CHECK_EQ_I64(st.records_read, BIGN);
            CHECK_EQ_I64(col.n, (int64_t)nkeys);
            memset(seen, 0, sizeof seen);
            size_t pos = 0;
            em_rec rec;
            while (collect_next(&col, &pos, &rec)) {
                CHECK(rec.klen == narrow_kw || (narrow_mixed && rec.klen == 8));
                int wide = rec.klen != narrow_kw;
                int64_t k = (int64_t)be_get(rec.key, rec.klen) & ((1 << 30) - 1);
                CHECK(k >= 0 && k < BIGK && !seen[wide][k] && want[wide][k]);
                seen[wide][k] = 1;
                CHECK_EQ_I64(rec.vlen, narrow_cw);
                if (narrow_cw) CHECK_EQ_I64(be_get(rec.val, rec.vlen), want[wide][k]);
            }
            ebuf_free(&col.buf);
            CHECK(dir_clean(sp, 0));
        }
    }
}

/* A user combiner of 4 bytes that widens to 8 once its sum passes a
 * limit: the table's combiners are 4 bytes wide until the first wide one,
 * which moves every key to the general table; every sum and width exact,
 * through the buffer functions or the user's functions. */
static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}
static uint64_t widen_limit;
static int widen_put(ebuf *out, uint64_t x) {
    uint8_t b[8];
    size_t w = x > widen_limit ? 8 : 4;
    for (size_t i = w; i-- > 0; x >>= 8) b[i] = (uint8_t)x;
    return ebuf_append(out, b, w);
}
static int widen_create(void *ctx, const em_rec *v, ebuf *out) { return widen_put(out, narrow_num(v)); }
static int widen_merge_value(void *ctx, const em_rec *c, const em_rec *v, ebuf *out) {
    if (c->vlen != 4 && c->vlen != 8) return em_fail("combiner of %zu bytes", c->vlen);
    return widen_put(out, be_get(c->val, c->vlen) + narrow_num(v));
}
static int widen_merge_comb(void *ctx, const em_rec *c, const em_rec *d, ebuf *out) {
    if ((c->vlen != 4 && c->vlen != 8) || (d->vlen != 4 && d->vlen != 8)) return em_fail("bad combiners");
    return widen_put(out, be_get(c->val, c->vlen) + be_get(d->val, d->vlen));
}
static const agg_spec WIDEN = {.create = widen_create, .merge_value = widen_merge_value,
                               .merge_comb = widen_merge_comb};

TEST(shuffle_agg_narrow_combiner_widens) {
    static uint64_t want[BIGK], sorted[BIGK];
    narrow_kw = 4;
    narrow_vw = 2;
    narrow_mixed = 0;
    const char *dir = subdir("out"), *spill_dirs[2] = {subdir("spill-big"), subdir("spill-small")}, *dirs[2];
    dirs_of(dir, 2, dirs);
    wcfg c = {dir, 40, 2, 1, BIGN / 2, gen_grow, NULL, 1 << 20, 0, {0}, 0, 0, NULL};
    write_shape = narrow_shape;
    int wrc = write_maps(&c);
    write_shape = NULL;
    CHECK_OK(wrc);
    free(c.res.seg_bytes);
    memset(want, 0, sizeof want);
    for (uint32_t m = 0; m < 2; m++)
        for (size_t i = 0; i < BIGN / 2; i++) {
            int64_t k, v;
            gen_grow(m, i, &k, &v);
            want[k] += (uint64_t)v;
        }
    memcpy(sorted, want, sizeof want);
    qsort(sorted, BIGK, sizeof *sorted, cmp_u64);
    widen_limit = sorted[BIGK / 2]; /* about half the keys end 8 bytes wide */
    for (int mode = 0; mode < 4; mode++) { /* spilled, through the user's functions */
        int spill = mode & 1;
        agg_spec g = spec_of(&WIDEN, mode >> 1);
        collect col = {EBUF_INIT, 0, 0};
        sr_stats st;
        sr_opts o = ropts(dirs, 40, 0, 2, SR_AGG, spill_dirs[spill], spill ? 16 << 10 : 1 << 20);
        o.agg = &g;
        CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
        CHECK_EQ_I64(col.n, BIGK);
        size_t pos = 0;
        em_rec rec;
        while (collect_next(&col, &pos, &rec)) {
            CHECK_EQ_I64(rec.klen, 4);
            int64_t k = (int64_t)be_get(rec.key, 4);
            CHECK(k >= 0 && k < BIGK);
            CHECK_EQ_I64(rec.vlen, (want[k] > widen_limit ? 8 : 4));
            CHECK_EQ_I64(be_get(rec.val, rec.vlen), want[k]);
        }
        ebuf_free(&col.buf);
        CHECK(dir_clean(spill_dirs[spill], 0));
    }
}

/* Global sort of 200k unique keys in 64 KiB: several runs, merged. */
static void sort_case(int descending, int budget_kib) {
    const char *dir = subdir("out"), *spill = subdir("spill"), *dirs[4];
    dirs_of(dir, 4, dirs);
    wcfg c = {dir, 6, 4, 1, BIGN / 4, gen_unique, NULL, 1 << 20, 0, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    free(c.res.seg_bytes);
    int64_t *keys = malloc(BIGN * sizeof *keys);
    size_t n = 0;
    for (uint32_t m = 0; m < 4; m++)
        for (size_t i = 0; i < BIGN / 4; i++) {
            int64_t k, v;
            gen_unique(m, i, &k, &v);
            keys[n++] = k;
        }
    qsort(keys, n, sizeof *keys, cmp_i64);
    collect col = {EBUF_INIT, 0, 0};
    sr_stats st;
    sr_opts o = ropts(dirs, 6, 0, 4, SR_SORT, spill, (size_t)budget_kib << 10);
    o.descending = descending;
    CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
    if (budget_kib < 1024) CHECK(st.spills > 1);
    else CHECK_EQ_I64(st.spills, 0);
    CHECK_EQ_I64(col.n, BIGN);
    size_t pos = 0, i = 0;
    em_rec rec;
    while (collect_next(&col, &pos, &rec)) {
        int64_t want = keys[descending ? BIGN - 1 - i : i], k = key_of(&rec);
        CHECK_EQ_I64(k, want);
        /* The value travels with its key: recover (map, i) from it. */
        int64_t v = val_of(&rec), gk, gv;
        gen_unique((uint32_t)(v / 1000000), (size_t)(v % 1000000), &gk, &gv);
        CHECK_EQ_I64(gk, k);
        i++;
    }
    CHECK_EQ_I64(i, BIGN);
    ebuf_free(&col.buf);
    free(keys);
    CHECK(dir_clean(spill, 0));
    CHECK(dir_clean(dir, 1));
}

TEST(shuffle_sort_spills_ascending) { sort_case(0, 64); }
TEST(shuffle_sort_spills_descending) { sort_case(1, 64); }
TEST(shuffle_sort_in_memory) { sort_case(0, 64 << 10); }

/* Group: each key's values as a list; keys ascending.  Done with a small
 * budget so grouping runs over merged spills. */
TEST(shuffle_group) {
    const char *dir = subdir("out"), *spill = subdir("spill"), *dirs[3];
    dirs_of(dir, 3, dirs);
    wcfg c = {dir, 7, 3, 2, 20000, gen_small, NULL, 0, 0, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    free(c.res.seg_bytes);
    /* Expected: count and sum of values per key (values are small, so
     * count + sum + sum of squares pins the multiset down well). */
    static int64_t cnt[NKEYS], sum[NKEYS], sq[NKEYS];
    for (uint32_t m = 0; m < 3; m++)
        for (size_t i = 0; i < 20000; i++) {
            int64_t k, v;
            gen_small(m, i, &k, &v);
            cnt[k + 100]++;
            sum[k + 100] += v;
            sq[k + 100] += v * v;
        }
    int nkeys = 0;
    int64_t spills = 0;
    for (int r = 0; r < 2; r++) {
        collect col = {EBUF_INIT, 0, 0};
        sr_stats st;
        sr_opts o = ropts(dirs, 7, r, 3, SR_GROUP, spill, 32 << 10);
        CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
        spills += st.spills;
        size_t pos = 0;
        em_rec rec;
        int64_t prev = INT64_MIN;
        while (collect_next(&col, &pos, &rec)) {
            int64_t k = key_of(&rec);
            CHECK(k > prev);
            prev = k;
            size_t lp = 0, ilen;
            const void *item;
            int64_t n = 0, s = 0, q = 0;
            int rc;
            while ((rc = em_list_next(rec.val, rec.vlen, &lp, &item, &ilen)) == 1) {
                CHECK_EQ_I64(ilen, 8);
                int64_t v = em_i64_dec(item);
                n++;
                s += v;
                q += v * v;
            }
            CHECK_EQ_I64(rc, 0);
            CHECK_EQ_I64(n, cnt[k + 100]);
            CHECK_EQ_I64(s, sum[k + 100]);
            CHECK_EQ_I64(q, sq[k + 100]);
            nkeys++;
        }
        ebuf_free(&col.buf);
    }
    CHECK_EQ_I64(nkeys, NKEYS);
    CHECK(spills > 1);
    CHECK(dir_clean(spill, 0));
}

/* Cogroup: map 0 is side A, map 1 side B (values tagged by the writer). */
TEST(shuffle_cogroup) {
    const char *dir = subdir("out"), *spill = subdir("spill"), *dirs[2];
    dirs_of(dir, 2, dirs);
    int nparts = 2;
    /* Side A: keys 0..99 each with values k and k+1; side B: keys 50..149
     * with value 1000+k; keys 50..99 are in both. */
    for (uint32_t m = 0; m < 2; m++) {
        sw_opts o = {dir, 8, m, 0, nparts, part_hash, &nparts, NULL, 1 << 20, {BF_ZLIB, 1}, 4096, NULL, NULL};
        shuffle_writer *w = sw_open(&o);
        CHECK(w);
        for (int64_t k = 0; k < 100; k++) {
            for (int j = 0; j < (m ? 1 : 2); j++) {
                uint8_t kb[8], vb[9];
                em_i64_enc(m ? k + 50 : k, kb);
                vb[0] = (uint8_t)m;
                em_i64_enc(m ? 1000 + k + 50 : k + j, vb + 1);
                em_rec r = {kb, 8, vb, 9};
                CHECK_OK(sw_add(w, &r));
            }
        }
        CHECK_OK(sw_commit(w, NULL));
    }
    int nkeys = 0;
    for (int r = 0; r < nparts; r++) {
        collect col = {EBUF_INIT, 0, 0};
        sr_stats st;
        sr_opts o = ropts(dirs, 8, r, 2, SR_COGROUP, spill, 1 << 20);
        CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
        size_t pos = 0;
        em_rec rec;
        int64_t prev = -1;
        while (collect_next(&col, &pos, &rec)) {
            int64_t k = key_of(&rec);
            CHECK(k > prev && k < 150);
            prev = k;
            const void *la, *lb, *item;
            size_t lalen, lblen, ilen, p = 0;
            CHECK_OK(em_cogroup_unpack(rec.val, rec.vlen, &la, &lalen, &lb, &lblen));
            int64_t na = 0, sa = 0, nb = 0, sb = 0;
            while (em_list_next(la, lalen, &p, &item, &ilen) == 1) {
                CHECK_EQ_I64(ilen, 8);
                na++;
                sa += em_i64_dec(item);
            }
            p = 0;
            while (em_list_next(lb, lblen, &p, &item, &ilen) == 1) {
                CHECK_EQ_I64(ilen, 8);
                nb++;
                sb += em_i64_dec(item);
            }
            CHECK_EQ_I64(na, k < 100 ? 2 : 0);
            CHECK_EQ_I64(sa, k < 100 ? 2 * k + 1 : 0);
            CHECK_EQ_I64(nb, k >= 50 ? 1 : 0);
            CHECK_EQ_I64(sb, k >= 50 ? 1000 + k : 0);
            nkeys++;
        }
        ebuf_free(&col.buf);
    }
    CHECK_EQ_I64(nkeys, 150);
    CHECK(dir_clean(spill, 0));
}

/* Writer-side spills: a budget smaller than the map output makes the
 * writer spill compressed blocks and copy them into the data file. */
TEST(shuffle_writer_spills) {
    const char *dir = subdir("out"), *dirs[2];
    dirs_of(dir, 2, dirs);
    wcfg c = {dir, 9, 2, 5, 50000, gen_small, NULL, 16 << 10, 1024, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    CHECK(c.spills > 1);
    uint64_t segsum = 0;
    for (int p = 0; p < 5; p++) segsum += c.res.seg_bytes[p];
    CHECK_EQ_I64(SHUFFLE_DATA_HEADER + segsum, c.res.bytes);
    char path[600];
    struct stat sb;
    shuffle_data_path(path, sizeof path, dir, 9, 1, 0);
    CHECK(stat(path, &sb) == 0);
    CHECK_EQ_I64(sb.st_size, c.res.bytes);
    free(c.res.seg_bytes);
    /* Reading in PASS mode gives each map's records of a partition in the
     * order they were added, spilled or not. */
    size_t total = 0;
    for (int r = 0; r < 5; r++) {
        collect col = {EBUF_INIT, 0, 0};
        sr_stats st;
        sr_opts o = ropts(dirs, 9, r, 2, SR_PASS, dir, 1 << 20);
        CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
        size_t pos = 0;
        em_rec got;
        for (uint32_t m = 0; m < 2; m++)
            for (size_t i = 0; i < 50000; i++) {
                int64_t k, v;
                uint8_t kb[8];
                gen_small(m, i, &k, &v);
                em_i64_enc(k, kb);
                if ((int)(em_hash(kb, 8) % 5) != r) continue;
                CHECK(collect_next(&col, &pos, &got));
                CHECK_EQ_I64(key_of(&got), k);
                CHECK_EQ_I64(val_of(&got), v);
            }
        CHECK(!collect_next(&col, &pos, &got));
        total += col.n;
        ebuf_free(&col.buf);
    }
    CHECK_EQ_I64(total, 100000);
    CHECK(dir_clean(dir, 1));
}

/* Read every partition of shuffle sid in PASS mode (from mem, then the
 * files) and check each map's records of it arrive as gen_small made
 * them, in order.  Returns the records read, or -1. */
static int64_t check_pass(const char *const *dirs, uint32_t sid, int nmaps, int nparts, size_t nrec,
                          memout_store *mem) {
    int64_t total = 0;
    for (int r = 0; r < nparts; r++) {
        collect col = {EBUF_INIT, 0, 0};
        sr_stats st;
        sr_opts o = ropts(dirs, sid, r, nmaps, SR_PASS, dirs[0], 1 << 20);
        o.mem = mem;
        int ok = shuffle_read(&o, collect_sink, &col, &st) == 0;
        size_t pos = 0;
        em_rec got;
        for (uint32_t m = 0; ok && m < (uint32_t)nmaps; m++)
            for (size_t i = 0; ok && i < nrec; i++) {
                int64_t k, v;
                uint8_t kb[8];
                gen_small(m, i, &k, &v);
                em_i64_enc(k, kb);
                if ((int)(em_hash(kb, 8) % (uint64_t)nparts) != r) continue;
                ok = collect_next(&col, &pos, &got) && key_of(&got) == k && val_of(&got) == v;
            }
        ok = ok && !collect_next(&col, &pos, &got);
        total += (int64_t)col.n;
        ebuf_free(&col.buf);
        if (!ok) return -1;
    }
    return total;
}

/* The codec byte of every block of a kept output's segments: the count of
 * blocks of codec id, and of others. */
static void kept_codecs(memout_store *s, uint32_t sid, uint32_t map, int id, int64_t *same, int64_t *other) {
    *same = *other = 0;
    memout *m = memout_get(s, sid, map, 0);
    for (size_t e = 0; m && e < m->first[m->nparts]; e++) {
        const uint8_t *b = m->bufs[m->ext[e].buf].p + m->ext[e].off;
        for (size_t off = 0; off + BF_HEADER <= m->ext[e].len; off += BF_HEADER + get_u32le(b + off))
            ++*(b[off + 8] == id ? same : other);
    }
    if (m) memout_release(s, m);
}

/* A data file's bytes (malloc'd), or NULL. */
static uint8_t *file_bytes(const char *dir, uint32_t sid, uint32_t map, size_t *len) {
    char path[600];
    shuffle_data_path(path, sizeof path, dir, sid, map, 0);
    FILE *f = fopen(path, "rb");
    uint8_t *b = NULL;
    struct stat sb;
    if (f && !fstat(fileno(f), &sb) && (b = malloc((size_t)sb.st_size + 1)) &&
        fread(b, 1, (size_t)sb.st_size, f) != (size_t)sb.st_size) {
        free(b);
        b = NULL;
    }
    if (f) fclose(f);
    *len = b ? (size_t)sb.st_size : 0;
    return b;
}

static int cancel_now;
static int test_cancelled(void) { return cancel_now; }

/* A batch handed to the writer whole (sw_add_batch) is a whole cached
 * partition at times: the writer looks at the kill flag every
 * SW_CHECK_EVERY records, and a killed attempt stops with EM_ECANCELED
 * after at most that many; otherwise every record is written. */
TEST(shuffle_batch_checks_kill) {
    const char *dir = subdir("batch-kill");
    ebuf b = EBUF_INIT;
    for (int64_t i = 0; i < 5000; i++) {
        uint8_t k[8], v[8];
        em_i64_enc(i, k);
        em_i64_enc(i * 3, v);
        em_rec r = {k, 8, v, 8};
        CHECK_OK(rec_append(&b, &r));
    }
    int nparts = 3;
    for (int kill = 0; kill < 2; kill++) {
        sw_opts o = {dir, 17, (uint32_t)kill, 0, nparts, part_hash, &nparts, NULL, 1 << 20, {BF_LZ4, 0}, 4096, NULL,
                     test_cancelled};
        shuffle_writer *w = sw_open(&o);
        CHECK(w);
        cancel_now = kill;
        int rc = sw_add_batch(w, b.p, b.len, NULL);
        cancel_now = 0;
        if (kill) {
            CHECK_EQ_I64(rc, EM_ECANCELED);
            CHECK_STR_CONTAINS(em_errmsg(), "task killed");
            sw_abort(w);
        } else {
            sw_result res;
            CHECK_OK(rc);
            CHECK_OK(sw_commit(w, &res));
            CHECK_EQ_I64(res.records, 5000);
            free(res.seg_bytes);
        }
    }
    ebuf_free(&b);
}

/* em_hash decides every record's hash partition, so its values are
 * pinned (computed apart from the code: one 128-bit multiply of the words
 * mixed with two constants), for 8-byte and 16-byte keys. */
TEST(shuffle_hash_values_pinned) {
    static const uint8_t ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, zeros[8] = {0};
    CHECK(em_hash("abcdefgh", 8) == 0x4c5a187c96dd4c26ull);
    CHECK(em_hash(zeros, 8) == 0xc7d1d40f25d6444full);
    CHECK(em_hash(ones, 8) == 0xd7c5848fa9c6a66full);
    CHECK(em_hash("0123456789abcdef", 16) == 0x039a9cfa0fdb6eb4ull);
}

/* Map outputs of shuffle sid written through store s with a 16 KiB budget,
 * so that each spills: nothing is kept, the data files' blocks are all
 * lz4 (the writer's codec, whatever the store's), and every record arrives
 * in order. */
static void spilled_outputs_to_files(const char *name, uint32_t sid, memout_store *s) {
    const char *sdir = subdir(name), *sdirs[4];
    dirs_of(sdir, 4, sdirs);
    wcfg c = {sdir, sid, 4, 3, 30000, gen_small, NULL, 16 << 10, 1024, {0}, 0, 0, s};
    int64_t n0, n, bytes;
    memout_counts(s, &n0, &bytes);
    CHECK_OK(write_maps(&c));
    CHECK(c.spills > 1);
    memout_counts(s, &n, &bytes);
    CHECK_EQ_I64(n, n0);
    size_t len;
    uint8_t *d = file_bytes(sdir, sid, 3, &len);
    CHECK(d && len == c.res.bytes);
    int64_t lz4 = 0, other = 0;
    for (size_t off = SHUFFLE_DATA_HEADER; off + BF_HEADER <= len; off += BF_HEADER + get_u32le(d + off))
        ++*(d[off + 8] == BF_LZ4 ? &lz4 : &other);
    free(d);
    free(c.res.seg_bytes);
    CHECK(lz4 > 3 && other == 0);
    CHECK_EQ_I64(check_pass(sdirs, sid, 4, 3, 30000, s), 120000);
    CHECK(dir_clean(sdir, 1));
}

TEST(shuffle_plain_outputs_in_memory) {
    /* Kept uncompressed: every block is of codec none, built in place,
     * and the segments hold exactly the bytes the writer reports (all but
     * the data file's header). */
    const char *dir = subdir("plain"), *dirs[4];
    dirs_of(dir, 4, dirs);
    memout_store *plain = memout_new(1 << 20, 64 << 20, MEM_NONE);
    CHECK(plain);
    wcfg c = {dir, 3, 4, 3, 3000, gen_small, NULL, 0, 1024, {0}, 0, 0, plain};
    CHECK_OK(write_maps(&c));
    int64_t n, bytes, same, other;
    memout_counts(plain, &n, &bytes);
    CHECK_EQ_I64(n, 4);
    CHECK_EQ_I64(c.res.bytes, SHUFFLE_DATA_HEADER + c.res.seg_bytes[0] + c.res.seg_bytes[1] + c.res.seg_bytes[2]);
    kept_codecs(plain, 3, 0, BF_NONE, &same, &other);
    CHECK(same >= 3 && other == 0);
    CHECK(dir_clean(dir, 0)); /* no file at all */
    CHECK_EQ_I64(check_pass(dirs, 3, 4, 3, 3000, plain), 12000);
    free(c.res.seg_bytes);
    /* A store that codes its blocks keeps blocks of its codec, in fewer
     * than half the bytes: lz4, or prefix (the default; gen_small's 8-byte
     * keys and values share their high bytes). */
    static const uint8_t ids[] = {BF_LZ4, BF_PREFIX};
    for (int k = 0; k < 2; k++) {
        memout_store *packed = memout_new(1 << 20, 64 << 20, (bf_codec){ids[k], 0});
        CHECK(packed);
        c.mem = packed;
        c.res = (sw_result){0};
        CHECK_OK(write_maps(&c));
        int64_t n2, bytes2;
        memout_counts(packed, &n2, &bytes2);
        CHECK_EQ_I64(n2, 4);
        CHECK(bytes2 < bytes / 2);
        kept_codecs(packed, 3, 0, ids[k], &same, &other);
        CHECK(same >= 3 && other == 0);
        /* Coded, an output is one buffer: the partitions' blocks in the
         * order they were finished, each partition's run in several
         * extents that total what the writer reported. */
        for (uint32_t m = 0; m < 4; m++) {
            memout *o = memout_get(packed, 3, m, 0);
            CHECK(o && o->nbufs == 1 && o->nparts == 3);
            CHECK(o->first[1] > 1 && o->first[3] > o->first[1] + 1);
            CHECK_EQ_I64((int64_t)o->bufs[0].len, (int64_t)o->len);
            if (m == 3)
                for (int r = 0; r < 3; r++) CHECK_EQ_I64((int64_t)memout_seg_len(o, r), (int64_t)c.res.seg_bytes[r]);
            memout_release(packed, o);
        }
        CHECK_EQ_I64(check_pass(dirs, 3, 4, 3, 3000, packed), 12000);
        CHECK(dir_clean(dir, 0));
        free(c.res.seg_bytes);
        /* An output that spills goes to files in the writer's codec: the
         * store's blocks are coded again (prefix ones decoded first). */
        spilled_outputs_to_files(k ? "prefix-spilled" : "lz4-spilled", 7 + (uint32_t)k, packed);
        memout_free(packed);
    }
    memout_free(plain);
}

TEST(shuffle_plain_outputs_to_files) {
    /* Written without a store: the reference files. */
    const char *ref = subdir("ref"), *dir = subdir("full"), *dirs[4];
    wcfg c = {ref, 4, 4, 3, 3000, gen_small, NULL, 0, 1024, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    free(c.res.seg_bytes);
    /* A store with room when the writers start (so they build plain
     * blocks) but too little for any output: each output is compressed at
     * commit and written, byte for byte as the reference. */
    memout_store *tight = memout_new(1 << 20, 100, MEM_NONE);
    bf_codec mc;
    CHECK(tight && memout_codec(tight, &mc) && mc.id == BF_NONE);
    c = (wcfg){dir, 4, 4, 3, 3000, gen_small, NULL, 0, 1024, {0}, 0, 0, tight};
    CHECK_OK(write_maps(&c));
    free(c.res.seg_bytes);
    int64_t n, bytes;
    memout_counts(tight, &n, &bytes);
    CHECK_EQ_I64(n, 0);
    for (uint32_t m = 0; m < 4; m++) {
        size_t la, lb;
        uint8_t *a = file_bytes(ref, 4, m, &la), *b = file_bytes(dir, 4, m, &lb);
        CHECK(a && b && la == lb && !memcmp(a, b, la));
        free(a);
        free(b);
    }
    dirs_of(dir, 4, dirs);
    CHECK_EQ_I64(check_pass(dirs, 4, 4, 3, 3000, tight), 12000);
    /* Spilling leaves plain mode too: the spilled and final blocks are
     * lz4, nothing is kept, and every record arrives in order. */
    memout_store *roomy = memout_new(1 << 20, 64 << 20, MEM_NONE);
    spilled_outputs_to_files("spilled", 5, roomy);
    memout_free(tight);
    memout_free(roomy);
}

/* A plain output is one buffer, the writer's arena: each partition's
 * blocks lie in regions of it, a small partition's in a small region; a
 * removed output's mapping is what the next output of its size takes
 * whole, with no fresh pages (bigbuf.h). */
TEST(shuffle_plain_output_one_arena) {
    const char *dir = subdir("arena"), *dirs[1];
    dirs_of(dir, 1, dirs);
    memout_store *s = memout_new(256 << 20, 1 << 30, MEM_NONE);
    CHECK(s);
    /* 200 partitions of a few records each: one block each, in a region
     * of SW_FIRST_ROOM (1024) bytes after its header. */
    wcfg c = {dir, 20, 1, 200, 2000, gen_small, NULL, 0, 65536, {0}, 0, 0, s};
    CHECK_OK(write_maps(&c));
    int count[200] = {0}, nonempty = 0, most = 0;
    for (size_t i = 0; i < 2000; i++) {
        int64_t k, v;
        uint8_t kb[8];
        gen_small(0, i, &k, &v);
        em_i64_enc(k, kb);
        count[em_hash(kb, 8) % 200]++;
    }
    for (int p = 0; p < 200; p++) {
        nonempty += count[p] > 0;
        if (count[p] > most) most = count[p];
    }
    CHECK(most * 18 <= 1024); /* every partition fits its first region */
    memout *o = memout_get(s, 20, 0, 0);
    CHECK(o && o->nbufs == 1 && o->nparts == 200);
    CHECK_EQ_I64((int64_t)o->first[200], nonempty);
    CHECK_EQ_I64((int64_t)o->bufs[0].len, (int64_t)nonempty * (BF_HEADER + 1024));
    uint64_t sum = 0;
    for (int r = 0; r < 200; r++) {
        CHECK_EQ_I64((int64_t)memout_seg_len(o, r), count[r] ? BF_HEADER + 18 * count[r] : 0);
        sum += memout_seg_len(o, r);
    }
    CHECK_EQ_I64((int64_t)sum, (int64_t)o->len);
    memout_release(s, o);
    CHECK_EQ_I64(check_pass(dirs, 20, 1, 200, 2000, s), 2000);
    memout_remove_shuffle(s, 20);
    free(c.res.seg_bytes);

    /* 4 partitions of 1.35 MB: 64 KiB blocks in whole-block regions, the
     * unused ends of regions and the first small regions left behind
     * under 3 blocks a partition. */
    bb_trim();
    size_t f0, t0, f1, t1, f2, t2;
    bb_counts(&f0, &t0);
    c = (wcfg){dir, 21, 1, 4, 300000, gen_small, NULL, 64 << 20, 65536, {0}, 0, 0, s};
    CHECK_OK(write_maps(&c));
    free(c.res.seg_bytes);
    o = memout_get(s, 21, 0, 0);
    CHECK(o && o->nbufs == 1);
    size_t blocks = 0;
    for (size_t e = 0; e < o->first[4]; e++)
        for (size_t off = 0; off < o->ext[e].len; off += BF_HEADER + get_u32le(o->bufs[0].p + o->ext[e].off + off))
            blocks++;
    CHECK_EQ_I64((int64_t)o->len, (int64_t)(300000 * 18 + blocks * BF_HEADER));
    CHECK(o->bufs[0].len > o->len && o->bufs[0].len - o->len < 4 * 3 * 65536);
    size_t was_cap = o->bufs[0].cap;
    memout_release(s, o);
    bb_counts(&f1, &t1);
    CHECK(f1 > f0); /* a first output maps fresh pages */
    memout_remove_shuffle(s, 21); /* its mapping goes to bigbuf's cache */
    c = (wcfg){dir, 22, 1, 4, 300000, gen_small, NULL, 64 << 20, 65536, {0}, 0, 0, s};
    CHECK_OK(write_maps(&c));
    free(c.res.seg_bytes);
    bb_counts(&f2, &t2);
    CHECK_EQ_I64((int64_t)f2, (int64_t)f1); /* not one fresh byte */
    o = memout_get(s, 22, 0, 0);
    CHECK(o && o->nbufs == 1);
    CHECK_EQ_I64((int64_t)(t2 - t1), (int64_t)(o->bufs[0].cap / BB_MIN)); /* its chunks, all cached */
    CHECK_EQ_I64((int64_t)o->bufs[0].cap, (int64_t)was_cap);
    memout_release(s, o);
    CHECK_EQ_I64(check_pass(dirs, 22, 1, 4, 300000, s), 300000);
    CHECK(dir_clean(dir, 0));
    memout_free(s);
    bb_trim();
}

static int part_zero(void *pctx, const em_rec *r) { return 0; }

/* Empty segments, a map with no records, and a NULL dirs entry. */
TEST(shuffle_empty_segments) {
    const char *dir = subdir("out");
    for (uint32_t m = 0; m < 2; m++) {
        sw_opts o = {dir, 10, m, 0, 8, part_zero, NULL, NULL, 1 << 20, {BF_NONE, 0}, 4096, NULL, NULL};
        shuffle_writer *w = sw_open(&o);
        CHECK(w);
        for (int i = 0; m == 0 && i < 100; i++) {
            uint8_t kb[8];
            em_i64_enc(i, kb);
            em_rec r = {kb, 8, "", 0};
            CHECK_OK(sw_add(w, &r));
        }
        sw_result res;
        CHECK_OK(sw_commit(w, &res));
        for (int p = 1; p < 8; p++) CHECK_EQ_I64(res.seg_bytes[p], 0);
        CHECK_EQ_I64(res.records, m == 0 ? 100 : 0);
        free(res.seg_bytes);
    }
    const char *dirs[3] = {dir, dir, NULL}; /* map 2 wrote nothing */
    for (enum sr_mode mode = SR_PASS; mode <= SR_GROUP; mode++) {
        for (int r = 0; r < 8; r++) {
            collect col = {EBUF_INIT, 0, 0};
            sr_stats st;
            sr_opts o = ropts(dirs, 10, r, 3, mode, dir, 1 << 20);
            if (mode == SR_AGG) continue; /* values are not int64 here */
            CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
            CHECK_EQ_I64(col.n, r == 0 ? 100 : 0); /* 100 distinct keys */
            ebuf_free(&col.buf);
        }
    }
    CHECK(dir_clean(dir, 1));
}

/* Map m's segment of reduce partition r of shuffle sid, as its output
 * says (kept in mem, else its files). */
static uint64_t seg_len(memout_store *mem, const char *dir, uint32_t sid, uint32_t m, int r) {
    memout *o = mem ? memout_get(mem, sid, m, 0) : NULL;
    uint64_t s = 0, e = 0;
    if (o) {
        e = memout_seg_len(o, r);
        memout_release(mem, o);
        return e;
    }
    int fd = shuffle_locate(dir, sid, m, 0, r, &s, &e);
    if (fd >= 0) close(fd);
    return e - s;
}

/* The tracker's sizes are estimates (scheduler/mapout.h), exact only in
 * being zero or not.  A reader takes each segment's length from its
 * output, in memory or in files, and reads it whole whatever the
 * estimate; a map the tracker has as empty is skipped; one it has as
 * non-empty whose segment is empty is a fetch failure. */
TEST(shuffle_lengths_from_outputs) {
    const char *dir = subdir("est"), *dirs[4];
    dirs_of(dir, 4, dirs);
    memout_store *mem = memout_new(1 << 20, 64 << 20, MEM_NONE);
    CHECK(mem);
    for (int inmem = 0; inmem < 2; inmem++) {
        memout_store *store = inmem ? mem : NULL;
        uint32_t sid = 30 + (uint32_t)inmem;
        wcfg c = {dir, sid, 4, 3, 3000, gen_small, NULL, 0, 1024, {0}, 0, 0, store};
        CHECK_OK(write_maps(&c));
        free(c.res.seg_bytes);
        for (int r = 0; r < 3; r++) {
            uint64_t len[4], est[4], total = 0;
            for (uint32_t m = 0; m < 4; m++) {
                len[m] = seg_len(store, dir, sid, m, r);
                CHECK(len[m] > 100);
                est[m] = m % 2 ? 3 * len[m] : len[m] / 2 + 1; /* over and under */
                total += len[m];
            }
            collect want = {EBUF_INIT, 0, 0}, got = {EBUF_INIT, 0, 0};
            sr_stats st;
            sr_opts o = ropts(dirs, sid, r, 4, SR_PASS, dir, 1 << 20);
            o.mem = store;
            CHECK_OK(shuffle_read(&o, collect_sink, &want, &st));
            o.seglens = est;
            CHECK_OK(shuffle_read(&o, collect_sink, &got, &st));
            CHECK_EQ_I64(st.bytes_read, total);
            CHECK(got.buf.len == want.buf.len && !memcmp(got.buf.p, want.buf.p, want.buf.len));
            est[2] = 0; /* the tracker's zero: not read */
            CHECK_OK(shuffle_read(&o, collect_sink, &got, &st));
            CHECK_EQ_I64(st.bytes_read, total - len[2]);
            ebuf_free(&want.buf);
            ebuf_free(&got.buf);
        }
        /* Every record to partition 0: partition 1's segment is empty. */
        sw_opts wo = {dir, sid + 10, 0, 0, 2, part_zero, NULL, NULL, 1 << 20, {BF_NONE, 0}, 4096, store, NULL};
        shuffle_writer *w = sw_open(&wo);
        CHECK(w);
        for (int i = 0; i < 50; i++) {
            uint8_t kb[8];
            em_i64_enc(i, kb);
            em_rec rec = {kb, 8, "", 0};
            CHECK_OK(sw_add(w, &rec));
        }
        sw_result res;
        CHECK_OK(sw_commit(w, &res));
        free(res.seg_bytes);
        uint64_t est = 7;
        collect got = {EBUF_INIT, 0, 0};
        sr_stats st;
        sr_opts o = ropts(dirs, sid + 10, 1, 1, SR_PASS, dir, 1 << 20);
        o.mem = store;
        o.seglens = &est;
        CHECK_EQ_I64(shuffle_read(&o, collect_sink, &got, &st), EM_EFETCH);
        CHECK_EQ_I64(st.failed_map, 0);
        CHECK_STR_CONTAINS(em_errmsg(), "is empty, the map task registered it non-empty (about 7 bytes)");
        CHECK_STR_CONTAINS(em_errmsg(), inmem ? "in memory" : "shuffle_");
        ebuf_free(&got.buf);
    }
    memout_free(mem);
    shuffle_remove(dir, 30);
    shuffle_remove(dir, 40);
    CHECK(dir_clean(dir, 0));
}

TEST(shuffle_missing_output_is_fetch_failure) {
    const char *dir = subdir("out"), *dirs[3];
    dirs_of(dir, 3, dirs);
    wcfg c = {dir, 11, 3, 2, 1000, gen_small, NULL, 0, 0, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    free(c.res.seg_bytes);
    char path[600];
    shuffle_index_path(path, sizeof path, dir, 11, 1, 0);
    CHECK(unlink(path) == 0);
    for (enum sr_mode mode = SR_PASS; mode <= SR_SORT; mode++) {
        collect col = {EBUF_INIT, 0, 0};
        sr_stats st;
        sr_opts o = ropts(dirs, 11, 0, 3, mode, dir, 1 << 20);
        CHECK_EQ_I64(shuffle_read(&o, collect_sink, &col, &st), EM_EFETCH);
        CHECK_EQ_I64(st.failed_map, 1);
        CHECK_STR_CONTAINS(em_errmsg(), path);
        ebuf_free(&col.buf);
    }
    /* Missing data file. */
    shuffle_data_path(path, sizeof path, dir, 11, 2, 0);
    CHECK(unlink(path) == 0);
    dirs[1] = NULL;
    collect col = {EBUF_INIT, 0, 0};
    sr_stats st;
    sr_opts o = ropts(dirs, 11, 1, 3, SR_PASS, dir, 1 << 20);
    CHECK_EQ_I64(shuffle_read(&o, collect_sink, &col, &st), EM_EFETCH);
    CHECK_EQ_I64(st.failed_map, 2);
    CHECK_STR_CONTAINS(em_errmsg(), path);
    ebuf_free(&col.buf);
}

TEST(shuffle_corrupt_output_is_fetch_failure) {
    const char *dir = subdir("out"), *dirs[2];
    dirs_of(dir, 2, dirs);
    wcfg c = {dir, 12, 2, 1, 5000, gen_small, NULL, 0, 0, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    free(c.res.seg_bytes);
    char path[600];
    collect col = {EBUF_INIT, 0, 0};
    sr_stats st;
    sr_opts o = ropts(dirs, 12, 0, 2, SR_SORT, dir, 1 << 20);
    /* A flipped byte inside map 1's first block. */
    shuffle_data_path(path, sizeof path, dir, 12, 1, 0);
    int fd = open(path, O_RDWR);
    uint8_t b;
    CHECK(pread(fd, &b, 1, 40) == 1);
    b ^= 0xff;
    CHECK(pwrite(fd, &b, 1, 40) == 1);
    close(fd);
    CHECK_EQ_I64(shuffle_read(&o, collect_sink, &col, &st), EM_EFETCH);
    CHECK_EQ_I64(st.failed_map, 1);
    free(st.lost); /* the other outputs found lost with it */
    CHECK_STR_CONTAINS(em_errmsg(), path);
    CHECK_STR_CONTAINS(em_errmsg(), "crc mismatch");
    /* A short index file. */
    shuffle_index_path(path, sizeof path, dir, 12, 0, 0);
    CHECK(truncate(path, 12) == 0);
    CHECK_EQ_I64(shuffle_read(&o, collect_sink, &col, &st), EM_EFETCH);
    CHECK_EQ_I64(st.failed_map, 0);
    free(st.lost); /* the other outputs found lost with it */
    CHECK_STR_CONTAINS(em_errmsg(), path);
    /* A well-formed index (fresh checksum) whose offsets run past the end of
     * the data file. */
    fd = open(path, O_WRONLY | O_TRUNC);
    uint8_t idx[64];
    uint64_t offs[2] = {SHUFFLE_DATA_HEADER, 1u << 30};
    CHECK(shuffle_index_size(1) <= sizeof idx);
    shuffle_index_encode(idx, 1, offs);
    CHECK(write(fd, idx, shuffle_index_size(1)) == (ssize_t)shuffle_index_size(1));
    close(fd);
    CHECK_EQ_I64(shuffle_read(&o, collect_sink, &col, &st), EM_EFETCH);
    CHECK_EQ_I64(st.failed_map, 0);
    free(st.lost); /* the other outputs found lost with it */
    CHECK_STR_CONTAINS(em_errmsg(), "but the data file has");
    ebuf_free(&col.buf);
    CHECK(dir_clean(dir, 1));
}

TEST(shuffle_sink_stop) {
    const char *dir = subdir("out"), *spill = subdir("spill"), *dirs[2];
    dirs_of(dir, 2, dirs);
    wcfg c = {dir, 13, 2, 1, 20000, gen_small, NULL, 0, 0, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    free(c.res.seg_bytes);
    for (enum sr_mode mode = SR_PASS; mode <= SR_GROUP; mode++) {
        for (int small = 0; small < 2; small++) {
            collect col = {EBUF_INIT, 0, 10};
            sr_stats st;
            sr_opts o = ropts(dirs, 13, 0, 2, mode, spill, small ? 16 << 10 : 1 << 20);
            CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
            CHECK_EQ_I64(col.n, 10);
            if (mode == SR_PASS) CHECK(st.records_read < 40000);
            ebuf_free(&col.buf);
        }
    }
    CHECK(dir_clean(spill, 0));
}

static int fail_sink(void *ctx, const em_rec *r) { return em_fail("sink says no"); }

TEST(shuffle_errors_pass_through) {
    const char *dir = subdir("out"), *spill = subdir("spill"), *dirs[1];
    dirs_of(dir, 1, dirs);
    wcfg c = {dir, 14, 1, 1, 20000, gen_small, NULL, 0, 0, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    free(c.res.seg_bytes);
    for (enum sr_mode mode = SR_PASS; mode <= SR_GROUP; mode++) {
        sr_stats st;
        sr_opts o = ropts(dirs, 14, 0, 1, mode, spill, 16 << 10);
        CHECK_EQ_I64(shuffle_read(&o, fail_sink, NULL, &st), EM_EUSER);
        CHECK_STR_CONTAINS(em_errmsg(), "sink says no");
    }
    CHECK(dir_clean(spill, 0));
}

static int part_bad(void *pctx, const em_rec *r) { return 7; }

TEST(shuffle_abort_leaves_nothing) {
    const char *dir = subdir("out");
    int nparts = 3;
    sw_opts o = {dir, 15, 0, 2, nparts, part_hash, &nparts, NULL, 4096, {BF_LZ4, 0}, 1024, NULL, NULL};
    shuffle_writer *w = sw_open(&o);
    CHECK(w);
    for (int i = 0; i < 10000; i++) {
        uint8_t kb[8];
        em_i64_enc(i, kb);
        em_rec r = {kb, 8, kb, 8};
        CHECK_OK(sw_add(w, &r));
    }
    sw_abort(w);
    CHECK(dir_clean(dir, 0));
    /* A bad partition number is an error, not a crash. */
    o.partition = part_bad;
    w = sw_open(&o);
    CHECK(w);
    em_rec r = {"k", 1, "v", 1};
    CHECK_EQ_I64(sw_add(w, &r), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "partitioner returned 7");
    sw_abort(w);
    CHECK(dir_clean(dir, 0));
}

/* A record over 1 MB goes through the shuffle intact. */
TEST(shuffle_big_record) {
    const char *dir = subdir("out"), *dirs[1] = {dir};
    int nparts = 2;
    size_t big = 3u << 20;
    uint8_t *v = malloc(big);
    for (size_t i = 0; i < big; i++) v[i] = (uint8_t)(i * 2654435761u >> 13);
    sw_opts o = {dir, 16, 0, 0, nparts, part_zero, &nparts, NULL, 1 << 20, {BF_ZSTD, 3}, 4096, NULL, NULL};
    shuffle_writer *w = sw_open(&o);
    CHECK(w);
    em_rec a = {"a", 1, "x", 1}, b = {"b", 1, v, big};
    CHECK_OK(sw_add(w, &a));
    CHECK_OK(sw_add(w, &b));
    CHECK_OK(sw_add(w, &a));
    CHECK_OK(sw_commit(w, NULL));
    collect col = {EBUF_INIT, 0, 0};
    sr_stats st;
    sr_opts ro = ropts(dirs, 16, 0, 1, SR_SORT, dir, 1 << 20);
    CHECK_OK(shuffle_read(&ro, collect_sink, &col, &st));
    CHECK_EQ_I64(col.n, 3);
    size_t pos = 0;
    em_rec r;
    CHECK(collect_next(&col, &pos, &r) && r.vlen == 1);
    CHECK(collect_next(&col, &pos, &r) && r.vlen == 1);
    CHECK(collect_next(&col, &pos, &r) && r.vlen == big && !memcmp(r.val, v, big));
    ebuf_free(&col.buf);
    free(v);
}

/* The index's own checks (shuffle_index.h), one damage at a time, each a
 * fetch failure naming the index. */
static void rewrite_index(const char *path, int nparts, const uint64_t *offs) {
    uint8_t buf[256];
    shuffle_index_encode(buf, nparts, offs);
    int fd = open(path, O_WRONLY | O_TRUNC);
    if (fd >= 0) {
        if (write(fd, buf, shuffle_index_size(nparts)) < 0) perror("write");
        close(fd);
    }
}

TEST(shuffle_index_checked) {
    const char *dir = subdir("out"), *dirs[1];
    dirs_of(dir, 1, dirs);
    wcfg c = {dir, 14, 1, 4, 5000, gen_small, NULL, 0, 0, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    uint64_t segs[4], offs[5];
    memcpy(segs, c.res.seg_bytes, sizeof segs);
    free(c.res.seg_bytes);
    char ipath[600], dpath[600];
    shuffle_index_path(ipath, sizeof ipath, dir, 14, 0, 0);
    shuffle_data_path(dpath, sizeof dpath, dir, 14, 0, 0);
    offs[0] = SHUFFLE_DATA_HEADER;
    for (int i = 0; i < 4; i++) offs[i + 1] = offs[i] + segs[i];
    CHECK(segs[0] > 100 && segs[1] > 100);
    collect col = {EBUF_INIT, 0, 0};
    sr_stats st;
    for (int r = 0; r < 4; r++) {
        /* Intact, with the tracker's exact lengths or its estimates: reads
         * every segment whole, the index's length being the one used. */
        uint64_t est[2] = {segs[r], 1};
        for (int e = 0; e < 2; e++) {
            sr_opts o = ropts(dirs, 14, r, 1, SR_PASS, dir, 1 << 20);
            o.seglens = &est[e];
            CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
            CHECK_EQ_I64(st.bytes_read, segs[r]);
        }
    }
    sr_opts o = ropts(dirs, 14, 1, 1, SR_PASS, dir, 1 << 20);
    o.seglens = &segs[1];

    /* Plausible other offsets with a fresh checksum: monotonic, from the
     * header to the end of the file.  One inside a block starts the
     * segment on bytes that are no block header: its CRC fails. */
    uint64_t moved[5];
    memcpy(moved, offs, sizeof moved);
    moved[1] += 40;
    rewrite_index(ipath, 4, moved);
    CHECK_EQ_I64(shuffle_read(&o, collect_sink, &col, &st), EM_EFETCH);
    CHECK_EQ_I64(st.failed_map, 0);
    CHECK_STR_CONTAINS(em_errmsg(), dpath);
    /* A segment made empty that the tracker has as non-empty. */
    memcpy(moved, offs, sizeof moved);
    moved[2] = moved[1];
    rewrite_index(ipath, 4, moved);
    CHECK_EQ_I64(shuffle_read(&o, collect_sink, &col, &st), EM_EFETCH);
    CHECK_STR_CONTAINS(em_errmsg(), "is empty, the map task registered it non-empty");
    CHECK_STR_CONTAINS(em_errmsg(), ipath);

    /* A flipped byte without a new checksum. */
    rewrite_index(ipath, 4, offs);
    int fd = open(ipath, O_RDWR);
    uint8_t b;
    CHECK(pread(fd, &b, 1, 30) == 1);
    b ^= 1;
    CHECK(pwrite(fd, &b, 1, 30) == 1);
    close(fd);
    CHECK_EQ_I64(shuffle_read(&o, collect_sink, &col, &st), EM_EFETCH);
    CHECK_STR_CONTAINS(em_errmsg(), "crc mismatch");

    /* Offsets going backwards; a first offset inside the header. */
    memcpy(moved, offs, sizeof moved);
    moved[2] = moved[1] - 1;
    rewrite_index(ipath, 4, moved);
    CHECK_EQ_I64(shuffle_read(&o, collect_sink, &col, &st), EM_EFETCH);
    CHECK_STR_CONTAINS(em_errmsg(), "is before offset");
    memcpy(moved, offs, sizeof moved);
    moved[0] = 0;
    rewrite_index(ipath, 4, moved);
    CHECK_EQ_I64(shuffle_read(&o, collect_sink, &col, &st), EM_EFETCH);
    CHECK_STR_CONTAINS(em_errmsg(), "data header");

    /* An index for another partition count than its data file's header. */
    uint64_t three[4] = {offs[0], offs[1], offs[2], offs[4]};
    rewrite_index(ipath, 3, three);
    CHECK_EQ_I64(shuffle_read(&o, collect_sink, &col, &st), EM_EFETCH);
    CHECK_STR_CONTAINS(em_errmsg(), "partitions");

    /* A damaged data header. */
    rewrite_index(ipath, 4, offs);
    CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
    fd = open(dpath, O_RDWR);
    CHECK(pwrite(fd, "X", 1, 0) == 1);
    close(fd);
    CHECK_EQ_I64(shuffle_read(&o, collect_sink, &col, &st), EM_EFETCH);
    CHECK_STR_CONTAINS(em_errmsg(), dpath);
    CHECK_STR_CONTAINS(em_errmsg(), "bad magic");
    ebuf_free(&col.buf);
}

/* ------------------------------------------------------- remote fetches */

/* A fetcher standing in for shuffle_fetch.c's: it counts what is begun and not
 * yet read, and copies the segment from disk at once. */
/* A fetcher that copies segments out of dir's files: begun handles are
 * live until dropped (dropped counts those never ended, released those
 * dropped after their bytes were read). */
typedef struct fake_fetch {
    const char *dir;
    int begun, ended, dropped, released, live, max_live, fail_map;
    int corrupt_map; /* its fetched bytes get one flipped (0: none) */
    int empty_map;   /* its server answers with an empty segment (0: none) */
    uint64_t live_bytes, max_live_bytes;
} fake_fetch;

typedef struct fake_h {
    uint8_t *p;
    int map, ended;
    uint64_t len;
} fake_h;

static void *ff_begin(void *ctx, const char *loc, uint32_t shuffle, uint32_t map, uint64_t attempt, int reduce) {
    fake_fetch *f = ctx;
    if ((int)map == f->fail_map) return em__seterr(EM_EFETCH, "executor at 10.0.0.9:7: refused"), NULL;
    uint64_t s, e;
    int fd = shuffle_locate(f->dir, shuffle, map, attempt, reduce, &s, &e);
    if (fd < 0) return NULL;
    uint64_t len = f->empty_map && (int)map == f->empty_map ? 0 : e - s; /* the server's length */
    fake_h *h = calloc(1, sizeof *h);
    h->p = malloc(len);
    h->map = (int)map;
    h->len = len;
    if (pread(fd, h->p, len, (off_t)s) != (ssize_t)len) return NULL;
    close(fd);
    if (f->corrupt_map && (int)map == f->corrupt_map) h->p[len / 2] ^= 0x40;
    f->begun++;
    f->live++;
    f->live_bytes += len;
    if (f->live > f->max_live) f->max_live = f->live;
    if (f->live_bytes > f->max_live_bytes) f->max_live_bytes = f->live_bytes;
    return h;
}

static int ff_end(void *ctx, void *hv, const uint8_t **p, uint64_t *len) {
    fake_h *h = hv;
    ((fake_fetch *)ctx)->ended++;
    h->ended = 1;
    *p = h->p;
    *len = h->len;
    return 0;
}

static void ff_drop(void *ctx, void *hv) {
    fake_fetch *f = ctx;
    fake_h *h = hv;
    if (h->ended) f->released++;
    else f->dropped++;
    f->live--;
    f->live_bytes -= h->len;
    free(h->p);
    free(h);
}

/* Segments of other executors are fetched several at a time, as many as
 * in_flight bytes allow (at least one), in map order, mixed with this
 * executor's own read from disk; what is read equals a plain local read.
 * A failed fetch names its map, and the fetches begun after it are let go. */
TEST(shuffle_remote_fetches_in_flight) {
    enum { NM = 8 };
    const char *dir = subdir("out"), *ldirs[NM], *rdirs[NM];
    dirs_of(dir, NM, ldirs);
    wcfg c = {dir, 21, NM, 2, 3000, gen_small, NULL, 0, 0, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    free(c.res.seg_bytes);
    char rloc[700], sloc[700];
    snprintf(rloc, sizeof rloc, "ember://10.0.0.9:7%s", dir);
    snprintf(sloc, sizeof sloc, "ember://10.0.0.1:1%s", dir);
    uint64_t lens[NM], total = 0;
    for (int m = 0; m < NM; m++) {
        uint64_t s, e;
        int fd = shuffle_locate(dir, 21, (uint32_t)m, 0, 1, &s, &e);
        CHECK(fd >= 0);
        close(fd);
        lens[m] = e - s;
        total += lens[m];
        rdirs[m] = m == 2 ? sloc : rloc; /* map 2's output is this executor's own */
    }
    CHECK(lens[0] > 1000);
    collect want = {EBUF_INIT, 0, 0};
    sr_opts lo = ropts(ldirs, 21, 1, NM, SR_PASS, dir, 1 << 20);
    lo.seglens = lens;
    CHECK_OK(shuffle_read(&lo, collect_sink, &want, NULL));
    uint64_t caps[] = {3 * lens[0], 1024, 1 << 30};
    for (int i = 0; i < 3; i++) {
        fake_fetch f = {.dir = dir, .fail_map = -1};
        sr_fetcher F = {ff_begin, ff_end, ff_drop, &f, caps[i], 0, 0};
        sr_opts o = lo;
        o.dirs = rdirs;
        o.self = "ember://10.0.0.1:1";
        o.fetch = &F;
        collect got = {EBUF_INIT, 0, 0};
        CHECK_OK(shuffle_read(&o, collect_sink, &got, NULL));
        CHECK(got.buf.len == want.buf.len && !memcmp(got.buf.p, want.buf.p, want.buf.len));
        CHECK_EQ_I64(f.begun, NM - 1);
        CHECK_EQ_I64(f.ended, NM - 1);
        CHECK_EQ_I64(f.released, NM - 1); /* each let go once read */
        CHECK_EQ_I64(f.live, 0);
        if (i == 0) CHECK(f.max_live >= 2 && f.max_live_bytes <= caps[0]); /* several, within the window */
        if (i == 1) CHECK_EQ_I64(f.max_live, 1);                           /* one at a time, however large */
        if (i == 2) CHECK_EQ_I64(f.max_live_bytes, total - lens[2]);       /* everything at once */
        ebuf_free(&got.buf);
    }
    /* The tracker's sizes are estimates: the window counts them, and the
     * reader reads what each fetch brings.  At a byte each, a 1 KiB window
     * begins every fetch at once, and the records are the same.  A segment
     * that comes empty where the tracker has it non-empty is a fetch
     * failure. */
    uint64_t est[NM];
    for (int m = 0; m < NM; m++) est[m] = 1;
    for (int empty = 0; empty <= 3; empty += 3) {
        fake_fetch f = {.dir = dir, .fail_map = -1, .empty_map = empty};
        sr_fetcher F = {ff_begin, ff_end, ff_drop, &f, 1024, 0, 0};
        sr_opts o = lo;
        o.dirs = rdirs;
        o.self = "ember://10.0.0.1:1";
        o.fetch = &F;
        o.seglens = est;
        collect got = {EBUF_INIT, 0, 0};
        sr_stats st;
        if (!empty) {
            CHECK_OK(shuffle_read(&o, collect_sink, &got, &st));
            CHECK(got.buf.len == want.buf.len && !memcmp(got.buf.p, want.buf.p, want.buf.len));
            CHECK_EQ_I64(st.bytes_read, total);
            CHECK_EQ_I64(f.max_live, NM - 1);
        } else {
            CHECK_EQ_I64(shuffle_read(&o, collect_sink, &got, &st), EM_EFETCH);
            CHECK_EQ_I64(st.failed_map, 3);
            CHECK_STR_CONTAINS(em_errmsg(), "is empty, the map task registered it non-empty (about 1 bytes)");
            CHECK_STR_CONTAINS(em_errmsg(), "10.0.0.9:7");
        }
        CHECK_EQ_I64(f.live, 0);
        free(st.lost);
        ebuf_free(&got.buf);
    }
    /* Map 5's fetch cannot begin: a fetch failure naming it; nothing is
     * left behind. */
    fake_fetch f = {.dir = dir, .fail_map = 5};
    sr_fetcher F = {ff_begin, ff_end, ff_drop, &f, 1 << 30, 0, 0};
    sr_opts o = lo;
    o.dirs = rdirs;
    o.self = "ember://10.0.0.1:1";
    o.fetch = &F;
    collect got = {EBUF_INIT, 0, 0};
    sr_stats st;
    CHECK_EQ_I64(shuffle_read(&o, collect_sink, &got, &st), EM_EFETCH);
    CHECK_EQ_I64(st.failed_map, 5);
    CHECK_STR_CONTAINS(em_errmsg(), "10.0.0.9:7");
    CHECK_EQ_I64(f.live, 0);
    CHECK_EQ_I64(f.dropped, f.begun - f.ended);
    CHECK_EQ_I64(f.released, f.ended);
    /* Map 4's fetched bytes are damaged: its block's CRC, checked where
     * the bytes lie, makes a fetch failure naming the location and map;
     * every handle is let go. */
    fake_fetch fc = {.dir = dir, .fail_map = -1, .corrupt_map = 4};
    sr_fetcher FC = {ff_begin, ff_end, ff_drop, &fc, 1 << 30, 0, 0};
    o.fetch = &FC;
    ebuf_free(&got.buf);
    got = (collect){EBUF_INIT, 0, 0};
    CHECK_EQ_I64(shuffle_read(&o, collect_sink, &got, &st), EM_EFETCH);
    CHECK_EQ_I64(st.failed_map, 4);
    CHECK_STR_CONTAINS(em_errmsg(), "10.0.0.9:7");
    CHECK_STR_CONTAINS(em_errmsg(), "map 4");
    CHECK_EQ_I64(fc.live, 0);
    CHECK_EQ_I64(fc.released, fc.ended);
    ebuf_free(&got.buf);
    ebuf_free(&want.buf);
    CHECK(dir_clean(dir, 1));
}

/* After a fetch failure the reader checks the other outputs of the failed
 * one's executor (with lost_host, of its host) and lists those that are
 * lost too, keeping the failure's message; outputs elsewhere are not
 * looked at.  The same on local files. */
TEST(shuffle_fetch_failure_lists_lost_outputs) {
    enum { NM = 6 };
    const char *dir = subdir("lost"), *ldirs[NM], *rdirs[NM];
    dirs_of(dir, NM, ldirs);
    wcfg c = {dir, 23, NM, 2, 3000, gen_small, NULL, 0, 0, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    free(c.res.seg_bytes);
    char a[700], a2[700], b[700], own[700];
    snprintf(a, sizeof a, "ember://10.0.0.9:7%s", dir);   /* the failing executor */
    snprintf(a2, sizeof a2, "ember://10.0.0.9:8%s", dir); /* another on its host */
    snprintf(b, sizeof b, "ember://10.0.0.8:7%s", dir);   /* another host */
    snprintf(own, sizeof own, "ember://10.0.0.1:1%s", dir);
    const char *where[NM] = {a, a, b, a, a2, own};
    uint64_t lens[NM];
    for (int m = 0; m < NM; m++) {
        uint64_t s, e;
        int fd = shuffle_locate(dir, 23, (uint32_t)m, 0, 1, &s, &e);
        CHECK(fd >= 0);
        close(fd);
        lens[m] = e - s;
        CHECK(lens[m] > 0);
        rdirs[m] = where[m];
    }
    /* Map 1's executor refuses; maps 3 (same executor) and 4 (same host)
     * lost their files; map 2, on another host, is not checked. */
    shuffle_remove_output(dir, 23, 3, 0);
    shuffle_remove_output(dir, 23, 4, 0);
    for (int host = 0; host <= 1; host++) {
        fake_fetch f = {.dir = dir, .fail_map = 1};
        sr_fetcher F = {ff_begin, ff_end, ff_drop, &f, 1 << 30, 0, host};
        sr_opts o = ropts(rdirs, 23, 1, NM, SR_PASS, dir, 1 << 20);
        o.seglens = lens;
        o.self = "ember://10.0.0.1:1";
        o.fetch = &F;
        collect got = {EBUF_INIT, 0, 0};
        sr_stats st;
        CHECK_EQ_I64(shuffle_read(&o, collect_sink, &got, &st), EM_EFETCH);
        CHECK_EQ_I64(st.failed_map, 1);
        CHECK_STR_CONTAINS(em_errmsg(), "refused");
        CHECK_EQ_I64(st.nlost, host ? 2 : 1);
        CHECK(st.lost && st.lost[0] == 3);
        if (host) CHECK_EQ_I64(st.lost[1], 4);
        CHECK_EQ_I64(f.live, 0);
        free(st.lost);
        ebuf_free(&got.buf);
    }
    /* Local files: map 1's are gone, and so are map 4's; map 2's index has
     * a fresh CRC over a boundary moved into a block, which only reading
     * its segment finds. */
    shuffle_remove_output(dir, 23, 1, 0);
    uint64_t offs[3], s0, e0, s1, e1;
    int fd0 = shuffle_locate(dir, 23, 2, 0, 0, &s0, &e0), fd1 = shuffle_locate(dir, 23, 2, 0, 1, &s1, &e1);
    CHECK(fd0 >= 0 && fd1 >= 0);
    close(fd0);
    close(fd1);
    offs[0] = s0;
    offs[1] = s0 + (e1 - s0) / 2;
    offs[2] = e1;
    CHECK(offs[1] != e0);
    char ipath[1024];
    shuffle_index_path(ipath, sizeof ipath, dir, 23, 2, 0);
    rewrite_index(ipath, 2, offs);
    sr_opts lo = ropts(ldirs, 23, 1, NM, SR_PASS, dir, 1 << 20);
    lo.seglens = lens;
    collect got = {EBUF_INIT, 0, 0};
    sr_stats st;
    CHECK_EQ_I64(shuffle_read(&lo, collect_sink, &got, &st), EM_EFETCH);
    CHECK_EQ_I64(st.failed_map, 1);
    CHECK_EQ_I64(st.nlost, 3);
    CHECK(st.lost && st.lost[0] == 2 && st.lost[1] == 3 && st.lost[2] == 4);
    free(st.lost);
    ebuf_free(&got.buf);
}

/* readHostLocalDisk: a location of this executor's host (another port,
 * another directory) is read from its files, not fetched; one of another
 * host still is.  Off, both are fetched.  A host-local output that is
 * missing is a fetch failure naming its file and map, as a local one. */
TEST(shuffle_host_local_read) {
    enum { NM = 6 };
    const char *dir = subdir("hl"), *ldirs[NM], *rdirs[NM];
    dirs_of(dir, NM, ldirs);
    wcfg c = {dir, 22, NM, 2, 3000, gen_small, NULL, 0, 0, {0}, 0, 0, NULL};
    CHECK_OK(write_maps(&c));
    free(c.res.seg_bytes);
    char other[700], near[700], own[700];
    snprintf(other, sizeof other, "ember://10.0.0.19:7%s", dir); /* another host */
    snprintf(near, sizeof near, "ember://10.0.0.1:2%s", dir);    /* this host, another executor */
    snprintf(own, sizeof own, "ember://10.0.0.1:1%s", dir);      /* this executor */
    uint64_t lens[NM];
    for (int m = 0; m < NM; m++) {
        uint64_t s, e;
        int fd = shuffle_locate(dir, 22, (uint32_t)m, 0, 1, &s, &e);
        CHECK(fd >= 0);
        close(fd);
        lens[m] = e - s;
        rdirs[m] = m == 0 ? own : m % 2 ? near : other; /* 1, 3, 5 near; 2, 4 other */
    }
    collect want = {EBUF_INIT, 0, 0};
    sr_opts lo = ropts(ldirs, 22, 1, NM, SR_PASS, dir, 1 << 20);
    lo.seglens = lens;
    CHECK_OK(shuffle_read(&lo, collect_sink, &want, NULL));
    for (int on = 1; on >= 0; on--) {
        fake_fetch f = {.dir = dir, .fail_map = -1};
        sr_fetcher F = {ff_begin, ff_end, ff_drop, &f, 1 << 30, on, 0};
        sr_opts o = lo;
        o.dirs = rdirs;
        o.self = "ember://10.0.0.1:1";
        o.fetch = &F;
        collect got = {EBUF_INIT, 0, 0};
        sr_stats st;
        CHECK_OK(shuffle_read(&o, collect_sink, &got, &st));
        CHECK(got.buf.len == want.buf.len && !memcmp(got.buf.p, want.buf.p, want.buf.len));
        CHECK_EQ_I64(f.begun, on ? 2 : NM - 1);
        CHECK_EQ_I64(st.fetched, on ? 2 : NM - 1);
        CHECK_EQ_I64(st.host_local, on ? 3 : 0);
        CHECK_EQ_I64(f.live, 0);
        ebuf_free(&got.buf);
    }
    /* A host named only as a prefix of ours is another host. */
    char longer[700];
    snprintf(longer, sizeof longer, "ember://10.0.0.10:2%s", dir);
    for (int m = 1; m < NM; m += 2) rdirs[m] = longer;
    fake_fetch f2 = {.dir = dir, .fail_map = -1};
    sr_fetcher F2 = {ff_begin, ff_end, ff_drop, &f2, 1 << 30, 1, 0};
    sr_opts o = lo;
    o.dirs = rdirs;
    o.self = "ember://10.0.0.1:1";
    o.fetch = &F2;
    collect got = {EBUF_INIT, 0, 0};
    sr_stats st;
    CHECK_OK(shuffle_read(&o, collect_sink, &got, &st));
    CHECK_EQ_I64(st.fetched, NM - 1);
    CHECK_EQ_I64(st.host_local, 0);
    ebuf_free(&got.buf);
    /* Map 3's files are gone from the host-local directory. */
    for (int m = 1; m < NM; m += 2) rdirs[m] = near;
    char path[1024];
    shuffle_index_path(path, sizeof path, dir, 22, 3, 0);
    CHECK(unlink(path) == 0);
    fake_fetch f3 = {.dir = dir, .fail_map = -1};
    sr_fetcher F3 = {ff_begin, ff_end, ff_drop, &f3, 1 << 30, 1, 0};
    o.fetch = &F3;
    got = (collect){EBUF_INIT, 0, 0};
    CHECK_EQ_I64(shuffle_read(&o, collect_sink, &got, &st), EM_EFETCH);
    CHECK_EQ_I64(st.failed_map, 3);
    CHECK_STR_CONTAINS(em_errmsg(), path);
    CHECK_EQ_I64(f3.live, 0);
    ebuf_free(&got.buf);
    ebuf_free(&want.buf);
    shuffle_remove(dir, 22);
}

/* ------------------------------------------------ keys of up to 16 bytes */

/* The reduce side's word table (agg16.h), which takes keys of up to 16
 * bytes once they are not all of one width of up to 8.  Mode 0: widths 1
 * to 16 from the start; 1: the same with a 20-byte key now and then in
 * the second map (the words move to the general table part way); 2: the
 * first map's keys all 8 bytes (the 8-byte table), the second's of every
 * width (its keys move to the word table).  Each key's sum is checked
 * against a sort of every record written, through the buffer functions,
 * the builtin and the user's functions, combined on the map side or not,
 * spilled or not; with GROW the combiner outgrows 8 bytes part way and the
 * words move to the general table.  Which table ended the read is what
 * its size hint names (sizehint.h). */
static int words_mode;
static size_t word_key(uint32_t m, size_t i, uint8_t *k) {
    uint64_t id = (i * 2654435761u + m * 7) % BIGK;
    size_t w = 1 + id % 16;
    if (words_mode == 2 && m == 0) w = 8;
    if (words_mode == 1 && m == 1 && i % 499 == 3) w = 20;
    for (size_t j = 0; j < w; j++) k[j] = (uint8_t)((id >> (8 * (j % 2))) + j * 31);
    return w;
}
static int64_t word_val(size_t i) { return (int64_t)(i % 100) + 1; }

typedef struct wsum {
    uint8_t k[24];
    size_t len;
    int64_t v;
    size_t clen; /* the combiner's width read back */
} wsum;
static int cmp_wsum(const void *x, const void *y) {
    const wsum *a = x, *b = y;
    return bytes_cmp(a->k, a->len, b->k, b->len);
}
/* Sorted records folded into one per key, their values summed; the count. */
static size_t fold_wsums(wsum *w, size_t n) {
    size_t k = 0;
    qsort(w, n, sizeof *w, cmp_wsum);
    for (size_t i = 0; i < n; i++) {
        if (k && !cmp_wsum(&w[k - 1], &w[i])) w[k - 1].v += w[i].v;
        else w[k++] = w[i];
    }
    return k;
}

TEST(shuffle_agg_words) {
    enum { N = BIGN / 4 };
    static wsum want[2 * N], got[2 * N];
    static int64_t sums[2 * N];
    for (int mode = 0; mode < 3; mode++) {
        words_mode = mode;
        const char *dir = subdir("out"), *spill_dirs[2] = {NULL, subdir("spill-small")}, *dirs[2];
        dirs_of(dir, 2, dirs);
        uint32_t sid = 60 + (uint32_t)mode;
        int one = 1;
        size_t nw = 0;
        for (uint32_t m = 0; m < 2; m++) {
            sw_opts so = {dir, sid, m, 0, 1, part_hash, &one, NULL, 1 << 20, {BF_LZ4, 0}, 4096, NULL, NULL};
            shuffle_writer *w = sw_open(&so);
            CHECK(w != NULL);
            for (size_t i = 0; i < N; i++) {
                wsum *e = &want[nw++];
                uint8_t vb[8];
                e->len = word_key(m, i, e->k);
                e->v = word_val(i);
                em_i64_enc(e->v, vb);
                em_rec r = {e->k, e->len, vb, 8};
                CHECK_OK(sw_add(w, &r));
            }
            sw_result res;
            memset(&res, 0, sizeof res);
            CHECK_OK(sw_commit(w, &res));
            free(res.seg_bytes);
        }
        size_t nkeys = fold_wsums(want, nw);
        int64_t limit;
        for (size_t i = 0; i < nkeys; i++) sums[i] = want[i].v;
        qsort(sums, nkeys, sizeof *sums, cmp_i64);
        limit = sums[nkeys / 2]; /* GROW: about half the combiners end 16 bytes wide */
        for (int run = 0; run < 20; run++) {
            int spec = run % 5, combined = run / 5 % 2, spill = run / 10;
            const agg_spec *base[5] = {&SUM, &SUM_BUILTIN, &SUM, &GROW, &GROW};
            agg_spec g = spec_of(base[spec], spec == 2 || spec == 4);
            grow_limit = limit;
            char scope[512]; /* the hints' scope: a directory of this read's own */
            snprintf(scope, sizeof scope, "%s/words-%d-%d", test_tmpdir(), mode, run);
            if (!spill) CHECK(!mkdir(scope, 0755));
            const char *sp = spill ? spill_dirs[1] : scope;
            collect col = {EBUF_INIT, 0, 0};
            sr_stats st;
            sr_opts o = ropts(dirs, sid, 0, 2, SR_AGG, sp, spill ? 32 << 10 : 1 << 20);
            o.agg = &g;
            o.map_side_combined = combined;
            CHECK_OK(shuffle_read(&o, collect_sink, &col, &st));
            if (spill) CHECK(st.spills > 1);
            else CHECK_EQ_I64(st.spills, 0);
            CHECK_EQ_I64(st.records_read, 2 * N);
            CHECK_EQ_I64(col.n, (int64_t)nkeys);
            size_t pos = 0, n = 0;
            em_rec rec;
            while (collect_next(&col, &pos, &rec)) {
                CHECK(rec.klen <= sizeof got[n].k && (rec.vlen == 8 || rec.vlen == 16));
                memcpy(got[n].k, rec.key, rec.klen);
                got[n].len = rec.klen;
                got[n].v = val_of(&rec);
                got[n++].clen = rec.vlen;
            }
            ebuf_free(&col.buf);
            CHECK_EQ_I64(fold_wsums(got, n), nkeys); /* no key twice */
            for (size_t i = 0; i < nkeys; i++) {
                CHECK(!cmp_wsum(&got[i], &want[i]));
                CHECK_EQ_I64(got[i].v, want[i].v);
                CHECK_EQ_I64(got[i].clen, spec >= 3 && want[i].v > limit ? 16 : 8);
            }
            if (!spill) { /* the table the read ended in */
                int general = mode == 1 || spec >= 3;
                CHECK_EQ_I64(sh_get(sp, sid, SH_REDUCE16), general ? 0 : nkeys);
                CHECK_EQ_I64(sh_get(sp, sid, SH_REDUCE), general ? nkeys : 0);
            }
            CHECK(dir_clean(sp, 0));
        }
    }
}
