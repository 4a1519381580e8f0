/*
 * shuffle_fetch.h -- the client an executor fetches map output segments
 * with from other executors' shuffle servers (cluster mode).
 *
 * A reduce task's reader (shuffle_read.c) drives it through the sr_fetcher
 * of shuffle.h: begin asks for one segment, end waits for it, drop lets go
 * of it.  The client keeps one connection per server ("HOST:PORT"), opened
 * on first use with the application's name (M_SHUFFLE_OPEN), and sends its
 * requests on it one after another (M_FETCH_SEGMENT); the server answers
 * them in that order, each with its M_SEGMENT header, which gives the
 * segment's length, and then its chunks, which land in a buffer of that
 * length that the reader decodes in place.  (The length the driver's
 * map-output tracker has for a segment is an estimate: only the server
 * knows it.)
 *
 * Failures.  A connection that fails (refused, reset, closed) fails every
 * request on it; a request that failed that way is sent again on a new
 * connection, up to `retries` times, `retry_ms` apart, before it is a fetch
 * failure.  A server silent for SF_TIMEOUT_S (a host gone without a word)
 * has its connection closed, which fails every request on it; the request
 * that waited that long is not sent again.  A task killed while it waits
 * (runner_cancelled) drops its request and returns at once.  The task
 * waiting counts each request it sends again and, once per connection (on
 * one request someone waits for), each connection that failed with
 * requests unanswered (runner_count_fetch: em_stats' shuffle_fetch_retries
 * and shuffle_fetch_conns_dropped).
 *
 * Threads.  begin, end and drop run on task threads; the connections live
 * on the executor's io loop, which each request is posted to.  A request's
 * state is under the client's mu; the connections list is the loop's.
 */
#ifndef EM_SHUFFLE_FETCH_H
#define EM_SHUFFLE_FETCH_H

#include <pthread.h>
#include <stdint.h>

#include "conn.h"
#include "ioloop.h"
#include "shuffle.h"

/* Seconds of silence after which a server is given up on (Spark's
 * spark.network.timeout). */
#define SF_TIMEOUT_S 120

struct sf_conn;

/* The client's state, which its owner (the executor) holds for the life of
 * the process; its fields are the client's own once sf_init has run. */
typedef struct shuffle_fetch {
    ioloop *l;              /* the loop the connections live on */
    conn_opts co;           /* their options */
    const char *app;        /* the application whose outputs are asked for */
    int retries;            /* ember.shuffle.io.maxRetries */
    uint64_t retry_ms;      /* ember.shuffle.io.retryWait */
    pthread_mutex_t mu;     /* the requests' states */
    uint64_t next_rid;      /* mu: the id of the next request sent */
    struct sf_conn *conns;  /* the loop's thread only */
} shuffle_fetch;

/* Set up sf to fetch on loop l over connections of options co, for
 * application app (borrowed: it must outlive sf), retrying a request whose
 * connection failed up to retries times, retry_ms apart.  Cannot fail. */
void sf_init(shuffle_fetch *sf, ioloop *l, const conn_opts *co, const char *app, int retries, uint64_t retry_ms);

/* Point fetcher's begin, end, drop and ctx at sf (its other fields are
 * left as they are). */
void sf_fetcher(shuffle_fetch *sf, sr_fetcher *fetcher);

#endif
