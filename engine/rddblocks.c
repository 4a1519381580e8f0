/*
 * rddblocks.c -- an RDD's cached blocks by partition and executor (see
 * rddblocks.h): a sorted array, found by binary search.
 */
#include <stdlib.h>
#include <string.h>

#include "rddblocks.h"

static int cmp(const rdd_block *b, int part, const char *exec_id) {
    if (b->part != part) return b->part < part ? -1 : 1;
    return strcmp(b->exec_id, exec_id);
}

/* The index of (part, exec_id), or of where it would go; *found set. */
static int find(const rdd_blocks *r, int part, const char *exec_id, int *found) {
    int lo = 0, hi = r->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (cmp(&r->b[mid], part, exec_id) < 0) lo = mid + 1;
        else hi = mid;
    }
    *found = lo < r->n && cmp(&r->b[lo], part, exec_id) == 0;
    return lo;
}

/* Does an entry other than i hold part?  Its neighbours are the only
 * candidates, the array being sorted by partition first. */
static int part_elsewhere(const rdd_blocks *r, int i, int part) {
    return (i > 0 && r->b[i - 1].part == part) || (i + 1 < r->n && r->b[i + 1].part == part);
}

static void add(int *d_blocks, int64_t *d_mem, int64_t *d_disk, int nb, int64_t mem, int64_t disk) {
    if (d_blocks) *d_blocks += nb;
    if (d_mem) *d_mem += mem;
    if (d_disk) *d_disk += disk;
}

static void remove_at(rdd_blocks *r, int i, int *d_blocks, int64_t *d_mem, int64_t *d_disk) {
    rdd_block *b = &r->b[i];
    if (!part_elsewhere(r, i, b->part)) r->nparts--;
    r->mem -= b->mem;
    r->disk -= b->disk;
    add(d_blocks, d_mem, d_disk, -1, -b->mem, -b->disk);
    memmove(&r->b[i], &r->b[i + 1], sizeof *r->b * (size_t)(r->n - i - 1));
    r->n--;
}

int rdd_blocks_put(rdd_blocks *r, int part, const char *exec_id, int removed, int64_t mem, int64_t disk, int on_disk,
                   int *d_blocks, int64_t *d_mem, int64_t *d_disk) {
    int found, i = find(r, part, exec_id, &found);
    if (removed) {
        if (found) remove_at(r, i, d_blocks, d_mem, d_disk);
        return 0;
    }
    if (mem < 0) mem = 0;
    if (disk < 0) disk = 0;
    if (!found) {
        if (r->n == r->cap) {
            int cap = r->cap ? r->cap * 2 : 16;
            rdd_block *g = realloc(r->b, sizeof *g * (size_t)cap);
            if (!g) return -1;
            r->b = g;
            r->cap = cap;
        }
        memmove(&r->b[i + 1], &r->b[i], sizeof *r->b * (size_t)(r->n - i));
        r->n++;
        rdd_block *b = &r->b[i];
        memset(b, 0, sizeof *b);
        b->part = part;
        size_t n = strlen(exec_id);
        if (n >= sizeof b->exec_id) n = sizeof b->exec_id - 1;
        memcpy(b->exec_id, exec_id, n);
        if (!part_elsewhere(r, i, part)) r->nparts++;
        add(d_blocks, NULL, NULL, 1, 0, 0);
    }
    rdd_block *b = &r->b[i];
    r->mem += mem - b->mem;
    r->disk += disk - b->disk;
    add(NULL, d_mem, d_disk, 0, mem - b->mem, disk - b->disk);
    b->mem = mem;
    b->disk = disk;
    b->on_disk = on_disk != 0;
    return 0;
}

void rdd_blocks_drop_exec(rdd_blocks *r, const char *exec_id, int *d_blocks, int64_t *d_mem, int64_t *d_disk) {
    for (int i = r->n; i-- > 0;)
        if (!strcmp(r->b[i].exec_id, exec_id)) remove_at(r, i, d_blocks, d_mem, d_disk);
}

int rdd_blocks_on(const rdd_blocks *r, const char *exec_id, int64_t *mem, int64_t *disk) {
    int n = 0;
    *mem = *disk = 0;
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->b[i].exec_id, exec_id)) {
            n++;
            *mem += r->b[i].mem;
            *disk += r->b[i].disk;
        }
    return n;
}

void rdd_blocks_free(rdd_blocks *r) {
    free(r->b);
    memset(r, 0, sizeof *r);
}
