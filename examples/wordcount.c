/*
 * wordcount.c -- count the words of text files and print the most frequent.
 *
 *     wordcount [--conf KEY=VALUE]... FILE_OR_DIR_OR_GLOB [TOP_N [MASTER]]
 *
 * The classic first ember program:
 *
 *     text_file -> flat_map (split on whitespace into (word, 1))
 *               -> reduce_by_key (em_sum_i64)   = counts, cached
 *     counts    -> count                         = distinct words
 *     counts    -> values -> reduce (sum)        = total words
 *     counts    -> map to (-count, word) -> take_ordered(TOP_N)
 *
 * Counts are int64 values in ember's order-preserving 8-byte encoding
 * (em_i64_enc), so keying by the negated count and asking for the TOP_N
 * smallest records gives the most frequent words first, ties in
 * alphabetical order.
 *
 * MASTER is "local", "local[N]" or "local[*]"; without it ember uses
 * $EMBER_MASTER, then local[*].  --conf KEY=VALUE (repeatable) sets any
 * configuration key, e.g. --conf ember.progress=false.
 *
 * Exit status: 0 on success; 2 for a usage error (the message names the
 * argument), before anything runs; 1 on any other failure, with the
 * engine's message.  Every path after em_open goes through em_close, which
 * removes the context's scratch directory.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"

static const char usage_text[] =
    "usage: wordcount [--conf KEY=VALUE]... FILE_OR_DIR_OR_GLOB [TOP_N [MASTER]]\n"
    "  Counts the whitespace-separated words of the input (a file, every\n"
    "  file of a directory, or a quoted glob; .gz files are decompressed)\n"
    "  and prints the TOP_N (default 10) most frequent ones.\n"
    "  MASTER: local[N], local[*], local-cluster[W,C] or ember://HOST:PORT (default: $EMBER_MASTER, else local[*]).\n"
    "  --conf KEY=VALUE  set a configuration key (e.g. ember.progress=false)\n";

/* A usage error: what is wrong, where to look; exit status 2. */
static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("wordcount: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\nRun 'wordcount --help' for usage.\n", stderr);
    va_end(ap);
    return 2;
}

/* flat_map: one line -> (word, 1) for each run of non-whitespace bytes.
 * A plain byte loop and no allocation: the emitter copies the word before
 * em_emit_pair_i64 returns, so pointing into the line is fine. */
static int split_words(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    const unsigned char *p = in->val, *end = p + in->vlen;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == '\v' || *p == '\f'))
            p++;
        const unsigned char *w = p;
        while (p < end && !(*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == '\v' || *p == '\f'))
            p++;
        if (p > w) {
            int rc = em_emit_pair_i64(out, w, (size_t)(p - w), 1);
            if (rc) return rc; /* EM_STOP or an error: pass it on */
        }
    }
    return 0;
}

/* map: (word, count) -> (-count, word), so that ascending key order is
 * descending count order. */
static int by_count(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    uint8_t k[8];
    em_i64_enc(-em_i64_dec(in->val), k);
    return em_emit_pair(out, k, sizeof k, in->key, in->klen);
}

/* Parse the command line into conf, *input, *top_n and *master.  0, -1
 * for --help (usage printed), or 2 (message printed). */
static int parse_args(int argc, char **argv, em_conf *conf, const char **input, long *top_n,
                      const char **master) {
    const char *pos[3];
    int npos = 0, options = 1;
    if (em_conf_parse_args(conf, &argc, argv)) return bad_usage("%s", em_errmsg());
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options && !strcmp(a, "--")) {
            options = 0;
        } else if (options && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
            fputs(usage_text, stdout);
            return -1;
        } else if (options && a[0] == '-' && a[1]) {
            return bad_usage("unknown option '%s'", a);
        } else if (npos == 3) {
            return bad_usage("unexpected argument '%s' (at most FILE, TOP_N and MASTER)", a);
        } else {
            pos[npos++] = a;
        }
    }
    if (npos == 0) return bad_usage("missing FILE_OR_DIR_OR_GLOB");
    if (!pos[0][0]) return bad_usage("empty FILE_OR_DIR_OR_GLOB");
    *input = pos[0];
    *top_n = 10;
    if (npos >= 2) {
        char *end;
        *top_n = strtol(pos[1], &end, 10);
        if (*end || end == pos[1] || *top_n < 0) return bad_usage("TOP_N '%s' is not a number >= 0", pos[1]);
    }
    *master = npos >= 3 ? pos[2] : NULL; /* NULL: $EMBER_MASTER, then local[*] */
    return 0;
}

int main(int argc, char **argv) {
    const char *input = NULL, *master = NULL;
    long top_n = 10;
    em_conf *conf = em_conf_new();
    if (!conf || em_conf_set(conf, "ember.app.name", "wordcount") != 0) {
        fprintf(stderr, "wordcount: %s\n", em_errmsg());
        em_conf_free(conf);
        return 1;
    }
    int rc = parse_args(argc, argv, conf, &input, &top_n, &master);
    if (rc) {
        em_conf_free(conf);
        return rc < 0 ? 0 : rc;
    }
    em_ctx *ctx = em_open(master, conf);
    em_conf_free(conf); /* the context keeps its own copy */
    if (!ctx) {
        fprintf(stderr, "wordcount: %s\n", em_errmsg()); /* names the cause: the bad master, the setting */
        return 1;
    }

    /* From here every failure goes to fail:, which closes the context.
     * em_errmsg() names the cause: the file, the failing task. */
    em_batch *top = NULL;
    /* At least one split per core, more for files past
     * ember.files.maxPartitionBytes (32 MiB by default). */
    em_rdd *lines = em_text_file(ctx, input, em_cores(ctx));
    if (!lines) goto fail;
    em_rdd *words = em_flat_map(lines, split_words, NULL, 0);
    em_rdd *counts = em_reduce_by_key(words, em_sum_i64, NULL, 0, 0);
    if (!counts) goto fail;
    em_cache(em_set_name(counts, "word counts")); /* three actions read it */

    int64_t distinct = 0;
    if (em_count(counts, &distinct) != 0) goto fail;

    int64_t total = 0;
    if (distinct > 0) {
        em_batch *sum;
        if (em_reduce(em_values(counts), em_sum_i64, NULL, 0, &sum) != 0) goto fail;
        em_rec r;
        if (em_batch_get(sum, 0, &r) == 0) total = em_i64_dec(r.val);
        em_batch_free(sum);
    }

    em_rdd *ranked = em_map(counts, by_count, NULL, 0);
    if (!ranked || em_take_ordered(ranked, (size_t)top_n, &top) != 0) goto fail;

    printf("%-24s %12s\n", "word", "count");
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(top, &pos, &r) == 1)
        printf("%-24.*s %12lld\n", (int)r.vlen, (const char *)r.val, (long long)-em_i64_dec(r.key));
    printf("total words: %lld, distinct words: %lld\n", (long long)total, (long long)distinct);

    em_batch_free(top);
    em_close(ctx);
    return 0;
fail:
    fprintf(stderr, "wordcount: %s\n", em_errmsg());
    em_batch_free(top);
    em_close(ctx);
    return 1;
}
