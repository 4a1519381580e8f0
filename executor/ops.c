/*
 * ops.c -- pipes for the narrow operators (map, filter, flat_map,
 * map_values, key_by, sample, zip_with_index, map_partitions, glom) and the
 * tee that stores a persisted partition while passing it on.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agg8.h"
#include "bigbuf.h"
#include "cache_room.h"
#include "err.h"
#include "fnref.h"
#include "pipe.h"
#include "recfmt.h"
#include "shuffle.h"

static int push_map(epipe *p, const em_rec *r) {
    p->em.in = r;
    p->em.count = 0;
    int rc = ((em_map_fn)p->fn)(r, &p->em, p->arg);
    if (rc < 0) return rc;
    if (p->em.count != 1 && rc != EM_STOP)
        return em__seterr(EM_EUSER, "map function emitted %lld records (map must emit exactly one; use flat_map)",
                          (long long)p->em.count);
    return rc;
}

static int push_flat_map(epipe *p, const em_rec *r) {
    p->em.in = r;
    p->em.count = 0;
    return ((em_map_fn)p->fn)(r, &p->em, p->arg);
}

static int push_filter(epipe *p, const em_rec *r) {
    int k = ((em_pred_fn)p->fn)(r, p->arg);
    if (k < 0) return k;
    return k ? p->next->h.push(p->next, r) : 0;
}

static int push_map_values(epipe *p, const em_rec *r) {
    if (!r->key) return em__seterr(EM_EUSER, "map_values/flat_map_values need pair records, got a plain record");
    em_rec v = {NULL, 0, r->val, r->vlen};
    p->em.in = r;
    p->em.count = 0;
    int rc = ((em_map_fn)p->fn)(&v, &p->em, p->arg);
    if (rc < 0) return rc;
    if (p->node->op == OP_MAP_VALUES && p->em.count != 1 && rc != EM_STOP)
        return em__seterr(EM_EUSER, "map_values function emitted %lld records (must emit exactly one)",
                          (long long)p->em.count);
    return rc;
}

static int push_key_by(epipe *p, const em_rec *r) {
    p->em.in = r;
    p->em.count = 0;
    int rc = ((em_map_fn)p->fn)(r, &p->em, p->arg);
    if (rc < 0) return rc;
    if (p->em.count != 1 && rc != EM_STOP)
        return em__seterr(EM_EUSER, "key_by function emitted %lld keys (must emit exactly one)", (long long)p->em.count);
    return rc;
}

/* A Poisson(lambda) draw for any lambda >= 0.  Knuth's product method
 * (multiply uniforms until the product falls below e^-lambda) is exact but
 * e^-lambda underflows for large lambda, so the draw is made in pieces of
 * at most 16 (Poisson(a + b) = Poisson(a) + Poisson(b)).  The work is
 * proportional to lambda, as is the number of copies the caller emits. */
static uint64_t poisson(uint64_t *s, double lambda) {
    uint64_t k = 0;
    while (lambda > 0) {
        double piece = lambda < 16 ? lambda : 16, l = exp(-piece), pr = rng_double(s);
        lambda -= piece;
        while (pr > l) {
            k++;
            pr *= rng_double(s);
        }
    }
    return k;
}

static int push_sample(epipe *p, const em_rec *r) {
    const plan_node *n = p->node;
    if (!n->with_repl) return rng_double(&p->rng) < n->fraction ? p->next->h.push(p->next, r) : 0;
    for (uint64_t k = poisson(&p->rng, n->fraction); k > 0; k--) {
        int rc = p->next->h.push(p->next, r);
        if (rc) return rc;
    }
    return 0;
}

static int push_zip_index(epipe *p, const em_rec *r) {
    uint8_t b[8];
    if (r->key) return em__seterr(EM_EUSER, "zip_with_index takes plain records, got a pair");
    em_i64_enc(p->node->start + p->n++, b);
    em_rec o = {r->val, r->vlen, b, 8};
    return p->next->h.push(p->next, &o);
}

/* Spark's zipWithUniqueId: the i-th record of partition k of n gets
 * k + i * n (in unsigned arithmetic: ids past the int64 range wrap rather
 * than overflow, which only 2^63 records could reach). */
