/*
 * memout.c -- small map outputs kept in memory (see memout.h): a chained
 * hash table of reference-counted images under one mutex.
 */
#include <pthread.h>
#include <stdlib.h>

#include "bigbuf.h"
#include "ember.h"
#include "memout.h"

struct memout_store {
    pthread_mutex_t mu;
    size_t max_each, max_total;
    bf_codec codec;
    size_t bytes;   /* reserved or held */
    size_t last;    /* buffer bytes of the output put last */
    int64_t count;  /* entries in the table */
    memout **b;     /* buckets */
    size_t nb;      /* a power of two */
};

static size_t slot_of(const memout_store *s, uint32_t sid, uint32_t map, uint64_t attempt) {
    uint64_t h = ((uint64_t)sid << 32 | map) * 0x9e3779b97f4a7c15ULL ^ attempt * 0xc2b2ae3d27d4eb4fULL;
    return (size_t)(h >> 32) & (s->nb - 1);
}

memout_store *memout_new(size_t max_each, size_t max_total, bf_codec codec) {
    memout_store *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->nb = 256;
    if (!(s->b = calloc(s->nb, sizeof *s->b))) {
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    s->max_each = max_each;
    s->max_total = max_total;
    s->codec = codec;
    return s;
}

static void entry_free(memout *m) {
    for (int i = 0; i < m->nbufs; i++) bb_free(&m->bufs[i]);
    free(m->bufs);
    free(m->ext);
    free(m->first);
    free(m);
}

void memout_free(memout_store *s) {
    if (!s) return;
    for (size_t i = 0; i < s->nb; i++)
        for (memout *m = s->b[i], *n; m; m = n) {
            n = m->next;
            entry_free(m);
        }
    free(s->b);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int memout_reserve(memout_store *s, size_t len) {
    if (!s || !s->max_each || len > s->max_each) return 0;
    pthread_mutex_lock(&s->mu);
    int ok = len <= s->max_total && s->bytes <= s->max_total - len;
    if (ok) s->bytes += len;
    pthread_mutex_unlock(&s->mu);
    return ok;
}

int memout_codec(memout_store *s, bf_codec *c) {
    if (!s || !s->max_each) return 0;
    pthread_mutex_lock(&s->mu);
    int room = s->bytes < s->max_total;
    pthread_mutex_unlock(&s->mu);
    if (room) *c = s->codec;
    return room;
}

void memout_unreserve(memout_store *s, size_t len) {
    pthread_mutex_lock(&s->mu);
    s->bytes -= len;
    pthread_mutex_unlock(&s->mu);
}

/* Double the buckets when the chains grow long (under the lock); staying
 * as is when memory is short is only slower. */
static void grow(memout_store *s) {
    size_t nb = s->nb * 2;
    memout **b = calloc(nb, sizeof *b);
    if (!b) return;
    memout **old = s->b;
    size_t onb = s->nb;
    s->b = b;
    s->nb = nb;
    for (size_t i = 0; i < onb; i++)
        for (memout *m = old[i], *n; m; m = n) {
            n = m->next;
            size_t k = slot_of(s, m->shuffle_id, m->map, m->attempt);
            m->next = b[k];
            b[k] = m;
        }
    free(old);
}

int memout_put(memout_store *s, uint32_t shuffle_id, uint32_t map, uint64_t attempt, int nparts, int nbufs,
               ebuf *bufs, memout_ext *ext, size_t *first, size_t len) {
    memout *m = calloc(1, sizeof *m);
    if (!m) return EM_ENOMEM;
    /* Kept long: a reused mapping may be far larger than its bytes. */
    for (int i = 0; i < nbufs; i++) bb_shrink(&bufs[i]);
    m->shuffle_id = shuffle_id;
    m->map = map;
    m->attempt = attempt;
    m->nparts = nparts;
    m->nbufs = nbufs;
    m->bufs = bufs;
    m->ext = ext;
    m->first = first;
    m->len = len;
    size_t blen = 0;
    for (int i = 0; i < nbufs; i++) blen += bufs[i].len;
    pthread_mutex_lock(&s->mu);
    s->last = blen;
    if ((size_t)s->count >= s->nb) grow(s);
    size_t k = slot_of(s, shuffle_id, map, attempt);
    m->next = s->b[k];
    s->b[k] = m;
    s->count++;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

memout *memout_get(memout_store *s, uint32_t shuffle_id, uint32_t map, uint64_t attempt) {
    if (!s) return NULL;
    pthread_mutex_lock(&s->mu);
    memout *m = s->b[slot_of(s, shuffle_id, map, attempt)];
    while (m && !(m->shuffle_id == shuffle_id && m->map == map && m->attempt == attempt)) m = m->next;
    if (m) m->refs++;
    pthread_mutex_unlock(&s->mu);
    return m;
}

/* Let go of an entry already out of the table (under the lock): freed,
 * with its bytes, once no reader holds it. */
static void drop(memout_store *s, memout *m) {
    m->removed = 1;
    if (m->refs) return;
    s->bytes -= m->len;
    entry_free(m);
}

void memout_release(memout_store *s, memout *m) {
    pthread_mutex_lock(&s->mu);
    if (--m->refs == 0 && m->removed) drop(s, m);
    pthread_mutex_unlock(&s->mu);
}

void memout_remove(memout_store *s, uint32_t shuffle_id, uint32_t map, uint64_t attempt) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    memout **pp = &s->b[slot_of(s, shuffle_id, map, attempt)];
    while (*pp && !((*pp)->shuffle_id == shuffle_id && (*pp)->map == map && (*pp)->attempt == attempt))
        pp = &(*pp)->next;
    memout *m = *pp;
    if (m) {
        *pp = m->next;
        s->count--;
        drop(s, m);
    }
    pthread_mutex_unlock(&s->mu);
}

void memout_remove_shuffle(memout_store *s, uint32_t shuffle_id) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->nb && s->count; i++)
        for (memout **pp = &s->b[i]; *pp;) {
            memout *m = *pp;
            if (m->shuffle_id != shuffle_id) {
                pp = &m->next;
                continue;
            }
            *pp = m->next;
            s->count--;
            drop(s, m);
        }
    pthread_mutex_unlock(&s->mu);
}

size_t memout_last_bytes(memout_store *s) {
    if (!s) return 0;
    pthread_mutex_lock(&s->mu);
    size_t n = s->last;
    pthread_mutex_unlock(&s->mu);
    return n;
}

uint64_t memout_seg_len(const memout *m, int r) {
    uint64_t n = 0;
    for (size_t e = m->first[r]; e < m->first[r + 1]; e++) n += m->ext[e].len;
    return n;
}

int memout_corrupt(memout_store *s, uint32_t shuffle_id, uint32_t map, uint64_t attempt, size_t at) {
    memout *m = memout_get(s, shuffle_id, map, attempt);
    if (!m) return 0;
    size_t e = 0;
    while (e < m->first[m->nparts] && !m->ext[e].len) e++;
    int done = e < m->first[m->nparts] && at < m->ext[e].len;
    if (done) m->bufs[m->ext[e].buf].p[m->ext[e].off + at] ^= 0x5a;
    memout_release(s, m);
    return done;
}

void memout_counts(memout_store *s, int64_t *outputs, int64_t *bytes) {
    *outputs = *bytes = 0;
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    *outputs = s->count;
    for (size_t i = 0; i < s->nb; i++)
        for (memout *m = s->b[i]; m; m = m->next) *bytes += (int64_t)m->len;
    pthread_mutex_unlock(&s->mu);
}
