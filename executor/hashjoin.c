/*
 * hashjoin.c -- a join's cogroup partition as a hash join (hashjoin.h).
 *
 * The table: keys longer than 8 bytes and all values live in one arena (an
 * ebuf; offsets, not pointers, so it may move as it grows).  A value is a
 * node
 *
 *     next (8 bytes: arena offset + 1 of the key's next value, 0 none)
 *     len (4 bytes)  the value's bytes
 *
 * The table is open addressing with linear probing over entries of 32
 * bytes (two a cache line), so a probe's first look is one line: an entry
 * holds a key's whole hash, the key itself when it has at most 8 bytes
 * (else its arena offset), its length, whether a streamed record matched
 * it (kept for an outer join that emits the built side's unmatched keys;
 * an inner join's probe leaves it 0), and its values: a key's lone value of at most 8 bytes in the entry
 * itself (the common case of a table of distinct keys: a match then reads
 * no arena), else the offset of its first value node.  The last value node
 * of each key, needed only while building, is in an array of its own.
 * Partitioning uses the hash's value modulo the partition count, so within
 * one partition its low bits are alike: slots are chosen by the high bits.
 * The table is kept at most half full.
 *
 * A probe costs a cache miss for its entry when the table is not in cache,
 * and one more for its first value node when the values are not in the
 * entry, so the streamed records go through a short FIFO, as aggahead.h's:
 * each is hashed on arrival and its home entry prefetched; HJ_VALUE_AHEAD
 * records before its turn its first value node is prefetched (when the
 * home entry is its key's); it is joined HJ_DEPTH records after it
 * arrived.  A record pushed alone is copied (the caller's bytes do not
 * outlive its push): into the queue's slot, or, past HJ_INLINE bytes (a
 * key's list of neighbours, as PageRank streams its links), into a buffer
 * the slot keeps for the next long record; only records past HJ_QUEUE_MAX
 * are joined at once, the queue drained first.  A record of a batch
 * (pipe.h's push_batch: a cached block, parallelized records), whose bytes
 * stay put until the batch's push returns, is queued as pointers into it
 * when longer than HJ_INLINE, and the queue is drained before that return:
 * the links of a PageRank iteration are not copied.  Records are joined in
 * arrival order, so the output is the same as joining each at once.  (On
 * bench/shuffle's join, 10M x 1M, an earlier form -- a slot array of
 * indexes into an entry array, values always in the arena -- spent half
 * the reduce side waiting for entries and values despite its prefetches,
 * and used more CPU than the sort-based cogroup.)
 *
 * The compact build side.  While every build record has one key width of
 * at most 8 bytes, one value width of at most 8 bytes and a key of its own
 * (a join with an aggregation's output or a key's one attribute, as
 * PageRank's ranks), and the join does not keep the build side's
 * unmatched keys, the table is an agg8 (agg8.h): 16-byte slots of the
 * key's and the value's words, slotted by the key word's multiplicative
 * hash, no em_hash and no arena.  The general entry and its last-node
 * word take 40 bytes a slot; a table of 125,000 keys is 10 MB there and
 * 4 MB here, and a lookup's cost grows with its table's bytes, past the
 * caches' and the TLB's reach (bench/pagerank's model floor, its join's
 * slots padded to 32 and 64 bytes, took 2 and 4 times as long as over 16:
 * bench/RESULTS.md).  The first build record that does
 * not fit -- another width, a longer key or value, a key's second value --
 * moves every key to the general table, which takes every record from
 * then on; records still queued are hashed again.  Streamed records probe
 * whichever table holds the build side.
 */
#include <stdlib.h>
#include <string.h>

#include "agg8.h"
#include "bigbuf.h"
#include "builtins.h"
#include "curmetrics.h"
#include "err.h"
#include "hashjoin.h"
#include "recfmt.h"

