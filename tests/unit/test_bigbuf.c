/*
 * test_bigbuf.c -- big buffers: growth keeps the bytes, bb_shrink gives
 * back the memory past the length (whole chunks for a mapping, to the
 * cache), a freed mapping is handed to the next big buffer from the
 * cache, a task buffer's fresh memory is put in at once, and only a
 * buffer kept long (bb_reserve_kept) asks for huge pages, over the chunks
 * it writes.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../test.h"
#include "bigbuf.h"
#include "ember.h"

static int pattern_ok(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != (uint8_t)(i * 131 + 7)) return 0;
    return 1;
}

static void fill(uint8_t *p, size_t from, size_t to) {
    for (size_t i = from; i < to; i++) p[i] = (uint8_t)(i * 131 + 7);
}

#define MB ((size_t)1 << 20)

TEST(bigbuf_grow_shrink_reuse) {
    bb_trim(); /* an empty cache, whatever ran before in this process */
    ebuf b = {0};
    /* Grow from a heap buffer to a mapping and on, bytes kept. */
    size_t n = 0;
    while (n < 5 * MB) {
        CHECK_OK(bb_reserve(&b, 300000));
        fill(b.p, n, n + 300000);
        n += 300000;
        b.len = n;
    }
    CHECK(b.cap >= n && b.cap >= BB_MIN);
    CHECK(pattern_ok(b.p, n));
    /* Shrink: whole huge pages past the length go, to the cache, where
     * the next big buffer takes them with their pages (no fresh bytes). */
    size_t cap0 = b.cap, f0, t0, f1, t1;
    b.len = 3 * MB + 1;
    bb_shrink(&b);
    CHECK_EQ_I64((int64_t)b.cap, (int64_t)(4 * MB));
    CHECK(pattern_ok(b.p, b.len));
    bb_counts(&f0, &t0);
    ebuf tail = {0};
    CHECK_OK(bb_reserve(&tail, cap0 - b.cap));
    bb_counts(&f1, &t1);
    CHECK_EQ_I64((int64_t)(f1 - f0), 0);
    CHECK_EQ_I64((int64_t)(t1 - t0), (int64_t)((cap0 - b.cap) / BB_MIN));
    memset(tail.p, 0xee, tail.cap); /* its own memory: b's bytes stay */
    CHECK(pattern_ok(b.p, b.len));
    bb_free(&tail);
    bb_trim();
    /* Freed, its chunks wait in the cache, and the next big buffer takes
     * them, pages and bytes in. */
    bb_free(&b);
    CHECK(b.p == NULL && b.cap == 0);
    bb_counts(&f0, &t0);
    ebuf c = {0};
    CHECK_OK(bb_reserve(&c, 3 * MB));
    bb_counts(&f1, &t1);
    CHECK_EQ_I64((int64_t)c.cap, (int64_t)(4 * MB));
    CHECK_EQ_I64((int64_t)(f1 - f0), 0);
    CHECK_EQ_I64((int64_t)(t1 - t0), 2);
    CHECK(pattern_ok(c.p, 3 * MB)); /* the last range parked, in order */
    bb_free(&c);
    /* A heap buffer shrinks to its length. */
    ebuf s = {0};
    CHECK_OK(bb_reserve(&s, 1000));
    fill(s.p, 0, 10);
    s.len = 10;
    bb_shrink(&s);
    CHECK_EQ_I64((int64_t)s.cap, 10);
    CHECK(pattern_ok(s.p, 10));
    bb_free(&s);
    bb_trim();
}

/* Any cached chunk serves any buffer: a small buffer takes chunks of a big
 * freed one, a big buffer the rest and fresh memory for what the cache
 * lacks; a buffer growing through a cached range takes it in place. */
TEST(bigbuf_chunks_serve_any_size) {
    bb_trim();
    ebuf big = {0}, small = {0}, again = {0};
    CHECK_OK(bb_reserve(&big, 40 * MB));
    bb_free(&big); /* 20 chunks wait in the cache */
    size_t f0, t0, f1, t1;
    bb_counts(&f0, &t0);
    CHECK_OK(bb_reserve(&small, 3 * MB)); /* 2 of them */
    bb_counts(&f1, &t1);
    CHECK_EQ_I64((int64_t)(f1 - f0), 0);
    CHECK_EQ_I64((int64_t)(t1 - t0), 2);
    CHECK_OK(bb_reserve(&again, 38 * MB)); /* the other 18, and one fresh */
    bb_counts(&f0, &t0);
    CHECK_EQ_I64((int64_t)again.cap, (int64_t)(38 * MB));
    CHECK_EQ_I64((int64_t)(f0 - f1), (int64_t)(2 * MB));
    CHECK_EQ_I64((int64_t)(t0 - t1), 18);
    bb_free(&small);
    bb_free(&again);
    bb_trim();
    /* A buffer growing step by step through a cached range takes it in
     * place: its start, then the chunks right after it, no fresh byte. */
    CHECK_OK(bb_reserve(&big, 40 * MB));
    uint8_t *was = big.p;
    bb_free(&big);
    bb_counts(&f0, &t0);
    ebuf grow = {0};
    for (size_t n = 0; n < 20 * MB; n += 300000) {
        CHECK_OK(bb_reserve(&grow, 300000));
        fill(grow.p, n, n + 300000);
        grow.len = n + 300000;
    }
    bb_counts(&f1, &t1);
    CHECK(grow.p == was);
    CHECK(pattern_ok(grow.p, grow.len));
    CHECK_EQ_I64((int64_t)(f1 - f0), 0);
    CHECK_EQ_I64((int64_t)(t1 - t0), (int64_t)(grow.cap / BB_MIN));
    bb_free(&grow);
    bb_trim();
}

