/*
 * eventlog_reader.c -- streaming events out of an event log file or
 * rolling directory (see eventlog_reader.h).
 *
 * Each file is a source of decoded bytes: read as it is, or through
 * libzstd's streaming decoder, liblz4's frame decoder (the lz4 command's),
 * or a decoder of lz4-java's block stream (what Spark's lz4 codec and
 * ember's writer write; lz4block.h): every block's checksum is checked
 * against its decoded bytes, and an end mark may be followed by another
 * stream, as Spark reads them.
 * The bytes go into one buffer that is cut into lines at '\n'; the buffer
 * holds at most one line and one read, so memory stays bounded by the
 * longest line the parser accepts (EVJSON_MAX_BYTES).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lz4.h>
#include <lz4frame.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "buf.h"
#include "ember.h"
#include "err.h"
#include "eventlog_json.h"
#include "eventlog_reader.h"
#include "lz4block.h"

#define READ_CHUNK ((size_t)256 << 10)

enum { SRC_PLAIN = 0, SRC_ZSTD, SRC_LZ4 /* frame or block, known after the magic */, SRC_LZ4F, SRC_LZ4B };

typedef struct src {
    int fd;
    int codec;
    const char *path;
    bool tolerant;             /* a torn end is the end, not an error */
    ZSTD_DCtx *z;
    LZ4F_dctx *lz;
    size_t hint;               /* zstd, LZ4F: 0 between frames */
    bool full;                 /* zstd, LZ4F: the last call filled its
                                  output, so it may hold more */
    ebuf raw;                  /* file bytes read, [rpos, raw.len) unused */
    size_t rpos;
    bool eof;
    ebuf blk;                  /* LZ4B: the decoded block, [bpos, len) unused */
    size_t bpos;
    int64_t boff;              /* LZ4B: the file offset of the next block */
} src;

struct evlog_reader {
    char *path;
    char **files;
    int nfiles, fi;
    bool inprogress;
    bool follow;               /* evlog_reader_follow */
    bool open;
    src s;
    ebuf buf;                  /* decoded bytes, [pos, len) not yet cut */
    size_t pos;
    int64_t lineno;
    json_doc doc;
};

static int nomem(void) { return em__seterr(EM_ENOMEM, "event log: out of memory"); }

static bool ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* The codec of a file by its name, as Spark picks it. */
static int codec_of(const char *path, int *codec) {
    size_t n = strlen(path);
    char *p = strdup(path);
    if (!p) return nomem();
    if (ends_with(p, ".inprogress")) p[n - strlen(".inprogress")] = '\0';
    int rc = 0;
    *codec = SRC_PLAIN;
    if (ends_with(p, ".zstd") || ends_with(p, ".zst")) *codec = SRC_ZSTD;
    else if (ends_with(p, ".lz4")) *codec = SRC_LZ4;
    else if (ends_with(p, ".lzf") || ends_with(p, ".snappy"))
        rc = em__seterr(EM_EINVAL, "event log %s: the %s codec is not supported (plain, zstd and lz4 are)", path,
                        strrchr(p, '.') + 1);
    free(p);
    return rc;
}

/* ------------------------------------------------------------- sources */

static void src_close(src *s) {
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
    ZSTD_freeDCtx(s->z);
    s->z = NULL;
    if (s->lz) LZ4F_freeDecompressionContext(s->lz);
    s->lz = NULL;
    ebuf_free(&s->raw);
    ebuf_free(&s->blk);
}

static int src_open(src *s, const char *path, bool tolerant) {
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->path = path;
    s->tolerant = tolerant;
    int rc = codec_of(path, &s->codec);
    if (rc) return rc;
    s->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0) {
        int e = errno;
        return em__seterr(e == ENOENT ? EM_ENOENT : EM_EIO, "event log %s: %s", path, strerror(e));
    }
    if (s->codec == SRC_ZSTD && !(s->z = ZSTD_createDCtx())) return nomem();
    return 0;
}

/* Make at least n unused raw bytes available if the file has them; fewer
 * only at the file's end. */
