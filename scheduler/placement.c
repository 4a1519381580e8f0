/*
 * placement.c -- executors, the choice of one for an attempt, and the
 * locality of cached partitions (see placement.h).
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "ember.h"
#include "placement.h"

exec_rec *et_find(exec_table *t, int id) {
    /* executors usually join in id order from 0: their slot first */
    if (id >= 0 && id < t->n && t->v[id].id == id) return &t->v[id];
    int i = idmap_index(&t->moved, (uint64_t)(int64_t)id);
    return i >= 0 ? &t->v[i] : NULL;
}

/* Lists for levels up to n - 1: 0 or EM_ENOMEM. */
static int levels_reserve(level_lists *l, int n) {
    if (n <= l->n) return 0;
    int cap = l->n ? l->n : 8;
    while (cap < n) cap *= 2;
    int *h = realloc(l->head, sizeof *h * (size_t)cap);
    if (!h) return EM_ENOMEM;
    l->head = h;
    int *tl = realloc(l->tail, sizeof *tl * (size_t)cap);
    if (!tl) return EM_ENOMEM;
    l->tail = tl;
    for (int r = l->n; r < cap; r++) l->head[r] = l->tail[r] = -1;
    l->n = cap;
    return 0;
}

int et_reserve(exec_table *t, int n) {
    if (levels_reserve(&t->idle, 8) || levels_reserve(&t->queue, 8)) return EM_ENOMEM;
    if (n <= t->cap) return 0;
    exec_rec *v = realloc(t->v, sizeof *v * (size_t)n);
    if (!v) return EM_ENOMEM;
    t->v = v;
    t->cap = n;
    return 0;
}

/* ------------------------------------------------ the index by room */

/* x's tier and level as its fields now say. */
static void level_of(const exec_rec *x, int *tier, int *level) {
    *tier = *level = 0;
    if (!x->alive || x->backlog < 0) return;
    if (x->assigned < x->cores) {
        *tier = 1;
        *level = x->cores - x->assigned;
    } else if (x->assigned < x->cores + x->backlog) {
        *tier = 2;
        *level = x->cores + x->backlog - x->assigned;
    }
}

static level_lists *lists_of(exec_table *t, int tier) { return tier == 1 ? &t->idle : &t->queue; }

/* Take x out of the index (its list and the counts). */
static void unindex(exec_table *t, exec_rec *x) {
    if (x->tier) {
        level_lists *l = lists_of(t, x->tier);
        if (x->bprev >= 0) t->v[x->bprev].bnext = x->bnext;
        else l->head[x->room] = x->bnext;
        if (x->bnext >= 0) t->v[x->bnext].bprev = x->bprev;
        else l->tail[x->room] = x->bprev;
        while (l->top > 0 && l->head[l->top] < 0) l->top--;
    }
    x->bnext = x->bprev = -1;
    x->tier = x->room = 0;
    if (!x->alive) return;
    t->off_host0 -= x->off_host;
    t->alive_cores -= x->cores;
    if (x->backlog < 0) t->unbounded--;
    if (x->assigned < x->cores) t->idle_cores -= x->cores - x->assigned;
    else if (x->assigned > x->cores) t->queued_execs--;
}

/* Put x into the index as its fields now say (the tail of its list).
 * Its level fits: et_add grew the lists for its cores and backlog_max. */
static void reindex(exec_table *t, exec_rec *x) {
    int i = (int)(x - t->v);
    level_of(x, &x->tier, &x->room);
    x->bnext = x->bprev = -1;
    if (x->tier) {
        level_lists *l = lists_of(t, x->tier);
        x->bprev = l->tail[x->room];
        if (x->bprev >= 0) t->v[x->bprev].bnext = i;
        else l->head[x->room] = i;
        l->tail[x->room] = i;
        if (x->room > l->top) l->top = x->room;
    }
    if (!x->alive) return;
    t->off_host0 += x->off_host;
    t->alive_cores += x->cores;
    if (x->backlog < 0) t->unbounded++;
    if (x->assigned < x->cores) t->idle_cores += x->cores - x->assigned;
    else if (x->assigned > x->cores) t->queued_execs++;
}

void et_assign(exec_table *t, exec_rec *x, int delta) {
    unindex(t, x);
    x->assigned += delta;
    reindex(t, x);
}

void et_set_backlog(exec_table *t, exec_rec *x, int backlog) {
    unindex(t, x);
    x->backlog = backlog;
    reindex(t, x);
}

