/*
 * mapout.c -- the map-output tracker (see mapout.h), and its two encodings
 * of a map output's segment sizes, Spark's CompressedMapStatus and
 * HighlyCompressedMapStatus.
 *
 * A compressed status is nparts bytes, mo_compress_size of each size.  A
 * highly compressed one is an hc_status: the average of the non-empty
 * segments that are not huge, then the reduce ids of the huge ones
 * (ascending, found by binary search) and their bytes, then the bitmap of
 * the empty ones.  The bitmap is left out when no segment is empty, and
 * when every one is (then every size is 0); with a bit per partition it is
 * the bulk of the status, 1/64 of the exact sizes.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mapout.h"

uint8_t mo_compress_size(uint64_t size) {
    if (size <= 1) return (uint8_t)size;
    double c = ceil(log((double)size) / log(1.1));
    return c >= 255 ? 255 : (uint8_t)c;
}

/* 1.1^c for every byte, worked out once: every reduce task's description
 * reads a size per map. */
static uint64_t decompressed[256];
static pthread_once_t decompressed_once = PTHREAD_ONCE_INIT;

static void fill_decompressed(void) {
    for (int c = 1; c < 256; c++) decompressed[c] = (uint64_t)pow(1.1, c);
}

uint64_t mo_decompress_size(uint8_t c) {
    pthread_once(&decompressed_once, fill_decompressed);
    return decompressed[c];
}

/* A highly compressed status; b holds nhuge u32 reduce ids, nhuge bytes,
 * then the bitmap of empty segments when 0 < nempty < nparts. */
typedef struct hc_status {
    uint64_t avg;      /* of the non-empty segments that are not huge */
    uint32_t nhuge, nempty;
    uint8_t b[];
} hc_status;

static int hc_has_bitmap(const hc_status *h, int nparts) { return h->nempty && h->nempty < (uint32_t)nparts; }

static size_t hc_size(const hc_status *h, int nparts) {
    return sizeof *h + 5 * (size_t)h->nhuge + (hc_has_bitmap(h, nparts) ? ((size_t)nparts + 7) / 8 : 0);
}

/* Spark's HighlyCompressedMapStatus of n sizes; a size over accurate is
 * huge.  NULL when out of memory. */
static hc_status *hc_make(const uint64_t *segs, int n, uint64_t accurate) {
    uint32_t nhuge = 0, nempty = 0, nsmall = 0;
    unsigned __int128 small = 0; /* sum of the small sizes: may pass 2^64 */
    for (int i = 0; i < n; i++) {
        if (!segs[i]) nempty++;
        else if (segs[i] > accurate) nhuge++;
        else small += segs[i], nsmall++;
    }
    hc_status t = {nsmall ? (uint64_t)(small / nsmall) : 0, nhuge, nempty};
    size_t bytes = hc_size(&t, n);
    hc_status *h = calloc(1, bytes);
    if (!h) return NULL;
    *h = t;
    uint32_t *ids = (uint32_t *)h->b, k = 0;
    uint8_t *c = h->b + 4 * (size_t)nhuge, *bits = c + nhuge;
    int bitmap = hc_has_bitmap(h, n);
    for (int i = 0; i < n; i++) {
        if (!segs[i]) {
            if (bitmap) bits[i >> 3] |= (uint8_t)(1u << (i & 7));
        } else if (segs[i] > accurate) {
            ids[k] = (uint32_t)i;
            c[k++] = mo_compress_size(segs[i]);
        }
    }
    return h;
}

static uint64_t hc_get(const hc_status *h, int nparts, int part) {
    if (h->nempty == (uint32_t)nparts) return 0;
    if (hc_has_bitmap(h, nparts)) {
        const uint8_t *bits = h->b + 5 * (size_t)h->nhuge;
        if (bits[part >> 3] & (1u << (part & 7))) return 0;
    }
    const uint32_t *ids = (const uint32_t *)h->b;
    uint32_t lo = 0, hi = h->nhuge;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < (uint32_t)part) lo = mid + 1;
        else hi = mid;
    }
    if (lo < h->nhuge && ids[lo] == (uint32_t)part) return mo_decompress_size(h->b[4 * (size_t)h->nhuge + lo]);
    return h->avg;
}

/* so's encoding of the sizes segs (so->nparts of them).  NULL when out of
 * memory. */
