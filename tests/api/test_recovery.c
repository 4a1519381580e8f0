/*
 * test_recovery.c -- the master's restart with real processes on
 * 127.0.0.1 (Spark's FILESYSTEM recovery mode): a master and two workers
 * run as daemons (this test binary in their roles), a driver runs a job
 * against ember://127.0.0.1:PORT, and the master is killed with SIGKILL in
 * the middle of the job's slowed map stage and started again on the same
 * ports.  With FILESYSTEM recovery the job finishes with the answer of the
 * same job on local[2], the restarted master knows both workers and the
 * application again, with the same two executors (none launched twice);
 * with NONE it forgets: the workers register as new, their executors are
 * killed, and the driver is told its application is gone.  A corrupt state
 * file, a missing directory and a directory another master holds stop the
 * start with a message naming the cause; a worker that does not come back
 * is waited for (RECOVERING) until ember.worker.timeout, then dropped.
 * Every process is stopped and waited for by PID; daemons also die with
 * the test (EMBER_PARENT_PID).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"
#include "roles.h"


/* A failed requirement inside a helper that returns 0 (so that the test
 * still stops what it started). */
#define REQ(c)                                                                      \
    do {                                                                            \
        if (!(c)) {                                                                 \
            fprintf(stderr, "  %s:%d: REQ(%s) failed\n", __FILE__, __LINE__, #c);   \
            return 0;                                                               \
        }                                                                           \
    } while (0)

/* The daemons a test started, stopped by PID at its end. */
typedef struct cluster_procs {
    pid_t master, workers[2];
    int port, webport;
    char url[64];
} cluster_procs;


/* A port free now (the kernel's choice). */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int port = -1;
    if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof a) && !getsockname(fd, (struct sockaddr *)&a, &len))
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

/* A master on port and webport, with FILESYSTEM recovery in dir (NULL:
 * NONE; "": FILESYSTEM with no directory set).  Its pid once it listens;
 * -1 when it did not start, with its exit status in *status. */
static pid_t start_master(int port, int webport, const char *dir, const char *log, int *status) {
    int p[2];
    if (pipe2(p, O_CLOEXEC)) return -1;
    char ps[16], ws[16], rd[700];
    snprintf(ps, sizeof ps, "%d", port);
    snprintf(ws, sizeof ws, "%d", webport);
    snprintf(rd, sizeof rd, "ember.deploy.recoveryDirectory=%s", dir ? dir : "");
    char *none[] = {"ember-master", "--port", ps, "--webui-port", ws, "--conf", "ember.worker.timeout=5s", NULL};
    char *fs[] = {"ember-master", "--port", ps, "--webui-port", ws, "--conf", "ember.worker.timeout=5s", "--conf",
                  "ember.deploy.recoveryMode=FILESYSTEM", "--conf", rd, NULL};
    if (dir && !*dir) fs[9] = NULL; /* no directory set */
    pid_t pid = spawn_role("master", dir ? fs : none, p[1], log);
    close(p[1]);
    char line[64] = "";
    struct pollfd pf = {p[0], POLLIN, 0};
    ssize_t k = pid > 0 && poll(&pf, 1, 20000) == 1 ? read(p[0], line, sizeof line - 1) : -1;
    close(p[0]);
    if (k > 0) return pid;
    if (pid > 0) {
        if (k < 0) kill(pid, SIGKILL); /* no word in 20 s */
        waitpid(pid, status, 0);
    }
    return -1;
}

static pid_t start_worker(const char *url, const char *dir, const char *log) {
    char *args[] = {"ember-worker", "--cores", "1", "--memory", "512m", "--work-dir", (char *)dir, "--webui-port", "0",
                    "--conf", "ember.shuffle.service.port=0", (char *)url, NULL}; /* two workers: two ports */
    return spawn_role("worker", args, -1, log);
}

