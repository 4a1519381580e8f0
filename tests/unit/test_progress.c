/*
 * test_progress.c -- unit tests of the console progress line
 * (scheduler/progress.c): exact formatting, and that a disabled bar writes
 * nothing.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "progress.h"
#include "../test.h"

#define CHECK_LINE(width, stage, done, running, total, want)                   \
    do {                                                                        \
        char b_[256];                                                           \
        progress_format(b_, sizeof b_, width, stage, done, running, total);     \
        if (strcmp(b_, want) != 0) fprintf(stderr, "  got \"%s\"\n", b_);      \
        CHECK(strcmp(b_, want) == 0);                                           \
    } while (0)

TEST(progress_format_lines) {
    CHECK_LINE(10, 0, 0, 8, 10, "[Stage 0:>         (0 + 8) / 10]");
    CHECK_LINE(10, 3, 4, 2, 10, "[Stage 3:====>     (4 + 2) / 10]");
    CHECK_LINE(10, 3, 9, 1, 10, "[Stage 3:=========>(9 + 1) / 10]");
    CHECK_LINE(10, 7, 10, 0, 10, "[Stage 7:==========(10 + 0) / 10]");
    CHECK_LINE(20, 12, 12, 2, 40, "[Stage 12:======>             (12 + 2) / 40]");
    CHECK_LINE(0, 1, 1, 1, 2, "[Stage 1:(1 + 1) / 2]");
    /* Out-of-range counts do not overrun the bar. */
    CHECK_LINE(5, 2, 9, 0, 4, "[Stage 2:=====(9 + 0) / 4]");
    CHECK_LINE(5, 2, 0, 0, 0, "[Stage 2:=====(0 + 0) / 0]");
}

TEST(progress_format_truncates) {
    char b[12];
    memset(b, 'X', sizeof b);
    progress_format(b, sizeof b, 40, 3, 1, 1, 2);
    CHECK(strlen(b) == sizeof b - 1);
    CHECK(strcmp(b, "[Stage 3:==") == 0);
    char one[1] = {'X'};
    progress_format(one, 1, 40, 3, 1, 1, 2);
    CHECK(one[0] == 0);
}

TEST(progress_disabled_is_silent) {
    progress p;
    progress_init(&p, 0);
    CHECK(p.width > 0);
    progress_update(&p, 1, 1, 1, 4, 1);
    CHECK(!p.drawn);
    progress_clear(&p);
    /* Enabled, it draws and erases (on a stderr sent to a file here). */
    char path[512];
    snprintf(path, sizeof path, "%s/stderr", test_tmpdir());
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    progress_init(&p, 1);
    progress_update(&p, 1, 1, 1, 4, 1);
    int drawn = p.drawn;
    progress_update(&p, 1, 2, 1, 4, 0); /* within 100 ms: skipped */
    progress_clear(&p);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    CHECK(drawn);
    CHECK(!p.drawn);
    char buf[512] = {0};
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    CHECK(n > 0 && buf[0] == '\r');
    CHECK(strstr(buf, "[Stage 1:") == buf + 1);
    CHECK(strstr(buf, "(1 + 1) / 4]") != NULL);
    CHECK(strstr(buf, "(2 + 1) / 4]") == NULL);
    CHECK(buf[n - 1] == '\r');
}
