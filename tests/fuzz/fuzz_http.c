/*
 * fuzz_http.c -- the status port's request parser (engine/httpd.c's
 * http_parse), fed the bytes a client may send.
 *
 * Input layout: byte 0 picks the limit (16 << (byte0 % 10) bytes); the
 * rest is what the client sent.
 * Properties: the parser never crashes or reads past the bytes given (the
 * input is copied to a buffer of exactly its size); a NUL byte before the
 * end of a whole request makes it HTTP_BAD; HTTP_MORE only with fewer
 * bytes than the limit; on HTTP_DONE the request took at most the limit,
 * ends with an empty line, its method is GET-like (tchars, at most 7) and
 * its path starts with '/', has the length it says and at most
 * HTTPD_PATH_MAX bytes, and its query has the length it says, at most
 * HTTPD_QUERY_MAX bytes and no '#', and urlq_get (engine/urlquery.h) reads
 * its parameters within their bounds; and the answer for every prefix of
 * the input is
 * consistent: a prefix of a whole request is HTTP_MORE, and once a prefix
 * is HTTP_BAD or HTTP_DONE every longer one says the same.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "httpd.h"
#include "urlquery.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t max = (size_t)16 << (data[0] % 10), n = size - 1;
    uint8_t *p = malloc(n ? n : 1);
    if (!p) return 0;
    memcpy(p, data + 1, n);
    http_req r;
    size_t used = 0;
    int rc = http_parse(p, n, max, &r, &used);
    FZ_CHECK(rc == HTTP_MORE || rc == HTTP_DONE || rc == HTTP_BAD, "rc %d", rc);
    if (rc == HTTP_MORE) FZ_CHECK(n < max, "more with %zu bytes, limit %zu", n, max);
    if (rc == HTTP_DONE) {
        FZ_CHECK(used >= 4 && used <= n && used <= max, "used %zu of %zu (limit %zu)", used, n, max);
        FZ_CHECK(p[used - 1] == '\n', "does not end with a line end");
        FZ_CHECK(!memchr(p, 0, used), "a NUL in a whole request");
        size_t ml = strlen(r.method);
        FZ_CHECK(ml >= 1 && ml <= 7, "method of %zu bytes", ml);
        FZ_CHECK(r.path[0] == '/' && strlen(r.path) == r.path_len && r.path_len <= HTTPD_PATH_MAX, "path");
        FZ_CHECK(strlen(r.query) == r.query_len && r.query_len <= HTTPD_QUERY_MAX && !strchr(r.query, '#'), "query");
        char v[16];
        static const char *const names[] = {"appId", "executorId", "logType", "offset", ""};
        for (int i = 0; i < 5; i++) {
            int g = urlq_get(r.query, r.query_len, names[i], v, sizeof v);
            FZ_CHECK(g == -1 || g == 0 || (g == 1 && strlen(v) < sizeof v), "urlq_get %d", g);
        }
    }
    /* Prefixes: MORE until the whole answer's point; then the same. */
    for (size_t k = 0; k < n && k < 600; k++) {
        http_req q;
        size_t u = 0;
        int pr = http_parse(p, k, max, &q, &u);
        if (pr == HTTP_DONE) FZ_CHECK(rc == HTTP_DONE && u == used, "prefix %zu done, whole %d", k, rc);
        if (pr == HTTP_BAD) FZ_CHECK(rc == HTTP_BAD, "prefix %zu bad, whole %d", k, rc);
    }
    free(p);
    return 0;
}
