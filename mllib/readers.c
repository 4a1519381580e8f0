/*
 * readers.c -- data sets from files: LIBSVM and CSV text, and the dense
 * binary format (reading and writing).
 *
 * Text readers run in two narrow stages of one task, so no shuffle and no
 * per-line allocation:
 *
 *   text_file --flat_map(parse)--> row records --map_partitions(pack)--> blocks
 *
 * The parse stage sees each line while the text reader is still on it, so
 * a malformed line can name its file and line number (em_task_input +
 * em_text_line_number); a map_partitions function sees its input only after
 * the reader has finished and could not.  Parsing turns a line into a
 * compact binary row record (the label, then the features), which the pack
 * stage collects for the partition (map_partitions materializes its input:
 * for LIBSVM that costs 12 bytes per nonzero, about the size of the text it
 * replaces) and copies into blocks of up to ml_block_rows rows.
 *
 * Row records:
 *   LIBSVM: f64 label, then nnz pairs (i32 0-based index, f64 value),
 *           packed, 12 bytes a pair, indices strictly ascending;
 *   CSV:    f64 label, then cols f64 features.
 * Records live in the collected batch; the pack functions keep views of a
 * block's worth of them (valid for the whole map_partitions call) to size
 * the block before filling it.
 *
 * The dense binary file is written by the tasks themselves: one job counts
 * the rows of each partition, the driver lays out the file (header, final
 * size), and foreach_partition writes each partition's rows at its offset
 * with pwrite.  Nothing goes through the driver, so a data set larger than
 * the driver's memory can be written.  Reading: the driver checks the
 * header and the size, then one task per range of blocks preads its rows
 * and de-interleaves them into a dense block.  Both assume a file system
 * every executor sees at the same path (true for local[N]).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "block.h"
#include "data.h"
#include "err.h"
#include "mlutil.h"
#include "parse.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the dense binary format and row records assume a little-endian host"
#endif

/* Blocks hold about this many bytes of features at most (as ml_block_rows). */
#define BLOCK_BYTES (16.0 * 1024 * 1024)
/* Row scratch on the stack: lines with more values than this use the heap. */
#define STACK_ROW 16384

static const em_ml_load_opts default_opts = {0, 0, -1, 0, 0};

/* ------------------------------------------------------------- errors */

/* Fail the task with "FILE:LINE: reason" for the line being read.  Runs
 * inside the parse functions only (it needs em_task_input). */