typedef struct hj_entry {
    uint64_t hash;
    union {
        uint8_t inl[8]; /* klen <= 8: the key */
        uint64_t off;   /* else its arena offset */
    } key;
    union {
        uint8_t inl[8]; /* vinl: the key's one value */
        uint64_t first; /* else the arena offset of its first value node */
    } val;
    uint32_t klen;
    uint8_t full; /* the slot holds a key */
    uint8_t matched;
    uint8_t vinl; /* 1 + the length of a lone value of at most 8 bytes held
                     in val; 0: the values are nodes */
} hj_entry;

#define HJ_DEPTH 32       /* streamed records in flight (a power of two) */
#define HJ_VALUE_AHEAD 8  /* records between a first value's prefetch and its join */
#define HJ_INLINE 48      /* key + value bytes a queued record holds */
#define HJ_QUEUE_MAX 65536 /* longer records are joined at once, after a drain */

typedef struct hj_pend {
    uint64_t hash;
    uint32_t klen, vlen;
    uint8_t b[HJ_INLINE]; /* key, then value */
} hj_pend;                /* 64 bytes */

typedef struct hashjoin {
    int build, side; /* side: the input being pushed */
    int keep_build, keep_stream;
    size_t budget;
    ebuf arena, entb, lastb; /* bigbuf.h's: the arena, ent's and last's memory */
    hj_entry *ent;  /* the slots: mask + 1 entries, full or empty */
    uint64_t *last; /* per slot: its key's last value node (building) */
    size_t nent;    /* full slots */
    size_t mask;    /* slots - 1; 0 before the first insert */
    unsigned head, n;
    int lent;         /* the records pushed point into a batch being pushed */
    uint32_t pointed; /* bit i: q[i] holds pointers into that batch */
    uint64_t nlent;   /* records queued so in this batch (hashjoin_by_address) */
    hj_pend q[HJ_DEPTH];
    ebuf qlong[HJ_DEPTH]; /* the bytes of a queued record over HJ_INLINE */
    ebuf tuple; /* the join value being emitted */
    epipe *join_op;
    epipe *cg; /* the fallback cogroup, once the table passed the budget */
    size_t peak; /* the table's bytes when it was given up */
    int compact;  /* the build side is in t8 (the compact build side above) */
    int kw, vw;   /* t8's key and value widths, -1 before its first record */
    agg8 t8;
} hashjoin;

#define NODE_HEAD 12
#define NONE UINT64_MAX

int hashjoin_kind(const epipe *join_op, const plan_node *cogroup) {
    const plan_node *n = join_op ? join_op->node : NULL;
    if (!n || cogroup->type != PN_COGROUP || cogroup->nchild != 2 || n->type != PN_OP ||
        n->op != OP_FLAT_MAP_VALUES || join_op->fn != (void *)bi_join || n->arg.len != 1 || n->arg.p[0] > 3)
        return -1;
    return n->arg.p[0];
}

/* The bytes a cogroup input reads, or -1 when it is not a shuffle read
 * with known segment sizes.  The sizes are the map-output tracker's
 * estimates (within about 10% each, or a map output's average over its
 * segments of a wide shuffle): enough to tell the smaller side, which is
 * all they choose; the table still holds to its budget whatever it meets
 * (hashjoin.h). */
static int64_t input_bytes(const plan_node *c) {
    if (c->type != PN_SHUFFLE || !c->seglens) return -1;
    uint64_t sum = 0;
    for (int m = 0; m < c->nmaps; m++) sum += c->seglens[m];
    return sum > INT64_MAX ? INT64_MAX : (int64_t)sum;
}

int hashjoin_build_side(const plan_node *cogroup) {
    int64_t a = input_bytes(cogroup->child[0]), b = input_bytes(cogroup->child[1]);
    return a >= 0 && b >= 0 && a < b ? 0 : 1;
}

/* What the table holds, against the budget: the arena's bytes in use (not
 * its capacity: bigbuf may hand over a parked mapping several times the
 * size asked, which would turn the table to the sort path for nothing)
 * and the slots. */
static size_t table_bytes(const hashjoin *h) {
    return h->arena.len + (h->mask ? (h->mask + 1) * (sizeof(hj_entry) + sizeof(uint64_t)) : 0) +
           (h->t8.mask ? (h->t8.mask + 1) * sizeof(agg8_slot) : 0);
}

