/*
 * ui_app.c -- the application the browser test (tests/ui/run.sh) looks
 * at, written with the public API only: a word count (two stages), a job
 * whose held-back task gets a speculative copy, a cached RDD counted
 * twice, and a job that fails (its task fails every attempt).  Its event
 * log goes to the directory given, and a secret is set, so the pages must
 * redact it.  It prints "ui URL" once the jobs are done and then waits
 * until its standard input closes.
 *
 *   ui_app MASTER EVENT_DIR TEXT_FILE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"

static int split_words(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    const unsigned char *p = in->val, *end = p + in->vlen;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        const unsigned char *w = p;
        while (p < end && *p != ' ' && *p != '\t') p++;
        if (p > w) {
            int rc = em_emit_pair_i64(out, w, (size_t)(p - w), 1);
            if (rc) return rc;
        }
    }
    return 0;
}

static int same(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    return em_emit(out, in->val, in->vlen);
}

static int fail_on_7(const em_rec *in, em_emitter *out, const void *arg) {
    (void)arg;
    if (em_i64_dec(in->val) == 7) return em_fail("record 7 is refused by the test's map function");
    return em_emit(out, in->val, in->vlen);
}

static int die(const char *what) {
    fprintf(stderr, "ui_app: %s: %s\n", what, em_errmsg());
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: ui_app MASTER EVENT_DIR TEXT_FILE\n");
        return 2;
    }
    const char *kv[][2] = {
        {"ember.app.name", "ui-test"},
        {"ember.eventLog.enabled", "true"},
        {"ember.eventLog.dir", argv[2]},
        {"ember.eventLog.logBlockUpdates.enabled", "true"},
        {"ember.ui.port", "0"},
        {"ember.authenticate.secret", "ui-test-secret-value"},
        {"ember.speculation", "true"},
        {"ember.speculation.interval", "5ms"},
        {"ember.speculation.quantile", "0.5"},
        {"ember.speculation.minTaskRuntime", "100ms"},
        {"ember.test.faults", "delay:part=3,attempt=0"},
        {"ember.progress", "false"},
    };
    em_conf *conf = em_conf_new();
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (em_conf_set(conf, kv[i][0], kv[i][1])) return die(kv[i][0]);
    em_ctx *c = em_open(argv[1], conf);
    em_conf_free(conf);
    if (!c) return die("em_open");

    em_batch *b = NULL;
    em_rdd *words = em_reduce_by_key(em_flat_map(em_text_file(c, argv[3], 2), split_words, NULL, 0), em_sum_i64,
                                     NULL, 0, 2);
    if (em_collect(words, &b)) return die("word count");
    em_batch_free(b);

    /* Partition 3's first attempt is held back until a copy wins. */
    if (em_collect(em_map(em_range(c, 0, 4000, 1, 4), same, NULL, 0), &b)) return die("speculation");
    em_batch_free(b);

    em_rdd *cached = em_persist(em_map(em_range(c, 0, 1000, 1, 2), same, NULL, 0), EM_MEMORY_ONLY);
    int64_t n = 0;
    if (em_count(cached, &n) || em_count(cached, &n) || n != 1000) return die("cached count");

    if (em_collect(em_map(em_range(c, 0, 20, 1, 2), fail_on_7, NULL, 0), &b) == 0) {
        fprintf(stderr, "ui_app: the failing job succeeded\n");
        return 1;
    }

    const char *url = em_ui_url(c);
    printf("ui %s\n", url ? url : "none");
    fflush(stdout);
    char buf[256];
    while (fread(buf, 1, sizeof buf, stdin) > 0) {}
    em_close(c);
    return 0;
}
