/*
 * text_reader.c -- reading the lines of one text_file split (see
 * text_reader.h), the hot loop of every job that starts from text.
 *
 * Three ways in, one line cutter:
 *   - plain files are read with pread(2) in 1 MiB chunks and cut with
 *     memchr, handing the sink views into the chunk;
 *   - or, when text_reader_mmap is set, mapped with mmap(2) from the
 *     split's start to the end of the file.  Mapping avoids a copy but pays
 *     a page fault per 4 KiB, which costs word count (bench/wordcount)
 *     more than the copy, so pread is the default;
 *   - gzip files are inflated with zlib in 256 KiB chunks.
 * The chunked paths feed the same cutter (struct cutter) as the mapped one;
 * only a line that crosses a chunk boundary is copied, into `carry`.
 *
 * Which lines belong to a split [off, off+len): a split not starting at 0
 * skips to one past the first '\n' at position >= off-1 (so a line starting
 * exactly at off is kept, and a line that began earlier belongs to the
 * previous split); then lines are read while their first byte is before
 * off+len, the last one running past the split's end if it must.  Every
 * split applies the same rule, so each line is read exactly once.
 *
 * A mapped file that is truncated while being read raises SIGBUS, as with
 * any mmap reader, one more reason pread is the default.
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

#include "buf.h"
#include "ember.h"
#include "err.h"
#include "text_reader.h"

#define READ_CHUNK (1u << 20)  /* pread fallback */
#define READ_SLACK 8192        /* read past a split's end, for its last line */
#define GZ_IN_CHUNK (256u << 10)
#define GZ_OUT_CHUNK (256u << 10)

/* When nonzero, plain files are mapped instead of read; the unit tests run
 * both paths.  Not part of the API. */
int text_reader_mmap;

/* The line cutter.  Bytes arrive in order through cut_feed, each chunk with
 * the stream position of its first byte (file offset for plain files,
 * uncompressed offset for gzip). */
typedef struct cutter {
    const text_split *s;
    size_t max_line;
    rec_sink_fn sink;
    void *sctx;
    uint64_t limit;      /* lines starting at or after this are not ours */
    uint64_t line_start; /* stream position of the current line's first byte */
    int skipping;        /* still looking for the '\n' before our first line */
    const char *what;    /* "offset" or "uncompressed offset", for messages */
    ebuf carry;          /* the part of a line that began in an earlier chunk */
    uint64_t lines;      /* lines handed to the sink, the first starting
                            at first (plain files), the last ending where
                            line_start is left */
    uint64_t first;
} cutter;

/* The cutter of the split this thread is reading, for em_task_input. */
static __thread const cutter *reading;

int em_task_input(const char **path, uint64_t *offset) {
    if (path) *path = NULL; /* defined on failure too */
    if (offset) *offset = 0;
    if (!reading) return em__seterr(EM_ESTATE, "em_task_input: not reading text input");
    if (path) *path = reading->s->path;
    if (offset) *offset = reading->line_start;
    return 0;
}

