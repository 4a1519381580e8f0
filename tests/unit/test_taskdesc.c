/*
 * test_taskdesc.c -- task descriptions built by hand: every field survives
 * taskdesc_encode / taskdesc_decode, the encoded bytes run through
 * runner_run give the expected records, a shuffle map task's output feeds
 * a reduce task, and malformed bytes (truncated, garbage, wrong magic,
 * wrong types) give EM_EPROTO with a message, never a crash.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "blockstore.h"
#include "buf.h"
#include "fnref.h"
#include "recfmt.h"
#include "runner.h"
#include "shuffle.h"
#include "srcdata.h"
#include "mapstatus.h"
#include "taskdesc.h"
#include "taskresult.h"

/* ------------------------------------------------------ user functions */

static int td_times(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t k = arg ? *(const int64_t *)arg : 1;
    return em_emit_i64(out, em_i64_dec(in->val) * k);
}

static int td_keep_odd(const em_rec *in, const void *arg) { return em_i64_dec(in->val) % 2 != 0; }

static int td_fail(const em_rec *in, em_emitter *out, const void *arg) {
    return em_fail("td_fail saw %lld", (long long)em_i64_dec(in->val));
}

static int td_pair_mod5(const em_rec *in, em_emitter *out, const void *arg) {
    uint8_t k[8];
    em_i64_enc(em_i64_dec(in->val) % 5, k);
    return em_emit_pair(out, k, 8, in->val, 8);
}

static int td_sum(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return em_emit_i64(out, em_i64_dec(a->val) + em_i64_dec(b->val));
}

/* -------------------------------------------------------------- helpers */

typedef struct env_fix {
    exec_env env;
    blockstore *bs;
} env_fix;

static int env_open(env_fix *f) {
    memset(f, 0, sizeof *f);
    f->bs = bs_new(test_tmpdir(), 1 << 20);
    f->env.local_dir = test_tmpdir();
    f->env.store = f->bs;
    return f->bs != NULL;
}

static void base_desc(task_desc *t, plan_node *root, uint8_t sink_kind) {
    memset(t, 0, sizeof *t);
    t->task_id = 77;
    t->stage_id = 3;
    t->attempt = 1;
    t->partition = 0;
    memcpy(t->binhash, fnref_binary_hash(), 32);
    t->mem_budget = 1 << 20;
    t->block_bytes = 65536;
    t->max_record = 1 << 20;
    t->codec = (bf_codec){BF_LZ4, 0};
    t->out_codec = (bf_codec){BF_LZ4, 0};
    t->sink.kind = sink_kind;
    t->root = root;
}

/* Encode t into malloc'd bytes (the runner takes ownership). */
static uint8_t *encode(const task_desc *t, size_t *len) {
    ebuf b = EBUF_INIT;
    if (taskdesc_encode(t, &b)) {
        ebuf_free(&b);
        return NULL;
    }
    return ebuf_steal(&b, len);
}

static uint8_t *dup_bytes(const uint8_t *p, size_t n) {
    uint8_t *d = malloc(n ? n : 1);
    if (n) memcpy(d, p, n);
    return d;
}

/* The int64 values of a batch-encoded result. */
static int result_i64s(const task_result *res, int64_t *out, int max) {
    const uint8_t *p = res->data, *end = p + res->len;
    int n = 0;
    em_rec r;
    while (p < end) {
        size_t k = rec_get(p, end, &r);
        if (!k || r.vlen != 8 || n == max) return -1;
        out[n++] = em_i64_dec(r.val);
        p += k;
    }
    return n;
}

/* ------------------------------------------------------------- round trip */

/* A cogroup partition (PN_COGROUP): a narrow input (a map over a range)
 * and a shuffled one (SR_PASS) round-trip as its children, in order; a
 * cogroup of one input, or of 17, is refused. */
TEST(sched_taskdesc_cogroup) {
    plan_node range, map, shuf, cg, *kids[17];
    static const char *const dirs[] = {"/x", NULL};
    static const uint64_t lens[] = {10, 0}, atts[] = {4, 5};
    plan_node *mk[1] = {&range};
    memset(&range, 0, sizeof range);
    range.type = PN_RANGE;
    range.count = 10;
    range.step = 1;
    memset(&map, 0, sizeof map);
    map.type = PN_OP;
    map.op = OP_MAP;
    CHECK_OK(fnref_make((void *)td_times, &map.fn));
    map.nchild = 1;
    map.child = mk;
    memset(&shuf, 0, sizeof shuf);
    shuf.type = PN_SHUFFLE;
    shuf.shuffle_id = 3;
    shuf.nmaps = 2;
    shuf.dirs = dirs;
    shuf.seglens = lens;
    shuf.attempts = atts;
    shuf.mode = SR_PASS;
    memset(&cg, 0, sizeof cg);
    cg.type = PN_COGROUP;
    cg.rdd_id = 12;
    cg.partition = 1;
    cg.nchild = 2;
    cg.child = kids;
    kids[0] = &map;
    kids[1] = &shuf;
    task_desc t;
    base_desc(&t, &cg, SK_COLLECT);
    size_t len;
    uint8_t *bytes = encode(&t, &len);
    CHECK(bytes);
    task_desc *d;
    CHECK_OK(taskdesc_decode(bytes, len, &d));
    const plan_node *r = d->root;
    CHECK(r->type == PN_COGROUP && r->rdd_id == 12 && r->partition == 1 && r->nchild == 2);
    CHECK(r->child[0]->type == PN_OP && r->child[0]->nchild == 1 && r->child[0]->child[0]->type == PN_RANGE);
    CHECK(r->child[1]->type == PN_SHUFFLE && r->child[1]->mode == SR_PASS && r->child[1]->nmaps == 2);
    CHECK(r->child[1]->seglens[0] == 10 && r->child[1]->attempts[1] == 5 && !r->child[1]->dirs[1]);
    taskdesc_free(d); /* owns bytes */
    /* 3 inputs */
    kids[2] = &range;
    cg.nchild = 3;
    CHECK((bytes = encode(&t, &len)));
    CHECK_OK(taskdesc_decode(bytes, len, &d));
    CHECK(d->root->nchild == 3 && d->root->child[2]->type == PN_RANGE);
    taskdesc_free(d); /* owns bytes */
    /* 1 and 17 inputs: refused */
    for (int i = 0; i < 17; i++) kids[i] = &range;
    for (int n = 1; n <= 17; n += 16) {
        cg.nchild = n;
        CHECK((bytes = encode(&t, &len)));
        CHECK(taskdesc_decode(bytes, len, &d) == EM_EPROTO);
        CHECK(strstr(em_errmsg(), "cogroup without 2 to 16 inputs"));
    }
}


