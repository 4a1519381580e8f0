/*
 * failinject.c -- the injected-failure test (SQLite's simulated malloc and
 * I/O errors): runs a small job once for every n, with the n-th call of
 * one kind made by the library failing (wrap.h), until a run completes
 * without the failure having fired.
 *
 *   failinject [-m MASTER] [SCENARIO|KIND]...   the loops (default: every
 *                                               scenario by every kind)
 *   failinject -1 SCENARIO KIND N               one run, in this process
 *
 * Scenarios, each over tens of records in 4 partitions:
 *   shuffle     reduce_by_key through shuffle files, collected
 *   save        em_save_as_text_file of a map
 *   checkpoint  em_checkpoint of a map, then a collect that writes it
 *   cache       a map persisted at EM_DISK_ONLY, counted, then collected
 *   context     the shuffle job with the failure armed over the context's
 *               whole life, em_conf_new through em_open to em_close
 *
 * Each run is a forked child (so a crash or a hang fails one n, not the
 * loop): it opens a context with its scratch, output and checkpoint
 * directories under a directory of its own, arms the failure, builds the
 * RDDs and runs the action, and disarms.  Then it checks the outcome: a
 * clean error (rc < 0 and an em_errmsg naming a cause) or the exact
 * answer; the output directory complete (every part file and _SUCCESS,
 * each line right) or absent, and no temporary left beside it; no
 * temporary file in the checkpoint directory.  After an error it runs the
 * job again unarmed, which must give the exact answer (the context stays
 * usable).  After em_close the scratch directory must be gone and the
 * process must hold the descriptors it held before em_open.  ASan's leak
 * checker, in the sanitizer build, runs when the child exits.  The child's
 * alarm makes a hang a failure naming n and the kind.
 *
 * The parent prints every failure as it happens, with the child's standard
 * error (which shows the stack of the injected failure); then, per
 * scenario and kind, how many runs the loop took (the calls of that kind
 * the job makes, plus one); last "failinject: N passed, N failed, 0
 * skipped", the runs; it exits 1 when any run failed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ember.h"
#include "wrap.h"

enum { SC_SHUFFLE, SC_SAVE, SC_CHECKPOINT, SC_CACHE, SC_CONTEXT, SC_N };
static const char *const sc_names[SC_N] = {"shuffle", "save", "checkpoint", "cache", "context"};

enum { NREC = 40, NPART = 4, NKEYS = 5 };
enum { RUN_OK = 0, RUN_DONE = 3, RUN_BAD = 1 }; /* child exit codes */
#define CHILD_ALARM 30 /* seconds: a run takes well under one */
#define MAX_N 200000   /* a loop that never ends is a failure too */

static const char *master = "local[1]";
static char top_dir[1024];          /* the parent's directory of runs */
static volatile sig_atomic_t stop;  /* SIGINT or SIGTERM reached the parent */

static void on_stop(int sig) { stop = sig; }

static int rm_rf(const char *path);

/* After SIGINT or SIGTERM: the running child (pid > 0) goes, then every
 * directory of the runs. */
static void stop_now(pid_t pid) {
    int st;
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    rm_rf(top_dir);
    fprintf(stderr, "failinject: stopped by signal %d\n", (int)stop);
    exit(1);
}

#define BAD(...)                                                                   \
    do {                                                                           \
        fprintf(stderr, "failinject: " __VA_ARGS__);                               \
        fputc('\n', stderr);                                                       \
        return RUN_BAD;                                                            \
    } while (0)

/* ------------------------------------------------------------ the jobs */

static int fi_inc(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_i64(out, em_i64_dec(in->val) + 1);
}

/* i -> the text of i + 1 (a line of the saved file). */
static int fi_text(const em_rec *in, em_emitter *out, const void *arg) {
    char t[24];
    int n = snprintf(t, sizeof t, "%lld", (long long)em_i64_dec(in->val) + 1);
    return em_emit(out, t, (size_t)n);
}

/* i -> (i % NKEYS, i). */
static int fi_key(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t v = em_i64_dec(in->val);
    uint8_t k[8];
    em_i64_enc(v % NKEYS, k);
    return em_emit_pair(out, k, 8, in->val, 8);
}

