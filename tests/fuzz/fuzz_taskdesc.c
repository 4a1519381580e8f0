/*
 * fuzz_taskdesc.c -- the task description decoder (engine/taskdesc.c): the
 * bytes an executor receives from the driver.
 *
 * Every input is used twice:
 *   1. as an encoded description: taskdesc_decode must return a
 *      description or EM_EPROTO with a "task description: " message, never
 *      crash or read out of bounds; a description it returns must keep the
 *      promises the executor relies on (operators have one input, text
 *      sources a path, shuffle sources nmaps locations, shuffle sinks a
 *      partition, the block codec is known and takes its level), and must
 *      survive a round trip: decode(encode(t)) equals t field by field,
 *      and encoding that again gives the same bytes;
 *   2. as the recipe of a description (the bytes drive a small generator of
 *      well-formed plans, as the scheduler builds them): encode, decode,
 *      and the result must equal what was built.  This is the direction a
 *      change to one side of the format without the other breaks.
 * Seeds are descriptions written by taskdesc_encode (they start with 0x97,
 * the 7-element array of a description).
 */
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "fuzz.h"
#include "taskdesc.h"

/* ------------------------------------------------------------ equality */

static int str_eq(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

static int blob_eq(blob a, blob b) { return a.len == b.len && (!a.len || !memcmp(a.p, b.p, a.len)); }

/* The symbol travels only for FN_SYMBOL; other kinds drop it. */
static int fn_eq(const fnref *a, const fnref *b) {
    return a->kind == b->kind && a->off == b->off && (a->kind != FN_SYMBOL || str_eq(a->sym, b->sym));
}

static int agg_eq(const aggdesc *a, const aggdesc *b) {
    return fn_eq(&a->create, &b->create) && fn_eq(&a->merge_value, &b->merge_value) &&
           fn_eq(&a->merge_comb, &b->merge_comb) && blob_eq(a->arg, b->arg) && blob_eq(a->zero, b->zero) &&
           a->has_zero == b->has_zero && a->rec_values == b->rec_values;
}

/* The encoder sends 0 for a missing segment length or attempt table. */
static uint64_t seglen(const plan_node *n, int i) { return n->seglens ? n->seglens[i] : 0; }
static uint64_t attempt(const plan_node *n, int i) { return n->attempts ? n->attempts[i] : 0; }

static int node_eq(const plan_node *a, const plan_node *b) {
    if (a->type != b->type || a->op != b->op || a->rdd_id != b->rdd_id || a->partition != b->partition ||
        !fn_eq(&a->fn, &b->fn) || !blob_eq(a->arg, b->arg) || memcmp(&a->fraction, &b->fraction, sizeof a->fraction) ||
        a->seed != b->seed || a->with_repl != b->with_repl || a->has_zero != b->has_zero || a->start != b->start ||
        a->count != b->count || a->step != b->step || !blob_eq(a->data, b->data) || !str_eq(a->path, b->path) ||
        a->off != b->off || a->len != b->len || a->gz != b->gz || a->shuffle_id != b->shuffle_id ||
        a->nmaps != b->nmaps || a->mode != b->mode || a->combined != b->combined ||
        a->descending != b->descending || !agg_eq(&a->agg, &b->agg) || a->level != b->level ||
        a->cache_key != b->cache_key || a->nchild != b->nchild)
        return 0;
    if (a->type == PN_SHUFFLE)
        for (int i = 0; i < a->nmaps; i++)
            if (!str_eq(a->dirs[i], b->dirs[i]) || seglen(a, i) != seglen(b, i) || attempt(a, i) != attempt(b, i))
                return 0;
    for (int i = 0; i < a->nchild; i++)
        if (!node_eq(a->child[i], b->child[i])) return 0;
    return 1;
}

static int sink_eq(const plan_sink *a, const plan_sink *b) {
    return a->kind == b->kind && fn_eq(&a->fn, &b->fn) && blob_eq(a->arg, b->arg) && blob_eq(a->zero, b->zero) &&
           a->has_zero == b->has_zero && a->n == b->n && a->seed == b->seed && a->descending == b->descending &&
           str_eq(a->path, b->path) && a->shuffle_id == b->shuffle_id && a->nparts == b->nparts &&
           a->partitioner == b->partitioner && a->combine == b->combine && blob_eq(a->bounds, b->bounds) &&
           agg_eq(&a->agg, &b->agg);
}

static int desc_eq(const task_desc *a, const task_desc *b) {
    return a->task_id == b->task_id && a->stage_id == b->stage_id && a->attempt == b->attempt &&
           a->partition == b->partition && !memcmp(a->binhash, b->binhash, 32) && a->mem_budget == b->mem_budget &&
           a->block_bytes == b->block_bytes && a->max_record == b->max_record && a->codec.id == b->codec.id &&
           a->codec.level == b->codec.level && a->out_codec.id == b->out_codec.id &&
           a->out_codec.level == b->out_codec.level && str_eq(a->faults, b->faults) &&
           str_eq(a->faults_dir, b->faults_dir) &&
           sink_eq(&a->sink, &b->sink) && node_eq(a->root, b->root);
}

/* What taskdesc.c promises of a description it decoded. */
static void check_node(const plan_node *n) {
    FZ_CHECK(n->type >= PN_RECS && n->type <= PN_COGROUP, "node type %d", n->type);
    if (n->type == PN_PAIRED) FZ_CHECK(n->nchild == 2, "paired operator with %d inputs", n->nchild);
    if (n->type == PN_COGROUP) FZ_CHECK(n->nchild >= 2 && n->nchild <= 16, "cogroup with %d inputs", n->nchild);
    FZ_CHECK(n->nchild >= 0 && (n->nchild == 0 || n->child), "children");
    if (n->type == PN_OP || n->type == PN_CACHED) FZ_CHECK(n->nchild == 1, "operator with %d inputs", n->nchild);
    if (n->type == PN_TEXT || n->type == PN_CKPT) FZ_CHECK(n->path != NULL, "source without path");
    if (n->type == PN_SHUFFLE) FZ_CHECK(n->nmaps >= 0 && n->dirs, "shuffle source without locations");
    FZ_CHECK(n->fn.kind != FN_SYMBOL || n->fn.sym, "symbol reference without symbol");
    for (int i = 0; i < n->nchild; i++) check_node(n->child[i]);
}

/* Encode t, decode the bytes, and return the copy (never NULL). */
static task_desc *round_trip(const task_desc *t, ebuf *enc) {
    FZ_CHECK(taskdesc_encode(t, enc) == 0, "encode failed: %s", em_errmsg());
    uint8_t *copy = malloc(enc->len);
    FZ_CHECK(copy != NULL, "out of memory");
    memcpy(copy, enc->p, enc->len);
    task_desc *u = NULL;
    int rc = taskdesc_decode(copy, enc->len, &u);
    FZ_CHECK(rc == 0 && u, "an encoded description does not decode: %d %s", rc, em_errmsg());
    FZ_CHECK(desc_eq(t, u), "decode(encode(t)) differs from t");
    return u;
}

/* ---------------------------------------------- 1. decoding the input */

static void decode_input(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1); /* the decoder takes ownership */
    FZ_CHECK(copy != NULL, "out of memory");
    if (size) memcpy(copy, data, size);
    task_desc *t = (task_desc *)1;
    int rc = taskdesc_decode(copy, size, &t);
    if (rc) {
        FZ_CHECK(rc == EM_EPROTO, "decode returned %d", rc);
        FZ_CHECK(t == NULL, "no description on failure");
        FZ_CHECK(!strncmp(em_errmsg(), "task description: ", 18), "message \"%s\"", em_errmsg());
        return;
    }
    FZ_CHECK(t && t->root, "decoded description without a plan");
    FZ_CHECK(t->sink.kind >= SK_COLLECT && t->sink.kind <= SK_CHECKPOINT, "sink kind %d", t->sink.kind);
    if (t->sink.kind == SK_SHUFFLE) FZ_CHECK(t->sink.nparts >= 1, "shuffle sink without partitions");
    if (t->sink.kind == SK_SAVE || t->sink.kind == SK_CHECKPOINT) FZ_CHECK(t->sink.path != NULL, "sink without path");
    check_node(t->root);
    FZ_CHECK(bf_codec_check(t->codec, NULL) == 0, "accepted block codec %u level %d", t->codec.id, t->codec.level);
    FZ_CHECK(bf_codec_check(t->out_codec, NULL) == 0, "accepted output codec %u level %d", t->out_codec.id,
             t->out_codec.level);
    ebuf e1 = EBUF_INIT, e2 = EBUF_INIT;
    task_desc *u = round_trip(t, &e1);
    FZ_CHECK(taskdesc_encode(u, &e2) == 0, "encode failed: %s", em_errmsg());
    FZ_CHECK(e1.len == e2.len && !memcmp(e1.p, e2.p, e1.len), "encoding is not stable");
    ebuf_free(&e1);
    ebuf_free(&e2);
    taskdesc_free(u);
    taskdesc_free(t);
}

