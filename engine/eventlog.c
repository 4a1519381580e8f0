/*
 * eventlog.c -- the event log writer: Spark's file names, the single file
 * and the rolling directory, the .inprogress renames, and the plain, zstd
 * or lz4-java block stream each file is (see eventlog.h).
 *
 * A file is a sink: an fd, the codec's stream state and one output buffer
 * of file bytes not yet written.  A line goes through the codec into the
 * buffer, and the buffer goes to the file when it passes SINK_CHUNK bytes,
 * at evlog_flush and at the file's end.  For lz4 the codec's state is the
 * block being filled: it becomes an lz4-java block (lz4block.h) when it
 * holds LZ4B_BLOCK_SIZE bytes and at every flush, as Spark's syncFlush
 * does, and the file's end adds the end mark.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "buf.h"
#include "ember.h"
#include "err.h"
#include "eventlog.h"
#include "eventlog_json.h"
#include "fsutil.h"
#include "lz4block.h"

#define SINK_CHUNK ((size_t)64 << 10)

enum { CODEC_NONE = 0, CODEC_ZSTD, CODEC_LZ4 };

typedef struct sink {
    int fd;
    int codec;
    const char *path;          /* for messages; owned by the evlog */
    ZSTD_CCtx *z;
    ebuf blk;                  /* lz4: the block being filled */
    ebuf out;                  /* file bytes not yet written */
    int64_t written;           /* file bytes written so far */
} sink;

struct evlog {
    char *dir;                 /* conf->dir */
    char *name;                /* Spark's nameForAppAndAttempt */
    const char *ext;           /* "", ".zstd" or ".lz4" */
    int codec;
    bool rolling;
    int64_t max_size;
    int index;                 /* rolling: the events_ file being written */
    int64_t size;              /* rolling: bytes of lines written to it,
                                  before compression, as Spark counts */
    char *logdir;              /* rolling: DIR/eventlog_v2_NAME */
    char *cur;                 /* the file being written */
    char *final;               /* single: its name after evlog_close */
    sink s;
    ebuf line;
    int err;                   /* sticky I/O failure */
};

/* Spark's Utils.sanitizeDirName. */
static void sanitize(char *s) {
    for (; *s; s++) {
        if (*s == ' ' || *s == ':' || *s == '/') *s = '-';
        else if (strchr(".${}'\"", *s)) *s = '_';
        else if (*s >= 'A' && *s <= 'Z') *s = (char)(*s - 'A' + 'a');
    }
}

static char *fmt(const char *f, const char *a, const char *b, const char *c) {
    char *p = NULL;
    if (asprintf(&p, f, a, b, c) < 0) return NULL;
    return p;
}

/* ------------------------------------------------------------------ sinks */

static int sink_drain(sink *s) {
    size_t off = 0;
    while (off < s->out.len) {
        ssize_t n = write(s->fd, s->out.p + off, s->out.len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            s->out.len = 0;
            return em__seterr(EM_EIO, "event log %s: write: %s", s->path, strerror(e));
        }
        off += (size_t)n;
        s->written += n;
    }
    s->out.len = 0;
    return 0;
}

static int sink_open(sink *s, const char *path, int codec) {
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->path = path;
    s->codec = codec;
    if (codec == CODEC_ZSTD) {
        if (!(s->z = ZSTD_createCCtx())) return em__seterr(EM_ENOMEM, "event log: out of memory");
        ZSTD_CCtx_setParameter(s->z, ZSTD_c_compressionLevel, 1);
    } else if (codec == CODEC_LZ4) {
        if (ebuf_reserve(&s->blk, LZ4B_BLOCK_SIZE)) return em__seterr(EM_ENOMEM, "event log: out of memory");
    }
    s->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0660);
    if (s->fd < 0) return em__seterr(EM_EIO, "event log %s: %s", path, strerror(errno));
    return 0;
}

/* The lz4 block being filled, as one lz4-java block into s->out. */
static int lz4_block_out(sink *s) {
    if (s->blk.len == 0) return 0;
    int rc = lz4b_put_block(&s->out, s->blk.p, s->blk.len, LZ4B_BLOCK_SIZE);
    if (rc) return rc;
    s->blk.len = 0;
    return s->out.len >= SINK_CHUNK ? sink_drain(s) : 0;
}

/* Compress (or copy) p[0, n) into s->out, draining it past SINK_CHUNK;
 * mode is ZSTD_e_continue, ZSTD_e_flush or ZSTD_e_end (lz4 ends its block
 * at a flush and adds the end mark at the end; plain copies). */
