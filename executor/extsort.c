/*
 * extsort.c -- external sorting and k-way merging of sorted runs (see
 * extsort.h).
 *
 * Sorting works on 16-byte index entries that carry the first 8 key bytes
 * as a big-endian integer, and the key's length up to 9: the order of most
 * entries is decided by the prefix alone and never touches the arena.  As
 * Spark's Tungsten sort does, entries are radix sorted on the prefix (the
 * top byte first into 256 buckets, then each bucket, small enough for the
 * cache, least significant byte first, skipping bytes all its entries
 * share); only runs of equal prefixes that the length does not decide are
 * then sorted by comparing whole keys, with an introsort (quicksort with
 * median of three, heapsort past a depth limit, insertion sort for short
 * ranges) whose comparison is inlined.  Entries are always sorted
 * ascending; descending order is produced by reading them backwards, both
 * when spilling a run and when yielding the in-memory part.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bigbuf.h"
#include "curmetrics.h"
#include "err.h"
#include "extsort.h"
#include "recfmt.h"

/* ----------------------------------------------------------------- runfile */

void es_runfile_init(es_runfile *f, const char *dir, bf_codec codec, size_t block_bytes) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->dir = dir && *dir ? dir : "/tmp";
    f->codec = codec;
    f->block_bytes = block_bytes;
}

int es_runfile_begin(es_runfile *f) {
    if (f->fd < 0) {
        if (snprintf(f->path, sizeof f->path, "%s/ember-spill-%d-XXXXXX", f->dir, (int)getpid()) >=
            (int)sizeof f->path)
            return em__seterr(EM_EINVAL, "spill file in %s: path too long", f->dir);
        int fd = mkostemp(f->path, O_CLOEXEC);
        if (fd < 0)
            return em__seterr(EM_EIO, "spill file in %s: %s", f->dir, strerror(errno));
        /* Unlinked at once: the space is freed when the descriptor closes,
         * even if the task dies, so spills never outlive their reader. */
        unlink(f->path);
        f->fd = fd;
        bf_writer_init(&f->w, fd, f->path, 0, f->codec, f->block_bytes);
    }
    f->run_start = f->w.off;
    return 0;
}

int es_runfile_add(es_runfile *f, const em_rec *r) { return bf_write(&f->w, r); }

int es_runfile_end(es_runfile *f) {
    int rc = bf_flush(&f->w);
    if (rc) return rc;
    if (f->w.off == f->run_start) return 0; /* empty run: nothing to merge */
    if (f->nruns == f->cap) {
        size_t nc = f->cap ? f->cap * 2 : 16;
        es_run *nr = realloc(f->runs, nc * sizeof *nr);
        if (!nr) return em__seterr(EM_ENOMEM, "spill runs: out of memory");
        f->runs = nr;
        f->cap = nc;
    }
    f->runs[f->nruns].off = f->run_start;
    f->runs[f->nruns].len = f->w.off - f->run_start;
    f->nruns++;
    return 0;
}

void es_runfile_free(es_runfile *f) {
    if (f->fd >= 0) {
        bf_writer_free(&f->w);
        close(f->fd);
    }
    free(f->runs);
    f->runs = NULL;
    f->nruns = f->cap = 0;
    f->fd = -1;
}

/* ------------------------------------------------------------------ merger */

static inline int src_less(const es_merger *m, uint32_t a, uint32_t b) {
    int c = rec_key_cmp(&m->src[a].cur, &m->src[b].cur);
    if (m->descending) c = -c;
    return c ? c < 0 : a < b; /* ties by source: a deterministic order */
}

static void sift_down(es_merger *m, size_t i) {
    uint32_t *h = m->heap;
    size_t n = m->nheap;
    for (;;) {
        size_t l = 2 * i + 1, best = i;
        if (l < n && src_less(m, h[l], h[best])) best = l;
        if (l + 1 < n && src_less(m, h[l + 1], h[best])) best = l + 1;
        if (best == i) return;
        uint32_t t = h[i];
        h[i] = h[best];
        h[best] = t;
        i = best;
    }
}

