/*
 * test_conf.c -- unit tests of configuration (engine/conf.c and
 * engine/confargs.c): the defaults documented in ember.h, set/get,
 * rejection of unknown keys, each value parser on its own (suffixes,
 * blanks, malformed text, overflow), the checking of values against each
 * key's type and range when they are set (the messages name key, value and
 * what is allowed; the conf is left unchanged), em_set doing the same on
 * an open context, the typed getters, conf_dup, and em_conf_parse_args
 * taking --conf flags out of a command line.
 */
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "ember.h"
#include "../test.h"

TEST(conf_defaults) {
    em_conf *c = em_conf_new();
    CHECK(c != NULL);
    static const char *const kv[][2] = {
        {"ember.master", "local[*]"},
        {"ember.app.name", "ember"},
        {"ember.default.parallelism", "0"},
        {"ember.task.maxFailures", "4"},
        {"ember.record.maxBytes", "67108864"},
        {"ember.shuffle.memoryBytes", "268435456"},
        {"ember.shuffle.blockBytes", "65536"},
        {"ember.shuffle.minNumPartitionsToHighlyCompress", "2000"},
        {"ember.shuffle.accurateBlockThreshold", "100m"},
        {"ember.shuffle.compress.level", "1"},
        {"ember.io.compression.codec", "auto"},
        {"ember.io.compression.zstd.level", "1"},
        {"ember.io.compression.lz4.acceleration", "2"},
        {"ember.shuffle.inMemoryOutput.codec", "prefix"},
        {"ember.files.maxPartitionBytes", "33554432"},
        {"ember.local.dir", "/tmp"},
        {"ember.progress", "auto"},
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
        const char *v = em_conf_get(c, kv[i][0]);
        CHECK(v != NULL);
        CHECK(strcmp(v, kv[i][1]) == 0);
        CHECK(conf_known(kv[i][0]));
        /* A NULL conf reads the defaults too. */
        CHECK(strcmp(em_conf_get(NULL, kv[i][0]), kv[i][1]) == 0);
        /* Every default passes its own key's check. */
        CHECK_OK(conf_check(conf_lookup(kv[i][0]), kv[i][1]));
    }
    CHECK_EQ_I64(conf_i64(c, "ember.task.maxFailures"), 4);
    CHECK_EQ_I64(conf_i64(c, "ember.files.maxPartitionBytes"), 33554432);
    CHECK_EQ_I64(conf_size(c, "ember.files.maxPartitionBytes"), 33554432);
    CHECK_EQ_I64(conf_i64(c, "ember.default.parallelism"), 0);
    CHECK_EQ_I64(conf_size(NULL, "ember.shuffle.memoryBytes"), 268435456);
    CHECK(em_conf_get(c, "ember.nope") == NULL);
    CHECK(em_conf_get(c, NULL) == NULL);
    CHECK(!conf_known("ember.nope"));
    CHECK(!conf_known(NULL));
    CHECK(conf_lookup("ember.nope") == NULL);
    em_conf_free(c);
    em_conf_free(NULL);
}

TEST(conf_set_get) {
    em_conf *c = em_conf_new();
    CHECK_OK(em_conf_set(c, "ember.app.name", "wordcount"));
    CHECK(strcmp(em_conf_get(c, "ember.app.name"), "wordcount") == 0);
    CHECK_OK(em_conf_set(c, "ember.app.name", "again"));
    CHECK(strcmp(em_conf_get(c, "ember.app.name"), "again") == 0);
    CHECK_OK(em_conf_set(c, "ember.local.dir", "/var/tmp"));
    CHECK(strcmp(em_conf_get(c, "ember.local.dir"), "/var/tmp") == 0);
    CHECK(strcmp(em_conf_get(c, "ember.master"), "local[*]") == 0);
    /* Values are stored as given, suffixes and all. */
    CHECK_OK(em_conf_set(c, "ember.shuffle.memoryBytes", " 8MB "));
    CHECK(strcmp(em_conf_get(c, "ember.shuffle.memoryBytes"), " 8MB ") == 0);
    CHECK_EQ_I64(conf_size(c, "ember.shuffle.memoryBytes"), 8388608);
    em_conf_free(c);
}

