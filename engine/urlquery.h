/*
 * urlquery.h -- reading a URL's query string (the raw text after '?' that
 * httpd.h's http_req keeps) and percent-encoding a value for a link.  A
 * query is name=value pairs split by '&'; names and values are
 * percent-decoded, '+' is a space (HTML forms' encoding).
 */
#ifndef EM_URLQUERY_H
#define EM_URLQUERY_H

#include <stddef.h>

#include "buf.h"

/* The value of the first parameter named name in q (qlen bytes), decoded
 * into out (cap bytes, NUL-terminated).  1 when found; 0 when absent;
 * -1 when the first such parameter's value does not decode (a '%' not
 * followed by two hex digits, a decoded NUL) or does not fit in cap - 1
 * bytes.  A parameter without '=' has the empty value. */
int urlq_get(const char *q, size_t qlen, const char *name, char *out, size_t cap);
/* A path segment s[0, n) percent-decoded into out (cap bytes,
 * NUL-terminated; '+' stays '+').  Its length, or -1 when an escape is
 * bad, decodes to NUL, or the result does not fit in cap - 1 bytes. */
long urlq_decode_segment(const char *s, size_t n, char *out, size_t cap);
/* s percent-encoded for a query value or a path segment (all but
 * A-Z a-z 0-9 - _ . ~ encoded), appended to b.  0 or EM_ENOMEM. */
int urlq_encode(ebuf *b, const char *s);

#endif
