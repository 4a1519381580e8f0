/* wc_limit.c -- the word-count reference: the "hand-written limit" that
 * bench/wordcount prints ember's figures against.
 *
 * This is the shared fair reference ../shared/refs/wc_limit.c (see that
 * directory's README), copied here unchanged but for this comment so that
 * `make benches` builds it beside the benchmarks, as build/bench/wc_limit,
 * with -O2 as the README says.
 *
 * Single thread: stream the file through a 1 MiB buffer, split on ' ', '\t',
 * '\r', '\n', and count words in an open-addressing (linear probing) hash
 * table keyed by FNV-1a; a word's bytes are copied into an arena the first
 * time it is seen. Then write "count word" lines (unsorted) to OUT.
 * Prints "distinct total" to stderr for cross-checking with other peers.
 *
 * Build: gcc -O2 -o wc_limit wc_limit.c
 * Usage: wc_limit INPUT OUT
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (1 << 20)

typedef struct {
    const char *word; /* NULL = empty slot */
    uint32_t len;
    uint64_t hash;
    uint64_t count;
} Slot;

static Slot *table;
static size_t cap, used; /* cap is a power of two, load kept <= 1/2 */
static char *arena;      /* word storage, 1 MiB blocks (never freed) */
static size_t arena_used = CHUNK;

static const char *intern(const char *w, uint32_t len) {
    if (arena_used + len > CHUNK) { arena = malloc(CHUNK); arena_used = 0; }
    char *p = arena + arena_used;
    memcpy(p, w, len);
    arena_used += len;
    return p;
}

static void insert(const char *w, uint32_t len, uint64_t h, uint64_t count, int copy);

static void grow(void) {
    Slot *old = table;
    size_t oldcap = cap;
    cap = cap ? cap * 2 : 1 << 16;
    table = calloc(cap, sizeof(Slot));
    used = 0;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].word) insert(old[i].word, old[i].len, old[i].hash, old[i].count, 0);
    free(old);
}

static void insert(const char *w, uint32_t len, uint64_t h, uint64_t count, int copy) {
    size_t i = h & (cap - 1);
    for (;;) {
        Slot *s = &table[i];
        if (!s->word) {
            *s = (Slot){copy ? intern(w, len) : w, len, h, count};
            if (++used * 2 > cap) grow();
            return;
        }
        if (s->hash == h && s->len == len && memcmp(s->word, w, len) == 0) {
            s->count += count;
            return;
        }
        i = (i + 1) & (cap - 1);
    }
}

static int is_space(unsigned char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s INPUT OUT\n", argv[0]); return 2; }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 1; }
    char *buf = malloc(2 * CHUNK + 1); /* carried-over partial word + one chunk + sentinel */
    size_t have = 0;                   /* bytes of a partial word carried over */
    uint64_t total = 0;
    ssize_t r;
    grow();
    do {
        r = read(fd, buf + have, CHUNK);
        if (r < 0) { perror("read"); return 1; }
        size_t n = have + r, stop = n;
        if (r > 0) /* not at EOF: keep a trailing partial word for the next round */
            while (stop > 0 && !is_space(buf[stop - 1])) stop--;
        if (stop == 0 && n > CHUNK) { fprintf(stderr, "word longer than 1 MiB\n"); return 1; }
        char saved = buf[stop];
        buf[stop] = ' '; /* sentinel ends the last word */
        const unsigned char *p = (const unsigned char *)buf, *end = p + stop;
        while (p < end) {
            while (p < end && is_space(*p)) p++;
            if (p >= end) break;
            const unsigned char *start = p;
            uint64_t h = 1469598103934665603ULL; /* FNV-1a 64 */
            while (!is_space(*p)) { h = (h ^ *p) * 1099511628211ULL; p++; }
            insert((const char *)start, (uint32_t)(p - start), h, 1, 1);
            total++;
        }
        buf[stop] = saved;
        memmove(buf, buf + stop, n - stop);
        have = n - stop;
    } while (r > 0);
    close(fd);

    FILE *out = fopen(argv[2], "w");
    if (!out) { perror(argv[2]); return 1; }
    for (size_t i = 0; i < cap; i++)
        if (table[i].word)
            fprintf(out, "%llu %.*s\n", (unsigned long long)table[i].count,
                    (int)table[i].len, table[i].word);
    fclose(out);
    fprintf(stderr, "distinct %zu total %llu\n", used, (unsigned long long)total);
    return 0;
}