static int line_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int line_fail(const char *fmt, ...) {
    char why[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    const char *path;
    uint64_t off;
    if (em_task_input(&path, &off)) return em_fail("%s", why);
    int64_t line = em_text_line_number(path, off);
    if (line < 0) return em_fail("%s: line at offset %" PRIu64 ": %s", path, off, why);
    return em_fail("%s:%lld: %s", path, (long long)line, why);
}

/* Length of the token at p (up to a blank or sep), at most 40, for messages. */
static int toklen(const char *p, const char *end, char sep) {
    int n = 0;
    while (p + n < end && n < 40 && !ml_is_space(p[n]) && p[n] != sep) n++;
    return n;
}

/* A growable row buffer that starts on the caller's stack. */
typedef struct rowbuf {
    uint8_t *p;
    size_t len, cap;
    uint8_t *heap;
} rowbuf;

static void rb_init(rowbuf *b, uint8_t *stk, size_t cap) {
    b->p = stk;
    b->len = 0;
    b->cap = cap;
    b->heap = NULL;
}

static int rb_reserve(rowbuf *b, size_t extra) {
    if (b->cap - b->len >= extra) return 0;
    size_t cap = b->cap * 2;
    while (cap - b->len < extra) cap *= 2;
    uint8_t *n = malloc(cap);
    if (!n) return em_fail("mllib: out of memory for a row of %zu bytes", cap);
    memcpy(n, b->p, b->len);
    free(b->heap);
    b->heap = b->p = n;
    b->cap = cap;
    return 0;
}

static void rb_free(rowbuf *b) { free(b->heap); }

/* ------------------------------------------------------------- LIBSVM */

typedef struct svm_arg {
    int64_t num_features; /* 0: unknown */
} svm_arg;

int ml_libsvm_parse(const em_rec *in, em_emitter *out, const void *arg);
int ml_libsvm_parse(const em_rec *in, em_emitter *out, const void *arg) {
    svm_arg a;
    memcpy(&a, arg, sizeof a);
    const char *p = in->val, *end = p + in->vlen;
    while (p < end && ml_is_space(*p)) p++;
    if (p == end || *p == '#') return 0; /* blank or comment */

    double label;
    const char *q = ml_parse_f64(p, end, &label);
    if (!q || (q < end && !ml_is_space(*q)))
        return line_fail("bad label '%.*s'", toklen(p, end, 0), p);
    if (label == -1) label = 0;
    p = q;

    uint8_t stk[STACK_ROW];
    rowbuf rb;
    rb_init(&rb, stk, sizeof stk);
    memcpy(rb.p, &label, 8);
    rb.len = 8;
    int64_t prev = 0;
    int rc = 0;
    for (;;) {
        while (p < end && ml_is_space(*p)) p++;
        if (p == end || *p == '#') break;
        const char *tok = p;
        int64_t idx = 0;
        while (p < end && (unsigned)(unsigned char)*p - '0' <= 9) {
            idx = idx * 10 + (*p++ - '0');
            if (idx > INT32_MAX) break;
        }
        if (idx > INT32_MAX) {
            rc = line_fail("index '%.*s' too large", toklen(tok, end, ':'), tok);
            break;
        }
        if (p == tok || p == end || *p != ':') {
            rc = line_fail("bad feature '%.*s' (expected index:value)", toklen(tok, end, 0), tok);
            break;
        }
        if (idx < 1) {
            rc = line_fail("index 0 (indices are 1-based)");
            break;
        }
        if (idx <= prev) {
            rc = line_fail("index %lld after %lld (indices must be ascending)", (long long)idx, (long long)prev);
            break;
        }
        if (a.num_features > 0 && idx > a.num_features) {
            rc = line_fail("index %lld > num_features %lld", (long long)idx, (long long)a.num_features);
            break;
        }
        double v;
        p++;
        q = ml_parse_f64(p, end, &v);
        if (!q || (q < end && !ml_is_space(*q))) {
            rc = line_fail("bad value '%.*s' for index %lld", toklen(p, end, 0), p, (long long)idx);
            break;
        }
        p = q;
        if ((rc = rb_reserve(&rb, 12))) break;
        int32_t i0 = (int32_t)(idx - 1);
        memcpy(rb.p + rb.len, &i0, 4);
        memcpy(rb.p + rb.len + 4, &v, 8);
        rb.len += 12;
        prev = idx;
    }
    if (!rc) rc = em_emit(out, rb.p, rb.len);
    rb_free(&rb);
    return rc;
}

typedef struct svm_pack_arg {
    int64_t max_rows, max_nnz, num_features;
} svm_pack_arg;

typedef struct rowview {
    const uint8_t *p;
    size_t len;
} rowview;

/* Build and emit one CSR block from n LIBSVM row records. */
static int svm_flush(em_emitter *out, ebuf *buf, const rowview *rows, int64_t n, int64_t nnz, int64_t cols) {
    ml_block b;
    int rc = ml_block_alloc(buf, ML_CSR, n, cols, nnz, &b);
    if (rc) return rc;
    int64_t k = 0;
    b.indptr[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *p = rows[i].p;
        int64_t m = (int64_t)(rows[i].len - 8) / 12;
        memcpy(&b.y[i], p, 8);
        p += 8;
        for (int64_t j = 0; j < m; j++, p += 12, k++) {
            memcpy(&b.idx[k], p, 4);
            memcpy(&b.val[k], p + 4, 8);
        }
        b.indptr[i + 1] = k;
    }
    return ml_block_emit(out, buf);
}

int ml_libsvm_pack(int partition, em_iter *in, em_emitter *out, const void *arg);
int ml_libsvm_pack(int partition, em_iter *in, em_emitter *out, const void *arg) {
    svm_pack_arg a;
    memcpy(&a, arg, sizeof a);
    rowview *rows = malloc(sizeof *rows * (size_t)a.max_rows);
    if (!rows) return em_fail("mllib: out of memory");
    ebuf buf = EBUF_INIT;
    int64_t n = 0, nnz = 0, cols = 0;
    em_rec r;
    int rc;
    while ((rc = em_iter_next(in, &r)) == 1) {
        if (r.vlen < 8 || (r.vlen - 8) % 12) {
            rc = em_fail("mllib: malformed LIBSVM row record (%zu bytes)", r.vlen);
            break;
        }
        int64_t m = (int64_t)(r.vlen - 8) / 12;
        if (n && (n == a.max_rows || nnz + m > a.max_nnz)) {
            if ((rc = svm_flush(out, &buf, rows, n, nnz, a.num_features > 0 ? a.num_features : cols)) < 0) break;
            n = nnz = cols = 0;
        }
        if (m) { /* indices ascend: the last is the row's largest */
            int32_t last;
            memcpy(&last, (const uint8_t *)r.val + r.vlen - 12, 4);
            if (last + 1 > cols) cols = last + 1;
        }
        rows[n].p = r.val;
        rows[n].len = r.vlen;
        n++;
        nnz += m;
    }
    if (rc == 0 && n) rc = svm_flush(out, &buf, rows, n, nnz, a.num_features > 0 ? a.num_features : cols);
    ebuf_free(&buf);
    free(rows);
    return rc < 0 ? rc : 0;
}

em_ml_data *em_ml_read_libsvm(em_ctx *ctx, const char *path, const em_ml_load_opts *o) {
    if (!o) o = &default_opts;
    if (!ctx || !path || o->num_features < 0 || o->num_features > INT32_MAX) {
        em__seterr(EM_EINVAL, "em_ml_read_libsvm: bad arguments");
        return NULL;
    }
    svm_arg pa = {o->num_features};
    svm_pack_arg ka = {o->block_rows > 0 ? o->block_rows : 4096, (int64_t)(BLOCK_BYTES / 12), o->num_features};
    int minp = o->partitions;
    if (getenv("MLB_SPLIT")) { struct stat st; if (!stat(path, &st)) { int k = (int)(st.st_size / atoll(getenv("MLB_SPLIT")) + 1); if (k > minp) minp = k; } }
    em_rdd *lines = em_text_file(ctx, path, minp);
    em_rdd *rows = lines ? em_flat_map(lines, ml_libsvm_parse, &pa, sizeof pa) : NULL;
    em_rdd *blocks = rows ? em_map_partitions(rows, ml_libsvm_pack, &ka, sizeof ka) : NULL;
    if (blocks && getenv("MLB_COAL")) blocks = em_coalesce(blocks, atoi(getenv("MLB_COAL")));
    if (blocks) em_set_name(blocks, "libsvm blocks");
    return ml_data_wrap(ctx, blocks, o->num_features > 0 ? o->num_features : -1, 1);
}

/* ---------------------------------------------------------------- CSV */

typedef struct csv_arg {
    int32_t label_col;   /* -1: last */
    int32_t skip_header;
    int64_t fields;      /* fields every row must have; -1: any (the probe) */
} csv_arg;

int ml_csv_parse(const em_rec *in, em_emitter *out, const void *arg);
int ml_csv_parse(const em_rec *in, em_emitter *out, const void *arg) {
    csv_arg a;
    memcpy(&a, arg, sizeof a);
    if (a.skip_header) {
        uint64_t off;
        if (em_task_input(NULL, &off) == 0 && off == 0) return 0;
    }
    const char *p = in->val, *end = p + in->vlen;
    const char *s = p;
    while (s < end && ml_is_space(*s)) s++;
    if (s == end) return 0; /* blank line */

    uint8_t stk[STACK_ROW];
    rowbuf rb;
    rb_init(&rb, stk, sizeof stk);
    rb.len = 8; /* the label goes first */
    int rc = 0;
    int64_t nf = 0;
    for (;;) {
        while (p < end && ml_is_space(*p)) p++;
        const char *field = p;
        double v;
        const char *q = ml_parse_f64(p, end, &v);
        if (!q) {
            if (p == end || *p == ',')
                rc = line_fail("empty field %lld", (long long)nf + 1);
            else
                rc = line_fail("bad number '%.*s' in field %lld", toklen(p, end, ','), p, (long long)nf + 1);
            break;
        }
        p = q;
        while (p < end && ml_is_space(*p)) p++;
        if (p < end && *p != ',') {
            rc = line_fail("bad number '%.*s' in field %lld", toklen(field, end, ','), field, (long long)nf + 1);
            break;
        }
        if ((rc = rb_reserve(&rb, 8))) break;
        memcpy(rb.p + rb.len, &v, 8);
        rb.len += 8;
        nf++;
        if (p == end) break;
        p++; /* the comma */
    }
    if (!rc && a.fields >= 0 && nf != a.fields)
        rc = line_fail("%lld fields, expected %lld as in the first row", (long long)nf, (long long)a.fields);
    int64_t lc = a.label_col < 0 ? nf - 1 : a.label_col;
    if (!rc && (nf < 1 || lc >= nf))
        rc = line_fail("no label column %lld in a row of %lld fields", (long long)lc + 1, (long long)nf);
    if (!rc) {
        /* Fields are at 8 + 8k; move the label to the front, close the gap. */
        uint8_t *f = rb.p + 8;
        memcpy(rb.p, f + 8 * lc, 8);
        memmove(f + 8 * lc, f + 8 * (lc + 1), (size_t)(8 * (nf - lc - 1)));
        rc = em_emit(out, rb.p, rb.len - 8);
    }
    rb_free(&rb);
    return rc;
}

typedef struct dense_pack_arg {
    int64_t cols, max_rows;
} dense_pack_arg;

static int dense_flush(em_emitter *out, ebuf *buf, const rowview *rows, int64_t n, int64_t cols) {
    ml_block b;
    int rc = ml_block_alloc(buf, ML_DENSE, n, cols, 0, &b);
    if (rc) return rc;
    for (int64_t i = 0; i < n; i++) {
        memcpy(&b.y[i], rows[i].p, 8);
        memcpy(b.x + i * cols, rows[i].p + 8, (size_t)(8 * cols));
    }
    return ml_block_emit(out, buf);
}

int ml_csv_pack(int partition, em_iter *in, em_emitter *out, const void *arg);
int ml_csv_pack(int partition, em_iter *in, em_emitter *out, const void *arg) {
    dense_pack_arg a;
    memcpy(&a, arg, sizeof a);
    rowview *rows = malloc(sizeof *rows * (size_t)a.max_rows);
    if (!rows) return em_fail("mllib: out of memory");
    ebuf buf = EBUF_INIT;
    int64_t n = 0;
    em_rec r;
    int rc;
    while ((rc = em_iter_next(in, &r)) == 1) {
        if (r.vlen != (size_t)(8 * (a.cols + 1))) {
            rc = em_fail("mllib: CSV row record of %zu bytes, expected %lld", r.vlen, (long long)(8 * (a.cols + 1)));
            break;
        }
        if (n == a.max_rows) {
            if ((rc = dense_flush(out, &buf, rows, n, a.cols)) < 0) break;
            n = 0;
        }
        rows[n].p = r.val;
        rows[n].len = r.vlen;
        n++;
    }
    if (rc == 0 && n) rc = dense_flush(out, &buf, rows, n, a.cols);
    ebuf_free(&buf);
    free(rows);
    return rc < 0 ? rc : 0;
}

em_ml_data *em_ml_read_csv(em_ctx *ctx, const char *path, const em_ml_load_opts *o) {
    if (!o) o = &default_opts;
    if (!ctx || !path || o->label_col < -1) {
        em__seterr(EM_EINVAL, "em_ml_read_csv: bad arguments");
        return NULL;
    }
    em_rdd *lines = em_text_file(ctx, path, o->partitions);
    if (!lines) return NULL;
    /* The width every row must have is the first row's: find it with a
     * probe that parses only as far as the first row (take stops the
     * source), so a row of another width can be named by its line. */
    csv_arg pa = {o->label_col, o->skip_header != 0, -1};
    em_rdd *probe = em_flat_map(lines, ml_csv_parse, &pa, sizeof pa);
    em_batch *first = NULL;
    em_rec r;
    if (!probe || em_take(probe, 1, &first)) return NULL;
    int64_t cols = 0;
    if (em_batch_get(first, 0, &r) == 0) cols = (int64_t)(r.vlen / 8) - 1;
    em_batch_free(first);
    pa.fields = cols + 1;
    dense_pack_arg ka = {cols, ml_block_rows(cols, 1, o->block_rows)};
    em_rdd *rows = em_flat_map(lines, ml_csv_parse, &pa, sizeof pa);
    em_rdd *blocks = rows ? em_map_partitions(rows, ml_csv_pack, &ka, sizeof ka) : NULL;
    if (blocks) em_set_name(blocks, "csv blocks");
    return ml_data_wrap(ctx, blocks, cols, 0);
}

/* -------------------------------------------------- dense binary format */

#define DNS_MAGIC "EMBLDNS1"
#define DNS_HDR 24
#define IO_CHUNK (1u << 20)

/* Rows of each partition, as (partition, rows) records. */
int ml_part_rows(int partition, em_iter *in, em_emitter *out, const void *arg);
int ml_part_rows(int partition, em_iter *in, em_emitter *out, const void *arg) {
    ebuf scratch = EBUF_INIT;
    int64_t rec[2] = {partition, 0};
    em_rec r;
    ml_block b;
    int rc;
    while ((rc = em_iter_next(in, &r)) == 1) {
        if ((rc = ml_block_view(&r, &b, &scratch))) break;
        rec[1] += b.rows;
    }
    ebuf_free(&scratch);
    if (rc < 0) return rc;
    return em_emit(out, rec, sizeof rec);
}

/* The write task's argument: cols, partitions, then each partition's first
 * row, then the path (NUL-terminated). */
typedef struct wr_arg {
    int64_t cols, nparts;
} wr_arg;

/* pwrite all of [p, p+n) at off. */
static int pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t off, const char *path) {
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR) continue;
            return em_fail("em_ml_write_dense: %s: write error at offset %" PRIu64 ": %s", path, off, strerror(errno));
        }
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

