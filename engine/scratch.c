/*
 * scratch.c -- the registry of this process's scratch directories and their
 * removal (see scratch.h).
 *
 * The registry is read by a signal handler, which may interrupt any thread
 * anywhere -- inside malloc, inside scratch_create on the same thread -- so
 * it is a fixed array of slots that the handler reads without locks or
 * allocation.  A slot's state is the only thing published: a thread claims a
 * FREE slot (FILLING), fills in the pid and path, and releases it as LIVE;
 * whoever removes a LIVE slot's directory first moves it on with a
 * compare-and-swap, so em_close and a signal never both own a slot, and a
 * slot's path is never freed while the handler may read it.  The handler
 * and the atexit hook take LIVE slots to GONE and leave them there: the
 * process is ending.
 *
 * At exit or on a signal other threads may still be running tasks that
 * create files in the directory, so it is first renamed (keeping the
 * `ember-<pid>-` prefix the sweep knows): later opens by the old path fail
 * instead of adding entries behind the remover.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ember.h"
#include "err.h"
#include "fsutil.h"
#include "scratch.h"

#define SCRATCH_SLOTS 64

enum { SLOT_FREE, SLOT_FILLING, SLOT_LIVE, SLOT_GONE };

static struct slot {
    int state;  /* SLOT_*, accessed atomically */
    pid_t pid;  /* the process that created the directory */
    char *path; /* the registry's own copy, freed when the slot is */
} slots[SCRATCH_SLOTS];

static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static int cas_state(struct slot *s, int from, int to) {
    return __atomic_compare_exchange_n(&s->state, &from, to, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* Rename path aside, then remove it.  Async-signal-safe. */
static void remove_now(const char *path) {
    char moved[PATH_MAX + 4];
    size_t n = strlen(path);
    if (n + 4 <= sizeof moved) {
        memcpy(moved, path, n);
        memcpy(moved + n, ".rm", 4);
        if (rename(path, moved) == 0) path = moved;
    }
    rm_tree(path);
}

/* Remove the directories this process registered and has not removed.
 * Async-signal-safe: atomics, getpid, rename and rm_tree. */
static void remove_mine(void) {
    pid_t me = getpid();
    for (int i = 0; i < SCRATCH_SLOTS; i++) {
        struct slot *s = &slots[i];
        if (!cas_state(s, SLOT_LIVE, SLOT_GONE)) continue;
        if (s->pid != me) { /* inherited from the parent across fork: its own */
            __atomic_store_n(&s->state, SLOT_LIVE, __ATOMIC_RELEASE);
            continue;
        }
        remove_now(s->path);
    }
}

static void at_exit(void) {
    int saved = errno;
    remove_mine();
    errno = saved;
}

/* Remove, fall back to the default disposition (the one this handler
 * replaced) and raise the signal again.  It is blocked while the handler
 * runs, so it is delivered, with the default action, when the handler
 * returns: the process dies of it and its parent sees WTERMSIG. */
static void on_signal(int sig) {
    int saved = errno;
    struct sigaction dfl;
    remove_mine();
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
    errno = saved;
}

static void install(void) {
    static const int sigs[] = {SIGINT, SIGTERM};
    atexit(at_exit);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) != 0) continue;
        /* Ignored, or the program's own handler: leave it (scratch.h). */
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaddset(&sa.sa_mask, SIGINT); /* one handler at a time */
        sigaddset(&sa.sa_mask, SIGTERM);
        sa.sa_flags = SA_RESTART;
        sigaction(sigs[i], &sa, NULL);
    }
}

char *scratch_create(const char *base) {
    char tmpl[PATH_MAX];
    int n = snprintf(tmpl, sizeof tmpl, "%s/ember-%d-XXXXXX", base, (int)getpid());
    if (n < 0 || (size_t)n >= sizeof tmpl) {
        em__seterr(EM_EINVAL, "em_open: ember.local.dir is too long (%zu bytes)", strlen(base));
        return NULL;
    }
    pthread_once(&install_once, install);
    struct slot *s = NULL;
    for (int i = 0; i < SCRATCH_SLOTS && !s; i++)
        if (cas_state(&slots[i], SLOT_FREE, SLOT_FILLING)) s = &slots[i];
    char *out = NULL, *reg = NULL;
    if (!mkdtemp(tmpl)) {
        em__seterr(EM_EIO, "em_open: cannot create a directory under ember.local.dir %s: %s", base,
                   strerror(errno));
        goto fail;
    }
    if (!(out = strdup(tmpl)) || (s && !(reg = strdup(tmpl)))) {
        em__seterr(EM_ENOMEM, "em_open: out of memory");
        rm_tree(tmpl);
        goto fail;
    }
    if (s) {
        s->pid = getpid();
        s->path = reg;
        __atomic_store_n(&s->state, SLOT_LIVE, __ATOMIC_RELEASE);
    }
    return out;
fail:
    free(out);
    free(reg);
    if (s) __atomic_store_n(&s->state, SLOT_FREE, __ATOMIC_RELEASE);
    return NULL;
}

void scratch_remove(const char *path) {
    pid_t me = getpid();
    /* Remove first, forget after: a signal in between removes it again
     * (harmlessly) rather than not at all. */
    rm_tree(path);
    for (int i = 0; i < SCRATCH_SLOTS; i++) {
        struct slot *s = &slots[i];
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_LIVE || s->pid != me || strcmp(s->path, path))
            continue;
        char *p = s->path;
        /* Fails only when an exit or a signal took the slot meanwhile; it
         * may still be reading p, and the process is ending: keep it. */
        if (cas_state(s, SLOT_LIVE, SLOT_FREE)) free(p);
        return;
    }
}

/* The pid of a name `ember-<digits>-<suffix>`, or 0. */
static pid_t scratch_pid(const char *name) {
    long pid = 0;
    const char *p = name + 6;
    if (strncmp(name, "ember-", 6)) return 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        pid = pid * 10 + (*p - '0');
        if (pid > INT_MAX) return 0;
    }
    if (p == name + 6 || *p != '-' || !p[1]) return 0;
    return (pid_t)pid;
}

void scratch_sweep(const char *base) {
    DIR *d = opendir(base);
    struct dirent *e;
    pid_t me = getpid();
    uid_t uid = geteuid();
    if (!d) return;
    while ((e = readdir(d))) {
        struct stat st;
        char path[PATH_MAX];
        pid_t pid = scratch_pid(e->d_name);
        if (pid <= 0 || pid == me) continue;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode) || st.st_uid != uid)
            continue;
        if (kill(pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to signal: alive */
        int n = snprintf(path, sizeof path, "%s/%s", base, e->d_name);
        if (n > 0 && (size_t)n < sizeof path) rm_tree(path);
    }
    closedir(d);
}
