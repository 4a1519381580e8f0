/*
 * shuffle_files.h -- the names and places of a shuffle's files, each made
 * by one function here: a map output's data and index files, their
 * temporary names, a writer's spill file, the directory a worker's shuffle
 * service keeps an application's outputs in, and the directory a map
 * output's location names; and the removal of map outputs.
 *
 * Attempt a (its task id) of map task m of shuffle s writes
 * <dir>/shuffle_<s>_<m>_<a>.data, a header and then one run of blocks
 * (blockfile.h) per reduce partition back to back, and
 * <dir>/shuffle_<s>_<m>_<a>.index, a checksummed table of segment offsets
 * (format and checks in shuffle_index.h).  Names carry the attempt, so two
 * attempts of one map task (a retry, a speculative copy) never write the
 * same file: the scheduler registers one and deletes the others.  Both are
 * written under temporary names (<final>.tmp-<pid>-<seq>) and renamed into
 * place by sw_commit (shuffle.h; data first, index last), so a reader that
 * finds the index finds a complete output.  A writer's spill file is
 * <dir>/shuffle_<s>_<m>_<a>.spill-<pid>-XXXXXX, unlinked as soon as it is
 * made.
 */
#ifndef EM_SHUFFLE_FILES_H
#define EM_SHUFFLE_FILES_H

#include <stddef.h>
#include <stdint.h>

/* Room for any path of a shuffle file: a writer's dir is at most
 * SHUFFLE_PATH - 100 bytes (sw_open). */
#define SHUFFLE_PATH 1024

/* The path of a map output's data file, or of its index file, into buf (len
 * bytes).  An overlong dir gives an empty path, which then fails to open
 * rather than naming some other file. */
void shuffle_data_path(char *buf, size_t len, const char *dir, uint32_t shuffle_id, uint32_t map_id,
                       uint64_t attempt);
void shuffle_index_path(char *buf, size_t len, const char *dir, uint32_t shuffle_id, uint32_t map_id,
                        uint64_t attempt);

/* The temporary name of final (a data or index path) for the writer seq of
 * process pid, into buf: snprintf's answer (>= len when it did not fit). */
int shuffle_tmp_path(char *buf, size_t len, const char *final, int pid, unsigned seq);

/* The mkostemp template of a map output writer's spill file in dir, for
 * process pid, into buf.  0, or -1 when it does not fit (no message set). */
int shuffle_spill_template(char *buf, size_t len, const char *dir, uint32_t shuffle_id, uint32_t map_id,
                           uint64_t attempt, int pid);

/* The directory a worker whose work directory is work_dir keeps
 * application app's map outputs in, which its shuffle service serves
 * (work_dir/app/shuffle), into buf. */
void shuffle_service_dir(char *buf, size_t len, const char *work_dir, const char *app);

/* A location's directory: past "ember://HOST:PORT" for a cluster location,
 * else loc itself. */
const char *shuffle_loc_dir(const char *loc);

/* Unlink every map output file of a shuffle in dir (any map, any attempt),
 * index files first. */
void shuffle_remove(const char *dir, uint32_t shuffle_id);
/* Unlink the two files of one attempt's map output, index first. */
void shuffle_remove_output(const char *dir, uint32_t shuffle_id, uint32_t map_id, uint64_t attempt);

#endif
