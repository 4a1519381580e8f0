/*
 * test_faults.c -- the ember.test.faults parser (engine/faults.h): every
 * kind with its keys, the refusals with their reasons, and the hold at a
 * gate file: its marker, its release by another thread, its end by a kill,
 * and its refusal without a directory.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "ember.h"
#include "faults.h"

static int parse(const char *spec, fault_rule *rules, char *why) {
    why[0] = 0;
    return faults_parse(spec, rules, why, 160);
}

TEST(faults_parse_kinds) {
    fault_rule r[FAULTS_MAX];
    char why[160];
    CHECK_EQ_I64(parse(NULL, r, why), 0);
    CHECK_EQ_I64(parse("  ;  ", r, why), 0);
    CHECK_EQ_I64(parse("fail:part=1,attempt=0; delay:stage=2,ms=30 ;corrupt", r, why), 3);
    CHECK_EQ_I64(r[0].kind, FAULT_FAIL);
    CHECK_EQ_I64(r[0].stage, -1);
    CHECK_EQ_I64(r[0].part, 1);
    CHECK_EQ_I64(r[0].attempt, 0);
    CHECK_EQ_I64(r[1].kind, FAULT_DELAY);
    CHECK_EQ_I64(r[1].stage, 2);
    CHECK_EQ_I64(r[1].ms, 30);
    CHECK_EQ_I64(r[2].kind, FAULT_CORRUPT);
    CHECK_EQ_I64(parse("dropfetch:n=3; execexit:n=1,code=7", r, why), 2);
    CHECK_EQ_I64(r[0].n, 3);
    CHECK_EQ_I64(r[1].n, 1);
    CHECK_EQ_I64(r[1].code, 7);
    CHECK_EQ_I64(parse("hold:stage=0,part=3,attempt=0,gate=maps-1; holdcommit: gate = late_2.x , part=2", r, why),
                 2);
    CHECK_EQ_I64(r[0].kind, FAULT_HOLD);
    CHECK_EQ_I64(r[0].stage, 0);
    CHECK_EQ_I64(r[0].part, 3);
    CHECK_EQ_I64(r[0].attempt, 0);
    CHECK(!strcmp(r[0].gate, "maps-1"));
    CHECK_EQ_I64(r[1].kind, FAULT_HOLD_COMMIT);
    CHECK_EQ_I64(r[1].part, 2);
    CHECK_EQ_I64(r[1].attempt, -1);
    CHECK(!strcmp(r[1].gate, "late_2.x"));
    CHECK_EQ_I64(parse("holdmove:attempt=0,gate=move", r + 2, why), 1);
    CHECK_EQ_I64(r[2].kind, FAULT_HOLD_MOVE);
    CHECK_EQ_I64(r[2].attempt, 0);
    CHECK(!strcmp(r[2].gate, "move"));
    CHECK_EQ_I64(parse("holdend:part=3,attempt=0,gate=late", r + 3, why), 1);
    CHECK_EQ_I64(r[3].kind, FAULT_HOLD_END);
    CHECK_EQ_I64(r[3].part, 3);
    CHECK(!strcmp(r[3].gate, "late"));
    /* A rule matches its attempt only; a key left out matches any. */
    CHECK(faults_match(r, 2, FAULT_HOLD, 0, 3, 0) == &r[0]);
    CHECK(faults_match(r, 2, FAULT_HOLD, 0, 3, 1) == NULL);
    CHECK(faults_match(r, 2, FAULT_HOLD, 1, 3, 0) == NULL);
    CHECK(faults_match(r, 2, FAULT_HOLD_COMMIT, 9, 2, 5) == &r[1]);
    CHECK(faults_match(r, 2, FAULT_DELAY, 0, 3, 0) == NULL);
}

