/*
 * fuzz_eventlog.c -- event logs: engine/eventlog_json.c's evjson_read on
 * arbitrary bytes, and engine/eventlog_reader.c's decoders on arbitrary
 * compressed files.
 *
 * Input: the bytes of one line (the seeds are one line of each event kind,
 * Spark 1.x-style and 3.x-style).  When the input starts with a zstd
 * frame's magic, an LZ4 frame's or "LZ4Block", it is also written to a
 * file named .zstd / .lz4 (and, with its first byte's low bit set,
 * .inprogress after it) and read through evlog_reader to the end.
 * Properties: evjson_read never crashes or reads past the bytes given (they
 * are copied to a buffer of exactly their size); it returns 0 or
 * EM_ECORRUPT, and on EM_ECORRUPT gives no event and a message starting
 * "event log"; a parsed event is written (evjson_write), that text reads
 * back, and writing the result gives the same bytes again.  The reader
 * returns events, 0 or EM_ECORRUPT / EM_EINVAL, never crashes, and frees
 * everything.
 */
#include <stdlib.h>
#include <string.h>

#include "appevent.h"
#include "ember.h"
#include "eventlog_json.h"
#include "eventlog_reader.h"
#include "fuzz.h"

static void read_file(const uint8_t *data, size_t size) {
    static const uint8_t zstd[4] = {0x28, 0xB5, 0x2F, 0xFD}, lz4f[4] = {0x04, 0x22, 0x4D, 0x18};
    const char *name = NULL;
    bool tail = size > 4 && (data[4] & 1);
    if (size >= 4 && !memcmp(data, zstd, 4)) name = tail ? "log.zstd.inprogress" : "log.zstd";
    else if ((size >= 4 && !memcmp(data, lz4f, 4)) || (size >= 8 && !memcmp(data, "LZ4Block", 8)))
        name = tail ? "log.lz4.inprogress" : "log.lz4";
    if (!name) return;
    const char *path = fz_write_file(name, data, size);
    evlog_reader *r;
    FZ_CHECK(evlog_reader_open(path, &r) == 0, "open: %s", em_errmsg());
    app_event *e;
    int rc, n = 0;
    while ((rc = evlog_reader_next(r, &e)) == 1 || (rc == EM_ECORRUPT && n < 1000)) {
        app_event_free(e);
        n++;
    }
    FZ_CHECK(rc == 0 || rc == EM_ECORRUPT, "reader rc %d: %s", rc, em_errmsg());
    evlog_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static json_doc doc = JSON_DOC_INIT; /* reused, as a reader does */
    uint8_t *p = malloc(size ? size : 1);
    if (!p) return 0;
    memcpy(p, data, size);
    app_event *e = NULL;
    int rc = evjson_read(p, size, &doc, &e);
    FZ_CHECK(rc == 0 || rc == EM_ECORRUPT, "rc %d: %s", rc, em_errmsg());
    if (rc) {
        FZ_CHECK(!e, "an event after a failure");
        FZ_CHECK(!strncmp(em_errmsg(), "event log", 9), "message \"%s\"", em_errmsg());
    } else {
        ebuf w1 = EBUF_INIT, w2 = EBUF_INIT;
        FZ_CHECK(evjson_write(e, &w1) == 0, "write: %s", em_errmsg());
        json_doc d2 = JSON_DOC_INIT;
        app_event *b = NULL;
        FZ_CHECK(evjson_read(w1.p, w1.len, &d2, &b) == 0, "written line does not read: %s", em_errmsg());
        FZ_CHECK(b->kind == e->kind, "kind %d != %d", b->kind, e->kind);
        FZ_CHECK(evjson_write(b, &w2) == 0, "write again: %s", em_errmsg());
        FZ_CHECK(w1.len == w2.len && !memcmp(w1.p, w2.p, w1.len), "written twice, different bytes");
        app_event_free(b);
        app_event_free(e);
        json_doc_free(&d2);
        ebuf_free(&w1);
        ebuf_free(&w2);
    }
    free(p);
    read_file(data, size);
    return 0;
}