void et_set_alive(exec_table *t, exec_rec *x, int alive) {
    unindex(t, x);
    x->alive = alive;
    reindex(t, x);
}

int et_add(exec_table *t, int id, int cores, int backlog, int backlog_max, const char *host) {
    exec_rec *x = et_find(t, id);
    if (cores < 1) cores = 1;
    if (backlog_max < backlog) backlog_max = backlog;
    if (backlog >= 0 && (levels_reserve(&t->idle, cores + 1) || levels_reserve(&t->queue, backlog_max + 1)))
        return EM_ENOMEM;
    if (!x) {
        if (t->n == t->cap && et_reserve(t, t->cap ? t->cap * 2 : 4)) return EM_ENOMEM;
        if (id != t->n && idmap_put_index(&t->moved, (uint64_t)(int64_t)id, t->n)) return EM_ENOMEM;
        x = &t->v[t->n++];
        memset(x, 0, sizeof *x);
        x->id = id;
        x->bnext = x->bprev = -1;
    } else {
        unindex(t, x);
    }
    x->cores = cores;
    x->backlog = x->backlog_min = backlog;
    x->backlog_max = backlog_max;
    x->alive = 1;
    snprintf(x->host, sizeof x->host, "%s", host ? host : "");
    if (t->n == 1 && x == t->v) snprintf(t->host0, sizeof t->host0, "%s", x->host);
    x->off_host = strcmp(x->host, t->host0) != 0;
    reindex(t, x);
    return 0;
}

void et_free(exec_table *t) {
    for (int i = 0; i < t->n; i++) free(t->v[i].waitq);
    free(t->v);
    free(t->idle.head);
    free(t->idle.tail);
    free(t->queue.head);
    free(t->queue.tail);
    idmap_free(&t->moved, NULL);
    memset(t, 0, sizeof *t);
}

int et_wait_push(exec_rec *x, uint64_t task_id) {
    if (x->wq_head + x->wq_n == x->wq_cap) {
        if (x->wq_head) { /* slide down into the room popped */
            memmove(x->waitq, x->waitq + x->wq_head, sizeof *x->waitq * (size_t)x->wq_n);
            x->wq_head = 0;
        }
        if (x->wq_n == x->wq_cap) {
            int cap = x->wq_cap ? 2 * x->wq_cap : 8;
            uint64_t *q = realloc(x->waitq, sizeof *q * (size_t)cap);
            if (!q) return EM_ENOMEM;
            x->waitq = q;
            x->wq_cap = cap;
        }
    }
    x->waitq[x->wq_head + x->wq_n++] = task_id;
    return 0;
}

uint64_t et_wait_pop(exec_rec *x) {
    if (!x->wq_n) return 0;
    x->wq_n--;
    uint64_t id = x->waitq[x->wq_head++];
    if (!x->wq_n) x->wq_head = 0;
    return id;
}

int et_has_room(const exec_rec *x) {
    return x->alive && (x->backlog < 0 || x->assigned < x->cores + x->backlog);
}

int et_any_room(const exec_table *t) { return t->idle.top > 0 || t->queue.top > 0 || t->unbounded > 0; }

/* How well x suits a copy of an attempt running on a: 2 on another host
 * (or nothing to avoid), 1 on a's host, 0 a itself (a last resort). */
static int avoid_tier(const exec_rec *x, const exec_rec *a) {
    return !a ? 2 : x == a ? 0 : x->host[0] && !strcmp(x->host, a->host) ? 1 : 2;
}

static int skipped(const et_filter *f, const exec_rec *x) { return f && f->skip(f->ctx, x); }

/* The executor with the most room whose avoid_tier is tier (and that f
 * does not skip; a itself only with a free core: a copy queued behind its
 * original would wait for it), walking the index from the most room down and
 * each level in the order its executors reached it; NULL when none.  It
 * stops at the first that fits: a step per executor passed over, which
 * are those of a's host or excluded. */
static exec_rec *first_fit(exec_table *t, const exec_rec *a, int tier, const et_filter *f) {
    for (int w = 1; w <= 2; w++) {
        const level_lists *l = lists_of(t, w);
        for (int r = l->top; r > 0; r--)
            for (int i = l->head[r]; i >= 0; i = t->v[i].bnext) {
                exec_rec *x = &t->v[i];
                if (avoid_tier(x, a) == tier && !skipped(f, x) && (tier || x->assigned < x->cores)) return x;
            }
    }
    return NULL;
}

