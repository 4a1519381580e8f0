/*
 * lcluster.h -- local-cluster[W,C,M]: the master URL that makes the driver
 * start its own cluster, a master and W workers of C cores and M MiB, as
 * child processes running the driver's own binary in their role (the
 * takeover, engine/context.c), on 127.0.0.1 with any free ports.
 *
 * Their logs (master.log, worker-N.log) and the workers' work directories
 * (worker-N/) lie under the driver's scratch directory.  They die with
 * the driver, even when it is killed with SIGKILL (parent-death signals
 * down the tree: driver, daemons, executors), and lcluster_stop stops
 * them and waits for them by PID.  The cluster backend (cluster.h) starts
 * and stops them on its io loop thread.
 */
#ifndef EM_LCLUSTER_H
#define EM_LCLUSTER_H

#include <stdint.h>

typedef struct lcluster_opts {
    int workers, cores;       /* W and C */
    int64_t mem_mib;          /* M */
    int max_exec_retries;     /* ember.deploy.maxExecutorRetries, for the master */
    int service;              /* the workers run the shuffle service
                                 (ember.shuffle.service.enabled) */
    const char *scratch;      /* the driver's scratch directory, absolute */
    int secret;               /* the daemons read the secret from SCRATCH/secret */
    int encrypt;              /* they encrypt their connections */
} lcluster_opts;

typedef struct lcluster lcluster;

/* Parse "local-cluster[W,C]" or "local-cluster[W,C,M]": 1 (and the
 * numbers set), 0 when s is not of that form at all, -1 when it is but the
 * numbers are bad (message set). */
int lcluster_parse_url(const char *s, int *w, int *c, int64_t *mem_mib);

/* Start the master, wait (up to 20 s) for the port it listens on, set
 * *mport to it, and start the workers, registering with it.  The cluster,
 * or NULL (message set: a process cannot start, the master did not start,
 * with the end of its log) after stopping what it started. */
lcluster *lcluster_start(const lcluster_opts *o, int *mport);

/* SIGTERM to the daemons (workers first: they stop their executors), then
 * SIGKILL to any still running after 5 s; each one waited for by PID; lc
 * freed.  NULL is a no-op. */
void lcluster_stop(lcluster *lc);

#endif
