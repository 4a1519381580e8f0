/*
 * mapout.c -- the map-output tracker (see mapout.h).  The segment sizes
 * are kept as the map tasks' results carry them (engine/mapstatus.h).
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

size_t mo_bytes(const shuffle_out *so) {
    size_t n = sizeof *so + ((size_t)so->nmaps + 1) * (sizeof *so->m + 1);
    for (int j = 0; j < so->nmaps; j++) {
        if (so->m[j].loc) n += strlen(so->m[j].loc) + 1;
        n += so->m[j].sizes_len;
    }
    return n;
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
    char *l = strdup(loc ? loc : "");
    if (!l) {
        free(sizes);
        return -2;
    }
    if (!m->have) so->navail++;
    free(m->loc);
    free(m->sizes);
    m->loc = l;
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
    free(m->loc);
    free(m->sizes);
    memset(m, 0, sizeof *m);
}

static void so_free(void *p) {
    shuffle_out *so = p;
    for (int j = 0; j < so->nmaps; j++) {
        free(so->m[j].loc);
        free(so->m[j].sizes);
    }
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
