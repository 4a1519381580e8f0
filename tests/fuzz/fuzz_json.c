/*
 * fuzz_json.c -- JSON text (engine/json.c's json_parse and writer), fed
 * the bytes of an event log line or a REST answer.
 *
 * Input layout: byte 0 picks the limits (depth 1 + byte0 % 64, nodes
 * 1 << (byte0 / 64 * 4 + 4), so 16 to 65536); the rest is the text.
 * Properties: the parser never crashes or reads past the bytes given (the
 * input is copied to a buffer of exactly its size); it returns 0 or
 * EM_ECORRUPT, and on EM_ECORRUPT leaves no document and names a byte
 * offset within the text; a parsed document keeps within its limits; it
 * is written back by json_w_node as one whole value, that text parses
 * again (with the same limits) into the same tree, bit for bit, and is
 * written back to the same bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "fuzz.h"
#include "json.h"

static size_t depth_of(const json_doc *d, const json_node *n) {
    size_t m = 0;
    for (const json_node *c = json_first(d, n); c; c = json_next(d, c)) {
        size_t k = depth_of(d, c);
        if (k > m) m = k;
    }
    return n->type == JSON_ARRAY || n->type == JSON_OBJECT ? m + 1 : 0;
}

static void same(const json_doc *a, const json_node *x, const json_doc *b, const json_node *y) {
    FZ_CHECK(x->type == y->type, "type %d != %d", x->type, y->type);
    size_t la, lb;
    const char *sa, *sb;
    sa = json_key(a, x, &la);
    sb = json_key(b, y, &lb);
    FZ_CHECK(la == lb && !memcmp(sa, sb, la), "keys differ");
    switch (x->type) {
    case JSON_BOOL: FZ_CHECK(x->b == y->b, "bools differ"); break;
    case JSON_INT: FZ_CHECK(x->v.i == y->v.i, "ints differ"); break;
    case JSON_DOUBLE: FZ_CHECK(!memcmp(&x->v.d, &y->v.d, sizeof(double)), "doubles %.17g %.17g", x->v.d, y->v.d); break;
    case JSON_STRING:
        FZ_CHECK(json_as_str(a, x, &sa, &la) && json_as_str(b, y, &sb, &lb), "strings");
        FZ_CHECK(la == lb && !memcmp(sa, sb, la) && sa[la] == '\0', "strings differ");
        break;
    case JSON_ARRAY:
    case JSON_OBJECT: {
        FZ_CHECK(x->n == y->n, "children %u != %u", x->n, y->n);
        const json_node *c = json_first(a, x), *e = json_first(b, y);
        uint32_t k = 0;
        for (; c && e; c = json_next(a, c), e = json_next(b, e), k++) same(a, c, b, e);
        FZ_CHECK(!c && !e && k == x->n, "child lists end apart");
        break;
    }
    default: FZ_CHECK(x->type == JSON_NULL, "type %d", x->type);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static json_doc d = JSON_DOC_INIT; /* reused from input to input, as for a log's lines */
    if (size < 1) return 0;
    json_limits lim = {1u + data[0] % 64u, 1u << (data[0] / 64 * 4 + 4), 0};
    size_t n = size - 1;
    uint8_t *p = malloc(n ? n : 1);
    if (!p) return 0;
    memcpy(p, data + 1, n);
    int rc = json_parse(p, n, &lim, &d);
    FZ_CHECK(rc == 0 || rc == EM_ECORRUPT, "rc %d", rc);
    if (rc) {
        FZ_CHECK(!json_root(&d), "a document after a failure");
        const char *at = strstr(em_errmsg(), " at byte ");
        FZ_CHECK(at, "no offset in \"%s\"", em_errmsg());
        FZ_CHECK(strtoull(at + 9, NULL, 10) <= n, "offset past the text: %s", em_errmsg());
        free(p);
        return 0;
    }
    const json_node *r = json_root(&d);
    FZ_CHECK(r && d.n >= 1 && d.n <= lim.max_nodes, "%zu nodes, limit %u", d.n, lim.max_nodes);
    FZ_CHECK(depth_of(&d, r) <= lim.max_depth, "depth over %u", lim.max_depth);

    ebuf w1 = EBUF_INIT, w2 = EBUF_INIT;
    json_writer w;
    json_w_init(&w, &w1);
    FZ_CHECK(json_w_node(&w, &d, r) == 0 && json_w_finish(&w) == 0, "write: %s", em_errmsg());
    json_doc d2 = JSON_DOC_INIT;
    FZ_CHECK(json_parse(w1.p, w1.len, &lim, &d2) == 0, "written text does not parse: %s", em_errmsg());
    same(&d, r, &d2, json_root(&d2));
    json_w_init(&w, &w2);
    FZ_CHECK(json_w_node(&w, &d2, json_root(&d2)) == 0 && json_w_finish(&w) == 0, "write again");
    FZ_CHECK(w1.len == w2.len && !memcmp(w1.p, w2.p, w1.len), "written twice, different bytes");
    json_doc_free(&d2);
    ebuf_free(&w1);
    ebuf_free(&w2);
    free(p);
    return 0;
}
