/*
 * taskdesc.c -- msgpack encoding of task descriptions (see taskdesc.h).
 *
 * Layout: every structure is a fixed-length msgpack array, so decoding is a
 * walk by position with a type check at each step.  A description is
 *   ["emt1", task_id, stage_id, attempt, partition, bin32 hash,
 *    [mem_budget, block_bytes, max_record, codec, level, out_codec,
 *     out_level(, faults(, dir))],
 *    sink,
 *    [node...]]
 * with the plan's nodes in pre-order, each ending with its child count.
 * codec and level are the bf_codec of the reduce side's (and a local
 * aggregation's) spills, out_codec and out_level that of a map task's
 * output and its own spills (codec.h; levels signed): a codec the executor
 * does not know, or a level it does not take, is refused here rather than
 * at the first block.
 * Decoding validates types and lengths; anything unexpected is EM_EPROTO,
 * never a crash.  Strings are copied into the arena (NUL-terminated), and
 * so are user functions' argument blobs (aligned, as a cast to the user's
 * struct needs); other bins are views into the encoded bytes, which the
 * decoded description owns.
 */
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "ember.h"
#include "err.h"
#include "mpcheck.h"
#include "taskdesc.h"

#define MAGIC "emt1"
#define NODE_FIELDS 28
#define SINK_FIELDS 16
#define AGG_FIELDS 7

/* ------------------------------------------------------------- encoding */

static int write_cb(void *data, const char *buf, size_t len) {
    return ebuf_append((ebuf *)data, buf, len) ? -1 : 0;
}