int ml_write_part(int partition, em_iter *in, const void *arg);
int ml_write_part(int partition, em_iter *in, const void *arg) {
    wr_arg a;
    memcpy(&a, arg, sizeof a);
    const int64_t *first = (const int64_t *)((const uint8_t *)arg + sizeof a);
    const char *path = (const char *)(first + a.nparts);
    if (partition < 0 || partition >= a.nparts) return em_fail("em_ml_write_dense: unexpected partition %d", partition);
    size_t row_bytes = (size_t)(8 * (a.cols + 1));
    uint64_t off = DNS_HDR + (uint64_t)first[partition] * row_bytes;
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return em_fail("em_ml_write_dense: %s: %s", path, strerror(errno));
    size_t chunk_rows = IO_CHUNK / row_bytes ? IO_CHUNK / row_bytes : 1;
    uint8_t *chunk = malloc(chunk_rows * row_bytes);
    ebuf scratch = EBUF_INIT;
    em_rec r;
    ml_block b;
    int rc = chunk ? 0 : em_fail("em_ml_write_dense: out of memory");
    while (!rc && (rc = em_iter_next(in, &r)) == 1) {
        if ((rc = ml_block_view(&r, &b, &scratch))) break;
        if (b.cols > a.cols) {
            rc = em_fail("em_ml_write_dense: a block has %lld columns, the data set %lld", (long long)b.cols,
                         (long long)a.cols);
            break;
        }
        for (int64_t i0 = 0; i0 < b.rows && !rc; i0 += (int64_t)chunk_rows) {
            int64_t n = b.rows - i0 < (int64_t)chunk_rows ? b.rows - i0 : (int64_t)chunk_rows;
            memset(chunk, 0, (size_t)n * row_bytes);
            for (int64_t i = 0; i < n; i++) {
                double *row = (double *)(chunk + (size_t)i * row_bytes);
                row[0] = b.y[i0 + i];
                if (b.kind == ML_DENSE) {
                    memcpy(row + 1, b.x + (i0 + i) * b.cols, (size_t)(8 * b.cols));
                } else {
                    for (int64_t k = b.indptr[i0 + i]; k < b.indptr[i0 + i + 1]; k++) row[1 + b.idx[k]] = b.val[k];
                }
            }
            rc = pwrite_all(fd, chunk, (size_t)n * row_bytes, off, path);
            off += (uint64_t)n * row_bytes;
        }
    }
    ebuf_free(&scratch);
    free(chunk);
    if (close(fd) && !rc) rc = em_fail("em_ml_write_dense: %s: %s", path, strerror(errno));
    return rc < 0 ? rc : 0;
}

