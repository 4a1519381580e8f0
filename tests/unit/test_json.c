/*
 * test_json.c -- JSON text (engine/json.c): every type written and parsed
 * back, escapes, surrogate pairs, invalid UTF-8, the writer refusing
 * invalid sequences of calls, every class of malformed input refused with
 * EM_ECORRUPT naming the byte, the limits, and a Spark event log line
 * parsed and its fields looked up.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ember.h"
#include "json.h"

static int parse_str(const char *s, json_doc *d) {
    return json_parse((const uint8_t *)s, strlen(s), NULL, d);
}

/* The text in b as a NUL-terminated string (b gets the NUL past len). */
static const char *text(ebuf *b) {
    if (ebuf_reserve(b, 1)) return "";
    b->p[b->len] = '\0';
    return (const char *)b->p;
}

TEST(json_write_every_type) {
    ebuf b = EBUF_INIT;
    json_writer w;
    json_w_init(&w, &b);
    CHECK_OK(json_w_begin_object(&w));
    CHECK_OK(json_w_key(&w, "i"));
    CHECK_OK(json_w_i64(&w, INT64_MIN));
    CHECK_OK(json_w_key(&w, "u"));
    CHECK_OK(json_w_u64(&w, UINT64_MAX));
    CHECK_OK(json_w_key(&w, "d"));
    CHECK_OK(json_w_f64(&w, 0.1));
    CHECK_OK(json_w_key(&w, "one"));
    CHECK_OK(json_w_f64(&w, 1.0));
    CHECK_OK(json_w_key(&w, "inf"));
    CHECK_OK(json_w_f64(&w, INFINITY));
    CHECK_OK(json_w_key(&w, "nan"));
    CHECK_OK(json_w_f64(&w, NAN));
    CHECK_OK(json_w_key(&w, "a"));
    CHECK_OK(json_w_begin_array(&w));
    CHECK_OK(json_w_bool(&w, true));
    CHECK_OK(json_w_bool(&w, false));
    CHECK_OK(json_w_null(&w));
    CHECK_OK(json_w_str(&w, "x"));
    CHECK_OK(json_w_begin_object(&w));
    CHECK_OK(json_w_end_object(&w));
    CHECK_OK(json_w_begin_array(&w));
    CHECK_OK(json_w_end_array(&w));
    CHECK_OK(json_w_end_array(&w));
    CHECK_OK(json_w_end_object(&w));
    CHECK_OK(json_w_finish(&w));
    CHECK(!strcmp(text(&b), "{\"i\":-9223372036854775808,\"u\":18446744073709551615,\"d\":0.1,"
                            "\"one\":1.0,\"inf\":null,\"nan\":null,\"a\":[true,false,null,\"x\",{},[]]}"));

    json_doc d = JSON_DOC_INIT;
    CHECK_OK(json_parse(b.p, b.len, NULL, &d));
    const json_node *r = json_root(&d);
    int64_t i;
    double f;
    bool bo;
    const char *s;
    size_t sl;
    CHECK(r && r->type == JSON_OBJECT && r->n == 7);
    CHECK(json_as_i64(json_get(&d, r, "i"), &i) && i == INT64_MIN);
    CHECK(!json_as_i64(json_get(&d, r, "u"), &i)); /* past int64: a double */
    CHECK(json_as_f64(json_get(&d, r, "u"), &f) && f == 18446744073709551615.0);
    CHECK(json_as_f64(json_get(&d, r, "d"), &f) && f == 0.1);
    CHECK(json_get(&d, r, "one")->type == JSON_DOUBLE);
    CHECK(json_is_null(json_get(&d, r, "inf")) && json_is_null(json_get(&d, r, "nan")));
    CHECK(!json_get(&d, r, "missing"));
    const json_node *a = json_get(&d, r, "a");
    CHECK(a && a->type == JSON_ARRAY && a->n == 6);
    CHECK(json_as_bool(json_at(&d, a, 0), &bo) && bo);
    CHECK(json_as_bool(json_at(&d, a, 1), &bo) && !bo);
    CHECK(json_is_null(json_at(&d, a, 2)));
    CHECK(json_as_str(&d, json_at(&d, a, 3), &s, &sl) && sl == 1 && !strcmp(s, "x"));
    CHECK(json_at(&d, a, 4)->type == JSON_OBJECT && json_at(&d, a, 4)->n == 0);
    CHECK(json_at(&d, a, 5)->type == JSON_ARRAY && !json_first(&d, json_at(&d, a, 5)));
    CHECK(!json_at(&d, a, 6));
    CHECK(!json_as_str(&d, json_at(&d, a, 0), &s, &sl)); /* a bool is no string */
    CHECK(!json_as_i64(NULL, &i));

    /* Written back from the tree, the same text but for the number past
     * int64, which became a double. */
    ebuf b2 = EBUF_INIT;
    json_w_init(&w, &b2);
    CHECK_OK(json_w_node(&w, &d, r));
    CHECK_OK(json_w_finish(&w));
    CHECK(!strcmp(text(&b2), "{\"i\":-9223372036854775808,\"u\":1.8446744073709552e+19,\"d\":0.1,"
                             "\"one\":1.0,\"inf\":null,\"nan\":null,\"a\":[true,false,null,\"x\",{},[]]}"));
    ebuf_free(&b);
    ebuf_free(&b2);
    json_doc_free(&d);
}

