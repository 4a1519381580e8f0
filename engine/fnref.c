/*
 * fnref.c -- function references by image offset, symbol or builtin index
 * (see fnref.h), and the binary hash that guards them.
 *
 * Two images matter: the main program (the one holding the entry point) and
 * the one holding libember, which is the same image when libember was linked
 * statically.  Both are located once with dl_iterate_phdr, by address, and
 * remembered with the extent of their executable segments, so a decoded
 * offset that points outside them is refused instead of called.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "ember.h"
#include "err.h"
#include "fnref.h"

/* A loaded image: its load bias, the span of its executable PT_LOAD
 * segments (addresses), its GNU build id if it has one, and its file name as
 * the loader reports it ("" for the main program). */
typedef struct image {
    int found;
    const void *id;    /* its program headers: unique per loaded object */
    uintptr_t bias, text_lo, text_hi;
    const uint8_t *build_id;
    size_t build_id_len;
    char path[4096];
} image;

static image main_img, self_img;
static int self_is_main;
static pthread_once_t images_once = PTHREAD_ONCE_INIT;

typedef struct find {
    uintptr_t addr;
    image *img;
} find;

/* The NT_GNU_BUILD_ID note in a PT_NOTE segment, or NULL. */
static const uint8_t *build_id(uintptr_t p, size_t len, size_t align, size_t *idlen) {
    const uintptr_t end = p + len;
    if (align != 8) align = 4;
    while (end - p >= sizeof(ElfW(Nhdr))) {
        const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
        size_t name = (n->n_namesz + align - 1) & ~(align - 1);
        size_t desc = (n->n_descsz + align - 1) & ~(align - 1);
        if (name > end - p - sizeof *n || desc > end - p - sizeof *n - name) break;
        if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(n + 1, "GNU", 4)) {
            *idlen = n->n_descsz;
            return (const uint8_t *)(n + 1) + name;
        }
        p += sizeof *n + name + desc;
    }
    return NULL;
}

static int find_cb(struct dl_phdr_info *info, size_t size, void *data) {
    find *f = data;
    int hit = 0;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (f->addr >= start && f->addr - start < ph->p_memsz) hit = 1;
        if (ph->p_flags & PF_X) {
            if (start < lo) lo = start;
            if (start + ph->p_memsz > hi) hi = start + ph->p_memsz;
        }
    }
    if (!hit) return 0;
    f->img->found = 1;
    f->img->id = info->dlpi_phdr;
    f->img->bias = info->dlpi_addr;
    f->img->text_lo = lo;
    f->img->text_hi = hi;
    for (int i = 0; i < info->dlpi_phnum && !f->img->build_id; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE)
            f->img->build_id = build_id(info->dlpi_addr + ph->p_vaddr, ph->p_memsz, ph->p_align,
                                        &f->img->build_id_len);
    }
    snprintf(f->img->path, sizeof f->img->path, "%s", info->dlpi_name ? info->dlpi_name : "");
    return 1;
}

/* The image holding addr; 0 if none does. */
static int image_of(uintptr_t addr, image *out) {
    find f = {addr, out};
    memset(out, 0, sizeof *out);
    dl_iterate_phdr(find_cb, &f);
    return out->found;
}

/* The main image holds the program's entry point; libember's holds this
 * file's code. */
static void find_images(void) {
    uintptr_t entry = (uintptr_t)getauxval(AT_ENTRY);
    if (entry) image_of(entry, &main_img);
    image_of((uintptr_t)&find_images, &self_img);
    self_is_main = main_img.found && self_img.found && main_img.id == self_img.id;
}

