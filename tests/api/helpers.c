/*
 * helpers.c -- see helpers.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"
#include "helpers.h"

em_ctx *open_test_ctx(void) {
    /* Scratch files under the test's own directory, which the runner removes
     * even when a failed CHECK skipped em_close. */
    em_conf *conf = em_conf_new();
    test_conf_set(conf, "ember.local.dir", test_scratchdir());
    em_ctx *c = em_open(test_master(), conf);
    em_conf_free(conf);
    if (!c) fprintf(stderr, "  em_open(%s): %s\n", test_master(), em_errmsg());
    return c;
}

int64_t rec_i64(const em_rec *r) { return r->vlen == 8 ? em_i64_dec(r->val) : -999999; }

int fn_double_i64(const em_rec *in, em_emitter *out, const void *arg) {
    return em_emit_i64(out, rec_i64(in) * 2);
}

int fn_even_i64(const em_rec *in, const void *arg) { return rec_i64(in) % 2 == 0; }

int fn_sum_i64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return em_emit_i64(out, em_i64_dec(a->val) + em_i64_dec(b->val));
}

int fn_split_words(const em_rec *in, em_emitter *out, const void *arg) {
    const char *p = in->val, *end = p + in->vlen;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        const char *w = p;
        while (p < end && *p != ' ' && *p != '\t') p++;
        if (p > w) {
            int rc = em_emit_pair_i64(out, w, (size_t)(p - w), 1);
            if (rc) return rc;
        }
    }
    return 0;
}

int fn_mod_key(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t m = *(const int64_t *)arg, v = rec_i64(in);
    uint8_t k[8], vv[8];
    em_i64_enc(v % m, k);
    em_i64_enc(v, vv);
    return em_emit_pair(out, k, 8, vv, 8);
}

int64_t batch_sum_i64(em_batch *b) {
    size_t pos = 0;
    em_rec r;
    int64_t s = 0;
    while (em_batch_next(b, &pos, &r) == 1) s += rec_i64(&r);
    return s;
}

/* ---- added for test_sources/narrow/actions/errors/vars ---- */

em_ctx *open_test_ctx_with(const char *key, const char *value) {
    em_conf *conf = em_conf_new();
    if (!conf) return NULL;
    if (key && em_conf_set(conf, key, value)) {
        fprintf(stderr, "  em_conf_set(%s): %s\n", key, em_errmsg());
        em_conf_free(conf);
        return NULL;
    }
    em_ctx *c = em_open(test_master(), conf);
    if (!c) fprintf(stderr, "  em_open(%s): %s\n", test_master(), em_errmsg());
    em_conf_free(conf);
    return c;
}

int write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = len ? fwrite(data, 1, len, f) : 0;
    return fclose(f) == 0 && w == len ? 0 : -1;
}

char *read_file_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0, k;
    char *p = malloc(cap + 1);
    while (p && (k = fread(p + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            char *q = realloc(p, cap * 2 + 1);
            if (!q) {
                free(p);
                p = NULL;
                break;
            }
            p = q;
            cap *= 2;
        }
    }
    fclose(f);
    if (p) p[n] = 0;
    if (len) *len = n;
    return p;
}

