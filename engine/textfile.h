/*
 * textfile.h -- planning text_file input: which files a path names and how
 * they split into partitions.  Runs on the driver; reading is
 * executor/text_reader.h.
 *
 * A path is a regular file, a directory (its regular files, not recursing,
 * skipping names starting with '.' or '_'), or a glob(3) pattern.  Files are
 * taken in sorted order.  A file ending in ".gz" is one split (gzip cannot be
 * split).  A plain file of size S is split into ranges of
 *     split = max(1, min(ceil(total / min_partitions), max_split))
 * bytes (as Hadoop's FileInputFormat with goal size and block size), the
 * last range of a file taking the remainder; an empty file gives one empty
 * split.  A line belongs to the split holding its first byte, so no line is
 * lost or read twice.
 */
#ifndef EM_TEXTFILE_H
#define EM_TEXTFILE_H

#include <stdint.h>

typedef struct text_split {
    char *path;
    uint64_t off, len; /* byte range; for gz: 0 and the compressed size */
    int gz;
} text_split;

/* Expand path and make splits.  0, or EM_ENOENT ("text_file: <path>: no such
 * file or directory", also for a glob matching nothing or an empty
 * directory), EM_EIO, EM_EINVAL (min_partitions < 1 is treated as 1; NULL
 * path is EM_EINVAL).  *out is malloc'd: free with text_splits_free. */
int text_plan(const char *path, int min_partitions, uint64_t max_split, text_split **out, int *n);
void text_splits_free(text_split *s, int n);

#endif
