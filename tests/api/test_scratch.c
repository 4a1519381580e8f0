/*
 * test_scratch.c -- scratch directories (`<ember.local.dir>/ember-<pid>-*`)
 * do not outlive their driver: removed when it calls exit() without
 * em_close and when SIGTERM or SIGINT kills it mid-job; left by SIGKILL and
 * swept by the next context opened on the same directory; never removed by
 * a forked child for its parent; a program's own signal handlers kept.
 *
 * The drivers under test are forked children opening contexts on
 * test_scratchdir().  Every child is reaped before any CHECK can return, and
 * each child sets an alarm and PR_SET_PDEATHSIG so that none outlives a test
 * that went wrong.  test_scratchdir() itself is removed by the runner.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"

/* The child's context, kept in a global so that a leak checker running at
 * the child's exit() finds it reachable. */
static em_ctx *child_ctx;

/* A context whose jobs leave files in its scratch directory: map outputs
 * are written, never kept in memory (ember.shuffle.inMemoryOutput). */
static em_ctx *open_files_ctx(void) {
    em_conf *conf = em_conf_new();
    em_ctx *c = NULL;
    if (conf && !em_conf_set(conf, "ember.local.dir", test_scratchdir()) &&
        !em_conf_set(conf, "ember.shuffle.inMemoryOutput.maxBytes", "0"))
        c = em_open(test_master(), conf);
    if (!c) fprintf(stderr, "  em_open(%s): %s\n", test_master(), em_errmsg());
    em_conf_free(conf);
    return c;
}

/* Entries of base named `ember-<pid>-...` (any pid when pid is 0) that are
 * directories; *files (if not NULL) gets the number of entries in them.
 * -1 if base cannot be read. */
static int scratch_dirs(const char *base, pid_t pid, int *files) {
    DIR *d = opendir(base);
    struct dirent *e;
    char prefix[32];
    int n = 0;
    if (!d) return -1;
    if (files) *files = 0;
    snprintf(prefix, sizeof prefix, "ember-%d-", (int)pid);
    while ((e = readdir(d))) {
        char path[1200];
        struct stat st;
        if (pid ? strncmp(e->d_name, prefix, strlen(prefix)) != 0
                : strncmp(e->d_name, "ember-", 6) != 0 || e->d_name[6] < '0' || e->d_name[6] > '9')
            continue;
        snprintf(path, sizeof path, "%s/%s", base, e->d_name);
        if (lstat(path, &st) || !S_ISDIR(st.st_mode)) continue;
        n++;
        if (files) {
            DIR *sub = opendir(path);
            struct dirent *f;
            while (sub && (f = readdir(sub)))
                if (strcmp(f->d_name, ".") && strcmp(f->d_name, "..")) (*files)++;
            if (sub) closedir(sub);
        }
    }
    closedir(d);
    return n;
}

static int exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

static const char *in_base(const char *name) {
    static char bufs[4][1200];
    static int k;
    char *b = bufs[k++ % 4];
    snprintf(b, sizeof bufs[0], "%s/%s", test_scratchdir(), name);
    return b;
}

static int reap(pid_t pid) {
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return st;
}

/* 1 when status st is exit code `code` (sig 0) or death by signal sig;
 * otherwise prints what it was. */
static int status_is(int st, int code, int sig) {
    if (sig ? WIFSIGNALED(st) && WTERMSIG(st) == sig : WIFEXITED(st) && WEXITSTATUS(st) == code) return 1;
    if (WIFEXITED(st)) fprintf(stderr, "  child exited with %d\n", WEXITSTATUS(st));
    else if (WIFSIGNALED(st)) fprintf(stderr, "  child killed by signal %d\n", WTERMSIG(st));
    return 0;
}

/* Read one byte from fd: 1, or 0 when the writer closed it first. */
static int read_byte(int fd) {
    char c;
    ssize_t r;
    while ((r = read(fd, &c, 1)) < 0 && errno == EINTR) {
    }
    return r == 1;
}

/* The signals under test start from their default disposition when
 * ignored (a shell running the suite in the background ignores SIGINT), so
 * that the first em_open installs ember's handler. */
static void default_if_ignored(void) {
    struct sigaction cur;
    if (sigaction(SIGINT, NULL, &cur) == 0 && cur.sa_handler == SIG_IGN) signal(SIGINT, SIG_DFL);
    if (sigaction(SIGTERM, NULL, &cur) == 0 && cur.sa_handler == SIG_IGN) signal(SIGTERM, SIG_DFL);
}

