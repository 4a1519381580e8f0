/*
 * fsutil.h -- file-system helpers the context and the actions share.
 */
#ifndef EM_FSUTIL_H
#define EM_FSUTIL_H

/* Remove path and, if it is a directory, everything below it, not following
 * symbolic links.  Best effort: entries that cannot be removed are left. */
void rm_tree(const char *path);

#endif
