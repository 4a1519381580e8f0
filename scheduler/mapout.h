/*
 * mapout.h -- the map-output tracker: for each shuffle, which map outputs
 * exist, where they live, and how large each segment is.  The DAG scheduler
 * registers outputs as map tasks succeed and forgets them on fetch failure;
 * a shuffle whose every map output is registered lets a later job skip its
 * map stage.
 *
 * Segment sizes are kept compressed, as Spark's MapStatus keeps them: a
 * shuffle of 10,000 maps by 10,000 reduce partitions would otherwise hold
 * 10^8 exact sizes (800 MB) on the driver.  A shuffle of at most
 * ember.shuffle.minNumPartitionsToHighlyCompress partitions keeps one byte
 * per segment (Spark's CompressedMapStatus): the size's logarithm base 1.1,
 * rounded up (mo_compress_size).  A wider one keeps, per map output
 * (Spark's HighlyCompressedMapStatus), a bitmap of its empty segments, the
 * average size of its non-empty segments that are not huge, and the byte of
 * each huge one (larger than ember.shuffle.accurateBlockThreshold), sorted
 * by reduce partition.  Either way a size read back (mo_seg) is zero
 * exactly when the map task wrote nothing for that partition, and otherwise
 * an estimate: within about 10% of the size for a byte, saturating at
 * 1.1^255 bytes (about 33 GiB); the average for a segment neither empty nor
 * huge.  Readers therefore take a segment's length from its index file, its
 * in-memory output or the shuffle server's answer, never from the tracker;
 * the tracker's zero still means "nothing to read".
 */
#ifndef EM_MAPOUT_H
#define EM_MAPOUT_H

#include <stddef.h>
#include <stdint.h>

#include "idmap.h"

/* Spark's defaults of spark.shuffle.minNumPartitionsToHighlyCompress and
 * spark.shuffle.accurateBlockThreshold. */
#define MO_HIGHLY_COMPRESS_DEFAULT 2000
#define MO_ACCURATE_BLOCK_DEFAULT ((uint64_t)100 << 20)

typedef struct map_status {
    int have;
    int exec;           /* the executor that wrote it */
    uint64_t attempt;   /* the attempt (task id) whose output is registered */
    char *loc;          /* where the output lives (a directory locally) */
    void *sizes;        /* its segment sizes, compressed (mapout.c; read them
                           with mo_seg); NULL when the result carried none */
} map_status;

typedef struct shuffle_out {
    uint32_t id;
    int nmaps, nparts, navail;
    int highly;         /* sizes are highly compressed (nparts above the
                           setting when the shuffle was first tracked) */
    uint64_t accurate;  /* highly: a segment larger is huge (kept as a byte) */
    map_status *m;
    uint8_t *merged;    /* per map: its accumulator additions were counted
                           (kept when the output is lost and recomputed) */
} shuffle_out;

typedef struct mapout {
    idmap s;         /* shuffle id -> shuffle_out */
    int n;           /* shuffles tracked (read atomically by em_get_stats) */
    int highly_min;  /* ember.shuffle.minNumPartitionsToHighlyCompress (0: the default) */
    uint64_t accurate; /* ember.shuffle.accurateBlockThreshold (0: the default) */
} mapout;

/* Use the settings for shuffles tracked from now on (those tracked keep
 * theirs).  highly_min: a shuffle of more partitions is highly compressed;
 * accurate: the size past which a segment of such a shuffle is huge.  A
 * value <= 0 restores its default.  Cannot fail. */
void mo_configure(mapout *mo, int64_t highly_min, int64_t accurate);
/* Find or create the record of a shuffle.  NULL on ENOMEM. */
shuffle_out *mo_get(mapout *mo, uint32_t id, int nmaps, int nparts);
shuffle_out *mo_find(mapout *mo, uint32_t id);
/* Register attempt `attempt` of map `map`, written by executor exec at loc
 * (copied), with its so->nparts exact segment sizes segs (malloc'd; taken,
 * compressed and freed in every case; NULL: the result carried none).  0,
 * or -2 when out of memory (the map's registration is left unchanged). */
int mo_set(shuffle_out *so, int map, int exec, uint64_t attempt, const char *loc, uint64_t *segs);
void mo_unset(shuffle_out *so, int map);
/* The tracker's size of map's segment of reduce partition part: 0 exactly
 * when the map task wrote nothing there (or registered no sizes), else an
 * estimate (see above). */
uint64_t mo_seg(const shuffle_out *so, int map, int part);
/* The bytes the tracker holds for a shuffle: its record, every map's
 * status, location and compressed sizes. */
size_t mo_bytes(const shuffle_out *so);
/* Forget a shuffle entirely (its slot stays, NULL). */
void mo_remove(mapout *mo, uint32_t id);
void mo_free(mapout *mo);

/* Spark's MapStatus.compressSize: 0 for 0, 1 for 1, else
 * min(255, ceil(log(size) / log(1.1))). */
uint8_t mo_compress_size(uint64_t size);
/* Spark's MapStatus.decompressSize: 0 for 0, else 1.1^c (truncated). */
uint64_t mo_decompress_size(uint8_t c);

#endif
