/*
 * shuffle.c -- shuffle throughput: reduce_by_key, group_by_key, join and
 * sort_by_key over generated (int64, int64) pairs, each beside references
 * measured in the same run on the same data.  bench/run.sh runs it on
 * local-cluster[2,1] and local[2] and, in the same run, the same work on
 * Dask distributed (bench/shuffle_dask.py), then prints the ratios.
 *
 *   shuffle MASTER [NPAIRS [NKEYS [PARTITIONS]]]
 *                  (defaults: 20000000, 1000000, 8 = 4 x the 2 cores)
 *   SHUFFLE_JOBS=sort shuffle ...   only the jobs named (a comma list of
 *                  reduce, group, distinct, join, sort), for profiling one
 *                  of them;
 *                  reduce_sum (or reduce_fn) is reduce_by_key with the
 *                  builtin (or the user function) alone, aggregate_fn
 *                  and combine_fn the user-function forms of those;
 *                  sort_keys the sort_by_key of keys alone
 *   SHUFFLE_PERF_CTL=FIFO shuffle ...   writes "enable" to FIFO before the
 *                  timed runs of each job and "disable" after them, so that
 *                  perf record --control=fifo:FIFO -D -1 samples only those
 *                  (in cluster mode executors run the uploaded copy of this
 *                  binary, WORKDIR/bin/<hash>, gone when the run ends, so
 *                  perf cannot name their functions: list those paths with
 *                  perf script --show-mmap-events, link each to this
 *                  binary under a directory D that also links /usr and
 *                  /lib, and read with perf report --symfs=D
 *                  --kallsyms=/proc/kallsyms)
 *
 * Inputs, generated inside the tasks (a range of PARTITIONS partition
 * numbers, then a flat_map making each partition's pairs), persisted in
 * memory and materialized with count before any timing:
 *   reduce: pair j (0 <= j < NPAIRS) has key splitmix64(2j) % NKEYS and
 *           value 1 + splitmix64(2j + 1) % 100;
 *   join:   left: pairs 0 .. NPAIRS/2 - 1 of the reduce input (keys in
 *           [0, NKEYS)); right: NKEYS pairs, pair j = (j, 3j), one per key;
 *   sort:   pair j has key splitmix64'(2j) as a signed int64 (another
 *           seed) and the same kind of value;
 *   sort_keys: the sort input's keys with empty values.
 * splitmix64(i) is the finalizer of splitmix64 applied to SEED + (i + 1) *
 * 0x9e3779b97f4a7c15, so any partition's pairs can be made on their own
 * and bench/shuffle_dask.py generates exactly the same data with numpy.
 * Partition p of an input of N pairs holds pairs [p * N / P, (p + 1) * N / P).
 *
 * Timed, 3 runs each (a new RDD every run, so no shuffle output is reused),
 * every operation with the input's partition count:
 *   reduce_by_key  em_reduce_by_key(reduce input, em_sum_i64), em_count;
 *                  first timed with the same sum as a user function
 *                  (printed as reduce_fn), through em_aggregate_by_key
 *                  (zero 0, the user's sum as seq and comb: aggregate_fn)
 *                  and em_combine_by_key (create emits the value, both
 *                  merges the user's sum: combine_fn), then with the
 *                  builtin, which the shuffle merges in place
 *                  (reduce_by_key: the figure set beside Dask's); each
 *                  user form's best is printed over the builtin's;
 *   group_by_key   em_group_by_key(reduce input), em_count;
 *   distinct       em_distinct(reduce input), em_count: the (key, value)
 *                  pairs, about 9 in 10 of them distinct (keys from
 *                  NKEYS, values from 100);
 *   join           em_join(left, right), em_count;
 *   sort_by_key    em_sort_by_key(sort input, ascending) -- its declaration
 *                  runs the sampling job -- then em_count, which reads and
 *                  sorts every reduce partition;
 *   sort_keys      the same over the keys alone, beside numpy's np.sort of
 *                  the same keys on 1 core (/usr/bin/python3, the keys
 *                  passed in a temporary file) and this run's sort_by_key
 *                  of 8-byte values.
 * Each prints best and median, in seconds and millions of input records
 * per second (join: left + right records), then on the next line the
 * process's peak RSS over the runs (VmHWM of /proc/self/status, reset
 * before each run by writing 5 to /proc/self/clear_refs; local[N] only:
 * in cluster mode the executors are other processes) beside the RSS at the
 * start, which holds the persisted input, and the shuffle bytes and
 * records one run wrote (em_stats deltas of the last run: as coded in
 * files or in the outputs local[N] keeps in memory, whose count
 * and bytes are printed too).
 *
 * References, measured before the ember runs of their operation on arrays
 * the driver generates with the same functions, and freed before ember
 * runs, so that they do not count in its RSS; best of 3, printed beside
 * the ember figure:
 *   reduce_by_key  a single-threaded C hash aggregation (open addressing,
 *                  power-of-two table grown at half full, multiplicative
 *                  hash, linear probing, int64 key -> int64 sum); its time
 *                  includes making and growing the table;
 *   distinct       a single-threaded C dedup of the pairs: a copy sorted by
 *                  (key, value) with two LSD radix sorts (by value, then
 *                  stably by key, each as sort_by_key's below), then one
 *                  counting pass; the copy is made before each run and its
 *                  scratch array's pages faulted in, untimed;
 *   sort_by_key    a single-threaded C LSD radix sort of the 16-byte
 *                  (key, value) pairs by signed key (8 passes of 8 bits,
 *                  a pass skipped when its digit is constant; all 8
 *                  histograms in one first pass; 11-bit digits measured
 *                  slower here); the pairs are regenerated before each run
 *                  and the scratch array's pages are faulted in, untimed;
 *   reduce_by_key, sort_by_key
 *                  lz4 alone: the input's pairs as a map task writes them
 *                  (18 bytes a pair) in 64 KiB blocks, each compressed
 *                  with LZ4_compress_fast at ember's default acceleration
 *                  and decompressed again, on 2 threads (lz4_reference):
 *                  the codec's own cost, which map outputs pay in cluster
 *                  mode (files, ember.io.compression.codec=lz4 by default)
 *                  when no map-side combining shrinks them;
 *   all but sort_keys  the memory-read bound: the bytes of the operation's
 *                  input (16 per pair) read once at the bandwidth of 2
 *                  threads summing the uint64s of a 1 GiB array (best of 5).
 *
 * Checked once per operation, after the timed runs (not timed), against
 * the driver's own computation; a mismatch exits 1:
 *   reduce_by_key  ember's sum of the input values (em_reduce) equals the
 *                  driver's; the result's record count equals the number of
 *                  distinct keys; every collected (key, sum) is the
 *                  driver's.  The C reference's table is checked the same.
 *   distinct       the count and the sum of the values of the distinct
 *                  pairs (em_values, em_reduce) are the C dedup's;
 *   group_by_key   a map_partitions over the groups counts groups and the
 *                  items of their lists (em_list_next) and sums
 *                  mix(key) * (sum of the key's values): groups == distinct
 *                  keys, items == NPAIRS, the checksum the driver's.
 *   join           count == NPAIRS/2 (every left key meets exactly one
 *                  right key); a map_partitions over the output sums the
 *                  left values, the right values and mix(key) * left value,
 *                  and counts right values != 3 * key: each the driver's.
 *   sort_by_key    count == NPAIRS; take(5) is non-decreasing and starts
 *                  at the driver's smallest key; each partition is
 *                  non-decreasing, and its first key is not below the
 *                  previous partition's last.  The C reference's output is
 *                  checked non-decreasing from the smallest key.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lz4.h>

#include "ember.h"

#define RUNS 3
#define SEED_REDUCE 0x5eedULL
#define SEED_SORT 0x50b7ULL
#define SEED_MIX 0x3c6ef372fe94f82bULL /* mix(key) of the checksums */
#define GAMMA 0x9e3779b97f4a7c15ULL

