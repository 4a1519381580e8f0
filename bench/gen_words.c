/*
 * gen_words.c -- write a deterministic text for the word-count benchmark:
 * `gen_words OUT MEGABYTES [VOCAB]`.  Words come from a vocabulary of VOCAB
 * (default 100,000) pseudo-random lowercase words of 2..10 letters, drawn
 * with Zipf-like frequencies (weight 1/rank), 8..16 words per line.  The
 * same arguments always give the same bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: gen_words OUT MEGABYTES [VOCAB]\n");
        return 1;
    }
    long mb = atol(argv[2]);
    int vocab = argc > 3 ? atoi(argv[3]) : 100000;
    char (*words)[13] = malloc(sizeof *words * (size_t)vocab);
    double *cdf = malloc(sizeof *cdf * (size_t)vocab), sum = 0;
    if (!words || !cdf || mb <= 0 || vocab <= 0) return 1;
    for (int i = 0; i < vocab; i++) {
        int len = 2 + (int)(next() % 9);
        for (int k = 0; k < len; k++) words[i][k] = (char)('a' + next() % 26);
        words[i][len] = 0;
        sum += 1.0 / (i + 1);
        cdf[i] = sum;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    long long target = mb * 1024LL * 1024LL, written = 0;
    while (written < target) {
        int n = 8 + (int)(next() % 9);
        for (int w = 0; w < n; w++) {
            double u = (double)(next() >> 11) * 0x1.0p-53 * sum;
            int lo = 0, hi = vocab - 1;
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (cdf[mid] < u) lo = mid + 1;
                else hi = mid;
            }
            size_t l = strlen(words[lo]);
            fwrite(words[lo], 1, l, f);
            fputc(w + 1 < n ? ' ' : '\n', f);
            written += (long long)l + 1;
        }
    }
    if (fclose(f)) {
        perror(argv[1]);
        return 1;
    }
    free(words);
    free(cdf);
    return 0;
}