TEST(json_doubles_round_trip) {
    double vals[] = {0.0, -0.0, 1.5, -2.25e-300, 1e300, 3.141592653589793, 1.0 / 3, 123456789012345680.0, 5e-324};
    json_doc d = JSON_DOC_INIT;
    for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
        ebuf b = EBUF_INIT;
        json_writer w;
        json_w_init(&w, &b);
        CHECK_OK(json_w_f64(&w, vals[k]));
        CHECK_OK(json_parse(b.p, b.len, NULL, &d));
        const json_node *r = json_root(&d);
        CHECK(r->type == JSON_DOUBLE);
        CHECK(!memcmp(&r->v.d, &vals[k], sizeof(double)));
        ebuf_free(&b);
    }
    CHECK_OK(parse_str(" 9223372036854775807 ", &d));
    CHECK(json_root(&d)->type == JSON_INT && json_root(&d)->v.i == INT64_MAX);
    CHECK_OK(parse_str("9223372036854775808", &d));
    CHECK(json_root(&d)->type == JSON_DOUBLE);
    CHECK_OK(parse_str("-9223372036854775809", &d));
    CHECK(json_root(&d)->type == JSON_DOUBLE);
    CHECK_OK(parse_str("-0", &d));
    CHECK(json_root(&d)->type == JSON_INT && json_root(&d)->v.i == 0);
    CHECK_OK(parse_str("1E+2", &d));
    CHECK(json_root(&d)->type == JSON_DOUBLE && json_root(&d)->v.d == 100.0);
    json_doc_free(&d);
}

TEST(json_string_escapes) {
    ebuf b = EBUF_INIT;
    json_writer w;
    json_w_init(&w, &b);
    const char raw[] = "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f \xc3\xa9 \xf0\x9f\x98\x80";
    CHECK_OK(json_w_strn(&w, raw, sizeof raw - 1));
    CHECK(!strcmp(text(&b), "\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f \xc3\xa9 \xf0\x9f\x98\x80\""));
    json_doc d = JSON_DOC_INIT;
    CHECK_OK(json_parse(b.p, b.len, NULL, &d));
    const char *s;
    size_t sl;
    CHECK(json_as_str(&d, json_root(&d), &s, &sl) && sl == sizeof raw - 1 && !memcmp(s, raw, sl));

    /* A NUL travels as \u0000 and comes back inside the length. */
    ebuf_reset(&b);
    json_w_init(&w, &b);
    CHECK_OK(json_w_strn(&w, "a\0b", 3));
    CHECK(!strcmp(text(&b), "\"a\\u0000b\""));
    CHECK_OK(json_parse(b.p, b.len, NULL, &d));
    CHECK(json_as_str(&d, json_root(&d), &s, &sl) && sl == 3 && !memcmp(s, "a\0b", 3));

    /* Escapes in, UTF-8 out: \u00e9, a surrogate pair, \/ and upper-case hex. */
    CHECK_OK(parse_str("\"\\u00e9\\uD83D\\uDE00\\/\\u20AC\"", &d));
    CHECK(json_as_str(&d, json_root(&d), &s, &sl));
    CHECK(!strcmp(s, "\xc3\xa9\xf0\x9f\x98\x80/\xe2\x82\xac"));
    ebuf_free(&b);
    json_doc_free(&d);
}

