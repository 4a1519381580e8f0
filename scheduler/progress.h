/*
 * progress.h -- the console progress line, as Spark draws it:
 *     [Stage 3:=====>                  (12 + 2) / 40]
 * drawn on stderr with a carriage return, at most every 100 ms, only when
 * enabled (ember.progress: auto = stderr is a terminal), and erased when the
 * stage ends.  It only formats and writes; the scheduler tells it the counts.
 */
#ifndef EM_PROGRESS_H
#define EM_PROGRESS_H

#include <stddef.h>

typedef struct progress {
    int enabled;
    int width;          /* bar width in characters */
    double last_draw;   /* monotonic seconds */
    int drawn;          /* a line is on screen */
} progress;

void progress_init(progress *p, int enabled);
/* Format the line into buf (no \r): "[Stage S:===>   (done + running) / total]". */
void progress_format(char *buf, size_t len, int width, int stage, int done, int running, int total);
/* Redraw if enabled and 100 ms passed since the last draw (or force). */
void progress_update(progress *p, int stage, int done, int running, int total, int force);
/* Erase the line if drawn. */
void progress_clear(progress *p);

#endif
