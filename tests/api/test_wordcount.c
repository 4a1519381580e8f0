/*
 * test_wordcount.c -- word count (text_file -> flat_map -> reduce_by_key)
 * gives exactly the counts of a plain loop over the same text: with the
 * builtin em_sum_i64 (combined in place through the map side's look-ahead
 * queue), with a user function, and with no map-side combine at all
 * (group_by_key), in memory and with a small budget that makes the map
 * side write its string table out many times.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "helpers.h"

#define WC_WORDS 200000
#define WC_VOCAB 6000

/* A skewed text of WC_WORDS words, 12 to a line: word w (weight about
 * 1/rank) is 1 to 60 letters long, so some keys are longer than the map
 * side's queue holds. */
static char *make_text(size_t *len) {
    size_t cap = (size_t)WC_WORDS * 62, n = 0;
    char *t = malloc(cap);
    if (!t) return NULL;
    uint64_t s = 0x2545F4914F6CDD1Dull;
    for (int i = 0; i < WC_WORDS; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        uint64_t w = (s % WC_VOCAB) * ((s >> 32) % WC_VOCAB) / WC_VOCAB; /* skewed to small ranks */
        size_t wl = 1 + (size_t)(w * 13 % 60);
        for (size_t k = 0; k < wl; k++) t[n++] = (char)('a' + (w / (k + 1) + k * 7) % 26);
        t[n++] = (i % 12 == 11) ? '\n' : ' ';
    }
    *len = n;
    return t;
}

typedef struct wc_word { const char *p; size_t n; } wc_word;

/* ember's key order: bytes, then the shorter first. */
static int word_cmp(const void *a, const void *b) {
    const wc_word *x = a, *y = b;
    int c = memcmp(x->p, y->p, x->n < y->n ? x->n : y->n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* The reference: every word of the text sorted, so a run is one word and
 * its length the count.  Fills words (WC_WORDS of them); returns how many. */
static size_t plain_words(const char *t, size_t len, wc_word *words) {
    size_t n = 0;
    const char *p = t, *end = t + len;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\n')) p++;
        const char *w = p;
        while (p < end && *p != ' ' && *p != '\n') p++;
        if (p > w) words[n++] = (wc_word){w, (size_t)(p - w)};
    }
    qsort(words, n, sizeof *words, word_cmp);
    return n;
}

/* 1 when b holds (word, count) for each distinct word, in key order, with
 * the counts of the sorted words[0, n). */
static int counts_match(em_batch *b, const wc_word *words, size_t n, size_t *distinct) {
    size_t pos = 0, i = 0;
    em_rec r;
    *distinct = 0;
    while (em_batch_next(b, &pos, &r) == 1) {
        if (i >= n || r.klen != words[i].n || memcmp(r.key, words[i].p, r.klen) || r.vlen != 8) return 0;
        size_t j = i;
        while (j < n && !word_cmp(&words[i], &words[j])) j++;
        if (em_i64_dec(r.val) != (int64_t)(j - i)) return 0;
        i = j;
        (*distinct)++;
    }
    return i == n;
}

/* (word, list of ones) -> (word, length of the list). */
static int count_list(const em_rec *in, em_emitter *out, const void *arg) {
    size_t pos = 0, il;
    const void *it;
    int64_t n = 0;
    while (em_list_next(in->val, in->vlen, &pos, &it, &il) == 1) n++;
    return em_emit_pair_i64(out, in->key, in->klen, n);
}

/* Words split on spaces only: text_file gives lines without the newline. */
static int split_spaces(const em_rec *in, em_emitter *out, const void *arg) {
    const char *p = in->val, *end = p + in->vlen;
    while (p < end) {
        while (p < end && *p == ' ') p++;
        const char *w = p;
        while (p < end && *p != ' ') p++;
        if (p > w) {
            int rc = em_emit_pair_i64(out, w, (size_t)(p - w), 1);
            if (rc) return rc;
        }
    }
    return 0;
}

TEST(wordcount_exact_with_and_without_combining) {
    size_t len;
    char *text = make_text(&len);
    wc_word *words = malloc(sizeof *words * WC_WORDS);
    CHECK(text && words);
    CHECK(write_file(tmp_path("words.txt"), text, len) == 0);
    size_t n = plain_words(text, len, words);
    CHECK_EQ_I64(n, WC_WORDS);
    for (int small = 0; small < 2; small++) {
        em_ctx *c = small ? open_test_ctx_with("ember.shuffle.memoryBytes", "256k") : open_test_ctx();
        CHECK(c);
        em_rdd *pairs = em_flat_map(em_text_file(c, tmp_path("words.txt"), 3), split_spaces, NULL, 0);
        em_batch *b[3];
        em_stats s0, s1;
        em_get_stats(c, &s0);
        CHECK_OK(em_collect(em_sort_by_key(em_reduce_by_key(pairs, em_sum_i64, NULL, 0, 2), 1, 2), &b[0]));
        em_get_stats(c, &s1);
        CHECK_OK(em_collect(em_sort_by_key(em_reduce_by_key(pairs, fn_sum_i64, NULL, 0, 2), 1, 2), &b[1]));
        CHECK_OK(em_collect(em_sort_by_key(em_map(em_group_by_key(pairs, 2), count_list, NULL, 0), 1, 2), &b[2]));
        size_t distinct[3];
        for (int k = 0; k < 3; k++) CHECK(counts_match(b[k], words, n, &distinct[k]));
        CHECK(distinct[0] > 1000); /* the vocabulary is mostly used */
        CHECK_EQ_I64(distinct[1], distinct[0]);
        CHECK_EQ_I64(distinct[2], distinct[0]);
        CHECK(batches_equal(b[0], b[1]));
        /* The small budget wrote partition buffers out while combining. */
        if (small) CHECK(s1.spills > s0.spills);
        for (int k = 0; k < 3; k++) em_batch_free(b[k]);
        em_close(c);
    }
    free(words);
    free(text);
}
