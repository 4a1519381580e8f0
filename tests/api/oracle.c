/*
 * oracle.c -- the expected-records set and the multiset comparison of
 * oracle.h.  A want_set keeps its records' bytes in one growing arena and
 * an entry (offsets, lengths, plain or pair) per record; a comparison
 * takes views of both sides, sorts them, and merges.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"

typedef struct {
    size_t koff, klen, voff, vlen;
    int pair;
} want_ent;

struct want_set {
    unsigned char *arena;
    size_t used, cap;
    want_ent *ent;
    size_t n, ncap;
    int oom; /* an allocation failed: the set is incomplete */
};

/* One record seen from either side: borrowed bytes. */
typedef struct {
    const unsigned char *k, *v;
    size_t klen, vlen;
    int pair;
} rview;

want_set *want_new(void) { return calloc(1, sizeof(want_set)); }

void want_free(want_set *w) {
    if (!w) return;
    free(w->arena);
    free(w->ent);
    free(w);
}

size_t want_count(const want_set *w) { return w ? w->n : 0; }

/* Copy len bytes into the arena; their offset, or (size_t)-1 on failure. */
static size_t arena_put(want_set *w, const void *p, size_t len) {
    if (w->used + len > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->used + len) cap *= 2;
        unsigned char *a = realloc(w->arena, cap);
        if (!a) return (size_t)-1;
        w->arena = a;
        w->cap = cap;
    }
    size_t off = w->used;
    if (len) memcpy(w->arena + off, p, len);
    w->used += len;
    return off;
}

void want_bytes(want_set *w, const void *key, size_t klen, const void *val, size_t vlen) {
    if (!w || w->oom) return;
    if (w->n == w->ncap) {
        size_t ncap = w->ncap ? w->ncap * 2 : 64;
        want_ent *e = realloc(w->ent, ncap * sizeof *e);
        if (!e) {
            w->oom = 1;
            return;
        }
        w->ent = e;
        w->ncap = ncap;
    }
    want_ent e = {0, key ? klen : 0, 0, vlen, key != NULL};
    e.koff = arena_put(w, key, e.klen);
    e.voff = e.koff == (size_t)-1 ? (size_t)-1 : arena_put(w, val, vlen);
    if (e.voff == (size_t)-1) {
        w->oom = 1;
        return;
    }
    w->ent[w->n++] = e;
}

void want_i64(want_set *w, int64_t v) {
    unsigned char b[8];
    em_i64_enc(v, b);
    want_bytes(w, NULL, 0, b, 8);
}

void want_pair_i64(want_set *w, int64_t k, int64_t v) {
    unsigned char kb[8], vb[8];
    em_i64_enc(k, kb);
    em_i64_enc(v, vb);
    want_bytes(w, kb, 8, vb, 8);
}

want_set *want_range(int64_t n, int64_t (*f)(int64_t)) {
    want_set *w = want_new();
    for (int64_t i = 0; w && i < n; i++) want_i64(w, f ? f(i) : i);
    return w;
}

want_set *want_range_text(int64_t n) {
    want_set *w = want_new();
    for (int64_t i = 0; w && i < n; i++) {
        char t[32];
        int len = snprintf(t, sizeof t, "%lld", (long long)i);
        want_bytes(w, NULL, 0, t, (size_t)len);
    }
    return w;
}

want_set *want_mod_sums(int64_t n, int64_t m) {
    want_set *w = want_new();
    for (int64_t k = 0; w && k < m && k < n; k++) {
        int64_t s = 0;
        for (int64_t v = k; v < n; v += m) s += v;
        want_pair_i64(w, k, s);
    }
    return w;
}

want_set *want_mod_pairs(int64_t n, int64_t m) {
    want_set *w = want_new();
    for (int64_t v = 0; w && v < n; v++) want_pair_i64(w, v % m, v);
    return w;
}

/* Byte strings in memcmp order, a prefix before the longer string. */
static int bytes_cmp(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen) {
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c) return c;
    return alen < blen ? -1 : alen > blen;
}

/* Plain before pair, then the key, then the value. */
static int key_cmp(const rview *a, const rview *b) {
    if (a->pair != b->pair) return a->pair ? 1 : -1;
    return bytes_cmp(a->k, a->klen, b->k, b->klen);
}

static int rview_cmp(const void *pa, const void *pb) {
    const rview *a = pa, *b = pb;
    int c = key_cmp(a, b);
    return c ? c : bytes_cmp(a->v, a->vlen, b->v, b->vlen);
}

/* One field: an int64 when 8 bytes, else a quoted string with escapes
 * (at most 40 bytes shown). */