static void *sizes_make(const shuffle_out *so, const uint64_t *segs) {
    if (so->highly) return hc_make(segs, so->nparts, so->accurate);
    uint8_t *c = malloc(so->nparts ? (size_t)so->nparts : 1);
    if (!c) return NULL;
    for (int i = 0; i < so->nparts; i++) c[i] = mo_compress_size(segs[i]);
    return c;
}

static size_t sizes_bytes(const shuffle_out *so, const void *s) {
    if (!s) return 0;
    return so->highly ? hc_size(s, so->nparts) : (size_t)so->nparts;
}

uint64_t mo_seg(const shuffle_out *so, int map, int part) {
    const void *s = map >= 0 && map < so->nmaps ? so->m[map].sizes : NULL;
    if (!s || part < 0 || part >= so->nparts) return 0;
    if (so->highly) return hc_get(s, so->nparts, part);
    return mo_decompress_size(((const uint8_t *)s)[part]);
}

size_t mo_bytes(const shuffle_out *so) {
    size_t n = sizeof *so + ((size_t)so->nmaps + 1) * (sizeof *so->m + 1);
    for (int j = 0; j < so->nmaps; j++) {
        if (so->m[j].loc) n += strlen(so->m[j].loc) + 1;
        n += sizes_bytes(so, so->m[j].sizes);
    }
    return n;
}

void mo_configure(mapout *mo, int64_t highly_min, int64_t accurate) {
    mo->highly_min = highly_min > 0 && highly_min <= INT32_MAX ? (int)highly_min : 0;
    mo->accurate = accurate > 0 ? (uint64_t)accurate : 0;
}

/* The tracker follows the shuffles alive: a map by id, not an array
 * indexed by every id the context ever handed out. */
shuffle_out *mo_find(mapout *mo, uint32_t id) { return idmap_get(&mo->s, id); }

shuffle_out *mo_get(mapout *mo, uint32_t id, int nmaps, int nparts) {
    shuffle_out *so = mo_find(mo, id);
    if (so) return so;
    if (!(so = calloc(1, sizeof *so)) || !(so->m = calloc((size_t)nmaps + 1, sizeof *so->m)) ||
        !(so->merged = calloc((size_t)nmaps + 1, 1))) {
        if (so) free(so->m);
        free(so);
        return NULL;
    }
    so->id = id;
    so->nmaps = nmaps;
    so->nparts = nparts;
    so->highly = nparts > (mo->highly_min ? mo->highly_min : MO_HIGHLY_COMPRESS_DEFAULT);
    so->accurate = mo->accurate ? mo->accurate : MO_ACCURATE_BLOCK_DEFAULT;
    if (idmap_put(&mo->s, id, so)) {
        free(so->m);
        free(so->merged);
        free(so);
        return NULL;
    }
    __atomic_fetch_add(&mo->n, 1, __ATOMIC_RELAXED); /* read by em_get_stats */
    return so;
}

int mo_set(shuffle_out *so, int map, int exec, uint64_t attempt, const char *loc, uint64_t *segs) {
    map_status *m = &so->m[map];
    char *l = strdup(loc ? loc : "");
    void *sizes = segs ? sizes_make(so, segs) : NULL;
    int lost = segs && !sizes;
    free(segs);
    if (!l || lost) {
        free(l);
        free(sizes);
        return -2;
    }
    if (!m->have) so->navail++;
    free(m->loc);
    free(m->sizes);
    m->loc = l;
    m->sizes = sizes;
    m->exec = exec;
    m->attempt = attempt;
    m->have = 1;
    return 0;
}

void mo_unset(shuffle_out *so, int map) {
    map_status *m = &so->m[map];
    if (m->have) so->navail--;
    free(m->loc);
    free(m->sizes);
    memset(m, 0, sizeof *m);
}

static void so_free(void *p) {
    shuffle_out *so = p;
    for (int j = 0; j < so->nmaps; j++) {
        free(so->m[j].loc);
        free(so->m[j].sizes);
    }
    free(so->m);
    free(so->merged);
    free(so);
}

void mo_remove(mapout *mo, uint32_t id) {
    shuffle_out *so = idmap_del(&mo->s, id);
    if (!so) return;
    __atomic_fetch_sub(&mo->n, 1, __ATOMIC_RELAXED);
    so_free(so);
}

void mo_free(mapout *mo) {
    idmap_free(&mo->s, so_free);
    mo->n = 0;
}