/* ----------------------------------------- 2. building from the input */

typedef struct gen {
    const uint8_t *p, *end;
    plan_node nodes[24];
    plan_node *kids[24];
    int nnodes, nkids;
    const char *dirs[8];
    uint64_t seglens[8], attempts[8];
    int ndirs;
    char strs[16][17];
    int nstrs;
} gen;

static uint8_t g8(gen *g) { return g->p < g->end ? *g->p++ : 0; }

/* A 64-bit value, often an edge case. */
static uint64_t g64(gen *g) {
    static const uint64_t edge[] = {0, 1, 2, 127, 128, 255, 256, 65535, 65536, 0x7fffffff, 0x80000000,
                                    0xffffffff, 0x100000000ull, INT64_MAX, (uint64_t)INT64_MIN, UINT64_MAX};
    uint8_t sel = g8(g);
    if (sel < 16) return edge[sel];
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | g8(g);
    return v;
}

static blob gblob(gen *g) {
    size_t n = g8(g) % 24;
    if (n > (size_t)(g->end - g->p)) n = (size_t)(g->end - g->p);
    blob b = {n ? g->p : NULL, n};
    g->p += n;
    return b;
}

/* A codec and a level it takes, as the driver's settings give: a known
 * codec or auto, zlib's and zstd's levels, lz4's and auto's acceleration. */