const char *tmp_path(const char *name) {
    static char bufs[8][1024];
    static int k;
    char *b = bufs[k++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", test_tmpdir(), name);
    return b;
}

int64_t batch_i64_at(em_batch *b, size_t i) {
    em_rec r;
    if (em_batch_get(b, i, &r)) return -999999;
    return rec_i64(&r);
}

int batch_eq_i64(em_batch *b, const int64_t *v, size_t n) {
    if (em_batch_count(b) != n) {
        fprintf(stderr, "  batch has %zu records, expected %zu\n", em_batch_count(b), n);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (batch_i64_at(b, i) != v[i]) {
            fprintf(stderr, "  record %zu is %lld, expected %lld\n", i, (long long)batch_i64_at(b, i),
                    (long long)v[i]);
            return 0;
        }
    return 1;
}

uint64_t fnv1a(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

int fn_count_calls(const em_rec *in, em_emitter *out, const void *arg) {
    em_acc_add_i64(*(const em_acc *)arg, 1);
    return em_emit_rec(out, in);
}

int fn_identity(const em_rec *in, em_emitter *out, const void *arg) { return em_emit_rec(out, in); }

int fn_pair_x10(const em_rec *in, em_emitter *out, const void *arg) {
    uint8_t k[8], v[8];
    int64_t x = rec_i64(in);
    em_i64_enc(x, k);
    em_i64_enc(x * 10, v);
    return em_emit_pair(out, k, 8, v, 8);
}

int check_mod_sums(em_batch *b, int64_t n, int64_t m) {
    size_t pos = 0;
    em_rec r;
    if (m <= 0 || (int64_t)em_batch_count(b) != m) {
        fprintf(stderr, "  check_mod_sums: %zu records, expected %lld\n", em_batch_count(b), (long long)m);
        return 0;
    }
    uint8_t *seen = calloc((size_t)m, 1);
    int ok = seen != NULL;
    while (ok && em_batch_next(b, &pos, &r) == 1) {
        if (!r.key || r.klen != 8 || r.vlen != 8) {
            fprintf(stderr, "  check_mod_sums: a record without an 8-byte key and value\n");
            ok = 0;
            break;
        }
        int64_t k = em_i64_dec(r.key), want = 0;
        if (k < 0 || k >= m || seen[k]++) { /* every key of [0, m) exactly once */
            fprintf(stderr, "  check_mod_sums: key %lld out of [0, %lld) or seen twice\n", (long long)k, (long long)m);
            ok = 0;
            break;
        }
        for (int64_t v = k; v < n; v += m) want += v;
        if (em_i64_dec(r.val) != want) {
            fprintf(stderr, "  check_mod_sums: key %lld has %lld, expected %lld\n", (long long)k,
                    (long long)em_i64_dec(r.val), (long long)want);
            ok = 0;
        }
    }
    free(seen);
    return ok;
}

typedef struct stat_wait {
    em_ctx *c;
    em_stats *st;
    int64_t (*get)(const em_stats *);
    int64_t at_least;
} stat_wait;

static int stat_reached(void *p) {
    stat_wait *w = p;
    em_get_stats(w->c, w->st);
    return w->get(w->st) >= w->at_least;
}

static int64_t minus_running(const em_stats *st) { return -st->tasks_running; }

void wait_no_tasks(em_ctx *c, em_stats *st) {
    stat_wait w = {c, st, minus_running, 0};
    wait_for(stat_reached, &w, WAIT_MS, "no task attempt running (em_stats.tasks_running == 0)");
}

int batches_equal(em_batch *a, em_batch *b) {
    size_t pa = 0, pb = 0;
    em_rec x, y;
    if (em_batch_count(a) != em_batch_count(b)) return 0;
    while (em_batch_next(a, &pa, &x) == 1) {
        if (em_batch_next(b, &pb, &y) != 1 || x.klen != y.klen || x.vlen != y.vlen || !x.key != !y.key ||
            (x.klen && memcmp(x.key, y.key, x.klen)) || (x.vlen && memcmp(x.val, y.val, x.vlen)))
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------ fault gates */

const char *gates_dir(void) {
    static char dir[400];
    snprintf(dir, sizeof dir, "%s/gates", test_tmpdir());
    if (mkdir(dir, 0755) && errno != EEXIST) {
        perror(dir);
        abort();
    }
    return dir;
}

static void held_path(char *path, size_t cap, const char *gate, int stage, int part, int attempt) {
    snprintf(path, cap, "%s/held-%s-%d-%d-%d", gates_dir(), gate, stage, part, attempt);
}

int gate_wait_held(const char *gate, int stage, int part, int attempt) {
    char path[600], what[700];
    held_path(path, sizeof path, gate, stage, part, attempt);
    snprintf(what, sizeof what, "stage %d partition %d attempt %d held at gate %s (%s)", stage, part, attempt, gate,
             path);
    return wait_for(cond_file, path, WAIT_MS, what);
}

int gate_was_held(const char *gate, int stage, int part, int attempt) {
    char path[600];
    held_path(path, sizeof path, gate, stage, part, attempt);
    return access(path, F_OK) == 0;
}

int gate_release(const char *gate) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", gates_dir(), gate);
    return write_file(path, "", 0);
}

int wait_stat(em_ctx *c, em_stats *st, int64_t (*get)(const em_stats *), int64_t at_least, const char *what) {
    stat_wait w = {c, st, get, at_least};
    return wait_for(stat_reached, &w, WAIT_MS, what);
}
