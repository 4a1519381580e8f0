/*
 * checkpoint.c -- em_checkpoint: Spark's reliable checkpoint on the driver.
 *
 * em_checkpoint marks an RDD.  When a job over a lineage holding marked
 * RDDs succeeds, ckpt_after_job (called by ctx_run) runs one more job per
 * marked RDD, as Spark's RDD.doCheckpoint does: its sink (SK_CHECKPOINT,
 * executor/ckpt_file.c) writes each partition to a file of the RDD's
 * directory, ember.checkpoint.dir/checkpoint-XXXXXX/rdd-ID.  A persisted RDD
 * is read from its cache by that job, so persisting first (as Spark advises)
 * saves computing it twice.  Then the lineage is truncated on the
 * scheduler's thread (dag_truncate): the RDD becomes RDD_CHECKPOINT, whose
 * tasks read its files, and drops its parents, which are freed with what
 * they hold (shuffles, cached blocks) unless something else refers to them.
 *
 * Like Spark's, the walk for marked RDDs stops at the first marked RDD of
 * each path (spark.checkpoint.checkpointAllMarkedAncestors is false), and
 * files are kept after the application unless
 * ember.cleaner.referenceTracking.cleanCheckpoints is true; then an RDD's
 * files go when it is freed (em_rdd_release, em_close).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "conf.h"
#include "ctx.h"
#include "err.h"
#include "fsutil.h"
#include "rdd.h"
#include "taskresult.h"

/* mkdir -p.  0 or -1 (errno set). */
static int mkdir_p(const char *path) {
    char p[PATH_MAX];
    size_t n = strlen(path);
    if (n >= sizeof p) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(p, path, n + 1);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0755) && errno != EEXIST) return -1;
        *s = '/';
    }
    return mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
}

/* This context's directory under the setting dir (made once per setting,
 * an absolute path: executors run in other directories).  Under ctx->mu.
 * 0 or < 0 (message set). */
static int ensure_base(em_ctx *ctx, const char *dir) {
    char abs[PATH_MAX], tmpl[PATH_MAX + 32];
    if (ctx->ckpt_base && !strcmp(ctx->ckpt_base_for, dir)) return 0;
    if (mkdir_p(dir) || !realpath(dir, abs))
        return em__seterr(EM_EIO, "em_checkpoint: ember.checkpoint.dir %s: %s", dir, strerror(errno));
    snprintf(tmpl, sizeof tmpl, "%s/checkpoint-XXXXXX", abs);
    if (!mkdtemp(tmpl)) return em__seterr(EM_EIO, "em_checkpoint: cannot make a directory in %s: %s", abs, strerror(errno));
    char *b = strdup(tmpl), *f = strdup(dir);
    if (!b || !f) {
        rmdir(tmpl);
        free(b);
        free(f);
        return em__seterr(EM_ENOMEM, "em_checkpoint: out of memory");
    }
    if (ctx->ckpt_base) rmdir(ctx->ckpt_base); /* the old setting's, if nothing was written there */
    free(ctx->ckpt_base);
    free(ctx->ckpt_base_for);
    ctx->ckpt_base = b;
    ctx->ckpt_base_for = f;
    return 0;
}

int em_checkpoint(em_rdd *rdd) {
    if (ctx_check(rdd, "em_checkpoint")) return EM_EINVAL;
    if (ctx_in_task()) return em__seterr(EM_ESTATE, "em_checkpoint: called from inside a task's user function");
    em_ctx *ctx = rdd->ctx;
    int rc = 0;
    pthread_mutex_lock(&ctx->mu);
    const char *dir = em_conf_get(ctx->conf, "ember.checkpoint.dir");
    if (rdd->ckpt_state != CKPT_NONE) {
        /* marked, being written or written: nothing more to do */
    } else if (!dir || !*dir) {
        rc = em__seterr(EM_ESTATE, "em_checkpoint: the checkpoint directory is not set: set ember.checkpoint.dir "
                                   "(Spark's SparkContext.setCheckpointDir)");
    } else if (!(rc = ensure_base(ctx, dir))) {
        size_t n = strlen(ctx->ckpt_base) + 32;
        char *d = malloc(n);
        if (!d) {
            rc = em__seterr(EM_ENOMEM, "em_checkpoint: out of memory");
        } else {
            snprintf(d, n, "%s/rdd-%d", ctx->ckpt_base, rdd->id);
            free(rdd->ckpt_dir);
            rdd->ckpt_dir = d;
            rdd->ckpt_state = CKPT_MARKED;
            ctx->ckpt_marked++;
        }
    }
    pthread_mutex_unlock(&ctx->mu);
    return rc;
}

