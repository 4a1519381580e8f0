/*
 * taskdesc.c -- msgpack encoding of task descriptions (see taskdesc.h).
 *
 * Layout: every structure is a fixed-length msgpack array whose scalar
 * fields travel together in one bin of varints (unsigned LEB128, signed
 * ones zigzagged first), so a description is a couple of dozen msgpack
 * objects whatever its fields: decoding is a walk by position with a type
 * check at each step, and a field read from the bin is checked against
 * its type's range.  A description is
 *   ["emt2", head, bin32 hash, faults, faults_dir, sink, [node...]]
 *   head  = bin: task_id, stage_id, attempt, partition, mem_budget,
 *           block_bytes, max_record, codec, level, out_codec, out_level
 *   sink  = [bin: kind, has_zero, n, seed, descending, shuffle_id, nparts,
 *            partitioner, combine, compress;
 *            fn, arg, zero, path, bounds, agg]
 *   node  = [bin: type, op, rdd_id, partition, fraction's bits, seed,
 *            with_repl, has_zero, start, count, step, off, len, gz,
 *            shuffle_id, nmaps, mode, combined, descending, level,
 *            cache_key, nchild;
 *            fn, arg, data, path, shuffle locations, agg]
 *   fn    = nil (FN_NONE at 0) | bin: kind, off | [bin: kind, off; symbol]
 *           (FN_SYMBOL)
 *   agg   = nil (nothing set) | [bin: has_zero, rec_values;
 *            create, merge_value, merge_comb, arg, zero]
 * with the plan's nodes in pre-order, each ending its fields with its
 * child count; faults, faults_dir, paths and symbols are strings or nil.
 * codec and level are the bf_codec of the reduce side's (and a local
 * aggregation's) spills, out_codec and out_level that of a map task's
 * output and its own spills (codec.h): a codec the executor does not know,
 * or a level it does not take, is refused here rather than at the first
 * block.
 * Decoding validates types, lengths and ranges; anything unexpected is
 * EM_EPROTO, never a crash.  Strings are copied into the arena
 * (NUL-terminated), and so are user functions' argument blobs (aligned, as
 * a cast to the user's struct needs); other bins are views into the
 * encoded bytes, which the decoded description owns.
 */
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "ember.h"
#include "err.h"
#include "mpcheck.h"
#include "taskdesc.h"

#define MAGIC "emt2"
#define DESC_FIELDS 7
#define NODE_FIELDS 7
#define SINK_FIELDS 7
#define AGG_FIELDS 6
/* The most bytes a run of scalar fields takes: a node's 22 varints. */
#define FIELDS_MAX (24 * VARINT_MAX)

/* ------------------------------------------------------------- encoding */

static int write_cb(void *data, const char *buf, size_t len) {
    ebuf *b = data;
    if (ebuf_reserve(b, len)) return -1;
    copy_small(b->p + b->len, (const uint8_t *)buf, len);
    b->len += len;
    return 0;
}

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

/* A run of scalar fields, built before it is packed as one bin. */
typedef struct fields {
    uint8_t b[FIELDS_MAX];
    size_t n;
} fields;

static void put_u(fields *f, uint64_t v) { f->n += varint_put(f->b + f->n, v); }
static void put_i(fields *f, int64_t v) { put_u(f, zigzag(v)); }

