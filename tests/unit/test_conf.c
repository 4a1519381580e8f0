/*
 * test_conf.c -- unit tests of configuration (engine/conf.c): the defaults
 * documented in ember.h, set/get, rejection of unknown keys, the typed
 * getters' parsing (size suffixes, malformed values) and conf_dup.
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
        {"ember.shuffle.memoryBytes", "67108864"},
        {"ember.shuffle.blockBytes", "65536"},
        {"ember.shuffle.compress.level", "1"},
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
    }
    CHECK_EQ_I64(conf_i64(c, "ember.task.maxFailures"), 4);
    CHECK_EQ_I64(conf_i64(c, "ember.files.maxPartitionBytes"), 33554432);
    CHECK_EQ_I64(conf_i64(c, "ember.default.parallelism"), 0);
    CHECK_EQ_I64(conf_i64(c, "ember.master"), 0); /* not a number */
    CHECK(em_conf_get(c, "ember.nope") == NULL);
    CHECK(em_conf_get(c, NULL) == NULL);
    CHECK(!conf_known("ember.nope"));
    CHECK(!conf_known(NULL));
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
    CHECK_OK(em_conf_set(c, "ember.app.name", ""));
    CHECK(strcmp(em_conf_get(c, "ember.app.name"), "") == 0);
    em_conf_free(c);
}

TEST(conf_unknown_and_null) {
    em_conf *c = em_conf_new();
    CHECK_EQ_I64(em_conf_set(c, "ember.no.such.key", "1"), EM_EINVAL);
    CHECK(strcmp(em_errmsg(), "unknown configuration key: ember.no.such.key") == 0);
    CHECK(em_conf_get(c, "ember.no.such.key") == NULL);
    CHECK_EQ_I64(em_conf_set(NULL, "ember.app.name", "x"), EM_EINVAL);
    CHECK_EQ_I64(em_conf_set(c, NULL, "x"), EM_EINVAL);
    CHECK_EQ_I64(em_conf_set(c, "ember.app.name", NULL), EM_EINVAL);
    CHECK(strcmp(em_conf_get(c, "ember.app.name"), "ember") == 0);
    em_conf_free(c);
}

TEST(conf_i64_suffixes) {
    em_conf *c = em_conf_new();
    static const struct { const char *v; int64_t want; } cases[] = {
        {"123", 123},       {"64k", 65536},        {"64K", 65536},
        {"32m", 33554432},  {"32M", 33554432},     {"2g", 2147483648LL},
        {"1G", 1073741824}, {" 7 ", 7},            {"-3", -3},
        {"0", 0},           {"8589934591g", 8589934591LL << 30},
        /* malformed: the default (65536) */
        {"", 65536},        {"abc", 65536},        {"12q", 65536},
        {"1kk", 65536},     {"k", 65536},          {"99999999999999999999", 65536},
        {"8589934592g", 65536}, {"1.5m", 65536},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_OK(em_conf_set(c, "ember.shuffle.blockBytes", cases[i].v));
        if (conf_i64(c, "ember.shuffle.blockBytes") != cases[i].want)
            fprintf(stderr, "  case \"%s\"\n", cases[i].v);
        CHECK_EQ_I64(conf_i64(c, "ember.shuffle.blockBytes"), cases[i].want);
    }
    CHECK_EQ_I64(conf_i64(c, "ember.no.such.key"), 0);
    em_conf_free(c);
}

TEST(conf_bool_values) {
    em_conf *c = em_conf_new();
    CHECK_EQ_I64(conf_bool(c, "ember.progress"), 0); /* "auto" is neither */
    static const struct { const char *v; int want; } cases[] = {
        {"true", 1}, {"TRUE", 1}, {"1", 1}, {"yes", 1}, {"on", 1},
        {"false", 0}, {"0", 0}, {"no", 0}, {"Off", 0}, {"maybe", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_OK(em_conf_set(c, "ember.progress", cases[i].v));
        CHECK_EQ_I64(conf_bool(c, "ember.progress"), cases[i].want);
    }
    em_conf_free(c);
}

TEST(conf_dup_copies) {
    em_conf *c = em_conf_new();
    CHECK_OK(em_conf_set(c, "ember.app.name", "orig"));
    CHECK_OK(em_conf_set(c, "ember.task.maxFailures", "9"));
    em_conf *d = conf_dup(c);
    CHECK(d != NULL);
    CHECK(strcmp(em_conf_get(d, "ember.app.name"), "orig") == 0);
    CHECK_EQ_I64(conf_i64(d, "ember.task.maxFailures"), 9);
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