static int need(src *s, size_t n) {
    while (s->raw.len - s->rpos < n && !s->eof) {
        if (s->rpos > 0) {
            memmove(s->raw.p, s->raw.p + s->rpos, s->raw.len - s->rpos);
            s->raw.len -= s->rpos;
            s->rpos = 0;
        }
        size_t want = n > READ_CHUNK ? n : READ_CHUNK;
        if (ebuf_reserve(&s->raw, want)) return nomem();
        ssize_t got = read(s->fd, s->raw.p + s->raw.len, s->raw.cap - s->raw.len);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return em__seterr(EM_EIO, "event log %s: read: %s", s->path, strerror(errno));
        if (got == 0) s->eof = true;
        s->raw.len += (size_t)got;
    }
    return 0;
}

static int truncated(src *s, const char *what) {
    if (s->tolerant) return 0;
    return em__seterr(EM_ECORRUPT, "event log %s: the %s stream ends in the middle of a block", s->path, what);
}

/* Decode one lz4-java block into s->blk (empty at the stream's end). */
static int lz4b_block(src *s) {
    s->blk.len = s->bpos = 0;
    for (;;) {
        int rc = need(s, LZ4B_HEADER);
        if (rc) return rc;
        size_t have = s->raw.len - s->rpos;
        if (have == 0) return 0;
        if (have < LZ4B_HEADER) return truncated(s, "lz4");
        lz4b_header bh;
        const char *why;
        if (lz4b_parse(s->raw.p + s->rpos, &bh, &why))
            return em__seterr(EM_ECORRUPT, "event log %s: %s at offset %lld", s->path, why, (long long)s->boff);
        rc = need(s, LZ4B_HEADER + bh.clen);
        if (rc) return rc;
        if (s->raw.len - s->rpos < LZ4B_HEADER + bh.clen) return truncated(s, "lz4");
        const uint8_t *data = s->raw.p + s->rpos + LZ4B_HEADER;
        if (bh.dlen == 0) { /* the end mark of one stream; another may follow */
            s->rpos += LZ4B_HEADER;
            s->boff += LZ4B_HEADER;
            continue;
        }
        if (ebuf_reserve(&s->blk, bh.dlen)) return nomem();
        if (bh.method == LZ4B_RAW) {
            memcpy(s->blk.p, data, bh.dlen);
        } else {
            int d = LZ4_decompress_safe((const char *)data, (char *)s->blk.p, (int)bh.clen, (int)bh.dlen);
            if (d < 0 || (size_t)d != bh.dlen)
                return em__seterr(EM_ECORRUPT, "event log %s: a corrupt lz4 block at offset %lld", s->path, (long long)s->boff);
        }
        uint32_t sum = lz4b_checksum(s->blk.p, bh.dlen);
        if (sum != bh.check)
            return em__seterr(EM_ECORRUPT,
                              "event log %s: the lz4 block's checksum does not match its data (block at offset %lld: "
                              "0x%08x in the header, 0x%08x computed)",
                              s->path, (long long)s->boff, bh.check, sum);
        s->blk.len = bh.dlen;
        s->rpos += LZ4B_HEADER + bh.clen;
        s->boff += (int64_t)(LZ4B_HEADER + bh.clen);
        return 0;
    }
}

