/*
 * faults.c -- parsing and matching ember.test.faults rules, and holding an
 * attempt at a gate file until the test releases it (see faults.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ember.h"
#include "err.h"
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

/* A gate's name in [p, e) into gate (NUL-terminated): 0, or -1 when it is
 * empty, too long, starts with '.' or has another character than letters,
 * digits, '-', '_' and '.'. */
static int gate_name(const char *p, const char *e, char gate[FAULT_GATE_MAX + 1]) {
    if (e <= p || e - p > FAULT_GATE_MAX || *p == '.') return -1;
    for (const char *c = p; c < e; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' ||
              *c == '_' || *c == '.'))
            return -1;
    memcpy(gate, p, (size_t)(e - p));
    gate[e - p] = 0;
    return 0;
}

static const char *hold_name(fault_kind k) {
    return k == FAULT_HOLD ? "hold" : k == FAULT_HOLD_COMMIT ? "holdcommit" : k == FAULT_HOLD_MOVE ? "holdmove" : "holdend";
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
    else if (is(p, ke, "hold")) r->kind = FAULT_HOLD;
    else if (is(p, ke, "holdcommit")) r->kind = FAULT_HOLD_COMMIT;
    else if (is(p, ke, "holdmove")) r->kind = FAULT_HOLD_MOVE;
    else if (is(p, ke, "holdend")) r->kind = FAULT_HOLD_END;
    else {
        snprintf(why, whylen,
                 "unknown fault \"%.*s\" (expected fail, delay, corrupt, commit, delaycommit, dropfetch, execexit, "
                 "hold, holdcommit, holdmove or holdend)",
                 (int)(ke - p), p);
        return -1;
    }
    int hold = r->kind == FAULT_HOLD || r->kind == FAULT_HOLD_COMMIT || r->kind == FAULT_HOLD_MOVE ||
               r->kind == FAULT_HOLD_END;
    for (const char *q = colon ? colon + 1 : e; q < e;) {
        const char *comma = memchr(q, ',', (size_t)(e - q)), *pe = comma ? comma : e;
        const char *eq = memchr(q, '=', (size_t)(pe - q));
        const char *k = skip_blanks(q, pe), *kend = eq ? trim_end(k, eq) : pe;
        int64_t v;
        if (hold && eq && is(k, kend, "gate")) {
            if (gate_name(skip_blanks(eq + 1, pe), trim_end(eq + 1, pe), r->gate)) {
                snprintf(why, whylen,
                         "gate \"%.*s\" is not a name (1 to %d letters, digits, '-', '_' or '.', not starting with "
                         "'.')",
                         (int)(pe - eq - 1), eq + 1, FAULT_GATE_MAX);
                return -1;
            }
            q = comma ? comma + 1 : e;
            continue;
        }
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
                     r->kind == FAULT_DELAY || r->kind == FAULT_DELAY_COMMIT ? " or ms" : hold ? " or gate" : "");
            return -1;
        }
        q = comma ? comma + 1 : e;
    }
    if (hold && !r->gate[0]) {
        snprintf(why, whylen, "%s needs gate=NAME (the file that releases it)", hold_name(r->kind));
        return -1;
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

int faults_hold(const fault_rule *r, const fault_hold_ctx *h) {
    char marker[4096], gate[4096];
    if (!h->dir || !*h->dir)
        return em__seterr(EM_EINVAL, "ember.test.faults: %s:gate=%s needs ember.test.faults.dir (the gates' directory)",
                          hold_name(r->kind), r->gate);
    snprintf(gate, sizeof gate, "%s/%s", h->dir, r->gate);
    snprintf(marker, sizeof marker, "%s/held-%s-%u-%d-%u", h->dir, r->gate, h->stage, (int)h->part, h->attempt);
    int fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return em__seterr(EM_EIO, "ember.test.faults: cannot create %s: %s", marker, strerror(errno));
    close(fd);
    for (;;) {
        int rc = h->killed ? h->killed() : 0;
        if (rc) return rc;
        if (access(gate, F_OK) == 0) return 0;
        struct timespec one = {0, 1000000L};
        nanosleep(&one, NULL);
    }
}