/* In a fresh child: die with its test, and on its own after a minute. */
static void child_setup(void) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    alarm(60);
    default_if_ignored();
}

/* fork, with stdio flushed so that the child does not repeat buffered
 * output. */
#ifdef __SANITIZE_ADDRESS__
/* A child forked from the threaded parent has only the forking thread:
 * what the others (the cluster backend's I/O thread, mid-read) held looks
 * leaked to LeakSanitizer at the child's exit.  Its leak check is off in
 * such children; the parent's is not. */
static int forked_child;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return forked_child; }
#endif

static pid_t fork_child(void) {
    fflush(NULL);
    pid_t pid = fork();
#ifdef __SANITIZE_ADDRESS__
    if (pid == 0) forked_child = 1;
#endif
    return pid;
}

/* A job with a shuffle: (i % 10, i) pairs summed by key.  1 if it ran. */
static int run_shuffle(em_ctx *c) {
    int64_t m = 10, n = 0;
    em_rdd *sums = em_reduce_by_key(em_map(em_range(c, 0, 10000, 1, 4), fn_mod_key, &m, sizeof m), fn_sum_i64,
                                    NULL, 0, 3);
    if (em_count(sums, &n) || n != 10) {
        fprintf(stderr, "  shuffle job: %lld records: %s\n", (long long)n, em_errmsg());
        return 0;
    }
    return 1;
}

/* 1 when this process's scratch directory exists and holds files. */
static int own_dir_has_files(void) {
    int files = 0;
    return scratch_dirs(test_scratchdir(), getpid(), &files) == 1 && files > 0;
}

/* A failing driver calling exit() without em_close. */
TEST(scratch_removed_at_exit) {
    const char *base = test_scratchdir();
    pid_t pid = fork_child();
    CHECK(pid >= 0);
    if (pid == 0) {
        child_setup();
        if (!(child_ctx = open_files_ctx())) _exit(10);
        if (!run_shuffle(child_ctx)) _exit(11);
        if (!own_dir_has_files()) _exit(12);
        exit(3);
    }
    CHECK(status_is(reap(pid), 3, 0));
    CHECK_EQ_I64(scratch_dirs(base, 0, NULL), 0);
}

/* em_close frees its registry slot: after more contexts than there are
 * slots (64) were opened and closed, the next one is still removed at
 * exit. */
TEST(scratch_slots_reused) {
    const char *base = test_scratchdir();
    pid_t pid = fork_child();
    CHECK(pid >= 0);
    if (pid == 0) {
        child_setup();
        for (int i = 0; i < 80; i++) {
            em_ctx *c = open_files_ctx();
            if (!c) _exit(10);
            em_close(c);
        }
        if (!(child_ctx = open_files_ctx())) _exit(11);
        if (!run_shuffle(child_ctx)) _exit(12);
        exit(3);
    }
    CHECK(status_is(reap(pid), 3, 0));
    CHECK_EQ_I64(scratch_dirs(base, 0, NULL), 0);
}

/* The user function of the blocked job: say "inside the task" on the pipe
 * whose write end is *arg, then wait to be killed. */
static int fn_block(const em_rec *rec, const void *arg) {
    int fd = *(const int *)arg;
    if (write(fd, "x", 1) != 1) return -1;
    for (;;) pause();
}

/* A child runs a shuffle and then a job over its output whose tasks block;
 * once a task is running, it gets sig.  1 when it died of sig and its
 * directory, full of shuffle files before, is gone. */
static int signal_mid_job(int sig) {
    const char *base = test_scratchdir();
    int p[2], ok = 1, files = 0;
    if (pipe(p)) return 0;
    pid_t pid = fork_child();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return 0;
    }
    if (pid == 0) {
        struct sigaction cur;
        int64_t m = 10;
        child_setup();
        close(p[0]);
        if (!(child_ctx = open_files_ctx())) _exit(10);
        /* ember's handler is in place. */
        if (sigaction(sig, NULL, &cur) || cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN) _exit(11);
        em_rdd *sums = em_reduce_by_key(em_map(em_range(child_ctx, 0, 10000, 1, 4), fn_mod_key, &m, sizeof m),
                                        fn_sum_i64, NULL, 0, 3);
        em_foreach(sums, fn_block, &p[1], sizeof p[1]);
        _exit(12); /* the job cannot end */
    }
    close(p[1]);
    if (!read_byte(p[0])) {
        fprintf(stderr, "  the child never reached its task\n");
        ok = 0;
    } else if (scratch_dirs(base, pid, &files) != 1 || files == 0) {
        fprintf(stderr, "  mid-job, the child's scratch directory is missing or empty (%d files)\n", files);
        ok = 0;
    }
    kill(pid, ok ? sig : SIGKILL);
    int st = reap(pid);
    close(p[0]);
    if (!ok || !status_is(st, 0, sig)) return 0;
    if (scratch_dirs(base, 0, NULL) != 0) {
        fprintf(stderr, "  a scratch directory is left after signal %d\n", sig);
        return 0;
    }
    return 1;
}

