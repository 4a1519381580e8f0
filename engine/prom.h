/*
 * prom.h -- the Prometheus text exposition format, version 0.0.4: a writer
 * of it, for the /metrics/.../prometheus endpoints of the master, the
 * workers and the driver, and a strict parser of it, for the tests that
 * check what those endpoints say.
 *
 * The format, as the writer produces it and the parser accepts it: lines
 * ending in '\n'; "# HELP name text" (text with '\' and newline escaped
 * as \\ and \n) and "# TYPE name counter|gauge|histogram|summary|untyped",
 * at most one of each per name, before its samples; other '#' lines are
 * comments; a sample is
 *     name{label="value",...} value [timestamp]
 * with a metric name of [a-zA-Z_:][a-zA-Z0-9_:]*, label names of
 * [a-zA-Z_][a-zA-Z0-9_]* (not starting "__", none twice in a sample),
 * label values with '\', '"' and newline escaped as \\, \" and \n, the
 * value a decimal float, NaN, +Inf or -Inf, and the timestamp integer
 * milliseconds.  A family's lines come together, and no sample (name and
 * labels) comes twice.
 */
#ifndef EM_PROM_H
#define EM_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* The Content-Type of the format. */
#define PROM_CTYPE "text/plain; version=0.0.4; charset=utf-8"

typedef struct prom_label {
    const char *name, *value;
} prom_label;

/* ------------------------------------------------------------- writer */

/* A family's head: "# HELP name help" (help escaped; NULL: no HELP line)
 * and "# TYPE name type".  0, or EM_EINVAL for a bad name or type, or
 * EM_ENOMEM (messages set); nothing is appended on failure. */
int prom_family(ebuf *b, const char *name, const char *type, const char *help);
/* One sample: name, its labels (n of them, values escaped) and value
 * (integers as integers, NaN, +Inf, -Inf as the format spells them).  0,
 * EM_EINVAL (a bad metric or label name) or EM_ENOMEM; nothing is
 * appended on failure. */
int prom_sample(ebuf *b, const char *name, const prom_label *labels, int n, double value);
/* A gauge family of one sample: prom_family then prom_sample. */
int prom_gauge(ebuf *b, const char *name, const char *help, const prom_label *labels, int n, double value);

/* One of Spark's gauges as its PrometheusServlet names it:
 *   metrics_SOURCE_NAME_Number{type="gauges"} v
 *   metrics_SOURCE_NAME_Value{type="gauges"} v
 * (source "master", "worker", ...), each a gauge family with help.  0,
 * EM_EINVAL or EM_ENOMEM; nothing is appended on failure. */
int prom_spark_gauge(ebuf *b, const char *source, const char *name, const char *help, double v);

/* ------------------------------------------------------------- parser */

#define PROM_NAME_MAX 200
#define PROM_VALUE_MAX 1024
#define PROM_LABELS_MAX 16

typedef struct prom_metric {
    char name[PROM_NAME_MAX + 1];
    int nlabels;
    char lname[PROM_LABELS_MAX][PROM_NAME_MAX + 1];
    char lvalue[PROM_LABELS_MAX][PROM_VALUE_MAX + 1]; /* unescaped */
    double value;
    int has_ts;
    int64_t ts;
    char type[16]; /* its family's TYPE ("untyped" when none) */
    char help[PROM_VALUE_MAX + 1]; /* its family's HELP, unescaped ("" when none) */
} prom_metric;

typedef struct prom_doc {
    prom_metric *m;
    size_t n, cap;
} prom_doc;

#define PROM_DOC_INIT {NULL, 0, 0}

/* Parse text (len bytes) into doc (emptied first).  0; EM_ECORRUPT with a
 * message naming the line and what is wrong with it; or EM_ENOMEM.  On
 * failure doc holds the samples before the bad line. */
int prom_parse(const char *text, size_t len, prom_doc *doc);
void prom_doc_free(prom_doc *doc);
/* The first sample named name whose label lname is lvalue (lname NULL:
 * any labels); NULL when none. */
const prom_metric *prom_find(const prom_doc *doc, const char *name, const char *lname, const char *lvalue);

#endif