static const uint8_t *entry_key(const hashjoin *h, const hj_entry *e) {
    return e->klen <= 8 ? e->key.inl : h->arena.p + e->key.off;
}

/* The table's memory comes from bigbuf.h, whose mappings (page-aligned,
 * so two entries a cache line) keep their pages from one task to the
 * next: a table built per task would otherwise fault in and clear every
 * page again. */
static int resize_slots(hashjoin *h, size_t n) {
    ebuf eb = EBUF_INIT, lb = EBUF_INIT;
    if (bb_reserve(&eb, n * sizeof(hj_entry)) || bb_reserve(&lb, n * sizeof(uint64_t))) {
        bb_free(&eb);
        return em__seterr(EM_ENOMEM, "join: out of memory");
    }
    hj_entry *s = (hj_entry *)eb.p;
    uint64_t *l = (uint64_t *)lb.p;
    memset(s, 0, n * sizeof *s); /* a reused mapping holds old bytes */
    for (size_t i = 0; h->mask && i <= h->mask; i++) {
        if (!h->ent[i].full) continue;
        size_t j = (size_t)(h->ent[i].hash >> 32) & (n - 1);
        while (s[j].full) j = (j + 1) & (n - 1);
        s[j] = h->ent[i];
        l[j] = h->last[i];
    }
    bb_free(&h->entb);
    bb_free(&h->lastb);
    h->entb = eb;
    h->lastb = lb;
    h->ent = s;
    h->last = l;
    h->mask = n - 1;
    return 0;
}

static uint64_t regrown; /* hashjoin_regrown */

uint64_t hashjoin_regrown(void) { return __atomic_load_n(&regrown, __ATOMIC_RELAXED); }

static uint64_t by_address; /* hashjoin_by_address */

uint64_t hashjoin_by_address(void) { return __atomic_load_n(&by_address, __ATOMIC_RELAXED); }

static uint64_t compact_built, compact_left; /* hashjoin_compact */

void hashjoin_compact(uint64_t *built, uint64_t *left) {
    *built = __atomic_load_n(&compact_built, __ATOMIC_RELAXED);
    *left = __atomic_load_n(&compact_left, __ATOMIC_RELAXED);
}

static int grow_slots(hashjoin *h) {
    if (h->mask) __atomic_fetch_add(&regrown, 1, __ATOMIC_RELAXED);
    return resize_slots(h, h->mask ? (h->mask + 1) * 2 : 1024);
}

/* About n build records are coming (pipe.h's expect): an empty table
 * takes the slots for n keys at once.  A hint only: without the memory
 * the table grows as it would have. */
static size_t slots_for(uint64_t n) {
    size_t slots = 1024;
    while (slots < 2 * (n + 1)) slots *= 2;
    return slots;
}

static void expect_join(epipe *p, uint64_t n) {
    hashjoin *h = p->state;
    if (h->mask || h->t8.mask || h->cg || n > SIZE_MAX / 64) return;
    size_t slots = slots_for(n);
    if (h->compact) {
        if (!h->budget || slots * sizeof(agg8_slot) <= h->budget) (void)agg8_reserve(&h->t8, n);
        return;
    }
    if (h->budget && slots * (sizeof(hj_entry) + sizeof(uint64_t)) > h->budget) return;
    (void)resize_slots(h, slots);
}

/* The entry of key (hash hv), or NULL; *at: the empty slot where it would
 * go. */
static hj_entry *find(const hashjoin *h, uint64_t hv, const uint8_t *key, size_t klen, size_t *at) {
    size_t j = (size_t)(hv >> 32) & h->mask;
    uint8_t k8[8] = {0}; /* a short key as the entry holds it, zero-padded */
    if (klen <= 8) copy_small(k8, key, klen);
    for (;; j = (j + 1) & h->mask) {
        hj_entry *e = &h->ent[j];
        if (!e->full) break;
        if (e->hash != hv || e->klen != klen) continue;
        if (klen <= 8 ? !memcmp(e->key.inl, k8, 8) : !memcmp(h->arena.p + e->key.off, key, klen)) return e;
    }
    if (at) *at = j;
    return NULL;
}