/* The job's RDD, or NULL (em_errmsg says why).  *base gets the first RDD
 * made, to be released with it. */
static em_rdd *build(em_ctx *c, int sc, em_rdd **base) {
    *base = em_range(c, 0, NREC, 1, NPART);
    if (!*base) return NULL;
    if (sc == SC_SHUFFLE) {
        em_rdd *kv = em_map(*base, fi_key, NULL, 0);
        if (!kv) return NULL;
        em_rdd *r = em_reduce_by_key(kv, em_sum_i64, NULL, 0, NPART);
        em_rdd_release(kv);
        return r;
    }
    em_rdd *r = em_map(*base, sc == SC_SAVE ? fi_text : fi_inc, NULL, 0);
    if (!r) return NULL;
    if (sc == SC_CACHE && !em_persist(r, EM_DISK_ONLY)) {
        em_rdd_release(r);
        return NULL;
    }
    if (sc == SC_CHECKPOINT) {
        /* Persisted first, as Spark asks: the writing job reads the cache. */
        int rc = em_persist(r, EM_MEMORY_ONLY) ? em_checkpoint(r) : -1;
        if (rc) {
            em_rdd_release(r);
            return NULL;
        }
    }
    return r;
}

/* Runs the action: 0, < 0 (its error), or WRONG_COUNT (the cache's count
 * is not NREC, said on standard error).  *got is the collected batch
 * (shuffle, checkpoint, cache). */
#define WRONG_COUNT 1
static int action(int sc, em_rdd *r, const char *out, em_batch **got) {
    *got = NULL;
    if (sc == SC_SAVE) return em_save_as_text_file(r, out);
    if (sc == SC_CACHE) {
        int64_t n = 0;
        int rc = em_count(r, &n);
        if (rc) return rc;
        if (n != NREC) {
            fprintf(stderr, "failinject: cache: count %lld, expected %d\n", (long long)n, NREC);
            return WRONG_COUNT;
        }
    }
    return em_collect(r, got);
}

/* ------------------------------------------------------------ the checks */

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The collected answer is exact: 1..NREC for a map; (k, sum of i with
 * i % NKEYS == k) for each k for the shuffle. */
static int check_batch(int sc, em_batch *b) {
    size_t n = em_batch_count(b);
    int64_t v[NREC];
    size_t want = sc == SC_SHUFFLE ? NKEYS : NREC;
    if (n != want) BAD("%s: %zu records, expected %zu", sc_names[sc], n, want);
    for (size_t i = 0; i < n; i++) {
        em_rec e;
        if (em_batch_get(b, i, &e) || e.vlen != 8) BAD("%s: record %zu unreadable", sc_names[sc], i);
        if (sc == SC_SHUFFLE) {
            if (!e.key || e.klen != 8) BAD("shuffle: record %zu has no 8-byte key", i);
            int64_t k = em_i64_dec(e.key), s = 0;
            for (int64_t x = k; x < NREC; x += NKEYS) s += x;
            if (k < 0 || k >= NKEYS || em_i64_dec(e.val) != s)
                BAD("shuffle: key %lld has %lld, expected %lld", (long long)k, (long long)em_i64_dec(e.val),
                    (long long)s);
            v[i] = k;
        } else {
            v[i] = em_i64_dec(e.val);
        }
    }
    qsort(v, n, sizeof v[0], cmp_i64);
    for (size_t i = 0; i < n; i++)
        if (v[i] != (int64_t)i + (sc == SC_SHUFFLE ? 0 : 1))
            BAD("%s: sorted record %zu is %lld", sc_names[sc], i, (long long)v[i]);
    return RUN_OK;
}

/* The saved directory holds exactly part-00000..part-0000{NPART-1} and
 * _SUCCESS, and its lines are 1..NREC. */
