/*
 * history.c -- an event log directory's applications (see history.h): a
 * list of logs with their listing and, for the recently used, their
 * stores; scans that load what is new or changed; a provider that lends
 * stores to readers and takes them back.
 *
 * A store is replaced while a reader may hold it: the old one moves to
 * the retired list and is freed when the last reader gives it back.  The
 * store of a single log file in progress keeps the reader that loaded it,
 * following the file: when the file grows, the scan reads on from where the
 * reader stopped, into the same store, instead of loading it all again.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ember.h"
#include "err.h"
#include "eventlog_reader.h"
#include "history.h"
#include "log.h"

typedef struct happ {
    char *name, *path;          /* the entry in the directory, and its path */
    int64_t size, mtime_ns;     /* as last loaded */
    /* The listing, copied from the store when loaded */
    char *id, *app_name, *attempt, *user, *version;
    int64_t start_ms, end_ms, last_ms;
    status_store *st;           /* NULL: not loaded now */
    evlog_reader *follow;       /* st's reader, at the end of a log in
                                   progress it reads on (NULL: none) */
    int64_t ino;                /* the followed file's inode */
    int lent;                   /* of st: acquired, not yet released */
    uint64_t used;              /* when last acquired or loaded (h->tick) */
    uint8_t seen;               /* by the current scan */
    struct happ *next;
} happ;

typedef struct retired {
    status_store *st;
    int lent;
    struct retired *next;
} retired;

struct history {
    char *dir;
    status_limits lim;
    int retained;
    pthread_mutex_t mu;
    happ *apps;
    retired *old;
    uint64_t tick;
    int64_t loads, appends;     /* history_counts */
};

history *history_new(const history_conf *c) {
    history *h = calloc(1, sizeof *h);
    if (!h || !(h->dir = strdup(c->dir))) {
        free(h);
        em__seterr(EM_ENOMEM, "history: out of memory");
        return NULL;
    }
    h->lim = c->lim;
    h->retained = c->retained_apps > 0 ? c->retained_apps : HISTORY_RETAINED_APPS;
    pthread_mutex_init(&h->mu, NULL);
    return h;
}

/* Read r's events into st up to the log's end (for now, when r follows
 * it).  Corrupt lines are skipped and counted in *nbad.  0 or < 0. */
static int feed(evlog_reader *r, status_store *st, int64_t *nbad) {
    for (;;) {
        app_event *e;
        int rc = evlog_reader_next(r, &e);
        if (rc == 1) {
            status_on_event(st, e);
            app_event_free(e);
            continue;
        }
        if (rc == EM_ECORRUPT) { /* skip the line: the reader goes on after it */
            if (!(*nbad)++) log_msg(LOG_WARN, "history", "%s (later bad lines are counted, not shown)", em_errmsg());
            continue;
        }
        return rc;
    }
}

/* history_load; with follow, *follow is the reader when the log is a
 * single file in progress (evlog_reader_follow), else NULL. */
static int load(const char *path, const status_limits *lim, status_store **out, int64_t *bad, evlog_reader **follow) {
    *out = NULL;
    if (bad) *bad = 0;
    if (follow) *follow = NULL;
    evlog_reader *r;
    int rc = evlog_reader_open(path, &r);
    if (rc) return rc;
    status_store *st = status_new(lim);
    if (!st) {
        evlog_reader_close(r);
        return EM_ENOMEM;
    }
    int following = follow && evlog_reader_follow(r) == 0;
    int64_t nbad = 0;
    rc = feed(r, st, &nbad);
    if (bad) *bad = nbad;
    if (rc < 0) {
        evlog_reader_close(r);
        status_free(st);
        return rc;
    }
    if (following) *follow = r;
    else evlog_reader_close(r);
    if (nbad) log_msg(LOG_WARN, "history", "%s: %lld corrupt lines skipped", path, (long long)nbad);
    *out = st;
    return 0;
}

int history_load(const char *path, const status_limits *lim, status_store **out, int64_t *bad) {
    return load(path, lim, out, bad, NULL);
}

