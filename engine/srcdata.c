/*
 * srcdata.c -- parallelized records, encoded once and shared (see
 * srcdata.h).
 *
 * Each partition is encoded into its own buffer in two passes over its
 * records: the first checks them and sums their encoded sizes, the second
 * writes them into the buffer allocated at that size (buf.c gives a large
 * one huge pages, so its first touch faults once per 2 MiB rather than per
 * 4 KiB).  Keys and values of up to 16 bytes are copied with fixed-size
 * moves instead of a memcpy call each: a pair of int64 is the common case.
 * Many records are encoded by up to one thread per core, a partition at a
 * time: both the encoding and the first touch of fresh pages (the larger
 * cost on the virtual machines measured) then run on every core.
 *
 * The table of live srcdata is a list under one mutex: it holds one entry
 * per parallelized RDD alive and is searched once per task.  The table holds
 * no reference; an entry leaves it when its last reference goes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "err.h"
#include "recfmt.h"
#include "srcdata.h"

/* Records per encoding thread at least: fewer are not worth a thread. */
#define RECS_PER_THREAD ((size_t)1 << 20)
#define MAX_THREADS 16

struct srcdata {
    uint64_t id;
    int refs;          /* under table_mu */
    int nparts;
    uint8_t **part;    /* each partition's records (malloc'd, non-NULL) */
    size_t *lens;
    uint64_t *counts;  /* records per partition */
    struct srcdata *next;
};

static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static srcdata *table;
static uint64_t next_id = 1;
static int (*fetch_hook)(uint64_t id, int part, uint8_t **data, size_t *len);

/* rec_put (recfmt.h) with copy_small (buf.h). */
static inline size_t put_rec(uint8_t *p, const em_rec *r) {
    size_t n;
    if (r->key) {
        n = varint_put(p, (uint64_t)r->klen + 1);
        copy_small(p + n, r->key, r->klen);
        n += r->klen;
    } else {
        p[0] = 0;
        n = 1;
    }
    n += varint_put(p + n, r->vlen);
    copy_small(p + n, r->val, r->vlen);
    return n + r->vlen;
}

static void src_free(srcdata *s) {
    for (int p = 0; s->part && p < s->nparts; p++) free(s->part[p]);
    free(s->part);
    free(s->lens);
    free(s->counts);
    free(s);
}

/* Encode partition p.  0, or EM_EINVAL with *bad the index of a record with
 * a NULL pointer, or EM_ENOMEM (no message: the caller's thread says it). */
static int encode_part(srcdata *s, const em_rec *recs, size_t n, int p, size_t *bad) {
    size_t lo = n * (size_t)p / (size_t)s->nparts, hi = n * (size_t)(p + 1) / (size_t)s->nparts, total = 0;
    for (size_t i = lo; i < hi; i++) {
        const em_rec *r = &recs[i];
        if ((r->vlen && !r->val) || (r->klen && !r->key)) {
            *bad = i;
            return EM_EINVAL;
        }
        size_t k = rec_encoded_size(r);
        if (total + k < total) return EM_ENOMEM;
        total += k;
    }
    ebuf b = EBUF_INIT;
    if (ebuf_reserve(&b, total ? total : 1)) return EM_ENOMEM;
    uint8_t *w = b.p;
    for (size_t i = lo; i < hi; i++) w += put_rec(w, &recs[i]);
    s->part[p] = ebuf_steal(&b, NULL);
    s->lens[p] = total;
    s->counts[p] = hi - lo;
    return 0;
}

/* Partitions handed out to the encoding threads, and the first failure. */
typedef struct enc_job {
    srcdata *s;
    const em_rec *recs;
    size_t n;
    int next;          /* the next partition to encode (atomic) */
    pthread_mutex_t mu;
    int rc;            /* the failure of the lowest record or partition (mu) */
    size_t bad;
} enc_job;

static void *enc_worker(void *arg) {
    enc_job *j = arg;
    for (;;) {
        int p = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
        if (p >= j->s->nparts) return NULL;
        size_t bad = SIZE_MAX;
        int rc = encode_part(j->s, j->recs, j->n, p, &bad);
        if (rc) {
            pthread_mutex_lock(&j->mu);
            if (!j->rc || bad < j->bad) { /* the same record whatever the threads' timing */
                j->rc = rc;
                j->bad = bad;
            }
            pthread_mutex_unlock(&j->mu);
        }
    }
}