static int check_saved(const char *out) {
    int seen[NREC + 2] = {0};
    int nlines = 0;
    for (int p = 0; p < NPART; p++) {
        char path[4200], line[64];
        snprintf(path, sizeof path, "%s/part-%05d", out, p);
        FILE *f = fopen(path, "r");
        if (!f) BAD("save: %s missing: %s", path, strerror(errno));
        while (fgets(line, sizeof line, f)) {
            long x = strtol(line, NULL, 10);
            if (x < 1 || x > NREC || seen[x]++) {
                fclose(f);
                BAD("save: %s: line '%s' unexpected or repeated", path, line);
            }
            nlines++;
        }
        fclose(f);
    }
    if (nlines != NREC) BAD("save: %d lines, expected %d", nlines, NREC);
    char path[4200];
    snprintf(path, sizeof path, "%s/_SUCCESS", out);
    if (access(path, F_OK)) BAD("save: %s missing", path);
    DIR *d = opendir(out);
    int entries = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) entries++;
    if (d) closedir(d);
    if (entries != NPART + 1) BAD("save: %s holds %d entries, expected %d", out, entries, NPART + 1);
    return RUN_OK;
}

/* Names in dir other than those allowed ("out", "local", "ckpt"): a
 * temporary sibling of the output left behind. */
static int check_no_strays(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) BAD("cannot open %s: %s", dir, strerror(errno));
    for (struct dirent *e; (e = readdir(d));) {
        const char *n = e->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "out") || !strcmp(n, "local") ||
            !strcmp(n, "ckpt") || !strcmp(n, "stderr"))
            continue;
        closedir(d);
        BAD("%s/%s left behind", dir, n);
    }
    closedir(d);
    return RUN_OK;
}

/* No temporary file under the checkpoint directory: every file is a
 * part-NNNNN. */
static int check_ckpt_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return RUN_OK;
    int rc = RUN_OK;
    for (struct dirent *e; rc == RUN_OK && (e = readdir(d));) {
        const char *n = e->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..")) continue;
        char p[4200];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, n);
        if (lstat(p, &st)) continue;
        if (S_ISDIR(st.st_mode)) rc = check_ckpt_tree(p);
        else if (strncmp(n, "part-", 5) || strlen(n) != 10) {
            fprintf(stderr, "failinject: checkpoint: stale file %s\n", p);
            rc = RUN_BAD;
        }
    }
    closedir(d);
    return rc;
}

/* What a message naming the injected failure of kind says: "memory" (out
 * of memory, cannot allocate ...) or the errno's text. */
static const char *cause_words(int kind) {
    return kind == FI_MALLOC ? "memory" : kind == FI_WRITE ? strerror(ENOSPC) : strerror(EIO);
}

static int names_cause(int kind, const char *msg) {
    return strcasestr(msg, cause_words(kind)) != NULL;
}

static int count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

static int is_empty_or_absent(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n == 0;
}

/* ------------------------------------------------------------ one run */

static int run_ctx(int kind, int64_t n, const char *dir);

/* After em_close: the scratch directory local is empty or gone, and the
 * process holds the fds0 descriptors it held before em_open.  1, or 0
 * having said what is wrong. */
static int closed_clean(const char *local, int fds0) {
    int ok = 1;
    if (!is_empty_or_absent(local)) {
        fprintf(stderr, "failinject: %s is not empty after em_close\n", local);
        ok = 0;
    }
    int fds1 = count_fds();
    if (fds1 != fds0) {
        fprintf(stderr, "failinject: %d descriptors open after em_close, %d before em_open\n", fds1, fds0);
        ok = 0;
    }
    return ok;
}

/* One run of scenario sc with the n-th call of kind failing, in dir (which
 * exists).  Returns RUN_OK (the failure fired; the outcome is clean),
 * RUN_DONE (it never fired: the job makes fewer calls; the answer is
 * exact) or RUN_BAD (with the reason on standard error). */
