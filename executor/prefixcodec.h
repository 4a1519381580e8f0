/*
 * prefixcodec.h -- the prefix codec of shuffle blocks: front coding of a
 * block's records, each key and each value stored as the bytes after the
 * prefix it shares with the previous record's key (value).
 *
 * Records of a shuffle are mostly numbers in the 8-byte order-preserving
 * encodings (recfmt.h: em_i64_enc), or other fields of one width up to 8
 * bytes, which both sides handle as whole words; their high bytes a
 * block's keys and values share: 20M (int64, int64) pairs of 1M keys and values below 100
 * take 18 bytes a record as records and 8 front-coded.  lz4 shrinks them
 * as much but at a far higher cost a byte; this costs a compare
 * and a short copy per field, so the outputs local[N] keeps in memory
 * take less than half the memory for a few percent of a shuffle's time
 * (ember.shuffle.inMemoryOutput.codec, whose default it is).  It is the
 * front coding of LevelDB's and RocksDB's data blocks, applied to both
 * fields.
 *
 * A block's records (recfmt.h's batch encoding) become, record by record:
 *     varint(klen + 1)  varint(kshared)  key bytes [kshared, klen)
 *     varint(vlen)      varint(vshared)  value bytes [vshared, vlen)
 * or, for a plain record (no key), varint(0) then the value's part; kshared
 * (vshared) is the length of the prefix the key (value) shares with the
 * previous keyed record's key (the previous record's value), 0 for the
 * block's first.  Decoding rebuilds exactly the records' bytes.
 */
#ifndef EM_PREFIXCODEC_H
#define EM_PREFIXCODEC_H

#include <stddef.h>
#include <stdint.h>

/* Front-code the records raw[0, rlen) into out (cap bytes): the encoded
 * length, or 0 when raw is not a whole number of well-formed records or
 * the result would not fit in cap.  It never needs more than 2 * rlen
 * (the two shared lengths of a record are no longer than its two length
 * varints); a caller that gives cap = rlen learns whether it shrinks. */
size_t prefix_encode(const uint8_t *raw, size_t rlen, uint8_t *out, size_t cap);

/* Decode z[0, zlen) into exactly rlen bytes at out: 0, or -1 when z is not
 * the front coding of rlen bytes of records (a shared prefix longer than
 * the previous field, a field running past either end, bytes left over or
 * missing).  Safe against any input: it never reads past z + zlen nor
 * writes past out + rlen. */
int prefix_decode(const uint8_t *z, size_t zlen, uint8_t *out, size_t rlen);

#endif
