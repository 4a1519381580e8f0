/*
 * wordcount.c -- word-count throughput: ember against a hand-written
 * single-threaded C hash count of the same file, in the same run.
 *
 *   wordcount FILE [MASTER] [RUNS]
 *
 * The file is read once first so both sides start from the page cache.
 * The C reference maps the file, splits on spaces and newlines, and counts
 * in an open-addressing table.  ember runs text_file -> flat_map (split,
 * emit (word, 1)) -> reduce_by_key (em_sum_i64, the builtin) -> count, on MASTER (default
 * local[2]).  Both distinct-word counts must agree.  Prints MB/s of each
 * (best of RUNS, default 3) and their ratio.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ember.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* ---- the reference: a plain C hash count ---- */

typedef struct slot { const char *w; uint32_t len; int64_t count; } slot;

static uint64_t hash_bytes(const char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
    return h;
}

static int64_t c_count(const char *p, size_t len, int64_t *total) {
    size_t cap = 1 << 18, used = 0;
    slot *t = calloc(cap, sizeof *t);
    const char *end = p + len;
    *total = 0;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\n')) p++;
        const char *w = p;
        while (p < end && *p != ' ' && *p != '\n') p++;
        if (p == w) continue;
        size_t n = (size_t)(p - w);
        uint64_t h = hash_bytes(w, n);
        size_t i = h & (cap - 1);
        while (t[i].w && (t[i].len != n || memcmp(t[i].w, w, n))) i = (i + 1) & (cap - 1);
        if (!t[i].w) {
            t[i].w = w;
            t[i].len = (uint32_t)n;
            if (++used * 2 > cap) { /* grow */
                size_t nc = cap * 2;
                slot *nt = calloc(nc, sizeof *nt);
                for (size_t k = 0; k < cap; k++)
                    if (t[k].w) {
                        size_t j = hash_bytes(t[k].w, t[k].len) & (nc - 1);
                        while (nt[j].w) j = (j + 1) & (nc - 1);
                        nt[j] = t[k];
                    }
                free(t);
                t = nt;
                cap = nc;
                i = hash_bytes(w, n) & (cap - 1);
                while (t[i].w != w) i = (i + 1) & (cap - 1);
            }
        }
        t[i].count++;
        (*total)++;
    }
    free(t);
    return (int64_t)used;
}

/* ---- ember ---- */

static int split(const em_rec *in, em_emitter *out, const void *arg) {
    const char *p = in->val, *end = p + in->vlen;
    uint8_t one[8];
    em_i64_enc(1, one);
    while (p < end) {
        while (p < end && *p == ' ') p++;
        const char *w = p;
        while (p < end && *p != ' ') p++;
        if (p > w) {
            int rc = em_emit_pair(out, w, (size_t)(p - w), one, 8);
            if (rc) return rc;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: wordcount FILE [MASTER] [RUNS]\n");
        return 1;
    }
    const char *path = argv[1], *master = argc > 2 ? argv[2] : "local[2]";
    int runs = argc > 3 ? atoi(argv[3]) : 3;
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        perror(path);
        return 1;
    }
    size_t len = (size_t)st.st_size;
    char *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    volatile uint64_t touch = 0;
    for (size_t i = 0; i < len; i += 4096) touch += (uint8_t)p[i]; /* warm the page cache */
    double mb = (double)len / (1 << 20);

    double best_c = 1e9;
    int64_t c_distinct = 0, c_total = 0;
    for (int r = 0; r < runs; r++) {
        double t0 = now();
        c_distinct = c_count(p, len, &c_total);
        double t = now() - t0;
        if (t < best_c) best_c = t;
    }
    munmap(p, len);
    close(fd);

    em_ctx *ctx = em_open(master, NULL);
    if (!ctx) {
        fprintf(stderr, "em_open: %s\n", em_errmsg());
        return 1;
    }
    double best_e = 1e9;
    int64_t e_distinct = 0;
    for (int r = 0; r < runs; r++) {
        double t0 = now();
        em_rdd *counts = em_reduce_by_key(em_flat_map(em_text_file(ctx, path, 0), split, NULL, 0), em_sum_i64, NULL, 0, 0);
        if (!counts || em_count(counts, &e_distinct)) {
            fprintf(stderr, "ember: %s\n", em_errmsg());
            return 1;
        }
        double t = now() - t0;
        if (t < best_e) best_e = t;
    }
    em_close(ctx);

    printf("file: %s, %.1f MB, %lld words, %lld distinct\n", path, mb, (long long)c_total, (long long)c_distinct);
    printf("C hash count, 1 thread : %8.1f MB/s  (%.3f s)\n", mb / best_c, best_c);
    printf("ember %-17s: %8.1f MB/s  (%.3f s)\n", master, mb / best_e, best_e);
    printf("ratio ember / C loop   : %8.2fx\n", best_c / best_e);
    if (e_distinct != c_distinct) {
        fprintf(stderr, "MISMATCH: ember found %lld distinct words, C %lld\n", (long long)e_distinct,
                (long long)c_distinct);
        return 1;
    }
    return 0;
}