static int run_one(int sc, int kind, int64_t n, const char *dir) {
    if (sc == SC_CONTEXT) return run_ctx(kind, n, dir);
    char local[4096], out[4096], ckpt[4096];
    snprintf(local, sizeof local, "%s/local", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(ckpt, sizeof ckpt, "%s/ckpt", dir);
    if (mkdir(local, 0700) || mkdir(ckpt, 0700)) BAD("mkdir under %s: %s", dir, strerror(errno));
    int fds0 = count_fds();
    em_conf *conf = em_conf_new();
    if (!conf || em_conf_set(conf, "ember.local.dir", local) || em_conf_set(conf, "ember.ui.enabled", "false") ||
        em_conf_set(conf, "ember.shuffle.inMemoryOutput.maxBytes", "0") ||
        em_conf_set(conf, "ember.checkpoint.dir", ckpt))
        BAD("configuration refused: %s", em_errmsg());
    em_ctx *c = em_open(master, conf);
    em_conf_free(conf);
    if (!c) BAD("em_open(%s): %s", master, em_errmsg());

    em_rdd *base = NULL, *r = NULL;
    em_batch *got = NULL;
    fi_arm(kind, n);
    r = build(c, sc, &base);
    int rc = r ? action(sc, r, out, &got) : -1;
    int64_t calls = fi_disarm();
    int fired = calls >= n;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", em_errmsg() ? em_errmsg() : "");

    int res = RUN_OK;
    if (rc < 0) {
        fprintf(stderr, "failinject: %s %s n=%lld: rc %d: %s\n", sc_names[sc], fi_kind_name(kind), (long long)n, rc,
                msg);
        if (!fired) {
            fprintf(stderr, "failinject: the job failed with no failure injected\n");
            res = RUN_BAD;
        } else if (!names_cause(kind, msg)) {
            fprintf(stderr, "failinject: the message does not name the cause (%s)\n", cause_words(kind));
            res = RUN_BAD;
        } else if (sc == SC_SAVE && access(out, F_OK) == 0) {
            fprintf(stderr, "failinject: save failed but %s exists\n", out);
            res = RUN_BAD;
        }
    } else if (rc == WRONG_COUNT) {
        res = RUN_BAD;
    } else if (got) {
        res = check_batch(sc, got);
    } else if (sc == SC_SAVE) {
        res = check_saved(out);
    }
    if (res == RUN_OK && sc == SC_CHECKPOINT && rc == 0 && em_is_checkpointed(r) != 1) {
        fprintf(stderr, "failinject: the collect succeeded but the checkpoint was not written\n");
        res = RUN_BAD;
    }
    em_batch_free(got);
    got = NULL;
    if (res == RUN_OK) res = check_no_strays(dir);
    if (res == RUN_OK) res = check_ckpt_tree(ckpt);

    /* After an error the context still works: the same job, unarmed. */
    if (res == RUN_OK && rc < 0) {
        em_rdd_release(r);
        em_rdd_release(base);
        r = build(c, sc, &base);
        if (!r) {
            fprintf(stderr, "failinject: rebuilding after the error: %s\n", em_errmsg());
            res = RUN_BAD;
        } else if ((rc = action(sc, r, out, &got)) != 0) {
            fprintf(stderr, "failinject: the job run again unarmed failed: rc %d: %s\n", rc, em_errmsg());
            res = RUN_BAD;
        } else {
            res = got ? check_batch(sc, got) : check_saved(out);
            if (res == RUN_OK && sc == SC_CHECKPOINT && em_is_checkpointed(r) != 1) {
                fprintf(stderr, "failinject: the job run again did not write the checkpoint\n");
                res = RUN_BAD;
            }
        }
        em_batch_free(got);
        if (res == RUN_OK) res = check_no_strays(dir);
        if (res == RUN_OK) res = check_ckpt_tree(ckpt);
    }
    em_rdd_release(r);
    em_rdd_release(base);
    em_close(c);
    if (!closed_clean(local, fds0)) res = RUN_BAD;
    if (res == RUN_OK && !fired) res = RUN_DONE;
    return res;
}

/* The context scenario: the failure armed over the whole life of a
 * context, em_conf_new to em_close, with the shuffle job in between.  A
 * refused setting or a failed em_open must name the cause; after em_close
 * (or the failed em_open) the scratch directory is gone and the process
 * holds the descriptors it held before. */
static int run_ctx(int kind, int64_t n, const char *dir) {
    char local[4096];
    snprintf(local, sizeof local, "%s/local", dir);
    if (mkdir(local, 0700)) BAD("mkdir under %s: %s", dir, strerror(errno));
    int fds0 = count_fds(), res = RUN_OK;
    char msg[1024] = "";
    fi_arm(kind, n);
    em_conf *conf = em_conf_new();
    int rc = conf ? 0 : -1;
    if (!rc) rc = em_conf_set(conf, "ember.local.dir", local);
    if (!rc) rc = em_conf_set(conf, "ember.ui.enabled", "false");
    if (!rc) rc = em_conf_set(conf, "ember.shuffle.inMemoryOutput.maxBytes", "0");
    em_ctx *c = rc ? NULL : em_open(master, conf);
    if (!rc && !c) rc = -1;
    if (rc) snprintf(msg, sizeof msg, "%s", em_errmsg() ? em_errmsg() : "");
    em_conf_free(conf);
    em_batch *got = NULL;
    if (c) {
        em_rdd *base = NULL, *r = build(c, SC_SHUFFLE, &base);
        rc = r ? action(SC_SHUFFLE, r, NULL, &got) : -1;
        if (rc < 0) snprintf(msg, sizeof msg, "%s", em_errmsg() ? em_errmsg() : "");
        em_rdd_release(r);
        em_rdd_release(base);
        em_close(c);
    }
    int64_t calls = fi_disarm();
    int fired = calls >= n;
    if (rc) {
        fprintf(stderr, "failinject: context %s n=%lld: rc %d: %s\n", fi_kind_name(kind), (long long)n, rc, msg);
        if (!fired) {
            fprintf(stderr, "failinject: the context failed with no failure injected\n");
            res = RUN_BAD;
        } else if (!names_cause(kind, msg)) {
            fprintf(stderr, "failinject: the message does not name the cause (%s)\n", cause_words(kind));
            res = RUN_BAD;
        }
    } else {
        res = check_batch(SC_SHUFFLE, got);
    }
    em_batch_free(got);
    if (!closed_clean(local, fds0)) res = RUN_BAD;
    if (res == RUN_OK && !fired) res = RUN_DONE;
    return res;
}

/* ------------------------------------------------------------ the loops */

static int rm_rf(const char *path) {
    struct stat st;
    if (lstat(path, &st)) return 0;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        for (struct dirent *e; d && (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[4200];
            snprintf(p, sizeof p, "%s/%s", path, e->d_name);
            rm_rf(p);
        }
        if (d) closedir(d);
        return rmdir(path);
    }
    return unlink(path);
}

static void print_file(const char *path, const char *indent) {
    FILE *f = fopen(path, "r");
    char line[2048];
    int lines = 0;
    while (f && fgets(line, sizeof line, f) && lines++ < 80) fprintf(stderr, "%s%s", indent, line);
    if (f) fclose(f);
}

/* Runs n = 1, 2, ... in children until one reports the failure never fired.
 * Returns the number of failed runs; *runs gets how many ran. */
static int loop(const char *top, int sc, int kind, int64_t *runs) {
    int failures = 0;
    int64_t n;
    for (n = 1; n <= MAX_N; n++) {
        if (stop) stop_now(0);
        char dir[4096], errpath[4200];
        snprintf(dir, sizeof dir, "%s/%s-%s-%lld", top, sc_names[sc], fi_kind_name(kind), (long long)n);
        snprintf(errpath, sizeof errpath, "%s/stderr", dir);
        if (mkdir(dir, 0700)) {
            fprintf(stderr, "failinject: mkdir %s: %s\n", dir, strerror(errno));
            return failures + 1;
        }
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "failinject: fork: %s\n", strerror(errno));
            return failures + 1;
        }
        if (pid == 0) {
            signal(SIGINT, SIG_DFL); /* em_open installs its own where these are */
            signal(SIGTERM, SIG_DFL);
            signal(SIGPIPE, SIG_DFL);
            int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
            if (fd >= 0) {
                dup2(fd, STDERR_FILENO);
                close(fd);
            }
            alarm(CHILD_ALARM);
            exit(run_one(sc, kind, n, dir));
        }
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
            if (stop) stop_now(pid);
        }
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        if (code != RUN_OK && code != RUN_DONE) {
            failures++;
            if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
                printf("FAIL %s %s n=%lld: hung (no end within %d s)\n", sc_names[sc], fi_kind_name(kind),
                       (long long)n, CHILD_ALARM);
            else if (WIFSIGNALED(st))
                printf("FAIL %s %s n=%lld: killed by signal %d (%s)\n", sc_names[sc], fi_kind_name(kind),
                       (long long)n, WTERMSIG(st), strsignal(WTERMSIG(st)));
            else
                printf("FAIL %s %s n=%lld: exit status %d\n", sc_names[sc], fi_kind_name(kind), (long long)n, code);
            fflush(stdout);
            print_file(errpath, "    ");
        }
        rm_rf(dir);
        if (code == RUN_DONE) break;
        if (failures >= 20) {
            printf("FAIL %s %s: stopping after %d failed runs\n", sc_names[sc], fi_kind_name(kind), failures);
            break;
        }
    }
    if (n > MAX_N) {
        printf("FAIL %s %s: still firing at n=%d\n", sc_names[sc], fi_kind_name(kind), MAX_N);
        failures++;
    }
    *runs = n;
    return failures;
}