int em_ml_write_dense(em_ml_data *d, const char *path) {
    if (!d || !path) return em__seterr(EM_EINVAL, "em_ml_write_dense: NULL argument");
    em_rdd *counts = em_map_partitions(d->blocks, ml_part_rows, NULL, 0);
    em_batch *res = NULL;
    int rc = counts ? em_collect(counts, &res) : em__lasterr();
    if (rc) return rc;
    size_t np = em_batch_count(res), plen = strlen(path) + 1;
    size_t alen = sizeof(wr_arg) + 8 * np + plen;
    uint8_t *arg = malloc(alen);
    if (!arg) {
        em_batch_free(res);
        return em__seterr(EM_ENOMEM, "em_ml_write_dense: out of memory");
    }
    wr_arg a = {d->cols, (int64_t)np};
    memcpy(arg, &a, sizeof a);
    int64_t *first = (int64_t *)(arg + sizeof a), total = 0;
    for (size_t i = 0; i < np; i++) first[i] = -1;
    em_rec r;
    for (size_t i = 0; i < np; i++) {
        int64_t pr[2];
        em_batch_get(res, i, &r);
        memcpy(pr, r.val, sizeof pr);
        if (pr[0] >= 0 && (size_t)pr[0] < np) first[pr[0]] = pr[1]; /* rows, for now */
    }
    em_batch_free(res);
    for (size_t i = 0; i < np; i++) { /* rows -> first row */
        int64_t n = first[i] < 0 ? 0 : first[i];
        first[i] = total;
        total += n;
    }
    memcpy(arg + sizeof a + 8 * np, path, plen);
    if (total != d->rows) {
        free(arg);
        return em__seterr(EM_ECORRUPT, "em_ml_write_dense: counted %lld rows, the data set has %lld",
                          (long long)total, (long long)d->rows);
    }

    uint8_t hdr[DNS_HDR];
    memcpy(hdr, DNS_MAGIC, 8);
    put_u64le(hdr + 8, (uint64_t)total);
    put_u64le(hdr + 16, (uint64_t)d->cols);
    off_t size = (off_t)(DNS_HDR + (uint64_t)total * (uint64_t)(d->cols + 1) * 8);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        free(arg);
        return em__seterr(errno == ENOENT ? EM_ENOENT : EM_EIO, "em_ml_write_dense: %s: %s", path, strerror(errno));
    }
    rc = 0;
    if (pwrite(fd, hdr, DNS_HDR, 0) != DNS_HDR || ftruncate(fd, size))
        rc = em__seterr(EM_EIO, "em_ml_write_dense: %s: %s", path, strerror(errno));
    if (close(fd) && !rc) rc = em__seterr(EM_EIO, "em_ml_write_dense: %s: %s", path, strerror(errno));
    if (!rc) rc = em_foreach_partition(d->blocks, ml_write_part, arg, alen);
    free(arg);
    if (rc) unlink(path);
    return rc;
}

