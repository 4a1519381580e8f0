/*
 * roles.h -- what the API tests that start daemons share: this test binary
 * started in a daemon's role, stopped by its PID, and HTTP GETs of the
 * daemons' pages and JSON on 127.0.0.1.
 */
#ifndef EM_TEST_ROLES_H
#define EM_TEST_ROLES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "json.h"

void sleep_ms(int ms);
/* Milliseconds since the epoch. */
int64_t wall_ms(void);
/* This binary in a role (EMBER_ROLE: "master", "worker",
 * "history-server"; args after argv[0]), its output appended to log; fd 3
 * of the child is ready_fd when >= 0 (EMBER_READY_FD=3), and it dies with
 * this process (EMBER_PARENT_PID).  Its pid or -1. */
pid_t spawn_role(const char *role, char *const args[], int ready_fd, const char *log);
/* SIGTERM, wait up to 5 s, then SIGKILL; always waited for. */
void stop_pid(pid_t pid);

/* An HTTP answer: status, Content-Type, body (NUL-terminated). */
typedef struct answer {
    int status;
    char ctype[128];
    char *body;
    size_t len;
} answer;

/* GET target from 127.0.0.1:port (the raw request line's target); 0 or -1. */
int http_get(int port, const char *target, answer *a);
void answer_free(answer *a);
/* GET target and parse the body as JSON into d; 0 (a 200 that parsed) or -1. */
int http_get_json(int port, const char *target, json_doc *d);
/* o's member key as an integer (-999999 when absent) or a string ("(none)"). */
int64_t jint(const json_doc *d, const json_node *o, const char *key);
const char *jstr(const json_doc *d, const json_node *o, const char *key);

#endif
