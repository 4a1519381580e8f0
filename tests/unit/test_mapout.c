/*
 * test_mapout.c -- the map-output tracker's segment sizes
 * (scheduler/mapout.c): Spark's one-byte encoding (zero exact, within 10%
 * up to 1.1^255, saturating past it), the highly compressed status of a
 * wide shuffle (empty segments exact, the average of the others, huge ones
 * by their byte), the switch between the two at
 * ember.shuffle.minNumPartitionsToHighlyCompress, and the bytes the
 * tracker holds for 10,000-partition outputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "mapout.h"
#include "mapstatus.h"

static uint64_t next_rand(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* mo_set of the exact sizes s, encoded as a map task encodes them for
 * so (mo_accurate). */
static int set_sizes(shuffle_out *so, int map, int exec, uint64_t attempt, const char *loc, const uint64_t *s) {
    ebuf b = {0};
    if (ms_encode(s, so->nparts, mo_accurate(so), &b)) return -2;
    size_t len = b.len;
    uint8_t *p = ebuf_steal(&b, &len);
    return mo_set(so, map, exec, attempt, loc, p, len);
}

/* Whether est is the tracker's estimate of size s within the encoding's
 * bound: exact for 0; otherwise from one byte under (floating point at a
 * power of 1.1) to 10% over. */
static int within(uint64_t s, uint64_t est) {
    if (!s) return est == 0;
    return est && est + 1 >= s && (long double)est <= 1.1L * (long double)s;
}

TEST(mapout_encoding_bounds) {
    CHECK_EQ_I64(ms_compress_size(0), 0);
    CHECK_EQ_I64(ms_decompress_size(0), 0);
    CHECK_EQ_I64(ms_compress_size(1), 1);
    CHECK_EQ_I64(ms_decompress_size(1), 1);
    const uint64_t top = (uint64_t)pow(1.1, 255); /* 35,903,328,718: where it saturates */
    CHECK_EQ_I64(ms_decompress_size(255), top);
    /* Every size up to 100,000, then sizes spread over the whole range:
     * zero exact, the rest within 10%, the byte never decreasing. */
    uint8_t last = 0;
    for (uint64_t s = 0; s <= 100000; s++) {
        uint8_t c = ms_compress_size(s);
        CHECK(c >= last);
        last = c;
        if (!within(s, ms_decompress_size(c))) {
            fprintf(stderr, "  size %llu: byte %u, estimate %llu\n", (unsigned long long)s, c,
                    (unsigned long long)ms_decompress_size(c));
            CHECK(0);
        }
    }
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 200000; i++) {
        uint64_t s = next_rand(&x) >> (next_rand(&x) % 64);
        if (s > top) s %= top + 1;
        CHECK(within(s, ms_decompress_size(ms_compress_size(s))));
    }
    /* Each byte's estimate maps back to it, or next to it (past the
     * small sizes, where several bytes truncate to one size). */
    for (int c = 30; c <= 255; c++) CHECK(abs((int)ms_compress_size(ms_decompress_size((uint8_t)c)) - c) <= 1);
    /* Past 1.1^255 every size is the same byte, and so the same
     * (underestimated) size. */
    CHECK_EQ_I64(ms_compress_size(top), 255);
    CHECK_EQ_I64(ms_compress_size(top + top / 5), 255);
    CHECK_EQ_I64(ms_compress_size((uint64_t)1 << 40), 255);
    CHECK_EQ_I64(ms_compress_size(UINT64_MAX), 255);
    CHECK_EQ_I64(ms_decompress_size(ms_compress_size(UINT64_MAX)), top);
}

/* Up to the setting each segment has its own byte; past it, a map output
 * has its empty segments exact, the average of the non-empty ones that
 * are not huge, and each huge one's byte. */