TEST(sched_taskdesc_roundtrip_fields) {
    plan_node leaf, text, shuf, op, *kids[3] = {&leaf, &text, &shuf}, concat, *top[1] = {&concat};
    memset(&leaf, 0, sizeof leaf);
    leaf.type = PN_RANGE;
    leaf.rdd_id = 4;
    leaf.partition = 2;
    leaf.start = -100;
    leaf.count = 1ULL << 40;
    leaf.step = -3;
    memset(&text, 0, sizeof text);
    text.type = PN_TEXT;
    text.path = "/data/in.txt.gz";
    text.off = 1ULL << 33;
    text.len = 4096;
    text.gz = 1;
    memset(&shuf, 0, sizeof shuf);
    static const char *const dirs[] = {"/a", NULL, "/c"};
    shuf.type = PN_SHUFFLE;
    shuf.shuffle_id = 9;
    shuf.nmaps = 3;
    shuf.dirs = dirs;
    shuf.mode = SR_AGG;
    shuf.combined = 1;
    shuf.descending = 1;
    CHECK_OK(fnref_make((void *)td_sum, &shuf.agg.merge_value));
    CHECK_OK(fnref_make((void *)td_sum, &shuf.agg.merge_comb));
    shuf.agg.zero = (blob){(const uint8_t *)"zz", 2};
    shuf.agg.has_zero = 1;
    shuf.agg.rec_values = 1;
    memset(&concat, 0, sizeof concat);
    concat.type = PN_CONCAT;
    concat.nchild = 3;
    concat.child = kids;
    memset(&op, 0, sizeof op);
    op.type = PN_OP;
    op.op = OP_SAMPLE;
    op.fraction = 0.25;
    op.seed = 0xDEADBEEFCAFEULL;
    op.with_repl = 1;
    op.arg = (blob){(const uint8_t *)"argbytes", 8};
    op.data = (blob){(const uint8_t *)"\x01\x02\x03", 3};
    op.level = 2;
    op.cache_key = 12345;
    op.has_zero = 1;
    CHECK_OK(fnref_make((void *)td_times, &op.fn));
    op.nchild = 1;
    op.child = top;

    task_desc t;
    base_desc(&t, &op, SK_SHUFFLE);
    t.task_id = 1ULL << 50;
    t.partition = 5;
    t.codec = (bf_codec){BF_ZSTD, -3}; /* a signed level on the wire */
    t.out_codec = (bf_codec){BF_NONE, 0}; /* the map output's: its own */
    t.sink.nparts = 4;
    t.sink.shuffle_id = 11;
    t.sink.partitioner = PT_RANGE;
    t.sink.combine = 1;
    t.sink.descending = 1;
    t.sink.n = 99;
    t.sink.seed = 7;
    t.sink.path = "/out";
    t.sink.bounds = (blob){(const uint8_t *)"\x01k", 2};
    t.sink.arg = (blob){(const uint8_t *)"sa", 2};
    t.sink.zero = (blob){(const uint8_t *)"sz", 2};
    t.sink.has_zero = 1;
    t.sink.compress = SAVE_GZIP;
    CHECK_OK(fnref_make((void *)td_sum, &t.sink.fn));
    t.sink.agg.create = op.fn;
    t.sink.agg.merge_value = shuf.agg.merge_value;
    t.sink.agg.merge_comb = shuf.agg.merge_comb;

    size_t len;
    uint8_t *bytes = encode(&t, &len);
    CHECK(bytes && len > 0);
    task_desc *d;
    CHECK_OK(taskdesc_decode(bytes, len, &d));
    CHECK(d->task_id == t.task_id && d->stage_id == 3 && d->attempt == 1 && d->partition == 5);
    CHECK(!memcmp(d->binhash, t.binhash, 32));
    CHECK(d->mem_budget == t.mem_budget && d->block_bytes == 65536 && d->max_record == t.max_record);
    CHECK(d->codec.id == BF_ZSTD && d->codec.level == -3);
    CHECK(d->out_codec.id == BF_NONE && d->out_codec.level == 0);
    const plan_sink *s = &d->sink;
    CHECK(s->kind == SK_SHUFFLE && s->nparts == 4 && s->shuffle_id == 11 && s->partitioner == PT_RANGE);
    CHECK(s->combine == 1 && s->descending == 1 && s->n == 99 && s->seed == 7 && s->has_zero == 1);
    CHECK(s->path && !strcmp(s->path, "/out") && s->compress == SAVE_GZIP);
    CHECK(s->bounds.len == 2 && !memcmp(s->bounds.p, "\x01k", 2));
    CHECK(s->arg.len == 2 && !memcmp(s->arg.p, "sa", 2) && s->zero.len == 2 && !memcmp(s->zero.p, "sz", 2));
    CHECK(s->fn.kind == FN_OFFSET && fnref_resolve(&s->fn) == (void *)td_sum);
    CHECK(fnref_resolve(&s->agg.create) == (void *)td_times && fnref_resolve(&s->agg.merge_comb) == (void *)td_sum);

    const plan_node *o = d->root;
    CHECK(o && o->type == PN_OP && o->op == OP_SAMPLE && o->fraction == 0.25 && o->seed == 0xDEADBEEFCAFEULL);
    CHECK(o->with_repl == 1 && o->level == 2 && o->cache_key == 12345 && o->has_zero == 1);
    CHECK(o->arg.len == 8 && !memcmp(o->arg.p, "argbytes", 8) && o->data.len == 3 && !memcmp(o->data.p, "\x01\x02\x03", 3));
    CHECK(fnref_resolve(&o->fn) == (void *)td_times);
    CHECK(o->nchild == 1 && o->child[0]->type == PN_CONCAT && o->child[0]->nchild == 3);
    const plan_node *const *k = (const plan_node *const *)o->child[0]->child;
    CHECK(k[0]->type == PN_RANGE && k[0]->rdd_id == 4 && k[0]->partition == 2);
    CHECK(k[0]->start == -100 && k[0]->count == 1ULL << 40 && k[0]->step == -3 && k[0]->nchild == 0);
    CHECK(k[1]->type == PN_TEXT && k[1]->path && !strcmp(k[1]->path, "/data/in.txt.gz"));
    CHECK(k[1]->off == 1ULL << 33 && k[1]->len == 4096 && k[1]->gz == 1);
    CHECK(k[2]->type == PN_SHUFFLE && k[2]->shuffle_id == 9 && k[2]->nmaps == 3);
    CHECK(!strcmp(k[2]->dirs[0], "/a") && k[2]->dirs[1] == NULL && !strcmp(k[2]->dirs[2], "/c"));
    CHECK(k[2]->mode == SR_AGG && k[2]->combined == 1 && k[2]->descending == 1);
    CHECK(k[2]->agg.has_zero == 1 && k[2]->agg.rec_values == 1 && k[2]->agg.zero.len == 2);
    CHECK(k[2]->agg.create.kind == FN_NONE && fnref_resolve(&k[2]->agg.merge_value) == (void *)td_sum);
    taskdesc_free(d);
}

