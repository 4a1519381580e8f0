/*
 * test_extsort.c -- the external sorter on keys the prefix alone cannot
 * order: lengths 0 to 20 over a two-letter alphabet (so many keys share
 * their first 8 bytes, and short keys are prefixes of long ones), pairs
 * and plain records, both directions, in memory (radix sort with its
 * comparison fix-up, and the comparison sort below its size) and with
 * spilled runs merged.  The expected order is qsort's with rec_key_cmp.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "extsort.h"
#include "recfmt.h"

typedef struct key { uint8_t b[24]; size_t len; int plain; } key;

static int key_cmp(const void *x, const void *y) {
    const key *a = x, *b = y;
    return bytes_cmp(a->b, a->len, b->b, b->len);
}

static void make_keys(key *k, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t r = seed >> 11;
        k[i].len = (size_t)(r % 21);
        for (size_t j = 0; j < k[i].len; j++) k[i].b[j] = (uint8_t)('a' + ((r >> (5 + j)) & 1));
        if (k[i].len > 3 && (r >> 40) % 4 == 0) k[i].b[k[i].len - 1] = 0; /* zero bytes, as the padding */
        k[i].plain = (r >> 50) % 5 == 0;
    }
}

/* Sort n keys with the given budget; checks the order and the count. */
static int sort_keys(size_t n, size_t budget, int descending, int64_t *spills) {
    key *k = malloc(n * sizeof *k), *want = malloc(n * sizeof *want);
    make_keys(k, n, n * 31 + budget + (size_t)descending);
    memcpy(want, k, n * sizeof *k);
    qsort(want, n, sizeof *want, key_cmp);
    extsort es;
    es_init(&es, test_tmpdir(), budget, descending, (bf_codec){BF_LZ4, 0}, 4096);
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        em_rec r = k[i].plain ? (em_rec){NULL, 0, k[i].b, k[i].len} : (em_rec){k[i].b, k[i].len, "v", 1};
        ok = es_add(&es, &r) == 0;
    }
    ok = ok && es_finish(&es) == 0;
    em_rec r;
    size_t got = 0;
    while (ok && es_next(&es, &r) == 1) {
        const key *w = &want[descending ? n - 1 - got : got];
        const void *kb = r.key ? r.key : r.val;
        size_t kl = r.key ? r.klen : r.vlen;
        if (bytes_cmp(kb, kl, w->b, w->len)) {
            fprintf(stderr, "  record %zu out of order (length %zu, expected length %zu)\n", got, kl, w->len);
            ok = 0;
        }
        got++;
    }
    if (got != n) ok = 0;
    *spills = es.spills;
    es_free(&es);
    free(k);
    free(want);
    return ok;
}

TEST(extsort_prefix_ties_in_memory) {
    int64_t spills;
    for (int d = 0; d < 2; d++) {
        CHECK(sort_keys(50000, 64 << 20, d, &spills)); /* radix sort, many equal prefixes */
        CHECK_EQ_I64(spills, 0);
        CHECK(sort_keys(100, 64 << 20, d, &spills));   /* comparison sort */
        CHECK(sort_keys(1, 64 << 20, d, &spills));
    }
}

TEST(extsort_prefix_ties_spilled) {
    int64_t spills;
    for (int d = 0; d < 2; d++) {
        CHECK(sort_keys(50000, 256 << 10, d, &spills));
        CHECK(spills > 1);
    }
}

/* Random int64 keys (every prefix byte varies) and a constant top byte
 * (the LSD passes skip bytes): ascending and exact. */
/* Keys over the whole range, then in a narrow one (the top 40 bits all
 * equal: the radix sort's first split must use the bits below them), then
 * narrow again as (8-byte key, 8-byte value) pairs (the flat entries),
 * narrow across zero, and with long runs below the two highest varying
 * bytes (flat and not). */