int em_is_checkpointed(em_rdd *rdd) {
    if (ctx_check(rdd, "em_is_checkpointed")) return EM_EINVAL;
    pthread_mutex_lock(&rdd->ctx->mu);
    int done = rdd->ckpt_state == CKPT_DONE;
    pthread_mutex_unlock(&rdd->ctx->mu);
    return done;
}

char *em_checkpoint_file(em_rdd *rdd) {
    char *p = NULL;
    if (ctx_check(rdd, "em_checkpoint_file")) return NULL;
    pthread_mutex_lock(&rdd->ctx->mu);
    if (rdd->ckpt_state != CKPT_DONE)
        em__seterr(EM_ESTATE, "em_checkpoint_file: RDD %d is not checkpointed", rdd->id);
    else if (!(p = strdup(rdd->ckpt_dir)))
        em__seterr(EM_ENOMEM, "em_checkpoint_file: out of memory");
    pthread_mutex_unlock(&rdd->ctx->mu);
    return p;
}

/* ------------------------------------------------------- after a job */

/* The marked RDDs of rdd's lineage, each path walked down to its first
 * marked (or written) RDD, over an explicit stack with a mark per RDD id.
 * Under ctx->mu.  Each found RDD becomes CKPT_WRITING and gains a
 * reference.  0 or EM_ENOMEM. */
static int find_marked(em_ctx *ctx, em_rdd *rdd, em_rdd ***out, int *nout) {
    uint8_t *seen = calloc((size_t)ctx->nrdds + 1, 1);
    em_rdd **st = malloc(sizeof *st * 16), **found = NULL;
    int n = 0, cap = 16, nf = 0, capf = 0, rc = 0;
    if (!seen || !st) rc = EM_ENOMEM;
    else st[n++] = rdd;
    while (!rc && n) {
        em_rdd *x = st[--n];
        if (x->id < ctx->nrdds && seen[x->id]) continue;
        if (x->id < ctx->nrdds) seen[x->id] = 1;
        if (x->ckpt_state == CKPT_MARKED) {
            if (nf == capf) {
                capf = capf ? capf * 2 : 4;
                em_rdd **g = realloc(found, sizeof *g * (size_t)capf);
                if (!g) {
                    rc = EM_ENOMEM;
                    break;
                }
                found = g;
            }
            found[nf++] = x;
            continue;
        }
        if (x->ckpt_state != CKPT_NONE) continue; /* being written, or written: no parents */
        while (n + RDD_MAX_PARENTS > cap) {
            em_rdd **g = realloc(st, sizeof *g * (size_t)cap * 2);
            if (!g) {
                rc = EM_ENOMEM;
                break;
            }
            st = g;
            cap *= 2;
        }
        if (rc) break;
        em_rdd *ps[RDD_MAX_PARENTS];
        for (int i = rdd_parents(x, ps); i-- > 0;) st[n++] = ps[i];
    }
    free(seen);
    free(st);
    if (rc) {
        free(found);
        return em__seterr(EM_ENOMEM, "checkpoint: out of memory");
    }
    for (int i = 0; i < nf; i++) {
        found[i]->ckpt_state = CKPT_WRITING;
        ctx->ckpt_marked--;
        rdd_retain(found[i]);
    }
    *out = found;
    *nout = nf;
    return 0;
}

static int ckpt_result(void *c, int idx, task_result *res) {
    uint64_t *lens = c;
    if (res->len != 16) return em__seterr(EM_EPROTO, "checkpoint: bad task result (%zu bytes)", res->len);
    memcpy(&lens[idx], res->data, 8);
    return 0;
}

typedef struct trunc {
    em_rdd *r;
    uint64_t *lens;
    em_rdd *old[RDD_MAX_PARENTS];
    int nold;
    em_rdd **deps; /* a cogroup's array, freed after */
    int was_shuffled;
    uint32_t shuffle_id;
} trunc;

