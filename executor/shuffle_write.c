/*
 * shuffle_write.c -- the map side of a shuffle: partition a task's output
 * records, optionally combine them, and write one data file with one run of
 * blocks per reduce partition plus an index of offsets (format and commit
 * protocol in shuffle.h).
 *
 * Records are appended to a per-partition raw buffer in the batch encoding;
 * when a buffer reaches block_bytes it is compressed into a block appended
 * to the writer's one blocks buffer (the arena), the partition noting the
 * extent.  Most map outputs fit in the budget once compressed, and then
 * sw_commit writes each partition's extents straight into the data file,
 * or hands the arena with the extents to the in-memory store (memout.h):
 * one buffer per output, so an output kept compressed wastes at most one
 * huge page, not one per partition.
 * When the buffered bytes outgrow the budget every partition's pending bytes
 * are compressed and written to a spill file, remembering the extents per
 * partition; sw_commit copies those extents (copy_file_range, no
 * recompression) before the partition's in-memory blocks, so each segment is
 * still one run in arrival order.
 *
 * An output that may be kept in memory is coded with the store's codec
 * (memout.h: local[N] with room in the store; by default the front coding
 * of prefixcodec.h); should it go to a file after all (it spilled, the
 * store filled up), its blocks are coded again with the writer's own
 * codec first.
 *
 * An output that may be kept in memory uncompressed (the store's codec
 * none), or any output of codec none while no store codes it otherwise,
 * is built in place
 * instead, in the arena too (the plain mode): each partition has an open
 * block of codec none there, a region it appends its records to, and the
 * block's header is written when it reaches block_bytes; the partition
 * then opens its next block at the arena's end.  A region is sized for a
 * whole block (block_bytes and the largest record seen), except a
 * partition's first ones, which start small and double, moved to the
 * arena's end when full (or extended in place when they are its last
 * bytes), so that a shuffle of many small partitions does not hold a
 * block's room for each.  No raw buffer, no copy; at commit the arena is
 * handed to the store as it is.  One buffer per output, not one per
 * partition, is what lets a map task reuse the whole mapping an earlier
 * output gave back (bigbuf.h) instead of faulting in and clearing fresh
 * pages under 64 growing buffers: most of a 20M-record sort's page
 * clearing was there.  Blocks end where the raw buffers' would, so
 * should the output have to go to a file after all (it spilled, or the
 * store is full), its plain blocks are compressed with the codec first,
 * and files and spills hold what they would have held.
 *
 * With map-side combining, records first go through a table (combtab.h:
 * keys and combiners of up to 8 bytes side by side, else an aggmap); when it
 * outgrows its half of the budget its entries are written out as above and
 * the table starts over.  The reduce side combines again, so combining
 * partially is correct -- and so is not combining: when the first
 * SW_ADAPT_ROWS records left more than SW_ADAPT_RATIO keys per record, the
 * table is written out and later records pass straight to the partitions:
 * as they are where their value is a combiner already (reduce_by_key's),
 * as create makes a builtin's, and, for user create functions, as values
 * in blocks marked BF_VALUES, which the reduce side creates or merges as
 * values (so no user function runs on the map side for them).  Records of
 * 8-byte values reach the table through a short queue that prefetches
 * what each record's lookup will touch; a builtin combiner (combiners.h)
 * is updated there in place, with no call per record.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bigbuf.h"
#include "combtab.h"
#include "sizehint.h"
#include "curmetrics.h"
#include "shuffle_index.h"
#include "blockfile.h"
#include "err.h"
#include "extsort.h"
#include "recfmt.h"
#include "shuffle.h"
#include "shuffle_files.h"

/* Adaptive partial aggregation (as Trino's): after this many records, a
 * combine table holding more than this many keys per record stops
 * combining.  Combining 2.5M records of 920k distinct keys costs a lookup
 * per record and saves little; word counts collapse far below the ratio. */
#define SW_ADAPT_ROWS 100000
#define SW_ADAPT_RATIO 0.8

typedef struct sw_part {
    ebuf raw;      /* encoded records not yet compressed */
    es_run *ext;   /* extents of this partition in the spill file */
    size_t next, cap;
    es_run *aext;  /* extents of this partition's (closed) blocks in the
                      arena */
    size_t anext, acap;
    /* Plain mode: the open block's header at arena offset blk, blen bytes
     * of records after it, in a region of room bytes; next_room is the
     * region the next block starts with. */
    size_t blk, blen, room, next_room;
    int opened;    /* plain mode: a block is open */
} sw_part;

