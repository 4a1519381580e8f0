/*
 * test_worker_lib.c -- a real ember-worker (bin/ember-worker next to this
 * test binary's directory) fetching an application's binary and shared
 * library from a driver, against a master and a driver played by this
 * test on 127.0.0.1 (executor/applib.h, engine/appbin.h):
 *
 *   - a library whose bytes do not match its hash is not kept, and the
 *     executor's exit says why;
 *   - a library named by a path is refused, nothing written outside the
 *     cache;
 *   - a binary with its library: the executor (a shell script standing
 *     for the program) runs with the library's directory first on
 *     LD_LIBRARY_PATH; launched again it comes from the cache (no fetch);
 *     with the library's directory gone it is fetched again;
 *   - a binary alone (libember linked in statically) gets no library path
 *     of ours, and an executor the dynamic loader cannot start (exit code
 *     127, "error while loading shared libraries: NAME: ...") is reported
 *     as one that cannot run, naming the library and what to do.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../api/helpers.h"
#include "../test.h"
#include "appbin.h"
#include "conn.h"
#include "ember.h"
#include "frame.h"
#include "fsutil.h"
#include "msg.h"

/* What the driver sends for a binary hash whose first byte is: */
enum { S_BAD_HASH = 1, S_BAD_NAME, S_WITH_LIB, S_STATIC_LOADER_FAILS };

typedef struct exit_rec {
    int id;
    int64_t code;
    int cannot_run;
    char reason[2048];
} exit_rec;

typedef struct fake {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ioloop *l;
    listener *ml, *dl;
    int mport, dport;
    conn *worker; /* the master's connection to the worker (the loop's) */
    int registered, fetches;
    exit_rec exits[16];
    int nexits;
    char ldfile[600];  /* where S_WITH_LIB's script writes its LD_LIBRARY_PATH */
    char script_lib[900], script_static[900];
} fake;

static fake F;

static void note(void) {
    pthread_cond_broadcast(&F.cv);
    pthread_mutex_unlock(&F.mu);
}

static void m_open(conn *c, void *ud) { (void)c, (void)ud; }

static void m_frame(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud) {
    msg m;
    (void)ud;
    if (conn_take_msg(c, type, body, len, &m)) return;
    if (m.tag == M_REGISTER_WORKER) {
        msg_val f[] = {msg_str("ember://127.0.0.1:1")};
        conn_send_msg(c, M_WORKER_REGISTERED, f, 1);
        pthread_mutex_lock(&F.mu);
        F.worker = c;
        F.registered = 1;
        note();
    } else if (m.tag == M_EXECUTOR_EXITED) {
        pthread_mutex_lock(&F.mu);
        if (F.nexits < 16) {
            exit_rec *x = &F.exits[F.nexits++];
            x->id = (int)m.f[1].u;
            x->code = m.f[2].i;
            x->cannot_run = (int)m.f[5].u;
            snprintf(x->reason, sizeof x->reason, "%.*s", (int)m.f[4].len, (const char *)m.f[4].p);
        }
        note();
    }
    msg_free(&m);
    free(body);
}

static void m_closed(conn *c, const char *reason, void *ud) {
    (void)reason, (void)ud;
    pthread_mutex_lock(&F.mu);
    if (F.worker == c) F.worker = NULL;
    note();
}

static const conn_cb m_cb = {m_open, m_frame, m_closed};

/* Send one file: its message, its bytes, the empty chunk. */
static void send_file(conn *c, int tag, const char *name, const void *p, size_t n, const uint8_t *hash) {
    uint8_t h[32];
    if (!hash) {
        crypto_generichash(h, 32, p, n, NULL, 0);
        hash = h;
    }
    if (tag == M_LIBRARY) {
        msg_val f[] = {msg_str(name), msg_u(n), msg_bin(hash, 32)};
        conn_send_msg(c, M_LIBRARY, f, 3);
    } else {
        msg_val f[] = {msg_u(n), msg_bin(hash, 32)};
        conn_send_msg(c, M_BINARY, f, 2);
    }
    conn_send(c, FT_CHUNK, p, n);
    conn_send(c, FT_CHUNK, NULL, 0);
}

static const char lib_bytes[] = "\177ELF not really a library";

static void d_open(conn *c, void *ud) { (void)c, (void)ud; }