static void stop_all(cluster_procs *cp) {
    for (int i = 0; i < 2; i++) stop_pid(cp->workers[i]);
    stop_pid(cp->master);
    cp->master = cp->workers[0] = cp->workers[1] = 0;
}

/* GET /json from the status port into buf (NUL-terminated); 0 or -1. */
static int get_json(int port, char *buf, size_t cap) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    buf[0] = 0;
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        if (fd >= 0) close(fd);
        return -1;
    }
    static const char req[] = "GET /json HTTP/1.0\r\n\r\n";
    size_t n = 0;
    ssize_t r;
    if (write(fd, req, sizeof req - 1) != (ssize_t)sizeof req - 1) {
        close(fd);
        return -1;
    }
    while (n < cap - 1 && (r = read(fd, buf + n, cap - 1 - n)) > 0) n += (size_t)r;
    buf[n] = 0;
    close(fd);
    return 0;
}

/* Poll /json (every 50 ms, at most 20 s) until it holds every one of the
 * NULL-terminated strings; 1 when it did (buf holds it), else 0 (buf
 * holds the last answer, printed). */
static int wait_json(int port, char *buf, size_t cap, const char *const *want) {
    for (int i = 0; i < 400; i++) {
        int all = !get_json(port, buf, cap);
        for (int k = 0; all && want[k]; k++) all = strstr(buf, want[k]) != NULL;
        if (all) return 1;
        sleep_ms(50);
    }
    fprintf(stderr, "  /json never held what was awaited; last:\n%s\n", buf);
    return 0;
}

/* How many times s occurs in hay. */
static int count_of(const char *hay, const char *s) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, s)); p += strlen(s)) n++;
    return n;
}

/* Entries of dir (but . and ..); -1 when it cannot be read. */
static int entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* Start a master (recovery in dir, or NONE) and two workers of 1 core on
 * free loopback ports; 1 once /json shows both alive. */
static int start_cluster(cluster_procs *cp, const char *dir, char *json, size_t cap) {
    cp->port = free_port();
    cp->webport = free_port();
    REQ(cp->port > 0 && cp->webport > 0 && cp->port != cp->webport);
    snprintf(cp->url, sizeof cp->url, "ember://127.0.0.1:%d", cp->port);
    int st = 0;
    cp->master = start_master(cp->port, cp->webport, dir, tmp_path("master-1.log"), &st);
    REQ(cp->master > 0);
    cp->workers[0] = start_worker(cp->url, tmp_path("w0"), tmp_path("worker-0.log"));
    cp->workers[1] = start_worker(cp->url, tmp_path("w1"), tmp_path("worker-1.log"));
    REQ(cp->workers[0] > 0 && cp->workers[1] > 0);
    const char *want[] = {"\"aliveworkers\":2", "\"status\":\"ALIVE\"", NULL};
    REQ(wait_json(cp->webport, json, cap, want));
    return 1;
}

/* SIGKILL the master by PID and start it again on the same ports (the
 * same recovery directory); 1 once it listens. */
static int restart_master(cluster_procs *cp, const char *dir) {
    kill(cp->master, SIGKILL);
    waitpid(cp->master, NULL, 0);
    cp->master = 0;
    int st = 0;
    cp->master = start_master(cp->port, cp->webport, dir, tmp_path("master-2.log"), &st);
    if (cp->master <= 0) {
        size_t n;
        char *log = read_file_all(tmp_path("master-2.log"), &n);
        fprintf(stderr, "  the master did not start again (status %d): %s\n", st, log ? log : "");
        free(log);
    }
    REQ(cp->master > 0);
    return 1;
}

/* The job: (v % 100, v) for v in 0..19999 on 8 maps, summed by key on 3
 * reducers.  Its map function creates the file named by its argument when
 * it starts (the test's sign that the map stage runs). */
#define N_RECORDS 20000
#define N_KEYS 100

