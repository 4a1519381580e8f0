/*
 * densefile.c -- the dense binary format (ember_ml.h): "EMBLDNS1", u64le
 * rows, u64le cols, then per row f64le label and cols f64le features.
 *
 * Writing is done by the tasks themselves: one job counts the rows of each
 * partition, the driver lays the file out (header, final size), and
 * foreach_partition writes each partition's rows at its offset with pwrite
 * (a retried task rewrites the same bytes).  Nothing passes through the
 * driver, so a data set larger than the driver's memory can be written.
 * Reading: the driver checks the header and the size, then one task per
 * block preads its rows in chunks of about 1 MiB and de-interleaves labels
 * and features into a dense block.  Both need a file system every executor
 * sees at the same path (true for local[N]); the host must be little-endian.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bigbuf.h"
#include "ctx.h"
#include "block.h"
#include "data.h"
#include "err.h"
#include "mlutil.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the dense binary format is read and written in host order, which must be little-endian"
#endif

static const em_ml_load_opts default_opts = {0, 0, -1, 0, 0, 0};


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

static int ml_write_dense_unguarded(em_ml_data *d, const char *path) {
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

int em_ml_write_dense(em_ml_data *d, const char *path) {
    CTX_GUARDED(d ? d->ctx : NULL, ml_write_dense_unguarded(d, path));
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
    /* Both buffers are bigbuf.h mappings the previous block gave back
     * (the chunk is made a mapping too): no fresh pages per block. */
    ebuf cb = EBUF_INIT, buf = EBUF_INIT;
    ml_block b;
    int rc = bb_reserve(&cb, chunk_rows * row_bytes > BB_MIN ? chunk_rows * row_bytes : BB_MIN)
                 ? em_fail("em_ml_read_dense: out of memory")
                 : 0;
    uint8_t *chunk = cb.p;
    if (!rc) rc = ml_block_alloc_out(out, &buf, ML_DENSE, hi - lo, a.cols, 0, &b);
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
    if (!rc) rc = ml_block_emit(out, &b);
    bb_free(&buf);
    bb_free(&cb);
    close(fd);
    return rc;
}

static em_ml_data *ml_read_dense_unguarded(em_ctx *ctx, const char *path, const em_ml_load_opts *o) {
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

em_ml_data *em_ml_read_dense(em_ctx *ctx, const char *path, const em_ml_load_opts *o) {
    CTX_GUARDED_PTR(ctx, ml_read_dense_unguarded(ctx, path, o));
}
