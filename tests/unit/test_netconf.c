/*
 * test_netconf.c -- connection settings (engine/netconf.c): a secret file
 * that group or others may read is refused, as ssh refuses such a private
 * key, with a message naming the file, its mode and the fix; the same file
 * made 0600 is read (its trailing newline dropped), from the setting and
 * from $EMBER_SECRET_FILE.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "conf.h"
#include "ember.h"
#include "netconf.h"

TEST(netconf_secret_file_mode) {
    char path[1024];
    snprintf(path, sizeof path, "%s/secret", test_tmpdir());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK(write(fd, "s3cret\n", 7) == 7);
    close(fd);
    CHECK(chmod(path, 0644) == 0);
    em_conf *c = em_conf_new();
    CHECK(c);
    CHECK_OK(em_conf_set(c, "ember.authenticate.secretFile", path));
    netconf n;
    CHECK_EQ_I64(netconf_load(c, &n), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), path);
    CHECK_STR_CONTAINS(em_errmsg(), "mode 0644");
    CHECK_STR_CONTAINS(em_errmsg(), "chmod 600");
    CHECK(!n.secret);
    CHECK(chmod(path, 0640) == 0);
    CHECK_EQ_I64(netconf_load(c, &n), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "mode 0640");
    CHECK(chmod(path, 0600) == 0);
    CHECK_OK(netconf_load(c, &n));
    CHECK(n.secret && n.secret_len == 6 && !memcmp(n.secret, "s3cret", 6));
    netconf_free(&n);
    em_conf_free(c);
    /* From the environment (what a worker gives its executors). */
    CHECK(setenv("EMBER_SECRET_FILE", path, 1) == 0);
    CHECK_OK(netconf_from_env(&n));
    CHECK(n.secret_len == 6);
    netconf_free(&n);
    CHECK(chmod(path, 0604) == 0);
    CHECK_EQ_I64(netconf_from_env(&n), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "$EMBER_SECRET_FILE");
    CHECK_STR_CONTAINS(em_errmsg(), "chmod 600");
    unsetenv("EMBER_SECRET_FILE");
}
