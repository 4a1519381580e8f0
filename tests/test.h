/*
 * test.h -- the test harness.  A test is
 *     TEST(name) { CHECK(x == 1); CHECK_EQ_I64(a, b); ... }
 * registered by a constructor; tests/runner.c runs each in a forked child
 * (so a crash fails one test, not the run) and prints "N passed, N failed,
 * N skipped" as its last line, after the list of the tests skipped and
 * why.  `tests/run_tests NAME...` runs tests whose name contains one of the
 * arguments.  EMBER_TEST_NOFORK=1 runs in-process.
 *
 * CHECK records a failure with file and line and returns from the test;
 * a test passes when it returns with no failed CHECK.  SKIP says the test
 * cannot run here and why, and returns: skipped, neither passed nor failed
 * (a failed CHECK before it still fails the test).
 */
#ifndef EM_TEST_H
#define EM_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

typedef void (*test_fn)(void);
void test_register(const char *name, test_fn fn);
extern int test_failed; /* set by CHECK in the running test */
/* em_conf_set for a test's setup: a refused key or value (a renamed
 * setting, a bad value) aborts the test, naming both, instead of leaving
 * the default in place. */
struct em_conf;
void test_conf_set(struct em_conf *conf, const char *key, const char *value);
/* Mark the running test skipped, with the reason (printf format). */
void test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define SKIP(...)                                                                  \
    do {                                                                           \
        test_skip(__VA_ARGS__);                                                    \
        return;                                                                    \
    } while (0)

#define TEST(name)                                                                 \
    static void test_##name(void);                                                 \
    __attribute__((constructor)) static void test_reg_##name(void) {              \
        test_register(#name, test_##name);                                         \
    }                                                                              \
    static void test_##name(void)

#define CHECK(c)                                                                   \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c); \
            test_failed = 1;                                                       \
            return;                                                                \
        }                                                                          \
    } while (0)

#define CHECK_EQ_I64(a, b)                                                         \
    do {                                                                           \
        int64_t a_ = (int64_t)(a), b_ = (int64_t)(b);                              \
        if (a_ != b_) {                                                            \
            fprintf(stderr, "  %s:%d: %s == %s failed: %" PRId64 " != %" PRId64 "\n", \
                    __FILE__, __LINE__, #a, #b, a_, b_);                           \
            test_failed = 1;                                                       \
            return;                                                                \
        }                                                                          \
    } while (0)

/* An ember call that must return 0; prints em_errmsg() otherwise. */
#define CHECK_OK(call)                                                             \
    do {                                                                           \
        int rc_ = (call);                                                          \
        if (rc_ != 0) {                                                            \
            fprintf(stderr, "  %s:%d: %s returned %d: %s\n", __FILE__, __LINE__,   \
                    #call, rc_, em_errmsg());                                      \
            test_failed = 1;                                                       \
            return;                                                                \
        }                                                                          \
    } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                            \
    do {                                                                           \
        const char *h_ = (hay), *n_ = (needle);                                    \
        if (!h_ || !strstr(h_, n_)) {                                              \
            fprintf(stderr, "  %s:%d: \"%s\" does not contain \"%s\"\n", __FILE__,  \
                    __LINE__, h_ ? h_ : "(null)", n_);                             \
            test_failed = 1;                                                       \
            return;                                                                \
        }                                                                          \
    } while (0)

/* A fresh temporary directory for this test (removed by the runner after the
 * test); returns its path. */
const char *test_tmpdir(void);
/* A second such directory, for contexts' scratch files (ember.local.dir),
 * so that tests can count what they wrote in test_tmpdir(). */
const char *test_scratchdir(void);
/* The master URL API tests should use: $EMBER_TEST_MASTER or "local[4]". */
const char *test_master(void);

/* The one way a test waits: polls cond(arg) (every ms at first, then
 * every 10 ms) until it returns nonzero: 1.  After max_ms without it,
 * prints "timed out after N ms waiting for <what>" and returns 0, for the
 * caller's CHECK to fail on.  No outcome depends on how fast the wait
 * ends, only on whether the condition comes. */
int wait_for(int (*cond)(void *), void *arg, int max_ms, const char *what);
/* Conditions for wait_for: the int at arg is nonzero (read atomically);
 * the file named by arg exists. */
int cond_flag(void *arg);
int cond_file(void *arg);
/* The bound of waits for something the test itself set in motion. */
#define WAIT_MS 60000

#endif
