/*
 * test_master_ui.c -- the master's page and metrics (scheduler/master_ui.h)
 * from a master fed by hand: every name a driver or worker chose is
 * escaped, a running application links its UI and a finished one does
 * not, the sections hold the applications of their state, and the metrics
 * parse with the Prometheus parser to the counts of the state.
 */
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "buf.h"
#include "ember.h"
#include "master.h"
#include "master_ui.h"
#include "prom.h"

static void no_launch(void *ud, const master_exec *e) {
    (void)ud;
    (void)e;
}

static const char *str(ebuf *b) {
    if (ebuf_append(b, "", 1)) return "";
    b->len--;
    return (const char *)b->p;
}

/* The part of the page from the heading id to the next heading. */
static char *section(const char *page, const char *id) {
    char h[64];
    snprintf(h, sizeof h, "<h2 id=\"%s\">", id);
    const char *s = strstr(page, h);
    if (!s) return strdup("");
    const char *e = strstr(s + 1, "<h2");
    return strndup(s, e ? (size_t)(e - s) : strlen(s));
}

TEST(master_ui_page_and_metrics) {
    master_conf c = {"ember://127.0.0.1:7077", 5000, 1, 10};
    master *m = master_new(&c);
    CHECK(m);
    CHECK_OK(master_register_worker(m, "w<1>", "127.0.0.1", 7337, 4, 4096, 1000));
    CHECK_OK(master_worker_set_webui(m, "w<1>", "http://127.0.0.1:8081"));
    CHECK_OK(master_register_worker(m, "w2", "127.0.0.1", 7338, 2, 1024, 1000));
    char a1[MASTER_ID_MAX], a2[MASTER_ID_MAX], a3[MASTER_ID_MAX];
    CHECK_OK(master_register_app(m, "<script>alert(1)</script>", 2, 2, 512, 2000, a1));
    CHECK_OK(master_app_set_info(m, a1, "ann&bob", "http://127.0.0.1:4040/?a=1&b=\"2\""));
    CHECK_OK(master_register_app(m, "done", 0, 1, 512, 2000, a2));
    CHECK_OK(master_app_set_info(m, a2, "carl", "http://127.0.0.1:4041"));
    master_schedule(m, no_launch, NULL);
    CHECK_OK(master_unregister_app(m, a2, 9000, no_launch, NULL));
    /* One that asks more cores per executor than any worker has waits. */
    CHECK_OK(master_register_app(m, "big", 0, 8, 512, 3000, a3));
    master_schedule(m, no_launch, NULL);
    CHECK_EQ_I64(master_worker_set_webui(m, "nope", "x"), EM_ENOENT);
    CHECK_EQ_I64(master_app_set_info(m, "nope", "x", "y"), EM_ENOENT);

    ebuf b = EBUF_INIT;
    CHECK_OK(master_ui_page(m, "ember://127.0.0.1:7077", 10000, 1795887989000LL, &b));
    const char *page = str(&b);
    CHECK(!strstr(page, "<script>alert"));
    CHECK_STR_CONTAINS(page, "&lt;script&gt;alert(1)&lt;/script&gt;");
    CHECK_STR_CONTAINS(page, "<a href=\"http://127.0.0.1:8081\">w&lt;1&gt;</a>");
    CHECK_STR_CONTAINS(page, "<td>w2</td>"); /* no web UI: no link */
    CHECK_STR_CONTAINS(page, "<td>ann&amp;bob</td>");
    CHECK_STR_CONTAINS(page, "<b>Alive Workers:</b> 2");
    char *run = section(page, "running"), *wait = section(page, "waiting"), *done = section(page, "completed");
    int ok = strstr(run, "<a href=\"http://127.0.0.1:4040/?a=1&amp;b=&quot;2&quot;\">") && strstr(run, a1) &&
             strstr(run, "RUNNING") && !strstr(run, a2) && !strstr(run, a3) && strstr(wait, a3) &&
             strstr(wait, "WAITING") && strstr(done, a2) && strstr(done, "FINISHED") &&
             !strstr(done, "http://127.0.0.1:4041") && strstr(done, "<td>done</td>") && strstr(done, "7.0 s");
    if (!ok) fprintf(stderr, "%s\n", page);
    free(run);
    free(wait);
    free(done);
    CHECK(ok);

    b.len = 0;
    CHECK_OK(master_ui_metrics(m, &b));
    prom_doc d = PROM_DOC_INIT;
    CHECK_OK(prom_parse((const char *)b.p, b.len, &d));
    CHECK_EQ_I64(d.n, 8);
    static const struct {
        const char *name;
        double v;
    } want[] = {{"workers", 2}, {"aliveWorkers", 2}, {"apps", 2}, {"waitingApps", 1}};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 2; k++) {
            char n[128];
            snprintf(n, sizeof n, "metrics_master_%s_%s", want[i].name, k ? "Value" : "Number");
            const prom_metric *x = prom_find(&d, n, "type", "gauges");
            CHECK(x && x->value == want[i].v && !strcmp(x->type, "gauge") && x->help[0]);
        }
    prom_doc_free(&d);
    /* The applications running or waiting (a1, "big"), not the finished. */
    b.len = 0;
    CHECK_OK(master_ui_app_metrics(m, 10000, 1795887989000LL, &b));
    CHECK_OK(prom_parse((const char *)b.p, b.len, &d));
    CHECK_EQ_I64(d.n, 8);
    const prom_metric *x = prom_find(&d, "metrics_application__script_alert_1___script__1795887981000_runtime_ms_Value",
                                     "type", "gauges");
    CHECK(x && x->value == 8000);
    x = prom_find(&d, "metrics_application__script_alert_1___script__1795887981000_cores_Number", "type", "gauges");
    CHECK(x && x->value == 2);
    x = prom_find(&d, "metrics_application_big_1795887982000_cores_Value", "type", "gauges");
    CHECK(x && x->value == 0);
    CHECK(!strstr(str(&b), "done_"));
    prom_doc_free(&d);
    ebuf_free(&b);
    master_free(m);
}
