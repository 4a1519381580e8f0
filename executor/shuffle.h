/*
 * shuffle.h -- writing map outputs and reading them on the reduce side.
 *
 * Files.  A map output is a data file and an index file, named, written
 * under temporary names and renamed into place (by sw_commit, data first,
 * index last) as shuffle_files.h says; their bytes are as shuffle_index.h
 * says.  A reader that finds the index finds a complete output.
 *
 * Memory.  A writer holds at most about mem_budget bytes: with map-side
 * combining, when the combine table outgrows it, its contents are written out
 * (the reduce side combines again, so partial combining is correct; when the
 * first 100,000 records show more than 0.8 distinct keys per record the
 * writer stops combining and passes records on as combiners); without,
 * records are buffered per partition and flushed to a temporary spill file as
 * compressed blocks, which sw_commit copies into the data file in partition
 * order.  A reader aggregates or sorts within mem_budget and spills sorted
 * runs to spill_dir past it, merging them at the end.
 */
#ifndef EM_SHUFFLE_H
#define EM_SHUFFLE_H

#include <stdint.h>

#include "agg.h"
#include "blockfile.h"
#include "ember.h"
#include "memout.h"
#include "taskdesc.h"

typedef struct shuffle_writer shuffle_writer;

typedef struct sw_opts {
    const char *dir;
    uint32_t shuffle_id, map_id;
    uint64_t attempt;           /* the attempt's task id: part of the names */
    int nparts;
    /* Reduce partition of a record, in [0, nparts). */
    int (*partition)(void *pctx, const em_rec *r);
    void *pctx;
    const agg_spec *combine; /* map-side combine, or NULL */
    size_t mem_budget;
    bf_codec codec;             /* of the blocks (zeros: stored uncompressed) */
    size_t block_bytes;
    /* local[N]: an output that never spilled and whose image fits is kept
     * here instead of written (memout.h); NULL: always files. */
    memout_store *mem;
    /* Whether the attempt was killed (runner.h's runner_cancelled), looked
     * at every SW_CHECK_EVERY records of a batch (sw_add_batch), as the
     * runner looks between the records a source hands on; NULL: never. */
    int (*cancelled)(void);
} sw_opts;
#define SW_CHECK_EVERY 1024

typedef struct sw_result {
    uint64_t *seg_bytes;   /* nparts sizes, malloc'd: caller frees */
    uint64_t bytes;        /* data file size */
    uint64_t records;      /* records written (after combining) */
    int64_t spills;
    int64_t write_ns;      /* spent in sw_commit: the last blocks coded,
                              the files written and renamed (or the output
                              kept in memory): Spark's shuffle write time */
} sw_result;
/* A writer's spills and its peak bytes (buffers and combine table) go to
 * the calling thread's attempt's metrics (curmetrics.h). */

/* NULL on failure (message set).  opts is copied; the agg_spec and pctx it
 * points to must outlive the writer. */
shuffle_writer *sw_open(const sw_opts *opts);
/* 0 or < 0 (user combine failure, I/O). */
int sw_add(shuffle_writer *w, const em_rec *r);
/* The records of a batch (recfmt.h's encoding, as a cached block holds
 * them), as sw_add each; records of an 8-byte key and an 8-byte value that
 * go to the partitions as they are (no combining, or combining given up
 * with a combiner that starts as the value) are copied there whole.  Adds
 * the records to *nrec when it returns 0 (NULL: not counted).  0,
 * EM_ECORRUPT for bytes that are not records, EM_ECANCELED when
 * opts.cancelled says so, or as sw_add. */
int sw_add_batch(shuffle_writer *w, const uint8_t *b, size_t len, uint64_t *nrec);
/* Write everything, rename into place (or keep it in opts.mem), free the
 * writer.  0 or < 0 (then nothing is left on disk or in memory). */
int sw_commit(shuffle_writer *w, sw_result *res);
/* Drop a writer and its temporary files. */
void sw_abort(shuffle_writer *w);