/* Move source i to its next record: 1, 0 at its end, or < 0. */
static int src_advance(es_merger *m, es_src *s) {
    if (s->is_mem) {
        if (s->memi >= m->nmem) return 0;
        m->get(m->gctx, s->memi++, &s->cur);
        return 1;
    }
    return bf_next(&s->rd, &s->cur);
}

int es_merger_open(es_merger *m, es_runfile *f, es_mem_get get, void *gctx, size_t nmem, int descending) {
    memset(m, 0, sizeof *m);
    m->descending = descending;
    m->get = get;
    m->gctx = gctx;
    m->nmem = nmem;
    size_t nsrc = f->nruns + (nmem ? 1 : 0);
    if (!nsrc) return 0;
    m->src = calloc(nsrc, sizeof *m->src);
    m->heap = malloc(nsrc * sizeof *m->heap);
    if (!m->src || !m->heap) return em__seterr(EM_ENOMEM, "merge of %zu runs: out of memory", nsrc);
    for (size_t i = 0; i < f->nruns; i++) {
        es_src *s = &m->src[m->nsrc++];
        bf_reader_init(&s->rd, f->fd, f->path, f->runs[i].off, f->runs[i].len);
    }
    if (nmem) m->src[m->nsrc++].is_mem = 1;
    for (size_t i = 0; i < m->nsrc; i++) {
        int rc = src_advance(m, &m->src[i]);
        if (rc < 0) return rc;
        if (rc) m->heap[m->nheap++] = (uint32_t)i;
    }
    for (size_t i = m->nheap / 2; i-- > 0;) sift_down(m, i);
    return 0;
}

int es_merger_next(es_merger *m, em_rec *r) {
    /* The record returned last is a view into its source's buffer, so the
     * source moves on only now, when the caller is done with it. */
    if (m->top_used) {
        m->top_used = 0;
        int rc = src_advance(m, &m->src[m->heap[0]]);
        if (rc < 0) return rc;
        if (!rc) m->heap[0] = m->heap[--m->nheap];
        if (m->nheap) sift_down(m, 0);
    }
    if (!m->nheap) return 0;
    *r = m->src[m->heap[0]].cur;
    m->top_used = 1;
    return 1;
}

void es_merger_free(es_merger *m) {
    for (size_t i = 0; i < m->nsrc; i++)
        if (!m->src[i].is_mem) bf_reader_free(&m->src[i].rd);
    free(m->src);
    free(m->heap);
    memset(m, 0, sizeof *m);
}

static int emit_pair(rec_sink_fn sink, void *sctx, const ebuf *k, const ebuf *v) {
    em_rec out = {k->p ? (const void *)k->p : (const void *)"", k->len, v->p ? (const void *)v->p : (const void *)"",
                  v->len};
    return sink(sctx, &out);
}

int es_merge_combine(es_merger *m, const agg_spec *agg, rec_sink_fn sink, void *sctx) {
    ebuf key = EBUF_INIT, comb = EBUF_INIT, tmp = EBUF_INIT;
    em_rec r;
    int rc, have = 0;
    while ((rc = es_merger_next(m, &r)) == 1) {
        if (have && !bytes_cmp(key.p, key.len, r.key, r.klen)) {
            em_rec c1 = {NULL, 0, comb.p, comb.len}, c2 = {NULL, 0, r.val, r.vlen};
            ebuf_reset(&tmp);
            if ((rc = agg->merge_comb(agg->ctx, &c1, &c2, &tmp)) < 0) goto out;
            ebuf t = comb;
            comb = tmp;
            tmp = t;
            continue;
        }
        if (have && (rc = emit_pair(sink, sctx, &key, &comb))) goto out;
        ebuf_reset(&key);
        ebuf_reset(&comb);
        if (ebuf_append(&key, r.key, r.klen) || ebuf_append(&comb, r.val, r.vlen)) {
            rc = em__seterr(EM_ENOMEM, "merging spilled aggregation runs: out of memory");
            goto out;
        }
        have = 1;
    }
    if (!rc && have) rc = emit_pair(sink, sctx, &key, &comb);
out:
    ebuf_free(&key);
    ebuf_free(&comb);
    ebuf_free(&tmp);
    return rc == EM_STOP ? 0 : rc;
}