/* A buffer made of chunks from several mappings grows with its bytes
 * (its chunks moved one by one), and so does one the cache feeds as it
 * grows; a full cache unmaps what it cannot hold. */
TEST(bigbuf_assembled_buffers_grow) {
    bb_trim();
    ebuf a = {0}, b = {0}, m = {0};
    CHECK_OK(bb_reserve(&a, 4 * MB));
    CHECK_OK(bb_reserve(&b, 4 * MB));
    bb_free(&a);
    bb_free(&b); /* two ranges of 2 chunks */
    CHECK_OK(bb_reserve(&m, 8 * MB)); /* from both */
    fill(m.p, 0, 8 * MB);
    m.len = 8 * MB;
    for (int i = 0; i < 4; i++) { /* 16, 32, 64, 128 MB, bytes kept */
        ebuf spare = {0};
        CHECK_OK(bb_reserve(&spare, (size_t)(i + 1) * 6 * MB));
        bb_free(&spare); /* the next growth takes these */
        CHECK_OK(bb_reserve(&m, m.cap));
        fill(m.p, m.len, m.cap);
        m.len = m.cap;
        CHECK(pattern_ok(m.p, m.len));
    }
    CHECK_EQ_I64((int64_t)m.cap, (int64_t)(128 * MB));
    bb_free(&m);
    bb_trim();
    /* More ranges than the cache holds: the rest are unmapped. */
    ebuf many[BB_CACHE_SLOTS + 4];
    memset(many, 0, sizeof many);
    for (int i = 0; i < BB_CACHE_SLOTS + 4; i++) CHECK_OK(bb_reserve(&many[i], 2 * MB));
    for (int i = 0; i < BB_CACHE_SLOTS + 4; i++) bb_free(&many[i]);
    size_t f0, t0, f1, t1;
    bb_counts(&f0, &t0);
    ebuf all = {0};
    CHECK_OK(bb_reserve(&all, (size_t)(BB_CACHE_SLOTS + 4) * 2 * MB));
    bb_counts(&f1, &t1);
    CHECK_EQ_I64((int64_t)(t1 - t0), BB_CACHE_SLOTS);
    CHECK_EQ_I64((int64_t)(f1 - f0), (int64_t)(4 * 2 * MB));
    bb_free(&all);
    bb_trim();
}

/* 1 if the mapping holding p is advised for huge pages (VmFlags "hg" in
 * /proc/self/smaps), 0 if not, -1 if no mapping holds it. */
static int advised_huge(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int in = 0, r = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (in && !strncmp(line, "VmFlags:", 8)) {
            r = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    return r;
}

TEST(bigbuf_only_kept_buffers_ask_for_huge_pages) {
    bb_trim();
    ebuf task = {0}, kept = {0};
    CHECK_OK(bb_reserve(&task, 8 * MB));
    CHECK_OK(bb_reserve_kept(&kept, 8 * MB));
    CHECK_EQ_I64(advised_huge(task.p), 0);
    CHECK_EQ_I64(advised_huge(task.p + task.cap - 1), 0);
    /* (A kernel without transparent huge pages refuses the advice.) */
    int thp = madvise(task.p, 2 * MB, MADV_HUGEPAGE) == 0;
    if (thp) madvise(task.p, 2 * MB, MADV_NOHUGEPAGE);
    CHECK_EQ_I64(advised_huge(kept.p), thp);
    CHECK_EQ_I64(advised_huge(kept.p + 8 * MB - 1), thp);
    /* Grown, a kept buffer asks over the chunks written to, not over the
     * room past them (which bb_shrink may park for a task buffer). */
    fill(kept.p, 0, 8 * MB);
    kept.len = 8 * MB;
    CHECK_OK(bb_reserve_kept(&kept, 6 * MB));
    CHECK(pattern_ok(kept.p, 8 * MB));
    CHECK_EQ_I64((int64_t)kept.cap, (int64_t)(16 * MB)); /* doubled */
    CHECK_EQ_I64(advised_huge(kept.p), thp);
    CHECK_EQ_I64(advised_huge(kept.p + 14 * MB - 1), thp);
    CHECK_EQ_I64(advised_huge(kept.p + 14 * MB), 0);
    /* Written on record by record, a chunk is asked for as the bytes
     * reach it. */
    kept.len = 14 * MB - 100;
    for (int i = 0; i < 10; i++) {
        CHECK_OK(bb_reserve_kept(&kept, 100000));
        kept.len += 100000;
    }
    CHECK_EQ_I64((int64_t)kept.cap, (int64_t)(16 * MB));
    CHECK_EQ_I64(advised_huge(kept.p + kept.len - 1), thp);
    bb_free(&task);
    bb_free(&kept);
    bb_trim();
}

/* Pages of [p, p + n) in memory (mincore). */
static size_t resident(const uint8_t *p, size_t n) {
    static unsigned char vec[(64 << 20) / 4096];
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), np = (n + pg - 1) / pg, k = 0;
    if (np > sizeof vec || mincore((void *)p, n, vec)) return (size_t)-1;
    for (size_t i = 0; i < np; i++) k += vec[i] & 1;
    return k;
}

