/*
 * test_taskmetrics.c -- task metrics (engine/taskmetrics.h) as the runner
 * measures them and as they travel: a result with every metric set
 * survives the wire; a negative or wrongly typed metric is refused; tasks
 * run through runner_run report their input (text splits summing to the
 * file, parallelized records, a cached block, a range), their shuffle
 * write and read (records and bytes that match, blocks), spills and peak
 * memory under a small budget, their result size, and run and CPU times
 * that agree with the work done.
 */
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../test.h"
#include "blockstore.h"
#include "buf.h"
#include "fnref.h"
#include "recfmt.h"
#include "runner.h"
#include "mapstatus.h"
#include "taskdesc.h"
#include "taskresult.h"

/* ------------------------------------------------------------------ wire */

/* Every metric set to a distinct value, the largest possible among them:
 * all come back. */
TEST(taskmetrics_wire_round_trip) {
    task_result r, back;
    memset(&r, 0, sizeof r);
    r.status = 0;
    r.fetch_map = -1;
    int64_t *m = (int64_t *)&r.m;
    for (int i = 0; i < TASK_METRICS_N; i++) m[i] = (int64_t)(i + 1) * 1000003 + (int64_t)i * i * i * 977;
    r.m.cpu_ns = INT64_MAX;
    r.m.sr_fetch_wait_ms = 1;
    cached_block blocks[2] = {{.rdd = 3, .part = 0, .mem = 4096}, {.rdd = INT32_MAX, .part = 7, .disk = INT64_MAX}};
    r.blocks = blocks;
    r.nblocks = 2;
    ebuf out = EBUF_INIT;
    CHECK_OK(taskresult_encode(&r, &out));
    memset(&back, 0xff, sizeof back);
    back.data = NULL;
    back.accs = NULL;
    back.lost_maps = NULL;
    back.blocks = NULL;
    back.task_id = 5;
    CHECK_OK(taskresult_decode(out.p, out.len, &back));
    CHECK_EQ_I64(back.task_id, 5);
    CHECK(!memcmp(&back.m, &r.m, sizeof r.m));
    CHECK_EQ_I64(back.m.cpu_ns, INT64_MAX);
    CHECK_EQ_I64(back.nblocks, 2);
    CHECK(!memcmp(back.blocks, blocks, sizeof blocks));
    task_result_clear(&back);
    CHECK(!back.blocks && !back.nblocks);
    /* A block with a negative size or partition is refused, nothing kept. */
    blocks[0].mem = -1;
    out.len = 0;
    CHECK_OK(taskresult_encode(&r, &out));
    CHECK_EQ_I64(taskresult_decode(out.p, out.len, &back), EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "cached blocks");
    CHECK(!back.blocks && !back.data);
    blocks[0].mem = 1;
    blocks[1].part = -2;
    out.len = 0;
    CHECK_OK(taskresult_encode(&r, &out));
    CHECK_EQ_I64(taskresult_decode(out.p, out.len, &back), EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "cached blocks");
    ebuf_free(&out);
}

/* The fault and fetch counts (fields 18 to 20) come back as they went; a
 * negative one, or one that is not an integer, is refused naming it, and
 * a result of the 18 fields before them is refused whole. */