static int fn_mark_mod_key(const em_rec *in, em_emitter *out, const void *arg) {
    int fd = open((const char *)arg, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) close(fd);
    int64_t v = rec_i64(in);
    uint8_t k[8], vv[8];
    em_i64_enc(v % N_KEYS, k);
    em_i64_enc(v, vv);
    return em_emit_pair(out, k, 8, vv, 8);
}

typedef struct job {
    em_ctx *c;
    const char *marker;
    int rc;
    int64_t sums[N_KEYS];
    int keys;
    int exact; /* the whole result is the expected one (expect_mod_sums) */
    char err[1024];
} job;

static void *run_job(void *arg) {
    job *j = arg;
    em_batch *b = NULL;
    j->rc = em_collect(em_reduce_by_key(em_map(em_range(j->c, 0, N_RECORDS, 1, 8), fn_mark_mod_key, j->marker,
                                               strlen(j->marker) + 1),
                                        fn_sum_i64, NULL, 0, 3),
                       &b);
    snprintf(j->err, sizeof j->err, "%s", j->rc ? em_errmsg() : "");
    j->exact = !j->rc && expect_mod_sums(b, N_RECORDS, N_KEYS, j->marker);
    size_t pos = 0;
    em_rec r;
    while (!j->rc && em_batch_next(b, &pos, &r) == 1) {
        int64_t k = em_i64_dec(r.key);
        if (k >= 0 && k < N_KEYS) j->sums[k] = em_i64_dec(r.val);
        j->keys++;
    }
    em_batch_free(b);
    return NULL;
}

/* A context on master; on a cluster, executors of 256 MiB (the workers
 * have 512). */
static em_ctx *open_ctx(const char *master, const char *k1, const char *v1) {
    em_conf *conf = em_conf_new();
    test_conf_set(conf, "ember.local.dir", test_scratchdir());
    test_conf_set(conf, "ember.executor.memory", "256m");
    test_conf_set(conf, "ember.test.faults.dir", gates_dir());
    if (k1) test_conf_set(conf, k1, v1);
    em_ctx *c = em_open(master, conf);
    if (!c) fprintf(stderr, "  em_open(%s): %s\n", master, em_errmsg());
    em_conf_free(conf);
    return c;
}

/* The same job undisturbed on local[2]: the reference answer. */
static int reference(job *ref) {
    memset(ref, 0, sizeof *ref);
    ref->c = open_ctx("local[2]", NULL, NULL);
    REQ(ref->c);
    ref->marker = tmp_path("local.marker");
    run_job(ref);
    em_close(ref->c);
    REQ(ref->rc == 0 && ref->exact && ref->keys == N_KEYS);
    return 1;
}

