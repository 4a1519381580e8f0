/*
 * test_taskmetrics.c -- the task metrics of a job run through the public
 * API on local[2] (executor/local.h's result hook shows each attempt's):
 * a text file of 1,000 lines of 10 words, counted by reduce_by_key into 2
 * partitions and saved.  The map tasks' input adds up to the file's lines
 * and bytes, each writes 10 records after combining, the reduce tasks read
 * what the maps wrote and save one line per word, and every attempt's
 * times and result size are consistent.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../test.h"
#include "ember.h"
#include "helpers.h"
#include "local.h"
#include "taskresult.h"

#define TM_MAX 64

static pthread_mutex_t tm_mu = PTHREAD_MUTEX_INITIALIZER;
static task_result tm_seen[TM_MAX]; /* the metrics and sizes, no data */
static int tm_n;

static void tm_hook(const task_result *res) {
    pthread_mutex_lock(&tm_mu);
    if (tm_n < TM_MAX) {
        task_result *r = &tm_seen[tm_n++];
        memset(r, 0, sizeof *r);
        r->status = res->status;
        r->len = res->len;
        r->m = res->m;
    }
    pthread_mutex_unlock(&tm_mu);
}

TEST(api_task_metrics_text_shuffle_save_local2) {
    enum { LINES = 1000, WORDS = 10 };
    const char *in = tmp_path("words.txt");
    char out[4096];
    snprintf(out, sizeof out, "%s/counts", test_tmpdir());
    FILE *f = fopen(in, "w");
    CHECK(f);
    for (int i = 0; i < LINES; i++) fprintf(f, "w%d\n", i % WORDS); /* every 10 lines hold all 10 words */
    CHECK(fclose(f) == 0);
    struct stat st;
    CHECK(stat(in, &st) == 0);

    tm_n = 0;
    local_result_hook = tm_hook;
    em_ctx *c = em_open("local[2]", NULL);
    CHECK(c);
    em_rdd *lines = em_text_file(c, in, 2);
    em_rdd *counts = em_reduce_by_key(em_flat_map(lines, fn_split_words, NULL, 0), fn_sum_i64, NULL, 0, 2);
    int rc = em_save_as_text_file(counts, out);
    em_close(c);
    local_result_hook = NULL;
    CHECK_OK(rc);

    task_metrics map = {0}, red = {0};
    int nmap = 0, nred = 0;
    for (int i = 0; i < tm_n; i++) {
        const task_result *r = &tm_seen[i];
        const task_metrics *m = &r->m;
        CHECK_EQ_I64(r->status, 0);
        CHECK_EQ_I64(m->result_size, r->len); /* the bytes returned */
        CHECK(m->run_ms >= 0 && m->deser_ms >= 0 && m->deser_cpu_ns >= 0);
        CHECK(m->cpu_ns > 0); /* every one of them reads or writes records */
        CHECK(m->cpu_ns <= (m->run_ms + 1) * 1000000);
        if (m->in_records) { /* a map task: text in, shuffle out */
            nmap++;
            CHECK(m->in_records >= WORDS);
            CHECK_EQ_I64(m->sw_records, WORDS); /* combined: one record a word */
            CHECK(m->sw_bytes > 0 && m->peak_mem > 0);
            CHECK_EQ_I64(m->sr_records + m->out_records, 0);
            task_metrics_add(&map, m);
        } else { /* a reduce task: shuffle in, save out */
            nred++;
            CHECK(m->sr_records > 0 && m->out_records > 0 && m->out_bytes > 0 && m->peak_mem > 0);
            CHECK_EQ_I64(m->sw_records + m->in_bytes, 0);
            CHECK_EQ_I64(m->sr_remote_blocks + m->sr_remote_bytes + m->sr_fetch_wait_ms, 0); /* all local */
            task_metrics_add(&red, m);
        }
    }
    CHECK_EQ_I64(nmap, 2);
    CHECK_EQ_I64(nred, 2);
    CHECK_EQ_I64(map.in_records, LINES);
    CHECK_EQ_I64(map.in_bytes, st.st_size);
    CHECK_EQ_I64(red.sr_records, map.sw_records);
    CHECK_EQ_I64(red.sr_local_bytes, map.sw_bytes);
    CHECK_EQ_I64(red.sr_local_blocks, 4); /* 2 maps x 2 partitions, none empty */
    CHECK_EQ_I64(red.out_records, WORDS);
    CHECK_EQ_I64(map.mem_spilled + map.disk_spilled + red.mem_spilled + red.disk_spilled, 0);

    /* Output bytes: the part files as saved. */
    int64_t saved = 0;
    for (int p = 0; p < 2; p++) {
        char part[4200];
        snprintf(part, sizeof part, "%s/part-%05d", out, p);
        CHECK(stat(part, &st) == 0);
        saved += st.st_size;
    }
    CHECK_EQ_I64(red.out_bytes, saved);
}