TEST(extsort_int64_keys) {
    for (int variant = 0; variant < 6; variant++) {
        extsort es;
        es_init(&es, test_tmpdir(), 64 << 20, 0, (bf_codec){BF_LZ4, 0}, 4096);
        uint64_t s = 12345, sum = 0;
        size_t n = 300000;
        for (size_t i = 0; i < n; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            int64_t v = variant ? (int64_t)(s >> 40) - (variant == 3 ? 1 << 23 : 0) : (int64_t)s;
            /* Variants 4 and 5: four bytes vary, the upper two in few
             * values, so runs equal down to them are long (8 runs of
             * 37,500) and are sorted by the bytes below in their turn. */
            if (variant >= 4) v = (int64_t)((s >> 62) << 40 | (s >> 61 & 1) << 24 | (s >> 20 & 0xffff));
            uint8_t b[8];
            em_i64_enc(v, b);
            sum += (uint64_t)v;
            em_rec r = {b, 8, b, variant >= 2 && variant != 5 ? 8 : 0};
            CHECK_OK(es_add(&es, &r));
        }
        CHECK_OK(es_finish(&es));
        em_rec r;
        int64_t prev = INT64_MIN;
        size_t got = 0;
        uint64_t gsum = 0;
        while (es_next(&es, &r) == 1) {
            int64_t v = em_i64_dec(r.key);
            CHECK(v >= prev);
            CHECK(variant < 2 || variant == 5 ? r.vlen == 0 : r.vlen == 8 && em_i64_dec(r.val) == v);
            prev = v;
            gsum += (uint64_t)v;
            got++;
        }
        CHECK_EQ_I64(got, n);
        CHECK(gsum == sum);
        es_free(&es);
    }
}

/* Pairs of an 8-byte key and a value of one width up to 8 bytes live in
 * the index alone ("flat"); the first record of another shape moves them
 * into the arena.  Keys repeat (2,000 distinct, random bytes, some zero),
 * so the check is: keys in order, and the multiset of (key, value) pairs
 * unchanged. */
typedef struct pr { uint8_t k[24], v[24]; size_t klen, vlen; } pr;

static int pr_cmp(const void *x, const void *y) {
    const pr *a = x, *b = y;
    int c = bytes_cmp(a->k, a->klen, b->k, b->klen);
    return c ? c : bytes_cmp(a->v, a->vlen, b->v, b->vlen);
}

/* The extsort_flat tests run on one thread, with no other to race:
 * ThreadSanitizer has nothing to check there and would take two minutes
 * over them (it checks each record's copies as a memory range).  Every
 * other build runs them. */
#ifdef __SANITIZE_THREAD__
#define SKIP_UNDER_TSAN() SKIP("one thread: nothing for ThreadSanitizer to check")
#else
#define SKIP_UNDER_TSAN() (void)0
#endif

/* n records, all flat pairs of key_w-byte keys and vw-byte values except
 * the one at index odd (if < n), whose key has 5 bytes and value 3 (odd_w
 * -1), whose key has 6 bytes (7 when key_w is 6) and value vw (odd_w -2:
 * the keys' lengths vary), or whose value has odd_w bytes. */
static int last_flat;       /* sort_pairs_w's sort ended flat, */
static int last_ew;         /* with entries of this many words */
static size_t key_w = 8;    /* sort_pairs_w's key width */

static int sort_pairs_w(size_t n, size_t budget, int descending, size_t odd, size_t vw, int odd_w,
                        int64_t *spills) {
    pr *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    uint64_t s = n * 7 + budget + (uint64_t)descending + odd;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t kv = (s >> 20) % 2000 * 0x9E3779B97F4A7C15ull;
        if ((s >> 50) % 7 == 0) kv &= 0xff00ffff00ffffffull;
        memcpy(in[i].k, &kv, 8);
        /* bytes past the eighth from a small alphabet: ties on the prefix */
        for (size_t j = 8; j < sizeof in[i].k; j++) in[i].k[j] = (uint8_t)(s >> (2 * j % 60) & 3);
        for (size_t j = 0; j < sizeof in[i].v; j++) in[i].v[j] = (uint8_t)(s >> (8 * (j % 8))) ^ (uint8_t)j;
        in[i].klen = key_w;
        in[i].vlen = vw;
        memset(in[i].v + vw, 0, sizeof in[i].v - vw);
        if (i == odd && odd_w == -2) in[i].klen = key_w == 6 ? 7 : 6; /* keys vary */
        else if (i == odd && odd_w < 0) in[i].klen = 5, in[i].vlen = 3;
        else if (i == odd) in[i].vlen = (size_t)odd_w;
    }
    extsort es;
    es_init(&es, test_tmpdir(), budget, descending, (bf_codec){BF_LZ4, 0}, 4096);
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        em_rec r = {in[i].k, in[i].klen, in[i].v, in[i].vlen};
        ok = es_add(&es, &r) == 0;
    }
    ok = ok && es_finish(&es) == 0;
    em_rec r;
    size_t got = 0;
    while (ok && got < n && es_next(&es, &r) == 1) {
        if (!r.key || r.klen > sizeof out->k || r.vlen > sizeof out->v) { ok = 0; break; }
        memcpy(out[got].k, r.key, r.klen);
        memset(out[got].v, 0, sizeof out->v);
        memcpy(out[got].v, r.val, r.vlen);
        out[got].klen = r.klen;
        out[got].vlen = r.vlen;
        if (got) {
            int c = bytes_cmp(out[got - 1].k, out[got - 1].klen, r.key, r.klen);
            if (descending ? c < 0 : c > 0) {
                fprintf(stderr, "  record %zu out of order\n", got);
                ok = 0;
            }
        }
        got++;
    }
    if (ok && (got != n || es_next(&es, &r) != 0)) ok = 0;
    *spills = es.spills;
    last_flat = es.flat;
    last_ew = es.ew;
    es_free(&es);
    if (ok) {
        qsort(in, n, sizeof *in, pr_cmp);
        qsort(out, n, sizeof *out, pr_cmp);
        for (size_t i = 0; i < n && ok; i++) ok = pr_cmp(&in[i], &out[i]) == 0;
    }
    free(in);
    free(out);
    return ok;
}

