/*
 * test_eventlog_lz4.c -- lz4 event logs as lz4-java's block stream, what
 * Spark's lz4 codec writes and reads: the writer's bytes walked block by
 * block (magic, token, lengths, every checksum recomputed here with XXH32,
 * the end mark) and read back event for event; a changed data byte or
 * checksum refused as corrupt; a log in progress cut in its last block;
 * the Spark 3.5 test log's own blocks; LZ4 frames still read.
 */
#include <lz4.h>
#include <lz4frame.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "../test.h"
#include "eventlog_fixture.h"
#include "appevent.h"
#include "buf.h"
#include "ember.h"
#include "eventlog.h"
#include "eventlog_json.h"
#include "eventlog_reader.h"
#include "lz4block.h"






static app_event *task_start(int64_t id) {
    app_event *e = app_event_new(AE_TASK_START);
    e->time_ms = 1700000000000 + id;
    e->stage_id = (int)(id % 5);
    e->task.task_id = id;
    e->task.index = (int)id;
    e->task.partition = (int)id;
    e->task.launch_ms = 1700000000000 + id;
    strcpy(e->task.exec_id, "1");
    strcpy(e->task.host, "worker-1.example");
    strcpy(e->task.locality, "PROCESS_LOCAL");
    return e;
}

/* An environment update whose one property is n random letters: its line
 * does not shrink under LZ4. */
static app_event *noise(size_t n) {
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    app_event *e = app_event_new(AE_ENV_UPDATE);
    e->props[AE_ENV_SPARK] = calloc(1, sizeof(ae_prop));
    e->nprops[AE_ENV_SPARK] = 1;
    char *v = malloc(n + 1);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        v[i] = abc[x & 63];
    }
    v[n] = '\0';
    e->props[AE_ENV_SPARK][0].key = strdup("r");
    e->props[AE_ENV_SPARK][0].value = v;
    return e;
}

/* What walking a stream found. */
typedef struct walk {
    int blocks, raw, full, ends;
    size_t last;       /* the offset of the last block */
    ebuf dec;          /* the decoded bytes */
} walk;

/* Walk p[0, n) as lz4-java's LZ4BlockInputStream would, with 32 KiB blocks
 * (token level 5), checking every block's checksum with XXH32 here; an end
 * mark must be the stream's last bytes.  0, or -1 with a note on stderr. */
static int walk_lz4b(const uint8_t *p, size_t n, walk *w) {
    memset(w, 0, sizeof *w);
    size_t i = 0;
    while (i < n) {
        const uint8_t *h = p + i;
        if (n - i < 21 || memcmp(h, "LZ4Block", 8) || (h[8] & 0x0F) != 5)
            return fprintf(stderr, "  offset %zu: no 32 KiB LZ4Block header\n", i), -1;
        int method = h[8] & 0xF0;
        uint32_t clen = get_u32le(h + 9), dlen = get_u32le(h + 13), check = get_u32le(h + 17);
        w->last = i;
        if (dlen == 0) {
            if (method != 0x10 || clen || check || i + 21 != n)
                return fprintf(stderr, "  offset %zu: a bad end mark or bytes after it\n", i), -1;
            w->ends++;
            i += 21;
            continue;
        }
        if (dlen > 32768 || n - i - 21 < clen || (method == 0x10 && clen != dlen) || (method == 0x20 && clen >= dlen) ||
            (method != 0x10 && method != 0x20))
            return fprintf(stderr, "  offset %zu: token %#x, lengths %u %u\n", i, h[8], clen, dlen), -1;
        ebuf_reserve(&w->dec, dlen);
        uint8_t *d = w->dec.p + w->dec.len;
        if (method == 0x10) memcpy(d, h + 21, dlen);
        else if (LZ4_decompress_safe((const char *)h + 21, (char *)d, (int)clen, (int)dlen) != (int)dlen)
            return fprintf(stderr, "  offset %zu: LZ4 data does not decode to %u bytes\n", i, dlen), -1;
        if ((XXH32(d, dlen, 0x9747b28c) & 0x0FFFFFFF) != check)
            return fprintf(stderr, "  offset %zu: checksum %#x, XXH32 says %#x\n", i, check,
                           XXH32(d, dlen, 0x9747b28c) & 0x0FFFFFFF), -1;
        w->dec.len += dlen;
        w->blocks++;
        w->raw += method == 0x10;
        w->full += dlen == 32768;
        i += 21 + clen;
    }
    return 0;
}

