/*
 * fuzz_auth.c -- the authentication handshake and sealed sessions
 * (engine/auth.c) facing a peer that sends arbitrary frames.
 *
 * Input layout: byte 0 picks the side under test (even: a server, odd: a
 * client that sent its HELLO); the rest is a sequence of frames, each a
 * 1-byte length n then n bytes of body, handed to auth_step until it fails;
 * if the handshake completes (it cannot without the secret, which the input
 * does not know), the remaining bodies go to seal_open.
 * Properties: no crash or out-of-bounds read whatever the bodies; every
 * failure is EM_EAUTH with a message, and after one the side stays failed;
 * a side never reports done without the secret; a reply is always one
 * well-formed FT_AUTH frame.
 */
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "ember.h"
#include "frame.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const char secret[] = "the fuzzer does not know this secret";
    auth_state a;
    ebuf out = EBUF_INIT;
    int client = data[0] & 1;
    if (client) FZ_CHECK(auth_client_start(&a, secret, sizeof secret - 1, &out) == 0, "client start");
    else FZ_CHECK(auth_server_start(&a, secret, sizeof secret - 1) == 0, "server start");
    int failed = 0;
    size_t pos = 1;
    while (pos < size) {
        size_t n = data[pos++];
        if (n > size - pos) n = size - pos;
        ebuf_reset(&out);
        int rc = auth_step(&a, data + pos, n, &out);
        pos += n;
        if (rc) {
            FZ_CHECK(rc == EM_EAUTH && strstr(em_errmsg(), "authentication failed"), "rc %d: %s", rc, em_errmsg());
            FZ_CHECK(out.len == 0, "a reply after a failure");
            failed = 1;
        } else {
            FZ_CHECK(!failed, "accepted a frame after failing");
            if (out.len) {
                size_t len = (size_t)out.p[0] << 24 | (size_t)out.p[1] << 16 | (size_t)out.p[2] << 8 | out.p[3];
                FZ_CHECK(out.p[4] == FT_AUTH && len + FRAME_HEADER == out.len, "a malformed reply");
            }
        }
        FZ_CHECK(!a.done, "authenticated without the secret");
    }
    auth_wipe(&a);
    ebuf_free(&out);
    return 0;
}