TEST(conf_unknown_and_null) {
    em_conf *c = em_conf_new();
    CHECK_EQ_I64(em_conf_set(c, "ember.no.such.key", "1"), EM_EINVAL);
    CHECK(strcmp(em_errmsg(), "unknown configuration key: ember.no.such.key") == 0);
    CHECK(em_conf_get(c, "ember.no.such.key") == NULL);
    /* A key ember replaced names its successor. */
    CHECK_EQ_I64(em_conf_set(c, "ember.shuffle.inMemoryOutput.compress", "true"), EM_EINVAL);
    CHECK(strcmp(em_errmsg(), "configuration key ember.shuffle.inMemoryOutput.compress was replaced by "
                              "ember.shuffle.inMemoryOutput.codec (for true use lz4, for false none)") == 0);
    CHECK(em_conf_get(c, "ember.shuffle.inMemoryOutput.compress") == NULL);
    CHECK_EQ_I64(em_conf_set(NULL, "ember.app.name", "x"), EM_EINVAL);
    CHECK_EQ_I64(em_conf_set(c, NULL, "x"), EM_EINVAL);
    CHECK_EQ_I64(em_conf_set(c, "ember.app.name", NULL), EM_EINVAL);
    CHECK(strcmp(em_conf_get(c, "ember.app.name"), "ember") == 0);
    em_conf_free(c);
}

/* em_conf_parse_args takes the --conf pairs before "--" out of argv and
 * sets them; the rest keeps its order.  A bad pair leaves argv as it was,
 * with a message naming the flag. */
