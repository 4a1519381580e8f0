/*
 * test_msg.c -- the wire's typed messages (engine/msg.c): every message
 * round-trips; decoding refuses an unknown tag, a wrong field count, a
 * field of the wrong type or out of its bounds, trailing bytes and a
 * container header announcing more elements than there are bytes, each
 * with a message naming the message and the field.
 */
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "msg.h"

static msg_val str(const char *s) {
    msg_val v;
    memset(&v, 0, sizeof v);
    v.p = (const uint8_t *)s;
    v.len = strlen(s);
    return v;
}

static msg_val u(uint64_t x) {
    msg_val v;
    memset(&v, 0, sizeof v);
    v.u = x;
    return v;
}

TEST(msg_round_trip) {
    uint8_t hash[32];
    memset(hash, 0xab, sizeof hash);
    msg_val h = {0, 0, hash, 32, };
    msg_val f[] = {str("app-7"), u(3), u(2), u(1024), str("tcp://127.0.0.1:4040"), h, str("ember.a=1\n")};
    ebuf out = EBUF_INIT;
    CHECK_OK(msg_encode(&out, M_LAUNCH_EXECUTOR, f, 7));
    msg m;
    CHECK_OK(msg_decode(&m, out.p, out.len));
    CHECK_EQ_I64(m.tag, M_LAUNCH_EXECUTOR);
    CHECK_EQ_I64(m.n, 7);
    CHECK(m.f[0].len == 5 && !memcmp(m.f[0].p, "app-7", 5));
    CHECK_EQ_I64((int64_t)m.f[1].u, 3);
    CHECK_EQ_I64((int64_t)m.f[3].u, 1024);
    CHECK(m.f[5].len == 32 && !memcmp(m.f[5].p, hash, 32));
    CHECK(m.f[6].len == 10 && !memcmp(m.f[6].p, "ember.a=1\n", 10));
    msg_free(&m);
    /* Signed and boolean fields. */
    ebuf_reset(&out);
    msg_val e[] = {{0, -14, NULL, 0}, str("job canceled")};
    CHECK_OK(msg_encode(&out, M_ERROR, e, 2));
    CHECK_OK(msg_decode(&m, out.p, out.len));
    CHECK_EQ_I64(m.f[0].i, -14);
    msg_free(&m);
    ebuf_reset(&out);
    msg_val t[] = {u(99), u(1), u(5), u(9), {0, 0, (const uint8_t *)"r", 1}};
    CHECK_OK(msg_encode(&out, M_TASK_ENDED, t, 5));
    CHECK_OK(msg_decode(&m, out.p, out.len));
    CHECK_EQ_I64((int64_t)m.f[1].u, 1);
    CHECK_STR_CONTAINS(msg_name(m.tag), "task_ended");
    msg_free(&m);
    ebuf_free(&out);
}

/* The library a driver sends before its binary, and an executor's exit
 * that says it cannot run. */
TEST(msg_library_and_cannot_run) {
    uint8_t hash[32];
    memset(hash, 0x5c, sizeof hash);
    msg_val h = {0, 0, hash, 32};
    msg_val f[] = {str("libember.so.0"), u(2995200), h};
    ebuf out = EBUF_INIT;
    msg m;
    CHECK_OK(msg_encode(&out, M_LIBRARY, f, 3));
    CHECK_OK(msg_decode(&m, out.p, out.len));
    CHECK_EQ_I64(m.tag, M_LIBRARY);
    CHECK_STR_CONTAINS(msg_name(m.tag), "library");
    CHECK(m.f[0].len == 13 && !memcmp(m.f[0].p, "libember.so.0", 13));
    CHECK_EQ_I64((int64_t)m.f[1].u, 2995200);
    CHECK(m.f[2].len == 32 && !memcmp(m.f[2].p, hash, 32));
    msg_free(&m);
    /* An empty name, an empty library, a short hash: refused. */
    ebuf_reset(&out);
    msg_val g[] = {str(""), u(1), h};
    CHECK_EQ_I64(msg_encode(&out, M_LIBRARY, g, 3), EM_EINVAL);
    msg_val z[] = {str("libx.so"), u(0), h};
    CHECK_EQ_I64(msg_encode(&out, M_LIBRARY, z, 3), EM_EINVAL);
    msg_val sh[] = {str("libx.so"), u(1), {0, 0, hash, 31}};
    CHECK_EQ_I64(msg_encode(&out, M_LIBRARY, sh, 3), EM_EINVAL);
    msg_val e[] = {str("app-0002"), u(0), {0, 127, NULL, 0}, u(0), str("the dynamic loader cannot load libx.so"), u(1)};
    CHECK_OK(msg_encode(&out, M_EXECUTOR_EXITED, e, 6));
    CHECK_OK(msg_decode(&m, out.p, out.len));
    CHECK_EQ_I64(m.f[2].i, 127);
    CHECK_EQ_I64((int64_t)m.f[5].u, 1);
    msg_free(&m);
    ebuf_free(&out);
}

TEST(msg_encode_checks_bounds) {
    ebuf out = EBUF_INIT;
    msg_val f[] = {str("w1"), str("host"), u(70000), u(4), u(1024), u(0)};
    CHECK_EQ_I64(msg_encode(&out, M_REGISTER_WORKER, f, 6), EM_EINVAL); /* port */
    CHECK_EQ_I64(msg_encode(&out, M_REGISTER_WORKER, f, 5), EM_EINVAL); /* count */
    CHECK_EQ_I64(msg_encode(&out, 999, f, 6), EM_EINVAL);
    CHECK_EQ_I64((int64_t)out.len, 0);
    ebuf_free(&out);
}

