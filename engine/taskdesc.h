/*
 * taskdesc.h -- the task description: what one task computes, as the
 * scheduler builds it and as an executor receives it, and its msgpack
 * encoding.  Local executor threads receive exactly the bytes a remote
 * executor would.
 *
 * A task computes one partition: a tree of plan nodes (sources at the
 * leaves, narrow operators above them, CONCAT where several parent
 * partitions feed one, CACHED where a persisted RDD may be read or stored),
 * whose records flow into one sink (the action's per-partition part, or a
 * shuffle write).  User functions travel as fnrefs, their captured
 * arguments as blobs copied into the description.
 *
 * Built by the scheduler with borrowed pointers (blobs, strings, children
 * point into the RDD graph); decoded descriptions own everything through
 * their arena and the encoded bytes they were given.
 */
#ifndef EM_TASKDESC_H
#define EM_TASKDESC_H

#include <stdint.h>

#include "buf.h"
#include "codec.h"
#include "fnref.h"

/* How a reduce task reads its shuffle's segments (PN_SHUFFLE's mode; the
 * shuffle reader, shuffle.h, does it). */
enum sr_mode {
    SR_PASS,    /* records as they come, map 0's segment first */
    SR_AGG,     /* one record per key: combined with agg (unordered) */
    SR_SORT,    /* ordered by key (rec_key_cmp), ascending or descending */
    SR_GROUP,   /* (key, list of values) per key, keys in ascending order */
    SR_COGROUP, /* values carry a tag byte, their side (0 .. sides-1), first;
                   emits (key, cogroup value) per key with the tags
                   stripped, keys ascending */
};

/* The most inputs one cogroup shuffle joins (em_cogroup_n). */
#define COGROUP_MAX_SIDES 16
/* Most reduce partitions a shuffle may have (its map outputs' index is 8
 * MiB then). */
#define SHUFFLE_MAX_PARTS (1 << 20)

typedef struct blob {
    const uint8_t *p;
    size_t len;
} blob;

/* PN_CKPT: a partition of a checkpointed RDD: the file at path, holding len
 * bytes of records (engine/checkpoint.c).  PN_PAIRED: two inputs (cartesian,
 * zip).  PN_COGROUP: a cogroup partition: its nchild (2 .. 16) inputs'
 * (key, value) records grouped by key, child k's values being side k (a
 * narrow input's chain, or a PN_SHUFFLE in mode SR_PASS). */
enum pn_type { PN_RECS = 1, PN_RANGE, PN_TEXT, PN_SHUFFLE, PN_OP, PN_CONCAT, PN_CACHED, PN_CKPT, PN_PAIRED, PN_COGROUP };

enum op_kind {
    OP_MAP = 1,
    OP_FILTER,
    OP_FLAT_MAP,
    OP_MAP_VALUES,
    OP_FLAT_MAP_VALUES,
    OP_KEY_BY,
    OP_MAP_PARTITIONS,
    OP_GLOM,
    OP_SAMPLE,
    OP_ZIP_INDEX,
    OP_FOLD,       /* fold the partition with fn (from the zero in data, when has_zero);
                      emit the encoded acc, nothing for an empty partition without zero */
    OP_UNIQUE_ID,  /* (record, start + step * i) for the partition's i-th record:
                      start = the partition, step = the partition count */
    OP_SPLIT,      /* keep a record when the partition's seeded uniform draw for it
                      lies in [lo, hi) (arg: two doubles): random_split */
    /* PN_PAIRED operators: two inputs, child 0 streamed, child 1 held: */
    OP_CARTESIAN,  /* (a, b) for every a of child 0 and b of child 1 */
    OP_ZIP,        /* (a_i, b_i); the two must have as many records */
    OP_ZIP_PARTITIONS, /* fn(partition, iter a, iter b, out, arg) */
    OP_AGG_LOCAL,  /* the partition aggregated (mode SR_AGG, with agg) or grouped
                      (SR_GROUP) by key as a reduce task would, with no shuffle:
                      its input is already hash-partitioned so */
};

/* Aggregation: create(v) (FN_NONE: the value itself, or merge_value(zero, v)
 * when has_zero), merge_value(c, v), merge_comb(c1, c2). */
typedef struct aggdesc {
    fnref create, merge_value, merge_comb;
    blob arg, zero;
    uint8_t has_zero;
    uint8_t rec_values; /* values are encoded records (tree_aggregate partials) */
} aggdesc;