static int sort_pairs(size_t n, size_t budget, int descending, size_t odd, int64_t *spills) {
    return sort_pairs_w(n, budget, descending, odd, 8, -1, spills);
}

TEST(extsort_flat_pairs_in_memory) {
    SKIP_UNDER_TSAN();
    int64_t spills;
    for (int d = 0; d < 2; d++) {
        CHECK(sort_pairs(200000, 64 << 20, d, SIZE_MAX, &spills)); /* radix sort */
        CHECK_EQ_I64(spills, 0);
        CHECK(sort_pairs(300, 64 << 20, d, SIZE_MAX, &spills));    /* insertion sort */
        CHECK(sort_pairs(3000, 64 << 20, d, SIZE_MAX, &spills));   /* below the radix size */
        CHECK(sort_pairs(1, 64 << 20, d, SIZE_MAX, &spills));
        CHECK(sort_pairs(100000, 64 << 20, d, 70000, &spills));    /* another shape arrives */
        CHECK(sort_pairs(100000, 64 << 20, d, 0, &spills));
        CHECK(sort_pairs(100000, 64 << 20, d, 99999, &spills));
        CHECK_EQ_I64(spills, 0);
    }
}

TEST(extsort_flat_pairs_spilled) {
    SKIP_UNDER_TSAN();
    int64_t spills;
    for (int d = 0; d < 2; d++) {
        CHECK(sort_pairs(200000, 256 << 10, d, SIZE_MAX, &spills));
        CHECK(spills > 1);
        CHECK(sort_pairs(200000, 256 << 10, d, 150000, &spills)); /* after spills */
        CHECK(spills > 1);
        CHECK(sort_pairs(200000, 256 << 10, d, 10, &spills));     /* before the first */
        CHECK(spills > 1);
    }
}

/* Keys with empty values (sort_by_key of int64 keys alone) and values of
 * 4 bytes are flat too; a record of the same key length and another value
 * width ends it, in memory and after spills. */
TEST(extsort_flat_narrow_values) {
    SKIP_UNDER_TSAN();
    int64_t spills;
    size_t widths[] = {0, 4, 1};
    for (int d = 0; d < 2; d++)
        for (int w = 0; w < 3; w++) {
            size_t vw = widths[w];
            CHECK(sort_pairs_w(60000, 64 << 20, d, SIZE_MAX, vw, -1, &spills));
            CHECK_EQ_I64(spills, 0);
            CHECK(last_flat);
            CHECK_EQ_I64(last_ew, vw ? 2 : 1); /* an 8-byte key alone: packed */
            CHECK(sort_pairs_w(3000, 64 << 20, d, SIZE_MAX, vw, -1, &spills));
            CHECK(sort_pairs_w(40000, 64 << 20, d, 30000, vw, -2, &spills)); /* a 6-byte key */
            CHECK(last_flat);
            CHECK(sort_pairs_w(60000, 128 << 10, d, 50000, vw, -2, &spills)); /* after spills */
            CHECK(spills > 1);
            CHECK(last_flat);
            CHECK(sort_pairs_w(40000, 64 << 20, d, 30000, vw, 8, &spills)); /* an 8-byte value */
            CHECK(!last_flat);
            CHECK(sort_pairs_w(40000, 64 << 20, d, 0, vw, vw ? 0 : 2, &spills));
            CHECK(sort_pairs_w(40000, 64 << 20, d, 5000, vw, -1, &spills));
            CHECK_EQ_I64(spills, 0);
            CHECK(sort_pairs_w(60000, 128 << 10, d, SIZE_MAX, vw, -1, &spills));
            CHECK(spills > 1);
            CHECK(last_flat);
            CHECK(sort_pairs_w(60000, 128 << 10, d, 50000, vw, 8, &spills)); /* after spills */
            CHECK(spills > 1);
        }
}

