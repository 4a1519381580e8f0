/*
 * test_textfile.c -- unit tests of text_file planning (engine/textfile.c)
 * and split reading (engine/text_reader.c).
 *
 * The central property: however a file is cut into splits, reading every
 * split in order yields each line of the file exactly once, in order.  The
 * tests check it by generating files whose lines they know (varied lengths,
 * empty lines, CRLF, no final newline), cutting them at every small split
 * size and comparing, through both the mmap and the pread path.  Gzip
 * tests write their input with zlib's gzwrite, then damage it.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "buf.h"
#include "ember.h"
#include "../test.h"
#include "text_reader.h"
#include "textfile.h"

/* Test hook in text_reader.c: force the pread path. */
extern int text_reader_mmap;

/* ------------------------------------------------------------ helpers */

static char *tpath(const char *name) {
    static char buf[8][512];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

static int write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = n ? fwrite(p, 1, n, f) : 0;
    return fclose(f) == 0 && w == n ? 0 : -1;
}

static int read_whole(const char *path, ebuf *out) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char tmp[65536];
    size_t r;
    while ((r = fread(tmp, 1, sizeof tmp, f)) > 0) ebuf_append(out, tmp, r);
    fclose(f);
    return 0;
}

static int write_gz(const char *path, const void *p, size_t n) {
    gzFile g = gzopen(path, "wb6");
    if (!g) return -1;
    int w = n ? gzwrite(g, p, (unsigned)n) : 0;
    return gzclose(g) == Z_OK && (size_t)w == n ? 0 : -1;
}

/* A sink collecting lines as "line\n" into an ebuf. */
typedef struct coll {
    ebuf b;
    int64_t lines;
    int64_t stop_after; /* return EM_STOP after this many lines (0: never) */
    int fail_code;      /* return this after the first line (0: never) */
} coll;

static int coll_sink(void *ctx, const em_rec *r) {
    coll *c = ctx;
    if (r->key) return EM_EINVAL;
    ebuf_append(&c->b, r->val, r->vlen);
    ebuf_append(&c->b, "\n", 1);
    c->lines++;
    if (c->fail_code) return c->fail_code;
    if (c->stop_after && c->lines >= c->stop_after) return EM_STOP;
    return 0;
}

/* Generated content: `file` gets the bytes, `want` each line + "\n". */
static uint64_t rng_state;
static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33);
}

static void gen_lines(uint64_t seed, int nlines, int maxlen, int trailing_nl, ebuf *file,
                      ebuf *want) {
    rng_state = seed;
    for (int i = 0; i < nlines; i++) {
        int len = rnd() % 10 == 0 ? 0 : (int)(rnd() % (uint32_t)maxlen);
        for (int j = 0; j < len; j++) {
            char ch = (char)('a' + rnd() % 26);
            /* A lone '\r' inside a line is data, not a terminator. */
            if (j > 0 && j < len - 1 && rnd() % 50 == 0) ch = '\r';
            ebuf_append(file, &ch, 1);
            ebuf_append(want, &ch, 1);
        }
        ebuf_append(want, "\n", 1);
        int last = i == nlines - 1;
        if (last && !trailing_nl) {
            if (len == 0) { /* an empty final line without '\n' is no line */
                ebuf_append(file, "x", 1);
                want->len--;
                ebuf_append(want, "x\n", 2);
            }
            break;
        }
        if (rnd() % 4 == 0) ebuf_append(file, "\r\n", 2);
        else ebuf_append(file, "\n", 1);
    }
}

/* Plan path with split size `split` and read every split in order into c.
 * Returns the first nonzero code. */
static int read_all(const char *path, uint64_t split, size_t max_line, coll *c, int *nsplits,
                    uint64_t *total_read) {
    text_split *s;
    int n, rc;
    if ((rc = text_plan(path, 1, split, &s, &n)) != 0) return rc;
    if (nsplits) *nsplits = n;
    if (total_read) *total_read = 0;
    for (int i = 0; i < n && !rc; i++) {
        uint64_t br = 0;
        rc = text_read_split(&s[i], max_line, coll_sink, c, &br);
        if (total_read) *total_read += br;
    }
    text_splits_free(s, n);
    return rc;
}

