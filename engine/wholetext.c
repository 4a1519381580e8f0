/*
 * wholetext.c -- em_whole_text_files (Spark's wholeTextFiles): an RDD of
 * (path, content) pairs, one per file.
 *
 * The driver lists the files as em_text_file does (textfile.h: a file, a
 * directory's visible files, or a glob; sorted; an empty directory gives no
 * files) and parallelizes their absolute paths, consecutive files sharing a
 * partition; each task reads its files whole with bi_read_whole, inflating
 * those whose name ends in ".gz" (as text_file does).  A file is one
 * record, so a file larger than ember.record.maxBytes is an error naming
 * it.
 */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "builtins.h"
#include "ctx.h"
#include "err.h"
#include "rdd.h"
#include "textfile.h"

static int ends_gz(const char *p, size_t n) { return n >= 3 && !memcmp(p + n - 3, ".gz", 3); }

/* The whole of file path into *buf (malloc'd) and *len.  0, or < 0 with
 * the message set. */
static int read_whole(const char *path, int gz, uint8_t **buf, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = NULL;
    int rc = 0;
    if (gz) {
        gzFile f = gzopen(path, "rb");
        if (!f) return em__seterr(errno == ENOENT ? EM_ENOENT : EM_EIO, "whole_text_files: %s: %s", path,
                                  errno ? strerror(errno) : "cannot open");
        for (;;) {
            if (!b || n == cap) {
                uint8_t *nb = realloc(b, b ? (cap *= 2) : cap);
                if (!nb) {
                    rc = em__seterr(EM_ENOMEM, "whole_text_files: %s: out of memory", path);
                    break;
                }
                b = nb;
            }
            size_t want = cap - n > (1u << 30) ? (1u << 30) : cap - n;
            int k = gzread(f, b + n, (unsigned)want);
            if (k < 0) {
                int zerr = 0;
                const char *m = gzerror(f, &zerr);
                rc = em__seterr(EM_ECORRUPT, "whole_text_files: %s: corrupt gzip input: %s", path, m);
                break;
            }
            if (k == 0) {
                if (!gzeof(f)) rc = em__seterr(EM_ECORRUPT, "whole_text_files: %s: truncated gzip input", path);
                break;
            }
            n += (size_t)k;
        }
        gzclose(f);
    } else {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st)) {
            rc = em__seterr(errno == ENOENT ? EM_ENOENT : EM_EIO, "whole_text_files: %s: %s", path, strerror(errno));
            if (fd >= 0) close(fd);
            return rc;
        }
        cap = (size_t)st.st_size + 1;
        if (!(b = malloc(cap))) rc = em__seterr(EM_ENOMEM, "whole_text_files: %s: out of memory", path);
        while (!rc) {
            if (n == cap) { /* the file grew while read */
                uint8_t *nb = realloc(b, cap *= 2);
                if (!nb) {
                    rc = em__seterr(EM_ENOMEM, "whole_text_files: %s: out of memory", path);
                    break;
                }
                b = nb;
            }
            ssize_t k = read(fd, b + n, cap - n);
            if (k < 0 && errno == EINTR) continue;
            if (k < 0) rc = em__seterr(EM_EIO, "whole_text_files: %s: %s", path, strerror(errno));
            if (k <= 0) break;
            n += (size_t)k;
        }
        close(fd);
    }
    if (rc) {
        free(b);
        return rc;
    }
    *buf = b;
    *len = n;
    return 0;
}

/* A path (plain record) -> (path, the file's content). */
int bi_read_whole(const em_rec *in, em_emitter *out, const void *arg) {
    char path[4096];
    if (in->key || in->vlen == 0 || in->vlen >= sizeof path)
        return em_fail("whole_text_files: malformed path record");
    memcpy(path, in->val, in->vlen);
    path[in->vlen] = 0;
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = read_whole(path, ends_gz(path, in->vlen), &buf, &len);
    if (rc) return rc;
    rc = em_emit_pair(out, in->val, in->vlen, buf ? buf : (const uint8_t *)"", len);
    free(buf);
    if (rc == EM_ETOOBIG)
        return em__seterr(EM_ETOOBIG, "whole_text_files: %s: %zu bytes, over ember.record.maxBytes (a file is one record)",
                          path, len);
    return rc;
}

em_rdd *em_whole_text_files(em_ctx *ctx, const char *path, int min_partitions) {
    text_split *s = NULL;
    int n = 0;
    if (!ctx || !path) {
        em__seterr(EM_EINVAL, "em_whole_text_files: NULL %s", ctx ? "path" : "context");
        return NULL;
    }
    if (min_partitions <= 0) min_partitions = ctx_default_parallelism(ctx);
    /* One split per file: no limit on a split's size, a goal of the total. */
    if (text_plan(path, 1, 0, &s, &n)) {
        const char *m = em_errmsg(); /* "text_file: ..." -> "whole_text_files: ..." */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", strncmp(m, "text_file: ", 11) ? m : m + 11);
        em__seterr(em__lasterr(), "whole_text_files: %s", msg);
        return NULL;
    }
    em_rec *recs = n ? calloc((size_t)n, sizeof *recs) : NULL;
    if (n && !recs) {
        text_splits_free(s, n);
        em__seterr(EM_ENOMEM, "whole_text_files: out of memory");
        return NULL;
    }
    for (int i = 0; i < n; i++) recs[i] = (em_rec){NULL, 0, s[i].path, strlen(s[i].path)};
    int parts = n < min_partitions ? (n ? n : 1) : min_partitions;
    rdd_scope sc;
    compose_begin(&sc);
    em_rdd *files = em_parallelize(ctx, recs, (size_t)n, parts);
    em_rdd *r = files ? rdd_op(files, OP_MAP, "whole_text_files", (void *)bi_read_whole, NULL, 0) : NULL;
    r = compose_end(&sc, r);
    free(recs);
    text_splits_free(s, n);
    if (r && !(r->name = strdup(path))) {
        em_rdd_release(r);
        em__seterr(EM_ENOMEM, "whole_text_files: out of memory");
        return NULL;
    }
    return r;
}
