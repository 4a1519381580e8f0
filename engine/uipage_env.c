/*
 * uipage_env.c -- the environment page (/environment/, see uipage_env.h): the runtime, the
 * ember (Spark) properties, the Hadoop and system properties and the
 * classpath, each a table sorted by name.  Values whose key or value
 * looks secret (conf_redacted) are shown redacted, whatever the event log
 * carried.
 */
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "ember.h"
#include "err.h"
#include "html.h"
#include "uipage_env.h"
#include "uipagekit.h"

static int cmp_prop(const void *a, const void *b) {
    return strcmp(((const ae_prop *)a)->key, ((const ae_prop *)b)->key);
}

static int section(uipage *u, int sec, const char *id, const char *title, int redacting) {
    static const char *const kv[] = {"Name", "Value"};
    static const char *const cp[] = {"Resource", "Source"};
    int n = 0;
    const ae_prop *p = status_env(u->st, sec, &n);
    ae_prop *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return em__seterr(EM_ENOMEM, "ui: out of memory");
    if (n) memcpy(v, p, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, cmp_prop);
    ebuf *b = u->b;
    int rc = html_rawf(b, "<details open><summary>%s (%d)</summary>\n", title, n) ||
             html_table_begin(b, id, sec == AE_ENV_CLASSPATH ? cp : kv, 2);
    for (int i = 0; i < n && !rc; i++) {
        const char *val = v[i].value ? v[i].value : "";
        if (redacting && (conf_redacted(v[i].key) || conf_redacted(val))) val = CONF_REDACTED;
        rc = html_row_begin(b) || html_cell(b, v[i].key) || html_cell(b, val) || html_row_end(b);
    }
    free(v);
    return rc || html_table_end(b) || html_raw(b, "</details>\n");
}

int uipage_environment(uipage *u) {
    return up_begin(u, "Environment", UP_TAB_ENV) ||
           section(u, AE_ENV_RUNTIME, "env-runtime", "Runtime Information", 1) ||
           section(u, AE_ENV_SPARK, "env-spark", "Spark Properties", 1) ||
           section(u, AE_ENV_HADOOP, "env-hadoop", "Hadoop Properties", 1) ||
           section(u, AE_ENV_SYSTEM, "env-system", "System Properties", 1) ||
           section(u, AE_ENV_CLASSPATH, "env-classpath", "Classpath Entries", 0) || up_end(u);
}