/* Append a value node to entry ei's list. */
static int add_node(hashjoin *h, size_t ei, const void *val, size_t vlen) {
    if (vlen > UINT32_MAX) return em__seterr(EM_ETOOBIG, "join: a value of %zu bytes", vlen);
    if (bb_reserve(&h->arena, NODE_HEAD + vlen)) return em__seterr(EM_ENOMEM, "join: out of memory");
    uint64_t off = h->arena.len, none = 0;
    uint8_t *p = h->arena.p + off;
    uint32_t l = (uint32_t)vlen;
    memcpy(p, &none, 8);
    memcpy(p + 8, &l, 4);
    if (vlen) memcpy(p + NODE_HEAD, val, vlen);
    h->arena.len += NODE_HEAD + vlen;
    hj_entry *e = &h->ent[ei];
    if (e->val.first == NONE) {
        e->val.first = off;
    } else {
        uint64_t link = off + 1;
        memcpy(h->arena.p + h->last[ei], &link, 8);
    }
    h->last[ei] = off;
    return 0;
}

static int add_value(hashjoin *h, size_t ei, const void *val, size_t vlen) {
    hj_entry *e = &h->ent[ei];
    if (!e->vinl && e->val.first == NONE && vlen <= 8) { /* the first value, short */
        if (vlen) memcpy(e->val.inl, val, vlen);
        e->vinl = (uint8_t)(1 + vlen);
        return 0;
    }
    if (e->vinl) { /* a second value: the first becomes a node */
        uint8_t one[8];
        size_t n = e->vinl - 1u;
        memcpy(one, e->val.inl, n);
        e->vinl = 0;
        e->val.first = NONE;
        int rc = add_node(h, ei, one, n);
        if (rc) return rc;
    }
    return add_node(h, ei, val, vlen);
}

/* The values of e: start at value_start(e); value_next gives each and
 * moves *at on, 0 past the last. */
static inline uint64_t value_start(const hj_entry *e) { return e->vinl ? 0 : e->val.first; }

static int insert(hashjoin *h, uint64_t hv, const em_rec *r) {
    size_t at = 0;
    if (!h->mask || (h->nent + 1) * 2 > h->mask + 1) {
        int rc = grow_slots(h);
        if (rc) return rc;
    }
    hj_entry *e = find(h, hv, r->key, r->klen, &at);
    if (e) return add_value(h, (size_t)(e - h->ent), r->val, r->vlen);
    if (r->klen > UINT32_MAX) return em__seterr(EM_ETOOBIG, "join: a key of %zu bytes", r->klen);
    e = &h->ent[at];
    if (r->klen <= 8) {
        if (r->klen) memcpy(e->key.inl, r->key, r->klen);
    } else {
        if (bb_reserve(&h->arena, r->klen)) return em__seterr(EM_ENOMEM, "join: out of memory");
        memcpy(h->arena.p + h->arena.len, r->key, r->klen);
        e->key.off = h->arena.len;
        h->arena.len += r->klen;
    }
    e->hash = hv;
    e->klen = (uint32_t)r->klen;
    e->val.first = NONE;
    e->full = 1;
    h->nent++;
    return add_value(h, at, r->val, r->vlen);
}

/* The value node at off: its bytes and the offset of the next (NONE:
 * none). */
static uint64_t node_get(const hashjoin *h, uint64_t off, const uint8_t **val, size_t *vlen) {
    uint64_t link;
    uint32_t l;
    memcpy(&link, h->arena.p + off, 8);
    memcpy(&l, h->arena.p + off + 8, 4);
    *val = h->arena.p + off + NODE_HEAD;
    *vlen = l;
    return link ? link - 1 : NONE;
}

static inline int value_next(const hashjoin *h, const hj_entry *e, uint64_t *at, const uint8_t **val, size_t *vlen) {
    if (*at == NONE) return 0;
    if (e->vinl) {
        *val = e->val.inl;
        *vlen = e->vinl - 1u;
        *at = NONE;
    } else {
        *at = node_get(h, *at, val, vlen);
    }
    return 1;
}

