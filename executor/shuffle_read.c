/*
 * shuffle_read.c -- the reduce side of a shuffle: fetch one reduce
 * partition's segment from every map output and pass the records to a sink
 * as the mode asks (see shuffle.h).
 *
 * Fetching is the same for every mode: for each map the map-output tracker
 * has as non-empty, read and check its index file and data header
 * (shuffle_index.h), take the segment's length from the index (or from
 * the output kept in memory, or from the shuffle server's answer), and
 * decode the run of blocks, each checked by its CRC.  The tracker's sizes
 * are estimates (scheduler/mapout.h), exact only in being zero or not:
 * they choose the maps to read and size the fetches in flight, and a
 * segment found empty that the tracker has as non-empty is not the output
 * the map task registered.  Any problem with a map's files is a
 * fetch failure (EM_EFETCH naming the file, stats->failed_map naming the
 * map), which tells the scheduler to recompute that map's output rather than
 * to retry this task as is.
 *
 * The modes differ in what consumes the fetched records:
 *   SR_PASS     the sink itself, map by map.
 *   SR_AGG      a table of keys and combiners (shuffle_agg.h); past the
 *               budget its entries are sorted by key and spilled as a run,
 *               and at the end the runs and the table are merged, combining
 *               equal keys (extsort.h).
 *   SR_SORT, SR_GROUP, SR_COGROUP
 *               an external sorter; its ordered output is grouped by key for
 *               the last two.
 * Spill files are unlinked when created, so they vanish however this ends.
 */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blockfile.h"
#include "curmetrics.h"
#include "err.h"
#include "extsort.h"
#include "recfmt.h"
#include "shuffle.h"
#include "shuffle_agg.h"
#include "shuffle_files.h"
#include "shuffle_index.h"


typedef int (*consume_fn)(void *ctx, const em_rec *r);
/* A consumer of whole blocks: the encoded records [p, p + len), flags
 * the block header's (BF_VALUES).  Sets *n to the records it found; a
 * malformed one sets *bad and ends the block (the map output's fault,
 * unlike the errors it returns). */
typedef int (*consume_block_fn)(void *ctx, const uint8_t *p, size_t len, unsigned flags, uint64_t *n, int *bad);

static int fetch_fail(sr_stats *st, int map) {
    st->failed_map = map;
    return EM_EFETCH;
}