exec_rec *et_choose(exec_table *t, int pref, int avoid, int waited_out, const et_filter *f) {
    exec_rec *p = pref >= 0 ? et_find(t, pref) : NULL;
    if (p && skipped(f, p)) p = NULL; /* excluded: as if nothing were cached */
    if (p && et_has_room(p)) return p;
    if (p && p->alive && !waited_out) return NULL;
    const exec_rec *a = avoid >= 0 ? et_find(t, avoid) : NULL;
    if (!a && !f && !t->unbounded) {
        if (t->idle.top > 0) return &t->v[t->idle.head[t->idle.top]];
        return t->queue.top > 0 ? &t->v[t->queue.head[t->queue.top]] : NULL;
    }
    if (!t->unbounded) {
        exec_rec *x;
        for (int tier = 2; tier >= (a ? 0 : 2); tier--) /* without a, every executor is tier 2 */
            if ((x = first_fit(t, a, tier, f))) return x;
        return NULL;
    }
    /* An executor that takes any number has no place in the index: every
     * executor is looked at (local[N] has one). */
    exec_rec *best = NULL;
    long best_room = -1;
    int best_tier = -1;
    for (int i = 0; i < t->n; i++) {
        exec_rec *x = &t->v[i];
        if (!et_has_room(x) || skipped(f, x)) continue;
        /* Free cores first, then queue slots (as the index ranks them). */
        long room = x->backlog < 0                 ? (long)1 << 40
                    : x->assigned < x->cores ? ((long)1 << 30) + x->cores - x->assigned
                                             : (long)(x->cores + x->backlog - x->assigned);
        int tier = avoid_tier(x, a);
        if (tier > best_tier || (tier == best_tier && room > best_room)) {
            best = x;
            best_room = room;
            best_tier = tier;
        }
    }
    return best;
}

/* One step down r's one-to-one narrow dependencies, mapping the partition;
 * NULL where they end (a source, a shuffle, a coalesce, a cogroup: see
 * below). */
static em_rdd *narrow_parent(em_rdd *r, int *part) {
    if (r->kind == RDD_OP) return r->parent;
    if (r->kind != RDD_UNION) return NULL;
    if (*part < r->parent->nparts) return r->parent;
    *part -= r->parent->nparts;
    return r->parent2;
}

/* A cogroup's dependency k, when narrow (one-to-one), else NULL. */
static em_rdd *cogroup_narrow(em_rdd *r, int k) {
    em_rdd *d = r->deps[k];
    return d->kind == RDD_SHUFFLED && d->dep_only ? NULL : d;
}

/* The executor caching partition part of a persisted RDD on the chain of
 * one-to-one dependencies from r; -1 for none.  Below a cogroup each narrow
 * dependency's chain is tried in turn (one level of them: a cogroup further
 * down ends the search, which keeps the walk linear). */
static int chain_pref(em_rdd *r, int part, int fan) {
    for (int depth = 0; r && depth < 256; depth++, r = narrow_parent(r, &part)) {
        if (part < 0 || part >= r->nparts) return -1;
        if (__atomic_load_n(&r->persist_level, __ATOMIC_RELAXED) && r->cache_exec && r->cache_exec[part] >= 0) return r->cache_exec[part];
        if (r->kind == RDD_COGROUP) {
            for (int k = 0; fan && k < r->ndeps; k++) {
                em_rdd *d = cogroup_narrow(r, k);
                int e = d ? chain_pref(d, part, 0) : -1;
                if (e >= 0) return e;
            }
            return -1;
        }
    }
    return -1;
}

int cache_pref(em_rdd *r, int part) { return chain_pref(r, part, 1); }

static void chain_note(em_rdd *r, int part, int exec, int fan) {
    for (int depth = 0; r && depth < 256; depth++, r = narrow_parent(r, &part)) {
        if (part < 0 || part >= r->nparts) return;
        if (r->kind == RDD_COGROUP) {
            for (int k = 0; fan && k < r->ndeps; k++) {
                em_rdd *d = cogroup_narrow(r, k);
                if (d) chain_note(d, part, exec, 0);
            }
        }
        if (!__atomic_load_n(&r->persist_level, __ATOMIC_RELAXED)) continue;
        if (!r->cache_exec && (r->cache_exec = malloc(sizeof(int) * (size_t)r->nparts)))
            for (int i = 0; i < r->nparts; i++) r->cache_exec[i] = -1;
        if (r->cache_exec) r->cache_exec[part] = exec; /* else no preference: still correct */
    }
}

void note_cache(em_rdd *r, int part, int exec) { chain_note(r, part, exec, 1); }
