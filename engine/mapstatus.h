/*
 * mapstatus.h -- a map task's segment sizes, compressed as Spark's
 * MapStatus compresses them: the form a shuffle-map task's result carries
 * and the driver's map-output tracker keeps (scheduler/mapout.h), so that
 * neither the result nor the tracker holds R exact sizes per map (a
 * shuffle of 10,000 maps by 10,000 partitions would otherwise carry 80 KB
 * per result and hold 800 MB on the driver).
 *
 * Two forms, little-endian, told apart by their first byte:
 *
 *   0, then a byte per segment (Spark's CompressedMapStatus): the size's
 *      logarithm base 1.1, rounded up (ms_compress_size).
 *   1, avg (u64), nhuge (u32), nempty (u32), the reduce ids of the huge
 *      segments (u32 each, ascending), their bytes, then, when
 *      0 < nempty < R, a bitmap of the empty segments (bit i of byte i/8)
 *      (Spark's HighlyCompressedMapStatus): a segment over the accurate
 *      threshold is huge and keeps its byte; the others that are not
 *      empty read as avg, the average of their sizes.
 *
 * Either way a size read back (ms_seg) is zero exactly when the map task
 * wrote nothing for that partition, and otherwise an estimate: within
 * about 10% of the size for a byte, saturating at 1.1^255 bytes (about
 * 33 GiB); the average for a segment neither empty nor huge.  Readers
 * take a segment's length from its index file, its in-memory output or
 * the shuffle server's answer; the zero still means "nothing to read".
 *
 * The bytes come from executors: ms_check validates them (length, order,
 * counts, the rule that a non-empty segment never reads as zero) before
 * anything reads them.
 */
#ifndef EM_MAPSTATUS_H
#define EM_MAPSTATUS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Spark's MapStatus.compressSize: 0 for 0, 1 for 1, else
 * min(255, ceil(log(size) / log(1.1))). */
uint8_t ms_compress_size(uint64_t size);
/* Spark's MapStatus.decompressSize: 0 for 0, else 1.1^c (truncated). */
uint64_t ms_decompress_size(uint8_t c);

/* Append the status of the nparts exact sizes segs to out: a byte per
 * segment when accurate is 0, else highly compressed with segments over
 * accurate bytes huge.  0, or EM_ENOMEM. */
int ms_encode(const uint64_t *segs, int nparts, uint64_t accurate, ebuf *out);
/* Whether the len bytes at b are a well-formed status of nparts segments:
 * 0, or -1 with *why (a static string) saying what is wrong. */
int ms_check(const uint8_t *b, size_t len, int nparts, const char **why);
/* Segment part's size in the checked status b of nparts segments (0 for a
 * part out of range). */
uint64_t ms_seg(const uint8_t *b, int nparts, int part);

#endif
