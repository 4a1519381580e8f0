/*
 * bigbuf.c -- big task buffers backed by mappings whose pages are kept
 * in a cache of 2 MiB chunks (see bigbuf.h).
 *
 * Every mapping is made of chunks of BB_MIN bytes (BB_MIN-aligned as we
 * map them, and as the kernels we run on place a grown one), and is only
 * ever split at chunk boundaries, so a chunk always lies within one of the
 * kernel's memory areas and one mremap call moves it (its page table
 * entries, a single one for an aligned huge page) to any other chunk.
 *
 * A new buffer takes the start of the smallest cached range that
 * holds it, in place (no page moves), else it is a fresh range (address
 * space only: the kernel puts in no page until one is touched) into which
 * cached chunks are moved, only the chunks left over being fresh memory.
 * A growing buffer takes the cached range right after it when there is
 * one, else its bytes are copied to the start of the smallest cached range
 * that holds it, else it grows with one mremap, its tail fresh; only one
 * made of several areas, which mremap cannot grow, is assembled, its own
 * chunks moved first.  (Chunks are moved one call each, and each call
 * holds the address space against the other threads' page faults: moving
 * a growing buffer's chunks on every growth cost sort_by_key 5%.)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bigbuf.h"
#include "ember.h"
#include "err.h"

#define CHUNK BB_MIN

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct { uint8_t *p; size_t len; } cache[BB_CACHE_SLOTS]; /* whole chunks each */
static size_t ncache, cached;
static size_t fresh_bytes, taken_chunks, own_moves; /* bb_counts, bb_own_moves */

/* A range of len bytes (whole chunks) aligned to a chunk, so the kernel
 * can back it with huge pages (bb_reserve_kept asks it to); no page is in
 * it yet. */
