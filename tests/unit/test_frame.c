/*
 * test_frame.c -- the wire's framing (engine/frame.c): frames split at
 * every byte boundary reassemble exactly; a length over the limit, an
 * unknown type and an empty control frame are refused with a message; a
 * peer claiming a huge frame and sending little holds little memory.
 */
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "frame.h"

TEST(frame_round_trip_any_split) {
    ebuf out = EBUF_INIT;
    uint8_t big[10000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 7);
    CHECK_OK(frame_put(&out, FT_MSG, "hello", 5, 1 << 20));
    CHECK_OK(frame_put(&out, FT_CHUNK, big, sizeof big, 1 << 20));
    CHECK_OK(frame_put(&out, FT_CHUNK, NULL, 0, 1 << 20)); /* the end of bulk data */
    CHECK_OK(frame_put(&out, FT_AUTH, "x", 1, 1 << 20));
    /* Every piece size from 1 byte to all at once. */
    size_t steps[] = {1, 2, 3, 5, 4096, out.len};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        frame_reader r;
        fr_init(&r, 1 << 20);
        int nframes = 0;
        size_t pos = 0;
        while (pos < out.len) {
            size_t n = out.len - pos < steps[k] ? out.len - pos : steps[k], used = 0;
            int rc = fr_feed(&r, out.p + pos, n, &used);
            CHECK(rc == 0 || rc == 1);
            pos += used;
            if (rc == 1) {
                uint8_t type;
                size_t len;
                uint8_t *b = fr_take(&r, &type, &len);
                switch (nframes++) {
                case 0: CHECK(type == FT_MSG && len == 5 && !memcmp(b, "hello", 5)); break;
                case 1: CHECK(type == FT_CHUNK && len == sizeof big && !memcmp(b, big, sizeof big)); break;
                case 2: CHECK(type == FT_CHUNK && len == 0 && b == NULL); break;
                case 3: CHECK(type == FT_AUTH && len == 1 && b[0] == 'x'); break;
                }
                free(b);
            }
        }
        CHECK_EQ_I64(nframes, 4);
        fr_free(&r);
    }
    ebuf_free(&out);
}

static int feed_all(frame_reader *r, const uint8_t *p, size_t n) {
    size_t used = 0;
    return fr_feed(r, p, n, &used);
}

TEST(frame_refuses_bad_headers) {
    frame_reader r;
    uint8_t huge[5] = {0xff, 0xff, 0xff, 0xff, FT_MSG};
    fr_init(&r, 128u << 20);
    CHECK_EQ_I64(feed_all(&r, huge, 5), EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "frame of 4294967295 bytes exceeds ember.rpc.message.maxSize (134217728 bytes)");
    fr_free(&r);
    uint8_t unknown[5] = {0, 0, 0, 1, 9};
    fr_init(&r, 1024);
    CHECK_EQ_I64(feed_all(&r, unknown, 5), EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "frame of unknown type 9");
    fr_free(&r);
    uint8_t empty[5] = {0, 0, 0, 0, FT_MSG};
    fr_init(&r, 1024);
    CHECK_EQ_I64(feed_all(&r, empty, 5), EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "empty frame of type 1");
    fr_free(&r);
    /* Writers check the same limits. */
    ebuf out = EBUF_INIT;
    CHECK_EQ_I64(frame_put(&out, FT_MSG, "abc", 3, 2), EM_EINVAL);
    CHECK_EQ_I64(frame_put(&out, 0, "abc", 3, 100), EM_EINVAL);
    ebuf_free(&out);
}

TEST(frame_claimed_size_is_not_allocated) {
    /* A 100 MB frame announced, 10 bytes sent: the reader holds a small
     * buffer, not 100 MB. */
    frame_reader r;
    uint8_t h[5] = {0x05, 0xf5, 0xe1, 0x00, FT_CHUNK}, ten[10] = {0};
    fr_init(&r, 128u << 20);
    CHECK_EQ_I64(feed_all(&r, h, 5), 0);
    CHECK_EQ_I64(feed_all(&r, ten, 10), 0);
    CHECK(r.cap <= 4096);
    CHECK_EQ_I64((int64_t)r.len, 100000000);
    fr_free(&r);
}
