/*
 * uipage_storage.c -- the storage page (/storage/): the RDDs with cached
 * partitions, their storage level, how much of them is cached and where;
 * and a cached RDD's page (/storage/rdd/?id=N): its blocks by executor and
 * by partition, as the block updates reported them.
 */
#include <stdio.h>
#include <string.h>

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
        char href[512], name[64];
        snprintf(name, sizeof name, "%s", d->name && d->name[0] ? d->name : "");
        if (!name[0]) snprintf(name, sizeof name, "RDD %d", d->id);
        rc = html_rawf(b, "<tr data-rdd-id=\"%d\">", d->id) || html_cell_i64(b, d->id) ||
             html_cell_link(b, up_href(u, href, sizeof href, "/storage/rdd/?id=%d", d->id), name) || html_cell(b, lv) || html_cell_i64(b, d->ncached) ||
             html_cell_sorted(b, frac, pct) || up_cell_bytes(b, d->mem) || up_cell_bytes(b, d->disk) ||
             html_row_end(b);
        n++;
    }
    rc = rc || html_table_end(b);
    if (!rc && !n) rc = html_raw(b, "<p>No RDDs are cached.</p>\n");
    return rc || up_end(u);
}

int uipage_rdd(uipage *u) {
    static const char *const dhdr[] = {"Host", "On Heap Memory Usage", "Disk Usage"};
    static const char *const phdr[] = {"Block Name", "Storage Level", "Size in Memory", "Size on Disk", "Executors"};
    int64_t id = 0;
    int got = up_qint(u, "id", 0, INT32_MAX, &id);
    if (got < 0) return 0;
    if (!got) return up_error(u, 400, "missing parameter id");
    const st_rdd *d = status_rdd(u->st, (int)id);
    if (!d) return up_error(u, 404, "no cached RDD %lld", (long long)id);
    ebuf *b = u->b;
    char title[96], lv[96], t[HTML_FMT_MAX], n[32];
    snprintf(title, sizeof title, "RDD Storage Info for %s", d->name && d->name[0] ? d->name : "RDD");
    rj_level_text(&d->level, lv, sizeof lv);
    snprintf(n, sizeof n, "%d", d->ncached);
    int rc = up_begin(u, title, UP_TAB_STORAGE) || html_raw(b, "<ul class=\"facts\">") ||
             up_fact(b, "Storage Level", lv) || up_fact(b, "Cached Partitions", n);
    snprintf(n, sizeof n, "%d", d->nparts);
    rc = rc || up_fact(b, "Total Partitions", n) || up_fact(b, "Memory Size", html_fmt_bytes(d->mem, t, sizeof t)) ||
         up_fact(b, "Disk Size", html_fmt_bytes(d->disk, t, sizeof t)) || html_raw(b, "</ul>\n");
    /* Data distribution: each executor holding a block, its share. */
    rc = rc || html_heading(b, NULL, "Data Distribution") || html_table_begin(b, "rdd-distribution", dhdr, 3);
    for (const st_exec *x = status_execs(u->st); x && !rc; x = x->next) {
        int64_t mem, disk;
        if (!rdd_blocks_on(&d->blocks, x->id, &mem, &disk)) continue;
        char addr[96], used[HTML_FMT_MAX], left[HTML_FMT_MAX], usage[2 * HTML_FMT_MAX + 24];
        if (x->port) snprintf(addr, sizeof addr, "%s:%d", x->host, x->port);
        else snprintf(addr, sizeof addr, "%s", x->host);
        snprintf(usage, sizeof usage, "%s (%s Remaining)", html_fmt_bytes(mem, used, sizeof used),
                 html_fmt_bytes(x->max_mem > x->mem_used ? x->max_mem - x->mem_used : 0, left, sizeof left));
        rc = html_row_begin(b) || html_cell(b, addr) || html_cell_sorted(b, usage, mem) || up_cell_bytes(b, disk) ||
             html_row_end(b);
    }
    rc = rc || html_table_end(b);
    /* Partitions: the blocks of one partition are neighbours. */
    snprintf(title, sizeof title, "%d Partitions", d->ncached);
    rc = rc || html_heading(b, NULL, title) || html_table_begin(b, "rdd-partitions", phdr, 5);
    for (int i = 0, j; i < d->blocks.n && !rc; i = j) {
        rj_part p;
        j = rj_partition(d, i, &p);
        rc = html_row_begin(b) || html_cell_sorted(b, p.name, d->blocks.b[i].part) || html_cell(b, p.level) ||
             up_cell_bytes(b, p.mem) || up_cell_bytes(b, p.disk) || html_raw(b, "<td>");
        for (int e = i; e < j && !rc; e++) rc = (e > i && html_raw(b, " ")) || html_text(b, d->blocks.b[e].exec_id);
        rc = rc || html_raw(b, "</td>") || html_row_end(b);
    }
    return rc || html_table_end(b) || up_end(u);
}
