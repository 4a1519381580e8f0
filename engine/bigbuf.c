/*
 * bigbuf.c -- big task buffers backed by cached mappings (see bigbuf.h).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bigbuf.h"
#include "ember.h"
#include "err.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct { void *p; size_t len; } cache[BB_CACHE_SLOTS];
static size_t ncache, cached;
static size_t fresh_bytes, taken_maps; /* bb_counts */

/* A new mapping of len bytes (a multiple of BB_MIN) aligned to BB_MIN, so
 * the kernel can back it with huge pages. */
static void *map_new(size_t len) {
    uint8_t *p = mmap(NULL, len + BB_MIN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    __atomic_fetch_add(&fresh_bytes, len, __ATOMIC_RELAXED);
    size_t head = (BB_MIN - ((uintptr_t)p & (BB_MIN - 1))) & (BB_MIN - 1);
    if (head) munmap(p, head);
    if (BB_MIN - head) munmap(p + head + len, BB_MIN - head);
    madvise(p + head, len, MADV_HUGEPAGE); /* a hint: failure costs speed only */
    return p + head;
}

/* The smallest cached mapping of at least len bytes, else (with any_size)
 * the largest; NULL if there is none.  With any_size (a buffer becoming a
 * mapping, which may stay small) a fitting mapping over BB_WASTE times len
 * is not taken either: the largest smaller one is, or none, so that small
 * buffers do not take the big mappings that big ones would reuse whole
 * (a map task's combine table would take the 40 MB output buffer the last
 * task gave back, and its own output would then fault in fresh pages). */
static void *cache_take(size_t len, int any_size, size_t *got) {
    void *p = NULL;
    pthread_mutex_lock(&lock);
    size_t fit = ncache, small = ncache;
    for (size_t i = 0; i < ncache; i++) {
        if (cache[i].len >= len) {
            if (fit == ncache || cache[i].len < cache[fit].len) fit = i;
        } else if (small == ncache || cache[i].len > cache[small].len) {
            small = i;
        }
    }
    if (fit < ncache && any_size && cache[fit].len / BB_WASTE > len) fit = ncache;
    size_t best = fit < ncache ? fit : any_size ? small : ncache;
    if (best < ncache) {
        taken_maps++;
        p = cache[best].p;
        *got = cache[best].len;
        cached -= *got;
        cache[best] = cache[--ncache];
    }
    pthread_mutex_unlock(&lock);
    return p;
}

static void cache_put(void *p, size_t len) {
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

/* A mapping of at least len bytes: a cached one (grown if smaller) or a
 * new one.  Sets *got to its size. */
static void *map_get(size_t len, size_t *got) {
    size_t have = 0;
    void *p = cache_take(len, 1, &have);
    if (p && have < len) {
        void *q = mremap(p, have, len, MREMAP_MAYMOVE);
        if (q == MAP_FAILED) {
            munmap(p, have);
            p = NULL;
        } else {
            madvise((uint8_t *)q + have, len - have, MADV_HUGEPAGE);
            __atomic_fetch_add(&fresh_bytes, len - have, __ATOMIC_RELAXED);
            p = q;
            have = len;
        }
    }
    if (!p && (p = map_new(len))) have = len;
    *got = have;
    return p;
}

int bb_reserve(ebuf *b, size_t extra) {
    if (b->cap - b->len >= extra) return 0;
    size_t need = b->len + extra, cap = b->cap ? b->cap : 4096;
    if (need < b->len) return EM_ENOMEM;
    while (cap < need) cap = cap * 2 > cap ? cap * 2 : need;
    /* A heap buffer asked for huge pages at once gets what it asked (in
     * whole huge pages), not the next power of two: it is a size expected,
     * which a cached mapping of that size should serve. */
    if (b->cap < BB_MIN && need > BB_MIN) cap = need;
    if (cap < BB_MIN) {
        uint8_t *p = realloc(b->p, cap);
        if (!p) return EM_ENOMEM;
        b->p = p;
        b->cap = cap;
        return 0;
    }
    cap = (cap + BB_MIN - 1) & ~(BB_MIN - 1);
    if (cap < need) return EM_ENOMEM;
    if (b->cap >= BB_MIN) { /* a mapping already */
        size_t got;
        uint8_t *c = cache_take(cap, 0, &got);
        if (c) { /* a cached one that fits: its pages are in, copy over */
            if (b->len) memcpy(c, b->p, b->len);
            cache_put(b->p, b->cap);
            b->p = c;
            b->cap = got;
            return 0;
        }
        /* else move its pages to a bigger range */
        void *q = mremap(b->p, b->cap, cap, MREMAP_MAYMOVE);
        if (q == MAP_FAILED) return EM_ENOMEM;
        madvise((uint8_t *)q + b->cap, cap - b->cap, MADV_HUGEPAGE);
        __atomic_fetch_add(&fresh_bytes, cap - b->cap, __ATOMIC_RELAXED);
        b->p = q;
        b->cap = cap;
        return 0;
    }
    size_t got;
    uint8_t *p = map_get(cap, &got);
    if (!p) return EM_ENOMEM;
    if (b->len) memcpy(p, b->p, b->len);
    free(b->p);
    b->p = p;
    b->cap = got;
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
    size_t keep = (b->len + BB_MIN - 1) & ~(BB_MIN - 1);
    if (!keep) keep = BB_MIN;
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
    pthread_mutex_lock(&lock);
    *taken = taken_maps;
    pthread_mutex_unlock(&lock);
}

void bb_trim(void) {
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < ncache; i++) munmap(cache[i].p, cache[i].len);
    ncache = 0;
    cached = 0;
    pthread_mutex_unlock(&lock);
}