int fnref_make(void *fn, fnref *out) {
    Dl_info info;
    image img;
    memset(out, 0, sizeof *out);
    if (!fn) return 0; /* FN_NONE */
    for (int i = 0; i < em__nbuiltins; i++)
        if (em__builtins[i] == fn) {
            out->kind = FN_BUILTIN;
            out->off = (uint64_t)i;
            return 0;
        }
    pthread_once(&images_once, find_images);
    if (!image_of((uintptr_t)fn, &img)) return em__seterr(EM_EFNREF, "function %p is in no loaded image", fn);
    if (main_img.found && img.id == main_img.id) {
        out->kind = FN_OFFSET;
        out->off = (uint64_t)((uintptr_t)fn - main_img.bias);
        return 0;
    }
    if (self_img.found && img.id == self_img.id) {
        out->kind = FN_EMBER;
        out->off = (uint64_t)((uintptr_t)fn - self_img.bias);
        return 0;
    }
    if (dladdr(fn, &info) && info.dli_sname && dlsym(RTLD_DEFAULT, info.dli_sname) == fn) {
        out->kind = FN_SYMBOL;
        out->sym = strdup(info.dli_sname);
        return out->sym ? 0 : EM_ENOMEM;
    }
    return em__seterr(EM_EFNREF,
                      "function %p in %s is neither in the main program nor an exported symbol",
                      fn, img.path[0] ? img.path : "?");
}

void fnref_clear(fnref *f) {
    if (f->kind == FN_SYMBOL) free((void *)f->sym);
    memset(f, 0, sizeof *f);
}

/* bias + off when that lands in the image's executable segments. */
static void *in_text(const image *img, uint64_t off) {
    if (!img->found || off > UINTPTR_MAX - img->bias) return NULL;
    uintptr_t p = img->bias + (uintptr_t)off;
    return p >= img->text_lo && p < img->text_hi ? (void *)p : NULL;
}

void *fnref_resolve(const fnref *f) {
    void *p = NULL;
    switch (f->kind) {
    case FN_NONE: return NULL;
    case FN_BUILTIN:
        if (f->off < (uint64_t)em__nbuiltins) return em__builtins[f->off];
        break;
    case FN_OFFSET:
        pthread_once(&images_once, find_images);
        if ((p = in_text(&main_img, f->off))) return p;
        break;
    case FN_EMBER:
        pthread_once(&images_once, find_images);
        if ((p = in_text(&self_img, f->off))) return p;
        break;
    case FN_SYMBOL:
        if (f->sym && (p = dlsym(RTLD_DEFAULT, f->sym))) return p;
        break;
    }
    em__seterr(EM_EFNREF, "cannot resolve function reference (kind %d, offset %llu)", f->kind,
               (unsigned long long)f->off);
    return NULL;
}

const char *fnref_library(void) {
    pthread_once(&images_once, find_images);
    return self_img.found && !self_is_main && self_img.path[0] ? self_img.path : NULL;
}

static uint8_t bin_hash[32];
static pthread_once_t hash_once = PTHREAD_ONCE_INIT;

/* Add a file's contents to the hash; -1 if it cannot be read. */
static int hash_file(crypto_generichash_state *st, const char *path) {
    uint8_t buf[1 << 16];
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    while ((n = read(fd, buf, sizeof buf)) > 0) crypto_generichash_update(st, buf, (size_t)n);
    close(fd);
    return n < 0 ? -1 : 0;
}

static void compute_hash(void) {
    crypto_generichash_state st;
    pthread_once(&images_once, find_images);
    if (sodium_init() < 0) return; /* all-zero hash: still equal between identical processes */
    crypto_generichash_init(&st, NULL, 0, sizeof bin_hash);
    if (hash_file(&st, "/proc/self/exe")) return;
    /* A shared libember: its build id (or else its file), which FN_EMBER
     * offsets depend on.  If neither can be had, the executable's hash alone
     * still guards FN_OFFSET. */
    if (!self_is_main && self_img.build_id)
        crypto_generichash_update(&st, self_img.build_id, self_img.build_id_len);
    else if (!self_is_main && self_img.path[0])
        hash_file(&st, self_img.path);
    crypto_generichash_final(&st, bin_hash, sizeof bin_hash);
}

const uint8_t *fnref_binary_hash(void) {
    pthread_once(&hash_once, compute_hash);
    return bin_hash;
}
