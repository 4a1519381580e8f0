/*
 * wordcount.c -- word-count throughput: ember with the builtin sum and with
 * a user's own sum function, against the word-count reference
 * (bench/ref/wc_limit.c), on the same file in the same run.
 *
 *   wordcount FILE [MASTER] [RUNS]
 *
 * The reference is a program of its own, build/bench/wc_limit, found in the
 * directory of this one: one thread streams the file, splits it on blanks
 * and counts in an open-addressing table that keeps each word's hash in its
 * slot, then writes its counts to a temporary file, which is removed.  Its
 * time is its whole process, from spawn to exit.
 *
 * ember runs text_file -> flat_map (split on the reference's blanks, emit
 * (word, 1)) -> reduce_by_key -> count on MASTER (default local[2]), twice:
 * with em_sum_i64, the builtin the shuffle combines in place, and with
 * `sum`, the same addition written as a user writes it.  Each run times the
 * reference and then both ember jobs, so a change in the shared machine's
 * speed touches all three; each figure is the best of RUNS (default 3).  The
 * file is read once first so every side starts from the page cache.
 *
 * Prints each side's MB/s and, for ember, the reference's time over ember's
 * (above 1, ember is faster).  Every distinct count must equal the
 * reference's, and the words each ember job counted (the sum of its counts,
 * an untimed job after the runs) the reference's total; otherwise it exits
 * 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ember.h"

extern char **environ;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* ---- the reference: build/bench/wc_limit, run as its own process ---- */

/* The reference's path, beside this program: dirname of /proc/self/exe,
 * then "/wc_limit".  Returns 0, or -1 with a message printed. */
static int ref_path(char *out, size_t cap) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0) {
        perror("readlink /proc/self/exe");
        return -1;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) *slash = '\0';
    if ((size_t)snprintf(out, cap, "%s/wc_limit", slash ? self : ".") >= cap) {
        fprintf(stderr, "wordcount: path of the reference too long\n");
        return -1;
    }
    if (access(out, X_OK)) {
        fprintf(stderr, "wordcount: the reference %s: %s (make benches builds it)\n", out, strerror(errno));
        return -1;
    }
    return 0;
}

/* One run of the reference on path, its counts written to out: its wall
 * time from spawn to exit in *secs, and its "distinct D total T" (stderr)
 * in *distinct and *total.  Returns 0, or -1 with a message printed (the
 * reference's own stderr when it fails). */
static int run_ref(const char *exe, const char *path, const char *out, int64_t *distinct, int64_t *total,
                   double *secs) {
    int pfd[2];
    if (pipe(pfd)) {
        perror("pipe");
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
    posix_spawn_file_actions_addclose(&fa, pfd[0]);
    posix_spawn_file_actions_addclose(&fa, pfd[1]);
    char *argv[] = {(char *)exe, (char *)path, (char *)out, NULL};
    pid_t pid;
    double t0 = now();
    int rc = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pfd[1]);
    if (rc) {
        fprintf(stderr, "wordcount: spawning %s: %s\n", exe, strerror(rc));
        close(pfd[0]);
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            perror("waitpid");
            close(pfd[0]);
            return -1;
        }
    *secs = now() - t0;
    /* The child has exited, so its few lines of stderr wait in the pipe. */
    char msg[4096];
    size_t len = 0;
    ssize_t r;
    while (len < sizeof msg - 1 && (r = read(pfd[0], msg + len, sizeof msg - 1 - len)) > 0) len += (size_t)r;
    msg[len] = '\0';
    close(pfd[0]);
    long long d, t;
    if (!WIFEXITED(status) || WEXITSTATUS(status) || sscanf(msg, "distinct %lld total %lld", &d, &t) != 2) {
        fprintf(stderr, "wordcount: %s %s failed (status %d): %s\n", exe, path, status, msg);
        return -1;
    }
    *distinct = d;
    *total = t;
    return 0;
}

/* ---- ember ---- */

static int blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static int split(const em_rec *in, em_emitter *out, const void *arg) {
    const char *p = in->val, *end = p + in->vlen;
    uint8_t one[8];
    em_i64_enc(1, one);
    while (p < end) {
        while (p < end && blank(*p)) p++;
        const char *w = p;
        while (p < end && !blank(*p)) p++;
        if (p > w) {
            int rc = em_emit_pair(out, w, (size_t)(p - w), one, 8);
            if (rc) return rc;
        }
    }
    return 0;
}

/* The sum as a user writes it, with nothing the engine can recognise. */
static int sum(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return em_emit_i64(out, em_i64_dec(a->val) + em_i64_dec(b->val));
}

typedef struct variant {
    const char *name;
    em_comb_fn fn;
    double best;
    int64_t distinct, total;
} variant;

/* One word count with v->fn: the distinct words (timed: text_file to
 * count) in *distinct and *secs, or, when total is not NULL, the words
 * counted (untimed: the sum of the counts) in *total.  Returns 0 or the
 * failing call's code, with the message printed. */
