/*
 * roles.c -- what the API tests that start daemons share: this test binary
 * started in a daemon's role (the takeover, EMBER_ROLE), stopped by its
 * PID, and HTTP GETs of the daemons' pages and JSON.
 */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "roles.h"

extern char **environ;

void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

int64_t wall_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* This binary in a role (args after argv[0]), its output into log; fd 3
 * of the child is ready_fd when >= 0.  Its pid or -1. */
pid_t spawn_role(const char *role, char *const args[], int ready_fd, const char *log) {
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 4, sizeof *env);
    char rolev[64], parent[64];
    if (!env) return -1;
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "EMBER_", 6)) env[j++] = environ[i];
    snprintf(rolev, sizeof rolev, "EMBER_ROLE=%s", role);
    snprintf(parent, sizeof parent, "EMBER_PARENT_PID=%d", (int)getpid());
    env[j++] = rolev;
    env[j++] = parent;
    if (ready_fd >= 0) env[j++] = "EMBER_READY_FD=3";
    env[j] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (ready_fd >= 0) posix_spawn_file_actions_adddup2(&fa, ready_fd, 3);
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, args, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    return rc ? -1 : pid;
}

void stop_pid(pid_t pid) {
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 500; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid) return;
        sleep_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}


/* GET target from 127.0.0.1:port (the raw request line's target); 0 or -1. */
int http_get(int port, const char *target, answer *a) {
    memset(a, 0, sizeof *a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        if (fd >= 0) close(fd);
        return -1;
    }
    char req[2048];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", target);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    ssize_t r;
    while (buf && (r = read(fd, buf + len, cap - 1 - len)) > 0) {
        len += (size_t)r;
        if (len == cap - 1) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
    }
    close(fd);
    if (!buf) return -1;
    buf[len] = 0;
    char *end = strstr(buf, "\r\n\r\n");
    if (!end || sscanf(buf, "HTTP/1.0 %d", &a->status) != 1) {
        free(buf);
        return -1;
    }
    const char *ct = strstr(buf, "Content-Type: ");
    if (ct && ct < end) snprintf(a->ctype, sizeof a->ctype, "%.*s", (int)strcspn(ct + 14, "\r"), ct + 14);
    a->len = len - (size_t)(end + 4 - buf);
    a->body = malloc(a->len + 1);
    if (a->body) {
        memcpy(a->body, end + 4, a->len);
        a->body[a->len] = 0;
    }
    free(buf);
    return a->body ? 0 : -1;
}

void answer_free(answer *a) {
    free(a->body);
    a->body = NULL;
}

/* GET target and parse the body as JSON into d; 0 or -1. */
int http_get_json(int port, const char *target, json_doc *d) {
    answer a;
    if (http_get(port, target, &a)) return -1;
    int rc = a.status == 200 && !json_parse((const uint8_t *)a.body, a.len, NULL, d) ? 0 : -1;
    answer_free(&a);
    return rc;
}

int64_t jint(const json_doc *d, const json_node *o, const char *key) {
    int64_t v = -999999;
    json_as_i64(json_get(d, o, key), &v);
    return v;
}

const char *jstr(const json_doc *d, const json_node *o, const char *key) {
    const char *s = NULL;
    return json_as_str(d, json_get(d, o, key), &s, NULL) ? s : "(none)";
}

