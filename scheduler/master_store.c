/*
 * master_store.c -- the master's recovery file (see master_store.h): its
 * framing and checksum, the atomic replace, the read, the directory lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "ember.h"
#include "err.h"
#include "master_store.h"

#define MAGIC "EMBERMST"
#define VERSION 1u
#define STATE_MAX ((uint64_t)1 << 30) /* far past any cluster's state: a bad length, not an allocation */

struct master_store {
    int lock_fd;
    char dir[900], path[1000], tmp[1000];
};

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static uint64_t get64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* CRC32 of any length (zlib's takes an unsigned int at a time). */
static uint32_t crc_of(const uint8_t *p, size_t n) {
    uLong c = crc32(0L, Z_NULL, 0);
    while (n) {
        unsigned k = n > (1u << 30) ? 1u << 30 : (unsigned)n;
        c = crc32(c, p, k);
        p += k;
        n -= k;
    }
    return (uint32_t)c;
}

int master_store_frame(ebuf *out, const uint8_t *body, size_t len) {
    uint8_t h[MASTER_STORE_HEADER];
    memcpy(h, MAGIC, 8);
    put32(h + 8, VERSION);
    put32(h + 12, crc_of(body, len));
    put64(h + 16, (uint64_t)len);
    if (ebuf_append(out, h, sizeof h) || ebuf_append(out, body, len))
        return em__seterr(EM_ENOMEM, "master state: out of memory");
    return 0;
}

int master_store_unframe(const uint8_t *p, size_t n, const char *name, const uint8_t **body, size_t *len) {
    if (n < MASTER_STORE_HEADER)
        return em__seterr(EM_ECORRUPT, "the master's recovery state %s is corrupt: %zu bytes, shorter than its header",
                          name, n);
    if (memcmp(p, MAGIC, 8))
        return em__seterr(EM_ECORRUPT, "the master's recovery state %s is corrupt: not a master state file", name);
    if (get32(p + 8) != VERSION)
        return em__seterr(EM_ECORRUPT, "the master's recovery state %s has format version %u; this master reads %u",
                          name, get32(p + 8), VERSION);
    uint64_t want = get64(p + 16);
    if (want != (uint64_t)(n - MASTER_STORE_HEADER))
        return em__seterr(EM_ECORRUPT,
                          "the master's recovery state %s is corrupt: its header says %llu bytes of state, the file "
                          "holds %zu",
                          name, (unsigned long long)want, n - MASTER_STORE_HEADER);
    uint32_t crc = crc_of(p + MASTER_STORE_HEADER, n - MASTER_STORE_HEADER);
    if (crc != get32(p + 12))
        return em__seterr(EM_ECORRUPT,
                          "the master's recovery state %s is corrupt: checksum mismatch (stored %08x, computed %08x)",
                          name, get32(p + 12), crc);
    *body = p + MASTER_STORE_HEADER;
    *len = n - MASTER_STORE_HEADER;
    return 0;
}

master_store *master_store_open(const char *dir) {
    master_store *s = calloc(1, sizeof *s);
    if (!s) return em__seterr(EM_ENOMEM, "master state: out of memory"), NULL;
    s->lock_fd = -1;
    if (snprintf(s->dir, sizeof s->dir, "%s", dir) >= (int)sizeof s->dir) {
        free(s);
        return em__seterr(EM_EINVAL, "the recovery directory %.100s...: path too long", dir), NULL;
    }
    snprintf(s->path, sizeof s->path, "%s/master-state", s->dir);
    snprintf(s->tmp, sizeof s->tmp, "%s/master-state.tmp", s->dir);
    char lock[1000];
    snprintf(lock, sizeof lock, "%s/master.lock", s->dir);
    if (mkdir(s->dir, 0700) && errno != EEXIST) {
        em__seterr(EM_EIO, "cannot make the recovery directory %s: %s", s->dir, strerror(errno));
        free(s);
        return NULL;
    }
    s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0) {
        em__seterr(EM_EIO, "cannot open %s: %s", lock, strerror(errno));
        free(s);
        return NULL;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB)) {
        em__seterr(EM_EIO, "the recovery directory %s is in use by another master (%s is locked)", s->dir, lock);
        close(s->lock_fd);
        free(s);
        return NULL;
    }
    return s;
}

void master_store_close(master_store *s) {
    if (!s) return;
    close(s->lock_fd); /* and the lock with it */
    free(s);
}

const char *master_store_path(const master_store *s) { return s->path; }

int master_store_read(master_store *s, uint8_t **body, size_t *len) {
    *body = NULL;
    *len = 0;
    int fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return 0;
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        int e = errno;
        if (fd >= 0) close(fd);
        return em__seterr(EM_EIO, "cannot read the master's recovery state %s: %s", s->path, strerror(e));
    }
    if ((uint64_t)st.st_size > STATE_MAX + MASTER_STORE_HEADER) {
        close(fd);
        return em__seterr(EM_ECORRUPT, "the master's recovery state %s is corrupt: %lld bytes", s->path,
                          (long long)st.st_size);
    }
    size_t n = (size_t)st.st_size, got = 0;
    uint8_t *p = malloc(n ? n : 1);
    if (!p) {
        close(fd);
        return em__seterr(EM_ENOMEM, "master state: out of memory");
    }
    while (got < n) {
        ssize_t k = read(fd, p + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    int e = errno;
    close(fd);
    if (got < n) {
        free(p);
        return em__seterr(EM_EIO, "cannot read the master's recovery state %s: %s", s->path,
                          got < n && e ? strerror(e) : "it shrank while read");
    }
    const uint8_t *b = NULL;
    size_t blen = 0;
    if (master_store_unframe(p, n, s->path, &b, &blen)) {
        free(p);
        return EM_ECORRUPT;
    }
    memmove(p, b, blen);
    *body = p;
    *len = blen;
    return 0;
}

int master_store_write(master_store *s, const uint8_t *body, size_t len) {
    ebuf out = EBUF_INIT;
    if (master_store_frame(&out, body, len)) return EM_ENOMEM;
    int fd = open(s->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t off = 0;
    while (fd >= 0 && off < out.len) {
        ssize_t k = write(fd, out.p + off, out.len - off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        off += (size_t)k;
    }
    int ok = fd >= 0 && off == out.len && !fsync(fd);
    int e = errno;
    if (fd >= 0 && close(fd)) ok = 0;
    ebuf_free(&out);
    if (ok && rename(s->tmp, s->path)) ok = 0, e = errno;
    if (!ok) {
        unlink(s->tmp);
        return em__seterr(EM_EIO, "cannot write the master's recovery state %s: %s", s->path, strerror(e));
    }
    /* The rename itself is durable once the directory is. */
    int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}