/* Up to cap decoded bytes into dst; *got 0 at the end. */
static int src_read(src *s, uint8_t *dst, size_t cap, size_t *got) {
    *got = 0;
    int rc;
    if (s->codec == SRC_LZ4) {
        if ((rc = need(s, 4))) return rc;
        if (s->raw.len - s->rpos < 4) return s->raw.len - s->rpos == 0 ? 0 : truncated(s, "lz4");
        if (get_u32le(s->raw.p + s->rpos) == 0x184D2204u) {
            s->codec = SRC_LZ4F;
            if (LZ4F_isError(LZ4F_createDecompressionContext(&s->lz, LZ4F_VERSION))) return nomem();
        } else {
            s->codec = SRC_LZ4B;
        }
    }
    if (s->codec == SRC_PLAIN) {
        for (;;) {
            ssize_t n = read(s->fd, dst, cap);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return em__seterr(EM_EIO, "event log %s: read: %s", s->path, strerror(errno));
            *got = (size_t)n;
            return 0;
        }
    }
    if (s->codec == SRC_LZ4B) {
        if (s->bpos == s->blk.len && (rc = lz4b_block(s))) return rc;
        size_t n = s->blk.len - s->bpos < cap ? s->blk.len - s->bpos : cap;
        if (n) memcpy(dst, s->blk.p + s->bpos, n);
        s->bpos += n;
        *got = n;
        return 0;
    }
    /* zstd and LZ4 frames: decode until some output or the end */
    while (*got == 0) {
        if (s->rpos == s->raw.len && !s->full) {
            if ((rc = need(s, 1))) return rc;
            if (s->rpos == s->raw.len) return s->hint ? truncated(s, s->codec == SRC_ZSTD ? "zstd" : "lz4") : 0;
        }
        if (s->codec == SRC_ZSTD) {
            ZSTD_inBuffer in = {s->raw.p + s->rpos, s->raw.len - s->rpos, 0};
            ZSTD_outBuffer out = {dst, cap, 0};
            size_t r = ZSTD_decompressStream(s->z, &out, &in);
            if (ZSTD_isError(r)) return em__seterr(EM_ECORRUPT, "event log %s: zstd: %s", s->path, ZSTD_getErrorName(r));
            s->hint = r;
            s->rpos += in.pos;
            *got = out.pos;
            s->full = out.pos == cap;
        } else {
            size_t dn = cap, sn = s->raw.len - s->rpos;
            size_t r = LZ4F_decompress(s->lz, dst, &dn, s->raw.p + s->rpos, &sn, NULL);
            if (LZ4F_isError(r)) return em__seterr(EM_ECORRUPT, "event log %s: lz4: %s", s->path, LZ4F_getErrorName(r));
            s->hint = r;
            s->rpos += sn;
            *got = dn;
            s->full = dn == cap;
        }
    }
    return 0;
}

/* ------------------------------------------------------------- reader */

static int cmp_index(const void *a, const void *b) {
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    long i = strtol(strrchr(x, '/') + 1 + strlen("events_"), NULL, 10);
    long j = strtol(strrchr(y, '/') + 1 + strlen("events_"), NULL, 10);
    return (i > j) - (i < j);
}

/* An events_<N>_... name: N is a positive number followed by '_'. */
static bool is_events_file(const char *name) {
    if (strncmp(name, "events_", 7)) return false;
    const char *p = name + 7;
    if (*p < '1' || *p > '9') return false;
    while (*p >= '0' && *p <= '9') p++;
    return *p == '_';
}

static int list_rolling(evlog_reader *r) {
    DIR *d = opendir(r->path);
    if (!d) return em__seterr(EM_EIO, "event log %s: %s", r->path, strerror(errno));
    int rc = 0, cap = 0;
    bool finished = false, marker = false;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (!strncmp(de->d_name, "appstatus_", 10)) {
            marker = true;
            if (!ends_with(de->d_name, ".inprogress")) finished = true;
            continue;
        }
        if (!is_events_file(de->d_name)) continue;
        if (r->nfiles == cap) {
            cap = cap ? cap * 2 : 8;
            char **f = realloc(r->files, (size_t)cap * sizeof *f);
            if (!f) {
                rc = nomem();
                break;
            }
            r->files = f;
        }
        if (asprintf(&r->files[r->nfiles], "%s/%s", r->path, de->d_name) < 0) rc = nomem();
        else r->nfiles++;
    }
    closedir(d);
    if (rc) return rc;
    if (r->nfiles == 0) return em__seterr(EM_ECORRUPT, "event log %s: no events_ files in the directory", r->path);
    qsort(r->files, (size_t)r->nfiles, sizeof *r->files, cmp_index);
    r->inprogress = marker && !finished;
    return 0;
}

