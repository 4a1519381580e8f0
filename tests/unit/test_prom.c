/*
 * test_prom.c -- the Prometheus text format (prom.h): what the writer
 * writes, the parser reads back exactly (names, labels with escapes,
 * values, HELP and TYPE); the parser refuses what the format does not
 * allow, naming the line.
 */
#include <math.h>
#include <string.h>

#include "../test.h"
#include "buf.h"
#include "ember.h"
#include "prom.h"

static const char *str(ebuf *b) {
    if (ebuf_append(b, "", 1)) return "";
    b->len--;
    return (const char *)b->p;
}

TEST(prom_writes_and_reads_back) {
    ebuf b = EBUF_INIT;
    prom_label g[] = {{"type", "gauges"}};
    CHECK_OK(prom_gauge(&b, "metrics_master_workers_Value", "Workers the master knows.\nAll of them \\ each.", g, 1, 2));
    CHECK_OK(prom_family(&b, "x_total", "counter", NULL));
    prom_label l[] = {{"path", "C:\\dir\n\"q\""}, {"le", "0.5"}};
    CHECK_OK(prom_sample(&b, "x_total", l, 2, 1.25));
    CHECK_OK(prom_sample(&b, "x_total", NULL, 0, NAN));
    CHECK_OK(prom_sample(&b, "inf", NULL, 0, -INFINITY));
    CHECK_OK(prom_sample(&b, "big", NULL, 0, 12345678901.0));
    const char *s = str(&b);
    CHECK_STR_CONTAINS(s, "# HELP metrics_master_workers_Value Workers the master knows.\\nAll of them \\\\ each.\n"
                          "# TYPE metrics_master_workers_Value gauge\n"
                          "metrics_master_workers_Value{type=\"gauges\"} 2\n");
    CHECK_STR_CONTAINS(s, "x_total{path=\"C:\\\\dir\\n\\\"q\\\"\",le=\"0.5\"} 1.25\n");
    CHECK_STR_CONTAINS(s, "x_total NaN\n");
    CHECK_STR_CONTAINS(s, "inf -Inf\n");
    CHECK_STR_CONTAINS(s, "big 12345678901\n");
    prom_doc d = PROM_DOC_INIT;
    CHECK_OK(prom_parse((const char *)b.p, b.len, &d));
    CHECK_EQ_I64(d.n, 5);
    const prom_metric *m = prom_find(&d, "metrics_master_workers_Value", "type", "gauges");
    CHECK(m && m->value == 2 && !strcmp(m->type, "gauge") && m->nlabels == 1);
    CHECK(!strcmp(m->help, "Workers the master knows.\nAll of them \\ each."));
    m = prom_find(&d, "x_total", "path", "C:\\dir\n\"q\"");
    CHECK(m && m->value == 1.25 && !strcmp(m->type, "counter") && !strcmp(m->lvalue[1], "0.5"));
    m = prom_find(&d, "x_total", "le", "nope");
    CHECK(m == NULL);
    CHECK(isnan(d.m[2].value) && d.m[2].nlabels == 0);
    CHECK(isinf(d.m[3].value) && d.m[3].value < 0 && !strcmp(d.m[3].type, "untyped"));
    CHECK(prom_find(&d, "big", NULL, NULL)->value == 12345678901.0);
    /* The writer refuses bad names and types, appending nothing. */
    size_t len = b.len;
    CHECK_EQ_I64(prom_family(&b, "1bad", "gauge", NULL), EM_EINVAL);
    CHECK_EQ_I64(prom_family(&b, "ok", "meter", NULL), EM_EINVAL);
    prom_label badl[] = {{"__reserved", "x"}};
    CHECK_EQ_I64(prom_sample(&b, "ok", badl, 1, 1), EM_EINVAL);
    prom_label badl2[] = {{"a:b", "x"}};
    CHECK_EQ_I64(prom_sample(&b, "ok", badl2, 1, 1), EM_EINVAL);
    CHECK_EQ_I64(b.len, len);
    prom_doc_free(&d);
    ebuf_free(&b);
}

/* Text that parses, with what it holds. */
TEST(prom_parses_the_format) {
    static const char t[] = "# a comment\n"
                            "\n"
                            "# HELP h_seconds A histogram.\n"
                            "# TYPE h_seconds histogram\n"
                            "h_seconds_bucket{le=\"1\"} 3\n"
                            "h_seconds_bucket{le=\"+Inf\",} 4 1700000000000\n"
                            "h_seconds_sum 2.5e0\n"
                            "h_seconds_count 4\n"
                            "up\t{ job = \"a\" }  1  \n"
                            "x{} -0.5\n";
    prom_doc d = PROM_DOC_INIT;
    CHECK_OK(prom_parse(t, sizeof t - 1, &d));
    CHECK_EQ_I64(d.n, 6);
    CHECK(!strcmp(d.m[1].type, "histogram") && d.m[1].has_ts && d.m[1].ts == 1700000000000LL);
    CHECK(!strcmp(d.m[2].type, "histogram") && d.m[2].value == 2.5);
    CHECK(!strcmp(d.m[4].name, "up") && !strcmp(d.m[4].lvalue[0], "a") && d.m[4].value == 1);
    CHECK(d.m[5].value == -0.5 && d.m[5].nlabels == 0);
    prom_doc_free(&d);
}

TEST(prom_refuses_what_the_format_does_not_allow) {
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"a 1", "does not end with a newline"},
        {"1a 1\n", "valid metric name"},
        {"a{b=\"c\" 1\n", "separated by ','"},
        {"a{b=c} 1\n", "double quotes"},
        {"a{b=\"\\x\"} 1\n", "bad label value"},
        {"a{b=\"c\",b=\"d\"} 1\n", "label given twice"},
        {"a{__b=\"c\"} 1\n", "bad label name"},
        {"a one\n", "bad value"},
        {"a\n", "no blank before the value"},
        {"a 1 2.5\n", "bad timestamp"},
        {"a 1\nb 1\na 2\n", "not together"},
        {"a 1\na 2\n", "given twice"},
        {"# TYPE a gauge\n# TYPE a gauge\n", "second TYPE"},
        {"# TYPE a meter\n", "unknown metric type"},
        {"a 1\n# TYPE a gauge\n", "after the metric's samples"},
        {"# HELP a x\n# HELP a y\n", "second HELP"},
        {"# HELP a bad \\q\n", "bad escape"},
        {"a\r 1\n", "control character"},
    };
    prom_doc d = PROM_DOC_INIT;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = prom_parse(bad[i].text, strlen(bad[i].text), &d);
        if (rc != EM_ECORRUPT) fprintf(stderr, "  accepted: %s", bad[i].text);
        CHECK_EQ_I64(rc, EM_ECORRUPT);
        CHECK_STR_CONTAINS(em_errmsg(), bad[i].why);
        CHECK_STR_CONTAINS(em_errmsg(), "line ");
    }
    CHECK_OK(prom_parse("a 1\nb 1\n", 8, &d));
    CHECK_EQ_I64(d.n, 2);
    prom_doc_free(&d);
}
