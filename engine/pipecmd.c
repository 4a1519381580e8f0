/*
 * pipecmd.c -- em_pipe (Spark's pipe): each partition's records through an
 * external command, one line each, the command's output lines becoming the
 * new partition.
 *
 * The driver packs the command's argv and extra environment into the
 * argument of a map_partitions builtin, bi_pipe, which in the task starts
 * the command with posix_spawnp (safe in a threaded process) on three
 * pipes, every other descriptor closed in it, then, in one poll(2) loop,
 * writes the records as lines to its stdin (closed after the last), reads
 * its stdout into records line by line, and keeps the end of its stderr --
 * all three at once, so a command that writes much before it reads all its
 * input cannot deadlock.  Then it waits for the command: an exit status
 * other than 0, or a signal, fails the task with the command, the status
 * and the last lines of its stderr.
 * A command that stops reading its input early (head) just gets no more of
 * it.  A sink that wants no more records (take) ends the command with
 * SIGKILL.  Like a user function, a command that never ends holds its task:
 * kills do not reach it.
 *
 * Argument layout: u32 total length, u32 argc, argc NUL-terminated
 * strings, u32 envc, envc NUL-terminated "NAME=value" strings (u32 in
 * native order: it never leaves the program's own processes).  The driver
 * made it, as it makes every function argument; bi_pipe still reads it
 * within its stated length.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "builtins.h"
#include "ctx.h"
#include "err.h"
#include "rdd.h"

extern char **environ;

#define PIPE_MAX_ARGS 4096
#define PIPE_ERR_KEEP 2048 /* bytes of stderr kept for the message */
#define PIPE_CHUNK 65536

/* Pack argv and env into out.  0 or < 0 with the message set. */
static int pack_cmd(const char *const *argv, const char *const *env, ebuf *out) {
    uint32_t n[2] = {0, 0}, total = 0;
    const char *const *lists[2] = {argv, env};
    if (ebuf_append(out, &total, 4)) return em__seterr(EM_ENOMEM, "em_pipe: out of memory");
    for (int l = 0; l < 2; l++) {
        for (; lists[l] && lists[l][n[l]]; n[l]++)
            if (n[l] >= PIPE_MAX_ARGS) return em__seterr(EM_EINVAL, "em_pipe: more than %d arguments", PIPE_MAX_ARGS);
        if (ebuf_append(out, &n[l], 4)) return em__seterr(EM_ENOMEM, "em_pipe: out of memory");
        for (uint32_t i = 0; i < n[l]; i++) {
            if (l == 1 && !strchr(lists[l][i], '='))
                return em__seterr(EM_EINVAL, "em_pipe: environment entry \"%s\" is not NAME=value", lists[l][i]);
            if (ebuf_append(out, lists[l][i], strlen(lists[l][i]) + 1))
                return em__seterr(EM_ENOMEM, "em_pipe: out of memory");
        }
    }
    if (out->len > UINT32_MAX) return em__seterr(EM_EINVAL, "em_pipe: command too long");
    total = (uint32_t)out->len;
    memcpy(out->p, &total, 4);
    return 0;
}

/* Unpack one list at *p (bounded by end) into a NULL-terminated array of
 * pointers into the argument.  0, or EM_EINVAL when malformed. */
static int unpack_list(const uint8_t **p, const uint8_t *end, const char **v, uint32_t *n) {
    if (end - *p < 4) return EM_EINVAL;
    memcpy(n, *p, 4);
    *p += 4;
    if (*n > PIPE_MAX_ARGS) return EM_EINVAL;
    for (uint32_t i = 0; i < *n; i++) {
        const uint8_t *z = memchr(*p, 0, (size_t)(end - *p));
        if (!z) return EM_EINVAL;
        v[i] = (const char *)*p;
        *p = z + 1;
    }
    v[*n] = NULL;
    return 0;
}

typedef struct piper {
    em_emitter *out;
    ebuf line;        /* a stdout line not yet ended */
    char err[PIPE_ERR_KEEP];
    size_t errlen;
    int emit_rc;      /* an emit failed (EM_STOP: the sink has enough) */
} piper;

/* Stdout bytes: complete lines become records. */
static int take_out(piper *pp, const uint8_t *b, size_t n) {
    while (n) {
        const uint8_t *nl = memchr(b, '\n', n);
        size_t k = nl ? (size_t)(nl - b) : n;
        if (ebuf_append(&pp->line, b, k)) return EM_ENOMEM;
        if (!nl) return 0;
        int rc = em_emit(pp->out, pp->line.p ? pp->line.p : (const uint8_t *)"", pp->line.len);
        pp->line.len = 0;
        if (rc) return rc;
        b += k + 1;
        n -= k + 1;
    }
    return 0;
}

