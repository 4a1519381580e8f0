/*
 * ckpt_file.h -- the file format of a checkpointed RDD's partitions: one file
 * per partition, written by a task's checkpoint sink and read back as a
 * task's source.  Internal.
 *
 * A partition's file is DIR/part-NNNNN (DIR: the RDD's checkpoint
 * directory, which engine/checkpoint.c makes) in the cache's disk block
 * format (blockstore.h): "EMBLOCK1", version, CRC32 of the records, their
 * length, then the records.  A task writes DIR/.part-NNNNN.TASK.tmp, syncs
 * it and links it to its final name, so the file is complete or absent;
 * when two attempts of a partition finish (a retry, a speculative copy) the
 * first link wins and the other attempt removes its own file.
 */
#ifndef EM_CKPT_FILE_H
#define EM_CKPT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "pipe.h"

/* Make p (a sink pipe for SK_CHECKPOINT, p->sink->path the directory) a
 * checkpoint writer: opens its temporary file.  0 or EM_EIO naming the
 * file. */
int ckpt_sink_open(epipe *p);

/* A partition's file mapped for reading, its records checked. */
typedef struct ckpt_file {
    void *map;
    size_t maplen;
    const uint8_t *records;
    size_t len;
} ckpt_file;

/* Open and check the file at path, which must hold expect bytes of records:
 * its header, length, CRC and that the records parse.  0, or EM_ENOENT (a
 * lost file), EM_EIO, EM_ECORRUPT, each with a message naming the file.
 * Release with ckpt_file_close. */
int ckpt_file_open(const char *path, uint64_t expect, ckpt_file *f);
void ckpt_file_close(ckpt_file *f);

#endif