static void pack_str(msgpack_packer *pk, const char *s) {
    if (!s) {
        msgpack_pack_nil(pk);
        return;
    }
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static void pack_blob(msgpack_packer *pk, blob b) {
    msgpack_pack_bin(pk, b.len);
    if (b.len) msgpack_pack_bin_body(pk, b.p, b.len);
}

static void pack_fn(msgpack_packer *pk, const fnref *f) {
    msgpack_pack_array(pk, 3);
    msgpack_pack_uint8(pk, f->kind);
    msgpack_pack_uint64(pk, f->off);
    pack_str(pk, f->kind == FN_SYMBOL ? f->sym : NULL);
}

static void pack_agg(msgpack_packer *pk, const aggdesc *a) {
    msgpack_pack_array(pk, AGG_FIELDS);
    pack_fn(pk, &a->create);
    pack_fn(pk, &a->merge_value);
    pack_fn(pk, &a->merge_comb);
    pack_blob(pk, a->arg);
    pack_blob(pk, a->zero);
    msgpack_pack_uint8(pk, a->has_zero);
    msgpack_pack_uint8(pk, a->rec_values);
}

/* One node's fields; its children follow it in the flat list. */

/* The distinct locations of a shuffle read's maps, in the order maps name
 * them first: idx[i] the index of map i's location (-1: none), firsts[k]
 * the first map at location k.  Hash tables keep it linear in the maps,
 * however many executors hold them: one by the strings' addresses first
 * (the driver's tracker keeps one copy of each executor's location, so
 * after an executor's first map its others cost a pointer's hash), then
 * one by their bytes.  0 or -1 when out of memory. */
static int loc_table(const plan_node *n, int *idx, int *firsts, int *nloc) {
    uint32_t cap = 16, bits = 4;
    while (cap < (uint32_t)n->nmaps * 2u) cap *= 2, bits++;
    int *slot = malloc(sizeof *slot * cap * 2); /* a location's index, or -1; by bytes, then by address */
    const char **addr = malloc(sizeof *addr * cap);
    if (!slot || !addr) {
        free(slot);
        free(addr);
        return -1;
    }
    int *aslot = slot + cap;
    memset(slot, 0xff, sizeof *slot * cap * 2);
    *nloc = 0;
    for (int i = 0; i < n->nmaps; i++) {
        idx[i] = -1;
        const char *d = n->dirs[i];
        if (!d) continue;
        uint32_t a = (uint32_t)(((uintptr_t)d * 0x9e3779b97f4a7c15ull) >> (64 - bits));
        while (aslot[a] >= 0 && addr[a] != d) a = (a + 1) & (cap - 1);
        if (aslot[a] >= 0) {
            idx[i] = aslot[a];
            continue;
        }
        size_t len = strlen(d);
        uint32_t h = (uint32_t)XXH3_64bits(d, len) & (cap - 1);
        while (slot[h] >= 0 && strcmp(n->dirs[firsts[slot[h]]], d)) h = (h + 1) & (cap - 1);
        if (slot[h] < 0) {
            firsts[*nloc] = i;
            slot[h] = (*nloc)++;
        }
        idx[i] = aslot[a] = slot[h];
        addr[a] = d;
    }
    free(slot);
    free(addr);
    return 0;
}
static int pack_node(msgpack_packer *pk, const plan_node *n) {
    msgpack_pack_array(pk, NODE_FIELDS);
    msgpack_pack_uint8(pk, n->type);
    msgpack_pack_uint8(pk, n->op);
    msgpack_pack_int32(pk, n->rdd_id);
    msgpack_pack_int32(pk, n->partition);
    pack_fn(pk, &n->fn);
    pack_blob(pk, n->arg);
    msgpack_pack_double(pk, n->fraction);
    msgpack_pack_uint64(pk, n->seed);
    msgpack_pack_uint8(pk, n->with_repl);
    msgpack_pack_int64(pk, n->start);
    msgpack_pack_uint64(pk, n->count);
    msgpack_pack_int64(pk, n->step);
    pack_blob(pk, n->data);
    pack_str(pk, n->path);
    msgpack_pack_uint64(pk, n->off);
    msgpack_pack_uint64(pk, n->len);
    msgpack_pack_uint8(pk, n->gz);
    msgpack_pack_uint32(pk, n->shuffle_id);
    msgpack_pack_int32(pk, n->nmaps);
    if (n->type == PN_SHUFFLE) {
        /* [[location...], bin]: each distinct location (an executor's)
         * once, then per map three varints in one bin: its location's
         * index + 1 (0: no output), its attempt, its segment's length.  A
         * reduce task names every map, so a bin of varints, not 3 msgpack
         * integers a map: with 10,000 maps the description is built and
         * read as one byte run. */
        int nloc = 0;
        int *idx = n->nmaps > 0 ? malloc(sizeof(int) * (size_t)n->nmaps * 2) : NULL;
        int *firsts = idx ? idx + n->nmaps : NULL; /* map holding each location first */
        if (n->nmaps > 0 && !idx) return -1;
        if (loc_table(n, idx, firsts, &nloc)) {
            free(idx);
            return -1;
        }
        uint8_t *maps = malloc((size_t)n->nmaps * 3 * VARINT_MAX + 1);
        if (!maps) {
            free(idx);
            return -1;
        }
        size_t len = 0;
        for (int i = 0; i < n->nmaps; i++) {
            len += varint_put(maps + len, (uint64_t)(idx[i] + 1));
            len += varint_put(maps + len, n->attempts ? n->attempts[i] : 0);
            len += varint_put(maps + len, n->seglens ? n->seglens[i] : 0);
        }
        msgpack_pack_array(pk, 2);
        msgpack_pack_array(pk, (size_t)nloc);
        for (int k = 0; k < nloc; k++) pack_str(pk, n->dirs[firsts[k]]);
        msgpack_pack_bin(pk, len);
        if (len) msgpack_pack_bin_body(pk, maps, len);
        free(maps);
        free(idx);
    } else {
        msgpack_pack_nil(pk);
    }
    msgpack_pack_uint8(pk, n->mode);
    msgpack_pack_uint8(pk, n->combined);
    msgpack_pack_uint8(pk, n->descending);
    pack_agg(pk, &n->agg);
    msgpack_pack_uint8(pk, n->level);
    msgpack_pack_uint64(pk, n->cache_key);
    msgpack_pack_uint8(pk, n->has_zero);
    msgpack_pack_uint32(pk, (uint32_t)n->nchild);
    return 0;
}

/* The plan's nodes in pre-order, walked over an explicit stack (a plan of
 * 10,000 chained operators must not recurse): each node is passed to fn
 * (when set) and counted.  The count, or (size_t)-1 when out of memory or
 * when fn fails. */
static size_t walk_plan(const plan_node *root, msgpack_packer *pk) {
    const plan_node **st = malloc(sizeof *st * 16);
    size_t n = 0, cap = 16, count = 0;
    if (!st) return (size_t)-1;
    st[n++] = root;
    while (n) {
        const plan_node *x = st[--n];
        count++;
        if (pk && pack_node(pk, x)) break;
        if (n + (size_t)x->nchild > cap) {
            size_t c = (n + (size_t)x->nchild) * 2;
            const plan_node **g = realloc(st, sizeof *st * c);
            if (!g) break;
            st = g;
            cap = c;
        }
        for (int i = x->nchild; i-- > 0;) st[n++] = x->child[i]; /* the first child on top */
    }
    free(st);
    return n ? (size_t)-1 : count;
}

static void pack_sink(msgpack_packer *pk, const plan_sink *s) {
    msgpack_pack_array(pk, SINK_FIELDS);
    msgpack_pack_uint8(pk, s->kind);
    pack_fn(pk, &s->fn);
    pack_blob(pk, s->arg);
    pack_blob(pk, s->zero);
    msgpack_pack_uint8(pk, s->has_zero);
    msgpack_pack_uint64(pk, s->n);
    msgpack_pack_uint64(pk, s->seed);
    msgpack_pack_uint8(pk, s->descending);
    pack_str(pk, s->path);
    msgpack_pack_uint32(pk, s->shuffle_id);
    msgpack_pack_int32(pk, s->nparts);
    msgpack_pack_uint8(pk, s->partitioner);
    msgpack_pack_uint8(pk, s->combine);
    pack_blob(pk, s->bounds);
    pack_agg(pk, &s->agg);
    msgpack_pack_uint8(pk, s->compress);
}

int taskdesc_encode(const task_desc *t, ebuf *out) {
    msgpack_packer pk;
    size_t start = out->len;
    msgpack_packer_init(&pk, out, write_cb);
    msgpack_pack_array(&pk, 9);
    pack_str(&pk, MAGIC);
    msgpack_pack_uint64(&pk, t->task_id);
    msgpack_pack_uint32(&pk, t->stage_id);
    msgpack_pack_uint32(&pk, t->attempt);
    msgpack_pack_int32(&pk, t->partition);
    msgpack_pack_bin(&pk, 32);
    msgpack_pack_bin_body(&pk, t->binhash, 32);
    msgpack_pack_array(&pk, t->faults_dir ? 9 : t->faults ? 8 : 7);
    msgpack_pack_uint64(&pk, t->mem_budget);
    msgpack_pack_uint64(&pk, t->block_bytes);
    msgpack_pack_uint64(&pk, t->max_record);
    msgpack_pack_uint8(&pk, t->codec.id);
    msgpack_pack_int8(&pk, t->codec.level);
    msgpack_pack_uint8(&pk, t->out_codec.id);
    msgpack_pack_int8(&pk, t->out_codec.level);
    if (t->faults || t->faults_dir) pack_str(&pk, t->faults); /* nil when none */
    if (t->faults_dir) pack_str(&pk, t->faults_dir);
    pack_sink(&pk, &t->sink);
    size_t nodes = walk_plan(t->root, NULL);
    if (nodes == (size_t)-1) return em__seterr(EM_ENOMEM, "out of memory encoding a task");
    msgpack_pack_array(&pk, nodes);
    if (walk_plan(t->root, &pk) != nodes) return em__seterr(EM_ENOMEM, "out of memory encoding a task");
    /* The packer reports allocation failure only through the callback; a
     * short buffer means one of its appends failed. */
    if (out->len == start) return em__seterr(EM_ENOMEM, "out of memory encoding a task");
    return 0;
}

/* ------------------------------------------------------------- decoding */

/* A bump arena: chunks chained through their first word.  Allocations
 * are 16-byte aligned. */
typedef struct arena {
    struct chunk { struct chunk *next; size_t used, cap; } *head;
} arena;

#define ARENA_HDR ((sizeof(struct chunk) + 15) & ~(size_t)15)

static void *arena_alloc(arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->head->cap - a->head->used < n) {
        size_t cap = n > 4000 ? n : 4000;
        struct chunk *c = malloc(ARENA_HDR + cap);
        if (!c) return NULL;
        c->next = a->head;
        c->used = 0;
        c->cap = cap;
        a->head = c;
    }
    void *p = (char *)a->head + ARENA_HDR + a->head->used;
    a->head->used += n;
    memset(p, 0, n);
    return p;
}