static void pack_fields(msgpack_packer *pk, const fields *f) {
    msgpack_pack_bin(pk, f->n);
    msgpack_pack_bin_body(pk, f->b, f->n);
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

static int fn_unset(const fnref *f) { return f->kind == FN_NONE && f->off == 0; }

static void pack_fn(msgpack_packer *pk, const fnref *f) {
    if (fn_unset(f)) {
        msgpack_pack_nil(pk);
        return;
    }
    fields v;
    v.n = 0;
    put_u(&v, f->kind);
    put_u(&v, f->off);
    if (f->kind == FN_SYMBOL) msgpack_pack_array(pk, 2);
    pack_fields(pk, &v);
    if (f->kind == FN_SYMBOL) pack_str(pk, f->sym);
}

static void pack_agg(msgpack_packer *pk, const aggdesc *a) {
    if (fn_unset(&a->create) && fn_unset(&a->merge_value) && fn_unset(&a->merge_comb) && !a->arg.len &&
        !a->zero.len && !a->has_zero && !a->rec_values) {
        msgpack_pack_nil(pk);
        return;
    }
    fields v;
    v.n = 0;
    put_u(&v, a->has_zero);
    put_u(&v, a->rec_values);
    msgpack_pack_array(pk, AGG_FIELDS);
    pack_fields(pk, &v);
    pack_fn(pk, &a->create);
    pack_fn(pk, &a->merge_value);
    pack_fn(pk, &a->merge_comb);
    pack_blob(pk, a->arg);
    pack_blob(pk, a->zero);
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
    fields v;
    v.n = 0;
    uint64_t fraction;
    memcpy(&fraction, &n->fraction, sizeof fraction);
    put_u(&v, n->type);
    put_u(&v, n->op);
    put_i(&v, n->rdd_id);
    put_i(&v, n->partition);
    put_u(&v, fraction);
    put_u(&v, n->seed);
    put_u(&v, n->with_repl);
    put_u(&v, n->has_zero);
    put_i(&v, n->start);
    put_u(&v, n->count);
    put_i(&v, n->step);
    put_u(&v, n->off);
    put_u(&v, n->len);
    put_u(&v, n->gz);
    put_u(&v, n->shuffle_id);
    put_i(&v, n->nmaps);
    put_u(&v, n->mode);
    put_u(&v, n->combined);
    put_u(&v, n->descending);
    put_u(&v, n->level);
    put_u(&v, n->cache_key);
    put_u(&v, (uint32_t)n->nchild);
    msgpack_pack_array(pk, NODE_FIELDS);
    pack_fields(pk, &v);
    pack_fn(pk, &n->fn);
    pack_blob(pk, n->arg);
    pack_blob(pk, n->data);
    pack_str(pk, n->path);
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
    pack_agg(pk, &n->agg);
    return 0;
}

/* The plan's nodes in pre-order, walked over an explicit stack (a plan of
 * 10,000 chained operators must not recurse): each node is passed to fn
 * (when set) and counted.  The count, or (size_t)-1 when out of memory or
 * when fn fails. */
static size_t walk_plan(const plan_node *root, msgpack_packer *pk) {
    const plan_node *small[16], **st = small;
    size_t n = 0, cap = 16, count = 0;
    st[n++] = root;
    while (n) {
        const plan_node *x = st[--n];
        count++;
        if (pk && pack_node(pk, x)) break;
        if (n + (size_t)x->nchild > cap) {
            size_t c = (n + (size_t)x->nchild) * 2;
            const plan_node **g = malloc(sizeof *st * c);
            if (!g) break;
            memcpy(g, st, sizeof *st * n);
            if (st != small) free(st);
            st = g;
            cap = c;
        }
        for (int i = x->nchild; i-- > 0;) st[n++] = x->child[i]; /* the first child on top */
    }
    if (st != small) free(st);
    return n ? (size_t)-1 : count;
}

static void pack_sink(msgpack_packer *pk, const plan_sink *s) {
    fields v;
    v.n = 0;
    put_u(&v, s->kind);
    put_u(&v, s->has_zero);
    put_u(&v, s->n);
    put_u(&v, s->seed);
    put_u(&v, s->descending);
    put_u(&v, s->shuffle_id);
    put_i(&v, s->nparts);
    put_u(&v, s->partitioner);
    put_u(&v, s->combine);
    put_u(&v, s->compress);
    msgpack_pack_array(pk, SINK_FIELDS);
    pack_fields(pk, &v);
    pack_fn(pk, &s->fn);
    pack_blob(pk, s->arg);
    pack_blob(pk, s->zero);
    pack_str(pk, s->path);
    pack_blob(pk, s->bounds);
    pack_agg(pk, &s->agg);
}

int taskdesc_encode(const task_desc *t, ebuf *out) {
    msgpack_packer pk;
    size_t start = out->len;
    fields v;
    v.n = 0;
    put_u(&v, t->task_id);
    put_u(&v, t->stage_id);
    put_u(&v, t->attempt);
    put_i(&v, t->partition);
    put_u(&v, t->mem_budget);
    put_u(&v, t->block_bytes);
    put_u(&v, t->max_record);
    put_u(&v, t->codec.id);
    put_i(&v, t->codec.level);
    put_u(&v, t->out_codec.id);
    put_i(&v, t->out_codec.level);
    msgpack_packer_init(&pk, out, write_cb);
    msgpack_pack_array(&pk, DESC_FIELDS);
    pack_str(&pk, MAGIC);
    pack_fields(&pk, &v);
    msgpack_pack_bin(&pk, 32);
    msgpack_pack_bin_body(&pk, t->binhash, 32);
    pack_str(&pk, t->faults);
    pack_str(&pk, t->faults_dir);
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

/* A bump arena: chunks chained through their first word, the first small
 * (a plain task's description fits it, and the allocator serves it from
 * its per-thread cache), each next one twice the last.  Allocations are
 * 16-byte aligned. */
typedef struct arena {
    struct chunk { struct chunk *next; size_t used, cap; } *head;
} arena;

#define ARENA_HDR ((sizeof(struct chunk) + 15) & ~(size_t)15)
#define ARENA_FIRST (1008 - ARENA_HDR)
#define ARENA_MAX_CHUNK ((size_t)64 << 10)

static void *arena_alloc(arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->head->cap - a->head->used < n) {
        size_t cap = !a->head ? ARENA_FIRST : a->head->cap < ARENA_MAX_CHUNK ? a->head->cap * 2 : ARENA_MAX_CHUNK;
        if (cap < n) cap = n;
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

/* A run of scalar fields being read: a failure names the structure. */
typedef struct rfields {
    const uint8_t *p, *end;
    const char *what;
} rfields;

static rfields get_fields(dec *d, const msgpack_object *o, const char *what) {
    rfields r = {NULL, NULL, what};
    if (o->type == MSGPACK_OBJECT_BIN) {
        r.p = (const uint8_t *)o->via.bin.ptr;
        r.end = r.p + o->via.bin.size;
    } else {
        FAIL(d, what);
    }
    return r;
}

/* One varint as varint_put writes it and nothing else (no overlong form,
 * nothing past 64 bits: a description decodes to one encoding).  The byte
 * after it, or NULL having failed with what. */
static const uint8_t *strict_varint(dec *d, const uint8_t *p, const uint8_t *end, uint64_t *v, const char *what) {
    if (p && p < end && *p < 0x80) { /* most fields: one byte */
        *v = *p;
        return p + 1;
    }
    size_t n = p ? varint_get(p, end, v) : 0;
    if (!n || (n > 1 && !p[n - 1]) || (n == VARINT_MAX && p[n - 1] > 1)) {
        *v = 0;
        FAIL(d, what);
        return NULL;
    }
    return p + n;
}

/* The next unsigned field, at most max. */
static uint64_t take_u(dec *d, rfields *r, uint64_t max) {
    uint64_t v;
    if (!(r->p = strict_varint(d, r->p, r->end, &v, r->what))) return 0;
    if (v > max) {
        FAIL(d, r->what);
        return 0;
    }
    return v;
}

/* The next signed field, in [min, max]. */
static int64_t take_i(dec *d, rfields *r, int64_t min, int64_t max) {
    uint64_t z = take_u(d, r, UINT64_MAX);
    int64_t v = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
    if (v < min || v > max) {
        FAIL(d, r->what);
        return 0;
    }
    return v;
}

/* Every field read, none left over. */
static void fields_end(dec *d, const rfields *r) {
    if (r->p != r->end) FAIL(d, r->what);
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

/* A block codec from its id and signed level: one the executor does not
 * know, or a level it does not take, fails the description. */
static bf_codec get_codec(dec *d, uint64_t id, int64_t level) {
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

/* nil, a bin of kind and offset, or [that bin, symbol] (FN_SYMBOL). */
static void get_fn(dec *d, const msgpack_object *o, fnref *f) {
    static const char *const bad = "bad function reference";
    memset(f, 0, sizeof *f);
    if (o->type == MSGPACK_OBJECT_NIL) return;
    const msgpack_object *a = o, *sym = NULL;
    if (o->type == MSGPACK_OBJECT_ARRAY) {
        if (!(a = arr(d, o, 2, bad))) return;
        sym = &a[1];
    }
    rfields r = get_fields(d, a, bad);
    f->kind = (uint8_t)take_u(d, &r, FN_LAST);
    f->off = take_u(d, &r, UINT64_MAX);
    fields_end(d, &r);
    if (sym) f->sym = get_str(d, sym);
    if ((f->kind == FN_SYMBOL) != (f->sym != NULL)) FAIL(d, bad);
}

static void get_agg(dec *d, const msgpack_object *o, aggdesc *g) {
    memset(g, 0, sizeof *g);
    if (o->type == MSGPACK_OBJECT_NIL) return;
    const msgpack_object *a = arr(d, o, AGG_FIELDS, "malformed aggregator");
    if (!a) return;
    rfields r = get_fields(d, &a[0], "malformed aggregator");
    g->has_zero = (uint8_t)take_u(d, &r, UINT8_MAX);
    g->rec_values = (uint8_t)take_u(d, &r, UINT8_MAX);
    fields_end(d, &r);
    get_fn(d, &a[1], &g->create);
    get_fn(d, &a[2], &g->merge_value);
    get_fn(d, &a[3], &g->merge_comb);
    g->arg = get_arg(d, &a[4]);
    g->zero = get_blob(d, &a[5]);
}

/* The plan is a flat list of nodes in pre-order, each giving its number of
 * children: nesting the tree itself would hit msgpack-c's fixed limit of
 * 32 nested containers at about 15 chained operators. */
typedef struct node_list {
    const msgpack_object *o;
    uint32_t n, next;
} node_list;

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
    rfields r = get_fields(d, &a[0], "malformed plan node");
    n->type = (uint8_t)take_u(d, &r, UINT8_MAX);
    n->op = (uint8_t)take_u(d, &r, UINT8_MAX);
    n->rdd_id = (int32_t)take_i(d, &r, INT32_MIN, INT32_MAX);
    n->partition = (int32_t)take_i(d, &r, INT32_MIN, INT32_MAX);
    uint64_t fraction = take_u(d, &r, UINT64_MAX);
    memcpy(&n->fraction, &fraction, sizeof fraction);
    n->seed = take_u(d, &r, UINT64_MAX);
    n->with_repl = (uint8_t)take_u(d, &r, UINT8_MAX);
    n->has_zero = (uint8_t)take_u(d, &r, UINT8_MAX);
    n->start = take_i(d, &r, INT64_MIN, INT64_MAX);
    n->count = take_u(d, &r, UINT64_MAX);
    n->step = take_i(d, &r, INT64_MIN, INT64_MAX);
    n->off = take_u(d, &r, UINT64_MAX);
    n->len = take_u(d, &r, UINT64_MAX);
    n->gz = (uint8_t)take_u(d, &r, UINT8_MAX);
    n->shuffle_id = (uint32_t)take_u(d, &r, UINT32_MAX);
    n->nmaps = (int32_t)take_i(d, &r, INT32_MIN, INT32_MAX);
    n->mode = (uint8_t)take_u(d, &r, UINT8_MAX);
    n->combined = (uint8_t)take_u(d, &r, UINT8_MAX);
    n->descending = (uint8_t)take_u(d, &r, UINT8_MAX);
    n->level = (uint8_t)take_u(d, &r, UINT8_MAX);
    n->cache_key = take_u(d, &r, UINT64_MAX);
    uint64_t nchild = take_u(d, &r, UINT32_MAX);
    fields_end(d, &r);
    get_fn(d, &a[1], &n->fn);
    n->arg = get_arg(d, &a[2]);
    n->data = get_blob(d, &a[3]);
    n->path = get_str(d, &a[4]);
    if (!d->what && n->type == PN_SHUFFLE) {
        static const char *const bad = "malformed shuffle locations";
        const msgpack_object *sl = n->nmaps >= 0 ? arr(d, &a[5], 2, bad) : NULL;
        if (!sl || sl[0].type != MSGPACK_OBJECT_ARRAY || sl[1].type != MSGPACK_OBJECT_BIN ||
            sl[1].via.bin.size < (uint64_t)n->nmaps * 3) {
            FAIL(d, bad);
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
            if (!(m = strict_varint(d, m, end, &li, bad)) || !(m = strict_varint(d, m, end, &atts[i], bad)) ||
                !(m = strict_varint(d, m, end, &lens[i], bad)))
                break;
            if (li > nloc) FAIL(d, "shuffle location index out of range");
            dirs[i] = li && !d->what ? locs[li - 1] : NULL;
        }
        if (!d->what && m != end) FAIL(d, bad);
        if (d->what) return NULL;
        n->dirs = dirs;
        n->attempts = atts;
        n->seglens = lens;
    }
    get_agg(d, &a[6], &n->agg);
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
    rfields r = get_fields(d, &a[0], "malformed sink");
    s->kind = (uint8_t)take_u(d, &r, UINT8_MAX);
    s->has_zero = (uint8_t)take_u(d, &r, UINT8_MAX);
    s->n = take_u(d, &r, UINT64_MAX);
    s->seed = take_u(d, &r, UINT64_MAX);
    s->descending = (uint8_t)take_u(d, &r, UINT8_MAX);
    s->shuffle_id = (uint32_t)take_u(d, &r, UINT32_MAX);
    s->nparts = (int32_t)take_i(d, &r, INT32_MIN, INT32_MAX);
    s->partitioner = (uint8_t)take_u(d, &r, UINT8_MAX);
    s->combine = (uint8_t)take_u(d, &r, UINT8_MAX);
    uint64_t codec = take_u(d, &r, UINT64_MAX);
    fields_end(d, &r);
    get_fn(d, &a[1], &s->fn);
    s->arg = get_arg(d, &a[2]);
    s->zero = get_blob(d, &a[3]);
    s->path = get_str(d, &a[4]);
    s->bounds = get_blob(d, &a[5]);
    get_agg(d, &a[6], &s->agg);
    if (codec > SAVE_GZIP) FAIL(d, "unknown save codec");
    s->compress = (uint8_t)codec;
    if (s->kind < SK_COLLECT || s->kind > SK_CHECKPOINT) FAIL(d, "unknown sink kind");
    if (s->kind == SK_SHUFFLE && s->nparts < 1) FAIL(d, "shuffle sink without partitions");
    if ((s->kind == SK_SAVE || s->kind == SK_CHECKPOINT) && !s->path) FAIL(d, "sink without path");
}

/* The first chunk of the object tree's zone: a plain task's couple of
 * dozen objects fit it, served from the allocator's per-thread cache. */
#define ZONE_FIRST 1000

int taskdesc_decode(uint8_t *bytes, size_t len, task_desc **out) {
    msgpack_object root;
    msgpack_zone zone;
    size_t off = 0;
    arena *ar = calloc(1, sizeof *ar);
    task_desc *t = NULL;
    dec d = {ar, NULL};
    *out = NULL;
    if (!ar || !msgpack_zone_init(&zone, ZONE_FIRST)) { /* nothing of the zone to free when it fails */
        free(ar);
        free(bytes);
        return em__seterr(EM_ENOMEM, "task description: out of memory");
    }
    /* msgpack_unpack, not msgpack_unpack_next: it fills the zone it is
     * given, where the other frees it and allocates its own 8 KB one. */
    if ((d.what = mp_precheck(bytes, len)) != NULL) {
        /* reported below */
    } else if (msgpack_unpack((const char *)bytes, len, &off, &zone, &root) != MSGPACK_UNPACK_SUCCESS || off != len) {
        d.what = "not one msgpack message";
    } else if ((t = arena_alloc(ar, sizeof *t)) == NULL) {
        d.what = "out of memory";
    } else {
        const msgpack_object *a = arr(&d, &root, DESC_FIELDS, "not a task description");
        if (a) {
            const char *magic = get_str(&d, &a[0]);
            if (!magic || strcmp(magic, MAGIC)) FAIL(&d, "bad magic");
            rfields r = get_fields(&d, &a[1], "malformed task header");
            t->task_id = take_u(&d, &r, UINT64_MAX);
            t->stage_id = (uint32_t)take_u(&d, &r, UINT32_MAX);
            t->attempt = (uint32_t)take_u(&d, &r, UINT32_MAX);
            t->partition = (int32_t)take_i(&d, &r, INT32_MIN, INT32_MAX);
            t->mem_budget = take_u(&d, &r, UINT64_MAX);
            t->block_bytes = take_u(&d, &r, UINT64_MAX);
            t->max_record = take_u(&d, &r, UINT64_MAX);
            uint64_t id = take_u(&d, &r, UINT64_MAX);
            int64_t level = take_i(&d, &r, INT64_MIN, INT64_MAX);
            uint64_t out_id = take_u(&d, &r, UINT64_MAX);
            int64_t out_level = take_i(&d, &r, INT64_MIN, INT64_MAX);
            fields_end(&d, &r);
            t->codec = get_codec(&d, id, level);
            t->out_codec = get_codec(&d, out_id, out_level);
            blob h = get_blob(&d, &a[2]);
            if (h.len == 32) memcpy(t->binhash, h.p, 32);
            else FAIL(&d, "bad binary hash");
            t->faults = get_str(&d, &a[3]);
            t->faults_dir = get_str(&d, &a[4]);
            get_sink(&d, &a[5], &t->sink);
            if (!d.what && a[6].type != MSGPACK_OBJECT_ARRAY) FAIL(&d, "malformed plan");
            if (!d.what) {
                node_list l = {a[6].via.array.ptr, a[6].via.array.size, 0};
                t->root = get_plan(&d, &l);
                if (!d.what && l.next != l.n) FAIL(&d, "malformed plan: nodes left over");
            }
        }
    }
    /* Bins point into `bytes`, which t owns from here; the msgpack zone
     * holds only the object tree we are done with. */
    msgpack_zone_destroy(&zone);
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
