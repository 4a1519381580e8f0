/*
 * fnref.h -- naming user functions on the wire.
 *
 * Executors run the driver's own binary, so a function in the main image is
 * named by its offset from the image's load base (found with dladdr) and the
 * binary's content hash travels with every task.  A function in a shared
 * library is named by its exported symbol (dlsym).  Functions of ember itself
 * that the engine passes as user functions (the helpers behind join,
 * distinct, count_by_key, ...) are named by their index in the builtin table,
 * so they work however libember was linked.  Anything else is refused when
 * the transformation is declared (EM_EFNREF).
 */
#ifndef EM_FNREF_H
#define EM_FNREF_H

#include <stdint.h>

enum { FN_NONE = 0, FN_OFFSET = 1, FN_SYMBOL = 2, FN_BUILTIN = 3 };

typedef struct fnref {
    uint8_t kind;
    uint64_t off;     /* FN_OFFSET: offset from the main image base; FN_BUILTIN: index */
    const char *sym;  /* FN_SYMBOL: symbol name (owned by whoever made the ref) */
} fnref;

/* Name fn.  0; EM_EFNREF (message says why) when fn cannot be named.  A
 * FN_SYMBOL ref's sym is malloc'd: free it with fnref_clear. */
int fnref_make(void *fn, fnref *out);
void fnref_clear(fnref *f);
/* The function a ref names in this process, or NULL (message set). */
void *fnref_resolve(const fnref *f);

/* The 32-byte BLAKE2b hash of this process's executable (computed once). */
const uint8_t *fnref_binary_hash(void);

/* Builtin table (engine/builtins.c). */
extern void *const em__builtins[];
extern const int em__nbuiltins;

#endif