TEST(json_invalid_utf8_written_as_replacement) {
    ebuf b = EBUF_INIT;
    json_writer w;
    json_w_init(&w, &b);
    /* A stray continuation, an overlong '/', a surrogate, a cut sequence. */
    CHECK_OK(json_w_strn(&w, "a\x80" "b\xc0\xaf" "c\xed\xa0\x80" "d\xe2\x82", 12));
    CHECK(!strcmp(text(&b), "\"a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd" "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                            "d\xef\xbf\xbd\xef\xbf\xbd\""));
    json_doc d = JSON_DOC_INIT;
    CHECK_OK(json_parse(b.p, b.len, NULL, &d));
    /* The parser refuses the raw bytes themselves. */
    const char *bad[] = {"\"a\x80\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xe2\x82\"", "\"\xf5\x80\x80\x80\""};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        CHECK(parse_str(bad[k], &d) == EM_ECORRUPT);
        CHECK_STR_CONTAINS(em_errmsg(), "invalid UTF-8 at byte");
    }
    ebuf_free(&b);
    json_doc_free(&d);
}

TEST(json_writer_refuses_invalid_sequences) {
    ebuf b = EBUF_INIT;
    json_writer w;
    json_w_init(&w, &b);
    CHECK(json_w_finish(&w) == EM_EINVAL);
    CHECK_OK(json_w_begin_object(&w));
    CHECK(json_w_i64(&w, 1) == EM_EINVAL); /* a value without its key */
    CHECK_STR_CONTAINS(em_errmsg(), "without a key");
    CHECK(json_w_key(&w, "k") == EM_EINVAL); /* sticky */
    CHECK(b.len == 1);

    const char *what[] = {"key in array", "end mismatch", "two top values", "key after key", "open"};
    for (int k = 0; k < 5; k++) {
        ebuf_reset(&b);
        json_w_init(&w, &b);
        int rc = 0;
        switch (k) {
        case 0: json_w_begin_array(&w); rc = json_w_key(&w, "k"); break;
        case 1: json_w_begin_array(&w); rc = json_w_end_object(&w); break;
        case 2: json_w_null(&w); rc = json_w_null(&w); break;
        case 3: json_w_begin_object(&w); json_w_key(&w, "a"); rc = json_w_key(&w, "b"); break;
        case 4: json_w_begin_array(&w); rc = json_w_finish(&w); break;
        }
        if (rc != EM_EINVAL) fprintf(stderr, "  case %s\n", what[k]);
        CHECK(rc == EM_EINVAL);
    }
    /* Commas and colons are the writer's. */
    ebuf_reset(&b);
    json_w_init(&w, &b);
    json_w_begin_array(&w);
    for (int k = 0; k < 3; k++) json_w_i64(&w, k);
    json_w_begin_object(&w);
    json_w_key(&w, "a");
    json_w_i64(&w, 1);
    json_w_key(&w, "b");
    json_w_begin_array(&w);
    json_w_end_array(&w);
    json_w_end_object(&w);
    json_w_end_array(&w);
    CHECK_OK(json_w_finish(&w));
    CHECK(!strcmp(text(&b), "[0,1,2,{\"a\":1,\"b\":[]}]"));
    ebuf_free(&b);
}

