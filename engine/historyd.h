/*
 * historyd.h -- bin/ember-history-server, the history server (Spark's
 * HistoryServer): the UI and /api/v1 of every application whose event log
 * is in a directory, finished or still running, ember's or Apache
 * Spark's (history.h), on port 18080.  It looks at the directory again
 * every ember.history.fs.update.interval (10 s).
 */
#ifndef EM_HISTORYD_H
#define EM_HISTORYD_H

/* The daemon's main: parses argv (--help lists the options), serves until
 * SIGTERM or SIGINT.  Returns the exit status: 0, 1 (it could not start:
 * the message on stderr names why), 2 (a bad argument). */
int historyd_main(int argc, char **argv);

#endif