/* On the scheduler's thread: r reads its files from now on. */
static void truncate_now(void *arg) {
    trunc *t = arg;
    em_rdd *r = t->r;
    pthread_mutex_lock(&r->ctx->mu);
    t->nold = rdd_parents(r, t->old);
    t->deps = r->deps;
    r->deps = NULL;
    r->ndeps = 0;
    t->was_shuffled = r->kind == RDD_SHUFFLED;
    t->shuffle_id = r->shuffle_id;
    r->kind = RDD_CHECKPOINT;
    r->parent = r->parent2 = NULL;
    r->ckpt_lens = t->lens;
    r->ckpt_state = CKPT_DONE;
    pthread_mutex_unlock(&r->ctx->mu);
}

static int write_one(em_rdd *r) {
    em_ctx *ctx = r->ctx;
    plan_sink s;
    uint64_t *lens = calloc((size_t)r->nparts + 1, sizeof *lens);
    int rc;
    if (!lens) return em__seterr(EM_ENOMEM, "checkpoint: out of memory");
    rm_tree(r->ckpt_dir); /* what an earlier failed attempt left */
    if (mkdir(r->ckpt_dir, 0755)) {
        rc = em__seterr(EM_EIO, "checkpoint of RDD %d: cannot make %s: %s", r->id, r->ckpt_dir, strerror(errno));
    } else {
        memset(&s, 0, sizeof s);
        s.kind = SK_CHECKPOINT;
        s.path = r->ckpt_dir;
        rc = ctx_run(r, &s, NULL, 0, ckpt_result, lens);
        if (rc) em__preferr(rc, "checkpoint of RDD %d (%s) to %s", r->id, r->opname, r->ckpt_dir);
    }
    trunc t = {r, lens, {NULL}, 0, NULL, 0, 0};
    if (!rc && (rc = ctx_truncate(ctx, truncate_now, &t)) != 0)
        em__seterr(rc, "checkpoint of RDD %d: out of memory truncating its lineage", r->id);
    if (rc) {
        rm_tree(r->ckpt_dir);
        free(lens);
        pthread_mutex_lock(&ctx->mu);
        r->ckpt_state = CKPT_MARKED; /* the next job tries again */
        ctx->ckpt_marked++;
        pthread_mutex_unlock(&ctx->mu);
        return rc;
    }
    if (t.was_shuffled) ctx_drop_shuffle(ctx, t.shuffle_id);
    for (int i = 0; i < t.nold; i++) rdd_release(t.old[i]);
    free(t.deps);
    return 0;
}

int ckpt_after_job(em_rdd *rdd) {
    em_ctx *ctx = rdd->ctx;
    em_rdd **found = NULL;
    int nf = 0, rc = 0;
    pthread_mutex_lock(&ctx->mu);
    if (ctx->ckpt_marked > 0) rc = find_marked(ctx, rdd, &found, &nf);
    pthread_mutex_unlock(&ctx->mu);
    for (int i = 0; i < nf; i++) {
        if (!rc) {
            rc = write_one(found[i]);
        } else { /* an earlier one failed: the action fails, these wait for the next job */
            pthread_mutex_lock(&ctx->mu);
            found[i]->ckpt_state = CKPT_MARKED;
            ctx->ckpt_marked++;
            pthread_mutex_unlock(&ctx->mu);
        }
        rdd_release(found[i]);
    }
    free(found);
    return rc;
}

static int clean_checkpoints(em_ctx *ctx) {
    return conf_bool(ctx->conf, "ember.cleaner.referenceTracking.cleanCheckpoints");
}

void ckpt_rdd_gone(em_ctx *ctx, em_rdd *r) {
    pthread_mutex_lock(&ctx->mu);
    if (r->ckpt_state == CKPT_MARKED) ctx->ckpt_marked--;
    int clean = r->ckpt_state == CKPT_DONE && clean_checkpoints(ctx);
    pthread_mutex_unlock(&ctx->mu);
    if (clean) rm_tree(r->ckpt_dir);
}

void ckpt_ctx_close(em_ctx *ctx) {
    if (ctx->conf && clean_checkpoints(ctx))
        for (int i = 0; i < ctx->nrdds; i++)
            if (ctx->rdds[i] && ctx->rdds[i]->ckpt_state == CKPT_DONE) rm_tree(ctx->rdds[i]->ckpt_dir);
    if (ctx->ckpt_base) rmdir(ctx->ckpt_base); /* only when nothing is kept in it */
    free(ctx->ckpt_base);
    free(ctx->ckpt_base_for);
    ctx->ckpt_base = ctx->ckpt_base_for = NULL;
}
