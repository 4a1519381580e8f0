/*
 * extsort.c -- external sorting and k-way merging of sorted runs (see
 * extsort.h).
 *
 * Sorting works on index entries that carry the first 8 key bytes as a
 * big-endian integer: the order of most entries is decided by this prefix
 * alone.  A general entry (16 bytes) adds the key's length up to 9 and its
 * record's place in the arena; a flat entry (8 to 32 bytes) holds a
 * record of fixed-width key and value itself, so sorting never touches an
 * arena and the sorted records are read in order, not gathered from all
 * over memory.  As Spark's Tungsten sort does, entries are radix sorted on
 * the prefix (the top byte first into 256 buckets, then each bucket, small
 * enough for the cache, least significant byte first, skipping bytes all
 * its entries share); only runs of equal prefixes that the prefix does not
 * decide are then sorted by comparing whole keys (a flat entry's further
 * key words, a general entry's length and then its record's key), with an
 * introsort (quicksort with median of three, heapsort past a depth limit,
 * insertion sort for short ranges) whose comparison is inlined.  Entries
 * are always sorted ascending; descending order is produced by reading
 * them backwards, both when spilling a run and when yielding the
 * in-memory part.
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

/*
 * The index is an array of entries of w words (1 to ES_WORDS_MAX); word 0
 * of each is its prefix, or a packed entry's whole record.  A general
 * entry (w = 2) is the prefix and its ref: the record's arena offset in
 * the low ES_OFF_BITS bits, above them the key's length, or 9 for any key
 * longer than 8 bytes.  A flat entry holds its record (extsort.h).  Every
 * sorting function takes w as a constant and is inlined into one function
 * per width (sort_w1 to sort_w4), so copying an entry is a memcpy of a
 * constant size, which the compiler makes one or two vector moves, never a
 * call.
 */
#define ES_INLINE static inline __attribute__((always_inline))
#define AT(a, i) ((a) + (size_t)(i) * (size_t)w)

/* What orders entries beyond their prefixes. */
typedef struct es_order {
    const uint8_t *base; /* general entries: the arena */
    int flat;
    int kwords;          /* flat entries: the key's words */
} es_order;

static inline uint64_t ent_off(const uint64_t *e) { return e[1] & (((uint64_t)1 << ES_OFF_BITS) - 1); }
static inline unsigned ent_k9(const uint64_t *e) { return (unsigned)(e[1] >> ES_OFF_BITS); }