enum { GEN_REDUCE, GEN_SORT, GEN_RIGHT, GEN_SORT_KEYS }; /* gen_arg.mode */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static uint64_t splitmix(uint64_t seed, uint64_t i) {
    uint64_t z = seed + (i + 1) * GAMMA;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t mix(int64_t key) { return splitmix(SEED_MIX, (uint64_t)key); }

/* What the generator needs, passed as the flat_map's argument blob. */
typedef struct gen_arg {
    int64_t npairs, nkeys, parts;
    int64_t mode; /* GEN_REDUCE (also the join's left side), GEN_SORT, GEN_RIGHT,
                     GEN_SORT_KEYS (the sort input's keys, empty values) */
} gen_arg;

static int64_t part_start(const gen_arg *g, int64_t p) { return (int64_t)((__int128)g->npairs * p / g->parts); }

/* Pair j of the input. */
static void make_pair(const gen_arg *g, int64_t j, int64_t *k, int64_t *v) {
    if (g->mode == GEN_RIGHT) {
        *k = j;
        *v = 3 * j;
        return;
    }
    int sort = g->mode == GEN_SORT || g->mode == GEN_SORT_KEYS;
    uint64_t seed = sort ? SEED_SORT : SEED_REDUCE;
    uint64_t a = splitmix(seed, 2 * (uint64_t)j), b = splitmix(seed, 2 * (uint64_t)j + 1);
    *k = sort ? (int64_t)a : (int64_t)(a % (uint64_t)g->nkeys);
    *v = 1 + (int64_t)(b % 100);
}

/* flat_map: partition number p -> that partition's pairs. */
static int gen_pairs(const em_rec *in, em_emitter *out, const void *arg) {
    gen_arg g;
    memcpy(&g, arg, sizeof g);
    int64_t p = em_i64_dec(in->val);
    for (int64_t j = part_start(&g, p), end = part_start(&g, p + 1); j < end; j++) {
        int64_t k, v;
        uint8_t kb[8], vb[8];
        make_pair(&g, j, &k, &v);
        em_i64_enc(k, kb);
        em_i64_enc(v, vb);
        int rc = em_emit_pair(out, kb, 8, vb, g.mode == GEN_SORT_KEYS ? 0 : 8);
        if (rc) return rc;
    }
    return 0;
}

static int sum(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return em_emit_i64(out, em_i64_dec(a->val) + em_i64_dec(b->val));
}

/* A map_partitions result of n int64 fields, as one plain record. */
static int emit_fields(em_emitter *out, const int64_t *f, int n) {
    uint8_t o[64];
    for (int i = 0; i < n; i++) em_i64_enc(f[i], o + 8 * i);
    return em_emit(out, o, 8 * (size_t)n);
}

/* Sum the fields of every record of a collected map_partitions result. */
static int sum_fields(em_rdd *per_part, int64_t *f, int n) {
    em_batch *b;
    em_rec r;
    size_t pos = 0;
    memset(f, 0, sizeof *f * (size_t)n);
    if (!per_part || em_collect(per_part, &b)) return -1;
    while (em_batch_next(b, &pos, &r) == 1) {
        for (int i = 0; i < n && r.vlen == 8 * (size_t)n; i++)
            f[i] = (int64_t)((uint64_t)f[i] + (uint64_t)em_i64_dec((const uint8_t *)r.val + 8 * i));
    }
    em_batch_free(b);
    em_rdd_release(per_part);
    return 0;
}

/* map_partitions over group_by_key's output: groups, items, sum of the
 * values, sum of mix(key) * (sum of the key's values), malformed lists. */
static int group_check(int partition, em_iter *in, em_emitter *out, const void *arg) {
    em_rec r;
    int64_t f[5] = {0};
    int rc;
    while ((rc = em_iter_next(in, &r)) == 1) {
        const void *item;
        size_t pos = 0, ilen;
        int64_t s = 0;
        int lrc;
        while ((lrc = em_list_next(r.val, r.vlen, &pos, &item, &ilen)) == 1) {
            if (ilen != 8) {
                f[4]++;
                continue;
            }
            s += em_i64_dec(item);
            f[1]++;
        }
        if (lrc < 0 || r.klen != 8) f[4]++;
        f[0]++;
        f[2] += s;
        if (r.klen == 8) f[3] = (int64_t)((uint64_t)f[3] + mix(em_i64_dec(r.key)) * (uint64_t)s);
    }
    return rc < 0 ? rc : emit_fields(out, f, 5);
}

/* map_partitions over join's output: records, sum of the left values, sum
 * of the right values, sum of mix(key) * left value, records whose right
 * value is not 3 * key or that are malformed. */
static int join_check(int partition, em_iter *in, em_emitter *out, const void *arg) {
    em_rec r;
    int64_t f[5] = {0};
    int rc;
    while ((rc = em_iter_next(in, &r)) == 1) {
        em_tuple t;
        f[0]++;
        if (r.klen != 8 || em_tuple_unpack(r.val, r.vlen, &t) || !t.a_present || !t.b_present || t.alen != 8 ||
            t.blen != 8) {
            f[4]++;
            continue;
        }
        int64_t k = em_i64_dec(r.key), a = em_i64_dec(t.a), b = em_i64_dec(t.b);
        f[1] += a;
        f[2] += b;
        f[3] = (int64_t)((uint64_t)f[3] + mix(k) * (uint64_t)a);
        if (b != 3 * k) f[4]++;
    }
    return rc < 0 ? rc : emit_fields(out, f, 5);
}

/* map_partitions over the sorted RDD: count, first key, last key, 1 if its
 * keys never decrease. */
static int part_order(int partition, em_iter *in, em_emitter *out, const void *arg) {
    em_rec r;
    int64_t f[4] = {0, 0, 0, 1};
    int rc;
    while ((rc = em_iter_next(in, &r)) == 1) {
        int64_t k = em_i64_dec(r.key);
        if (f[0] == 0) f[1] = k;
        else if (k < f[2]) f[3] = 0;
        f[2] = k;
        f[0]++;
    }
    return rc < 0 ? rc : emit_fields(out, f, 4);
}

/* ------------------------------------------------ references, in C */

typedef struct kv {
    int64_t k, v;
} kv;

/* The driver's copy of an input, as an array of pairs. */
static kv *gen_array(const gen_arg *g) {
    kv *p = malloc((size_t)g->npairs * sizeof *p);
    if (!p) {
        fprintf(stderr, "shuffle: out of memory\n");
        exit(1);
    }
    for (int64_t j = 0; j < g->npairs; j++) make_pair(g, j, &p[j].k, &p[j].v);
    return p;
}

/* Hash aggregation: key -> sum in an open-addressing table, grown to twice
 * its size when half full.  Any int64 key: INT64_MIN marks an empty slot,
 * and the key INT64_MIN itself is summed beside the table. */
#define EMPTY_KEY INT64_MIN
typedef struct agg_table {
    kv *slot;
    size_t cap, used; /* cap a power of two */
    int shift;        /* 64 - log2(cap) */
    int has_min;
    int64_t min_sum;
} agg_table;

static size_t agg_home(const agg_table *t, int64_t k) { return (size_t)(((uint64_t)k * GAMMA) >> t->shift); }

static int agg_alloc(agg_table *t, int bits) {
    t->cap = (size_t)1 << bits;
    t->shift = 64 - bits;
    t->used = 0;
    t->slot = malloc(t->cap * sizeof *t->slot);
    if (!t->slot) return -1;
    for (size_t i = 0; i < t->cap; i++) t->slot[i].k = EMPTY_KEY;
    return 0;
}

static int agg_grow(agg_table *t) {
    agg_table n = *t;
    if (agg_alloc(&n, 64 - t->shift + 1)) return -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (t->slot[i].k == EMPTY_KEY) continue;
        size_t h = agg_home(&n, t->slot[i].k);
        while (n.slot[h].k != EMPTY_KEY) h = (h + 1) & (n.cap - 1);
        n.slot[h] = t->slot[i];
    }
    n.used = t->used;
    free(t->slot);
    *t = n;
    return 0;
}