struct shuffle_writer {
    sw_opts o;
    char dir[SHUFFLE_PATH];
    char data_tmp[SHUFFLE_PATH], index_tmp[SHUFFLE_PATH], spill_path[SHUFFLE_PATH];
    int spill_fd;
    uint64_t spill_off;
    sw_part *parts;
    ebuf arena;         /* blocks not yet written, of every partition:
                           compressed, or (plain mode) built in place */
    size_t buffered;    /* raw + compressed bytes held in parts and arena */
    size_t buf_budget;  /* past it, parts spill */
    combtab comb;       /* the map-side combine (combtab.h) */
    size_t comb_budget; /* past it, the combine table is written out */
    uint64_t comb_in;   /* records that went through the table */
    uint64_t comb_out;  /* entries it has written out */
    size_t peak_keys;   /* the most keys it held (sizehint.h) */
    int passing;        /* the combining ratio was poor: records pass
                           uncombined (checked once, when comb_in reaches
                           SW_ADAPT_ROWS) */
    int direct;         /* combining, not passing: sw_add's hot path */
    unsigned values;    /* BF_VALUES once passing with a user create: the
                           blocks begun since hold values as they came */
    bf_codec file_codec; /* the codec of files and spills (o.codec is the
                           in-memory store's while the output may be
                           kept there) */
    int plain;          /* blocks are built in place, uncompressed */
    size_t max_rec;     /* plain mode: the largest record added */
    size_t expect;      /* the arena's likely size (memout_last_bytes) */
    ebuf scratch;
    bf_cctx cx;         /* the compressor's state, shared by the partitions */
    uint64_t records;
    int64_t spills;
    size_t peak_buf;    /* the most buffered held, and the combine table's */
    size_t peak_comb;   /* most bytes: the writer's peak memory */
};

static unsigned tmp_seq; /* distinguishes writers of one process */

shuffle_writer *sw_open(const sw_opts *opts) {
    if (!opts || !opts->dir || opts->nparts <= 0 || !opts->partition || strlen(opts->dir) > SHUFFLE_PATH - 100) {
        em__seterr(EM_EINVAL, "sw_open: invalid options");
        return NULL;
    }
    if (opts->nparts > SHUFFLE_MAX_PARTS) {
        em__seterr(EM_EINVAL, "shuffle write: %d partitions, at most %d", opts->nparts, SHUFFLE_MAX_PARTS);
        return NULL;
    }
    if (opts->combine && (!opts->combine->create || !opts->combine->merge_value)) {
        em__seterr(EM_EINVAL, "sw_open: combine needs create and merge_value");
        return NULL;
    }
    shuffle_writer *w = calloc(1, sizeof *w);
    if (w) w->parts = calloc((size_t)opts->nparts, sizeof *w->parts);
    if (!w || !w->parts) {
        free(w);
        em__seterr(EM_ENOMEM, "sw_open: out of memory");
        return NULL;
    }
    w->o = *opts;
    snprintf(w->dir, sizeof w->dir, "%s", opts->dir);
    w->o.dir = w->dir;
    if (!w->o.block_bytes) w->o.block_bytes = 65536;
    if (w->o.block_bytes > BF_MAX_RAW) w->o.block_bytes = BF_MAX_RAW;
    size_t budget = w->o.mem_budget ? w->o.mem_budget : (size_t)64 << 20;
    /* With combining, the table and the partition buffers share the budget. */
    w->comb_budget = budget / 2;
    w->buf_budget = opts->combine ? budget / 2 : budget;
    w->spill_fd = -1;
    w->file_codec = w->o.codec;
    bf_codec mc;
    if (memout_codec(w->o.mem, &mc)) w->o.codec = mc;
    w->plain = w->o.codec.id == BF_NONE;
    w->expect = memout_last_bytes(w->o.mem);
    if (opts->combine) {
        w->direct = 1;
        ct_init(&w->comb, opts->combine, &w->scratch, AGG8_SEED(AGG8_MAP_SIDE, opts->shuffle_id));
        ct_expect(&w->comb, sh_get(w->dir, opts->shuffle_id, SH_MAP8), sh_get(w->dir, opts->shuffle_id, SH_MAP));
    }
    return w;
}

/* The temporary names of the data and index files, made when files are
 * written (an output kept in memory needs none). */
static void tmp_names(shuffle_writer *w) {
    unsigned seq = __atomic_fetch_add(&tmp_seq, 1, __ATOMIC_RELAXED);
    int pid = (int)getpid();
    char base[SHUFFLE_PATH];
    shuffle_data_path(base, sizeof base, w->dir, w->o.shuffle_id, w->o.map_id, w->o.attempt);
    /* Unique per attempt, process and writer: concurrent attempts of one
     * map task never write the same temporary file. */
    int n = shuffle_tmp_path(w->data_tmp, sizeof w->data_tmp, base, pid, seq);
    shuffle_index_path(base, sizeof base, w->dir, w->o.shuffle_id, w->o.map_id, w->o.attempt);
    n |= shuffle_tmp_path(w->index_tmp, sizeof w->index_tmp, base, pid, seq);
    EM_ASSERT(n > 0); /* lengths are bounded by sw_open's dir check */
}