/* Emit (key, tuple(a, b)) to the join's next pipe; a or b NULL: missing. */
static int emit(epipe *p, const void *key, size_t klen, const void *a, size_t alen, const void *b, size_t blen) {
    hashjoin *h = p->state;
    ebuf_reset(&h->tuple);
    if (tuple_pack(&h->tuple, a, alen, a != NULL, b, blen, b != NULL))
        return em__seterr(EM_ENOMEM, "join: out of memory");
    em_rec r = {key, klen, h->tuple.p, h->tuple.len};
    if (klen + r.vlen > p->run->max_record)
        return em__seterr(EM_ETOOBIG, "join: a joined record of %zu bytes, over ember.record.maxBytes (%zu)",
                          klen + r.vlen, p->run->max_record);
    return p->next->h.push(p->next, &r);
}

/* A streamed record no key matched: emitted alone when the join keeps the
 * streamed side, else dropped. */
static int unmatched(epipe *p, const em_rec *r) {
    hashjoin *h = p->state;
    if (!h->keep_stream) return 0;
    return h->build ? emit(p, r->key, r->klen, r->val, r->vlen, NULL, 0)
                    : emit(p, r->key, r->klen, NULL, 0, r->val, r->vlen);
}

/* A key of at most 8 bytes as the compact table holds it: its bytes in a
 * zero-padded word (0 for a longer key, which no compact key matches). */
static inline uint64_t key_word(const void *key, size_t klen) {
    uint64_t w = 0;
    if (klen <= 8) copy_small((uint8_t *)&w, key, klen);
    return w;
}

/* Join one streamed record (key word w) against the compact table. */
static int probe_compact(epipe *p, uint64_t w, const em_rec *r) {
    hashjoin *h = p->state;
    const agg8_slot *s = h->kw >= 0 && r->klen == (size_t)h->kw ? agg8_get(&h->t8, w) : NULL;
    if (!s) return unmatched(p, r);
    uint64_t v = s->comb;
    return h->build ? emit(p, r->key, r->klen, r->val, r->vlen, &v, (size_t)h->vw)
                    : emit(p, r->key, r->klen, &v, (size_t)h->vw, r->val, r->vlen);
}

/* Join one streamed record (hash hv, or its key word) against the table. */
static int probe(epipe *p, uint64_t hv, const em_rec *r) {
    hashjoin *h = p->state;
    if (h->compact) return probe_compact(p, hv, r);
    hj_entry *e = h->mask ? find(h, hv, r->key, r->klen, NULL) : NULL;
    if (!e) return unmatched(p, r);
    if (h->keep_build) e->matched = 1; /* (an inner join leaves the entry's line clean) */
    const uint8_t *v;
    size_t vlen;
    for (uint64_t at = value_start(e); value_next(h, e, &at, &v, &vlen);) {
        int rc = h->build ? emit(p, r->key, r->klen, r->val, r->vlen, v, vlen)
                          : emit(p, r->key, r->klen, v, vlen, r->val, r->vlen);
        if (rc) return rc;
    }
    return 0;
}

static int fall_back(epipe *p);

/* The record queued at slot at, as take_queued gives it. */
static void pend_rec(const hashjoin *h, unsigned at, em_rec *r) {
    const hj_pend *q = &h->q[at];
    r->klen = q->klen;
    r->vlen = q->vlen;
    if (h->pointed >> at & 1) { /* the key's and value's addresses */
        memcpy(&r->key, q->b, sizeof r->key);
        memcpy(&r->val, q->b + sizeof r->key, sizeof r->val);
    } else { /* the bytes, copied */
        const uint8_t *b = q->klen + q->vlen > HJ_INLINE ? h->qlong[at].p : q->b;
        r->key = b;
        r->val = b + q->klen;
    }
}

/* Whether build record r fits the compact table; the first sets its
 * widths. */
static int fits_compact(hashjoin *h, const em_rec *r) {
    if (r->klen > 8 || r->vlen > 8) return 0;
    if (h->kw < 0) {
        h->kw = (int)r->klen;
        h->vw = (int)r->vlen;
    }
    return r->klen == (size_t)h->kw && r->vlen == (size_t)h->vw;
}

