/*
 * taskbuild.c -- plan trees from lineage (see taskbuild.h).
 *
 * Nodes borrow everything from the RDD graph and the map-output tracker;
 * they are freed right after encoding, so building costs a few small
 * allocations per task.
 */
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "srcdata.h"
#include "taskbuild.h"

typedef struct builder {
    mapout *mo;
    uint64_t ns;
    void **allocs;
    int n, cap;
} builder;

static void *balloc(builder *b, size_t sz) {
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 16;
        void **a = realloc(b->allocs, sizeof *a * (size_t)cap);
        if (!a) return NULL;
        b->allocs = a;
        b->cap = cap;
    }
    void *p = calloc(1, sz);
    if (p) b->allocs[b->n++] = p;
    return p;
}

void range_slice(const em_rdd *r, int part, int64_t *first, uint64_t *count) {
    /* 128-bit arithmetic: the span of two int64 values needs 65 bits. */
    __int128 span = (__int128)r->end - r->start, n = 0;
    if (r->step > 0 && span > 0) n = (span + r->step - 1) / r->step;
    if (r->step < 0 && span < 0) n = (span + r->step + 1) / r->step;
    __int128 a = n * part / r->nparts, z = n * (part + 1) / r->nparts;
    /* n < 2^64, so the slice's values all fit in int64; the first is
     * computed only when there is one. */
    *first = a < z ? (int64_t)(r->start + a * r->step) : r->start;
    *count = (uint64_t)(z - a);
}

static plan_node *build(builder *b, em_rdd *r, int part, int use_cache);

static plan_node *node(builder *b, em_rdd *r, int part, uint8_t type, int nchild) {
    plan_node *n = balloc(b, sizeof *n);
    if (!n) return NULL;
    n->type = type;
    n->rdd_id = r->id;
    n->partition = part;
    n->nchild = nchild;
    if (nchild && !(n->child = balloc(b, sizeof(plan_node *) * (size_t)nchild))) return NULL;
    return n;
}

static plan_node *build_shuffle_read(builder *b, em_rdd *r, int part) {
    shuffle_out *so = mo_find(b->mo, r->shuffle_id);
    if (!so) {
        em__seterr(EM_ESTATE, "shuffle %u has no registered map outputs", r->shuffle_id);
        return NULL;
    }
    plan_node *n = node(b, r, part, PN_SHUFFLE, 0);
    const char **dirs = n ? balloc(b, sizeof(char *) * (size_t)(so->nmaps + 1)) : NULL;
    uint64_t *lens = dirs ? balloc(b, sizeof(uint64_t) * (size_t)(so->nmaps + 1)) : NULL;
    uint64_t *atts = lens ? balloc(b, sizeof(uint64_t) * (size_t)(so->nmaps + 1)) : NULL;
    if (!atts) return NULL;
    for (int m = 0; m < so->nmaps; m++) {
        if (!so->m[m].have || !so->m[m].seg) {
            em__seterr(EM_ESTATE, "shuffle %u: map output %d is missing%s", r->shuffle_id, m,
                       so->m[m].have ? " its segment sizes" : "");
            return NULL;
        }
        /* A map that wrote nothing for this partition need not be read. */
        lens[m] = so->m[m].seg[part];
        dirs[m] = lens[m] ? so->m[m].loc : NULL;
        atts[m] = so->m[m].attempt;
    }
    n->shuffle_id = r->shuffle_id;
    n->nmaps = so->nmaps;
    n->dirs = dirs;
    n->attempts = atts;
    n->seglens = lens;
    n->mode = r->mode;
    n->combined = r->combine;
    if (r->sides) n->sides = r->sides; /* cogroup */
    else n->descending = r->descending;
    n->agg = r->agg;
    return n;
}