/* Room for extra more bytes in the arena.  Once it outgrows the heap
 * (half a huge page), it asks at once for the size of the output kept
 * last, which the next output most likely shares: one request takes a
 * whole mapping an earlier output gave back to bigbuf's cache, where
 * doubling would take small ones, copying between them, or fault in
 * fresh pages.  A small output never asks: it would hold a big mapping
 * until the store trims it.  0 or EM_ENOMEM (message set). */
static int arena_reserve(shuffle_writer *w, size_t extra) {
    ebuf *a = &w->arena;
    if (a->cap - a->len >= extra) return 0;
    if (a->len + extra > BB_MIN / 2 && w->expect > a->len + extra) extra = w->expect - a->len;
    return bb_reserve(a, extra) ? em__seterr(EM_ENOMEM, "shuffle write: out of memory") : 0;
}

/* A plain-mode partition's first region; later ones double up to a whole
 * block's. */
#define SW_FIRST_ROOM 1024

static int add_run(es_run **v, size_t *n, size_t *cap, uint64_t off, uint64_t len);

/* Plain mode: write the open block's header, ending it, and note it as
 * the partition's extent.  0 or EM_ENOMEM. */
static int close_plain(shuffle_writer *w, sw_part *p) {
    if (!p->opened) return 0;
    p->opened = 0;
    bf_plain_header(w->arena.p + p->blk, p->blen, w->values);
    size_t len = BF_HEADER + p->blen;
    p->blen = 0;
    if (add_run(&p->aext, &p->anext, &p->acap, p->blk, len))
        return em__seterr(EM_ENOMEM, "shuffle write: out of memory");
    return 0;
}

/* Plain mode: make room for a record of n bytes in partition p's open
 * block, opening one at the arena's end if none is, or growing its region
 * (in place when it ends the arena, else moved to the end).  0 or
 * EM_ENOMEM. */
static int plain_room(shuffle_writer *w, sw_part *p, size_t n) {
    size_t whole = w->o.block_bytes + w->max_rec; /* a block ends below it */
    int rc;
    size_t room = p->opened ? p->room * 2 : p->next_room ? p->next_room : SW_FIRST_ROOM;
    if (room > whole) room = whole;
    if (room < p->blen + n) room = p->blen + n;
    if (p->opened && p->blk + BF_HEADER + p->room == w->arena.len) { /* the arena's last bytes */
        if ((rc = arena_reserve(w, room - p->room))) return rc;
        w->arena.len += room - p->room;
    } else {
        if ((rc = arena_reserve(w, BF_HEADER + room))) return rc;
        size_t at = w->arena.len;
        if (p->opened) memcpy(w->arena.p + at + BF_HEADER, w->arena.p + p->blk + BF_HEADER, p->blen);
        else w->buffered += BF_HEADER;
        p->blk = at;
        p->opened = 1;
        w->arena.len += BF_HEADER + room;
    }
    p->room = p->next_room = room;
    return 0;
}

/* Append extent [off, off+len) to the list (*v, *n of *cap), merged with
 * the last one when contiguous.  0 or EM_ENOMEM. */
static int add_run(es_run **v, size_t *n, size_t *cap, uint64_t off, uint64_t len) {
    if (*n && (*v)[*n - 1].off + (*v)[*n - 1].len == off) {
        (*v)[*n - 1].len += len;
        return 0;
    }
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        es_run *ne = realloc(*v, nc * sizeof *ne);
        if (!ne) return EM_ENOMEM;
        *v = ne;
        *cap = nc;
    }
    (*v)[*n].off = off;
    (*v)[*n].len = len;
    (*n)++;
    return 0;
}

static int add_extent(sw_part *p, uint64_t off, uint64_t len) { return add_run(&p->ext, &p->next, &p->cap, off, len); }

/* Compress raw[0, rlen) as one block at the end of the arena, noted as
 * partition p's. */
