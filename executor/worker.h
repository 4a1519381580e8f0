/*
 * worker.h -- the ember-worker daemon, one per machine.  It registers with
 * a master (again whenever the master or the network comes back, reporting
 * the executors it runs: they keep running while the master is away),
 * sends heartbeats, and launches the executors the master grants: it fetches the
 * application's binary from the driver once (in chunks, checked against
 * its hash, with the libember.so it runs with when it is linked shared:
 * applib.h) and keeps it in <work-dir>/bin/ under the binary's hash, starts
 * it with EMBER_ROLE=executor in <work-dir>/<app>/<executor>/ with the
 * executor's stdout and stderr there, supervises it, and reports its exit
 * (code or signal, and the last lines of its stderr; whether the dynamic
 * loader could not start it at all) to the master.  An
 * application's directory goes when its last executor ends, unless one
 * failed: then it is kept for ember.worker.cleanup.appDataTtl (7 days) so
 * its logs can be read.  It serves its web UI (worker_ui.h: its page,
 * /json, its executors' logs) and tells the master its address.  SIGTERM
 * or SIGINT stops the worker and its executors.
 */
#ifndef EM_WORKER_H
#define EM_WORKER_H

/* The daemon's main: 0 on a clean stop, 2 for a usage error, 1 when it
 * cannot start (the message on stderr). */
int worker_main(int argc, char **argv);

#endif