/* A collect over shuffle 5's read of nmaps maps (shuf, described in t),
 * encoded: the bytes (the caller's), or NULL. */
static uint8_t *encode_read(plan_node *shuf, task_desc *t, int nmaps, const char *const *dirs, const uint64_t *lens,
                            const uint64_t *atts, size_t *len) {
    memset(shuf, 0, sizeof *shuf);
    shuf->type = PN_SHUFFLE;
    shuf->shuffle_id = 5;
    shuf->nmaps = nmaps;
    shuf->dirs = dirs;
    shuf->seglens = lens;
    shuf->attempts = atts;
    shuf->mode = SR_PASS;
    base_desc(t, shuf, SK_COLLECT);
    return encode(t, len);
}

/* A shuffle read's locations: each distinct one once, whether its maps
 * name it by one address (as the tracker's interned copies are) or by
 * equal strings at different addresses; the decoded maps of one location
 * share its one string. */
TEST(sched_taskdesc_shuffle_locations_once) {
    static char a[] = "ember://h:1/exec-1", a2[] = "ember://h:1/exec-1", b[] = "ember://h:2/exec-2";
    const char *dirs[] = {a, a, a2, b, NULL, b, a};
    static const uint64_t lens[] = {1, 2, 3, 4, 0, 6, 7}, atts[] = {10, 11, 12, 13, 14, 15, 16};
    plan_node shuf;
    task_desc t;
    size_t len;
    uint8_t *bytes = encode_read(&shuf, &t, 7, dirs, lens, atts, &len);
    CHECK(bytes);
    task_desc *d;
    CHECK_OK(taskdesc_decode(bytes, len, &d));
    const plan_node *r = d->root;
    CHECK(r->type == PN_SHUFFLE && r->nmaps == 7);
    CHECK(!strcmp(r->dirs[0], a) && !strcmp(r->dirs[3], b) && r->dirs[4] == NULL);
    CHECK(r->dirs[0] == r->dirs[1] && r->dirs[1] == r->dirs[2] && r->dirs[2] == r->dirs[6]);
    CHECK(r->dirs[3] == r->dirs[5] && r->dirs[3] != r->dirs[0]);
    for (int i = 0; i < 7; i++) CHECK(r->seglens[i] == lens[i] && r->attempts[i] == atts[i]);
    taskdesc_free(d);
}

/* A reduce task's map list is one bin of varints (location index + 1,
 * attempt, segment length): the largest values round-trip, and a list
 * with an index past the locations, a value past 64 bits or a varint in an
 * overlong form is refused (a description decodes to one encoding). */
TEST(sched_taskdesc_map_list_varints) {
    static char a[] = "ember://h:1/exec-1";
    const char *dirs[] = {a, NULL};
    static const uint64_t lens[] = {UINT64_MAX, 300}, atts[] = {0, 1};
    plan_node shuf;
    task_desc t;
    size_t len;
    uint8_t *bytes = encode_read(&shuf, &t, 2, dirs, lens, atts, &len);
    CHECK(bytes);
    /* bin8 of 16 bytes: [1][0][ff x 9, 01] [0][1][ac 02] */
    static const uint8_t list[] = {0xc4, 16, 1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 1, 0xac, 2};
    size_t at = 0;
    while (at + sizeof list <= len && memcmp(bytes + at, list, sizeof list)) at++;
    CHECK(at + sizeof list <= len);
    task_desc *d;
    CHECK_OK(taskdesc_decode(dup_bytes(bytes, len), len, &d));
    CHECK(!strcmp(d->root->dirs[0], a) && !d->root->dirs[1]);
    CHECK(d->root->seglens[0] == UINT64_MAX && d->root->seglens[1] == 300 && d->root->attempts[1] == 1);
    taskdesc_free(d);
    /* offset in list, bytes put there, what the decoder says */
    static const struct {
        size_t off;
        uint8_t b[2];
        size_t n;
    } bad[] = {
        {2, {2}, 1},          /* location 2 of 1 */
        {13, {2}, 1},         /* a tenth byte past 64 bits */
        {14, {0x80, 0}, 2},   /* 0 written in two bytes */
        {16, {0xac, 0x82}, 2} /* the last varint never ends */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t *m = dup_bytes(bytes, len);
        memcpy(m + at + bad[i].off, bad[i].b, bad[i].n);
        CHECK(taskdesc_decode(m, len, &d) == EM_EPROTO);
        CHECK(strstr(em_errmsg(), "shuffle location"));
    }
    free(bytes);
}

/* ----------------------------------------------------------- running */

