/*
 * textfile.c -- planning text_file input (see textfile.h): expanding a path
 * into a sorted list of files and cutting those files into byte-range splits.
 *
 * This runs once on the driver when em_text_file is called, so it favours
 * clear error messages over speed: every failure names the path that caused
 * it.  Reading the splits is executor/text_reader.c; the rule that makes the
 * byte ranges safe (a line belongs to the split holding its first byte) is
 * applied there, so a split boundary may fall anywhere, even mid-line.
 *
 * Expansion:
 *   - an existing regular file is itself;
 *   - an existing directory gives its regular files (not recursing), skipping
 *     names that start with '.' or '_' (Hadoop's hidden files such as
 *     _SUCCESS and .crc files);
 *   - a path that does not exist but contains glob metacharacters is a
 *     glob(3) pattern; each match is expanded by the two rules above, and a
 *     pattern matching nothing is an error.
 * A directory holding no files gives no splits (an RDD of no partitions).
 * The resulting list is sorted (strcmp) and duplicates are dropped, so the
 * partition order is deterministic whatever readdir's order.
 */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ember.h"
#include "err.h"
#include "textfile.h"

/* A growable list of (path, size) pairs being collected. */
typedef struct flist {
    struct fent { char *path; uint64_t size; } *v;
    size_t n, cap;
} flist;

static void flist_free(flist *l) {
    for (size_t i = 0; i < l->n; i++) free(l->v[i].path);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* Append a copy of path.  0 or EM_ENOMEM (list unchanged). */
static int flist_add(flist *l, const char *path, uint64_t size) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        struct fent *v = realloc(l->v, cap * sizeof *v);
        if (!v) return em__seterr(EM_ENOMEM, "text_file: out of memory");
        l->v = v;
        l->cap = cap;
    }
    char *p = strdup(path);
    if (!p) return em__seterr(EM_ENOMEM, "text_file: out of memory");
    l->v[l->n].path = p;
    l->v[l->n].size = size;
    l->n++;
    return 0;
}

/* Map a failed stat/opendir errno to an ember code with the path named. */
static int path_err(const char *path, int e) {
    if (e == ENOENT || e == ENOTDIR)
        return em__seterr(EM_ENOENT, "text_file: %s: no such file or directory", path);
    if (e == ENOMEM) return em__seterr(EM_ENOMEM, "text_file: %s: out of memory", path);
    return em__seterr(EM_EIO, "text_file: %s: %s", path, strerror(e));
}

static int has_glob_chars(const char *s) { return strpbrk(s, "*?[") != NULL; }

/* Add the visible regular files of directory dir (not recursing).  Entries
 * that vanish between readdir and stat are skipped: a directory being written
 * to is read as it was, not failed. */
static int add_dir(flist *l, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return path_err(dir, errno);
    size_t dlen = strlen(dir);
    int need_slash = dlen == 0 || dir[dlen - 1] != '/';
    int rc = 0;
    struct dirent *de;
    char *full = NULL;
    size_t fullcap = 0;
    errno = 0;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' || de->d_name[0] == '_') continue;
        size_t need = dlen + 1 + strlen(de->d_name) + 1;
        if (need > fullcap) {
            char *f = realloc(full, need);
            if (!f) { rc = em__seterr(EM_ENOMEM, "text_file: out of memory"); break; }
            full = f;
            fullcap = need;
        }
        snprintf(full, fullcap, "%s%s%s", dir, need_slash ? "/" : "", de->d_name);
        struct stat st;
        if (stat(full, &st) != 0) {
            if (errno == ENOENT) continue;
            rc = path_err(full, errno);
            break;
        }
        if (!S_ISREG(st.st_mode)) continue;
        if ((rc = flist_add(l, full, (uint64_t)st.st_size)) != 0) break;
        errno = 0;
    }
    if (!rc && errno != 0) rc = path_err(dir, errno);
    free(full);
    closedir(d);
    return rc;
}

/* Add one existing path: a regular file or a directory.  Anything else (a
 * FIFO, a device) is EM_EINVAL: splitting by byte range needs a real size. */
static int add_path(flist *l, const char *path, const struct stat *st) {
    if (S_ISREG(st->st_mode)) return flist_add(l, path, (uint64_t)st->st_size);
    if (S_ISDIR(st->st_mode)) return add_dir(l, path);
    return em__seterr(EM_EINVAL, "text_file: %s: not a regular file or directory", path);
}

static int add_glob(flist *l, const char *pattern) {
    glob_t g;
    memset(&g, 0, sizeof g);
    int grc = glob(pattern, 0, NULL, &g);
    if (grc == GLOB_NOMATCH) {
        globfree(&g);
        return em__seterr(EM_ENOENT, "text_file: %s: no such file or directory", pattern);
    }
    if (grc == GLOB_NOSPACE) {
        globfree(&g);
        return em__seterr(EM_ENOMEM, "text_file: %s: out of memory expanding pattern", pattern);
    }
    if (grc != 0) {
        globfree(&g);
        return em__seterr(EM_EIO, "text_file: %s: read error expanding pattern", pattern);
    }
    int rc = 0;
    for (size_t i = 0; i < g.gl_pathc && !rc; i++) {
        struct stat st;
        if (stat(g.gl_pathv[i], &st) != 0) {
            if (errno == ENOENT) continue; /* vanished since glob listed it */
            rc = path_err(g.gl_pathv[i], errno);
        } else if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
            rc = add_path(l, g.gl_pathv[i], &st);
        }
        /* Other file types a pattern happens to match are skipped. */
    }
    globfree(&g);
    return rc;
}