static int push_unique_id(epipe *p, const em_rec *r) {
    uint8_t b[8];
    if (r->key) return em__seterr(EM_EUSER, "zip_with_unique_id takes plain records, got a pair");
    em_i64_enc((int64_t)((uint64_t)p->node->start + (uint64_t)p->n++ * (uint64_t)p->node->step), b);
    em_rec o = {r->val, r->vlen, b, 8};
    return p->next->h.push(p->next, &o);
}

/* random_split: every split draws the same uniform per record (the same
 * seed per partition), and keeps the records whose draw falls in its own
 * range, so the splits are disjoint and together hold every record. */
static int push_split(epipe *p, const em_rec *r) {
    double lo, hi, x = rng_double(&p->rng);
    memcpy(&lo, p->node->arg.p, 8);
    memcpy(&hi, p->node->arg.p + 8, 8);
    return x >= lo && x < hi ? p->next->h.push(p->next, r) : 0;
}

/* OP_FOLD: buf holds the accumulator (an encoded record, from the zero). */
static int push_fold(epipe *p, const em_rec *r) {
    em_rec acc;
    if (!p->n) { /* no zero: the first record is the accumulator */
        p->n = 1;
        return rec_append(&p->buf, r);
    }
    if (rec_get(p->buf.p, p->buf.p + p->buf.len, &acc) != p->buf.len)
        return em__seterr(EM_ECORRUPT, "aggregate: bad accumulator");
    ebuf_reset(&p->buf2);
    p->em.buf = &p->buf2;
    p->em.count = 0;
    int rc = ((em_comb_fn)p->fn)(&acc, r, &p->em, p->arg);
    if (rc < 0) return rc;
    if (p->em.count != 1)
        return em__seterr(EM_EUSER, "an aggregate function emitted %lld records (must be 1)", (long long)p->em.count);
    ebuf t = p->buf;
    p->buf = p->buf2;
    p->buf2 = t;
    return 0;
}

static int end_fold(epipe *p) {
    if (!p->n) return 0; /* empty partition, no zero: no partial */
    em_rec o = {NULL, 0, p->buf.p, p->buf.len};
    int rc = p->next->h.push(p->next, &o);
    return rc < 0 ? rc : 0;
}

/* map_partitions, glom, and the cache tee collect their input. */
static int push_collect(epipe *p, const em_rec *r) { return rec_append(&p->buf, r); }

/* map_partitions: a batch kept in place (push_collect_batch) goes into the
 * buffer before anything is added after it. */
static int unlend(epipe *p) {
    if (!p->lent) return 0;
    if (ebuf_append(&p->buf, p->lent, p->lent_len)) return EM_ENOMEM;
    p->lent = NULL;
    return 0;
}

static int push_collect_mp(epipe *p, const em_rec *r) {
    int rc = unlend(p);
    return rc ? rc : rec_append(&p->buf, r);
}

static int push_glom(epipe *p, const em_rec *r) {
    if (ebuf_put_varint(&p->buf, rec_encoded_size(r))) return EM_ENOMEM;
    return rec_append(&p->buf, r);
}

/* map_partitions fed whole batches: the first is kept as it is when it
 * outlives the pipe (a cached partition: no copy of the partition), and
 * copied only when another one follows.  Each batch's records are walked
 * first, so a malformed one fails the task as record by record. */
static int push_collect_batch(epipe *p, const uint8_t *b, size_t len, uint64_t *nrec) {
    em_rec r;
    uint64_t n = 0;
    for (const uint8_t *q = b, *end = b + len; q < end; n++) {
        size_t k = rec_get(q, end, &r);
        if (!k) return em__seterr(EM_ECORRUPT, "malformed record in a batch");
        q += k;
    }
    *nrec += n;
    if (p->batches_live && !p->buf.len && !p->lent) {
        p->lent = b;
        p->lent_len = len;
        return 0;
    }
    if (unlend(p)) return EM_ENOMEM;
    return ebuf_append(&p->buf, b, len) ? EM_ENOMEM : 0;
}