/* The key of a general entry's record (a plain record's value). */
static inline const uint8_t *ent_key(const uint8_t *base, const uint64_t *e, size_t *klen) {
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

ES_INLINE int ent_less(const es_order *o, const uint64_t *a, const uint64_t *b, const int w) {
    if (a[0] != b[0]) return a[0] < b[0];
    if (o->flat || w == 1) { /* the key's other words, as big-endian integers (one word: packed) */
        for (int i = 1; i < w && i < o->kwords; i++)
            if (a[i] != b[i]) return a[i] < b[i];
        return 0;
    }
    /* Equal prefixes and one key within 8 bytes: it is the other's start
     * (the prefix pads with zero bytes), so the shorter is smaller. */
    unsigned ka = ent_k9(a), kb = ent_k9(b);
    if (ka != kb || ka <= 8) return ka < kb;
    size_t la, lb;
    const uint8_t *x = ent_key(o->base, a, &la), *y = ent_key(o->base, b, &lb);
    return bytes_cmp(x, la, y, lb) < 0;
}

/* memcpy of a constant size: a move or two of vector registers. */
ES_INLINE void ent_copy(uint64_t *d, const uint64_t *s, const int w) { memcpy(d, s, (size_t)w * sizeof *d); }

ES_INLINE void ent_swap(uint64_t *a, uint64_t *b, const int w) {
    for (int i = 0; i < w; i++) {
        uint64_t t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

ES_INLINE void insertion_sort(const es_order *o, uint64_t *a, size_t n, const int w) {
    uint64_t v[ES_WORDS_MAX];
    for (size_t i = 1; i < n; i++) {
        ent_copy(v, AT(a, i), w);
        size_t j = i;
        for (; j > 0 && ent_less(o, v, AT(a, j - 1), w); j--) ent_copy(AT(a, j), AT(a, j - 1), w);
        ent_copy(AT(a, j), v, w);
    }
}

ES_INLINE void heap_down(const es_order *o, uint64_t *a, size_t n, size_t i, const int w) {
    for (;;) {
        size_t l = 2 * i + 1, big = i;
        if (l < n && ent_less(o, AT(a, big), AT(a, l), w)) big = l;
        if (l + 1 < n && ent_less(o, AT(a, big), AT(a, l + 1), w)) big = l + 1;
        if (big == i) return;
        ent_swap(AT(a, i), AT(a, big), w);
        i = big;
    }
}

ES_INLINE void heap_sort(const es_order *o, uint64_t *a, size_t n, const int w) {
    for (size_t i = n / 2; i-- > 0;) heap_down(o, a, n, i, w);
    for (size_t end = n; end-- > 1;) {
        ent_swap(AT(a, 0), AT(a, end), w);
        heap_down(o, a, end, 0, w);
    }
}

/* Quicksort with the median of three, heapsort past the depth limit,
 * insertion sort below 17 entries.  The larger side of each partition
 * waits on a stack while the smaller is sorted, so the stack holds at
 * most log2(n) ranges (and the function has no recursion to inline). */
ES_INLINE void compare_sort(const es_order *o, uint64_t *a, size_t n, const int w) {
    struct { uint64_t *a; size_t n; int depth; } st[64];
    int sp = 0, depth = 0;
    for (size_t k = n; k > 1; k >>= 1) depth += 2;
    for (;;) {
        while (n > 16) {
            if (depth-- <= 0) {
                heap_sort(o, a, n, w);
                n = 0;
                break;
            }
            size_t mid = n / 2;
            if (ent_less(o, AT(a, mid), AT(a, 0), w)) ent_swap(AT(a, mid), AT(a, 0), w);
            if (ent_less(o, AT(a, n - 1), AT(a, mid), w)) {
                ent_swap(AT(a, n - 1), AT(a, mid), w);
                if (ent_less(o, AT(a, mid), AT(a, 0), w)) ent_swap(AT(a, mid), AT(a, 0), w);
            }
            /* Hoare partition around the median's value: runs of equal keys
             * are split evenly instead of degrading to quadratic time. */
            uint64_t p[ES_WORDS_MAX];
            ent_copy(p, AT(a, mid), w);
            size_t i = (size_t)-1, j = n;
            for (;;) {
                do i++; while (ent_less(o, AT(a, i), p, w));
                do j--; while (ent_less(o, p, AT(a, j), w));
                if (i >= j) break;
                ent_swap(AT(a, i), AT(a, j), w);
            }
            size_t left = j + 1;
            if (left < n - left) {
                st[sp++] = (typeof(st[0])){AT(a, left), n - left, depth};
                n = left;
            } else {
                st[sp++] = (typeof(st[0])){a, left, depth};
                a = AT(a, left);
                n -= left;
            }
        }
        insertion_sort(o, a, n, w);
        if (!sp) return;
        sp--;
        a = st[sp].a;
        n = st[sp].n;
        depth = st[sp].depth;
    }
}

/* Below this many entries a bucket is sorted by comparisons. */
#define RADIX_SMALL 64

/* Which of the prefix bytes below the top one vary over a[0, n): their
 * numbers into d[], highest first; returns how many.  One pass of OR and
 * AND, which vectorizes: counting the values of all 7 bytes (7 increments
 * an entry) cost more than the passes they served. */
ES_INLINE int varying_bytes(const uint64_t *a, size_t n, int d[7], const int w) {
    uint64_t any = 0, all = ~(uint64_t)0;
    for (size_t i = 0; i < n; i++) {
        any |= AT(a, i)[0];
        all &= AT(a, i)[0];
    }
    int nd = 0;
    for (int k = 6; k >= 0; k--)
        if ((any ^ all) >> (8 * k) & 255) d[nd++] = k;
    return nd;
}

/* LSD radix sort of a[0, n) by the nd prefix bytes d[] (highest first),
 * using t[0, n) as the other buffer.  The result ends in a. */
ES_INLINE void radix_lsd_by(uint64_t *a, uint64_t *t, size_t n, const int *d, int nd, const int w) {
    size_t cnt[7][256];
    if (!nd) return;
    memset(cnt, 0, sizeof cnt[0] * (size_t)nd);
    for (size_t i = 0; i < n; i++) {
        uint64_t p = AT(a, i)[0];
        for (int k = 0; k < nd; k++) cnt[k][(p >> (8 * d[k])) & 255]++;
    }
    uint64_t *src = a, *dst = t;
    for (int k = nd - 1; k >= 0; k--) { /* the lowest byte first */
        size_t *c = cnt[k], sum = 0;
        int sh = 8 * d[k];
        for (int b = 0; b < 256; b++) {
            size_t m = c[b];
            c[b] = sum;
            sum += m;
        }
        for (size_t i = 0; i < n; i++) ent_copy(AT(dst, c[(AT(src, i)[0] >> sh) & 255]++), AT(src, i), w);
        uint64_t *x = src;
        src = dst;
        dst = x;
    }
    if (src != a) memcpy(a, src, n * (size_t)w * sizeof *a);
}

/* LSD radix sort of a[0, n) by the prefix bytes below the top one that
 * vary (bytes equal in every entry are skipped).  The result ends in a. */
ES_INLINE void radix_lsd(uint64_t *a, uint64_t *t, size_t n, const int w) {
    int d[7], nd = varying_bytes(a, n, d, w);
    radix_lsd_by(a, t, n, d, nd, w);
}

/* Whether equal prefixes can hold entries out of order: general entries,
 * and flat ones whose keys are longer than their prefix. */
ES_INLINE int ties_matter(const es_order *o, const int w) { return w > 1 && (!o->flat || o->kwords > 1); }

ES_INLINE void small_sort(const es_order *o, uint64_t *a, size_t n, const int w) {
    if (o->flat && n <= 4 * RADIX_SMALL) insertion_sort(o, a, n, w);
    else compare_sort(o, a, n, w);
}

/* Runs of equal prefixes in sorted a[0, n) whose order the prefix does
 * not decide (keys over 8 bytes, or of different lengths) sorted by
 * comparisons. */
ES_INLINE void sort_ties(const es_order *o, uint64_t *a, size_t n, const int w) {
    if (!ties_matter(o, w)) return;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        uint64_t pre = AT(a, i)[0];
        unsigned k9 = o->flat ? 9 : ent_k9(AT(a, i)), mixed = 0;
        for (; j < n && AT(a, j)[0] == pre; j++)
            if (!o->flat) mixed |= ent_k9(AT(a, j)) != k9;
        if (j - i > 1 && (mixed || k9 > 8)) compare_sort(o, AT(a, i), j - i, w);
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
ES_INLINE void radix_bucket(const es_order *o, uint64_t *a, uint64_t *t, size_t n, const int w) {
    int d[7], nd = varying_bytes(a, n, d, w);
    if (nd <= 3) { /* as many passes either way, or one fewer */
        radix_lsd_by(a, t, n, d, nd, w);
        sort_ties(o, a, n, w);
        return;
    }
    radix_lsd_by(a, t, n, d, 2, w); /* two passes: back in a */
    int sh = 8 * d[1];
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        uint64_t top = AT(a, i)[0] >> sh;
        while (j < n && AT(a, j)[0] >> sh == top) j++;
        if (j - i <= RADIX_SMALL) {
            if (j - i > 1) small_sort(o, AT(a, i), j - i, w); /* decides ties too */
        } else {
            radix_lsd(AT(a, i), AT(t, i), j - i, w);
            sort_ties(o, AT(a, i), j - i, w);
        }
        i = j;
    }
}

/* Sort entries ascending.  With tmp (n entries) a radix sort on the
 * prefix: the top byte splits the entries into 256 buckets (one pass over
 * memory), each bucket -- cache-sized for big inputs -- is sorted by the
 * other seven bytes (radix_bucket), and runs of equal prefixes whose order
 * the prefix does not decide (keys over 8 bytes, or of different lengths)
 * are sorted by comparisons.  Without tmp, or for few entries, a comparison sort. */
ES_INLINE void sort_ents(const es_order *o, uint64_t *a, uint64_t *tmp, size_t n, const int w) {
    if (!tmp || n < 4 * RADIX_SMALL) {
        small_sort(o, a, n, w);
        return;
    }
    size_t cnt[256] = {0}, start[256];
    for (size_t i = 0; i < n; i++) cnt[AT(a, i)[0] >> 56]++;
    size_t sum = 0;
    for (int b = 0; b < 256; b++) {
        start[b] = sum;
        sum += cnt[b];
    }
    size_t pos[256];
    memcpy(pos, start, sizeof pos);
    for (size_t i = 0; i < n; i++) ent_copy(AT(tmp, pos[AT(a, i)[0] >> 56]++), AT(a, i), w);
    memcpy(a, tmp, n * (size_t)w * sizeof *a);
    for (int b = 0; b < 256; b++) {
        size_t k = cnt[b];
        if (k < 2) continue;
        uint64_t *x = AT(a, start[b]);
        if (k < RADIX_SMALL) {
            small_sort(o, x, k, w); /* decides ties too */
            continue;
        }
        radix_bucket(o, x, AT(tmp, start[b]), k, w);
    }
}

static void sort_w1(const es_order *o, uint64_t *a, uint64_t *t, size_t n) { sort_ents(o, a, t, n, 1); }
static void sort_w2(const es_order *o, uint64_t *a, uint64_t *t, size_t n) { sort_ents(o, a, t, n, 2); }
static void sort_w3(const es_order *o, uint64_t *a, uint64_t *t, size_t n) { sort_ents(o, a, t, n, 3); }
static void sort_w4(const es_order *o, uint64_t *a, uint64_t *t, size_t n) { sort_ents(o, a, t, n, 4); }

/* ----------------------------------------------------------------- extsort */

void es_init(extsort *s, const char *spill_dir, size_t budget, int descending, bf_codec codec, size_t block_bytes) {
    memset(s, 0, sizeof *s);
    s->budget = budget;
    s->descending = descending;
    s->flat = 1;
    s->fk = s->fw = -1;
    s->ew = 2;
    s->kwords = 1;
    es_runfile_init(&s->runs, spill_dir, codec, block_bytes);
}

static inline void ent_rec(const extsort *s, size_t i, em_rec *r) {
    const uint64_t *e = s->idx + i * (size_t)s->ew;
    if (s->flat) { /* sorted: the key words hold the key's bytes again */
        r->key = e;
        r->klen = s->varkey ? ((const uint8_t *)e)[8 * s->kwords - 1] : (size_t)s->fk;
        /* a packed entry's value follows the key in its one word */
        r->val = s->ew == 1 ? (const void *)((const uint8_t *)e + s->fk) : (const void *)(e + s->kwords);
        r->vlen = (size_t)s->fw;
        return;
    }
    const uint8_t *p = s->arena.p + ent_off(e);
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
        __builtin_prefetch(s->arena.p + ent_off(s->idx + 2 * (s->descending ? j - ES_AHEAD : j + ES_AHEAD)));
    ent_rec(s, j, r);
}

/* Sort the entries in memory: by radix when the other half can be had (it
 * is counted in the budget), else by comparisons. */
static void es_sort(extsort *s) {
    uint64_t *tmp = NULL;
    size_t ebytes = (size_t)s->ew * sizeof *s->idx;
    s->tmpb.len = 0;
    if (s->n >= 4 * RADIX_SMALL && !bb_reserve(&s->tmpb, s->n * ebytes)) tmp = (uint64_t *)s->tmpb.p;
    es_order o = {s->arena.p, s->flat, s->kwords};
    if (s->ew == 1) sort_w1(&o, s->idx, tmp, s->n);
    else if (s->ew == 2) sort_w2(&o, s->idx, tmp, s->n);
    else if (s->ew == 3) sort_w3(&o, s->idx, tmp, s->n);
    else sort_w4(&o, s->idx, tmp, s->n);
    if (s->flat) /* back to the key's bytes, for the records handed out */
        for (size_t i = 0; i < s->n; i++) {
            uint64_t *e = s->idx + i * (size_t)s->ew;
            for (int k = 0; k < s->kwords; k++) e[k] = __builtin_bswap64(e[k]);
        }
}

/* Room in the index for one more entry: 0 or EM_ENOMEM. */
static int idx_room(extsort *s) {
    if (s->n < s->cap) return 0;
    size_t ebytes = (size_t)s->ew * sizeof *s->idx;
    s->idxb.len = s->n * ebytes;
    if (bb_reserve(&s->idxb, (s->cap ? s->cap : 1024) * ebytes)) return em__seterr(EM_ENOMEM, "sort: out of memory");
    s->idx = (uint64_t *)s->idxb.p;
    s->cap = s->idxb.cap / ebytes;
    return 0;
}

/* The flat shape a first record sets, if it has one: 1 with the key's and
 * value's widths and the entry's words set, else 0.  A key and value of 8
 * bytes together are packed into one word (extsort.h). */
static int flat_shape(extsort *s, const em_rec *r) {
    if (!r->key || r->klen > 8 * ES_WORDS_MAX || r->vlen > 8 * ES_WORDS_MAX) return 0;
    int kw = r->klen <= 8 ? 1 : (int)(r->klen + 7) / 8, vw = (int)(r->vlen + 7) / 8;
    if (kw + vw > ES_WORDS_MAX) return 0;
    s->fk = (int)r->klen;
    s->fw = (int)r->vlen;
    s->kwords = kw;
    s->ew = r->klen + r->vlen <= 8 ? 1 : kw + vw < 2 ? 2 : kw + vw;
    return 1;
}

/* Packed entries (one word: key and value bytes, big-endian) rewritten as
 * entries of two words, the key's and the value's, from the back, each
 * after its own is read: before their keys vary or they leave the flat
 * form, which both start from that layout.  0 or EM_ENOMEM. */
static int unpack(extsort *s) {
    s->idxb.len = s->n * sizeof *s->idx;
    if (bb_reserve(&s->idxb, s->n * sizeof *s->idx)) return em__seterr(EM_ENOMEM, "sort: out of memory");
    s->idx = (uint64_t *)s->idxb.p;
    /* the key's bytes are the word's high fk bytes */
    uint64_t kmask = s->fk ? ~(uint64_t)0 << (8 * (8 - s->fk)) : 0;
    for (size_t i = s->n; i-- > 0;) {
        uint64_t w = s->idx[i], b = __builtin_bswap64(w), v = 0;
        if (s->fw) memcpy(&v, (const uint8_t *)&b + s->fk, (size_t)s->fw);
        s->idx[2 * i] = w & kmask;
        s->idx[2 * i + 1] = v;
    }
    s->ew = 2;
    s->cap = s->idxb.cap / (2 * sizeof *s->idx);
    return 0;
}

/* Flat entry i copied into e (its key words as big-endian integers, with
 * the length byte cleared when keys vary): returns its key's length. */
static size_t flat_read(const extsort *s, size_t i, uint64_t e[ES_WORDS_MAX]) {
    memcpy(e, s->idx + i * (size_t)s->ew, (size_t)s->ew * sizeof *e);
    if (!s->varkey) return (size_t)s->fk;
    size_t len = (size_t)(e[s->kwords - 1] & 255);
    e[s->kwords - 1] &= ~(uint64_t)255;
    return len;
}

/* A key of another length than the flat entries' arrived with a value of
 * their width: make the keys' lengths vary (extsort.h), widening the
 * entries where the key needs more words.  1 when the record fits the
 * entries now, 0 when it cannot (the caller unflattens), EM_ENOMEM.  The
 * entries are rewritten from the back, each after its own is read: an
 * entry never moves below its place. */
static int vary_keys(extsort *s, size_t klen) {
    int vw = (int)(s->fw + 7) / 8, kw = s->kwords;
    size_t longest = klen > (size_t)s->fk || s->varkey ? klen : (size_t)s->fk;
    if (longest >= 8 * (size_t)(ES_WORDS_MAX - vw)) return 0;
    if (!s->varkey && (size_t)s->fk >= 8 * (size_t)kw) kw++; /* the length byte needs a byte of padding */
    while (longest >= 8 * (size_t)kw) kw++;
    int ew = kw + vw < 2 ? 2 : kw + vw;
    if (ew > s->ew) {
        s->idxb.len = s->n * (size_t)s->ew * sizeof *s->idx;
        if (bb_reserve(&s->idxb, s->n * (size_t)(ew - s->ew) * sizeof *s->idx))
            return em__seterr(EM_ENOMEM, "sort: out of memory");
        s->idx = (uint64_t *)s->idxb.p;
    }
    for (size_t i = s->n; i-- > 0;) {
        uint64_t e[ES_WORDS_MAX], *d = s->idx + i * (size_t)ew;
        uint64_t len = flat_read(s, i, e);
        for (int k = 0; k < ew; k++) d[k] = 0;
        for (int k = 0; k < s->kwords; k++) d[k] = e[k];
        for (int k = 0; k < vw; k++) d[kw + k] = e[s->kwords + k];
        d[kw - 1] |= len;
    }
    s->varkey = 1;
    s->kwords = kw;
    s->ew = ew;
    s->cap = s->idxb.cap / ((size_t)ew * sizeof *s->idx);
    return 1;
}

/* A record that is not a pair of the flat entries' key and value widths
 * arrived: copy the flat entries' records into the arena and index them
 * as general entries (2 words), written over the flat ones (ew words)
 * from the front, each after its own is read. */
static int unflatten(extsort *s) {
    s->flat = 0;
    size_t vl = s->fw < 0 ? 0 : (size_t)s->fw, most = 8 * ES_WORDS_MAX;
    int kwords = s->kwords;
    uint64_t e[ES_WORDS_MAX];
    em_rec r = {e, most, e + kwords, vl};
    if (bb_reserve(&s->arena, s->n * rec_encoded_size(&r))) return em__seterr(EM_ENOMEM, "sort: out of memory");
    for (size_t i = 0; i < s->n; i++) {
        r.klen = flat_read(s, i, e);
        uint64_t prefix = e[0]; /* the key zero padded: a general entry's prefix */
        for (int k = 0; k < kwords; k++) e[k] = __builtin_bswap64(e[k]);
        s->idx[2 * i] = prefix;
        s->idx[2 * i + 1] = (uint64_t)s->arena.len | (uint64_t)(r.klen > 8 ? 9 : r.klen) << ES_OFF_BITS;
        s->arena.len += rec_put(s->arena.p + s->arena.len, &r);
    }
    s->varkey = 0;
    s->ew = 2;
    s->cap = s->idxb.cap / (2 * sizeof *s->idx);
    return 0;
}

/* Bytes held, as the budget counts them: the records, and each index
 * entry twice (the radix sort's other half). */
static size_t held(const extsort *s) { return s->arena.len + 2 * s->n * (size_t)s->ew * sizeof *s->idx; }

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

/* Add a flat record (of the flat shape). */
static int add_flat(extsort *s, const em_rec *r) {
    int rc;
    size_t ebytes = (size_t)s->ew * sizeof *s->idx;
    if (s->n && 2 * (s->n + 1) * ebytes > s->budget && (rc = spill(s))) return rc;
    if ((rc = idx_room(s))) return rc;
    uint64_t *e = s->idx + s->n++ * (size_t)s->ew;
    if (s->ew == 1) { /* packed: keys with empty or short values */
        uint64_t b = 0;
        if (r->klen) memcpy(&b, r->key, r->klen);
        if (r->vlen) memcpy((uint8_t *)&b + r->klen, r->val, r->vlen);
        e[0] = __builtin_bswap64(b);
        return 0;
    }
    if (s->ew == 2 && s->kwords == 1 && !s->varkey) { /* int64 and double pairs, narrower */
        if (r->klen == 8) {
            memcpy(&e[0], r->key, 8);
        } else { /* zero padded, as a general entry's */
            e[0] = 0;
            if (r->klen) memcpy(&e[0], r->key, r->klen);
        }
        e[0] = __builtin_bswap64(e[0]);
        if (r->vlen == 8) {
            memcpy(&e[1], r->val, 8);
        } else {
            e[1] = 0;
            if (r->vlen) memcpy(&e[1], r->val, r->vlen);
        }
        return 0;
    }
    memset(e, 0, ebytes);
    memcpy(e, r->key, r->klen);
    if (r->vlen) memcpy(e + s->kwords, r->val, r->vlen);
    for (int k = 0; k < s->kwords; k++) e[k] = __builtin_bswap64(e[k]);
    if (s->varkey) e[s->kwords - 1] |= r->klen;
    return 0;
}

int es_add(extsort *s, const em_rec *r) {
    int rc;
    if (s->flat) {
        if (r->key && r->vlen == (size_t)s->fw &&
            (s->varkey ? r->klen < 8 * (size_t)s->kwords : r->klen == (size_t)s->fk))
            return add_flat(s, r);
        if (s->fk < 0 && flat_shape(s, r)) return add_flat(s, r);
        if (s->ew == 1 && (rc = unpack(s))) return rc;
        if (r->key && s->fk >= 0 && r->vlen == (size_t)s->fw && (rc = vary_keys(s, r->klen))) {
            if (rc < 0) return rc;
            return add_flat(s, r);
        }
        if ((rc = unflatten(s))) return rc;
    }
    size_t need = rec_encoded_size(r);
    const uint8_t *key = r->key ? r->key : r->val;
    size_t klen = r->key ? r->klen : r->vlen;
    /* Each entry counts twice: the radix sort needs as much again. */
    if (s->n && s->arena.len + need + 2 * (s->n + 1) * 2 * sizeof *s->idx > s->budget && (rc = spill(s))) return rc;
    if ((rc = idx_room(s))) return rc;
    if (bb_reserve(&s->arena, need)) return em__seterr(EM_ENOMEM, "sort: out of memory");
    if (s->arena.len >= (uint64_t)1 << ES_OFF_BITS) return em__seterr(EM_ETOOBIG, "sort: arena too large");
    uint64_t *e = s->idx + 2 * s->n++;
    uint64_t pre;
    if (klen >= 8) {
        memcpy(&pre, key, 8);
        pre = __builtin_bswap64(pre);
    } else {
        pre = 0;
        for (size_t i = 0; i < 8; i++) pre = pre << 8 | (i < klen ? key[i] : 0);
    }
    e[0] = pre;
    e[1] = (uint64_t)s->arena.len | (uint64_t)(klen > 8 ? 9 : klen) << ES_OFF_BITS;
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