/* ---------------------------------------------------------- the listing */

static void info_clear(happ *a) {
    free(a->id);
    free(a->app_name);
    free(a->attempt);
    free(a->user);
    free(a->version);
    a->id = a->app_name = a->attempt = a->user = a->version = NULL;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* a's listing from st (the file name stands for a missing id). */
static void info_take(happ *a, status_store *st) {
    info_clear(a);
    status_rdlock(st);
    const status_app *i = status_app_info(st);
    a->id = strdup(i->id ? i->id : a->name);
    a->app_name = dup_or_null(i->name);
    a->attempt = dup_or_null(i->attempt_id);
    a->user = dup_or_null(i->user);
    a->version = dup_or_null(i->version);
    a->start_ms = i->start_ms;
    a->end_ms = i->end_ms;
    a->last_ms = i->last_ms;
    status_unlock(st);
}

/* Give up a's store: freed, or retired while lent.  Under h->mu. */
static void drop_store(history *h, happ *a) {
    evlog_reader_close(a->follow);
    a->follow = NULL;
    if (!a->st) return;
    if (a->lent) {
        retired *r = malloc(sizeof *r);
        if (!r) return; /* kept: leaked to the reader rather than freed under it */
        r->st = a->st;
        r->lent = a->lent;
        r->next = h->old;
        h->old = r;
    } else {
        status_free(a->st);
    }
    a->st = NULL;
    a->lent = 0;
}

/* Free the least recently used stores nobody holds beyond the limit.
 * Under h->mu. */
static void evict(history *h) {
    for (;;) {
        int loaded = 0;
        happ *lru = NULL;
        for (happ *a = h->apps; a; a = a->next) {
            if (!a->st) continue;
            loaded++;
            if (!a->lent && (!lru || a->used < lru->used)) lru = a;
        }
        if (loaded <= h->retained || !lru) return;
        drop_store(h, lru);
    }
}

/* ---------------------------------------------------------------- scans */

/* The size and modification time of a log: a file's, or the sum of the
 * sizes and the latest time of a rolling directory's files.  0 or -1. */
static int log_stat(const char *path, int is_dir, int64_t *size, int64_t *mtime) {
    struct stat sb;
    if (stat(path, &sb)) return -1;
    *size = sb.st_size;
    *mtime = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    if (!is_dir) return 0;
    DIR *d = opendir(path);
    if (!d) return -1;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (snprintf(p, sizeof p, "%s/%s", path, e->d_name) >= (int)sizeof p || stat(p, &sb)) continue;
        *size += sb.st_size;
        int64_t t = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
        if (t > *mtime) *mtime = t;
    }
    closedir(d);
    return 0;
}

static happ *find_name(history *h, const char *name) {
    for (happ *a = h->apps; a; a = a->next)
        if (!strcmp(a->name, name)) return a;
    return NULL;
}

static void happ_free(happ *a) {
    evlog_reader_close(a->follow);
    info_clear(a);
    free(a->name);
    free(a->path);
    free(a);
}

static void p_release(void *ud, status_store *st);

/* a's log in progress grew and its store follows it: read on into the
 * store (lent to this scan meanwhile, so that no eviction frees it).  1
 * when done, 0 when the log must be loaded again whole.  Called and
 * returns under h->mu. */
static int read_on(history *h, happ *a, int64_t size, int64_t mtime) {
    status_store *st = a->st;
    evlog_reader *r = a->follow;
    char *name = strdup(a->name);
    if (!name) return 0;
    a->follow = NULL;
    a->lent++;
    pthread_mutex_unlock(&h->mu);
    int64_t nbad = 0;
    int rc = feed(r, st, &nbad);
    if (rc < 0) log_msg(LOG_WARN, "history", "cannot read on in %s/%s: %s", h->dir, name, em_errmsg());
    pthread_mutex_lock(&h->mu);
    a = find_name(h, name);
    free(name);
    int kept = rc >= 0 && a && a->st == st && !a->follow;
    if (kept) {
        a->follow = r;
        a->size = size;
        a->mtime_ns = mtime;
        a->used = ++h->tick;
        info_take(a, st);
        h->appends++;
    }
    pthread_mutex_unlock(&h->mu);
    if (!kept) evlog_reader_close(r);
    p_release(h, st);
    pthread_mutex_lock(&h->mu);
    return kept;
}

