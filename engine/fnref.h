/*
 * fnref.h -- naming user functions on the wire.
 *
 * Executors run the driver's own binary, so a function in the main image is
 * named by its offset from the image's load bias (FN_OFFSET: the address nm
 * prints for it), and the binary's content hash travels with every task.
 * Images are found with dl_iterate_phdr, which also works in a fully static
 * executable (where dladdr knows no image).  When libember is a shared
 * library, a function inside it (mllib's task functions) is named by its
 * offset from libember's own load bias (FN_EMBER), so nothing depends on
 * libember exporting it: the library exports only the em_* API.  When
 * libember is linked statically, its functions are part of the main image
 * and get FN_OFFSET like the program's own.  A function in another shared
 * library is named by its exported symbol (FN_SYMBOL, dladdr and dlsym;
 * never in a static executable).  Functions of ember itself that the engine
 * passes as user functions (the helpers behind join, distinct,
 * count_by_key, ...) are named by their index in the builtin table.
 * Anything else is refused when the transformation is declared (EM_EFNREF).
 * The binary hash covers the executable and, when libember is a shared
 * library, libember's file too, since FN_EMBER offsets are only meaningful
 * against the same library.
 */
#ifndef EM_FNREF_H
#define EM_FNREF_H

#include <stdint.h>

/* Wire values: never renumber.  FN_LAST is the largest valid kind (the
 * decoder refuses others). */
enum { FN_NONE = 0, FN_OFFSET = 1, FN_SYMBOL = 2, FN_BUILTIN = 3, FN_EMBER = 4, FN_LAST = FN_EMBER };

typedef struct fnref {
    uint8_t kind;
    uint64_t off;     /* FN_OFFSET: offset from the main image's load bias;
                         FN_EMBER: from libember's; FN_BUILTIN: table index */
    const char *sym;  /* FN_SYMBOL: symbol name (owned by whoever made the ref) */
} fnref;

/* Name fn.  0; EM_EFNREF (message says why) when fn cannot be named.  A
 * FN_SYMBOL ref's sym is malloc'd: free it with fnref_clear. */
int fnref_make(void *fn, fnref *out);
void fnref_clear(fnref *f);
/* The function a ref names in this process, or NULL (message set; also for
 * an offset outside the image's executable segments). */
void *fnref_resolve(const fnref *f);

/* The 32-byte BLAKE2b hash of this process's executable's contents, and of
 * libember's after them when it is a separate shared library (computed
 * once). */
const uint8_t *fnref_binary_hash(void);

/* libember's file name as the dynamic loader reports it when libember is a
 * shared library of the program (the name the program asks for, joined to
 * the directory the loader found it in: "build/libember.so.0"), or NULL
 * when libember is part of the main program.  Static storage. */
const char *fnref_library(void);

/* Builtin table (engine/builtins.c). */
extern void *const em__builtins[];
extern const int em__nbuiltins;

#endif