/* Read all of an index file into a malloc'd buffer.  0 or EM_EFETCH. */
static int read_index(const char *ipath, uint8_t **out, size_t *n) {
    int fd = open(ipath, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    *out = NULL;
    if (fd < 0 || fstat(fd, &sb)) {
        em__seterr(EM_EFETCH, "shuffle index %s: %s", ipath, strerror(errno));
        if (fd >= 0) close(fd);
        return EM_EFETCH;
    }
    /* The largest valid index; anything bigger is refused before reading. */
    if (sb.st_size < 0 || (uint64_t)sb.st_size > shuffle_index_size(SHUFFLE_MAX_PARTS)) {
        close(fd);
        return em__seterr(EM_EFETCH, "shuffle index %s: %lld bytes is too large for an index", ipath,
                          (long long)sb.st_size);
    }
    size_t len = (size_t)sb.st_size, got = 0;
    uint8_t *p = malloc(len ? len : 1);
    if (!p) {
        close(fd);
        return em__seterr(EM_ENOMEM, "shuffle index %s: out of memory", ipath);
    }
    while (got < len) {
        ssize_t k = pread(fd, p + got, len - got, (off_t)got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            em__seterr(EM_EFETCH, "shuffle index %s: %s", ipath, k < 0 ? strerror(errno) : "file shrank while read");
            free(p);
            close(fd);
            return EM_EFETCH;
        }
        got += (size_t)k;
    }
    close(fd);
    *out = p;
    *n = len;
    return 0;
}

int shuffle_locate(const char *dir, uint32_t shuffle_id, uint32_t map, uint64_t attempt, int reduce, uint64_t *start,
                   uint64_t *end) {
    char ipath[SHUFFLE_PATH], dpath[SHUFFLE_PATH];
    uint8_t *idx, hdr[SHUFFLE_DATA_HEADER];
    size_t ilen = 0;
    struct stat sb;
    int nparts = 0, rc;
    shuffle_index_path(ipath, sizeof ipath, dir, shuffle_id, map, attempt);
    shuffle_data_path(dpath, sizeof dpath, dir, shuffle_id, map, attempt);
    if ((rc = read_index(ipath, &idx, &ilen))) return rc;
    int fd = open(dpath, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &sb)) {
        em__seterr(EM_EFETCH, "shuffle data %s: %s", dpath, strerror(errno));
        goto fail;
    }
    if (shuffle_index_check(idx, ilen, (uint64_t)sb.st_size, ipath, &nparts)) goto fail;
    if (reduce < 0 || reduce >= nparts) {
        em__seterr(EM_EFETCH, "shuffle index %s: has %d partitions, reduce partition %d was asked for", ipath,
                   nparts, reduce);
        goto fail;
    }
    ssize_t k;
    do k = pread(fd, hdr, sizeof hdr, 0);
    while (k < 0 && errno == EINTR);
    if (k != (ssize_t)sizeof hdr) {
        em__seterr(EM_EFETCH, "shuffle data %s: %s reading the header", dpath, k < 0 ? strerror(errno) : "too short");
        goto fail;
    }
    if (shuffle_data_header_check(hdr, nparts, dpath)) goto fail;
    *start = shuffle_index_offset(idx, reduce);
    *end = shuffle_index_offset(idx, reduce + 1);
    free(idx);
    return fd;
fail:
    free(idx);
    if (fd >= 0) close(fd);
    return EM_EFETCH;
}

/* The HOST of "ember://HOST:PORT..." (its length in *n), or NULL. */
static const char *loc_host(const char *loc, size_t *n) {
    if (strncmp(loc, "ember://", 8) != 0) return NULL;
    const char *h = loc + 8, *end = h + strcspn(h, "/"), *colon = end;
    while (colon > h && colon[-1] != ':') colon--;
    if (colon <= h + 1) return NULL; /* no ':', or no host before it */
    *n = (size_t)(colon - 1 - h);
    return h;
}

/* Whether loc is another location of this executor's host, whose files
 * are read without a socket (sr_fetcher's host_local). */
static int loc_host_local(const sr_opts *o, const char *loc) {
    size_t n = 0, m = 0;
    const char *a, *b;
    if (!o->fetch || !o->fetch->host_local || !o->self || !(a = loc_host(o->self, &n)) || !(b = loc_host(loc, &m)))
        return 0;
    return n == m && !memcmp(a, b, n);
}

/* Whether loc is this executor's own location (self followed by its
 * directory). */
static int loc_self(const sr_opts *o, const char *loc) {
    size_t n = o->self ? strlen(o->self) : 0;
    return n && !strncmp(loc, o->self, n) && loc[n] == '/';
}

/* Whether loc names another executor's shuffle server (fetch over the
 * network) rather than files this process reads itself. */
static int loc_remote(const sr_opts *o, const char *loc) {
    if (strncmp(loc, "ember://", 8) != 0 || !o->fetch) return 0;
    return !loc_self(o, loc) && !loc_host_local(o, loc);
}

/* Map m's segment of the reduce partition on disk, as its index says.
 * Returns the descriptor (>= 0) with [*start, *end) set, or a code:
 * EM_EFETCH (message naming the file), EM_ENOMEM. */
static int locate_segment(const sr_opts *o, int m, uint64_t *start, uint64_t *end) {
    uint64_t att = o->attempts ? o->attempts[m] : 0;
    return shuffle_locate(shuffle_loc_dir(o->dirs[m]), o->shuffle_id, (uint32_t)m, att, o->reduce_id, start, end);
}

