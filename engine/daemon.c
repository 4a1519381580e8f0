/*
 * daemon.c -- what the daemons share at start: the command-line parser and
 * the signals their main thread takes (see daemon.h).
 *
 * Arguments are taken in order: --help first, then the flags, then the
 * operand, then the options that take a value.  A value is always the
 * next argument, even one that starts with '-'.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "daemon.h"
#include "log.h"

static const daemon_opt *find_opt(const daemon_opt *opts, const char *name) {
    for (const daemon_opt *o = opts; o->name; o++)
        if (!strcmp(o->name, name)) return o;
    return NULL;
}

/* Store value by o: 0, or 1 when it is bad. */
static int take_value(const daemon_opt *o, const char *v) {
    switch (o->kind) {
    case DA_STR: return snprintf(o->out, o->cap, "%s", v) >= (int)o->cap;
    case DA_INT: {
        char *end;
        long x = strtol(v, &end, 10);
        if (!*v || *end || x < o->min || x > o->max) return 1;
        *(int *)o->out = (int)x;
        return 0;
    }
    case DA_FN: return o->fn(v, o->out) != 0;
    default: return 1;
    }
}

int daemon_args_parse(const daemon_cmd *cmd, int argc, char **argv, em_conf *conf) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(cmd->usage, stdout);
            return 1;
        }
        const daemon_opt *o = find_opt(cmd->opts, a);
        if (o && o->kind == DA_FLAG) {
            *(int *)o->out = 1;
            continue;
        }
        if (o && o->kind == DA_SET_TRUE) {
            em_conf_set(conf, o->key, "true");
            continue;
        }
        if (cmd->operand && a[0] != '-' && !*cmd->operand) {
            *cmd->operand = a;
            continue;
        }
        int bad = !v || !o;
        if (!bad && o->kind == DA_CONF) {
            if (conf_set_arg(conf, v)) {
                fprintf(stderr, "%s: %s\n", cmd->prog, em_errmsg());
                return 2;
            }
        } else if (!bad) {
            bad = take_value(o, v);
        }
        if (bad) {
            fprintf(stderr, "%s: bad argument %s%s%s\n", cmd->prog, a, v ? " " : "", v ? v : "");
            fputs(cmd->usage, stderr);
            return 2;
        }
        i++;
    }
    if (conf_is_set(conf, "ember.log.level")) log_set_level(log_level_parse(em_conf_get(conf, "ember.log.level")));
    return 0;
}

/* The thread that waits for the stop signals. */
static pthread_t waiter;

/* A stop signal that reached a thread started before the signals were
 * blocked (OpenBLAS starts its threads as the library loads) goes on to
 * the waiting thread, where it is pending for sigwait: without this, its
 * default action would end the process without the daemon's shutdown. */
static void forward_stop(int sig) { pthread_kill(waiter, sig); }

void daemon_block_signals(sigset_t *sigs) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_stop;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    waiter = pthread_self();
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigemptyset(sigs);
    sigaddset(sigs, SIGTERM);
    sigaddset(sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
}