static int lines(const ebuf *b) {
    int n = 0;
    for (size_t i = 0; i < b->len; i++) n += b->p[i] == '\n';
    return n;
}

TEST(eventlog_lz4_blocks_raw_and_compressed) {
    ebuf out = EBUF_INIT;
    char text[5000];
    for (int i = 0; i < 5000; i++) text[i] = "task ended\n"[i % 11];
    CHECK_OK(lz4b_put_block(&out, text, sizeof text, 32768));
    app_event *e = noise(3000);
    const char *v = e->props[AE_ENV_SPARK][0].value;
    CHECK_OK(lz4b_put_block(&out, v, 3000, 32768));
    CHECK_OK(lz4b_put_end(&out, 32768));
    walk w;
    CHECK_EQ_I64(walk_lz4b(out.p, out.len, &w), 0);
    CHECK_EQ_I64(w.blocks, 2);
    CHECK_EQ_I64(w.ends, 1);
    CHECK_EQ_I64(out.p[8], 0x25); /* LZ4, level 5: 32 KiB */
    CHECK(get_u32le(out.p + 9) < 5000);
    size_t second = 21 + get_u32le(out.p + 9);
    CHECK_EQ_I64(out.p[second + 8], 0x15); /* random letters stay raw */
    CHECK_EQ_I64(get_u32le(out.p + second + 9), 3000);
    CHECK(w.dec.len == 8000 && !memcmp(w.dec.p, text, 5000) && !memcmp(w.dec.p + 5000, v, 3000));
    /* XXH32 with Spark's seed (values from XXH32's specification, worked
     * out apart from libxxhash), its top 4 bits cleared as lz4-java's
     * asChecksum() does */
    CHECK_EQ_I64(lz4b_checksum("", 0), 0x0d3b42d8);
    CHECK_EQ_I64(lz4b_checksum("LZ4Block", 8), 0x062fa9ae);
    CHECK_EQ_I64(lz4b_checksum("task ended\n", 11), 0x017a4c00);
    CHECK_EQ_I64(lz4b_put_block(&out, text, 0, 32768), EM_EINVAL);
    CHECK_EQ_I64(lz4b_put_block(&out, text, 10, 1000), EM_EINVAL);
    app_event_free(e);
    ebuf_free(&out);
    ebuf_free(&w.dec);
}

