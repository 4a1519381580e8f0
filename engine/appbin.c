/*
 * appbin.c -- hashing the application's binary, and finding the shared
 * libember it runs with (see appbin.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "appbin.h"
#include "ember.h"
#include "err.h"
#include "fnref.h"

int appbin_hash_file(const char *path, uint8_t out[32], uint64_t *size) {
    crypto_generichash_state st;
    uint8_t buf[1 << 16];
    ssize_t n;
    uint64_t total = 0;
    if (sodium_init() < 0) return em__seterr(EM_EIO, "libsodium cannot start");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return em__seterr(EM_EIO, "%s: %s", path, strerror(errno));
    crypto_generichash_init(&st, NULL, 0, 32);
    while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0) {
            crypto_generichash_update(&st, buf, (size_t)n);
            total += (uint64_t)n;
        }
    int err = errno;
    close(fd);
    if (n < 0) return em__seterr(EM_EIO, "%s: %s", path, strerror(err));
    crypto_generichash_final(&st, out, 32);
    if (size) *size = total;
    return 0;
}

void appbin_hex(const uint8_t h[32], char out[65]) {
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", h[i]);
}

int appbin_libname_ok(const char *name, size_t len) {
    if (len < 1 || len > 255 || name[0] == '.') return 0;
    for (size_t i = 0; i < len; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
              ch == '_' || ch == '+' || ch == '-'))
            return 0;
    }
    return 1;
}

/* The path of the file mapped at addr (/proc/self/maps): 0, or -1 when no
 * file mapping holds it.  A file removed or replaced since it was mapped
 * is listed with " (deleted)" after its name, kept in out. */
static int mapped_file(uintptr_t addr, char *out, size_t cap) {
    FILE *f = fopen("/proc/self/maps", "re");
    char line[4400];
    int rc = -1;
    if (!f) return -1;
    while (rc && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        int path_at = 0;
        /* start-end perms offset dev inode path */
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &path_at) < 2 || !path_at) continue;
        if (addr < lo || addr >= hi || line[path_at] != '/') continue;
        size_t n = strcspn(line + path_at, "\n");
        if (n < cap) {
            memcpy(out, line + path_at, n);
            out[n] = 0;
            rc = 0;
        } else break;
    }
    fclose(f);
    return rc;
}

int appbin_library(char *file, size_t fcap, char *name, size_t ncap) {
    const char *loaded = fnref_library();
    if (!loaded) return 0;
    const char *base = strrchr(loaded, '/');
    base = base ? base + 1 : loaded;
    char path[4096];
    if (mapped_file((uintptr_t)&appbin_library, path, sizeof path))
        return em__seterr(EM_EIO, "libember (%s): its file is not among this process's mappings", loaded);
    size_t n = strlen(path), d = sizeof " (deleted)" - 1;
    if (n > d && !strcmp(path + n - d, " (deleted)"))
        return em__seterr(EM_EIO,
                          "libember's file %.*s was removed or replaced since the program started: "
                          "the workers cannot be sent the library it runs with",
                          (int)(n - d), path);
    if (!appbin_libname_ok(base, strlen(base)) || strlen(base) >= ncap || n >= fcap)
        return em__seterr(EM_EIO, "libember (%s): a file name the workers cannot keep", loaded);
    snprintf(file, fcap, "%s", path);
    snprintf(name, ncap, "%s", base);
    return 1;
}