int64_t em_text_line_number(const char *path, uint64_t offset) {
    if (!path) return em__seterr(EM_EINVAL, "em_text_line_number: NULL path");
    gzFile f = gzopen(path, "rb"); /* reads plain files as they are */
    if (!f) return em__seterr(errno == ENOENT ? EM_ENOENT : EM_EIO, "%s: %s", path, strerror(errno ? errno : EIO));
    uint8_t buf[65536];
    uint64_t pos = 0;
    int64_t lines = 1;
    while (pos < offset) {
        unsigned want = offset - pos < sizeof buf ? (unsigned)(offset - pos) : (unsigned)sizeof buf;
        int n = gzread(f, buf, want);
        if (n <= 0) {
            /* The message belongs to f: format it before gzclose frees it. */
            int err, rc = 0;
            if (n < 0) rc = em__seterr(EM_ECORRUPT, "%s: %s", path, gzerror(f, &err));
            gzclose(f);
            return n < 0 ? rc : lines; /* n == 0: offset past the end */
        }
        for (const uint8_t *p = buf, *e = buf + n; (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++) lines++;
        pos += (uint64_t)n;
    }
    gzclose(f);
    return lines;
}

static int too_big(const cutter *c) {
    return em__seterr(EM_ETOOBIG,
                      "text_file: %s: line at %s %llu is longer than %zu bytes "
                      "(ember.record.maxBytes)",
                      c->s->path, c->what, (unsigned long long)c->line_start, c->max_line);
}

/* Hand one line (terminator already removed except a possible '\r') to the
 * sink.  Returns 0 to go on, 1 to stop (EM_STOP), or < 0. */
static int cut_emit(cutter *c, const uint8_t *p, size_t n, int strip_cr) {
    size_t raw = n;
    if (strip_cr && n && p[n - 1] == '\r') n--;
    if (n > c->max_line) return too_big(c);
    em_rec r = {NULL, 0, p, n};
    c->lines++;
    int rc = c->sink(c->sctx, &r);
    if (rc == EM_STOP) {
        /* The line was read: the split's bytes end after it (strip_cr:
         * it ended with '\n'). */
        c->line_start += raw + (strip_cr ? 1 : 0);
        return 1;
    }
    if (rc < 0) return rc;
    return 0;
}

/* Feed n bytes at stream position pos.  eof: these are the last bytes, so a
 * final line without '\n' is complete.  Returns 0 to go on, 1 when this
 * split needs no more input (its lines are done, or the sink stopped), or a
 * negative code with the message set. */
static int cut_feed(cutter *c, const uint8_t *p, size_t n, uint64_t pos, int eof) {
    size_t i = 0;
    if (c->skipping) {
        const uint8_t *q = n ? memchr(p, '\n', n) : NULL;
        if (!q) { /* all of this belongs to the previous split */
            c->line_start = pos + n;
            return eof;
        }
        i = (size_t)(q - p) + 1;
        c->skipping = 0;
        c->first = c->line_start = pos + i;
    }
    while (i < n) {
        if (!c->carry.len && c->line_start >= c->limit) return 1;
        const uint8_t *q = memchr(p + i, '\n', n - i);
        if (!q) break;
        size_t e = (size_t)(q - p);
        int rc;
        if (c->carry.len) {
            /* Bound the copy before making it: a runaway "line" in a file
             * without newlines must fail cleanly, not eat memory. */
            if (c->carry.len + (e - i) > c->max_line + 1)
                return too_big(c);
            if (ebuf_append(&c->carry, p + i, e - i))
                return em__seterr(EM_ENOMEM, "text_file: %s: out of memory", c->s->path);
            rc = cut_emit(c, c->carry.p, c->carry.len, 1);
            c->carry.len = 0;
        } else {
            rc = cut_emit(c, p + i, e - i, 1);
        }
        if (rc) return rc;
        i = e + 1;
        c->line_start = pos + i;
    }
    if (i < n) {
        /* A line that goes on in the next chunk (or ends at EOF). */
        if (!c->carry.len && c->line_start >= c->limit) return 1;
        if (eof && !c->carry.len) {
            int rc = cut_emit(c, p + i, n - i, 0);
            c->line_start = pos + n;
            return rc ? rc : 1;
        }
        if (c->carry.len + (n - i) > c->max_line + 1) return too_big(c);
        if (ebuf_append(&c->carry, p + i, n - i))
            return em__seterr(EM_ENOMEM, "text_file: %s: out of memory", c->s->path);
    }
    if (eof) {
        if (c->carry.len) {
            int rc = cut_emit(c, c->carry.p, c->carry.len, 0);
            c->carry.len = 0;
            c->line_start = pos + n;
            if (rc) return rc;
        }
        return 1;
    }
    return (!c->carry.len && c->line_start >= c->limit) ? 1 : 0;
}

static int open_err(const char *path, int e) {
    if (e == ENOENT || e == ENOTDIR)
        return em__seterr(EM_ENOENT, "text_file: %s: no such file or directory", path);
    return em__seterr(EM_EIO, "text_file: %s: %s", path, strerror(e));
}

/* A plain file through pread(2), from `start` (off-1, or 0). */
static int read_plain_pread(cutter *c, int fd, uint64_t start, uint64_t *bytes_read) {
    /* A buffer no bigger than the split needs: small splits are common in
     * tests and for small files, and a 1 MiB allocation each is not free. */
    uint64_t need = (c->limit > start ? c->limit - start : 0) + READ_SLACK;
    size_t cap = need < READ_CHUNK ? (size_t)need : READ_CHUNK;
    uint8_t *buf = malloc(cap);
    if (!buf) return em__seterr(EM_ENOMEM, "text_file: %s: out of memory", c->s->path);
    uint64_t pos = start;
    int rc = 0;
    for (;;) {
        /* Read little more than the split still needs: the line running
         * over its end is usually short, and a small split of a big file
         * should not pull in a whole chunk of its neighbour's bytes. */
        uint64_t want = (c->limit > pos ? c->limit - pos : 0) + READ_SLACK;
        size_t n = want < cap ? (size_t)want : cap;
        ssize_t r = pread(fd, buf, n, (off_t)pos);
        if (r < 0) {
            if (errno == EINTR) continue;
            rc = em__seterr(EM_EIO, "text_file: %s: read error at offset %llu: %s", c->s->path,
                            (unsigned long long)pos, strerror(errno));
            break;
        }
        *bytes_read += (uint64_t)r;
        rc = cut_feed(c, buf, (size_t)r, pos, r == 0);
        pos += (uint64_t)r;
        if (rc) break;
    }
    free(buf);
    return rc < 0 ? rc : 0;
}

static int read_plain(cutter *c, uint64_t *bytes_read) {
    const text_split *s = c->s;
    int fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return open_err(s->path, errno);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return em__seterr(EM_EIO, "text_file: %s: %s", s->path, strerror(e));
    }
    uint64_t start = s->off ? s->off - 1 : 0;
    uint64_t size = (uint64_t)st.st_size;
    int rc;
    if (S_ISREG(st.st_mode) && size > 0 && start >= size) {
        rc = 0; /* the file shrank since planning: nothing of it is ours */
    } else if (!S_ISREG(st.st_mode) || size == 0 || !text_reader_mmap) {
        rc = read_plain_pread(c, fd, start, bytes_read);
    } else {
        /* Map from the page holding `start` to EOF: the split's last line
         * may run past the split, and unmapped address space costs nothing
         * until touched. */
        long pg = sysconf(_SC_PAGESIZE);
        uint64_t mstart = start - start % (uint64_t)(pg > 0 ? pg : 4096);
        size_t mlen = (size_t)(size - mstart);
        void *m = mmap(NULL, mlen, PROT_READ, MAP_PRIVATE, fd, (off_t)mstart);
        if (m == MAP_FAILED) {
            rc = read_plain_pread(c, fd, start, bytes_read);
        } else {
            madvise(m, mlen, MADV_SEQUENTIAL);
            /* Start read-ahead on the split itself (plus the page the split
             * boundary line may spill into) before the first fault. */
            uint64_t want = s->off + s->len - mstart + 65536;
            madvise(m, want < mlen ? (size_t)want : mlen, MADV_WILLNEED);
            const uint8_t *base = (const uint8_t *)m + (start - mstart);
            /* Fed as one chunk with eof set, the cutter never copies: every
             * line, including a final one without '\n', is a view into the
             * mapping. */
            size_t n = (size_t)(size - start);
            rc = cut_feed(c, base, n, start, 1);
            /* Report what was scanned: up to the start of the first line
             * not taken (the cutter keeps line_start there), which is EOF
             * when the split ran to the end of the file. */
            uint64_t end = c->line_start < size ? c->line_start : size;
            *bytes_read += end > start ? end - start : 0;
            munmap(m, mlen);
        }
    }
    close(fd);
    return rc < 0 ? rc : 0;
}

