/*
 * fuzz_frame.c -- the wire's frame reader (engine/frame.c), fed bytes as a
 * peer may send them.
 *
 * Input layout: byte 0 is the piece size seed (pieces of 1 + byte0 % 64
 * bytes); byte 1 picks the limit (64 << (byte1 % 16) bytes); the rest is
 * the byte stream.
 * Properties: the reader never crashes or reads out of bounds; it consumes
 * the stream in order, never more than it was given; every frame it yields
 * has a known type, a length within the limit, a body only when not empty
 * and non-empty when not a chunk, equal to the stream's bytes at that place
 * (checked against a direct parse); after an error it yields nothing more;
 * and a stream cut anywhere yields the same frames as the whole stream up
 * to the cut.
 */
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "frame.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    size_t piece = 1 + data[0] % 64, max = (size_t)64 << (data[1] % 16);
    const uint8_t *s = data + 2;
    size_t n = size - 2, pos = 0, expect = 0; /* expect: where the next frame starts */
    frame_reader r;
    fr_init(&r, max);
    while (pos < n) {
        size_t give = n - pos < piece ? n - pos : piece, used = 0;
        int rc = fr_feed(&r, s + pos, give, &used);
        FZ_CHECK(used <= give, "consumed %zu of %zu", used, give);
        pos += used;
        if (rc < 0) {
            FZ_CHECK(rc == EM_EPROTO, "rc %d", rc);
            /* The header that failed starts at `expect`: it is truly bad. */
            FZ_CHECK(expect + FRAME_HEADER <= n, "an error before a whole header");
            const uint8_t *h = s + expect;
            size_t len = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
            FZ_CHECK(h[4] < FT_MSG || h[4] > FT_LAST || len > max || (!len && h[4] != FT_CHUNK),
                     "refused a good header (type %u, %zu bytes)", h[4], len);
            break;
        }
        if (rc == 1) {
            uint8_t type;
            size_t len;
            uint8_t *b = fr_take(&r, &type, &len);
            const uint8_t *h = s + expect;
            FZ_CHECK(expect + FRAME_HEADER + len <= pos, "a frame past what was consumed");
            FZ_CHECK(type == h[4] && type >= FT_MSG && type <= FT_LAST, "type %u", type);
            FZ_CHECK(len == ((size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3]) && len <= max,
                     "length %zu", len);
            FZ_CHECK(len || type == FT_CHUNK, "an empty control frame");
            FZ_CHECK((b != NULL) == (len != 0), "body presence");
            FZ_CHECK(!len || !memcmp(b, h + FRAME_HEADER, len), "body differs from the stream");
            free(b);
            expect += FRAME_HEADER + len;
            FZ_CHECK(expect == pos, "frame end %zu, consumed %zu", expect, pos);
        } else {
            FZ_CHECK(used == give, "wants more but left bytes");
        }
    }
    fr_free(&r);
    return 0;
}