static void d_frame(conn *c, uint8_t type, uint8_t *body, size_t len, void *ud) {
    msg m;
    (void)ud;
    if (conn_take_msg(c, type, body, len, &m)) return;
    if (m.tag == M_FETCH_BINARY) {
        int s = m.f[0].p[0];
        uint8_t wrong[32];
        memset(wrong, 0x77, sizeof wrong);
        pthread_mutex_lock(&F.mu);
        F.fetches++;
        note();
        char *script = NULL;
        size_t slen = 0;
        switch (s) {
        case S_BAD_HASH: send_file(c, M_LIBRARY, "libx.so.0", lib_bytes, sizeof lib_bytes, wrong); break;
        case S_BAD_NAME: send_file(c, M_LIBRARY, "../libx.so.0", lib_bytes, sizeof lib_bytes, NULL); break;
        case S_WITH_LIB:
            script = read_file_all(F.script_lib, &slen);
            send_file(c, M_LIBRARY, "libx.so.0", lib_bytes, sizeof lib_bytes, NULL);
            if (script) send_file(c, M_BINARY, NULL, script, slen, NULL);
            break;
        case S_STATIC_LOADER_FAILS:
            script = read_file_all(F.script_static, &slen);
            if (script) send_file(c, M_BINARY, NULL, script, slen, NULL);
            break;
        }
        free(script);
    }
    msg_free(&m);
    free(body);
}

static void d_closed(conn *c, const char *reason, void *ud) { (void)c, (void)reason, (void)ud; }

static const conn_cb d_cb = {d_open, d_frame, d_closed};

static void listen_both(void *arg) {
    int *rc = arg;
    conn_opts o = {0, NULL, 0, 0, "test", 0, 0};
    *rc = conn_listen(F.l, "127.0.0.1", 0, &o, &m_cb, NULL, &F.ml, &F.mport) ||
          conn_listen(F.l, "127.0.0.1", 0, &o, &d_cb, NULL, &F.dl, &F.dport);
}

static void close_both(void *arg) {
    (void)arg;
    if (F.ml) listener_close(F.ml);
    if (F.dl) listener_close(F.dl);
}

typedef struct launch_arg {
    int scenario, id, rc;
} launch_arg;

static void launch(void *arg) {
    launch_arg *a = arg;
    uint8_t hash[32];
    char url[64];
    memset(hash, 0xe0 + a->scenario, sizeof hash);
    hash[0] = (uint8_t)a->scenario;
    snprintf(url, sizeof url, "127.0.0.1:%d", F.dport);
    msg_val f[] = {msg_str("app-0001"), msg_u((uint64_t)a->id), msg_u(1), msg_u(512), msg_str(url), msg_bin(hash, 32),
                   msg_str("")};
    a->rc = F.worker ? conn_send_msg(F.worker, M_LAUNCH_EXECUTOR, f, 7) : -1;
}

/* Launch executor id of a scenario and wait (at most 20 s) for its exit
 * report; NULL if none came. */
static const exit_rec *run(int scenario, int id) {
    launch_arg a = {scenario, id, 0};
    iol_call(F.l, launch, &a);
    if (a.rc) return NULL;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    const exit_rec *found = NULL;
    pthread_mutex_lock(&F.mu);
    for (;;) {
        for (int i = 0; i < F.nexits && !found; i++)
            if (F.exits[i].id == id) found = &F.exits[i];
        if (found || pthread_cond_timedwait(&F.cv, &F.mu, &until)) break;
    }
    pthread_mutex_unlock(&F.mu);
    return found;
}