TEST(taskresult_wire_fault_and_fetch_counts) {
    task_result r, back;
    memset(&r, 0, sizeof r);
    r.fetch_map = -1;
    r.faults_fired = 3;
    r.fetch_retries = INT64_MAX;
    r.fetch_conns_dropped = 70000;
    ebuf out = EBUF_INIT;
    CHECK_OK(taskresult_encode(&r, &out));
    memset(&back, 0, sizeof back);
    CHECK_OK(taskresult_decode(out.p, out.len, &back));
    CHECK_EQ_I64(back.faults_fired, 3);
    CHECK_EQ_I64(back.fetch_retries, INT64_MAX);
    CHECK_EQ_I64(back.fetch_conns_dropped, 70000);
    task_result_clear(&back);
    static const char *const names[] = {"faults fired", "fetch retries", "fetch connections dropped"};
    for (int k = 0; k < 3; k++) {
        r.faults_fired = k == 0 ? -1 : 0;
        r.fetch_retries = k == 1 ? -5 : 0;
        r.fetch_conns_dropped = k == 2 ? INT64_MIN : 0;
        out.len = 0;
        CHECK_OK(taskresult_encode(&r, &out));
        CHECK_EQ_I64(taskresult_decode(out.p, out.len, &back), EM_EPROTO);
        CHECK_STR_CONTAINS(em_errmsg(), names[k]);
        CHECK(!back.data && !back.accs && !back.lost_maps && !back.blocks);
    }
    /* nil in place of the last count; then the counts left out (an array
     * header of 18 with the fields before them). */
    r.faults_fired = r.fetch_retries = r.fetch_conns_dropped = 0;
    out.len = 0;
    CHECK_OK(taskresult_encode(&r, &out));
    CHECK_EQ_I64(out.p[out.len - 1], 0);
    out.p[out.len - 1] = 0xc0;
    CHECK_EQ_I64(taskresult_decode(out.p, out.len, &back), EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "fetch connections dropped");
    CHECK(out.p[0] == 0xdc && out.p[1] == 0 && out.p[2] == 21);
    out.p[2] = 18;
    out.len -= 3;
    CHECK_EQ_I64(taskresult_decode(out.p, out.len, &back), EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "not an array of 21 fields");
    ebuf_free(&out);
}

/* After patching small_metrics' bytes: the empty cached-blocks array
 * that follows the metrics, and the three zero counts after it (faults
 * fired, fetch retries, fetch connections dropped). */
static int blocks_end(ebuf *out) { return ebuf_append(out, "\x90\x00\x00\x00", 4); }

/* The encoding of a result whose metrics are all small (each one byte on
 * the wire, the last TASK_METRICS_N bytes), for patching: without the
 * cached blocks and counts after them, which blocks_end puts back. */
static int small_metrics(ebuf *out) {
    task_result r;
    memset(&r, 0, sizeof r);
    r.fetch_map = -1;
    int64_t *m = (int64_t *)&r.m;
    for (int i = 0; i < TASK_METRICS_N; i++) m[i] = i + 1;
    int rc = taskresult_encode(&r, out);
    if (rc || out->len < 4 || memcmp(out->p + out->len - 4, "\x90\x00\x00\x00", 4)) return rc ? rc : -1;
    out->len -= 4;
    return 0;
}

/* A metric that is negative, nil, true, a float or a string is refused
 * with EM_EPROTO naming the metrics, and nothing is kept; so is an array
 * of the wrong length. */
TEST(taskmetrics_wire_refuses_bad_metrics) {
    static const uint8_t bad[][2] = {{0xff, 0}, {0xc0, 0}, {0xc3, 0}, {0xd0, 0x80}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ebuf out = EBUF_INIT;
        CHECK_OK(small_metrics(&out));
        CHECK_EQ_I64(out.p[out.len - 1], TASK_METRICS_N); /* the last metric */
        out.len--;
        CHECK_OK(ebuf_append(&out, bad[k], bad[k][0] == 0xd0 ? 2 : 1)); /* 0xd0 0x80: int8 -128 */
        CHECK_OK(blocks_end(&out));
        task_result r;
        memset(&r, 0, sizeof r);
        CHECK_EQ_I64(taskresult_decode(out.p, out.len, &r), EM_EPROTO);
        CHECK_STR_CONTAINS(em_errmsg(), "task metric");
        CHECK(!r.data && !r.accs && !r.lost_maps);
        ebuf_free(&out);
    }
    /* A float, and a string, in place of the first metric. */
    for (int k = 0; k < 2; k++) {
        ebuf out = EBUF_INIT;
        CHECK_OK(small_metrics(&out));
        size_t at = out.len - TASK_METRICS_N;
        CHECK_EQ_I64(out.p[at], 1);
        ebuf tail = EBUF_INIT;
        CHECK_OK(ebuf_append(&tail, out.p + at + 1, TASK_METRICS_N - 1));
        out.len = at;
        static const uint8_t f32[] = {0xca, 0x3f, 0x80, 0, 0}, str[] = {0xa1, 'x'};
        CHECK_OK(k ? ebuf_append(&out, str, sizeof str) : ebuf_append(&out, f32, sizeof f32));
        CHECK_OK(ebuf_append(&out, tail.p, tail.len));
        CHECK_OK(blocks_end(&out));
        task_result r;
        memset(&r, 0, sizeof r);
        CHECK_EQ_I64(taskresult_decode(out.p, out.len, &r), EM_EPROTO);
        CHECK_STR_CONTAINS(em_errmsg(), "task metric 0");
        ebuf_free(&tail);
        ebuf_free(&out);
    }
    /* One metric short: the array's header says 21. */
    ebuf out = EBUF_INIT;
    CHECK_OK(small_metrics(&out));
    size_t hdr = out.len - TASK_METRICS_N - 3;
    CHECK(out.p[hdr] == 0xdc && out.p[hdr + 2] == TASK_METRICS_N);
    out.p[hdr + 2] = TASK_METRICS_N - 1;
    out.len--;
    CHECK_OK(blocks_end(&out));
    task_result r;
    memset(&r, 0, sizeof r);
    CHECK_EQ_I64(taskresult_decode(out.p, out.len, &r), EM_EPROTO);
    CHECK_STR_CONTAINS(em_errmsg(), "task metrics");
    ebuf_free(&out);
}

