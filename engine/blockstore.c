/*
 * blockstore.c -- cached partitions (see blockstore.h).
 *
 * A mutex-guarded list; there are few blocks (one per cached partition), and
 * lookups happen once per task, so a list is enough.  Disk blocks are read
 * back whole into memory when a task asks for them.
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
    uint8_t *mem;       /* memory block, or NULL for a disk block */
    char *path;         /* disk block */
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

static void entry_free(blockstore *s, entry *e) {
    if (e->mem) {
        s->mem_used -= e->b.len;
        free(e->mem);
    }
    if (e->path) {
        unlink(e->path);
        free(e->path);
        free((void *)e->b.p);
    }
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

static int write_file(const char *path, const uint8_t *p, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n <= 0) {
            close(fd);
            unlink(path);
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return close(fd);
}

int bs_put(blockstore *s, uint64_t ns, int rdd, int part, int level, uint8_t *bytes, size_t len) {
    entry *e = calloc(1, sizeof *e);
    if (!e) {
        free(bytes);
        return em__seterr(EM_ENOMEM, "block store: out of memory");
    }
    e->ns = ns;
    e->rdd = rdd;
    e->part = part;
    e->b.len = len;
    pthread_mutex_lock(&s->mu);
    int to_disk = level == EM_DISK_ONLY || (level == EM_MEMORY_AND_DISK && s->mem_used + len > s->mem_limit);
    uint64_t seq = ++s->seq;
    if (find(s, ns, rdd, part)) { /* computed twice (a retry): keep the first */
        pthread_mutex_unlock(&s->mu);
        free(bytes);
        free(e);
        return 0;
    }
    pthread_mutex_unlock(&s->mu);
    if (to_disk) {
        char path[4096];
        snprintf(path, sizeof path, "%s/block_%d_%d_%llu", s->dir, rdd, part, (unsigned long long)seq);
        if (write_file(path, bytes, len) || !(e->path = strdup(path))) {
            free(bytes);
            free(e);
            return em__seterr(EM_EIO, "block store: cannot write %s: %s", path, strerror(errno));
        }
        free(bytes);
    } else {
        e->mem = bytes;
        e->b.p = bytes;
    }
    pthread_mutex_lock(&s->mu);
    if (e->mem) s->mem_used += len;
    e->next = s->head;
    s->head = e;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

block *bs_get(blockstore *s, uint64_t ns, int rdd, int part) {
    pthread_mutex_lock(&s->mu);
    entry *e = find(s, ns, rdd, part);
    if (e) e->refs++;
    pthread_mutex_unlock(&s->mu);
    if (!e || e->mem) return e ? &e->b : NULL;
    /* Disk block: read it into a private copy owned by the handle. */
    pthread_mutex_lock(&s->mu);
    if (!e->b.p) {
        int fd = open(e->path, O_RDONLY | O_CLOEXEC);
        uint8_t *p = malloc(e->b.len ? e->b.len : 1);
        size_t got = 0;
        while (fd >= 0 && p && got < e->b.len) {
            ssize_t n = read(fd, p + got, e->b.len - got);
            if (n <= 0) break;
            got += (size_t)n;
        }
        if (fd >= 0) close(fd);
        if (p && got == e->b.len) e->b.p = p;
        else free(p);
    }
    int ok = e->b.p != NULL;
    if (!ok) e->refs--;
    pthread_mutex_unlock(&s->mu);
    return ok ? &e->b : NULL;
}

void bs_release(blockstore *s, block *b) {
    entry *e = (entry *)b;
    pthread_mutex_lock(&s->mu);
    if (--e->refs == 0 && e->dead) {
        entry **pp;
        for (pp = &s->head; *pp && *pp != e; pp = &(*pp)->next) {}
        if (*pp) *pp = e->next;
        entry_free(s, e);
    } else if (e->refs == 0 && e->path && e->b.p) {
        free((void *)e->b.p); /* disk blocks keep no memory between reads */
        e->b.p = NULL;
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
