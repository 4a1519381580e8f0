/*
 * blockstore.c -- cached partitions (see blockstore.h).
 *
 * A mutex-guarded list; there are few blocks (one per cached partition), and
 * lookups happen once per task, so a list is enough.  A disk block is one
 * file holding its chunks back to back; a task asking for it reads it back
 * whole into one chunk, dropped when the last reader releases it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blockstore.h"
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
        for (int i = 0; i < e->b.n; i++) free(e->mem[i]);
        free(e->mem);
    }
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

static int write_file(const char *path, uint8_t **chunks, const size_t *lens, int n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    for (int i = 0; i < n; i++)
        if (write_all(fd, chunks[i], lens[i])) {
            close(fd);
            unlink(path);
            return -1;
        }
    return close(fd);
}

static void free_chunks(uint8_t **chunks, int n) {
    for (int i = 0; i < n; i++) free(chunks[i]);
}

int bs_put(blockstore *s, uint64_t ns, int rdd, int part, int level, uint8_t **chunks, const size_t *lens, int n) {
    entry *e = calloc(1, sizeof *e);
    size_t total = 0;
    for (int i = 0; i < n; i++) total += lens[i];
    if (!e || !(e->b.p = calloc((size_t)n + 1, sizeof *e->b.p)) || !(e->b.len = calloc((size_t)n + 1, sizeof(size_t)))) {
        if (e) {
            free(e->b.p);
            free(e);
        }
        free_chunks(chunks, n);
        return em__seterr(EM_ENOMEM, "block store: out of memory");
    }
    e->ns = ns;
    e->rdd = rdd;
    e->part = part;
    e->bytes = total;
    pthread_mutex_lock(&s->mu);
    int to_disk = level == EM_DISK_ONLY || (level == EM_MEMORY_AND_DISK && s->mem_used + total > s->mem_limit);
    uint64_t seq = ++s->seq;
    int dup = find(s, ns, rdd, part) != NULL;
    pthread_mutex_unlock(&s->mu);
    if (dup) { /* computed twice (a retry): keep the first */
        free_chunks(chunks, n);
        entry_free(s, e);
        return 0;
    }
    if (to_disk) {
        char path[4096];
        snprintf(path, sizeof path, "%s/block_%d_%d_%llu", s->dir, rdd, part, (unsigned long long)seq);
        int bad = write_file(path, chunks, lens, n) || !(e->path = strdup(path));
        free_chunks(chunks, n);
        if (bad) {
            entry_free(s, e);
            return em__seterr(EM_EIO, "block store: cannot write %s: %s", path, strerror(errno));
        }
    } else {
        if (!(e->mem = calloc((size_t)n + 1, sizeof *e->mem))) {
            free_chunks(chunks, n);
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

/* Read a disk block back into one chunk (under the lock). */
static int load_disk(entry *e) {
    int fd = open(e->path, O_RDONLY | O_CLOEXEC);
    uint8_t *p = malloc(e->bytes ? e->bytes : 1);
    size_t got = 0;
    while (fd >= 0 && p && got < e->bytes) {
        ssize_t n = read(fd, p + got, e->bytes - got);
        if (n <= 0) break;
        got += (size_t)n;
    }
    if (fd >= 0) close(fd);
    if (!p || got != e->bytes) {
        free(p);
        return -1;
    }
    e->one = p;
    e->b.p[0] = p;
    e->b.len[0] = e->bytes;
    e->b.n = 1;
    return 0;
}

block *bs_get(blockstore *s, uint64_t ns, int rdd, int part) {
    pthread_mutex_lock(&s->mu);
    entry *e = find(s, ns, rdd, part);
    if (e && e->path && !e->one && load_disk(e)) e = NULL; /* unreadable: recompute */
    if (e) e->refs++;
    pthread_mutex_unlock(&s->mu);
    return e ? &e->b : NULL;
}

void bs_release(blockstore *s, block *b) {
    entry *e = (entry *)b;
    pthread_mutex_lock(&s->mu);
    if (--e->refs == 0 && e->dead) {
        entry **pp;
        for (pp = &s->head; *pp && *pp != e; pp = &(*pp)->next) {}
        if (*pp) *pp = e->next;
        entry_free(s, e);
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

int bs_count(blockstore *s, uint64_t ns, int rdd) {
    int n = 0;
    pthread_mutex_lock(&s->mu);
    for (entry *e = s->head; e; e = e->next)
        if (!e->dead && e->ns == ns && (rdd < 0 || e->rdd == rdd)) n++;
    pthread_mutex_unlock(&s->mu);
    return n;
}
