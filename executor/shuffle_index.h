/*
 * shuffle_index.h -- the framing of a map output: the header of its data
 * file and the checksummed index of segment offsets.
 *
 * A map output is two files (shuffle_files.h says how they are named and
 * committed).  The data file starts with a 16-byte header
 *     "EMSHDATA"  u32le version (1)  u32le nparts
 * followed by one run of blocks (blockfile.h) per reduce partition.  The
 * index file is
 *     "EMSHINDX"  u32le version (1)  u32le nparts
 *     (nparts + 1) u64le offsets      u32le crc32 of all the bytes before it
 * where segment r is [off[r], off[r+1]) of the data file.  A valid index has
 * exactly that size, the right magic, version and checksum, off[0] at the
 * end of the data header, offsets never decreasing, and off[nparts] equal to
 * the data file's size; the data header must name the same nparts.  The
 * map-output tracker's sizes are estimates (scheduler/mapout.h), so the
 * index's offsets are what a reader uses; the blocks' own CRCs
 * (blockfile.h) catch damaged bytes in what it reads.
 *
 * These functions only look at bytes: they are what the fuzz target
 * tests/fuzz/fuzz_shuffle_index.c drives.
 */
#ifndef EM_SHUFFLE_INDEX_H
#define EM_SHUFFLE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "taskdesc.h" /* SHUFFLE_MAX_PARTS */

#define SHUFFLE_VERSION 1
#define SHUFFLE_DATA_HEADER 16

/* Size of the index file of a map output with nparts partitions. */
static inline size_t shuffle_index_size(int nparts) { return 16 + 8 * ((size_t)nparts + 1) + 4; }

/* Fill the 16-byte data file header. */
void shuffle_data_header(uint8_t out[SHUFFLE_DATA_HEADER], int nparts);
/* Fill an index of shuffle_index_size(nparts) bytes from nparts + 1
 * offsets. */
void shuffle_index_encode(uint8_t *out, int nparts, const uint64_t *offs);

/* Check n bytes of an index file against the size of its data file
 * (everything above but the tracker's sizes).  0 with *nparts set, or
 * EM_ECORRUPT with a message naming path and what is wrong. */
int shuffle_index_check(const uint8_t *p, size_t n, uint64_t data_size, const char *path, int *nparts);
/* Offset i (0 <= i <= nparts) of a checked index. */
uint64_t shuffle_index_offset(const uint8_t *p, int i);
/* Check a data file header against the nparts of its index.  0 or
 * EM_ECORRUPT naming path. */
int shuffle_data_header_check(const uint8_t h[SHUFFLE_DATA_HEADER], int nparts, const char *path);

#endif