/* Look at one entry of the directory: 1 when it was loaded (again) or read
 * on, 0 when unchanged or not a log. */
static int scan_entry(history *h, const char *name) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", h->dir, name) >= (int)sizeof path) return 0;
    struct stat sb;
    if (stat(path, &sb)) return 0;
    int is_dir = S_ISDIR(sb.st_mode);
    if (is_dir ? strncmp(name, "eventlog_v2_", 12) != 0 : !S_ISREG(sb.st_mode)) return 0;
    int64_t size, mtime;
    if (log_stat(path, is_dir, &size, &mtime)) return 0;
    pthread_mutex_lock(&h->mu);
    happ *a = find_name(h, name);
    if (a) a->seen = 1;
    int same = a && a->size == size && a->mtime_ns == mtime, grown = 0;
    if (!same && a && a->st && a->follow && a->ino == (int64_t)sb.st_ino && size >= a->size)
        grown = read_on(h, a, size, mtime);
    pthread_mutex_unlock(&h->mu);
    if (same || grown) return grown;

    status_store *st;
    evlog_reader *follow = NULL;
    int rc = load(path, &h->lim, &st, NULL, &follow);
    if (rc) {
        log_msg(LOG_WARN, "history", "cannot load %s: %s", path, em_errmsg());
        st = NULL;
    }
    pthread_mutex_lock(&h->mu);
    a = find_name(h, name);
    if (!a) {
        a = calloc(1, sizeof *a);
        if (!a || !(a->name = strdup(name)) || !(a->path = strdup(path))) {
            if (a) happ_free(a);
            pthread_mutex_unlock(&h->mu);
            status_free(st);
            evlog_reader_close(follow);
            return 0;
        }
        a->next = h->apps;
        h->apps = a;
    }
    a->seen = 1;
    a->size = size;
    a->mtime_ns = mtime;
    drop_store(h, a);
    if (st) {
        info_take(a, st);
        a->st = st;
        a->follow = follow;
        a->ino = (int64_t)sb.st_ino;
        a->used = ++h->tick;
        h->loads++;
    } else if (!a->id) {
        a->id = strdup(name); /* listed, so that the failure shows */
    }
    evict(h);
    pthread_mutex_unlock(&h->mu);
    return st != NULL;
}

int history_scan(history *h) {
    DIR *d = opendir(h->dir);
    if (!d)
        return em__seterr(errno == ENOENT ? EM_ENOENT : EM_EIO,
                          "history: the log directory %s (ember.history.fs.logDirectory): %s", h->dir,
                          strerror(errno));
    pthread_mutex_lock(&h->mu);
    for (happ *a = h->apps; a; a = a->next) a->seen = 0;
    pthread_mutex_unlock(&h->mu);
    int loaded = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        loaded += scan_entry(h, e->d_name);
    }
    closedir(d);
    /* Logs gone from the directory go from the listing. */
    pthread_mutex_lock(&h->mu);
    for (happ **pp = &h->apps; *pp;) {
        happ *a = *pp;
        if (a->seen) {
            pp = &a->next;
            continue;
        }
        *pp = a->next;
        drop_store(h, a);
        happ_free(a);
    }
    pthread_mutex_unlock(&h->mu);
    return loaded;
}

void history_counts(history *h, int64_t *loads, int64_t *appends) {
    pthread_mutex_lock(&h->mu);
    *loads = h->loads;
    *appends = h->appends;
    pthread_mutex_unlock(&h->mu);
}

int history_count(history *h) {
    int n = 0;
    pthread_mutex_lock(&h->mu);
    for (happ *a = h->apps; a; a = a->next) n++;
    pthread_mutex_unlock(&h->mu);
    return n;
}

/* ------------------------------------------------------------- provider */