static int hash_aggregate(const kv *p, int64_t n, agg_table *t) {
    if (agg_alloc(t, 12)) return -1;
    t->has_min = 0;
    t->min_sum = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = p[i].k;
        if (k == EMPTY_KEY) {
            t->has_min = 1;
            t->min_sum += p[i].v;
            continue;
        }
        size_t h = agg_home(t, k), mask = t->cap - 1;
        while (t->slot[h].k != k && t->slot[h].k != EMPTY_KEY) h = (h + 1) & mask;
        if (t->slot[h].k == k) {
            t->slot[h].v += p[i].v;
            continue;
        }
        t->slot[h].k = k;
        t->slot[h].v = p[i].v;
        if (++t->used * 2 > t->cap && agg_grow(t)) return -1;
    }
    return 0;
}

/* LSD radix sort of n pairs by signed key (the sign bit flipped, so that
 * unsigned digit order is signed order), 8 passes of 8 bits; a pass whose
 * digit is the same in every key is skipped.  tmp holds n pairs.  Returns
 * the buffer holding the result: a or tmp. */
static kv *radix_sort(kv *a, kv *tmp, size_t n) {
    static size_t count[8][256];
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++) {
        uint64_t u = (uint64_t)a[i].k ^ (1ULL << 63);
        for (int d = 0; d < 8; d++) count[d][(u >> (8 * d)) & 255]++;
    }
    kv *src = a, *dst = tmp;
    for (int d = 0; d < 8 && n; d++) {
        int shift = 8 * d;
        if (count[d][(((uint64_t)a[0].k ^ (1ULL << 63)) >> shift) & 255] == n) continue;
        size_t off[256], o = 0;
        for (int b = 0; b < 256; b++) {
            off[b] = o;
            o += count[d][b];
        }
        for (size_t i = 0; i < n; i++) {
            uint64_t u = (uint64_t)src[i].k ^ (1ULL << 63);
            dst[off[(u >> shift) & 255]++] = src[i];
        }
        kv *s = src;
        src = dst;
        dst = s;
    }
    return src;
}

/* The distinct pairs of p, the C way: sorted by (key, value) with two
 * radix sorts, by value, then stably by key (each skipping the digits all
 * pairs share), and counted in one pass.  p and tmp hold n pairs each, p's
 * order is lost.  *count: the distinct pairs; *vsum: their values' sum. */
static void sort_dedup(kv *p, kv *tmp, size_t n, int64_t *count, int64_t *vsum) {
    for (size_t i = 0; i < n; i++) {
        int64_t k = p[i].k;
        p[i].k = p[i].v;
        p[i].v = k;
    }
    kv *s = radix_sort(p, tmp, n); /* by value */
    for (size_t i = 0; i < n; i++) {
        int64_t v = s[i].k;
        s[i].k = s[i].v;
        s[i].v = v;
    }
    s = radix_sort(s, s == p ? tmp : p, n); /* by key, values in order within a key */
    int64_t c = 0, sum = 0;
    for (size_t i = 0; i < n; i++)
        if (!i || s[i].k != s[i - 1].k || s[i].v != s[i - 1].v) {
            c++;
            sum += s[i].v;
        }
    *count = c;
    *vsum = sum;
}

/* fn(a) and fn(b) on two threads (both here when no thread can be made);
 * the seconds they took. */
static double on_two_threads(void *(*fn)(void *), void *a, void *b) {
    pthread_t th;
    double t0 = now();
    if (pthread_create(&th, NULL, fn, b)) {
        fn(a);
        fn(b);
    } else {
        fn(a);
        pthread_join(th, NULL);
    }
    return now() - t0;
}

/* The default file codec's own cost: the input's pairs as a map task
 * writes them (recfmt.h's batch encoding, varint 9, the key's 8 bytes,
 * varint 8, the value's: 18 bytes a pair) cut into blocks of the default
 * ember.shuffle.blockBytes (64 KiB, whole records), each compressed with
 * LZ4_compress_fast at ember's default acceleration (2) and then
 * decompressed with LZ4_decompress_safe into one block buffer, on 2
 * threads taking half the blocks each; best of 3, the arrays' pages
 * faulted in untimed.  Map outputs in cluster mode are files of such
 * blocks, so when no map-side combining shrinks the records (reduce_by_key
 * gives it up on 2.5M-record map tasks of 1M keys) this is work ember's
 * shuffle does besides everything else. */