static int arena_block(shuffle_writer *w, sw_part *p, const uint8_t *raw, size_t rlen, unsigned flags) {
    size_t before = w->arena.len;
    /* The arena is a bigbuf.h buffer (its pages reused between tasks). */
    int rc;
    if (rlen <= BF_MAX_RAW && (rc = arena_reserve(w, bf_block_bound(w->o.codec, rlen)))) return rc;
    rc = bf_compress_block_flags(&w->arena, raw, rlen, w->o.codec, &w->cx, flags);
    if (rc) return rc;
    if (add_run(&p->aext, &p->anext, &p->acap, before, w->arena.len - before)) {
        w->arena.len = before;
        return em__seterr(EM_ENOMEM, "shuffle write: out of memory");
    }
    return 0;
}

/* Compress partition p's raw records into a block in the arena (plain
 * mode: end its open block). */
static int compress_part(shuffle_writer *w, sw_part *p) {
    if (w->plain) return close_plain(w, p);
    if (!p->raw.len) return 0;
    size_t before = w->arena.len;
    int rc = arena_block(w, p, p->raw.p, p->raw.len, w->values);
    if (rc) return rc;
    w->buffered = w->buffered - p->raw.len + (w->arena.len - before);
    ebuf_reset(&p->raw);
    return 0;
}

/* Write partition p's arena extents at *off of fd (path for messages),
 * advancing *off, and forget them.  0 or EM_EIO. */
static int write_arena_part(shuffle_writer *w, sw_part *p, int fd, const char *path, uint64_t *off, int spill) {
    for (size_t e = 0; e < p->anext; e++) {
        int rc = bf_pwrite_all(fd, path, w->arena.p + p->aext[e].off, p->aext[e].len, *off);
        if (rc) return rc;
        if (spill && add_extent(p, *off, p->aext[e].len)) return em__seterr(EM_ENOMEM, "shuffle spill: out of memory");
        *off += p->aext[e].len;
    }
    p->anext = 0;
    return 0;
}

/* The output goes to a file after all (it spills, or the store has no
 * room for it): blocks coded for the store are coded again with the
 * file codec, so that files and spills hold what they would have held
 * (plain blocks compressed, prefix ones decoded and compressed).  Nothing
 * to do when the two codecs are the same. */
static int leave_memory(shuffle_writer *w) {
    if (w->o.codec.id == w->file_codec.id && w->o.codec.level == w->file_codec.level) return 0;
    int rc = 0;
    for (int i = 0; i < w->o.nparts && !rc; i++) rc = close_plain(w, &w->parts[i]);
    if (rc) return rc;
    ebuf kept = w->arena;
    w->arena = (ebuf)EBUF_INIT;
    w->plain = 0;
    w->o.codec = w->file_codec;
    bf_reader rd;
    bf_reader_init_mem(&rd, kept.p, "shuffle output", 0, 0);
    for (int i = 0; i < w->o.nparts && !rc; i++) {
        sw_part *p = &w->parts[i];
        es_run *x = p->aext;
        size_t nx = p->anext, before = w->arena.len, had = 0;
        p->aext = NULL;
        p->anext = p->acap = 0;
        for (size_t e = 0; e < nx && !rc; e++) {
            /* Each block's records: plain ones where they lie, others
             * decoded (and every block's CRC checked on the way). */
            const uint8_t *raw = NULL;
            size_t rlen = 0;
            had += x[e].len;
            bf_reader_move_mem(&rd, kept.p, x[e].off, x[e].len);
            while (!rc && (rc = bf_next_block(&rd, &raw, &rlen)) == 1) rc = arena_block(w, p, raw, rlen, rd.flags);
        }
        free(x);
        w->buffered = w->buffered - had + (w->arena.len - before);
    }
    bf_reader_free(&rd);
    bb_free(&kept);
    return rc;
}

/* Write every partition's pending bytes, compressed, to the spill file. */
static int spill_parts(shuffle_writer *w) {
    int rc;
    size_t mem = w->buffered;
    if (mem > w->peak_buf) w->peak_buf = mem;
    if ((rc = leave_memory(w))) return rc;
    uint64_t off0 = w->spill_off;
    if (w->spill_fd < 0) {
        if (shuffle_spill_template(w->spill_path, sizeof w->spill_path, w->dir, w->o.shuffle_id, w->o.map_id,
                                   w->o.attempt, (int)getpid()))
            return em__seterr(EM_EINVAL, "shuffle spill: path too long in %s", w->dir);
        w->spill_fd = mkostemp(w->spill_path, O_CLOEXEC);
        if (w->spill_fd < 0) return em__seterr(EM_EIO, "shuffle spill %s: %s", w->spill_path, strerror(errno));
        unlink(w->spill_path); /* gone when closed, whatever happens */
    }
    /* Compressed blocks, or plain ones of codec none. */
    for (int i = 0; i < w->o.nparts; i++) {
        sw_part *p = &w->parts[i];
        if ((rc = compress_part(w, p))) return rc;
        if ((rc = write_arena_part(w, p, w->spill_fd, w->spill_path, &w->spill_off, 1))) return rc;
    }
    /* Every buffered byte is in the file now; the arena keeps its memory
     * for the next blocks. */
    w->buffered = 0;
    w->arena.len = 0;
    w->spills++;
    tm_spilled(mem, w->spill_off - off0);
    return 0;
}