TEST(scratch_removed_on_sigterm) { CHECK(signal_mid_job(SIGTERM)); }

TEST(scratch_removed_on_sigint) { CHECK(signal_mid_job(SIGINT)); }

/* A child that opened a context (and ran a shuffle) is killed with SIGKILL:
 * its directory stays, and the next context opened on that ember.local.dir
 * sweeps it -- and nothing else. */
TEST(scratch_sweep_reclaims_dead) {
    const char *base = test_scratchdir();
    char name[64];
    int p[2], files = 0;
    CHECK(pipe(p) == 0);
    pid_t pid = fork_child();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
    }
    CHECK(pid >= 0);
    if (pid == 0) {
        child_setup();
        close(p[0]);
        if (!(child_ctx = open_files_ctx())) _exit(10);
        if (!run_shuffle(child_ctx)) _exit(11);
        if (write(p[1], "x", 1) != 1) _exit(12);
        for (;;) pause();
    }
    close(p[1]);
    int reached = read_byte(p[0]);
    close(p[0]);
    kill(pid, SIGKILL);
    CHECK(status_is(reap(pid), 0, SIGKILL));
    CHECK(reached);
    CHECK_EQ_I64(scratch_dirs(base, pid, &files), 1);
    CHECK(files > 0);

    /* What the sweep must leave: a live process's directory (our parent,
     * the runner), this process's own, a regular file and a symbolic link
     * named like a dead process's directory, the link's target, and names
     * outside the pattern.  What it must take: every dead pid's directory,
     * however deep. */
    snprintf(name, sizeof name, "ember-%d-live", (int)getppid());
    CHECK(mkdir(in_base(name), 0700) == 0);
    snprintf(name, sizeof name, "ember-%d-own", (int)getpid());
    CHECK(mkdir(in_base(name), 0700) == 0);
    snprintf(name, sizeof name, "ember-%d-file", (int)pid);
    CHECK(write_file(in_base(name), "x", 1) == 0);
    CHECK(mkdir(in_base("target"), 0700) == 0);
    CHECK(write_file(in_base("target/keep"), "x", 1) == 0);
    snprintf(name, sizeof name, "ember-%d-link", (int)pid);
    CHECK(symlink(in_base("target"), in_base(name)) == 0);
    CHECK(mkdir(in_base("ember-"), 0700) == 0);
    CHECK(mkdir(in_base("ember-12x-a"), 0700) == 0);
    CHECK(mkdir(in_base("unrelated"), 0700) == 0);
    snprintf(name, sizeof name, "ember-%d-deep", (int)pid);
    CHECK(mkdir(in_base(name), 0700) == 0);
    snprintf(name, sizeof name, "ember-%d-deep/a", (int)pid);
    CHECK(mkdir(in_base(name), 0700) == 0);
    snprintf(name, sizeof name, "ember-%d-deep/a/b", (int)pid);
    CHECK(mkdir(in_base(name), 0700) == 0);
    snprintf(name, sizeof name, "ember-%d-deep/a/b/f", (int)pid);
    CHECK(write_file(in_base(name), "x", 1) == 0);

    em_ctx *c = open_files_ctx();
    CHECK(c);
    int dead_dirs = scratch_dirs(base, pid, NULL), own = scratch_dirs(base, getpid(), NULL);
    em_close(c);
    CHECK_EQ_I64(dead_dirs, 0);
    CHECK_EQ_I64(own, 2); /* the context's and "-own" */
    snprintf(name, sizeof name, "ember-%d-live", (int)getppid());
    CHECK(exists(in_base(name)));
    snprintf(name, sizeof name, "ember-%d-own", (int)getpid());
    CHECK(exists(in_base(name)));
    snprintf(name, sizeof name, "ember-%d-file", (int)pid);
    CHECK(exists(in_base(name)));
    snprintf(name, sizeof name, "ember-%d-link", (int)pid);
    CHECK(exists(in_base(name)));
    CHECK(exists(in_base("target/keep")));
    CHECK(exists(in_base("ember-")));
    CHECK(exists(in_base("ember-12x-a")));
    CHECK(exists(in_base("unrelated")));
    CHECK_EQ_I64(scratch_dirs(base, getpid(), NULL), 1); /* em_close removed the context's */
}