TEST(sched_taskdesc_run_range_map_collect) {
    env_fix f;
    CHECK(env_open(&f));
    plan_node src, map, *kids[1] = {&src};
    memset(&src, 0, sizeof src);
    src.type = PN_RANGE;
    src.start = 10;
    src.count = 5; /* 10, 12, ..., 18 */
    src.step = 2;
    memset(&map, 0, sizeof map);
    map.type = PN_OP;
    map.op = OP_MAP;
    int64_t factor = -3;
    map.arg = (blob){(const uint8_t *)&factor, sizeof factor};
    CHECK_OK(fnref_make((void *)td_times, &map.fn));
    map.nchild = 1;
    map.child = kids;
    task_desc t;
    base_desc(&t, &map, SK_COLLECT);

    size_t len;
    uint8_t *bytes = encode(&t, &len);
    CHECK(bytes);
    task_result res;
    runner_run(&f.env, bytes, len, &res, NULL);
    CHECK_EQ_I64(res.status, 0);
    CHECK_EQ_I64(res.task_id, 77);
    int64_t v[16];
    CHECK_EQ_I64(result_i64s(&res, v, 16), 5);
    for (int i = 0; i < 5; i++) CHECK_EQ_I64(v[i], (10 + 2 * i) * -3);
    task_result_clear(&res);

    /* The same plan into a count sink. */
    t.sink.kind = SK_COUNT;
    CHECK((bytes = encode(&t, &len)));
    runner_run(&f.env, bytes, len, &res, NULL);
    CHECK_EQ_I64(res.status, 0);
    CHECK_EQ_I64(res.len, 8);
    int64_t n;
    memcpy(&n, res.data, 8);
    CHECK_EQ_I64(n, 5);
    task_result_clear(&res);

    /* A failing user function: its own message, no data. */
    CHECK_OK(fnref_make((void *)td_fail, &map.fn));
    t.sink.kind = SK_COLLECT;
    CHECK((bytes = encode(&t, &len)));
    runner_run(&f.env, bytes, len, &res, NULL);
    CHECK_EQ_I64(res.status, EM_EUSER);
    CHECK_STR_CONTAINS(res.errmsg, "td_fail saw 10");
    CHECK(res.data == NULL && res.len == 0);
    task_result_clear(&res);
    bs_free(f.bs);
}

TEST(sched_taskdesc_run_recs_filter_count) {
    env_fix f;
    CHECK(env_open(&f));
    ebuf data = EBUF_INIT;
    uint8_t b[8];
    for (int64_t i = 0; i < 101; i++) {
        em_i64_enc(i * 3, b);
        em_rec r = {NULL, 0, b, 8};
        CHECK_OK(rec_append(&data, &r));
    }
    plan_node src, filt, *kids[1] = {&src};
    memset(&src, 0, sizeof src);
    src.type = PN_RECS;
    src.data = (blob){data.p, data.len};
    memset(&filt, 0, sizeof filt);
    filt.type = PN_OP;
    filt.op = OP_FILTER;
    CHECK_OK(fnref_make((void *)td_keep_odd, &filt.fn));
    filt.nchild = 1;
    filt.child = kids;
    task_desc t;
    base_desc(&t, &filt, SK_COUNT);
    size_t len;
    uint8_t *bytes = encode(&t, &len);
    CHECK(bytes);

    /* decode sees the same records */
    task_desc *d;
    CHECK_OK(taskdesc_decode(dup_bytes(bytes, len), len, &d));
    CHECK(d->root->type == PN_OP && d->root->op == OP_FILTER && d->root->child[0]->type == PN_RECS);
    CHECK(d->root->child[0]->data.len == data.len && !memcmp(d->root->child[0]->data.p, data.p, data.len));
    CHECK(d->sink.kind == SK_COUNT);
    taskdesc_free(d);

    task_result res;
    runner_run(&f.env, bytes, len, &res, NULL);
    CHECK_EQ_I64(res.status, 0);
    CHECK_EQ_I64(res.len, 8);
    int64_t n;
    memcpy(&n, res.data, 8);
    CHECK_EQ_I64(n, 50); /* 3i is odd for the 50 odd i in [0, 101) */
    task_result_clear(&res);
    ebuf_free(&data);
    bs_free(f.bs);
}

static int64_t count_result(const task_result *res) {
    int64_t n = -1;
    if (res->status == 0 && res->len == 8) memcpy(&n, res->data, 8);
    return n;
}

/* Parallelized records by reference (srcdata.h): the description holds the
 * records' id and extent, not the records; the task finds them in this
 * process; persisted, they become the block as they are (the same bytes,
 * shared, not a copy), which outlives the creator's reference. */
TEST(sched_taskdesc_run_recs_by_reference) {
    env_fix f;
    CHECK(env_open(&f));
    enum { N = 100000 };
    static uint8_t kv[N][16];
    static em_rec recs[N];
    for (int i = 0; i < N; i++) {
        em_i64_enc(i, kv[i]);
        em_i64_enc(-i, kv[i] + 8);
        recs[i] = (em_rec){kv[i], 8, kv[i] + 8, 8};
    }
    srcdata *s = src_encode(recs, N, 2);
    CHECK(s);
    memset(kv, 0, sizeof kv); /* the srcdata has its own copy */
    const uint8_t *bytes1;
    size_t len1;
    srcdata *s2 = src_find(src_id(s), 1, &bytes1, &len1);
    CHECK(s2 == s);
    src_release(s2);
    CHECK_EQ_I64(len1, (N - N / 2) * 18);
    CHECK_EQ_I64(src_part_count(s, 1), N - N / 2);

    plan_node src, cached, *kids[1] = {&src};
    memset(&src, 0, sizeof src);
    src.type = PN_RECS;
    src.rdd_id = 5;
    src.partition = 1;
    src.off = src_id(s);
    src.len = len1;
    src.count = src_part_count(s, 1);
    memset(&cached, 0, sizeof cached);
    cached.type = PN_CACHED;
    cached.rdd_id = 5;
    cached.partition = 1;
    cached.level = EM_MEMORY_ONLY;
    cached.cache_key = 9;
    cached.nchild = 1;
    cached.child = kids;
    task_desc t;
    base_desc(&t, &cached, SK_COUNT);
    size_t len;
    uint8_t *bytes = encode(&t, &len);
    CHECK(bytes);
    CHECK(len < 512); /* 900 kB of records are not in it */
    task_desc *d;
    CHECK_OK(taskdesc_decode(dup_bytes(bytes, len), len, &d));
    const plan_node *dn = d->root->child[0];
    CHECK(dn->type == PN_RECS && dn->off == src_id(s) && dn->len == len1 && dn->count == (uint64_t)(N - N / 2));
    CHECK(dn->data.len == 0);
    taskdesc_free(d);

    /* The first run stores the block, the second reads it. */
    task_result res;
    runner_run(&f.env, dup_bytes(bytes, len), len, &res, NULL);
    CHECK_EQ_I64(count_result(&res), N - N / 2);
    CHECK_EQ_I64(res.cache_hits, 0);
    task_result_clear(&res);
    CHECK_EQ_I64(bs_count(f.bs, 9, 5), 1);
    block *b = bs_get(f.bs, 9, 5, 1);
    CHECK(b && b->n == 1 && b->p[0] == bytes1 && b->len[0] == len1); /* shared, not copied */
    bs_release(f.bs, b);
    src_release(s); /* the block keeps the records */
    runner_run(&f.env, dup_bytes(bytes, len), len, &res, NULL);
    CHECK_EQ_I64(count_result(&res), N - N / 2);
    CHECK_EQ_I64(res.cache_hits, 1);
    task_result_clear(&res);

    /* The block gone, so are the records: the task fails saying so. */
    bs_remove(f.bs, 9, -1);
    CHECK(src_find(src.off, 1, &bytes1, &len1) == NULL);
    runner_run(&f.env, bytes, len, &res, NULL);
    CHECK_EQ_I64(res.status, EM_ENOENT);
    CHECK_STR_CONTAINS(res.errmsg, "are gone");
    task_result_clear(&res);
    bs_free(f.bs);
}

