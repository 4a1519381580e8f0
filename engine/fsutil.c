/*
 * fsutil.c -- file-system helpers (see fsutil.h).
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>

#include "fsutil.h"

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void rm_tree(const char *path) { nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }
