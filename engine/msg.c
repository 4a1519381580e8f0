/*
 * msg.c -- the typed control messages of the wire (see msg.h): the table of
 * messages and fields, and their msgpack encoding and checked decoding.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"
#include "mpcheck.h"
#include "msg.h"

#define ID_MAX 256      /* ids: workers, applications */
#define HOST_MAX 1024   /* host names, URLs */
#define TEXT_MAX 16384  /* reasons, the last lines of an executor's stderr */
#define HASH_LEN 32     /* a binary's BLAKE2b-256 hash */
#define LIBNAME_MAX 255 /* a library's file name (NAME_MAX) */
#define MSG_CONF_MAX 65536 /* an application's executor settings (conf_lines) */
#define ANY 0           /* no bound */

typedef struct field_def {
    const char *name;
    uint8_t type;
    uint64_t min, max; /* strings and bytes: length; numbers: value (max 0: any) */
} field_def;

typedef struct msg_def {
    const char *name;
    int n;
    field_def f[MSG_MAX_FIELDS];
    int nopt; /* the last nopt fields are optional */
} msg_def;

#define STR(nm, mn, mx) {nm, MT_STR, mn, mx}
#define BIN(nm, mn, mx) {nm, MT_BIN, mn, mx}
#define U64(nm, mn, mx) {nm, MT_U64, mn, mx}
#define I64(nm) {nm, MT_I64, 0, ANY}
#define BOOL(nm) {nm, MT_BOOL, 0, 1}

static const msg_def defs[M_TAG_END] = {
    [M_REGISTER_WORKER] = {"register_worker", 7,
                           {STR("worker id", 1, ID_MAX), STR("host", 1, HOST_MAX), U64("port", 0, 65535),
                            U64("cores", 1, 1u << 20), U64("memory MiB", 1, ANY), U64("executors", 0, 1u << 20),
                            STR("web ui url", 0, HOST_MAX)},
                           1},
    [M_WORKER_REGISTERED] = {"worker_registered", 2, {STR("master url", 1, HOST_MAX), STR("master web ui url", 0, HOST_MAX)},
                             1},
    [M_REGISTER_REFUSED] = {"register_refused", 1, {STR("reason", 0, TEXT_MAX)}},
    [M_HEARTBEAT] = {"heartbeat", 2, {STR("sender id", 1, ID_MAX), U64("faults fired", 0, 1u << 20)}, 1},
    [M_REGISTER_APP] = {"register_app", 10,
                        {STR("name", 0, ID_MAX), STR("driver url", 1, HOST_MAX), BIN("binary hash", HASH_LEN, HASH_LEN),
                         U64("cores max", 0, ANY), U64("cores per executor", 0, 1u << 20),
                         U64("memory MiB", 1, ANY), STR("executor settings", 0, MSG_CONF_MAX),
                         STR("app id", 0, ID_MAX), STR("ui url", 0, HOST_MAX), STR("user", 0, ID_MAX)},
                        2},
    [M_APP_REGISTERED] = {"app_registered", 1, {STR("app id", 1, ID_MAX)}},
    [M_EXECUTOR_ADDED] = {"executor_added", 6,
                          {U64("executor id", 0, ANY), STR("worker id", 1, ID_MAX), STR("host", 1, HOST_MAX),
                           U64("cores", 1, 1u << 20), STR("stdout url", 0, HOST_MAX), STR("stderr url", 0, HOST_MAX)},
                          2},
    [M_EXECUTOR_LOST] = {"executor_lost", 4,
                         {U64("executor id", 0, ANY), STR("reason", 0, TEXT_MAX), I64("exit code"),
                          U64("signal", 0, 127)}},
    [M_UNREGISTER_APP] = {"unregister_app", 1, {STR("app id", 1, ID_MAX)}},
    [M_LAUNCH_EXECUTOR] = {"launch_executor", 7,
                           {STR("app id", 1, ID_MAX), U64("executor id", 0, ANY), U64("cores", 1, 1u << 20),
                            U64("memory MiB", 1, ANY), STR("driver url", 1, HOST_MAX),
                            BIN("binary hash", HASH_LEN, HASH_LEN), STR("executor settings", 0, MSG_CONF_MAX)}},
    [M_EXECUTOR_EXITED] = {"executor_exited", 6,
                           {STR("app id", 1, ID_MAX), U64("executor id", 0, ANY), I64("exit code"),
                            U64("signal", 0, 127), STR("last stderr lines", 0, TEXT_MAX), BOOL("cannot run")}},
    [M_KILL_EXECUTOR] = {"kill_executor", 2, {STR("app id", 1, ID_MAX), U64("executor id", 0, ANY)}},
    [M_REGISTER_EXECUTOR] = {"register_executor", 6,
                             {U64("executor id", 0, ANY), STR("host", 1, HOST_MAX), U64("shuffle port", 1, 65535),
                              U64("cores", 1, 1u << 20), BIN("binary hash", HASH_LEN, HASH_LEN),
                              BOOL("shuffle service")}},
    [M_EXECUTOR_REFUSED] = {"executor_refused", 1, {STR("reason", 0, TEXT_MAX)}},
    [M_LAUNCH_TASK] = {"launch_task", 2, {U64("task id", 1, ANY), BIN("description", 1, ANY)}},
    [M_KILL_TASK] = {"kill_task", 1, {U64("task id", 1, ANY)}},
    [M_TASK_ENDED] = {"task_ended", 6,
                      {U64("task id", 1, ANY), BOOL("killed"), U64("start us", 0, ANY), U64("end us", 0, ANY),
                       BIN("result", 0, ANY), BOOL("queued")},
                      1},
    [M_FETCH_SEGMENT] = {"fetch_segment", 5,
                         {U64("request id", 0, ANY), U64("shuffle id", 0, UINT32_MAX), U64("map", 0, INT32_MAX),
                          U64("attempt", 1, ANY), U64("reduce partition", 0, INT32_MAX)}},
    [M_SEGMENT] = {"segment", 2, {U64("request id", 0, ANY), U64("length", 0, ANY)}},
    [M_ERROR] = {"error", 2, {I64("code"), STR("message", 0, TEXT_MAX)}},
    [M_FETCH_BINARY] = {"fetch_binary", 1, {BIN("binary hash", HASH_LEN, HASH_LEN)}},
    [M_BINARY] = {"binary", 2, {U64("length", 1, ANY), BIN("file hash", HASH_LEN, HASH_LEN)}},
    [M_DROP_SHUFFLE] = {"drop_shuffle", 1, {U64("shuffle id", 0, UINT32_MAX)}},
    [M_DROP_MAP_OUTPUT] = {"drop_map_output", 3,
                           {U64("shuffle id", 0, UINT32_MAX), U64("map", 0, INT32_MAX), U64("attempt", 1, ANY)}},
    [M_DROP_BCAST] = {"drop_bcast", 1, {U64("broadcast id", 1, ANY)}},
    [M_ASK_COMMIT] = {"ask_commit", 4,
                      {U64("request id", 0, ANY), U64("stage", 0, UINT32_MAX), U64("partition", 0, INT32_MAX),
                       U64("attempt", 1, ANY)}},
    [M_COMMIT_ANSWER] = {"commit_answer", 2, {U64("request id", 0, ANY), BOOL("granted")}},
    [M_FETCH_BCAST] = {"fetch_bcast", 2, {U64("request id", 0, ANY), U64("broadcast id", 1, ANY)}},
    [M_BCAST] = {"bcast", 3, {U64("request id", 0, ANY), BOOL("found"), BIN("value", 0, ANY)}},
    [M_RESULT_PART] = {"result_part", 2, {U64("task id", 1, ANY), BIN("bytes", 1, ANY)}},
    [M_DROP_RDD] = {"drop_rdd", 2, {U64("cache key", 0, ANY), U64("rdd id", 0, INT32_MAX)}},
    [M_FETCH_SOURCE] = {"fetch_source", 3,
                        {U64("request id", 0, ANY), U64("srcdata id", 1, ANY), U64("partition", 0, INT32_MAX)}},
    [M_SOURCE] = {"source", 4, {U64("request id", 0, ANY), BOOL("found"), U64("length", 0, ANY), BIN("bytes", 0, ANY)}},
    [M_EXECUTOR_RUNNING] = {"executor_running", 4,
                            {STR("app id", 1, ID_MAX), U64("executor id", 0, ANY), U64("cores", 1, 1u << 20),
                             U64("memory MiB", 1, ANY)}},
    [M_SHUFFLE_OPEN] = {"shuffle_open", 1, {STR("app id", 1, ID_MAX)}},
    [M_APP_FINISHED] = {"app_finished", 1, {STR("app id", 1, ID_MAX)}},
    [M_WORKER_LOST] = {"worker_lost", 1, {STR("worker id", 1, ID_MAX)}},
    [M_EXECUTOR_REGISTERED] = {"executor_registered", 2, {STR("app id", 1, ID_MAX), U64("executor id", 0, ANY)}},
    [M_APP_REMOVED] = {"app_removed", 2, {STR("app id", 1, ID_MAX), STR("reason", 0, TEXT_MAX)}},
    [M_LIBRARY] = {"library", 3,
                   {STR("file name", 1, LIBNAME_MAX), U64("length", 1, ANY), BIN("file hash", HASH_LEN, HASH_LEN)}},
    [M_APP_WAITING] = {"app_waiting", 3, {STR("app id", 1, ID_MAX), U64("state", 0, 2), STR("reason", 0, TEXT_MAX)}},
};

