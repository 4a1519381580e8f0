/*
 * runner.c -- runs one task (see runner.h): decodes the description, checks
 * the binary hash, builds pipes for the plan tree and drives its sources,
 * then reports the sink's output, accumulator updates and counters.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "accum.h"
#include "batch.h"
#include "blockfile.h"
#include "ckpt_file.h"
#include "ctx.h"
#include "curmetrics.h"
#include "err.h"
#include "faults.h"
#include "fnref.h"
#include "hashjoin.h"
#include "pipe.h"
#include "recfmt.h"
#include "shuffle.h"
#include "shuffle_files.h"
#include "shuffle_index.h"
#include "srcdata.h"
#include "taskdesc.h"
#include "text_reader.h"

/* The attempt this thread runs: its kill flag, records since the last
 * look at it, and its result (for the counts of its segment fetches). */
static __thread task_ctl *cur_ctl;
static __thread unsigned since_check;
static __thread task_result *cur_res;

int runner_cancelled(void) { return cur_ctl && __atomic_load_n(&cur_ctl->cancel, __ATOMIC_RELAXED); }

void runner_count_fetch(int64_t retries, int64_t conns_dropped) {
    if (!cur_res) return;
    cur_res->fetch_retries += retries;
    cur_res->fetch_conns_dropped += conns_dropped;
}

int runner_killed(void) {
    if (!cur_ctl || !__atomic_load_n(&cur_ctl->cancel, __ATOMIC_RELAXED)) return 0;
    return em__seterr(EM_ECANCELED, "task killed");
}

/* Called for every record a source hands on: a look at the flag every
 * RUNNER_CHECK_EVERY records. */
static inline int check_kill(void) {
    if (++since_check < RUNNER_CHECK_EVERY) return 0;
    since_check = 0;
    return runner_killed();
}

static int to_pipe(void *c, const em_rec *r) {
    epipe *p = c;
    int rc = check_kill();
    return rc ? rc : p->h.push(p, r);
}

static int drive(task_run *run, const plan_node *n, epipe *down);

/* Hand the records of a batch on; *nrec counts those handed on (the
 * task's input records when a source's batch). */
static int drive_batch(const uint8_t *p, size_t len, epipe *down, uint64_t *nrec) {
    const uint8_t *end = p + len;
    em_rec r;
    if (down->push_batch) {
        int rc = runner_killed();
        return rc ? rc : down->push_batch(down, p, len, nrec);
    }
    uint64_t n = 0;
    int rc = 0;
    while (p < end) {
        size_t k = rec_get(p, end, &r);
        if (!k) {
            rc = em__seterr(EM_ECORRUPT, "malformed record in a batch");
            break;
        }
        if ((rc = check_kill())) break;
        n++;
        if ((rc = down->h.push(down, &r))) break;
        p += k;
    }
    *nrec += n;
    return rc;
}

/* Input metrics: bytes and records a source read. */
static void add_input(task_run *run, uint64_t bytes, uint64_t records) {
    run->res->m.in_bytes += (int64_t)bytes;
    run->res->m.in_records += (int64_t)records;
}

void run_note_cached(task_run *run, const plan_node *n) {
    task_result *r = run->res;
    cached_block b = {.rdd = n->rdd_id, .part = n->partition};
    if (bs_sizes(run->env->store, n->cache_key, n->rdd_id, n->partition, &b.mem, &b.disk)) return;
    for (uint32_t i = 0; i < r->nblocks; i++)
        if (r->blocks[i].rdd == b.rdd && r->blocks[i].part == b.part) return;
    cached_block *g = realloc(r->blocks, sizeof *g * (r->nblocks + 1));
    if (!g) return;
    r->blocks = g;
    r->blocks[r->nblocks++] = b;
}

/* A range's values are made, not read: input records, no bytes. */
static int drive_range(task_run *run, const plan_node *n, epipe *down) {
    uint8_t b[8];
    em_rec r = {NULL, 0, b, 8};
    int rc = 0;
    /* Counted, in unsigned arithmetic: the value after the last one may lie
     * past the int64 limits, and is never formed as a signed number. */
    uint64_t v = (uint64_t)n->start, i;
    for (i = 0; i < n->count; i++, v += (uint64_t)n->step) {
        em_i64_enc((int64_t)v, b);
        if ((rc = check_kill())) break;
        if ((rc = down->h.push(down, &r))) {
            i++;
            break;
        }
    }
    add_input(run, 0, i);
    return rc;
}

