/*
 * batch.h -- em_batch, the records an action hands the caller: encoded
 * records back to back, with an index built on first random access.
 */
#ifndef EM_BATCH_H
#define EM_BATCH_H

#include "buf.h"
#include "ember.h"

struct em_batch {
    uint8_t *p;
    size_t len, n;
    size_t *idx; /* offsets, built by em_batch_get */
};

/* A batch taking the bytes of b (n records).  NULL on ENOMEM (b freed). */
em_batch *batch_from(ebuf *b, size_t n);
/* Count the records of an encoded run; (size_t)-1 if malformed. */
size_t batch_count_recs(const uint8_t *p, size_t len);

#endif