/* Whether map m's segment, len bytes as its output says, contradicts the
 * tracker: empty where the tracker has it non-empty (a fetch failure,
 * empty_fail).  The tracker's non-zero sizes are estimates, so the length
 * itself is not compared, and need not be for safety: each block's
 * CRC-32C, checked as it is decoded (blockfile.h), catches damaged segment
 * bytes, and the index's own CRC a damaged index (shuffle_index.h).  Only
 * an index rewritten with a fresh CRC and other offsets on block
 * boundaries would go unseen (its blocks decode, from the wrong places):
 * that takes a writer of ember's format, not a bad disk or wire, and
 * Spark's reader does not catch it either. */
static int empty_mismatch(const sr_opts *o, int m, uint64_t len) { return !len && o->seglens && o->seglens[m]; }

/* The fetch failure of an empty_mismatch of map m; where names the output. */
static int empty_fail(const sr_opts *o, sr_stats *st, int m, const char *where) {
    em__seterr(EM_EFETCH,
               "%s: segment of reduce partition %d is empty, the map task registered it non-empty (about %llu bytes)",
               where, o->reduce_id, (unsigned long long)o->seglens[m]);
    return fetch_fail(st, m);
}

/* Read map m's segment of the reduce partition into fn (h: its fetch,
 * taken, or NULL for a file on disk).  0, a fetch failure, or whatever fn
 * returned (EM_STOP or < 0). */
