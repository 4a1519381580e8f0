/*
 * appserve.h -- what the driver serves to its workers and executors from
 * the application itself: its binary and the shared libember it runs with
 * (appbin.h), broadcast values, and the partitions of parallelized records.
 *
 * The cluster backend (cluster.h) owns one appserve and hands it the
 * requests that arrive on its listener's connections; each connection
 * that asks for something gets an appserve_conn, which holds what is still
 * to go out on it.  Large answers go out as the connection drains, a part
 * at a time, so that other messages pass between them.  Everything here
 * runs on the backend's io loop thread.
 */
#ifndef EM_APPSERVE_H
#define EM_APPSERVE_H

#include <stddef.h>

#include "conn.h"
#include "msg.h"

typedef struct appserve appserve;
typedef struct appserve_conn appserve_conn;

/* A server whose answers fit frames of max_frame bytes (conn_opts'
 * max_frame).  NULL when out of memory (message set).  The binary's and
 * the library's hashes are found at the first fetch_binary, not here. */
appserve *appserve_new(size_t max_frame);

/* Free a server; the connections' states go with appserve_conn_free. */
void appserve_free(appserve *a);

/* Answer a fetch_binary request m on c: the library's message, chunks and
 * empty chunk when the program runs with a shared libember, then the
 * executable's, as c drains.  *ac is c's state (created here when NULL).
 * A request from another binary is answered with an error message; a
 * binary that cannot be read is answered with an error message and
 * logged; a second request on the same connection, or no memory, closes
 * c. */
void appserve_binary(appserve *a, appserve_conn **ac, conn *c, const msg *m);

/* Answer a fetch_bcast request m on c with the broadcast's value, or with
 * "not found" and the reason when it is gone or larger than a frame lets
 * travel.  A failed send closes c. */
void appserve_bcast(appserve *a, conn *c, const msg *m);

/* Queue the answer to a fetch_source request m on c: the partition's
 * records in parts of at most 1 MiB, sent from the records themselves
 * (held until sent), after the answers queued before it; or "not found"
 * and why.  *ac is c's state (created here when NULL).  No memory, or a
 * failed send, closes c. */
void appserve_source(appserve *a, appserve_conn **ac, conn *c, const msg *m);

/* Free a connection's state when the connection closes: the binary's
 * files close and the records held for it are released.  NULL is a
 * no-op. */
void appserve_conn_free(appserve_conn *ac);

#endif