TEST(mapout_switch_at_threshold) {
    mapout mo = {0};
    for (int k = 0; k < 2; k++) {
        int n = MO_HIGHLY_COMPRESS_DEFAULT + k;
        uint64_t *s = malloc(sizeof *s * (size_t)n);
        CHECK(s);
        for (int i = 0; i < n; i++) s[i] = i % 3 ? (uint64_t)i * 1000 : 0;
        shuffle_out *so = mo_get(&mo, (uint32_t)k, 1, n);
        CHECK(so);
        CHECK_EQ_I64(so->highly, k);
        CHECK_OK(set_sizes(so, 0, 1, 5, "here", s));
        uint64_t sum = 0, cnt = 0;
        for (int i = 0; i < n; i++)
            if (s[i]) sum += s[i], cnt++;
        for (int i = 0; i < n; i++) {
            uint64_t e = mo_seg(so, 0, i);
            if (!s[i]) CHECK_EQ_I64(e, 0);
            else if (k) CHECK_EQ_I64(e, sum / cnt);
            else CHECK(within(s[i], e));
        }
        free(s);
    }
    /* The settings, for shuffles tracked after them: 4 partitions are
     * highly compressed past 3, not past 4. */
    mo_configure(&mo, 3, 1000);
    shuffle_out *a = mo_get(&mo, 10, 1, 4);
    mo_configure(&mo, 4, 1000);
    shuffle_out *b = mo_get(&mo, 11, 1, 4);
    CHECK(a && b && a->highly && !b->highly);
    CHECK(mo_get(&mo, 10, 1, 4) == a && a->highly); /* tracked already: unchanged */
    mo_configure(&mo, 0, 0);                         /* the defaults again */
    CHECK_EQ_I64(mo.highly_min, 0);
    shuffle_out *c = mo_get(&mo, 12, 1, 4);
    CHECK(c && !c->highly && c->accurate == MO_ACCURATE_BLOCK_DEFAULT);
    mo_free(&mo);
}

TEST(mapout_highly_compressed) {
    enum { N = 3000 };
    mapout mo = {0};
    mo_configure(&mo, 100, 1 << 20); /* huge: over 1 MiB */
    shuffle_out *so = mo_get(&mo, 1, 3, N);
    CHECK(so && so->highly);
    static uint64_t s[N];
    uint64_t x = 12345, sum = 0, cnt = 0;
    for (int i = 0; i < N; i++) {
        uint64_t r = next_rand(&x);
        s[i] = r % 5 == 0 ? 0 : r % 97 == 0 ? (1 << 20) + r % ((uint64_t)1 << 34) : 1 + r % 5000;
        if (i == 17) s[i] = 1 << 20; /* at the threshold: not huge */
        if (i == 18) s[i] = (1 << 20) + 1;
        if (s[i] && s[i] <= 1 << 20) sum += s[i], cnt++;
    }
    CHECK_OK(set_sizes(so, 0, 1, 7, "ember://h:1/d", s));
    int huge = 0;
    for (int i = 0; i < N; i++) {
        uint64_t e = mo_seg(so, 0, i);
        if (!s[i]) {
            CHECK_EQ_I64(e, 0);
        } else if (s[i] > 1 << 20) {
            huge++;
            CHECK(within(s[i], e));
        } else {
            CHECK_EQ_I64(e, sum / cnt);
        }
    }
    CHECK(huge > 10);
    CHECK_EQ_I64(mo_seg(so, 0, 18), ms_decompress_size(ms_compress_size((1 << 20) + 1)));
    /* No empty segment (no bitmap), every one empty, every one huge. */
    static uint64_t t[N];
    uint64_t tsum = 0;
    for (int i = 0; i < N; i++) tsum += t[i] = 10 + (uint64_t)i % 7;
    CHECK_OK(set_sizes(so, 1, 1, 8, "d", t));
    size_t with_none = mo_bytes(so);
    for (int i = 0; i < N; i++) CHECK_EQ_I64(mo_seg(so, 1, i), tsum / N);
    memset(t, 0, sizeof t);
    CHECK_OK(set_sizes(so, 1, 1, 9, "d", t));
    CHECK_EQ_I64(mo_bytes(so), with_none);
    for (int i = 0; i < N; i++) CHECK_EQ_I64(mo_seg(so, 1, i), 0);
    for (int i = 0; i < N; i++) t[i] = ((uint64_t)2 << 20) + (uint64_t)i * 4096;
    CHECK_OK(set_sizes(so, 2, 1, 9, "d", t));
    for (int i = 0; i < N; i++) CHECK(within(t[i], mo_seg(so, 2, i)));
    /* A result without sizes registers the map, with nothing to read;
     * lost, it reads as nothing too. */
    CHECK_OK(mo_set(so, 2, 1, 10, "d", NULL, 0));
    CHECK(so->m[2].have && !so->m[2].sizes && mo_seg(so, 2, 5) == 0);
    mo_unset(so, 0);
    CHECK(!so->m[0].have && mo_seg(so, 0, 1) == 0);
    CHECK_EQ_I64(so->navail, 2);
    mo_free(&mo);
}

