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

static int draw(ebuf *b, const em_rdd *r, const char *lead, int show_n, const char *col, int depth) {
    char s[1200], n[32] = "", sub_lead[600], sub_col[600];
    if (depth > 64) return ebuf_append(b, "...\n", 4);
    if (show_n) snprintf(n, sizeof n, "(%d) ", r->nparts);
    int k = snprintf(s, sizeof s, "%s%s%s[%d]%s%s%s\n", lead, n, r->opname, r->id, r->name ? " " : "",
                     r->name ? r->name : "", level_name(r->persist_level));
    if (ebuf_append(b, s, (size_t)(k < (int)sizeof s ? k : (int)sizeof s - 1))) return EM_ENOMEM;
    const em_rdd *ps[2] = {r->parent, r->parent2};
    for (int i = 0; i < 2; i++) {
        if (!ps[i]) continue;
        int shuffle = r->kind == RDD_SHUFFLED, rc;
        snprintf(sub_lead, sizeof sub_lead, "%s%s", col, shuffle ? " +-" : "|  ");
        snprintf(sub_col, sizeof sub_col, "%s%s", col, shuffle ? "    " : "");
        if ((rc = draw(b, ps[i], sub_lead, shuffle, sub_col, depth + 1))) return rc;
    }
    return 0;
}

char *em_lineage(em_rdd *rdd) {
    ebuf b = EBUF_INIT;
    if (!rdd) {
        em__seterr(EM_EINVAL, "em_lineage: NULL RDD");
        return NULL;
    }
    if (draw(&b, rdd, "", 1, "", 0) || ebuf_append(&b, "", 1)) {
        ebuf_free(&b);
        em__seterr(EM_ENOMEM, "em_lineage: out of memory");
        return NULL;
    }
    return (char *)ebuf_steal(&b, NULL);
}