static int same(const ebuf *a, const ebuf *b) {
    return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

/* ------------------------------------------------------------ planning */

TEST(textfile_plan_single_file) {
    char data[100];
    memset(data, 'x', sizeof data);
    const char *p = tpath("f.txt");
    CHECK(write_file(p, data, sizeof data) == 0);
    text_split *s;
    int n;
    CHECK_OK(text_plan(p, 3, 1000, &s, &n)); /* ceil(100/3) = 34 */
    CHECK_EQ_I64(n, 3);
    CHECK(strcmp(s[0].path, p) == 0 && strcmp(s[2].path, p) == 0);
    CHECK_EQ_I64(s[0].off, 0);
    CHECK_EQ_I64(s[0].len, 34);
    CHECK_EQ_I64(s[1].off, 34);
    CHECK_EQ_I64(s[1].len, 34);
    CHECK_EQ_I64(s[2].off, 68);
    CHECK_EQ_I64(s[2].len, 32);
    CHECK(!s[0].gz);
    text_splits_free(s, n);

    CHECK_OK(text_plan(p, 1, 30, &s, &n)); /* max_split caps the goal */
    CHECK_EQ_I64(n, 4);
    CHECK_EQ_I64(s[3].off, 90);
    CHECK_EQ_I64(s[3].len, 10);
    text_splits_free(s, n);

    CHECK_OK(text_plan(p, 0, 1000, &s, &n)); /* min_partitions < 1 is 1 */
    CHECK_EQ_I64(n, 1);
    CHECK_EQ_I64(s[0].len, 100);
    text_splits_free(s, n);

    CHECK_OK(text_plan(p, 1000, 1000, &s, &n)); /* split never below 1 byte */
    CHECK_EQ_I64(n, 100);
    CHECK_EQ_I64(s[99].off, 99);
    CHECK_EQ_I64(s[99].len, 1);
    text_splits_free(s, n);
}

TEST(textfile_plan_directory_sorted_and_filtered) {
    const char *d = tpath("dir");
    CHECK(mkdir(d, 0755) == 0);
    char p[600];
    const char *names[] = {"b.txt", "a.txt", "_SUCCESS", ".hidden", "c.gz"};
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/%s", d, names[i]);
        CHECK(write_file(p, "hello\nworld\n", 12) == 0);
    }
    snprintf(p, sizeof p, "%s/sub", d);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/sub/z.txt", d);
    CHECK(write_file(p, "z\n", 2) == 0);

    text_split *s;
    int n;
    CHECK_OK(text_plan(d, 2, 1 << 20, &s, &n));
    /* a.txt and b.txt split in two (goal ceil(24/2) = 12: one split each),
     * c.gz whole; sub/, _SUCCESS and .hidden skipped. */
    CHECK_EQ_I64(n, 3);
    snprintf(p, sizeof p, "%s/a.txt", d);
    CHECK(strcmp(s[0].path, p) == 0);
    snprintf(p, sizeof p, "%s/b.txt", d);
    CHECK(strcmp(s[1].path, p) == 0);
    snprintf(p, sizeof p, "%s/c.gz", d);
    CHECK(strcmp(s[2].path, p) == 0);
    CHECK(s[2].gz);
    CHECK_EQ_I64(s[2].off, 0);
    CHECK_EQ_I64(s[2].len, 12);
    text_splits_free(s, n);

    /* A trailing slash works too. */
    snprintf(p, sizeof p, "%s/", d);
    CHECK_OK(text_plan(p, 1, 1 << 20, &s, &n));
    CHECK_EQ_I64(n, 3);
    text_splits_free(s, n);
}

TEST(textfile_plan_glob) {
    const char *names[] = {"g2.log", "g1.log", "g3.txt", "g10.log"};
    for (int i = 0; i < 4; i++) CHECK(write_file(tpath(names[i]), "line\n", 5) == 0);
    text_split *s;
    int n;
    CHECK_OK(text_plan(tpath("g*.log"), 1, 1 << 20, &s, &n));
    CHECK_EQ_I64(n, 3);
    CHECK(strcmp(s[0].path, tpath("g1.log")) == 0);
    CHECK(strcmp(s[1].path, tpath("g10.log")) == 0);
    CHECK(strcmp(s[2].path, tpath("g2.log")) == 0);
    text_splits_free(s, n);

    CHECK(text_plan(tpath("nomatch*.log"), 1, 1 << 20, &s, &n) == EM_ENOENT);
    CHECK_STR_CONTAINS(em_errmsg(), "nomatch*.log: no such file or directory");
}