/* Stderr bytes: the last PIPE_ERR_KEEP of them are kept. */
static void take_err(piper *pp, const uint8_t *b, size_t n) {
    if (n >= PIPE_ERR_KEEP) {
        memcpy(pp->err, b + n - PIPE_ERR_KEEP, PIPE_ERR_KEEP);
        pp->errlen = PIPE_ERR_KEEP;
        return;
    }
    if (pp->errlen + n > PIPE_ERR_KEEP) {
        size_t drop = pp->errlen + n - PIPE_ERR_KEEP;
        memmove(pp->err, pp->err + drop, pp->errlen - drop);
        pp->errlen -= drop;
    }
    memcpy(pp->err + pp->errlen, b, n);
    pp->errlen += n;
}

/* The command line for messages: its arguments joined by spaces. */
static void cmd_text(const char *const *argv, char *buf, size_t len) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; argv[i] && k + 1 < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? " " : "", argv[i]);
}

/* Fill pending with the next records as lines, up to about PIPE_CHUNK
 * bytes.  1 while records remain, 0 at the end, < 0 on error. */
static int fill_input(em_iter *in, ebuf *pending) {
    em_rec r;
    int rc = 1;
    while (pending->len < PIPE_CHUNK && (rc = em_iter_next(in, &r)) == 1) {
        if ((r.key && (ebuf_append(pending, r.key, r.klen) || ebuf_append(pending, "\t", 1))) ||
            ebuf_append(pending, r.val, r.vlen) || ebuf_append(pending, "\n", 1))
            return EM_ENOMEM;
    }
    return rc;
}

/* Run the command over the partition.  Writing to a command that no longer
 * reads raises SIGPIPE, which would kill a program that left it at its
 * default (the driver of local[N]): this thread blocks it meanwhile and
 * takes the ones its writes raised (bi_pipe). */
static int run_pipe(const char *const *argv, const char *const *extra, em_iter *in, em_emitter *out,
                    sigset_t old_mask) {
    int fin[2] = {-1, -1}, fout[2] = {-1, -1}, ferr[2] = {-1, -1}, rc = 0;
    char cmd[512];
    cmd_text(argv, cmd, sizeof cmd);
    if (pipe2(fin, O_CLOEXEC) || pipe2(fout, O_CLOEXEC) || pipe2(ferr, O_CLOEXEC)) {
        rc = em__seterr(EM_EIO, "pipe: %s: cannot make pipes: %s", cmd, strerror(errno));
        goto close_all;
    }
    /* The environment: ours, then the extra entries (later ones win in
     * getenv's first-match order only if they come first). */
    size_t ne = 0, nx = 0;
    while (environ && environ[ne]) ne++;
    while (extra[nx]) nx++;
    char **envp = calloc(ne + nx + 1, sizeof *envp);
    if (!envp) {
        rc = em__seterr(EM_ENOMEM, "pipe: out of memory");
        goto close_all;
    }
    for (size_t i = 0; i < nx; i++) envp[i] = (char *)extra[i];
    for (size_t i = 0; i < ne; i++) envp[nx + i] = environ[i];
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fin[0], 0);
    posix_spawn_file_actions_adddup2(&fa, fout[1], 1);
    posix_spawn_file_actions_adddup2(&fa, ferr[1], 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    /* Only 0, 1 and 2 reach the command: a descriptor some other thread
     * opened without O_CLOEXEC (another task's file, a library's socket)
     * would otherwise stay open in it for as long as it runs. */
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
    /* The command starts with SIGPIPE at its default (an executor ignores
     * it) and the signal mask this thread had before blocking it. */
    posix_spawnattr_t sa;
    posix_spawnattr_init(&sa);
    sigset_t def;
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    posix_spawnattr_setsigdefault(&sa, &def);
    posix_spawnattr_setsigmask(&sa, &old_mask);
    posix_spawnattr_setflags(&sa, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    pid_t pid;
    int e = posix_spawnp(&pid, argv[0], &fa, &sa, (char *const *)argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&sa);
    free(envp);
    if (e) {
        rc = em__seterr(e == ENOENT ? EM_ENOENT : EM_EIO, "pipe: cannot run %s: %s", argv[0], strerror(e));
        goto close_all;
    }
    close(fin[0]);
    close(fout[1]);
    close(ferr[1]);
    fin[0] = fout[1] = ferr[1] = -1;
    fcntl(fin[1], F_SETFL, O_NONBLOCK);
    fcntl(fout[0], F_SETFL, O_NONBLOCK);
    fcntl(ferr[0], F_SETFL, O_NONBLOCK);

    piper pp = {.out = out, .line = EBUF_INIT};
    ebuf pending = EBUF_INIT;
    size_t sent = 0;
    int more = 1; /* records left in the partition */
    uint8_t buf[PIPE_CHUNK];
    while (fout[0] >= 0 || ferr[0] >= 0) {
        if (fin[1] >= 0 && sent == pending.len) { /* refill, or close stdin at the end */
            pending.len = sent = 0;
            if (more && (more = fill_input(in, &pending)) < 0) {
                rc = more;
                break;
            }
            if (!more && !pending.len) {
                close(fin[1]);
                fin[1] = -1;
            }
        }
        struct pollfd pf[3];
        int np = 0, iin = -1, iout = -1, ierr = -1;
        if (fin[1] >= 0) pf[iin = np++] = (struct pollfd){fin[1], POLLOUT, 0};
        if (fout[0] >= 0) pf[iout = np++] = (struct pollfd){fout[0], POLLIN, 0};
        if (ferr[0] >= 0) pf[ierr = np++] = (struct pollfd){ferr[0], POLLIN, 0};
        if (poll(pf, (nfds_t)np, -1) < 0) {
            if (errno == EINTR) continue;
            rc = em__seterr(EM_EIO, "pipe: %s: poll: %s", cmd, strerror(errno));
            break;
        }
        if (iin >= 0 && pf[iin].revents) {
            ssize_t k = write(fin[1], pending.p + sent, pending.len - sent);
            if (k > 0) sent += (size_t)k;
            else if (k < 0 && errno != EAGAIN && errno != EINTR) { /* EPIPE: it reads no more */
                close(fin[1]);
                fin[1] = -1;
            }
        }
        if (iout >= 0 && pf[iout].revents) {
            ssize_t k = read(fout[0], buf, sizeof buf);
            if (k > 0 && (rc = take_out(&pp, buf, (size_t)k))) break;
            if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
                close(fout[0]);
                fout[0] = -1;
            }
        }
        if (ierr >= 0 && pf[ierr].revents) {
            ssize_t k = read(ferr[0], buf, sizeof buf);
            if (k > 0) take_err(&pp, buf, (size_t)k);
            if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
                close(ferr[0]);
                ferr[0] = -1;
            }
        }
    }
    if (!rc && pp.line.len) /* a last line without its newline */
        rc = em_emit(out, pp.line.p, pp.line.len);
    if (rc) kill(pid, SIGKILL); /* an error, or the sink has enough */
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (!rc && (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
        /* The end of stderr, from the start of a line where it can. */
        const char *tail = pp.err;
        size_t tl = pp.errlen;
        while (tl && (tail[tl - 1] == '\n' || tail[tl - 1] == '\r')) tl--;
        if (pp.errlen == PIPE_ERR_KEEP) {
            const char *nl = memchr(tail, '\n', tl);
            if (nl) {
                tl -= (size_t)(nl + 1 - tail);
                tail = nl + 1;
            }
        }
        if (WIFEXITED(st))
            rc = em_fail("pipe: command '%s' exited with status %d%s%.*s", cmd, WEXITSTATUS(st),
                         tl ? "; its stderr ends: " : " (nothing on stderr)", (int)tl, tail);
        else
            rc = em_fail("pipe: command '%s' was killed by signal %d (%s)%s%.*s", cmd, WTERMSIG(st),
                         strsignal(WTERMSIG(st)), tl ? "; its stderr ends: " : "", (int)tl, tail);
    }
    ebuf_free(&pp.line);
    ebuf_free(&pending);
    if (rc == EM_STOP) rc = 0;
close_all:
    for (int i = 0; i < 2; i++) {
        if (fin[i] >= 0) close(fin[i]);
        if (fout[i] >= 0) close(fout[i]);
        if (ferr[i] >= 0) close(ferr[i]);
    }
    return rc;
}

