/*
 * eventlog_reader.h -- streaming the events out of an event log, ember's
 * or Apache Spark's (1.x to 3.x): a single file, plain or compressed,
 * finished or in progress, or Spark 3's rolling eventlog_v2_ directory.
 * The names and formats are those eventlog.h writes.
 *
 * One thread owns a reader.
 */
#ifndef EM_EVENTLOG_READER_H
#define EM_EVENTLOG_READER_H

#include <stdbool.h>

#include "appevent.h"

typedef struct evlog_reader evlog_reader;

/* Open a log for reading: a plain file, a compressed one (by extension,
 * as Spark names them: .zstd or .zst, .lz4; .lzf and .snappy are refused
 * with EM_EINVAL), either with .inprogress after it, or an eventlog_v2_
 * directory (its events_ files in index order).  Returns 0, EM_ENOENT,
 * EM_EIO or EM_EINVAL naming the path, or EM_ENOMEM; *out NULL on failure.
 * Memory stays bounded: data is decompressed and split into lines a
 * buffer at a time, the longest line the parser takes being the bound. */
int evlog_reader_open(const char *path, evlog_reader **out);
/* The next event: 1 with *ev a new event (the caller frees it with
 * app_event_free), 0 at the end, or < 0 with *ev NULL: EM_ECORRUPT naming
 * the file, the line number and the field ("...: line 12: event log:
 * \"Task Info\".\"Task ID\" is not an integer"), EM_EIO, EM_ENOMEM.  A log
 * in progress (an .inprogress file, or a rolling directory whose appstatus
 * file is still .inprogress) may end in a torn line or compressed block:
 * that end is not an error, the events before it are all read.  An lz4
 * (lz4-java) block whose checksum does not match its decoded bytes is
 * EM_ECORRUPT naming the file and the block's offset ("the lz4 block's
 * checksum does not match its data"), in a log in progress too.  Blank
 * lines are skipped.  After EM_ECORRUPT for one line the next call goes on
 * with the line after it, so a caller may skip bad lines; after an error
 * reading or decompressing a file, it goes on with the next file of a
 * rolling directory (or ends). */
int evlog_reader_next(evlog_reader *r, app_event **ev);
/* Whether the log is still being written (see above). */
bool evlog_reader_in_progress(const evlog_reader *r);
/* Follow a single file still being written: at its end evlog_reader_next
 * returns 0 but keeps the file open and a torn last line (or compressed
 * block) held, so that a later call reads on with what the writer has
 * appended since; the reader then reads each byte of the log once, however
 * often it is polled.  0, or -1 when the log is finished or a rolling
 * directory (whose new files it does not look for): read it again whole. */
int evlog_reader_follow(evlog_reader *r);
/* Close the reader and free it; NULL is ignored. */
void evlog_reader_close(evlog_reader *r);

#endif
