/*
 * emit.h -- where a user function's records go: the emitter (em_emit and
 * its kin write to one) and the partition iterator (em_iter_next reads
 * one).
 *
 * An emitter either pushes each record into the next pipe of a task's
 * chain (EMIT_PUSH and the rekeying modes: the executor's runner builds
 * those chains, executor/pipe.h), or encodes the one record or value a
 * combine function returns into a buffer (EMIT_VALUE, EMIT_RECORD: the
 * shuffle's combiners, and the driver folding partial results) or, when
 * it is at most 8 bytes, into the emitter's own word (EMIT_WORD: the
 * combiners of a table of words, executor/agg8.h).  em_emit
 * is the per-record hot path: it builds a view and calls the next pipe's
 * push directly; nothing is allocated.
 */
#ifndef EM_EMIT_H
#define EM_EMIT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "ember.h"

/* A pipe of a task's chain (executor/pipe.h).  An emitter needs only the
 * head every pipe starts with, its first member: its push, and the room it
 * may offer for the next record (cache_room).  A pointer to a pipe is a
 * pointer to its head (C11 6.7.2.1). */
typedef struct epipe epipe;
typedef struct epipe_head {
    int (*push)(epipe *p, const em_rec *r);
    int (*room)(epipe *p, size_t len, size_t keep, uint8_t **at); /* NULL: none */
} epipe_head;
static inline int epipe_push(epipe *p, const em_rec *r) { return ((const epipe_head *)p)->push(p, r); }

enum emit_mode {
    EMIT_PUSH,   /* records go to `to` */
    EMIT_REKEY,  /* plain records become (in->key, record) */
    EMIT_KEYBY,  /* a plain record becomes the key of (record, in->val) */
    EMIT_VALUE,  /* one plain value into buf (by-key combiners) */
    EMIT_RECORD, /* one record, encoded, into buf (fold, reduce) */
    EMIT_WORD,   /* one plain value: into word when at most 8 bytes, else
                  * into buf, which it replaces (a by-key combiner held in
                  * a table of words: its bytes are stored once, no buffer) */
};

struct em_emitter {
    enum emit_mode mode;
    epipe *to;
    const em_rec *in;
    ebuf *buf;
    int64_t count;
    size_t max_record;
    uint64_t word; /* EMIT_WORD: the value, zero padded */
    size_t wlen;   /* EMIT_WORD: its length (over 8: it is in buf) */
};

struct em_iter {
    const uint8_t *p, *end;
};

void emitter_init(em_emitter *e, enum emit_mode mode, epipe *to, size_t max_record);

/* Records of an encoded batch as an iterator. */
static inline void iter_init(em_iter *it, const uint8_t *p, size_t len) {
    it->p = p;
    it->end = p + len;
}

/* Call a user combine function outside a task (the driver folding the
 * partitions' partial results): out gets the one record it emits,
 * encoded.  0 or < 0 (message set). */
int emit_call_comb(em_comb_fn fn, const void *arg, const em_rec *a, const em_rec *b, size_t max_record,
                   ebuf *out);

/*
 * Laying a record out where the cache keeps it, so that keeping it copies
 * nothing.  A task that caches its output passes every record through the
 * cache tee (executor/ops.c), which appends the record's encoding to one
 * big buffer: the partition as the block store will hold it.  A function
 * that makes big records -- mllib's blocks, megabytes each -- would
 * otherwise build each in a buffer of its own and have the tee copy it, a
 * pass over the whole data set, and fault in that buffer's pages as well
 * as the cache's.  Here it may build the record at the end of the tee's
 * buffer itself, where the tee would have copied it; the tee then sees the
 * value already in place and only writes its length in front.
 *
 * If out pushes straight into a cache tee (the emitter of a map or flat_map
 * whose RDD is cached), sets *at to the address where the tee will encode
 * the next record it keeps, with room for len bytes from there.  The first
 * keep bytes at that address are carried over from the previous call's
 * room (the room may move as the buffer grows: use the new address).  A
 * plain record emitted next through out whose encoding -- tag 0, varint
 * length, value, as recfmt.h's rec_put places them -- the caller wrote at
 * that address, its value at *at + 1 + varint_len(vlen), is kept without
 * copying its value.  The address is valid until the next record is
 * emitted through out or cache_room is called again.  *at is NULL when out
 * feeds no cache tee directly: the caller lays its record out elsewhere and
 * emits it as usual.  Returns 0, or EM_ENOMEM (message set; *at NULL, the
 * records kept before unchanged).
 */
int cache_room(em_emitter *out, size_t len, size_t keep, uint8_t **at);

#endif