#define LZ4_REF_ACCEL 2
#define LZ4_REF_BLOCK (65536 / 18 * 18)
typedef struct lz4_half {
    const uint8_t *raw;
    size_t len;
    uint8_t *z;
    int *zlen;  /* per block */
    int ok;
} lz4_half;

static void *lz4_half_run(void *arg) {
    lz4_half *h = arg;
    static __thread char out[LZ4_REF_BLOCK];
    size_t zoff = 0, nb = 0;
    for (size_t off = 0; off < h->len; off += LZ4_REF_BLOCK, nb++) {
        int l = (int)(h->len - off < LZ4_REF_BLOCK ? h->len - off : LZ4_REF_BLOCK);
        h->zlen[nb] = LZ4_compress_fast((const char *)h->raw + off, (char *)h->z + zoff, l, LZ4_compressBound(l),
                                        LZ4_REF_ACCEL);
        zoff += (size_t)h->zlen[nb];
    }
    h->ok = 1;
    zoff = 0;
    for (size_t i = 0, off = 0; i < nb; i++, off += LZ4_REF_BLOCK) {
        int l = (int)(h->len - off < LZ4_REF_BLOCK ? h->len - off : LZ4_REF_BLOCK);
        if (h->zlen[i] <= 0 || LZ4_decompress_safe((const char *)h->z + zoff, out, h->zlen[i], l) != l ||
            memcmp(out + l - 18, h->raw + off + l - 18, 18))
            h->ok = 0;
        zoff += (size_t)(h->zlen[i] > 0 ? h->zlen[i] : 0);
    }
    return NULL;
}

/* Seconds (best of 3) and, in *ratio, compressed bytes per raw byte; a
 * negative time when memory ran out or a block did not round-trip. */
static double lz4_reference(const gen_arg *g, double *ratio) {
    size_t len = (size_t)g->npairs * 18, nb = len / LZ4_REF_BLOCK + 2;
    uint8_t *raw = malloc(len), *z = malloc((size_t)LZ4_compressBound((int)LZ4_REF_BLOCK) * nb);
    int *zlen = malloc(nb * sizeof *zlen);
    double best = -1;
    if (!raw || !z || !zlen) goto out;
    for (int64_t j = 0; j < g->npairs; j++) {
        int64_t k, v;
        uint8_t *p = raw + (size_t)j * 18;
        make_pair(g, j, &k, &v);
        p[0] = 9;
        em_i64_enc(k, p + 1);
        p[9] = 8;
        em_i64_enc(v, p + 10);
    }
    memset(z, 1, (size_t)LZ4_compressBound((int)LZ4_REF_BLOCK) * nb);
    size_t half = (size_t)g->npairs / 2 * 18 / LZ4_REF_BLOCK * LZ4_REF_BLOCK;
    for (int k = 0; k < RUNS; k++) {
        lz4_half h[2] = {{raw, half, z, zlen, 0},
                         {raw + half, len - half, z + (size_t)LZ4_compressBound((int)LZ4_REF_BLOCK) * (half / LZ4_REF_BLOCK),
                          zlen + half / LZ4_REF_BLOCK, 0}};
        double t = on_two_threads(lz4_half_run, &h[0], &h[1]);
        if (!h[0].ok || !h[1].ok) {
            best = -1;
            goto out;
        }
        if (best < 0 || t < best) best = t;
    }
    size_t zsum = 0;
    for (size_t i = 0; i < (len + LZ4_REF_BLOCK - 1) / LZ4_REF_BLOCK; i++) zsum += (size_t)zlen[i];
    *ratio = (double)zsum / (double)len;
out:
    free(raw);
    free(z);
    free(zlen);
    return best;
}

/* Read bandwidth: 2 threads summing the uint64s of halves of a 1 GiB
 * array (best of 5), in bytes per second. */
typedef struct span {
    const uint64_t *p;
    size_t n;
    uint64_t sum;
} span;

static void *stream_sum(void *arg) {
    span *s = arg;
    const uint64_t *restrict p = s->p;
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
    for (size_t i = 0; i + 8 <= s->n; i += 8) {
        a0 += p[i];
        a1 += p[i + 1];
        a2 += p[i + 2];
        a3 += p[i + 3];
        a4 += p[i + 4];
        a5 += p[i + 5];
        a6 += p[i + 6];
        a7 += p[i + 7];
    }
    s->sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    return NULL;
}

static double read_bandwidth(void) {
    size_t n = (size_t)1 << 27; /* uint64s: 1 GiB */
    uint64_t *buf = malloc(n * sizeof *buf), sink = 0;
    double best = 1e30;
    if (!buf) return 0;
    for (size_t i = 0; i < n; i++) buf[i] = i & 1023;
    for (int k = 0; k < 5; k++) {
        span s[2] = {{buf, n / 2, 0}, {buf + n / 2, n / 2, 0}};
        double t = on_two_threads(stream_sum, &s[0], &s[1]);
        sink += s[0].sum + s[1].sum;
        if (t < best) best = t;
    }
    free(buf);
    if (sink == 42) printf(" "); /* keep the sums */
    return (double)n * sizeof *buf / best;
}

