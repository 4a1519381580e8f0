/*
 * masterd.h -- the ember-master daemon: master.c's decisions on the wire.
 * It listens for workers and applications (frames and typed messages,
 * conn.h) on --host:--port (127.0.0.1:7077 by default, Spark's port),
 * serves the cluster's state on --webui-port (8080) as JSON (/json), as
 * a page (/) and, with ember.ui.prometheus.enabled, as Prometheus metrics
 * (master_ui.h), expires silent workers (ember.worker.timeout), and stops on
 * SIGTERM or SIGINT.  With ember.deploy.recoveryMode FILESYSTEM it saves
 * its state (master.h's master_save) in ember.deploy.recoveryDirectory
 * (master_store.h) after every change, and a master started on a saved
 * state is RECOVERING: it waits, for at most ember.worker.timeout, for the
 * workers and drivers it knew to come back, grants nothing meanwhile, then
 * drops what did not come back and is ALIVE.  A corrupt state file stops
 * its start with a message naming the file.
 */
#ifndef EM_MASTERD_H
#define EM_MASTERD_H

/* The daemon's main: 0 on a clean stop, 2 for a usage error, 1 when it
 * cannot start (the message on stderr). */
int masterd_main(int argc, char **argv);

#endif
