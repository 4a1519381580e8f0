/*
 * pipe.h -- the push pipeline inside a task.  Internal to executor/.
 *
 * A task's narrow operators form a chain of pipes ending in a sink.  Sources
 * push each record into the first epipe; each epipe calls its user function,
 * whose emitter pushes straight into the next epipe: no record is
 * materialized between map and filter, and nothing is allocated per record.
 * Pipes that need a whole partition (map_partitions, glom, a cache tee)
 * collect records in their buffer and act in end().
 *
 * push returns 0, EM_STOP (downstream wants no more: the source stops), or
 * a negative code with the message set.  end is called once per epipe after
 * its input is exhausted (or stopped); it does not end the next epipe.
 */
#ifndef EM_PIPE_H
#define EM_PIPE_H

#include "agg.h"
#include "blockstore.h"
#include "buf.h"
#include "ember.h"
#include "emit.h"
#include "runner.h"
#include "taskdesc.h"

typedef struct task_run task_run;

struct epipe {
    /* First: the emitter reaches a pipe through its head (emit.h): push,
     * and room (cache_room; NULL: none). */
    epipe_head h;
    /* Optional (NULL: record by record): take a whole batch of encoded
     * records at once, as a source that holds one (a cached block,
     * parallelized records) hands it over; for sinks that need no record
     * apart (count).  Adds the records it took to *nrec (the source's
     * input records).  Returns as push. */
    int (*push_batch)(epipe *p, const uint8_t *b, size_t len, uint64_t *nrec);
    /* Set by the runner on the pipe its source feeds when the batches that
     * source hands over stay valid until the pipe's end (a cached block
     * held for the whole chain), so the pipe may keep a pointer to one
     * instead of copying it (map_partitions over a cached partition). */
    int batches_live;
    const uint8_t *lent; /* that kept batch, lent_len bytes */
    size_t lent_len;
    /* Optional (NULL: nothing below wants it): about n records are coming,
     * told once before the first by a source that knows (an aggregation's
     * keys, a cached block's records), so that a table sized from it at
     * once need not grow.  Op pipes that pass one record on for each they
     * take forward it (pipe_expect_forward). */
    void (*expect)(epipe *p, uint64_t n);
    int (*end)(epipe *p);
    void (*free)(epipe *p);
    epipe *next;
    task_run *run;
    const plan_node *node;
    const plan_sink *sink;
    void *fn;
    const void *arg;
    em_emitter em;
    ebuf buf, buf2;
    uint64_t rng;
    int64_t n;
    int stopped;
    void *state; /* sink-specific */
};

/* Per-task state shared by the pipes. */
struct task_run {
    exec_env *env;
    task_desc *t;
    task_result *res;
    size_t max_record;
    const struct fault_rule *faults; /* ember.test.faults (faults.h) */
    int nfaults;
};

/* Fill an agg_spec whose callbacks run the aggdesc's user functions (and,
 * for plain values, whose user points at them). */
typedef struct agg_run {
    agg_user u;
    int rec_values; /* values are whole encoded records (aggregate) */
} agg_run;
int agg_run_init(agg_run *a, const aggdesc *d, size_t max_record, agg_spec *spec);

/* Narrow operator pipes (ops.c) and sinks (sinks.c).  NULL + message on
 * failure (e.g. an unresolvable function). */
epipe *op_pipe_new(task_run *run, const plan_node *n, epipe *next);
/* PN_COGROUP: the pipe its inputs' (key, value) records go into, grouped by
 * key at end(); cogroup_pipe_side names the side (the input) of the records
 * pushed next. */
epipe *cogroup_pipe_new(task_run *run, const plan_node *n, epipe *next);
void cogroup_pipe_side(epipe *p, int side);
epipe *sink_pipe_new(task_run *run, const plan_sink *s);
epipe *cache_tee_new(task_run *run, const plan_node *n, epipe *next);
/* After n's partition went into the block store: the block, as the store
 * holds it, joins the result's cached blocks (out of memory it is left
 * out: the UI's storage figures miss it, the task goes on). */
void run_note_cached(task_run *run, const plan_node *n);
/* The pipe that holds a paired operator's second input (in paired's
 * buf2) before its first streams through paired. */
epipe *paired_side_new(epipe *paired);
/* A zeroed pipe for node n feeding next.  NULL (message set) on ENOMEM. */
epipe *pipe_alloc(task_run *run, const plan_node *n, epipe *next);
void pipe_free(epipe *p);

/* Tell p that about n records are coming (pipe.h's expect). */
static inline void pipe_expect(epipe *p, uint64_t n) {
    if (p->expect) p->expect(p, n);
}
static inline void pipe_expect_forward(epipe *p, uint64_t n) { pipe_expect(p->next, n); }

/* splitmix64: the per-task random stream of sample and key sampling. */
static inline uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline double rng_double(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

#endif