typedef struct rd_arg {
    int64_t rows, cols, block_rows;
    /* then the path, NUL-terminated */
} rd_arg;

int ml_dense_read_block(const em_rec *in, em_emitter *out, const void *arg);
int ml_dense_read_block(const em_rec *in, em_emitter *out, const void *arg) {
    rd_arg a;
    memcpy(&a, arg, sizeof a);
    const char *path = (const char *)arg + sizeof a;
    int64_t blk = em_i64_dec(in->val), lo = blk * a.block_rows, hi = lo + a.block_rows;
    if (hi > a.rows) hi = a.rows;
    size_t row_bytes = (size_t)(8 * (a.cols + 1));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return em_fail("em_ml_read_dense: %s: %s", path, strerror(errno));
    size_t chunk_rows = IO_CHUNK / row_bytes ? IO_CHUNK / row_bytes : 1;
    uint8_t *chunk = malloc(chunk_rows * row_bytes);
    ebuf buf = EBUF_INIT;
    ml_block b;
    int rc = chunk ? ml_block_alloc(&buf, ML_DENSE, hi - lo, a.cols, 0, &b) : em_fail("em_ml_read_dense: out of memory");
    for (int64_t i0 = lo; i0 < hi && !rc; i0 += (int64_t)chunk_rows) {
        int64_t n = hi - i0 < (int64_t)chunk_rows ? hi - i0 : (int64_t)chunk_rows;
        size_t want = (size_t)n * row_bytes, got = 0;
        uint64_t off = DNS_HDR + (uint64_t)i0 * row_bytes;
        while (got < want) {
            ssize_t r = pread(fd, chunk + got, want - got, (off_t)(off + got));
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) {
                rc = em_fail("em_ml_read_dense: %s: read error at offset %" PRIu64 ": %s", path, off + got,
                             strerror(errno));
                break;
            }
            if (r == 0) {
                rc = em_fail("em_ml_read_dense: %s: truncated (ends at offset %" PRIu64 ", row %lld)", path,
                             off + got, (long long)(i0 + (int64_t)(got / row_bytes)));
                break;
            }
            got += (size_t)r;
        }
        for (int64_t i = 0; i < n && !rc; i++) { /* de-interleave: label, features */
            const uint8_t *row = chunk + (size_t)i * row_bytes;
            memcpy(&b.y[i0 - lo + i], row, 8);
            memcpy(b.x + (i0 - lo + i) * a.cols, row + 8, row_bytes - 8);
        }
    }
    if (!rc) rc = ml_block_emit(out, &buf);
    ebuf_free(&buf);
    free(chunk);
    close(fd);
    return rc;
}

