/*
 * appserve.c -- the driver's answers to fetch_binary, fetch_bcast and
 * fetch_source (see appserve.h).
 *
 * The binary goes out as its message, its chunks (sendfile where the
 * connection allows) and an empty chunk, the library first when there is
 * one; parallelized records go out as source messages written from the
 * srcdata itself, not copied.  Both keep at most 4 MiB queued on a
 * connection and send the rest as it drains.
 */
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "appbin.h"
#include "appserve.h"
#include "ember.h"
#include "err.h"
#include "fnref.h"
#include "frame.h"
#include "log.h"
#include "srcdata.h"

#define CHUNK ((size_t)256 << 10) /* the binary's chunks: what a full socket leaves to copy */

struct appserve {
    size_t max_frame;
    /* The application binary and the shared libember it runs with
     * (lib_state 1: none, 2: lib_file), found at the first fetch. */
    uint8_t file_hash[32];
    uint64_t bin_size;
    int have_hash;
    int lib_state;
    char lib_file[4096], lib_name[256];
    uint8_t lib_hash[32];
    uint64_t lib_size;
};

/* The binary going out to a worker, as its connection drains: the shared
 * libember first when the program runs with one (appbin.h), then the
 * executable.  Each file is its message, its chunks and an empty chunk. */
typedef struct binsend {
    appserve *a;
    int fd[2];         /* the library's (-1: none), the executable's */
    uint64_t size[2];
    int part;          /* the file going out: 0 the library, 1 the executable, 2 done */
    int head;          /* its message is queued */
    uint64_t off;      /* its bytes queued */
    size_t chunk;
} binsend;

/* Partitions of parallelized records going out to an executor (answers to
 * its fetch_source requests), oldest first, a part at a time as its
 * connection drains. */
typedef struct srcjob {
    struct srcjob *next;
    uint64_t rid;        /* the request's id */
    srcdata *s;          /* held while its bytes go out; NULL: not found */
    const uint8_t *p;
    size_t len, off;
    char why[300];       /* not found: why */
} srcjob;

typedef struct srcq {
    srcjob *head, *tail;
    size_t part;         /* bytes per message */
} srcq;

struct appserve_conn {
    binsend *bin;   /* the binary being sent on it, or NULL */
    srcq *src;      /* records being sent on it, or NULL */
};

appserve *appserve_new(size_t max_frame) {
    appserve *a = calloc(1, sizeof *a);
    if (!a) return em__seterr(EM_ENOMEM, "out of memory"), NULL;
    a->max_frame = max_frame;
    return a;
}

void appserve_free(appserve *a) { free(a); }

static appserve_conn *conn_state(appserve_conn **ac) {
    if (!*ac) *ac = calloc(1, sizeof **ac);
    return *ac;
}

/* ------------------------------------------------------------ the binary */

/* Send the library's and the binary's next chunks (sendfile where the
 * connection allows), with at most BIN_HIGH bytes queued; the rest as the
 * connection drains. */
#define BIN_HIGH ((size_t)4 << 20)
static void binary_pump(conn *c, void *arg) {
    binsend *b = arg;
    appserve *a = b->a;
    int rc = 0;
    while (!rc && b->part < 2 && conn_queued(c) < BIN_HIGH) {
        int p = b->part;
        if (b->fd[p] < 0) {
            b->part++;
        } else if (!b->head) {
            if (p == 0) {
                msg_val f[] = {msg_str(a->lib_name), msg_u(a->lib_size), msg_bin(a->lib_hash, 32)};
                rc = conn_send_msg(c, M_LIBRARY, f, 3);
            } else {
                msg_val f[] = {msg_u(a->bin_size), msg_bin(a->file_hash, 32)};
                rc = conn_send_msg(c, M_BINARY, f, 2);
            }
            b->head = 1;
            b->off = 0;
        } else if (b->off < b->size[p]) {
            size_t n = b->size[p] - b->off < b->chunk ? (size_t)(b->size[p] - b->off) : b->chunk;
            if (!(rc = conn_send_file(c, FT_CHUNK, b->fd[p], b->off, n))) b->off += n;
        } else if (!(rc = conn_send(c, FT_CHUNK, NULL, 0))) { /* the end of this file */
            if (p == 0)
                log_msg(LOG_INFO, "driver", "sent the application's library %s (%s, %llu bytes) to %s", a->lib_name,
                        a->lib_file, (unsigned long long)b->size[p], conn_peer(c));
            else
                log_msg(LOG_INFO, "driver", "sent the application's binary (%llu bytes) to %s",
                        (unsigned long long)b->size[p], conn_peer(c));
            b->part++;
            b->head = 0;
        }
    }
    if (rc) conn_close(c, "cannot send the application's binary");
    else if (b->part < 2) conn_on_drain(c, binary_pump, b);
}

static void binsend_free(binsend *b) {
    if (!b) return;
    for (int i = 0; i < 2; i++)
        if (b->fd[i] >= 0) close(b->fd[i]);
    free(b);
}

/* What the binary's and the library's messages say, found once: 0, or an
 * error (its message set). */
static int binary_known(appserve *a) {
    if (!a->have_hash) {
        if (appbin_hash_file("/proc/self/exe", a->file_hash, &a->bin_size)) return -1;
        a->have_hash = 1;
    }
    if (!a->lib_state) {
        int rc = appbin_library(a->lib_file, sizeof a->lib_file, a->lib_name, sizeof a->lib_name);
        if (rc < 0 || (rc == 1 && appbin_hash_file(a->lib_file, a->lib_hash, &a->lib_size))) return -1;
        a->lib_state = rc == 1 ? 2 : 1;
    }
    return 0;
}

