/*
 * uipage_execs.c -- the executors page (/executors/): the totals of the
 * active, the dead and all executors, then a row per executor (the
 * driver's block manager among them) with its state, the cached
 * partitions it holds and their memory and disk, cores, tasks, task time,
 * input, shuffle and links to its logs when it has them.
 */
#include <stdio.h>
#include <string.h>

#include "ember.h"
#include "html.h"
#include "uipage_execs.h"
#include "uipagekit.h"

typedef struct totals {
    int64_t n, cores, active, failed, completed, total, time, input, sr, sw;
} totals;

static void add(totals *t, const st_exec *x) {
    t->n++;
    t->cores += x->cores;
    t->active += x->active_tasks;
    t->failed += x->failed_tasks;
    t->completed += x->completed_tasks;
    t->total += x->total_tasks;
    t->time += x->total_duration;
    t->input += x->input_bytes;
    t->sr += x->shuffle_read;
    t->sw += x->shuffle_write;
}

static int counts(ebuf *b, const totals *t) {
    return html_cell_i64(b, t->cores) || html_cell_i64(b, t->active) || html_cell_i64(b, t->failed) ||
           html_cell_i64(b, t->completed) || html_cell_i64(b, t->total) || up_cell_dur(b, t->time) ||
           up_cell_bytes(b, t->input) || up_cell_bytes(b, t->sr) || up_cell_bytes(b, t->sw);
}

int uipage_executors(uipage *u) {
    static const char *const shdr[] = {"", "Executors", "Cores", "Active Tasks", "Failed Tasks",
                                       "Complete Tasks", "Total Tasks", "Task Time", "Input",
                                       "Shuffle Read", "Shuffle Write"};
    static const char *const hdr[] = {"Executor ID",  "Address",        "Status",      "RDD Blocks",
                                      "Storage Memory", "Disk Used",    "Cores",       "Active Tasks",
                                      "Failed Tasks", "Complete Tasks", "Total Tasks", "Task Time",
                                      "Input",        "Shuffle Read",   "Shuffle Write", "Logs"};
    totals act = {0}, dead = {0}, all = {0};
    for (const st_exec *x = status_execs(u->st); x; x = x->next) {
        add(x->active ? &act : &dead, x);
        add(&all, x);
    }
    ebuf *b = u->b;
    const totals *rows[3] = {&act, &dead, &all};
    static const char *const names[3] = {"Active", "Dead", "Total"};
    int rc = up_begin(u, "Executors", UP_TAB_EXECS) || html_heading(b, NULL, "Summary") ||
             html_table_begin(b, "executors-summary", shdr, 11);
    for (int i = 0; i < 3 && !rc; i++)
        rc = html_row_begin(b) || html_cell(b, names[i]) || html_cell_i64(b, rows[i]->n) || counts(b, rows[i]) ||
             html_row_end(b);
    rc = rc || html_table_end(b) || html_heading(b, NULL, "Executors") || html_table_begin(b, "executors", hdr, 16);
    for (const st_exec *x = status_execs(u->st); x && !rc; x = x->next) {
        char addr[96];
        if (x->port) snprintf(addr, sizeof addr, "%s:%d", x->host, x->port);
        else snprintf(addr, sizeof addr, "%s", x->host);
        totals one = {0};
        add(&one, x);
        rc = html_rawf(b, "<tr class=\"%s\">", x->active ? "active" : "dead") || html_cell(b, x->id) ||
             html_cell(b, addr) || html_raw(b, "<td>") || html_text(b, x->active ? "Active" : "Dead");
        if (!rc && !x->active && x->remove_reason)
            rc = html_raw(b, "<div class=\"sub\">") || html_text(b, x->remove_reason) || html_raw(b, "</div>");
        char used[HTML_FMT_MAX], max[HTML_FMT_MAX], mem[2 * HTML_FMT_MAX + 8];
        html_fmt_bytes(x->mem_used, used, sizeof used);
        snprintf(mem, sizeof mem, "%s / %s", used, html_fmt_bytes(x->max_mem, max, sizeof max));
        rc = rc || html_raw(b, "</td>") || html_cell_i64(b, x->rdd_blocks) || html_cell_sorted(b, mem, x->mem_used) ||
             up_cell_bytes(b, x->disk_used) || counts(b, &one) || html_raw(b, "<td>");
        if (!rc && x->stdout_url) rc = html_link(b, x->stdout_url, "stdout") || html_raw(b, " ");
        if (!rc && x->stderr_url) rc = html_link(b, x->stderr_url, "stderr");
        rc = rc || html_raw(b, "</td>") || html_row_end(b);
    }
    return rc || html_table_end(b) || up_end(u);
}