static const msg_def *def_of(int tag) { return tag > 0 && tag < M_TAG_END && defs[tag].name ? &defs[tag] : NULL; }

const char *msg_name(int tag) {
    const msg_def *d = def_of(tag);
    return d ? d->name : "unknown";
}

static int write_cb(void *data, const char *buf, size_t len) {
    return ebuf_append((ebuf *)data, buf, len) ? -1 : 0;
}

/* Whether v fits field f's bounds. */
static int in_bounds(const field_def *f, uint64_t v) { return v >= f->min && (f->max == ANY || v <= f->max); }

/* msg_encode; head: leave the last field's bytes out. */
static int encode(ebuf *out, int tag, const msg_val *f, int n, int head) {
    const msg_def *d = def_of(tag);
    if (!d || n > d->n || n < d->n - d->nopt)
        return em__seterr(EM_EINVAL, "msg_encode: message %d with %d fields", tag, n);
    if (head && (n < 1 || d->f[n - 1].type != MT_BIN))
        return em__seterr(EM_EINVAL, "msg_encode: message %s does not end with bytes", d->name);
    for (int i = 0; i < n; i++) {
        const field_def *fd = &d->f[i];
        uint64_t v = fd->type == MT_STR || fd->type == MT_BIN ? f[i].len : fd->type == MT_I64 ? 0 : f[i].u;
        if (!in_bounds(fd, v) || (f[i].len && !f[i].p && (fd->type == MT_STR || fd->type == MT_BIN)))
            return em__seterr(EM_EINVAL, "msg_encode: %s: field \"%s\" out of bounds", d->name, fd->name);
    }
    msgpack_packer pk;
    size_t start = out->len;
    msgpack_packer_init(&pk, out, write_cb);
    int bad = msgpack_pack_array(&pk, (size_t)n + 1) || msgpack_pack_uint64(&pk, (uint64_t)tag);
    for (int i = 0; i < n && !bad; i++) {
        switch (d->f[i].type) {
        case MT_U64: bad = msgpack_pack_uint64(&pk, f[i].u); break;
        case MT_I64: bad = msgpack_pack_int64(&pk, f[i].i); break;
        case MT_BOOL: bad = f[i].u ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk); break;
        case MT_STR: bad = msgpack_pack_str(&pk, f[i].len) || msgpack_pack_str_body(&pk, f[i].p, f[i].len); break;
        case MT_BIN:
            bad = msgpack_pack_bin(&pk, f[i].len) ||
                  (!(head && i == n - 1) && msgpack_pack_bin_body(&pk, f[i].p, f[i].len));
            break;
        }
    }
    if (bad) {
        out->len = start;
        return em__seterr(EM_ENOMEM, "msg_encode: out of memory");
    }
    return 0;
}

int msg_encode(ebuf *out, int tag, const msg_val *f, int n) { return encode(out, tag, f, n, 0); }
int msg_encode_head(ebuf *out, int tag, const msg_val *f, int n) { return encode(out, tag, f, n, 1); }

static const char *type_name(int t) {
    switch (t) {
    case MT_U64: return "an unsigned integer";
    case MT_I64: return "an integer";
    case MT_BOOL: return "a boolean";
    case MT_STR: return "a string";
    default: return "bytes";
    }
}

