/*
 * appbin.c -- hashing the application's binary (see appbin.h).
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
