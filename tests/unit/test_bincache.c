/*
 * test_bincache.c -- the worker's binary cache (executor/bincache.c): the
 * least recently used binaries go until the rest fit the bound, never one
 * in use; a directory pass removes exactly those, counts what it freed,
 * and leaves files that are not binaries alone.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"
#include "bincache.h"
#include "ember.h"

static bincache_entry ent(char c, uint64_t bytes, int64_t used, int in_use) {
    bincache_entry e;
    memset(&e, 0, sizeof e);
    memset(e.name, c, 64);
    e.bytes = bytes;
    e.used_ns = used;
    e.in_use = in_use;
    return e;
}

TEST(bincache_lru_never_in_use) {
    bincache_entry v[4] = {ent('a', 100, 40, 0), ent('b', 100, 10, 1), ent('c', 100, 20, 0), ent('d', 100, 30, 0)};
    CHECK_EQ_I64(bincache_choose(v, 4, 400), 0); /* fits */
    CHECK_EQ_I64(bincache_choose(v, 4, 250), 2); /* the two oldest not in use: c (20), then d (30) */
    CHECK(!v[0].evict && !v[1].evict && v[2].evict && v[3].evict);
    CHECK_EQ_I64(bincache_choose(v, 4, 0), 3); /* all but the one in use */
    CHECK(v[0].evict && !v[1].evict && v[2].evict && v[3].evict);
    v[1].in_use = 0;
    CHECK_EQ_I64(bincache_choose(v, 4, 300), 1); /* b is the oldest once unused */
    CHECK(v[1].evict && !v[0].evict && !v[2].evict && !v[3].evict);
    CHECK_EQ_I64(bincache_choose(NULL, 0, 0), 0);
}

static int in_use_b(void *ud, const char *name) { return name[0] == *(const char *)ud; }

static int put(const char *dir, char c, size_t bytes, time_t mtime) {
    char path[800], name[65];
    memset(name, c, 64);
    name[64] = 0;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char buf[256] = {0};
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0700);
    if (fd < 0) return -1;
    for (size_t n = 0; n < bytes; n += sizeof buf)
        if (write(fd, buf, bytes - n < sizeof buf ? bytes - n : sizeof buf) < 0) break;
    close(fd);
    struct timespec t[2] = {{mtime, 0}, {mtime, 0}};
    return utimensat(AT_FDCWD, path, t, 0);
}

static int exists(const char *dir, char c) {
    char path[800], name[65];
    memset(name, c, 64);
    name[64] = 0;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

TEST(bincache_trim_directory) {
    char dir[700];
    snprintf(dir, sizeof dir, "%s/bin", test_tmpdir());
    CHECK(mkdir(dir, 0700) == 0);
    CHECK_OK(put(dir, 'a', 1000, 1000)); /* oldest, but in use */
    CHECK_OK(put(dir, 'b', 1000, 2000));
    CHECK_OK(put(dir, 'c', 1000, 3000));
    CHECK_OK(put(dir, 'd', 1000, 4000));
    char other[800];
    snprintf(other, sizeof other, "%s/%s", dir, "fetch.tmp"); /* not a binary's name: left alone */
    int fd = open(other, O_WRONLY | O_CREAT, 0600);
    CHECK(fd >= 0);
    close(fd);
    char used = 'a';
    uint64_t freed = 0;
    CHECK_OK(bincache_trim(dir, 2500, in_use_b, &used, &freed));
    CHECK_EQ_I64(freed, 2000);
    CHECK(exists(dir, 'a') && !exists(dir, 'b') && !exists(dir, 'c') && exists(dir, 'd'));
    CHECK(access(other, F_OK) == 0);
    /* A use moves a binary to the back: d was used before a new one, e. */
    CHECK_OK(put(dir, 'e', 1000, 5000));
    char path[800], name[65];
    memset(name, 'd', 64);
    name[64] = 0;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    bincache_touch(path);
    used = 0;
    CHECK_OK(bincache_trim(dir, 2000, in_use_b, &used, &freed));
    CHECK_EQ_I64(freed, 1000);
    CHECK(!exists(dir, 'a') && exists(dir, 'd') && exists(dir, 'e'));
    snprintf(path, sizeof path, "%s/no-such-dir", test_tmpdir());
    CHECK_EQ_I64(bincache_trim(path, 0, NULL, NULL, &freed), EM_EIO);
}

/* Library directories (applib.h) go with the last binary that links to
 * them; the link of a binary that went goes too; a library a fetch claims
 * (in_use) stays though nothing links to it yet. */
TEST(bincache_libraries_follow_their_binaries) {
    char dir[700], path[1000], lib[800], name[65], libname[65];
    snprintf(dir, sizeof dir, "%s/bin", test_tmpdir());
    CHECK(mkdir(dir, 0700) == 0);
    CHECK_OK(put(dir, 'a', 1000, 1000));
    CHECK_OK(put(dir, 'b', 1000, 2000));
    /* Library 1 is linked from a and b, library 2 from a only, library 3
     * (being fetched: in use) from nothing. */
    for (char l = '1'; l <= '3'; l++) {
        memset(libname, l, 64);
        libname[64] = 0;
        snprintf(lib, sizeof lib, "%s/%s", dir, libname);
        CHECK(mkdir(lib, 0700) == 0);
        snprintf(path, sizeof path, "%s/libember.so.0", lib);
        int fd = open(path, O_WRONLY | O_CREAT, 0700);
        CHECK(fd >= 0 && write(fd, "0123456789", 10) == 10);
        close(fd);
    }
    memset(name, 'a', 64);
    name[64] = 0;
    memset(libname, '2', 64);
    snprintf(path, sizeof path, "%s/%s.lib", dir, name);
    CHECK(symlink(libname, path) == 0);
    memset(name, 'b', 64);
    memset(libname, '1', 64);
    snprintf(path, sizeof path, "%s/%s.lib", dir, name);
    CHECK(symlink(libname, path) == 0);
    char used = '3';
    uint64_t freed = 0;
    CHECK_OK(bincache_trim(dir, 1500, in_use_b, &used, &freed)); /* a, the older, goes */
    CHECK_EQ_I64(freed, 1000 + 10); /* a and library 2 */
    CHECK(!exists(dir, 'a') && exists(dir, 'b'));
    CHECK(!exists(dir, '2') && exists(dir, '1') && exists(dir, '3'));
    memset(name, 'a', 64);
    snprintf(path, sizeof path, "%s/%s.lib", dir, name);
    struct stat sb;
    CHECK(lstat(path, &sb) != 0); /* a's link went with it */
    used = 0; /* the fetch ended without linking library 3 */
    CHECK_OK(bincache_trim(dir, 1500, in_use_b, &used, &freed));
    CHECK_EQ_I64(freed, 10);
    CHECK(!exists(dir, '3') && exists(dir, '1') && exists(dir, 'b'));
}
