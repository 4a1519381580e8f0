/*
 * progress.c -- the console progress line (see progress.h), drawn the way
 * Spark's ConsoleProgressBar draws it:
 *     [Stage 3:=========>                    (12 + 2) / 40]
 * The bar has `width` cells: the first width*done/total are '=', the next is
 * '>' while the stage is not complete, the rest are spaces; the counts follow
 * the bar directly, as in Spark.
 *
 * The line is redrawn in place with "\r", padded with spaces to a fixed
 * number of columns so that a shorter line (a count losing a digit) leaves
 * no stale characters, and erased with "\r", spaces, "\r".  Redraws are
 * rate-limited to one per 100 ms on CLOCK_MONOTONIC so a stage of many tiny
 * tasks does not spend its time writing to the terminal.  Whether to draw at
 * all (ember.progress: auto means isatty(2)) is the caller's decision, made
 * once at progress_init.  Write errors on stderr are ignored: the bar is a
 * courtesy, never a reason to fail a job.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "progress.h"

#define PROGRESS_WIDTH 40    /* bar cells, leaving room for the counts in 80 columns */
#define PROGRESS_COLUMNS 79  /* lines are padded to this many columns */
#define PROGRESS_INTERVAL 0.1

static double now_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void progress_init(progress *p, int enabled) {
    memset(p, 0, sizeof *p);
    p->enabled = enabled;
    p->width = PROGRESS_WIDTH;
    p->last_draw = -1e9; /* the first update draws at once */
}

/* Out-of-range counts are clamped (done to [0, total]); total <= 0 draws a
 * full bar.  Truncates to len - 1 characters like snprintf. */
void progress_format(char *buf, size_t len, int width, int stage, int done, int running, int total) {
    if (!buf || !len) return;
    if (width < 0) width = 0;
    int d = done < 0 ? 0 : (total > 0 && done > total ? total : done);
    int filled = total > 0 ? (int)((long long)width * d / total) : width;
    size_t pos = 0;
    int n = snprintf(buf, len, "[Stage %d:", stage);
    if (n < 0) { buf[0] = 0; return; }
    pos = (size_t)n;
    for (int i = 0; i < width && pos + 1 < len; i++)
        buf[pos++] = i < filled ? '=' : (i == filled ? '>' : ' ');
    if (pos < len) {
        buf[pos] = 0;
        snprintf(buf + pos, len - pos, "(%d + %d) / %d]", done, running, total);
    }
}

static void write_line(const char *s) {
    fputs(s, stderr);
    fflush(stderr);
}

void progress_update(progress *p, int stage, int done, int running, int total, int force) {
    if (!p || !p->enabled) return;
    double t = now_mono();
    if (!force && t - p->last_draw < PROGRESS_INTERVAL) return;
    char line[512];
    line[0] = '\r';
    progress_format(line + 1, sizeof line - 1, p->width, stage, done, running, total);
    size_t n = strlen(line);
    while (n < PROGRESS_COLUMNS + 1 && n + 1 < sizeof line) line[n++] = ' ';
    line[n] = 0;
    write_line(line);
    p->last_draw = t;
    p->drawn = 1;
}

void progress_clear(progress *p) {
    if (!p || !p->drawn) return;
    char line[PROGRESS_COLUMNS + 3];
    line[0] = '\r';
    memset(line + 1, ' ', PROGRESS_COLUMNS);
    line[PROGRESS_COLUMNS + 1] = '\r';
    line[PROGRESS_COLUMNS + 2] = 0;
    write_line(line);
    p->drawn = 0;
}