static int move_general(void *ctx, const em_rec *r) {
    hashjoin *h = ctx;
    return insert(h, em_hash(r->key, r->klen), r);
}

/* Every key of the compact table into the general one, which takes every
 * build record from now on; the records still queued hashed for it. */
static int leave_compact(hashjoin *h) {
    h->compact = 0;
    __atomic_fetch_add(&compact_left, 1, __ATOMIC_RELAXED);
    for (unsigned k = 0; k < h->n; k++) {
        unsigned at = (h->head + k) & (HJ_DEPTH - 1);
        em_rec r;
        pend_rec(h, at, &r);
        h->q[at].hash = em_hash(r.key, r.klen);
    }
    /* slots before the first take, so that no record passes the queued */
    int rc = h->mask ? 0 : resize_slots(h, slots_for(h->t8.n + h->n));
    if (!rc && h->t8.n) rc = agg8_each(&h->t8, (size_t)h->kw, (size_t)h->vw, move_general, h);
    agg8_free(&h->t8);
    return rc;
}

/* A build record (key word w) into the compact table; a key's second
 * value moves the keys to the general table first. */
static int build_compact(hashjoin *h, uint64_t w, const em_rec *r) {
    agg8_slot *s;
    size_t mask = h->t8.mask;
    int found = agg8_upsert(&h->t8, w, &s);
    if (found < 0) return em__seterr(EM_ENOMEM, "join: out of memory");
    if (mask && h->t8.mask != mask) __atomic_fetch_add(&regrown, 1, __ATOMIC_RELAXED); /* grew with keys in it */
    if (found) {
        int rc = leave_compact(h);
        return rc ? rc : insert(h, em_hash(r->key, r->klen), r);
    }
    s->comb = 0;
    copy_small((uint8_t *)&s->comb, r->val, r->vlen);
    return 0;
}

/* A build record (hash hv, or its key word) into the table, or to the
 * fallback cogroup once the table is given up. */
static int build(epipe *p, uint64_t hv, const em_rec *r) {
    hashjoin *h = p->state;
    if (h->cg) return h->cg->h.push(h->cg, r);
    int rc = h->compact ? build_compact(h, hv, r) : insert(h, hv, r);
    if (!rc && h->budget && table_bytes(h) > h->budget) rc = fall_back(p);
    return rc;
}

/* A record of the side being pushed, at its turn: built or joined. */
static int take(epipe *p, uint64_t hv, const em_rec *r) {
    hashjoin *h = p->state;
    return h->side == h->build ? build(p, hv, r) : probe(p, hv, r);
}

/* Take the oldest queued record. */
static int take_queued(epipe *p) {
    hashjoin *h = p->state;
    hj_pend *q = &h->q[h->head];
    em_rec r;
    pend_rec(h, h->head, &r);
    h->pointed &= ~(1u << h->head);
    h->head = (h->head + 1) & (HJ_DEPTH - 1);
    h->n--;
    return take(p, q->hash, &r);
}

static int drain(epipe *p) {
    hashjoin *h = p->state;
    int rc = 0;
    while (h->n && !rc) rc = take_queued(p);
    h->n = 0;
    return rc;
}

/* Queue a record of either side, its home entry fetched, taking the
 * oldest once the queue is full: a build record is inserted, a streamed
 * one joined, HJ_DEPTH records after it arrived. */