static void arena_free(arena *a) {
    while (a && a->head) {
        struct chunk *c = a->head;
        a->head = c->next;
        free(c);
    }
}

typedef struct dec {
    arena *ar;
    const char *what; /* first error */
} dec;

#define FAIL(d, msg) ((d)->what ? 0 : ((d)->what = (msg), 0))

static const msgpack_object *arr(dec *d, const msgpack_object *o, uint32_t n, const char *what) {
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != n) {
        FAIL(d, what);
        return NULL;
    }
    return o->via.array.ptr;
}

static uint64_t get_u(dec *d, const msgpack_object *o) {
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) return o->via.u64;
    FAIL(d, "expected an unsigned integer");
    return 0;
}

static int64_t get_i(dec *d, const msgpack_object *o) {
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) return (int64_t)o->via.u64;
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) return o->via.i64;
    FAIL(d, "expected an integer");
    return 0;
}

static double get_f(dec *d, const msgpack_object *o) {
    if (o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32) return o->via.f64;
    FAIL(d, "expected a float");
    return 0;
}

static blob get_blob(dec *d, const msgpack_object *o) {
    blob b = {NULL, 0};
    if (o->type == MSGPACK_OBJECT_BIN) {
        b.p = (const uint8_t *)o->via.bin.ptr;
        b.len = o->via.bin.size;
    } else {
        FAIL(d, "expected bytes");
    }
    return b;
}

