/*
 * test_html.c -- the HTML kit (html.h): escaping, the page skeleton (its
 * stylesheet and script inline, nothing fetched), tables, progress bars,
 * and the formats of times, durations and sizes; and urlquery.h's query
 * parameters and encoding.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../test.h"
#include "buf.h"
#include "ember.h"
#include "html.h"
#include "httpd.h"
#include "urlquery.h"

/* The buffer as a NUL-terminated string. */
static const char *str(ebuf *b) {
    if (ebuf_append(b, "", 1)) return "";
    b->len--;
    return (const char *)b->p;
}

TEST(html_escapes_text_and_attributes) {
    ebuf b = EBUF_INIT;
    CHECK_OK(html_text(&b, "<a href=\"x\">Tom & 'Jerry'</a>"));
    CHECK(!strcmp(str(&b), "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"));
    b.len = 0;
    CHECK_OK(html_textn(&b, "a<b\0<c", 6));
    CHECK_EQ_I64(b.len, 1 + 4 + 1 + 1 + 4 + 1);
    b.len = 0;
    CHECK_OK(html_link(&b, "/x?a=1&b=\"2\"", "<go>"));
    CHECK(!strcmp(str(&b), "<a href=\"/x?a=1&amp;b=&quot;2&quot;\">&lt;go&gt;</a>"));
    b.len = 0;
    CHECK_OK(html_text(&b, NULL));
    CHECK_EQ_I64(b.len, 0);
    ebuf_free(&b);
}

TEST(html_page_is_whole_and_self_contained) {
    ebuf b = EBUF_INIT;
    CHECK_OK(html_page_begin(&b, "ember master", "Master <at> x"));
    const char *hdr[] = {"Id", "Cores"};
    CHECK_OK(html_table_begin(&b, "workers", hdr, 2));
    CHECK_OK(html_row_begin(&b));
    CHECK_OK(html_cell(&b, "w&1"));
    CHECK_OK(html_cell_i64(&b, 4));
    CHECK_OK(html_cell_sorted(&b, "1.5 KiB", 1536));
    CHECK_OK(html_row_end(&b));
    CHECK_OK(html_table_end(&b));
    CHECK_OK(html_page_end(&b));
    const char *s = str(&b);
    CHECK(!strncmp(s, "<!DOCTYPE html>", 15));
    CHECK_STR_CONTAINS(s, "<title>Master &lt;at&gt; x</title>");
    CHECK_STR_CONTAINS(s, "<style>");
    CHECK_STR_CONTAINS(s, "<script>");
    CHECK_STR_CONTAINS(s, "<h1>Master &lt;at&gt; x</h1>");
    CHECK_STR_CONTAINS(s, "<table class=\"sortable\" id=\"workers\"><thead><tr><th>Id</th><th>Cores</th></tr>");
    CHECK_STR_CONTAINS(s, "<tr><td>w&amp;1</td><td class=\"n\">4</td><td data-v=\"1536\">1.5 KiB</td></tr>");
    CHECK(strstr(s, "</main></body></html>\n") && s[b.len - 1] == '\n');
    /* Nothing fetched from elsewhere: no external script, stylesheet or URL;
     * the one link is the empty inline icon that keeps a browser from
     * asking for /favicon.ico. */
    const char *icon = "<link rel=\"icon\" href=\"data:,\">";
    CHECK(strstr(s, "<link") == strstr(s, icon) && !strstr(strstr(s, icon) + 1, "<link"));
    CHECK(!strstr(s, "src=") && !strstr(s, "http://") && !strstr(s, "https://") && !strstr(s, "@import"));
    /* Balanced: as many openings as closings of the elements it writes. */
    const char *tags[] = {"table", "thead", "tbody", "tr", "script", "style", "main", "header"};
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
        char open[32], close[32];
        snprintf(open, sizeof open, "<%s", tags[i]);
        snprintf(close, sizeof close, "</%s>", tags[i]);
        int no = 0, nc = 0;
        for (const char *p = s; (p = strstr(p, open)); p++) no += p[strlen(open)] == '>' || p[strlen(open)] == ' ';
        for (const char *p = s; (p = strstr(p, close)); p++) nc++;
        CHECK_EQ_I64(no, nc);
    }
    ebuf_free(&b);
}

TEST(html_progress_bar) {
    ebuf b = EBUF_INIT;
    CHECK_OK(html_progress(&b, 3, 1, 2, 4));
    const char *s = str(&b);
    CHECK_STR_CONTAINS(s, "class=\"ok\" style=\"width:75.0%\"");
    CHECK_STR_CONTAINS(s, "style=\"left:75.0%;width:25.0%\"");
    CHECK_STR_CONTAINS(s, "<span>3/4 (1 running) (2 failed)</span>");
    b.len = 0;
    CHECK_OK(html_progress(&b, 0, 0, 0, 0));
    CHECK_STR_CONTAINS(str(&b), "width:0.0%");
    CHECK_STR_CONTAINS(str(&b), "<span>0/0</span>");
    ebuf_free(&b);
}