TEST(textfile_plan_missing_path) {
    text_split *s = (text_split *)1;
    int n = 7;
    const char *p = tpath("does/not/exist.txt");
    CHECK(text_plan(p, 1, 1 << 20, &s, &n) == EM_ENOENT);
    char want[700];
    snprintf(want, sizeof want, "text_file: %s: no such file or directory", p);
    CHECK(strcmp(em_errmsg(), want) == 0);
    CHECK(s == NULL && n == 0);

    CHECK(text_plan(NULL, 1, 1 << 20, &s, &n) == EM_EINVAL);

    /* An empty directory is no error: no splits (Spark's empty RDD). */
    const char *d = tpath("emptydir");
    CHECK(mkdir(d, 0755) == 0);
    s = (text_split *)1;
    n = 7;
    CHECK_OK(text_plan(d, 1, 1 << 20, &s, &n));
    CHECK(s == NULL && n == 0);
}

TEST(textfile_empty_file) {
    const char *p = tpath("empty.txt");
    CHECK(write_file(p, "", 0) == 0);
    text_split *s;
    int n;
    CHECK_OK(text_plan(p, 4, 1 << 20, &s, &n));
    CHECK_EQ_I64(n, 1);
    CHECK_EQ_I64(s[0].off, 0);
    CHECK_EQ_I64(s[0].len, 0);
    coll c = {EBUF_INIT, 0, 0, 0};
    uint64_t br = 99;
    CHECK_OK(text_read_split(&s[0], 100, coll_sink, &c, &br));
    CHECK_EQ_I64(c.lines, 0);
    CHECK_EQ_I64(br, 0);
    text_splits_free(s, n);
    ebuf_free(&c.b);
}

/* ------------------------------------------------------------ reading */

/* Every split size from 1 to 50 bytes, and some odd ones, over one file. */
static void check_all_splits(const char *p, const ebuf *want, uint64_t fsize) {
    static const uint64_t odd[] = {51, 63, 64, 97, 128, 511, 1000, 1023, 4096, 4097, 1 << 20};
    for (int mode = 0; mode < 2; mode++) {
        text_reader_mmap = !mode;
        for (int k = 0; k < 50 + (int)(sizeof odd / sizeof odd[0]); k++) {
            uint64_t split = k < 50 ? (uint64_t)k + 1 : odd[k - 50];
            coll c = {EBUF_INIT, 0, 0, 0};
            int nsplits = 0;
            uint64_t total = 0;
            int rc = read_all(p, split, 1 << 20, &c, &nsplits, &total);
            if (rc || !same(&c.b, want)) {
                fprintf(stderr, "  split %llu (%s): rc %d (%s), %zu bytes vs %zu wanted\n",
                        (unsigned long long)split, mode ? "pread" : "mmap", rc, em_errmsg(),
                        c.b.len, want->len);
            }
            CHECK_EQ_I64(rc, 0);
            CHECK(same(&c.b, want));
            CHECK_EQ_I64(nsplits, fsize == 0 ? 1 : (int64_t)((fsize + split - 1) / split));
            /* Together the splits cover the file; mapped, each scans its
             * range plus at most the line running over (lines here are
             * under 64 bytes). */
            CHECK(total >= fsize);
            if (mode == 0) CHECK(total <= fsize + (uint64_t)nsplits * 64);
            ebuf_free(&c.b);
        }
    }
    text_reader_mmap = 0;
}

TEST(textfile_every_line_once_any_split) {
    ebuf file = EBUF_INIT, want = EBUF_INIT;
    gen_lines(42, 300, 45, 1, &file, &want);
    const char *p = tpath("gen.txt");
    CHECK(write_file(p, file.p, file.len) == 0);
    check_all_splits(p, &want, file.len);
    if (test_failed) return;
    ebuf_free(&file);
    ebuf_free(&want);

    /* The same without a final newline. */
    gen_lines(7, 200, 30, 0, &file, &want);
    p = tpath("gen2.txt");
    CHECK(write_file(p, file.p, file.len) == 0);
    check_all_splits(p, &want, file.len);
    ebuf_free(&file);
    ebuf_free(&want);
}

