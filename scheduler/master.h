/*
 * master.h -- the cluster master's state and decisions, as pure code: the
 * workers it knows (cores, memory, what is used, their last heartbeat), the
 * applications and their executors, the granting of executors on workers
 * (spread out across workers by default, as Spark's standalone master
 * does), the detection of dead workers by heartbeat timeout, and the
 * cluster state as the JSON document of the status port (Spark's /json
 * fields).  No sockets, no clock: the daemon (cluster mode) feeds it
 * messages and the time, and carries out what it decides.
 *
 * Recovery (Spark's FILESYSTEM recovery mode).  master_save writes what
 * the master must not forget across a restart: the live workers (id,
 * address, cores, memory), the running applications (id, name, resources,
 * the next executor id) and the executors granted to them.  master_load
 * reads that back into a new master, which is then RECOVERING: the workers
 * it knew are UNKNOWN until they register again and report the executors
 * they run (master_worker_report, then master_executor_running for each),
 * the applications are UNKNOWN until their drivers re-attach
 * (master_reattach_app).  Grants are rebuilt from the workers' reports: an
 * executor a worker reports is confirmed (or adopted, when its application
 * is known but the grant was not saved); one it does not report is gone;
 * one of an application the master does not know is killed (Spark's
 * answer to a worker's latest state).  master_recovery_done ends the
 * recovery when everything known came back, or when forced (the daemon's
 * timeout): the workers and applications still UNKNOWN are dropped, and
 * the master is ALIVE.  Nothing is granted while it recovers.
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
    int max_exec_retries;   /* ember.deploy.maxExecutorRetries: failed executors
                               in a row that remove an application with none
                               running (< 0: never) */
} master_conf;

/* An executor the master decided to launch (or learned has ended). */
typedef struct master_exec {
    char app[MASTER_ID_MAX];
    int id;                 /* executor id within its application */
    char worker[MASTER_ID_MAX];
    int cores;
    int64_t mem_mib;
    int unconfirmed;        /* its worker has not reported it since registering */
    int running;            /* its driver accepted it (Spark's RUNNING state) */
    int killing;            /* the master asked its worker to kill it */
} master_exec;

/* What master_executor_running did with a reported executor. */
enum { MASTER_CONFIRMED = 0, MASTER_ADOPTED = 1, MASTER_KILLED = 2 };

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
 * lost(ud, exec) is called, then dead(ud, worker) for the worker (which
 * had executors or not: the map outputs its shuffle service held, of
 * executors that ended before it, went with it).  Either may be NULL. */
int master_expire(master *m, uint64_t now_ms, void (*lost)(void *ud, const master_exec *e),
                  void (*dead)(void *ud, const char *worker), void *ud);

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
/* What an application without executors waits for (Spark's WAITING
 * state).  Applications are granted executors in the order they
 * registered, as cores free up (master_schedule): one that an alive
 * worker could hold once its cores and memory are free (or any, while the
 * master recovers) is MASTER_APP_QUEUED and waits as long as it takes;
 * one that no alive worker could ever hold (no alive worker, none with
 * the cores of one executor and its memory, ember.cores.max below
 * ember.executor.cores) is MASTER_APP_UNSERVABLE.  An application with
 * executors (or ended) is MASTER_APP_SERVED.  why (cap bytes, may be
 * NULL) says it in a sentence: the applications ahead of it, or what no
 * worker has.  EM_ENOENT for an application the master does not know. */
enum { MASTER_APP_SERVED = 0, MASTER_APP_QUEUED = 1, MASTER_APP_UNSERVABLE = 2 };
int master_app_wait(const master *m, const char *app, char *why, size_t cap);
/* The application's driver gave up on one of its executors (silent past
 * ember.network.timeout): kill(ud, e) asks its worker to kill it, whose
 * report of the exit frees its cores (and is not counted as a failure).
 * 0, or EM_ENOENT. */
int master_kill_executor(master *m, const char *app, int exec_id, void (*kill)(void *ud, const master_exec *e),
                         void *ud);
/* An executor ended (its worker said so): its cores and memory are free.
 * failed: it exited with a code other than 0 or by a signal.  A failure the
 * master did not ask for (master_kill_executor) counts against its
 * application (Spark's spark.deploy.maxExecutorRetries): the count restarts
 * whenever the driver accepts an executor (master_executor_registered),
 * and once it reaches max_exec_retries while no executor of the
 * application runs, the application is removed as FAILED: its other
 * executors are killed (kill(ud, e) for each), why (cap bytes) says what
 * failed, and MASTER_APP_REMOVED is returned; the daemon tells the driver
 * and the workers.  Otherwise 0, or EM_ENOENT. */
#define MASTER_APP_REMOVED 1
int master_executor_exited(master *m, const char *app, int exec_id, int failed, const char *reason, uint64_t now_ms,
                           void (*kill)(void *ud, const master_exec *e), void *ud, char *why, size_t cap);
/* An executor could not start at all: the dynamic loader on its worker
 * cannot load a library the program needs (the worker's executor_exited
 * says so, reason naming the library; executor/applib.h).  No executor of
 * the application can start there, so it is removed as FAILED at once,
 * as master_executor_exited does after max_exec_retries failures: its
 * other executors are killed (kill(ud, e) for each), why (cap bytes) says
 * what failed, and MASTER_APP_REMOVED is returned.  EM_ENOENT when the
 * executor is not known. */
int master_executor_cannot_run(master *m, const char *app, int exec_id, const char *reason, uint64_t now_ms,
                               void (*kill)(void *ud, const master_exec *e), void *ud, char *why, size_t cap);
/* The application's driver accepted executor exec_id: it runs, and the
 * application's count of failed executors in a row restarts.  0, or
 * EM_ENOENT. */
