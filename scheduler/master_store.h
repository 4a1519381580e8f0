/*
 * master_store.h -- the master's recovery file, for Spark's FILESYSTEM
 * recovery mode (ember.deploy.recoveryMode): the bytes of master_save
 * (master.h) kept in <ember.deploy.recoveryDirectory>/master-state, replaced
 * whole on every change and read back when the master starts.
 *
 * The file is a 24-byte header and the body:
 *
 *   offset 0   8 bytes   "EMBERMST"
 *          8   u32 LE    format version (1)
 *         12   u32 LE    CRC32 (zlib) of the body
 *         16   u64 LE    the body's length
 *         24   body
 *
 * A write goes to master-state.tmp, is fsynced, renamed over master-state,
 * and the directory is fsynced: a crash at any point leaves the old file or
 * the new one, whole.  Reading checks the magic, the version, the length
 * and the CRC, and any mismatch is an error naming the file and what is
 * wrong: a master refuses to start on a corrupt state (as Spark's does)
 * rather than forget a running cluster in silence.  The directory is locked
 * (flock on master.lock) while a master uses it, so two masters never
 * share one state.
 */
#ifndef EM_MASTER_STORE_H
#define EM_MASTER_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define MASTER_STORE_HEADER 24

typedef struct master_store master_store;

/* Use dir (made if missing, mode 0700) and take its lock.  NULL with a
 * message naming the directory when it cannot be made or another master
 * holds it. */
master_store *master_store_open(const char *dir);
/* Release the lock; the file stays. */
void master_store_close(master_store *s);
/* The state file's path. */
const char *master_store_path(const master_store *s);

/* The saved body: 0 with *body malloc'd (the caller frees it) and *len,
 * or *body NULL when there is no state file yet; EM_EIO (unreadable) or
 * EM_ECORRUPT (not whole, not this format, a CRC mismatch), naming the
 * file.  Nothing is changed on disk. */
int master_store_read(master_store *s, uint8_t **body, size_t *len);
/* Replace the saved body with body[0, len), atomically.  0, or EM_EIO
 * naming the file (the old state is then still there, whole). */
int master_store_write(master_store *s, const uint8_t *body, size_t len);

/* The framing alone: append the header and body to out (0 or EM_ENOMEM);
 * check bytes read from a file (named by name, for messages) and point
 * *body, *len at its body (0 or EM_ECORRUPT). */
int master_store_frame(ebuf *out, const uint8_t *body, size_t len);
int master_store_unframe(const uint8_t *p, size_t n, const char *name, const uint8_t **body, size_t *len);

#endif