void appserve_binary(appserve *a, appserve_conn **ac, conn *c, const msg *m) {
    if (sodium_memcmp(m->f[0].p, fnref_binary_hash(), 32)) {
        msg_val f[] = {msg_i(EM_EINVAL), msg_str("this driver runs another binary")};
        conn_send_msg(c, M_ERROR, f, 2);
        return;
    }
    if (binary_known(a)) {
        msg_val f[] = {msg_i(EM_EIO), msg_str(em_errmsg())};
        log_msg(LOG_ERROR, "driver", "cannot send the application's binary: %s", em_errmsg());
        conn_send_msg(c, M_ERROR, f, 2);
        return;
    }
    appserve_conn *s = conn_state(ac);
    binsend *b = s && !s->bin ? calloc(1, sizeof *b) : NULL;
    if (b) {
        b->a = a;
        b->fd[0] = a->lib_state == 2 ? open(a->lib_file, O_RDONLY | O_CLOEXEC) : -1;
        b->fd[1] = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        b->size[0] = a->lib_size;
        b->size[1] = a->bin_size;
        b->chunk = a->max_frame - 64 < CHUNK ? a->max_frame - 64 : CHUNK; /* room for a sealed frame's overhead */
    }
    if (!b || b->fd[1] < 0 || (a->lib_state == 2 && b->fd[0] < 0)) {
        binsend_free(b);
        conn_close(c, "cannot send the application's binary");
        return;
    }
    s->bin = b;
    binary_pump(c, b);
}

/* ------------------------------------------------------------ broadcasts */

void appserve_bcast(appserve *a, conn *c, const msg *m) {
    size_t len = 0;
    em_bcast b = {m->f[1].u};
    const void *p = em_bcast_value(b, &len);
    char why[300] = "";
    if (p && len + 1024 > a->max_frame) {
        /* Not found, with the reason as the value: the task fails saying so. */
        snprintf(why, sizeof why,
                 "broadcast %llu is %zu bytes, more than ember.rpc.message.maxSize (%zu bytes) lets travel",
                 (unsigned long long)b.id, len, a->max_frame);
        p = NULL;
    }
    msg_val f[] = {m->f[0], msg_u(p != NULL), p ? msg_bin(p, len) : msg_str(why)};
    if (conn_send_msg(c, M_BCAST, f, 3)) conn_close(c, em_errmsg());
}

/* ------------------------------------------------- parallelized records */

static void release_src(void *s) { src_release(s); }

static void srcjob_pop(srcq *q) {
    srcjob *j = q->head;
    if (!(q->head = j->next)) q->tail = NULL;
    src_release(j->s);
    free(j);
}

static void srcq_free(srcq *q) {
    if (!q) return;
    while (q->head) srcjob_pop(q);
    free(q);
}

/* Send the queued records' next parts, with at most SRC_HIGH bytes queued;
 * the rest as the connection drains.  Each part is one source message
 * (other messages may go out between them), written from the srcdata
 * itself, not copied; the executor puts them together by request id. */
#define SRC_HIGH ((size_t)4 << 20)
#define SRC_PART ((size_t)1 << 20)
static void source_pump(conn *c, void *arg) {
    srcq *q = arg;
    while (q->head && conn_queued(c) < SRC_HIGH) {
        srcjob *j = q->head;
        size_t n = j->len - j->off < q->part ? j->len - j->off : q->part;
        msg_val f[] = {msg_u(j->rid), msg_u(j->s != NULL), msg_u(j->len),
                       j->s ? msg_bin(j->p + j->off, n) : msg_str(j->why)};
        /* The records go out from where they lie, the part keeping them. */
        if (j->s) src_retain(j->s);
        if (j->s ? conn_send_msg_ref(c, M_SOURCE, f, 4, release_src, j->s) : conn_send_msg(c, M_SOURCE, f, 4)) {
            conn_close(c, em_errmsg());
            return;
        }
        j->off += n;
        if (!j->s || j->off == j->len) srcjob_pop(q);
    }
    if (q->head) conn_on_drain(c, source_pump, q);
}

void appserve_source(appserve *a, appserve_conn **ac, conn *c, const msg *m) {
    srcjob *j = calloc(1, sizeof *j);
    appserve_conn *s = j ? conn_state(ac) : NULL;
    if (!s || (!s->src && !(s->src = calloc(1, sizeof *s->src)))) {
        free(j);
        conn_close(c, "the driver is out of memory");
        return;
    }
    s->src->part = a->max_frame - 1024 < SRC_PART ? a->max_frame - 1024 : SRC_PART; /* room for sealing */
    j->rid = m->f[0].u;
    if (!(j->s = src_find(m->f[1].u, (int)m->f[2].u, &j->p, &j->len)))
        snprintf(j->why, sizeof j->why, "%s", em_errmsg());
    srcq *q = s->src;
    int idle = !q->head;
    if (q->tail) q->tail->next = j;
    else q->head = j;
    q->tail = j;
    if (idle) source_pump(c, q); /* else it goes after those before it */
}

void appserve_conn_free(appserve_conn *ac) {
    if (!ac) return;
    binsend_free(ac->bin);
    srcq_free(ac->src);
    free(ac);
}