int bi_pipe(int partition, em_iter *in, em_emitter *out, const void *arg) {
    (void)partition;
    const uint8_t *p = arg;
    uint32_t total;
    if (!p) return em_fail("pipe: malformed command");
    memcpy(&total, p, 4);
    const uint8_t *end = p + total;
    p += 4;
    const char **argv = malloc(sizeof *argv * (PIPE_MAX_ARGS + 1) * 2);
    if (!argv) return EM_ENOMEM;
    const char **env = argv + PIPE_MAX_ARGS + 1;
    uint32_t na, ne;
    if (unpack_list(&p, end, argv, &na) || unpack_list(&p, end, env, &ne) || na == 0) {
        free(argv);
        return em_fail("pipe: malformed command");
    }
    sigset_t ps, old, pending;
    sigemptyset(&ps);
    sigaddset(&ps, SIGPIPE);
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &ps, &old);
    int rc = run_pipe(argv, env, in, out, old);
    if (!was_pending && !sigismember(&old, SIGPIPE)) { /* take what our writes raised */
        struct timespec zero = {0, 0};
        while (sigtimedwait(&ps, NULL, &zero) == SIGPIPE) {}
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    free(argv);
    return rc;
}

em_rdd *em_pipe(em_rdd *rdd, const char *const *argv, const char *const *env) {
    if (!rdd || !argv || !argv[0] || !argv[0][0]) {
        em__seterr(EM_EINVAL, "em_pipe: %s", !rdd ? "NULL RDD" : "no command");
        return NULL;
    }
    ebuf a = EBUF_INIT;
    em_rdd *r = NULL;
    if (!pack_cmd(argv, env, &a)) r = rdd_op(rdd, OP_MAP_PARTITIONS, "pipe", (void *)bi_pipe, a.p, a.len);
    ebuf_free(&a);
    return r;
}