static int end_map_partitions(epipe *p) {
    em_iter it;
    if (p->lent) iter_init(&it, p->lent, p->lent_len);
    else iter_init(&it, p->buf.p, p->buf.len);
    int rc = ((em_part_fn)p->fn)(p->node->partition, &it, &p->em, p->arg);
    return rc < 0 ? rc : 0;
}

static int end_glom(epipe *p) {
    em_rec o = {NULL, 0, p->buf.p ? p->buf.p : (const uint8_t *)"", p->buf.len};
    int rc = p->next->h.push(p->next, &o);
    return rc < 0 ? rc : 0;
}

static int end_none(epipe *p) { return 0; }

/* ------------------------------------------------------ paired operators
 * Child 1's records are held in buf2 (paired_side_new), then child 0's
 * stream through push. */

static int push_cartesian(epipe *p, const em_rec *a) {
    em_rec b;
    const uint8_t *q = p->buf2.p, *end = q + p->buf2.len;
    if (a->key) return em__seterr(EM_EUSER, "cartesian takes plain records, got a pair in the first RDD");
    while (q < end) {
        size_t k = rec_get(q, end, &b);
        if (!k) return em__seterr(EM_ECORRUPT, "cartesian: malformed held record");
        if (b.key) return em__seterr(EM_EUSER, "cartesian takes plain records, got a pair in the second RDD");
        em_rec o = {a->val, a->vlen, b.val, b.vlen};
        int rc = p->next->h.push(p->next, &o);
        if (rc) return rc;
        q += k;
    }
    return 0;
}

/* p->n: records of the first input so far; p->buf.len is the read
 * position in the held second input. */
static int64_t held_count(const epipe *p) {
    int64_t n = 0;
    const uint8_t *q = p->buf2.p, *end = q + p->buf2.len;
    em_rec b;
    size_t k;
    while (q < end && (k = rec_get(q, end, &b))) {
        q += k;
        n++;
    }
    return n;
}

static int zip_mismatch(epipe *p) {
    return em__seterr(EM_EUSER,
                      "zip: partition %d has %lld records in the first RDD and %lld in the second (zip needs "
                      "as many records in each pair of partitions)",
                      p->node->partition, (long long)p->n, (long long)held_count(p));
}

static int push_zip(epipe *p, const em_rec *a) {
    em_rec b;
    const uint8_t *q = p->buf2.p + p->buf.len, *end = p->buf2.p + p->buf2.len;
    p->n++;
    if (p->stopped) return 0; /* only counting, to name the sizes */
    if (a->key) return em__seterr(EM_EUSER, "zip takes plain records, got a pair in the first RDD");
    if (q >= end) {
        p->stopped = 2; /* the second ran out: count the rest of the first */
        return 0;
    }
    size_t k = rec_get(q, end, &b);
    if (!k) return em__seterr(EM_ECORRUPT, "zip: malformed held record");
    if (b.key) return em__seterr(EM_EUSER, "zip takes plain records, got a pair in the second RDD");
    p->buf.len += k;
    em_rec o = {a->val, a->vlen, b.val, b.vlen};
    int rc = p->next->h.push(p->next, &o);
    if (rc == EM_STOP) p->stopped = 1;
    return rc;
}

static int end_zip(epipe *p) {
    if (p->stopped == 1) return 0; /* the consumer had enough */
    if (p->stopped == 2 || p->buf.len != p->buf2.len) return zip_mismatch(p);
    return 0;
}

static int end_zip_partitions(epipe *p) {
    em_iter a, b;
    iter_init(&a, p->buf.p, p->buf.len);
    iter_init(&b, p->buf2.p, p->buf2.len);
    int rc = ((em_zip_part_fn)p->fn)(p->node->partition, &a, &b, &p->em, p->arg);
    return rc < 0 ? rc : 0;
}

static int push_side(epipe *s, const em_rec *r) {
    return rec_append(&s->next->buf2, r) ? em__seterr(EM_ENOMEM, "out of memory holding a partition") : 0;
}

void pipe_free(epipe *p) {
    if (!p) return;
    if (p->free) p->free(p);
    ebuf_free(&p->buf);
    ebuf_free(&p->buf2);
    free(p);
}

epipe *pipe_alloc(task_run *run, const plan_node *n, epipe *next) {
    epipe *p = calloc(1, sizeof *p);
    if (!p) {
        em__seterr(EM_ENOMEM, "out of memory");
        return NULL;
    }
    p->run = run;
    p->node = n;
    p->next = next;
    return p;
}

