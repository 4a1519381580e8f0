/*
 * test_daemon_args.c -- the daemons' command-line parser
 * (engine/daemon.c): options stored by their table entries, the
 * operand, --conf settings, and the bad-argument statuses (the messages
 * themselves go to stderr, as ember-master's and ember-worker's do).
 */
#include <stdio.h>
#include <string.h>

#include "../test.h"
#include "conf.h"
#include "daemon.h"
#include "ember.h"

typedef struct args {
    char host[16];
    int port, flag;
    const char *operand;
} args;

static int parse(args *a, em_conf *conf, int argc, char **argv) {
    const daemon_opt opts[] = {
        {.name = "--flag", .kind = DA_FLAG, .out = &a->flag},
        {.name = "--insecure", .kind = DA_SET_TRUE, .key = "ember.network.insecure"},
        {.name = "--host", .kind = DA_STR, .out = a->host, .cap = sizeof a->host},
        {.name = "--port", .kind = DA_INT, .out = &a->port, .min = 0, .max = 65535},
        {.name = "--conf", .kind = DA_CONF},
        {.name = NULL},
    };
    const daemon_cmd cmd = {"test-daemon", "usage: test-daemon\n", opts, &a->operand};
    return daemon_args_parse(&cmd, argc, argv, conf);
}

TEST(daemon_args_table_operand_and_conf) {
    args a = {"127.0.0.1", 7, 0, NULL};
    em_conf *conf = em_conf_new();
    CHECK(conf);
    char *ok[] = {"d", "--host", "h1", "--flag", "ember://x:1", "--port", "0", "--conf", "ember.log.level=info",
                  "--insecure"};
    CHECK(parse(&a, conf, 10, ok) == 0);
    CHECK(!strcmp(a.host, "h1") && a.port == 0 && a.flag == 1);
    CHECK(a.operand && !strcmp(a.operand, "ember://x:1"));
    CHECK(!strcmp(em_conf_get(conf, "ember.network.insecure"), "true"));
    CHECK(conf_is_set(conf, "ember.log.level"));
    /* A second operand, a bad value, a missing value, an unknown option,
     * a refused setting: status 2.  --help: status 1. */
    char *two[] = {"d", "ember://y:2"};
    CHECK(parse(&a, conf, 2, two) == 2);
    char *port[] = {"d", "--port", "65536"};
    CHECK(parse(&a, conf, 3, port) == 2);
    char *none[] = {"d", "--host"};
    CHECK(parse(&a, conf, 2, none) == 2);
    char *unknown[] = {"d", "--nope", "v"};
    CHECK(parse(&a, conf, 3, unknown) == 2);
    char *setting[] = {"d", "--conf", "novalue"};
    CHECK(parse(&a, conf, 3, setting) == 2);
    char *longhost[] = {"d", "--host", "0123456789abcdef"};
    CHECK(parse(&a, conf, 3, longhost) == 2);
    char *help[] = {"d", "--port", "1", "-h"};
    CHECK(parse(&a, conf, 4, help) == 1);
    em_conf_free(conf);
}
