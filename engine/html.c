/*
 * html.c -- the small HTML kit of ember's pages (see html.h): escaping,
 * the page skeleton with its inline stylesheet and script, tables,
 * progress bars, and the formats of times, durations and sizes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ember.h"
#include "err.h"
#include "html.h"

static int put(ebuf *b, const char *s, size_t n) {
    return ebuf_append(b, s, n) ? em__seterr(EM_ENOMEM, "html: out of memory") : 0;
}

int html_raw(ebuf *b, const char *s) { return put(b, s, strlen(s)); }

int html_rawf(ebuf *b, const char *fmt, ...) {
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return em__seterr(EM_EINVAL, "html: bad format");
    return put(b, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

int html_textn(ebuf *b, const char *s, size_t n) {
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e;
        switch (s[i]) {
        case '&': e = "&amp;"; break;
        case '<': e = "&lt;"; break;
        case '>': e = "&gt;"; break;
        case '"': e = "&quot;"; break;
        case '\'': e = "&#39;"; break;
        default: continue;
        }
        if (put(b, s + from, i - from) || put(b, e, strlen(e))) return EM_ENOMEM;
        from = i + 1;
    }
    return put(b, s + from, n - from);
}

int html_text(ebuf *b, const char *s) { return html_textn(b, s ? s : "", s ? strlen(s) : 0); }

/* The stylesheet and the script every page carries. */
static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222;background:#fff}"
    "header{background:#2d3e50;color:#fff;padding:8px 16px;font-weight:600}"
    "main{padding:8px 16px}h1{font-size:20px;margin:8px 0}h2{font-size:16px;margin:18px 0 6px}"
    "a{color:#1a5fb4}table{border-collapse:collapse;margin:4px 0 12px}"
    "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#eef1f4;cursor:pointer;user-select:none}th.asc:after{content:' \\25b2'}"
    "th.desc:after{content:' \\25bc'}tbody tr:nth-child(even){background:#f8f9fa}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    ".bar{position:relative;width:200px;height:16px;background:#e6e6e6;border-radius:3px;overflow:hidden}"
    ".bar .ok{position:absolute;left:0;top:0;bottom:0;background:#7fbf7f}"
    ".bar .run{position:absolute;top:0;bottom:0;background:#a8d1ef}"
    ".bar span{position:absolute;left:0;right:0;text-align:center;font-size:12px;line-height:16px}"
    "ul.facts{list-style:none;padding:0}ul.facts li{margin:2px 0}pre.log{background:#f6f6f6;padding:8px;"
    "overflow:auto;white-space:pre-wrap}"
    "header a{color:#fff;text-decoration:none}header nav{display:inline-block;margin-left:24px}"
    "header nav a{margin-right:16px;opacity:.8}header nav a.active{opacity:1;border-bottom:2px solid #fff}"
    ".bar .bad{position:absolute;top:0;bottom:0;background:#e8a0a0}"
    "svg text{font:11px system-ui,sans-serif}svg .stage rect{fill:#cfe3f7;stroke:#3b73b9}"
    "svg .stage.skipped rect{fill:#e6e6e6;stroke:#aaa}svg .stage.skipped text{fill:#888}"
    "svg .edge{stroke:#555;fill:none}svg .lane{fill:#f4f6f8}svg .task{fill:#7fbf7f}"
    "svg .task.failed{fill:#e07070}svg .task.killed{fill:#c0c0c0}svg .task.running{fill:#a8d1ef}"
    "svg .bucket{fill:#5b9bd5}svg .job{fill:#7fbf7f}svg .job.failed{fill:#e07070}svg .job.running{fill:#a8d1ef}"
    "svg circle.added{fill:#3c9a3c}svg circle.removed{fill:#d04040}.pages a{margin-right:8px}td.err{max-width:420px;white-space:pre-wrap}"
    "td[data-v]{white-space:nowrap}div.sub{font-size:12px;color:#666}p.error{color:#b00}"
    "details summary{cursor:pointer;font-weight:600;margin:14px 0 6px}";

/* Sorting a table by a clicked header: a cell's data-v if it has one, else
 * its text, as a number when both are numbers. */
static const char script[] =
    "document.addEventListener('DOMContentLoaded',function(){"
    "document.querySelectorAll('table.sortable th').forEach(function(th,i){"
    "th.addEventListener('click',function(){var t=th.closest('table'),b=t.tBodies[0];if(!b)return;"
    "var asc=!th.classList.contains('asc');t.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc')});"
    "th.classList.add(asc?'asc':'desc');"
    "function v(r){var c=r.cells[i];if(!c)return '';var d=c.getAttribute('data-v');return d!==null?d:c.textContent.trim()}"
    "var rows=Array.prototype.slice.call(b.rows);rows.sort(function(x,y){var a=v(x),c=v(y),"
    "p=parseFloat(a),q=parseFloat(c),r=(!isNaN(p)&&!isNaN(q)&&isFinite(a)&&isFinite(c))?p-q:a.localeCompare(c);"
    "return asc?r:-r});rows.forEach(function(r){b.appendChild(r)})})})});";

int html_page_begin(ebuf *b, const char *brand, const char *title) {
    return html_raw(b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><link rel=\"icon\" href=\"data:,\"><title>") || html_text(b, title) ||
           html_raw(b, "</title><style>") || put(b, style, sizeof style - 1) || html_raw(b, "</style><script>") ||
           put(b, script, sizeof script - 1) || html_raw(b, "</script></head>\n<body><header>") ||
           html_text(b, brand) || html_raw(b, "</header><main><h1>") || html_text(b, title) ||
           html_raw(b, "</h1>\n");
}

int html_page_begin_nav(ebuf *b, const char *brand, const char *brand_href, const char *title,
                        const char *const *labels, const char *const *hrefs, int n, int current) {
    int rc = html_raw(b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><link rel=\"icon\" href=\"data:,\"><title>") || html_text(b, title) ||
             html_raw(b, "</title><style>") || put(b, style, sizeof style - 1) || html_raw(b, "</style><script>") ||
             put(b, script, sizeof script - 1) || html_raw(b, "</script></head>\n<body><header>") ||
             html_link(b, brand_href, brand) || html_raw(b, "<nav>");
    for (int i = 0; i < n && !rc; i++)
        rc = html_raw(b, i == current ? "<a class=\"active\" href=\"" : "<a href=\"") || html_text(b, hrefs[i]) ||
             html_raw(b, "\">") || html_text(b, labels[i]) || html_raw(b, "</a>");
    return rc || html_raw(b, "</nav></header><main><h1>") || html_text(b, title) || html_raw(b, "</h1>\n");
}

int html_page_end(ebuf *b) { return html_raw(b, "</main></body></html>\n"); }

int html_heading(ebuf *b, const char *id, const char *text) {
    return (id ? html_rawf(b, "<h2 id=\"%s\">", id) : html_raw(b, "<h2>")) || html_text(b, text) ||
           html_raw(b, "</h2>\n");
}

int html_table_begin(ebuf *b, const char *id, const char *const *headers, int n) {
    int rc = id ? html_rawf(b, "<table class=\"sortable\" id=\"%s\"><thead><tr>", id)
                : html_raw(b, "<table class=\"sortable\"><thead><tr>");
    for (int i = 0; i < n && !rc; i++) rc = html_raw(b, "<th>") || html_text(b, headers[i]) || html_raw(b, "</th>");
    return rc || html_raw(b, "</tr></thead><tbody>\n");
}

int html_table_end(ebuf *b) { return html_raw(b, "</tbody></table>\n"); }
int html_row_begin(ebuf *b) { return html_raw(b, "<tr>"); }
int html_row_end(ebuf *b) { return html_raw(b, "</tr>\n"); }

int html_cell(ebuf *b, const char *text) { return html_raw(b, "<td>") || html_text(b, text) || html_raw(b, "</td>"); }
int html_cell_raw(ebuf *b, const char *h) { return html_raw(b, "<td>") || html_raw(b, h) || html_raw(b, "</td>"); }

int html_cell_sorted(ebuf *b, const char *text, int64_t v) {
    return html_rawf(b, "<td data-v=\"%lld\">", (long long)v) || html_text(b, text) || html_raw(b, "</td>");
}

int html_cell_i64(ebuf *b, int64_t v) { return html_rawf(b, "<td class=\"n\">%lld</td>", (long long)v); }

int html_link(ebuf *b, const char *href, const char *text) {
    return html_raw(b, "<a href=\"") || html_text(b, href) || html_raw(b, "\">") || html_text(b, text) ||
           html_raw(b, "</a>");
}

int html_cell_link(ebuf *b, const char *href, const char *text) {
    return html_raw(b, "<td>") || html_link(b, href, text) || html_raw(b, "</td>");
}

int html_progress(ebuf *b, int64_t done, int64_t running, int64_t failed, int64_t total) {
    return html_progress_ex(b, done, running, failed, 0, 0, total);
}

int html_progress_ex(ebuf *b, int64_t done, int64_t running, int64_t failed, int64_t killed, int64_t skipped,
                     int64_t total) {
    double ok = 0, run = 0;
    if (total > 0) {
        ok = 100.0 * (double)(done < 0 ? 0 : done > total ? total : done) / (double)total;
        run = 100.0 * (double)(running < 0 ? 0 : running) / (double)total;
        if (ok + run > 100) run = 100 - ok;
    }
    int rc = html_rawf(b, "<div class=\"bar\"><div class=\"ok\" style=\"width:%.1f%%\"></div>"
                          "<div class=\"run\" style=\"left:%.1f%%;width:%.1f%%\"></div><span>%lld/%lld",
                       ok, ok, run, (long long)done, (long long)total);
    if (!rc && running > 0) rc = html_rawf(b, " (%lld running)", (long long)running);
    if (!rc && failed > 0) rc = html_rawf(b, " (%lld failed)", (long long)failed);
    if (!rc && killed > 0) rc = html_rawf(b, " (%lld killed)", (long long)killed);
    if (!rc && skipped > 0) rc = html_rawf(b, " (%lld skipped)", (long long)skipped);
    return rc || html_raw(b, "</span></div>");
}

char *html_fmt_time(int64_t epoch_ms, char *out, size_t cap) {
    if (!cap) return out;
    time_t t = (time_t)(epoch_ms / 1000);
    struct tm tm;
    if (epoch_ms <= 0 || !localtime_r(&t, &tm) || !strftime(out, cap, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(out, cap, "-");
    return out;
}

char *html_fmt_duration(int64_t ms, char *out, size_t cap) {
    if (ms < 0) snprintf(out, cap, "-");
    else if (ms < 1000) snprintf(out, cap, "%lld ms", (long long)ms);
    else if (ms < 60000) snprintf(out, cap, "%.1f s", (double)ms / 1e3);
    else if (ms < 3600000) snprintf(out, cap, "%.1f min", (double)ms / 6e4);
    else if (ms < 48 * 3600000LL) snprintf(out, cap, "%.1f h", (double)ms / 3.6e6);
    else snprintf(out, cap, "%.1f d", (double)ms / 8.64e7);
    return out;
}

char *html_fmt_bytes(int64_t bytes, char *out, size_t cap) {
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 0) {
        snprintf(out, cap, "-");
        return out;
    }
    if (bytes < 1024) {
        snprintf(out, cap, "%lld B", (long long)bytes);
        return out;
    }
    double v = (double)bytes / 1024;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    snprintf(out, cap, "%.1f %s", v, units[u]);
    return out;
}
