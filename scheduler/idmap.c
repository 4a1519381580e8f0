/*
 * idmap.c -- id -> pointer map (see idmap.h).  Load kept at most 1/2; the
 * table shrinks again when a quarter of that is used.
 */
#include <stdlib.h>

#include "idmap.h"

static uint32_t slot_of(const idmap *m, uint64_t id) {
    return (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & (m->cap - 1);
}

void *idmap_get(const idmap *m, uint64_t id) {
    if (!m->cap) return NULL;
    for (uint32_t i = slot_of(m, id);; i = (i + 1) & (m->cap - 1)) {
        if (!m->vals[i]) return NULL;
        if (m->keys[i] == id) return m->vals[i];
    }
}

static int resize(idmap *m, uint32_t cap) {
    idmap t = {calloc(cap, sizeof(uint64_t)), calloc(cap, sizeof(void *)), cap, 0};
    if (!t.keys || !t.vals) {
        free(t.keys);
        free(t.vals);
        return -1;
    }
    for (uint32_t i = 0; i < m->cap; i++)
        if (m->vals[i]) {
            uint32_t j = slot_of(&t, m->keys[i]);
            while (t.vals[j]) j = (j + 1) & (cap - 1);
            t.keys[j] = m->keys[i];
            t.vals[j] = m->vals[i];
            t.n++;
        }
    free(m->keys);
    free(m->vals);
    *m = t;
    return 0;
}

int idmap_put(idmap *m, uint64_t id, void *p) {
    if ((m->n + 1) * 2 > m->cap && resize(m, m->cap ? m->cap * 2 : 16)) return -1;
    uint32_t i = slot_of(m, id);
    while (m->vals[i] && m->keys[i] != id) i = (i + 1) & (m->cap - 1);
    if (!m->vals[i]) m->n++;
    m->keys[i] = id;
    m->vals[i] = p;
    return 0;
}

void *idmap_del(idmap *m, uint64_t id) {
    if (!m->cap) return NULL;
    uint32_t i = slot_of(m, id);
    while (m->vals[i] && m->keys[i] != id) i = (i + 1) & (m->cap - 1);
    void *p = m->vals[i];
    if (!p) return NULL;
    /* Backward shift: move later entries of the run into the hole when
     * their home slot does not lie between the hole and them. */
    for (uint32_t j = i;;) {
        m->vals[i] = NULL;
        for (;;) {
            j = (j + 1) & (m->cap - 1);
            if (!m->vals[j]) goto done;
            uint32_t home = slot_of(m, m->keys[j]);
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) break;
        }
        m->keys[i] = m->keys[j];
        m->vals[i] = m->vals[j];
        i = j;
    }
done:
    m->n--;
    if (m->cap > 16 && m->n * 8 < m->cap) resize(m, m->cap / 2); /* on failure it just stays large */
    return p;
}

void idmap_free(idmap *m, void (*fn)(void *)) {
    for (uint32_t i = 0; i < m->cap; i++)
        if (m->vals[i] && fn) fn(m->vals[i]);
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
}

void idmap_foreach(const idmap *m, void (*fn)(void *val, void *c), void *c) {
    for (uint32_t i = 0; i < m->cap; i++)
        if (m->vals[i]) fn(m->vals[i], c);
}