/* -------------------------------------------------------------- running */

static int tm_pair_mod7(const em_rec *in, em_emitter *out, const void *arg) {
    uint8_t k[8];
    em_i64_enc(em_i64_dec(in->val) % 7, k);
    return em_emit_pair(out, k, 8, in->val, 8);
}

static int tm_sum(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    return em_emit_i64(out, em_i64_dec(a->val) + em_i64_dec(b->val));
}

static int64_t thread_cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Spins until the thread has used *arg more nanoseconds of CPU. */
static int tm_spin(const em_rec *in, em_emitter *out, const void *arg) {
    int64_t until = thread_cpu() + *(const int64_t *)arg;
    volatile uint64_t x = 0;
    while (thread_cpu() < until)
        for (int i = 0; i < 1000; i++) x += (uint64_t)i;
    return em_emit(out, in->val, in->vlen);
}

typedef struct fix {
    exec_env env;
    blockstore *bs;
} fix;

static int fix_open(fix *f) {
    memset(f, 0, sizeof *f);
    f->bs = bs_new(test_tmpdir(), 1 << 20);
    f->env.local_dir = test_tmpdir();
    f->env.store = f->bs;
    return f->bs != NULL;
}

static void desc_init(task_desc *t, plan_node *root, uint8_t sink_kind, uint64_t task_id) {
    memset(t, 0, sizeof *t);
    t->task_id = task_id;
    t->stage_id = 1;
    memcpy(t->binhash, fnref_binary_hash(), 32);
    t->mem_budget = 1 << 20;
    t->block_bytes = 4096;
    t->max_record = 1 << 20;
    t->codec = (bf_codec){BF_LZ4, 0};
    t->sink.kind = sink_kind;
    t->root = root;
}

/* Run t; 0 or -1 (could not encode). */
static int run(fix *f, const task_desc *t, task_result *res) {
    ebuf b = EBUF_INIT;
    if (taskdesc_encode(t, &b)) return -1;
    size_t len;
    uint8_t *bytes = ebuf_steal(&b, &len);
    runner_run(&f->env, bytes, len, res, NULL);
    return 0;
}

static void node_init(plan_node *n, uint8_t type) {
    memset(n, 0, sizeof *n);
    n->type = type;
}

/* Every attempt's times are consistent: CPU time within the run's wall
 * time, the result's size its data's. */
