/*
 * conf.h -- configuration: the table of known keys with their defaults, and
 * typed getters.  The public em_conf_* functions are implemented here.
 *
 * An em_conf is a small list of (key, value) strings.  Only keys of the
 * table (conf.c) are accepted; reading a key not set gives its default.
 */
#ifndef EM_CONF_H
#define EM_CONF_H

#include <stdint.h>

#include "ember.h"

em_conf *conf_dup(const em_conf *c); /* NULL conf: a new empty one */
/* Typed reads; a malformed value reads as the default. */
int64_t conf_i64(const em_conf *c, const char *key);
int conf_bool(const em_conf *c, const char *key); /* "true"/"1"/"yes" */
/* Whether key is in the table. */
int conf_known(const char *key);

#endif