/* A user function's argument blob: copied into the arena, so the function
 * gets an aligned pointer it may cast to its own struct. */
static blob get_arg(dec *d, const msgpack_object *o) {
    blob b = get_blob(d, o);
    if (b.len) {
        uint8_t *p = arena_alloc(d->ar, b.len);
        if (!p) {
            FAIL(d, "out of memory");
            return (blob){NULL, 0};
        }
        memcpy(p, b.p, b.len);
        b.p = p;
    }
    return b;
}

/* A block codec: its id at o, its signed level at o[1]; one the executor
 * does not know, or a level it does not take, fails the description. */
static bf_codec get_codec(dec *d, const msgpack_object *o) {
    uint64_t id = get_u(d, &o[0]);
    int64_t level = get_i(d, &o[1]);
    bf_codec c;
    c.id = id < BF_NCODECS || id == BF_AUTO ? (uint8_t)id : BF_NCODECS;
    c.level = level >= INT8_MIN && level <= INT8_MAX ? (int8_t)level : INT8_MAX;
    const char *why;
    if (!d->what && bf_codec_check(c, &why)) FAIL(d, why);
    return c;
}

static const char *get_str(dec *d, const msgpack_object *o) {
    if (o->type == MSGPACK_OBJECT_NIL) return NULL;
    if (o->type != MSGPACK_OBJECT_STR) {
        FAIL(d, "expected a string");
        return NULL;
    }
    char *s = arena_alloc(d->ar, o->via.str.size + 1);
    if (!s) {
        FAIL(d, "out of memory");
        return NULL;
    }
    if (o->via.str.size) memcpy(s, o->via.str.ptr, o->via.str.size); /* ptr may be NULL when empty */
    s[o->via.str.size] = 0;
    return s;
}

static void get_fn(dec *d, const msgpack_object *o, fnref *f) {
    const msgpack_object *a = arr(d, o, 3, "malformed function reference");
    if (!a) return;
    f->kind = (uint8_t)get_u(d, &a[0]);
    f->off = get_u(d, &a[1]);
    f->sym = get_str(d, &a[2]);
    if (f->kind > FN_LAST || (f->kind == FN_SYMBOL && !f->sym)) FAIL(d, "bad function reference");
}

static void get_agg(dec *d, const msgpack_object *o, aggdesc *g) {
    const msgpack_object *a = arr(d, o, AGG_FIELDS, "malformed aggregator");
    if (!a) return;
    get_fn(d, &a[0], &g->create);
    get_fn(d, &a[1], &g->merge_value);
    get_fn(d, &a[2], &g->merge_comb);
    g->arg = get_arg(d, &a[3]);
    g->zero = get_blob(d, &a[4]);
    g->has_zero = (uint8_t)get_u(d, &a[5]);
    g->rec_values = (uint8_t)get_u(d, &a[6]);
}

