/*
 * faults.h -- built-in fault injection for tests (SQLite's SQLITE_TEST
 * habit): the setting ember.test.faults, off (empty) unless a test sets it.
 * Not for production: it makes tasks fail, hang and corrupt their output
 * on purpose, so that tests of retries, kills and recomputation can count
 * what happened instead of timing it.
 *
 * A spec is rules separated by ';', each a kind and optional key=value
 * pairs after ':' separated by ',' (blanks around anything are ignored):
 *
 *   fail[:stage=S,part=P,attempt=A]      the attempt fails with EM_EUSER,
 *                                        "injected failure (ember.test.faults)"
 *   delay[:stage=S,part=P,attempt=A,ms=N]  the attempt sleeps N ms before it
 *                                        starts (no ms, or 0: until killed),
 *                                        checking its kill flag every ms
 *   corrupt[:stage=S,part=P,attempt=A]   a shuffle map attempt flips a byte in
 *                                        the first block of the data file it
 *                                        wrote (readers see a CRC mismatch)
 *   commit[:stage=S,part=P,attempt=A]    a save_as_text_file attempt fails
 *                                        right after it was authorized to
 *                                        commit (before its file moves)
 *   delaycommit[:...,ms=N]               a save_as_text_file attempt sleeps N
 *                                        ms before it asks to commit,
 *                                        ignoring kills (one that came late)
 *   dropfetch[:n=N]                      cluster mode: each executor's shuffle
 *                                        server closes the connection of its
 *                                        first N segment requests (default
 *                                        1) instead of answering
 *   execexit[:n=N,code=C]                cluster mode: executors of id below
 *                                        N (no n: every one) exit with code
 *                                        C (default 1) as they start, before
 *                                        they register (an executor that
 *                                        cannot start)
 *   hold:[stage=S,part=P,attempt=A,]gate=NAME
 *                                        the attempt waits before it starts
 *                                        until the file DIR/NAME exists (the
 *                                        test's release), checking its kill
 *                                        flag every ms: a held attempt that
 *                                        is killed ends as killed
 *   holdcommit:[...,]gate=NAME           a save_as_text_file attempt waits,
 *                                        deaf to kills, until DIR/NAME exists
 *                                        before it asks to commit (one that
 *                                        comes late, by the test's choice)
 *   holdmove:[...,]gate=NAME             a save_as_text_file attempt, once
 *                                        authorized to commit, waits, deaf to
 *                                        kills, until DIR/NAME exists before
 *                                        it moves its file (a winner whose
 *                                        commit is still under way)
 *   holdend:[...,]gate=NAME              the attempt, its work done and past
 *                                        its last kill check, waits, deaf to
 *                                        kills, until DIR/NAME exists before
 *                                        it reports (a killed loser whose
 *                                        success comes late, by the test's
 *                                        choice)
 *
 * DIR is the setting ember.test.faults.dir, which travels with the spec.
 * A held attempt first creates DIR/held-NAME-S-P-A (its stage, partition
 * and attempt), so that a test waits for "the attempt is held" before it
 * acts, and releases it by creating DIR/NAME; at a gate that already
 * exists the attempt goes on at once (its marker made all the same).
 * Files are the mechanism because executors of
 * local-cluster are other processes on the test's host.  NAME is 1 to
 * FAULT_GATE_MAX letters, digits, '-', '_' or '.' (not starting with '.');
 * a hold with no ember.test.faults.dir set fails the attempt (EM_EINVAL).
 *
 * S, P, A are a stage id, a partition (the map index for map tasks) and an
 * attempt number (0 first); a key left out matches any.  Example:
 * "fail:part=1,attempt=0; delay:part=3,attempt=0".  The spec travels in
 * every task description, so executors in other processes apply it too.
 */
#ifndef EM_FAULTS_H
#define EM_FAULTS_H

#include <stddef.h>
#include <stdint.h>

typedef enum fault_kind {
    FAULT_FAIL = 1,
    FAULT_DELAY,
    FAULT_CORRUPT,
    FAULT_COMMIT,
    FAULT_DELAY_COMMIT,
    FAULT_DROP_FETCH,
    FAULT_EXEC_EXIT,
    FAULT_HOLD,
    FAULT_HOLD_COMMIT,
    FAULT_HOLD_MOVE,
    FAULT_HOLD_END
} fault_kind;

#define FAULT_GATE_MAX 64

typedef struct fault_rule {
    fault_kind kind;
    int64_t stage, part, attempt; /* -1: any */
    int64_t ms;                   /* FAULT_DELAY: 0 = until killed;
                                     FAULT_DELAY_COMMIT: the sleep */
    int64_t n;                    /* FAULT_DROP_FETCH: requests to drop;
                                     FAULT_EXEC_EXIT: executor ids below it
                                     (-1: all) */
    int64_t code;                 /* FAULT_EXEC_EXIT: the exit code */
    char gate[FAULT_GATE_MAX + 1]; /* the holds: the release file's name
                                      in the faults directory */
} fault_rule;

#define FAULTS_MAX 32

/* Parse spec (NULL or blank: no rules) into rules[0, FAULTS_MAX).  The
 * number of rules, or -1 with why (NUL-terminated) saying what is wrong. */
int faults_parse(const char *spec, fault_rule *rules, char *why, size_t whylen);
/* The first rule of that kind matching the attempt, or NULL. */
const fault_rule *faults_match(const fault_rule *rules, int n, fault_kind kind, uint32_t stage, int32_t part,
                               uint32_t attempt);

/* What a hold needs from outside: whether the attempt is to stop (a kill;
 * NULL or returning 0: deaf to kills), and where it is. */
typedef struct fault_hold_ctx {
    const char *dir; /* ember.test.faults.dir: NULL or empty fails the hold */
    uint32_t stage, attempt;
    int32_t part;
    int (*killed)(void); /* nonzero: stop holding and return it */
} fault_hold_ctx;

/* Hold as rule r (one of the holds) says: create the held
 * marker DIR/held-GATE-S-P-A, then wait until DIR/GATE exists, checking
 * h->killed every ms.  0 once released; killed()'s value once killed;
 * EM_EINVAL (no directory) or EM_EIO (the marker cannot be created), with
 * the error set, naming the path.  Never returns on its own otherwise: the
 * test must release or kill what it holds. */
int faults_hold(const fault_rule *r, const fault_hold_ctx *h);

#endif
