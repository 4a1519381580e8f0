/*
 * html.h -- the small HTML kit every page ember serves is written with: the
 * master's and the workers' pages, and the driver's UI.  It escapes text
 * and attribute values, writes a page's skeleton (doctype, title, and our
 * own small stylesheet and script inline: a page fetches nothing from
 * elsewhere and works offline), tables whose columns sort on a click,
 * progress bars, and formats times, durations and byte sizes as people
 * read them.
 *
 * Every writer appends to an ebuf the caller owns and returns 0, or
 * EM_ENOMEM (message set) when the buffer cannot grow; what was appended
 * before the failure stays, so a page whose writing failed is thrown away
 * whole.  Text given as `const char *` is escaped unless the function's
 * name says raw; raw HTML is the caller's to make safe.
 */
#ifndef EM_HTML_H
#define EM_HTML_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Text (n bytes, or NUL-terminated) with &, <, >, " and ' escaped: safe in
 * an element's content and in a double- or single-quoted attribute value. */
int html_text(ebuf *b, const char *s);
int html_textn(ebuf *b, const char *s, size_t n);
/* Raw bytes, and printf-formatted raw bytes (at most 4 KiB a call). */
int html_raw(ebuf *b, const char *s);
int html_rawf(ebuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The page's start: doctype, <head> with title (escaped), the inline
 * stylesheet and script and an empty inline icon (so that a browser asks
 * for no /favicon.ico), <body>, a header bar with brand (escaped; e.g.
 * "ember master") and the title as <h1>. */
int html_page_begin(ebuf *b, const char *brand, const char *title);
/* The same start with a navigation bar in the header: brand (escaped)
 * links to brand_href, then n tabs, labels[i] (escaped) linking to
 * hrefs[i] (escaped), tab `current` marked (class "active"; -1: none). */
int html_page_begin_nav(ebuf *b, const char *brand, const char *brand_href, const char *title,
                        const char *const *labels, const char *const *hrefs, int n, int current);
/* The page's end: </body></html>. */
int html_page_end(ebuf *b);
/* A section heading (<h2>, escaped), with an anchor id (raw, may be NULL). */
int html_heading(ebuf *b, const char *id, const char *text);

/* A table: headers[0..n) (escaped) as its head.  Its rows sort by a
 * column when the column's header is clicked (the inline script; numbers,
 * sizes and durations by the value in a cell's data-v attribute when it
 * has one).  id (raw, may be NULL) names it. */
int html_table_begin(ebuf *b, const char *id, const char *const *headers, int n);
int html_table_end(ebuf *b);
int html_row_begin(ebuf *b);
int html_row_end(ebuf *b);
/* A cell of text (escaped); a cell of raw HTML; a cell whose text is shown
 * and whose value v sorts it (sizes, durations, times). */
int html_cell(ebuf *b, const char *text);
int html_cell_raw(ebuf *b, const char *html);
int html_cell_sorted(ebuf *b, const char *text, int64_t v);
/* A number cell. */
int html_cell_i64(ebuf *b, int64_t v);
/* A cell holding a link: href (escaped as an attribute), text (escaped). */
int html_cell_link(ebuf *b, const char *href, const char *text);
/* A link, inline: <a href="href">text</a>, both escaped. */
int html_link(ebuf *b, const char *href, const char *text);

/* A progress bar: done of total (succeeded), running more of them in a
 * lighter band, and the text "done/total" (plus " (N running)" and
 * " (N failed)" when nonzero) over it.  total 0 shows an empty bar. */
int html_progress(ebuf *b, int64_t done, int64_t running, int64_t failed, int64_t total);
/* The same with " (N killed)" and " (N skipped)" after, when nonzero. */
int html_progress_ex(ebuf *b, int64_t done, int64_t running, int64_t failed, int64_t killed, int64_t skipped,
                     int64_t total);

/* Formatting.  Each writes a NUL-terminated string into out (cap bytes,
 * at least HTML_FMT_MAX for a whole result) and returns out. */
#define HTML_FMT_MAX 40
/* Epoch milliseconds as local time "YYYY-MM-DD hh:mm:ss"; "-" for ms <= 0. */
char *html_fmt_time(int64_t epoch_ms, char *out, size_t cap);
/* A duration: "850 ms", "1.2 s", "3.4 min", "2.0 h", "3.5 d" (below 1 s
 * whole milliseconds, then one decimal); a negative one is "-". */
char *html_fmt_duration(int64_t ms, char *out, size_t cap);
/* Bytes: "512 B", "1.5 KiB", "1.5 MiB", "2.0 GiB", "1.0 TiB"; negative "-". */
char *html_fmt_bytes(int64_t bytes, char *out, size_t cap);

#endif