/* Malformed texts and what the message names. */
static const struct {
    const char *text, *msg;
} malformed[] = {
    {"", "a value expected at byte 0"},
    {"   ", "a value expected at byte 3"},
    {"\"abc", "unterminated string starting at byte 0"},
    {"\"ab\\", "unterminated string starting at byte 0"},
    {"\"\\x\"", "bad escape at byte 1"},
    {"\"\\u12G4\"", "bad \\u escape at byte 1"},
    {"\"\\u12\"", "bad \\u escape at byte 1"},
    {"\"\\uD800\"", "lone high surrogate at byte 1"},
    {"\"\\uD800\\u0041\"", "lone high surrogate at byte 1"},
    {"\"\\uDC00\"", "lone low surrogate at byte 1"},
    {"\"a\tb\"", "control character in a string at byte 2"},
    {"01", "leading zero in a number at byte 0"},
    {"-01", "leading zero in a number at byte 0"},
    {"1.", "no digit after a number's point at byte 0"},
    {"1.e5", "no digit after a number's point at byte 0"},
    {".5", "not a JSON value at byte 0"},
    {"-", "bad number at byte 0"},
    {"+1", "not a JSON value at byte 0"},
    {"1e", "no digit in a number's exponent at byte 0"},
    {"1e+", "no digit in a number's exponent at byte 0"},
    {"1e999", "number out of a double's range at byte 0"},
    {"1 2", "text after the value at byte 2"},
    {"{} x", "text after the value at byte 3"},
    {"nul", "not a JSON value at byte 0"},
    {"True", "not a JSON value at byte 0"},
    {"[1,2", "unterminated array starting at byte 0"},
    {"[1,", "unterminated array starting at byte 0"},
    {"[1,]", "not a JSON value at byte 3"},
    {"[1 2]", "',' or ']' expected at byte 3"},
    {"{\"a\":1", "unterminated object starting at byte 0"},
    {"{\"a\"", "unterminated object starting at byte 0"},
    {"{\"a\" 1}", "':' expected at byte 5"},
    {"{a:1}", "a key expected at byte 1"},
    {"{\"a\":1,}", "a key expected at byte 7"},
    {"{\"a\":1 \"b\":2}", "',' or '}' expected at byte 7"},
    {"[", "unterminated array starting at byte 0"},
    {"{", "unterminated object starting at byte 0"},
    {"]", "not a JSON value at byte 0"},
};

TEST(json_malformed_refused) {
    json_doc d = JSON_DOC_INIT;
    for (size_t k = 0; k < sizeof malformed / sizeof malformed[0]; k++) {
        int rc = parse_str(malformed[k].text, &d);
        if (rc != EM_ECORRUPT || !strstr(em_errmsg(), malformed[k].msg))
            fprintf(stderr, "  %s: %d %s\n", malformed[k].text, rc, em_errmsg());
        CHECK(rc == EM_ECORRUPT);
        CHECK_STR_CONTAINS(em_errmsg(), malformed[k].msg);
        CHECK(!json_root(&d));
    }
    /* The parser reads only len bytes: what follows them does not count. */
    CHECK_OK(json_parse((const uint8_t *)"[1]xyz", 3, NULL, &d));
    CHECK(json_parse((const uint8_t *)"\"ab\"", 3, NULL, &d) == EM_ECORRUPT);
    json_doc_free(&d);
}

TEST(json_limits) {
    json_doc d = JSON_DOC_INIT;
    char deep[300];
    /* 64 levels pass with the default depth; 65 do not. */
    memset(deep, '[', 64);
    memset(deep + 64, ']', 64);
    CHECK_OK(json_parse((const uint8_t *)deep, 128, NULL, &d));
    memset(deep, '[', 65);
    memset(deep + 65, ']', 65);
    CHECK(json_parse((const uint8_t *)deep, 130, NULL, &d) == EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "nesting deeper than the limit at byte 64");
    json_limits lim = {3, 0, 0};
    CHECK(parse_str("[[[1]]]", &d) == 0);
    CHECK(json_parse((const uint8_t *)"[[[1]]]", 7, &lim, &d) == 0);
    CHECK(json_parse((const uint8_t *)"[[[[1]]]]", 9, &lim, &d) == EM_ECORRUPT);
    /* A depth past JSON_DEPTH_MAX is capped. */
    lim.max_depth = 100000;
    memset(deep, '[', 257);
    CHECK(json_parse((const uint8_t *)deep, 257, &lim, &d) == EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "nesting deeper than the limit at byte 256");

    json_limits nodes = {0, 4, 0};
    CHECK_OK(json_parse((const uint8_t *)"[1,2,3]", 7, &nodes, &d));
    CHECK(json_parse((const uint8_t *)"[1,2,3,4]", 9, &nodes, &d) == EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "more values than the limit at byte 7");

    json_limits bytes = {0, 0, 8};
    CHECK_OK(json_parse((const uint8_t *)"\"123456\"", 8, &bytes, &d));
    CHECK(json_parse((const uint8_t *)"\"1234567\"", 9, &bytes, &d) == EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "longer than the limit of 8 bytes");
    json_doc_free(&d);
}