/* Room for n encoded bytes at the end of partition p's open block (plain
 * mode) or raw buffer: *at is where they go, then part_added counts them.
 * 0 or < 0. */
static int part_room(shuffle_writer *w, sw_part *p, size_t n, uint8_t **at) {
    int rc;
    if (n > BF_MAX_RAW)
        return em__seterr(EM_ETOOBIG, "shuffle %u: record of %zu bytes exceeds the %zu byte block limit",
                          w->o.shuffle_id, n, BF_MAX_RAW);
    if (w->plain) {
        if (p->opened && p->blen + n > BF_MAX_RAW && (rc = close_plain(w, p))) return rc;
        if (n > w->max_rec) w->max_rec = n;
        if ((!p->opened || p->blen + n > p->room) && (rc = plain_room(w, p, n))) return rc;
        *at = w->arena.p + p->blk + BF_HEADER + p->blen;
        return 0;
    }
    if (p->raw.len + n > BF_MAX_RAW && (rc = compress_part(w, p))) return rc;
    if (bb_reserve(&p->raw, n)) return em__seterr(EM_ENOMEM, "shuffle write: out of memory");
    *at = p->raw.p + p->raw.len;
    return 0;
}

/* n bytes were written where part_room said: count them, end the block
 * when full, spill past the budget. */
static int part_added(shuffle_writer *w, sw_part *p, size_t n) {
    int rc;
    w->buffered += n;
    w->records++;
    if (w->plain) {
        p->blen += n;
        if (p->blen >= w->o.block_bytes && (rc = close_plain(w, p))) return rc;
    } else {
        p->raw.len += n;
        if (p->raw.len >= w->o.block_bytes && (rc = compress_part(w, p))) return rc;
    }
    return w->buffered > w->buf_budget ? spill_parts(w) : 0;
}

static sw_part *part_at(shuffle_writer *w, int pi) {
    if (pi >= 0 && pi < w->o.nparts) return &w->parts[pi];
    em__seterr(EM_EINVAL, "shuffle %u: partitioner returned %d, not in [0, %d)", w->o.shuffle_id, pi, w->o.nparts);
    return NULL;
}

static int part_add(shuffle_writer *w, int pi, const em_rec *r) {
    sw_part *p = part_at(w, pi);
    size_t n = rec_encoded_size(r);
    uint8_t *at;
    int rc;
    if (!p) return EM_EINVAL;
    if ((rc = part_room(w, p, n, &at))) return rc;
    rec_put(at, r);
    return part_added(w, p, n);
}

static int add_comb_entry(void *ctx, const em_rec *r) {
    shuffle_writer *w = ctx;
    return part_add(w, w->o.partition(w->o.pctx, r), r);
}

/* Write the combine table's entries to the partitions and empty it. */
static int dump_comb(shuffle_writer *w) {
    int rc;
    if ((rc = ct_drain(&w->comb))) return rc;
    if (ct_mem(&w->comb) > w->peak_comb) w->peak_comb = ct_mem(&w->comb);
    if (ct_count(&w->comb) > w->peak_keys) w->peak_keys = ct_count(&w->comb);
    if ((rc = ct_each(&w->comb, add_comb_entry, w))) return rc;
    w->comb_out += ct_count(&w->comb);
    ct_clear(&w->comb);
    return 0;
}

/* A record passed on uncombined: as it is into a block of values, or as
 * the combiner create makes of its value (the reduce side merges
 * combiners). */
static int pass_uncombined(shuffle_writer *w, const em_rec *r) {
    const agg_spec *a = w->o.combine;
    if (a->create_identity || w->values) return part_add(w, w->o.partition(w->o.pctx, r), r);
    em_rec c = {r->key, r->klen, NULL, 0};
    uint8_t b[8];
    if (a->builtin) {
        if (r->vlen != 8) return comb_bad_len(a->builtin, r->vlen);
        agg_builtin_create(a, b, r->val);
        c.val = b;
        c.vlen = 8;
    } else {
        em_rec v = {NULL, 0, r->val, r->vlen};
        ebuf_reset(&w->scratch);
        int rc = a->create(a->ctx, &v, &w->scratch);
        if (rc < 0) return rc;
        c.val = w->scratch.p ? w->scratch.p : (const uint8_t *)"";
        c.vlen = w->scratch.len;
    }
    return part_add(w, w->o.partition(w->o.pctx, &c), &c);
}