epipe *paired_side_new(epipe *paired) {
    epipe *p = pipe_alloc(paired->run, paired->node, paired);
    if (p) {
        p->h.push = push_side;
        p->end = end_none;
    }
    return p;
}

/* ------------------------------------------- aggregation in place */

/* reduce_by_key, group_by_key and friends over an RDD already
 * hash-partitioned into as many partitions: the partition's records go to
 * a reduce task's aggregation or grouping (shuffle.h, sr_local) in blocks,
 * and its result goes on at the end.  A cogroup partition (below) uses the
 * same state and ends. */
typedef struct local_agg {
    agg_run ar;
    agg_spec spec;
    sr_local *l;
    int side; /* cogroup: the input being read */
} local_agg;

static int local_flush(epipe *p) {
    local_agg *g = p->state;
    if (!p->buf.len) return 0;
    int rc = sr_local_block(g->l, p->buf.p, p->buf.len);
    ebuf_reset(&p->buf);
    return rc;
}

static int push_local_agg(epipe *p, const em_rec *r) {
    if (rec_append(&p->buf, r)) return em__seterr(EM_ENOMEM, "out of memory");
    return p->buf.len >= p->run->t->block_bytes ? local_flush(p) : 0;
}

static int to_next(void *ctx, const em_rec *r) {
    epipe *p = ctx;
    return p->next->h.push(p->next, r);
}

static int end_local_agg(epipe *p) {
    local_agg *g = p->state;
    int rc = local_flush(p);
    if (!rc) rc = sr_local_finish(g->l, to_next, p, &p->run->res->spills);
    return rc < 0 ? rc : 0;
}

static void free_local_agg(epipe *p) {
    local_agg *g = p->state;
    if (!g) return;
    sr_local_free(g->l);
    free(g);
}

/* The task's limits, as a reduce task of it would have them. */
static void local_opts(const task_run *run, sr_opts *o) {
    o->max_record = run->max_record;
    o->mem_budget = run->t->mem_budget;
    o->spill_dir = run->env->local_dir;
    o->codec = run->t->codec;
    o->block_bytes = run->t->block_bytes;
}

static int local_agg_init(epipe *p, task_run *run, const plan_node *n) {
    local_agg *g = calloc(1, sizeof *g);
    if (!g) return em__seterr(EM_ENOMEM, "out of memory");
    p->state = g;
    p->free = free_local_agg;
    sr_opts o;
    memset(&o, 0, sizeof o);
    o.mode = (enum sr_mode)n->mode;
    if (o.mode == SR_AGG) {
        int rc = agg_run_init(&g->ar, &n->agg, run->max_record, &g->spec);
        if (rc) return rc;
        o.agg = &g->spec;
    }
    o.map_side_combined = 0; /* values, as they come */
    o.table_seed = AGG8_SEED(AGG8_LOCAL, n->rdd_id);
    local_opts(run, &o);
    return (g->l = sr_local_open(&o)) ? 0 : em__lasterr();
}

/* ----------------------------------------------------------- cogroup */

/* A cogroup partition (PN_COGROUP): every input's records, their values
 * tagged with the input's side, go to a reduce task's cogroup grouping
 * (shuffle.h, sr_local, mode SR_COGROUP) in blocks; the groups go on at
 * the end. */
static int push_cogroup(epipe *p, const em_rec *r) {
    local_agg *g = p->state;
    uint8_t tag = (uint8_t)g->side;
    if (!r->key) return em__seterr(EM_EINVAL, "cogroup/join: the record is not a pair");
    ebuf_reset(&p->buf2);
    if (ebuf_append(&p->buf2, &tag, 1) || ebuf_append(&p->buf2, r->val, r->vlen))
        return em__seterr(EM_ENOMEM, "out of memory");
    em_rec t = {r->key, r->klen, p->buf2.p, p->buf2.len};
    if (rec_append(&p->buf, &t)) return em__seterr(EM_ENOMEM, "out of memory");
    return p->buf.len >= p->run->t->block_bytes ? local_flush(p) : 0;
}