TEST(html_formats) {
    char out[HTML_FMT_MAX];
    setenv("TZ", "UTC", 1);
    tzset();
    /* 2026-11-28 17:46:29 UTC */
    CHECK(!strcmp(html_fmt_time(1795887989000LL + 123, out, sizeof out), "2026-11-28 17:46:29"));
    CHECK(!strcmp(html_fmt_time(0, out, sizeof out), "-"));
    CHECK(!strcmp(html_fmt_duration(0, out, sizeof out), "0 ms"));
    CHECK(!strcmp(html_fmt_duration(850, out, sizeof out), "850 ms"));
    CHECK(!strcmp(html_fmt_duration(1200, out, sizeof out), "1.2 s"));
    CHECK(!strcmp(html_fmt_duration(204000, out, sizeof out), "3.4 min"));
    CHECK(!strcmp(html_fmt_duration(7200000, out, sizeof out), "2.0 h"));
    CHECK(!strcmp(html_fmt_duration(3 * 86400000LL + 43200000, out, sizeof out), "3.5 d"));
    CHECK(!strcmp(html_fmt_duration(-1, out, sizeof out), "-"));
    CHECK(!strcmp(html_fmt_bytes(0, out, sizeof out), "0 B"));
    CHECK(!strcmp(html_fmt_bytes(1023, out, sizeof out), "1023 B"));
    CHECK(!strcmp(html_fmt_bytes(1536, out, sizeof out), "1.5 KiB"));
    CHECK(!strcmp(html_fmt_bytes(3 * 524288, out, sizeof out), "1.5 MiB"));
    CHECK(!strcmp(html_fmt_bytes(2LL << 30, out, sizeof out), "2.0 GiB"));
    CHECK(!strcmp(html_fmt_bytes(1LL << 40, out, sizeof out), "1.0 TiB"));
    CHECK(!strcmp(html_fmt_bytes(-5, out, sizeof out), "-"));
    /* A short buffer is cut, still terminated. */
    char tiny[4];
    CHECK(!strcmp(html_fmt_bytes(1536, tiny, sizeof tiny), "1.5"));
}

TEST(urlquery_get_and_encode) {
    char v[16];
    const char *q = "appId=app-1&executorId=0&logType=std%6Fut&x&name=a+b%2Fc&appId=other";
    size_t n = strlen(q);
    CHECK_EQ_I64(urlq_get(q, n, "appId", v, sizeof v), 1);
    CHECK(!strcmp(v, "app-1"));
    CHECK_EQ_I64(urlq_get(q, n, "logType", v, sizeof v), 1);
    CHECK(!strcmp(v, "stdout"));
    CHECK_EQ_I64(urlq_get(q, n, "name", v, sizeof v), 1);
    CHECK(!strcmp(v, "a b/c"));
    CHECK_EQ_I64(urlq_get(q, n, "x", v, sizeof v), 1);
    CHECK(!strcmp(v, ""));
    CHECK_EQ_I64(urlq_get(q, n, "offset", v, sizeof v), 0);
    CHECK_EQ_I64(urlq_get("", 0, "a", v, sizeof v), 0);
    CHECK_EQ_I64(urlq_get("a=%2", 4, "a", v, sizeof v), -1);
    CHECK_EQ_I64(urlq_get("a=%zz", 5, "a", v, sizeof v), -1);
    CHECK_EQ_I64(urlq_get("a=%00", 5, "a", v, sizeof v), -1);
    CHECK_EQ_I64(urlq_get("a=0123456789abcdef", 18, "a", v, sizeof v), -1);
    /* The raw length bounds the reading: nothing past qlen. */
    CHECK_EQ_I64(urlq_get("a=1&b=2", 3, "b", v, sizeof v), 0);
    ebuf b = EBUF_INIT;
    CHECK_OK(urlq_encode(&b, "a b/c&d=é~"));
    CHECK(!strcmp(str(&b), "a%20b%2Fc%26d%3D%C3%A9~"));
    ebuf_free(&b);
}

/* httpd.h's parser keeps the raw query for urlq_get. */
TEST(http_parse_keeps_the_query) {
    http_req r;
    size_t used;
    static const char a[] = "GET /logPage/?appId=app-1&logType=stdout#frag HTTP/1.0\r\n\r\n";
    CHECK_EQ_I64(http_parse((const uint8_t *)a, sizeof a - 1, HTTPD_REQUEST_MAX, &r, &used), HTTP_DONE);
    CHECK(!strcmp(r.path, "/logPage/") && !strcmp(r.query, "appId=app-1&logType=stdout"));
    CHECK_EQ_I64(r.query_len, 26);
    static const char b[] = "GET /json HTTP/1.0\r\n\r\n";
    CHECK_EQ_I64(http_parse((const uint8_t *)b, sizeof b - 1, HTTPD_REQUEST_MAX, &r, &used), HTTP_DONE);
    CHECK(!strcmp(r.query, "") && r.query_len == 0);
    /* A query over HTTPD_PATH_MAX is a bad request. */
    char big[HTTPD_PATH_MAX + 64];
    int n = snprintf(big, sizeof big, "GET /?");
    memset(big + n, 'q', HTTPD_PATH_MAX + 1);
    n += HTTPD_PATH_MAX + 1;
    n += snprintf(big + n, sizeof big - (size_t)n, " HTTP/1.0\r\n\r\n");
    CHECK_EQ_I64(http_parse((const uint8_t *)big, (size_t)n, HTTPD_REQUEST_MAX, &r, &used), HTTP_BAD);
}
