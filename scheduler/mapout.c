/*
 * mapout.c -- the map-output tracker (see mapout.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mapout.h"

/* Shuffle ids are small and dense (the context numbers them from 0), so
 * the tracker is an array indexed by id: finding a shuffle costs the same
 * however many the context has made. */
shuffle_out *mo_find(mapout *mo, uint32_t id) { return id < (uint32_t)mo->cap ? mo->s[id] : NULL; }

shuffle_out *mo_get(mapout *mo, uint32_t id, int nmaps, int nparts) {
    shuffle_out *so = mo_find(mo, id);
    if (so) return so;
    if (id >= (uint32_t)mo->cap) {
        size_t cap = mo->cap ? (size_t)mo->cap * 2 : 16;
        while (cap <= id) cap *= 2;
        if (cap > INT32_MAX) return NULL;
        shuffle_out **s = realloc(mo->s, sizeof *s * cap);
        if (!s) return NULL;
        memset(s + mo->cap, 0, sizeof *s * (cap - (size_t)mo->cap));
        mo->s = s;
        mo->cap = (int)cap;
    }
    if (!(so = calloc(1, sizeof *so)) || !(so->m = calloc((size_t)nmaps + 1, sizeof *so->m)) ||
        !(so->merged = calloc((size_t)nmaps + 1, 1))) {
        if (so) free(so->m);
        free(so);
        return NULL;
    }
    so->id = id;
    so->nmaps = nmaps;
    so->nparts = nparts;
    mo->s[id] = so;
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

static void so_free(shuffle_out *so) {
    for (int j = 0; j < so->nmaps; j++) {
        free(so->m[j].loc);
        free(so->m[j].seg);
    }
    free(so->m);
    free(so->merged);
    free(so);
}

void mo_remove(mapout *mo, uint32_t id) {
    shuffle_out *so = mo_find(mo, id);
    if (!so) return;
    mo->s[id] = NULL;
    __atomic_fetch_sub(&mo->n, 1, __ATOMIC_RELAXED);
    so_free(so);
}

void mo_free(mapout *mo) {
    for (int i = 0; i < mo->cap; i++)
        if (mo->s[i]) so_free(mo->s[i]);
    free(mo->s);
    memset(mo, 0, sizeof *mo);
}