epipe *cogroup_pipe_new(task_run *run, const plan_node *n, epipe *next) {
    epipe *p = pipe_alloc(run, n, next);
    local_agg *g = p ? calloc(1, sizeof *g) : NULL;
    if (!g) {
        if (p) em__seterr(EM_ENOMEM, "out of memory");
        pipe_free(p);
        return NULL;
    }
    p->state = g;
    p->free = free_local_agg;
    p->h.push = push_cogroup;
    p->end = end_local_agg;
    sr_opts o;
    memset(&o, 0, sizeof o);
    o.mode = SR_COGROUP;
    o.sides = n->nchild;
    local_opts(run, &o);
    if (!(g->l = sr_local_open(&o))) {
        pipe_free(p);
        return NULL;
    }
    return p;
}

void cogroup_pipe_side(epipe *p, int side) { ((local_agg *)p->state)->side = side; }

epipe *op_pipe_new(task_run *run, const plan_node *n, epipe *next) {
    epipe *p = pipe_alloc(run, n, next);
    if (!p) return NULL;
    p->end = end_none;
    p->arg = n->arg.len ? n->arg.p : NULL;
    emitter_init(&p->em, EMIT_PUSH, next, run->max_record);
    if (n->op == OP_SPLIT && n->arg.len != 16) {
        free(p);
        em__seterr(EM_EPROTO, "random_split: bad bounds");
        return NULL;
    }
    if (n->op != OP_SAMPLE && n->op != OP_ZIP_INDEX && n->op != OP_GLOM && n->op != OP_UNIQUE_ID &&
        n->op != OP_SPLIT && n->op != OP_CARTESIAN && n->op != OP_ZIP && n->op != OP_AGG_LOCAL) {
        if (!(p->fn = fnref_resolve(&n->fn))) {
            free(p);
            return NULL;
        }
    }
    switch (n->op) {
    case OP_MAP: p->h.push = push_map; break;
    case OP_FLAT_MAP: p->h.push = push_flat_map; break;
    case OP_FILTER: p->h.push = push_filter; break;
    case OP_MAP_VALUES:
    case OP_FLAT_MAP_VALUES:
        p->h.push = push_map_values;
        p->em.mode = EMIT_REKEY;
        break;
    case OP_KEY_BY:
        p->h.push = push_key_by;
        p->em.mode = EMIT_KEYBY;
        break;
    case OP_SAMPLE:
        p->h.push = push_sample;
        p->rng = n->seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(n->partition + 1));
        break;
    case OP_ZIP_INDEX: p->h.push = push_zip_index; break;
    case OP_UNIQUE_ID: p->h.push = push_unique_id; break;
    case OP_CARTESIAN: p->h.push = push_cartesian; break;
    case OP_ZIP:
        p->h.push = push_zip;
        p->end = end_zip;
        break;
    case OP_ZIP_PARTITIONS:
        p->h.push = push_collect;
        p->end = end_zip_partitions;
        break;
    case OP_SPLIT:
        p->h.push = push_split;
        p->rng = n->seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(n->partition + 1));
        break;
    case OP_MAP_PARTITIONS:
        p->h.push = push_collect_mp;
        p->push_batch = push_collect_batch;
        p->end = end_map_partitions;
        break;
    case OP_GLOM:
        p->h.push = push_glom;
        p->end = end_glom;
        break;
    case OP_FOLD:
        p->h.push = push_fold;
        p->end = end_fold;
        p->em.mode = EMIT_RECORD;
        p->n = n->has_zero;
        if (n->has_zero && ebuf_append(&p->buf, n->data.p, n->data.len)) {
            free(p);
            em__seterr(EM_ENOMEM, "out of memory");
            return NULL;
        }
        break;
    case OP_AGG_LOCAL:
        p->h.push = push_local_agg;
        p->end = end_local_agg;
        if (local_agg_init(p, run, n)) {
            pipe_free(p);
            return NULL;
        }
        break;
    default:
        free(p);
        em__seterr(EM_EPROTO, "unknown operator %d", n->op);
        return NULL;
    }
    /* One record out for each in: a count told from below holds here. */
    if (next->expect && (n->op == OP_MAP || n->op == OP_MAP_VALUES || n->op == OP_KEY_BY ||
                         n->op == OP_ZIP_INDEX || n->op == OP_UNIQUE_ID))
        p->expect = pipe_expect_forward;
    return p;
}