/* A description whose length disagrees with the records' is refused. */
TEST(sched_taskdesc_run_recs_by_reference_wrong_length) {
    env_fix f;
    CHECK(env_open(&f));
    uint8_t v[8];
    em_i64_enc(7, v);
    em_rec r = {NULL, 0, v, 8};
    srcdata *s = src_encode(&r, 1, 1);
    CHECK(s);
    plan_node src;
    memset(&src, 0, sizeof src);
    src.type = PN_RECS;
    src.off = src_id(s);
    src.len = 11; /* the record is 10 bytes */
    task_desc t;
    base_desc(&t, &src, SK_COUNT);
    size_t len;
    uint8_t *bytes = encode(&t, &len);
    CHECK(bytes);
    task_result res;
    runner_run(&f.env, bytes, len, &res, NULL);
    CHECK_EQ_I64(res.status, EM_EPROTO);
    CHECK_STR_CONTAINS(res.errmsg, "10 bytes, the task expected 11");
    task_result_clear(&res);
    src_release(s);
    bs_free(f.bs);
}

/* A map task writes a shuffle; two reduce tasks aggregate its partitions. */
TEST(sched_taskdesc_run_shuffle_map_then_reduce) {
    env_fix f;
    CHECK(env_open(&f));
    plan_node src, map, *kids[1] = {&src};
    memset(&src, 0, sizeof src);
    src.type = PN_RANGE;
    src.start = 0;
    src.count = 1000;
    src.step = 1;
    memset(&map, 0, sizeof map);
    map.type = PN_OP;
    map.op = OP_MAP;
    CHECK_OK(fnref_make((void *)td_pair_mod5, &map.fn));
    map.nchild = 1;
    map.child = kids;
    task_desc t;
    base_desc(&t, &map, SK_SHUFFLE);
    t.sink.shuffle_id = 3;
    t.sink.nparts = 2;
    t.sink.partitioner = PT_HASH;
    size_t len;
    uint8_t *bytes = encode(&t, &len);
    CHECK(bytes);
    task_result res;
    runner_run(&f.env, bytes, len, &res, NULL);
    CHECK_EQ_I64(res.status, 0);
    CHECK_EQ_I64(res.len, 3); /* segment sizes: a map status of a byte each */
    CHECK_OK(ms_check(res.data, res.len, 2, NULL));
    CHECK_EQ_I64(res.shuffle_records, 1000);
    CHECK_STR_CONTAINS(res.loc, test_tmpdir());
    uint64_t segs[2] = {ms_seg(res.data, 2, 0), ms_seg(res.data, 2, 1)}; /* as the tracker reads them */
    CHECK(segs[0] && segs[1]);
    task_result_clear(&res);

    int64_t total_keys = 0, total = 0;
    for (int part = 0; part < 2; part++) {
        plan_node rd;
        const char *dirs[1] = {test_tmpdir()};
        memset(&rd, 0, sizeof rd);
        rd.type = PN_SHUFFLE;
        rd.partition = part;
        rd.shuffle_id = 3;
        rd.nmaps = 1;
        rd.dirs = dirs;
        rd.attempts = &t.task_id; /* the map attempt's output, named by its task id */
        rd.seglens = &segs[part];
        rd.mode = SR_AGG;
        CHECK_OK(fnref_make((void *)td_sum, &rd.agg.merge_value));
        CHECK_OK(fnref_make((void *)td_sum, &rd.agg.merge_comb));
        task_desc r;
        base_desc(&r, &rd, SK_COLLECT);
        r.partition = part;
        CHECK((bytes = encode(&r, &len)));
        runner_run(&f.env, bytes, len, &res, NULL);
        CHECK_EQ_I64(res.status, 0);
        const uint8_t *p = res.data, *end = p + res.len;
        em_rec rec;
        for (size_t k; p < end; p += k) {
            CHECK((k = rec_get(p, end, &rec)));
            int64_t key = em_i64_dec(rec.key), want = 0;
            for (int64_t v = key; v < 1000; v += 5) want += v;
            CHECK_EQ_I64(em_i64_dec(rec.val), want);
            total_keys++;
            total += em_i64_dec(rec.val);
        }
        task_result_clear(&res);
    }
    CHECK_EQ_I64(total_keys, 5);
    CHECK_EQ_I64(total, 999 * 1000 / 2);

    /* A reduce task pointed at a missing output reports a fetch failure
     * naming the map. */
    plan_node rd;
    const char *dirs[2] = {test_tmpdir(), test_tmpdir()};
    memset(&rd, 0, sizeof rd);
    rd.type = PN_SHUFFLE;
    rd.shuffle_id = 3;
    rd.nmaps = 2; /* map 1 never ran */
    rd.dirs = dirs;
    uint64_t lens2[2] = {segs[0], 100}, atts2[2] = {t.task_id, t.task_id};
    rd.seglens = lens2;
    rd.attempts = atts2;
    rd.mode = SR_PASS;
    task_desc r;
    base_desc(&r, &rd, SK_COLLECT);
    CHECK((bytes = encode(&r, &len)));
    runner_run(&f.env, bytes, len, &res, NULL);
    CHECK_EQ_I64(res.status, EM_EFETCH);
    CHECK_EQ_I64(res.fetch_map, 1);
    CHECK_EQ_I64(res.fetch_shuffle, 3);
    CHECK_STR_CONTAINS(res.errmsg, "shuffle_3_1");
    task_result_clear(&res);
    bs_free(f.bs);
}

/* ------------------------------------------------------------ malformed */

