/*
 * wordcount.c -- count the words of text files and print the most frequent.
 *
 *     wordcount FILE_OR_DIR_OR_GLOB [TOP_N [MASTER]]
 *
 * The classic first ember program:
 *
 *     text_file -> flat_map (split on whitespace into (word, 1))
 *               -> reduce_by_key (sum)          = counts, cached
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
 * $EMBER_MASTER, then local[*].  Exit status 1 on any failure, with the
 * engine's message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"

static void usage(void) {
    fprintf(stderr,
            "usage: wordcount FILE_OR_DIR_OR_GLOB [TOP_N [MASTER]]\n"
            "  Counts the whitespace-separated words of the input (a file, every\n"
            "  file of a directory, or a quoted glob; .gz files are decompressed)\n"
            "  and prints the TOP_N (default 10) most frequent ones.\n"
            "  MASTER: local, local[N] or local[*] (default: $EMBER_MASTER, else local[*]).\n");
    exit(1);
}

/* em_errmsg() names the cause: the file, the failing task, the bad setting. */
static void fail(void) {
    fprintf(stderr, "wordcount: %s\n", em_errmsg());
    exit(1);
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

/* reduce_by_key and reduce: the sum of two encoded int64 values. */
static int sum_i64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    (void)arg;
    if (a->vlen != 8 || b->vlen != 8)
        return em_fail("sum_i64: expected 8-byte values, got %zu and %zu", a->vlen, b->vlen);
    return em_emit_i64(out, em_i64_dec(a->val) + em_i64_dec(b->val));
}

/* map: (word, count) -> (-count, word), so that ascending key order is
 * descending count order. */
static int by_count(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    uint8_t k[8];
    em_i64_enc(-em_i64_dec(in->val), k);
    return em_emit_pair(out, k, sizeof k, in->key, in->klen);
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 4 || !argv[1][0]) usage();
    long top_n = 10;
    if (argc >= 3) {
        char *end;
        top_n = strtol(argv[2], &end, 10);
        if (*end || end == argv[2] || top_n < 0) usage();
    }
    const char *master = argc >= 4 ? argv[3] : NULL; /* NULL: $EMBER_MASTER, then local[*] */

    em_conf *conf = em_conf_new();
    if (!conf || em_conf_set(conf, "ember.app.name", "wordcount") != 0) fail();
    em_ctx *ctx = em_open(master, conf);
    em_conf_free(conf); /* the context keeps its own copy */
    if (!ctx) fail();

    /* At least one split per core, more for files past
     * ember.files.maxPartitionBytes (32 MiB by default). */
    em_rdd *lines = em_text_file(ctx, argv[1], em_cores(ctx));
    if (!lines) fail();
    em_rdd *words = em_flat_map(lines, split_words, NULL, 0);
    em_rdd *counts = em_reduce_by_key(words, sum_i64, NULL, 0, 0);
    if (!counts) fail();
    em_cache(em_set_name(counts, "word counts")); /* three actions read it */

    int64_t distinct = 0;
    if (em_count(counts, &distinct) != 0) fail();

    int64_t total = 0;
    if (distinct > 0) {
        em_batch *sum;
        if (em_reduce(em_values(counts), sum_i64, NULL, 0, &sum) != 0) fail();
        em_rec r;
        if (em_batch_get(sum, 0, &r) == 0) total = em_i64_dec(r.val);
        em_batch_free(sum);
    }

    em_batch *top;
    em_rdd *ranked = em_map(counts, by_count, NULL, 0);
    if (!ranked || em_take_ordered(ranked, (size_t)top_n, &top) != 0) fail();

    printf("%-24s %12s\n", "word", "count");
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(top, &pos, &r) == 1)
        printf("%-24.*s %12lld\n", (int)r.vlen, (const char *)r.val, (long long)-em_i64_dec(r.key));
    printf("total words: %lld, distinct words: %lld\n", (long long)total, (long long)distinct);

    em_batch_free(top);
    em_close(ctx);
    return 0;
}
