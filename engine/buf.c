/*
 * buf.c -- growable byte buffers (see buf.h).
 */
#include <stdlib.h>

#include "buf.h"
#include "ember.h"

int ebuf_grow(ebuf *b, size_t extra) {
    size_t need = b->len + extra, cap = b->cap ? b->cap : 256;
    if (need < b->len) return EM_ENOMEM; /* overflow */
    while (cap < need) cap = cap * 2 > cap ? cap * 2 : need;
    uint8_t *p = realloc(b->p, cap);
    if (!p) return EM_ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

void ebuf_free(ebuf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

uint8_t *ebuf_steal(ebuf *b, size_t *len) {
    uint8_t *p = b->p;
    if (len) *len = b->len;
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}