int msgs_next(const uint8_t *body, size_t len, size_t *off, size_t *mlen) {
    if (*off >= len) return 0;
    const char *why = mp_next(body + *off, len - *off, mlen);
    if (why)
        return em__seterr(EM_EPROTO, "a batch of messages: at byte %zu of %zu: %s", *off, len, why);
    *off += *mlen;
    return 1;
}

int msg_decode(msg *m, const uint8_t *body, size_t len) {
    size_t off = 0;
    memset(m, 0, sizeof *m);
    msgpack_unpacked_init(&m->u);
    const char *why = mp_precheck(body, len);
    if (why) return em__seterr(EM_EPROTO, "message: %s", why);
    /* A message is a short flat array: refuse any other top level before
     * msgpack-c allocates for it (24 bytes per element). */
    if (!len || body[0] < 0x91 || body[0] > 0x90 + MSG_MAX_FIELDS + 1)
        return em__seterr(EM_EPROTO, "message: not an array of a tag and at most %d fields", MSG_MAX_FIELDS);
    if (msgpack_unpack_next(&m->u, (const char *)body, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len)
        return em__seterr(EM_EPROTO, "message: not one msgpack message");
    const msgpack_object *o = &m->u.data;
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < 1 ||
        o->via.array.ptr[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return em__seterr(EM_EPROTO, "message: not an array starting with a tag");
    uint64_t tag = o->via.array.ptr[0].via.u64;
    const msg_def *d = tag < M_TAG_END ? def_of((int)tag) : NULL;
    if (!d) return em__seterr(EM_EPROTO, "message of unknown tag %llu", (unsigned long long)tag);
    int got = (int)o->via.array.size - 1;
    if (got > d->n || got < d->n - d->nopt) {
        if (d->nopt)
            return em__seterr(EM_EPROTO, "message %s: %d fields, expected %d to %d", d->name, got, d->n - d->nopt,
                              d->n);
        return em__seterr(EM_EPROTO, "message %s: %d fields, expected %d", d->name, got, d->n);
    }
    for (int i = 0; i < got; i++) {
        const msgpack_object *x = &o->via.array.ptr[i + 1];
        const field_def *fd = &d->f[i];
        msg_val *v = &m->f[i];
        int ok = 0;
        uint64_t measure = 0;
        /* The union is read only once the type is known. */
        switch (fd->type) {
        case MT_U64:
            if ((ok = x->type == MSGPACK_OBJECT_POSITIVE_INTEGER)) measure = v->u = x->via.u64;
            break;
        case MT_I64:
            ok = x->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ||
                 (x->type == MSGPACK_OBJECT_POSITIVE_INTEGER && x->via.u64 <= INT64_MAX);
            if (ok) v->i = x->via.i64;
            break;
        case MT_BOOL:
            if ((ok = x->type == MSGPACK_OBJECT_BOOLEAN)) measure = v->u = x->via.boolean ? 1 : 0;
            break;
        case MT_STR:
            if ((ok = x->type == MSGPACK_OBJECT_STR)) {
                v->p = (const uint8_t *)x->via.str.ptr;
                measure = v->len = x->via.str.size;
            }
            break;
        case MT_BIN:
            if ((ok = x->type == MSGPACK_OBJECT_BIN)) {
                v->p = (const uint8_t *)x->via.bin.ptr;
                measure = v->len = x->via.bin.size;
            }
            break;
        }
        if (!ok) return em__seterr(EM_EPROTO, "message %s: field \"%s\" is not %s", d->name, fd->name, type_name(fd->type));
        if (fd->type != MT_I64 && !in_bounds(fd, measure)) {
            char hi[32] = "any";
            if (fd->max != ANY) snprintf(hi, sizeof hi, "%llu", (unsigned long long)fd->max);
            return em__seterr(EM_EPROTO, "message %s: field \"%s\" %s %llu, outside [%llu, %s]", d->name, fd->name,
                              fd->type == MT_STR || fd->type == MT_BIN ? "has length" : "is",
                              (unsigned long long)measure, (unsigned long long)fd->min, hi);
        }
    }
    m->tag = (int)tag;
    m->n = got;
    return 0;
}

void msg_free(msg *m) { msgpack_unpacked_destroy(&m->u); }