static int read_segment(const sr_opts *o, int m, void *h, consume_fn fn, consume_block_fn bfn, void *ctx,
                        sr_stats *st) {
    uint64_t start = 0, end = 0, att = o->attempts ? o->attempts[m] : 0;
    char dpath[SHUFFLE_PATH];
    int fd = -1;
    const uint8_t *seg = NULL; /* a fetched segment's bytes */
    memout *mo = h ? NULL : memout_get(o->mem, o->shuffle_id, (uint32_t)m, att);
    if (mo) { /* kept in memory (memout.h) */
        snprintf(dpath, sizeof dpath, "shuffle %u map %d attempt %llu (in memory)", o->shuffle_id, m,
                 (unsigned long long)att);
        if (o->reduce_id >= mo->nparts) {
            em__seterr(EM_EFETCH, "%s: has %d partitions, reduce partition %d was asked for", dpath, mo->nparts,
                       o->reduce_id);
            memout_release(o->mem, mo);
            return fetch_fail(st, m);
        }
        end = memout_seg_len(mo, o->reduce_id);
        if (empty_mismatch(o, m, end)) {
            memout_release(o->mem, mo);
            return empty_fail(o, st, m, dpath);
        }
    } else if (h) { /* fetched into memory (sr_fetcher): its length is the server's */
        int64_t t0 = tm_now_ns();
        int e = o->fetch->end(o->fetch->ctx, h, &seg, &end);
        st->fetch_wait_ns += tm_now_ns() - t0;
        if (e < 0) return e == EM_ENOMEM || e == EM_ECANCELED ? e : fetch_fail(st, m);
        snprintf(dpath, sizeof dpath, "%s (shuffle %u map %d)", o->dirs[m], o->shuffle_id, m);
        if (!seg || !end) { /* nothing came */
            o->fetch->drop(o->fetch->ctx, h);
            if (empty_mismatch(o, m, end)) return empty_fail(o, st, m, dpath);
            if (!end) return 0;
            em__seterr(EM_EFETCH, "%s: the fetch gave no bytes", dpath);
            return fetch_fail(st, m);
        }
        st->fetched++;
    } else {
        fd = locate_segment(o, m, &start, &end);
        if (fd < 0) return fd == EM_EFETCH ? fetch_fail(st, m) : fd;
        if (empty_mismatch(o, m, end - start)) {
            char ipath[SHUFFLE_PATH];
            shuffle_index_path(ipath, sizeof ipath, shuffle_loc_dir(o->dirs[m]), o->shuffle_id, (uint32_t)m, att);
            close(fd);
            return empty_fail(o, st, m, ipath);
        }
        if (!loc_self(o, o->dirs[m]) && loc_host_local(o, o->dirs[m])) st->host_local++;
        shuffle_data_path(dpath, sizeof dpath, shuffle_loc_dir(o->dirs[m]), o->shuffle_id, (uint32_t)m, att);
    }
    bf_reader rd;
    em_rec r;
    int rc = 0;
    /* A segment kept in memory is one or more extents (memout.h), read in
     * turn with one reader; a file's is one. */
    size_t e = mo ? mo->first[o->reduce_id] : 0, e_end = mo ? mo->first[o->reduce_id + 1] : 1;
    uint64_t done = 0;
    if (mo) bf_reader_init_mem(&rd, NULL, dpath, 0, 0);
    else if (seg) bf_reader_init_mem(&rd, seg, dpath, 0, end);
    else bf_reader_init(&rd, fd, dpath, start, end - start);
    for (; e < e_end && !rc; e++) {
        if (mo) {
            const memout_ext *x = &mo->ext[e];
            bf_reader_move_mem(&rd, mo->bufs[x->buf].p, x->off, x->len);
            start = x->off;
        }
        while (bfn) {
            const uint8_t *p = NULL;
            size_t len = 0;
            uint64_t n = 0;
            int bad = 0;
            if ((rc = bf_next_block(&rd, &p, &len)) <= 0) {
                if (rc < 0 && rc != EM_ENOMEM) rc = fetch_fail(st, m);
                break;
            }
            rc = bfn(ctx, p, len, rd.flags, &n, &bad);
            st->records_read += n;
            if (bad) {
                em__seterr(EM_ECORRUPT, "%s: malformed record in the block at offset %llu", dpath,
                           (unsigned long long)rd.block);
                rc = fetch_fail(st, m);
            }
            if (rc) break;
        }
        while (!bfn) {
            if ((rc = bf_next(&rd, &r)) <= 0) {
                /* A bad block is the map output's fault (the message names
                 * the file and offset); running out of memory is not. */
                if (rc < 0 && rc != EM_ENOMEM) rc = fetch_fail(st, m);
                break;
            }
            st->records_read++;
            if ((rc = fn(ctx, &r))) break;
        }
        done += rd.off - start;
    }
    st->bytes_read += done;
    if (h) st->remote_bytes += done;
    else st->local_blocks++;
    bf_reader_free(&rd);
    if (mo) memout_release(o->mem, mo);
    else if (h) o->fetch->drop(o->fetch->ctx, h);
    else close(fd);
    return rc;
}

/* The remote fetches of a read: h[m] is map m's begun and not yet read,
 * flying the bytes of those, next the first map not yet considered. */
typedef struct ahead {
    void **h;
    uint64_t flying;
    int next;
} ahead;

/* Begin the fetches of the maps from a->next on while they fit in the
 * window (sr_fetcher), as the tracker's estimates of their sizes count
 * them (the real lengths come with the answers).  0 or a fetch failure. */
static int fetch_ahead(const sr_opts *o, ahead *a, sr_stats *st) {
    const sr_fetcher *F = o->fetch;
    uint64_t cap = F->in_flight ? F->in_flight : (uint64_t)48 << 20;
    for (; a->next < o->nmaps; a->next++) {
        int m = a->next;
        if (!o->dirs[m] || !o->seglens[m] || !loc_remote(o, o->dirs[m])) continue;
        if (a->flying && a->flying + o->seglens[m] > cap) break;
        uint64_t att = o->attempts ? o->attempts[m] : 0;
        if (!(a->h[m] = F->begin(F->ctx, o->dirs[m], o->shuffle_id, (uint32_t)m, att, o->reduce_id)))
            return fetch_fail(st, m);
        a->flying += o->seglens[m];
    }
    return 0;
}

