/*
 * rdd.h -- the lineage graph: what an RDD is made of.  Internal.
 *
 * An RDD is immutable once declared.  Narrow RDDs name their parent(s) and
 * the operator that maps a parent partition (or several, for coalesce, or
 * one of two, for union) to theirs.  A shuffled RDD names its parent through
 * a shuffle dependency: the parent's records are partitioned (and, for the
 * aggregating operations, combined) by map tasks, and its partitions read
 * them back in a given mode.  The graph knows nothing of stages or tasks;
 * scheduler/ derives those from it.
 */
#ifndef EM_RDD_H
#define EM_RDD_H

#include <stdint.h>

#include "buf.h"
#include "ember.h"
#include "taskdesc.h"
#include "textfile.h"

enum rdd_kind {
    RDD_RECS = 1,  /* parallelize: src, the encoded records (srcdata.h) */
    RDD_RANGE,
    RDD_TEXT,
    RDD_OP,        /* one narrow operator over parent (op_kind) */
    RDD_UNION,     /* parent then parent2 */
    RDD_COALESCE,  /* partition i = parent partitions [groups[i], groups[i+1]) */
    RDD_SHUFFLED,  /* shuffle dependency on parent */
    RDD_CHECKPOINT,/* checkpointed: no parents, partitions read from the files
                      of ckpt_dir (the kind it had is gone with its lineage) */
    RDD_PAIRED,    /* op (OP_CARTESIAN, OP_ZIP, OP_ZIP_PARTITIONS) over a
                      partition of parent and one of parent2: cartesian's
                      partition p pairs p / parent2->nparts with
                      p % parent2->nparts, the zips p with p */
    RDD_COGROUP,   /* cogroup of deps[0 .. ndeps): partition i groups by key
                      partition i of each dependency, the records of deps[k]
                      being side k; a dependency is the input itself when
                      it is hash-partitioned into as many partitions
                      (narrow, one-to-one), else an internal RDD_SHUFFLED
                      (SR_PASS, PT_HASH) over it (a shuffle dependency) */
};

/* A checkpoint's progress (engine/checkpoint.c). */
enum ckpt_state { CKPT_NONE = 0, CKPT_MARKED, CKPT_WRITING, CKPT_DONE };

struct em_rdd {
    em_ctx *ctx;
    int id;
    int refs;                   /* the user's (until em_rdd_release), each child
                                   RDD's, each running job's; atomic */
    enum rdd_kind kind;
    int nparts;
    char *name;
    const char *opname;         /* "map", "reduce_by_key", ... for the lineage */
    em_rdd *parent, *parent2;
    em_rdd **deps;              /* RDD_COGROUP: its ndeps dependencies (parent,
                                   parent2 NULL), one reference each */
    int ndeps;
    uint8_t dep_only;           /* an RDD_SHUFFLED that is a cogroup's shuffle
                                   dependency, not an RDD of its own: the
                                   lineage draws a stage boundary instead */

    /* RDD_OP */
    uint8_t op;
    fnref fn;
    uint8_t *arg;
    size_t arglen;
    double fraction;
    uint64_t seed;
    int with_repl;
    int64_t *zip_starts;        /* OP_ZIP_INDEX: first index of each partition */

    /* Sources */
    struct srcdata *src;        /* RDD_RECS (NULL for em_empty): one reference */
    uint8_t *data;              /* OP_FOLD: the encoded zero, or NULL */
    size_t datalen;
    int64_t start, end, step;   /* RDD_RANGE */
    text_split *splits;         /* RDD_TEXT: nparts splits */

    /* RDD_COALESCE */
    int *groups;

    /* RDD_SHUFFLED */
    uint32_t shuffle_id;
    uint8_t mode;               /* enum sr_mode */
    uint8_t partitioner;        /* enum partitioner_kind */
    uint8_t combine;            /* map-side combine */
    uint8_t descending;
    uint8_t sides;              /* SR_COGROUP: inputs (2 .. 16) */
    ebuf bounds;                /* PT_RANGE bounds (list) */
    aggdesc agg;                /* owns its fnrefs and blobs */

    /* Hash-partitioned by key into nparts (known partitioner): lets lookup
     * scan one partition.  Kept by filter, map_values and friends. */
    int hash_partitioned;

    int persist_level;          /* 0: not persisted */
    /* Persisted RDDs: per partition, the executor that last computed (so
     * cached) it, -1 unknown.  Written and read by the scheduler's thread
     * only, for locality (allocated there). */
    int *cache_exec;

    /* The scheduler thread's walk marks (scheduler/stage.c). */
    uint32_t sched_mark;

    /* Checkpoints (engine/checkpoint.c).  State changes under ctx->mu; the
     * truncation (kind := RDD_CHECKPOINT, parents dropped) happens on the
     * scheduler's thread. */
    uint8_t ckpt_state;         /* enum ckpt_state */
    char *ckpt_dir;             /* from CKPT_MARKED: where its files go */
    uint64_t *ckpt_lens;        /* RDD_CHECKPOINT: bytes of records in each
                                   partition's file */
};

/* Register a new RDD of ctx (zeroed, id assigned).  NULL on ENOMEM. */
em_rdd *rdd_new(em_ctx *ctx, enum rdd_kind kind, int nparts, const char *opname);
/* A narrow operator over parent; arg copied; fn named. NULL on failure. */
em_rdd *rdd_op(em_rdd *parent, uint8_t op, const char *opname, void *fn, const void *arg,
               size_t arglen);
/* A shuffled RDD over parent.  agg: NULL for none (its fnrefs are copied). */
em_rdd *rdd_shuffled(em_rdd *parent, const char *opname, int nparts, uint8_t mode,
                     uint8_t partitioner, const aggdesc *agg, uint8_t combine);
/* Free what an RDD owns (the context frees the struct). */
void rdd_free(em_rdd *r);
/* Set r's parents (b may be NULL), each gaining a reference. */
void rdd_set_parents(em_rdd *r, em_rdd *a, em_rdd *b);
/* r's parents (up to RDD_MAX_PARENTS) into out, first parent first;
 * returns their count. */
#define RDD_MAX_PARENTS 16 /* a cogroup's sides, COGROUP_MAX_SIDES */
int rdd_parents(const em_rdd *r, em_rdd **out);
/* Take and drop references.  The last drop destroys the RDD: the context
 * forgets it (its shuffle's outputs and files, its cached blocks, its
 * registry slot), its parents lose a reference, its memory is freed. */
void rdd_retain(em_rdd *r);
void rdd_release(em_rdd *r);
/* Fill an aggdesc: names the functions, copies arg and zero into owned
 * blobs.  0 or < 0 (message set). */
int agg_make(aggdesc *a, void *create, void *merge_value, void *merge_comb, const void *arg,
             size_t arglen, const void *zero, size_t zlen, int has_zero);
void agg_clear(aggdesc *a);
/* Compose an operation of others: see rdd.c.  compose_end returns result
 * (NULL stays NULL, with the helpers freed). */
struct rdd_scope;
void compose_begin(struct rdd_scope *sc);
em_rdd *compose_end(struct rdd_scope *sc, em_rdd *result);

#endif