static int enqueue(epipe *p, const em_rec *r) {
    hashjoin *h = p->state;
    int rc;
    if (h->compact && h->side == h->build && !fits_compact(h, r) && (rc = leave_compact(h))) return rc;
    uint64_t hv = h->compact ? key_word(r->key, r->klen) : em_hash(r->key, r->klen);
    if (!(h->compact ? h->t8.mask : h->mask)) return take(p, hv, r); /* no table yet (built), or an empty one (streamed) */
    unsigned at = (h->head + h->n) & (HJ_DEPTH - 1);
    uint8_t *b = h->q[at].b;
    if (r->klen + r->vlen > HJ_INLINE && h->lent) { /* its addresses: the batch outlives the queue */
        memcpy(b, &r->key, sizeof r->key);
        memcpy(b + sizeof r->key, &r->val, sizeof r->val);
        h->pointed |= 1u << at;
        h->nlent++;
        b = NULL;
    } else if (r->klen + r->vlen > HJ_INLINE) { /* a slot's own buffer, kept for the next */
        ebuf *l = &h->qlong[at];
        l->len = 0;
        if (r->klen + r->vlen > HJ_QUEUE_MAX || ebuf_reserve(l, r->klen + r->vlen)) {
            rc = drain(p);
            return rc ? rc : take(p, hv, r);
        }
        b = l->p;
    }
    if (h->compact) agg8_prefetch(&h->t8, hv);
    else __builtin_prefetch(&h->ent[(size_t)(hv >> 32) & h->mask]);
    hj_pend *q = &h->q[at];
    q->hash = hv;
    q->klen = (uint32_t)r->klen;
    q->vlen = (uint32_t)r->vlen;
    if (b == q->b) {
        copy_small(b, r->key, r->klen);
        copy_small(b + r->klen, r->val, r->vlen);
    } else if (b) {
        memcpy(b, r->key, r->klen);
        if (r->vlen) memcpy(b + r->klen, r->val, r->vlen);
    }
    h->n++;
    if (!h->compact && h->side != h->build && h->n > HJ_VALUE_AHEAD) { /* its entry has arrived: fetch its first value */
        uint64_t ah = h->q[(h->head + h->n - 1 - HJ_VALUE_AHEAD) & (HJ_DEPTH - 1)].hash;
        const hj_entry *e = &h->ent[(size_t)(ah >> 32) & h->mask];
        if (e->full && !e->vinl && e->hash == ah) __builtin_prefetch(h->arena.p + e->val.first);
    }
    return h->n == HJ_DEPTH ? take_queued(p) : 0;
}

static int push_cg(void *ctx, const em_rec *r) {
    hashjoin *h = ctx;
    return h->cg->h.push(h->cg, r);
}

/* Give up the table: every record in it, then every later one, goes to a
 * sort-based cogroup feeding bi_join's pipe. */
static int fall_back(epipe *p) {
    hashjoin *h = p->state;
    h->peak = table_bytes(h);
    if (!(h->cg = cogroup_pipe_new(p->run, p->node, h->join_op))) return em__lasterr();
    cogroup_pipe_side(h->cg, h->build);
    int rc = 0;
    if (h->compact) {
        h->compact = 0;
        if (h->t8.n) rc = agg8_each(&h->t8, (size_t)h->kw, (size_t)h->vw, push_cg, h);
        agg8_free(&h->t8);
    }
    for (size_t i = 0; h->mask && i <= h->mask && !rc; i++) {
        const hj_entry *e = &h->ent[i];
        if (!e->full) continue;
        const uint8_t *v;
        size_t vlen;
        for (uint64_t at = value_start(e); !rc && value_next(h, e, &at, &v, &vlen);) {
            em_rec r = {entry_key(h, e), e->klen, v, vlen};
            rc = h->cg->h.push(h->cg, &r);
        }
    }
    bb_free(&h->arena);
    bb_free(&h->entb);
    bb_free(&h->lastb);
    h->ent = NULL;
    h->last = NULL;
    h->nent = h->mask = 0;
    return rc;
}

static int push_join(epipe *p, const em_rec *r) {
    hashjoin *h = p->state;
    if (!r->key) return em__seterr(EM_EINVAL, "cogroup/join: the record is not a pair");
    if (h->cg) { /* the records queued before it first, in order */
        int rc = drain(p);
        return rc ? rc : h->cg->h.push(h->cg, r);
    }
    return enqueue(p, r);
}

/* A batch of records whose bytes stay put until this returns: its long
 * records are queued by address (enqueue), and the queue is drained
 * before the return.  The kill flag is looked at as drive_batch does, as
 * the records run on through user functions. */