static void expect_pipe(void *ctx, uint64_t n) { pipe_expect(ctx, n); }

static int drive_shuffle(task_run *run, const plan_node *n, epipe *down) {
    agg_run ar;
    agg_spec spec;
    sr_opts o;
    sr_stats st;
    memset(&o, 0, sizeof o);
    memset(&st, 0, sizeof st);
    st.failed_map = -1;
    if (n->mode == SR_AGG) {
        int rc = agg_run_init(&ar, &n->agg, run->max_record, &spec);
        if (rc) return rc;
        o.agg = &spec;
    }
    o.shuffle_id = n->shuffle_id;
    o.reduce_id = n->partition;
    o.nmaps = n->nmaps;
    o.dirs = n->dirs;
    o.attempts = n->attempts;
    o.seglens = n->seglens;
    o.max_record = run->max_record;
    o.mode = (enum sr_mode)n->mode;
    o.map_side_combined = n->combined;
    if (o.mode == SR_COGROUP) o.sides = n->sides;
    else o.descending = n->descending;
    o.mem_budget = run->t->mem_budget;
    o.spill_dir = run->env->local_dir;
    o.codec = run->t->codec;
    o.block_bytes = run->t->block_bytes;
    o.self = run->env->self;
    o.fetch = run->env->fetch;
    o.mem = run->env->outputs;
    if (down->expect) o.expect = expect_pipe;
    int rc = shuffle_read(&o, to_pipe, down, &st);
    task_metrics *m = &run->res->m;
    m->sr_remote_blocks += st.fetched;
    m->sr_local_blocks += st.local_blocks;
    m->sr_remote_bytes += (int64_t)st.remote_bytes;
    m->sr_local_bytes += (int64_t)(st.bytes_read - st.remote_bytes);
    m->sr_records += (int64_t)st.records_read;
    m->sr_fetch_wait_ms += st.fetch_wait_ns / 1000000;
    run->res->spills += st.spills;
    run->res->segs_fetched += st.fetched;
    run->res->segs_host_local += st.host_local;
    if (rc == EM_EFETCH) {
        run->res->fetch_map = st.failed_map;
        run->res->fetch_shuffle = n->shuffle_id;
        free(run->res->lost_maps); /* a shuffle read earlier in the task */
        run->res->lost_maps = st.lost;
        run->res->nlost = (uint32_t)st.nlost;
        st.lost = NULL;
    }
    free(st.lost);
    return rc;
}

/* A parallelized partition (srcdata.h): this process's own bytes, or
 * fetched from the driver. */
static int drive_recs(task_run *run, const plan_node *n, epipe *down) {
    src_part sp;
    uint64_t k = 0;
    int rc;
    if (!n->off) {
        rc = drive_batch(n->data.p, n->data.len, down, &k);
        add_input(run, n->data.len, k);
        return rc;
    }
    if (!(rc = src_get(n->off, n->partition, n->len, &sp))) {
        rc = drive_batch(sp.p, sp.len, down, &k);
        add_input(run, sp.len, k);
    }
    src_part_release(&sp);
    return rc;
}

/* A cached block's records, read as input (Spark counts a cached
 * partition's bytes and records as the task's input). */
static int drive_block(task_run *run, const block *b, epipe *down) {
    uint64_t k = 0, bytes = 0;
    int rc = 0;
    if (down->expect) { /* a scan of the lengths, for a table to size */
        uint64_t recs = 0;
        for (int i = 0; i < b->n; i++) {
            size_t c = batch_count_recs(b->p[i], b->len[i]);
            if (c != (size_t)-1) recs += c;
        }
        pipe_expect(down, recs);
    }
    for (int i = 0; i < b->n && !rc; i++) {
        rc = drive_batch(b->p[i], b->len[i], down, &k);
        bytes += b->len[i];
    }
    add_input(run, bytes, k);
    return rc;
}

static void release_src(void *s) { src_release(s); }