static int newest_first(const void *x, const void *y) {
    const happ *a = *(happ *const *)x, *b = *(happ *const *)y;
    if (a->start_ms != b->start_ms) return a->start_ms < b->start_ms ? 1 : -1;
    int c = strcmp(a->id ? a->id : "", b->id ? b->id : "");
    if (c) return c;
    return strcmp(b->attempt ? b->attempt : "", a->attempt ? a->attempt : "");
}

static void p_each(void *ud, void (*fn)(void *arg, const rest_app *a), void *arg) {
    history *h = ud;
    pthread_mutex_lock(&h->mu);
    int n = 0;
    for (happ *a = h->apps; a; a = a->next) n++;
    happ **v = n ? malloc(sizeof *v * (size_t)n) : NULL;
    if (v) {
        n = 0;
        for (happ *a = h->apps; a; a = a->next) v[n++] = a;
        qsort(v, (size_t)n, sizeof *v, newest_first);
        for (int i = 0; i < n; i++) {
            happ *a = v[i];
            rest_app r = {a->id, a->app_name, a->attempt, a->user, a->version, a->start_ms, a->end_ms,
                          a->end_ms ? a->end_ms : a->last_ms};
            fn(arg, &r);
        }
        free(v);
    }
    pthread_mutex_unlock(&h->mu);
}

static happ *find_app(history *h, const char *id, const char *attempt) {
    happ *best = NULL;
    for (happ *a = h->apps; a; a = a->next) {
        if (!a->id || strcmp(a->id, id)) continue;
        if (attempt) {
            if (a->attempt && !strcmp(a->attempt, attempt)) return a;
            continue;
        }
        if (!best || (a->attempt && (!best->attempt || strcmp(a->attempt, best->attempt) > 0))) best = a;
    }
    return best;
}

static status_store *p_acquire(void *ud, const char *id, const char *attempt) {
    history *h = ud;
    pthread_mutex_lock(&h->mu);
    happ *a = find_app(h, id, attempt);
    if (a && !a->st) {
        /* Evicted: load it again, off the lock. */
        char *path = strdup(a->path), *name = strdup(a->name);
        pthread_mutex_unlock(&h->mu);
        status_store *st = NULL;
        if (path && history_load(path, &h->lim, &st, NULL))
            log_msg(LOG_WARN, "history", "cannot load %s: %s", path, em_errmsg());
        pthread_mutex_lock(&h->mu);
        a = name ? find_name(h, name) : NULL;
        if (a && !a->st && st) {
            a->st = st;
            st = NULL;
        }
        status_free(st);
        free(path);
        free(name);
    }
    status_store *out = NULL;
    if (a && a->st) {
        a->lent++;
        a->used = ++h->tick;
        out = a->st;
        evict(h);
    }
    pthread_mutex_unlock(&h->mu);
    return out;
}

static void p_release(void *ud, status_store *st) {
    history *h = ud;
    if (!st) return;
    pthread_mutex_lock(&h->mu);
    for (happ *a = h->apps; a; a = a->next)
        if (a->st == st) {
            a->lent--;
            pthread_mutex_unlock(&h->mu);
            return;
        }
    for (retired **pp = &h->old; *pp; pp = &(*pp)->next) {
        retired *r = *pp;
        if (r->st != st) continue;
        if (--r->lent == 0) {
            *pp = r->next;
            status_free(r->st);
            free(r);
        }
        break;
    }
    pthread_mutex_unlock(&h->mu);
}

void history_provider(history *h, rest_provider *p) {
    p->ud = h;
    p->each = p_each;
    p->acquire = p_acquire;
    p->release = p_release;
}

void history_free(history *h) {
    if (!h) return;
    for (happ *a = h->apps, *n; a; a = n) {
        n = a->next;
        status_free(a->st);
        happ_free(a);
    }
    for (retired *r = h->old, *n; r; r = n) {
        n = r->next;
        status_free(r->st);
        free(r);
    }
    pthread_mutex_destroy(&h->mu);
    free(h->dir);
    free(h);
}
