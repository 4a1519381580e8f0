/*
 * mapout.c -- the map-output tracker (see mapout.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mapout.h"

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
    if (idmap_put(&mo->s, id, so)) {
        free(so->m);
        free(so->merged);
        free(so);
        return NULL;
    }
    __atomic_fetch_add(&mo->n, 1, __ATOMIC_RELAXED); /* read by em_get_stats */
    return so;
}

int mo_set(shuffle_out *so, int map, int exec, uint64_t attempt, const char *loc, uint64_t *segs) {
    map_status *m = &so->m[map];
    char *l = strdup(loc ? loc : "");
    if (!l) {
        free(segs);
        return -2;
    }
    if (!m->have) so->navail++;
    free(m->loc);
    free(m->seg);
    m->loc = l;
    m->seg = segs;
    m->exec = exec;
    m->attempt = attempt;
    m->have = 1;
    return 0;
}

void mo_unset(shuffle_out *so, int map) {
    map_status *m = &so->m[map];
    if (m->have) so->navail--;
    free(m->loc);
    free(m->seg);
    memset(m, 0, sizeof *m);
}

static void so_free(void *p) {
    shuffle_out *so = p;
    for (int j = 0; j < so->nmaps; j++) {
        free(so->m[j].loc);
        free(so->m[j].seg);
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
