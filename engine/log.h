/*
 * log.h -- one line per event, for the daemons and the driver's cluster
 * code: a timestamp, a level, the component, the message.  Written to
 * stderr with one write(2) per line, so lines of several threads never
 * interleave.  The level comes from ember.log.level (error, warn, info,
 * debug; default info).
 */
#ifndef EM_LOG_H
#define EM_LOG_H

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* The level from its name ("info"); -1 for an unknown name. */
int log_level_parse(const char *name);
void log_set_level(int level);
int log_enabled(int level);
void log_msg(int level, const char *component, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
