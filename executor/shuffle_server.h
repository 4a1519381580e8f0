/*
 * shuffle_server.h -- serving the segments of map outputs over the wire:
 * an executor's own shuffle server and a worker's shuffle service (Spark's
 * external shuffle service) are the same code.
 *
 * The protocol.  A fetcher connects (and authenticates, conn.h), sends
 * shuffle_open (the application whose outputs it wants), then any number of
 * fetch_segment messages (request id, shuffle, map, attempt, reduce
 * partition).  Each is answered, in the order they came, by a segment
 * message (request id, length) followed by the segment's bytes in FT_CHUNK
 * frames and an empty FT_CHUNK that ends them, or by an error message
 * (code, reason) when the output is missing or fails the checks of
 * shuffle_index.h, or when the server does not serve that application.
 * The bytes are those of the data file as the map task wrote them:
 * compressed, CRC-checked blocks (blockfile.h), which the reader checks.
 *
 * What a request can name is numbers: the file's path is made from the
 * directory the server's dir_of gives for the application and the ids
 * (shuffle.h's names), so no request reaches a file outside it.  A frame
 * that is not a message, a message the server does not take, a fetch
 * before shuffle_open or a second shuffle_open closes that connection with
 * a logged reason; the server keeps serving every other.
 */
#ifndef EM_SHUFFLE_SERVER_H
#define EM_SHUFFLE_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "ioloop.h"

typedef struct shuffle_server shuffle_server;

typedef struct ss_config {
    /* The directory holding application app's map outputs, into dir (cap
     * bytes): 0, or < 0 with the message set (not served here), which
     * every fetch on that connection gets as its error answer.  Called on
     * the loop's thread. */
    int (*dir_of)(void *ctx, const char *app, char *dir, size_t cap);
    void *ctx;
    /* Requests to drop (close their connection unanswered) before serving
     * any: ember.test.faults' dropfetch.  0 in a worker. */
    int64_t drop_fetches;
    /* Called (on the loop's thread) as each of those requests is dropped,
     * before its connection closes; NULL: nobody is told. */
    void (*dropped)(void *ctx);
} ss_config;

/* Listen on host:port (0: any free port; *port_out says which) with the
 * connection options co (their max_frame bounds the chunks).  Call on l's
 * thread.  0 and *out, or EM_EIO / EM_ENOMEM with a message (nothing is
 * left open). */
int ss_start(ioloop *l, const char *host, int port, const conn_opts *co, const ss_config *cfg, shuffle_server **out,
             int *port_out);
/* Free the server's own memory once its loop has stopped (iol_stop closed
 * its listener and connections). */
void ss_free(shuffle_server *s);

#endif
