/*
 * test_progress.c -- unit tests of the console progress line
 * (scheduler/progress.c): exact formatting for a given terminal width and
 * how it degrades in narrow ones, when it draws (a stage shown only after
 * 500 ms, redraws at most every 200 ms) on an injected clock, erasing, the
 * width's sources, and that a disabled bar writes nothing.  No test reads
 * the wall clock.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "progress.h"
#include "../test.h"

#define CHECK_LINE(columns, stage, done, running, total, want)                 \
    do {                                                                        \
        char b_[512];                                                           \
        progress_format(b_, sizeof b_, columns, stage, done, running, total);   \
        if (strcmp(b_, want) != 0) fprintf(stderr, "  got \"%s\"\n", b_);      \
        CHECK(strcmp(b_, want) == 0);                                           \
    } while (0)

TEST(progress_format_lines) {
    /* 30 columns: 29 characters, the bar taking what the text leaves. */
    CHECK_LINE(30, 0, 0, 8, 10, "[Stage 0:>      (0 + 8) / 10]");
    CHECK_LINE(30, 3, 4, 2, 10, "[Stage 3:==>    (4 + 2) / 10]");
    CHECK_LINE(30, 3, 9, 1, 10, "[Stage 3:======>(9 + 1) / 10]");
    CHECK_LINE(30, 7, 10, 0, 10, "[Stage 7:======(10 + 0) / 10]");
    CHECK_LINE(45, 12, 12, 2, 40, "[Stage 12:======>             (12 + 2) / 40]");
    CHECK_LINE(80, 1, 1, 1, 2,
               "[Stage 1:=============================>                            (1 + 1) / 2]");
    /* Out-of-range counts do not overrun the bar. */
    CHECK_LINE(24, 2, 9, 0, 4, "[Stage 2:==(9 + 0) / 4]");
    CHECK_LINE(24, 2, 0, 0, 0, "[Stage 2:==(0 + 0) / 0]");
}

TEST(progress_format_narrow) {
    /* "[Stage 3:" + "(4 + 2) / 10]" is 22 characters: 24 columns leave one
     * cell for the bar, 23 none, then the stage goes, then everything. */
    CHECK_LINE(24, 3, 4, 2, 10, "[Stage 3:>(4 + 2) / 10]");
    CHECK_LINE(23, 3, 4, 2, 10, "[Stage 3:(4 + 2) / 10]");
    CHECK_LINE(22, 3, 4, 2, 10, "(4 + 2) / 10");
    CHECK_LINE(13, 3, 4, 2, 10, "(4 + 2) / 10");
    CHECK_LINE(12, 3, 4, 2, 10, "");
    CHECK_LINE(1, 3, 4, 2, 10, "");
    CHECK_LINE(0, 3, 4, 2, 10, "");
    CHECK_LINE(-5, 3, 4, 2, 10, "");
    /* Whatever the width and counts, the line fits in columns - 1. */
    static const int counts[][3] = {{0, 0, 1}, {5, 3, 9}, {99, 1, 100}, {12345, 64, 1000000}, {-3, 0, 7}};
    for (int cols = 0; cols <= 200; cols++)
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
            char b[512];
            progress_format(b, sizeof b, cols, 1234, counts[k][0], counts[k][1], counts[k][2]);
            CHECK((int)strlen(b) <= (cols > 0 ? cols - 1 : 0));
            if (cols >= 60) CHECK(strncmp(b, "[Stage 1234:", 12) == 0 && b[strlen(b) - 1] == ']');
        }
}

TEST(progress_format_truncates) {
    char b[12];
    memset(b, 'X', sizeof b);
    progress_format(b, sizeof b, 80, 3, 1, 1, 2);
    CHECK(strlen(b) == sizeof b - 1);
    CHECK(strcmp(b, "[Stage 3:==") == 0);
    char small[5];
    progress_format(small, sizeof small, 80, 3, 1, 1, 2);
    CHECK(strcmp(small, "[Sta") == 0);
    char one[1] = {'X'};
    progress_format(one, 1, 80, 3, 1, 1, 2);
    CHECK(one[0] == 0);
}

/* The injected clock. */
static double fake_now;
static double fake_clock(void) { return fake_now; }

/* A progress line writing to a memory stream at a fixed width. */
typedef struct capture {
    progress p;
    char *buf;
    size_t len, taken;
    FILE *f;
} capture;

static int capture_open(capture *c, int enabled, int columns) {
    memset(c, 0, sizeof *c);
    progress_init(&c->p, enabled);
    if (!(c->f = open_memstream(&c->buf, &c->len))) return -1;
    c->p.out = c->f;
    c->p.columns = columns;
    c->p.now = fake_clock;
    fake_now = 1000;
    return 0;
}

/* What was written since the last call ("" if nothing). */
static const char *capture_take(capture *c, char *to, size_t cap) {
    fflush(c->f);
    snprintf(to, cap, "%s", c->len > c->taken ? c->buf + c->taken : "");
    c->taken = c->len;
    return to;
}

static void capture_close(capture *c) {
    fclose(c->f);
    free(c->buf);
}

/* s with \r shown as "\r", for messages (a raw \r would hide them). */
static const char *visible(const char *s, char *to, size_t cap) {
    size_t n = 0;
    for (; *s && n + 3 < cap; s++) {
        if (*s == '\r') to[n++] = '\\', to[n++] = 'r';
        else to[n++] = *s;
    }
    to[n] = 0;
    return to;
}