typedef struct plan_node {
    uint8_t type, op;
    int32_t rdd_id, partition;
    fnref fn;           /* PN_OP */
    blob arg;           /* PN_OP */
    double fraction;    /* OP_SAMPLE */
    uint64_t seed;      /* OP_SAMPLE */
    uint8_t with_repl;  /* OP_SAMPLE */
    uint8_t has_zero;   /* OP_FOLD: data holds the zero; else the first record starts */
    /* PN_RANGE: count values start, start+step, ... (a count, not an end
     * bound, so no value past the slice is ever computed: the int64 limits
     * are reachable).  OP_ZIP_INDEX: start = first index. */
    int64_t start, step;
    uint64_t count;
    blob data;          /* PN_RECS with off 0: the records, batch-encoded */
    const char *path;   /* PN_TEXT, PN_CKPT */
    /* PN_TEXT: the split.  PN_RECS with off != 0: the records are not in
     * the description: they are partition `partition` of the parallelized
     * records whose srcdata id is off (srcdata.h), len bytes holding count
     * records, which the executor finds with src_get. */
    uint64_t off, len;
    uint8_t gz;         /* PN_TEXT */
    uint32_t shuffle_id;     /* PN_SHUFFLE */
    int32_t nmaps;           /* PN_SHUFFLE */
    const char *const *dirs; /* PN_SHUFFLE: nmaps entries, NULL = no output;
                                on the wire a table of distinct locations
                                (one per executor) and an index per map */
    const uint64_t *attempts; /* PN_SHUFFLE: nmaps ids of the attempts whose
                                 outputs are registered (NULL: all 0) */
    const uint64_t *seglens; /* PN_SHUFFLE: nmaps sizes of this partition's
                                segments, from the map-output tracker: 0
                                exactly when the map wrote nothing there,
                                else an estimate (scheduler/mapout.h) */
    uint8_t mode, combined;  /* PN_SHUFFLE: enum sr_mode, map-side combined */
    union {                  /* PN_SHUFFLE, one byte on the wire: */
        uint8_t descending;  /*   SR_SORT: order */
        uint8_t sides;       /*   SR_COGROUP: inputs (0: 2) */
    };
    aggdesc agg;             /* PN_SHUFFLE */
    uint8_t level;           /* PN_CACHED: storage level */
    uint64_t cache_key;      /* PN_CACHED: the context's cache namespace */
    int32_t nchild;
    struct plan_node **child;
} plan_node;

enum sink_kind {
    SK_COLLECT = 1, /* result: the records, batch-encoded */
    SK_COUNT,       /* result: int64 count (8 bytes, native) */
    SK_FOLD,        /* fold with zero (fn, arg, zero): result: the acc record, or nothing if empty and !has_zero */
    SK_FOREACH,     /* fn(rec) for each */
    SK_FOREACH_PART,/* fn(partition, iter) */
    SK_TAKE,        /* first n records */
    SK_SAVE,        /* lines to path/part-NNNNN (path: the attempt directory) */
    SK_SHUFFLE,     /* shuffle write; result: its segment sizes as a map
                       status (mapstatus.h), of the form n says: 0 a byte
                       per segment, else highly compressed, segments over
                       n bytes huge */
    SK_TOPN,        /* n smallest (descending: largest) records by rec_cmp */
    SK_KEYSAMPLE,   /* result: int64 count, then up to n sampled keys (reservoir, seed) */
    SK_CHECKPOINT,  /* the partition to path/part-NNNNN (path: the RDD's checkpoint
                       directory); result: u64 bytes of records, u64 records */
};

enum partitioner_kind { PT_HASH = 1, PT_RANGE, PT_ROUNDROBIN };

typedef struct plan_sink {
    uint8_t kind;
    fnref fn;
    blob arg, zero;
    uint8_t has_zero;
    uint64_t n, seed;
    uint8_t descending;
    const char *path;
    uint32_t shuffle_id;
    int32_t nparts;
    uint8_t partitioner, combine;
    blob bounds;      /* PT_RANGE: nparts-1 keys as a list (em_list_next) */
    aggdesc agg;      /* combine */
    uint8_t compress; /* SK_SAVE: SAVE_PLAIN or SAVE_GZIP */
} plan_sink;

enum save_codec { SAVE_PLAIN = 0, SAVE_GZIP = 1 };

/* SK_SAVE: the attempts' area, a sibling of the sink's path (the directory
 * the committed part files are moved to): <path>.attempts.  Each attempt
 * writes <area>/part-NNNNN.attempt-TASK; the driver creates the area before
 * the job and removes it before it publishes, so an attempt still writing
 * then writes to an unlinked file and one that starts later cannot open
 * its file (engine/actions.c, executor/sinks.c). */
#define SAVE_ATTEMPTS_SUFFIX ".attempts"

typedef struct task_desc {
    uint64_t task_id;
    uint32_t stage_id, attempt;
    int32_t partition;
    uint8_t binhash[32];
    /* Settings the executor applies to this task (from the driver's conf). */
    uint64_t mem_budget, block_bytes, max_record;
    bf_codec codec;      /* of spilled blocks but a map output's: the
                            reduce side's, a local aggregation's (checked
                            when decoded) */
    bf_codec out_codec;  /* of a shuffle map task's output blocks and its
                            own spills: the scheduler's choice (tasksched.c),
                            checked as codec */
    const char *faults;  /* ember.test.faults (faults.h), NULL when none */
    const char *faults_dir; /* ember.test.faults.dir (the holds' gates),
                               NULL when none */
    plan_sink sink;
    plan_node *root;
    /* Decoded descriptions only: */
    void *arena;
    uint8_t *bytes;
} task_desc;

/* Append the encoding of t to out.  0 or EM_ENOMEM. */
int taskdesc_encode(const task_desc *t, ebuf *out);
/* Decode; takes ownership of bytes (malloc'd) in every case.  0, or
 * EM_EPROTO with a message saying what is malformed. */
int taskdesc_decode(uint8_t *bytes, size_t len, task_desc **out);
void taskdesc_free(task_desc *t);

#endif