static int sink_put(sink *s, const void *p, size_t n, ZSTD_EndDirective mode) {
    if (s->codec == CODEC_NONE) {
        if (ebuf_append(&s->out, p, n)) return em__seterr(EM_ENOMEM, "event log: out of memory");
    } else if (s->codec == CODEC_ZSTD) {
        ZSTD_inBuffer in = {p, n, 0};
        for (;;) {
            if (ebuf_reserve(&s->out, ZSTD_CStreamOutSize())) return em__seterr(EM_ENOMEM, "event log: out of memory");
            ZSTD_outBuffer o = {s->out.p + s->out.len, s->out.cap - s->out.len, 0};
            size_t left = ZSTD_compressStream2(s->z, &o, &in, mode);
            if (ZSTD_isError(left)) return em__seterr(EM_EIO, "event log %s: zstd: %s", s->path, ZSTD_getErrorName(left));
            s->out.len += o.pos;
            if (s->out.len >= SINK_CHUNK) {
                int rc = sink_drain(s);
                if (rc) return rc;
            }
            if (mode == ZSTD_e_continue ? in.pos == in.size : left == 0) break;
        }
    } else {
        const uint8_t *q = p;
        while (n > 0) {
            size_t k = LZ4B_BLOCK_SIZE - s->blk.len;
            if (k > n) k = n;
            if (ebuf_append(&s->blk, q, k)) return em__seterr(EM_ENOMEM, "event log: out of memory");
            q += k;
            n -= k;
            if (s->blk.len == LZ4B_BLOCK_SIZE) {
                int rc = lz4_block_out(s);
                if (rc) return rc;
            }
        }
        if (mode != ZSTD_e_continue) {
            int rc = lz4_block_out(s);
            if (!rc && mode == ZSTD_e_end) rc = lz4b_put_end(&s->out, LZ4B_BLOCK_SIZE);
            if (rc) return rc;
        }
    }
    if (mode != ZSTD_e_continue || s->out.len >= SINK_CHUNK) return sink_drain(s);
    return 0;
}

/* Finish the stream (when ok) and release everything; the first error. */
static int sink_close(sink *s, bool finish) {
    int rc = 0;
    if (finish && s->fd >= 0) rc = sink_put(s, "", 0, ZSTD_e_end);
    if (s->fd >= 0 && close(s->fd) && !rc) rc = em__seterr(EM_EIO, "event log %s: close: %s", s->path, strerror(errno));
    s->fd = -1;
    ZSTD_freeCCtx(s->z);
    s->z = NULL;
    ebuf_free(&s->blk);
    ebuf_free(&s->out);
    return rc;
}

/* ----------------------------------------------------------------- writer */

static int touch(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0660);
    if (fd < 0) return em__seterr(EM_EIO, "event log %s: %s", path, strerror(errno));
    close(fd);
    return 0;
}

/* Open events_<index>_NAME in the rolling directory. */
static int open_rolled(evlog *l) {
    char idx[16];
    snprintf(idx, sizeof idx, "%d", l->index);
    free(l->cur);
    l->cur = NULL;
    char *f = fmt("events_%s_%s%s", idx, l->name, l->ext);
    if (f) l->cur = fmt("%s/%s%s", l->logdir, f, "");
    free(f);
    if (!l->cur) return em__seterr(EM_ENOMEM, "event log: out of memory");
    return sink_open(&l->s, l->cur, l->codec);
}

static char *appstatus(const evlog *l, bool inprogress) {
    return fmt("%s/appstatus_%s%s", l->logdir, l->name, inprogress ? ".inprogress" : "");
}

static void evlog_free(evlog *l) {
    free(l->dir);
    free(l->name);
    free(l->logdir);
    free(l->cur);
    free(l->final);
    ebuf_free(&l->line);
    free(l);
}

