/*
 * cluster_int.h -- the state of the driver's cluster backend (cluster.h),
 * shared by its two files: cluster.c (the master, the executors'
 * connections, their registration and loss) and cluster_tasks.c (the
 * attempts in flight: launches sent in batches, kills, starts, ends).
 * Nothing else includes it.
 */
#ifndef EM_CLUSTER_INT_H
#define EM_CLUSTER_INT_H

#include <pthread.h>
#include <stdint.h>

#include "appserve.h"
#include "backend.h"
#include "buf.h"
#include "conn.h"
#include "events.h"
#include "idmap.h"
#include "ioloop.h"
#include "lcluster.h"
#include "msg.h"

typedef struct cexec {
    int id, cores, alive;
    int batching;        /* send_launches began a batch on c ... */
    int batch_next;      /* ... and the next executor it did (id; -1: none) */
    int served;          /* its map outputs are its worker's shuffle service's: they outlive it */
    int worker_lost;     /* the master said its worker was lost (its outputs went with it) */
    conn *c;
    char addr[80];
    uint64_t heard_ms;   /* its last frame (uv_now) */
    /* How it ended, when the master said so before its connection closed. */
    int exit_known, exit_sig;
    int64_t exit_code;
    char exit_tail[400];
} cexec;

/* The attempts of a lost executor, held until the master relays how its
 * process ended: a crash (a fault, an abort, an exit of its own) was the
 * task's doing and counts against ember.task.maxFailures; a kill from
 * outside, a cut connection or a lost worker does not.  Without word
 * within LOST_WAIT_MS the attempts end as not the task's doing. */
#define LOST_WAIT_MS 3000
typedef struct lost_exec {
    int exec;
    uint64_t *ids;
    size_t n;
    char why[700];
    uint64_t deadline_ms; /* uv_now */
    struct lost_exec *next;
} lost_exec;

typedef struct ctask {
    uint64_t id;
    int exec;
    ebuf part;           /* its result so far, from result_part messages */
    uint64_t part_bytes; /* all of them, kept or not */
} ctask;

typedef struct pend {
    struct pend *next;
    uint64_t id;
    uint8_t *desc;
    size_t len;
    int exec;
} pend;

/* What a listener's connection turned out to be. */
enum { K_UNKNOWN = 0, K_EXEC, K_REFUSED };

typedef struct lconn {
    conn *c;
    int kind, exec;
    appserve_conn *serve; /* what the driver is sending it from the application (appserve.h), or NULL */
} lconn;

typedef struct cluster {
    backend b;
    evq *events;
    ioloop *l;
    conn_opts co;
    char master_url[128], mhost[64], name[128], dhost[64], url[128], scratch[800];
    char *exec_conf;         /* the settings executors get, KEY=VALUE lines */
    char ui_url[256], user[64]; /* for the master's page: the driver's UI, who runs it */
    int mport, dport, lc_workers, lc_cores, exec_cores, cores_max;
    int lc_service;          /* ember.shuffle.service.enabled, for local-cluster's workers */
    int lc_max_exec_retries; /* ember.deploy.maxExecutorRetries, for its master */
    int64_t max_result;      /* ember.driver.maxResultSize (0: none) */
    uint64_t timeout_ms;     /* ember.network.timeout: an executor silent this long is lost */
    iol_timer watch;         /* checks executors' silence (the loop's) */
    uint64_t watch_ms;       /* its previous run */
    int64_t lc_mem_mib, exec_mem_mib;
    int (*ask_commit)(void *c, uint32_t stage, int32_t partition, uint64_t attempt);
    void *commit_ctx;
    listener *ls;
    int port;
    conn *master;
    char app_id[64];
    iol_timer reconnect;  /* a lost master: the next try to re-attach */
    int reattach_refused; /* the master does not know the application: no more tries */
    int master_down;      /* since the master was lost, until re-attached (logs once) */
    /* Start-up: the application's registration (under mu). */
    int reg_state;        /* 0 waiting, 1 registered, < 0 failed */
    char reg_err[600];
    pthread_cond_t reg_cv;
    pthread_mutex_t mu;
    idmap tasks;          /* ctask by attempt id (mu) */
    pend *ph, *pt;        /* launched, not flushed (mu) */
    int total_cores;      /* of executors alive (mu) */
    int granted;          /* executors the master granted (mu) ... */
    uint64_t grant_us;    /* ... the last of them when (ev_now_us; mu) */
    uint64_t register_wait_ms; /* ember.scheduler.maxRegisteredWait */
    int refused_once;
    char why[1200];       /* the last reason an executor went or was refused (mu) */
    int wait_state;       /* the master's last app_waiting state, plus 1 (0: no word since connected; mu) */
    char wait_why[600];   /* and its reason (mu) */
    int master_opened;    /* the master's connection opened (the loop's) */
    cexec *execs;         /* the loop's */
    idmap exec_moved;     /* id -> slot of the executors registered out of
                             order (the others' slot is their id) */
    int nexec, capexec;
    int task_queue;       /* ember.executor.taskQueue: attempts queued per core */
    int task_queue_max;   /* ember.executor.taskQueue.max */
    /* The worker of each executor granted (executor_added; the loop's):
     * a lost worker's shuffle service loses the outputs of every executor
     * it ran, those that ended before it too. */
    struct grant { int exec; char worker[64]; char *out_url, *err_url; } *grants;
    int ngrant, capgrant;
    lconn *lconns;
    int nlconn, caplconn;
    appserve *serve;      /* the binary, broadcasts and records, served (the loop's) */
    lcluster *lc;         /* local-cluster's daemons, or NULL */
    int stopping;
    lost_exec *lost;      /* executors whose end the master has yet to tell (the loop's) */
} cluster;

static inline cexec *exec_of(cluster *k, int id) {
    /* executors usually register in id order from 0: their slot first */
    if (id >= 0 && id < k->nexec && k->execs[id].id == id) return &k->execs[id];
    int i = idmap_index(&k->exec_moved, (uint64_t)(int64_t)id);
    return i >= 0 ? &k->execs[i] : NULL;
}

/* cluster_tasks.c.  The backend's launch, flush, kill and running_since. */
int ck_launch(backend *b, uint64_t task_id, uint8_t *desc, size_t len, int exec);
void ck_flush(backend *b);
int ck_kill(backend *b, uint64_t task_id);
void ck_task_free(ctask *t);
/* Post the end of an attempt that did not run to its end on an executor
 * (its executor is gone, or it could not be sent); lost: not the task's
 * doing. */
void ck_post_ended(cluster *k, uint64_t id, int exec, const char *why, int lost);
/* Executor exec's result_part and task_ended messages (the loop's); an id
 * it does not run is ignored. */
void ck_result_part(cluster *k, conn *c, const msg *m, int exec);
void ck_task_ended(cluster *k, conn *c, const msg *m, int exec);

#endif
