/*
 * faults.c -- parsing and matching ember.test.faults rules (see faults.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults.h"

static const char *skip_blanks(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    return p;
}

static const char *trim_end(const char *p, const char *e) {
    while (e > p && (e[-1] == ' ' || e[-1] == '\t')) e--;
    return e;
}

static int is(const char *p, const char *e, const char *word) {
    size_t n = strlen(word);
    return (size_t)(e - p) == n && !memcmp(p, word, n);
}

/* A whole number >= 0 in [p, e). */
static int number(const char *p, const char *e, int64_t *v) {
    char buf[32];
    if (e <= p || (size_t)(e - p) >= sizeof buf) return -1;
    memcpy(buf, p, (size_t)(e - p));
    buf[e - p] = 0;
    for (char *c = buf; *c; c++)
        if (*c < '0' || *c > '9') return -1;
    errno = 0;
    long long x = strtoll(buf, NULL, 10);
    if (errno) return -1;
    *v = x;
    return 0;
}

/* One rule in [p, e). */
static int rule(const char *p, const char *e, fault_rule *r, char *why, size_t whylen) {
    const char *colon = memchr(p, ':', (size_t)(e - p));
    const char *ke = trim_end(p, colon ? colon : e);
    memset(r, 0, sizeof *r);
    r->stage = r->part = r->attempt = -1;
    if (is(p, ke, "fail")) r->kind = FAULT_FAIL;
    else if (is(p, ke, "delay")) r->kind = FAULT_DELAY;
    else if (is(p, ke, "corrupt")) r->kind = FAULT_CORRUPT;
    else if (is(p, ke, "commit")) r->kind = FAULT_COMMIT;
    else if (is(p, ke, "delaycommit")) r->kind = FAULT_DELAY_COMMIT;
    else if (is(p, ke, "dropfetch")) r->kind = FAULT_DROP_FETCH, r->n = 1;
    else if (is(p, ke, "execexit")) r->kind = FAULT_EXEC_EXIT, r->n = -1, r->code = 1;
    else {
        snprintf(why, whylen,
                 "unknown fault \"%.*s\" (expected fail, delay, corrupt, commit, delaycommit, dropfetch or execexit)",
                 (int)(ke - p), p);
        return -1;
    }
    for (const char *q = colon ? colon + 1 : e; q < e;) {
        const char *comma = memchr(q, ',', (size_t)(e - q)), *pe = comma ? comma : e;
        const char *eq = memchr(q, '=', (size_t)(pe - q));
        const char *k = skip_blanks(q, pe), *kend = eq ? trim_end(k, eq) : pe;
        int64_t v;
        if (!eq || number(skip_blanks(eq + 1, pe), trim_end(eq + 1, pe), &v)) {
            snprintf(why, whylen, "\"%.*s\" is not key=number", (int)(pe - q), q);
            return -1;
        }
        if (r->kind == FAULT_DROP_FETCH) {
            if (!is(k, kend, "n") || v < 0) {
                snprintf(why, whylen, "dropfetch takes only n=COUNT");
                return -1;
            }
            r->n = v;
        } else if (r->kind == FAULT_EXEC_EXIT) {
            if (is(k, kend, "n")) r->n = v;
            else if (is(k, kend, "code") && v >= 1 && v <= 255) r->code = v;
            else {
                snprintf(why, whylen, "execexit takes only n=COUNT and code=1..255");
                return -1;
            }
        } else if (is(k, kend, "stage")) r->stage = v;
        else if (is(k, kend, "part")) r->part = v;
        else if (is(k, kend, "attempt")) r->attempt = v;
        else if (is(k, kend, "ms") && (r->kind == FAULT_DELAY || r->kind == FAULT_DELAY_COMMIT)) r->ms = v;
        else {
            snprintf(why, whylen, "unknown key \"%.*s\" (expected stage, part, attempt%s)", (int)(kend - k), k,
                     r->kind == FAULT_DELAY || r->kind == FAULT_DELAY_COMMIT ? " or ms" : "");
            return -1;
        }
        q = comma ? comma + 1 : e;
    }
    return 0;
}

int faults_parse(const char *spec, fault_rule *rules, char *why, size_t whylen) {
    int n = 0;
    if (!spec) return 0;
    const char *p = spec, *end = spec + strlen(spec);
    while (p < end) {
        const char *semi = memchr(p, ';', (size_t)(end - p)), *e = semi ? semi : end;
        const char *b = skip_blanks(p, e), *be = trim_end(b, e);
        if (b < be) {
            if (n == FAULTS_MAX) {
                snprintf(why, whylen, "more than %d rules", FAULTS_MAX);
                return -1;
            }
            if (rule(b, be, &rules[n], why, whylen)) return -1;
            n++;
        }
        p = semi ? semi + 1 : end;
    }
    return n;
}

const fault_rule *faults_match(const fault_rule *rules, int n, fault_kind kind, uint32_t stage, int32_t part,
                               uint32_t attempt) {
    for (int i = 0; i < n; i++) {
        const fault_rule *r = &rules[i];
        if (r->kind == kind && (r->stage < 0 || r->stage == (int64_t)stage) &&
            (r->part < 0 || r->part == (int64_t)part) && (r->attempt < 0 || r->attempt == (int64_t)attempt))
            return r;
    }
    return NULL;
}
