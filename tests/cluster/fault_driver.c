/*
 * fault_driver.c -- fault scenarios of cluster mode across hosts, for
 * tests/cluster/netns.sh, written against the public API only (as a user's
 * driver program is).
 *
 *     fault_driver [--conf KEY=VALUE]... [--executors N] [--dir DIR] SCENARIO MASTER
 *
 * Each scenario runs one job twice: undisturbed on local[2] (the reference
 * answer), then on MASTER, a cluster whose executors run on two hosts at
 * least (ember://HOST:PORT; a local master is refused, since the faults
 * stop and kill the process running the task, and local-cluster, all on
 * one host, fails the check for two), with a fault its own user function
 * makes, once, from inside the executor that runs it:
 *
 *   spec     speculation on, a job of two partitions: the first attempt
 *            of partition 0 stops its own executor (SIGSTOP).  The
 *            speculative copy must win, on an executor of another host
 *            though another executor shares the stopped one's host; the
 *            stopped executor misses its heartbeats for
 *            ember.network.timeout (4 s), is declared lost and killed by
 *            its worker; the next job runs.  netns.sh's cluster makes the
 *            stopped executor's neighbour the roomier choice (see there),
 *            so only the preference for another host sends the copy
 *            there.
 *   service  the worker's shuffle service (on by default): a reduce task
 *            kills its own executor (SIGKILL).  The worker serves the dead
 *            executor's map outputs, so no map task runs again, and a
 *            later job over the same shuffle skips its map stage.
 *   worker   a reduce task kills its executor's worker (SIGKILL by its
 *            pid, the executor's parent) and then its executor.  The
 *            outputs of the map tasks that ran on that host are lost and
 *            only those run again, on the workers left.
 *   lost     the files of one host's map outputs deleted between two
 *            actions over the same shuffle (--lose GLOB names them, as a
 *            tmp cleaner or a replaced disk would take them; files that
 *            existed before the first action are left alone).  The
 *            reduce task that meets the first lost output checks the
 *            others of its executor, so one failed stage attempt and one
 *            map stage attempt recompute exactly the lost ones.
 *
 * Where a task ran is observed from inside it: its executor's first
 * non-loopback IPv4 address (each host of the netns cluster has one) and
 * pid.  Before the job the driver runs small jobs until it has seen
 * --executors N distinct executors (default 2), which names the hosts;
 * tasks then count themselves per host in accumulators (a task's additions
 * count once, when it first succeeds).  The task that makes a fault first
 * creates a marker file in DIR (O_EXCL: exactly once) holding its pid, its
 * parent's pid and its host, and the driver reads it back.
 *
 * Output: one line of KEY=VALUE fields (the answer as result=, the local
 * one as local=, hosts= with the executors seen on each, counters from
 * em_get_stats and per-host counts of tasks), then "ok", or one
 * "FAIL <check>" line per failed check.  Exit status: 0 when every check
 * holds, 1 when one does not or a job fails, 2 for a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ember.h"

#define MAX_HOSTS 8
#define MAX_EXECS 64
#define MAX_CONF 64
#define HOST_LEN INET_ADDRSTRLEN /* 16: read_marker reads at most 15 */

static const char usage_text[] =
    "usage: fault_driver [--conf KEY=VALUE]... [--executors N] [--dir DIR] [--lose GLOB]... SCENARIO MASTER\n"
    "  SCENARIO: spec, service, worker or lost (see the file's header comment).\n"
    "  MASTER: ember://HOST:PORT of a cluster with executors on two hosts or more.\n"
    "  --conf KEY=VALUE  a setting of both runs (repeatable)\n"
    "  --executors N     executors to wait for before the job (default 2)\n"
    "  --dir DIR         where the fault's marker and the attempts' trail go\n"
    "                    (default: a new directory under $TMPDIR or /tmp,\n"
    "                    removed at the end)\n"
    "  --lose GLOB       lost: the map output files to delete (repeatable)\n";

/* ------------------------------------------------------------ the tasks */

enum { FAULT_NONE, FAULT_STOP, FAULT_KILL_EXECUTOR, FAULT_KILL_WORKER };

/* Every job function's argument blob. */
typedef struct job_arg {
    int fault;                       /* FAULT_*: NONE in the local run */
    int nhosts;                      /* hosts[] to count tasks by (0: none) */
    char hosts[MAX_HOSTS][HOST_LEN];
    em_acc seen;                     /* records the first stage read */
    em_acc map_on[MAX_HOSTS];        /* first-stage tasks per host */
    em_acc red_on[MAX_HOSTS];        /* second-stage tasks per host */
    char marker[512];                /* made once, by the faulting attempt */
    char trail[512];                 /* each attempt of the job appends
                                        "sPART@HOST/PID " ("": none) */
} job_arg;