static int run_bad(env_fix *f, const uint8_t *p, size_t n, task_result *res) {
    runner_run(&f->env, dup_bytes(p, n), n, res, NULL);
    int ok = res->status == EM_EPROTO && res->errmsg[0] && res->data == NULL;
    if (!ok) fprintf(stderr, "  %zu bytes: status %d (%s)\n", n, res->status, res->errmsg);
    task_result_clear(res);
    return ok;
}

static uint8_t *valid_desc(size_t *len) {
    static plan_node src, map, *kids[1];
    memset(&src, 0, sizeof src);
    src.type = PN_RANGE;
    src.count = 10;
    src.step = 1;
    memset(&map, 0, sizeof map);
    map.type = PN_OP;
    map.op = OP_MAP;
    if (fnref_make((void *)td_times, &map.fn)) return NULL;
    kids[0] = &src;
    map.nchild = 1;
    map.child = kids;
    task_desc t;
    base_desc(&t, &map, SK_COLLECT);
    return encode(&t, len);
}

TEST(sched_taskdesc_malformed_truncated) {
    env_fix f;
    CHECK(env_open(&f));
    size_t len;
    uint8_t *good = valid_desc(&len);
    CHECK(good && len > 50);
    task_result res;
    for (size_t n = 0; n < len; n++) CHECK(run_bad(&f, good, n, &res));
    /* trailing garbage after a whole message is malformed too */
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, good, len);
    longer[len] = 0xc0;
    CHECK(run_bad(&f, longer, len + 1, &res));
    free(longer);
    /* and the whole thing still runs */
    runner_run(&f.env, dup_bytes(good, len), len, &res, NULL);
    CHECK_EQ_I64(res.status, 0);
    task_result_clear(&res);
    free(good);
    bs_free(f.bs);
}

TEST(sched_taskdesc_malformed_garbage_and_magic) {
    env_fix f;
    CHECK(env_open(&f));
    task_result res;
    uint64_t s = 42;
    uint8_t buf[512];
    for (int i = 0; i < 2000; i++) {
        size_t n = (size_t)(i % 97) * 5 + 1;
        for (size_t j = 0; j < n; j++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            buf[j] = (uint8_t)(s >> 56);
        }
        if (i % 3 == 0) buf[0] = 0x97; /* a 7-element array header: looks like a description */
        CHECK(run_bad(&f, buf, n, &res));
    }
    CHECK(run_bad(&f, (const uint8_t *)"", 0, &res));

    size_t len;
    uint8_t *good = valid_desc(&len);
    CHECK(good);
    uint8_t *m = memmem(good, len, "emt2", 4);
    CHECK(m);
    m[3] = '1';
    runner_run(&f.env, dup_bytes(good, len), len, &res, NULL);
    CHECK_EQ_I64(res.status, EM_EPROTO);
    CHECK_STR_CONTAINS(res.errmsg, "bad magic");
    task_result_clear(&res);
    m[3] = '2';

    /* another binary's hash */
    uint8_t *h = memmem(good, len, fnref_binary_hash(), 32);
    CHECK(h);
    h[5] ^= 0xff;
    runner_run(&f.env, dup_bytes(good, len), len, &res, NULL);
    CHECK_EQ_I64(res.status, EM_EPROTO);
    CHECK_STR_CONTAINS(res.errmsg, "another binary");
    task_result_clear(&res);
    h[5] ^= 0xff;

    /* a wrong type where the header's fields belong (bin -> str) */
    CHECK(good[0] == 0x97 && good[1] == 0xa4);
    size_t hpos = 6; /* after fixarray, fixstr(4) "emt2" */
    uint8_t *bad = malloc(len + 1);
    memcpy(bad, good, len);
    CHECK(bad[hpos] == 0xc4 && bad[hpos + 2] == 77); /* bin8, its first varint the task id */
    bad[hpos] = 0xd9;                                /* str8 of the same length */
    CHECK(run_bad(&f, bad, len, &res));
    free(bad);
    free(good);
    bs_free(f.bs);
}

/* good with its header's bin of varints (at byte 6: bin8, length, bytes)
 * replaced by h[0, hlen); the new length goes to *n. */
static uint8_t *with_header(const uint8_t *good, size_t len, const uint8_t *h, size_t hlen, size_t *n) {
    size_t old = 2 + (size_t)good[7], rest = len - 6 - old;
    uint8_t *b = malloc(8 + hlen + rest);
    memcpy(b, good, 6);
    b[6] = 0xc4;
    b[7] = (uint8_t)hlen;
    memcpy(b + 8, h, hlen);
    memcpy(b + 8 + hlen, good + 6 + old, rest);
    *n = 8 + hlen + rest;
    return b;
}

/* A structure's scalar fields travel as one bin of varints, read
 * strictly: the header as encoded decodes; a field in an overlong form,
 * one past its type's range (a 32-bit stage id, a 32-bit signed
 * partition), a field missing or one left over is refused, naming the
 * structure. */