/* A persisted parallelized partition: its bytes are already a batch, so
 * they become the block as they are (shared with the RDD in the driver's
 * process, the fetched copy in an executor), and the records are read from
 * the block. */
static int cache_recs(task_run *run, const plan_node *n, const plan_node *c, epipe *down) {
    blockstore *bs = run->env->store;
    src_part sp;
    int rc = src_get(c->off, c->partition, c->len, &sp);
    if (rc) return rc;
    if (sp.hold) rc = bs_put_shared(bs, n->cache_key, n->rdd_id, n->partition, n->level, sp.p, sp.len, release_src,
                                    sp.hold);
    else rc = bs_put(bs, n->cache_key, n->rdd_id, n->partition, n->level, &sp.own, &sp.len, 1);
    sp.hold = NULL; /* the store's now, whatever it returned */
    sp.own = NULL;
    if (rc) return rc;
    run_note_cached(run, n);
    block *b = bs_get(bs, n->cache_key, n->rdd_id, n->partition);
    if (!b) return drive_recs(run, c, down); /* a disk block that did not read back */
    rc = drive_block(run, b, down);
    bs_release(bs, b);
    return rc;
}

/* A checkpointed partition: its file, checked whole, then its records. */
static int drive_ckpt(task_run *run, const plan_node *n, epipe *down) {
    ckpt_file f;
    uint64_t k = 0;
    int rc = ckpt_file_open(n->path, n->len, &f);
    if (rc) return rc;
    rc = drive_batch(f.records, f.len, down, &k);
    add_input(run, f.len, k);
    ckpt_file_close(&f);
    return rc;
}

/* Where a chain of one-input nodes starts: a source node, a cache hit
 * (`hit`, at node n), or a CONCAT of several inputs. */
static int drive_leaf(task_run *run, const plan_node *n, block *hit, epipe *down) {
    switch (n->type) {
    case PN_RECS: return drive_recs(run, n, down);
    case PN_RANGE: return drive_range(run, n, down);
    case PN_TEXT: {
        text_split s = {(char *)n->path, n->off, n->len, n->gz};
        text_read_counts c;
        int rc = text_read_split_counts(&s, run->max_record, to_pipe, down, &c);
        run->res->input_bytes += c.disk_bytes;
        add_input(run, c.bytes, c.lines);
        return rc;
    }
    case PN_SHUFFLE: return drive_shuffle(run, n, down);
    case PN_CKPT: return drive_ckpt(run, n, down);
    case PN_CONCAT:
        /* Several inputs (coalesce): each is a chain of its own.  The
         * recursion is as deep as coalesces that each merge partitions are
         * nested, so at most as deep as the partitions are many. */
        for (int i = 0; i < n->nchild; i++) {
            int rc = drive(run, n->child[i], down);
            if (rc) return rc;
        }
        return 0;
    case PN_CACHED: {
        if (!hit) return cache_recs(run, n, n->child[0], down);
        run->res->cache_hits++;
        return drive_block(run, hit, down);
    }
    case PN_COGROUP: {
        /* Each input in turn: a narrow one computed here, a shuffled one
         * read from its shuffle; then the groups flow down.  Under a join
         * (down is bi_join) the partition is a hash join instead, its
         * build side read first (hashjoin.h). */
        int kind = hashjoin_kind(down, n), build = kind >= 0 ? hashjoin_build_side(n) : 0;
        epipe *p = kind >= 0 ? hashjoin_pipe_new(run, n, down, kind, build) : cogroup_pipe_new(run, n, down);
        int rc = p ? 0 : em__lasterr();
        for (int k = 0; k < n->nchild && !rc; k++) {
            int i = kind < 0 ? k : k == 0 ? build : 1 - build;
            if (kind < 0) cogroup_pipe_side(p, i);
            else if ((rc = hashjoin_pipe_side(p, i))) break;
            rc = drive(run, n->child[i], p);
        }
        if (rc >= 0 && p) {
            int rc2 = p->end(p);
            if (rc2 < 0) rc = rc2;
        }
        pipe_free(p);
        return rc;
    }
    case PN_PAIRED: {
        /* Two inputs (cartesian, zip): the second is read into the
         * operator's side first, then the first streams through it. */
        epipe *p = op_pipe_new(run, n, down), *side = p ? paired_side_new(p) : NULL;
        int rc = side ? drive(run, n->child[1], side) : em__lasterr();
        if (!rc) rc = drive(run, n->child[0], p);
        if (rc >= 0) {
            int rc2 = p->end(p);
            if (rc2 < 0) rc = rc2;
        }
        pipe_free(side);
        pipe_free(p);
        return rc;
    }
    }
    return em__seterr(EM_EPROTO, "unknown plan node %d", n->type);
}