TEST(json_doc_reused_across_lines) {
    json_doc d = JSON_DOC_INIT;
    CHECK_OK(parse_str("[\"a long enough string to fill the pool\", 1, 2, 3, 4, 5, 6, 7]", &d));
    json_node *nodes = d.nodes;
    char *pool = d.pool;
    size_t ncap = d.cap, pcap = d.pool_cap;
    for (int k = 0; k < 100; k++) {
        CHECK_OK(parse_str("{\"Event\":\"x\",\"n\":[1,2]}", &d));
        const char *s;
        CHECK(json_as_str(&d, json_get(&d, json_root(&d), "Event"), &s, NULL) && !strcmp(s, "x"));
    }
    CHECK(d.nodes == nodes && d.pool == pool && d.cap == ncap && d.pool_cap == pcap);
    json_doc_reset(&d);
    CHECK(!json_root(&d));
    json_doc_free(&d);
    CHECK(!d.nodes && !d.pool);
}

TEST(json_spark_event_log_line) {
    /* A task's end as Spark's JsonProtocol writes it (one line of an event log). */
    const char *line =
        "{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":0,\"Stage Attempt ID\":0,"
        "\"Task Type\":\"ResultTask\",\"Task End Reason\":{\"Reason\":\"Success\"},"
        "\"Task Info\":{\"Task ID\":7,\"Index\":3,\"Attempt\":0,\"Partition ID\":3,"
        "\"Launch Time\":1700000000123,\"Executor ID\":\"driver\",\"Host\":\"localhost\","
        "\"Locality\":\"PROCESS_LOCAL\",\"Speculative\":false,\"Getting Result Time\":0,"
        "\"Finish Time\":1700000000456,\"Failed\":false,\"Killed\":false,\"Accumulables\":[]},"
        "\"Task Executor Metrics\":{\"JVMHeapMemory\":0},"
        "\"Task Metrics\":{\"Executor Deserialize Time\":12,\"Executor Run Time\":300,"
        "\"Executor CPU Time\":250000000,\"Result Size\":1536,\"JVM GC Time\":0,"
        "\"Memory Bytes Spilled\":0,\"Disk Bytes Spilled\":0,"
        "\"Shuffle Read Metrics\":{\"Remote Blocks Fetched\":0,\"Local Blocks Fetched\":2,"
        "\"Fetch Wait Time\":0,\"Remote Bytes Read\":0,\"Local Bytes Read\":2048,\"Total Records Read\":100},"
        "\"Shuffle Write Metrics\":{\"Shuffle Bytes Written\":0,\"Shuffle Write Time\":0,\"Shuffle Records Written\":0},"
        "\"Input Metrics\":{\"Bytes Read\":0,\"Records Read\":0},"
        "\"Output Metrics\":{\"Bytes Written\":0,\"Records Written\":0},"
        "\"Updated Blocks\":[]}}\n";
    json_doc d = JSON_DOC_INIT;
    CHECK_OK(parse_str(line, &d));
    const json_node *r = json_root(&d);
    const char *ev, *host;
    int64_t stage, tid, launch, finish, run, read;
    bool failed = true;
    CHECK(json_as_str(&d, json_get(&d, r, "Event"), &ev, NULL) && !strcmp(ev, "SparkListenerTaskEnd"));
    CHECK(json_as_i64(json_get(&d, r, "Stage ID"), &stage) && stage == 0);
    const json_node *info = json_get(&d, r, "Task Info");
    CHECK(json_as_i64(json_get(&d, info, "Task ID"), &tid) && tid == 7);
    CHECK(json_as_i64(json_get(&d, info, "Launch Time"), &launch) && launch == 1700000000123);
    CHECK(json_as_i64(json_get(&d, info, "Finish Time"), &finish) && finish == 1700000000456);
    CHECK(json_as_str(&d, json_get(&d, info, "Host"), &host, NULL) && !strcmp(host, "localhost"));
    CHECK(json_as_bool(json_get(&d, info, "Failed"), &failed) && !failed);
    CHECK(json_get(&d, info, "Accumulables")->type == JSON_ARRAY);
    const json_node *m = json_get(&d, r, "Task Metrics");
    CHECK(json_as_i64(json_get(&d, m, "Executor Run Time"), &run) && run == 300);
    CHECK(json_as_i64(json_get(&d, json_get(&d, m, "Shuffle Read Metrics"), "Local Bytes Read"), &read) &&
          read == 2048);
    const char *reason;
    CHECK(json_as_str(&d, json_get(&d, json_get(&d, r, "Task End Reason"), "Reason"), &reason, NULL) &&
          !strcmp(reason, "Success"));
    /* Missing and mistyped fields are absent, not errors. */
    CHECK(!json_as_i64(json_get(&d, r, "Event"), &stage));
    CHECK(!json_get(&d, json_get(&d, r, "No Such"), "Task ID"));
    json_doc_free(&d);
}

