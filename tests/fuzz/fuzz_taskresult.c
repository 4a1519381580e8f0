/*
 * fuzz_taskresult.c -- a task attempt's result (engine/taskresult.c)
 * decoded from arbitrary bytes, as an executor process may send it in
 * M_TASK_ENDED.
 *
 * Input: the result bytes of an M_TASK_ENDED message.
 * Properties: no crash, no out-of-bounds read, no allocation beyond what
 * the bytes can describe; a refusal is EM_EPROTO (or EM_ENOMEM) with a
 * message and leaves nothing allocated; an accepted result has strings
 * that end within their fields, no negative task metric or count (faults
 * fired, fetch retries, connections dropped), and encoding
 * it again and decoding that gives the same result.
 */
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "fuzz.h"
#include "taskresult.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    task_result r, r2;
    memset(&r, 0, sizeof r);
    r.task_id = 7;
    int rc = taskresult_decode(data, size, &r);
    if (rc) {
        FZ_CHECK((rc == EM_EPROTO && strstr(em_errmsg(), "task result")) || rc == EM_ENOMEM, "rc %d: %s", rc,
                 em_errmsg());
        FZ_CHECK(!r.data && !r.accs && !r.lost_maps && !r.blocks, "a refused result kept memory");
        return 0;
    }
    FZ_CHECK(r.task_id == 7, "task id changed");
    FZ_CHECK(memchr(r.errmsg, 0, sizeof r.errmsg) && memchr(r.loc, 0, sizeof r.loc), "unterminated string");
    FZ_CHECK(r.status <= 0 && r.fetch_map >= -1 && r.commit_denied <= 1, "a field out of its range");
    ebuf out = EBUF_INIT;
    FZ_CHECK(taskresult_encode(&r, &out) == 0, "re-encoding failed: %s", em_errmsg());
    memset(&r2, 0, sizeof r2);
    FZ_CHECK(taskresult_decode(out.p, out.len, &r2) == 0, "re-decoding failed: %s", em_errmsg());
    FZ_CHECK(r2.status == r.status && r2.len == r.len && r2.naccs == r.naccs && r2.fetch_map == r.fetch_map &&
                 r2.fetch_shuffle == r.fetch_shuffle && r2.commit_denied == r.commit_denied &&
                 r2.input_bytes == r.input_bytes && r2.shuffle_bytes == r.shuffle_bytes &&
                 r2.shuffle_records == r.shuffle_records && r2.spills == r.spills && r2.cache_hits == r.cache_hits &&
                 r2.segs_fetched == r.segs_fetched && r2.segs_host_local == r.segs_host_local &&
                 r2.nlost == r.nlost && r2.nblocks == r.nblocks && !strcmp(r2.errmsg, r.errmsg) && !strcmp(r2.loc, r.loc) &&
                 r2.faults_fired == r.faults_fired && r2.fetch_retries == r.fetch_retries &&
                 r2.fetch_conns_dropped == r.fetch_conns_dropped,
             "a field changed");
    FZ_CHECK(r.faults_fired >= 0 && r.fetch_retries >= 0 && r.fetch_conns_dropped >= 0, "a negative count");
    FZ_CHECK(!r.len || !memcmp(r.data, r2.data, r.len), "data changed");
    const int64_t *m = (const int64_t *)&r.m, *m2 = (const int64_t *)&r2.m;
    for (int i = 0; i < TASK_METRICS_N; i++)
        FZ_CHECK(m[i] >= 0 && m[i] == m2[i], "task metric %d changed or negative", i);
    for (int i = 0; i < r.naccs; i++)
        FZ_CHECK(r.accs[i].id == r2.accs[i].id && r.accs[i].type == r2.accs[i].type && r.accs[i].i == r2.accs[i].i &&
                     !memcmp(&r.accs[i].f, &r2.accs[i].f, sizeof(double)),
                 "accumulator %d changed", i);
    for (uint32_t i = 0; i < r.nlost; i++)
        FZ_CHECK(r.lost_maps[i] >= 0 && r.lost_maps[i] == r2.lost_maps[i], "lost map %u changed", i);
    for (uint32_t i = 0; i < r.nblocks; i++)
        FZ_CHECK(r.blocks[i].rdd >= 0 && r.blocks[i].part >= 0 && r.blocks[i].mem >= 0 && r.blocks[i].disk >= 0 &&
                     !memcmp(&r.blocks[i], &r2.blocks[i], sizeof r.blocks[i]),
                 "cached block %u changed or out of range", i);
    task_result_clear(&r);
    task_result_clear(&r2);
    ebuf_free(&out);
    return 0;
}