/* The plan is a flat list of nodes in pre-order, each giving its number of
 * children: nesting the tree itself would hit msgpack-c's fixed limit of
 * 32 nested containers at about 15 chained operators. */
typedef struct node_list {
    const msgpack_object *o;
    uint32_t n, next;
} node_list;

/* One varint of a shuffle read's map list, as varint_put writes it and
 * nothing else (no overlong form, nothing past 64 bits: a description
 * decodes to one encoding).  The byte after it, or NULL having failed. */
static const uint8_t *map_varint(dec *d, const uint8_t *p, const uint8_t *end, uint64_t *v) {
    size_t n = varint_get(p, end, v);
    if (!n || (n > 1 && !p[n - 1]) || (n == VARINT_MAX && p[n - 1] > 1)) {
        FAIL(d, "malformed shuffle locations");
        return NULL;
    }
    return p + n;
}

/* The next node of the list, its child array allocated but not filled. */
static plan_node *get_node(dec *d, node_list *l) {
    if (l->next >= l->n) {
        FAIL(d, "plan node missing");
        return NULL;
    }
    const msgpack_object *a = arr(d, &l->o[l->next++], NODE_FIELDS, "malformed plan node");
    plan_node *n = a ? arena_alloc(d->ar, sizeof *n) : NULL;
    if (!n) {
        FAIL(d, "out of memory");
        return NULL;
    }
    n->type = (uint8_t)get_u(d, &a[0]);
    n->op = (uint8_t)get_u(d, &a[1]);
    n->rdd_id = (int32_t)get_i(d, &a[2]);
    n->partition = (int32_t)get_i(d, &a[3]);
    get_fn(d, &a[4], &n->fn);
    n->arg = get_arg(d, &a[5]);
    n->fraction = get_f(d, &a[6]);
    n->seed = get_u(d, &a[7]);
    n->with_repl = (uint8_t)get_u(d, &a[8]);
    n->start = get_i(d, &a[9]);
    n->count = get_u(d, &a[10]);
    n->step = get_i(d, &a[11]);
    n->data = get_blob(d, &a[12]);
    n->path = get_str(d, &a[13]);
    n->off = get_u(d, &a[14]);
    n->len = get_u(d, &a[15]);
    n->gz = (uint8_t)get_u(d, &a[16]);
    n->shuffle_id = (uint32_t)get_u(d, &a[17]);
    n->nmaps = (int32_t)get_i(d, &a[18]);
    if (n->type == PN_SHUFFLE) {
        const msgpack_object *sl = n->nmaps >= 0 ? arr(d, &a[19], 2, "malformed shuffle locations") : NULL;
        if (!sl || sl[0].type != MSGPACK_OBJECT_ARRAY || sl[1].type != MSGPACK_OBJECT_BIN ||
            sl[1].via.bin.size < (uint64_t)n->nmaps * 3) {
            FAIL(d, "malformed shuffle locations");
            return NULL;
        }
        uint32_t nloc = sl[0].via.array.size;
        const char **locs = arena_alloc(d->ar, sizeof(char *) * ((size_t)nloc + 1));
        const char **dirs = arena_alloc(d->ar, sizeof(char *) * (size_t)(n->nmaps + 1));
        uint64_t *lens = arena_alloc(d->ar, sizeof(uint64_t) * (size_t)(n->nmaps + 1));
        uint64_t *atts = arena_alloc(d->ar, sizeof(uint64_t) * (size_t)(n->nmaps + 1));
        if (!locs || !dirs || !lens || !atts) {
            FAIL(d, "out of memory");
            return NULL;
        }
        for (uint32_t k = 0; k < nloc && !d->what; k++)
            if (!(locs[k] = get_str(d, &sl[0].via.array.ptr[k]))) FAIL(d, "malformed shuffle location");
        const uint8_t *m = (const uint8_t *)sl[1].via.bin.ptr, *end = m + sl[1].via.bin.size;
        for (int i = 0; i < n->nmaps && !d->what; i++) {
            uint64_t li = 0;
            if (!(m = map_varint(d, m, end, &li)) || !(m = map_varint(d, m, end, &atts[i])) ||
                !(m = map_varint(d, m, end, &lens[i])))
                break;
            if (li > nloc) FAIL(d, "shuffle location index out of range");
            dirs[i] = li && !d->what ? locs[li - 1] : NULL;
        }
        if (!d->what && m != end) FAIL(d, "malformed shuffle locations");
        if (d->what) return NULL;
        n->dirs = dirs;
        n->attempts = atts;
        n->seglens = lens;
    }
    n->mode = (uint8_t)get_u(d, &a[20]);
    n->combined = (uint8_t)get_u(d, &a[21]);
    n->descending = (uint8_t)get_u(d, &a[22]);
    get_agg(d, &a[23], &n->agg);
    n->level = (uint8_t)get_u(d, &a[24]);
    n->cache_key = get_u(d, &a[25]);
    n->has_zero = (uint8_t)get_u(d, &a[26]);
    uint64_t nchild = get_u(d, &a[27]);
    if (d->what) return NULL;
    if (nchild > l->n - l->next) {
        FAIL(d, "malformed plan children");
        return NULL;
    }
    n->nchild = (int32_t)nchild;
    if (n->nchild) {
        n->child = arena_alloc(d->ar, sizeof(plan_node *) * (size_t)n->nchild);
        if (!n->child) {
            FAIL(d, "out of memory");
            return NULL;
        }
    }
    if (n->type < PN_RECS || n->type > PN_COGROUP) FAIL(d, "unknown plan node type");
    if (n->type == PN_COGROUP && (n->nchild < 2 || n->nchild > 16)) FAIL(d, "cogroup without 2 to 16 inputs");
    if ((n->type == PN_OP || n->type == PN_CACHED) && n->nchild != 1) FAIL(d, "operator without input");
    if (n->type == PN_PAIRED && n->nchild != 2) FAIL(d, "paired operator without two inputs");
    if ((n->type == PN_TEXT || n->type == PN_CKPT) && !n->path) FAIL(d, "source without path");
    return d->what ? NULL : n;
}

