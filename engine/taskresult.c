/*
 * taskresult.c -- the wire form of a task attempt's result (taskresult.h):
 * what an executor process sends back to the driver in M_TASK_ENDED.
 */
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"
#include "mpcheck.h"
#include "taskresult.h"

#define TR_FIELDS 21
#define TR_MAX_ACCS (1 << 20)
#define TR_MAX_LOST (1 << 24)
#define TR_MAX_BLOCKS (1 << 20)

void task_result_clear(task_result *r) {
    free(r->data);
    free(r->accs);
    free(r->lost_maps);
    free(r->blocks);
    r->data = NULL;
    r->accs = NULL;
    r->lost_maps = NULL;
    r->blocks = NULL;
    r->nblocks = 0;
    r->len = 0;
    r->naccs = 0;
    r->nlost = 0;
}

static int write_cb(void *data, const char *buf, size_t len) {
    return ebuf_append((ebuf *)data, buf, len) ? -1 : 0;
}

int taskresult_encode(const task_result *r, ebuf *out) {
    msgpack_packer pk;
    size_t start = out->len, elen = strnlen(r->errmsg, sizeof r->errmsg), llen = strnlen(r->loc, sizeof r->loc);
    msgpack_packer_init(&pk, out, write_cb);
    int bad = msgpack_pack_array(&pk, TR_FIELDS) || msgpack_pack_int64(&pk, r->status) ||
              msgpack_pack_str_with_body(&pk, r->errmsg, elen) || msgpack_pack_bin(&pk, r->len) ||
              (r->len && msgpack_pack_bin_body(&pk, r->data, r->len)) ||
              msgpack_pack_array(&pk, (size_t)r->naccs);
    for (int i = 0; i < r->naccs && !bad; i++)
        bad = msgpack_pack_array(&pk, 4) || msgpack_pack_uint32(&pk, r->accs[i].id) ||
              msgpack_pack_uint32(&pk, r->accs[i].type) || msgpack_pack_int64(&pk, r->accs[i].i) ||
              msgpack_pack_double(&pk, r->accs[i].f);
    bad = bad || msgpack_pack_int64(&pk, r->fetch_map) || msgpack_pack_uint32(&pk, r->fetch_shuffle) ||
          msgpack_pack_str_with_body(&pk, r->loc, llen) || msgpack_pack_uint8(&pk, r->commit_denied) ||
          msgpack_pack_uint64(&pk, r->input_bytes) || msgpack_pack_uint64(&pk, r->shuffle_bytes) ||
          msgpack_pack_uint64(&pk, r->shuffle_records) || msgpack_pack_int64(&pk, r->spills) ||
          msgpack_pack_int64(&pk, r->cache_hits) || msgpack_pack_int64(&pk, r->segs_fetched) ||
          msgpack_pack_int64(&pk, r->segs_host_local) || msgpack_pack_array(&pk, r->nlost);
    for (uint32_t i = 0; i < r->nlost && !bad; i++) bad = msgpack_pack_int64(&pk, r->lost_maps[i]);
    const int64_t *m = (const int64_t *)&r->m;
    bad = bad || msgpack_pack_array(&pk, TASK_METRICS_N);
    for (int i = 0; i < TASK_METRICS_N && !bad; i++) bad = msgpack_pack_int64(&pk, m[i]);
    bad = bad || msgpack_pack_array(&pk, r->nblocks);
    for (uint32_t i = 0; i < r->nblocks && !bad; i++)
        bad = msgpack_pack_array(&pk, 4) || msgpack_pack_int32(&pk, r->blocks[i].rdd) ||
              msgpack_pack_int32(&pk, r->blocks[i].part) || msgpack_pack_int64(&pk, r->blocks[i].mem) ||
              msgpack_pack_int64(&pk, r->blocks[i].disk);
    bad = bad || msgpack_pack_int64(&pk, r->faults_fired) || msgpack_pack_int64(&pk, r->fetch_retries) ||
          msgpack_pack_int64(&pk, r->fetch_conns_dropped);
    if (bad) {
        out->len = start;
        return em__seterr(EM_ENOMEM, "task result: out of memory encoding");
    }
    return 0;
}