/* Adaptive partial aggregation: once SW_ADAPT_ROWS records have gone
 * through the table, keep combining only if they collapsed to at most
 * SW_ADAPT_RATIO distinct keys per record. */
static int adapt(shuffle_writer *w) {
    const agg_spec *a = w->o.combine;
    int rc;
    if ((rc = ct_drain(&w->comb))) return rc;
    if ((double)(w->comb_out + ct_count(&w->comb)) <= (double)w->comb_in * SW_ADAPT_RATIO) return 0;
    w->passing = 1;
    if ((rc = dump_comb(w))) return rc;
    /* A user create would be called once per record from now on: the
     * records go as values instead, in blocks of their own, and the reduce
     * side creates or merges each as a value (its merge_value), which it
     * would have done for the combiner all the same. */
    if (a->builtin || a->create_identity) return 0;
    for (int i = 0; i < w->o.nparts; i++)
        if ((rc = compress_part(w, &w->parts[i]))) return rc;
    w->values = BF_VALUES;
    return 0;
}

/* Every record but the hot path's.  The checks a record's add would have
 * to make after it -- the adaptive one, the table's budget -- are made
 * before the next record instead, which is where they matter (the table
 * is written out at sw_commit all the same).  Never inlined: sw_add's hot
 * path would then carry its frame. */
static __attribute__((noinline)) int add_general(shuffle_writer *w, const em_rec *r) {
    if (!w->o.combine) return part_add(w, w->o.partition(w->o.pctx, r), r);
    if (!r->key) return em__seterr(EM_EINVAL, "shuffle %u: map-side combine needs pair records", w->o.shuffle_id);
    if (w->passing) return pass_uncombined(w, r);
    const agg_spec *a = w->o.combine;
    int rc;
    if (a->builtin && r->vlen != 8) return comb_bad_len(a->builtin, r->vlen);
    if (w->comb_in == SW_ADAPT_ROWS) {
        if ((rc = adapt(w))) return rc;
        if (w->passing) {
            w->direct = 0;
            return pass_uncombined(w, r);
        }
    }
    if (ct_mem(&w->comb) > w->comb_budget && (rc = dump_comb(w))) return rc;
    if ((rc = ct_add(&w->comb, r))) return rc;
    w->comb_in++;
    return 0;
}

int sw_add(shuffle_writer *w, const em_rec *r) {
    /* A pair of an 8-byte value (a word count's, PageRank's
     * contributions) while combining: straight to the table's queue, a
     * tail call, while neither check of add_general is due. */
    if (w->direct && r->vlen == 8 && r->key && w->comb_in != SW_ADAPT_ROWS && ct_mem(&w->comb) <= w->comb_budget) {
        w->comb_in++;
        return ct_add(&w->comb, r);
    }
    return add_general(w, r);
}

/* Whether records go to the partitions as they are: no combining, or
 * combining given up (adapt) with a combiner that starts as the value, or
 * into blocks of values. */
static int passes_as_is(const shuffle_writer *w) {
    const agg_spec *a = w->o.combine;
    return !a || (w->passing && (a->create_identity || (a->builtin && !a->has_zero) || w->values));
}

int sw_add_batch(shuffle_writer *w, const uint8_t *b, size_t len, uint64_t *nrec) {
    const uint8_t *p = b, *end = b + len;
    unsigned since = 0;
    uint64_t taken = 0; /* records, SW_CHECK_EVERY at a time (since has the rest) */
    while (p < end) {
        em_rec r;
        size_t n = REC_PAIR8;
        int rc;
        if (++since == SW_CHECK_EVERY) { /* a batch may be a whole partition */
            since = 0;
            taken += SW_CHECK_EVERY;
            if (w->o.cancelled && w->o.cancelled()) return em__seterr(EM_ECANCELED, "task killed");
        }
        if (rec_is_pair8(p, end)) /* seen from its bytes, no varint decoding */
            r = (em_rec){p + 1, 8, p + 10, 8};
        else if (!(n = rec_get(p, end, &r)))
            return em__seterr(EM_ECORRUPT, "malformed record in a batch");
        if (passes_as_is(w)) {
            /* Its partition, then its encoded bytes copied whole, whatever
             * its shape. */
            sw_part *part = part_at(w, w->o.partition(w->o.pctx, &r));
            uint8_t *at;
            if (!part) return EM_EINVAL;
            if ((rc = part_room(w, part, n, &at))) return rc;
            memcpy(at, p, n);
            rc = part_added(w, part, n);
        } else {
            rc = sw_add(w, &r);
        }
        if (rc) return rc;
        p += n;
    }
    if (nrec) *nrec += taken + since;
    return 0;
}