static int sc_parse(const char *name) {
    for (int s = 0; s < SC_N; s++)
        if (!strcmp(name, sc_names[s])) return s;
    return -1;
}

static int usage(FILE *f, int rc) {
    fprintf(f, "usage: failinject [-m MASTER] [SCENARIO|KIND]...\n"
                    "       failinject [-m MASTER] -1 SCENARIO KIND N\n"
                    "scenarios: shuffle save checkpoint cache context; kinds: malloc write open rename fsync\n"
               "-m MASTER: the master the jobs run on (default local[1])\n"
               "-1: one run in this process, the failure injected at the N-th call\n");
    return rc;
}

int main(int argc, char **argv) {
    int want_sc[SC_N] = {0}, want_kind[FI_NKINDS] = {0}, any_sc = 0, any_kind = 0;
    int i = 1;
    if (i < argc && (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))) return usage(stdout, 0);
    if (i + 1 < argc && !strcmp(argv[i], "-m")) {
        master = argv[i + 1];
        i += 2;
    }
    if (i < argc && !strcmp(argv[i], "-1")) {
        if (argc - i != 4) return usage(stderr, 2);
        int sc = sc_parse(argv[i + 1]), kind = fi_kind_parse(argv[i + 2]);
        long long n = atoll(argv[i + 3]);
        if (sc < 0 || kind < 0 || n < 1) return usage(stderr, 2);
        char dir[] = "/tmp/failinject-one-XXXXXX";
        if (!mkdtemp(dir)) return 1;
        int rc = run_one(sc, kind, n, dir);
        if (rc != RUN_BAD) rm_rf(dir);
        printf("%s %s n=%lld: %s (directory %s)\n", argv[i + 1], argv[i + 2], n,
               rc == RUN_OK ? "ok, the failure fired" : rc == RUN_DONE ? "ok, the failure never fired" : "FAILED",
               dir);
        return rc == RUN_BAD;
    }
    for (; i < argc; i++) {
        int s = sc_parse(argv[i]), k = fi_kind_parse(argv[i]);
        if (s >= 0) want_sc[s] = any_sc = 1;
        else if (k >= 0) want_kind[k] = any_kind = 1;
        else return usage(stderr, 2);
    }
    const char *tmp = getenv("TMPDIR");
    /* Interrupted, the parent removes its runs' directories; a reader of
     * its output that goes away does not stop it half way. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    snprintf(top_dir, sizeof top_dir, "%s/failinject-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(top_dir)) {
        fprintf(stderr, "failinject: mkdtemp %s: %s\n", top_dir, strerror(errno));
        return 1;
    }
    int64_t failures = 0, total = 0;
    char line[SC_N][512];
    for (int s = 0; s < SC_N; s++) {
        line[s][0] = 0;
        if (any_sc && !want_sc[s]) continue;
        size_t len = (size_t)snprintf(line[s], sizeof line[s], "failinject %s on %s:", sc_names[s], master);
        for (int k = 1; k < FI_NKINDS; k++) {
            if (any_kind && !want_kind[k]) continue;
            int64_t runs = 0;
            int f = loop(top_dir, s, k, &runs);
            failures += f;
            total += runs;
            if (len < sizeof line[s])
                len += (size_t)snprintf(line[s] + len, sizeof line[s] - len, " %s %lld%s", fi_kind_name(k),
                                        (long long)runs, f ? " (FAILED)" : "");
        }
    }
    rm_rf(top_dir);
    for (int s = 0; s < SC_N; s++)
        if (line[s][0]) printf("%s runs\n", line[s]);
    printf("failinject: %lld passed, %lld failed, 0 skipped\n", (long long)(total - failures), (long long)failures);
    return failures ? 1 : 0;
}