/* -------------------------------------------------------------- sorting */

static inline uint64_t ent_off(const es_ent *e) { return e->ref & (((uint64_t)1 << ES_OFF_BITS) - 1); }
static inline unsigned ent_k9(const es_ent *e) { return (unsigned)(e->ref >> ES_OFF_BITS); }

/* The key of an entry's record (a plain record's value). */
static inline const uint8_t *ent_key(const uint8_t *base, const es_ent *e, size_t *klen) {
    const uint8_t *p = base + ent_off(e);
    uint64_t k = 0, v = 0;
    size_t n = varint_get(p, p + VARINT_MAX + 1, &k);
    if (k) {
        *klen = (size_t)(k - 1);
        return p + n;
    }
    n += varint_get(p + n, p + n + VARINT_MAX + 1, &v);
    *klen = (size_t)v;
    return p + n;
}

static inline int ent_less(const uint8_t *base, const es_ent *a, const es_ent *b) {
    if (a->prefix != b->prefix) return a->prefix < b->prefix;
    /* Equal prefixes and one key within 8 bytes: it is the other's start
     * (the prefix pads with zero bytes), so the shorter is smaller. */
    unsigned ka = ent_k9(a), kb = ent_k9(b);
    if (ka != kb || ka <= 8) return ka < kb;
    size_t la, lb;
    const uint8_t *x = ent_key(base, a, &la), *y = ent_key(base, b, &lb);
    return bytes_cmp(x, la, y, lb) < 0;
}

#define ENT_SWAP(x, y) do { es_ent t_ = (x); (x) = (y); (y) = t_; } while (0)

static void insertion_sort(const uint8_t *base, es_ent *a, size_t n) {
    for (size_t i = 1; i < n; i++) {
        es_ent v = a[i];
        size_t j = i;
        while (j > 0 && ent_less(base, &v, &a[j - 1])) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}

static void heap_down(const uint8_t *base, es_ent *a, size_t n, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, big = i;
        if (l < n && ent_less(base, &a[big], &a[l])) big = l;
        if (l + 1 < n && ent_less(base, &a[big], &a[l + 1])) big = l + 1;
        if (big == i) return;
        ENT_SWAP(a[i], a[big]);
        i = big;
    }
}

static void heap_sort(const uint8_t *base, es_ent *a, size_t n) {
    for (size_t i = n / 2; i-- > 0;) heap_down(base, a, n, i);
    for (size_t end = n; end-- > 1;) {
        ENT_SWAP(a[0], a[end]);
        heap_down(base, a, end, 0);
    }
}

static void intro_sort(const uint8_t *base, es_ent *a, size_t n, int depth) {
    while (n > 16) {
        if (depth-- <= 0) {
            heap_sort(base, a, n);
            return;
        }
        size_t mid = n / 2;
        if (ent_less(base, &a[mid], &a[0])) ENT_SWAP(a[mid], a[0]);
        if (ent_less(base, &a[n - 1], &a[mid])) {
            ENT_SWAP(a[n - 1], a[mid]);
            if (ent_less(base, &a[mid], &a[0])) ENT_SWAP(a[mid], a[0]);
        }
        /* Hoare partition around the median's value: runs of equal keys
         * are split evenly instead of degrading to quadratic time. */
        es_ent p = a[mid];
        size_t i = (size_t)-1, j = n;
        for (;;) {
            do i++; while (ent_less(base, &a[i], &p));
            do j--; while (ent_less(base, &p, &a[j]));
            if (i >= j) break;
            ENT_SWAP(a[i], a[j]);
        }
        size_t left = j + 1;
        if (left < n - left) {
            intro_sort(base, a, left, depth);
            a += left;
            n -= left;
        } else {
            intro_sort(base, a + left, n - left, depth);
            n = left;
        }
    }
    insertion_sort(base, a, n);
}