static bf_codec gcodec(gen *g) {
    bf_codec c = {0, 0};
    uint8_t id = g8(g) % (BF_NCODECS + 1), lv = g8(g);
    c.id = id == BF_NCODECS ? BF_AUTO : id;
    if (c.id == BF_ZLIB) c.level = (int8_t)(lv % 10);
    if (c.id == BF_ZSTD) c.level = (int8_t)(BF_ZSTD_MIN_LEVEL + lv % (BF_ZSTD_MAX_LEVEL - BF_ZSTD_MIN_LEVEL + 1));
    if (c.id == BF_LZ4 || c.id == BF_AUTO) c.level = (int8_t)(lv % (BF_LZ4_MAX_ACCEL + 1));
    return c;
}

/* A string (up to its first NUL, as the encoder sends it), or NULL when
 * may_null and the recipe says so. */
static const char *gstr(gen *g, int may_null) {
    uint8_t sel = g8(g);
    if (may_null && sel % 4 == 0) return NULL;
    if (g->nstrs == 16) return "s";
    char *s = g->strs[g->nstrs++];
    size_t n = (size_t)(sel / 4) % 17;
    for (size_t i = 0; i < n; i++) s[i] = (char)g8(g);
    s[n] = 0;
    return s;
}

static void gfn(gen *g, fnref *f) {
    f->kind = (uint8_t)(g8(g) % (FN_LAST + 1));
    f->off = g64(g);
    f->sym = f->kind == FN_SYMBOL ? gstr(g, 0) : NULL;
}

static void gagg(gen *g, aggdesc *a) {
    gfn(g, &a->create);
    gfn(g, &a->merge_value);
    gfn(g, &a->merge_comb);
    a->arg = gblob(g);
    a->zero = gblob(g);
    a->has_zero = g8(g);
    a->rec_values = g8(g);
}

