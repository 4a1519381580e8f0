/*
 * fuzz_msgs.c -- a batch of the wire's messages (an FT_MSGS frame's body,
 * engine/msg.c's msgs_next) split and decoded from arbitrary bytes, as a
 * peer may send them.
 *
 * Input: the body of an FT_MSGS frame.
 * Properties: no crash, no out-of-bounds read; each piece msgs_next gives
 * is non-empty, inside the body, right after the one before, and one
 * well-bounded msgpack object; a refusal is EM_EPROTO naming the batch; a
 * body split without refusal is covered to its last byte; each piece
 * decodes as a message or is refused as msg_decode refuses.
 */
#include <string.h>

#include "ember.h"
#include "fuzz.h"
#include "mpcheck.h"
#include "msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t off = 0, prev = 0, mlen = 0;
    int rc;
    while ((rc = msgs_next(data, size, &off, &mlen)) == 1) {
        FZ_CHECK(mlen > 0 && off == prev + mlen && off <= size, "piece [%zu, %zu) after %zu of %zu", off - mlen, off,
                 prev, size);
        FZ_CHECK(mp_precheck(data + prev, mlen) == NULL, "piece at %zu is not one object", prev);
        msg m;
        int d = msg_decode(&m, data + prev, mlen);
        FZ_CHECK(d == 0 || d == EM_EPROTO, "decode rc %d", d);
        msg_free(&m);
        prev = off;
    }
    if (rc == 0) FZ_CHECK(off == size || size == 0, "stopped at %zu of %zu", off, size);
    else FZ_CHECK(rc == EM_EPROTO && strstr(em_errmsg(), "batch of messages"), "rc %d: %s", rc, em_errmsg());
    return 0;
}
