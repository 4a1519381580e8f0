/*
 * applib.c -- the shared libraries an application's executor needs, on a
 * worker: the cache's links and the dynamic loader's failure (see
 * applib.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "applib.h"
#include "ember.h"
#include "err.h"

int applib_dir(const char *bin, char *dir, size_t cap) {
    char link[1100], target[256];
    if ((size_t)snprintf(link, sizeof link, "%s.lib", bin) >= sizeof link) return -1;
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 0) return errno == ENOENT ? 0 : -1;
    target[n] = 0;
    /* The target is a name beside the binary: bin's directory, then it. */
    const char *slash = strrchr(bin, '/');
    int dlen = slash ? (int)(slash - bin) : 1;
    if (!n || memchr(target, '/', (size_t)n) ||
        (size_t)snprintf(dir, cap, "%.*s/%s", dlen, slash ? bin : ".", target) >= cap)
        return -1;
    return access(dir, X_OK) ? -1 : 1;
}

int applib_link(const char *bin, const char *libhex) {
    char link[1100], tmp[1200];
    if ((size_t)snprintf(link, sizeof link, "%s.lib", bin) >= sizeof link ||
        (size_t)snprintf(tmp, sizeof tmp, "%s.tmp-%d", link, (int)getpid()) >= sizeof tmp)
        return em__seterr(EM_EIO, "%s.lib: path too long", bin);
    unlink(tmp);
    if (symlink(libhex, tmp) || rename(tmp, link)) {
        int err = errno;
        unlink(tmp);
        return em__seterr(EM_EIO, "%s: %s", link, strerror(err));
    }
    return 0;
}

/* Copy the n bytes at p into out (cap bytes), cut to fit, NUL-terminated. */
static void copy_cut(char *out, size_t cap, const char *p, size_t n) {
    if (!cap) return;
    if (n >= cap) n = cap - 1;
    memcpy(out, p, n);
    out[n] = 0;
}

int applib_loader_error(int64_t code, int sig, const char *tail, char *lib, size_t lcap, char *why, size_t wcap) {
    static const char mark[] = "error while loading shared libraries: ";
    if (code != 127 || sig || !tail) return 0;
    /* The loader's line is the last one carrying the mark: nothing of the
     * program ran after it. */
    const char *at = NULL;
    for (const char *p = tail; (p = strstr(p, mark)); p += sizeof mark - 1) at = p;
    if (!at) return 0;
    const char *name = at + sizeof mark - 1;
    size_t line = strcspn(name, "\n");
    /* NAME: REASON, NAME without a ':' (glibc writes it so). */
    const char *colon = memchr(name, ':', line);
    if (!colon || colon == name) return 0;
    const char *reason = colon + 1;
    while (reason < name + line && *reason == ' ') reason++;
    copy_cut(lib, lcap, name, (size_t)(colon - name));
    copy_cut(why, wcap, reason, (size_t)(name + line - reason));
    return 1;
}