/* The calling process's first non-loopback IPv4 address into buf (or
 * "unknown"). */
static void host_addr(char *buf, size_t n) {
    struct ifaddrs *ifs = NULL;
    snprintf(buf, n, "unknown");
    if (getifaddrs(&ifs) != 0) return;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK)) continue;
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr, buf, (socklen_t)n);
        break;
    }
    freeifaddrs(ifs);
}

/* Add 1 to acc[i] for this executor's host i, when a->nhosts names hosts:
 * 0, or a task failure naming a host the driver never saw. */
static int count_on(const job_arg *a, const em_acc *acc) {
    if (a->nhosts == 0) return 0;
    char host[HOST_LEN];
    host_addr(host, sizeof host);
    for (int i = 0; i < a->nhosts; i++)
        if (!strcmp(a->hosts[i], host)) {
            em_acc_add_i64(acc[i], 1);
            return 0;
        }
    return em_fail("task ran on %s, a host the driver did not see before the job", host);
}

/* Create the marker with "PID PPID HOST": 1 for the one caller that
 * creates it, 0 when it exists already, < 0 on failure. */
static int make_marker(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return errno == EEXIST ? 0 : em_fail("cannot create %s: %s", path, strerror(errno));
    char host[HOST_LEN], s[128];
    host_addr(host, sizeof host);
    int n = snprintf(s, sizeof s, "%d %d %s\n", (int)getpid(), (int)getppid(), host);
    int ok = write(fd, s, (size_t)n) == n;
    close(fd);
    return ok ? 1 : em_fail("cannot write %s", path);
}

/* Append "sPART@HOST/PID " to a->trail, s the stage's letter (one write:
 * O_APPEND keeps concurrent attempts' notes whole).  A trail it cannot
 * write is no failure: it only says where attempts ran. */
static void note_attempt(const job_arg *a, char stage, int part) {
    if (!a->trail[0]) return;
    char host[HOST_LEN], s[64];
    host_addr(host, sizeof host);
    int n = snprintf(s, sizeof s, "%c%d@%s/%d ", stage, part, host, (int)getpid());
    int fd = open(a->trail, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) return;
    if (write(fd, s, (size_t)n) != n) n = 0;
    close(fd);
}

/* The executor a task runs in: "HOST PID", one record per partition. */
static int fn_whoami(int part, em_iter *in, em_emitter *out, const void *arg) {
    em_rec r;
    int rc;
    while ((rc = em_iter_next(in, &r)) > 0) {
    }
    if (rc < 0) return rc;
    char host[HOST_LEN], s[HOST_LEN + 24];
    host_addr(host, sizeof host);
    int n = snprintf(s, sizeof s, "%s %d", host, (int)getpid());
    return em_emit(out, s, (size_t)n);
}

/* spec: each number as decimal text.  The first attempt of partition 0
 * stops its executor first; partition 0's successful attempt counts its
 * host in map_on. */
static int fn_spec(int part, em_iter *in, em_emitter *out, const void *arg) {
    const job_arg *a = arg;
    note_attempt(a, 's', part);
    if (a->fault == FAULT_STOP && part == 0) {
        int made = make_marker(a->marker);
        if (made < 0) return made;
        /* raise, not kill(getpid(), ...): a signal to the process goes to
         * any of its threads, and this one could finish the partition and
         * its result leave before the stop reached it; raise stops this
         * thread before it returns. */
        if (made) raise(SIGSTOP);
    }
    em_rec r;
    int rc;
    int64_t n = 0;
    while ((rc = em_iter_next(in, &r)) > 0) {
        char buf[24];
        int len = snprintf(buf, sizeof buf, "%lld", (long long)em_i64_dec(r.val));
        if ((rc = em_emit(out, buf, (size_t)len)) < 0) return rc;
        n++;
    }
    if (rc < 0) return rc;
    em_acc_add_i64(a->seen, n);
    return part == 0 ? count_on(a, a->map_on) : 0;
}

/* service and worker, map side: v -> (v mod 10, v), and the task counts
 * its host in map_on. */
static int fn_key_mod(int part, em_iter *in, em_emitter *out, const void *arg) {
    const job_arg *a = arg;
    note_attempt(a, 'm', part);
    em_rec r;
    int rc;
    int64_t n = 0;
    while ((rc = em_iter_next(in, &r)) > 0) {
        int64_t v = em_i64_dec(r.val);
        uint8_t k[8];
        em_i64_enc(v % 10, k);
        if ((rc = em_emit_pair(out, k, sizeof k, r.val, r.vlen)) < 0) return rc;
        n++;
    }
    if (rc < 0) return rc;
    em_acc_add_i64(a->seen, n);
    return count_on(a, a->map_on);
}

