/*
 * fuzz_prom.c -- the Prometheus text parser (engine/prom.c's prom_parse),
 * fed any bytes, as the tests feed it what the daemons serve.
 *
 * Input: the text.
 * Properties: the parser never crashes or reads past the text (copied to a
 * buffer of exactly its size); it accepts or refuses with EM_ECORRUPT (or
 * EM_ENOMEM); what it accepts has valid metric and label names, at most
 * PROM_LABELS_MAX labels a sample, a known type, and every sample written
 * back with prom_sample parses again to the same names, labels and values.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "fuzz.h"
#include "prom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *p = malloc(size ? size : 1);
    if (!p) return 0;
    memcpy(p, data, size);
    prom_doc d = PROM_DOC_INIT, back = PROM_DOC_INIT;
    int rc = prom_parse(p, size, &d);
    FZ_CHECK(rc == 0 || rc == EM_ECORRUPT || rc == EM_ENOMEM, "rc %d", rc);
    if (!rc) {
        ebuf b = EBUF_INIT;
        for (size_t i = 0; i < d.n; i++) {
            const prom_metric *m = &d.m[i];
            FZ_CHECK(m->nlabels >= 0 && m->nlabels <= PROM_LABELS_MAX, "labels %d", m->nlabels);
            FZ_CHECK(!strcmp(m->type, "counter") || !strcmp(m->type, "gauge") || !strcmp(m->type, "histogram") ||
                         !strcmp(m->type, "summary") || !strcmp(m->type, "untyped"),
                     "type %s", m->type);
            prom_label l[PROM_LABELS_MAX];
            for (int j = 0; j < m->nlabels; j++) l[j] = (prom_label){m->lname[j], m->lvalue[j]};
            /* One family per sample: each written sample its own. */
            b.len = 0;
            FZ_CHECK(!prom_sample(&b, m->name, l, m->nlabels, m->value), "cannot write back %s", m->name);
            FZ_CHECK(!prom_parse((const char *)b.p, b.len, &back) && back.n == 1, "written back does not parse");
            const prom_metric *r = &back.m[0];
            FZ_CHECK(!strcmp(r->name, m->name) && r->nlabels == m->nlabels, "name or labels changed");
            for (int j = 0; j < m->nlabels; j++)
                FZ_CHECK(!strcmp(r->lname[j], m->lname[j]) && !strcmp(r->lvalue[j], m->lvalue[j]), "label changed");
            FZ_CHECK((isnan(r->value) && isnan(m->value)) || r->value == m->value, "value changed");
        }
        ebuf_free(&b);
    }
    prom_doc_free(&back);
    prom_doc_free(&d);
    free(p);
    return 0;
}
