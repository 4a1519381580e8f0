/*
 * progress.c -- the console progress line (see progress.h), drawn the way
 * Spark's ConsoleProgressBar draws it:
 *     [Stage 3:=========>                    (12 + 2) / 40]
 * The bar has as many cells as the terminal's width leaves after the text:
 * the first cells*done/total are '=', the next is '>' while the stage is not
 * complete, the rest are spaces; the counts follow the bar directly.
 *
 * When to draw.  As in Spark, a stage is drawn only once it has run
 * PROGRESS_FIRST_DELAY (500 ms): a job of short stages, such as one
 * iteration of an optimizer, never draws, so it does not flicker or leave
 * lines behind.  The scheduler reports the running stage after each task
 * result (and once as the job starts), so a stage's start is when it was
 * first reported, never earlier than its real start: a stage may be drawn
 * a little later than Spark would draw it, never sooner.  Redraws are then
 * rate-limited to one per PROGRESS_INTERVAL (200 ms, Spark's default
 * spark.ui.consoleProgress.update.interval) so that a stage of many tiny
 * tasks does not spend its time writing to the terminal.
 *
 * Width.  The line takes at most the terminal's width less one column
 * (writing the last column makes some terminals wrap at once), the width
 * read at each draw so that a resized terminal is followed: ioctl
 * TIOCGWINSZ on stderr, else $COLUMNS, else 80.  A redraw pads with spaces
 * only up to what the previous line covered, and erasing writes that many
 * spaces, so a narrow terminal is never filled with wrapped padding.
 *
 * Whether to draw at all (ember.progress: auto means isatty(2)) is the
 * caller's decision, made at progress_init.  Write errors on stderr are
 * ignored: the bar is a courtesy, never a reason to fail a job.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

#define PROGRESS_MAX_LINE 1024 /* longest line drawn, whatever the width */

static double now_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int progress_columns(void) {
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    const char *c = getenv("COLUMNS");
    if (c && *c) {
        char *end;
        long n = strtol(c, &end, 10);
        if (!*end && n > 0 && n < 100000) return (int)n;
    }
    return 80;
}

void progress_init(progress *p, int enabled) {
    memset(p, 0, sizeof *p);
    p->enabled = enabled;
    p->now = now_mono;
    p->stage = -1;
}

void progress_format(char *buf, size_t len, int columns, int stage, int done, int running, int total) {
    if (!buf || !len) return;
    char head[32], tail[64];
    int avail = columns - 1;
    int hl = snprintf(head, sizeof head, "[Stage %d:", stage);
    int tl = snprintf(tail, sizeof tail, "(%d + %d) / %d]", done, running, total);
    buf[0] = 0;
    if (hl < 0 || tl < 0) return;
    if (hl + tl > avail) { /* no room for the stage: the counts alone, or nothing */
        tail[--tl] = 0;    /* without the ']' */
        if (tl <= avail) snprintf(buf, len, "%s", tail);
        return;
    }
    int cells = avail - hl - tl;
    int d = done < 0 ? 0 : (total > 0 && done > total ? total : done);
    int filled = total > 0 ? (int)((long long)cells * d / total) : cells;
    size_t pos = (size_t)snprintf(buf, len, "%s", head);
    if (pos >= len) return; /* truncated */
    for (int i = 0; i < cells && pos + 1 < len; i++) buf[pos++] = i < filled ? '=' : (i == filled ? '>' : ' ');
    if (pos < len) {
        buf[pos] = 0;
        snprintf(buf + pos, len - pos, "%s", tail);
    }
}

static void put(progress *p, const char *s) {
    FILE *f = p->out ? p->out : stderr;
    fputs(s, f);
    fflush(f);
}

/* "\r" + n spaces + "\r": erase what the last line covered. */
static void erase(progress *p, int n) {
    char line[PROGRESS_MAX_LINE + 3];
    if (n > PROGRESS_MAX_LINE) n = PROGRESS_MAX_LINE;
    line[0] = '\r';
    memset(line + 1, ' ', (size_t)n);
    line[n + 1] = '\r';
    line[n + 2] = 0;
    put(p, line);
}

void progress_update(progress *p, int stage, int done, int running, int total, int force) {
    if (!p || !p->enabled) return;
    double t = p->now ? p->now() : now_mono();
    if (stage != p->stage) { /* a new stage: its clock starts; the old line goes */
        progress_clear(p);
        p->stage = stage;
        p->stage_since = t;
    }
    if (t - p->stage_since < PROGRESS_FIRST_DELAY) return;
    if (!force && p->drawn && t - p->last_draw < PROGRESS_INTERVAL) return;
    int columns = p->columns > 0 ? p->columns : progress_columns();
    if (columns > PROGRESS_MAX_LINE + 1) columns = PROGRESS_MAX_LINE + 1;
    char line[PROGRESS_MAX_LINE + 2];
    line[0] = '\r';
    progress_format(line + 1, sizeof line - 1, columns, stage, done, running, total);
    int n = (int)strlen(line + 1);
    /* Cover the previous line's tail, but never past the width (a terminal
     * made narrower since would wrap the padding). */
    int pad = p->drawn < columns - 1 ? p->drawn : columns - 1;
    while (n < pad) line[1 + n++] = ' ';
    line[1 + n] = 0;
    p->last_draw = t;
    if (n == 0) { /* too narrow for anything */
        progress_clear(p);
        return;
    }
    put(p, line);
    p->drawn = n;
}

void progress_clear(progress *p) {
    if (!p || !p->drawn) return;
    erase(p, p->drawn);
    p->drawn = 0;
}