/* service and worker, reduce side: the sums pass through; the task that
 * meets key 0 first kills its executor (and before it, for the worker
 * scenario, the executor's worker, its parent); the task counts its host
 * in red_on. */
static int fn_reduce_side(int part, em_iter *in, em_emitter *out, const void *arg) {
    const job_arg *a = arg;
    note_attempt(a, 'r', part);
    em_rec r;
    int rc;
    while ((rc = em_iter_next(in, &r)) > 0) {
        if (a->fault != FAULT_NONE && em_i64_dec(r.key) == 0) {
            int made = make_marker(a->marker);
            if (made < 0) return made;
            if (made && a->fault == FAULT_KILL_WORKER) kill(getppid(), SIGKILL);
            if (made) raise(SIGKILL);
        }
        if ((rc = em_emit_pair(out, r.key, r.klen, r.val, r.vlen)) < 0) return rc;
    }
    if (rc < 0) return rc;
    return count_on(a, a->red_on);
}

/* ------------------------------------------------------------ the driver */

static int failures;

/* A check: prints "FAIL what" when cond is false. */
static void check(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int cond, const char *fmt, ...) {
    if (cond) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    failures++;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Whether process pid is gone (or a zombie), waiting up to 20 s. */
static int gone_within(int pid) {
    for (int i = 0; i < 400; i++) {
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f) return 1;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        char *rp = strrchr(buf, ')');
        if (rp && (rp[2] == 'Z' || rp[2] == 'X')) return 1;
        sleep_ms(50);
    }
    return 0;
}

/* The marker's "PID PPID HOST": 1 when read, else 0. */
static int read_marker(const char *path, int *pid, int *ppid, char *host) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fscanf(f, "%d %d %15s", pid, ppid, host) == 3; /* host: HOST_LEN bytes */
    fclose(f);
    return ok;
}

/* The executors of ctx and their hosts: small jobs until `want` distinct
 * executors ran tasks (or 200 tries).  Fills a->hosts and on[i], the
 * executors seen on hosts[i]; returns the number of executors seen, or < 0
 * when a job fails. */
static int find_executors(em_ctx *ctx, int want, job_arg *a, int *on) {
    char seen[MAX_EXECS][HOST_LEN + 24];
    int nseen = 0;
    for (int t = 0; t < 200 && nseen < want; t++) {
        em_batch *b = NULL;
        em_rdd *r = em_map_partitions(em_range(ctx, 0, 32, 1, 32), fn_whoami, NULL, 0);
        if (!r || em_collect(r, &b) != 0) return -1;
        size_t pos = 0;
        em_rec rec;
        while (em_batch_next(b, &pos, &rec) == 1) {
            char s[HOST_LEN + 24];
            snprintf(s, sizeof s, "%.*s", (int)rec.vlen, (const char *)rec.val);
            int known = 0;
            for (int i = 0; i < nseen; i++) known |= !strcmp(seen[i], s);
            if (known || nseen == MAX_EXECS) continue;
            snprintf(seen[nseen++], sizeof seen[0], "%s", s);
            char *sp = strchr(s, ' ');
            if (sp) *sp = 0;
            int h = 0;
            while (h < a->nhosts && strcmp(a->hosts[h], s)) h++;
            if (h == MAX_HOSTS) continue;
            if (h == a->nhosts) snprintf(a->hosts[a->nhosts++], HOST_LEN, "%.*s", HOST_LEN - 1, s);
            on[h]++;
        }
        em_batch_free(b);
        em_rdd_release(r);
        if (nseen < want) sleep_ms(50);
    }
    return nseen;
}

/* "h1:N,h2:M" of a's hosts and their executors on[i] into buf. */
static const char *host_list(const job_arg *a, const int *on, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < a->nhosts && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s:%d", i ? "," : "", a->hosts[i], on[i]);
    return buf;
}

/* "h1:N,h2:M" of the accumulators acc per host into buf; *total gets the
 * sum and *nonzero the number of hosts with a count. */
static const char *per_host(em_ctx *ctx, const job_arg *a, const em_acc *acc, char *buf, size_t n, int64_t *total,
                            int *nonzero) {
    size_t len = 0;
    buf[0] = 0;
    *total = 0;
    *nonzero = 0;
    for (int i = 0; i < a->nhosts && len < n; i++) {
        int64_t v = em_acc_value_i64(ctx, acc[i]);
        *total += v;
        *nonzero += v > 0;
        len += (size_t)snprintf(buf + len, n - len, "%s%s:%lld", i ? "," : "", a->hosts[i], (long long)v);
    }
    return buf;
}