static pid_t start_worker(const char *dir, const char *log) {
    char exe[4096], path[4200], master[64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = 0;
    *strrchr(exe, '/') = 0; /* .../BUILD/tests */
    *strrchr(exe, '/') = 0; /* .../BUILD */
    snprintf(path, sizeof path, "%s/bin/ember-worker", exe);
    snprintf(master, sizeof master, "ember://127.0.0.1:%d", F.mport);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failing test leaves no worker behind */
        FILE *f = freopen(log, "a", stderr);
        (void)f;
        unsetenv("LD_LIBRARY_PATH");
        execl(path, "ember-worker", "--cores", "1", "--memory", "512m", "--work-dir", dir, "--webui-port", "0", "--conf",
              "ember.shuffle.service.enabled=false", master, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int write_script(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

TEST(worker_fetches_checks_and_uses_the_library) {
    char dir[600], log[600], text[1400], want[900], hex[65], bin[800];
    memset(&F, 0, sizeof F);
    pthread_mutex_init(&F.mu, NULL);
    pthread_cond_init(&F.cv, NULL);
    CHECK(sodium_init() >= 0);
    /* The worker closes connections the fake driver still writes to. */
    void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN);
    snprintf(dir, sizeof dir, "%s/wlib", test_tmpdir());
    snprintf(log, sizeof log, "%s/wlib.log", test_tmpdir());
    snprintf(F.ldfile, sizeof F.ldfile, "%s/ldpath", test_tmpdir());
    snprintf(F.script_lib, sizeof F.script_lib, "%s/with-lib.sh", test_tmpdir());
    snprintf(F.script_static, sizeof F.script_static, "%s/static.sh", test_tmpdir());
    snprintf(text, sizeof text, "#!/bin/sh\necho \"$LD_LIBRARY_PATH\" >> %s\n", F.ldfile);
    CHECK_OK(write_script(F.script_lib, text));
    CHECK_OK(write_script(F.script_static,
                          "#!/bin/sh\necho \"$LD_LIBRARY_PATH\" >&2\n"
                          "echo \"$0: error while loading shared libraries: libq.so.1: cannot open shared object "
                          "file: No such file or directory\" >&2\nexit 127\n"));
    CHECK((F.l = iol_start("fake")));
    int rc = -1;
    iol_call(F.l, listen_both, &rc);
    CHECK_OK(rc);
    pid_t pid = start_worker(dir, log);
    CHECK(pid > 0);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&F.mu);
    while (!F.registered && !pthread_cond_timedwait(&F.cv, &F.mu, &until)) {}
    int registered = F.registered;
    pthread_mutex_unlock(&F.mu);
    CHECK(registered);

    /* Bytes that do not match the hash: not kept. */
    const exit_rec *x = run(S_BAD_HASH, 1);
    CHECK(x && x->code == -1 && !x->cannot_run);
    if (x) CHECK_STR_CONTAINS(x->reason, "the library's contents do not match its hash");
    uint8_t wrong[32];
    memset(wrong, 0x77, sizeof wrong);
    appbin_hex(wrong, hex);
    snprintf(text, sizeof text, "%s/bin/%s/libx.so.0", dir, hex);
    CHECK(access(text, F_OK) != 0);
    /* A name that is a path: refused, nothing written outside. */
    x = run(S_BAD_NAME, 2);
    CHECK(x && x->code == -1);
    if (x) CHECK_STR_CONTAINS(x->reason, "not a file name this worker keeps");
    snprintf(text, sizeof text, "%s/libx.so.0", dir);
    CHECK(access(text, F_OK) != 0);

    /* With its library: the library's directory first on the executor's
     * LD_LIBRARY_PATH (the worker has none of its own). */
    x = run(S_WITH_LIB, 3);
    CHECK(x && x->code == 0 && !x->cannot_run);
    uint8_t lh[32];
    crypto_generichash(lh, 32, (const uint8_t *)lib_bytes, sizeof lib_bytes, NULL, 0);
    appbin_hex(lh, hex);
    snprintf(want, sizeof want, "%s/bin/%s\n", dir, hex);
    size_t n = 0;
    char *got = read_file_all(F.ldfile, &n);
    CHECK(got && n == strlen(want) && !memcmp(got, want, n));
    free(got);
    snprintf(text, sizeof text, "%s/bin/%s/libx.so.0", dir, hex);
    n = 0;
    got = read_file_all(text, &n);
    CHECK(got && n == sizeof lib_bytes && !memcmp(got, lib_bytes, n));
    free(got);
    pthread_mutex_lock(&F.mu);
    int fetches = F.fetches;
    pthread_mutex_unlock(&F.mu);
    CHECK_EQ_I64(fetches, 3);
    /* Again: from the cache. */
    x = run(S_WITH_LIB, 4);
    CHECK(x && x->code == 0);
    pthread_mutex_lock(&F.mu);
    CHECK_EQ_I64(F.fetches, 3);
    pthread_mutex_unlock(&F.mu);
    /* Its library's directory gone: fetched again, and used. */
    snprintf(text, sizeof text, "%s/bin/%s", dir, hex);
    rm_tree(text);
    x = run(S_WITH_LIB, 5);
    CHECK(x && x->code == 0);
    pthread_mutex_lock(&F.mu);
    CHECK_EQ_I64(F.fetches, 4);
    pthread_mutex_unlock(&F.mu);
    got = read_file_all(F.ldfile, &n);
    CHECK(got && n == 3 * strlen(want) && !memcmp(got + 2 * strlen(want), want, strlen(want)));
    free(got);

    /* A binary alone: no link to a library, and the loader's failure is
     * reported as an executor that cannot run, naming the library. */
    x = run(S_STATIC_LOADER_FAILS, 6);
    CHECK(x && x->code == 127 && x->cannot_run);
    if (x) {
        CHECK_STR_CONTAINS(x->reason, "the dynamic loader cannot load libq.so.1, a shared library the program needs");
        CHECK_STR_CONTAINS(x->reason, "or link the program statically against it");
    }
    uint8_t sh[32];
    memset(sh, 0xe0 + S_STATIC_LOADER_FAILS, sizeof sh);
    sh[0] = S_STATIC_LOADER_FAILS;
    appbin_hex(sh, hex);
    snprintf(bin, sizeof bin, "%s/bin/%s.lib", dir, hex);
    struct stat sb;
    CHECK(lstat(bin, &sb) != 0);
    snprintf(bin, sizeof bin, "%s/bin/%s", dir, hex);
    CHECK(access(bin, X_OK) == 0);

    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    iol_call(F.l, close_both, NULL);
    iol_stop(F.l);
    signal(SIGPIPE, old_pipe);
    rm_tree(dir);
}