static void compare_sort(const uint8_t *base, es_ent *a, size_t n) {
    int depth = 0;
    for (size_t k = n; k > 1; k >>= 1) depth += 2;
    intro_sort(base, a, n, depth);
}

/* Below this many entries a bucket is sorted by comparisons. */
#define RADIX_SMALL 64

/* Which of the prefix bytes below the top one vary over a[0, n): their
 * numbers into d[], highest first; returns how many.  One pass of OR and
 * AND, which vectorizes: counting the values of all 7 bytes (7 increments
 * an entry) cost more than the passes they served. */
static int varying_bytes(const es_ent *a, size_t n, int d[7]) {
    uint64_t any = 0, all = ~(uint64_t)0;
    for (size_t i = 0; i < n; i++) {
        any |= a[i].prefix;
        all &= a[i].prefix;
    }
    int nd = 0;
    for (int k = 6; k >= 0; k--)
        if ((any ^ all) >> (8 * k) & 255) d[nd++] = k;
    return nd;
}

/* LSD radix sort of a[0, n) by the nd prefix bytes d[] (highest first),
 * using t[0, n) as the other buffer.  The result ends in a. */
static void radix_lsd_by(es_ent *a, es_ent *t, size_t n, const int *d, int nd) {
    size_t cnt[7][256];
    if (!nd) return;
    memset(cnt, 0, sizeof cnt[0] * (size_t)nd);
    for (size_t i = 0; i < n; i++) {
        uint64_t p = a[i].prefix;
        for (int k = 0; k < nd; k++) cnt[k][(p >> (8 * d[k])) & 255]++;
    }
    es_ent *src = a, *dst = t;
    for (int k = nd - 1; k >= 0; k--) { /* the lowest byte first */
        size_t *c = cnt[k], sum = 0;
        int sh = 8 * d[k];
        for (int b = 0; b < 256; b++) {
            size_t m = c[b];
            c[b] = sum;
            sum += m;
        }
        for (size_t i = 0; i < n; i++) dst[c[(src[i].prefix >> sh) & 255]++] = src[i];
        es_ent *x = src;
        src = dst;
        dst = x;
    }
    if (src != a) memcpy(a, src, n * sizeof *a);
}

/* LSD radix sort of a[0, n) by the prefix bytes below the top one that
 * vary (bytes equal in every entry are skipped).  The result ends in a. */
static void radix_lsd(es_ent *a, es_ent *t, size_t n) {
    int d[7], nd = varying_bytes(a, n, d);
    radix_lsd_by(a, t, n, d, nd);
}

/* Flat entries (see extsort.h) by prefix alone: equal prefixes are equal
 * keys, whose order does not matter. */
static int prefix_cmp(const void *x, const void *y) {
    uint64_t a = ((const es_ent *)x)->prefix, b = ((const es_ent *)y)->prefix;
    return a < b ? -1 : a > b;
}

static void prefix_insertion_sort(es_ent *a, size_t n) {
    for (size_t i = 1; i < n; i++) {
        es_ent v = a[i];
        size_t j = i;
        for (; j > 0 && v.prefix < a[j - 1].prefix; j--) a[j] = a[j - 1];
        a[j] = v;
    }
}

static void small_sort(const uint8_t *base, es_ent *a, size_t n, int flat) {
    if (!flat) compare_sort(base, a, n);
    else if (n <= 4 * RADIX_SMALL) prefix_insertion_sort(a, n);
    else qsort(a, n, sizeof *a, prefix_cmp);
}