em_ml_data *em_ml_read_dense(em_ctx *ctx, const char *path, const em_ml_load_opts *o) {
    if (!o) o = &default_opts;
    if (!ctx || !path) {
        em__seterr(EM_EINVAL, "em_ml_read_dense: NULL argument");
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        em__seterr(errno == ENOENT ? EM_ENOENT : EM_EIO, "em_ml_read_dense: %s: %s", path, strerror(errno));
        return NULL;
    }
    uint8_t hdr[DNS_HDR];
    struct stat st;
    ssize_t n = pread(fd, hdr, DNS_HDR, 0);
    int serr = fstat(fd, &st);
    close(fd);
    if (n < 0 || serr) {
        em__seterr(EM_EIO, "em_ml_read_dense: %s: %s", path, strerror(errno));
        return NULL;
    }
    if (n < DNS_HDR || memcmp(hdr, DNS_MAGIC, 8)) {
        em__seterr(EM_ECORRUPT, "em_ml_read_dense: %s: not an ember dense file (%s)", path,
                   n < DNS_HDR ? "shorter than the header" : "bad magic");
        return NULL;
    }
    uint64_t rows = get_u64le(hdr + 8), cols = get_u64le(hdr + 16);
    if (rows > (1ull << 40) || cols > (1ull << 31) || (rows && (cols + 1) > (UINT64_MAX - DNS_HDR) / 8 / rows)) {
        em__seterr(EM_ECORRUPT, "em_ml_read_dense: %s: implausible shape %" PRIu64 " x %" PRIu64, path, rows, cols);
        return NULL;
    }
    uint64_t want = DNS_HDR + rows * (cols + 1) * 8;
    if ((uint64_t)st.st_size != want) {
        em__seterr(EM_ECORRUPT, "em_ml_read_dense: %s: %s: %lld bytes, expected %" PRIu64 " for %" PRIu64 " x %" PRIu64,
                   path, (uint64_t)st.st_size < want ? "truncated" : "trailing bytes", (long long)st.st_size, want,
                   rows, cols);
        return NULL;
    }
    size_t plen = strlen(path) + 1;
    rd_arg a = {(int64_t)rows, (int64_t)cols, ml_block_rows((int64_t)cols, 1, o->block_rows)};
    uint8_t *arg = malloc(sizeof a + plen);
    if (!arg) {
        em__seterr(EM_ENOMEM, "em_ml_read_dense: out of memory");
        return NULL;
    }
    memcpy(arg, &a, sizeof a);
    memcpy(arg + sizeof a, path, plen);
    int64_t nblocks = ((int64_t)rows + a.block_rows - 1) / a.block_rows;
    int parts = o->partitions > 0 ? o->partitions : ml_default_parallelism(ctx);
    if (parts > nblocks) parts = nblocks > 0 ? (int)nblocks : 1;
    em_rdd *idx = em_range(ctx, 0, nblocks, 1, parts);
    em_rdd *blocks = idx ? em_map(idx, ml_dense_read_block, arg, sizeof a + plen) : NULL;
    free(arg);
    if (blocks) em_set_name(blocks, "dense file blocks");
    return ml_data_wrap(ctx, blocks, (int64_t)cols, 0);
}