static int fent_cmp(const void *a, const void *b) {
    return strcmp(((const struct fent *)a)->path, ((const struct fent *)b)->path);
}

static int ends_with_gz(const char *p) {
    size_t n = strlen(p);
    return n >= 3 && strcmp(p + n - 3, ".gz") == 0;
}

void text_splits_free(text_split *s, int n) {
    if (!s) return;
    for (int i = 0; i < n; i++) free(s[i].path);
    free(s);
}

static char *abs_path(const char *p) {
    char cwd[4096];
    if (p[0] == '/' || !getcwd(cwd, sizeof cwd)) return strdup(p);
    size_t a = strlen(cwd), b = strlen(p);
    char *r = malloc(a + b + 2);
    if (r) {
        memcpy(r, cwd, a);
        r[a] = '/';
        memcpy(r + a + 1, p, b + 1);
    }
    return r;
}

int text_plan(const char *path, int min_partitions, uint64_t max_split, text_split **out, int *n) {
    if (!path || !out || !n) return em__seterr(EM_EINVAL, "text_file: NULL argument");
    *out = NULL;
    *n = 0;
    if (!*path) return em__seterr(EM_ENOENT, "text_file: : no such file or directory");
    if (min_partitions < 1) min_partitions = 1;
    if (max_split == 0) max_split = UINT64_MAX; /* no upper bound on a split */

    flist l = {NULL, 0, 0};
    int rc;
    struct stat st;
    if (stat(path, &st) == 0) {
        rc = add_path(&l, path, &st);
    } else if (errno == ENOENT && has_glob_chars(path)) {
        rc = add_glob(&l, path);
    } else {
        rc = path_err(path, errno);
    }
    if (rc) { flist_free(&l); return rc; }
    if (l.n == 0) {
        /* An empty directory, or a glob matching only empty directories:
         * no files, no splits -- an empty RDD, as Spark's textFile gives.
         * (A path that does not exist, or a glob matching nothing, is an
         * error above.) */
        flist_free(&l);
        return 0;
    }
    qsort(l.v, l.n, sizeof l.v[0], fent_cmp);
    size_t w = 0; /* drop duplicates (a glob matching a file and its directory) */
    for (size_t i = 0; i < l.n; i++) {
        if (w && strcmp(l.v[w - 1].path, l.v[i].path) == 0) { free(l.v[i].path); continue; }
        l.v[w++] = l.v[i];
    }
    l.n = w;

    /* Goal size from the plain files only: gzip files are one split each
     * whatever their size, so counting them would only shrink the others'
     * splits for nothing. */
    uint64_t total = 0;
    for (size_t i = 0; i < l.n; i++)
        if (!ends_with_gz(l.v[i].path)) total += l.v[i].size;
    uint64_t goal = total / (uint64_t)min_partitions + (total % (uint64_t)min_partitions != 0);
    uint64_t split = goal < max_split ? goal : max_split;
    if (split < 1) split = 1;

    size_t count = 0;
    for (size_t i = 0; i < l.n; i++) {
        uint64_t sz = l.v[i].size;
        count += (ends_with_gz(l.v[i].path) || sz == 0) ? 1 : (size_t)((sz - 1) / split + 1);
        if (count > (size_t)INT32_MAX) {
            flist_free(&l);
            return em__seterr(EM_EINVAL, "text_file: %s: too many splits", path);
        }
    }
    text_split *s = calloc(count, sizeof *s);
    if (!s) {
        flist_free(&l);
        return em__seterr(EM_ENOMEM, "text_file: %s: out of memory", path);
    }
    size_t k = 0;
    for (size_t i = 0; i < l.n; i++) {
        uint64_t sz = l.v[i].size;
        int gz = ends_with_gz(l.v[i].path);
        uint64_t off = 0;
        do {
            uint64_t len = gz ? sz : (sz - off < split ? sz - off : split);
            /* Each split owns its path, absolute: the executors of a
             * cluster run in directories of their own, and a relative
             * path means the driver's working directory's. */
            char *p = abs_path(l.v[i].path);
            if (!p) {
                text_splits_free(s, (int)k);
                flist_free(&l);
                return em__seterr(EM_ENOMEM, "text_file: %s: out of memory", path);
            }
            s[k].path = p;
            s[k].off = off;
            s[k].len = len;
            s[k].gz = gz;
            k++;
            off += len;
        } while (off < sz);
    }
    flist_free(&l);
    *out = s;
    *n = (int)k;
    return 0;
}