/* ---------------------------------------------------------- measuring */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A field of /proc/self/status in kB ("VmHWM"), or -1. */
static int64_t proc_status_kb(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int64_t kb = -1;
    size_t len = strlen(field);
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, field, len) && line[len] == ':') {
            kb = strtoll(line + len + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

/* Reset VmHWM to the current RSS; 0, or -1 where /proc cannot. */
static int reset_hwm(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return -1;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* One operation's timed runs. */
typedef struct measure {
    double t[RUNS];
    int64_t rss_start_kb, hwm_kb; /* -1: not measured */
    int64_t shuffle_bytes, shuffle_recs, spills; /* the last run's */
    int64_t mem_outputs, mem_bytes;              /* kept in memory after it */
} measure;

typedef em_rdd *(*make_fn)(em_rdd *a, em_rdd *b);
static em_rdd *make_reduce(em_rdd *a, em_rdd *b) { return em_reduce_by_key(a, em_sum_i64, NULL, 0, 0); }
static em_rdd *make_reduce_fn(em_rdd *a, em_rdd *b) { return em_reduce_by_key(a, sum, NULL, 0, 0); }
/* The same sums through aggregate_by_key (zero 0, seq and comb the user's
 * sum) and combine_by_key (create: the value itself; both merges the sum). */
static const uint8_t zero_i64[8] = {0x80, 0, 0, 0, 0, 0, 0, 0}; /* em_i64_enc(0) */
static int first_value(const em_rec *v, em_emitter *out, const void *arg) { return em_emit(out, v->val, v->vlen); }
static em_rdd *make_aggregate_fn(em_rdd *a, em_rdd *b) {
    return em_aggregate_by_key(a, zero_i64, 8, sum, sum, NULL, 0, 0);
}
static em_rdd *make_combine_fn(em_rdd *a, em_rdd *b) { return em_combine_by_key(a, first_value, sum, sum, NULL, 0, 0); }
static em_rdd *make_group(em_rdd *a, em_rdd *b) { return em_group_by_key(a, 0); }
static em_rdd *make_distinct(em_rdd *a, em_rdd *b) { return em_distinct(a, 0); }
static em_rdd *make_join(em_rdd *a, em_rdd *b) { return em_join(a, b, 0); }
static em_rdd *make_sort(em_rdd *a, em_rdd *b) { return em_sort_by_key(a, 1, 0); }

/* numpy's sort of the n keys of pairs, 1 core, best of RUNS (the keys go
 * through a temporary file; numpy's own load is not timed): seconds, or
 * -1 when /usr/bin/python3 cannot import numpy or the run fails. */
static double numpy_sort(const kv *pairs, int64_t n) {
    if (system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) return -1;
    char path[] = "/tmp/ember-bench-keys-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    FILE *f = fdopen(fd, "w");
    int ok = f != NULL;
    for (int64_t i = 0; ok && i < n; i++) ok = fwrite(&pairs[i].k, 8, 1, f) == 1;
    if (f && fclose(f)) ok = 0;
    double t = -1;
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 -c '"
             "import sys, time, numpy as np\n"
             "k = np.fromfile(sys.argv[1], dtype=np.int64)\n"
             "best = 1e30\n"
             "for _ in range(%d):\n"
             "    t0 = time.perf_counter(); s = np.sort(k); best = min(best, time.perf_counter() - t0)\n"
             "    assert s[0] == k.min() and bool(np.all(s[1:] >= s[:-1]))\n"
             "print(best)' %s",
             RUNS, path);
    FILE *p = ok ? popen(cmd, "r") : NULL;
    if (p) {
        if (fscanf(p, "%lf", &t) != 1) t = -1;
        if (pclose(p) != 0) t = -1;
    }
    unlink(path);
    return t;
}

/* Whether job `name` runs: all of them unless $SHUFFLE_JOBS names some
 * (a comma list of reduce, reduce_sum, reduce_fn, group, distinct, join,
 * sort), to
 * profile one alone. */
static int want(const char *name) {
    const char *only = getenv("SHUFFLE_JOBS");
    if (!only || !*only) return 1;
    size_t n = strlen(name);
    for (const char *p = only; (p = strstr(p, name)); p += n)
        if ((p == only || p[-1] == ',') && (p[n] == ',' || !p[n])) return 1;
    return 0;
}

static int fail(const char *what) {
    fprintf(stderr, "shuffle: %s: %s\n", what, em_errmsg());
    return 1;
}

/* Check a sort_by_key result of n records (npairs expected) whose
 * smallest key the driver knows: the first records, then every partition.
 * Consumes res.  1 when all is right. */
static int check_sorted(em_rdd *res, int64_t npairs, int64_t n, int64_t min_key) {
    em_batch *b;
    em_rec r;
    /* Check the last result: the first records, then every partition. */
    if (em_take(res, 5, &b)) return !fail("take");
    int64_t prev = INT64_MIN, first = 0;
    size_t pos = 0;
    int ordered = em_batch_count(b) == 5;
    for (int i = 0; em_batch_next(b, &pos, &r) == 1; i++) {
        int64_t k = em_i64_dec(r.key);
        if (i == 0) first = k;
        if (k < prev) ordered = 0;
        prev = k;
    }
    em_batch_free(b);
    em_rdd *orders = em_map_partitions(res, part_order, NULL, 0);
    if (!orders || em_collect(orders, &b)) return !fail("partition order");
    int64_t total_n = 0, parts_ok = 0, nparts = 0, have = 0;
    prev = INT64_MIN;
    pos = 0;
    while (em_batch_next(b, &pos, &r) == 1) {
        const uint8_t *o = r.val;
        int64_t pn = em_i64_dec(o), pf = em_i64_dec(o + 8), pl = em_i64_dec(o + 16), pok = em_i64_dec(o + 24);
        nparts++;
        total_n += pn;
        if (pn == 0) {
            parts_ok++;
            continue;
        }
        if (pok && (!have || pf >= prev)) parts_ok++;
        prev = pl;
        have = 1;
    }
    em_batch_free(b);
    em_rdd_release(orders);
    em_rdd_release(res);
    printf("  sort_by_key: %" PRId64 " records, first 5 ordered: %s, first key %" PRId64
           " (driver's smallest: %" PRId64 "), %" PRId64 " of %" PRId64 " partitions ordered and in order\n",
           n, ordered ? "yes" : "NO", first, min_key, parts_ok, nparts);
    return n == npairs && total_n == n && ordered && first == min_key && parts_ok == nparts;
}

/* Tell a perf record started with --control=fifo:$SHUFFLE_PERF_CTL -D -1
 * to sample (cmd "enable") or to stop ("disable"), waiting for its
 * acknowledgement when $SHUFFLE_PERF_ACK names its ack fifo. */
static void perf_ctl(const char *cmd) {
    const char *path = getenv("SHUFFLE_PERF_CTL"), *ack = getenv("SHUFFLE_PERF_ACK");
    if (!path || !*path) return;
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "%s\n", cmd);
    fclose(f);
    if (ack && *ack && (f = fopen(ack, "r"))) {
        char line[16];
        if (!fgets(line, sizeof line, f)) line[0] = 0;
        fclose(f);
    }
}

/* RUNS times: declare the operation over a (and b), count it.  Returns the
 * last run's RDD (for the checks) and its count, or NULL. */
static em_rdd *timed_runs(em_ctx *ctx, make_fn make, em_rdd *a, em_rdd *b, int rss, measure *m, int64_t *n) {
    em_rdd *r = NULL;
    m->rss_start_kb = m->hwm_kb = -1;
    perf_ctl("enable");
    for (int i = 0; i < RUNS; i++) {
        em_stats s0, s1;
        if (rss && reset_hwm()) rss = 0;
        if (rss && i == 0) m->rss_start_kb = proc_status_kb("VmRSS");
        em_get_stats(ctx, &s0);
        double t0 = now();
        r = make(a, b);
        if (!r || em_count(r, n)) {
            perf_ctl("disable");
            return NULL;
        }
        m->t[i] = now() - t0;
        em_get_stats(ctx, &s1);
        if (rss) {
            int64_t h = proc_status_kb("VmHWM");
            if (h > m->hwm_kb) m->hwm_kb = h;
        }
        m->shuffle_bytes = s1.shuffle_bytes_written - s0.shuffle_bytes_written;
        m->shuffle_recs = s1.shuffle_records_written - s0.shuffle_records_written;
        m->mem_outputs = s1.shuffle_memory_outputs;
        m->mem_bytes = s1.shuffle_memory_bytes;
        m->spills = s1.spills - s0.spills;
        if (i < RUNS - 1) em_rdd_release(r);
    }
    perf_ctl("disable");
    return r;
}

/* The ember line (the format bench/run.sh's awk reads: OP ember MASTER ...
 * best T ...), then the memory and shuffle line. */
static void report(const char *op, const char *master, int64_t nrec, measure *m) {
    double *t = m->t;
    qsort(t, RUNS, sizeof t[0], cmp_double);
    char label[64];
    snprintf(label, sizeof label, "ember %s", master);
    printf("%-13s %-28s %9" PRId64 " recs  best %7.3f s %7.2f M rec/s  median %7.3f s %7.2f M rec/s\n", op, label,
           nrec, t[0], nrec / t[0] / 1e6, t[RUNS / 2], nrec / t[RUNS / 2] / 1e6);
    if (m->hwm_kb >= 0)
        printf("  peak RSS %.0f MB (%.0f MB at the start, with the persisted input)", m->hwm_kb / 1024.0,
               m->rss_start_kb / 1024.0);
    else printf("  peak RSS n/a (executors are processes)");
    /* Files are coded with ember.io.compression.codec, the outputs local[N]
     * keeps in memory with ember.shuffle.inMemoryOutput.codec. */
    printf("; shuffled %.1f MB as stored (%" PRId64 " outputs, %.1f MB, kept in memory), %.2f M records per run; %" PRId64
           " spills\n",
           m->shuffle_bytes / 1048576.0, m->mem_outputs, m->mem_bytes / 1048576.0, m->shuffle_recs / 1e6, m->spills);
    fflush(stdout);
}

/* A reference line beside the ember figure best_ember. */
static void reference(const char *what, double t, int64_t nrec, double best_ember) {
    printf("  reference: %-58s %8.4f s %7.2f M rec/s  (ember's best: %.2fx this time)\n", what, t, nrec / t / 1e6,
           best_ember / t);
}

static void lz4_line(double t, double ratio, int64_t npairs, double best_ember) {
    char what[128];
    if (t < 0) {
        printf("  reference: lz4 of the records FAILED (out of memory, or a block did not round-trip)\n");
        return;
    }
    snprintf(what, sizeof what, "lz4 alone, blocks in and out (ratio %.2f), 2 threads", ratio);
    reference(what, t, npairs, best_ember);
}

static void bound(double bandwidth, int64_t npairs, int64_t nrec, double best_ember) {
    char what[128];
    snprintf(what, sizeof what, "memory bound, the input's %.0f MB read once at %.1f GB/s", npairs * 16 / 1e6,
             bandwidth / 1e9);
    reference(what, npairs * 16 / bandwidth, nrec, best_ember);
    fflush(stdout);
}

/* Generate, persist and materialize one input; returns its seconds in *t. */
static em_rdd *make_input(em_ctx *ctx, const gen_arg *g, double *t) {
    double t0 = now();
    em_rdd *seeds = em_range(ctx, 0, g->parts, 1, (int)g->parts);
    em_rdd *in = em_persist(em_flat_map(seeds, gen_pairs, g, sizeof *g), EM_MEMORY_ONLY);
    em_rdd_release(seeds);
    int64_t n;
    if (!in || em_count(in, &n)) return NULL;
    if (n != g->npairs) {
        fprintf(stderr, "shuffle: generated %" PRId64 " pairs, expected %" PRId64 "\n", n, g->npairs);
        exit(1);
    }
    *t = now() - t0;
    return in;
}

static void drop_input(em_rdd *in) {
    em_unpersist(in);
    em_rdd_release(in);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: [SHUFFLE_JOBS=reduce,reduce_sum,reduce_fn,aggregate_fn,combine_fn,group,distinct,join,sort,sort_keys] shuffle MASTER [NPAIRS [NKEYS [PARTITIONS]]]\n");
        return 1;
    }
    const char *master = argv[1];
    gen_arg g = {argc > 2 ? atoll(argv[2]) : 20000000, argc > 3 ? atoll(argv[3]) : 1000000,
                 argc > 4 ? atoll(argv[4]) : 8, GEN_REDUCE};
    if (g.npairs < 2 || g.nkeys < 1 || g.parts < 1 || g.parts > 100000) {
        fprintf(stderr, "shuffle: NPAIRS must be at least 2, NKEYS and PARTITIONS positive\n");
        return 1;
    }
    /* Peak RSS means something only when the executors are this process. */
    int rss = !strncmp(master, "local", 5) && strncmp(master, "local-cluster", 13) && reset_hwm() == 0;
    int bad = 0;
    int64_t npairs = g.npairs, nkeys = g.nkeys, nleft = g.npairs / 2;
    double bandwidth = read_bandwidth();

    /* The driver's own view of the reduce input (and of the join's left
     * side, its first half): sum per key, and the C hash aggregation. */
    int64_t *key_sum = calloc((size_t)nkeys, sizeof *key_sum);
    if (!key_sum) {
        fprintf(stderr, "shuffle: out of memory\n");
        return 1;
    }
    kv *pairs = gen_array(&g);
    int64_t total = 0, distinct = 0, left_sum = 0, left_right_sum = 0;
    uint64_t left_mix = 0, group_mix = 0;
    for (int64_t j = 0; j < npairs; j++) {
        int64_t k = pairs[j].k, v = pairs[j].v;
        if (!key_sum[k]) distinct++; /* values are >= 1 */
        key_sum[k] += v;
        total += v;
        if (j < nleft) {
            left_sum += v;
            left_right_sum += 3 * k;
            left_mix += mix(k) * (uint64_t)v;
        }
    }
    for (int64_t k = 0; k < nkeys; k++) group_mix += mix(k) * (uint64_t)key_sum[k];

    double t_hash = 1e30;
    for (int i = 0; i < RUNS; i++) {
        agg_table tab;
        double t0 = now();
        if (hash_aggregate(pairs, npairs, &tab)) {
            fprintf(stderr, "shuffle: out of memory\n");
            return 1;
        }
        double t = now() - t0;
        if (t < t_hash) t_hash = t;
        if (i == RUNS - 1) {
            int64_t wrong = tab.has_min;
            for (size_t s = 0; s < tab.cap; s++) {
                int64_t k = tab.slot[s].k;
                if (k != EMPTY_KEY && (k < 0 || k >= nkeys || key_sum[k] != tab.slot[s].v)) wrong++;
            }
            if ((int64_t)tab.used != distinct || wrong) {
                printf("  C hash aggregation: %zu keys (driver: %" PRId64 "), %" PRId64 " wrong\n", tab.used,
                       distinct, wrong);
                bad = 1;
            }
        }
        free(tab.slot);
    }
    /* The distinct pairs, the C way. */
    double t_dedup = 1e30;
    int64_t dedup_count = 0, dedup_sum = 0;
    if (want("distinct")) {
        kv *work = malloc((size_t)npairs * sizeof *work), *tmp = malloc((size_t)npairs * sizeof *tmp);
        if (!work || !tmp) {
            fprintf(stderr, "shuffle: out of memory\n");
            return 1;
        }
        memset(tmp, 1, (size_t)npairs * sizeof *tmp); /* its pages in, untimed (not 0: see the sort's) */
        for (int i = 0; i < RUNS; i++) {
            memcpy(work, pairs, (size_t)npairs * sizeof *work);
            double t0 = now();
            sort_dedup(work, tmp, (size_t)npairs, &dedup_count, &dedup_sum);
            double t = now() - t0;
            if (t < t_dedup) t_dedup = t;
        }
        free(work);
        free(tmp);
    }
    free(pairs);
    double lz4_ratio = 0, t_lz4 = (want("reduce") || want("reduce_sum")) ? lz4_reference(&g, &lz4_ratio) : 0;

    em_ctx *ctx = em_open(master, NULL);
    if (!ctx) return fail("em_open");
    printf("shuffle on %s (%d cores): %" PRId64 " pairs of (int64, int64), %" PRId64
           " keys drawn for reduce (%" PRId64 " distinct), join %" PRId64 " x %" PRId64 ", %" PRId64
           " partitions; read bandwidth %.1f GB/s (2 threads)\n",
           master, em_cores(ctx), npairs, nkeys, distinct, nleft, nkeys, g.parts, bandwidth / 1e9);

    /* ---- reduce_by_key ---- */
    double tgen;
    em_rdd *in = NULL, *res = NULL;
    em_batch *b;
    em_rec r;
    measure m;
    int64_t n = 0;
    int red_sum = want("reduce") || want("reduce_sum"), red_fn = want("reduce") || want("reduce_fn"),
        agg_fn = want("reduce") || want("aggregate_fn"), comb_fn = want("reduce") || want("combine_fn");
    if (red_sum || red_fn || agg_fn || comb_fn || want("group") || want("distinct")) {
        in = make_input(ctx, &g, &tgen);
        if (!in) return fail("reduce input");
        em_rdd *vals = em_values(in);
        if (!vals || em_reduce(vals, sum, NULL, 0, &b) || em_batch_get(b, 0, &r)) return fail("input sum");
        int64_t in_sum = em_i64_dec(r.val);
        em_batch_free(b);
        em_rdd_release(vals);
        printf("  reduce input generated and persisted in %.3f s; sum of values %" PRId64 " (driver: %" PRId64 ")\n",
               tgen, in_sum, total);
        if (in_sum != total) bad = 1;
    }
    /* First with user functions (the same sum written in C) through
     * reduce_by_key, aggregate_by_key and combine_by_key, then with the
     * builtin em_sum_i64, which the shuffle merges in place: the figure
     * compared with Dask is the builtin's, and each user variant's best is
     * printed over it. */
    static const struct {
        const char *name, *what;
        make_fn make;
    } variants[] = {
        {"reduce_fn", "reduce_by_key, a user function", make_reduce_fn},
        {"aggregate_fn", "aggregate_by_key, user functions", make_aggregate_fn},
        {"combine_fn", "combine_by_key, user functions", make_combine_fn},
        {"reduce_by_key", "reduce_by_key, em_sum_i64", make_reduce},
    };
    double best_fn[3] = {0, 0, 0};
    for (int variant = 0; variant < 4; variant++) {
        if (!(variant == 0 ? red_fn : variant == 1 ? agg_fn : variant == 2 ? comb_fn : red_sum)) continue;
        if (!(res = timed_runs(ctx, variants[variant].make, in, NULL, rss, &m, &n)))
            return fail(variants[variant].name);
        /* Check the last result whole: every key's sum. */
        int64_t got = 0, wrong = 0, out_sum = 0;
        size_t pos = 0;
        if (em_collect(res, &b)) return fail("collect reduce_by_key");
        while (em_batch_next(b, &pos, &r) == 1) {
            int64_t k = em_i64_dec(r.key), s = em_i64_dec(r.val);
            got++;
            out_sum += s;
            if (k < 0 || k >= nkeys || key_sum[k] != s) wrong++;
        }
        em_batch_free(b);
        em_rdd_release(res);
        printf("  %s: %" PRId64 " keys (driver: %" PRId64 "), sum of sums %" PRId64 ", %" PRId64
               " keys with a wrong sum\n",
               variants[variant].what, n, distinct, out_sum, wrong);
        if (n != distinct || got != n || out_sum != total || wrong) bad = 1;
        if (variant < 3) {
            report(variants[variant].name, master, npairs, &m);
            best_fn[variant] = m.t[0]; /* report sorted the runs */
        }
    }
    free(key_sum);
    if (red_sum) {
        report("reduce_by_key", master, npairs, &m);
        for (int v = 0; v < 3; v++)
            if (best_fn[v] > 0)
                printf("  %-13s best over the builtin's: %.2fx\n", variants[v].name, best_fn[v] / m.t[0]);
        reference("C hash aggregation, 1 thread", t_hash, npairs, m.t[0]);
        lz4_line(t_lz4, lz4_ratio, npairs, m.t[0]);
        bound(bandwidth, npairs, npairs, m.t[0]);
    }

    /* ---- group_by_key, over the same input ---- */
    if (want("group")) {
        if (!(res = timed_runs(ctx, make_group, in, NULL, rss, &m, &n))) return fail("group_by_key");
        {
            int64_t f[5];
            if (sum_fields(em_map_partitions(res, group_check, NULL, 0), f, 5)) return fail("group_by_key check");
            em_rdd_release(res);
            printf("  group_by_key: %" PRId64 " groups (driver: %" PRId64 "), %" PRId64 " values (driver: %" PRId64
                   "), sum %" PRId64 " (driver: %" PRId64 "), checksum %s, %" PRId64 " malformed\n",
                   f[0], distinct, f[1], npairs, f[2], total, (uint64_t)f[3] == group_mix ? "ok" : "WRONG", f[4]);
            if (n != distinct || f[0] != n || f[1] != npairs || f[2] != total || (uint64_t)f[3] != group_mix || f[4])
                bad = 1;
    }
    report("group_by_key", master, npairs, &m);
    bound(bandwidth, npairs, npairs, m.t[0]);
    }

    /* ---- distinct, over the same input ---- */
    if (want("distinct")) {
        if (!(res = timed_runs(ctx, make_distinct, in, NULL, rss, &m, &n))) return fail("distinct");
        em_rdd *vals = em_values(res);
        if (!vals || em_reduce(vals, sum, NULL, 0, &b) || em_batch_get(b, 0, &r)) return fail("distinct sum");
        int64_t dsum = em_i64_dec(r.val);
        em_batch_free(b);
        em_rdd_release(vals);
        em_rdd_release(res);
        printf("  distinct: %" PRId64 " pairs (the C dedup's: %" PRId64 "), sum of their values %" PRId64
               " (the C dedup's: %" PRId64 ")\n",
               n, dedup_count, dsum, dedup_sum);
        if (n != dedup_count || dsum != dedup_sum) bad = 1;
        report("distinct", master, npairs, &m);
        reference("C radix-sort dedup, 1 thread", t_dedup, npairs, m.t[0]);
        bound(bandwidth, npairs, npairs, m.t[0]);
    }
    if (in) drop_input(in);

    /* ---- join: the reduce input's first half with one pair per key ---- */
    if (want("join")) {
        gen_arg gl = g, gr = g;
        gl.npairs = nleft;
        gr.npairs = nkeys;
        gr.mode = GEN_RIGHT;
        double tgen2;
        em_rdd *left = make_input(ctx, &gl, &tgen), *right = left ? make_input(ctx, &gr, &tgen2) : NULL;
        if (!right) return fail("join input");
        printf("  join inputs generated and persisted in %.3f s and %.3f s\n", tgen, tgen2);
        if (!(res = timed_runs(ctx, make_join, left, right, rss, &m, &n))) return fail("join");
        {
            int64_t f[5];
            if (sum_fields(em_map_partitions(res, join_check, NULL, 0), f, 5)) return fail("join check");
            em_rdd_release(res);
            printf("  join: %" PRId64 " records (driver: %" PRId64 "), left values %" PRId64 " (driver: %" PRId64
                   "), right values %" PRId64 " (driver: %" PRId64 "), checksum %s, %" PRId64 " wrong\n",
                   n, nleft, f[1], left_sum, f[2], left_right_sum, (uint64_t)f[3] == left_mix ? "ok" : "WRONG", f[4]);
            if (n != nleft || f[0] != n || f[1] != left_sum || f[2] != left_right_sum || (uint64_t)f[3] != left_mix ||
                f[4])
                bad = 1;
    }
    drop_input(left);
    drop_input(right);
    report("join", master, nleft + nkeys, &m);
    bound(bandwidth, nleft + nkeys, nleft + nkeys, m.t[0]);
    }

    /* ---- sort_by_key ---- */
    double t_sort8 = 0; /* its best, for sort_keys */
    if (want("sort")) {
        g.mode = GEN_SORT;
        double t_radix = 1e30;
        int64_t min_key = INT64_MAX;
        {
            kv *tmp = malloc((size_t)npairs * sizeof *tmp);
            if (!tmp) {
                fprintf(stderr, "shuffle: out of memory\n");
                return 1;
            }
            /* Fault its pages in before timing (not 0: malloc + memset 0 may
             * be compiled as calloc, which leaves the pages untouched). */
            memset(tmp, 1, (size_t)npairs * sizeof *tmp);
            for (int i = 0; i < RUNS; i++) {
                pairs = gen_array(&g);
                if (i == 0)
                    for (int64_t j = 0; j < npairs; j++)
                        if (pairs[j].k < min_key) min_key = pairs[j].k;
                double t0 = now();
                kv *s = radix_sort(pairs, tmp, (size_t)npairs);
                double t = now() - t0;
                if (t < t_radix) t_radix = t;
                int ordered = s[0].k == min_key;
                for (int64_t j = 1; j < npairs; j++) ordered &= s[j - 1].k <= s[j].k;
                if (!ordered) {
                    printf("  C radix sort: output NOT ordered\n");
                    bad = 1;
                }
                free(pairs);
            }
            free(tmp);
    }
    double sort_lz4_ratio = 0, t_sort_lz4 = lz4_reference(&g, &sort_lz4_ratio);
    if (!(in = make_input(ctx, &g, &tgen))) return fail("sort input");
    printf("  sort input generated and persisted in %.3f s\n", tgen);
    if (!(res = timed_runs(ctx, make_sort, in, NULL, rss, &m, &n))) return fail("sort_by_key");
    if (!check_sorted(res, npairs, n, min_key)) bad = 1;
    drop_input(in);
    report("sort_by_key", master, npairs, &m);
    t_sort8 = m.t[0];
    reference("C LSD radix sort, 8 x 8-bit passes, 1 thread", t_radix, npairs, m.t[0]);
    lz4_line(t_sort_lz4, sort_lz4_ratio, npairs, m.t[0]);
    bound(bandwidth, npairs, npairs, m.t[0]);
    }

    /* ---- sort_by_key of the sort input's keys with empty values ---- */
    if (want("sort_keys")) {
        g.mode = GEN_SORT_KEYS;
        int64_t min_key = INT64_MAX;
        pairs = gen_array(&g);
        for (int64_t j = 0; j < npairs; j++)
            if (pairs[j].k < min_key) min_key = pairs[j].k;
        double t_np = numpy_sort(pairs, npairs);
        free(pairs);
        if (!(in = make_input(ctx, &g, &tgen))) return fail("sort_keys input");
        printf("  sort_keys input generated and persisted in %.3f s\n", tgen);
        if (!(res = timed_runs(ctx, make_sort, in, NULL, rss, &m, &n))) return fail("sort_by_key of keys");
        if (!check_sorted(res, npairs, n, min_key)) bad = 1;
        drop_input(in);
        report("sort_keys", master, npairs, &m);
        if (t_np > 0) reference("numpy sort of the int64 keys, 1 core (/usr/bin/python3)", t_np, npairs, m.t[0]);
        else printf("  reference: numpy absent or failed (scripts/install-deps.sh bench installs it)\n");
        if (t_sort8 > 0) reference("this run's sort_by_key of 8-byte keys and 8-byte values", t_sort8, npairs, m.t[0]);
    }

    em_stats st;
    em_get_stats(ctx, &st);
    printf("  shuffle bytes written %.1f MB in all, %" PRId64 " spills\n", st.shuffle_bytes_written / 1048576.0,
           st.spills);
    em_close(ctx);
    if (bad) {
        fprintf(stderr, "shuffle: MISMATCH (see the check lines above)\n");
        return 1;
    }
    return 0;
}