/* The cache tee: keeps every record, and passes records on until the
 * consumer stops (a persisted partition is always computed whole).
 *
 * Records are kept in one bigbuf.h buffer: past 2 MiB it is a mapping that
 * grows with mremap (pages move, bytes are not copied), and when the block
 * store drops the block the mapping goes to bigbuf's cache, so the next
 * partition cached -- after an unpersist, or by the next task of a job that
 * caches and releases data sets -- reuses its pages instead of faulting in
 * and clearing fresh ones. */
typedef struct tee_state {
    ebuf keep;
} tee_state;

static uint64_t kept_in_place; /* records, process-wide (cache_room_kept) */

static int push_tee(epipe *p, const em_rec *r) {
    tee_state *t = p->state;
    size_t need = rec_encoded_size(r);
    uint8_t *at = t->keep.p + t->keep.len;
    if (!r->key && t->keep.p && t->keep.cap - t->keep.len >= need && r->val == at + 1 + varint_len(r->vlen)) {
        /* Laid out in place (cache_room): only the length goes in front. */
        at[0] = 0;
        varint_put(at + 1, r->vlen);
        t->keep.len += need;
        __atomic_fetch_add(&kept_in_place, 1, __ATOMIC_RELAXED);
    } else {
        if (bb_reserve_kept(&t->keep, need)) return em__seterr(EM_ENOMEM, "cache: out of memory");
        t->keep.len += rec_put(t->keep.p + t->keep.len, r);
    }
    if (p->stopped) return 0;
    int rc = p->next->h.push(p->next, r);
    if (rc == EM_STOP) {
        p->stopped = 1;
        return 0;
    }
    return rc;
}

/* cache_room (emit.h) on the emitter of the pipe before the tee. */
static int room_tee(epipe *p, size_t len, size_t keep, uint8_t **at) {
    if (keep > len) return em__seterr(EM_EINVAL, "cache: %zu bytes to carry in a room of %zu", keep, len);
    tee_state *t = p->state;
    /* Reserve with the carried bytes counted as held, so that a grown
     * buffer (moved pages, or a cached mapping the bytes are copied to)
     * keeps them. */
    size_t held = t->keep.len;
    t->keep.len += keep;
    int rc = bb_reserve_kept(&t->keep, len - keep);
    t->keep.len = held;
    if (rc) return em__seterr(EM_ENOMEM, "cache: out of memory for a %zu-byte record", len);
    *at = t->keep.p + held;
    return 0;
}

uint64_t cache_room_kept(void) { return __atomic_load_n(&kept_in_place, __ATOMIC_RELAXED); }

static void release_tee(void *arg) {
    tee_state *t = arg;
    bb_free(&t->keep);
    free(t);
}

static int end_tee(epipe *p) {
    tee_state *t = p->state;
    if (!t->keep.p && bb_reserve_kept(&t->keep, 1)) return em__seterr(EM_ENOMEM, "cache: out of memory");
    bb_shrink(&t->keep); /* a reused mapping may be far larger than the partition */
    p->state = NULL; /* the store owns the buffer from here, whatever it returns */
    int rc = bs_put_shared(p->run->env->store, p->node->cache_key, p->node->rdd_id, p->node->partition,
                           p->node->level, t->keep.p, t->keep.len, release_tee, t);
    if (!rc) run_note_cached(p->run, p->node);
    return rc;
}

static void free_tee(epipe *p) {
    if (p->state) release_tee(p->state);
}

epipe *cache_tee_new(task_run *run, const plan_node *n, epipe *next) {
    epipe *p = pipe_alloc(run, n, next);
    if (!p) return NULL;
    if (!(p->state = calloc(1, sizeof(tee_state)))) {
        free(p);
        em__seterr(EM_ENOMEM, "out of memory");
        return NULL;
    }
    p->h.push = push_tee;
    p->h.room = room_tee;
    if (next->expect) p->expect = pipe_expect_forward;
    p->end = end_tee;
    p->free = free_tee;
    return p;
}