TEST(sched_taskdesc_fields_strict) {
    size_t len, n;
    uint8_t *good = valid_desc(&len);
    CHECK(good && good[6] == 0xc4);
    const uint8_t *h = good + 8;
    size_t hlen = good[7];
    CHECK(hlen > 4 && h[0] == 77 && h[1] == 3 && h[2] == 1 && h[3] == 0); /* task, stage, attempt, partition */
    uint8_t m[64];
    task_desc *d;
    uint8_t *b = with_header(good, len, h, hlen, &n);
    CHECK_OK(taskdesc_decode(b, n, &d));
    CHECK(d->task_id == 77 && d->stage_id == 3 && d->attempt == 1 && d->partition == 0);
    taskdesc_free(d);
    /* the partition at INT32_MIN (zigzag 2^32 - 1) is in range */
    static const uint8_t pmin[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    memcpy(m, h, 3);
    memcpy(m + 3, pmin, sizeof pmin);
    memcpy(m + 3 + sizeof pmin, h + 4, hlen - 4);
    b = with_header(good, len, m, hlen - 1 + sizeof pmin, &n);
    CHECK_OK(taskdesc_decode(b, n, &d));
    CHECK(d->partition == INT32_MIN);
    taskdesc_free(d);
    static const struct {
        size_t at, drop; /* replace h[at, at + drop) */
        uint8_t put[6];
        size_t nput;
    } bad[] = {
        {0, 1, {0xcd, 0x00}, 2},                   /* the task id, 77, in two bytes */
        {1, 1, {0x80, 0x80, 0x80, 0x80, 0x10}, 5}, /* stage 2^32 */
        {3, 1, {0x80, 0x80, 0x80, 0x80, 0x10}, 5}, /* partition 2^31 (zigzag 2^32) */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memcpy(m, h, bad[i].at);
        memcpy(m + bad[i].at, bad[i].put, bad[i].nput);
        memcpy(m + bad[i].at + bad[i].nput, h + bad[i].at + bad[i].drop, hlen - bad[i].at - bad[i].drop);
        b = with_header(good, len, m, hlen - bad[i].drop + bad[i].nput, &n);
        CHECK(taskdesc_decode(b, n, &d) == EM_EPROTO);
        CHECK_STR_CONTAINS(em_errmsg(), "malformed task header");
    }
    /* a field missing, a field left over */
    b = with_header(good, len, h, hlen - 1, &n);
    CHECK(taskdesc_decode(b, n, &d) == EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "malformed task header");
    memcpy(m, h, hlen);
    m[hlen] = 0;
    b = with_header(good, len, m, hlen + 1, &n);
    CHECK(taskdesc_decode(b, n, &d) == EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "malformed task header");
    free(good);
}

/* Structurally valid descriptions with impossible contents. */
TEST(sched_taskdesc_malformed_contents) {
    env_fix f;
    CHECK(env_open(&f));
    task_result res;
    size_t len;
    uint8_t *bytes;
    plan_node op, *kids[1] = {NULL};
    task_desc t;

    /* an operator without input */
    memset(&op, 0, sizeof op);
    op.type = PN_OP;
    op.op = OP_MAP;
    CHECK_OK(fnref_make((void *)td_times, &op.fn));
    base_desc(&t, &op, SK_COLLECT);
    CHECK((bytes = encode(&t, &len)));
    runner_run(&f.env, bytes, len, &res, NULL);
    CHECK_EQ_I64(res.status, EM_EPROTO);
    CHECK_STR_CONTAINS(res.errmsg, "operator without input");
    task_result_clear(&res);

    /* an unknown node type and an unknown sink */
    plan_node src;
    memset(&src, 0, sizeof src);
    src.type = 42;
    kids[0] = &src;
    op.nchild = 1;
    op.child = kids;
    CHECK((bytes = encode(&t, &len)));
    runner_run(&f.env, bytes, len, &res, NULL);
    CHECK_EQ_I64(res.status, EM_EPROTO);
    task_result_clear(&res);
    src.type = PN_RANGE;
    t.sink.kind = 200;
    CHECK((bytes = encode(&t, &len)));
    runner_run(&f.env, bytes, len, &res, NULL);
    CHECK_EQ_I64(res.status, EM_EPROTO);
    CHECK_STR_CONTAINS(res.errmsg, "sink");
    task_result_clear(&res);

    /* a shuffle sink without partitions */
    t.sink.kind = SK_SHUFFLE;
    t.sink.nparts = 0;
    CHECK((bytes = encode(&t, &len)));
    runner_run(&f.env, bytes, len, &res, NULL);
    CHECK_EQ_I64(res.status, EM_EPROTO);
    task_result_clear(&res);

    /* a builtin index past the table: refused, not called */
    t.sink.kind = SK_COLLECT;
    op.fn.kind = FN_BUILTIN;
    op.fn.off = 100000;
    CHECK((bytes = encode(&t, &len)));
    runner_run(&f.env, bytes, len, &res, NULL);
    CHECK(res.status < 0);
    CHECK(res.errmsg[0]);
    task_result_clear(&res);

    /* malformed range bounds in a range-partitioned shuffle sink */
    op.fn.kind = FN_OFFSET;
    CHECK_OK(fnref_make((void *)td_times, &op.fn));
    t.sink.kind = SK_SHUFFLE;
    t.sink.nparts = 3;
    t.sink.partitioner = PT_RANGE;
    t.sink.bounds = (blob){(const uint8_t *)"\x7f", 1}; /* an item longer than the list */
    CHECK((bytes = encode(&t, &len)));
    runner_run(&f.env, bytes, len, &res, NULL);
    CHECK(res.status < 0);
    CHECK(res.errmsg[0]);
    task_result_clear(&res);

    /* a block codec the executor does not know, and levels a codec does
     * not take: refused by the decoder, before any block is written */
    static const struct { bf_codec c; const char *why; } bad_codecs[] = {
        {{BF_NCODECS, 0}, "unknown compression codec"},
        {{200, 0}, "unknown compression codec"},
        {{BF_ZLIB, 10}, "zlib level"},
        {{BF_ZLIB, -1}, "zlib level"},
        {{BF_ZSTD, 23}, "zstd level"},
        {{BF_ZSTD, -8}, "zstd level"},
        {{BF_LZ4, 65}, "lz4 acceleration"},
        {{BF_LZ4, -1}, "lz4 acceleration"},
        {{BF_NONE, 5}, "a level given to a codec without levels"},
    };
    t.sink.kind = SK_COLLECT;
    t.sink.partitioner = 0;
    t.sink.bounds = (blob){NULL, 0};
    for (size_t i = 0; i < 2 * sizeof bad_codecs / sizeof bad_codecs[0]; i++) {
        /* in the spills' slot, then in the map output's */
        size_t k = i % (sizeof bad_codecs / sizeof bad_codecs[0]);
        t.codec = i == k ? bad_codecs[k].c : (bf_codec){BF_LZ4, 0};
        t.out_codec = i == k ? (bf_codec){BF_LZ4, 0} : bad_codecs[k].c;
        CHECK((bytes = encode(&t, &len)));
        runner_run(&f.env, bytes, len, &res, NULL);
        CHECK_EQ_I64(res.status, EM_EPROTO);
        CHECK_STR_CONTAINS(res.errmsg, "task description: ");
        CHECK_STR_CONTAINS(res.errmsg, bad_codecs[k].why);
        task_result_clear(&res);
    }
    t.out_codec = (bf_codec){BF_LZ4, 0};
    /* each codec, with a level it takes, is accepted */
    static const bf_codec good_codecs[] = {{BF_NONE, 0}, {BF_ZLIB, 0}, {BF_ZLIB, 9}, {BF_LZ4, 0}, {BF_LZ4, 1}, {BF_LZ4, 64},
                                           {BF_ZSTD, -7}, {BF_ZSTD, 0}, {BF_ZSTD, 22}};
    for (size_t i = 0; i < sizeof good_codecs / sizeof good_codecs[0]; i++) {
        t.codec = good_codecs[i];
        t.out_codec = good_codecs[sizeof good_codecs / sizeof good_codecs[0] - 1 - i];
        ebuf b = EBUF_INIT;
        CHECK_OK(taskdesc_encode(&t, &b));
        task_desc *d;
        CHECK_OK(taskdesc_decode(b.p, b.len, &d)); /* takes the bytes */
        CHECK(d->codec.id == good_codecs[i].id && d->codec.level == good_codecs[i].level);
        CHECK(d->out_codec.id == t.out_codec.id && d->out_codec.level == t.out_codec.level);
        taskdesc_free(d);
    }
    t.codec = (bf_codec){BF_LZ4, 0};
    t.out_codec = (bf_codec){BF_LZ4, 0};

    /* a batch source holding a malformed record */
    plan_node recs;
    memset(&recs, 0, sizeof recs);
    recs.type = PN_RECS;
    recs.data = (blob){(const uint8_t *)"\xff\xff\xff", 3};
    kids[0] = &recs;
    t.sink.kind = SK_COUNT;
    t.sink.partitioner = 0;
    t.sink.bounds = (blob){NULL, 0};
    CHECK((bytes = encode(&t, &len)));
    runner_run(&f.env, bytes, len, &res, NULL);
    CHECK(res.status < 0);
    CHECK(res.errmsg[0]);
    task_result_clear(&res);
    bs_free(f.bs);
}

/* Container headers announcing more elements than there are bytes: must
 * be refused before anything allocates for them. */
TEST(sched_taskdesc_malformed_huge_headers) {
    env_fix f;
    CHECK(env_open(&f));
    task_result res;
    static const char *const bad[] = {
        "\xdd\xff\xff\xff\xff",             /* array32 of 4G elements */
        "\xdf\xff\xff\xff\xff",             /* map32 */
        "\x97\xa4" "emt2" "\xdc\xff\xff",   /* array16 inside a description */
        "\x97\xa4" "emt2" "\xdd\x7f\xff\xff\xff\x01",
        "\xc6\xff\xff\xff\xff\x00",         /* bin32 longer than the input */
        "\xdb\x00\x00\x10\x00" "abc",       /* str32 longer than the input */
        "\xc1",                             /* never used */
    };
    static const size_t lens[] = {5, 5, 9, 12, 6, 8, 1};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) CHECK(run_bad(&f, (const uint8_t *)bad[i], lens[i], &res));
    bs_free(f.bs);
}