static int times_ok(const task_result *r) {
    const task_metrics *m = &r->m;
    int ok = m->result_size == (int64_t)r->len && m->run_ms >= 0 && m->deser_ms >= 0 && m->cpu_ns > 0 &&
             m->deser_cpu_ns >= 0 && m->cpu_ns <= (m->run_ms + 1) * 1000000;
    if (!ok)
        fprintf(stderr, "  result %zu size %lld run %lld ms cpu %lld ns deser %lld ms %lld ns\n", r->len,
                (long long)m->result_size, (long long)m->run_ms, (long long)m->cpu_ns, (long long)m->deser_ms,
                (long long)m->deser_cpu_ns);
    return ok;
}

/* A text file read as two splits: the splits' input bytes sum to the
 * file's size and their records to its lines (a line that crosses the
 * boundary counted once), for plain and CRLF lines. */
TEST(taskmetrics_runner_text_splits) {
    fix f;
    CHECK(fix_open(&f));
    char path[4096];
    snprintf(path, sizeof path, "%s/lines.txt", test_tmpdir());
    FILE *fp = fopen(path, "w");
    CHECK(fp);
    for (int i = 0; i < 777; i++) fprintf(fp, i % 3 ? "line %d\n" : "crlf line %d\r\n", i * 37);
    fprintf(fp, "last, unterminated");
    CHECK(fclose(fp) == 0);
    struct stat st;
    CHECK(stat(path, &st) == 0);
    int64_t bytes = 0, recs = 0;
    uint64_t half = (uint64_t)st.st_size / 2 + 3; /* inside a line */
    for (int s = 0; s < 2; s++) {
        plan_node txt;
        node_init(&txt, PN_TEXT);
        txt.path = path;
        txt.off = s ? half : 0;
        txt.len = s ? (uint64_t)st.st_size - half : half;
        task_desc t;
        desc_init(&t, &txt, SK_COUNT, 10 + s);
        task_result res;
        CHECK_OK(run(&f, &t, &res));
        CHECK_EQ_I64(res.status, 0);
        CHECK(times_ok(&res));
        int64_t n;
        memcpy(&n, res.data, 8);
        CHECK_EQ_I64(res.m.in_records, n);
        CHECK(res.m.in_bytes > 0);
        bytes += res.m.in_bytes;
        recs += res.m.in_records;
        task_result_clear(&res);
    }
    CHECK_EQ_I64(recs, 778);
    CHECK_EQ_I64(bytes, st.st_size);
    bs_free(f.bs);
}

/* Parallelized records (inline here) into a count (whole batches) and a
 * collect (record by record); a cached block of them read back; a range:
 * records in, and bytes for what was read. */
TEST(taskmetrics_runner_records_cache_range) {
    fix f;
    CHECK(fix_open(&f));
    ebuf data = EBUF_INIT;
    uint8_t b[8];
    for (int64_t i = 0; i < 300; i++) {
        em_i64_enc(i, b);
        em_rec r = {NULL, 0, b, 8};
        CHECK_OK(rec_append(&data, &r));
    }
    plan_node src;
    node_init(&src, PN_RECS);
    src.data = (blob){data.p, data.len};
    static const uint8_t kinds[] = {SK_COUNT, SK_COLLECT};
    for (int k = 0; k < 2; k++) {
        task_desc t;
        desc_init(&t, &src, kinds[k], 20 + k);
        task_result res;
        CHECK_OK(run(&f, &t, &res));
        CHECK_EQ_I64(res.status, 0);
        CHECK(times_ok(&res));
        CHECK_EQ_I64(res.m.in_records, 300);
        CHECK_EQ_I64(res.m.in_bytes, data.len);
        CHECK_EQ_I64(res.m.result_size, k ? (int64_t)data.len : 8);
        task_result_clear(&res);
    }

    /* The same records as a cached block of two chunks. */
    size_t half = 150 * 10; /* 150 records of 10 bytes (two length bytes, the value) */
    uint8_t *chunks[2] = {malloc(half), malloc(data.len - half)};
    size_t lens[2] = {half, data.len - half};
    CHECK(chunks[0] && chunks[1]);
    memcpy(chunks[0], data.p, half);
    memcpy(chunks[1], data.p + half, data.len - half);
    CHECK_OK(bs_put(f.bs, 9, 4, 0, EM_MEMORY_ONLY, chunks, lens, 2));
    plan_node cached, *kids[1] = {&src};
    node_init(&cached, PN_CACHED);
    cached.rdd_id = 4;
    cached.cache_key = 9;
    cached.level = EM_MEMORY_ONLY;
    cached.nchild = 1;
    cached.child = kids;
    for (int k = 0; k < 2; k++) {
        task_desc t;
        desc_init(&t, &cached, kinds[k], 30 + k);
        task_result res;
        CHECK_OK(run(&f, &t, &res));
        CHECK_EQ_I64(res.status, 0);
        CHECK_EQ_I64(res.cache_hits, 1);
        CHECK_EQ_I64(res.m.in_records, 300);
        CHECK_EQ_I64(res.m.in_bytes, data.len);
        task_result_clear(&res);
    }

    /* A range: values made, not read. */
    plan_node rng;
    node_init(&rng, PN_RANGE);
    rng.count = 12345;
    rng.step = 1;
    task_desc t;
    desc_init(&t, &rng, SK_COUNT, 40);
    task_result res;
    CHECK_OK(run(&f, &t, &res));
    CHECK_EQ_I64(res.status, 0);
    CHECK_EQ_I64(res.m.in_records, 12345);
    CHECK_EQ_I64(res.m.in_bytes, 0);
    CHECK_EQ_I64(res.m.sw_records + res.m.sr_records + res.m.out_records + res.m.peak_mem, 0);
    task_result_clear(&res);
    ebuf_free(&data);
    bs_free(f.bs);
}