TEST(conf_parse_args) {
    em_conf *c = em_conf_new();
    char *argv[] = {"prog", "--conf", "ember.app.name=args", "in.txt", "--conf", "ember.progress=false",
                    "-x", "--", "--conf", "ember.task.maxFailures=1", NULL};
    int argc = 10;
    CHECK_OK(em_conf_parse_args(c, &argc, argv));
    CHECK_EQ_I64(argc, 6);
    const char *want[] = {"prog", "in.txt", "-x", "--", "--conf", "ember.task.maxFailures=1"};
    for (int i = 0; i < argc; i++) CHECK(strcmp(argv[i], want[i]) == 0);
    CHECK(argv[argc] == NULL);
    CHECK(strcmp(em_conf_get(c, "ember.app.name"), "args") == 0);
    CHECK(strcmp(em_conf_get(c, "ember.progress"), "false") == 0);
    CHECK(strcmp(em_conf_get(c, "ember.task.maxFailures"), "4") == 0); /* after "--": not a flag */

    /* Nothing to take: argv and argc unchanged. */
    char *none[] = {"prog", "a", "b", NULL};
    argc = 3;
    CHECK_OK(em_conf_parse_args(c, &argc, none));
    CHECK_EQ_I64(argc, 3);
    CHECK(strcmp(none[1], "a") == 0 && strcmp(none[2], "b") == 0 && none[3] == NULL);
    argc = 0;
    CHECK_OK(em_conf_parse_args(c, &argc, NULL));

    /* Bad pairs: the message names the flag; argv is left as it was; the
     * pairs before the bad one are set. */
    static const struct { const char *kv, *msg; } bad[] = {
        {"ember.progress", "--conf 'ember.progress': expected KEY=VALUE"},
        {"=1", "--conf '=1': expected KEY=VALUE"},
        {"no.such.key=1", "--conf no.such.key=1: unknown configuration key: no.such.key"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char *b[] = {"prog", "--conf", "ember.app.name=before", "x", "--conf", (char *)bad[k].kv, NULL};
        CHECK_OK(em_conf_set(c, "ember.app.name", "args"));
        argc = 6;
        CHECK_EQ_I64(em_conf_parse_args(c, &argc, b), EM_EINVAL);
        CHECK(strcmp(em_errmsg(), bad[k].msg) == 0);
        CHECK_EQ_I64(argc, 6);
        CHECK(strcmp(b[1], "--conf") == 0 && strcmp(b[3], "x") == 0 && b[5] == bad[k].kv);
        CHECK(strcmp(em_conf_get(c, "ember.app.name"), "before") == 0);
    }
    char *last[] = {"prog", "x", "--conf", NULL};
    argc = 3;
    CHECK_EQ_I64(em_conf_parse_args(c, &argc, last), EM_EINVAL);
    CHECK(strcmp(em_errmsg(), "--conf needs KEY=VALUE") == 0);
    CHECK_EQ_I64(argc, 3);
    /* A value em_conf_set refuses: its message after the flag. */
    char *range[] = {"prog", "--conf", "ember.task.maxFailures=0", NULL};
    argc = 3;
    CHECK_EQ_I64(em_conf_parse_args(c, &argc, range), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "--conf ember.task.maxFailures=0: ember.task.maxFailures");
    CHECK_EQ_I64(em_conf_parse_args(NULL, &argc, range), EM_EINVAL);
    CHECK_EQ_I64(em_conf_parse_args(c, NULL, range), EM_EINVAL);
    em_conf_free(c);
}

/* ----------------------------------------------------------------- parsers */

TEST(conf_parse_size_values) {
    static const struct { const char *s; int rc; int64_t want; } cases[] = {
        {"0", 0, 0},
        {"123", 0, 123},
        {"100b", 0, 100},
        {"100B", 0, 100},
        {"64k", 0, 65536},
        {"64K", 0, 65536},
        {"64kb", 0, 65536},
        {"1KB", 0, 1024},
        {"1kB", 0, 1024},
        {"8mb", 0, 8388608},
        {"8MB", 0, 8388608},
        {"32m", 0, 33554432},
        {"32M", 0, 33554432},
        {"2g", 0, 2147483648LL},
        {"1GB", 0, 1073741824},
        {"1t", 0, 1099511627776LL},
        {"2Tb", 0, 2199023255552LL},
        {" 7 ", 0, 7},
        {"\t64k\n", 0, 65536},
        {"8388607t", 0, 8388607LL << 40},
        {"9223372036854775807", 0, INT64_MAX},
        /* Not sizes: no sign, no fraction, no blank inside, no other unit. */
        {"", -1, 0},
        {"  ", -1, 0},
        {"abc", -1, 0},
        {"-5", -1, 0},
        {"+5", -1, 0},
        {"1.5g", -1, 0},
        {"1 k", -1, 0},
        {"12q", -1, 0},
        {"1kk", -1, 0},
        {"1bb", -1, 0},
        {"k", -1, 0},
        {"kb", -1, 0},
        {"1p", -1, 0},
        {"0x10", -1, 0},
        {"1e6", -1, 0},
        {"99999999999999999999x", -1, 0}, /* malformed wins over overflow */
        /* Sizes too large for 64 bits. */
        {"9223372036854775808", 1, INT64_MAX},
        {"99999999999999999999", 1, INT64_MAX},
        {"8388608t", 1, INT64_MAX},
        {"8589934592g", 1, INT64_MAX},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t v = -42;
        int rc = conf_parse_size(cases[i].s, &v);
        if (rc != cases[i].rc || (rc >= 0 && v != cases[i].want))
            fprintf(stderr, "  case \"%s\": rc %d, value %lld\n", cases[i].s, rc, (long long)v);
        CHECK_EQ_I64(rc, cases[i].rc);
        if (rc >= 0) CHECK_EQ_I64(v, cases[i].want);
        else CHECK_EQ_I64(v, -42); /* untouched */
    }
    int64_t v;
    CHECK_EQ_I64(conf_parse_size(NULL, &v), -1);
}

TEST(conf_parse_int_values) {
    static const struct { const char *s; int rc; int64_t want; } cases[] = {
        {"0", 0, 0},
        {"7", 0, 7},
        {"-3", 0, -3},
        {" 12 ", 0, 12},
        {"007", 0, 7},
        {"9223372036854775807", 0, INT64_MAX},
        {"-9223372036854775807", 0, -INT64_MAX},
        {"", -1, 0},
        {"-", -1, 0},
        {"+1", -1, 0},
        {"1k", -1, 0},
        {"1.0", -1, 0},
        {"1 2", -1, 0},
        {"- 1", -1, 0},
        {"abc", -1, 0},
        {"9223372036854775808", 1, INT64_MAX},
        {"-99999999999999999999", 1, INT64_MIN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t v = -42;
        int rc = conf_parse_int(cases[i].s, &v);
        if (rc != cases[i].rc || (rc >= 0 && v != cases[i].want))
            fprintf(stderr, "  case \"%s\": rc %d, value %lld\n", cases[i].s, rc, (long long)v);
        CHECK_EQ_I64(rc, cases[i].rc);
        if (rc >= 0) CHECK_EQ_I64(v, cases[i].want);
    }
}

TEST(conf_parse_duration_values) {
    static const struct { const char *s; int64_t unit; int rc; int64_t want; } cases[] = {
        /* A bare number counts the key's unit: seconds for some keys... */
        {"3", 1000, 0, 3000},
        /* ...milliseconds for others. */
        {"100", 1, 0, 100},
        {"3s", 1000, 0, 3000},
        {"3s", 1, 0, 3000},
        {"250ms", 1000, 0, 250},
        {"100MS", 1, 0, 100},
        {"5m", 1, 0, 300000},
        {"5min", 1, 0, 300000},
        {"1h", 1, 0, 3600000},
        {"2H", 1, 0, 7200000},
        {" 3s ", 1000, 0, 3000},
        {"0", 1000, 0, 0},
        {"9223372036854775807ms", 1000, 0, INT64_MAX},
        {"", 1000, -1, 0},
        {"s", 1000, -1, 0},
        {"3x", 1000, -1, 0},
        {"1.5s", 1000, -1, 0},
        {"-1s", 1000, -1, 0},
        {"3 s", 1000, -1, 0},
        {"3sec", 1000, -1, 0},
        {"1d", 1000, 0, 86400000},
        {"1w", 1000, -1, 0},
        {"9223372036854775807", 1000, 1, INT64_MAX},
        {"9223372036854775807h", 1, 1, INT64_MAX},
        {"99999999999999999999ms", 1, 1, INT64_MAX},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t v = -42;
        int rc = conf_parse_duration(cases[i].s, cases[i].unit, &v);
        if (rc != cases[i].rc || (rc >= 0 && v != cases[i].want))
            fprintf(stderr, "  case \"%s\": rc %d, value %lld\n", cases[i].s, rc, (long long)v);
        CHECK_EQ_I64(rc, cases[i].rc);
        if (rc >= 0) CHECK_EQ_I64(v, cases[i].want);
    }
}

TEST(conf_parse_bool_values) {
    static const struct { const char *s; int rc, want; } cases[] = {
        {"true", 0, 1},  {"TRUE", 0, 1},  {"True", 0, 1}, {" false ", 0, 0}, {"FALSE", 0, 0},
        /* Spark's spellings only. */
        {"1", -1, 0},    {"0", -1, 0},    {"yes", -1, 0}, {"no", -1, 0},     {"on", -1, 0},
        {"off", -1, 0},  {"", -1, 0},     {"maybe", -1, 0}, {"truex", -1, 0}, {"t", -1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int b = -42;
        int rc = conf_parse_bool(cases[i].s, &b);
        if (rc != cases[i].rc) fprintf(stderr, "  case \"%s\": rc %d\n", cases[i].s, rc);
        CHECK_EQ_I64(rc, cases[i].rc);
        CHECK_EQ_I64(b, rc ? -42 : cases[i].want);
    }
}

/* --------------------------------------------------------------- checking */

/* em_conf_set(key, value) is refused with EM_EINVAL and a message containing
 * want, and leaves the key's previous value in place. */
#define CHECK_REFUSED(c, key, value, want)                                         \
    do {                                                                           \
        const char *before_ = em_conf_get((c), (key));                             \
        char keep_[128];                                                           \
        snprintf(keep_, sizeof keep_, "%s", before_);                              \
        CHECK_EQ_I64(em_conf_set((c), (key), (value)), EM_EINVAL);                 \
        CHECK_STR_CONTAINS(em_errmsg(), want);                                     \
        CHECK(strcmp(em_conf_get((c), (key)), keep_) == 0);                        \
    } while (0)

TEST(conf_set_refuses_sizes) {
    em_conf *c = em_conf_new();
    const char *mem = "ember.shuffle.memoryBytes";
    CHECK_REFUSED(c, mem, "abc",
                  "ember.shuffle.memoryBytes: \"abc\" is not a size (a whole number of bytes, optionally "
                  "followed by k, m, g or t, with or without b: 65536, 64k, 8mb)");
    CHECK_REFUSED(c, mem, "-5", "ember.shuffle.memoryBytes: \"-5\" is not a size");
    CHECK_REFUSED(c, mem, "1.5g", "\"1.5g\" is not a size");
    /* The floor, and why. */
    CHECK_REFUSED(c, mem, "1",
                  "ember.shuffle.memoryBytes: \"1\" is below the minimum of 131072 bytes (128k): a smaller "
                  "budget spills every few records");
    CHECK_REFUSED(c, mem, "131071", "below the minimum of 131072 bytes");
    CHECK_OK(em_conf_set(c, mem, "128k"));
    CHECK_EQ_I64(conf_size(c, mem), 131072);
    CHECK_OK(em_conf_set(c, mem, "262144")); /* what tests use to force spills */
    CHECK_REFUSED(c, mem, "2t", "ember.shuffle.memoryBytes: \"2t\" is above the maximum of 1099511627776 bytes (1t)");
    CHECK_REFUSED(c, mem, "99999999999999999999", "is above the maximum of 1099511627776 bytes");
    CHECK(strcmp(em_conf_get(c, mem), "262144") == 0); /* every refusal kept it */

    const char *rec = "ember.record.maxBytes";
    CHECK_REFUSED(c, rec, "1023", "ember.record.maxBytes: \"1023\" is below the minimum of 1024 bytes (1k)");
    CHECK_OK(em_conf_set(c, rec, "1k"));
    CHECK_OK(em_conf_set(c, rec, "255m"));
    CHECK_REFUSED(c, rec, "256m",
                  "ember.record.maxBytes: \"256m\" is above the maximum of 267386880 bytes (255m): a record must "
                  "fit in one 256 MiB block");
    CHECK_EQ_I64(conf_size(c, rec), 255 << 20);

    const char *blk = "ember.shuffle.blockBytes";
    CHECK_REFUSED(c, blk, "4095", "ember.shuffle.blockBytes: \"4095\" is below the minimum of 4096 bytes (4k)");
    CHECK_OK(em_conf_set(c, blk, "4k"));
    CHECK_OK(em_conf_set(c, blk, "64m"));
    CHECK_REFUSED(c, blk, "65m", "is above the maximum of 67108864 bytes (64m)");

    const char *hc = "ember.shuffle.minNumPartitionsToHighlyCompress", *acc = "ember.shuffle.accurateBlockThreshold";
    CHECK_REFUSED(c, hc, "0", "ember.shuffle.minNumPartitionsToHighlyCompress: \"0\" is below the minimum");
    CHECK_REFUSED(c, hc, "1048577", "the most partitions a shuffle may have");
    CHECK_OK(em_conf_set(c, hc, "1048576"));
    CHECK_REFUSED(c, acc, "0", "ember.shuffle.accurateBlockThreshold: \"0\" is below the minimum");
    CHECK_OK(em_conf_set(c, acc, "1g"));
    CHECK_EQ_I64(conf_size(c, acc), (int64_t)1 << 30);

    const char *split = "ember.files.maxPartitionBytes";
    CHECK_OK(em_conf_set(c, split, "8mb"));
    CHECK_EQ_I64(conf_i64(c, split), 8388608);
    CHECK_OK(em_conf_set(c, split, "2048")); /* tests/ml use 2048 and 4096 */
    CHECK_REFUSED(c, split, "1000", "ember.files.maxPartitionBytes: \"1000\" is below the minimum of 1024 bytes");
    CHECK_REFUSED(c, split, "9223372036854775808",
                  "is above the maximum of 9223372036854775807 bytes");
    CHECK_OK(em_conf_set(c, split, "1t"));
    em_conf_free(c);
}

TEST(conf_set_refuses_ints_and_words) {
    em_conf *c = em_conf_new();
    CHECK_REFUSED(c, "ember.task.maxFailures", "many", "ember.task.maxFailures: \"many\" is not a whole number");
    CHECK_REFUSED(c, "ember.task.maxFailures", "0", "ember.task.maxFailures: \"0\" is below the minimum of 1");
    CHECK_OK(em_conf_set(c, "ember.task.maxFailures", "1"));
    CHECK_REFUSED(c, "ember.shuffle.compress.level", "10",
                  "ember.shuffle.compress.level: \"10\" is above the maximum of 9");
    CHECK_REFUSED(c, "ember.shuffle.compress.level", "-1",
                  "ember.shuffle.compress.level: \"-1\" is below the minimum of 0");
    CHECK_REFUSED(c, "ember.shuffle.compress.level", "1k", "is not a whole number");
    CHECK_OK(em_conf_set(c, "ember.shuffle.compress.level", "0"));
    CHECK_OK(em_conf_set(c, "ember.shuffle.compress.level", " 9 "));
    CHECK_EQ_I64(conf_i64(c, "ember.shuffle.compress.level"), 9);
    CHECK_REFUSED(c, "ember.default.parallelism", "-1", "\"-1\" is below the minimum of 0");
    CHECK_REFUSED(c, "ember.default.parallelism", "1048577",
                  "ember.default.parallelism: \"1048577\" is above the maximum of 1048576: the most partitions");
    CHECK_OK(em_conf_set(c, "ember.default.parallelism", "0"));

    CHECK_REFUSED(c, "ember.progress", "maybe", "ember.progress: \"maybe\" is not one of auto, true, false");
    CHECK_REFUSED(c, "ember.progress", "1", "\"1\" is not one of auto, true, false");
    CHECK_OK(em_conf_set(c, "ember.progress", "FALSE"));
    CHECK_OK(em_conf_set(c, "ember.progress", "Auto"));
    CHECK_OK(em_conf_set(c, "ember.progress", "true"));

    /* The block codec, and the level of the codec that takes one. */
    bf_codec k = conf_codec(c);
    CHECK(k.id == BF_AUTO && k.level == 2); /* auto by default: lz4's acceleration is its level */
    CHECK_REFUSED(c, "ember.io.compression.lz4.acceleration", "0",
                  "ember.io.compression.lz4.acceleration: \"0\" is below the minimum of 1");
    CHECK_REFUSED(c, "ember.io.compression.lz4.acceleration", "65",
                  "ember.io.compression.lz4.acceleration: \"65\" is above the maximum of 64");
    CHECK_OK(em_conf_set(c, "ember.io.compression.lz4.acceleration", "8"));
    k = conf_codec(c);
    CHECK(k.id == BF_AUTO && k.level == 8);
    CHECK_OK(em_conf_set(c, "ember.io.compression.codec", "lz4"));
    k = conf_codec(c);
    CHECK(k.id == BF_LZ4 && k.level == 8);
    CHECK_REFUSED(c, "ember.io.compression.codec", "snappy",
                  "ember.io.compression.codec: \"snappy\" is not one of auto, lz4, zstd, zlib, prefix, none");
    CHECK_REFUSED(c, "ember.io.compression.codec", "", "is not one of auto, lz4, zstd, zlib, prefix, none");
    CHECK_REFUSED(c, "ember.io.compression.zstd.level", "23",
                  "ember.io.compression.zstd.level: \"23\" is above the maximum of 22");
    CHECK_REFUSED(c, "ember.io.compression.zstd.level", "-8",
                  "ember.io.compression.zstd.level: \"-8\" is below the minimum of -7");
    CHECK_OK(em_conf_set(c, "ember.io.compression.codec", " ZSTD "));
    CHECK_OK(em_conf_set(c, "ember.io.compression.zstd.level", "-3"));
    k = conf_codec(c);
    CHECK(k.id == BF_ZSTD && k.level == -3);
    CHECK_OK(em_conf_set(c, "ember.io.compression.codec", "zlib")); /* zlib's level: the old key, set to 9 above */
    k = conf_codec(c);
    CHECK(k.id == BF_ZLIB && k.level == 9);
    CHECK_OK(em_conf_set(c, "ember.io.compression.codec", "none"));
    k = conf_codec(c);
    CHECK(k.id == BF_NONE && k.level == 0);
    CHECK_OK(em_conf_set(c, "ember.io.compression.codec", "prefix"));
    k = conf_codec(c);
    CHECK(k.id == BF_PREFIX && k.level == 0);
    /* The in-memory outputs' codec: prefix by default, any codec, with
     * the same levels. */
    k = conf_codec_of(c, "ember.shuffle.inMemoryOutput.codec");
    CHECK(k.id == BF_PREFIX && k.level == 0);
    CHECK_OK(em_conf_set(c, "ember.shuffle.inMemoryOutput.codec", "zstd"));
    k = conf_codec_of(c, "ember.shuffle.inMemoryOutput.codec");
    CHECK(k.id == BF_ZSTD && k.level == -3);
    CHECK_REFUSED(c, "ember.shuffle.inMemoryOutput.codec", "true",
                  "ember.shuffle.inMemoryOutput.codec: \"true\" is not one of auto, lz4, zstd, zlib, prefix, none");
    CHECK(conf_codec(NULL).id == BF_AUTO);

    CHECK_REFUSED(c, "ember.app.name", "", "ember.app.name: \"\" is not allowed (the value must not be empty)");
    CHECK_REFUSED(c, "ember.local.dir", "", "ember.local.dir: \"\" is not allowed");
    CHECK_REFUSED(c, "ember.master", "", "ember.master: \"\" is not allowed");
    /* The master URL is checked by em_open (tests/api), not here. */
    CHECK_OK(em_conf_set(c, "ember.master", "nope"));
    em_conf_free(c);
}

/* The duration and boolean types have no key yet (the next ones are
 * ember.locality.wait and ember.speculation.interval); check them through
 * specs of the shape such keys will have. */
TEST(conf_check_duration_and_bool_specs) {
    const conf_spec wait = {.key = "ember.test.wait", .def = "3s", .type = CONF_DURATION, .min = 0,
                            .max = 3600000, .unit_ms = 1000};
    const conf_spec interval = {.key = "ember.test.interval", .def = "100ms", .type = CONF_DURATION, .min = 1,
                                .max = 60000, .unit_ms = 1, .why_min = "zero would spin"};
    const conf_spec flag = {.key = "ember.test.flag", .def = "false", .type = CONF_BOOL};
    CHECK_OK(conf_check(&wait, wait.def));
    CHECK_OK(conf_check(&wait, "3"));
    CHECK_OK(conf_check(&wait, "1h"));
    CHECK_EQ_I64(conf_check(&wait, "soon"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(),
                       "ember.test.wait: \"soon\" is not a duration (a whole number of seconds, or one followed "
                       "by ms, s, m or h: 250ms, 3s, 5m)");
    CHECK_EQ_I64(conf_check(&wait, "61m"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.test.wait: \"61m\" is above the maximum of 3600000 ms (1h)");
    CHECK_OK(conf_check(&interval, interval.def));
    CHECK_EQ_I64(conf_check(&interval, "0"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.test.interval: \"0\" is below the minimum of 1 ms: zero would spin");
    CHECK_EQ_I64(conf_check(&interval, "x"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "a whole number of milliseconds");
    CHECK_EQ_I64(conf_check(&interval, "2m"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "above the maximum of 60000 ms (1m)");
    CHECK_OK(conf_check(&flag, flag.def));
    CHECK_OK(conf_check(&flag, "TRUE"));
    CHECK_EQ_I64(conf_check(&flag, "yes"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.test.flag: \"yes\" is not a boolean (true or false)");
}

/* em_set checks like em_conf_set, and a refused value leaves the context
 * running on the previous one; em_open accepts a conf whose values were all
 * checked when set. */
TEST(conf_em_set_refuses) {
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_OK(em_conf_set(conf, "ember.local.dir", test_scratchdir()));
    CHECK_OK(em_conf_set(conf, "ember.shuffle.memoryBytes", "256k"));
    CHECK_OK(em_conf_set(conf, "ember.progress", "false"));
    CHECK_OK(conf_validate(conf));
    CHECK_OK(conf_validate(NULL));
    em_ctx *c = em_open("local[1]", conf);
    em_conf_free(conf);
    CHECK(c);
    CHECK_EQ_I64(em_set(c, "ember.shuffle.memoryBytes", "abc"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.shuffle.memoryBytes: \"abc\" is not a size");
    CHECK(strcmp(em_get(c, "ember.shuffle.memoryBytes"), "256k") == 0);
    CHECK_EQ_I64(em_set(c, "ember.shuffle.memoryBytes", "1"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "\"1\" is below the minimum of 131072 bytes");
    CHECK(strcmp(em_get(c, "ember.shuffle.memoryBytes"), "256k") == 0);
    CHECK_EQ_I64(em_set(c, "ember.record.maxBytes", "1000"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.record.maxBytes: \"1000\"");
    CHECK_EQ_I64(em_set(c, "ember.task.maxFailures", "0"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.task.maxFailures: \"0\" is below the minimum of 1");
    CHECK(strcmp(em_get(c, "ember.task.maxFailures"), "4") == 0);
    CHECK_OK(em_set(c, "ember.shuffle.memoryBytes", "8mb"));
    CHECK(strcmp(em_get(c, "ember.shuffle.memoryBytes"), "8mb") == 0);
    /* Jobs run on the values that were accepted. */
    int64_t n = 0;
    CHECK_OK(em_count(em_range(c, 0, 100, 1, 2), &n));
    CHECK_EQ_I64(n, 100);
    em_close(c);
}

TEST(conf_dup_copies) {
    em_conf *c = em_conf_new();
    CHECK_OK(em_conf_set(c, "ember.app.name", "orig"));
    CHECK_OK(em_conf_set(c, "ember.task.maxFailures", "9"));
    em_conf *d = conf_dup(c);
    CHECK(d != NULL);
    CHECK(strcmp(em_conf_get(d, "ember.app.name"), "orig") == 0);
    CHECK_EQ_I64(conf_i64(d, "ember.task.maxFailures"), 9);
    CHECK_OK(conf_validate(d));
    /* Independent afterwards, both ways. */
    CHECK_OK(em_conf_set(c, "ember.app.name", "changed"));
    CHECK(strcmp(em_conf_get(d, "ember.app.name"), "orig") == 0);
    CHECK_OK(em_conf_set(d, "ember.local.dir", "/elsewhere"));
    CHECK(strcmp(em_conf_get(c, "ember.local.dir"), "/tmp") == 0);
    em_conf_free(c);
    CHECK(strcmp(em_conf_get(d, "ember.app.name"), "orig") == 0);
    em_conf_free(d);

    em_conf *e = conf_dup(NULL);
    CHECK(e != NULL);
    CHECK(strcmp(em_conf_get(e, "ember.app.name"), "ember") == 0);
    em_conf_free(e);
}

/* ember-submit's $EMBER_CONF: a bad value is reported by the flag or the
 * file line its "#from" line names, else by the variable and line. */
TEST(conf_from_env_names_the_origin) {
    em_conf *c = em_conf_new();
    CHECK(c);
    setenv("EMBER_TEST_CONF", "#from /etc/x.conf: line 4\nember.cores.max=2\n#from --executor-memory lots\n"
                              "ember.executor.memory=lots\n", 1);
    CHECK_EQ_I64(conf_from_env(c, "EMBER_TEST_CONF"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "--executor-memory lots: ");
    CHECK(!strstr(em_errmsg(), "$EMBER_TEST_CONF"));
    CHECK(!strstr(em_errmsg(), "x.conf"));
    CHECK_EQ_I64(conf_i64(c, "ember.cores.max"), 2);
    setenv("EMBER_TEST_CONF", "ember.cores.max=3\nember.executor.memory=lots\n", 1);
    CHECK_EQ_I64(conf_from_env(c, "EMBER_TEST_CONF"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "$EMBER_TEST_CONF: line 2: ");
    setenv("EMBER_TEST_CONF", "#from --conf nokey\nnokey\n", 1);
    CHECK_EQ_I64(conf_from_env(c, "EMBER_TEST_CONF"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "--conf nokey: \"nokey\" is not KEY=VALUE");
    unsetenv("EMBER_TEST_CONF");
    em_conf_free(c);
}