/* Runs of equal prefixes in sorted a[0, n) whose order the prefix does
 * not decide (keys over 8 bytes, or of different lengths) sorted by
 * comparisons. */
static void sort_ties(const uint8_t *base, es_ent *a, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        unsigned k9 = ent_k9(&a[i]), mixed = 0;
        while (j < n && a[j].prefix == a[i].prefix) mixed |= ent_k9(&a[j++]) != k9;
        if (j - i > 1 && (mixed || k9 > 8)) compare_sort(base, a + i, j - i);
        i = j;
    }
}

/* Sort a bucket a[0, n) of entries sharing their top prefix byte, t[0, n)
 * the other buffer.  An LSD pass per varying byte is 7 passes over
 * random keys, where 2 decide almost everything: so when more than 3 bytes
 * vary, the bucket is sorted by the 2 highest varying ones, and then each
 * run of entries equal down to them by the bytes below: a short run (the
 * only kind random keys leave: a 2.5M-entry bucket's runs hold 1 or 2)
 * by insertion, a long one by the LSD passes.  With 3 or fewer the LSD
 * passes are as cheap, and keys of a narrow range (group_by_key's 1M
 * keys: 3 bytes vary) would leave long runs, each a sort of its own. */
static void radix_bucket(const uint8_t *base, es_ent *a, es_ent *t, size_t n, int flat) {
    int d[7], nd = varying_bytes(a, n, d);
    if (nd <= 3) { /* as many passes either way, or one fewer */
        radix_lsd_by(a, t, n, d, nd);
        if (!flat) sort_ties(base, a, n);
        return;
    }
    radix_lsd_by(a, t, n, d, 2); /* two passes: back in a */
    int sh = 8 * d[1];
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        uint64_t top = a[i].prefix >> sh;
        while (j < n && a[j].prefix >> sh == top) j++;
        if (j - i <= RADIX_SMALL) {
            if (j - i > 1) small_sort(base, a + i, j - i, flat); /* decides ties too */
        } else {
            radix_lsd(a + i, t + i, j - i);
            if (!flat) sort_ties(base, a + i, j - i);
        }
        i = j;
    }
}

/* Sort entries ascending.  With tmp (n entries) a radix sort on the
 * prefix: the top byte splits the entries into 256 buckets (one pass over
 * memory), each bucket -- cache-sized for big inputs -- is sorted by the
 * other seven bytes (radix_bucket), and runs of equal prefixes whose order
 * the prefix does not decide (keys over 8 bytes, or of different lengths)
 * are sorted by comparisons.  Without tmp, or for few entries, a comparison sort.
 * Flat entries are sorted by their prefix alone. */
static void sort_ents(const uint8_t *base, es_ent *a, es_ent *tmp, size_t n, int flat) {
    if (!tmp || n < 4 * RADIX_SMALL) {
        small_sort(base, a, n, flat);
        return;
    }
    size_t cnt[256] = {0}, start[256];
    for (size_t i = 0; i < n; i++) cnt[a[i].prefix >> 56]++;
    size_t sum = 0;
    for (int b = 0; b < 256; b++) {
        start[b] = sum;
        sum += cnt[b];
    }
    size_t pos[256];
    memcpy(pos, start, sizeof pos);
    for (size_t i = 0; i < n; i++) tmp[pos[a[i].prefix >> 56]++] = a[i];
    memcpy(a, tmp, n * sizeof *a);
    for (int b = 0; b < 256; b++) {
        size_t k = cnt[b];
        if (k < 2) continue;
        es_ent *x = a + start[b];
        if (k < RADIX_SMALL) {
            small_sort(base, x, k, flat); /* decides ties too */
            continue;
        }
        radix_bucket(base, x, tmp + start[b], k, flat);
    }
}

/* ----------------------------------------------------------------- extsort */

void es_init(extsort *s, const char *spill_dir, size_t budget, int descending, bf_codec codec, size_t block_bytes) {
    memset(s, 0, sizeof *s);
    s->budget = budget;
    s->descending = descending;
    s->flat = 1;
    s->fk = s->fw = -1;
    es_runfile_init(&s->runs, spill_dir, codec, block_bytes);
}