static uint8_t *range_new(size_t len) {
    uint8_t *p = mmap(NULL, len + CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    size_t head = (CHUNK - ((uintptr_t)p & (CHUNK - 1))) & (CHUNK - 1);
    if (head) munmap(p, head);
    if (CHUNK - head) munmap(p + head + len, CHUNK - head);
    return p + head;
}

/* Move len bytes of whole chunks from src to dst (both chunk-aligned;
 * dst a range of ours, whose pages there are replaced), a chunk a call,
 * as a chunk is always within one memory area.  The bytes moved, from the
 * start (less than len only when the kernel refused, out of memory for
 * its map of areas). */
static size_t move_chunks(uint8_t *src, uint8_t *dst, size_t len) {
    size_t done = 0;
    while (done < len &&
           mremap(src + done, CHUNK, CHUNK, MREMAP_MAYMOVE | MREMAP_FIXED, dst + done) != MAP_FAILED)
        done += CHUNK;
    /* A refused move may have unmapped its destination first: fresh
     * memory there again (nothing else can be mapped in our range but
     * by a racing mmap, which MAP_FIXED_NOREPLACE leaves alone). */
    if (done < len) {
        uint8_t *r = mmap(dst + done, CHUNK, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (r != MAP_FAILED && r != dst + done) munmap(r, CHUNK); /* a kernel taking it as a hint */
    }
    return done;
}

/* Fill [dst, dst + len) (whole chunks) from the cache, the ends of its
 * ranges first, as far as it has them.  The bytes filled, from the
 * start. */
static size_t fill_from_cache(uint8_t *dst, size_t len) {
    size_t done = 0;
    while (done < len) {
        uint8_t *src = NULL;
        size_t n = 0;
        pthread_mutex_lock(&lock);
        if (ncache) { /* the end of the last range parked */
            size_t i = ncache - 1;
            n = cache[i].len < len - done ? cache[i].len : len - done;
            cache[i].len -= n;
            src = cache[i].p + cache[i].len;
            cached -= n;
            if (!cache[i].len) ncache--;
        }
        pthread_mutex_unlock(&lock);
        if (!n) break;
        size_t moved = move_chunks(src, dst + done, n);
        __atomic_fetch_add(&taken_chunks, moved / CHUNK, __ATOMIC_RELAXED);
        done += moved;
        if (moved < n) {
            munmap(src + moved, n - moved);
            break;
        }
    }
    return done;
}

/* Take len bytes in place from the start of a cached range: the range
 * starting at at (for a buffer to grow into), else (at NULL) the smallest
 * of at least len bytes.  No page moves: the buffer is those addresses.
 * NULL when no range serves. */
static uint8_t *cache_take_in_place(const uint8_t *at, size_t len) {
    uint8_t *p = NULL;
    pthread_mutex_lock(&lock);
    size_t best = ncache;
    for (size_t i = 0; i < ncache; i++) {
        if (cache[i].len < len || (at && cache[i].p != at)) continue;
        if (best == ncache || cache[i].len < cache[best].len) best = i;
    }
    if (best < ncache) {
        p = cache[best].p;
        cache[best].p += len;
        cache[best].len -= len;
        cached -= len;
        if (!cache[best].len) cache[best] = cache[--ncache];
    }
    pthread_mutex_unlock(&lock);
    if (p) __atomic_fetch_add(&taken_chunks, len / CHUNK, __ATOMIC_RELAXED);
    return p;
}

static void cache_put(uint8_t *p, size_t len) {
    pthread_mutex_lock(&lock);
    if (ncache < BB_CACHE_SLOTS && cached + len <= BB_CACHE_BYTES) {
        cache[ncache].p = p;
        cache[ncache++].len = len;
        cached += len;
        p = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (p) munmap(p, len);
}

/* [p, p + len) is fresh memory (no page in yet): counted, and for a task
 * buffer populated at once, every page put in by one call rather than one
 * page fault each.  A task buffer is written soon and whole (a table
 * cleared, an arena filled; the part past its bytes goes to the cache,
 * pages in, when the buffer is shrunk or freed), and on the virtual
 * machines we run on a fault is about half of a fresh page's cost
 * (bench/firsttouch: populated pages take half the time).  A kept buffer
 * is not populated: its pages are to come as huge pages where its advice
 * (bb_reserve_kept) asks for them, which it gives only after the range
 * is reserved.  A hint: a kernel without MADV_POPULATE_WRITE (before
 * 5.14) refuses it, and the pages then come one fault each. */
static void fresh(uint8_t *p, size_t len, int populate) {
    if (!len) return;
    __atomic_fetch_add(&fresh_bytes, len, __ATOMIC_RELAXED);
#ifdef MADV_POPULATE_WRITE
    if (populate) (void)madvise(p, len, MADV_POPULATE_WRITE);
#endif
}

/* A range of len bytes (whole chunks): own's ownlen bytes (a range of
 * ours, or NULL) moved to its start, then cached chunks, the rest fresh.
 * own's range is gone afterwards.  NULL on failure (own untouched). */
static uint8_t *assemble(uint8_t *own, size_t ownlen, size_t len, int populate) {
    uint8_t *q = range_new(len);
    if (!q) return NULL;
    size_t moved = ownlen ? move_chunks(own, q, ownlen) : 0;
    if (ownlen) __atomic_fetch_add(&own_moves, 1, __ATOMIC_RELAXED);
    if (moved < ownlen) { /* the kernel refused: the rest copied */
        memcpy(q + moved, own + moved, ownlen - moved);
        munmap(own + moved, ownlen - moved);
    }
    size_t got = fill_from_cache(q + ownlen, len - ownlen);
    fresh(q + ownlen + got, len - ownlen - got, populate);
    return q;
}

/* Reserve extra more bytes, fresh memory populated or not (bb_reserve,
 * bb_reserve_kept). */
static int reserve(ebuf *b, size_t extra, int populate) {
    if (b->cap - b->len >= extra) return 0;
    size_t need = b->len + extra, cap = b->cap ? b->cap : 4096;
    if (need < b->len) return EM_ENOMEM;
    while (cap < need) cap = cap * 2 > cap ? cap * 2 : need;
    /* A heap buffer asked for a chunk or more at once gets what it asked (in
     * whole chunks), not the next power of two: it is a size expected. */
    if (b->cap < BB_MIN && need > BB_MIN) cap = need;
    if (cap < BB_MIN) {
        uint8_t *p = realloc(b->p, cap);
        if (!p) return EM_ENOMEM;
        b->p = p;
        b->cap = cap;
        return 0;
    }
    cap = (cap + CHUNK - 1) & ~(CHUNK - 1);
    if (cap < need) return EM_ENOMEM;
    int mapped = b->cap >= BB_MIN;
    if (mapped && cache_take_in_place(b->p + b->cap, cap - b->cap)) { /* the range after it */
        b->cap = cap;
        return 0;
    }
    uint8_t *q = cache_take_in_place(NULL, cap);
    if (q && mapped) { /* a cached range that holds it: its bytes copied over */
        memcpy(q, b->p, b->len);
        cache_put(b->p, b->cap);
        b->p = q;
        b->cap = cap;
        return 0;
    }
    if (mapped) { /* grown in one call, the tail fresh */
        uint8_t *g = mremap(b->p, b->cap, cap, MREMAP_MAYMOVE);
        if (g != MAP_FAILED) { /* (one assembled from several areas fails, unchanged) */
            fresh(g + b->cap, cap - b->cap, populate);
            b->p = g;
            b->cap = cap;
            return 0;
        }
    }
    if (!q && !(q = assemble(mapped ? b->p : NULL, mapped ? b->cap : 0, cap, populate))) return EM_ENOMEM;
    if (!mapped) {
        if (b->len) memcpy(q, b->p, b->len);
        free(b->p);
    }
    b->p = q;
    b->cap = cap;
    return 0;
}

int bb_reserve(ebuf *b, size_t extra) { return reserve(b, extra, 1); }

/* Advised are the chunks the bytes to come, [len, len + extra), fall in:
 * on the call whose bytes reach into a chunk not written yet (from the
 * chunk of len), and from the start when the buffer moved or became a
 * mapping (its bytes copied in).  A mapping grown by mremap inherits its
 * last area's advice, so a grown buffer's room past the bytes to come is
 * advised against huge pages: the tail bb_shrink parks in the cache then
 * asks the task buffer that takes it next for none.  (A chunk parked
 * after it was written carries its advice, as a freed cached partition's
 * chunks do.)  Two advices split the mapping into two areas, which one
 * mremap cannot grow, so before the buffer grows the room it is about to
 * fill is asked for huge pages, making it one area again.  The advice is
 * a hint: failure costs speed only. */
int bb_reserve_kept(ebuf *b, size_t extra) {
    const uint8_t *was = b->p;
    size_t cap = b->cap;
    if (cap >= BB_MIN && cap - b->len < extra) { /* to grow: its room will be written */
        size_t w = (b->len + CHUNK - 1) & ~(CHUNK - 1);
        if (w < cap) madvise(b->p + w, cap - w, MADV_HUGEPAGE);
    }
    int rc = reserve(b, extra, 0);
    if (rc || b->cap < BB_MIN || !extra) return rc;
    size_t from = b->len & ~(CHUNK - 1), to = (b->len + extra + CHUNK - 1) & ~(CHUNK - 1);
    if (to > b->cap) to = b->cap;
    if (b->cap != cap && to < b->cap) madvise(b->p + to, b->cap - to, MADV_NOHUGEPAGE);
    if (b->p != was) from = 0;
    else if (b->len && (b->len - 1) / CHUNK == (b->len + extra - 1) / CHUNK) return 0;
    madvise(b->p + from, to - from, MADV_HUGEPAGE);
    return 0;
}

void bb_shrink(ebuf *b) {
    if (b->cap < BB_MIN) {
        uint8_t *p = b->len ? realloc(b->p, b->len) : NULL;
        if (p) {
            b->p = p;
            b->cap = b->len;
        }
        return;
    }
    size_t keep = (b->len + CHUNK - 1) & ~(CHUNK - 1);
    if (!keep) keep = CHUNK;
    if (keep < b->cap) { /* the tail's pages, in, go to the next big buffer */
        cache_put(b->p + keep, b->cap - keep);
        b->cap = keep;
    }
}

void bb_free(ebuf *b) {
    if (b->cap >= BB_MIN) cache_put(b->p, b->cap);
    else free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

void bb_counts(size_t *fresh, size_t *taken) {
    *fresh = __atomic_load_n(&fresh_bytes, __ATOMIC_RELAXED);
    *taken = __atomic_load_n(&taken_chunks, __ATOMIC_RELAXED);
}

size_t bb_own_moves(void) {
    return __atomic_load_n(&own_moves, __ATOMIC_RELAXED);
}

void bb_trim(void) {
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < ncache; i++) munmap(cache[i].p, cache[i].len); /* never empty */
    ncache = 0;
    cached = 0;
    pthread_mutex_unlock(&lock);
}
