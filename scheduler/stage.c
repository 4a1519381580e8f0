/*
 * stage.c -- stage building: an RDD's lineage cut into stages at shuffles
 * (see stage.h).
 *
 * It owns the walk from an RDD through its narrow dependencies to the
 * shuffles it reads, the making of the map stages those shuffles need
 * (parents first, each registered in d->maps and the map-output tracker),
 * a stage's parent list and its recomputation after a checkpoint, and a
 * stage's memory.  All of it runs on the scheduler's thread.
 *
 * Every walk here is iterative, over an explicit stack, and visits each
 * RDD or stage once (marks against d->gen): a lineage of 10,000 RDDs or
 * shuffles neither overflows the scheduler thread's stack nor costs more
 * than its size.
 */
#include <stdlib.h>

#include "idmap.h"
#include "mapout.h"
#include "stage.h"

void stage_free(stage *s) {
    if (!s) return;
    free(s->parents);
    free(s->state);
    free(s->attempts);
    free(s->launched);
    free(s->nrun);
    free(s->queued);
    free(s->att);
    rm_free(&s->ok_us);
    free(s->reg_task);
    free(s->fails);
    free(s);
}

typedef struct rddvec {
    em_rdd **v;
    int n, cap;
} rddvec;

static int rv_push(rddvec *a, em_rdd *r) {
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 16;
        em_rdd **v = realloc(a->v, sizeof *v * (size_t)cap);
        if (!v) return -1;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = r;
    return 0;
}

/* Append to out the shuffled RDDs reachable from r through narrow
 * dependencies, in the order a depth-first walk taking first parents first
 * meets them (the order Spark numbers parent stages in).  0 or -1. */
static int narrow_shuffles(dag *d, em_rdd *r, rddvec *out) {
    rddvec st = {NULL, 0, 0};
    uint32_t gen = ++d->gen;
    int rc = rv_push(&st, r);
    while (!rc && st.n) {
        em_rdd *x = st.v[--st.n];
        if (x->sched_mark == gen) continue;
        x->sched_mark = gen;
        if (x->kind == RDD_SHUFFLED) {
            rc = rv_push(out, x);
        } else {
            em_rdd *ps[RDD_MAX_PARENTS];
            for (int i = rdd_parents(x, ps); i-- > 0 && !rc;) rc = rv_push(&st, ps[i]);
        }
    }
    free(st.v);
    return rc;
}

/* s->parents := the map stages of ps (which all exist).  0 or -1 (s
 * unchanged). */
static int set_parents(dag *d, stage *s, em_rdd **ps, int nps) {
    stage **v = nps ? malloc(sizeof *v * (size_t)nps) : NULL;
    int n = 0;
    if (nps && !v) return -1;
    for (int i = 0; i < nps; i++) {
        stage *p = idmap_get(&d->maps, ps[i]->shuffle_id);
        int dup = 0;
        for (int k = 0; k < n && !dup; k++) dup = v[k] == p;
        if (!p) {
            free(v);
            return -1;
        }
        if (!dup) v[n++] = p;
    }
    free(s->parents);
    s->parents = v;
    s->nparents = n;
    return 0;
}

static stage *stage_alloc(em_rdd *rdd, em_rdd *shuffled, int ntasks) {
    stage *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->rdd = rdd;
    s->shuffled = shuffled;
    s->ntasks = ntasks;
    s->state = calloc((size_t)ntasks + 1, 1);
    s->attempts = calloc((size_t)ntasks + 1, sizeof(int));
    s->launched = calloc((size_t)ntasks + 1, sizeof(uint32_t));
    s->nrun = calloc((size_t)ntasks + 1, sizeof(uint32_t));
    s->queued = calloc((size_t)ntasks + 1, 1);
    if (shuffled) s->reg_task = calloc((size_t)ntasks + 1, sizeof(uint64_t));
    if (!s->state || !s->attempts || !s->launched || !s->nrun || !s->queued || (shuffled && !s->reg_task)) {
        stage_free(s);
        return NULL;
    }
    return s;
}

/* One stage to make: the work item of stage_new's walk. */
typedef struct mkframe {
    em_rdd *rdd, *shuffled;
    int ntasks;
    int scanned;
    rddvec ps; /* its parent shuffles, once scanned */
} mkframe;

/* Make the stage computing rdd (a map stage when shuffled is set, else a
 * job's result stage), first making the map stages of the shuffles it
 * depends on that do not exist yet, parents before children (their ids
 * are smaller, as Spark numbers them).  A walk over an explicit stack, so
 * a chain of 10,000 shuffles is made without recursion.  NULL on ENOMEM. */
stage *stage_new(dag *d, em_rdd *rdd, em_rdd *shuffled, int ntasks) {
    mkframe *st = malloc(sizeof *st * 16);
    int n = 0, cap = 16, fail = !st;
    stage *made = NULL;
    if (st) st[n++] = (mkframe){rdd, shuffled, ntasks, 0, {NULL, 0, 0}};
    while (n && !fail) {
        mkframe *f = &st[n - 1];
        if (f->shuffled && n > 1 && idmap_get(&d->maps, f->shuffled->shuffle_id)) {
            free(f->ps.v); /* made meanwhile, by another branch */
            n--;
            continue;
        }
        if (!f->scanned) {
            f->scanned = 1;
            if (narrow_shuffles(d, f->rdd, &f->ps)) {
                fail = 1;
                break;
            }
            int fi = n - 1; /* f moves when st grows */
            for (int i = f->ps.n; i-- > 0;) {
                em_rdd *p = st[fi].ps.v[i];
                if (idmap_get(&d->maps, p->shuffle_id)) continue;
                if (n == cap) {
                    mkframe *g = realloc(st, sizeof *st * (size_t)cap * 2);
                    if (!g) {
                        fail = 1;
                        break;
                    }
                    st = g;
                    cap *= 2;
                }
                st[n++] = (mkframe){p->parent, p, p->parent->nparts, 0, {NULL, 0, 0}};
            }
            continue;
        }
        stage *s = stage_alloc(f->rdd, f->shuffled, f->ntasks);
        if (!s || set_parents(d, s, f->ps.v, f->ps.n)) {
            stage_free(s);
            fail = 1;
            break;
        }
        s->id = d->next_stage++; /* after its parents, as Spark numbers them */
        if (f->shuffled) {
            uint32_t id = f->shuffled->shuffle_id;
            s->shuffle_id = id;
            s->out_parts = f->shuffled->nparts;
            if (!mo_get(&d->mo, id, s->ntasks, f->shuffled->nparts) || idmap_put(&d->maps, id, s)) {
                stage_free(s);
                fail = 1;
                break;
            }
            __atomic_fetch_add(&d->nlive_maps, 1, __ATOMIC_RELAXED);
        }
        free(f->ps.v);
        n--;
        if (!n) made = s;
    }
    while (n) free(st[--n].ps.v);
    free(st);
    return made;
}

static stage *map_stage(dag *d, em_rdd *shuffled) {
    stage *s = idmap_get(&d->maps, shuffled->shuffle_id);
    return s ? s : stage_new(d, shuffled->parent, shuffled, shuffled->parent->nparts);
}

int stage_reparent(dag *d, stage *s) {
    rddvec ps = {NULL, 0, 0};
    int rc = narrow_shuffles(d, s->rdd, &ps);
    for (int i = 0; !rc && i < ps.n; i++)
        if (!map_stage(d, ps.v[i])) rc = -1;
    if (!rc) rc = set_parents(d, s, ps.v, ps.n);
    free(ps.v);
    return rc;
}
