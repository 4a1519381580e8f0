/*
 * fuzz_uipages.c -- the UI pages' router and query parameters
 * (engine/uipages.c and the pages it routes to), fed the paths and queries
 * a browser may send, over the store of tests/unit/status_fixture.h's
 * application, as a driver's and as the history server's.
 *
 * Input layout: byte 0 picks the paths (bit 0: the history server's) and
 * the start of the path (byte0 / 2 % 5: "/", "/jobs/job/",
 * "/stages/stage/", the application's "/history/" base, its stage page
 * there); the rest, up to a NUL, is appended and split at its first '?'
 * into the path and the raw query, each within httpd's bounds.
 * Properties: uipage_route returns 0 and a status of 200, 400 or 404; the
 * answer is one whole page (doctype to </html>) whose only script element
 * is the kit's own in its head, so nothing the client sent reaches the
 * page unescaped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "httpd.h"
#include "rest.h"
#include "uipages.h"
#include "../unit/status_fixture.h"

static int count(const uint8_t *p, size_t n, const char *needle) {
    int c = 0;
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++) c += !memcmp(p + i, needle, k);
    return c;
}

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
    static const char *const starts[] = {"/", "/jobs/job/", "/stages/stage/", "/history/" FIX_APP "/",
                                         "/history/" FIX_APP "/stages/stage/"};
    int history = data[0] & 1;
    char path[HTTPD_PATH_MAX + 1], query[HTTPD_QUERY_MAX + 1];
    size_t pl = (size_t)snprintf(path, sizeof path, "%s", starts[data[0] / 2 % 5]), ql = 0;
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
    int rc = uipage_route(&p, history, path, query, &status, &body);
    FZ_CHECK(rc == 0, "uipage_route %d for %s?%s", rc, path, query);
    FZ_CHECK(status == 200 || status == 400 || status == 404, "status %d for %s?%s", status, path, query);
    static const char head[] = "<!DOCTYPE html>\n", tail[] = "</html>\n";
    FZ_CHECK(body.len > sizeof head + sizeof tail && !memcmp(body.p, head, sizeof head - 1) &&
                 !memcmp(body.p + body.len - (sizeof tail - 1), tail, sizeof tail - 1),
             "not a whole page for %s?%s", path, query);
    FZ_CHECK(count(body.p, body.len, "<script") == 1, "a script element from %s?%s", path, query);
    ebuf_free(&body);
    return 0;
}
