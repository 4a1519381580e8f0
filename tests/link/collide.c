/*
 * collide.c -- a driver whose own functions carry the names of ember
 * internals, run by tests/link/check.sh (`make test-link`).
 *
 *     collide LOCAL_DIR
 *
 * It defines non-static rm_tree, ctx_run, dag_new, shuffle_read, bs_new,
 * ebuf_free and text_plan (names libember used to export; the last two are
 * among those libember.a's mllib member calls in its core member, there
 * renamed em__ebuf_free and em__text_plan) with bodies that count their calls and
 * would break the engine if it called them: rm_tree removes nothing, the
 * others fail.  Linked statically against libember.a the names must not
 * collide (no "multiple definition"); linked against libember.so with
 * -rdynamic, so that the program exports them, they must not replace the
 * library's.  It runs a shuffle job (reduce_by_key) with ember.local.dir set
 * to LOCAL_DIR, a fresh directory, checks the answer, closes the context,
 * and checks that none of its functions ran and that LOCAL_DIR is empty
 * (em_close removed its scratch directory).  Exit status 0 when all holds;
 * otherwise 1 with a message on stderr.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ember.h"

static int calls;

/* Prototypes: the names, not the signatures, are what matters here. */
void rm_tree(const char *path);
int ctx_run(void *rdd, const void *sink, const int *parts, int nparts);
void *dag_new(void *be, void *stats, uint64_t cache_ns);
int shuffle_read(const void *opts, void *sink, void *sctx, void *stats);
void *bs_new(const char *dir, size_t mem_limit);
void ebuf_free(void *b);
int text_plan(const char *path, int min_parts, void *out);

__attribute__((used, noinline)) void rm_tree(const char *path) { calls++; }
__attribute__((used, noinline)) int ctx_run(void *rdd, const void *sink, const int *parts, int nparts) {
    calls++;
    return -1;
}
__attribute__((used, noinline)) void *dag_new(void *be, void *stats, uint64_t cache_ns) {
    calls++;
    return NULL;
}
__attribute__((used, noinline)) int shuffle_read(const void *opts, void *sink, void *sctx, void *stats) {
    calls++;
    return -1;
}
__attribute__((used, noinline)) void *bs_new(const char *dir, size_t mem_limit) {
    calls++;
    return NULL;
}
__attribute__((used, noinline)) void ebuf_free(void *b) { calls++; }
__attribute__((used, noinline)) int text_plan(const char *path, int min_parts, void *out) {
    calls++;
    return -1;
}

/* map: i -> (i % 10, 1) */
static int mod10(const em_rec *in, em_emitter *out, const void *arg) {
    uint8_t k[8];
    em_i64_enc(em_i64_dec(in->val) % 10, k);
    return em_emit_pair_i64(out, k, 8, 1);
}

static int add(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return em_emit_i64(out, em_i64_dec(a->val) + em_i64_dec(b->val));
}

static int fail(const char *what) {
    fprintf(stderr, "collide: %s: %s\n", what, em_errmsg());
    return 1;
}

/* The entries of dir other than . and .., or -1 if it cannot be read. */
static int entries(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: collide LOCAL_DIR\n");
        return 2;
    }
    em_conf *conf = em_conf_new();
    if (!conf || em_conf_set(conf, "ember.local.dir", argv[1]) || em_conf_set(conf, "ember.progress", "false"))
        return fail("configuration");
    em_ctx *ctx = em_open("local[2]", conf);
    em_conf_free(conf);
    if (!ctx) return fail("em_open");

    em_rdd *pairs = em_map(em_range(ctx, 0, 10000, 1, 4), mod10, NULL, 0);
    em_batch *b = NULL;
    if (em_collect(em_reduce_by_key(pairs, add, NULL, 0, 3), &b)) {
        em_close(ctx);
        return fail("reduce_by_key");
    }
    int bad = em_batch_count(b) != 10;
    em_rec r;
    for (size_t i = 0; i < em_batch_count(b); i++)
        if (em_batch_get(b, i, &r) || r.vlen != 8 || em_i64_dec(r.val) != 1000) bad = 1;
    em_batch_free(b);
    int during = entries(argv[1]);
    em_close(ctx);

    if (bad) fprintf(stderr, "collide: wrong reduce_by_key result (want 10 keys of 1000 each)\n");
    if (calls) fprintf(stderr, "collide: the library called %d of the program's own functions\n", calls);
    if (during < 1) fprintf(stderr, "collide: no scratch directory in %s while the context was open\n", argv[1]);
    int left = entries(argv[1]);
    if (left) fprintf(stderr, "collide: em_close left %d entries in %s\n", left, argv[1]);
    return bad || calls || during < 1 || left ? 1 : 0;
}