/* A task buffer's fresh memory is put in at once, as it is mapped and as
 * it grows; a kept buffer's is not (its pages are to come after its
 * huge-page advice). */
TEST(bigbuf_task_buffers_fresh_memory_put_in_at_once) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *probe = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(probe != MAP_FAILED);
    int populates = madvise(probe, pg, MADV_POPULATE_WRITE) == 0; /* (Linux 5.14 on) */
    munmap(probe, pg);
    if (!populates) SKIP("the kernel has no MADV_POPULATE_WRITE");
    bb_trim();
    size_t fresh0, fresh1, taken;
    bb_counts(&fresh0, &taken);
    ebuf task = {0}, kept = {0};
    CHECK_OK(bb_reserve(&task, 8 * MB));
    CHECK_OK(bb_reserve_kept(&kept, 8 * MB));
    bb_counts(&fresh1, &taken);
    CHECK_EQ_I64((int64_t)(fresh1 - fresh0), (int64_t)(16 * MB));
    CHECK_EQ_I64((int64_t)resident(task.p, 8 * MB), (int64_t)(8 * MB / pg));
    CHECK_EQ_I64((int64_t)resident(kept.p, 8 * MB), 0);
    fill(task.p, 0, 8 * MB);
    task.len = 8 * MB;
    CHECK_OK(bb_reserve(&task, 4 * MB)); /* grown by mremap: the cache is empty */
    CHECK_EQ_I64((int64_t)task.cap, (int64_t)(16 * MB));
    CHECK(pattern_ok(task.p, 8 * MB));
    CHECK_EQ_I64((int64_t)resident(task.p, 16 * MB), (int64_t)(16 * MB / pg));
    bb_free(&task);
    bb_free(&kept);
    bb_trim();
}

/* A kept buffer whose room is advised apart from its bytes still grows
 * with one mremap, its chunks not moved one by one: asked for more than a
 * chunk at a time (an mllib block's room), it grows before its bytes reach
 * that room. */
TEST(bigbuf_kept_buffer_grows_in_one_call) {
    bb_trim();
    ebuf kept = {0};
    CHECK_OK(bb_reserve_kept(&kept, 3 * MB));
    CHECK_EQ_I64((int64_t)kept.cap, (int64_t)(4 * MB));
    fill(kept.p, 0, 3 * MB);
    kept.len = 3 * MB;
    CHECK_OK(bb_reserve_kept(&kept, 3 * MB)); /* grown: 8 MB, the room past 6 MB advised apart */
    CHECK_EQ_I64((int64_t)kept.cap, (int64_t)(8 * MB));
    fill(kept.p, 3 * MB, 6 * MB);
    kept.len = 6 * MB;
    size_t moves = bb_own_moves();
    CHECK_OK(bb_reserve_kept(&kept, 3 * MB));
    CHECK_EQ_I64((int64_t)kept.cap, (int64_t)(16 * MB));
    CHECK_EQ_I64((int64_t)(bb_own_moves() - moves), 0);
    CHECK(pattern_ok(kept.p, 6 * MB));
    int thp = madvise(kept.p + 14 * MB, 2 * MB, MADV_HUGEPAGE) == 0; /* (as above) */
    if (thp) madvise(kept.p + 14 * MB, 2 * MB, MADV_NOHUGEPAGE);
    CHECK_EQ_I64(advised_huge(kept.p + 9 * MB), thp);
    CHECK_EQ_I64(advised_huge(kept.p + 10 * MB), 0);
    bb_free(&kept);
    bb_trim();
}
