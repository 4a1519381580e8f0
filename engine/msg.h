/*
 * msg.h -- the typed control messages of the wire (cluster mode).  The body
 * of an FT_MSG frame (frame.h) is one msgpack array: the message's tag,
 * then its fields, each of a fixed type.  The table in msg.c says, for
 * every tag, its name and its fields (name, type, and for strings and
 * bytes the largest size accepted).  Decoding trusts nothing: the bytes
 * must be exactly one message (mpcheck.h first), of a known tag, with the
 * right number of fields, each of its type and within its size; anything
 * else is EM_EPROTO naming the message and the field, and the connection
 * is closed.  Bulk data (binaries, shuffle segments, results) does not go
 * in messages but in FT_CHUNK frames that follow one.
 *
 * A message may end with optional fields (marked "optional" below): a
 * sender of an older version leaves them out, and the decoded message has
 * them empty (zero, or a string of length 0; msg.n says how many came).
 * So a field is added to a message at its end, as an optional one.
 */
#ifndef EM_MSG_H
#define EM_MSG_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"

#define MSG_MAX_FIELDS 12

enum msg_tag {
    /* worker <-> master */
    M_REGISTER_WORKER = 1, /* worker id, host, port, cores, memory MiB, executors running (an
                              executor_running message for each follows), optional: its web UI
                              URL ("http://host:port", empty: none) */
    M_WORKER_REGISTERED,   /* master url, optional: the master's web UI URL */
    M_REGISTER_REFUSED,    /* reason */
    M_HEARTBEAT,           /* sender id, optional: ember.test.faults rules that took effect
                              in the sender outside any task since its last heartbeat (an
                              executor's shuffle server dropping requests; sent at once) */
    /* driver <-> master */
    M_REGISTER_APP,        /* name, driver url, binary hash, cores max, cores per executor, memory MiB,
                              executor settings (conf_lines), app id (empty: a new application;
                              else the driver re-attaches to it after losing the master),
                              optional: the driver's UI URL (empty: none), the user */
    M_APP_REGISTERED,      /* app id */
    M_EXECUTOR_ADDED,      /* executor id, worker id, host, cores, optional: the URLs of its stdout
                              and stderr on its worker's web UI (empty: none) */
    M_EXECUTOR_LOST,       /* executor id, reason, exit code, signal (0, 0: not known) */
    M_UNREGISTER_APP,      /* app id */
    /* master -> worker, worker -> master */
    M_LAUNCH_EXECUTOR,     /* app id, executor id, cores, memory MiB, driver url, binary hash, executor
                              settings */
    M_EXECUTOR_EXITED,     /* app id, executor id, exit code, signal, last stderr lines (or the
                              reason it could not start), cannot run (true: the dynamic loader
                              could not load a library the program needs, so no executor of the
                              application can start there; the reason names it) */
    M_KILL_EXECUTOR,       /* app id, executor id */
    /* executor <-> driver */
    M_REGISTER_EXECUTOR,   /* executor id, host, shuffle port, cores, binary hash, shuffle service
                              (true: its map outputs are served by its worker's shuffle service
                              and outlive it) */
    M_EXECUTOR_REFUSED,    /* reason */
    M_LAUNCH_TASK,         /* task id, description bytes */
    M_KILL_TASK,           /* task id */
    M_TASK_ENDED,          /* task id, killed, start us, end us, result bytes (none when they came
                              before as result_part messages), optional: queued (killed in the
                              executor's queue before it started) */
    /* executor <-> executor, worker */
    M_FETCH_SEGMENT,       /* request id, shuffle id, map, attempt, reduce partition */
    M_SEGMENT,             /* request id, length (its bytes follow as chunks) */
    /* any */
    M_ERROR,               /* code, message */
    /* worker -> driver: the application's binary */
    M_FETCH_BINARY,        /* binary hash */
    M_BINARY,              /* length, file hash (its bytes follow as chunks) */
    /* driver -> executor */
    M_DROP_SHUFFLE,        /* shuffle id */
    M_DROP_MAP_OUTPUT,     /* shuffle id, map, attempt */
    M_DROP_BCAST,          /* broadcast id */
    /* executor <-> driver, during a task */
    M_ASK_COMMIT,          /* request id, stage, partition, attempt */
    M_COMMIT_ANSWER,       /* request id, granted */
    M_FETCH_BCAST,         /* request id, broadcast id */
    M_BCAST,               /* request id, found, value bytes */
    /* executor -> driver: a result too large for one frame, in order */
    M_RESULT_PART,         /* task id, bytes */
    /* driver -> executor */
    M_DROP_RDD,            /* cache key, rdd id: its cached partitions are gone */
    /* executor <-> driver, during a task: a partition of parallelized
     * records (srcdata.h) */
    M_FETCH_SOURCE,        /* request id, srcdata id, partition */
    M_SOURCE,              /* request id, found, length, bytes: one part of the records (in order,
                              until length bytes came; other messages may come between them), or
                              the reason when not found */
    /* worker -> master, after register_worker: one executor it runs */
    M_EXECUTOR_RUNNING,    /* app id, executor id, cores, memory MiB */
    /* fetcher -> shuffle server (an executor's or a worker's shuffle
     * service): the first message on a fetch connection, naming the
     * application whose map outputs the fetch_segment messages after it
     * ask for */
    M_SHUFFLE_OPEN,        /* app id */
    /* master -> worker: the application ended (its shuffle files go) */
    M_APP_FINISHED,        /* app id */
    /* master -> driver: a worker was lost, and with it the map outputs
     * its shuffle service held */
    M_WORKER_LOST,         /* worker id */
    /* driver -> master: an executor registered with the driver (it runs,
     * Spark's RUNNING state: the application's count of executors failed
     * in a row restarts) */
    M_EXECUTOR_REGISTERED, /* app id, executor id */
    /* master -> driver: the application was removed (its executors kept
     * failing, ember.deploy.maxExecutorRetries): its jobs fail */
    M_APP_REMOVED,         /* app id, reason */
    /* driver -> worker, answering fetch_binary before the binary itself
     * when libember is a shared library of the program: that library */
    M_LIBRARY,             /* file name (the name the program asks the dynamic loader for), length,
                              file hash (its bytes follow as chunks) */
    /* master -> driver: whether the application, without executors,
     * waits its turn (cores held by others: it waits as long as it takes)
     * or no alive worker could hold one of its executors; sent when it
     * changes (master.h's master_app_wait) */
    M_APP_WAITING,         /* app id, state (0 served, 1 queued, 2 unservable), reason */
    M_TAG_END
};