TEST(faults_parse_refusals) {
    fault_rule r[FAULTS_MAX];
    char why[160];
    CHECK_EQ_I64(parse("hang:part=1", r, why), -1);
    CHECK_STR_CONTAINS(why, "unknown fault \"hang\"");
    CHECK_STR_CONTAINS(why, "hold, holdcommit, holdmove or holdend");
    CHECK_EQ_I64(parse("hold:part=1", r, why), -1);
    CHECK_STR_CONTAINS(why, "hold needs gate=NAME");
    CHECK_EQ_I64(parse("holdcommit", r, why), -1);
    CHECK_STR_CONTAINS(why, "holdcommit needs gate=NAME");
    CHECK_EQ_I64(parse("holdmove:attempt=0", r, why), -1);
    CHECK_STR_CONTAINS(why, "holdmove needs gate=NAME");
    CHECK_EQ_I64(parse("holdend:part=0", r, why), -1);
    CHECK_STR_CONTAINS(why, "holdend needs gate=NAME");
    CHECK_EQ_I64(parse("hold:gate=", r, why), -1);
    CHECK_STR_CONTAINS(why, "gate \"\" is not a name");
    CHECK_EQ_I64(parse("hold:gate=../up", r, why), -1);
    CHECK_STR_CONTAINS(why, "gate \"../up\" is not a name");
    CHECK_EQ_I64(parse("hold:gate=a/b", r, why), -1);
    CHECK_STR_CONTAINS(why, "is not a name");
    CHECK_EQ_I64(parse("hold:gate=.hidden", r, why), -1);
    char longname[100] = "hold:gate=";
    memset(longname + 10, 'g', FAULT_GATE_MAX + 1);
    longname[10 + FAULT_GATE_MAX + 1] = 0;
    CHECK_EQ_I64(parse(longname, r, why), -1);
    longname[10 + FAULT_GATE_MAX] = 0; /* the longest name is taken */
    CHECK_EQ_I64(parse(longname, r, why), 1);
    CHECK_EQ_I64((int64_t)strlen(r[0].gate), FAULT_GATE_MAX);
    /* gate belongs to the holds, ms to the delays. */
    CHECK_EQ_I64(parse("delay:gate=x", r, why), -1);
    CHECK_STR_CONTAINS(why, "is not key=number");
    CHECK_EQ_I64(parse("hold:gate=x,ms=5", r, why), -1);
    CHECK_STR_CONTAINS(why, "unknown key \"ms\" (expected stage, part, attempt or gate)");
    CHECK_EQ_I64(parse("fail:part=-1", r, why), -1);
    CHECK_STR_CONTAINS(why, "\"part=-1\" is not key=number");
    CHECK_EQ_I64(parse("dropfetch:part=1", r, why), -1);
    CHECK_STR_CONTAINS(why, "dropfetch takes only n=COUNT");
    CHECK_EQ_I64(parse("execexit:code=0", r, why), -1);
    CHECK_STR_CONTAINS(why, "execexit takes only n=COUNT and code=1..255");
    /* And the setting refuses what the parser refuses, naming the key. */
    em_conf *conf = em_conf_new();
    CHECK(conf);
    CHECK_EQ_I64(em_conf_set(conf, "ember.test.faults", "hold:part=1"), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "ember.test.faults: \"hold:part=1\" is not a fault spec: hold needs gate=NAME");
    CHECK_OK(em_conf_set(conf, "ember.test.faults", "hold:part=1,gate=g"));
    CHECK_OK(em_conf_set(conf, "ember.test.faults.dir", "/tmp"));
    em_conf_free(conf);
}

static int kill_flag;

static int flag_killed(void) { return __atomic_load_n(&kill_flag, __ATOMIC_ACQUIRE) ? EM_ECANCELED : 0; }

typedef struct holder {
    fault_rule r;
    fault_hold_ctx h;
    int rc, done;
} holder;

static void *hold_thread(void *p) {
    holder *x = p;
    x->rc = faults_hold(&x->r, &x->h);
    __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Starts a holder of stage 1, partition 2, attempt 3 at gate g. */
static int start_hold(holder *x, pthread_t *t, const char *dir, int (*killed)(void)) {
    char why[160];
    memset(x, 0, sizeof *x);
    if (faults_parse("hold:gate=g", &x->r, why, sizeof why) != 1) return -1;
    x->h = (fault_hold_ctx){dir, 1, 3, 2, killed};
    return pthread_create(t, NULL, hold_thread, x);
}

TEST(faults_hold_released_by_gate) {
    char marker[600], gate[600];
    snprintf(marker, sizeof marker, "%s/held-g-1-2-3", test_tmpdir());
    snprintf(gate, sizeof gate, "%s/g", test_tmpdir());
    holder x;
    pthread_t t;
    __atomic_store_n(&kill_flag, 0, __ATOMIC_RELEASE);
    CHECK(start_hold(&x, &t, test_tmpdir(), flag_killed) == 0);
    int held = wait_for(cond_file, marker, WAIT_MS, "the hold's marker held-g-1-2-3");
    int still = !__atomic_load_n(&x.done, __ATOMIC_ACQUIRE); /* nothing opened the gate yet */
    FILE *f = fopen(gate, "w");
    if (f) fclose(f);
    pthread_join(t, NULL);
    CHECK(held);
    CHECK(still);
    CHECK(f);
    CHECK_EQ_I64(x.rc, 0);
    /* An open gate holds nothing. */
    CHECK(start_hold(&x, &t, test_tmpdir(), NULL) == 0);
    pthread_join(t, NULL);
    CHECK_EQ_I64(x.rc, 0);
}

TEST(faults_hold_ends_when_killed) {
    char marker[600];
    snprintf(marker, sizeof marker, "%s/held-g-1-2-3", test_tmpdir());
    holder x;
    pthread_t t;
    __atomic_store_n(&kill_flag, 0, __ATOMIC_RELEASE);
    CHECK(start_hold(&x, &t, test_tmpdir(), flag_killed) == 0);
    int held = wait_for(cond_file, marker, WAIT_MS, "the hold's marker held-g-1-2-3");
    __atomic_store_n(&kill_flag, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    CHECK(held);
    CHECK_EQ_I64(x.rc, EM_ECANCELED);
}

TEST(faults_hold_needs_a_directory) {
    fault_rule r;
    char why[160], missing[600];
    CHECK_EQ_I64(faults_parse("hold:gate=g", &r, why, sizeof why), 1);
    fault_hold_ctx h = {NULL, 1, 3, 2, NULL};
    CHECK_EQ_I64(faults_hold(&r, &h), EM_EINVAL);
    CHECK_STR_CONTAINS(em_errmsg(), "hold:gate=g needs ember.test.faults.dir");
    snprintf(missing, sizeof missing, "%s/no-such-dir", test_tmpdir());
    h.dir = missing;
    CHECK_EQ_I64(faults_hold(&r, &h), EM_EIO);
    CHECK_STR_CONTAINS(em_errmsg(), "no-such-dir/held-g-1-2-3");
}
