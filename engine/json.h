/*
 * json.h -- JSON text (RFC 8259): a writer that cannot produce invalid
 * JSON, and a bounded parser of one value into a tree.  Internal to ember.
 *
 * The writer appends to an ebuf.  It keeps a small nesting stack, so it
 * places commas and colons itself and refuses a call that would make the
 * text invalid (a value in an object without its key, a key in an array,
 * an end that does not match its begin, a second top-level value).
 * Strings are escaped: the quote, the backslash and every control
 * character (\b \f \n \r \t in their short forms, the others as \u00XX);
 * valid UTF-8 passes through and each byte of an invalid sequence becomes
 * U+FFFD.  Doubles are written in the shortest "%.15g".."%.17g" form that
 * reads back to the same bits, with ".0" added when that form would read
 * as an integer; a non-finite double is written as null.
 *
 * The parser reads exactly one value from p[0, len), with optional
 * whitespace around it, into a json_doc: one array of nodes and one pool
 * of decoded strings, reused from call to call (json_doc_reset keeps the
 * memory).  It trusts nothing: it never reads past len, and it refuses
 * malformed text (bad syntax, raw control characters or invalid UTF-8 in a
 * string, a bad escape, a lone surrogate, leading zeros, "1.", "-", a
 * number whose magnitude overflows a double, anything but whitespace after
 * the value) and text past the caller's limits (depth, nodes, bytes), all
 * with EM_ECORRUPT and a message naming the byte offset ("json: bad escape
 * at byte 17").  Integers that fit an int64 are kept exact; other numbers
 * are doubles (strtod in the C locale, which ember never changes).
 */
#ifndef EM_JSON_H
#define EM_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* The deepest nesting either side handles: the writer's stack, and the
 * cap on a parser's max_depth (the parser recurses once per level). */
#define JSON_DEPTH_MAX 256

/* ---------------------------------------------------------------- writer */

typedef struct json_writer {
    ebuf *out;
    int err;                        /* first failure, sticky; 0 while fine */
    int depth;                      /* open containers */
    bool done;                      /* the top-level value is complete */
    uint8_t st[JSON_DEPTH_MAX];     /* per open container: JW_* flags */
} json_writer;

/* Start writing one JSON value at the end of out (which the caller owns
 * and frees; the writer only appends). */
void json_w_init(json_writer *w, ebuf *out);

/* Each call below appends one piece and returns 0, or the writer's error:
 * EM_ENOMEM (out keeps what it had before the failing call), or EM_EINVAL
 * for a call that would make the text invalid, with a message naming it.
 * The first error is sticky: every later call returns it and writes
 * nothing. */
int json_w_begin_object(json_writer *w);
int json_w_end_object(json_writer *w);
int json_w_begin_array(json_writer *w);
int json_w_end_array(json_writer *w);
/* A member's key; the next call writes its value.  The NUL-terminated
 * form, and one of len bytes (which may hold NULs). */
int json_w_key(json_writer *w, const char *k);
int json_w_keyn(json_writer *w, const void *k, size_t len);
/* A key that needs no escaping (printable ASCII without '"' or '\\': a
 * name the program spells, never data), written as it is; the same
 * output as json_w_key for such a key, without scanning it. */
int json_w_key_plain(json_writer *w, const char *k);
int json_w_str(json_writer *w, const char *s);
int json_w_strn(json_writer *w, const void *s, size_t len);
int json_w_i64(json_writer *w, int64_t v);
int json_w_u64(json_writer *w, uint64_t v);
int json_w_f64(json_writer *w, double v);
int json_w_bool(json_writer *w, bool v);
int json_w_null(json_writer *w);
/* 0 when exactly one whole value has been written, else the sticky error,
 * or EM_EINVAL when containers are still open or nothing was written. */
int json_w_finish(json_writer *w);

/* ---------------------------------------------------------------- parser */

typedef enum json_type {
    JSON_NULL = 1,
    JSON_BOOL,
    JSON_INT,    /* an integer that fits int64 */
    JSON_DOUBLE, /* any other number */
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT,
} json_type;