TEST(textfile_small_cases) {
    static const struct { const char *in, *want; } cases[] = {
        {"a\nbb\nccc", "a\nbb\nccc\n"},
        {"abc", "abc\n"},
        {"\n", "\n"},
        {"\n\n", "\n\n"},
        {"x\r\n", "x\n"},
        {"\r\n\r\n", "\n\n"},
        {"a\r", "a\r\n"},         /* '\r' without '\n' is kept */
        {"a\r\rb\r\n", "a\r\rb\n"}, /* only the '\r' right before '\n' goes */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *p = tpath("small.txt");
        size_t len = strlen(cases[i].in);
        CHECK(write_file(p, cases[i].in, len) == 0);
        ebuf want = EBUF_INIT;
        ebuf_append(&want, cases[i].want, strlen(cases[i].want));
        check_all_splits(p, &want, len);
        ebuf_free(&want);
        if (test_failed) {
            fprintf(stderr, "  case %zu\n", i);
            return;
        }
    }
}

TEST(textfile_large_pread_chunks) {
    /* Lines crossing the 1 MiB pread chunks and several splits, including
     * one line longer than a chunk. */
    ebuf file = EBUF_INIT, want = EBUF_INIT;
    gen_lines(99, 60000, 90, 1, &file, &want);
    size_t big = (3u << 20) / 2;
    char *line = malloc(big);
    CHECK(line != NULL);
    memset(line, 'L', big);
    ebuf_append(&file, line, big);
    ebuf_append(&file, "\r\n", 2);
    ebuf_append(&want, line, big);
    ebuf_append(&want, "\n", 1);
    free(line);
    gen_lines(100, 20000, 90, 1, &file, &want);
    const char *p = tpath("large.txt");
    CHECK(write_file(p, file.p, file.len) == 0);
    static const uint64_t splits[] = {700001, 1 << 20, 3 << 20, 1 << 30};
    for (int mode = 0; mode < 2; mode++) {
        text_reader_mmap = !mode;
        for (size_t k = 0; k < sizeof splits / sizeof splits[0]; k++) {
            coll c = {EBUF_INIT, 0, 0, 0};
            uint64_t total = 0;
            CHECK_OK(read_all(p, splits[k], 4 << 20, &c, NULL, &total));
            CHECK(same(&c.b, &want));
            CHECK(total >= file.len);
            ebuf_free(&c.b);
        }
    }
    text_reader_mmap = 0;
    /* One split over the whole file reads exactly the file. */
    coll c = {EBUF_INIT, 0, 0, 0};
    uint64_t total = 0;
    CHECK_OK(read_all(p, 1ull << 40, 4 << 20, &c, NULL, &total));
    CHECK_EQ_I64(total, file.len);
    ebuf_free(&c.b);
    ebuf_free(&file);
    ebuf_free(&want);
}

TEST(textfile_gzip_read) {
    ebuf file = EBUF_INIT, want = EBUF_INIT;
    gen_lines(5, 150000, 60, 1, &file, &want); /* several MB: many inflate chunks */
    const char *p = tpath("data.txt.gz");
    CHECK(write_gz(p, file.p, file.len) == 0);
    struct stat st;
    CHECK(stat(p, &st) == 0);
    text_split *s;
    int n;
    CHECK_OK(text_plan(p, 8, 1000, &s, &n));
    CHECK_EQ_I64(n, 1); /* gzip is never split */
    CHECK(s[0].gz);
    CHECK_EQ_I64(s[0].len, st.st_size);
    coll c = {EBUF_INIT, 0, 0, 0};
    uint64_t br = 0;
    CHECK_OK(text_read_split(&s[0], 1 << 20, coll_sink, &c, &br));
    CHECK(same(&c.b, &want));
    CHECK_EQ_I64(br, st.st_size);
    text_splits_free(s, n);
    ebuf_free(&c.b);
    ebuf_free(&file);
    ebuf_free(&want);

    /* Without a final newline, and empty. */
    const char *q = tpath("small.gz");
    CHECK(write_gz(q, "one\r\ntwo", 8) == 0);
    CHECK_OK(text_plan(q, 1, 1000, &s, &n));
    coll c2 = {EBUF_INIT, 0, 0, 0};
    CHECK_OK(text_read_split(&s[0], 100, coll_sink, &c2, NULL));
    CHECK(c2.b.len == 8 && memcmp(c2.b.p, "one\ntwo\n", 8) == 0);
    text_splits_free(s, n);
    ebuf_free(&c2.b);

    CHECK(write_gz(q, "", 0) == 0);
    CHECK_OK(text_plan(q, 1, 1000, &s, &n));
    coll c3 = {EBUF_INIT, 0, 0, 0};
    CHECK_OK(text_read_split(&s[0], 100, coll_sink, &c3, NULL));
    CHECK_EQ_I64(c3.lines, 0);
    text_splits_free(s, n);
}

