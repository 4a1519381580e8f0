/*
 * runner.c -- runs the registered tests, each in a forked child with a
 * time limit, and prints the tests skipped with why, then "N passed, N
 * failed, N skipped" last.  A skipped child exits with EXIT_SKIP, its
 * reason left in memory the runner shares with it.
 */
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ember.h"
#include "test.h"

#define MAX_TESTS 1024
#define EXIT_SKIP 77
#define WHY_MAX 512
static struct { const char *name; test_fn fn; } tests[MAX_TESTS];
static int ntests;
int test_failed;
static int test_skipped;
static char *skip_why; /* WHY_MAX bytes shared with the children */

void test_conf_set(struct em_conf *conf, const char *key, const char *value) {
    if (em_conf_set(conf, key, value) == 0) return;
    fprintf(stderr, "  test setup: ember refused %s=%s: %s\n", key, value ? value : "(null)", em_errmsg());
    abort();
}

void test_skip(const char *fmt, ...) {
    char why[WHY_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    fprintf(stderr, "  skipped: %s\n", why);
    if (skip_why) snprintf(skip_why, WHY_MAX, "%s", why);
    test_skipped = 1;
}
static char tmpdir[256], scratch[256];

void test_register(const char *name, test_fn fn) {
    if (ntests < MAX_TESTS) { tests[ntests].name = name; tests[ntests].fn = fn; ntests++; }
}

const char *test_tmpdir(void) {
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/ember-test-%d-XXXXXX", (int)getpid());
        if (!mkdtemp(tmpdir)) { perror("mkdtemp"); abort(); }
    }
    return tmpdir;
}

const char *test_scratchdir(void) {
    if (!scratch[0]) {
        snprintf(scratch, sizeof scratch, "/tmp/ember-scratch-%d-XXXXXX", (int)getpid());
        if (!mkdtemp(scratch)) { perror("mkdtemp"); abort(); }
    }
    return scratch;
}

const char *test_master(void) {
    const char *m = getenv("EMBER_TEST_MASTER");
    return m && *m ? m : "local[4]";
}

int wait_for(int (*cond)(void *), void *arg, int max_ms, const char *what) {
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0;; i++) {
        if (cond(arg)) return 1;
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t ms = (int64_t)(now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (ms >= max_ms) {
            fprintf(stderr, "  timed out after %d ms waiting for %s\n", max_ms, what);
            return 0;
        }
        struct timespec step = {0, i < 100 ? 1000000L : 10000000L};
        nanosleep(&step, NULL);
    }
}

int cond_flag(void *arg) { return __atomic_load_n((int *)arg, __ATOMIC_ACQUIRE) != 0; }

int cond_file(void *arg) { return access((const char *)arg, F_OK) == 0; }

static void rm_dir(char *dir) {
    if (dir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) fprintf(stderr, "  could not remove %s\n", dir);
        dir[0] = 0;
    }
}

static void rm_tmpdir(void) {
    rm_dir(tmpdir);
    rm_dir(scratch);
}

static int selected(const char *name, int argc, char **argv) {
    if (argc < 2) return 1;
    for (int i = 1; i < argc; i++)
        if (strstr(name, argv[i])) return 1;
    return 0;
}

static int cmp_tests(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int main(int argc, char **argv) {
    int passed = 0, failed = 0, skipped = 0, nofork = getenv("EMBER_TEST_NOFORK") != NULL;
    static char *skips[MAX_TESTS];
    void *shared = mmap(NULL, WHY_MAX, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    skip_why = shared;
    unsigned limit = getenv("EMBER_TEST_TIMEOUT") ? (unsigned)atoi(getenv("EMBER_TEST_TIMEOUT")) : 300;
    qsort(tests, (size_t)ntests, sizeof tests[0], cmp_tests);
    /* Every context serves its UI (ember.ui.enabled): on any free port, so
     * that the suite never competes for 4040's range with whatever else
     * runs on the machine.  A test that checks the default port sets its
     * own. */
    if (!getenv("EMBER_CONF")) setenv("EMBER_CONF", "ember.ui.port=0", 1);
    for (int i = 0; i < ntests; i++) {
        if (!selected(tests[i].name, argc, argv)) continue;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int ok, skip = 0;
        fflush(stdout);
        skip_why[0] = 0;
        if (nofork) {
            test_failed = test_skipped = 0;
            tests[i].fn();
            rm_tmpdir();
            ok = !test_failed;
            skip = ok && test_skipped;
        } else {
            pid_t pid = fork();
            if (pid == 0) {
                alarm(limit);
                test_failed = test_skipped = 0;
                tests[i].fn();
                rm_tmpdir();
                /* exit, not _exit: LeakSanitizer checks at exit. */
                exit(test_failed ? 1 : test_skipped ? EXIT_SKIP : 0);
            }
            int st = 0;
            waitpid(pid, &st, 0);
            skip = WIFEXITED(st) && WEXITSTATUS(st) == EXIT_SKIP;
            ok = WIFEXITED(st) && (WEXITSTATUS(st) == 0 || skip);
            if (WIFSIGNALED(st))
                fprintf(stderr, "  killed by signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
        printf("%s %s (%.0f ms)\n", skip ? "skip" : ok ? "ok  " : "FAIL", tests[i].name, ms);
        if (skip) {
            char line[WHY_MAX + 256];
            snprintf(line, sizeof line, "%s: %s", tests[i].name, skip_why[0] ? skip_why : "(no reason given)");
            skips[skipped++] = strdup(line);
        } else if (ok) {
            passed++;
        } else {
            failed++;
        }
    }
    for (int i = 0; i < skipped; i++) {
        printf("skipped %s\n", skips[i] ? skips[i] : "(out of memory)");
        free(skips[i]);
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    munmap(shared, WHY_MAX);
    return failed ? 1 : 0;
}
