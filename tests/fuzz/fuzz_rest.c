/*
 * fuzz_rest.c -- /api/v1's router and query parameters (engine/rest.c),
 * fed the paths and queries a client may send, over the store of
 * tests/unit/status_fixture.h's application.
 *
 * Input layout: byte 0 picks the start of the path ("/api/v1/", the
 * application's, or its stage 0.0's); the rest, up to a NUL, is appended
 * and split at its first '?' into the path and the raw query, each within
 * httpd's bounds.
 * Properties: rest_answer returns 0 and a status of 200, 400 or 404; a
 * 200 of JSON is one valid JSON value (json_parse reads it back); any
 * other answer is one plain-text line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "httpd.h"
#include "json.h"
#include "rest.h"
#include "../unit/status_fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static status_store *st;
    static rest_provider p;
    if (!st) {
        st = status_new(NULL);
        if (!st) return 0;
        fx_feed(st);
        rest_single(&p, st);
    }
    if (size < 1) return 0;
    static const char *const starts[] = {"/api/v1/", "/api/v1/applications/" FIX_APP "/",
                                         "/api/v1/applications/" FIX_APP "/stages/0/0/"};
    char path[HTTPD_PATH_MAX + 1], query[HTTPD_QUERY_MAX + 1];
    size_t pl = (size_t)snprintf(path, sizeof path, "%s", starts[data[0] % 3]), ql = 0;
    int in_query = 0;
    for (size_t i = 1; i < size && data[i]; i++) {
        if (!in_query && data[i] == '?') {
            in_query = 1;
        } else if (!in_query && pl < HTTPD_PATH_MAX) {
            path[pl++] = (char)data[i];
        } else if (in_query && ql < HTTPD_QUERY_MAX) {
            query[ql++] = (char)data[i];
        }
    }
    path[pl] = 0;
    query[ql] = 0;
    ebuf body = EBUF_INIT;
    int status = 0;
    const char *ctype = NULL;
    int rc = rest_answer(&p, path, query, &status, &ctype, &body);
    FZ_CHECK(rc == 0, "rest_answer %d for %s?%s", rc, path, query);
    FZ_CHECK(status == 200 || status == 400 || status == 404, "status %d for %s?%s", status, path, query);
    if (status == 200 && !strcmp(ctype, "application/json")) {
        json_doc d = JSON_DOC_INIT;
        json_limits lim = {0, 0, (size_t)1 << 30};
        FZ_CHECK(json_parse(body.p, body.len, &lim, &d) == 0, "bad JSON for %s?%s", path, query);
        json_doc_free(&d);
    } else {
        FZ_CHECK(body.len > 0 && body.p[body.len - 1] == '\n' && !memchr(body.p, '\n', body.len - 1),
                 "not one line for %s?%s", path, query);
    }
    ebuf_free(&body);
    return 0;
}