/* Keys of one width below 8 bytes (zero padded in the prefix) are flat
 * too, with values of any one width up to 8. */
TEST(extsort_flat_narrow_keys) {
    SKIP_UNDER_TSAN();
    int64_t spills;
    size_t kws[] = {4, 1}, vws[] = {4, 8, 0};
    for (int d = 0; d < 2; d++)
        for (int a = 0; a < 2; a++)
            for (int w = 0; w < 3; w++) {
                size_t vw = vws[w];
                key_w = kws[a];
                CHECK(sort_pairs_w(60000, 64 << 20, d, SIZE_MAX, vw, -1, &spills));
                CHECK_EQ_I64(spills, 0);
                CHECK(last_flat);
                CHECK_EQ_I64(last_ew, kws[a] + vw <= 8 ? 1 : 2); /* packed when they fit a word */
                CHECK(sort_pairs_w(2000, 64 << 20, d, SIZE_MAX, vw, -1, &spills));
                CHECK(sort_pairs_w(40000, 64 << 20, d, 30000, vw, -2, &spills)); /* a 6-byte key */
                CHECK(last_flat);
                CHECK(sort_pairs_w(60000, 128 << 10, d, 50000, vw, -2, &spills)); /* after spills */
                CHECK(spills > 1);
                CHECK(last_flat);
                CHECK(sort_pairs_w(40000, 64 << 20, d, 30000, vw, vw == 8 ? 2 : 8, &spills));
                CHECK(!last_flat);
                CHECK(sort_pairs_w(40000, 64 << 20, d, 5000, vw, -1, &spills)); /* a 5-byte key */
                CHECK(sort_pairs_w(60000, 128 << 10, d, SIZE_MAX, vw, -1, &spills));
                CHECK(spills > 1);
                CHECK(last_flat);
                CHECK(sort_pairs_w(60000, 128 << 10, d, 50000, vw, -1, &spills));
                CHECK(spills > 1);
            }
    key_w = 8;
}

/* Keys over 8 bytes and values over 8 bytes of one width each are flat
 * while key and value fit four words (16+8, 12+4, 24+8, 9+16, 8+24,
 * 16+0); the keys tie on their first 8 bytes, so the words past the
 * prefix decide.  A record of another shape moves them into the arena,
 * in memory and after spills.  24+16 (five words) is never flat. */
TEST(extsort_flat_wide_entries) {
    SKIP_UNDER_TSAN();
    int64_t spills;
    static const struct { size_t kw, vw; int flat; } shape[] = {
        {16, 8, 1}, {12, 4, 1}, {24, 8, 1}, {9, 16, 1}, {8, 24, 1}, {16, 0, 1}, {24, 16, 0},
    };
    for (int d = 0; d < 2; d++)
        for (size_t k = 0; k < sizeof shape / sizeof shape[0]; k++) {
            size_t vw = shape[k].vw;
            key_w = shape[k].kw;
            CHECK(sort_pairs_w(60000, 64 << 20, d, SIZE_MAX, vw, -1, &spills)); /* radix sort */
            CHECK_EQ_I64(spills, 0);
            CHECK_EQ_I64(last_flat, shape[k].flat);
            CHECK(sort_pairs_w(2000, 64 << 20, d, SIZE_MAX, vw, -1, &spills)); /* comparisons */
            CHECK(sort_pairs_w(40000, 64 << 20, d, 30000, vw, vw == 8 ? 2 : 8, &spills));
            CHECK(!last_flat);
            CHECK(sort_pairs_w(40000, 64 << 20, d, 5000, vw, -1, &spills)); /* a 5-byte key */
            CHECK(sort_pairs_w(60000, 256 << 10, d, SIZE_MAX, vw, -1, &spills));
            CHECK(spills > 1);
            CHECK_EQ_I64(last_flat, shape[k].flat);
            CHECK(sort_pairs_w(60000, 256 << 10, d, 50000, vw, -1, &spills)); /* after spills */
            CHECK(spills > 1);
        }
    key_w = 8;
}