enum msg_type { MT_U64 = 1, MT_I64, MT_BOOL, MT_STR, MT_BIN };

/* One field of a decoded message.  Strings and bytes point into the
 * decoded message's memory (valid until msg_free). */
typedef struct msg_val {
    uint64_t u;      /* MT_U64, MT_BOOL (0 or 1) */
    int64_t i;       /* MT_I64 */
    const uint8_t *p; /* MT_STR (not NUL-terminated), MT_BIN */
    size_t len;
} msg_val;

typedef struct msg {
    int tag;
    int n;  /* fields that came (optional ones left out are empty) */
    msg_val f[MSG_MAX_FIELDS];
    msgpack_unpacked u; /* what f's pointers point into */
} msg;

/* Field values, for building a message to encode. */
static inline msg_val msg_u(uint64_t u) {
    msg_val v = {u, 0, NULL, 0};
    return v;
}
static inline msg_val msg_i(int64_t i) {
    msg_val v = {0, i, NULL, 0};
    return v;
}
static inline msg_val msg_bin(const void *p, size_t len) {
    msg_val v = {0, 0, (const uint8_t *)p, len};
    return v;
}
static inline msg_val msg_str(const char *s) { return msg_bin(s, strlen(s)); }

/* The message's name ("register_worker"), "unknown" for a bad tag. */
const char *msg_name(int tag);
/* Encode message tag with its fields (n must be the table's count, or
 * less by optional fields left out; each value read per its type) into
 * out.  0, EM_EINVAL (a value over its
 * size, a wrong count: a bug) or EM_ENOMEM. */
int msg_encode(ebuf *out, int tag, const msg_val *f, int n);
/* As msg_encode, for a message whose last field is bytes, but without
 * those bytes: what goes before them.  The encoding is these bytes then
 * f[n - 1]'s, for a sender that writes them from where they lie.
 * EM_EINVAL too when the last field is not bytes. */
int msg_encode_head(ebuf *out, int tag, const msg_val *f, int n);
/* Decode a frame body into m (msg_free it after, whatever the result).  0
 * or EM_EPROTO with a message naming the problem. */
int msg_decode(msg *m, const uint8_t *body, size_t len);
void msg_free(msg *m);
/* The body of an FT_MSGS frame is one or more messages back to back.  The
 * next from *off: 1 with it at body[*off - *mlen, *off) (*off moved past
 * it; msg_decode checks the rest), 0 at the end of the body, or EM_EPROTO
 * with a message when the bytes at *off are not one well-bounded msgpack
 * object. */
int msgs_next(const uint8_t *body, size_t len, size_t *off, size_t *mlen);

#endif