/* A forked child that exits, or dies of SIGTERM, leaves its parent's
 * scratch directory alone. */
TEST(scratch_fork_child_keeps_parent_dir) {
    const char *base = test_scratchdir();
    int files = 0, after = 0;
    default_if_ignored();
    em_ctx *c = open_files_ctx();
    CHECK(c);
    if (!run_shuffle(c)) {
        em_close(c);
        CHECK(0);
    }
    int dirs = scratch_dirs(base, getpid(), &files);
    /* exit() runs the exit hook in the child.  (Under LeakSanitizer it
     * warns there that the parent's threads "were not suspended": they do
     * not exist in the child.) */
    pid_t a = fork_child();
    if (a == 0) exit(0);
    int st_a = a > 0 ? reap(a) : -1;
    pid_t b = fork_child();
    if (b == 0) {
        raise(SIGTERM);
        _exit(1);
    }
    int st_b = b > 0 ? reap(b) : -1;
    int dirs_after = scratch_dirs(base, getpid(), &after);
    int again = run_shuffle(c);
    em_close(c);
    CHECK(a > 0 && b > 0);
    CHECK_EQ_I64(dirs, 1);
    CHECK(files > 0);
    CHECK(status_is(st_a, 0, 0));
#ifndef __SANITIZE_THREAD__
    /* ThreadSanitizer defers signals to its own delivery points, and the
     * handler's re-raise in a forked child never kills it there: the child
     * then exits 1.  What matters, the parent's directory, is checked. */
    CHECK(status_is(st_b, 0, SIGTERM));
#else
    (void)st_b;
#endif
    CHECK_EQ_I64(dirs_after, 1);
    CHECK_EQ_I64(after, files);
    CHECK(again);
    CHECK_EQ_I64(scratch_dirs(base, 0, NULL), 0);
}

static volatile sig_atomic_t got_term;
static void on_term(int sig) { got_term = 1; }

/* A program that handles SIGTERM itself and ignores SIGINT keeps both: it
 * is not killed, goes on, and em_close removes its directory. */
TEST(scratch_program_handlers_kept) {
    const char *base = test_scratchdir();
    int p[2];
    CHECK(pipe(p) == 0);
    pid_t pid = fork_child();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
    }
    CHECK(pid >= 0);
    if (pid == 0) {
        struct sigaction sa;
        child_setup();
        close(p[0]);
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_term;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        signal(SIGINT, SIG_IGN);
        if (!(child_ctx = open_files_ctx())) _exit(10);
        if (!run_shuffle(child_ctx)) _exit(11);
        if (write(p[1], "x", 1) != 1) _exit(12);
        if (!wait_for(cond_flag, (void *)&got_term, WAIT_MS, "the test's SIGTERM")) _exit(14);
        if (!run_shuffle(child_ctx)) _exit(13); /* its directory is intact */
        em_close(child_ctx);
        exit(5);
    }
    close(p[1]);
    int reached = read_byte(p[0]);
    close(p[0]);
    if (reached) {
        kill(pid, SIGINT);
        kill(pid, SIGTERM);
    } else {
        kill(pid, SIGKILL);
    }
    int st = reap(pid);
    CHECK(reached);
    CHECK(status_is(st, 5, 0));
    CHECK_EQ_I64(scratch_dirs(base, 0, NULL), 0);
}

/* em_open on ember.local.dir = dir, expected to fail: no message printed. */
static em_ctx *open_at(const char *dir) {
    em_conf *conf = em_conf_new();
    if (!conf) return NULL;
    test_conf_set(conf, "ember.local.dir", dir);
    em_ctx *c = em_open(test_master(), conf);
    em_conf_free(conf);
    return c;
}

/* em_open that cannot make its directory fails with a message and leaves
 * nothing behind. */
TEST(scratch_open_failures) {
    const char *missing = in_base("missing");
    em_ctx *c = open_at(missing);
    CHECK(c == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.local.dir");
    CHECK_STR_CONTAINS(em_errmsg(), missing);
    char *longdir = malloc(5000);
    CHECK(longdir);
    memset(longdir, 'a', 4999);
    longdir[0] = '/';
    longdir[4999] = 0;
    c = open_at(longdir);
    free(longdir);
    CHECK(c == NULL);
    CHECK_STR_CONTAINS(em_errmsg(), "too long");
    CHECK_EQ_I64(scratch_dirs(test_scratchdir(), 0, NULL), 0);
}