/* The plan tree from the flat list: each node's children are the nodes
 * that follow it, filled in over an explicit stack of nodes still missing
 * children (no recursion, however deep the plan: its depth is bounded
 * only by the list's length, which the message's size bounds). */
static plan_node *get_plan(dec *d, node_list *l) {
    typedef struct pframe {
        plan_node *n;
        int32_t filled;
    } pframe;
    plan_node *root = get_node(d, l);
    pframe *st = NULL;
    size_t n = 0, cap = 0;
    if (!root) return NULL;
    if (root->nchild) {
        if (!(st = malloc(sizeof *st * 16))) {
            FAIL(d, "out of memory");
            return NULL;
        }
        cap = 16;
        st[n++] = (pframe){root, 0};
    }
    while (n && !d->what) {
        pframe *f = &st[n - 1];
        if (f->filled == f->n->nchild) {
            n--;
            continue;
        }
        plan_node *c = get_node(d, l);
        if (!c) break;
        f->n->child[f->filled++] = c;
        if (!c->nchild) continue;
        if (n == cap) {
            pframe *g = realloc(st, sizeof *st * cap * 2);
            if (!g) {
                FAIL(d, "out of memory");
                break;
            }
            st = g;
            cap *= 2;
        }
        st[n++] = (pframe){c, 0};
    }
    free(st);
    return d->what ? NULL : root;
}

static void get_sink(dec *d, const msgpack_object *o, plan_sink *s) {
    const msgpack_object *a = arr(d, o, SINK_FIELDS, "malformed sink");
    if (!a) return;
    s->kind = (uint8_t)get_u(d, &a[0]);
    get_fn(d, &a[1], &s->fn);
    s->arg = get_arg(d, &a[2]);
    s->zero = get_blob(d, &a[3]);
    s->has_zero = (uint8_t)get_u(d, &a[4]);
    s->n = get_u(d, &a[5]);
    s->seed = get_u(d, &a[6]);
    s->descending = (uint8_t)get_u(d, &a[7]);
    s->path = get_str(d, &a[8]);
    s->shuffle_id = (uint32_t)get_u(d, &a[9]);
    s->nparts = (int32_t)get_i(d, &a[10]);
    s->partitioner = (uint8_t)get_u(d, &a[11]);
    s->combine = (uint8_t)get_u(d, &a[12]);
    s->bounds = get_blob(d, &a[13]);
    get_agg(d, &a[14], &s->agg);
    /* nil from descriptions of before the field (it was reserved) */
    uint64_t codec = a[15].type == MSGPACK_OBJECT_NIL ? SAVE_PLAIN : get_u(d, &a[15]);
    if (codec > SAVE_GZIP) FAIL(d, "unknown save codec");
    s->compress = (uint8_t)codec;
    if (s->kind < SK_COLLECT || s->kind > SK_CHECKPOINT) FAIL(d, "unknown sink kind");
    if (s->kind == SK_SHUFFLE && s->nparts < 1) FAIL(d, "shuffle sink without partitions");
    if ((s->kind == SK_SAVE || s->kind == SK_CHECKPOINT) && !s->path) FAIL(d, "sink without path");
}

