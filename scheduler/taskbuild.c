/*
 * taskbuild.c -- plan trees from lineage (see taskbuild.h).
 *
 * Nodes borrow everything from the RDD graph and the map-output tracker,
 * and live only until the task is encoded: a plain task's fit in the
 * builder's room on the scheduler's stack, so only larger plans (and a
 * shuffle read's map lists) allocate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "srcdata.h"
#include "taskbuild.h"

/* Room for a plain task's nodes inside the builder, which lives on the
 * scheduler's stack: only larger plans allocate. */
#define BUILDER_ROOM 2048
#define BUILDER_STACK 16 /* the work stack's frames before it allocates */

typedef struct builder {
    mapout *mo;
    uint64_t ns;
    void **allocs;
    int n, cap;
    size_t used; /* of room */
    _Alignas(16) unsigned char room[BUILDER_ROOM];
} builder;

/* A node to build (below). */
typedef struct bwork bwork;

/* Zeroed memory freed with the builder; NULL with the message set. */
static void *balloc(builder *b, size_t sz) {
    size_t whole = (sz + 15) & ~(size_t)15;
    if (whole <= sizeof b->room - b->used) {
        void *p = b->room + b->used;
        b->used += whole;
        memset(p, 0, sz);
        return p;
    }
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 16;
        void **a = realloc(b->allocs, sizeof *a * (size_t)cap);
        if (!a) {
            em__seterr(EM_ENOMEM, "out of memory building a task");
            return NULL;
        }
        b->allocs = a;
        b->cap = cap;
    }
    void *p = calloc(1, sz);
    if (!p) em__seterr(EM_ENOMEM, "out of memory building a task");
    else b->allocs[b->n++] = p;
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
        if (!so->m[m].have || !so->m[m].sizes) {
            em__seterr(EM_ESTATE, "shuffle %u: map output %d is missing%s", r->shuffle_id, m,
                       so->m[m].have ? " its segment sizes" : "");
            return NULL;
        }
        /* The tracker's estimate (mapout.h), zero exactly when the map
         * wrote nothing for this partition, which then need not be read. */
        lens[m] = mo_seg(so, m, part);
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

/* A node to build: RDD r's partition part, stored into *slot. */
struct bwork {
    em_rdd *r;
    int part, use_cache;
    plan_node **slot;
};

/* Build one node for w and queue its inputs on the work stack.  0 or -1
 * (message set). */
