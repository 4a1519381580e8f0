/*
 * text_reader.h -- reading the lines of one text split (engine/textfile.h).
 *
 * Plain files are read with pread(2) in large chunks and scanned with
 * memchr; gzip files are inflated with zlib (inflate with windowBits 15+32,
 * concatenated members supported) in large chunks.  Each line is passed to
 * sink as a plain record without its "\n" or "\r\n"; a final line without a
 * terminator is a line.
 */
#ifndef EM_TEXT_READER_H
#define EM_TEXT_READER_H

#include <stdint.h>

#include "recfmt.h"
#include "textfile.h"

/* Returns 0 (also when sink returned EM_STOP), EM_ENOENT / EM_EIO for a
 * missing or unreadable file ("text_file: <path>: <strerror>"), EM_ECORRUPT
 * for a truncated or corrupt gzip file ("text_file: <path>: truncated gzip
 * input at compressed offset N" / "corrupt gzip input at compressed offset
 * N: <zlib msg>"), EM_ETOOBIG for a line longer than max_line bytes, or
 * the sink's negative code.  *bytes_read gets the bytes read from disk. */
int text_read_split(const text_split *s, size_t max_line, rec_sink_fn sink, void *sctx,
                    uint64_t *bytes_read);

/* The same, counting what the split gave (a task's input metrics):
 * disk_bytes as text_read_split's bytes_read (past the split's end too);
 * bytes, those of the split's own lines with their terminators, so that
 * the splits of a file sum to its size (gzip: disk_bytes, the file being
 * one split); lines, the lines handed to sink.  *counts is set whatever
 * the result. */
typedef struct text_read_counts {
    uint64_t disk_bytes, bytes, lines;
} text_read_counts;
int text_read_split_counts(const text_split *s, size_t max_line, rec_sink_fn sink, void *sctx,
                           text_read_counts *counts);

#endif
