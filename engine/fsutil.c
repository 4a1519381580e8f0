/*
 * fsutil.c -- file-system helpers (see fsutil.h).
 *
 * rm_tree is written with system calls only (open, getdents64, unlinkat,
 * lseek, close) and buffers on the stack, because the scratch-directory
 * registry (scratch.c) calls it from a signal handler and an atexit hook,
 * where malloc, stdio, opendir and nftw are not safe.  One remover serves
 * that path and the ordinary ones.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fsutil.h"

/* Scratch trees are flat and save_as_text_file's temporary is two levels
 * deep; the bound keeps the stack a signal handler uses small (one 1 KiB
 * buffer per level). */
#define RM_TREE_DEPTH 16

/* The record getdents64 fills in (the kernel's struct linux_dirent64). */
struct rm_dirent {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static void rm_contents(int dfd, int depth);

/* Remove the entry `name` of the directory open as dfd.  Returns 1 when it
 * is gone. */
static int rm_entry(int dfd, const char *name, int depth) {
    if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT) return 1;
    /* Linux says EISDIR for a directory, POSIX EPERM. */
    if ((errno != EISDIR && errno != EPERM) || depth <= 0) return 0;
    int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) return 0;
    rm_contents(sub, depth - 1);
    close(sub);
    return unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT;
}

/* Remove everything in the directory open as dfd, `depth` levels of
 * subdirectories at most.  Whether a directory read while entries are being
 * removed returns every remaining entry is up to the file system, so a pass
 * that removed something is followed by another from the start; the passes
 * are bounded in case another process keeps adding entries. */
static void rm_contents(int dfd, int depth) {
    char buf[1024] __attribute__((aligned(8)));
    for (int pass = 0; pass < 8; pass++) {
        int removed = 0;
        long n;
        if (pass && lseek(dfd, 0, SEEK_SET) < 0) return;
        while ((n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
            for (long off = 0; off < n;) {
                const struct rm_dirent *d = (const struct rm_dirent *)(buf + off);
                off += d->d_reclen;
                if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, "..")) continue;
                removed += rm_entry(dfd, d->d_name, depth);
            }
        }
        if (!removed) return;
    }
}

void rm_tree(const char *path) {
    int saved = errno;
    if (unlinkat(AT_FDCWD, path, 0) != 0 && (errno == EISDIR || errno == EPERM)) {
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            rm_contents(fd, RM_TREE_DEPTH);
            close(fd);
        }
        rmdir(path);
    }
    errno = saved;
}