/* A context on master with the user's settings and the scenario's. */
static em_ctx *open_ctx(const char *master, const char *const *user, int nuser, const char *const (*scen)[2]) {
    em_conf *conf = em_conf_new();
    int ok = conf && em_conf_set(conf, "ember.app.name", "fault_driver") == 0 &&
             em_conf_set(conf, "ember.progress", "false") == 0;
    for (int i = 0; ok && scen && scen[i][0]; i++) ok = em_conf_set(conf, scen[i][0], scen[i][1]) == 0;
    for (int i = 0; ok && i < nuser; i++) {
        const char *eq = strchr(user[i], '=');
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)(eq - user[i]), user[i]);
        ok = em_conf_set(conf, key, eq + 1) == 0;
    }
    em_ctx *ctx = ok ? em_open(master, conf) : NULL;
    if (!ctx) fprintf(stderr, "fault_driver: %s: %s\n", master, em_errmsg());
    em_conf_free(conf);
    return ctx;
}

/* The job of a scenario on ctx: its answer as text into ans (the count and
 * sum of the numbers for spec, the sum of each key for the others).  0, or
 * < 0 when the job fails (message printed). */
static int run_spec_job(em_ctx *ctx, const job_arg *a, char *ans, size_t n) {
    em_rdd *r = em_map_partitions(em_range(ctx, 0, 800, 1, 2), fn_spec, a, sizeof *a);
    em_batch *b = NULL;
    if (!r || em_collect(r, &b) != 0) {
        fprintf(stderr, "fault_driver: spec job: %s\n", em_errmsg());
        return -1;
    }
    size_t pos = 0;
    em_rec rec;
    int64_t sum = 0, count = 0;
    while (em_batch_next(b, &pos, &rec) == 1) {
        char s[32];
        snprintf(s, sizeof s, "%.*s", (int)(rec.vlen < 31 ? rec.vlen : 31), (const char *)rec.val);
        sum += strtoll(s, NULL, 10);
        count++;
    }
    em_batch_free(b);
    snprintf(ans, n, "count:%lld,sum:%lld", (long long)count, (long long)sum);
    return 0;
}

/* Sums of 0..19999 by v mod 10, through 6 map and 2 reduce partitions. */
#define SUM_N 20000
#define SUM_MAPS 6
static em_rdd *sums_rdd(em_ctx *ctx, const job_arg *a) {
    em_rdd *keyed = em_map_partitions(em_range(ctx, 0, SUM_N, 1, SUM_MAPS), fn_key_mod, a, sizeof *a);
    return keyed ? em_reduce_by_key(keyed, em_sum_i64, NULL, 0, 2) : NULL;
}

/* collect r (key, sum) pairs into "k:sum,..." ordered by key. */
static int collect_sums(em_rdd *r, const char *what, char *ans, size_t n) {
    em_batch *b = NULL;
    if (!r || em_collect(r, &b) != 0) {
        fprintf(stderr, "fault_driver: %s: %s\n", what, em_errmsg());
        return -1;
    }
    int64_t sums[10];
    int have[10] = {0}, bad = 0;
    size_t pos = 0;
    em_rec rec;
    while (em_batch_next(b, &pos, &rec) == 1) {
        int64_t k = em_i64_dec(rec.key);
        if (k < 0 || k > 9 || have[k]) {
            bad = 1;
            continue;
        }
        have[k] = 1;
        sums[k] = em_i64_dec(rec.val);
    }
    em_batch_free(b);
    size_t len = 0;
    ans[0] = 0;
    for (int k = 0; k < 10 && len < n; k++) {
        if (have[k]) len += (size_t)snprintf(ans + len, n - len, "%s%d:%lld", k ? "," : "", k, (long long)sums[k]);
        else len += (size_t)snprintf(ans + len, n - len, "%s%d:missing", k ? "," : "", k);
    }
    if (bad && len < n) snprintf(ans + len, n - len, ",bad-keys");
    return 0;
}

/* A fresh job_arg for ctx: accumulators made, no host, no fault. */
static void arg_init(em_ctx *ctx, job_arg *a, const char *marker) {
    memset(a, 0, sizeof *a);
    a->seen = em_acc_i64(ctx, "seen");
    for (int i = 0; i < MAX_HOSTS; i++) {
        a->map_on[i] = em_acc_i64(ctx, "map tasks on a host");
        a->red_on[i] = em_acc_i64(ctx, "reduce tasks on a host");
    }
    snprintf(a->marker, sizeof a->marker, "%s", marker);
    if (marker[0]) snprintf(a->trail, sizeof a->trail, "%.500s.trail", marker); /* as main's */
}

