/*
 * sinks.c -- the last epipe of a task: the per-partition part of an action
 * (collect, count, fold, foreach, take, save, top-n, key sampling) or a
 * shuffle write.  Each sink's end() leaves its output in the task result.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include "batch.h"
#include "ckpt_file.h"
#include "err.h"
#include "faults.h"
#include "fnref.h"
#include "pipe.h"
#include "recfmt.h"
#include "runner.h"
#include "mapstatus.h"
#include "shuffle.h"

static void give_result(epipe *p, ebuf *b) {
    p->run->res->data = ebuf_steal(b, &p->run->res->len);
}

/* ---------------------------------------------------------- collect/take */

static int push_collect(epipe *p, const em_rec *r) { return rec_append(&p->buf, r); }

static int push_take(epipe *p, const em_rec *r) {
    if ((uint64_t)p->n >= p->sink->n) return EM_STOP;
    if (rec_append(&p->buf, r)) return EM_ENOMEM;
    return (uint64_t)++p->n >= p->sink->n ? EM_STOP : 0;
}

static int end_buf(epipe *p) {
    give_result(p, &p->buf);
    return 0;
}

/* ----------------------------------------------------------------- count */

static int push_count(epipe *p, const em_rec *r) {
    p->n++;
    return 0;
}

/* A batch's records are counted where they lie: no record is handed out. */
static int push_count_batch(epipe *p, const uint8_t *b, size_t len, uint64_t *nrec) {
    size_t n = batch_count_recs(b, len);
    if (n == (size_t)-1) return em__seterr(EM_ECORRUPT, "malformed record in a batch");
    p->n += (int64_t)n;
    *nrec += n;
    return 0;
}

static int end_count(epipe *p) {
    if (ebuf_append(&p->buf, &p->n, sizeof p->n)) return EM_ENOMEM;
    give_result(p, &p->buf);
    return 0;
}

/* ------------------------------------------------------------------ fold */
/* buf holds the accumulator as an encoded record; p->n says whether there
 * is one yet (reduce has no zero). */

static int push_fold(epipe *p, const em_rec *r) {
    if (!p->n) {
        p->n = 1;
        return rec_append(&p->buf, r);
    }
    em_rec acc;
    if (!rec_get(p->buf.p, p->buf.p + p->buf.len, &acc)) return em__seterr(EM_ECORRUPT, "fold: bad accumulator");
    ebuf_reset(&p->buf2);
    p->em.buf = &p->buf2;
    p->em.count = 0;
    int rc = ((em_comb_fn)p->fn)(&acc, r, &p->em, p->arg);
    if (rc < 0) return rc;
    if (p->em.count != 1) return em__seterr(EM_EUSER, "a fold/reduce function emitted %lld records (must be 1)", (long long)p->em.count);
    ebuf t = p->buf;
    p->buf = p->buf2;
    p->buf2 = t;
    return 0;
}

/* ------------------------------------------------------ foreach (+part) */

static int push_foreach(epipe *p, const em_rec *r) {
    int rc = ((em_foreach_fn)p->fn)(r, p->arg);
    return rc < 0 ? rc : 0;
}