static int push_join_batch(epipe *p, const uint8_t *b, size_t len, uint64_t *nrec) {
    hashjoin *h = p->state;
    const uint8_t *end = b + len;
    uint64_t n = 0;
    unsigned since = 0;
    int rc = 0;
    h->lent = 1;
    while (b < end) {
        em_rec r;
        size_t k = rec_get(b, end, &r);
        if (!k) {
            rc = em__seterr(EM_ECORRUPT, "malformed record in a batch");
            break;
        }
        if (++since == RUNNER_CHECK_EVERY) {
            since = 0;
            if ((rc = runner_killed())) break;
        }
        n++;
        if ((rc = push_join(p, &r))) break;
        b += k;
    }
    if (rc >= 0) { /* (EM_STOP too: the queued records go on as end_join would take them) */
        int d = drain(p);
        if (d < 0 || (d && !rc)) rc = d;
    }
    h->n = 0; /* nothing queued points into the batch past here */
    h->pointed = 0;
    h->lent = 0;
    if (h->nlent) __atomic_fetch_add(&by_address, h->nlent, __ATOMIC_RELAXED);
    h->nlent = 0;
    *nrec += n;
    return rc;
}

static int end_join(epipe *p) {
    hashjoin *h = p->state;
    int rc = drain(p);
    if (h->cg) return rc ? rc : h->cg->end(h->cg);
    for (size_t i = 0; h->mask && i <= h->mask && h->keep_build && !rc; i++) {
        const hj_entry *e = &h->ent[i];
        if (!e->full || e->matched) continue;
        const uint8_t *v, *k = entry_key(h, e);
        size_t vlen;
        for (uint64_t at = value_start(e); !rc && value_next(h, e, &at, &v, &vlen);)
            rc = h->build ? emit(p, k, e->klen, NULL, 0, v, vlen) : emit(p, k, e->klen, v, vlen, NULL, 0);
    }
    return rc;
}

static void free_join(epipe *p) {
    hashjoin *h = p->state;
    if (!h) return;
    tm_peak(h->cg ? h->peak : table_bytes(h)); /* the table only grows */
    pipe_free(h->cg);
    bb_free(&h->arena);
    bb_free(&h->entb);
    bb_free(&h->lastb);
    agg8_free(&h->t8);
    ebuf_free(&h->tuple);
    for (int i = 0; i < HJ_DEPTH; i++) ebuf_free(&h->qlong[i]);
    free(h);
}

epipe *hashjoin_pipe_new(task_run *run, const plan_node *cogroup, epipe *join_op, int kind, int build) {
    epipe *p = pipe_alloc(run, cogroup, join_op->next);
    hashjoin *h = p ? calloc(1, sizeof *h) : NULL;
    if (!h) {
        if (p) em__seterr(EM_ENOMEM, "out of memory");
        pipe_free(p);
        return NULL;
    }
    h->build = h->side = build;
    /* kind 1 keeps input 0's unmatched keys, 2 input 1's, 3 both. */
    h->keep_build = kind == 3 || kind == (build ? 2 : 1);
    h->keep_stream = kind == 3 || kind == (build ? 1 : 2);
    h->budget = run->t->mem_budget;
    h->join_op = join_op;
    h->compact = !h->keep_build;
    h->kw = h->vw = -1;
    agg8_init(&h->t8);
    agg8_seed(&h->t8, AGG8_SEED(AGG8_JOIN, cogroup->rdd_id));
    p->state = h;
    p->free = free_join;
    p->h.push = push_join;
    p->push_batch = push_join_batch;
    p->expect = expect_join;
    p->end = end_join;
    return p;
}

int hashjoin_pipe_side(epipe *p, int side) {
    hashjoin *h = p->state;
    int rc = drain(p); /* the last side's records, each as that side's */
    if (h->side == h->build && side != h->build && h->compact && h->t8.n)
        __atomic_fetch_add(&compact_built, 1, __ATOMIC_RELAXED);
    h->side = side;
    p->expect = side == h->build ? expect_join : NULL; /* the other side's count is no use */
    if (h->cg) cogroup_pipe_side(h->cg, side);
    return rc;
}