/* The pipe that ends a pipeline segment below the top one: it keeps the
 * segment's output records, which the next segment up reads as its
 * source. */
static int push_keep(epipe *p, const em_rec *r) { return rec_append(&p->buf, r); }
static int push_keep_batch(epipe *p, const uint8_t *b, size_t len, uint64_t *nrec) {
    size_t n = batch_count_recs(b, len);
    if (n == (size_t)-1) return em__seterr(EM_ECORRUPT, "malformed record in a batch");
    *nrec += n;
    return ebuf_append(&p->buf, b, len) ? em__seterr(EM_ENOMEM, "out of memory") : 0;
}
static int end_keep(epipe *p) { return 0; }

/* A record pushed into a pipeline passes through every operator on the C
 * stack (each pipe calls the next, through the user's function and its
 * emitter).  A chain of more operators than this is cut into segments
 * that run one after the other, each segment's output kept in memory for
 * the next: the stack a record needs stays bounded (a lineage of 10,000
 * maps is 40 segments) at the cost of materializing the partition 1 in
 * PIPE_SEGMENT operators. */
#define PIPE_SEGMENT 256

/* Push the records of node n's partition into down: the chain of
 * one-input nodes below n (operators, cache tees) becomes pipes, found
 * by a loop, not by recursion.  Returns 0, EM_STOP or a negative code. */
static int drive(task_run *run, const plan_node *n, epipe *down) {
    const plan_node **chain = NULL;
    int len = 0, cap = 0, rc = 0;
    block *hit = NULL;
    blockstore *bs = run->env->store;
    const plan_node *leaf = n;
    for (;;) {
        if (leaf->type == PN_CONCAT && leaf->nchild == 1) {
            leaf = leaf->child[0]; /* one input: nothing to do */
            continue;
        }
        if (leaf->type == PN_CACHED) {
            if ((hit = bs_get(bs, leaf->cache_key, leaf->rdd_id, leaf->partition))) break;
            if (leaf->child[0]->type == PN_RECS && leaf->child[0]->off) break; /* cache_recs */
        } else if (leaf->type != PN_OP) {
            break;
        }
        if (len == cap) {
            cap = cap ? cap * 2 : 16;
            const plan_node **c = realloc(chain, sizeof *c * (size_t)cap);
            if (!c) {
                free(chain);
                if (hit) bs_release(bs, hit);
                return em__seterr(EM_ENOMEM, "out of memory");
            }
            chain = c;
        }
        chain[len++] = leaf;
        leaf = leaf->child[0];
    }
    /* chain[0] is the top node; the segments run from the bottom up. */
    epipe *pipes[PIPE_SEGMENT];
    ebuf in = EBUF_INIT;
    int have_in = 0;
    for (int hi = len;;) {
        int lo = hi > PIPE_SEGMENT ? hi - PIPE_SEGMENT : 0, np = 0;
        epipe keep, *next = down;
        if (lo > 0) {
            memset(&keep, 0, sizeof keep);
            keep.run = run;
            keep.h.push = push_keep;
            keep.push_batch = push_keep_batch;
            keep.end = end_keep;
            next = &keep;
        }
        for (int i = lo; i < hi && !rc; i++) {
            epipe *p = chain[i]->type == PN_OP ? op_pipe_new(run, chain[i], next) : cache_tee_new(run, chain[i], next);
            if (!p) rc = em__lasterr();
            else next = pipes[np++] = p;
        }
        /* The bottom pipe, made here, ends before in is freed and hit
         * released: their batches outlive it (not those of the other
         * sources, freed as drive_leaf returns). */
        if (!rc && np) next->batches_live = have_in || (leaf->type == PN_CACHED && hit);
        uint64_t passed = 0; /* a segment's input: not the task's */
        if (!rc) rc = have_in ? drive_batch(in.p, in.len, next, &passed) : drive_leaf(run, leaf, hit, next);
        /* Ends from the bottom up, as each pipe's input is exhausted. */
        for (int i = np; i-- > 0;) {
            epipe *p = pipes[i];
            if (rc >= 0) {
                int rc2 = p->end(p);
                if (rc2 < 0) rc = rc2;
                else if (chain[lo + i]->type == PN_CACHED && p->stopped) rc = EM_STOP;
            }
            pipe_free(p);
        }
        ebuf_free(&in);
        if (lo == 0 || rc < 0) {
            if (lo > 0) ebuf_free(&keep.buf);
            break;
        }
        in = keep.buf; /* the next segment's source */
        have_in = 1;
        hi = lo;
    }
    ebuf_free(&in);
    if (hit) bs_release(bs, hit);
    free(chain);
    return rc;
}

