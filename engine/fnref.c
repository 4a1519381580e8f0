/*
 * fnref.c -- function references by image offset, symbol or builtin index
 * (see fnref.h), and the binary hash that guards them.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "ember.h"
#include "err.h"
#include "fnref.h"

static uintptr_t main_base;
static pthread_once_t base_once = PTHREAD_ONCE_INIT;

/* The main image is the one holding the program's entry point. */
static void find_main_base(void) {
    Dl_info info;
    void *entry = (void *)getauxval(AT_ENTRY);
    if (entry && dladdr(entry, &info) && info.dli_fbase) main_base = (uintptr_t)info.dli_fbase;
}

int fnref_make(void *fn, fnref *out) {
    Dl_info info;
    memset(out, 0, sizeof *out);
    if (!fn) return 0; /* FN_NONE */
    for (int i = 0; i < em__nbuiltins; i++)
        if (em__builtins[i] == fn) {
            out->kind = FN_BUILTIN;
            out->off = (uint64_t)i;
            return 0;
        }
    pthread_once(&base_once, find_main_base);
    if (!dladdr(fn, &info) || !info.dli_fbase)
        return em__seterr(EM_EFNREF, "function %p is in no loaded image", fn);
    if ((uintptr_t)info.dli_fbase == main_base) {
        out->kind = FN_OFFSET;
        out->off = (uint64_t)((uintptr_t)fn - main_base);
        return 0;
    }
    if (info.dli_sname && dlsym(RTLD_DEFAULT, info.dli_sname) == fn) {
        out->kind = FN_SYMBOL;
        out->sym = strdup(info.dli_sname);
        return out->sym ? 0 : EM_ENOMEM;
    }
    return em__seterr(EM_EFNREF,
                      "function %p in %s is neither in the main program nor an exported symbol",
                      fn, info.dli_fname ? info.dli_fname : "?");
}

void fnref_clear(fnref *f) {
    if (f->kind == FN_SYMBOL) free((void *)f->sym);
    memset(f, 0, sizeof *f);
}

void *fnref_resolve(const fnref *f) {
    switch (f->kind) {
    case FN_NONE: return NULL;
    case FN_BUILTIN:
        if (f->off < (uint64_t)em__nbuiltins) return em__builtins[f->off];
        break;
    case FN_OFFSET:
        pthread_once(&base_once, find_main_base);
        if (main_base) return (void *)(main_base + (uintptr_t)f->off);
        break;
    case FN_SYMBOL: {
        void *p = f->sym ? dlsym(RTLD_DEFAULT, f->sym) : NULL;
        if (p) return p;
        break;
    }
    }
    em__seterr(EM_EFNREF, "cannot resolve function reference (kind %d)", f->kind);
    return NULL;
}

static uint8_t bin_hash[32];
static pthread_once_t hash_once = PTHREAD_ONCE_INIT;

static void compute_hash(void) {
    crypto_generichash_state st;
    uint8_t buf[1 << 16];
    ssize_t n;
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (sodium_init() < 0 || fd < 0) {
        if (fd >= 0) close(fd);
        return; /* all-zero hash: still equal between identical processes */
    }
    crypto_generichash_init(&st, NULL, 0, sizeof bin_hash);
    while ((n = read(fd, buf, sizeof buf)) > 0) crypto_generichash_update(&st, buf, (size_t)n);
    crypto_generichash_final(&st, bin_hash, sizeof bin_hash);
    close(fd);
}

const uint8_t *fnref_binary_hash(void) {
    pthread_once(&hash_once, compute_hash);
    return bin_hash;
}
