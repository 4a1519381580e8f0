/*
 * appinfo.c -- the application's own listener events (see appinfo.h).
 */
#include <gnu/libc-version.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "appinfo.h"
#include "conf.h"

void appinfo_local_id(int64_t start_ms, char *out, size_t cap) {
    snprintf(out, cap, "local-%lld", (long long)start_ms);
}

static char *user_name(void) {
    const char *u = getenv("USER");
    if (u && *u) return strdup(u);
    struct passwd pw, *res = NULL;
    char buf[1024];
    if (!getpwuid_r(getuid(), &pw, buf, sizeof buf, &res) && res) return strdup(res->pw_name);
    char id[32];
    snprintf(id, sizeof id, "%u", (unsigned)getuid());
    return strdup(id);
}

app_event *appinfo_start(const char *name, const char *app_id, int64_t start_ms) {
    app_event *e = app_event_new(AE_APP_START);
    if (!e) return NULL;
    e->time_ms = start_ms;
    e->app_name = strdup(name ? name : "ember");
    e->app_id = strdup(app_id);
    e->user = user_name();
    if (!e->app_name || !e->app_id || !e->user) {
        app_event_free(e);
        return NULL;
    }
    return e;
}

/* A section's properties, grown one pair at a time. */
typedef struct props {
    app_event *e;
    int sec, cap, failed;
} props;

static void add(props *p, const char *k, const char *v) {
    app_event *e = p->e;
    if (p->failed) return;
    if (e->nprops[p->sec] == p->cap) {
        int cap = p->cap ? p->cap * 2 : 32;
        ae_prop *n = realloc(e->props[p->sec], sizeof *n * (size_t)cap);
        if (!n) {
            p->failed = 1;
            return;
        }
        e->props[p->sec] = n;
        p->cap = cap;
    }
    ae_prop *x = &e->props[p->sec][e->nprops[p->sec]];
    x->key = strdup(k);
    x->value = strdup(conf_redacted(k) ? CONF_REDACTED : v);
    if (!x->key || !x->value) {
        free(x->key);
        free(x->value);
        p->failed = 1;
        return;
    }
    e->nprops[p->sec]++;
}

static void add_setting(void *arg, const char *k, const char *v) {
    /* Set by em_open from elsewhere, listed once below. */
    if (!strcmp(k, "ember.master") || !strcmp(k, "ember.app.name")) return;
    add(arg, k, v);
}

app_event *appinfo_env(const em_conf *conf, const char *master, const char *app_id) {
    app_event *e = app_event_new(AE_ENV_UPDATE);
    if (!e) return NULL;
    props p = {e, AE_ENV_SPARK, 0, 0};
    add(&p, "ember.master", master);
    add(&p, "ember.app.name", em_conf_get(conf, "ember.app.name"));
    add(&p, "ember.app.id", app_id);
    conf_each(conf, add_setting, &p);
    int failed = p.failed;

    p = (props){e, AE_ENV_SYSTEM, 0, 0};
    struct utsname u;
    if (!uname(&u)) {
        add(&p, "os.name", u.sysname);
        add(&p, "os.version", u.release);
        add(&p, "os.arch", u.machine);
        add(&p, "host.name", u.nodename);
    }
    char *user = user_name();
    add(&p, "user.name", user ? user : "");
    free(user);
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd)) add(&p, "user.dir", cwd);
    char pid[32];
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    add(&p, "pid", pid);
    failed |= p.failed;

    p = (props){e, AE_ENV_RUNTIME, 0, 0};
    add(&p, "ember Version", EMBER_VERSION);
    add(&p, "C Library", gnu_get_libc_version());
    failed |= p.failed;
    if (failed) {
        app_event_free(e);
        return NULL;
    }
    return e;
}

app_event *appinfo_end(int64_t end_ms) {
    app_event *e = app_event_new(AE_APP_END);
    if (e) e->time_ms = end_ms;
    return e;
}
