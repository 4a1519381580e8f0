/*
 * test_messages.c -- error messages that must not mislead: a bad master URL
 * names where it came from (em_open's argument, $EMBER_MASTER or the
 * ember.master setting) and the allowed range of N; an output directory
 * that cannot be created names the user's directory, its parent and the
 * cause, never the internal temporary directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

TEST(api_msg_master_source) {
    const char *saved = getenv("EMBER_MASTER");
    char *keep = saved ? strdup(saved) : NULL;
    char arg_msg[512], env_msg[512], conf_msg[512], big_msg[512];
    unsetenv("EMBER_MASTER");
    em_ctx *c = em_open("local[0]", NULL);
    snprintf(arg_msg, sizeof arg_msg, "%s", em_errmsg());
    em_close(c);
    int arg_failed = c == NULL;
    c = em_open("local[1025]", NULL);
    snprintf(big_msg, sizeof big_msg, "%s", em_errmsg());
    em_close(c);
    int big_failed = c == NULL;
    setenv("EMBER_MASTER", "spark://h:7077", 1);
    c = em_open(NULL, NULL);
    snprintf(env_msg, sizeof env_msg, "%s", em_errmsg());
    em_close(c);
    int env_failed = c == NULL;
    unsetenv("EMBER_MASTER");
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.master", "local[x]"));
    c = em_open(NULL, conf);
    snprintf(conf_msg, sizeof conf_msg, "%s", em_errmsg());
    em_close(c);
    em_conf_free(conf);
    int conf_failed = c == NULL;
    if (keep) setenv("EMBER_MASTER", keep, 1);
    free(keep);
    CHECK(arg_failed && big_failed && env_failed && conf_failed);
    CHECK_STR_CONTAINS(arg_msg, "\"local[0]\" from em_open's master argument");
    CHECK_STR_CONTAINS(arg_msg, "local[N] with N from 1 to 1024");
    CHECK_STR_CONTAINS(big_msg, "\"local[1025]\" from em_open's master argument");
    CHECK_STR_CONTAINS(env_msg, "\"spark://h:7077\" from $EMBER_MASTER");
    CHECK_STR_CONTAINS(conf_msg, "\"local[x]\" from the ember.master setting");
}

/* The user's directory and the cause, not "<dir>.ember-tmp-PID". */
TEST(api_msg_save_missing_parent) {
    em_ctx *c = open_test_ctx();
    CHECK(c);
    char dir[600], want[1400];
    snprintf(dir, sizeof dir, "%s/no-such-parent/out", test_tmpdir());
    CHECK(em_save_as_text_file(em_range(c, 0, 10, 1, 2), dir) == EM_ENOENT);
    snprintf(want, sizeof want, "cannot create output directory %s: its parent %s/no-such-parent does not exist", dir,
             test_tmpdir());
    CHECK_STR_CONTAINS(em_errmsg(), want);
    CHECK(strstr(em_errmsg(), "ember-tmp") == NULL);
    em_close(c);
}

TEST(api_msg_save_readonly_parent) {
    char ro[600], dir[700], want[1500];
    snprintf(ro, sizeof ro, "%s/read-only", test_tmpdir());
    CHECK(mkdir(ro, 0555) == 0);
    if (access(ro, W_OK) == 0) { /* root, or a file system that ignores modes */
        chmod(ro, 0755);
        SKIP("%s is writable despite mode 0555 (running as uid %d), so the permission-denied message cannot "
             "be provoked here", ro, (int)geteuid());
    }
    em_ctx *c = open_test_ctx();
    CHECK(c);
    snprintf(dir, sizeof dir, "%s/out", ro);
    int rc = em_save_as_text_file(em_range(c, 0, 10, 1, 2), dir);
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", em_errmsg());
    em_close(c);
    chmod(ro, 0755); /* so the runner can remove it */
    CHECK(rc == EM_EIO);
    snprintf(want, sizeof want, "cannot create output directory %s: permission denied on its parent directory %s",
             dir, ro);
    CHECK_STR_CONTAINS(msg, want);
    CHECK(strstr(msg, "ember-tmp") == NULL);
}
