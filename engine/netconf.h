/*
 * netconf.h -- the settings every ember process applies to its
 * connections: the shared secret (ember.authenticate.secret, or the file
 * ember.authenticate.secretFile or $EMBER_SECRET_FILE names), encryption
 * (ember.network.crypto.enabled), the largest frame
 * (ember.rpc.message.maxSize), and whether a non-loopback address may be
 * bound without a secret (ember.network.insecure).  The driver and the
 * daemons read them from their settings; an executor from the environment
 * its worker gives it (netconf_env), since it has no settings of its own.
 */
#ifndef EM_NETCONF_H
#define EM_NETCONF_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "ember.h"

typedef struct netconf {
    uint8_t *secret;      /* NULL: none */
    size_t secret_len;
    int encrypt;
    int insecure;
    size_t max_frame;
} netconf;

/* From settings (c may be NULL: defaults), then $EMBER_SECRET_FILE when
 * no secret is set, and encryption also when $EMBER_NETWORK_CRYPTO is 1
 * (what a process that starts ember processes passes on).  0, or
 * EM_EINVAL naming the file or setting.  A secret file that group or
 * others may access (any of mode 077) is refused, as ssh refuses such a
 * private key, with a message naming the file, its mode and chmod 600. */
int netconf_load(const em_conf *c, netconf *out);
/* An executor's: $EMBER_SECRET_FILE, $EMBER_NETWORK_CRYPTO ("1"). */
int netconf_from_env(netconf *out);
/* The variables netconf_from_env reads, for a child's environment:
 * "EMBER_NETWORK_CRYPTO=0|1" into crypto; the secret is passed as the
 * file secret_file (written 0600 by the caller's choice: netconf_write). */
int netconf_write_secret(const netconf *n, const char *path);
conn_opts netconf_opts(const netconf *n, const char *component);
/* Whether host may be bound under n: loopback always; another address
 * only with a secret or insecure (then a warning is logged, component
 * naming its source).  0 or EM_EINVAL with the reason, which names the
 * host but not component: the caller prefixes what the user wrote. */
int netconf_check_bind(const netconf *n, const char *host, const char *component);
void netconf_free(netconf *n);

#endif