int evlog_reader_open(const char *path, evlog_reader **out) {
    *out = NULL;
    if (!path) return em__seterr(EM_EINVAL, "evlog_reader_open: no path");
    struct stat st;
    if (stat(path, &st)) {
        int e = errno;
        return em__seterr(e == ENOENT ? EM_ENOENT : EM_EIO, "event log %s: %s", path, strerror(e));
    }
    evlog_reader *r = calloc(1, sizeof *r);
    if (!r) return nomem();
    r->s.fd = -1;
    int rc = 0;
    if (!(r->path = strdup(path))) rc = nomem();
    if (!rc && S_ISDIR(st.st_mode)) {
        rc = list_rolling(r);
    } else if (!rc) {
        int codec;
        rc = codec_of(path, &codec);
        if (!rc && !(r->files = malloc(sizeof *r->files))) rc = nomem();
        if (!rc && !(r->files[0] = strdup(path))) rc = nomem();
        if (!rc) r->nfiles = 1;
        r->inprogress = ends_with(path, ".inprogress");
    }
    if (rc) {
        evlog_reader_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

bool evlog_reader_in_progress(const evlog_reader *r) { return r->inprogress; }

int evlog_reader_follow(evlog_reader *r) {
    struct stat st;
    if (!r->inprogress || r->nfiles != 1 || stat(r->path, &st) || S_ISDIR(st.st_mode)) return -1;
    r->follow = true;
    return 0;
}

static bool blank(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r') return false;
    return true;
}

static int parse(evlog_reader *r, const uint8_t *p, size_t n, app_event **ev) {
    int rc = evjson_read(p, n, &r->doc, ev);
    if (rc) return em__preferr(rc, "%s: line %lld", r->s.path, (long long)r->lineno);
    return 1;
}

int evlog_reader_next(evlog_reader *r, app_event **ev) {
    *ev = NULL;
    if (!r) return em__seterr(EM_EINVAL, "evlog_reader_next: no reader");
    for (;;) {
        if (!r->open) {
            if (r->fi == r->nfiles) return 0;
            bool last = r->fi == r->nfiles - 1;
            int rc = src_open(&r->s, r->files[r->fi++], last && r->inprogress);
            if (rc) {
                src_close(&r->s);
                return rc;
            }
            r->open = true;
            r->buf.len = r->pos = 0;
            r->lineno = 0;
        }
        uint8_t *p = r->buf.p ? r->buf.p + r->pos : NULL;
        size_t left = r->buf.len - r->pos;
        uint8_t *nl = left ? memchr(p, '\n', left) : NULL;
        if (nl) {
            r->pos += (size_t)(nl - p) + 1;
            r->lineno++;
            if (blank(p, (size_t)(nl - p))) continue;
            return parse(r, p, (size_t)(nl - p), ev);
        }
        if (r->pos > 0) {
            memmove(r->buf.p, p, left);
            r->buf.len = left;
            r->pos = 0;
        }
        if (left > EVJSON_MAX_BYTES)
            return em__seterr(EM_ECORRUPT, "%s: line %lld: longer than %zu bytes", r->s.path, (long long)r->lineno + 1,
                              EVJSON_MAX_BYTES);
        if (ebuf_reserve(&r->buf, READ_CHUNK)) return nomem();
        size_t got;
        int rc = src_read(&r->s, r->buf.p + r->buf.len, r->buf.cap - r->buf.len, &got);
        if (rc) { /* the file cannot be read on: the next call goes on with the next */
            src_close(&r->s);
            r->open = false;
            return rc;
        }
        r->buf.len += got;
        if (got > 0) continue;
        if (r->follow) { /* the end for now: read on at the next call */
            r->s.eof = false;
            return 0;
        }
        /* the file's end: a last line without its newline */
        bool torn_ok = r->s.tolerant;
        src_close(&r->s);
        r->open = false;
        r->buf.len = r->pos = 0;
        if (left == 0 || blank(r->buf.p, left)) continue;
        r->lineno++;
        if (torn_ok) continue;
        return parse(r, r->buf.p, left, ev);
    }
}

void evlog_reader_close(evlog_reader *r) {
    if (!r) return;
    src_close(&r->s);
    for (int i = 0; i < r->nfiles; i++) free(r->files[i]);
    free(r->files);
    free(r->path);
    ebuf_free(&r->buf);
    json_doc_free(&r->doc);
    free(r);
}