/* The attempts a's trail names, "s0@HOST/PID,..." in their order, into
 * buf ("none" when there is no trail). */
static const char *read_trail(const job_arg *a, char *buf, size_t n) {
    snprintf(buf, n, "none");
    FILE *f = a->trail[0] ? fopen(a->trail, "r") : NULL;
    if (!f) return buf;
    size_t len = fread(buf, 1, n - 1, f);
    fclose(f);
    while (len > 0 && buf[len - 1] == ' ') len--;
    buf[len] = 0;
    for (char *p = buf; *p; p++)
        if (*p == ' ') *p = ',';
    return buf;
}

/* The reference answer: the scenario's job undisturbed on local[2]. */
static int local_answer(const char *scenario, const char *const *user, int nuser, char *ans, size_t n) {
    em_ctx *ctx = open_ctx("local[2]", user, nuser, NULL);
    if (!ctx) return -1;
    job_arg a;
    arg_init(ctx, &a, "");
    int rc = !strcmp(scenario, "spec") ? run_spec_job(ctx, &a, ans, n)
                                       : collect_sums(em_map_partitions(sums_rdd(ctx, &a), fn_reduce_side, &a, sizeof a),
                                                      "local job", ans, n);
    em_close(ctx);
    return rc;
}

static void stats_delta(const em_stats *s0, const em_stats *s1, em_stats *d) {
    d->tasks_run = s1->tasks_run - s0->tasks_run;
    d->map_tasks_run = s1->map_tasks_run - s0->map_tasks_run;
    d->tasks_failed = s1->tasks_failed - s0->tasks_failed;
    d->tasks_killed = s1->tasks_killed - s0->tasks_killed;
    d->tasks_speculative = s1->tasks_speculative - s0->tasks_speculative;
    d->speculative_wins = s1->speculative_wins - s0->speculative_wins;
    d->stages_skipped = s1->stages_skipped - s0->stages_skipped;
    d->shuffle_segments_fetched = s1->shuffle_segments_fetched - s0->shuffle_segments_fetched;
    d->shuffle_segments_host_local = s1->shuffle_segments_host_local - s0->shuffle_segments_host_local;
    d->stage_attempts_failed = s1->stage_attempts_failed - s0->stage_attempts_failed;
}

/* spec: see the header comment. */
static int scenario_spec(em_ctx *ctx, job_arg *a, const int *on, const char *want) {
    char ans[256], hosts[256], wins[256];
    em_stats s0, s1, s2, d;
    a->fault = FAULT_STOP;
    em_get_stats(ctx, &s0);
    int rc = run_spec_job(ctx, a, ans, sizeof ans);
    em_get_stats(ctx, &s1);
    stats_delta(&s0, &s1, &d);
    char trail[1024];
    read_trail(a, trail, sizeof trail);
    int pid = 0, ppid = 0, gone = 0;
    char stopped[HOST_LEN] = "none";
    if (read_marker(a->marker, &pid, &ppid, stopped)) {
        gone = gone_within(pid);
        if (!gone) kill(pid, SIGKILL); /* leave nothing behind, then fail */
    }
    int64_t won_total;
    int won_hosts;
    per_host(ctx, a, a->map_on, wins, sizeof wins, &won_total, &won_hosts);
    const char *winner = "none";
    int beside = 0; /* executors on the stopped one's host */
    for (int i = 0; i < a->nhosts; i++) {
        if (em_acc_value_i64(ctx, a->map_on[i]) > 0) winner = a->hosts[i];
        if (!strcmp(a->hosts[i], stopped)) beside = on[i];
    }
    int64_t seen = em_acc_value_i64(ctx, a->seen);
    /* The cluster runs the next job, every executor left taking tasks. */
    int64_t next = -1;
    if (em_count(em_range(ctx, 0, 1000, 1, 8), &next) != 0) fprintf(stderr, "fault_driver: next job: %s\n", em_errmsg());
    em_get_stats(ctx, &s2);
    printf("scenario=spec result=%s local=%s hosts=%s speculative=%lld speculative_wins=%lld "
           "tasks=%lld failed=%lld killed=%lld stopped=%s/%d winner=%s stopped_gone=%d seen=%lld next_job=%lld "
           "attempts=%s\n",
           rc ? "error" : ans, want, host_list(a, on, hosts, sizeof hosts), (long long)d.tasks_speculative,
           (long long)d.speculative_wins, (long long)d.tasks_run, (long long)d.tasks_failed, (long long)d.tasks_killed,
           stopped, pid, winner, gone, (long long)seen, (long long)next, trail);
    check(rc == 0 && !strcmp(ans, want), "the answer equals local[2]'s");
    check(pid > 0, "partition 0's first attempt stopped its executor");
    check(beside >= 2, "another executor beside the stopped one on its host (so the other host was a choice)");
    check(d.tasks_speculative == 1, "one speculative copy launched");
    check(d.speculative_wins == 1, "the speculative copy won");
    check(won_total == 1, "partition 0 succeeded once");
    check(strcmp(winner, "none") && strcmp(winner, stopped), "the copy won on another host than the stopped executor's");
    check(seen == 800, "each record counted once (the stopped attempt published nothing)");
    check(gone, "the stopped executor was declared lost and killed by its worker");
    check(next == 1000, "the next job ran");
    return 0;
}