/* A shuffle under a 16 KiB budget: the map task spills (memory and disk
 * bytes), writes every record, and its peak memory is counted; the reduce
 * tasks sort with spills and read back exactly what was written, as local
 * blocks. */
TEST(shuffle_task_metrics_spill_sort) {
    enum { N = 20000 };
    fix f;
    CHECK(fix_open(&f));
    plan_node rng, map, *kids[1] = {&rng};
    node_init(&rng, PN_RANGE);
    rng.count = N;
    rng.step = 1;
    node_init(&map, PN_OP);
    map.op = OP_MAP;
    CHECK_OK(fnref_make((void *)tm_pair_mod7, &map.fn));
    map.nchild = 1;
    map.child = kids;
    task_desc t;
    desc_init(&t, &map, SK_SHUFFLE, 50);
    t.mem_budget = 16 << 10;
    t.sink.shuffle_id = 6;
    t.sink.nparts = 2;
    t.sink.partitioner = PT_HASH;
    task_result res;
    CHECK_OK(run(&f, &t, &res));
    CHECK_EQ_I64(res.status, 0);
    CHECK(times_ok(&res));
    CHECK(res.spills > 0);
    CHECK(res.m.mem_spilled > 0 && res.m.disk_spilled > 0 && res.m.peak_mem > 0);
    CHECK_EQ_I64(res.m.in_records, N);
    CHECK_EQ_I64(res.m.sw_records, N);
    CHECK(res.m.sw_time_ns > 0);
    /* the sizes as a map status of a byte each: the bytes written are
     * within 10% of their estimates */
    CHECK_OK(ms_check(res.data, res.len, 2, NULL));
    uint64_t segs[2] = {ms_seg(res.data, 2, 0), ms_seg(res.data, 2, 1)};
    CHECK(res.m.sw_bytes > 0 && (uint64_t)res.m.sw_bytes <= segs[0] + segs[1] + 2 &&
          (double)(segs[0] + segs[1]) <= 1.1 * (double)res.m.sw_bytes);
    CHECK_EQ_I64(res.m.result_size, 3);
    int64_t written = res.m.sw_bytes;
    task_result_clear(&res);

    int64_t read = 0, recs = 0;
    for (int part = 0; part < 2; part++) {
        plan_node rd;
        const char *dirs[1] = {test_tmpdir()};
        node_init(&rd, PN_SHUFFLE);
        rd.partition = part;
        rd.shuffle_id = 6;
        rd.nmaps = 1;
        rd.dirs = dirs;
        rd.attempts = &t.task_id;
        rd.seglens = &segs[part];
        rd.mode = SR_SORT;
        task_desc r;
        desc_init(&r, &rd, SK_COUNT, 60 + part);
        r.partition = part;
        r.mem_budget = 16 << 10;
        CHECK_OK(run(&f, &r, &res));
        CHECK_EQ_I64(res.status, 0);
        CHECK(times_ok(&res));
        CHECK_EQ_I64(res.m.sr_local_blocks, 1);
        CHECK_EQ_I64(res.m.sr_remote_blocks + res.m.sr_remote_bytes + res.m.sr_fetch_wait_ms, 0);
        /* the bytes read are the segment's, which the status estimates */
        CHECK(res.m.sr_local_bytes > 0 && (uint64_t)res.m.sr_local_bytes <= segs[part] + 1 &&
              (double)segs[part] <= 1.1 * (double)res.m.sr_local_bytes);
        CHECK(res.m.disk_spilled > 0 && res.m.mem_spilled > 0 && res.m.peak_mem > 0);
        CHECK_EQ_I64(res.m.in_records + res.m.sw_records, 0);
        int64_t n;
        memcpy(&n, res.data, 8);
        CHECK_EQ_I64(res.m.sr_records, n);
        read += res.m.sr_local_bytes;
        recs += res.m.sr_records;
        task_result_clear(&res);
    }
    CHECK_EQ_I64(read, written);
    CHECK_EQ_I64(recs, N);

    /* The same map combined (reduce_by_key's map side): 7 keys written. */
    t.task_id = 70;
    t.mem_budget = 1 << 20;
    t.sink.combine = 1;
    CHECK_OK(fnref_make((void *)tm_sum, &t.sink.agg.merge_value));
    CHECK_OK(fnref_make((void *)tm_sum, &t.sink.agg.merge_comb));
    CHECK_OK(run(&f, &t, &res));
    CHECK_EQ_I64(res.status, 0);
    CHECK_EQ_I64(res.m.in_records, N);
    CHECK_EQ_I64(res.m.sw_records, 7);
    CHECK_EQ_I64(res.m.mem_spilled + res.m.disk_spilled, 0);
    CHECK(res.m.peak_mem > 0);
    task_result_clear(&res);
    bs_free(f.bs);
}

