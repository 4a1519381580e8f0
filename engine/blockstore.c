/*
 * blockstore.c -- cached partitions (see blockstore.h).
 *
 * A mutex-guarded list; there are few blocks (one per cached partition), and
 * lookups happen once per task, so a list is enough.  A disk block is one
 * file holding a header and its chunks back to back (format in
 * blockstore.h); a task asking for it reads it back whole into one chunk,
 * checked, and dropped when the last reader releases it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "blockstore.h"
#include "buf.h"
#include "recfmt.h"
#include "ember.h"
#include "err.h"

typedef struct entry {
    block b;            /* must be first: handles point here */
    uint64_t ns;
    int rdd, part;
    int refs;
    int dead;           /* removed while referenced */
    size_t bytes;       /* total of the chunks */
    int counted;        /* bytes are in the store's mem_used */
    uint8_t **mem;      /* memory chunks (b.n of them), or NULL for a disk block */
    void (*release)(void *); /* a shared chunk's owner (bs_put_shared), or NULL */
    void *rel_arg;
    char *path;         /* disk block */
    const uint8_t *one; /* disk block: the single chunk b.p points at */
    size_t one_len;
    struct entry *next;
} entry;

struct blockstore {
    pthread_mutex_t mu;
    entry *head;
    const char *dir;
    size_t mem_limit, mem_used;
    uint64_t seq;
};

blockstore *bs_new(const char *dir, size_t mem_limit) {
    blockstore *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    pthread_mutex_init(&s->mu, NULL);
    s->dir = dir;
    s->mem_limit = mem_limit;
    return s;
}

static void drop_disk_copy(entry *e) {
    free((void *)e->one);
    e->one = NULL;
    e->b.n = 0;
}

static void entry_free(blockstore *s, entry *e) {
    if (e->mem) {
        if (e->counted) s->mem_used -= e->bytes;
        if (!e->release)
            for (int i = 0; i < e->b.n; i++) free(e->mem[i]);
        free(e->mem);
    }
    if (e->release) e->release(e->rel_arg);
    if (e->path) {
        unlink(e->path);
        free(e->path);
        drop_disk_copy(e);
    }
    free(e->b.p);
    free(e->b.len);
    free(e);
}