TEST(textfile_gzip_concatenated_members) {
    const char *a = tpath("a.gz"), *b = tpath("b.gz"), *cat = tpath("cat.gz");
    ebuf fa = EBUF_INIT, wa = EBUF_INIT;
    gen_lines(11, 20000, 50, 0, &fa, &wa); /* first member ends mid-line */
    CHECK(write_gz(a, fa.p, fa.len) == 0);
    CHECK(write_gz(b, "tail of line\nsecond\r\nthird\n", 27) == 0);
    ebuf whole = EBUF_INIT;
    CHECK(read_whole(a, &whole) == 0);
    CHECK(read_whole(b, &whole) == 0);
    CHECK(read_whole(b, &whole) == 0); /* three members */
    CHECK(write_file(cat, whole.p, whole.len) == 0);

    ebuf want = EBUF_INIT;
    ebuf_append(&want, wa.p, wa.len - 1); /* last line of a runs into b */
    ebuf_append(&want, "tail of line\nsecond\nthird\ntail of line\nsecond\nthird\n", 52);
    coll c = {EBUF_INIT, 0, 0, 0};
    CHECK_OK(read_all(cat, 1000, 1 << 20, &c, NULL, NULL));
    CHECK(same(&c.b, &want));
    ebuf_free(&c.b);
    ebuf_free(&fa);
    ebuf_free(&wa);
    ebuf_free(&whole);
    ebuf_free(&want);
}

TEST(textfile_gzip_truncated) {
    ebuf file = EBUF_INIT, want = EBUF_INIT, gz = EBUF_INIT;
    gen_lines(3, 50000, 60, 1, &file, &want);
    const char *full = tpath("full.gz"), *p = tpath("cut.gz");
    CHECK(write_gz(full, file.p, file.len) == 0);
    CHECK(read_whole(full, &gz) == 0);
    /* Cut in the middle, in the 8-byte trailer, and inside the header. */
    size_t cuts[] = {gz.len / 2, gz.len - 4, 5};
    for (size_t i = 0; i < 3; i++) {
        CHECK(write_file(p, gz.p, cuts[i]) == 0);
        coll c = {EBUF_INIT, 0, 0, 0};
        int rc = read_all(p, 1000, 1 << 20, &c, NULL, NULL);
        CHECK_EQ_I64(rc, EM_ECORRUPT);
        CHECK_STR_CONTAINS(em_errmsg(), "truncated gzip input at compressed offset");
        CHECK_STR_CONTAINS(em_errmsg(), p);
        char off[64];
        snprintf(off, sizeof off, "offset %zu", cuts[i]);
        CHECK_STR_CONTAINS(em_errmsg(), off);
        ebuf_free(&c.b);
    }
    ebuf_free(&file);
    ebuf_free(&want);
    ebuf_free(&gz);
}