/* Sleep an injected delay in 1 ms steps, watching the kill flag.  0, or
 * EM_ECANCELED once killed. */
static int injected_delay(int64_t ms) {
    for (int64_t i = 0; ms == 0 || i < ms; i++) {
        int rc = runner_killed();
        if (rc) return rc;
        struct timespec one = {0, 1000000L};
        nanosleep(&one, NULL);
    }
    return 0;
}

/* Flip a byte of the first block's compressed bytes in the data file a
 * shuffle map attempt just wrote (after the data header and the block
 * header), so that readers see a CRC mismatch. */
static int injected_corruption(const exec_env *env, uint32_t shuffle_id, uint32_t map, uint64_t attempt) {
    char path[4096];
    uint8_t c;
    const char *dir = env->shuffle_dir ? env->shuffle_dir : env->local_dir;
    if (memout_corrupt(env->outputs, shuffle_id, map, attempt, BF_HEADER)) return 0;
    shuffle_data_path(path, sizeof path, dir, shuffle_id, map, attempt);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    off_t at = SHUFFLE_DATA_HEADER + BF_HEADER;
    int ok = fd >= 0 && pread(fd, &c, 1, at) == 1;
    if (ok) {
        c ^= 0x5a;
        ok = pwrite(fd, &c, 1, at) == 1;
    }
    if (fd >= 0) close(fd);
    return ok ? 0 : em__seterr(EM_EIO, "ember.test.faults: cannot corrupt %s (no block in it?)", path);
}

/* The faults of t that strike before it runs, each counted in
 * res->faults_fired as it takes effect (a hold or a delay as it starts,
 * killed in it or not): 0, or the failure. */
static int faults_before(const task_desc *t, const fault_rule *rules, int n, task_result *res) {
    const fault_rule *r = faults_match(rules, n, FAULT_HOLD, t->stage_id, t->partition, t->attempt);
    int rc = 0;
    if (r) {
        fault_hold_ctx h = {t->faults_dir, t->stage_id, t->attempt, t->partition, runner_killed};
        res->faults_fired++;
        rc = faults_hold(r, &h);
    }
    r = rc ? NULL : faults_match(rules, n, FAULT_DELAY, t->stage_id, t->partition, t->attempt);
    if (r) {
        res->faults_fired++;
        rc = injected_delay(r->ms);
    }
    if (!rc && faults_match(rules, n, FAULT_FAIL, t->stage_id, t->partition, t->attempt)) {
        res->faults_fired++;
        rc = em__seterr(EM_EUSER, "injected failure (ember.test.faults): stage %u partition %d attempt %u",
                        t->stage_id, t->partition, t->attempt);
    }
    return rc;
}

/* The attempt's times, from its start (t0), the end of decoding its
 * description (t1) and now (returned): Spark's deserialize time, run time
 * and their CPU times (the attempt's, tm_cpu_end, shared between the two
 * in proportion to their wall times: the thread's CPU clock is not read
 * between them); and the result's size. */
static int64_t end_metrics(task_metrics *m, int64_t t0, int64_t t1, size_t result_len) {
    int64_t t2 = tm_now_ns(), cpu = tm_cpu_end(t0, t2), deser = t1 - t0;
    if (cpu != t2 - t0) deser = t2 > t0 ? (int64_t)((double)cpu * (double)deser / (double)(t2 - t0)) : 0;
    m->deser_ms = (t1 - t0) / 1000000;
    m->deser_cpu_ns = deser;
    m->run_ms = (t2 - t1) / 1000000;
    m->cpu_ns = cpu - deser;
    m->result_size = (int64_t)result_len;
    return t2;
}

