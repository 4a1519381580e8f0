/*
 * mapout.c -- the map-output tracker (see mapout.h).  The segment sizes
 * are kept as the map tasks' results carry them (engine/mapstatus.h).
 *
 * A location is kept once per executor and shared by the maps it wrote
 * (10,000 maps on 1,000 executors hold 1,000 strings): a reduce task's
 * description names each distinct location once, and its encoder's table
 * (engine/taskdesc.c) then tells them apart by address before it hashes
 * any bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mapout.h"
#include "mapstatus.h"

uint64_t mo_seg(const shuffle_out *so, int map, int part) {
    const uint8_t *s = map >= 0 && map < so->nmaps ? so->m[map].sizes : NULL;
    return s ? ms_seg(s, so->nparts, part) : 0;
}

/* An executor's interned location and the maps that refer to it. */
typedef struct loc_ent {
    char *s;
    uint32_t refs;
} loc_ent;

static void add_loc_bytes(void *v, void *c) {
    *(size_t *)c += sizeof(loc_ent) + strlen(((loc_ent *)v)->s) + 1;
}

size_t mo_bytes(const shuffle_out *so) {
    size_t n = sizeof *so + ((size_t)so->nmaps + 1) * (sizeof *so->m + 1);
    for (int j = 0; j < so->nmaps; j++) {
        if (so->m[j].loc && so->m[j].loc_own) n += strlen(so->m[j].loc) + 1;
        n += so->m[j].sizes_len;
    }
    idmap_foreach(&so->locs, add_loc_bytes, &n);
    return n;
}

/* exec's location loc, for one more map: its interned copy, or (when exec
 * is known at another location) a copy of the map's own (*own set).  NULL
 * when out of memory. */
static char *loc_take(shuffle_out *so, int exec, const char *loc, int *own) {
    uint64_t key = (uint32_t)exec;
    loc_ent *e = idmap_get(&so->locs, key);
    *own = 0;
    if (e && !strcmp(e->s, loc)) {
        e->refs++;
        return e->s;
    }
    if (e) {
        *own = 1;
        return strdup(loc);
    }
    if (!(e = malloc(sizeof *e))) return NULL;
    if (!(e->s = strdup(loc)) || idmap_put(&so->locs, key, e)) {
        free(e->s);
        free(e);
        return NULL;
    }
    e->refs = 1;
    return e->s;
}

/* m no longer refers to its location. */
static void loc_drop(shuffle_out *so, map_status *m) {
    if (!m->loc) return;
    if (m->loc_own) {
        free(m->loc);
    } else {
        uint64_t key = (uint32_t)m->exec;
        loc_ent *e = idmap_get(&so->locs, key);
        if (e && e->s == m->loc && !--e->refs) {
            idmap_del(&so->locs, key);
            free(e->s);
            free(e);
        }
    }
    m->loc = NULL;
    m->loc_own = 0;
}

uint64_t mo_accurate(const shuffle_out *so) { return so->highly ? so->accurate : 0; }

void mo_configure(mapout *mo, int64_t highly_min, int64_t accurate) {
    mo->highly_min = highly_min > 0 && highly_min <= INT32_MAX ? (int)highly_min : 0;
    mo->accurate = accurate > 0 ? (uint64_t)accurate : 0;
}

/* The tracker follows the shuffles alive: a map by id, not an array
 * indexed by every id the context ever handed out. */
shuffle_out *mo_find(mapout *mo, uint32_t id) { return idmap_get(&mo->s, id); }

shuffle_out *mo_get(mapout *mo, uint32_t id, int nmaps, int nparts) {
    shuffle_out *so = mo_find(mo, id);
    if (so) return so;
    if (!(so = calloc(1, sizeof *so)) || !(so->m = calloc((size_t)nmaps + 1, sizeof *so->m)) ||
        !(so->merged = calloc((size_t)nmaps + 1, 1))) {
        if (so) free(so->m);
        free(so);
        return NULL;
    }
    so->id = id;
    so->nmaps = nmaps;
    so->nparts = nparts;
    so->highly = nparts > (mo->highly_min ? mo->highly_min : MO_HIGHLY_COMPRESS_DEFAULT);
    so->accurate = mo->accurate ? mo->accurate : MO_ACCURATE_BLOCK_DEFAULT;
    if (idmap_put(&mo->s, id, so)) {
        free(so->m);
        free(so->merged);
        free(so);
        return NULL;
    }
    __atomic_fetch_add(&mo->n, 1, __ATOMIC_RELAXED); /* read by em_get_stats */
    return so;
}

int mo_set(shuffle_out *so, int map, int exec, uint64_t attempt, const char *loc, uint8_t *sizes, size_t len) {
    map_status *m = &so->m[map];
    if (sizes && ms_check(sizes, len, so->nparts, NULL)) {
        free(sizes);
        return -1;
    }
    int own;
    char *l = loc_take(so, exec, loc ? loc : "", &own);
    if (!l) {
        free(sizes);
        return -2;
    }
    if (!m->have) so->navail++;
    loc_drop(so, m); /* after the take: the same location is not freed between */
    free(m->sizes);
    m->loc = l;
    m->loc_own = own;
    m->sizes = sizes;
    m->sizes_len = sizes ? (uint32_t)len : 0;
    m->exec = exec;
    m->attempt = attempt;
    m->have = 1;
    return 0;
}

void mo_unset(shuffle_out *so, int map) {
    map_status *m = &so->m[map];
    if (m->have) so->navail--;
    loc_drop(so, m);
    free(m->sizes);
    memset(m, 0, sizeof *m);
}

static void so_free(void *p) {
    shuffle_out *so = p;
    for (int j = 0; j < so->nmaps; j++) {
        loc_drop(so, &so->m[j]);
        free(so->m[j].sizes);
    }
    idmap_free(&so->locs, NULL); /* the drops emptied it */
    free(so->m);
    free(so->merged);
    free(so);
}

void mo_remove(mapout *mo, uint32_t id) {
    shuffle_out *so = idmap_del(&mo->s, id);
    if (!so) return;
    __atomic_fetch_sub(&mo->n, 1, __ATOMIC_RELAXED);
    so_free(so);
}

void mo_free(mapout *mo) {
    idmap_free(&mo->s, so_free);
    mo->n = 0;
}