TEST(eventlog_lz4_writer_writes_lz4_java_blocks) {
    char dir[4096], path[4300];
    snprintf(dir, sizeof dir, "%s/w", test_tmpdir());
    CHECK(!mkdir(dir, 0700));
    evlog_conf conf = {.dir = dir, .compress = true, .codec = "lz4"};
    evlog *l;
    CHECK_OK(evlog_open(&conf, "app-lz4", &l));
    snprintf(path, sizeof path, "%s/app-lz4.lz4.inprogress", dir);
    CHECK(!strcmp(evlog_path(l), path));
    ebuf want = EBUF_INIT; /* the lines the log must hold */
    app_event *start = app_event_new(AE_LOG_START);
    start->version = strdup(EMBER_VERSION);
    CHECK_OK(evjson_write(start, &want));
    ebuf_append(&want, "\n", 1);
    app_event_free(start);
    int nev = 0;
#define PUT(ev)                                                                                                        \
    do {                                                                                                               \
        app_event *e_ = (ev);                                                                                          \
        CHECK_OK(evlog_write(l, e_));                                                                                  \
        CHECK_OK(evjson_write(e_, &want));                                                                             \
        ebuf_append(&want, "\n", 1);                                                                                   \
        app_event_free(e_);                                                                                            \
        nev++;                                                                                                         \
    } while (0)
    for (int i = 0; i < 3; i++) PUT(task_start(i));
    CHECK_OK(evlog_flush(l));
    /* the flush ended the first block: one block, the log start and 3
     * events, no end mark yet */
    size_t len;
    uint8_t *b = slurp(path, &len);
    walk w;
    CHECK_EQ_I64(walk_lz4b(b, len, &w), 0);
    CHECK_EQ_I64(w.blocks, 1);
    CHECK_EQ_I64(w.ends, 0);
    CHECK_EQ_I64(lines(&w.dec), 4);
    CHECK(w.dec.len == want.len && !memcmp(w.dec.p, want.p, want.len));
    free(b);
    ebuf_free(&w.dec);
    /* a block of its own for a line LZ4 cannot shrink: stored raw */
    PUT(noise(20000));
    CHECK_OK(evlog_flush(l));
    size_t flushed = want.len;
    /* then enough lines for several whole 32 KiB blocks */
    for (int i = 3; i < 600; i++) PUT(task_start(i));
    CHECK_OK(evlog_close(l));
#undef PUT
    snprintf(path, sizeof path, "%s/app-lz4.lz4", dir);
    b = slurp(path, &len);
    CHECK(b);
    CHECK_EQ_I64(walk_lz4b(b, len, &w), 0);
    CHECK_EQ_I64(w.ends, 1);
    CHECK_EQ_I64(w.last, len - 21);
    CHECK_EQ_I64(w.raw, 1);
    /* the first block, the raw one, then whole blocks and the rest */
    size_t rest = want.len - flushed;
    CHECK(rest > 3 * 32768);
    CHECK_EQ_I64(w.full, rest / 32768);
    CHECK_EQ_I64(w.blocks, 2 + (rest + 32767) / 32768);
    CHECK(w.dec.len == want.len && !memcmp(w.dec.p, want.p, want.len));
    /* read back event for event: each one writes the same line again */
    app_event *ev[700];
    int n = read_all(path, ev, 700);
    if (n < 0) fprintf(stderr, "  %s\n", em_errmsg());
    CHECK_EQ_I64(n, nev + 1);
    ebuf again = EBUF_INIT;
    for (int i = 0; i < n; i++) {
        CHECK_OK(evjson_write(ev[i], &again));
        ebuf_append(&again, "\n", 1);
    }
    CHECK(again.len == want.len && !memcmp(again.p, want.p, want.len));
    CHECK(ev[0]->kind == AE_LOG_START && ev[4]->kind == AE_ENV_UPDATE);
    CHECK_EQ_I64(ev[n - 1]->task.task_id, 599);
    free_all(ev, n);
    ebuf_free(&again);
    ebuf_free(&want);
    ebuf_free(&w.dec);
    free(b);
}

/* The offset of block k (0-based) of a stream. */
static size_t block_at(const uint8_t *b, int k) {
    size_t i = 0;
    while (k-- > 0) i += 21 + get_u32le(b + i + 9);
    return i;
}

/* Write a finished lz4 log of the log start and nev task events, flushed
 * every 10; its bytes in *len. */
static uint8_t *small_log(const char *dir, const char *id, int nev, size_t *len) {
    evlog_conf conf = {.dir = dir, .compress = true, .codec = "lz4"};
    evlog *l;
    if (evlog_open(&conf, id, &l)) return NULL;
    for (int i = 0; i < nev; i++) {
        app_event *e = task_start(i);
        evlog_write(l, e);
        app_event_free(e);
        if (i % 10 == 9) evlog_flush(l);
    }
    if (evlog_close(l)) return NULL;
    char path[4300];
    snprintf(path, sizeof path, "%s/%s.lz4", dir, id);
    return slurp(path, len);
}