static inline void ent_rec(const extsort *s, size_t i, em_rec *r) {
    if (s->flat) { /* sorted: the prefix holds the key's bytes again */
        const es_ent *e = &s->idx[i];
        r->key = &e->prefix;
        r->klen = (size_t)s->fk;
        r->val = &e->ref;
        r->vlen = (size_t)s->fw;
        return;
    }
    const uint8_t *p = s->arena.p + ent_off(&s->idx[i]);
    rec_get(p, s->arena.p + s->arena.len, r);
}

/* How far ahead the in-memory iteration fetches records. */
#define ES_AHEAD 32

/* In-memory records in output order (for the merger).  The records lie
 * across the arena in no order: fetch the one a few places on. */
static void mem_get(void *ctx, size_t i, em_rec *r) {
    extsort *s = ctx;
    size_t j = s->descending ? s->n - 1 - i : i;
    if (!s->flat && (s->descending ? j >= ES_AHEAD : j + ES_AHEAD < s->n))
        __builtin_prefetch(s->arena.p + ent_off(&s->idx[s->descending ? j - ES_AHEAD : j + ES_AHEAD]));
    ent_rec(s, j, r);
}

/* Sort the entries in memory: by radix when the other half can be had (it
 * is counted in the budget), else by comparisons. */
static void es_sort(extsort *s) {
    es_ent *tmp = NULL;
    s->tmpb.len = 0;
    if (s->n >= 4 * RADIX_SMALL && !bb_reserve(&s->tmpb, s->n * sizeof *tmp)) tmp = (es_ent *)s->tmpb.p;
    sort_ents(s->arena.p, s->idx, tmp, s->n, s->flat);
    if (s->flat) /* back to the key's bytes, for the records handed out */
        for (size_t i = 0; i < s->n; i++) s->idx[i].prefix = __builtin_bswap64(s->idx[i].prefix);
}

/* Room in the index for one more entry: 0 or EM_ENOMEM. */
static int idx_room(extsort *s) {
    if (s->n < s->cap) return 0;
    s->idxb.len = s->n * sizeof(es_ent);
    if (bb_reserve(&s->idxb, (s->cap ? s->cap : 1024) * sizeof(es_ent)))
        return em__seterr(EM_ENOMEM, "sort: out of memory");
    s->idx = (es_ent *)s->idxb.p;
    s->cap = s->idxb.cap / sizeof(es_ent);
    return 0;
}

/* A record that is not a pair of the flat entries' key and value widths
 * arrived: copy the flat entries' records into the arena and index them
 * as any other (their prefixes are already the general entries'). */
static int unflatten(extsort *s) {
    s->flat = 0;
    uint64_t k = 0, v = 0;
    size_t kw = s->fk < 0 ? 0 : (size_t)s->fk;
    em_rec r = {&k, kw, &v, s->fw < 0 ? 0 : (size_t)s->fw};
    if (bb_reserve(&s->arena, s->n * rec_encoded_size(&r))) return em__seterr(EM_ENOMEM, "sort: out of memory");
    for (size_t i = 0; i < s->n; i++) {
        es_ent *e = &s->idx[i];
        k = __builtin_bswap64(e->prefix);
        v = e->ref;
        e->ref = (uint64_t)s->arena.len | (uint64_t)kw << ES_OFF_BITS;
        s->arena.len += rec_put(s->arena.p + s->arena.len, &r);
    }
    return 0;
}

/* Bytes held, as the budget counts them: the records, and each index
 * entry twice (the radix sort's other half). */
static size_t held(const extsort *s) { return s->arena.len + 2 * s->n * sizeof(es_ent); }