/* Feed every map's segment to fn in map order, skipping maps that wrote
 * nothing; remote segments are fetched ahead (sr_fetcher). */
static int read_all(const sr_opts *o, consume_fn fn, consume_block_fn bfn, void *ctx, sr_stats *st) {
    ahead a = {NULL, 0, 0};
    int rc = 0;
    for (int m = 0; m < o->nmaps && o->fetch; m++)
        if (o->dirs[m] && loc_remote(o, o->dirs[m])) {
            if (!o->seglens)
                return em__seterr(EM_EFETCH, "shuffle %u map %d: a remote segment needs the tracker's sizes",
                                  o->shuffle_id, m);
            if (!(a.h = calloc((size_t)o->nmaps, sizeof *a.h)))
                return em__seterr(EM_ENOMEM, "shuffle %u: out of memory", o->shuffle_id);
            break;
        }
    for (int m = 0; m < o->nmaps && !rc; m++) {
        /* A map that wrote nothing, or nothing for this partition, is not
         * opened (as Spark skips empty blocks). */
        if (!o->dirs[m] || (o->seglens && !o->seglens[m])) continue;
        if (a.h && (rc = fetch_ahead(o, &a, st))) break;
        if (a.h && loc_remote(o, o->dirs[m])) {
            void *h = a.h[m];
            a.h[m] = NULL;
            rc = h ? read_segment(o, m, h, fn, bfn, ctx, st)
                   : em__seterr(EM_EFETCH, "shuffle %u map %d: its fetch was never begun", o->shuffle_id, m);
            a.flying -= o->seglens[m];
        } else {
            rc = read_segment(o, m, NULL, fn, bfn, ctx, st);
        }
    }
    for (int m = 0; a.h && m < o->nmaps; m++)
        if (a.h[m]) o->fetch->drop(o->fetch->ctx, a.h[m]);
    free(a.h);
    return rc;
}

/* ------------------------------------------------------------------ pass */

typedef struct pass_ctx {
    rec_sink_fn sink;
    void *sctx;
} pass_ctx;

static int pass_rec(void *ctx, const em_rec *r) {
    pass_ctx *p = ctx;
    return p->sink(p->sctx, r);
}

/* ------------------------------------------------------------------- agg */

static int read_agg(const sr_opts *o, rec_sink_fn sink, void *sctx, sr_stats *st) {
    sa_ctx a;
    int rc = sa_open(&a, o);
    if (rc) return rc;
    rc = read_all(o, NULL, sa_block, &a, st);
    if (!rc) rc = sa_finish(&a, sink, sctx);
    st->spills += a.spills;
    sa_close(&a);
    return rc;
}

/* ---------------------------------------------------- sort, group, cogroup */

typedef struct sort_ctx {
    const sr_opts *o;
    extsort es;
} sort_ctx;

static int sort_rec(void *ctx, const em_rec *r) {
    sort_ctx *s = ctx;
    if (s->o->mode != SR_SORT) {
        if (!r->key) return em__seterr(EM_EINVAL, "shuffle %u: grouping needs pair records", s->o->shuffle_id);
        if (s->o->mode == SR_COGROUP && (!r->vlen || *(const uint8_t *)r->val >= cogroup_sides(s->o)))
            return em__seterr(EM_ECORRUPT, "shuffle %u: cogroup value without a side tag below %d", s->o->shuffle_id,
                              cogroup_sides(s->o));
    }
    return es_add(&s->es, r);
}

/* A block of records into the sort, record by record; one of an 8-byte
 * key and value (REC_PAIR8, which es_add keeps as an index entry alone) is
 * seen from its bytes, with no varint decoding.  *nrec: the records taken;
 * *bad: the block holds bytes that are not records. */
