/*
 * confargs.c -- em_conf_parse_args: the "--conf KEY=VALUE" flags of a
 * driver program's command line (see ember.h).
 *
 * Two passes over argv: the first sets every pair in the conf and stops at
 * the first bad one, so that on failure argv is left as the caller gave
 * it; the second removes the pairs, keeping the other arguments in order.
 * Both stop at "--", after which every argument is the program's own.
 */
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "err.h"

/* One "KEY=VALUE" into conf; 0 or an EM_* code with the message naming
 * the flag. */
static int set_pair(em_conf *conf, const char *kv) {
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) return em__seterr(EM_EINVAL, "--conf '%s': expected KEY=VALUE", kv);
    char *key = strndup(kv, (size_t)(eq - kv));
    if (!key) return em__seterr(EM_ENOMEM, "--conf %s: out of memory", kv);
    int rc = em_conf_set(conf, key, eq + 1); /* fails for an unknown key or a bad value */
    free(key);
    return rc ? em__preferr(rc, "--conf %s", kv) : 0;
}

int em_conf_parse_args(em_conf *conf, int *argc, char **argv) {
    if (!conf || !argc || *argc < 0 || (*argc > 0 && !argv))
        return em__seterr(EM_EINVAL, "em_conf_parse_args: NULL conf, argc or argv");
    int n = *argc;
    for (int i = 1; i < n && strcmp(argv[i], "--"); i++) {
        if (strcmp(argv[i], "--conf")) continue;
        if (i + 1 == n) return em__seterr(EM_EINVAL, "--conf needs KEY=VALUE");
        int rc = set_pair(conf, argv[++i]);
        if (rc) return rc;
    }
    int out = 1, i = 1;
    for (; i < n && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "--conf")) i++;
        else argv[out++] = argv[i];
    }
    while (i < n) argv[out++] = argv[i++];
    if (out < n) { /* pairs were removed: argv stays NULL-terminated */
        argv[out] = NULL;
        *argc = out;
    }
    return 0;
}
