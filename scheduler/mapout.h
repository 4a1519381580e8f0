/*
 * mapout.h -- the map-output tracker: for each shuffle, which map outputs
 * exist, where they live, and how large each segment is.  The DAG scheduler
 * registers outputs as map tasks succeed and forgets them on fetch failure;
 * a shuffle whose every map output is registered lets a later job skip its
 * map stage.
 */
#ifndef EM_MAPOUT_H
#define EM_MAPOUT_H

#include <stdint.h>

#include "idmap.h"

typedef struct map_status {
    int have;
    int exec;           /* the executor that wrote it */
    uint64_t attempt;   /* the attempt (task id) whose output is registered */
    char *loc;          /* where the output lives (a directory locally) */
    uint64_t *seg;      /* nparts segment sizes */
} map_status;

typedef struct shuffle_out {
    uint32_t id;
    int nmaps, nparts, navail;
    map_status *m;
    uint8_t *merged;    /* per map: its accumulator additions were counted
                           (kept when the output is lost and recomputed) */
} shuffle_out;

typedef struct mapout {
    idmap s;         /* shuffle id -> shuffle_out */
    int n;           /* shuffles tracked (read atomically by em_get_stats) */
} mapout;

/* Find or create the record of a shuffle.  NULL on ENOMEM. */
shuffle_out *mo_get(mapout *mo, uint32_t id, int nmaps, int nparts);
shuffle_out *mo_find(mapout *mo, uint32_t id);
/* Register attempt `attempt` of map `map`, written by executor exec at loc
 * (copied; takes the malloc'd segs in every case). */
int mo_set(shuffle_out *so, int map, int exec, uint64_t attempt, const char *loc, uint64_t *segs);
void mo_unset(shuffle_out *so, int map);
/* Forget a shuffle entirely (its slot stays, NULL). */
void mo_remove(mapout *mo, uint32_t id);
void mo_free(mapout *mo);

#endif