static int sort_block(void *ctx, const uint8_t *p, size_t len, unsigned flags, uint64_t *nrec, int *bad) {
    const uint8_t *end = p + len;
    uint64_t n = 0;
    int rc = 0;
    while (p < end && !rc) {
        em_rec r;
        size_t k = REC_PAIR8;
        if (rec_is_pair8(p, end)) {
            r = (em_rec){p + 1, 8, p + 10, 8};
        } else if (!(k = rec_get(p, end, &r))) {
            *bad = 1;
            rc = EM_ECORRUPT;
            break;
        }
        rc = sort_rec(ctx, &r);
        n++;
        p += k;
    }
    *nrec = n;
    return rc;
}

/* Pass one (key, list) or (key, cogroup value) to sink.  A cogroup value
 * of n sides is the lists of sides 0 .. n-2 each after its varint length,
 * then the last side's list (recfmt.h). */
static int emit_group(const sr_opts *o, const ebuf *key, const ebuf *l, ebuf *out, rec_sink_fn sink, void *sctx) {
    em_rec r = {key->p ? (const void *)key->p : "", key->len, l[0].p ? (const void *)l[0].p : "", l[0].len};
    if (o->mode == SR_COGROUP) {
        int n = cogroup_sides(o);
        ebuf_reset(out);
        for (int i = 0; i < n; i++)
            if ((i < n - 1 && ebuf_put_varint(out, l[i].len)) || ebuf_append(out, l[i].p, l[i].len))
                return em__seterr(EM_ENOMEM, "cogroup: out of memory");
        r.val = out->p;
        r.vlen = out->len;
    }
    return sink(sctx, &r);
}

/* Walk the sorted records, collecting each key's values into lists (one
 * per cogroup side). */
static int emit_groups(const sr_opts *o, extsort *es, rec_sink_fn sink, void *sctx) {
    ebuf key = EBUF_INIT, out = EBUF_INIT, l[COGROUP_MAX_SIDES];
    em_rec r;
    int rc, have = 0, nl = o->mode == SR_COGROUP ? cogroup_sides(o) : 1;
    size_t total = 0;
    for (int i = 0; i < COGROUP_MAX_SIDES; i++) l[i] = (ebuf)EBUF_INIT;
    while ((rc = es_next(es, &r)) == 1) {
        if (!have || bytes_cmp(key.p, key.len, r.key, r.klen)) {
            if (have && (rc = emit_group(o, &key, l, &out, sink, sctx))) break;
            ebuf_reset(&key);
            for (int i = 0; i < nl; i++) ebuf_reset(&l[i]);
            total = 0;
            if (ebuf_append(&key, r.key, r.klen)) {
                rc = em__seterr(EM_ENOMEM, "group: out of memory");
                break;
            }
            have = 1;
        }
        /* A group is one record: refuse it as soon as it would pass the
         * limit, before it grows (a 2 GB group used to double its way to
         * 4 GB of memory).  The 10 bytes per side cover the varint
         * lengths. */
        if (o->max_record && key.len + total + r.vlen + 10 * (size_t)(nl + 1) > o->max_record) {
            rc = em__seterr(EM_ETOOBIG,
                            "%s: the values of one key (a %zu-byte key) exceed %zu bytes, ember.record.maxBytes: "
                            "a group is one record (raise the setting, or aggregate with reduce_by_key)",
                            o->mode == SR_COGROUP ? "cogroup/join" : "group_by_key", key.len, o->max_record);
            break;
        }
        size_t before;
        if (o->mode == SR_COGROUP) {
            const uint8_t *v = r.val;
            before = l[v[0]].len;
            rc = list_append(&l[v[0]], v + 1, r.vlen - 1);
            total += l[v[0]].len - before;
        } else {
            before = l[0].len;
            rc = list_append(&l[0], r.val, r.vlen);
            total += l[0].len - before;
        }
        if (rc) {
            rc = em__seterr(EM_ENOMEM, "group: out of memory");
            break;
        }
    }
    if (!rc && have) rc = emit_group(o, &key, l, &out, sink, sctx);
    ebuf_free(&key);
    for (int i = 0; i < nl; i++) ebuf_free(&l[i]);
    ebuf_free(&out);
    return rc;
}