static plan_node *gnode(gen *g, int depth) {
    plan_node *n = &g->nodes[g->nnodes++];
    memset(n, 0, sizeof *n);
    n->type = (uint8_t)(PN_RECS + g8(g) % PN_COGROUP);
    n->op = g8(g);
    n->rdd_id = (int32_t)g64(g);
    n->partition = (int32_t)g64(g);
    gfn(g, &n->fn);
    n->arg = gblob(g);
    uint64_t f = g64(g);
    memcpy(&n->fraction, &f, sizeof f);
    n->seed = g64(g);
    n->with_repl = g8(g);
    n->has_zero = g8(g);
    n->start = (int64_t)g64(g);
    n->count = g64(g);
    n->step = (int64_t)g64(g);
    n->data = gblob(g);
    n->path = gstr(g, n->type != PN_TEXT && n->type != PN_CKPT);
    n->off = g64(g);
    n->len = g64(g);
    n->gz = g8(g);
    n->shuffle_id = (uint32_t)g64(g);
    if (n->type == PN_SHUFFLE) {
        int k = g8(g) % 4;
        if (k > 8 - g->ndirs) k = 0;
        n->nmaps = k;
        n->dirs = &g->dirs[g->ndirs];
        n->seglens = g8(g) % 2 ? &g->seglens[g->ndirs] : NULL;
        n->attempts = g8(g) % 2 ? &g->attempts[g->ndirs] : NULL;
        for (int i = 0; i < k; i++) {
            g->seglens[g->ndirs] = g64(g);
            g->attempts[g->ndirs] = g64(g);
            g->dirs[g->ndirs++] = gstr(g, 1);
        }
    } else {
        n->nmaps = (int32_t)g64(g);
    }
    n->mode = g8(g);
    n->combined = g8(g);
    n->descending = g8(g);
    gagg(g, &n->agg);
    n->level = g8(g);
    n->cache_key = g64(g);
    int want = n->type == PN_OP || n->type == PN_CACHED ? 1
               : n->type == PN_PAIRED                   ? 2
               : n->type == PN_COGROUP                  ? 2 + g8(g) % 3
                                                        : g8(g) % 3;
    /* Room for the subtree: every child takes at least one node. */
    if (depth > 6 || want > 24 - g->nnodes || want > 24 - g->nkids) {
        if (n->type == PN_OP || n->type == PN_CACHED || n->type == PN_PAIRED || n->type == PN_COGROUP)
            n->type = PN_RANGE;
        want = 0;
    }
    n->nchild = want;
    n->child = want ? &g->kids[g->nkids] : NULL;
    g->nkids += want;
    for (int i = 0; i < want; i++) {
        if (g->nnodes == 24) { /* out of nodes: end the plan here */
            n->nchild = i;
            if ((i == 0 && (n->type == PN_OP || n->type == PN_CACHED)) || n->type == PN_PAIRED ||
                n->type == PN_COGROUP)
                n->type = PN_RANGE;
            break;
        }
        n->child[i] = gnode(g, depth + 1);
    }
    return n;
}

static void build_input(const uint8_t *data, size_t size) {
    gen *g = calloc(1, sizeof *g);
    FZ_CHECK(g != NULL, "out of memory");
    g->p = data;
    g->end = data + size;
    task_desc t;
    memset(&t, 0, sizeof t);
    t.task_id = g64(g);
    t.stage_id = (uint32_t)g64(g);
    t.attempt = (uint32_t)g64(g);
    t.partition = (int32_t)g64(g);
    for (int i = 0; i < 32; i++) t.binhash[i] = g8(g);
    t.mem_budget = g64(g);
    t.block_bytes = g64(g);
    t.max_record = g64(g);
    t.codec = gcodec(g);
    t.out_codec = gcodec(g);
    plan_sink *s = &t.sink;
    s->kind = (uint8_t)(SK_COLLECT + g8(g) % SK_CHECKPOINT);
    gfn(g, &s->fn);
    s->arg = gblob(g);
    s->zero = gblob(g);
    s->has_zero = g8(g);
    s->n = g64(g);
    s->seed = g64(g);
    s->descending = g8(g);
    s->path = gstr(g, s->kind != SK_SAVE && s->kind != SK_CHECKPOINT);
    s->shuffle_id = (uint32_t)g64(g);
    s->nparts = (int32_t)g64(g);
    if (s->kind == SK_SHUFFLE && s->nparts < 1) s->nparts = 1;
    s->partitioner = g8(g);
    s->combine = g8(g);
    s->bounds = gblob(g);
    gagg(g, &s->agg);
    t.root = gnode(g, 0);
    ebuf enc = EBUF_INIT;
    task_desc *u = round_trip(&t, &enc);
    ebuf_free(&enc);
    taskdesc_free(u);
    free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    decode_input(data, size);
    build_input(data, size);
    return 0;
}
