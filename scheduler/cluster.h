/*
 * cluster.h -- the driver's cluster backend: the same seam as local[N]
 * (backend.h) over processes.  It registers the application with a master,
 * listens for the executors the master has workers start, checks each
 * one's binary hash, sends them task descriptions, and turns what they
 * send back into the scheduler's events.  It answers executors'
 * output-commit questions, and serves the application's binary to
 * workers, broadcast values and parallelized records to executors
 * (appserve.h).
 *
 * For local-cluster[W,C,M] it first starts the cluster itself, a master
 * and W workers as child processes (lcluster.h), and its close stops
 * them.
 */
#ifndef EM_CLUSTER_H
#define EM_CLUSTER_H

#include <stdint.h>

#include "backend.h"
#include "events.h"
#include "netconf.h"

typedef struct cluster_opts {
    const char *master;      /* "ember://HOST:PORT", or NULL for local-cluster */
    int lc_workers, lc_cores; /* local-cluster[W,C,M] */
    int64_t lc_mem_mib;
    int lc_max_exec_retries;  /* ember.deploy.maxExecutorRetries, for local-cluster's
                                 master */
    int lc_service;           /* local-cluster's workers run the shuffle service
                                 (ember.shuffle.service.enabled) */
    const char *app_name;
    const char *ui_url;       /* the driver's UI ("http://host:4040"), which the
                                 master's page links; NULL or "": none */
    const char *driver_host;  /* ember.driver.host */
    int driver_port;          /* ember.driver.port (0: any) */
    int exec_cores;           /* ember.executor.cores (0: all of a worker's) */
    int64_t exec_mem_mib;     /* ember.executor.memory */
    int cores_max;            /* ember.cores.max (0: no limit) */
    int task_queue_max;       /* ember.executor.taskQueue.max: the most per core
                                 when tasks are short */
    int task_queue;           /* ember.executor.taskQueue: attempts an executor
                                 holds queued beyond its running ones, per core */
    const netconf *nc;
    const char *scratch;      /* the driver's scratch directory */
    const char *exec_conf;    /* the settings executors get (conf_lines) */
    int64_t max_result;       /* ember.driver.maxResultSize: a result streamed
                                 past it is dropped and fails its task */
    uint64_t heartbeat_ms;    /* ember.executor.heartbeatInterval (the executors') */
    uint64_t timeout_ms;      /* ember.network.timeout: an executor silent this
                                 long is lost */
    uint64_t register_wait_ms;/* ember.scheduler.maxRegisteredWait: how long an
                                 executor granted may take to register */
    /* The output commit coordinator (runner.h's ask_commit). */
    int (*ask_commit)(void *c, uint32_t stage, int32_t partition, uint64_t attempt);
    void *commit_ctx;
} cluster_opts;

/* Start (for local-cluster, the cluster first), register the application
 * and return the backend; executors announce themselves to events as
 * they register.  NULL on failure (message set: the master cannot be
 * reached, a daemon did not start, ...). */
backend *cluster_backend_new(const cluster_opts *o, evq *events);
/* The id the master gave the application ("app-20261128174629-0000"),
 * fixed from cluster_backend_new's return. */
const char *cluster_app_id(backend *be);

#endif