TEST(eventlog_lz4_checksum_mismatch_is_corrupt) {
    const char *dir = test_tmpdir();
    size_t len;
    uint8_t *b = small_log(dir, "app-good", 40, &len);
    CHECK(b);
    app_event *ev[64];
    char path[4300];
    snprintf(path, sizeof path, "%s/app-good.lz4", dir);
    CHECK_EQ_I64(read_all(path, ev, 64), 41);
    free_all(ev, 41);
    size_t second = block_at(b, 1);
    CHECK_EQ_I64(b[second + 8], 0x25);
    /* a byte of the second block's data: a letter of a literal, so the
     * LZ4 data still decodes, to other bytes */
    const uint8_t *data = b + second + 21;
    size_t clen = get_u32le(b + second + 9);
    const uint8_t *lit = memmem(data, clen, "PROCESS_LOCAL", 13);
    CHECK(lit);
    size_t at = (size_t)(lit - b) + 3;
    const char *names[] = {"app-data.lz4", "app-sum.lz4", "app-sum2.lz4.inprogress"};
    size_t where[] = {at, second + 17, second + 18};
    for (int i = 0; i < 3; i++) {
        b[where[i]] ^= 0x01;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        CHECK(!spill(path, b, len));
        b[where[i]] ^= 0x01;
        CHECK_EQ_I64(read_all(path, ev, 64), EM_ECORRUPT);
        CHECK_STR_CONTAINS(em_errmsg(), names[i]);
        CHECK_STR_CONTAINS(em_errmsg(), "the lz4 block's checksum does not match");
        char off[64];
        snprintf(off, sizeof off, "block at offset %zu", second);
        CHECK_STR_CONTAINS(em_errmsg(), off);
    }
    /* an end mark with a checksum is not one */
    b[len - 4] = 1;
    snprintf(path, sizeof path, "%s/app-end.lz4", dir);
    CHECK(!spill(path, b, len));
    CHECK_EQ_I64(read_all(path, ev, 64), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "end mark");
    free(b);
}

TEST(eventlog_lz4_in_progress_cut_in_last_block) {
    char dir[4096], path[4300];
    snprintf(dir, sizeof dir, "%s/p", test_tmpdir());
    CHECK(!mkdir(dir, 0700));
    evlog_conf conf = {.dir = dir, .compress = true, .codec = "lz4"};
    evlog *l;
    CHECK_OK(evlog_open(&conf, "app-p", &l));
    for (int i = 0; i < 30; i++) {
        app_event *e = task_start(i);
        CHECK_OK(evlog_write(l, e));
        CHECK_OK(evlog_flush(l));
        app_event_free(e);
    }
    snprintf(path, sizeof path, "%s/app-p.lz4.inprogress", dir);
    size_t len;
    uint8_t *b = slurp(path, &len);
    CHECK(b);
    app_event *ev[64];
    CHECK_EQ_I64(read_all(path, ev, 64), 31); /* read while the writer is open */
    free_all(ev, 31);
    CHECK_OK(evlog_close(l));
    walk w;
    CHECK_EQ_I64(walk_lz4b(b, len, &w), 0);
    CHECK_EQ_I64(w.blocks, 30); /* one a flush, the log start in the first */
    CHECK_EQ_I64(w.ends, 0);
    ebuf_free(&w.dec);
    /* cut inside the last block's data, and inside its header: the log
     * start and 29 of the 30 */
    size_t cuts[] = {len - 10, w.last + 5};
    for (int c = 0; c < 2; c++) {
        CHECK(!spill(path, b, cuts[c]));
        int n = read_all(path, ev, 64);
        if (n < 0) fprintf(stderr, "  %s\n", em_errmsg());
        CHECK_EQ_I64(n, 30);
        CHECK_EQ_I64(ev[29]->task.task_id, 28);
        free_all(ev, n);
    }
    /* the same bytes as a finished log: the stream ends in a block */
    snprintf(path, sizeof path, "%s/app-q.lz4", dir);
    CHECK(!spill(path, b, len - 10));
    CHECK_EQ_I64(read_all(path, ev, 64), EM_ECORRUPT);
    CHECK_STR_CONTAINS(em_errmsg(), "app-q.lz4: the lz4 stream ends in the middle of a block");
    free(b);
}

TEST(eventlog_lz4_spark_test_log_is_lz4_java) {
    /* tests/data's Spark 3.5 log in lz4: lz4-java's blocks with their
     * checksums and end mark, decoding to the same bytes as its zstd twin */
    size_t len;
    uint8_t *b = slurp(data("app-20240101120000-0004.lz4"), &len);
    CHECK(b);
    walk w;
    CHECK_EQ_I64(walk_lz4b(b, len, &w), 0);
    CHECK_EQ_I64(w.ends, 1);
    CHECK(w.blocks > 1);
    CHECK_EQ_I64(lines(&w.dec), 27);
    app_event *ev[64];
    int n = read_all(data("app-20240101120000-0004.lz4"), ev, 64);
    CHECK_EQ_I64(n, 27);
    CHECK(ev[0]->kind == AE_LOG_START && !strcmp(ev[0]->version, "3.5.1"));
    free_all(ev, n);
    n = read_all(data("app-20240101120000-0003.zstd"), ev, 64);
    CHECK_EQ_I64(n, 27);
    ebuf z = EBUF_INIT;
    for (int i = 0; i < n; i++) {
        CHECK_OK(evjson_write(ev[i], &z));
        ebuf_append(&z, "\n", 1);
    }
    free_all(ev, n);
    /* the same events: the zstd twin's re-written lines match the lz4
     * log's re-written lines */
    n = read_all(data("app-20240101120000-0004.lz4"), ev, 64);
    ebuf q = EBUF_INIT;
    for (int i = 0; i < n; i++) {
        CHECK_OK(evjson_write(ev[i], &q));
        ebuf_append(&q, "\n", 1);
    }
    free_all(ev, n);
    CHECK(q.len == z.len && !memcmp(q.p, z.p, z.len));
    ebuf_free(&q);
    ebuf_free(&z);
    ebuf_free(&w.dec);
    free(b);
}