/* One value.  A container's children follow it in the node array (the
 * first at its index + 1), linked by `next`; an object's children carry
 * their keys.  Read nodes through the helpers below. */
typedef struct json_node {
    uint8_t type;     /* json_type */
    bool b;           /* JSON_BOOL */
    uint32_t next;    /* index of the next sibling, 0 for none */
    uint32_t n;       /* JSON_ARRAY, JSON_OBJECT: children */
    uint32_t key_off; /* a member of an object: its key in the pool */
    uint32_t key_len;
    union {
        int64_t i;                       /* JSON_INT */
        double d;                        /* JSON_DOUBLE */
        struct { uint32_t off, len; } s; /* JSON_STRING: in the pool */
    } v;
} json_node;

typedef struct json_doc {
    json_node *nodes; /* nodes[0] is the root after a successful parse */
    size_t n, cap;
    char *pool;       /* decoded strings, each followed by a NUL */
    size_t pool_len, pool_cap;
} json_doc;

#define JSON_DOC_INIT {NULL, 0, 0, NULL, 0, 0}

/* Limits of one parse; a field at 0 takes its default. */
typedef struct json_limits {
    uint32_t max_depth; /* nesting of arrays and objects: 64, at most JSON_DEPTH_MAX */
    uint32_t max_nodes; /* values in the document: 1 << 20 */
    size_t max_bytes;   /* len of the text: 16 MiB, at most 1 GiB */
} json_limits;

#define JSON_DEFAULT_DEPTH 64
#define JSON_DEFAULT_NODES ((uint32_t)1 << 20)
#define JSON_DEFAULT_BYTES ((size_t)16 << 20)
#define JSON_BYTES_MAX ((size_t)1 << 30)

/* Parse the one JSON value in p[0, len) into out, replacing what out held
 * (out's memory is reused and grown as needed; lim NULL takes the
 * defaults).  Returns 0; EM_ECORRUPT for malformed text or text past a
 * limit, with a message naming the byte offset; or EM_ENOMEM.  On failure
 * out holds no document (json_root gives NULL). */
int json_parse(const uint8_t *p, size_t len, const json_limits *lim, json_doc *out);
/* Forget the document, keeping the memory for the next parse. */
void json_doc_reset(json_doc *d);
/* Release the memory; d becomes empty (JSON_DOC_INIT) and reusable. */
void json_doc_free(json_doc *d);

/* The root value, NULL when d holds no document. */
const json_node *json_root(const json_doc *d);
/* A container's first child and a child's next sibling, NULL at the end
 * (and for a node that is not a container). */
const json_node *json_first(const json_doc *d, const json_node *n);
const json_node *json_next(const json_doc *d, const json_node *n);
/* The key of an object's member (child of an object), with its length:
 * NUL-terminated, may hold NULs.  "" for a node that is not a member. */
const char *json_key(const json_doc *d, const json_node *n, size_t *len);

/* The member of object `obj` named key (the first, if the text repeats
 * it); NULL when obj is NULL or not an object, or has no such member. */
const json_node *json_get(const json_doc *d, const json_node *obj, const char *key);
/* Element i of array `arr`; NULL when arr is NULL, not an array, or
 * shorter. */
const json_node *json_at(const json_doc *d, const json_node *arr, size_t i);

/* "Present and of this type": each returns true and sets *v when n is not
 * NULL and holds that type, else false and leaves *v unchanged.
 * json_as_f64 takes integers too (converted); json_as_i64 only integers
 * kept exact.  A string is NUL-terminated in the pool (it may hold NULs:
 * len says its length; len may be NULL), valid while d is not reset. */
bool json_as_i64(const json_node *n, int64_t *v);
bool json_as_f64(const json_node *n, double *v);
bool json_as_bool(const json_node *n, bool *v);
bool json_as_str(const json_doc *d, const json_node *n, const char **v, size_t *len);
bool json_is_null(const json_node *n);

/* Write value n of d (and everything under it) with w, as json_w_* would;
 * the writer's return convention. */
int json_w_node(json_writer *w, const json_doc *d, const json_node *n);

#endif
