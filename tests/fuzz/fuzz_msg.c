/*
 * fuzz_msg.c -- the wire's typed messages (engine/msg.c) decoded from
 * arbitrary bytes, as a peer may send them.
 *
 * Input: the body of an FT_MSG frame.
 * Properties: no crash, no out-of-bounds read, no allocation beyond what
 * the bytes can describe; a refusal is EM_EPROTO with a message; an
 * accepted message has a known tag and its table's field count, and
 * encoding it again and decoding that gives the same tag and fields.
 */
#include <string.h>

#include "ember.h"
#include "fuzz.h"
#include "msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    msg m, m2;
    int rc = msg_decode(&m, data, size);
    if (rc) {
        FZ_CHECK(rc == EM_EPROTO && strstr(em_errmsg(), "message"), "rc %d: %s", rc, em_errmsg());
        msg_free(&m);
        return 0;
    }
    FZ_CHECK(strcmp(msg_name(m.tag), "unknown") != 0, "accepted tag %d", m.tag);
    ebuf out = EBUF_INIT;
    FZ_CHECK(msg_encode(&out, m.tag, m.f, m.n) == 0, "re-encoding failed: %s", em_errmsg());
    FZ_CHECK(msg_decode(&m2, out.p, out.len) == 0, "re-decoding failed: %s", em_errmsg());
    FZ_CHECK(m2.tag == m.tag && m2.n == m.n, "tag or count changed");
    for (int i = 0; i < m.n; i++) {
        FZ_CHECK(m2.f[i].u == m.f[i].u && m2.f[i].i == m.f[i].i && m2.f[i].len == m.f[i].len, "field %d changed", i);
        FZ_CHECK(!m.f[i].len || !memcmp(m2.f[i].p, m.f[i].p, m.f[i].len), "field %d bytes changed", i);
    }
    msg_free(&m2);
    msg_free(&m);
    ebuf_free(&out);
    return 0;
}