/* Copy len bytes from the spill file to the data file, in the kernel when
 * the filesystem allows. */
static int copy_extent(shuffle_writer *w, int to, uint64_t from_off, uint64_t to_off, uint64_t len) {
    while (len) {
        loff_t in = (loff_t)from_off, out = (loff_t)to_off;
        ssize_t k = copy_file_range(w->spill_fd, &in, to, &out, (size_t)len, 0);
        if (k > 0) {
            from_off += (uint64_t)k;
            to_off += (uint64_t)k;
            len -= (uint64_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR) continue;
        if (k == 0 || (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP))
            return em__seterr(EM_EIO, "shuffle write %s: copying spilled blocks: %s", w->data_tmp,
                              k == 0 ? "spill file truncated" : strerror(errno));
        break; /* fall back to reading and writing */
    }
    while (len) {
        size_t chunk = len < ((size_t)1 << 20) ? (size_t)len : (size_t)1 << 20;
        ebuf_reset(&w->scratch);
        if (ebuf_reserve(&w->scratch, chunk)) return em__seterr(EM_ENOMEM, "shuffle write: out of memory");
        ssize_t k = pread(w->spill_fd, w->scratch.p, chunk, (off_t)from_off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0)
            return em__seterr(EM_EIO, "shuffle spill %s: %s", w->spill_path,
                              k == 0 ? "file truncated" : strerror(errno));
        int rc = bf_pwrite_all(to, w->data_tmp, w->scratch.p, (size_t)k, to_off);
        if (rc) return rc;
        from_off += (uint64_t)k;
        to_off += (uint64_t)k;
        len -= (uint64_t)k;
    }
    return 0;
}

/* Write the data and index files under their temporary names. */
static int write_files(shuffle_writer *w, uint64_t *seg) {
    int n = w->o.nparts, rc = 0;
    size_t isize = shuffle_index_size(n);
    uint64_t *offs = malloc(((size_t)n + 1) * sizeof *offs);
    uint8_t *idx = malloc(isize), hdr[SHUFFLE_DATA_HEADER];
    if (!offs || !idx) {
        free(offs);
        free(idx);
        return em__seterr(EM_ENOMEM, "shuffle write: out of memory");
    }
    tmp_names(w);
    int fd = open(w->data_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        free(offs);
        free(idx);
        return em__seterr(EM_EIO, "shuffle write %s: %s", w->data_tmp, strerror(errno));
    }
    shuffle_data_header(hdr, n);
    rc = bf_pwrite_all(fd, w->data_tmp, hdr, sizeof hdr, 0);
    uint64_t off = SHUFFLE_DATA_HEADER;
    for (int i = 0; i < n && !rc; i++) {
        sw_part *p = &w->parts[i];
        offs[i] = off;
        uint64_t start = off;
        for (size_t e = 0; e < p->next && !rc; e++) {
            rc = copy_extent(w, fd, p->ext[e].off, off, p->ext[e].len);
            off += p->ext[e].len;
        }
        if (rc || (rc = compress_part(w, p))) break;
        rc = write_arena_part(w, p, fd, w->data_tmp, &off, 0);
        if (seg) seg[i] = off - start;
    }
    bb_free(&w->arena);
    offs[n] = off;
    shuffle_index_encode(idx, n, offs);
    free(offs);
    if (close(fd) && !rc) rc = em__seterr(EM_EIO, "shuffle write %s: %s", w->data_tmp, strerror(errno));
    if (!rc) {
        fd = open(w->index_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            rc = em__seterr(EM_EIO, "shuffle write %s: %s", w->index_tmp, strerror(errno));
        } else {
            rc = bf_pwrite_all(fd, w->index_tmp, idx, isize, 0);
            if (close(fd) && !rc) rc = em__seterr(EM_EIO, "shuffle write %s: %s", w->index_tmp, strerror(errno));
        }
    }
    free(idx);
    return rc;
}

static void sw_free(shuffle_writer *w) {
    tm_peak(w->peak_buf + w->peak_comb);
    for (int i = 0; i < w->o.nparts; i++) {
        bb_free(&w->parts[i].raw);
        free(w->parts[i].ext);
        free(w->parts[i].aext);
    }
    free(w->parts);
    bb_free(&w->arena);
    if (w->spill_fd >= 0) close(w->spill_fd);
    if (w->o.combine) {
        if (w->peak_keys) sh_put(w->dir, w->o.shuffle_id, w->comb.use8 ? SH_MAP8 : SH_MAP, w->peak_keys);
        ct_free(&w->comb);
    }
    ebuf_free(&w->scratch);
    bf_cctx_free(&w->cx);
    free(w);
}

/* Keep the output in memory (memout.h) when it never spilled and its
 * segments fit, with no copy: the arena holds every segment as the
 * partitions' extents (plain mode: between them lie the unused ends of
 * block regions, counted in the buffer's length but not in the
 * output's).  1 kept, 0 write files instead, or < 0. */
static int keep_in_memory(shuffle_writer *w, uint64_t *seg) {
    int n = w->o.nparts, rc;
    if (!w->o.mem || w->spill_fd >= 0) return 0;
    size_t len = 0, next = 0;
    for (int i = 0; i < n; i++) {
        sw_part *p = &w->parts[i];
        if ((rc = compress_part(w, p))) return rc;
        for (size_t e = 0; e < p->anext; e++) len += p->aext[e].len;
        next += p->anext;
    }
    if (!memout_reserve(w->o.mem, len)) return 0;
    ebuf *bufs = malloc(sizeof *bufs);
    memout_ext *ext = malloc((next ? next : 1) * sizeof *ext);
    size_t *first = malloc(((size_t)n + 1) * sizeof *first);
    if (!bufs || !ext || !first) goto nomem;
    next = 0;
    for (int i = 0; i < n; i++) {
        sw_part *p = &w->parts[i];
        uint64_t bytes = 0;
        first[i] = next;
        for (size_t e = 0; e < p->anext; e++) {
            ext[next++] = (memout_ext){p->aext[e].off, p->aext[e].len, 0};
            bytes += p->aext[e].len;
        }
        if (seg) seg[i] = bytes;
    }
    first[n] = next;
    bufs[0] = w->arena;
    if (memout_put(w->o.mem, w->o.shuffle_id, w->o.map_id, w->o.attempt, n, 1, bufs, ext, first, len)) goto nomem;
    /* The store's now. */
    for (int i = 0; i < n; i++) w->parts[i].anext = 0;
    w->arena = (ebuf)EBUF_INIT;
    return 1;
nomem:
    free(bufs);
    free(ext);
    free(first);
    memout_unreserve(w->o.mem, len);
    return em__seterr(EM_ENOMEM, "sw_commit: out of memory");
}

int sw_commit(shuffle_writer *w, sw_result *res) {
    uint64_t *seg = NULL;
    char final[SHUFFLE_PATH];
    int rc = 0, kept = 0;
    int64_t t0 = tm_now_ns();
    if (res && !(seg = calloc((size_t)w->o.nparts, sizeof *seg))) rc = em__seterr(EM_ENOMEM, "sw_commit: out of memory");
    if (!rc && w->o.combine) rc = dump_comb(w);
    if (w->buffered > w->peak_buf) w->peak_buf = w->buffered;
    if (!rc && (kept = keep_in_memory(w, seg)) < 0) rc = kept;
    if (!rc && !kept && !(rc = leave_memory(w))) rc = write_files(w, seg);
    if (!rc && !kept) {
        /* Data first, index last: a reader that sees the index sees data. */
        shuffle_data_path(final, sizeof final, w->dir, w->o.shuffle_id, w->o.map_id, w->o.attempt);
        if (rename(w->data_tmp, final)) {
            rc = em__seterr(EM_EIO, "shuffle commit %s: %s", final, strerror(errno));
        } else {
            char ifinal[SHUFFLE_PATH];
            shuffle_index_path(ifinal, sizeof ifinal, w->dir, w->o.shuffle_id, w->o.map_id, w->o.attempt);
            if (rename(w->index_tmp, ifinal)) {
                rc = em__seterr(EM_EIO, "shuffle commit %s: %s", ifinal, strerror(errno));
                unlink(final);
            }
        }
    }
    if (rc) {
        if (w->data_tmp[0]) unlink(w->data_tmp);
        if (w->index_tmp[0]) unlink(w->index_tmp);
        free(seg);
    } else if (res) {
        res->seg_bytes = seg;
        res->bytes = SHUFFLE_DATA_HEADER;
        for (int i = 0; i < w->o.nparts; i++) res->bytes += seg[i];
        res->records = w->records;
        res->spills = w->spills;
        res->write_ns = tm_now_ns() - t0;
    }
    sw_free(w);
    return rc;
}

void sw_abort(shuffle_writer *w) {
    if (!w) return;
    /* Only sw_commit creates the temporary data and index files, and it
     * removes them itself on failure; the spill file was unlinked when it
     * was created and goes away with its descriptor. */
    sw_free(w);
}