static int recovery_body(cluster_procs *cp) {
    char json[16384], dir[700];
    snprintf(dir, sizeof dir, "%s", tmp_path("recovery"));
    job ref;
    REQ(reference(&ref));
    REQ(start_cluster(cp, dir, json, sizeof json));
    /* The first job's map tasks (stage 0) are held at a gate until the
     * master has died and come back: it dies during the maps. */
    job j;
    memset(&j, 0, sizeof j);
    j.c = open_ctx(cp->url, "ember.test.faults", "hold:stage=0,gate=restarted");
    REQ(j.c);
    j.marker = tmp_path("map.marker");
    const char *granted[] = {"\"coresused\":2", "\"state\":\"RUNNING\"", NULL};
    REQ(wait_json(cp->webport, json, sizeof json, granted));
    pthread_t t;
    REQ(pthread_create(&t, NULL, run_job, &j) == 0);
    int started = gate_wait_held("restarted", 0, 0, 0); /* map 0, launched first */
    int restarted = started && restart_master(cp, dir);
    gate_release("restarted");
    pthread_join(t, NULL);
    if (j.rc) fprintf(stderr, "  the job failed: %s\n", j.err);
    int ok = started && restarted && j.rc == 0 && j.exact && j.keys == N_KEYS &&
             !memcmp(j.sums, ref.sums, sizeof j.sums);
    /* The restarted master recovered: both workers alive, the application
     * running with its two executors, ids 0 and 1 (none launched again),
     * the two cores in use, nothing waiting for anything. */
    const char *back[] = {"\"status\":\"ALIVE\"", "\"aliveworkers\":2", "\"coresused\":2,", "\"id\":\"app-0000\"",
                          "\"state\":\"RUNNING\"", "\"completedapps\":[]", NULL};
    ok = ok && wait_json(cp->webport, json, sizeof json, back);
    int execs = count_of(json, ",\"worker\":\"");
    int ids_ok = strstr(json, "{\"id\":0,\"worker\":") && strstr(json, "{\"id\":1,\"worker\":");
    /* And on the workers: one executor directory each for the application,
     * beside the application's shuffle directory (the shuffle service's). */
    int dirs = entries(tmp_path("w0/app-0000")) + entries(tmp_path("w1/app-0000"));
    /* The cluster still runs jobs, on the same executors. */
    job j2;
    memset(&j2, 0, sizeof j2);
    j2.c = j.c;
    j2.marker = tmp_path("map2.marker");
    if (ok) run_job(&j2);
    int again = j2.rc == 0 && j2.exact && j2.keys == N_KEYS && !memcmp(j2.sums, ref.sums, sizeof j2.sums);
    int dirs2 = entries(tmp_path("w0/app-0000")) + entries(tmp_path("w1/app-0000"));
    /* The hold struck each of the first job's 8 map attempts, and no task
     * ran twice: 8 maps and 3 reduces a job. */
    em_stats st;
    em_get_stats(j.c, &st);
    if (st.faults_fired != 8 || st.tasks_run != 22)
        fprintf(stderr, "  %lld faults fired in %lld attempts (8 in 22 expected)\n", (long long)st.faults_fired,
                (long long)st.tasks_run);
    int delayed = st.faults_fired == 8 && st.tasks_run == 22;
    em_close(j.c);
    size_t n = 0;
    char *log = read_file_all(tmp_path("master-2.log"), &n);
    int all_back = log && strstr(log, "recovery done: ALIVE") && !strstr(log, "ember.worker.timeout passed") &&
                   strstr(log, "application app-0000 (ember) re-attached");
    if (!all_back) fprintf(stderr, "  restarted master's log:\n%s\n", log ? log : "");
    free(log);
    REQ(ok);
    REQ(execs == 2 && ids_ok);
    REQ(dirs == 4 && dirs2 == 4);
    REQ(again);
    REQ(delayed);
    REQ(all_back);
    return 1;
}

TEST(recovery_master_restart_job_finishes) {
    cluster_procs cp;
    memset(&cp, 0, sizeof cp);
    int ok = recovery_body(&cp);
    stop_all(&cp);
    CHECK(ok);
}

static int none_body(cluster_procs *cp) {
    char json[16384];
    REQ(start_cluster(cp, NULL, json, sizeof json));
    em_ctx *c = open_ctx(cp->url, "ember.scheduler.maxRegisteredWait", "3s");
    REQ(c);
    int64_t n = 0;
    int rc = em_count(em_range(c, 0, 100, 1, 4), &n);
    const char *granted[] = {"\"coresused\":2", NULL};
    int ok = rc == 0 && n == 100 && wait_json(cp->webport, json, sizeof json, granted);
    ok = ok && restart_master(cp, NULL);
    /* The new master knows nothing: the workers register as new, the
     * executors they report are not its own and are killed (their
     * directories go), no application, no core in use. */
    const char *fresh[] = {"\"status\":\"ALIVE\"", "\"aliveworkers\":2", "\"coresused\":0,", "\"activeapps\":[]",
                           NULL};
    ok = ok && wait_json(cp->webport, json, sizeof json, fresh);
    int gone = 0;
    for (int i = 0; ok && i < 400 && !gone; i++) {
        gone = entries(tmp_path("w0/app-0000")) < 0 && entries(tmp_path("w1/app-0000")) < 0;
        if (!gone) sleep_ms(50);
    }
    /* The driver's re-attach is refused, and its next job says why. */
    int rc2 = ok ? em_count(em_range(c, 0, 100, 1, 4), &n) : 0;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", em_errmsg());
    em_close(c);
    size_t len;
    char *log = read_file_all(tmp_path("master-2.log"), &len);
    int killed = log && count_of(log, "killed (its application is not running here)") == 2;
    if (!killed) fprintf(stderr, "  restarted master's log:\n%s\n", log ? log : "");
    free(log);
    REQ(ok);
    REQ(gone);
    REQ(killed);
    REQ(rc2 == EM_EEXEC);
    if (!strstr(msg, "refused to re-attach application app-0000")) fprintf(stderr, "  message: %s\n", msg);
    REQ(strstr(msg, "refused to re-attach application app-0000") && strstr(msg, "without its recovery state"));
    return 1;
}