static int build_one(builder *b, bwork w, bwork **st, int *n, int *cap, const bwork *first) {
    plan_node *nd = NULL;
    em_rdd *r = w.r;
    int part = w.part, use_cache = w.use_cache;
    /* A union is its parents' partitions side by side: no node of its own. */
    for (;;) {
        int level = __atomic_load_n(&r->persist_level, __ATOMIC_RELAXED); /* em_persist may run meanwhile */
        if ((use_cache && level) || r->kind != RDD_UNION) break;
        if (part < r->parent->nparts) {
            r = r->parent;
        } else {
            part -= r->parent->nparts;
            r = r->parent2;
        }
        use_cache = 1;
    }
    int level = __atomic_load_n(&r->persist_level, __ATOMIC_RELAXED);
    int nin = 0;          /* inputs to queue */
    em_rdd *in = NULL;    /* all from this RDD */
    int in_first = part;  /* from this partition on */
    int in_cache = 1;
    bwork pin[RDD_MAX_PARENTS]; /* RDD_PAIRED, RDD_COGROUP: inputs from several RDDs */
    int paired = 0;
    if (use_cache && level) {
        if (!(nd = node(b, r, part, PN_CACHED, 1))) return -1;
        nd->level = (uint8_t)level;
        nd->cache_key = b->ns;
        nin = 1;
        in = r;
        in_cache = 0;
    } else {
        switch (r->kind) {
        case RDD_RECS:
            /* By reference: the bytes never pass through the description. */
            if (!(nd = node(b, r, part, PN_RECS, 0))) return -1;
            nd->off = src_id(r->src);
            nd->len = src_part_len(r->src, part);
            nd->count = src_part_count(r->src, part);
            break;
        case RDD_RANGE:
            if (!(nd = node(b, r, part, PN_RANGE, 0))) return -1;
            range_slice(r, part, &nd->start, &nd->count);
            nd->step = r->step;
            break;
        case RDD_TEXT:
            if (!(nd = node(b, r, part, PN_TEXT, 0))) return -1;
            nd->path = r->splits[part].path;
            nd->off = r->splits[part].off;
            nd->len = r->splits[part].len;
            nd->gz = (uint8_t)r->splits[part].gz;
            break;
        case RDD_CHECKPOINT: {
            size_t plen = strlen(r->ckpt_dir) + 32;
            char *path = (nd = node(b, r, part, PN_CKPT, 0)) ? balloc(b, plen) : NULL;
            if (!path) return -1;
            snprintf(path, plen, "%s/part-%05d", r->ckpt_dir, part);
            nd->path = path;
            nd->len = r->ckpt_lens[part];
            break;
        }
        case RDD_OP:
            if (!(nd = node(b, r, part, PN_OP, 1))) return -1;
            nd->op = r->op;
            nd->fn = r->fn;
            nd->arg.p = r->arg;
            nd->arg.len = r->arglen;
            nd->fraction = r->fraction;
            nd->seed = r->seed;
            nd->with_repl = (uint8_t)r->with_repl;
            if (r->op == OP_ZIP_INDEX) nd->start = r->zip_starts[part];
            if (r->op == OP_UNIQUE_ID) {
                nd->start = part;
                nd->step = r->parent->nparts;
            }
            if (r->op == OP_AGG_LOCAL) {
                nd->mode = r->mode;
                nd->agg = r->agg; /* borrowed, as a shuffle read's */
            }
            if (r->op == OP_FOLD) {
                nd->has_zero = r->data != NULL;
                nd->data.p = r->data;
                nd->data.len = r->datalen;
            }
            nin = 1;
            in = r->parent;
            break;
        case RDD_COALESCE:
            nin = r->groups[part + 1] - r->groups[part];
            if (!(nd = node(b, r, part, PN_CONCAT, nin))) return -1;
            in = r->parent;
            in_first = r->groups[part];
            break;
        case RDD_SHUFFLED:
            if (!(nd = build_shuffle_read(b, r, part))) return -1;
            break;
        case RDD_PAIRED: {
            /* cartesian's partition p pairs p / nb with p % nb; zips p with p */
            int nb = r->parent2->nparts, cart = r->op == OP_CARTESIAN;
            if (!(nd = node(b, r, part, PN_PAIRED, 2))) return -1;
            nd->op = r->op;
            nd->fn = r->fn;
            nd->arg.p = r->arg;
            nd->arg.len = r->arglen;
            pin[0] = (bwork){r->parent, cart ? part / nb : part, 1, &nd->child[0]};
            pin[1] = (bwork){r->parent2, cart ? part % nb : part, 1, &nd->child[1]};
            nin = 2;
            paired = 1;
            break;
        }
        case RDD_COGROUP:
            /* Partition part of each dependency: a narrow one computed in
             * this task, a shuffle dependency read from its shuffle. */
            if (r->ndeps < 2 || r->ndeps > RDD_MAX_PARENTS || !(nd = node(b, r, part, PN_COGROUP, r->ndeps)))
                return -1;
            for (int i = 0; i < r->ndeps; i++) pin[i] = (bwork){r->deps[i], part, 1, &nd->child[i]};
            nin = r->ndeps;
            paired = 1;
            break;
        default:
            em__seterr(EM_ESTATE, "unknown RDD kind %d", r->kind);
            return -1;
        }
    }
    *w.slot = nd;
    if (*n + nin > *cap) {
        int c = (*n + nin) * 2;
        bwork *g = *st == first ? malloc(sizeof *g * (size_t)c) : realloc(*st, sizeof *g * (size_t)c);
        if (!g) {
            em__seterr(EM_ENOMEM, "out of memory building a task");
            return -1;
        }
        if (*st == first) memcpy(g, first, sizeof *g * (size_t)*n);
        *st = g;
        *cap = c;
    }
    for (int i = nin; i-- > 0;) (*st)[(*n)++] = paired ? pin[i] : (bwork){in, in_first + i, in_cache, &nd->child[i]};
    return 0;
}

/* The plan tree of rdd's partition part, built top-down over an explicit
 * work stack: a lineage of 10,000 narrow RDDs is 10,000 nodes deep, and
 * building it must not recurse.  NULL on failure (message set). */
static plan_node *build(builder *b, em_rdd *rdd, int part) {
    plan_node *root = NULL;
    bwork first[BUILDER_STACK], *st = first;
    int n = 0, cap = BUILDER_STACK;
    st[n++] = (bwork){rdd, part, 1, &root};
    while (n) {
        bwork w = st[--n];
        if (build_one(b, w, &st, &n, &cap, first)) {
            root = NULL;
            break;
        }
    }
    if (st != first) free(st);
    return root;
}

int taskbuild_encode(task_desc *t, em_rdd *rdd, int part, mapout *mo, uint64_t cache_ns, ebuf *out) {
    builder b; /* not zeroed whole: its room is zeroed as it is handed out */
    b.mo = mo;
    b.ns = cache_ns;
    b.allocs = NULL;
    b.n = b.cap = 0;
    b.used = 0;
    int rc = 0;
    em__clearerr();
    t->root = build(&b, rdd, part);
    if (!t->root) rc = em__lasterr(); /* every failure of build sets its message */
    else rc = taskdesc_encode(t, out);
    for (int i = 0; i < b.n; i++) free(b.allocs[i]);
    free(b.allocs);
    t->root = NULL;
    return rc;
}