/* A gzip file, all of it: gzip streams cannot be entered mid-way. */
static int read_gz(cutter *c, uint64_t *bytes_read) {
    const text_split *s = c->s;
    int fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return open_err(s->path, errno);
#ifdef POSIX_FADV_SEQUENTIAL
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    uint8_t *in = malloc(GZ_IN_CHUNK), *out = malloc(GZ_OUT_CHUNK);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    int rc = 0, zinit = 0;
    if (!in || !out) {
        rc = em__seterr(EM_ENOMEM, "text_file: %s: out of memory", s->path);
        goto done;
    }
    /* 15 + 16: gzip framing only.  (+32 would also accept a bare zlib
     * stream, which no gzip tool writes: such a file is corrupt input.) */
    if (inflateInit2(&zs, 15 + 16) != Z_OK) {
        rc = em__seterr(EM_ENOMEM, "text_file: %s: cannot initialise zlib", s->path);
        goto done;
    }
    zinit = 1;
    uint64_t comp = 0;  /* compressed bytes read so far */
    uint64_t upos = 0;  /* uncompressed position of the next output byte */
    int in_member = 0;  /* a member has begun and its end is not yet seen */
    int member_ended = 0;
    int padding = 0;    /* zeros after the last member are being skipped */
    for (;;) {
        ssize_t r = read(fd, in, GZ_IN_CHUNK);
        if (r < 0) {
            if (errno == EINTR) continue;
            rc = em__seterr(EM_EIO, "text_file: %s: read error at offset %llu: %s", s->path,
                            (unsigned long long)comp, strerror(errno));
            goto done;
        }
        if (r == 0) break;
        comp += (uint64_t)r;
        *bytes_read += (uint64_t)r;
        zs.next_in = in;
        zs.avail_in = (uInt)r;
        while (zs.avail_in > 0) {
            if (member_ended && (padding || zs.next_in[0] == 0)) {
                /* Zero bytes after the last member (tape and block tools pad
                 * files so; gzip -t accepts them): skip them, and accept
                 * nothing but zeros after. */
                for (uInt k = 0; k < zs.avail_in; k++)
                    if (zs.next_in[k]) {
                        rc = em__seterr(EM_ECORRUPT,
                                        "text_file: %s: corrupt gzip input at compressed offset %llu: "
                                        "data after the zero padding",
                                        s->path, (unsigned long long)(comp - zs.avail_in + k));
                        goto done;
                    }
                padding = 1;
                zs.avail_in = 0;
                break;
            }
            if (member_ended) {
                /* Another gzip member follows (as `cat a.gz b.gz` makes). */
                inflateReset(&zs);
                member_ended = 0;
            }
            in_member = 1;
            int zr;
            do {
                zs.next_out = out;
                zs.avail_out = GZ_OUT_CHUNK;
                zr = inflate(&zs, Z_NO_FLUSH);
                if (zr == Z_DATA_ERROR || zr == Z_NEED_DICT || zr == Z_STREAM_ERROR) {
                    rc = em__seterr(EM_ECORRUPT,
                                    "text_file: %s: corrupt gzip input at compressed offset "
                                    "%llu: %s",
                                    s->path, (unsigned long long)(comp - zs.avail_in),
                                    zs.msg ? zs.msg : "invalid data");
                    goto done;
                }
                if (zr == Z_MEM_ERROR) {
                    rc = em__seterr(EM_ENOMEM, "text_file: %s: out of memory in zlib", s->path);
                    goto done;
                }
                /* Z_BUF_ERROR only means no progress was possible with the
                 * buffers given; more input (or the end check) follows. */
                size_t got = GZ_OUT_CHUNK - zs.avail_out;
                if (got) {
                    rc = cut_feed(c, out, got, upos, 0);
                    upos += got;
                    if (rc) goto done;
                }
                if (zr == Z_STREAM_END) {
                    member_ended = 1;
                    in_member = 0;
                    break;
                }
            } while (zs.avail_out == 0);
        }
    }
    if (in_member) {
        rc = em__seterr(EM_ECORRUPT, "text_file: %s: truncated gzip input at compressed offset %llu",
                        s->path, (unsigned long long)comp);
        goto done;
    }
    rc = cut_feed(c, NULL, 0, upos, 1);
done:
    if (zinit) inflateEnd(&zs);
    free(in);
    free(out);
    close(fd);
    return rc < 0 ? rc : 0;
}