TEST(textfile_gzip_corrupt) {
    ebuf file = EBUF_INIT, want = EBUF_INIT, gz = EBUF_INIT;
    gen_lines(4, 50000, 60, 1, &file, &want);
    const char *full = tpath("full.gz"), *p = tpath("bad.gz");
    CHECK(write_gz(full, file.p, file.len) == 0);
    CHECK(read_whole(full, &gz) == 0);
    rng_state = 1234;
    for (size_t i = gz.len / 2; i < gz.len / 2 + 64; i++) gz.p[i] = (uint8_t)rnd();
    CHECK(write_file(p, gz.p, gz.len) == 0);
    coll c = {EBUF_INIT, 0, 0, 0};
    CHECK_EQ_I64(read_all(p, 1000, 1 << 20, &c, NULL, NULL), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), p);
    CHECK_STR_CONTAINS(em_errmsg(), "gzip input at compressed offset");
    ebuf_free(&c.b);

    /* A bad header is a data error at offset 0. */
    CHECK(write_file(p, "\x1f\x8b\x09garbage-garbage", 18) == 0);
    CHECK_EQ_I64(read_all(p, 1000, 1 << 20, &c, NULL, NULL), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "corrupt gzip input at compressed offset");
    ebuf_free(&c.b);
    ebuf_free(&file);
    ebuf_free(&want);
    ebuf_free(&gz);
}

TEST(textfile_missing_at_read_time) {
    const char *p = tpath("gone.txt");
    CHECK(write_file(p, "a\nb\n", 4) == 0);
    text_split *s;
    int n;
    CHECK_OK(text_plan(p, 1, 1000, &s, &n));
    CHECK(unlink(p) == 0);
    coll c = {EBUF_INIT, 0, 0, 0};
    CHECK_EQ_I64(text_read_split(&s[0], 100, coll_sink, &c, NULL), EM_ENOENT);
    CHECK_STR_CONTAINS(em_errmsg(), p);
    text_splits_free(s, n);

    text_split g = {tpath("gone.gz"), 0, 10, 1};
    CHECK_EQ_I64(text_read_split(&g, 100, coll_sink, &c, NULL), EM_ENOENT);
    CHECK_STR_CONTAINS(em_errmsg(), "gone.gz: no such file or directory");
    CHECK_EQ_I64(c.lines, 0);
}

TEST(textfile_sink_stop_and_fail) {
    const char *p = tpath("stop.txt"), *g = tpath("stop.gz");
    const char *data = "l1\nl2\nl3\nl4\nl5\n";
    CHECK(write_file(p, data, 15) == 0);
    CHECK(write_gz(g, data, 15) == 0);
    text_split sp = {(char *)p, 0, 15, 0}, sg = {(char *)g, 0, 0, 1};
    for (int mode = 0; mode < 3; mode++) {
        text_reader_mmap = mode != 1;
        const text_split *s = mode == 2 ? &sg : &sp;
        coll c = {EBUF_INIT, 0, 3, 0};
        CHECK_OK(text_read_split(s, 100, coll_sink, &c, NULL));
        CHECK_EQ_I64(c.lines, 3);
        CHECK(c.b.len == 9 && memcmp(c.b.p, "l1\nl2\nl3\n", 9) == 0);
        ebuf_free(&c.b);

        coll f = {EBUF_INIT, 0, 0, EM_EUSER};
        CHECK_EQ_I64(text_read_split(s, 100, coll_sink, &f, NULL), EM_EUSER);
        CHECK_EQ_I64(f.lines, 1);
        ebuf_free(&f.b);
    }
    text_reader_mmap = 0;
}

TEST(textfile_line_too_long) {
    ebuf data = EBUF_INIT;
    ebuf_append(&data, "short\n", 6);
    for (int i = 0; i < 100; i++) ebuf_append(&data, "y", 1);
    ebuf_append(&data, "\r\nafter\n", 8);
    const char *p = tpath("long.txt"), *g = tpath("long.gz");
    CHECK(write_file(p, data.p, data.len) == 0);
    CHECK(write_gz(g, data.p, data.len) == 0);
    for (int mode = 0; mode < 3; mode++) {
        text_reader_mmap = mode != 1;
        const char *path = mode == 2 ? g : p;
        coll c = {EBUF_INIT, 0, 0, 0};
        CHECK_EQ_I64(read_all(path, 1000, 50, &c, NULL, NULL), EM_ETOOBIG);
        CHECK_STR_CONTAINS(em_errmsg(), path);
        CHECK_STR_CONTAINS(em_errmsg(), "offset 6");
        CHECK_EQ_I64(c.lines, 1);
        ebuf_free(&c.b);
        /* Exactly max_line bytes (the "\r\n" not counted) is fine. */
        coll ok = {EBUF_INIT, 0, 0, 0};
        CHECK_OK(read_all(path, 1000, 100, &ok, NULL, NULL));
        CHECK_EQ_I64(ok.lines, 3);
        ebuf_free(&ok.b);
    }
    text_reader_mmap = 0;

    /* Across pread chunks: the carried part is bounded, not grown forever. */
    size_t big = (5u << 20) / 2;
    char *line = malloc(big);
    CHECK(line != NULL);
    memset(line, 'z', big);
    CHECK(write_file(p, line, big) == 0); /* no newline at all */
    free(line);
    for (int mode = 0; mode < 2; mode++) {
        text_reader_mmap = !mode;
        coll c = {EBUF_INIT, 0, 0, 0};
        CHECK_EQ_I64(read_all(p, 1ull << 30, 1 << 20, &c, NULL, NULL), EM_ETOOBIG);
        CHECK_STR_CONTAINS(em_errmsg(), "offset 0");
        ebuf_free(&c.b);
    }
    text_reader_mmap = 0;
    ebuf_free(&data);
}