/* A string's special byte (an escape, UTF-8, a raw control character, an
 * invalid byte, the closing quote) at every position of strings of 0 to
 * 40 bytes: the eight-bytes-at-a-time copy stops exactly at it, the
 * decoded text is whole and a refusal names the byte. */
TEST(json_string_special_byte_at_every_position) {
    json_doc d = JSON_DOC_INIT;
    static const struct {
        const char *raw, *decoded; /* decoded NULL: refused */
        const char *msg;
    } sp[] = {
        {"\\\"", "\"", NULL},
        {"\\n", "\n", NULL},
        {"\\u00e9", "\xc3\xa9", NULL},
        {"\xc3\xa9", "\xc3\xa9", NULL},
        {"\xe2\x82\xac", "\xe2\x82\xac", NULL},
        {"\x01", NULL, "control character in a string"},
        {"\x1f", NULL, "control character in a string"},
        {"\xff", NULL, "invalid UTF-8"},
        {"\x80", NULL, "invalid UTF-8"},
    };
    char text[128], want[128];
    for (size_t k = 0; k < sizeof sp / sizeof *sp; k++)
        for (int before = 0; before <= 20; before++)
            for (int after = 0; after <= 20; after += 3) {
                size_t n = 0, w = 0;
                text[n++] = '"';
                for (int i = 0; i < before; i++) text[n++] = want[w++] = (char)('a' + i % 26);
                size_t at = n;
                memcpy(text + n, sp[k].raw, strlen(sp[k].raw));
                n += strlen(sp[k].raw);
                if (sp[k].decoded) {
                    memcpy(want + w, sp[k].decoded, strlen(sp[k].decoded));
                    w += strlen(sp[k].decoded);
                }
                for (int i = 0; i < after; i++) text[n++] = want[w++] = (char)('A' + i % 26);
                text[n++] = '"';
                int rc = json_parse((const uint8_t *)text, n, NULL, &d);
                if (!sp[k].decoded) {
                    char m[96];
                    snprintf(m, sizeof m, "%s at byte %zu", sp[k].msg, at);
                    CHECK(rc == EM_ECORRUPT);
                    CHECK_STR_CONTAINS(em_errmsg(), m);
                    continue;
                }
                const char *s;
                size_t len;
                CHECK_OK(rc);
                CHECK(json_as_str(&d, json_root(&d), &s, &len));
                CHECK_EQ_I64((int64_t)len, (int64_t)w);
                CHECK(!memcmp(s, want, w) && s[w] == '\0');
            }
    /* A plain string cut short at every length: unterminated, never read past len. */
    const char *full = "\"abcdefghijklmnopqrstuvwxyz\"";
    for (size_t n = 1; n < strlen(full); n++) {
        CHECK(json_parse((const uint8_t *)full, n, NULL, &d) == EM_ECORRUPT);
        CHECK_STR_CONTAINS(em_errmsg(), "unterminated string starting at byte 0");
    }
    json_doc_free(&d);
}