/* Keys whose lengths vary, each with an 8-byte value: the first record's
 * key has first_len bytes, the others 0 to maxlen, over 'a', 'b' and the
 * zero byte (so short keys are the start of longer ones, and of their
 * zero padding).  Checks the keys' order, and each value with its key. */
static int sort_varkeys(size_t n, size_t budget, int descending, size_t first_len, size_t maxlen, int64_t *spills,
                        int *flat) {
    key *k = malloc(n * sizeof *k);
    uint64_t s = n + budget + first_len * 3 + maxlen * 7 + (uint64_t)descending;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        k[i].len = i ? (size_t)(s >> 33) % (maxlen + 1) : first_len;
        for (size_t j = 0; j < k[i].len; j++) k[i].b[j] = "ab\0"[(s >> (3 + 2 * j % 28)) % 3];
    }
    extsort es;
    es_init(&es, test_tmpdir(), budget, descending, (bf_codec){BF_LZ4, 0}, 4096);
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        uint8_t v[8];
        em_i64_enc((int64_t)i, v);
        em_rec r = {k[i].b, k[i].len, v, 8};
        ok = es_add(&es, &r) == 0;
    }
    ok = ok && es_finish(&es) == 0;
    em_rec r;
    size_t got = 0;
    const key *prev = NULL;
    uint8_t *seen = calloc(n, 1);
    while (ok && es_next(&es, &r) == 1) {
        int64_t i = r.vlen == 8 ? em_i64_dec(r.val) : -1;
        if (i < 0 || (size_t)i >= n || seen[i] || bytes_cmp(r.key, r.klen, k[i].b, k[i].len)) {
            fprintf(stderr, "  record %zu: a value not of its key\n", got);
            ok = 0;
            break;
        }
        seen[i] = 1;
        if (prev) {
            int c = bytes_cmp(prev->b, prev->len, k[i].b, k[i].len);
            if (descending ? c < 0 : c > 0) {
                fprintf(stderr, "  record %zu out of order\n", got);
                ok = 0;
            }
        }
        prev = &k[i];
        got++;
    }
    if (got != n) ok = 0;
    *spills = es.spills;
    *flat = es.flat;
    es_free(&es);
    free(seen);
    free(k);
    return ok;
}

/* Keys of lengths up to 23 bytes stay flat with 8-byte values: from a
 * first key of 3 bytes (the entries widen twice), of 8 (the length byte
 * takes a word), of 20; in memory and spilled, by radix and by
 * comparisons.  A key of 24 bytes moves them into the arena. */
TEST(extsort_flat_varying_keys) {
    SKIP_UNDER_TSAN();
    int64_t spills;
    int flat;
    size_t firsts[] = {3, 8, 20, 0};
    for (int d = 0; d < 2; d++)
        for (size_t f = 0; f < sizeof firsts / sizeof firsts[0]; f++) {
            CHECK(sort_varkeys(60000, 64 << 20, d, firsts[f], 23, &spills, &flat));
            CHECK_EQ_I64(spills, 0);
            CHECK(flat);
            CHECK(sort_varkeys(60000, 64 << 20, d, firsts[f], 6, &spills, &flat)); /* one word */
            CHECK(flat);
            CHECK(sort_varkeys(1500, 64 << 20, d, firsts[f], 23, &spills, &flat));
            CHECK(flat);
            CHECK(sort_varkeys(60000, 256 << 10, d, firsts[f], 23, &spills, &flat));
            CHECK(spills > 1);
            CHECK(flat);
            CHECK(sort_varkeys(60000, 64 << 20, d, firsts[f], 24, &spills, &flat));
            CHECK(!flat);
            CHECK(sort_varkeys(60000, 256 << 10, d, firsts[f], 24, &spills, &flat));
            CHECK(!flat);
        }
}
