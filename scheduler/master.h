/*
 * master.h -- the cluster master's state and decisions, as pure code: the
 * workers it knows (cores, memory, what is used, their last heartbeat), the
 * applications and their executors, the granting of executors on workers
 * (spread out across workers by default, as Spark's standalone master
 * does), the detection of dead workers by heartbeat timeout, and the
 * cluster state as the JSON document of the status port (Spark's /json
 * fields).  No sockets, no clock: the daemon (cluster mode) feeds it
 * messages and the time, and carries out what it decides.
 */
#ifndef EM_MASTER_H
#define EM_MASTER_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define MASTER_ID_MAX 64

typedef struct master master;

typedef struct master_conf {
    const char *url;        /* "ember://127.0.0.1:7077", for the JSON */
    uint64_t worker_timeout_ms; /* a worker silent this long is dead */
    int spread_out;         /* spread an application's executors (default 1) */
} master_conf;

/* An executor the master decided to launch (or learned has ended). */
typedef struct master_exec {
    char app[MASTER_ID_MAX];
    int id;                 /* executor id within its application */
    char worker[MASTER_ID_MAX];
    int cores;
    int64_t mem_mib;
} master_exec;

master *master_new(const master_conf *c);
void master_free(master *m);

/* A worker registers (again: after a master restart or a network cut, it
 * is the same worker).  0, or EM_EINVAL with a message (bad numbers, an id
 * used by another live worker at another address). */
int master_register_worker(master *m, const char *id, const char *host, int port, int cores, int64_t mem_mib,
                           uint64_t now_ms);
/* A heartbeat; 0, or EM_ENOENT for a worker the master does not know (it
 * must register again). */
int master_heartbeat(master *m, const char *id, uint64_t now_ms);
/* Mark workers silent for longer than the timeout dead; their executors
 * are lost.  Returns how many workers died; for each lost executor,
 * lost(ud, exec) is called. */
int master_expire(master *m, uint64_t now_ms, void (*lost)(void *ud, const master_exec *e), void *ud);

/* The worker's connection dropped: it is lost at once, as if expired. */
int master_worker_lost(master *m, const char *id, void (*lost)(void *ud, const master_exec *e), void *ud);

/* An application registers: returns its id in id_out ("app-<n>"), or
 * EM_EINVAL.  cores_max 0: no limit; cores_per_exec 0: one executor per
 * worker with all the cores it can get (Spark's default when
 * spark.executor.cores is unset). */
int master_register_app(master *m, const char *name, int cores_max, int cores_per_exec, int64_t mem_mib,
                        uint64_t now_ms, char id_out[MASTER_ID_MAX]);
/* The application ended: its executors are released (kill(ud, e) for
 * each, which the daemon turns into a message to the worker). */
int master_unregister_app(master *m, const char *app, uint64_t now_ms, void (*kill)(void *ud, const master_exec *e),
                          void *ud);
/* Grant executors to waiting applications where workers have room,
 * oldest application first.  launch(ud, e) for each new executor.
 * Returns how many were granted. */
int master_schedule(master *m, void (*launch)(void *ud, const master_exec *e), void *ud);
/* The application's driver gave up on one of its executors (silent past
 * ember.network.timeout): kill(ud, e) asks its worker to kill it, whose
 * report of the exit frees its cores.  0, or EM_ENOENT. */
int master_kill_executor(master *m, const char *app, int exec_id, void (*kill)(void *ud, const master_exec *e),
                         void *ud);
/* An executor ended (its worker said so): its cores and memory are free. */
int master_executor_exited(master *m, const char *app, int exec_id);

/* The cluster as Spark's master /json: url, workers, aliveworkers, cores,
 * coresused, memory, memoryused, activeapps, completedapps, status. */
int master_json(master *m, uint64_t now_ms, ebuf *out);

#endif