int taskdesc_decode(uint8_t *bytes, size_t len, task_desc **out) {
    msgpack_unpacked u;
    size_t off = 0;
    arena *ar = calloc(1, sizeof *ar);
    task_desc *t = NULL;
    dec d = {ar, NULL};
    *out = NULL;
    if (!ar) {
        free(bytes);
        return em__seterr(EM_ENOMEM, "task description: out of memory");
    }
    msgpack_unpacked_init(&u);
    if ((d.what = mp_precheck(bytes, len)) != NULL) {
        /* reported below */
    } else if (msgpack_unpack_next(&u, (const char *)bytes, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len) {
        d.what = "not one msgpack message";
    } else if ((t = arena_alloc(ar, sizeof *t)) == NULL) {
        d.what = "out of memory";
    } else {
        const msgpack_object *a = arr(&d, &u.data, 9, "not a task description");
        if (a) {
            const char *magic = get_str(&d, &a[0]);
            if (!magic || strcmp(magic, MAGIC)) FAIL(&d, "bad magic");
            t->task_id = get_u(&d, &a[1]);
            t->stage_id = (uint32_t)get_u(&d, &a[2]);
            t->attempt = (uint32_t)get_u(&d, &a[3]);
            t->partition = (int32_t)get_i(&d, &a[4]);
            blob h = get_blob(&d, &a[5]);
            if (h.len == 32) memcpy(t->binhash, h.p, 32);
            else FAIL(&d, "bad binary hash");
            /* Seven settings, an eighth when a test injects faults, and a
             * ninth when it names their gates' directory. */
            int nst = 7;
            if (a[6].type == MSGPACK_OBJECT_ARRAY && (a[6].via.array.size == 8 || a[6].via.array.size == 9))
                nst = (int)a[6].via.array.size;
            const msgpack_object *st = arr(&d, &a[6], (uint32_t)nst, "malformed task settings");
            if (st) {
                t->mem_budget = get_u(&d, &st[0]);
                t->block_bytes = get_u(&d, &st[1]);
                t->max_record = get_u(&d, &st[2]);
                t->codec = get_codec(&d, &st[3]);
                t->out_codec = get_codec(&d, &st[5]);
                if (nst >= 8) t->faults = get_str(&d, &st[7]);
                if (nst == 9) t->faults_dir = get_str(&d, &st[8]);
            }
            get_sink(&d, &a[7], &t->sink);
            if (!d.what && a[8].type != MSGPACK_OBJECT_ARRAY) FAIL(&d, "malformed plan");
            if (!d.what) {
                node_list l = {a[8].via.array.ptr, a[8].via.array.size, 0};
                t->root = get_plan(&d, &l);
                if (!d.what && l.next != l.n) FAIL(&d, "malformed plan: nodes left over");
            }
        }
    }
    /* Bins point into `bytes`, which t owns from here; the msgpack zone
     * holds only the object tree we are done with. */
    msgpack_unpacked_destroy(&u);
    if (d.what || !t) {
        arena_free(ar);
        free(ar);
        free(bytes);
        return em__seterr(EM_EPROTO, "task description: %s", d.what ? d.what : "out of memory");
    }
    t->arena = ar;
    t->bytes = bytes;
    *out = t;
    return 0;
}

void taskdesc_free(task_desc *t) {
    if (!t || !t->arena) return;
    arena *ar = t->arena;
    free(t->bytes);
    arena_free(ar); /* t lives in the arena */
    free(ar);
}