#define CHECK_OUT(c, want)                                                     \
    do {                                                                        \
        char o_[1024], v_[2048];                                                \
        capture_take(c, o_, sizeof o_);                                         \
        if (strcmp(o_, want) != 0) fprintf(stderr, "  wrote \"%s\"\n", visible(o_, v_, sizeof v_)); \
        CHECK(strcmp(o_, want) == 0);                                           \
    } while (0)

TEST(progress_first_delay_and_rate) {
    capture c;
    CHECK(capture_open(&c, 1, 30) == 0);
    /* A stage is not drawn before it has run 500 ms. */
    progress_update(&c.p, 1, 0, 2, 10, 0);
    fake_now += 0.25;
    progress_update(&c.p, 1, 1, 2, 10, 0);
    CHECK_OUT(&c, "");
    CHECK(!c.p.drawn);
    fake_now += 0.25; /* 500 ms */
    progress_update(&c.p, 1, 2, 2, 10, 0);
    CHECK_OUT(&c, "\r[Stage 1:=>     (2 + 2) / 10]");
    CHECK(c.p.drawn == 29);
    /* At most one redraw per 200 ms. */
    fake_now += 0.125;
    progress_update(&c.p, 1, 3, 2, 10, 0);
    CHECK_OUT(&c, "");
    fake_now += 0.125;
    progress_update(&c.p, 1, 4, 2, 10, 0);
    CHECK_OUT(&c, "\r[Stage 1:==>    (4 + 2) / 10]");
    /* force skips the rate limit (not the first delay). */
    progress_update(&c.p, 1, 5, 2, 10, 1);
    CHECK_OUT(&c, "\r[Stage 1:===>   (5 + 2) / 10]");
    /* The next stage erases the line and starts its own 500 ms. */
    fake_now += 1;
    progress_update(&c.p, 2, 0, 2, 4, 0);
    CHECK_OUT(&c, "\r                             \r");
    CHECK(!c.p.drawn);
    fake_now += 0.375;
    progress_update(&c.p, 2, 1, 2, 4, 0);
    CHECK_OUT(&c, "");
    fake_now += 0.125;
    progress_update(&c.p, 2, 2, 2, 4, 0);
    CHECK_OUT(&c, "\r[Stage 2:====>   (2 + 2) / 4]");
    progress_clear(&c.p);
    CHECK_OUT(&c, "\r                             \r");
    progress_clear(&c.p); /* nothing left to erase */
    CHECK_OUT(&c, "");
    capture_close(&c);
}

/* A job shorter than 500 ms writes nothing at all. */
TEST(progress_short_job_silent) {
    capture c;
    CHECK(capture_open(&c, 1, 80) == 0);
    for (int i = 0; i < 100; i++) {
        progress_update(&c.p, i / 10, i % 10, 4, 10, 0);
        fake_now += 0.001;
    }
    progress_clear(&c.p);
    CHECK_OUT(&c, "");
    capture_close(&c);
}

/* Padding covers the previous line only, never past the width. */
TEST(progress_resized_terminal) {
    capture c;
    CHECK(capture_open(&c, 1, 40) == 0);
    progress_update(&c.p, 1, 0, 1, 3, 0);
    fake_now += 0.5;
    progress_update(&c.p, 1, 1, 1, 3, 0);
    CHECK_OUT(&c, "\r[Stage 1:======>           (1 + 1) / 3]");
    c.p.columns = 16; /* narrower: the counts alone, padded to 15 */
    fake_now += 0.25;
    progress_update(&c.p, 1, 2, 1, 3, 0);
    CHECK_OUT(&c, "\r(2 + 1) / 3    ");
    CHECK(c.p.drawn == 15);
    c.p.columns = 5; /* too narrow: the line is padded away */
    fake_now += 0.25;
    progress_update(&c.p, 1, 2, 1, 3, 0);
    CHECK_OUT(&c, "\r    ");
    progress_clear(&c.p);
    CHECK_OUT(&c, "\r    \r");
    capture_close(&c);
}

TEST(progress_disabled_is_silent) {
    capture c;
    CHECK(capture_open(&c, 0, 80) == 0);
    progress_update(&c.p, 1, 1, 1, 4, 1);
    fake_now += 10;
    progress_update(&c.p, 1, 2, 1, 4, 1);
    CHECK(!c.p.drawn);
    progress_clear(&c.p);
    CHECK_OUT(&c, "");
    capture_close(&c);
    progress_update(NULL, 1, 1, 1, 1, 1);
    progress_clear(NULL);
}

/* The width: the terminal's, else $COLUMNS, else 80.  stderr goes to a
 * file here, so the ioctl fails and the fallbacks show. */
TEST(progress_columns_fallbacks) {
    char path[512];
    snprintf(path, sizeof path, "%s/stderr", test_tmpdir());
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    setenv("COLUMNS", "57", 1);
    int with_env = progress_columns();
    setenv("COLUMNS", "abc", 1);
    int bad_env = progress_columns();
    unsetenv("COLUMNS");
    int none = progress_columns();
    /* The default stream and clock: stderr, drawn once 500 ms have passed
     * on CLOCK_MONOTONIC -- not waited for here: nothing is drawn. */
    progress p;
    progress_init(&p, 1);
    progress_update(&p, 1, 1, 1, 4, 1);
    int drawn = p.drawn;
    progress_clear(&p);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    CHECK_EQ_I64(with_env, 57);
    CHECK_EQ_I64(bad_env, 80);
    CHECK_EQ_I64(none, 80);
    CHECK(!drawn);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    CHECK(fgetc(f) == EOF);
    fclose(f);
}