srcdata *src_encode(const em_rec *recs, size_t n, int nparts) {
    srcdata *s = calloc(1, sizeof *s);
    if (!s || !(s->part = calloc((size_t)nparts + 1, sizeof *s->part)) ||
        !(s->lens = calloc((size_t)nparts + 1, sizeof *s->lens)) ||
        !(s->counts = calloc((size_t)nparts + 1, sizeof *s->counts))) {
        if (s) src_free(s);
        em__seterr(EM_ENOMEM, "em_parallelize: out of memory");
        return NULL;
    }
    s->nparts = nparts;
    enc_job j = {s, recs, n, 0, PTHREAD_MUTEX_INITIALIZER, 0, SIZE_MAX};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t want = n / RECS_PER_THREAD;
    int nt = 0;
    if (cpus > MAX_THREADS) cpus = MAX_THREADS;
    if (want > (size_t)cpus) want = (size_t)cpus;
    if (want > (size_t)nparts) want = (size_t)nparts;
    pthread_t th[MAX_THREADS];
    while ((size_t)nt + 1 < want && !pthread_create(&th[nt], NULL, enc_worker, &j)) nt++; /* and this thread */
    enc_worker(&j);
    for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
    pthread_mutex_destroy(&j.mu);
    if (j.rc) {
        src_free(s);
        if (j.rc == EM_EINVAL) em__seterr(EM_EINVAL, "em_parallelize: record %zu has a NULL pointer", j.bad);
        else em__seterr(EM_ENOMEM, "em_parallelize: out of memory");
        return NULL;
    }
    s->refs = 1;
    pthread_mutex_lock(&table_mu);
    s->id = next_id++;
    s->next = table;
    table = s;
    pthread_mutex_unlock(&table_mu);
    return s;
}

void src_retain(srcdata *s) {
    pthread_mutex_lock(&table_mu);
    s->refs++;
    pthread_mutex_unlock(&table_mu);
}

void src_release(srcdata *s) {
    if (!s) return;
    pthread_mutex_lock(&table_mu);
    int last = --s->refs == 0;
    if (last)
        for (srcdata **pp = &table; *pp; pp = &(*pp)->next)
            if (*pp == s) {
                *pp = s->next;
                break;
            }
    pthread_mutex_unlock(&table_mu);
    if (last) src_free(s);
}

uint64_t src_id(const srcdata *s) { return s->id; }
size_t src_part_len(const srcdata *s, int p) { return s->lens[p]; }
uint64_t src_part_count(const srcdata *s, int p) { return s->counts[p]; }

srcdata *src_find(uint64_t id, int part, const uint8_t **p, size_t *len) {
    srcdata *s;
    pthread_mutex_lock(&table_mu);
    for (s = table; s && s->id != id; s = s->next) {}
    if (s && part >= 0 && part < s->nparts) s->refs++;
    pthread_mutex_unlock(&table_mu);
    if (!s) {
        em__seterr(EM_ENOENT, "parallelized records %llu are gone (their RDD was released)", (unsigned long long)id);
        return NULL;
    }
    if (part < 0 || part >= s->nparts) {
        em__seterr(EM_EPROTO, "parallelized records %llu have no partition %d", (unsigned long long)id, part);
        return NULL;
    }
    *p = s->part[part];
    *len = s->lens[part];
    return s;
}

void src_set_fetch(int (*fetch)(uint64_t id, int part, uint8_t **data, size_t *len)) { fetch_hook = fetch; }

int src_get(uint64_t id, int part, uint64_t len, src_part *out) {
    memset(out, 0, sizeof *out);
    const uint8_t *p = NULL;
    size_t n = 0;
    srcdata *s = src_find(id, part, &p, &n);
    if (s) {
        out->hold = s;
    } else if (fetch_hook) {
        uint8_t *d = NULL;
        int rc = fetch_hook(id, part, &d, &n);
        if (rc) return rc;
        out->own = d;
        p = d;
    } else {
        return em__lasterr();
    }
    out->p = p;
    out->len = n;
    if (n != len) {
        src_part_release(out);
        return em__seterr(EM_EPROTO, "parallelized records %llu partition %d: %zu bytes, the task expected %llu",
                          (unsigned long long)id, part, n, (unsigned long long)len);
    }
    return 0;
}

void src_part_release(src_part *sp) {
    src_release(sp->hold);
    free(sp->own);
    memset(sp, 0, sizeof *sp);
}