static int run_ember(em_ctx *ctx, const char *path, const variant *v, int64_t *distinct, int64_t *total,
                     double *secs) {
    double t0 = now();
    em_rdd *lines = em_text_file(ctx, path, 0);
    em_rdd *words = lines ? em_flat_map(lines, split, NULL, 0) : NULL;
    em_rdd *counts = words ? em_reduce_by_key(words, v->fn, NULL, 0, 0) : NULL;
    em_rdd *vals = NULL;
    int rc = EM_EINVAL;
    if (counts && !total) {
        rc = em_count(counts, distinct);
        *secs = now() - t0;
    } else if (counts && (vals = em_values(counts))) {
        em_batch *b = NULL;
        em_rec r;
        rc = em_reduce(vals, em_sum_i64, NULL, 0, &b);
        if (!rc && !(rc = em_batch_get(b, 0, &r))) *total = em_i64_dec(r.val);
        em_batch_free(b);
    }
    if (rc) fprintf(stderr, "wordcount: ember (%s): %s\n", v->name, em_errmsg());
    em_rdd_release(vals);
    em_rdd_release(counts);
    em_rdd_release(words);
    em_rdd_release(lines);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: wordcount FILE [MASTER] [RUNS]\n");
        return 1;
    }
    const char *path = argv[1], *master = argc > 2 ? argv[2] : "local[2]";
    int runs = argc > 3 ? atoi(argv[3]) : 3;
    if (runs < 1) runs = 1;
    char exe[PATH_MAX];
    if (ref_path(exe, sizeof exe)) return 1;

    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        perror(path);
        return 1;
    }
    size_t len = (size_t)st.st_size;
    char *p = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    if (p == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    volatile uint64_t touch = 0;
    for (size_t i = 0; i < len; i += 4096) touch += (uint8_t)p[i]; /* warm the page cache */
    if (len) munmap(p, len);
    close(fd);
    double mb = (double)len / (1 << 20);

    const char *tmpdir = getenv("TMPDIR");
    char out[PATH_MAX];
    snprintf(out, sizeof out, "%s/wordcount-ref.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int ofd = mkstemp(out);
    if (ofd < 0) {
        perror(out);
        return 1;
    }
    close(ofd);

    em_ctx *ctx = em_open(master, NULL);
    if (!ctx) {
        fprintf(stderr, "em_open: %s\n", em_errmsg());
        unlink(out);
        return 1;
    }
    variant vs[] = {{"builtin sum", em_sum_i64, 1e9, 0, 0}, {"user sum", sum, 1e9, 0, 0}};
    enum { NV = sizeof vs / sizeof vs[0] };
    double best_ref = 1e9;
    int64_t ref_distinct = 0, ref_total = 0;
    int bad = 0;
    for (int r = 0; r < runs && !bad; r++) {
        double t = 1e9;
        bad = run_ref(exe, path, out, &ref_distinct, &ref_total, &t) != 0;
        unlink(out);
        if (t < best_ref) best_ref = t;
        for (int i = 0; i < NV && !bad; i++) {
            t = 1e9;
            bad = run_ember(ctx, path, &vs[i], &vs[i].distinct, NULL, &t) != 0;
            if (t < vs[i].best) vs[i].best = t;
        }
    }
    for (int i = 0; i < NV && !bad; i++) bad = run_ember(ctx, path, &vs[i], NULL, &vs[i].total, NULL) != 0;
    em_close(ctx);
    if (bad) return 1;

    printf("file: %s, %.1f MB, %lld words, %lld distinct (wc_limit)\n", path, mb, (long long)ref_total,
           (long long)ref_distinct);
    char label[128];
    snprintf(label, sizeof label, "wordcount ember %s (%s)", master, vs[0].name);
    const char *ref_label = "wc_limit, 1 thread (the reference)";
    int w = (int)(strlen(label) > strlen(ref_label) ? strlen(label) : strlen(ref_label)) + 1;
    printf("%-*s: %8.1f MB/s  (%.3f s)\n", w, ref_label, mb / best_ref, best_ref);
    for (int i = 0; i < NV; i++) {
        snprintf(label, sizeof label, "wordcount ember %s (%s)", master, vs[i].name);
        printf("%-*s: %8.1f MB/s  (%.3f s)  %5.2fx the reference\n", w, label, mb / vs[i].best, vs[i].best,
               best_ref / vs[i].best);
    }
    for (int i = 0; i < NV; i++)
        if (vs[i].distinct != ref_distinct || vs[i].total != ref_total) {
            fprintf(stderr, "MISMATCH: ember (%s) found %lld distinct words in %lld, wc_limit %lld in %lld\n",
                    vs[i].name, (long long)vs[i].distinct, (long long)vs[i].total, (long long)ref_distinct,
                    (long long)ref_total);
            bad = 1;
        }
    return bad;
}
