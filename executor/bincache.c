/*
 * bincache.c -- the worker's bounded cache of application binaries (see
 * bincache.h).  The choice is pure (bincache_choose); the directory pass
 * lists, chooses and unlinks.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bincache.h"
#include "ember.h"
#include "err.h"

/* Whether x was used before y (ties by name). */
static int before(const bincache_entry *x, const bincache_entry *y) {
    if (x->used_ns != y->used_ns) return x->used_ns < y->used_ns;
    return strcmp(x->name, y->name) < 0;
}

/* Repeated scans for the least recently used entry not in use and not yet
 * chosen: n is a worker's binaries, a few hundred at most. */
int bincache_choose(bincache_entry *v, size_t n, uint64_t max_bytes) {
    uint64_t total = 0;
    int chosen = 0;
    for (size_t i = 0; i < n; i++) {
        v[i].evict = 0;
        total += v[i].bytes;
    }
    while (total > max_bytes) {
        bincache_entry *pick = NULL;
        for (size_t i = 0; i < n; i++)
            if (!v[i].in_use && !v[i].evict && (!pick || before(&v[i], pick))) pick = &v[i];
        if (!pick) break; /* what is left is in use */
        pick->evict = 1;
        total -= pick->bytes;
        chosen++;
    }
    return chosen;
}

/* Whether name is 64 hex digits (a binary's hash). */
static int is_binary_name(const char *name) {
    size_t i = 0;
    for (; name[i]; i++)
        if (i >= 64 || !((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return 0;
    return i == 64;
}

/* Whether name is a binary's library link: 64 hex digits and ".lib". */
static int is_link_name(const char *name, char bin[65]) {
    size_t n = strlen(name);
    if (n != 68 || strcmp(name + 64, ".lib")) return 0;
    memcpy(bin, name, 64);
    bin[64] = 0;
    return is_binary_name(bin);
}

/* After binaries went: their library links go, and so does every library
 * directory (applib.h) that no kept binary links to and that in_use does
 * not claim (a fetch in progress keeps its library before it links it). */
static void drop_orphan_libs(DIR *d, int (*in_use)(void *ud, const char *name), void *ud, uint64_t *freed) {
    char (*kept)[65] = NULL, bin[65], target[128];
    size_t nk = 0, ck = 0;
    struct stat sb;
    rewinddir(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_link_name(e->d_name, bin)) continue;
        if (fstatat(dirfd(d), bin, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISREG(sb.st_mode)) {
            unlinkat(dirfd(d), e->d_name, 0); /* its binary is gone */
            continue;
        }
        ssize_t k = readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);
        if (k != 64) continue;
        target[64] = 0;
        if (nk == ck) {
            size_t c = ck ? ck * 2 : 16;
            char (*p)[65] = realloc(kept, c * sizeof *p);
            if (!p) {
                free(kept);
                return; /* nothing more removed */
            }
            kept = p;
            ck = c;
        }
        memcpy(kept[nk++], target, 65);
    }
    rewinddir(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_binary_name(e->d_name) || fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) ||
            !S_ISDIR(sb.st_mode))
            continue;
        int used = in_use && in_use(ud, e->d_name);
        for (size_t i = 0; i < nk && !used; i++) used = !strcmp(kept[i], e->d_name);
        if (used) continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *ld = fd >= 0 ? fdopendir(fd) : NULL;
        if (!ld) {
            if (fd >= 0) close(fd);
            continue;
        }
        for (struct dirent *f; (f = readdir(ld));) {
            if (f->d_name[0] == '.') continue;
            struct stat fb;
            if (!fstatat(dirfd(ld), f->d_name, &fb, AT_SYMLINK_NOFOLLOW) && !unlinkat(dirfd(ld), f->d_name, 0) &&
                freed)
                *freed += (uint64_t)fb.st_size;
        }
        closedir(ld);
        unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
    }
    free(kept);
}

int bincache_trim(const char *dir, uint64_t max_bytes, int (*in_use)(void *ud, const char *name), void *ud,
                  uint64_t *freed) {
    if (freed) *freed = 0;
    DIR *d = opendir(dir);
    if (!d) return em__seterr(EM_EIO, "the binary cache %s: %s", dir, strerror(errno));
    bincache_entry *v = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_binary_name(e->d_name)) continue;
        struct stat sb;
        if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISREG(sb.st_mode)) continue;
        if (n == cap) {
            size_t c = cap ? cap * 2 : 16;
            bincache_entry *p = realloc(v, c * sizeof *p);
            if (!p) {
                rc = em__seterr(EM_ENOMEM, "the binary cache %s: out of memory", dir);
                break;
            }
            v = p;
            cap = c;
        }
        bincache_entry *x = &v[n++];
        memset(x, 0, sizeof *x);
        memcpy(x->name, e->d_name, 65); /* 64 digits and the NUL */
        x->bytes = (uint64_t)sb.st_size;
        x->used_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
        x->in_use = in_use ? in_use(ud, x->name) : 0;
    }
    if (!rc && bincache_choose(v, n, max_bytes))
        for (size_t i = 0; i < n; i++)
            if (v[i].evict && !unlinkat(dirfd(d), v[i].name, 0) && freed) *freed += v[i].bytes;
    if (!rc) drop_orphan_libs(d, in_use, ud, freed);
    closedir(d);
    free(v);
    return rc;
}

void bincache_touch(const char *path) { utimensat(AT_FDCWD, path, NULL, 0); }