TEST(recovery_none_forgets) {
    cluster_procs cp;
    memset(&cp, 0, sizeof cp);
    int ok = none_body(&cp);
    stop_all(&cp);
    CHECK(ok);
}

/* The master's log (stderr) after a failed start, in a static buffer. */
static const char *log_of(const char *name) {
    static char buf[4096];
    size_t n;
    char *log = read_file_all(tmp_path(name), &n);
    snprintf(buf, sizeof buf, "%s", log ? log : "");
    free(log);
    return buf;
}

static int corrupt_body(cluster_procs *cp) {
    char json[16384], state[800], dir[700];
    snprintf(dir, sizeof dir, "%s", tmp_path("recovery"));
    snprintf(state, sizeof state, "%s/master-state", dir);
    REQ(start_cluster(cp, dir, json, sizeof json));
    /* A second master on the same directory is refused. */
    int st = 0;
    pid_t other = start_master(free_port(), free_port(), dir, tmp_path("other.log"), &st);
    if (other > 0) stop_pid(other);
    REQ(other < 0 && WIFEXITED(st) && WEXITSTATUS(st) == 1);
    REQ(strstr(log_of("other.log"), "is in use by another master"));
    /* The state names both workers; one byte of it flipped. */
    stop_pid(cp->master);
    cp->master = 0;
    size_t n = 0;
    char *bytes = read_file_all(state, &n);
    int named = 0;
    for (const char *q = bytes; q && (q = memmem(q, n - (size_t)(q - bytes), "worker-", 7)); q += 7) named++;
    REQ(bytes && n > 40 && named == 2);
    bytes[30] ^= 0x20;
    REQ(write_file(state, bytes, n) == 0);
    free(bytes);
    pid_t m = start_master(cp->port, cp->webport, dir, tmp_path("corrupt.log"), &st);
    if (m > 0) stop_pid(m);
    REQ(m < 0 && WIFEXITED(st) && WEXITSTATUS(st) == 1);
    const char *log = log_of("corrupt.log");
    if (!strstr(log, "is corrupt: checksum mismatch")) fprintf(stderr, "  log: %s\n", log);
    REQ(strstr(log, state) && strstr(log, "is corrupt: checksum mismatch") &&
        strstr(log, "delete the file to start with an empty state"));
    /* FILESYSTEM without a directory: a usage error saying so. */
    m = start_master(cp->port, cp->webport, "", tmp_path("nodir.log"), &st);
    if (m > 0) stop_pid(m);
    REQ(m < 0 && WIFEXITED(st) && WEXITSTATUS(st) == 2);
    REQ(strstr(log_of("nodir.log"), "ember.deploy.recoveryMode is FILESYSTEM but ember.deploy.recoveryDirectory is "
                                    "not set"));
    return 1;
}

