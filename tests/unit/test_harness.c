/*
 * test_harness.c -- the harness's own promises (tests/runner.c): a setting
 * a test's setup gives and ember refuses stops the test loudly, naming the
 * key, rather than leaving the default in place.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "ember.h"

/* test_conf_set of a key ember does not know, and of a bad value for one
 * it knows, in a child: each aborts it; a good one returns. */
TEST(harness_refused_setting_aborts_the_test) {
    static const char *const kv[][2] = {{"ember.no.such.setting", "1"}, {"ember.task.maxFailures", "many"}};
    for (int i = 0; i < 3; i++) {
        fflush(NULL);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            signal(SIGABRT, SIG_DFL);
            em_conf *c = em_conf_new();
            if (i < 2) test_conf_set(c, kv[i][0], kv[i][1]);
            else test_conf_set(c, "ember.task.maxFailures", "2");
            em_conf_free(c);
            _exit(0);
        }
        int st = 0;
        CHECK(waitpid(pid, &st, 0) == pid);
        if (i < 2) CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
        else CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
}
