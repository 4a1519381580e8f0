/*
 * mpcheck.h -- check that bytes are exactly one msgpack object whose
 * containers announce no more elements than there are bytes left, before
 * msgpack-c unpacks them: msgpack-c allocates an array's or map's elements
 * when it reads the header, so an unchecked 5-byte header from a peer could
 * ask for 100 GB.  Every decoder of msgpack from outside the process calls
 * it first.
 */
#ifndef EM_MPCHECK_H
#define EM_MPCHECK_H

#include <stddef.h>
#include <stdint.h>

/* NULL when p[0, len) is one well-bounded msgpack object, else what is
 * wrong ("not one msgpack message"). */
const char *mp_precheck(const uint8_t *p, size_t len);
/* NULL when p[0, len) starts with one well-bounded msgpack object, whose
 * length goes to *used (the bytes after it are not looked at), else what
 * is wrong. */
const char *mp_next(const uint8_t *p, size_t len, size_t *used);

#endif
