/*
 * conf.h -- configuration: the table of known keys with their types, allowed
 * ranges and defaults, the value parsers, and typed getters.  The public
 * em_conf_* functions are implemented in conf.c.
 *
 * An em_conf is a small list of (key, value) strings.  Only keys of the
 * table (conf.c) are accepted, and only values their type allows: a value is
 * checked when it is set, so a stored value always parses and the getters
 * never fall back to anything.  Reading a key not set gives its default.
 */
#ifndef EM_CONF_H
#define EM_CONF_H

#include <stdint.h>

#include "codec.h"
#include "ember.h"

/* What a key's value is.  The syntax of each is in docs/configuration.md. */
enum conf_type {
    CONF_STRING,   /* any non-empty string */
    CONF_INT,      /* a whole number, optionally negative, in [min, max] */
    CONF_SIZE,     /* bytes: a whole number with an optional k/m/g/t suffix */
    CONF_DURATION, /* milliseconds: a whole number with an optional ms/s/m/h */
    CONF_BOOL,     /* true or false */
    CONF_ENUM,     /* one of choices */
    CONF_FAULTS,   /* a fault-injection spec (faults.h); empty: none */
    CONF_DOUBLE,   /* a finite decimal number in [dmin, dmax] */
};

/* One key of the table. */
typedef struct conf_spec {
    const char *key, *def;
    enum conf_type type;
    int64_t min, max;            /* INT, SIZE (bytes), DURATION (ms): inclusive */
    int64_t unit_ms;             /* DURATION: what a bare number counts, 1 or 1000 */
    const char *const *choices;  /* ENUM: NULL-terminated, matched in any case */
    const char *why_min, *why_max; /* optional reasons, appended to range messages */
    double dmin, dmax;           /* DOUBLE: inclusive */
} conf_spec;

/* The table entry of key, or NULL for an unknown key (or NULL). */
const conf_spec *conf_lookup(const char *key);
/* Whether key is in the table. */
int conf_known(const char *key);

/* Whether value is allowed for k.  0, or EM_EINVAL with a message naming the
 * key, the value and what is allowed. */
int conf_check(const conf_spec *k, const char *value);
/* conf_check every value set in c (a NULL conf has none).  0 or EM_EINVAL as
 * above, for the first bad value.  em_open calls it on its copy. */
int conf_validate(const em_conf *c);

/* A copy of c (a NULL conf: a new empty one).  Values are copied unchecked.
 * NULL (message set) when out of memory. */
em_conf *conf_dup(const em_conf *c);
/* Set the KEY=VALUE lines of environment variable var (ember-submit's
 * $EMBER_CONF; '#' lines are skipped).  A line "#from ORIGIN" names where
 * the setting on the next line came from (ember-submit writes the flag as
 * the user typed it, or the file and its line).  0, or EM_EINVAL naming
 * the origin of the bad line, else $var and the line's number. */
int conf_from_env(em_conf *c, const char *var);
/* A daemon's --conf argument "KEY=VALUE": em_conf_set's checks.  0, or
 * EM_EINVAL with the message. */
int conf_set_arg(em_conf *c, const char *kv);
/* Whether key was set (not only its default). */
int conf_is_set(const em_conf *c, const char *key);
/* The KEY=VALUE lines (conf_from_env's format) of every key c sets, but
 * ember.authenticate.* and values holding a newline: the settings a driver
 * hands its executors.  A malloc'd string, or NULL (message set). */
char *conf_lines(const em_conf *c);
/* Call fn(arg, key, value) for every key c sets, in the order set. */
void conf_each(const em_conf *c, void (*fn)(void *arg, const char *key, const char *value), void *arg);
/* Whether key's value is hidden wherever settings are shown (the UI's
 * Environment page, the event log): keys matching Spark's
 * spark.redaction.regex default, (?i)secret|password|token|access[.]?key. */
int conf_redacted(const char *key);
/* What is shown instead of a hidden value (Spark's text). */
#define CONF_REDACTED "*********(redacted)"
/* Every key src sets, set in dst too (src's values win).  0 or EM_ENOMEM. */
int conf_merge(em_conf *dst, const em_conf *src);

/* Parsers.  Each skips blanks around the text and returns 0 with *out set,
 * -1 when the text is not of the type, or 1 when it is but its magnitude
 * exceeds INT64_MAX (*out is then INT64_MAX, or INT64_MIN for a negative
 * integer).
 *   conf_parse_int       "-12", "7"
 *   conf_parse_size      "512", "64k", "64KB", "8mb", "1g", "2t", "100b":
 *                        binary multiples, any case; no sign, no fraction
 *   conf_parse_duration  "250ms", "3s", "5m", "5min", "1h", any case; a bare
 *                        number counts unit_ms milliseconds; *out in ms
 *   conf_parse_bool      "true" or "false", any case (*out 1 or 0) */
int conf_parse_int(const char *s, int64_t *out);
int conf_parse_size(const char *s, int64_t *out);
int conf_parse_duration(const char *s, int64_t unit_ms, int64_t *out);
int conf_parse_bool(const char *s, int *out);
/* "3", "0.9", "1e-3", "-2.5": a finite number in C's decimal syntax (no
 * hex, inf or nan), blanks around it ignored.  0 or -1. */
int conf_parse_double(const char *s, double *out);

/* Typed reads of the value set, else the default.  Calling one for an
 * unknown key or a key of another type is a bug, caught by EM_ASSERT.
 * conf_i64 reads any numeric key: an int, a size in bytes, a duration in
 * milliseconds. */
int64_t conf_i64(const em_conf *c, const char *key);
int64_t conf_size(const em_conf *c, const char *key);
int64_t conf_duration_ms(const em_conf *c, const char *key);
int conf_bool(const em_conf *c, const char *key);
double conf_double(const em_conf *c, const char *key);
/* The codec of shuffle and spill blocks that ember.io.compression.codec
 * names, with its level: ember.shuffle.compress.level for zlib,
 * ember.io.compression.zstd.level for zstd. */
bf_codec conf_codec(const em_conf *c);
/* The same for another setting of codec_choices (the levels are the same
 * settings): ember.shuffle.inMemoryOutput.codec. */
bf_codec conf_codec_of(const em_conf *c, const char *key);

#endif