/* Integers either side of 18 digits (the length read without an overflow
 * test) and int64's ends. */
TEST(json_integers_at_the_digit_boundaries) {
    json_doc d = JSON_DOC_INIT;
    static const struct {
        const char *text;
        int64_t v;
    } ok[] = {
        {"0", 0},
        {"-0", 0},
        {"999999999999999999", 999999999999999999LL},
        {"-999999999999999999", -999999999999999999LL},
        {"1000000000000000000", 1000000000000000000LL},
        {"9223372036854775807", INT64_MAX},
        {"-9223372036854775808", INT64_MIN},
        {"00000", -1},
    };
    for (size_t k = 0; k < sizeof ok / sizeof *ok; k++) {
        int64_t v = 0;
        if (ok[k].v == -1) {
            CHECK(parse_str(ok[k].text, &d) == EM_ECORRUPT);
            continue;
        }
        CHECK_OK(parse_str(ok[k].text, &d));
        CHECK(json_as_i64(json_root(&d), &v));
        CHECK_EQ_I64(v, ok[k].v);
    }
    /* One past either end is a double. */
    double x = 0;
    CHECK_OK(parse_str("9223372036854775808", &d));
    CHECK(json_root(&d)->type == JSON_DOUBLE && json_as_f64(json_root(&d), &x) && x == 9223372036854775808.0);
    CHECK_OK(parse_str("-9223372036854775809", &d));
    CHECK(json_root(&d)->type == JSON_DOUBLE);
    json_doc_free(&d);
}

/* json_w_key_plain writes what json_w_key writes for a key that needs no
 * escaping, commas included, and refuses a key where json_w_key does; the
 * integers' digits match printf's at the edges. */
TEST(json_key_plain_same_bytes) {
    ebuf a = EBUF_INIT, b = EBUF_INIT;
    json_writer wa, wb;
    json_w_init(&wa, &a);
    json_w_init(&wb, &b);
    const char *keys[] = {"Task ID", "", "Shuffle Bytes Written", "x~y{}[]:,"};
    const int64_t vals[] = {0, -1, INT64_MAX, 1234567890};
    CHECK_OK(json_w_begin_object(&wa));
    CHECK_OK(json_w_begin_object(&wb));
    for (int i = 0; i < 4; i++) {
        CHECK_OK(json_w_key(&wa, keys[i]));
        CHECK_OK(json_w_key_plain(&wb, keys[i]));
        CHECK_OK(json_w_i64(&wa, vals[i]));
        CHECK_OK(json_w_i64(&wb, vals[i]));
    }
    CHECK_OK(json_w_end_object(&wa));
    CHECK_OK(json_w_end_object(&wb));
    CHECK(a.len == b.len && !memcmp(a.p, b.p, a.len));
    CHECK(!strcmp(text(&b), "{\"Task ID\":0,\"\":-1,\"Shuffle Bytes Written\":9223372036854775807,"
                            "\"x~y{}[]:,\":1234567890}"));
    /* a key after a key, and one outside an object, are refused */
    ebuf_reset(&b);
    json_w_init(&wb, &b);
    CHECK(json_w_key_plain(&wb, "k") == EM_EINVAL);
    json_w_init(&wb, &b);
    CHECK_OK(json_w_begin_object(&wb));
    CHECK_OK(json_w_key_plain(&wb, "k"));
    CHECK(json_w_key_plain(&wb, "k") == EM_EINVAL);
    ebuf_free(&a);
    ebuf_free(&b);
}