/* A plan of n chained maps over a range. */
static int run_chain(env_fix *f, int n, task_result *res) {
    plan_node *nodes = calloc((size_t)n + 1, sizeof *nodes);
    plan_node **kids = calloc((size_t)n + 1, sizeof *kids);
    nodes[0].type = PN_RANGE;
    nodes[0].count = 100;
    nodes[0].step = 1;
    for (int i = 1; i <= n; i++) {
        nodes[i].type = PN_OP;
        nodes[i].op = OP_MAP;
        if (fnref_make((void *)td_times, &nodes[i].fn)) return -1;
        kids[i] = &nodes[i - 1];
        nodes[i].nchild = 1;
        nodes[i].child = &kids[i];
    }
    task_desc t;
    base_desc(&t, &nodes[n], SK_COUNT);
    size_t len;
    uint8_t *bytes = encode(&t, &len);
    free(nodes);
    free(kids);
    if (!bytes) return -1;
    runner_run(&f->env, bytes, len, res, NULL);
    return 0;
}

/* Deep plans decode (msgpack-c nests at most 32 containers, so the plan is
 * sent as a flat list), and encoding, decoding and the runner's pipeline
 * walk them without recursion: a chain of 10,000 operators runs. */
TEST(sched_taskdesc_deep_plan) {
    env_fix f;
    CHECK(env_open(&f));
    task_result res;
    static const int depths[] = {1, 15, 16, 40, 150, 255, 256, 257, 1000, 10000};
    for (int i = 0; i < 10; i++) {
        CHECK_OK(run_chain(&f, depths[i], &res));
        CHECK_EQ_I64(res.status, 0);
        int64_t n;
        CHECK_EQ_I64(res.len, 8);
        memcpy(&n, res.data, 8);
        CHECK_EQ_I64(n, 100);
        task_result_clear(&res);
    }
    bs_free(f.bs);
}

/* Empty strings decode as "" (msgpack-c hands out a NULL pointer for an
 * empty string; copying from it was undefined behaviour, caught by UBSan). */
TEST(sched_taskdesc_empty_strings) {
    plan_node text;
    memset(&text, 0, sizeof text);
    text.type = PN_TEXT;
    text.path = "";
    task_desc t;
    base_desc(&t, &text, SK_COLLECT);
    t.sink.path = "";
    size_t len;
    uint8_t *bytes = encode(&t, &len);
    CHECK(bytes);
    task_desc *d;
    CHECK_OK(taskdesc_decode(bytes, len, &d));
    CHECK(d->sink.path && d->sink.path[0] == 0);
    CHECK(d->root && d->root->type == PN_TEXT && d->root->path && d->root->path[0] == 0);
    taskdesc_free(d);
}

/* The test settings travel: the fault spec, and the holds' directory
 * (with or without a spec); neither when none. */
TEST(sched_taskdesc_faults_and_dir) {
    static const char *const cases[][2] = {
        {"hold:part=1,gate=g", "/tmp/gates"}, {"fail:part=0", NULL}, {NULL, "/tmp/gates"}, {NULL, NULL}};
    for (int i = 0; i < 4; i++) {
        plan_node leaf;
        memset(&leaf, 0, sizeof leaf);
        leaf.type = PN_RANGE;
        leaf.count = 10;
        leaf.step = 1;
        task_desc t;
        base_desc(&t, &leaf, SK_COUNT);
        t.faults = cases[i][0];
        t.faults_dir = cases[i][1];
        size_t len;
        uint8_t *bytes = encode(&t, &len);
        CHECK(bytes);
        task_desc *d;
        CHECK_OK(taskdesc_decode(bytes, len, &d));
        int faults_ok = t.faults ? d->faults && !strcmp(d->faults, t.faults) : d->faults == NULL;
        int dir_ok = t.faults_dir ? d->faults_dir && !strcmp(d->faults_dir, t.faults_dir) : d->faults_dir == NULL;
        taskdesc_free(d);
        CHECK(faults_ok);
        CHECK(dir_ok);
    }
}
