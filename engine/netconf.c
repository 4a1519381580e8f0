/*
 * netconf.c -- connection settings from settings or the environment (see
 * netconf.h).
 */
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "err.h"
#include "frame.h"
#include "log.h"
#include "netconf.h"

#define SECRET_MAX 4096

static int read_secret(const char *path, const char *from, netconf *n) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return em__seterr(EM_EINVAL, "the secret file %s (%s): %s", path, from, strerror(errno));
    /* As ssh with a private key: a secret others can read is no secret. */
    struct stat st;
    if (fstat(fd, &st)) {
        int e = errno;
        close(fd);
        return em__seterr(EM_EINVAL, "the secret file %s (%s): %s", path, from, strerror(e));
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        close(fd);
        return em__seterr(EM_EINVAL,
                          "the secret file %s (%s) is accessible by group or others (mode %04o): it is refused; "
                          "make it readable by its owner only: chmod 600 %s",
                          path, from, (unsigned)(st.st_mode & 07777), path);
    }
    uint8_t *buf = malloc(SECRET_MAX + 1);
    ssize_t k = buf ? read(fd, buf, SECRET_MAX + 1) : -1;
    close(fd);
    if (k < 0 || k > SECRET_MAX) {
        free(buf);
        return em__seterr(EM_EINVAL, "the secret file %s (%s): %s", path, from,
                          k < 0 ? "cannot be read" : "more than 4096 bytes");
    }
    while (k > 0 && (buf[k - 1] == '\n' || buf[k - 1] == '\r')) k--; /* as written by echo */
    if (k == 0) {
        free(buf);
        return em__seterr(EM_EINVAL, "the secret file %s (%s) is empty", path, from);
    }
    n->secret = buf;
    n->secret_len = (size_t)k;
    return 0;
}

int netconf_load(const em_conf *c, netconf *out) {
    memset(out, 0, sizeof *out);
    out->max_frame = FRAME_MAX_DEFAULT;
    if (c) {
        const char *s = em_conf_get(c, "ember.authenticate.secret");
        const char *f = em_conf_get(c, "ember.authenticate.secretFile");
        out->encrypt = conf_bool(c, "ember.network.crypto.enabled");
        out->insecure = conf_bool(c, "ember.network.insecure");
        out->max_frame = (size_t)conf_size(c, "ember.rpc.message.maxSize");
        if (s && *s) {
            size_t len = strlen(s);
            if (!(out->secret = malloc(len))) return em__seterr(EM_ENOMEM, "out of memory");
            memcpy(out->secret, s, len);
            out->secret_len = len;
            return 0;
        }
        if (f && *f) return read_secret(f, "ember.authenticate.secretFile", out);
    }
    const char *cr = getenv("EMBER_NETWORK_CRYPTO"); /* a parent's choice (local-cluster, a worker's executors) */
    if (cr && !strcmp(cr, "1")) out->encrypt = 1;
    const char *e = getenv("EMBER_SECRET_FILE");
    if (e && *e) return read_secret(e, "$EMBER_SECRET_FILE", out);
    return 0;
}

int netconf_from_env(netconf *out) { return netconf_load(NULL, out); }

int netconf_write_secret(const netconf *n, const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return em__seterr(EM_EIO, "%s: %s", path, strerror(errno));
    ssize_t k = write(fd, n->secret, n->secret_len);
    close(fd);
    if (k != (ssize_t)n->secret_len) return em__seterr(EM_EIO, "%s: short write", path);
    return 0;
}

conn_opts netconf_opts(const netconf *n, const char *component) {
    conn_opts o = {n->max_frame, n->secret, n->secret_len, n->encrypt && n->secret, component, 0, 0};
    return o;
}

int netconf_check_bind(const netconf *n, const char *host, const char *component) {
    struct sockaddr_in sa;
    if (conn_resolve(host, 0, &sa)) return EM_EINVAL; /* its message names the host */
    if ((ntohl(sa.sin_addr.s_addr) >> 24) == 127) return 0; /* loopback */
    if (n->secret) return 0;
    if (!n->insecure)
        return em__seterr(EM_EINVAL,
                          "binding %s, a non-loopback address, without a shared secret is refused: set "
                          "ember.authenticate.secret (or secretFile, or $EMBER_SECRET_FILE), or allow it with "
                          "--insecure / ember.network.insecure=true",
                          host);
    log_msg(LOG_WARN, component, "listening on %s without a shared secret: anyone who can reach it can run code",
            host);
    return 0;
}

void netconf_free(netconf *n) {
    if (n->secret) {
        sodium_memzero(n->secret, n->secret_len);
        free(n->secret);
    }
    n->secret = NULL;
}