static int get_i64(const msgpack_object *o, int64_t lo, int64_t hi, int64_t *v) {
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        if (o->via.u64 > (uint64_t)INT64_MAX) return -1;
        *v = (int64_t)o->via.u64;
    } else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) *v = o->via.i64;
    else return -1;
    return *v < lo || *v > hi ? -1 : 0;
}

static int get_u64(const msgpack_object *o, uint64_t hi, uint64_t *v) {
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > hi) return -1;
    *v = o->via.u64;
    return 0;
}

static int get_str(const msgpack_object *o, char *dst, size_t cap) {
    if (o->type != MSGPACK_OBJECT_STR || o->via.str.size >= cap ||
        (o->via.str.size && memchr(o->via.str.ptr, 0, o->via.str.size)))
        return -1;
    if (o->via.str.size) memcpy(dst, o->via.str.ptr, o->via.str.size);
    dst[o->via.str.size] = 0;
    return 0;
}

static int field_bad(const char *name) { return em__seterr(EM_EPROTO, "task result: field \"%s\" is malformed", name); }

int taskresult_decode(const uint8_t *p, size_t len, task_result *r) {
    uint64_t tid = r->task_id;
    memset(r, 0, sizeof *r);
    r->task_id = tid;
    const char *why = mp_precheck(p, len);
    if (why) return em__seterr(EM_EPROTO, "task result: %s", why);
    msgpack_unpacked u;
    size_t off = 0;
    msgpack_unpacked_init(&u);
    int rc = 0;
    if (msgpack_unpack_next(&u, (const char *)p, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len ||
        u.data.type != MSGPACK_OBJECT_ARRAY || u.data.via.array.size != TR_FIELDS) {
        rc = em__seterr(EM_EPROTO, "task result: not an array of %d fields", TR_FIELDS);
        goto out;
    }
    const msgpack_object *f = u.data.via.array.ptr;
    int64_t v;
    uint64_t w;
    if (get_i64(&f[0], -10000, 0, &v)) { rc = field_bad("status"); goto out; }
    r->status = (int)v;
    if (get_str(&f[1], r->errmsg, sizeof r->errmsg)) { rc = field_bad("errmsg"); goto out; }
    if (f[2].type != MSGPACK_OBJECT_BIN) { rc = field_bad("data"); goto out; }
    if (f[2].via.bin.size) {
        if (!(r->data = malloc(f[2].via.bin.size))) { rc = em__seterr(EM_ENOMEM, "task result: out of memory"); goto out; }
        memcpy(r->data, f[2].via.bin.ptr, f[2].via.bin.size);
        r->len = f[2].via.bin.size;
    }
    if (f[3].type != MSGPACK_OBJECT_ARRAY || f[3].via.array.size > TR_MAX_ACCS) { rc = field_bad("accumulators"); goto out; }
    if (f[3].via.array.size) {
        uint32_t n = f[3].via.array.size;
        if (!(r->accs = calloc(n, sizeof *r->accs))) { rc = em__seterr(EM_ENOMEM, "task result: out of memory"); goto out; }
        for (uint32_t i = 0; i < n; i++) {
            const msgpack_object *a = &f[3].via.array.ptr[i];
            uint64_t id, type;
            if (a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size != 4 || get_u64(&a->via.array.ptr[0], UINT32_MAX, &id) ||
                get_u64(&a->via.array.ptr[1], UINT32_MAX, &type) ||
                get_i64(&a->via.array.ptr[2], INT64_MIN, INT64_MAX, &r->accs[i].i) ||
                (a->via.array.ptr[3].type != MSGPACK_OBJECT_FLOAT64 && a->via.array.ptr[3].type != MSGPACK_OBJECT_FLOAT32)) {
                rc = field_bad("accumulators");
                goto out;
            }
            r->accs[i].id = (uint32_t)id;
            r->accs[i].type = (uint32_t)type;
            r->accs[i].f = a->via.array.ptr[3].via.f64;
        }
        r->naccs = (int)n;
    }
    if (get_i64(&f[4], -1, INT32_MAX, &v)) { rc = field_bad("fetch map"); goto out; }
    r->fetch_map = (int32_t)v;
    if (get_u64(&f[5], UINT32_MAX, &w)) { rc = field_bad("fetch shuffle"); goto out; }
    r->fetch_shuffle = (uint32_t)w;
    if (get_str(&f[6], r->loc, sizeof r->loc)) { rc = field_bad("location"); goto out; }
    if (get_u64(&f[7], 1, &w)) { rc = field_bad("commit denied"); goto out; }
    r->commit_denied = (uint8_t)w;
    if (get_u64(&f[8], UINT64_MAX, &r->input_bytes) || get_u64(&f[9], UINT64_MAX, &r->shuffle_bytes) ||
        get_u64(&f[10], UINT64_MAX, &r->shuffle_records) || get_i64(&f[11], 0, INT64_MAX, &r->spills) ||
        get_i64(&f[12], 0, INT64_MAX, &r->cache_hits) || get_i64(&f[13], 0, INT64_MAX, &r->segs_fetched) ||
        get_i64(&f[14], 0, INT64_MAX, &r->segs_host_local)) {
        rc = field_bad("metrics");
        goto out;
    }
    if (f[15].type != MSGPACK_OBJECT_ARRAY || f[15].via.array.size > TR_MAX_LOST) { rc = field_bad("lost maps"); goto out; }
    if (f[15].via.array.size) {
        uint32_t n = f[15].via.array.size;
        if (!(r->lost_maps = malloc(n * sizeof *r->lost_maps))) { rc = em__seterr(EM_ENOMEM, "task result: out of memory"); goto out; }
        for (uint32_t i = 0; i < n; i++) {
            if (get_i64(&f[15].via.array.ptr[i], 0, INT32_MAX, &v)) { rc = field_bad("lost maps"); goto out; }
            r->lost_maps[i] = (int32_t)v;
        }
        r->nlost = n;
    }
    if (f[16].type != MSGPACK_OBJECT_ARRAY || f[16].via.array.size != (uint32_t)TASK_METRICS_N) {
        rc = field_bad("task metrics");
        goto out;
    }
    int64_t *m = (int64_t *)&r->m;
    for (int i = 0; i < TASK_METRICS_N; i++)
        if (get_i64(&f[16].via.array.ptr[i], 0, INT64_MAX, &m[i])) {
            rc = em__seterr(EM_EPROTO, "task result: task metric %d is negative or not an integer", i);
            goto out;
        }
    if (f[17].type != MSGPACK_OBJECT_ARRAY || f[17].via.array.size > TR_MAX_BLOCKS) { rc = field_bad("cached blocks"); goto out; }
    if (f[17].via.array.size) {
        uint32_t n = f[17].via.array.size;
        if (!(r->blocks = calloc(n, sizeof *r->blocks))) { rc = em__seterr(EM_ENOMEM, "task result: out of memory"); goto out; }
        for (uint32_t i = 0; i < n; i++) {
            const msgpack_object *a = &f[17].via.array.ptr[i];
            int64_t rdd, part;
            if (a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size != 4 ||
                get_i64(&a->via.array.ptr[0], 0, INT32_MAX, &rdd) || get_i64(&a->via.array.ptr[1], 0, INT32_MAX, &part) ||
                get_i64(&a->via.array.ptr[2], 0, INT64_MAX, &r->blocks[i].mem) ||
                get_i64(&a->via.array.ptr[3], 0, INT64_MAX, &r->blocks[i].disk)) {
                rc = field_bad("cached blocks");
                goto out;
            }
            r->blocks[i].rdd = (int32_t)rdd;
            r->blocks[i].part = (int32_t)part;
        }
        r->nblocks = n;
    }
    if (get_i64(&f[18], 0, INT64_MAX, &r->faults_fired)) { rc = field_bad("faults fired"); goto out; }
    if (get_i64(&f[19], 0, INT64_MAX, &r->fetch_retries)) { rc = field_bad("fetch retries"); goto out; }
    if (get_i64(&f[20], 0, INT64_MAX, &r->fetch_conns_dropped)) {
        rc = field_bad("fetch connections dropped");
        goto out;
    }
out:
    msgpack_unpacked_destroy(&u);
    if (rc) task_result_clear(r);
    return rc;
}