/* Sort what is in memory and write it as one run. */
static int spill(extsort *s) {
    int rc;
    em_rec r;
    size_t mem = held(s);
    if (mem > s->peak) s->peak = mem;
    es_sort(s);
    if ((rc = es_runfile_begin(&s->runs))) return rc;
    for (size_t i = 0; i < s->n; i++) {
        mem_get(s, i, &r);
        if ((rc = es_runfile_add(&s->runs, &r))) return rc;
    }
    if ((rc = es_runfile_end(&s->runs))) return rc;
    tm_spilled(mem, es_runfile_last_bytes(&s->runs));
    s->n = 0;
    ebuf_reset(&s->arena);
    s->spills++;
    return 0;
}

int es_add(extsort *s, const em_rec *r) {
    size_t need = rec_encoded_size(r);
    const uint8_t *key = r->key ? r->key : r->val;
    size_t klen = r->key ? r->klen : r->vlen;
    int rc;
    if (s->flat) {
        if (s->fk < 0 && r->key && r->klen <= 8 && r->vlen <= 8) {
            s->fk = (int)r->klen;
            s->fw = (int)r->vlen;
        }
        if (r->key && r->klen == (size_t)s->fk && r->vlen == (size_t)s->fw) {
            if (s->n && 2 * (s->n + 1) * sizeof(es_ent) > s->budget && (rc = spill(s))) return rc;
            if ((rc = idx_room(s))) return rc;
            es_ent *e = &s->idx[s->n++];
            if (r->klen == 8) {
                memcpy(&e->prefix, r->key, 8);
            } else { /* zero padded, as a general entry's */
                e->prefix = 0;
                if (r->klen) memcpy(&e->prefix, r->key, r->klen);
            }
            e->prefix = __builtin_bswap64(e->prefix);
            if (r->vlen == 8) {
                memcpy(&e->ref, r->val, 8);
            } else {
                e->ref = 0;
                if (r->vlen) memcpy(&e->ref, r->val, r->vlen);
            }
            return 0;
        }
        if ((rc = unflatten(s))) return rc;
    }
    /* Each entry counts twice: the radix sort needs as much again. */
    if (s->n && s->arena.len + need + 2 * (s->n + 1) * sizeof(es_ent) > s->budget && (rc = spill(s))) return rc;
    if ((rc = idx_room(s))) return rc;
    if (bb_reserve(&s->arena, need)) return em__seterr(EM_ENOMEM, "sort: out of memory");
    if (s->arena.len >= (uint64_t)1 << ES_OFF_BITS) return em__seterr(EM_ETOOBIG, "sort: arena too large");
    es_ent *e = &s->idx[s->n++];
    uint64_t pre;
    if (klen >= 8) {
        memcpy(&pre, key, 8);
        pre = __builtin_bswap64(pre);
    } else {
        pre = 0;
        for (size_t i = 0; i < 8; i++) pre = pre << 8 | (i < klen ? key[i] : 0);
    }
    e->prefix = pre;
    e->ref = (uint64_t)s->arena.len | (uint64_t)(klen > 8 ? 9 : klen) << ES_OFF_BITS;
    s->arena.len += rec_put(s->arena.p + s->arena.len, r);
    return 0;
}

int es_finish(extsort *s) {
    es_sort(s);
    s->next = 0;
    if (!s->runs.nruns) return 0;
    s->merging = 1;
    return es_merger_open(&s->merger, &s->runs, mem_get, s, s->n, s->descending);
}

int es_next(extsort *s, em_rec *r) {
    if (s->merging) return es_merger_next(&s->merger, r);
    if (s->next >= s->n) return 0;
    mem_get(s, s->next++, r);
    return 1;
}

void es_free(extsort *s) {
    tm_peak(held(s) > s->peak ? held(s) : s->peak);
    if (s->merging) es_merger_free(&s->merger);
    es_runfile_free(&s->runs);
    bb_free(&s->arena);
    bb_free(&s->idxb);
    bb_free(&s->tmpb);
    memset(s, 0, sizeof *s);
    s->runs.fd = -1;
}
