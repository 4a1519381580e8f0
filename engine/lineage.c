/*
 * lineage.c -- em_lineage: the printable lineage of an RDD, drawn as
 * Spark's toDebugString draws it:
 *
 *   (4) reduce_by_key[3]
 *    +-(4) flat_map[2]
 *       |  text_file[1] words.txt
 *
 * Each stage's first RDD shows its partition count; a shuffle dependency
 * starts a new stage one column deeper, marked "+-"; narrow parents
 * continue their stage's column, marked "|".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "rdd.h"

static const char *level_name(int l) {
    switch (l) {
    case EM_MEMORY_ONLY: return " [Memory Deserialized 1x Replicated]";
    case EM_MEMORY_AND_DISK: return " [Memory and Disk 1x Replicated]";
    case EM_DISK_ONLY: return " [Disk 1x Replicated]";
    }
    return "";
}

/* One line to draw: an RDD with its prefix, whether its partition count
 * shows, and the column its parents continue in. */
typedef struct dframe {
    const em_rdd *r;
    int show_n, depth;
    char lead[300], col[300];
} dframe;

/* Drawn depth-first over an explicit stack, first parents first (a lineage
 * of 10,000 RDDs must not recurse).  Past 64 levels a path ends in "...";
 * an RDD reached a second time (a diamond: both sides of a join from one
 * RDD) is drawn once more without its parents, so the text stays linear in
 * the graph's size. */
static int draw(ebuf *b, const em_rdd *root) {
    char s[1400], n[32];
    dframe *st = malloc(sizeof *st * 8);
    uint8_t *seen = NULL;
    int ns = 0, cap = 8, rc = 0, capseen = 0;
    if (!st) return EM_ENOMEM;
    memset(&st[0], 0, sizeof st[0]);
    st[0].r = root;
    st[0].show_n = 1;
    ns = 1;
    while (ns && !rc) {
        dframe f = st[--ns];
        const em_rdd *r = f.r;
        if (f.depth > 64) {
            if (ebuf_append(b, "...\n", 4)) rc = EM_ENOMEM;
            continue;
        }
        if (r->id >= capseen) {
            int c = r->id * 2 + 64;
            uint8_t *g = realloc(seen, (size_t)c);
            if (!g) {
                rc = EM_ENOMEM;
                break;
            }
            memset(g + capseen, 0, (size_t)(c - capseen));
            seen = g;
            capseen = c;
        }
        int again = seen[r->id] && (r->parent || r->parent2 || r->ndeps);
        seen[r->id] = 1;
        n[0] = 0;
        if (f.show_n) snprintf(n, sizeof n, "(%d) ", r->nparts);
        int k = snprintf(s, sizeof s, "%s%s%s[%d]%s%s%s%s\n", f.lead, n, r->opname, r->id, r->name ? " " : "",
                         r->name ? r->name : "", level_name(r->persist_level), again ? " (drawn above)" : "");
        if (ebuf_append(b, s, (size_t)(k < (int)sizeof s ? k : (int)sizeof s - 1))) {
            rc = EM_ENOMEM;
            break;
        }
        if (r->kind == RDD_CHECKPOINT) { /* Spark draws its ReliableCheckpointRDD as the parent */
            k = snprintf(s, sizeof s, "%s|  checkpoint[%d] %s\n", f.col, r->id, r->ckpt_dir);
            if (ebuf_append(b, s, (size_t)(k < (int)sizeof s ? k : (int)sizeof s - 1))) rc = EM_ENOMEM;
            continue;
        }
        if (again) continue;
        while (ns + RDD_MAX_PARENTS > cap) {
            dframe *g = realloc(st, sizeof *st * (size_t)cap * 2);
            if (!g) {
                rc = EM_ENOMEM;
                break;
            }
            st = g;
            cap *= 2;
        }
        if (rc) break;
        em_rdd *ps[RDD_MAX_PARENTS];
        int np = rdd_parents(r, ps);
        for (int i = np; i-- > 0;) { /* pushed so the first parent is drawn first */
            /* A cogroup's shuffle dependency is drawn as a stage boundary
             * above the input it shuffles, not as an RDD. */
            int shuffle = r->kind == RDD_SHUFFLED || (ps[i]->kind == RDD_SHUFFLED && ps[i]->dep_only);
            dframe *c = &st[ns++];
            c->r = ps[i]->kind == RDD_SHUFFLED && ps[i]->dep_only ? ps[i]->parent : ps[i];
            c->show_n = shuffle;
            c->depth = f.depth + 1;
            snprintf(c->lead, sizeof c->lead, "%.290s%s", f.col, shuffle ? " +-" : "|  ");
            snprintf(c->col, sizeof c->col, "%.290s%s", f.col, shuffle ? "    " : "");
        }
    }
    free(st);
    free(seen);
    return rc;
}

char *em_lineage(em_rdd *rdd) {
    ebuf b = EBUF_INIT;
    if (!rdd) {
        em__seterr(EM_EINVAL, "em_lineage: NULL RDD");
        return NULL;
    }
    if (draw(&b, rdd) || ebuf_append(&b, "", 1)) {
        ebuf_free(&b);
        em__seterr(EM_ENOMEM, "em_lineage: out of memory");
        return NULL;
    }
    return (char *)ebuf_steal(&b, NULL);
}
