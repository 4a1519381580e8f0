/*
 * ckpt_file.c -- writing and reading the partition files of a checkpointed
 * RDD (format in ckpt_file.h).  The writer streams records through a 1 MiB
 * buffer into a temporary file, computing the CRC as it goes, and writes
 * the header last; the reader maps the file and checks it whole with the
 * cache block checker (bs_block_check_as), which the cacheblock fuzz target
 * drives.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "batch.h"
#include "blockstore.h"
#include "ckpt_file.h"
#include "err.h"
#include "recfmt.h"

#define CKPT_FLUSH ((size_t)1 << 20)

typedef struct ckpt_w {
    int fd;
    int linked;            /* the final name exists: keep it */
    uLong crc;
    uint64_t len, count;
    char tmp[4096], final[4096];
} ckpt_w;

static int write_all(ckpt_w *w, const uint8_t *p, size_t n) {
    while (n) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return em__seterr(EM_EIO, "checkpoint: writing %s: %s", w->tmp, k < 0 ? strerror(errno) : "short write");
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Write the buffered records (p->buf) to the file. */
static int flush_buf(epipe *p) {
    ckpt_w *w = p->state;
    for (size_t off = 0; off < p->buf.len;) {
        size_t k = p->buf.len - off < (1u << 30) ? p->buf.len - off : (1u << 30);
        w->crc = crc32(w->crc, p->buf.p + off, (uInt)k);
        off += k;
    }
    int rc = write_all(w, p->buf.p, p->buf.len);
    w->len += p->buf.len;
    ebuf_reset(&p->buf);
    return rc;
}

static int push_ckpt(epipe *p, const em_rec *r) {
    ckpt_w *w = p->state;
    if (rec_append(&p->buf, r)) return em__seterr(EM_ENOMEM, "checkpoint: out of memory");
    w->count++;
    return p->buf.len >= CKPT_FLUSH ? flush_buf(p) : 0;
}

/* A whole batch (a cached block, parallelized records) goes as it is. */
static int push_ckpt_batch(epipe *p, const uint8_t *b, size_t len, uint64_t *nrec) {
    ckpt_w *w = p->state;
    size_t n = batch_count_recs(b, len);
    if (n == (size_t)-1) return em__seterr(EM_ECORRUPT, "checkpoint: malformed record in a batch");
    *nrec += n;
    if (p->buf.len && flush_buf(p)) return EM_EIO;
    w->count += n;
    for (size_t off = 0; off < len;) {
        size_t k = len - off < (1u << 30) ? len - off : (1u << 30);
        w->crc = crc32(w->crc, b + off, (uInt)k);
        off += k;
    }
    w->len += len;
    return write_all(w, b, len);
}

static int end_ckpt(epipe *p) {
    ckpt_w *w = p->state;
    uint8_t h[BS_HEADER];
    int rc = p->buf.len ? flush_buf(p) : 0;
    if (rc) return rc;
    bs_block_header(h, (uint32_t)w->crc, w->len);
    if (pwrite(w->fd, h, sizeof h, 0) != (ssize_t)sizeof h || fdatasync(w->fd))
        return em__seterr(EM_EIO, "checkpoint: writing %s: %s", w->tmp, strerror(errno));
    close(w->fd);
    w->fd = -1;
    /* link, not rename: an attempt that finishes second does not replace
     * the first one's file, which readers may have opened. */
    if (link(w->tmp, w->final)) {
        struct stat st;
        if (errno != EEXIST || stat(w->final, &st))
            return em__seterr(EM_EIO, "checkpoint: publishing %s: %s", w->final, strerror(errno));
        w->len = st.st_size >= BS_HEADER ? (uint64_t)st.st_size - BS_HEADER : 0; /* the first attempt's */
    }
    w->linked = 1;
    unlink(w->tmp);
    uint64_t out[2] = {w->len, w->count};
    if (ebuf_append(&p->buf, out, sizeof out)) return em__seterr(EM_ENOMEM, "checkpoint: out of memory");
    p->run->res->data = ebuf_steal(&p->buf, &p->run->res->len);
    return 0;
}

static void free_ckpt(epipe *p) {
    ckpt_w *w = p->state;
    if (!w) return;
    if (w->fd >= 0) close(w->fd);
    if (!w->linked && w->tmp[0]) unlink(w->tmp); /* a failed or killed attempt leaves nothing */
    free(w);
}

int ckpt_sink_open(epipe *p) {
    ckpt_w *w = calloc(1, sizeof *w);
    int part = p->run->t->partition;
    if (!w) return em__seterr(EM_ENOMEM, "checkpoint: out of memory");
    w->fd = -1;
    w->crc = crc32(0L, Z_NULL, 0);
    p->state = w;
    p->h.push = push_ckpt;
    p->push_batch = push_ckpt_batch;
    p->end = end_ckpt;
    p->free = free_ckpt;
    const char *dir = p->sink->path;
    if ((size_t)snprintf(w->final, sizeof w->final, "%s/part-%05d", dir, part) >= sizeof w->final ||
        (size_t)snprintf(w->tmp, sizeof w->tmp, "%s/.part-%05d.%llu.tmp", dir, part,
                         (unsigned long long)p->run->t->task_id) >= sizeof w->tmp) {
        w->tmp[0] = 0;
        return em__seterr(EM_EINVAL, "checkpoint: directory name too long: %s", dir);
    }
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        int e = errno;
        w->tmp[0] = 0;
        return em__seterr(EM_EIO, "checkpoint: cannot create a file in %s: %s (ember.checkpoint.dir must be a "
                                  "directory every executor can write, shared storage in a cluster)",
                          dir, strerror(e));
    }
    static const uint8_t zero[BS_HEADER];
    return write_all(w, zero, sizeof zero); /* the header, written for real at the end */
}

int ckpt_file_open(const char *path, uint64_t expect, ckpt_file *f) {
    struct stat st;
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return em__seterr(e == ENOENT ? EM_ENOENT : EM_EIO,
                          "checkpoint file %s: %s (the RDD's lineage was truncated when it was checkpointed, "
                          "so the partition cannot be recomputed)",
                          path, strerror(e));
    }
    if (fstat(fd, &st)) {
        int e = errno;
        close(fd);
        return em__seterr(EM_EIO, "checkpoint file %s: %s", path, strerror(e));
    }
    size_t n = (size_t)st.st_size;
    void *m = n ? mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (n && m == MAP_FAILED) return em__seterr(EM_EIO, "checkpoint file %s: mmap: %s", path, strerror(errno));
    f->map = m;
    f->maplen = n;
    if (expect > SIZE_MAX - 1) expect = SIZE_MAX - 1;
    static const uint8_t none[1];
    int rc = bs_block_check_as(m ? (const uint8_t *)m : none, n, (size_t)expect, "checkpoint file", path, &f->records);
    if (rc) {
        ckpt_file_close(f);
        return rc;
    }
    f->len = n - BS_HEADER;
    return 0;
}

void ckpt_file_close(ckpt_file *f) {
    if (f->map) munmap(f->map, f->maplen);
    memset(f, 0, sizeof *f);
}