/* How a reduce task gets segments held by other executors (cluster mode,
 * shuffle_fetch.c).  begin starts fetching one and returns a handle, or NULL
 * with a message (a fetch failure).  end waits for the handle and sets *p
 * and *len to the segment's bytes in memory, as many as the server said
 * the segment holds, which the reader decodes where they lie (no file
 * between the socket and the decoder): 0, and the bytes stay until the
 * handle is dropped; or < 0 with a message, and the handle is gone:
 * EM_EFETCH naming the executor, EM_ECANCELED when the task was killed,
 * EM_ENOMEM.  An empty segment may set *p to NULL.  drop lets go of a
 * handle, ended (its bytes read) or not (the read ended early).
 *
 * A reader begins the fetches of the maps after the one it reads while the
 * segments begun and not yet read total at most in_flight bytes
 * (ember.reducer.maxSizeInFlight, as Spark's), counted by the tracker's
 * estimates of their sizes (sr_opts' seglens); one is always begun, however
 * large.  Segments are read in map order.
 *
 * With host_local (ember.shuffle.readHostLocalDisk, as Spark's
 * spark.shuffle.readHostLocalDisk) a segment whose location names this
 * executor's host -- another executor of the same machine, or its worker's
 * shuffle service -- is not fetched: its files are read where the location
 * says they are, as this executor's own are, with the same checks (a
 * missing or corrupt file is a fetch failure naming it).  Hosts are
 * compared as the locations spell them (the address each executor
 * advertised), so executors of other machines are always fetched from. */
typedef struct sr_fetcher {
    void *(*begin)(void *ctx, const char *loc, uint32_t shuffle_id, uint32_t map, uint64_t attempt, int reduce);
    int (*end)(void *ctx, void *h, const uint8_t **p, uint64_t *len);
    void (*drop)(void *ctx, void *h);
    void *ctx;
    uint64_t in_flight;
    int host_local;
    int lost_host;  /* after a fetch failure, check every output of the
                       failed one's host, not only its executor's
                       (ember.files.fetchFailure.unRegisterOutputOnHost) */
} sr_fetcher;

typedef struct sr_opts {
    uint32_t shuffle_id;
    int reduce_id;
    int nmaps;
    const char *const *dirs; /* nmaps directories holding the map outputs;
                                NULL entry: that map wrote nothing */
    const uint64_t *attempts; /* nmaps attempts whose outputs to read (NULL:
                                 all 0, unit tests of the format) */
    enum sr_mode mode;
    const agg_spec *agg;     /* SR_AGG */
    int map_side_combined;   /* SR_AGG: inputs are combiners (use merge_comb),
                                else values (create / merge_value) */
    int descending;          /* SR_SORT */
    size_t mem_budget;
    const char *spill_dir;
    bf_codec codec;          /* of spilled runs' blocks */
    size_t block_bytes;
    const uint64_t *seglens;  /* nmaps sizes of this reduce partition's
                                 segments as the map-output tracker keeps
                                 them: 0 exactly when the map wrote nothing
                                 there (the map is skipped), else an estimate
                                 (scheduler/mapout.h) that only sizes the
                                 fetches in flight; a segment's length comes
                                 from its index, its output in memory or the
                                 server's answer.  NULL: read every map (unit
                                 tests of the file format; tasks always pass
                                 them) */
    size_t max_record;        /* SR_GROUP, SR_COGROUP: a group is one record,
                                 so a key's group may not grow past this
                                 (ember.record.maxBytes; 0: no limit) */
    /* Cluster mode: a location "ember://HOST:PORT/DIR" names the executor
     * whose shuffle server holds the output.  When it starts with self
     * (this executor's "ember://HOST:PORT"), or names self's HOST and
     * fetch->host_local is set, DIR is read from disk; otherwise fetch
     * gets the segment from that server (several at once, see
     * sr_fetcher). */
    const char *self;
    const struct sr_fetcher *fetch;
    /* local[N]: outputs kept in memory (memout.h) are read from there,
     * the rest from their files.  NULL: files only. */
    memout_store *mem;
    int sides;               /* SR_COGROUP: inputs, 2 .. COGROUP_MAX_SIDES
                                (0 means 2) */
    /* SR_AGG, optional: called with the sink's context once before the
     * first record, with the number of keys to come when the table knows
     * it (nothing spilled) */
    void (*expect)(void *ctx, uint64_t n);
    /* SR_AGG: the seed of the 8-byte table's hash (agg8_seed); 0: the
     * reduce side's of shuffle_id.  A local aggregation (sr_local_open)
     * names its own, its input being perhaps another's walk. */
    uint64_t table_seed;
} sr_opts;