/* A 10,000-partition map output takes a bit per partition at most, not 8
 * bytes; a 10,000 x 10,000 shuffle (10^8 segments, 800 MB exact) takes a
 * few MB.  Its figure is printed. */
TEST(mapout_tracker_bytes) {
    enum { M = 10000, P = 10000 };
    mapout mo = {0};
    shuffle_out *one = mo_get(&mo, 1, 1, P);
    shuffle_out *so = mo_get(&mo, 2, M, P);
    CHECK(one && so && so->highly);
    uint64_t x = 777;
    size_t base = mo_bytes(one);
    uint64_t *s = malloc(sizeof *s * P);
    CHECK(s);
    for (int i = 0; i < P; i++) s[i] = next_rand(&x) % 10 ? 1000 + next_rand(&x) % 100000 : 0;
    s[3] = (uint64_t)1 << 30;
    CHECK_OK(set_sizes(one, 0, 1, 1, "ember://10.0.0.1:7337/work/app-1/exec-1", s));
    free(s);
    size_t per_output = mo_bytes(one) - base;
    CHECK(per_output < P / 8 + 128); /* a bit per partition; a header, its huge one, its loc */
    for (int m = 0; m < M; m++) {
        uint64_t *t = malloc(sizeof *t * P);
        CHECK(t);
        for (int i = 0; i < P; i++) t[i] = (next_rand(&x) & 15) ? 1000 + (x >> 40) % 100000 : 0;
        if (m % 100 == 0) t[m % P] = (uint64_t)1 << 31; /* a few huge */
        CHECK_OK(set_sizes(so, m, m % 16, (uint64_t)m, "ember://10.0.0.1:7337/work/app-1/exec-1", t));
        free(t);
    }
    size_t total = mo_bytes(so);
    fprintf(stderr, "  tracker: %zu bytes for a %d-partition map output; %zu bytes (%.3f per segment) for %d x %d\n",
            per_output, P, total, (double)total / ((double)M * P), M, P);
    CHECK(total < (size_t)M * P / 6); /* under 1.4 bits a segment, all included */
    CHECK(mo_seg(so, 200, 200) > (uint64_t)1 << 30);
    mo_remove(&mo, 2);
    CHECK(mo_find(&mo, 2) == NULL);
    CHECK_EQ_I64(mo.n, 1);
    mo_free(&mo);
}

/* A status from an executor is checked before the tracker keeps it: the
 * wrong length, form or counts, huge ids out of order, a bitmap that
 * disagrees with its count, or non-empty segments that would read as
 * zero (nothing to read) are refused, and the map stays as it was. */
