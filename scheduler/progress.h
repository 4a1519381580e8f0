/*
 * progress.h -- the console progress line, as Spark's ConsoleProgressBar
 * draws it:
 *     [Stage 3:=====>                  (12 + 2) / 40]
 * on stderr with a carriage return, only when enabled (ember.progress: auto
 * = stderr is a terminal), only for a stage that has run 500 ms, at most
 * every 200 ms, as wide as the terminal less one column, and erased when
 * the stage or the job ends.  It only formats and writes; the scheduler
 * tells it the counts.
 */
#ifndef EM_PROGRESS_H
#define EM_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

#define PROGRESS_FIRST_DELAY 0.5 /* s a stage runs before it is drawn (Spark: firstDelayMSec) */
#define PROGRESS_INTERVAL 0.2    /* s between redraws at most (Spark: consoleProgress.update.interval) */

typedef struct progress {
    int enabled;
    /* Injectable for tests; progress_init sets the defaults. */
    int columns;            /* terminal width; 0: ask stderr's terminal at each draw */
    double (*now)(void);    /* monotonic seconds; CLOCK_MONOTONIC by default */
    FILE *out;              /* stderr by default */
    /* State. */
    int stage;              /* the stage last reported, -1 none */
    double stage_since;     /* when it was first reported */
    double last_draw;
    int drawn;              /* characters of the line on screen, 0 none */
} progress;

/* Start a job's progress: nothing drawn, no stage seen. */
void progress_init(progress *p, int enabled);
/* The terminal's width: ioctl(TIOCGWINSZ) on stderr, else $COLUMNS, else 80. */
int progress_columns(void);
/* Format into buf (no \r) the line for a terminal of `columns` columns:
 * "[Stage S:" + bar + "(done + running) / total]" in at most columns - 1
 * characters (writing the last column makes some terminals wrap), the bar
 * taking what the text leaves, as in Spark.  Too narrow for a bar: the text
 * alone; too narrow for that: "(done + running) / total"; too narrow for
 * that: "" (nothing to draw).  Truncates to len - 1 characters like
 * snprintf. */
void progress_format(char *buf, size_t len, int columns, int stage, int done, int running, int total);
/* Report the counts of the stage now running.  Draws if enabled, the stage
 * was first reported PROGRESS_FIRST_DELAY ago or more, and the last draw is
 * PROGRESS_INTERVAL old (or force).  A new stage erases the old one's line. */
void progress_update(progress *p, int stage, int done, int running, int total, int force);
/* Erase the line if drawn. */
void progress_clear(progress *p);

#endif