static int end_foreach_part(epipe *p) {
    em_iter it;
    iter_init(&it, p->buf.p, p->buf.len);
    int rc = ((em_foreach_part_fn)p->fn)(p->run->t->partition, &it, p->arg);
    return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------------ save */

/* Plain text goes through f; gzip (SAVE_GZIP) through gz, which zlib
 * writes to a duplicate of fd, so that fd can be synced once gz is
 * closed. */
typedef struct save_state {
    FILE *f;
    gzFile gz;
    int fd;
    char path[4096];
} save_state;

static int gz_put(save_state *s, const void *p, size_t n) {
    return n == 0 || gzwrite(s->gz, p, (unsigned)n) == (int)n ? 0 : -1;
}

static int push_save(epipe *p, const em_rec *r) {
    save_state *s = p->state;
    p->n++; /* output records: those handed to the file */
    if (s->gz) {
        if (r->vlen > UINT32_MAX / 2 || r->klen > UINT32_MAX / 2) goto fail;
        if (r->key && (gz_put(s, r->key, r->klen) || gz_put(s, "\t", 1))) goto fail;
        if (gz_put(s, r->val, r->vlen) || gz_put(s, "\n", 1)) goto fail;
        return 0;
    }
    if (r->key) {
        if (fwrite(r->key, 1, r->klen, s->f) != r->klen || fputc('\t', s->f) == EOF) goto fail;
    }
    if (fwrite(r->val, 1, r->vlen, s->f) != r->vlen || fputc('\n', s->f) == EOF) goto fail;
    return 0;
fail:
    if (s->gz) {
        int zerr = 0;
        const char *m = gzerror(s->gz, &zerr);
        return em__seterr(EM_EIO, "save_as_text_file: writing %s: %s", s->path,
                          zerr == Z_ERRNO ? strerror(errno) : m);
    }
    return em__seterr(EM_EIO, "save_as_text_file: writing %s: %s", s->path, strerror(errno));
}

/* Finish the file, setting *bytes to its size: 0, or nonzero with errno
 * set. */
static int close_save_file(save_state *s, uint64_t *bytes) {
    int bad;
    struct stat st;
    if (s->gz) {
        errno = 0;
        bad = gzclose(s->gz) != Z_OK;
        s->gz = NULL;
        if (bad && !errno) errno = EIO;
        bad |= fsync(s->fd) != 0;
        *bytes = !bad && !fstat(s->fd, &st) ? (uint64_t)st.st_size : 0;
        bad |= close(s->fd) != 0;
        s->fd = -1;
        return bad;
    }
    bad = fflush(s->f) != 0 || fsync(fileno(s->f)) != 0;
    *bytes = !bad && !fstat(fileno(s->f), &st) ? (uint64_t)st.st_size : 0;
    bad |= fclose(s->f) != 0;
    s->f = NULL;
    return bad;
}

/* The file is complete: ask the commit coordinator, then move it from the
 * attempts' area to <path>/part-NNNNN (denied: delete it).  The result is
 * the committed file's path. */
static int end_save(epipe *p) {
    save_state *s = p->state;
    const task_desc *t = p->run->t;
    exec_env *env = p->run->env;
    uint64_t bytes;
    if (close_save_file(s, &bytes))
        return em__seterr(EM_EIO, "save_as_text_file: closing %s: %s", s->path, strerror(errno));
    /* Output metrics: the file as written, whether or not it is committed. */
    p->run->res->m.out_bytes += (int64_t)bytes;
    p->run->res->m.out_records += p->n;
    char final[4096];
    snprintf(final, sizeof final, "%s/part-%05d%s", p->sink->path, (int)t->partition,
             p->sink->compress == SAVE_GZIP ? ".gz" : "");
    const fault_rule *late =
        faults_match(p->run->faults, p->run->nfaults, FAULT_DELAY_COMMIT, t->stage_id, t->partition, t->attempt);
    if (late) { /* a kill that comes too late: the sleep does not look at it */
        p->run->res->faults_fired++;
        struct timespec ts = {(time_t)(late->ms / 1000), (long)(late->ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) && errno == EINTR) {}
    }
    const fault_rule *held =
        faults_match(p->run->faults, p->run->nfaults, FAULT_HOLD_COMMIT, t->stage_id, t->partition, t->attempt);
    if (held) { /* as late as the test makes it: deaf to kills too */
        fault_hold_ctx h = {t->faults_dir, t->stage_id, t->attempt, t->partition, NULL};
        p->run->res->faults_fired++;
        int rc = faults_hold(held, &h);
        if (rc) return rc;
    }
    if (env->ask_commit && !env->ask_commit(env->commit_ctx, t->stage_id, t->partition, t->task_id)) {
        unlink(s->path); /* gone already if the save was published */
        p->run->res->commit_denied = 1;
        return em__seterr(EM_ECANCELED,
                          "save_as_text_file: commit denied: another attempt of partition %d committed its output",
                          (int)t->partition);
    }
    held = faults_match(p->run->faults, p->run->nfaults, FAULT_HOLD_MOVE, t->stage_id, t->partition, t->attempt);
    if (held) { /* authorized, its commit under way: deaf to kills */
        fault_hold_ctx h = {t->faults_dir, t->stage_id, t->attempt, t->partition, NULL};
        p->run->res->faults_fired++;
        int rc = faults_hold(held, &h);
        if (rc) return rc;
    }
    if (faults_match(p->run->faults, p->run->nfaults, FAULT_COMMIT, t->stage_id, t->partition, t->attempt)) {
        p->run->res->faults_fired++;
        return em__seterr(EM_EIO, "injected commit failure (ember.test.faults): partition %d attempt %u",
                          (int)t->partition, t->attempt);
    }
    if (rename(s->path, final))
        return em__seterr(EM_EIO, "save_as_text_file: cannot commit partition %d: %s", (int)t->partition,
                          strerror(errno));
    if (ebuf_append(&p->buf, final, strlen(final) + 1)) return EM_ENOMEM;
    give_result(p, &p->buf);
    return 0;
}

static void free_save(epipe *p) {
    save_state *s = p->state;
    if (s && (s->f || s->gz || s->fd >= 0)) { /* the task failed: leave nothing behind */
        if (s->f) fclose(s->f);
        if (s->gz) gzclose(s->gz);
        if (s->fd >= 0) close(s->fd);
        unlink(s->path);
    }
    free(s);
}

/* The attempt's own file, opened before anything is written: created
 * (never replaced) in the attempts' area, which exists only while the save
 * is not yet published (SAVE_ATTEMPTS_SUFFIX). */
static int open_save(epipe *p) {
    save_state *s = calloc(1, sizeof *s);
    if (!(p->state = s)) return EM_ENOMEM;
    s->fd = -1;
    int gz = p->sink->compress == SAVE_GZIP;
    snprintf(s->path, sizeof s->path, "%s" SAVE_ATTEMPTS_SUFFIX "/part-%05d%s.attempt-%llu", p->sink->path,
             (int)p->run->t->partition, gz ? ".gz" : "", (unsigned long long)p->run->t->task_id);
    int dupfd = -1;
    if ((s->fd = open(s->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0) {
        int e = errno;
        s->path[0] = 0; /* not ours: nothing to unlink */
        if (e == ENOENT)
            return em__seterr(EM_ECANCELED, "save_as_text_file: partition %d: the save has ended (its output was "
                                            "published or removed)", (int)p->run->t->partition);
        return em__seterr(EM_EIO, "save_as_text_file: cannot create the file of partition %d in %s: %s",
                          (int)p->run->t->partition, p->sink->path, strerror(e));
    }
    if (!gz) {
        if (!(s->f = fdopen(s->fd, "w"))) {
            int e = errno;
            close(s->fd);
            s->fd = -1;
            unlink(s->path);
            return em__seterr(EM_EIO, "save_as_text_file: %s: %s", s->path, strerror(e));
        }
        s->fd = -1;
        return 0;
    }
    if ((dupfd = fcntl(s->fd, F_DUPFD_CLOEXEC, 0)) < 0)
        return em__seterr(EM_EIO, "save_as_text_file: %s: %s", s->path, strerror(errno));
    if (!(s->gz = gzdopen(dupfd, "wb"))) {
        close(dupfd);
        return em__seterr(EM_ENOMEM, "save_as_text_file: %s: out of memory for the gzip stream", s->path);
    }
    gzbuffer(s->gz, 1 << 17);
    return 0;
}

/* --------------------------------------------------------------- shuffle */

typedef struct shuffle_state {
    shuffle_writer *w;
    agg_run ar;
    agg_spec spec;
    int nparts;
    uint8_t partitioner;
    /* PT_RANGE bounds: views into the sink's bounds list */
    const uint8_t **bk;
    size_t *bl;
    int nb;
    uint64_t *b8;  /* each bound's first 8 bytes as a big-endian
                      integer, zero padded: a key's own such prefix
                      places it among every bound whose prefix differs
                      (the padded prefixes are in the bounds' order), and
                      only bounds of an equal prefix compare bytes */
    size_t bw;     /* with exact: every bound's one length */
    int exact;     /* every bound has one length bw of at most 8 bytes:
                      a key of that length is placed by its prefix alone
                      (int64 keys, 4-byte keys) */
    int descending;
    uint64_t rr;  /* PT_ROUNDROBIN position */
} shuffle_state;

/* How many of the n ascending prefixes b[] are below x.  Branch-free:
 * random keys would mispredict every step.  The step is a mask, not a
 * conditional, which GCC compiled to a branch (a quarter of part_of's
 * samples sat on it). */
static inline size_t prefixes_below(const uint64_t *b, size_t n, uint64_t x) {
    const uint64_t *p = b;
    while (n > 1) {
        size_t half = n / 2;
        p += half & -(size_t)(p[half - 1] < x);
        n -= half;
    }
    return (size_t)(p - b) + (n == 1 && p[0] < x);
}

/* The range partition of key k: the number of bounds below it. */
static int range_part(const shuffle_state *s, const uint8_t *k, size_t kl) {
    int lo = 0, hi = s->nb; /* first bound >= key */
    if (s->b8) {
        uint64_t x = 0;
        if (kl >= 8) memcpy(&x, k, 8);
        else if (kl) memcpy(&x, k, kl);
        x = __builtin_bswap64(x);
        size_t n = (size_t)s->nb, below = prefixes_below(s->b8, n, x);
        lo = (int)below;
        if ((s->exact && kl == s->bw) || below == n || s->b8[below] != x) return lo;
        /* bounds with the key's prefix: their bytes decide */
        hi = x == UINT64_MAX ? s->nb : (int)prefixes_below(s->b8, n, x + 1);
    }
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (bytes_cmp(s->bk[mid], s->bl[mid], k, kl) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int part_of(void *pctx, const em_rec *r) {
    shuffle_state *s = pctx;
    const void *k = r->key ? r->key : r->val;
    size_t kl = r->key ? r->klen : r->vlen;
    switch (s->partitioner) {
    case PT_ROUNDROBIN: return (int)(s->rr++ % (uint64_t)s->nparts);
    case PT_RANGE: {
        int lo = range_part(s, k, kl);
        return s->descending ? s->nparts - 1 - lo : lo;
    }
    default: return (int)(em_hash(k, kl) % (uint64_t)s->nparts);
    }
}

static int push_shuffle(epipe *p, const em_rec *r) {
    shuffle_state *s = p->state;
    return sw_add(s->w, r);
}

static int push_shuffle_batch(epipe *p, const uint8_t *b, size_t len, uint64_t *nrec) {
    shuffle_state *s = p->state;
    return sw_add_batch(s->w, b, len, nrec);
}

static int end_shuffle(epipe *p) {
    shuffle_state *s = p->state;
    sw_result sr;
    memset(&sr, 0, sizeof sr);
    int rc = sw_commit(s->w, &sr);
    s->w = NULL;
    if (rc < 0) return rc;
    task_result *res = p->run->res;
    res->shuffle_bytes = sr.bytes;
    res->shuffle_records = sr.records;
    res->spills += sr.spills;
    /* Spark's shuffle bytes written: the segments', which its readers read */
    for (int i = 0; i < s->nparts; i++) res->m.sw_bytes += (int64_t)sr.seg_bytes[i];
    res->m.sw_records += (int64_t)sr.records;
    res->m.sw_time_ns += sr.write_ns;
    const char *dir = p->run->env->shuffle_dir ? p->run->env->shuffle_dir : p->run->env->local_dir;
    if (p->run->env->self) snprintf(res->loc, sizeof res->loc, "%s%s", p->run->env->self, dir);
    else snprintf(res->loc, sizeof res->loc, "%s", dir);
    /* the sizes as the driver keeps them: compressed here, not there */
    rc = ms_encode(sr.seg_bytes, s->nparts, p->sink->n, &p->buf);
    free(sr.seg_bytes);
    if (!rc) give_result(p, &p->buf);
    return rc;
}

static void free_shuffle(epipe *p) {
    shuffle_state *s = p->state;
    if (s) {
        if (s->w) sw_abort(s->w);
        free(s->bk);
        free(s->bl);
        free(s->b8);
        free(s);
    }
}

static int open_shuffle(epipe *p) {
    const plan_sink *k = p->sink;
    task_run *run = p->run;
    shuffle_state *s = calloc(1, sizeof *s);
    if (!(p->state = s)) return EM_ENOMEM;
    s->nparts = k->nparts;
    s->partitioner = k->partitioner;
    s->descending = k->descending;
    if (k->partitioner == PT_ROUNDROBIN) {
        /* As Spark's repartition: each input partition starts its round
         * robin at a position drawn from a generator seeded by its index,
         * so short partitions spread over all outputs instead of piling
         * onto the first ones (deterministic, so a retried task sends each
         * record where the first attempt did). */
        uint64_t seed = (uint64_t)run->t->partition;
        s->rr = (rng_next(&seed) >> 32) * (uint64_t)k->nparts >> 32;
    }
    if (k->partitioner == PT_RANGE) {
        size_t pos = 0, n = 0;
        const void *item;
        size_t ilen;
        int rc;
        while ((rc = em_list_next(k->bounds.p, k->bounds.len, &pos, &item, &ilen)) == 1) n++;
        if (rc < 0) return em__seterr(EM_EPROTO, "malformed range bounds");
        s->bk = malloc(sizeof *s->bk * (n + 1));
        s->bl = malloc(sizeof *s->bl * (n + 1));
        if (!s->bk || !s->bl) return EM_ENOMEM;
        pos = 0;
        int onelen = 1;
        while (em_list_next(k->bounds.p, k->bounds.len, &pos, &item, &ilen) == 1) {
            s->bk[s->nb] = item;
            onelen &= !s->nb || ilen == s->bl[0];
            s->bl[s->nb++] = ilen;
        }
        if (s->nb && (s->b8 = malloc(sizeof *s->b8 * (n + 1)))) {
            s->exact = onelen && s->bl[0] <= 8;
            s->bw = s->bl[0];
            for (int i = 0; i < s->nb; i++) {
                size_t w = s->bl[i] < 8 ? s->bl[i] : 8;
                s->b8[i] = 0;
                if (w) memcpy(&s->b8[i], s->bk[i], w);
                s->b8[i] = __builtin_bswap64(s->b8[i]);
            }
        }
    }
    sw_opts o;
    memset(&o, 0, sizeof o);
    o.dir = run->env->shuffle_dir ? run->env->shuffle_dir : run->env->local_dir;
    o.shuffle_id = k->shuffle_id;
    o.map_id = (uint32_t)run->t->partition;
    o.attempt = run->t->task_id;
    o.nparts = k->nparts;
    o.partition = part_of;
    o.pctx = s;
    if (k->combine) {
        int rc = agg_run_init(&s->ar, &k->agg, run->max_record, &s->spec);
        if (rc) return rc;
        o.combine = &s->spec;
    }
    o.mem_budget = run->t->mem_budget;
    o.codec = run->t->out_codec;
    o.block_bytes = run->t->block_bytes;
    o.mem = run->env->outputs;
    o.cancelled = runner_cancelled;
    if (!(s->w = sw_open(&o))) return EM_EIO;
    return 0;
}

/* ----------------------------------------------------------------- top-n */
/* Keep every record until there are 4n (at least 4096), then sort and keep
 * the best n: amortized O(log n) per record with bounded memory. */

typedef struct topn_ent { const uint8_t *p; size_t len; em_rec r; } topn_ent;
static __thread int topn_desc;

static int topn_cmp(const void *a, const void *b) {
    int c = rec_cmp(&((const topn_ent *)a)->r, &((const topn_ent *)b)->r);
    return topn_desc ? -c : c;
}

static int topn_compact(epipe *p, int final) {
    size_t cnt = 0, pos = 0;
    em_rec r;
    for (size_t n; pos < p->buf.len && (n = rec_get(p->buf.p + pos, p->buf.p + p->buf.len, &r)); pos += n) cnt++;
    topn_ent *e = malloc(sizeof *e * (cnt + 1));
    if (!e) return EM_ENOMEM;
    pos = 0;
    for (size_t i = 0; i < cnt; i++) {
        size_t n = rec_get(p->buf.p + pos, p->buf.p + p->buf.len, &e[i].r);
        e[i].p = p->buf.p + pos;
        e[i].len = n;
        pos += n;
    }
    topn_desc = p->sink->descending;
    qsort(e, cnt, sizeof *e, topn_cmp);
    size_t keep = cnt < p->sink->n ? cnt : (size_t)p->sink->n;
    ebuf_reset(&p->buf2);
    for (size_t i = 0; i < keep; i++)
        if (ebuf_append(&p->buf2, e[i].p, e[i].len)) {
            free(e);
            return EM_ENOMEM;
        }
    free(e);
    ebuf t = p->buf;
    p->buf = p->buf2;
    p->buf2 = t;
    p->n = (int64_t)keep;
    (void)final;
    return 0;
}

static int push_topn(epipe *p, const em_rec *r) {
    if (!p->sink->n) return EM_STOP;
    if (rec_append(&p->buf, r)) return EM_ENOMEM;
    uint64_t lim = p->sink->n * 4 > 4096 ? p->sink->n * 4 : 4096;
    if ((uint64_t)++p->n >= lim) return topn_compact(p, 0);
    return 0;
}

static int end_topn(epipe *p) {
    int rc = topn_compact(p, 1);
    if (!rc) give_result(p, &p->buf);
    return rc;
}

/* ------------------------------------------------------------ key sample */
/* Reservoir sample of n keys; result: int64 count, then the keys as a
 * list.  Each sampled key is kept in its own buffer (ksample.keys).
 *
 * Li's Algorithm L (1994): once the reservoir is full, the number of
 * records to pass over before the next one enters it is drawn at once
 * (geometric, from W, the largest of n uniforms, which each entry
 * shrinks), so a record that does not enter costs a comparison.  The
 * sample is as uniform as Algorithm R's (Spark's
 * SamplingUtils.reservoirSampleAndCount), which draws a random number and
 * divides for every record.  A batch (a cached block) is walked in place, 18 bytes at a time
 * over (8-byte, 8-byte) records. */

typedef struct ksample {
    ebuf *keys;
    size_t cap;
    uint64_t next; /* once full: index of the next record to enter */
    double w;      /* Algorithm L's W */
} ksample;

/* A uniform double in (0, 1), both ends excluded exactly (52 bits and a
 * half fit a double's 53): never 0, whose log would be -inf. */
static double ks_unit(uint64_t *rng) { return ((double)(rng_next(rng) >> 12) + 0.5) * 0x1.0p-52; }

/* Draw the gap to the next entering record after record `at`. */
static void ks_next(ksample *s, uint64_t *rng, uint64_t at) {
    double gap = floor(log(ks_unit(rng)) / log1p(-s->w)); /* +0 when W rounds to 1 */
    s->next = at + 1 + (gap < 0x1p62 ? (uint64_t)gap : (uint64_t)1 << 62);
}

static int ks_take(epipe *p, const em_rec *r) {
    ksample *s = p->state;
    const void *k = r->key ? r->key : r->val;
    size_t kl = r->key ? r->klen : r->vlen;
    uint64_t seen = (uint64_t)p->n++;
    size_t slot;
    if (seen < s->cap) {
        slot = (size_t)seen;
        if (seen + 1 == s->cap) { /* full: the first gap */
            s->w = exp(log(ks_unit(&p->rng)) / (double)s->cap);
            ks_next(s, &p->rng, seen);
        }
    } else {
        slot = (size_t)(rng_next(&p->rng) % s->cap);
        s->w *= exp(log(ks_unit(&p->rng)) / (double)s->cap);
        ks_next(s, &p->rng, seen);
    }
    ebuf *e = &s->keys[slot];
    ebuf_reset(e);
    return ebuf_append(e, k, kl) ? EM_ENOMEM : 0;
}

/* Whether the record numbered p->n enters the reservoir. */
static int ks_enters(const epipe *p) {
    const ksample *s = p->state;
    return s->cap && ((uint64_t)p->n < s->cap || (uint64_t)p->n == s->next);
}

static int push_keysample(epipe *p, const em_rec *r) {
    if (ks_enters(p)) return ks_take(p, r);
    p->n++;
    return 0;
}

#define KS_CHECK_EVERY 65536 /* records walked between looks at the kill flag */

static int push_keysample_batch(epipe *p, const uint8_t *b, size_t len, uint64_t *nrec) {
    const uint8_t *q = b, *end = b + len;
    unsigned since = 0;
    uint64_t taken = 0; /* records, KS_CHECK_EVERY at a time (since has the rest) */
    while (q < end) {
        size_t n;
        em_rec r;
        if (++since == KS_CHECK_EVERY) {
            since = 0;
            taken += KS_CHECK_EVERY;
            if (runner_cancelled()) return em__seterr(EM_ECANCELED, "task killed");
        }
        if (!ks_enters(p) && rec_is_pair8(q, end)) {
            p->n++;
            q += REC_PAIR8;
            continue;
        }
        if (!(n = rec_get(q, end, &r))) return em__seterr(EM_ECORRUPT, "malformed record in a batch");
        int rc = push_keysample(p, &r);
        if (rc) return rc;
        q += n;
    }
    *nrec += taken + since;
    return 0;
}

static int end_keysample(epipe *p) {
    ksample *s = p->state;
    if (ebuf_append(&p->buf, &p->n, sizeof p->n)) return EM_ENOMEM;
    size_t have = (uint64_t)p->n < s->cap ? (size_t)p->n : s->cap;
    for (size_t i = 0; i < have; i++)
        if (list_append(&p->buf, s->keys[i].p ? s->keys[i].p : (const uint8_t *)"", s->keys[i].len)) return EM_ENOMEM;
    give_result(p, &p->buf);
    return 0;
}

static void free_keysample(epipe *p) {
    ksample *s = p->state;
    if (!s) return;
    for (size_t i = 0; i < s->cap; i++) ebuf_free(&s->keys[i]);
    free(s->keys);
    free(s);
}

/* ------------------------------------------------------------------ make */

epipe *sink_pipe_new(task_run *run, const plan_sink *k) {
    epipe *p = calloc(1, sizeof *p);
    int rc = 0;
    if (!p) {
        em__seterr(EM_ENOMEM, "out of memory");
        return NULL;
    }
    p->run = run;
    p->sink = k;
    p->arg = k->arg.len ? k->arg.p : NULL;
    emitter_init(&p->em, EMIT_RECORD, NULL, run->max_record);
    if ((k->kind == SK_FOLD || k->kind == SK_FOREACH || k->kind == SK_FOREACH_PART) &&
        !(p->fn = fnref_resolve(&k->fn))) {
        free(p);
        return NULL;
    }
    switch (k->kind) {
    case SK_COLLECT: p->h.push = push_collect; p->end = end_buf; break;
    case SK_TAKE: p->h.push = push_take; p->end = end_buf; break;
    case SK_COUNT:
        p->h.push = push_count;
        p->push_batch = push_count_batch;
        p->end = end_count;
        break;
    case SK_FOLD:
        p->h.push = push_fold;
        p->end = end_buf;
        if (k->has_zero) {
            p->n = 1;
            rc = ebuf_append(&p->buf, k->zero.p, k->zero.len) ? EM_ENOMEM : 0; /* zero is an encoded record */
        }
        break;
    case SK_FOREACH: p->h.push = push_foreach; p->end = end_buf; break;
    case SK_FOREACH_PART: p->h.push = push_collect; p->end = end_foreach_part; break;
    case SK_SAVE:
        p->h.push = push_save;
        p->end = end_save;
        p->free = free_save;
        rc = open_save(p);
        break;
    case SK_SHUFFLE:
        p->h.push = push_shuffle;
        p->push_batch = push_shuffle_batch;
        p->end = end_shuffle;
        p->free = free_shuffle;
        rc = open_shuffle(p);
        break;
    case SK_TOPN: p->h.push = push_topn; p->end = end_topn; break;
    case SK_CHECKPOINT: rc = ckpt_sink_open(p); break;
    case SK_KEYSAMPLE: {
        ksample *s = calloc(1, sizeof *s);
        p->state = s;
        p->h.push = push_keysample;
        p->push_batch = push_keysample_batch;
        p->end = end_keysample;
        p->free = free_keysample;
        p->rng = k->seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(run->t->partition + 1));
        if (!s || !(s->keys = calloc(k->n ? k->n : 1, sizeof(ebuf)))) rc = EM_ENOMEM;
        else s->cap = (size_t)k->n;
        break;
    }
    default: rc = em__seterr(EM_EPROTO, "unknown sink %d", k->kind);
    }
    if (rc) {
        if (rc == EM_ENOMEM) em__seterr(rc, "out of memory");
        pipe_free(p);
        return NULL;
    }
    return p;
}