TEST(eventlog_lz4_frames_still_read) {
    /* an .lz4 file of LZ4 frames (the lz4 command's format) reads too */
    size_t len;
    uint8_t *b = slurp(data("app-20240101120000-0004.lz4"), &len);
    CHECK(b);
    walk w;
    CHECK_EQ_I64(walk_lz4b(b, len, &w), 0);
    size_t cap = LZ4F_compressFrameBound(w.dec.len, NULL);
    uint8_t *f = malloc(cap);
    size_t fn = LZ4F_compressFrame(f, cap, w.dec.p, w.dec.len, NULL);
    CHECK(!LZ4F_isError(fn));
    CHECK_EQ_I64(get_u32le(f), 0x184D2204);
    char path[4300];
    snprintf(path, sizeof path, "%s/app-f.lz4", test_tmpdir());
    CHECK(!spill(path, f, fn));
    app_event *ev[64];
    int n = read_all(path, ev, 64);
    CHECK_EQ_I64(n, 27);
    CHECK(ev[26]->kind == AE_APP_END);
    free_all(ev, n);
    free(f);
    free(b);
    ebuf_free(&w.dec);
}

TEST(eventlog_lz4_follow_reads_on_across_a_cut_block) {
    /* a reader following a log in progress stops before a block written in
     * part and reads it, checksum checked, once the rest arrives */
    char dir[4096], path[4300];
    snprintf(dir, sizeof dir, "%s/f", test_tmpdir());
    CHECK(!mkdir(dir, 0700));
    evlog_conf conf = {.dir = dir, .compress = true, .codec = "lz4"};
    evlog *l;
    CHECK_OK(evlog_open(&conf, "app-f", &l));
    for (int i = 0; i < 10; i++) {
        app_event *e = task_start(i);
        CHECK_OK(evlog_write(l, e));
        CHECK_OK(evlog_flush(l));
        app_event_free(e);
    }
    size_t len;
    uint8_t *b = slurp(evlog_path(l), &len);
    CHECK(b);
    CHECK_OK(evlog_close(l));
    size_t cut = block_at(b, 4) + 21 + 7; /* inside the 5th block's data */
    snprintf(path, sizeof path, "%s/app-g.lz4.inprogress", dir);
    CHECK(!spill(path, b, cut));
    evlog_reader *r;
    CHECK_OK(evlog_reader_open(path, &r));
    CHECK_OK(evlog_reader_follow(r));
    app_event *e;
    int n = 0, rc;
    while ((rc = evlog_reader_next(r, &e)) == 1) {
        if (n > 0) CHECK_EQ_I64(e->task.task_id, n - 1);
        app_event_free(e);
        n++;
    }
    CHECK_EQ_I64(rc, 0);
    CHECK_EQ_I64(n, 5); /* the log start and tasks 0 to 3 */
    FILE *f = fopen(path, "ab");
    CHECK(f);
    CHECK_EQ_I64(fwrite(b + cut, 1, len - cut, f), len - cut);
    CHECK(!fclose(f));
    while ((rc = evlog_reader_next(r, &e)) == 1) {
        CHECK_EQ_I64(e->task.task_id, n - 1);
        app_event_free(e);
        n++;
    }
    CHECK_EQ_I64(rc, 0);
    CHECK_EQ_I64(n, 11);
    evlog_reader_close(r);
    free(b);
}
