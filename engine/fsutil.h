/*
 * fsutil.h -- file-system helpers the context and the actions share.
 */
#ifndef EM_FSUTIL_H
#define EM_FSUTIL_H

/* Remove path and, if it is a directory, everything below it, not following
 * symbolic links (a link is removed, not its target).  Best effort: entries
 * that cannot be removed are left, with the directories holding them, and so
 * are directories nested more than 16 levels below path.  errno is left
 * unchanged.  Async-signal-safe: it uses only open, openat, getdents64,
 * unlinkat, rmdir, lseek and close, and allocates nothing, so signal
 * handlers and atexit hooks may call it (engine/scratch.c does). */
void rm_tree(const char *path);

#endif
