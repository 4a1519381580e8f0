/*
 * mapout.h -- the map-output tracker: for each shuffle, which map outputs
 * exist, where they live, and how large each segment is.  The DAG scheduler
 * registers outputs as map tasks succeed and forgets them on fetch failure;
 * a shuffle whose every map output is registered lets a later job skip its
 * map stage.
 *
 * Segment sizes are kept compressed, as each map task's result carries
 * them (engine/mapstatus.h, Spark's MapStatus): a shuffle of 10,000 maps
 * by 10,000 reduce partitions would otherwise hold 10^8 exact sizes (800
 * MB) on the driver.  A shuffle of at most
 * ember.shuffle.minNumPartitionsToHighlyCompress partitions has a byte per
 * segment (Spark's CompressedMapStatus); a wider one is highly compressed
 * (Spark's HighlyCompressedMapStatus), segments larger than
 * ember.shuffle.accurateBlockThreshold kept as huge.  The tracker decides
 * which when it first tracks a shuffle, and the map tasks' descriptions
 * say it (mo_accurate).  A size read back (mo_seg) is zero exactly when
 * the map task wrote nothing for that partition, and otherwise an
 * estimate; readers therefore take a segment's length from its index
 * file, its in-memory output or the shuffle server's answer, never from
 * the tracker.
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
    char *loc;          /* where the output lives (a directory locally):
                           its executor's one copy, shared by the maps it
                           wrote there, unless loc_own */
    int loc_own;
    uint8_t *sizes;     /* its segment sizes, compressed (mapstatus.h; read
                           them with mo_seg); NULL when the result carried none */
    uint32_t sizes_len;
} map_status;

typedef struct shuffle_out {
    uint32_t id;
    int nmaps, nparts, navail;
    int highly;         /* sizes are highly compressed (nparts above the
                           setting when the shuffle was first tracked) */
    uint64_t accurate;  /* highly: a segment larger is huge (kept as a byte) */
    map_status *m;
    idmap locs;         /* executor -> its location, interned (mapout.c) */
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
 * (copied), with its compressed segment sizes: len bytes at sizes, a
 * status of so->nparts segments (mapstatus.h; malloc'd, taken in every
 * case; NULL: the result carried none).  0; -1 when the status is
 * malformed, -2 when out of memory (the map's registration is left
 * unchanged either way). */
int mo_set(shuffle_out *so, int map, int exec, uint64_t attempt, const char *loc, uint8_t *sizes, size_t len);
/* The accurate threshold a map task of so encodes its status with
 * (ms_encode): 0 for a byte per segment, else the size past which a
 * segment of a highly compressed status is huge. */
uint64_t mo_accurate(const shuffle_out *so);
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

#endif