/* Zero padding after the last gzip member (gzip -t accepts it) is skipped;
 * anything but zeros after the padding is corrupt input. */
TEST(textfile_gzip_zero_padding) {
    char path[1024];
    snprintf(path, sizeof path, "%s/pad.gz", test_tmpdir());
    const char *text = "alpha\nbeta\ngamma\n";
    CHECK(write_gz(path, text, strlen(text)) == 0);
    FILE *f = fopen(path, "ab");
    CHECK(f);
    static const char zeros[3000];
    CHECK(fwrite(zeros, 1, sizeof zeros, f) == sizeof zeros);
    fclose(f);
    text_split s = {path, 0, 0, 1};
    coll c;
    memset(&c, 0, sizeof c);
    uint64_t bytes = 0;
    CHECK_OK(text_read_split(&s, 0, coll_sink, &c, &bytes));
    CHECK_EQ_I64(c.lines, 3);
    ebuf_free(&c.b);
    f = fopen(path, "ab");
    CHECK(f);
    fputc('x', f);
    fclose(f);
    memset(&c, 0, sizeof c);
    CHECK_EQ_I64(text_read_split(&s, 0, coll_sink, &c, &bytes), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "after the zero padding");
    ebuf_free(&c.b);
}

/* A .gz file holding a bare zlib stream (no gzip header) is corrupt input:
 * only gzip framing is accepted. */
TEST(textfile_gzip_rejects_bare_zlib) {
    const char *text = "alpha\nbeta\n";
    uint8_t z[256];
    uLongf zn = sizeof z;
    CHECK(compress2(z, &zn, (const Bytef *)text, (uLong)strlen(text), 6) == Z_OK);
    const char *p = tpath("zlib.gz");
    CHECK(write_file(p, z, zn) == 0);
    coll c = {EBUF_INIT, 0, 0, 0};
    CHECK_EQ_I64(read_all(p, 1000, 1 << 20, &c, NULL, NULL), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "incorrect header check");
    CHECK_EQ_I64(c.lines, 0);
    ebuf_free(&c.b);
}

/* em_text_line_number on a corrupt .gz: the message is formatted before
 * the gzFile (which owns it) is closed.  Under ASan this was a heap
 * use-after-free. */
TEST(textfile_line_number_corrupt_gzip) {
    ebuf file = EBUF_INIT, want = EBUF_INIT, gz = EBUF_INIT;
    gen_lines(5, 20000, 60, 1, &file, &want);
    const char *full = tpath("ln.gz"), *p = tpath("lnbad.gz");
    CHECK(write_gz(full, file.p, file.len) == 0);
    CHECK(read_whole(full, &gz) == 0);
    rng_state = 99;
    for (size_t i = 20; i < 84 && i < gz.len; i++) gz.p[i] = (uint8_t)rnd();
    CHECK(write_file(p, gz.p, gz.len) == 0);
    int64_t n = em_text_line_number(p, file.len);
    CHECK_EQ_I64(n, EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), p);
    /* The intact file counts lines. */
    CHECK_EQ_I64(em_text_line_number(full, 0), 1);
    ebuf_free(&file);
    ebuf_free(&want);
    ebuf_free(&gz);
}