static void print_field(const unsigned char *p, size_t len) {
    if (len == 8) {
        fprintf(stderr, "%lld", (long long)em_i64_dec(p));
        return;
    }
    fputc('"', stderr);
    for (size_t i = 0; i < len && i < 40; i++) {
        unsigned char ch = p[i];
        if (ch == '"' || ch == '\\')
            fprintf(stderr, "\\%c", ch);
        else if (ch >= 0x20 && ch < 0x7f)
            fputc(ch, stderr);
        else
            fprintf(stderr, "\\x%02x", ch);
    }
    fputc('"', stderr);
    if (len > 40) fprintf(stderr, "... (%zu bytes)", len);
}

static void print_rec(const rview *r) {
    if (r->pair) {
        fputc('(', stderr);
        print_field(r->k, r->klen);
        fputs(", ", stderr);
        print_field(r->v, r->vlen);
        fputc(')', stderr);
    } else {
        print_field(r->v, r->vlen);
    }
}

/* Print one difference when fewer than 5 were printed; count it. */
static void diff(const char *what, size_t *ndiff, const char *kind, const rview *a, const rview *b) {
    if ((*ndiff)++ == 0) fprintf(stderr, "  %s: first differences:\n", what);
    if (*ndiff > 5) return;
    fprintf(stderr, "    %s ", kind);
    print_rec(a);
    if (b) {
        fputs(", got ", stderr);
        print_field(b->v, b->vlen);
    }
    fputc('\n', stderr);
}

int expect_multiset(em_batch *got, const want_set *w, const char *what) {
    if (!what) what = "result";
    if (!got) {
        fprintf(stderr, "  %s: no batch\n", what);
        return 0;
    }
    if (!w || w->oom) {
        fprintf(stderr, "  %s: the expected set is incomplete (out of memory)\n", what);
        return 0;
    }
    size_t ng = em_batch_count(got), nw = w->n;
    rview *gv = malloc((ng ? ng : 1) * sizeof *gv), *wv = malloc((nw ? nw : 1) * sizeof *wv);
    if (!gv || !wv) {
        fprintf(stderr, "  %s: out of memory comparing %zu and %zu records\n", what, ng, nw);
        free(gv);
        free(wv);
        return 0;
    }
    size_t pos = 0, i = 0;
    em_rec r;
    while (i < ng && em_batch_next(got, &pos, &r) == 1) {
        gv[i] = (rview){r.key, r.val, r.key ? r.klen : 0, r.vlen, r.key != NULL};
        i++;
    }
    ng = i; /* what the batch yields, should its count disagree */
    for (i = 0; i < nw; i++) {
        const want_ent *e = &w->ent[i];
        wv[i] = (rview){w->arena + e->koff, w->arena + e->voff, e->klen, e->vlen, e->pair};
    }
    qsort(gv, ng, sizeof *gv, rview_cmp);
    qsort(wv, nw, sizeof *wv, rview_cmp);

    size_t a = 0, b = 0, ndiff = 0;
    while (a < nw || b < ng) {
        int c = a == nw ? 1 : b == ng ? -1 : rview_cmp(&wv[a], &gv[b]);
        if (c == 0) {
            a++, b++;
        } else if (a < nw && b < ng && wv[a].pair && key_cmp(&wv[a], &gv[b]) == 0 &&
                   !(a + 1 < nw && rview_cmp(&wv[a + 1], &gv[b]) == 0) &&
                   !(b + 1 < ng && rview_cmp(&wv[a], &gv[b + 1]) == 0)) {
            /* The same key with another value, neither side's next record
             * matching the other: one value changed. */
            diff(what, &ndiff, "differs: expected", &wv[a], &gv[b]);
            a++, b++;
        } else if (c < 0) {
            diff(what, &ndiff, "missing", &wv[a++], NULL);
        } else {
            diff(what, &ndiff, "extra  ", &gv[b++], NULL);
        }
    }
    if (ndiff) {
        if (ndiff > 5) fprintf(stderr, "    ... and %zu more differences\n", ndiff - 5);
        fprintf(stderr, "  %s: got %zu records, expected %zu\n", what, ng, nw);
    }
    free(gv);
    free(wv);
    return ndiff == 0;
}

int expect_multiset_take(em_batch *got, want_set *w, const char *what) {
    int ok = expect_multiset(got, w, what);
    want_free(w);
    return ok;
}

int expect_range(em_batch *got, int64_t n, int64_t (*f)(int64_t), const char *what) {
    return expect_multiset_take(got, want_range(n, f), what);
}

int expect_mod_sums(em_batch *got, int64_t n, int64_t m, const char *what) {
    return expect_multiset_take(got, want_mod_sums(n, m), what);
}

int expect_range_job(em_ctx *c, int64_t n, int parts, const char *what) {
    em_batch *b = NULL;
    int rc = em_collect(em_range(c, 0, n, 1, parts), &b);
    if (rc) {
        fprintf(stderr, "  %s: em_collect returned %d: %s\n", what, rc, em_errmsg());
        return 0;
    }
    int ok = expect_range(b, n, NULL, what);
    em_batch_free(b);
    return ok;
}
