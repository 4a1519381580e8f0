/*
 * buf.c -- growable byte buffers (see buf.h).
 *
 * Large buffers (cached partitions, collected results, packed blocks) are
 * written once right after they grow, so their cost is dominated by page
 * faults on fresh memory; on the virtual machines we measured, a 4 KiB
 * fault costs microseconds.  Past HUGE_MIN bytes a buffer therefore grows
 * into 2 MiB-aligned memory advised for transparent huge pages (one fault
 * per 2 MiB where the kernel allows), at the price of copying on growth,
 * which doubling amortizes to one extra pass.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "buf.h"
#include "ember.h"

#define HUGE_PAGE ((size_t)2 << 20)
#define HUGE_MIN ((size_t)4 << 20)

int ebuf_grow(ebuf *b, size_t extra) {
    size_t need = b->len + extra, cap = b->cap ? b->cap : 256;
    if (need < b->len) return EM_ENOMEM; /* overflow */
    while (cap < need) cap = cap * 2 > cap ? cap * 2 : need;
    if (cap >= HUGE_MIN) {
        void *p = NULL;
        cap = (cap + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        if (posix_memalign(&p, HUGE_PAGE, cap)) return EM_ENOMEM;
        madvise(p, cap, MADV_HUGEPAGE); /* a hint: failure only costs speed */
        if (b->len) memcpy(p, b->p, b->len);
        free(b->p);
        b->p = p;
        b->cap = cap;
        return 0;
    }
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