void bs_free(blockstore *s) {
    if (!s) return;
    for (entry *e = s->head, *n; e; e = n) {
        n = e->next;
        entry_free(s, e);
    }
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static entry *find(blockstore *s, uint64_t ns, int rdd, int part) {
    for (entry *e = s->head; e; e = e->next)
        if (!e->dead && e->ns == ns && e->rdd == rdd && e->part == part) return e;
    return NULL;
}

static int write_all(int fd, const uint8_t *p, size_t len) {
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static const char block_magic[8] = {'E', 'M', 'B', 'L', 'O', 'C', 'K', '1'};

static int write_file(const char *path, uint8_t **chunks, const size_t *lens, int n) {
    uint8_t h[BS_HEADER];
    uLong crc = crc32(0L, Z_NULL, 0);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        /* crc32 takes a uInt length: feed big chunks in pieces. */
        for (size_t off = 0; off < lens[i];) {
            size_t k = lens[i] - off < (1u << 30) ? lens[i] - off : (1u << 30);
            crc = crc32(crc, chunks[i] + off, (uInt)k);
            off += k;
        }
        total += lens[i];
    }
    bs_block_header(h, (uint32_t)crc, total);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    int bad = write_all(fd, h, sizeof h);
    for (int i = 0; i < n && !bad; i++) bad = write_all(fd, chunks[i], lens[i]);
    if (close(fd) || bad) {
        unlink(path);
        return -1;
    }
    return 0;
}

void bs_block_header(uint8_t h[BS_HEADER], uint32_t crc, uint64_t len) {
    memcpy(h, block_magic, 8);
    put_u32le(h + 8, 1);
    put_u32le(h + 12, crc);
    put_u64le(h + 16, len);
}

int bs_block_check(const uint8_t *p, size_t n, size_t expect, const char *path, const uint8_t **records) {
    return bs_block_check_as(p, n, expect, "cached block", path, records);
}

int bs_block_check_as(const uint8_t *p, size_t n, size_t expect, const char *what, const char *path,
                      const uint8_t **records) {
    if (n < BS_HEADER || memcmp(p, block_magic, 8) != 0 || get_u32le(p + 8) != 1)
        return em__seterr(EM_ECORRUPT, "%s %s: bad header", what, path);
    uint64_t len = get_u64le(p + 16);
    if (len != n - BS_HEADER || (expect != SIZE_MAX && len != expect))
        return em__seterr(EM_ECORRUPT, "%s %s: %zu bytes of records, expected %llu", what, path, n - BS_HEADER,
                          (unsigned long long)(expect != SIZE_MAX ? expect : len));
    uLong crc = crc32(0L, Z_NULL, 0);
    for (size_t off = 0; off < len;) {
        size_t k = len - off < (1u << 30) ? (size_t)(len - off) : (1u << 30);
        crc = crc32(crc, p + BS_HEADER + off, (uInt)k);
        off += k;
    }
    if ((uint32_t)crc != get_u32le(p + 12))
        return em__seterr(EM_ECORRUPT, "%s %s: crc mismatch", what, path);
    const uint8_t *q = p + BS_HEADER, *end = q + len;
    em_rec r;
    for (size_t k; q < end; q += k)
        if (!(k = rec_get(q, end, &r)))
            return em__seterr(EM_ECORRUPT, "%s %s: malformed record at %zu", what, path, (size_t)(q - p));
    *records = p + BS_HEADER;
    return 0;
}

static void free_chunks(uint8_t **chunks, int n) {
    for (int i = 0; i < n; i++) free(chunks[i]);
}

/* Store chunks as a block: owned (release NULL: freed with free) or shared
 * (one chunk, given back with release). */
static int put_entry(blockstore *s, uint64_t ns, int rdd, int part, int level, uint8_t **chunks, const size_t *lens,
                     int n, void (*release)(void *), void *rel_arg) {
    entry *e = calloc(1, sizeof *e);
    size_t total = 0;
    for (int i = 0; i < n; i++) total += lens[i];
    if (!e || !(e->b.p = calloc((size_t)n + 1, sizeof *e->b.p)) || !(e->b.len = calloc((size_t)n + 1, sizeof(size_t)))) {
        if (e) {
            free(e->b.p);
            free(e);
        }
        if (release) release(rel_arg);
        else free_chunks(chunks, n);
        return em__seterr(EM_ENOMEM, "block store: out of memory");
    }
    e->ns = ns;
    e->rdd = rdd;
    e->part = part;
    e->bytes = total;
    e->release = release; /* from here entry_free gives the chunks back */
    e->rel_arg = rel_arg;
    pthread_mutex_lock(&s->mu);
    int to_disk = level == EM_DISK_ONLY || (level == EM_MEMORY_AND_DISK && s->mem_used + total > s->mem_limit);
    uint64_t seq = ++s->seq;
    int dup = find(s, ns, rdd, part) != NULL;
    pthread_mutex_unlock(&s->mu);
    if (dup) { /* computed twice (a retry): keep the first */
        if (!release) free_chunks(chunks, n);
        entry_free(s, e);
        return 0;
    }
    if (to_disk) {
        char path[4096];
        snprintf(path, sizeof path, "%s/block_%d_%d_%llu", s->dir, rdd, part, (unsigned long long)seq);
        int bad = write_file(path, chunks, lens, n) || !(e->path = strdup(path));
        if (release) release(rel_arg);
        else free_chunks(chunks, n);
        e->release = NULL;
        if (bad) {
            entry_free(s, e);
            return em__seterr(EM_EIO, "block store: cannot write %s: %s", path, strerror(errno));
        }
    } else {
        if (!(e->mem = calloc((size_t)n + 1, sizeof *e->mem))) {
            if (!release) free_chunks(chunks, n);
            entry_free(s, e);
            return em__seterr(EM_ENOMEM, "block store: out of memory");
        }
        for (int i = 0; i < n; i++) {
            e->mem[i] = chunks[i];
            e->b.p[i] = chunks[i];
            e->b.len[i] = lens[i];
        }
        e->b.n = n;
    }
    pthread_mutex_lock(&s->mu);
    if (find(s, ns, rdd, part)) { /* another task stored it meanwhile: keep the first */
        pthread_mutex_unlock(&s->mu);
        entry_free(s, e);
        return 0;
    }
    if (e->mem) {
        s->mem_used += total;
        e->counted = 1;
    }
    e->next = s->head;
    s->head = e;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

int bs_put(blockstore *s, uint64_t ns, int rdd, int part, int level, uint8_t **chunks, const size_t *lens, int n) {
    return put_entry(s, ns, rdd, part, level, chunks, lens, n, NULL, NULL);
}

int bs_put_shared(blockstore *s, uint64_t ns, int rdd, int part, int level, const uint8_t *p, size_t len,
                  void (*release)(void *arg), void *arg) {
    uint8_t *chunk = (uint8_t *)p; /* never written nor freed by the store: release gives it back */
    return put_entry(s, ns, rdd, part, level, &chunk, &len, 1, release, arg);
}

/* Read a disk block back into one chunk and check it (under the lock).
 * Reads one byte more than expected, so a file that grew is caught too.
 * 0, or < 0 when the block is missing, unreadable or fails a check. */
static int load_disk(entry *e) {
    int fd = open(e->path, O_RDONLY | O_CLOEXEC);
    size_t want = BS_HEADER + e->bytes + 1, got = 0;
    uint8_t *p = malloc(want);
    while (fd >= 0 && p && got < want) {
        ssize_t n = read(fd, p + got, want - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    if (fd >= 0) close(fd);
    const uint8_t *records = NULL;
    if (!p || bs_block_check(p, got, e->bytes, e->path, &records)) {
        free(p);
        return -1;
    }
    e->one = p;
    e->b.p[0] = records;
    e->b.len[0] = e->bytes;
    e->b.n = 1;
    return 0;
}

/* Unlink an unreferenced entry from the list and free it (under the lock). */
static void unlink_entry(blockstore *s, entry *e) {
    entry **pp;
    for (pp = &s->head; *pp && *pp != e; pp = &(*pp)->next) {}
    if (*pp) *pp = e->next;
    entry_free(s, e);
}

block *bs_get(blockstore *s, uint64_t ns, int rdd, int part) {
    pthread_mutex_lock(&s->mu);
    entry *e = find(s, ns, rdd, part);
    if (e && e->path && !e->one && load_disk(e)) {
        /* Missing, unreadable or corrupt: drop it, so the partition is
         * recomputed from lineage and cached again.  A disk copy is loaded
         * only when nobody holds the block, so nobody references it. */
        unlink_entry(s, e);
        e = NULL;
    }
    if (e) e->refs++;
    pthread_mutex_unlock(&s->mu);
    return e ? &e->b : NULL;
}

void bs_release(blockstore *s, block *b) {
    entry *e = (entry *)b;
    pthread_mutex_lock(&s->mu);
    if (--e->refs == 0 && e->dead) {
        unlink_entry(s, e);
    } else if (e->refs == 0 && e->path) {
        drop_disk_copy(e); /* disk blocks keep no memory between reads */
    }
    pthread_mutex_unlock(&s->mu);
}

void bs_remove(blockstore *s, uint64_t ns, int rdd) {
    pthread_mutex_lock(&s->mu);
    for (entry **pp = &s->head; *pp;) {
        entry *e = *pp;
        if (e->ns == ns && (rdd < 0 || e->rdd == rdd)) {
            if (e->refs) {
                e->dead = 1;
                pp = &e->next;
            } else {
                *pp = e->next;
                entry_free(s, e);
            }
        } else {
            pp = &e->next;
        }
    }
    pthread_mutex_unlock(&s->mu);
}

int bs_sizes(blockstore *s, uint64_t ns, int rdd, int part, int64_t *mem, int64_t *disk) {
    pthread_mutex_lock(&s->mu);
    entry *e = find(s, ns, rdd, part);
    if (e) {
        *mem = e->path ? 0 : (int64_t)e->bytes;
        *disk = e->path ? (int64_t)(BS_HEADER + e->bytes) : 0;
    }
    pthread_mutex_unlock(&s->mu);
    return e ? 0 : -1;
}

int bs_count(blockstore *s, uint64_t ns, int rdd) {
    int n = 0;
    pthread_mutex_lock(&s->mu);
    for (entry *e = s->head; e; e = e->next)
        if (!e->dead && e->ns == ns && (rdd < 0 || e->rdd == rdd)) n++;
    pthread_mutex_unlock(&s->mu);
    return n;
}