void runner_run(exec_env *env, uint8_t *desc, size_t len, task_result *res, task_ctl *ctl) {
    task_desc *t = NULL;
    task_run run;
    epipe *sink = NULL;
    fault_rule rules[FAULTS_MAX];
    int nrules = 0, rc;

    int64_t t0 = ctl && ctl->start_ns ? ctl->start_ns : tm_now_ns(), t1;
    memset(res, 0, sizeof *res);
    res->fetch_map = -1;
    em__clearerr(); /* a message left by an earlier task must not name this one's failure */
    cur_ctl = ctl;
    cur_res = res;
    cur_task_metrics = &res->m;
    since_check = 0;
    ctx_set_in_task(1);
    tm_cpu_begin(t0);
    rc = taskdesc_decode(desc, len, &t);
    t1 = tm_now_ns();
    if (rc) goto done;
    res->task_id = t->task_id;
    if (memcmp(t->binhash, fnref_binary_hash(), 32) != 0) {
        rc = em__seterr(EM_EPROTO, "task %llu was built for another binary (hash mismatch)",
                        (unsigned long long)t->task_id);
        goto done;
    }
    if (t->faults) {
        char why[160];
        if ((nrules = faults_parse(t->faults, rules, why, sizeof why)) < 0) {
            rc = em__seterr(EM_EPROTO, "task description: bad fault spec: %s", why);
            goto done;
        }
        if ((rc = faults_before(t, rules, nrules, res)) != 0) goto done;
    }
    run.env = env;
    run.t = t;
    run.res = res;
    run.max_record = t->max_record ? (size_t)t->max_record : (size_t)64 << 20;
    run.faults = rules;
    run.nfaults = nrules;
    accum_task_begin(t->partition);
    if (!(sink = sink_pipe_new(&run, &t->sink))) {
        rc = em__lasterr();
    } else {
        rc = drive(&run, t->root, sink);
        if (rc >= 0) rc = sink->end(sink);
    }
    pipe_free(sink);
    if (accum_task_end(&res->accs, &res->naccs) < 0 && rc >= 0) rc = EM_ENOMEM;
    if (rc >= 0 && t->sink.kind == SK_SHUFFLE &&
        faults_match(rules, nrules, FAULT_CORRUPT, t->stage_id, t->partition, t->attempt) &&
        (rc = injected_corruption(env, t->sink.shuffle_id, (uint32_t)t->partition, t->task_id)) == 0)
        res->faults_fired++;
    if (rc >= 0 && runner_killed()) rc = EM_ECANCELED; /* a kill that came too late to stop it still wins */
    const fault_rule *hold_end = rc >= 0 ? faults_match(rules, nrules, FAULT_HOLD_END, t->stage_id, t->partition,
                                                        t->attempt)
                                         : NULL;
    if (hold_end) { /* its success reported late, whatever kill came meanwhile */
        fault_hold_ctx h = {t->faults_dir, t->stage_id, t->attempt, t->partition, NULL};
        res->faults_fired++;
        int hrc = faults_hold(hold_end, &h);
        if (hrc) rc = hrc;
    }
done:
    if (rc < 0) {
        res->status = rc;
        em__geterr(res->errmsg, sizeof res->errmsg);
        if (!res->errmsg[0]) /* a function failed without em_fail */
            snprintf(res->errmsg, sizeof res->errmsg, "a function returned %d (%s)", rc, em_strerror(rc));
        free(res->data);
        res->data = NULL;
        res->len = 0;
        free(res->accs); /* a failed attempt's additions do not count */
        res->accs = NULL;
        res->naccs = 0;
    }
    taskdesc_free(t);
    int64_t t2 = end_metrics(&res->m, t0, t1, res->len);
    if (ctl) ctl->end_ns = t2;
    cur_ctl = NULL;
    cur_res = NULL;
    cur_task_metrics = NULL;
    ctx_set_in_task(0);
}