/* service and worker: see the header comment. */
static int scenario_kill(em_ctx *ctx, job_arg *a, const int *on, const char *want, int worker) {
    char ans[512], hosts[256], maps[256], reds[256], again[512] = "";
    em_stats s0, s1, s2, d, d2;
    a->fault = worker ? FAULT_KILL_WORKER : FAULT_KILL_EXECUTOR;
    em_rdd *sums = sums_rdd(ctx, a);
    em_get_stats(ctx, &s0);
    int rc = collect_sums(em_map_partitions(sums, fn_reduce_side, a, sizeof *a), "job", ans, sizeof ans);
    em_get_stats(ctx, &s1);
    stats_delta(&s0, &s1, &d);
    char trail[1024];
    read_trail(a, trail, sizeof trail);
    int pid = 0, ppid = 0, gone = 0;
    char killed[HOST_LEN] = "none";
    if (read_marker(a->marker, &pid, &ppid, killed)) gone = gone_within(worker ? ppid : pid);
    int64_t nmaps, nreds, lost = 0, seen = em_acc_value_i64(ctx, a->seen);
    int map_hosts, red_hosts;
    per_host(ctx, a, a->map_on, maps, sizeof maps, &nmaps, &map_hosts);
    per_host(ctx, a, a->red_on, reds, sizeof reds, &nreds, &red_hosts);
    for (int i = 0; i < a->nhosts; i++)
        if (!strcmp(a->hosts[i], killed)) lost = em_acc_value_i64(ctx, a->map_on[i]);
    /* Crossed: some reduce task read map outputs written on another host. */
    int crossed = 0;
    for (int i = 0; i < a->nhosts; i++)
        for (int j = 0; j < a->nhosts; j++)
            crossed |= i != j && em_acc_value_i64(ctx, a->red_on[i]) > 0 && em_acc_value_i64(ctx, a->map_on[j]) > 0;
    /* service: the same shuffle again, its outputs still served. */
    if (!worker) collect_sums(sums, "next job", again, sizeof again);
    em_get_stats(ctx, &s2);
    stats_delta(&s1, &s2, &d2);
    printf("scenario=%s result=%s local=%s hosts=%s map_partitions=%d map_tasks=%lld "
           "maps_by_host=%s reduces_by_host=%s crossed=%d tasks=%lld failed=%lld seen=%lld attempts=%s "
           "killed=%s/%d%s%d gone=%d",
           worker ? "worker" : "service", rc ? "error" : ans, want, host_list(a, on, hosts, sizeof hosts), SUM_MAPS,
           (long long)d.map_tasks_run, maps, reds, crossed, (long long)d.tasks_run, (long long)d.tasks_failed,
           (long long)seen, trail, killed,
           pid, worker ? " killed_worker=" : " parent=", ppid, gone);
    if (worker)
        printf(" lost_maps=%lld rerun_maps=%lld\n", (long long)lost, (long long)(d.map_tasks_run - SUM_MAPS));
    else
        printf(" served_maps=%lld next_job_map_tasks=%lld next_job_skipped=%lld\n", (long long)lost,
               (long long)d2.map_tasks_run, (long long)d2.stages_skipped);
    check(rc == 0 && !strcmp(ans, want), "the answer equals local[2]'s");
    check(pid > 0, "a reduce task killed its %s", worker ? "worker" : "executor");
    check(gone, "the killed %s is gone", worker ? "worker" : "executor");
    check(nmaps == SUM_MAPS, "each map partition counted once");
    check(seen == SUM_N, "the accumulator counted each record once (recomputed outputs count once)");
    check(map_hosts >= 2, "map tasks ran on two hosts");
    check(crossed, "a reduce task fetched map outputs from another host");
    /* Other hosts' outputs are fetched, never read as host-local files
     * (ember.shuffle.readHostLocalDisk is on): one executor per host.  In
     * service every reducer that finishes reads the maps of both hosts
     * (no map runs again, every segment holds records); in worker the
     * lost host's maps run again on the other, whose reducers may then
     * read only their own host's outputs. */
    check(d.shuffle_segments_host_local == 0 && (worker || d.shuffle_segments_fetched > 0),
          "segments of other hosts fetched over the network (%lld fetched, %lld read host-local)",
          (long long)d.shuffle_segments_fetched, (long long)d.shuffle_segments_host_local);
    /* One executor per host here: the killed one had written map outputs. */
    check(lost >= 1, "the killed %s's host had run map tasks", worker ? "worker" : "executor");
    if (worker) {
        check(d.map_tasks_run == SUM_MAPS + lost, "only the lost host's map tasks ran again");
    } else {
        check(d.map_tasks_run == SUM_MAPS, "no map task ran again (the worker served the killed executor's outputs)");
        check(d.stages_skipped == 0, "the job skipped no stage");
        check(!strcmp(again, want), "the next job over the same shuffle gives the same sums");
        check(d2.map_tasks_run == 0, "the next job over the same shuffle ran no map task");
    }
    return 0;
}