/* A task that burns 20 ms of CPU reports at least that as CPU time (the
 * thread's clock is read for it), within its run time; a burst of short
 * tasks each reports a CPU time within its own. */
TEST(taskmetrics_runner_cpu_time) {
    fix f;
    CHECK(fix_open(&f));
    plan_node rng, spin, *kids[1] = {&rng};
    node_init(&rng, PN_RANGE);
    rng.count = 1;
    rng.step = 1;
    node_init(&spin, PN_OP);
    spin.op = OP_MAP;
    int64_t ns = 20 * 1000000;
    spin.arg = (blob){(const uint8_t *)&ns, sizeof ns};
    CHECK_OK(fnref_make((void *)tm_spin, &spin.fn));
    spin.nchild = 1;
    spin.child = kids;
    task_desc t;
    desc_init(&t, &spin, SK_COUNT, 80);
    task_result res;
    CHECK_OK(run(&f, &t, &res));
    CHECK_EQ_I64(res.status, 0);
    CHECK(times_ok(&res));
    /* The attempt's CPU time is shared between decoding and running in
     * proportion to their wall times: together they hold the 20 ms. */
    CHECK(res.m.cpu_ns + res.m.deser_cpu_ns >= ns);
    CHECK(res.m.run_ms + res.m.deser_ms >= 19); /* each whole ms, rounded down */
    task_result_clear(&res);

    rng.count = 100;
    for (int i = 0; i < 200; i++) {
        desc_init(&t, &rng, SK_COUNT, 100 + (uint64_t)i);
        CHECK_OK(run(&f, &t, &res));
        CHECK_EQ_I64(res.status, 0);
        CHECK(times_ok(&res));
        CHECK_EQ_I64(res.m.in_records, 100);
        task_result_clear(&res);
    }
    bs_free(f.bs);
}