int master_executor_registered(master *m, const char *app, int exec_id);

/* A worker that just registered (master_register_worker) runs n
 * executors; it reports each with master_executor_running.  Its executors
 * the master knew are unconfirmed until reported; once n reports came
 * (at once, for n == 0) those not reported are dropped and lost(ud, e) is
 * called for each.  0, or EM_ENOENT for a worker not alive. */
int master_worker_report(master *m, const char *worker, int n, void (*lost)(void *ud, const master_exec *e),
                         void *ud);
/* One executor a reporting worker runs (when it is the last the worker
 * said it runs, the report is complete: lost(ud, e) for each executor of
 * the worker left unconfirmed, which is dropped).  MASTER_CONFIRMED: the master
 * granted it there; MASTER_ADOPTED: its application is running but the
 * grant was not known (granted just before the master stopped): it is
 * added, with its cores and memory taken on the worker, and the
 * application's next executor id moves past it; MASTER_KILLED: its
 * application is unknown or finished, or the master granted that id on
 * another worker: kill(ud, e) asks the worker to kill it.  EM_ENOENT for a
 * worker not alive or not reporting (the report is ignored); EM_EINVAL for
 * bad numbers. */
int master_executor_running(master *m, const char *worker, const char *app, int exec_id, int cores, int64_t mem_mib,
                            void (*kill)(void *ud, const master_exec *e), void (*lost)(void *ud, const master_exec *e),
                            void *ud);
/* A driver that lost its master re-attaches to its application id, with
 * its resources (as master_register_app's).  0, or EM_ENOENT (message
 * set) when the master knows no running application of that id: it
 * restarted without recovery, or the application ended. */
int master_reattach_app(master *m, const char *app, const char *name, int cores_max, int cores_per_exec,
                        int64_t mem_mib);

/* Whether the master is RECOVERING (else ALIVE). */
int master_recovering(const master *m);
/* End the recovery if every worker and application it loaded came back
 * (all workers reported), or at once when force is set: workers still
 * UNKNOWN are dead (lost(ud, e) for their executors), reports not
 * complete are taken as they are, applications still UNKNOWN are finished
 * (kill(ud, e) for their executors).  1 when the master is ALIVE (also
 * when it was not recovering), 0 while it still waits. */
int master_recovery_done(master *m, int force, uint64_t now_ms, void (*kill)(void *ud, const master_exec *e),
                         void (*lost)(void *ud, const master_exec *e), void *ud);

/* A number that changes whenever what master_save writes changes (not on
 * heartbeats): the daemon saves when it moved. */
uint64_t master_version(const master *m);
/* The master's recoverable state, as bytes (msgpack: a format name and
 * version, the next application number, the live and UNKNOWN workers, the
 * running applications with their executors), appended to out.  0 or
 * EM_ENOMEM. */
int master_save(const master *m, ebuf *out);
/* Load bytes master_save wrote into m, which must be new (nothing
 * registered).  When they hold any worker or application, m is RECOVERING.
 * Trusts nothing: 0, or EM_ECORRUPT naming what is wrong (m is then left
 * empty and ALIVE). */
int master_load(master *m, const uint8_t *p, size_t n, uint64_t now_ms);

/* The cluster as Spark's master /json: url, workers, aliveworkers, cores,
 * coresused, memory, memoryused, activeapps, completedapps, status
 * (RECOVERING or ALIVE); a worker also has webuiaddress, an application
 * user and memoryperexecutor (Spark 3's name of memoryperslave).  A
 * worker's state is ALIVE, DEAD or UNKNOWN (not
 * back yet after a restart), an application's WAITING, RUNNING, FINISHED,
 * FAILED (removed after ember.deploy.maxExecutorRetries) or UNKNOWN.  Times
 * (an application's starttime, a worker's lastheartbeat) are in epoch
 * milliseconds, as Spark's: wall_ms is the wall clock at the monotonic
 * now_ms every other time of m is counted on. */
int master_json(master *m, uint64_t now_ms, uint64_t wall_ms, ebuf *out);

/* What the pages show beside /json.  A worker's web UI URL
 * ("http://host:port", "" or NULL: none), as its registration says; an
 * application's user and its driver's UI URL, as its registration says.
 * Not part of the saved state: a worker registers again and a driver
 * re-attaches with them.  0, or EM_ENOENT for an unknown id. */
int master_worker_set_webui(master *m, const char *id, const char *url);
int master_app_set_info(master *m, const char *app, const char *user, const char *ui_url);

/* Read-only views of the workers and applications, for the status
 * port's page and metrics (scheduler/master_ui.h).  Pointers are into m,
 * valid until its next change.  Times are m's monotonic milliseconds. */
typedef struct master_worker_view {
    const char *id, *host, *webui, *state; /* state: ALIVE, DEAD or UNKNOWN */
    int port, cores, cores_used;
    int64_t mem_mib, mem_used;
    uint64_t last_beat_ms;
} master_worker_view;

typedef struct master_app_view {
    const char *id, *name, *user, *ui, *state; /* state as /json's */
    int done; /* completed (FINISHED or FAILED) */
    int cores_max, cores_granted;
    int64_t mem_mib; /* per executor */
    uint64_t start_ms, end_ms;
    const master_exec *execs;
    int nexecs;
} master_app_view;

/* How many workers (alive or not) and applications (running, waiting or
 * completed) m knows, and the view of number i (0 <= i < the count), in
 * the order they registered. */
int master_nworkers(const master *m);
int master_napps(const master *m);
void master_worker_at(const master *m, int i, master_worker_view *v);
void master_app_at(const master *m, int i, master_app_view *v);

#endif