/* The sorted records, or their groups, to sink. */
static int sort_finish(sort_ctx *s, rec_sink_fn sink, void *sctx) {
    em_rec r;
    int rc = es_finish(&s->es);
    if (!rc && s->o->mode == SR_SORT) {
        while ((rc = es_next(&s->es, &r)) == 1)
            if ((rc = sink(sctx, &r))) break;
    } else if (!rc) {
        rc = emit_groups(s->o, &s->es, sink, sctx);
    }
    return rc;
}

static void sort_open(sort_ctx *s, const sr_opts *o) {
    s->o = o;
    es_init(&s->es, o->spill_dir, o->mem_budget, o->mode == SR_SORT && o->descending, o->codec, o->block_bytes);
}

static int read_sorted(const sr_opts *o, rec_sink_fn sink, void *sctx, sr_stats *st) {
    sort_ctx s;
    sort_open(&s, o);
    int rc = read_all(o, NULL, sort_block, &s, st);
    if (!rc) rc = sort_finish(&s, sink, sctx);
    st->spills += s.es.spills;
    es_free(&s.es);
    return rc;
}

/* ----------------------------------------------------------------- local */

struct sr_local {
    sr_opts o;
    sa_ctx a;  /* SR_AGG */
    sort_ctx s; /* SR_SORT, SR_GROUP, SR_COGROUP */
};

sr_local *sr_local_open(const sr_opts *opts) {
    if (opts->mode != SR_AGG && opts->mode != SR_SORT && opts->mode != SR_GROUP && opts->mode != SR_COGROUP) {
        em__seterr(EM_EINVAL, "sr_local_open: mode %d", (int)opts->mode);
        return NULL;
    }
    sr_local *l = calloc(1, sizeof *l);
    if (!l) {
        em__seterr(EM_ENOMEM, "out of memory");
        return NULL;
    }
    l->o = *opts;
    if (!l->o.mem_budget) l->o.mem_budget = (size_t)64 << 20;
    if (l->o.mode == SR_AGG) {
        if (sa_open(&l->a, &l->o)) {
            free(l);
            return NULL;
        }
    } else {
        sort_open(&l->s, &l->o);
    }
    return l;
}

int sr_local_block(sr_local *l, const uint8_t *p, size_t len) {
    if (l->o.mode == SR_AGG) {
        uint64_t n = 0;
        int bad = 0;
        int rc = sa_block(&l->a, p, len, 0, &n, &bad);
        return bad ? em__seterr(EM_ECORRUPT, "aggregation: malformed record") : rc;
    }
    uint64_t n = 0;
    int bad = 0;
    int rc = sort_block(&l->s, p, len, 0, &n, &bad);
    return bad ? em__seterr(EM_ECORRUPT, "grouping: malformed record") : rc;
}

int sr_local_finish(sr_local *l, rec_sink_fn sink, void *sctx, int64_t *spills) {
    int rc = l->o.mode == SR_AGG ? sa_finish(&l->a, sink, sctx) : sort_finish(&l->s, sink, sctx);
    if (spills) *spills += l->o.mode == SR_AGG ? l->a.spills : l->s.es.spills;
    return rc == EM_STOP ? 0 : rc;
}

void sr_local_free(sr_local *l) {
    if (!l) return;
    if (l->o.mode == SR_AGG) sa_close(&l->a);
    else es_free(&l->s.es);
    free(l);
}

/* ------------------------------------------------------------ lost check */

/* Whether map m's output shares map f's executor (the same location) or,
 * with lost_host, its host. */