static plan_node *build(builder *b, em_rdd *r, int part, int use_cache) {
    plan_node *n = NULL;
    int level = __atomic_load_n(&r->persist_level, __ATOMIC_RELAXED); /* em_persist may run meanwhile */
    if (use_cache && level) {
        if (!(n = node(b, r, part, PN_CACHED, 1))) return NULL;
        n->level = (uint8_t)level;
        n->cache_key = b->ns;
        return (n->child[0] = build(b, r, part, 0)) ? n : NULL;
    }
    switch (r->kind) {
    case RDD_RECS:
        /* By reference: the bytes never pass through the description. */
        if (!(n = node(b, r, part, PN_RECS, 0))) return NULL;
        n->off = src_id(r->src);
        n->len = src_part_len(r->src, part);
        n->count = src_part_count(r->src, part);
        return n;
    case RDD_RANGE:
        if (!(n = node(b, r, part, PN_RANGE, 0))) return NULL;
        range_slice(r, part, &n->start, &n->count);
        n->step = r->step;
        return n;
    case RDD_TEXT:
        if (!(n = node(b, r, part, PN_TEXT, 0))) return NULL;
        n->path = r->splits[part].path;
        n->off = r->splits[part].off;
        n->len = r->splits[part].len;
        n->gz = (uint8_t)r->splits[part].gz;
        return n;
    case RDD_OP:
        if (!(n = node(b, r, part, PN_OP, 1))) return NULL;
        n->op = r->op;
        n->fn = r->fn;
        n->arg.p = r->arg;
        n->arg.len = r->arglen;
        n->fraction = r->fraction;
        n->seed = r->seed;
        n->with_repl = (uint8_t)r->with_repl;
        if (r->op == OP_ZIP_INDEX) n->start = r->zip_starts[part];
        if (r->op == OP_UNIQUE_ID) {
            n->start = part;
            n->step = r->parent->nparts;
        }
        if (r->op == OP_FOLD) {
            n->has_zero = r->data != NULL;
            n->data.p = r->data;
            n->data.len = r->datalen;
        }
        return (n->child[0] = build(b, r->parent, part, 1)) ? n : NULL;
    case RDD_UNION:
        if (part < r->parent->nparts) return build(b, r->parent, part, 1);
        return build(b, r->parent2, part - r->parent->nparts, 1);
    case RDD_COALESCE: {
        int lo = r->groups[part], hi = r->groups[part + 1];
        if (!(n = node(b, r, part, PN_CONCAT, hi - lo))) return NULL;
        for (int i = lo; i < hi; i++)
            if (!(n->child[i - lo] = build(b, r->parent, i, 1))) return NULL;
        return n;
    }
    case RDD_SHUFFLED: return build_shuffle_read(b, r, part);
    case RDD_PAIRED: {
        int nb = r->parent2->nparts, pa = r->op == OP_CARTESIAN ? part / nb : part;
        int pb = r->op == OP_CARTESIAN ? part % nb : part;
        if (!(n = node(b, r, part, PN_PAIRED, 2))) return NULL;
        n->op = r->op;
        n->fn = r->fn;
        n->arg.p = r->arg;
        n->arg.len = r->arglen;
        if (!(n->child[0] = build(b, r->parent, pa, 1))) return NULL;
        return (n->child[1] = build(b, r->parent2, pb, 1)) ? n : NULL;
    }
    }
    em__seterr(EM_ESTATE, "unknown RDD kind %d", r->kind);
    return NULL;
}

int taskbuild_encode(task_desc *t, em_rdd *rdd, int part, mapout *mo, uint64_t cache_ns, ebuf *out) {
    builder b = {mo, cache_ns, NULL, 0, 0};
    int rc = 0;
    t->root = build(&b, rdd, part, 1);
    if (!t->root) rc = EM_ESTATE;
    else rc = taskdesc_encode(t, out);
    for (int i = 0; i < b.n; i++) free(b.allocs[i]);
    free(b.allocs);
    t->root = NULL;
    return rc;
}