int text_read_split(const text_split *s, size_t max_line, rec_sink_fn sink, void *sctx,
                    uint64_t *bytes_read) {
    text_read_counts c;
    int rc = text_read_split_counts(s, max_line, sink, sctx, &c);
    if (bytes_read) *bytes_read = c.disk_bytes;
    return rc;
}

int text_read_split_counts(const text_split *s, size_t max_line, rec_sink_fn sink, void *sctx,
                           text_read_counts *counts) {
    uint64_t *bytes_read = &counts->disk_bytes;
    memset(counts, 0, sizeof *counts);
    if (!s || !s->path || !sink) return em__seterr(EM_EINVAL, "text_file: NULL argument");
    cutter c;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.max_line = max_line ? max_line : SIZE_MAX - 1;
    c.sink = sink;
    c.sctx = sctx;
    int rc;
    reading = &c;
    if (s->gz) {
        c.limit = UINT64_MAX;
        c.what = "uncompressed offset";
        rc = read_gz(&c, bytes_read);
    } else {
        c.limit = s->off + s->len;
        c.first = c.line_start = s->off;
        c.skipping = s->off > 0;
        c.what = "offset";
        rc = read_plain(&c, bytes_read);
    }
    reading = NULL;
    ebuf_free(&c.carry);
    counts->lines = c.lines;
    counts->bytes = s->gz ? counts->disk_bytes : c.lines ? c.line_start - c.first : 0;
    return rc;
}
