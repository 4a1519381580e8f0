/*
 * conf.c -- configuration (see conf.h and the em_conf_* functions in
 * ember.h): the one table of known keys with their defaults, a small
 * key/value list per em_conf, and typed getters.
 *
 * The table below is the single place a key is declared; docs/configuration.md
 * and the comment above em_conf_new in ember.h list the same keys and
 * defaults and must be kept in step with it.  Values are stored as strings
 * and parsed when read, so em_conf_set never rejects a value, only a key; a
 * malformed value reads as the key's default (conf_i64, conf_bool), which
 * keeps a typo from failing a job mid-way.
 *
 * An em_conf is not synchronised: the context copies the caller's conf at
 * em_open (conf_dup) and changes its own copy only from the driver thread.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf.h"
#include "ember.h"
#include "err.h"

static const struct conf_key {
    const char *key;
    const char *def;
} conf_keys[] = {
    {"ember.master", "local[*]"},
    {"ember.app.name", "ember"},
    /* "0" stands for "the number of executor cores": the real default
     * depends on the master, so the context substitutes it when it reads
     * the key. */
    {"ember.default.parallelism", "0"},
    {"ember.task.maxFailures", "4"},
    {"ember.record.maxBytes", "67108864"},
    {"ember.shuffle.memoryBytes", "67108864"},
    {"ember.shuffle.blockBytes", "65536"},
    {"ember.shuffle.compress.level", "1"},
    {"ember.files.maxPartitionBytes", "33554432"},
    {"ember.local.dir", "/tmp"},
    /* auto: draw the bar only when stderr is a terminal; true; false. */
    {"ember.progress", "auto"},
};
#define NKEYS (sizeof conf_keys / sizeof conf_keys[0])

struct em_conf {
    struct conf_kv { char *key, *val; } *v; /* keys set, in first-set order */
    size_t n, cap;
};

static const struct conf_key *lookup(const char *key) {
    if (!key) return NULL;
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(conf_keys[i].key, key) == 0) return &conf_keys[i];
    return NULL;
}

int conf_known(const char *key) { return lookup(key) != NULL; }

em_conf *em_conf_new(void) {
    em_conf *c = calloc(1, sizeof *c);
    if (!c) em__seterr(EM_ENOMEM, "em_conf_new: out of memory");
    return c;
}

void em_conf_free(em_conf *c) {
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].key);
        free(c->v[i].val);
    }
    free(c->v);
    free(c);
}

/* Setting a key already set replaces its value in place.  On EM_ENOMEM the
 * conf is unchanged. */
int em_conf_set(em_conf *c, const char *key, const char *value) {
    if (!c || !key || !value) return em__seterr(EM_EINVAL, "em_conf_set: NULL argument");
    if (!lookup(key)) return em__seterr(EM_EINVAL, "unknown configuration key: %s", key);
    char *nv = strdup(value);
    if (!nv) return em__seterr(EM_ENOMEM, "em_conf_set: out of memory");
    for (size_t i = 0; i < c->n; i++) {
        if (strcmp(c->v[i].key, key) == 0) {
            free(c->v[i].val);
            c->v[i].val = nv;
            return 0;
        }
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        struct conf_kv *v = realloc(c->v, cap * sizeof *v);
        if (!v) { free(nv); return em__seterr(EM_ENOMEM, "em_conf_set: out of memory"); }
        c->v = v;
        c->cap = cap;
    }
    char *nk = strdup(key);
    if (!nk) { free(nv); return em__seterr(EM_ENOMEM, "em_conf_set: out of memory"); }
    c->v[c->n].key = nk;
    c->v[c->n].val = nv;
    c->n++;
    return 0;
}

/* The value set, else the default; NULL for an unknown key.  A NULL conf
 * reads the defaults.  The string belongs to the conf (or the table) and
 * stays valid until the key is set again or the conf is freed. */
const char *em_conf_get(const em_conf *c, const char *key) {
    const struct conf_key *k = lookup(key);
    if (!k) return NULL;
    if (c)
        for (size_t i = 0; i < c->n; i++)
            if (strcmp(c->v[i].key, key) == 0) return c->v[i].val;
    return k->def;
}

/* Returns NULL (message set) when out of memory. */
em_conf *conf_dup(const em_conf *c) {
    em_conf *d = em_conf_new();
    if (!d || !c) return d;
    for (size_t i = 0; i < c->n; i++) {
        if (em_conf_set(d, c->v[i].key, c->v[i].val) != 0) {
            em_conf_free(d);
            return NULL;
        }
    }
    return d;
}

/* Parse "123", "-5", "64k", "32M", "1g" (binary multiples).  Returns 0 and
 * sets *out, or -1 for anything else (empty, junk, overflow). */
static int parse_i64(const char *s, int64_t *out) {
    if (!s) return -1;
    while (isspace((unsigned char)*s)) s++;
    if (!*s) return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno == ERANGE) return -1;
    int shift = 0;
    switch (tolower((unsigned char)*end)) {
    case 'k': shift = 10; end++; break;
    case 'm': shift = 20; end++; break;
    case 'g': shift = 30; end++; break;
    default: break;
    }
    while (isspace((unsigned char)*end)) end++;
    if (*end) return -1;
    if (shift) {
        long long lim = INT64_MAX >> shift;
        if (v > lim || v < -lim) return -1;
        v *= 1LL << shift;
    }
    *out = (int64_t)v;
    return 0;
}

/* A malformed value reads as the default; a key whose default is not a
 * number (ember.master), or an unknown key, reads as 0. */
int64_t conf_i64(const em_conf *c, const char *key) {
    const struct conf_key *k = lookup(key);
    if (!k) return 0;
    int64_t v;
    if (parse_i64(em_conf_get(c, key), &v) == 0) return v;
    if (parse_i64(k->def, &v) == 0) return v;
    return 0;
}

/* 1 for true/1/yes/on, 0 for false/0/no/off (any case); anything else reads
 * as the default, and a default that is neither (ember.progress's "auto")
 * as 0 -- callers of such keys read the string themselves. */
static int parse_bool(const char *s) {
    if (!s) return -1;
    if (!strcasecmp(s, "true") || !strcmp(s, "1") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))
        return 1;
    if (!strcasecmp(s, "false") || !strcmp(s, "0") || !strcasecmp(s, "no") || !strcasecmp(s, "off"))
        return 0;
    return -1;
}

int conf_bool(const em_conf *c, const char *key) {
    const struct conf_key *k = lookup(key);
    if (!k) return 0;
    int b = parse_bool(em_conf_get(c, key));
    if (b < 0) b = parse_bool(k->def);
    return b > 0;
}