/* lost: the files the globs match now, as one glob_t (GLOB_APPEND). */
static void lose_glob(const char *const *globs, int n, glob_t *g) {
    memset(g, 0, sizeof *g);
    for (int i = 0; i < n; i++) glob(globs[i], i ? GLOB_APPEND : 0, NULL, g);
}

static int in_glob(const glob_t *g, const char *path) {
    for (size_t i = 0; i < g->gl_pathc; i++)
        if (!strcmp(g->gl_pathv[i], path)) return 1;
    return 0;
}

/* lost: see the header comment. */
static int scenario_lost(em_ctx *ctx, job_arg *a, const int *on, const char *want, const char *const *globs,
                         int nglobs) {
    char ans[512], again[512], hosts[256], maps[256];
    em_stats s0, s1, s2, d;
    glob_t before, after;
    lose_glob(globs, nglobs, &before);
    em_rdd *sums = em_map_partitions(sums_rdd(ctx, a), fn_reduce_side, a, sizeof *a);
    em_get_stats(ctx, &s0);
    int rc = collect_sums(sums, "job", ans, sizeof ans);
    em_get_stats(ctx, &s1);
    int64_t nmaps;
    int map_hosts;
    per_host(ctx, a, a->map_on, maps, sizeof maps, &nmaps, &map_hosts);
    /* Delete this application's map output files there (index and data):
     * an output is lost with its index. */
    lose_glob(globs, nglobs, &after);
    int lost = 0, removed = 0;
    for (size_t i = 0; i < after.gl_pathc; i++) {
        const char *p = after.gl_pathv[i];
        if (in_glob(&before, p) || unlink(p)) continue;
        removed++;
        size_t n = strlen(p);
        lost += n > 6 && !strcmp(p + n - 6, ".index");
    }
    globfree(&before);
    globfree(&after);
    int rc2 = collect_sums(sums, "job after the loss", again, sizeof again);
    em_get_stats(ctx, &s2);
    stats_delta(&s1, &s2, &d);
    printf("scenario=lost result=%s again=%s local=%s hosts=%s maps_by_host=%s files_removed=%d lost_outputs=%d "
           "rerun_maps=%lld failed_stage_attempts=%lld tasks_failed=%lld\n",
           rc ? "error" : ans, rc2 ? "error" : again, want, host_list(a, on, hosts, sizeof hosts), maps, removed, lost,
           (long long)d.map_tasks_run, (long long)d.stage_attempts_failed, (long long)d.tasks_failed);
    check(rc == 0 && !strcmp(ans, want), "the answer equals local[2]'s");
    check(rc2 == 0 && !strcmp(again, want), "the answer after the loss equals local[2]'s");
    check(map_hosts >= 2, "map tasks ran on two hosts");
    check(lost >= 1 && lost < SUM_MAPS, "some map outputs, not all, were lost (%d)", lost);
    check(d.stage_attempts_failed == 1, "one failed stage attempt (%lld)", (long long)d.stage_attempts_failed);
    check(d.map_tasks_run == lost, "exactly the lost map tasks ran again (%lld of %d)", (long long)d.map_tasks_run,
          lost);
    return 0;
}

/* --------------------------------------------------------------- main */

/* The scenarios' settings (the user's --conf come after them). */
/* spec: a copy once partition 1 has succeeded (so no other task runs, and
 * none but partition 0 can be speculated), as soon as partition 0 has run
 * as long as partition 1 did (and 100 ms); ember.network.timeout leaves
 * the copy time to win on a loaded machine before the stopped executor is
 * declared lost. */