/* Decode hand-made msgpack bytes; returns the code. */
static int dec(const char *bytes, size_t n) {
    msg m;
    int rc = msg_decode(&m, (const uint8_t *)bytes, n);
    msg_free(&m);
    return rc;
}

TEST(msg_decode_refuses_bad_messages) {
    /* [99]: unknown tag */
    CHECK_EQ_I64(dec("\x91\x63", 2), EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "message of unknown tag 99");
    /* [kill_task]: no field */
    char kt[] = {(char)0x91, M_KILL_TASK};
    CHECK_EQ_I64(dec(kt, 2), EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "message kill_task: 0 fields, expected 1");
    /* [kill_task, "x"]: wrong type */
    char kt2[] = {(char)0x92, M_KILL_TASK, (char)0xa1, 'x'};
    CHECK_EQ_I64(dec(kt2, 4), EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "message kill_task: field \"task id\" is not an unsigned integer");
    /* [kill_task, 0]: below its minimum */
    char kt3[] = {(char)0x92, M_KILL_TASK, 0};
    CHECK_EQ_I64(dec(kt3, 3), EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "field \"task id\" is 0, outside [1, any]");
    /* [heartbeat, ""]: an empty id */
    char hb[] = {(char)0x92, M_HEARTBEAT, (char)0xa0};
    CHECK_EQ_I64(dec(hb, 3), EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "field \"sender id\" has length 0");
    /* trailing bytes */
    char tr[] = {(char)0x92, M_KILL_TASK, 5, 0};
    CHECK_EQ_I64(dec(tr, 4), EM_EPROTO);
    /* an array claiming 2^32-1 elements in 5 bytes */
    CHECK_EQ_I64(dec("\xdd\xff\xff\xff\xff", 5), EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "not one msgpack message");
    /* not an array */
    CHECK_EQ_I64(dec("\x05", 1), EM_EPROTO);
    CHECK_EQ_I64(dec("", 0), EM_EPROTO);
}

/* Optional trailing fields: a sender of the older version leaves them
 * out and the message decodes with them empty; one more than the table's
 * is refused. */
TEST(msg_optional_trailing_fields) {
    uint8_t hash[32] = {0};
    msg_val f[] = {msg_str("app"), msg_str("ember://h:1"), msg_bin(hash, 32), msg_u(0), msg_u(1), msg_u(512),
                   msg_str(""), msg_str(""), msg_str("http://h:4040"), msg_str("ann")};
    ebuf b = EBUF_INIT;
    msg m;
    CHECK_OK(msg_encode(&b, M_REGISTER_APP, f, 8)); /* the older sender */
    CHECK_OK(msg_decode(&m, b.p, b.len));
    CHECK(m.tag == M_REGISTER_APP && m.n == 8 && m.f[8].len == 0 && m.f[9].len == 0 && m.f[5].u == 512);
    msg_free(&m);
    b.len = 0;
    CHECK_OK(msg_encode(&b, M_REGISTER_APP, f, 10));
    CHECK_OK(msg_decode(&m, b.p, b.len));
    CHECK(m.n == 10 && m.f[8].len == 13 && !memcmp(m.f[8].p, "http://h:4040", 13) && m.f[9].len == 3);
    msg_free(&m);
    /* Fewer than the required fields, or more than all, are refused. */
    CHECK_EQ_I64(msg_encode(&b, M_REGISTER_APP, f, 7), EM_EINVAL);
    msg_val g[] = {msg_u(1), msg_str("w"), msg_str("h"), msg_u(2), msg_str("a"), msg_str("b"), msg_str("c")};
    CHECK_EQ_I64(msg_encode(&b, M_EXECUTOR_ADDED, g, 7), EM_EINVAL);
    b.len = 0;
    CHECK_OK(msg_encode(&b, M_EXECUTOR_ADDED, g, 4));
    CHECK_OK(msg_decode(&m, b.p, b.len));
    CHECK(m.n == 4 && m.f[4].len == 0 && m.f[5].len == 0);
    msg_free(&m);
    /* A hand-made message with a field too many: refused, saying the range. */
    b.len = 0;
    uint8_t raw[] = {0x94, M_HEARTBEAT, 0xa1, 'w', 0xa1, 'x', 0xa1, 'y'};
    CHECK_EQ_I64(msg_decode(&m, raw, sizeof raw), EM_EPROTO);
    msg_free(&m);
    uint8_t raw2[] = {0x93, M_WORKER_REGISTERED, 0xa1, 'u', 0xa1, 'w'};
    CHECK_OK(msg_decode(&m, raw2, sizeof raw2));
    CHECK(m.n == 2 && m.f[1].len == 1);
    msg_free(&m);
    uint8_t raw3[] = {0x94, M_WORKER_REGISTERED, 0xa1, 'u', 0xa1, 'w', 0xa1, 'x'};
    CHECK_EQ_I64(msg_decode(&m, raw3, sizeof raw3), EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "expected 1 to 2");
    msg_free(&m);
    ebuf_free(&b);
}
