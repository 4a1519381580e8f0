/*
 * uipage_storage.c -- the storage page (/storage/): the RDDs with cached
 * partitions, their storage level, how much of them is cached and where.
 */
#include <stdio.h>

#include "ember.h"
#include "html.h"
#include "restjson.h"
#include "uipage_storage.h"
#include "uipagekit.h"

int uipage_storage(uipage *u) {
    static const char *const hdr[] = {"ID",         "RDD Name",       "Storage Level", "Cached Partitions",
                                      "Fraction Cached", "Size in Memory", "Size on Disk"};
    ebuf *b = u->b;
    int n = 0;
    int rc = up_begin(u, "Storage", UP_TAB_STORAGE) || html_heading(b, NULL, "RDDs") ||
             html_table_begin(b, "storage-rdds", hdr, 7);
    for (const st_rdd *d = status_rdds(u->st); d && !rc; d = d->next) {
        if (d->ncached <= 0) continue;
        char lv[96], frac[32];
        rj_level_text(&d->level, lv, sizeof lv);
        int pct = d->nparts > 0 ? (int)(100.0 * d->ncached / d->nparts + 0.5) : 0;
        snprintf(frac, sizeof frac, "%d%%", pct);
        rc = html_rawf(b, "<tr data-rdd-id=\"%d\">", d->id) || html_cell_i64(b, d->id) ||
             html_cell(b, d->name ? d->name : "") || html_cell(b, lv) || html_cell_i64(b, d->ncached) ||
             html_cell_sorted(b, frac, pct) || up_cell_bytes(b, d->mem) || up_cell_bytes(b, d->disk) ||
             html_row_end(b);
        n++;
    }
    rc = rc || html_table_end(b);
    if (!rc && !n) rc = html_raw(b, "<p>No RDDs are cached.</p>\n");
    return rc || up_end(u);
}