int evlog_open(const evlog_conf *conf, const char *app_id, evlog **out) {
    *out = NULL;
    if (!conf || !app_id || !*app_id) return em__seterr(EM_EINVAL, "evlog_open: no settings or no application id");
    const char *codec = conf->codec ? conf->codec : EVLOG_DEFAULT_CODEC;
    int c = CODEC_NONE;
    if (conf->compress) {
        if (!strcmp(codec, "zstd")) c = CODEC_ZSTD;
        else if (!strcmp(codec, "lz4")) c = CODEC_LZ4;
        else return em__seterr(EM_EINVAL, "ember.eventLog.compression.codec: \"%s\" is not one of zstd, lz4", codec);
    }
    int64_t max = conf->max_file_size ? conf->max_file_size : EVLOG_DEFAULT_MAX_FILE_SIZE;
    if (conf->rolling && max < 1024)
        return em__seterr(EM_EINVAL, "ember.eventLog.rolling.maxFileSize: %lld is below 1k", (long long)max);
    const char *dir = conf->dir ? conf->dir : EVLOG_DEFAULT_DIR;
    struct stat st;
    if (stat(dir, &st)) {
        int e = errno;
        return em__seterr(e == ENOENT ? EM_ENOENT : EM_EIO, "event log directory %s: %s", dir, strerror(e));
    }
    if (!S_ISDIR(st.st_mode)) return em__seterr(EM_EIO, "event log directory %s is not a directory", dir);

    bool made = false; /* a file or directory of ours to remove on failure */
    evlog *l = calloc(1, sizeof *l);
    if (!l) return em__seterr(EM_ENOMEM, "event log: out of memory");
    l->s.fd = -1;
    l->codec = c;
    l->ext = c == CODEC_ZSTD ? ".zstd" : c == CODEC_LZ4 ? ".lz4" : "";
    l->rolling = conf->rolling;
    l->max_size = max;
    l->dir = strdup(dir);
    l->name = conf->attempt_id ? fmt("%s_%s%s", app_id, conf->attempt_id, "") : strdup(app_id);
    if (!l->dir || !l->name) goto nomem;
    /* Spark sanitizes the id and the attempt apart and joins them with
     * '_', which sanitizing leaves as it is: the same as doing it once */
    sanitize(l->name);
    int rc;
    if (l->rolling) {
        l->logdir = fmt("%s/eventlog_v2_%s%s", dir, l->name, "");
        if (!l->logdir) goto nomem;
        if (lstat(l->logdir, &st) == 0) {
            if (!conf->overwrite) {
                rc = em__seterr(EM_EIO, "event log %s exists already (ember.eventLog.overwrite is false)", l->logdir);
                goto fail;
            }
            rm_tree(l->logdir);
        }
        if (mkdir(l->logdir, 0770)) {
            rc = em__seterr(EM_EIO, "event log %s: %s", l->logdir, strerror(errno));
            goto fail;
        }
        made = true;
        char *mark = appstatus(l, true);
        if (!mark) goto nomem;
        rc = touch(mark);
        free(mark);
        l->index = 1;
        if (!rc) rc = open_rolled(l);
    } else {
        l->final = fmt("%s/%s%s", dir, l->name, l->ext);
        l->cur = l->final ? fmt("%s%s%s", l->final, ".inprogress", "") : NULL;
        if (!l->cur) goto nomem;
        if (lstat(l->final, &st) == 0) {
            if (!conf->overwrite) {
                rc = em__seterr(EM_EIO, "event log %s exists already (ember.eventLog.overwrite is false)", l->final);
                goto fail;
            }
            if (unlink(l->final)) {
                rc = em__seterr(EM_EIO, "event log %s: %s", l->final, strerror(errno));
                goto fail;
            }
        }
        made = true;
        rc = sink_open(&l->s, l->cur, c);
    }
    if (rc) goto fail;
    app_event *start = app_event_new(AE_LOG_START);
    if (!start) goto nomem;
    start->version = strdup(conf->version ? conf->version : EMBER_VERSION);
    rc = start->version ? evlog_write(l, start) : em__seterr(EM_ENOMEM, "event log: out of memory");
    app_event_free(start);
    if (rc) goto fail;
    *out = l;
    return 0;
nomem:
    rc = em__seterr(EM_ENOMEM, "event log: out of memory");
fail:
    sink_close(&l->s, false);
    if (made && l->rolling) rm_tree(l->logdir);
    else if (made) unlink(l->cur);
    evlog_free(l);
    return rc;
}

static int roll(evlog *l) {
    int rc = sink_close(&l->s, true);
    if (rc) return rc;
    l->index++;
    l->size = 0;
    return open_rolled(l);
}

int evlog_write(evlog *l, const app_event *e) {
    if (!l || !e) return em__seterr(EM_EINVAL, "evlog_write: no log or no event");
    if (l->err) return em__seterr(EM_EIO, "event log %s: an earlier write failed", l->cur);
    l->line.len = 0;
    int rc = evjson_write(e, &l->line);
    if (!rc && ebuf_append(&l->line, "\n", 1)) rc = em__seterr(EM_ENOMEM, "event log: out of memory");
    if (rc) return rc;
    /* an empty file takes its first line whatever its length, so that a
     * line longer than the limit does not leave empty files behind */
    if (l->rolling && l->size > 0 && l->size + (int64_t)l->line.len > l->max_size) rc = roll(l);
    if (!rc) rc = sink_put(&l->s, l->line.p, l->line.len, ZSTD_e_continue);
    if (!rc) l->size += (int64_t)l->line.len;
    if (rc == EM_EIO) l->err = rc;
    return rc;
}

int evlog_flush(evlog *l) {
    if (!l) return em__seterr(EM_EINVAL, "evlog_flush: no log");
    if (l->err) return em__seterr(EM_EIO, "event log %s: an earlier write failed", l->cur);
    int rc = sink_put(&l->s, "", 0, ZSTD_e_flush);
    if (rc == EM_EIO) l->err = rc;
    return rc;
}

int evlog_close(evlog *l) {
    if (!l) return 0;
    int rc = sink_close(&l->s, !l->err);
    if (!rc && l->err) rc = em__seterr(EM_EIO, "event log %s: an earlier write failed", l->cur);
    if (!rc && l->rolling) {
        char *from = appstatus(l, true), *to = appstatus(l, false);
        if (!from || !to) rc = em__seterr(EM_ENOMEM, "event log: out of memory");
        else if (rename(from, to)) rc = em__seterr(EM_EIO, "event log %s: rename: %s", from, strerror(errno));
        free(from);
        free(to);
    } else if (!rc && rename(l->cur, l->final)) {
        rc = em__seterr(EM_EIO, "event log %s: rename to %s: %s", l->cur, l->final, strerror(errno));
    }
    evlog_free(l);
    return rc;
}

const char *evlog_path(const evlog *l) { return l->rolling ? l->logdir : l->cur; }
