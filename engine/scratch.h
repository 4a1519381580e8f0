/*
 * scratch.h -- the scratch directories of this process's contexts
 * (`<ember.local.dir>/ember-<pid>-XXXXXX`, where shuffle files, spills and
 * disk-cached partitions go): creating them, removing them at em_close, at
 * exit and on SIGINT/SIGTERM, and reclaiming those that processes which died
 * some other way (SIGKILL, a crash, _exit) left behind.  Internal.
 *
 * The first scratch_create of a process registers an atexit hook and, for
 * SIGINT and SIGTERM whose disposition is still the default, a handler.
 * Both remove the directories this process created and has not removed yet;
 * the handler then restores the default disposition and raises the signal
 * again, so the process still dies of it.  A signal the program ignores or
 * handles itself is left alone: ember does not take over a handler that may
 * mean to keep running (a program that exits from its handler with exit()
 * gets the atexit cleanup; otherwise the next sweep reclaims the directory).
 * Directories are remembered with the pid that created them, so a forked
 * child that exits never removes its parent's.
 *
 * PIDs name directories, so all processes sharing one ember.local.dir must
 * share a PID namespace (one machine, or one container), as with Spark's
 * local directories: a process in another namespace could look dead and
 * have its directory swept.
 */
#ifndef EM_SCRATCH_H
#define EM_SCRATCH_H

/* Create a fresh directory `<base>/ember-<pid>-XXXXXX` (mode 0700) and
 * register it for removal at exit and on SIGINT/SIGTERM.  Returns its path,
 * which the caller frees after scratch_remove.  On failure returns NULL with
 * the error message set (EM_EIO naming base and the cause, EM_EINVAL for a
 * base too long, EM_ENOMEM) and creates nothing.  When all registry slots
 * (64) are in use the directory is created but not registered: em_close
 * still removes it, exit and signals do not, the next sweep does. */
char *scratch_create(const char *base);

/* Remove the directory scratch_create returned, with everything in it, and
 * forget it.  Call it only when nothing writes there any more (em_close,
 * after the executors stopped).  Best effort; path stays the caller's. */
void scratch_remove(const char *path);

/* Reclaim what dead processes left under base: each entry named
 * `ember-<digits>-<suffix>` that is a directory (not a symbolic link) owned
 * by this process's effective user, whose pid is not this process's and
 * names no live process (kill(pid, 0) fails with ESRCH), is removed with
 * everything in it.  Nothing else is touched.  Best effort: errors (base
 * unreadable, entries that cannot be removed) are ignored. */
void scratch_sweep(const char *base);

#endif