static const char *const spec_conf[][2] = {
    {"ember.speculation", "true"},
    {"ember.speculation.interval", "10ms"},
    {"ember.speculation.quantile", "0.5"},
    {"ember.speculation.multiplier", "1"},
    {"ember.speculation.minTaskRuntime", "100ms"},
    {"ember.network.timeout", "4s"},
    {"ember.executor.heartbeatInterval", "100ms"},
    {NULL, NULL},
};
/* service and worker: as the local-cluster tests of the same kills
 * (tests/api/test_cluster.c). */
static const char *const kill_conf[][2] = {
    {"ember.task.maxFailures", "2"},
    {NULL, NULL},
};

static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("fault_driver: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\nRun 'fault_driver --help' for usage.\n", stderr);
    va_end(ap);
    return 2;
}

int main(int argc, char **argv) {
    const char *user[MAX_CONF], *pos[2], *dir = NULL, *lose[MAX_CONF];
    int nuser = 0, npos = 0, want_exec = 2, nlose = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(s, "--conf") || !strcmp(s, "--executors") || !strcmp(s, "--dir") || !strcmp(s, "--lose")) {
            if (i + 1 == argc) return bad_usage("%s needs a value", s);
            const char *v = argv[++i];
            if (!strcmp(s, "--dir")) {
                dir = v;
            } else if (!strcmp(s, "--lose")) {
                if (nlose == MAX_CONF) return bad_usage("more than %d --lose", MAX_CONF);
                lose[nlose++] = v;
            } else if (!strcmp(s, "--executors")) {
                char *end;
                long n = strtol(v, &end, 10);
                if (*end || n < 1 || n > MAX_EXECS) return bad_usage("--executors '%s': 1 to %d", v, MAX_EXECS);
                want_exec = (int)n;
            } else {
                const char *eq = strchr(v, '=');
                if (!eq || eq == v || eq - v >= 256) return bad_usage("--conf '%s': expected KEY=VALUE", v);
                if (nuser == MAX_CONF) return bad_usage("more than %d --conf", MAX_CONF);
                user[nuser++] = v;
            }
        } else if (s[0] == '-' && s[1]) {
            return bad_usage("unknown option '%s'", s);
        } else if (npos == 2) {
            return bad_usage("unexpected argument '%s'", s);
        } else {
            pos[npos++] = s;
        }
    }
    if (npos < 2) return bad_usage("expected SCENARIO and MASTER");
    const char *scenario = pos[0], *master = pos[1];
    int spec = !strcmp(scenario, "spec"), worker = !strcmp(scenario, "worker"), lost = !strcmp(scenario, "lost");
    if (!spec && !worker && !lost && strcmp(scenario, "service")) return bad_usage("unknown scenario '%s'", scenario);
    if (lost != (nlose > 0)) return bad_usage("--lose goes with the lost scenario, which needs it");
    if (!strncmp(master, "local", 5) && strncmp(master, "local-cluster", 13))
        return bad_usage("master '%s' runs tasks in this process, which the faults stop or kill", master);

    char tmpl[512], marker[600];
    if (!dir) {
        const char *t = getenv("TMPDIR");
        snprintf(tmpl, sizeof tmpl, "%s/ember-fault-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(tmpl)) {
            fprintf(stderr, "fault_driver: mkdtemp %s: %s\n", tmpl, strerror(errno));
            return 1;
        }
    }
    snprintf(marker, sizeof marker, "%s/fault-%s-%d.marker", dir ? dir : tmpl, scenario, (int)getpid());

    int rc = 1;
    char want[512], trail[600];
    em_ctx *ctx = NULL;
    snprintf(trail, sizeof trail, "%.500s.trail", marker);
    if (local_answer(scenario, user, nuser, want, sizeof want) != 0) goto out;
    ctx = open_ctx(master, user, nuser, spec ? spec_conf : kill_conf);
    if (!ctx) goto out;
    job_arg a;
    arg_init(ctx, &a, marker);
    int on[MAX_HOSTS] = {0};
    int nexec = find_executors(ctx, want_exec, &a, on);
    if (nexec < 0) {
        fprintf(stderr, "fault_driver: finding the executors: %s\n", em_errmsg());
        goto out;
    }
    check(nexec >= want_exec, "%d executors ran tasks (saw %d)", want_exec, nexec);
    check(a.nhosts >= 2, "executors on two hosts (saw %d)", a.nhosts);
    if (failures == 0) {
        if (spec) scenario_spec(ctx, &a, on, want);
        else if (lost) scenario_lost(ctx, &a, on, want, lose, nlose);
        else scenario_kill(ctx, &a, on, want, worker);
    }
    if (failures == 0) puts("ok");
    rc = failures != 0;
out:
    fflush(stdout);
    if (ctx) em_close(ctx);
    unlink(marker);
    unlink(trail);
    if (!dir) rmdir(tmpl);
    return rc;
}
