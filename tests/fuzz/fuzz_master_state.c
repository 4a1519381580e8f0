/*
 * fuzz_master_state.c -- the master's recovery state read back from its
 * file (scheduler/master_store.c's framing and checksum, then
 * scheduler/master.c's master_load), as a damaged disk or a stray file may
 * present it.
 *
 * Input layout: byte 0 picks a mode (byte % 2); the rest is the payload.
 *   0  the payload is the file: unframed (magic, version, length, CRC),
 *      and its body loaded when that passes;
 *   1  the payload is a body: framed with its right CRC first, so that
 *      damage reaches the decoder behind the checksum.
 * Properties: no crash, no out-of-bounds read, no allocation beyond what
 * the bytes describe; a refusal is EM_ECORRUPT with a message, and leaves
 * the master empty and ALIVE (it grants nothing to a worker that then
 * registers without an application); a state it accepts saves to bytes
 * that load again and save to the same bytes, and its JSON is produced.
 */
#include <string.h>

#include "buf.h"
#include "ember.h"
#include "fuzz.h"
#include "master.h"
#include "master_store.h"

static void no_cb(void *ud, const master_exec *e) {
    (void)ud;
    (void)e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!size) return 0;
    ebuf file = EBUF_INIT;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    if (data[0] % 2) {
        FZ_CHECK(master_store_frame(&file, p, n) == 0, "framing failed");
        p = file.p;
        n = file.len;
    }
    const uint8_t *body;
    size_t len;
    int rc = master_store_unframe(p, n, "fuzz-state", &body, &len);
    FZ_CHECK(rc == 0 || (rc == EM_ECORRUPT && strstr(em_errmsg(), "fuzz-state")), "unframe rc %d: %s", rc,
             em_errmsg());
    FZ_CHECK(rc || data[0] % 2 == 0 || len == size - 1, "a framed body came back %zu bytes", len);
    if (rc) {
        ebuf_free(&file);
        return 0;
    }
    master_conf c = {"ember://127.0.0.1:7077", 1000, 1, 10};
    master *m = master_new(&c);
    FZ_CHECK(m, "master_new");
    rc = master_load(m, body, len, 1000);
    if (rc) {
        FZ_CHECK(rc == EM_ECORRUPT && strstr(em_errmsg(), "master state: "), "load rc %d: %s", rc, em_errmsg());
        FZ_CHECK(!master_recovering(m), "a refused state left the master recovering");
        FZ_CHECK(master_register_worker(m, "w", "h", 1, 1, 1, 0) == 0, "register after a refusal: %s", em_errmsg());
        FZ_CHECK(master_schedule(m, no_cb, NULL) == 0, "a refused state left an application");
    } else {
        ebuf a = EBUF_INIT, b = EBUF_INIT, j = EBUF_INIT;
        FZ_CHECK(master_save(m, &a) == 0, "save");
        master *m2 = master_new(&c);
        FZ_CHECK(m2 && master_load(m2, a.p, a.len, 1000) == 0, "reload: %s", em_errmsg());
        FZ_CHECK(master_save(m2, &b) == 0, "save again");
        FZ_CHECK(a.len == b.len && !memcmp(a.p, b.p, a.len), "save, load, save changed the bytes");
        FZ_CHECK(master_json(m2, 2000, 2000, &j) == 0, "json");
        master_free(m2);
        ebuf_free(&a);
        ebuf_free(&b);
        ebuf_free(&j);
    }
    master_free(m);
    ebuf_free(&file);
    return 0;
}
