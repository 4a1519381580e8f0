/*
 * eventlog.h -- writing event log files as Spark's EventLoggingListener
 * does: one application's listener events (appevent.h), one JSON line each
 * (eventlog_json.h), in a single file or Spark 3's rolling directory, plain
 * or compressed.  eventlog_reader.h reads them back.
 *
 * File names are Spark's (EventLogFileWriters).  NAME is the application
 * id, followed by "_" and the attempt id when there is one, with ' ', ':'
 * and '/' made '-', '.', '$', '{', '}', '\'' and '"' made '_', lower-cased
 * (Spark's sanitizeDirName); CODEC is ".zstd" or ".lz4" when compressed:
 *   single file:  DIR/NAME[CODEC].inprogress while the application runs,
 *                 renamed to DIR/NAME[CODEC] by evlog_close;
 *   rolling:      DIR/eventlog_v2_NAME/ holding events_1_NAME[CODEC],
 *                 events_2_NAME[CODEC], ... and an empty marker file
 *                 appstatus_NAME.inprogress, renamed to appstatus_NAME by
 *                 evlog_close.  A new events_ file starts when the bytes
 *                 of the lines in the current one (counted before
 *                 compression, as Spark counts them) plus the next line
 *                 would pass max_file_size.
 * Compression: zstd frames (level 1, Spark's default; what Spark's zstd
 * codec reads), or lz4-java's block stream as Spark's lz4 codec writes it
 * (lz4block.h: 32 KiB blocks, each with its XXH32 checksum, and an end mark
 * at the file's end), so Spark reads both.
 *
 * Files are written through a buffer; evlog_flush pushes everything
 * written so far (ending the current compressed block) to the file, so a
 * reader of the .inprogress file sees whole lines up to that point.
 *
 * Nothing here is thread-safe: one thread owns a writer.
 */
#ifndef EM_EVENTLOG_H
#define EM_EVENTLOG_H

#include <stdbool.h>
#include <stdint.h>

#include "appevent.h"

/* Defaults of the settings (ember.eventLog.*). */
#define EVLOG_DEFAULT_DIR "/tmp/ember-events"
#define EVLOG_DEFAULT_CODEC "zstd"
#define EVLOG_DEFAULT_MAX_FILE_SIZE ((int64_t)128 << 20)

/* The writer's settings; the caller reads them from ember's conf.  Strings
 * are copied by evlog_open. */
typedef struct evlog_conf {
    const char *dir;          /* ember.eventLog.dir; NULL: EVLOG_DEFAULT_DIR */
    bool compress;            /* ember.eventLog.compress (false) */
    const char *codec;        /* ember.eventLog.compression.codec: "zstd"
                                 (NULL) or "lz4" */
    bool rolling;             /* ember.eventLog.rolling.enabled (false) */
    int64_t max_file_size;    /* ember.eventLog.rolling.maxFileSize; 0:
                                 EVLOG_DEFAULT_MAX_FILE_SIZE */
    bool overwrite;           /* ember.eventLog.overwrite (false) */
    const char *attempt_id;   /* the application's attempt, NULL: none */
    const char *version;      /* "Spark Version" of the log's first line;
                                 NULL: EMBER_VERSION */
} evlog_conf;

typedef struct evlog evlog;

/* Create the application's log under conf->dir and write its first line,
 * SparkListenerLogStart.  Fails, with nothing left behind and *out NULL:
 * EM_ENOENT when the directory does not exist, EM_EIO when it is not a
 * directory or a file cannot be made (the message names the path), EM_EIO
 * when the finished log (or rolling directory) exists already and
 * overwrite is false (with overwrite it is removed; Spark finds a finished
 * single file only at its final rename, ember at the start), EM_EINVAL for an
 * unknown codec, an empty app_id or a max_file_size below 1 KiB. */
int evlog_open(const evlog_conf *conf, const char *app_id, evlog **out);
/* Append one event as one line (rolling first when due).  Returns 0, or
 * EM_EIO naming the file / EM_ENOMEM; after an I/O failure every later call
 * returns EM_EIO and writes nothing. */
int evlog_write(evlog *l, const app_event *e);
/* Push everything written so far to the file (lz4: ending the current
 * block there, as Spark's syncFlush does).  0 or EM_EIO. */
int evlog_flush(evlog *l);
/* Finish the file (the compressed stream's end), rename the .inprogress
 * file or marker away and free l (NULL is ignored).  Returns 0, or the
 * first error met (EM_EIO naming the path); l is freed either way, and on
 * failure the .inprogress name stays. */
int evlog_close(evlog *l);
/* The path of the log: the file being written (with .inprogress) or the
 * rolling directory.  Valid until evlog_close. */
const char *evlog_path(const evlog *l);

#endif