TEST(mapout_malformed_status_refused) {
    enum { N = 2100 };
    mapout mo = {0};
    mo_configure(&mo, 2000, 1000);
    shuffle_out *so = mo_get(&mo, 1, 1, N);
    shuffle_out *few = mo_get(&mo, 2, 1, 10);
    CHECK(so && so->highly && few && !few->highly);
    static uint64_t s[N];
    for (int i = 0; i < N; i++) s[i] = i % 3 ? 0 : i % 7 ? 500 : 5000 + (uint64_t)i;
    ebuf b = {0};
    CHECK_OK(ms_encode(s, N, 1000, &b));
    const char *why = NULL;
    CHECK_OK(ms_check(b.p, b.len, N, &why));
    for (int i = 0; i < N; i++) CHECK_EQ_I64(ms_seg(b.p, N, i) == 0, s[i] == 0);
    CHECK(ms_check(b.p, b.len, N + 8, &why) < 0 && why);   /* a wider shuffle: its bitmap is longer */
    CHECK(ms_check(b.p, b.len - 1, N, &why) < 0);          /* cut short */
    uint8_t *c = malloc(b.len);
    CHECK(c);
    memcpy(c, b.p, b.len);
    c[0] = 7; /* an unknown form */
    CHECK(ms_check(c, b.len, N, &why) < 0);
    memcpy(c, b.p, b.len);
    memset(c + 1, 0, 8); /* average 0: non-empty segments would read as empty */
    CHECK(ms_check(c, b.len, N, &why) < 0);
    memcpy(c, b.p, b.len);
    c[b.len - 1] ^= 0x01; /* a bit more or less in the bitmap than its count */
    CHECK(ms_check(c, b.len, N, &why) < 0);
    memcpy(c, b.p, b.len);
    uint32_t first, second; /* huge ids out of order */
    memcpy(&first, c + 17, 4);
    memcpy(&second, c + 21, 4);
    memcpy(c + 17, &second, 4);
    memcpy(c + 21, &first, 4);
    CHECK(ms_check(c, b.len, N, &why) < 0);
    /* The tracker refuses it too, and keeps what it had. */
    CHECK_OK(set_sizes(so, 0, 1, 5, "d", s));
    CHECK_EQ_I64(mo_set(so, 0, 1, 6, "d", c, b.len), -1);
    CHECK(so->m[0].have && so->m[0].attempt == 5 && mo_seg(so, 0, 0) > 0);
    /* A byte per segment: the length is the width's. */
    ebuf f = {0};
    CHECK_OK(ms_encode(s, 10, 0, &f));
    CHECK_EQ_I64(f.len, 11);
    CHECK_OK(ms_check(f.p, f.len, 10, NULL));
    CHECK(ms_check(f.p, f.len, 11, NULL) < 0);
    ebuf_free(&f);
    ebuf_free(&b);
    mo_free(&mo);
}

/* An executor's location is kept once, shared by the maps it wrote; a map
 * that moves, or an executor seen at another location, keeps the others
 * right; the last map to go frees it. */
TEST(mapout_locations_interned) {
    mapout mo = {0};
    shuffle_out *so = mo_get(&mo, 1, 4, 8);
    CHECK(so);
    uint64_t s[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    CHECK_OK(set_sizes(so, 0, 7, 1, "ember://h:1/exec-7", s));
    CHECK_OK(set_sizes(so, 1, 7, 2, "ember://h:1/exec-7", s));
    CHECK_OK(set_sizes(so, 2, 8, 3, "ember://h:1/exec-8", s));
    CHECK(so->m[0].loc == so->m[1].loc && so->m[0].loc != so->m[2].loc);
    CHECK(!so->m[0].loc_own && !so->m[2].loc_own);
    /* executor 7 at another location (not seen in practice): a copy of its own */
    CHECK_OK(set_sizes(so, 3, 7, 4, "ember://h:2/exec-7", s));
    CHECK(so->m[3].loc_own && !strcmp(so->m[3].loc, "ember://h:2/exec-7"));
    /* map 1 rerun on executor 8: it shares 8's, 7's stays with map 0 */
    CHECK_OK(set_sizes(so, 1, 8, 5, "ember://h:1/exec-8", s));
    CHECK(so->m[1].loc == so->m[2].loc);
    CHECK(!strcmp(so->m[0].loc, "ember://h:1/exec-7"));
    /* map 0 rerun on the same executor: the same copy */
    const char *seven = so->m[0].loc;
    CHECK_OK(set_sizes(so, 0, 7, 6, "ember://h:1/exec-7", s));
    CHECK(so->m[0].loc == seven);
    mo_unset(so, 0); /* 7's last map: its location freed (ASan: no leak, no use after) */
    mo_unset(so, 3);
    CHECK(!strcmp(so->m[1].loc, "ember://h:1/exec-8"));
    mo_free(&mo);
}