static int same_scope(const sr_opts *o, int f, int m) {
    const char *a = o->dirs[f], *b = o->dirs[m];
    if (!strcmp(a, b)) return 1;
    size_t n = 0, k = 0;
    const char *ha, *hb;
    if (!o->fetch || !o->fetch->lost_host || !(ha = loc_host(a, &n)) || !(hb = loc_host(b, &k))) return 0;
    return n == k && !memcmp(ha, hb, n);
}

/* A block consumer that drops what it is given: output_good's, which
 * reads a segment for its checks alone. */
static int drop_block(void *ctx, const uint8_t *p, size_t len, unsigned flags, uint64_t *n, int *bad) {
    *n = 0;
    return 0;
}

/* Whether map m's output can still be read (see sr_stats' lost): one kept
 * in memory is; one in files or fetched has this partition's segment read
 * through, its index and blocks checked as a read checks them (the
 * tracker's size being an estimate, an index whose offsets moved is seen
 * only by reading the blocks they point at).  Failures that are not the
 * output's (out of memory, the task killed) count as good.  Sets the
 * thread's message; the caller keeps its own. */
static int output_good(const sr_opts *o, int m) {
    uint64_t att = o->attempts ? o->attempts[m] : 0;
    memout *mo = memout_get(o->mem, o->shuffle_id, (uint32_t)m, att);
    void *h = NULL;
    if (mo) {
        memout_release(o->mem, mo);
        return 1;
    }
    if (loc_remote(o, o->dirs[m])) {
        if (!o->seglens || !o->seglens[m]) return 1; /* nothing to fetch */
        if (!(h = o->fetch->begin(o->fetch->ctx, o->dirs[m], o->shuffle_id, (uint32_t)m, att, o->reduce_id)))
            return 0;
    }
    sr_stats scratch;
    memset(&scratch, 0, sizeof scratch);
    return read_segment(o, m, h, NULL, drop_block, NULL, &scratch) != EM_EFETCH;
}

/* After the fetch failure of st->failed_map: list the other outputs of its
 * executor (or host) that are lost too.  The failure's message stays. */
static void check_lost(const sr_opts *o, sr_stats *st) {
    int f = st->failed_map;
    if (f < 0 || f >= o->nmaps || !o->dirs[f]) return;
    char why[600];
    snprintf(why, sizeof why, "%s", em_errmsg());
    for (int m = 0; m < o->nmaps; m++) {
        if (m == f || !o->dirs[m] || !same_scope(o, f, m) || output_good(o, m)) continue;
        if (!st->lost && !(st->lost = malloc((size_t)o->nmaps * sizeof *st->lost))) break; /* only f, then */
        st->lost[st->nlost++] = m;
    }
    em__seterr(EM_EFETCH, "%s", why);
}

/* ------------------------------------------------------------------ entry */

int shuffle_read(const sr_opts *opts, rec_sink_fn sink, void *sctx, sr_stats *stats) {
    sr_stats local;
    int rc;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    stats->failed_map = -1;
    if (!opts || !sink || opts->nmaps < 0 || (opts->nmaps && !opts->dirs) || opts->reduce_id < 0)
        return em__seterr(EM_EINVAL, "shuffle_read: invalid options");
    sr_opts o = *opts;
    if (!o.mem_budget) o.mem_budget = (size_t)64 << 20;
    switch (o.mode) {
    case SR_PASS: {
        pass_ctx p = {sink, sctx};
        rc = read_all(&o, pass_rec, NULL, &p, stats);
        break;
    }
    case SR_AGG: rc = read_agg(&o, sink, sctx, stats); break;
    case SR_SORT:
    case SR_GROUP:
    case SR_COGROUP: rc = read_sorted(&o, sink, sctx, stats); break;
    default: rc = em__seterr(EM_EINVAL, "shuffle_read: unknown mode %d", (int)o.mode);
    }
    if (rc == EM_EFETCH) check_lost(&o, stats);
    return rc == EM_STOP ? 0 : rc;
}
