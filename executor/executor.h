/*
 * executor.h -- the executor process of cluster mode.  A worker starts the
 * application's own binary with EMBER_ROLE=executor in its environment;
 * libember takes over before main (the takeover in engine/context.c) and
 * runs executor_main, which never returns to the program's main.
 *
 * The executor connects to the driver (EMBER_DRIVER_URL, "HOST:PORT"),
 * registers with its id, its shuffle server's address, its cores and the
 * hash of its binary (the driver refuses it when that differs from its
 * own), then runs the task descriptions the driver sends on EMBER_EXECUTOR_
 * CORES threads, exactly as local[N]'s threads run them (runner.h), and
 * sends each attempt's result back.  It keeps its cached partitions and
 * shuffle outputs in its directory (EMBER_EXECUTOR_DIR, made by the
 * worker), serves its shuffle segments to other executors on its shuffle
 * port, fetches the segments it needs from theirs, asks the driver before
 * committing output files and for broadcast values on first use.  It ends
 * when the driver's connection goes (the application ended), or at once
 * when the driver refuses it.
 *
 * The environment it reads: EMBER_DRIVER_URL, EMBER_EXECUTOR_ID,
 * EMBER_EXECUTOR_CORES, EMBER_EXECUTOR_DIR, EMBER_EXECUTOR_HOST (the
 * address its shuffle server binds and advertises, default 127.0.0.1),
 * EMBER_EXECUTOR_MEMORY (MiB, its cache's budget), EMBER_CONF (the
 * application's settings as KEY=VALUE lines, conf_lines: its
 * ember.rpc.message.maxSize and ember.reducer.maxSizeInFlight), and the
 * shared secret's settings (netconf.h).
 */
#ifndef EM_EXECUTOR_H
#define EM_EXECUTOR_H

/* The executor process's main: the exit status (0 when the driver ended
 * the application, 1 on a failure, its cause on stderr). */
int executor_main(void);

#endif