TEST(recovery_corrupt_state_refused) {
    cluster_procs cp;
    memset(&cp, 0, sizeof cp);
    int ok = corrupt_body(&cp);
    stop_all(&cp);
    CHECK(ok);
}

static int timeout_body(cluster_procs *cp) {
    char json[16384], dir[700];
    snprintf(dir, sizeof dir, "%s", tmp_path("recovery"));
    REQ(start_cluster(cp, dir, json, sizeof json));
    /* While the master is down, one worker goes for good. */
    kill(cp->master, SIGKILL);
    waitpid(cp->master, NULL, 0);
    cp->master = 0;
    stop_pid(cp->workers[1]);
    cp->workers[1] = 0;
    int st = 0;
    cp->master = start_master(cp->port, cp->webport, dir, tmp_path("master-2.log"), &st);
    REQ(cp->master > 0);
    /* It waits for the worker that does not come back (ember.worker.timeout
     * is 5 s here): RECOVERING, that worker UNKNOWN, the other ALIVE. */
    const char *waiting[] = {"\"status\":\"RECOVERING\"", "\"state\":\"UNKNOWN\"", "\"aliveworkers\":1", NULL};
    REQ(wait_json(cp->webport, json, sizeof json, waiting));
    /* Then gives up on it: ALIVE, that worker DEAD. */
    const char *done[] = {"\"status\":\"ALIVE\"", "\"state\":\"DEAD\"", "\"aliveworkers\":1", NULL};
    REQ(wait_json(cp->webport, json, sizeof json, done));
    REQ(count_of(json, "\"state\":\"ALIVE\"") == 1 && !strstr(json, "UNKNOWN"));
    size_t n;
    char *log = read_file_all(tmp_path("master-2.log"), &n);
    int said = log && strstr(log, "recovery done (ember.worker.timeout passed");
    free(log);
    REQ(said);
    return 1;
}

/* A worker that does not come back after the restart: the master is
 * RECOVERING until ember.worker.timeout, then drops it and is ALIVE. */
TEST(recovery_missing_worker_dropped_after_timeout) {
    cluster_procs cp;
    memset(&cp, 0, sizeof cp);
    int ok = timeout_body(&cp);
    stop_all(&cp);
    CHECK(ok);
}

/* The workers' shuffle service keeps an application's map outputs in
 * DIR/<app>/shuffle/ while it runs (its executors write them there) and
 * removes them, with the application's directory, when the application
 * ends: the driver closes, the master tells every worker. */
static int app_end_body(cluster_procs *cp) {
    char json[8192];
    REQ(start_cluster(cp, NULL, json, sizeof json));
    job ref;
    REQ(reference(&ref));
    job j;
    memset(&j, 0, sizeof j);
    j.c = open_ctx(cp->url, NULL, NULL);
    REQ(j.c);
    j.marker = tmp_path("app-end.marker");
    run_job(&j);
    int exact = j.rc == 0 && j.exact && j.keys == N_KEYS && !memcmp(j.sums, ref.sums, sizeof j.sums);
    if (j.rc) fprintf(stderr, "  the job failed: %s\n", j.err);
    /* 8 map outputs (a data file and an index each) over the two workers. */
    int files = entries(tmp_path("w0/app-0000/shuffle")) + entries(tmp_path("w1/app-0000/shuffle"));
    em_close(j.c);
    int gone = 0;
    for (int i = 0; i < 400 && !gone; i++) {
        gone = entries(tmp_path("w0/app-0000")) < 0 && entries(tmp_path("w1/app-0000")) < 0;
        if (!gone) sleep_ms(25);
    }
    REQ(exact);
    if (files != 16) fprintf(stderr, "  %d shuffle files\n", files);
    REQ(files == 16);
    REQ(gone);
    return 1;
}

TEST(recovery_shuffle_files_removed_when_app_ends) {
    cluster_procs cp;
    memset(&cp, 0, sizeof cp);
    int ok = app_end_body(&cp);
    stop_all(&cp);
    CHECK(ok);
}
