/*
 * daemon.h -- what the cluster's daemons, ember-master and ember-worker,
 * share at their start: one table-driven parser for their command lines
 * (options, --conf KEY=VALUE settings, --help, and the messages and exit
 * statuses of a bad argument), and the signals their main thread takes.
 *
 * A daemon describes its options in a table of daemon_opt; the parser
 * walks argv once, in order, and stores each value where its entry says.
 * Every option but a flag takes the next argument as its value.
 */
#ifndef EM_DAEMON_H
#define EM_DAEMON_H

#include <signal.h>
#include <stddef.h>

#include "ember.h"

typedef enum daemon_opt_kind {
    DA_FLAG,     /* no value: *(int *)out = 1 */
    DA_SET_TRUE, /* no value: the setting `key` is set to "true" in conf, in its place among the --conf's */
    DA_STR,      /* a string of fewer than cap bytes, copied to (char *)out */
    DA_INT,      /* a decimal integer from min to max, to *(int *)out */
    DA_CONF,     /* KEY=VALUE, set in conf (conf_set_arg) */
    DA_FN,       /* parsed by fn(value, out): 0, or nonzero when bad */
} daemon_opt_kind;

typedef struct daemon_opt {
    const char *name;  /* "--host" */
    daemon_opt_kind kind;
    void *out;         /* DA_FLAG, DA_STR, DA_INT, DA_FN */
    size_t cap;        /* DA_STR */
    long min, max;     /* DA_INT */
    const char *key;   /* DA_SET_TRUE */
    int (*fn)(const char *value, void *out); /* DA_FN */
} daemon_opt;

typedef struct daemon_cmd {
    const char *prog;       /* "ember-master": the prefix of every message */
    const char *usage;      /* the text --help prints, and a bad argument after its message */
    const daemon_opt *opts; /* the options, ended by an entry whose name is NULL */
    const char **operand;   /* the first argument not starting with '-' goes here
                               (NULL: the daemon takes none) */
} daemon_cmd;

/* Parse argv[1..argc-1] by cmd, the --conf settings into conf, and on
 * success apply ember.log.level when conf sets it.  Returns
 *   0  parsed;
 *   1  --help or -h: the usage printed on stdout (the daemon exits 0);
 *   2  a bad argument: "PROG: bad argument NAME VALUE" and the usage on
 *      stderr, or "PROG: MESSAGE" for a --conf setting em_conf_set refuses
 *      (the daemon exits 2).
 * What was stored before a bad argument stays stored; conf stays the
 * caller's to free. */
int daemon_args_parse(const daemon_cmd *cmd, int argc, char **argv, em_conf *conf);

/* SIGTERM and SIGINT blocked in this thread and every thread it starts
 * after, into *sigs for this thread's sigwait; a thread that was running
 * before (a library's) and takes one passes it on to this thread (an
 * inherited "ignore" is replaced too: it would discard them before
 * sigwait).  SIGPIPE ignored, so a peer that goes away fails a write
 * instead. */
void daemon_block_signals(sigset_t *sigs);

#endif
