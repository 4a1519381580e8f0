/*
 * replay.c -- runs a fuzz target over files, as an ordinary deterministic
 * test: `replay_NAME DIR_OR_FILE...` calls LLVMFuzzerTestOneInput once for
 * each file (a directory's files in name order, dot files skipped) and
 * prints "replay NAME: N inputs ok".  A broken property or a sanitizer
 * report aborts, after naming the input that caused it.
 *
 * How fuzzing is laid out (docs/testing.md has the whole story):
 *
 *   tests/fuzz/fuzz_NAME.c    one target: LLVMFuzzerTestOneInput(data, size)
 *                             decodes untrusted bytes with one decoder and
 *                             checks its properties with FZ_CHECK (fuzz.h);
 *   tests/fuzz/corpus/NAME/   its seeds (a handful of small files: valid
 *                             inputs made by the real encoders, edge cases)
 *                             and every crash ever found, as crash-WHAT;
 *   tests/fuzz/support.c      helpers and reference parsers (fuzz.h);
 *   tests/fuzz/replay.c       this driver.
 *
 * Adding a target is dropping in those two things: the Makefile finds
 * fuzz_*.c by wildcard, `make test` builds BUILD/tests/fuzz/replay_NAME
 * with the normal compiler and replays corpus/NAME/, and `make fuzz`
 * builds BUILD/fuzz/tests/fuzz/fuzz_NAME with clang and libFuzzer and runs
 * it for FUZZ_SECONDS on a working copy of the corpus.  A target must be
 * deterministic (the same input, the same checks), must not leak between
 * inputs, and keeps its files in fz_tmpdir().  If it needs a context, it
 * opens one once per process and keeps it.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

/* Set when linked with a sanitizer runtime: called before it exits. */
extern void __sanitizer_set_death_callback(void (*cb)(void)) __attribute__((weak));

/* UBSan's defaults here: a stack trace, and abort() rather than _exit, so
 * that on_signal names the input (with gcc, UBSan's runtime is a library
 * of its own, which the death callback set above does not reach). */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void) { return "print_stacktrace=1:abort_on_error=1"; }

static const char *current; /* the input being replayed, for crash reports */

static void name_input(void) {
    if (current) {
        /* Async-signal-safe: write(2) only. */
        const char a[] = "replay: the input that failed is ";
        if (write(2, a, sizeof a - 1) < 0 || write(2, current, strlen(current)) < 0 || write(2, "\n", 1) < 0) {
            /* nothing more to do */
        }
    }
}

static void on_signal(int sig) {
    name_input();
    signal(sig, SIG_DFL);
    raise(sig);
}

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fprintf(stderr, "%s: out of memory\n", path);
            fclose(f);
            return -1;
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        uint8_t *b = realloc(buf, cap * 2);
        if (!b) free(buf);
        buf = b;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        fprintf(stderr, "%s: read error\n", path);
        free(buf);
        return -1;
    }
    /* An exact-size copy, so that reading one byte too far is caught by
     * ASan as it is under libFuzzer. */
    uint8_t *data = malloc(n ? n : 1);
    if (!data) {
        free(buf);
        return -1;
    }
    memcpy(data, buf, n);
    free(buf);
    current = path;
    LLVMFuzzerTestOneInput(data, n);
    current = NULL;
    free(data);
    return 0;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replay every file of dir in name order; returns the count or -1. */
static int run_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **v = realloc(names, cap * sizeof *v);
            if (!v) abort();
            names = v;
        }
        if (!(names[n++] = strdup(e->d_name))) abort();
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_names);
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(path)) count = -1;
            else if (count >= 0) count++;
        }
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv) {
    const char *name = strrchr(argv[0], '/');
    name = name ? name + 1 : argv[0];
    if (!strncmp(name, "replay_", 7)) name += 7;
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    /* A sanitizer reports faults itself (and calls name_input when it
     * dies); without one, the signals do.  A failed FZ_CHECK aborts. */
    signal(SIGABRT, on_signal);
    if (__sanitizer_set_death_callback) {
        __sanitizer_set_death_callback(name_input);
    } else {
        signal(SIGSEGV, on_signal);
        signal(SIGBUS, on_signal);
        signal(SIGFPE, on_signal);
    }
    int total = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        int k;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            k = -1;
        } else if (S_ISDIR(st.st_mode)) {
            k = run_dir(argv[i]);
        } else {
            k = run_file(argv[i]) ? -1 : 1;
        }
        if (k < 0) failed = 1;
        else total += k;
    }
    if (failed) return 1;
    if (!total) {
        fprintf(stderr, "replay %s: no inputs\n", name);
        return 1;
    }
    printf("replay %s: %d inputs ok\n", name, total);
    return 0;
}