static inline int cogroup_sides(const sr_opts *o) {
    return o->sides >= 2 && o->sides <= COGROUP_MAX_SIDES ? o->sides : 2;
}

typedef struct sr_stats {
    uint64_t bytes_read, records_read;
    /* Segments fetched from another executor's shuffle server or a
     * worker's shuffle service, and segments of another location of this
     * host read from its files (sr_fetcher's host_local). */
    int64_t fetched, host_local;
    /* Spark's shuffle read metrics: segments read without a fetch (this
     * process's memory or a file of this host: its local blocks), the
     * bytes of the fetched ones (of bytes_read; the rest are local), and
     * the time spent waiting for fetched bytes. */
    int64_t local_blocks;
    uint64_t remote_bytes;
    int64_t fetch_wait_ns;
    int64_t spills;
    int failed_map;          /* on EM_EFETCH: the map whose output is bad */
    /* ... and the other outputs of the shuffle found lost with it: after
     * a fetch failure the reader checks every other output of the failed
     * one's executor (the same location; with fetch->lost_host, the same
     * host), so that the scheduler forgets all that are lost at once and
     * one map stage attempt recomputes them.  A check is a read of this
     * partition's segment alone: an output in memory is good; one on a
     * disk it reads has its index and data files, they pass their header
     * checks, and its segment decodes, every block's CRC good; a remote
     * one's segment is fetched and decoded the same way (a remote output
     * with nothing for this partition is taken as good).  malloc'd, the
     * caller's to free; NULL when none. */
    int *lost;
    int nlost;
} sr_stats;

/* Open map output (dir, shuffle_id, map, attempt) and find the segment
 * of reduce partition `reduce`, with every check of shuffle_index.h: the
 * descriptor (>= 0) with [*start, *end) set, or EM_EFETCH (message naming
 * the file) or EM_ENOMEM.  The reader and the shuffle server share it. */
int shuffle_locate(const char *dir, uint32_t shuffle_id, uint32_t map, uint64_t attempt, int reduce, uint64_t *start,
                   uint64_t *end);

/* A task's own records aggregated, grouped or sorted as a reduce task does
 * its fetched segments, with no shuffle: the narrow path of an aggregation
 * over an RDD already hash-partitioned into as many partitions (Spark's
 * partitioner awareness).  open takes opts' mode (SR_AGG, SR_GROUP or
 * SR_SORT), agg, map_side_combined, descending, mem_budget, spill_dir,
 * codec, block_bytes and max_record (opts is copied; agg must outlive it);
 * NULL with the message set.  block feeds encoded records (recfmt.h);
 * finish passes the result to sink (0, or < 0) and adds its spills. */
typedef struct sr_local sr_local;
sr_local *sr_local_open(const sr_opts *opts);
int sr_local_block(sr_local *l, const uint8_t *p, size_t len);
int sr_local_finish(sr_local *l, rec_sink_fn sink, void *sctx, int64_t *spills);
void sr_local_free(sr_local *l);

/* Read reduce partition reduce_id of every map output and pass the result to
 * sink.  Returns 0 (also when sink stopped early with EM_STOP), EM_EFETCH
 * when a map output is missing or corrupt (stats->failed_map names it, the
 * message names the file, and stats->lost lists the other outputs of its
 * executor found lost), or another < 0 code from agg or sink.  Removes its
 * spill files in every case. */
int shuffle_read(const sr_opts *opts, rec_sink_fn sink, void *sctx, sr_stats *stats);

#endif
