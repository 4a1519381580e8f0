/*
 * fuzz_text.c -- the text input reader (engine/text_reader.c): plain
 * files by split, gzip files whole, against an independent line splitter.
 *
 * Input layout:
 *   byte 0   flags: bit 0 maps plain files (text_reader_mmap), bits 1-3
 *            repeat the content (1, 1, 1, 1, 3, 17, 100 or 300 times) so
 *            that small inputs also reach chunk boundaries and long lines
 *   byte 1   max_line: < 128 no limit, else byte - 127 (1..128)
 *   byte 2   k = byte % 8 split cuts follow, each a byte c placing a cut at
 *            c * size / 255 (cuts are sorted; equal cuts give empty splits)
 *   rest     the file's content; if it starts with the gzip magic 1f 8b it
 *            is written as a .gz file and read as one split
 * Properties:
 *   - plain: reading all splits in order yields exactly the lines of
 *     fz_split_lines, in order, each once, each reported by em_task_input
 *     at its own offset; with a max_line, the first line longer than it
 *     fails its split with EM_ETOOBIG after all the lines before it;
 *   - gzip: when zlib's inflate (gzip framing, concatenated members, zero
 *     padding after the last member) decodes the whole file, the same
 *     holds for the decompressed bytes; when it does not, the reader fails
 *     cleanly, with EM_ECORRUPT (or EM_ETOOBIG for an earlier long line)
 *     and a message naming the file;
 *   - em_text_line_number on the file never crashes, and on success agrees
 *     with the splitter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ember.h"
#include "fuzz.h"
#include "text_reader.h"
#include "textfile.h"

extern int text_reader_mmap; /* engine/text_reader.c, for tests */

/* Decompressed output beyond this is not compared (a bomb, not a bug). */
#define GZ_REF_MAX ((size_t)64 << 20)

typedef struct expect {
    const char *path;
    const uint8_t *base; /* the (decompressed) content lines point into */
    const fz_line *lines;
    size_t nlines, next;
} expect;

static int check_line(void *ctx, const em_rec *r) {
    expect *e = ctx;
    FZ_CHECK(r->key == NULL, "a line record has a key");
    FZ_CHECK(e->next < e->nlines, "line %zu is one too many (%zu expected)", e->next, e->nlines);
    const fz_line *want = &e->lines[e->next];
    FZ_CHECK(r->vlen == want->len && (!r->vlen || !memcmp(r->val, want->p, r->vlen)),
             "line %zu differs: %zu bytes, expected %zu", e->next, r->vlen, want->len);
    const char *path = NULL;
    uint64_t off = 0;
    FZ_CHECK(em_task_input(&path, &off) == 0, "em_task_input in the sink: %s", em_errmsg());
    FZ_CHECK(path && !strcmp(path, e->path), "em_task_input path");
    FZ_CHECK(off == (uint64_t)(want->p - e->base), "line %zu reported at offset %llu, is at %zu", e->next,
             (unsigned long long)off, (size_t)(want->p - e->base));
    e->next++;
    return 0;
}

/* The first line longer than max_line (its index), or nlines. */
static size_t first_long(const fz_line *l, size_t n, size_t max_line) {
    for (size_t i = 0; i < n; i++)
        if (max_line && l[i].len > max_line) return i;
    return n;
}

static void check_line_number(const char *path, const fz_line *l, size_t n, const uint8_t *base,
                              int exact) {
    /* The last line's start: em_text_line_number counts '\n' before it. */
    uint64_t off = n ? (uint64_t)(l[n - 1].p - base) : 0;
    int64_t got = em_text_line_number(path, off);
    if (got < 0) {
        FZ_CHECK(!exact, "em_text_line_number failed on good input: %s", em_errmsg());
        FZ_CHECK(em_errmsg()[0] != 0, "an error without a message");
        return;
    }
    if (exact) FZ_CHECK(got == (int64_t)(n ? n : 1), "em_text_line_number %lld, expected %zu", (long long)got, n);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void fuzz_plain(const uint8_t *c, size_t n, const uint8_t *cuts, int ncuts, size_t max_line) {
    const char *path = fz_write_file("in.txt", c, n);
    char pathcopy[512];
    snprintf(pathcopy, sizeof pathcopy, "%s", path);
    fz_line *lines;
    size_t nl = fz_split_lines(c, n, &lines), bad = first_long(lines, nl, max_line);
    uint64_t b[9];
    int nb = 0;
    b[nb++] = 0;
    for (int i = 0; i < ncuts; i++) b[nb++] = (uint64_t)cuts[i] * n / 255;
    qsort(b + 1, (size_t)ncuts, sizeof b[0], cmp_u64);
    b[nb++] = n;
    expect e = {pathcopy, c, lines, nl, 0};
    int rc = 0;
    for (int i = 0; i + 1 < nb && !rc; i++) {
        text_split s = {pathcopy, b[i], b[i + 1] - b[i], 0};
        uint64_t br = 0;
        rc = text_read_split(&s, max_line, check_line, &e, &br);
        FZ_CHECK(rc == 0 || rc == EM_ETOOBIG, "split [%llu, %llu) returned %d: %s", (unsigned long long)b[i],
                 (unsigned long long)b[i + 1], rc, em_errmsg());
    }
    if (bad < nl) {
        FZ_CHECK(rc == EM_ETOOBIG, "line %zu of %zu bytes is longer than %zu but was read", bad, lines[bad].len,
                 max_line);
        FZ_CHECK(strstr(em_errmsg(), pathcopy) != NULL, "message \"%s\" does not name the file", em_errmsg());
    } else {
        FZ_CHECK(rc == 0, "no line is too long, yet %d: %s", rc, em_errmsg());
    }
    FZ_CHECK(e.next == bad, "%zu lines read, expected %zu", e.next, bad);
    check_line_number(pathcopy, lines, nl, c, 1);
    free(lines);
}

/* zlib's inflate over the whole file, as the reader documents gzip input:
 * members back to back, then optionally zero bytes to the end.  0 with the
 * bytes in *out, or -1 when the file is not such input. */
static int gunzip_ref(const uint8_t *c, size_t n, uint8_t **out, size_t *outlen) {
    size_t cap = 4096, len = 0, pos = 0;
    uint8_t *o = malloc(cap);
    int members = 0, ok = 0;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    FZ_CHECK(o && inflateInit2(&zs, 16 + MAX_WBITS) == Z_OK, "zlib init");
    for (;;) {
        if (pos == n) {
            ok = 1;
            break;
        }
        if (members && c[pos] == 0) { /* padding: zeros to the end */
            ok = 1;
            for (size_t i = pos; i < n; i++)
                if (c[i]) ok = 0;
            break;
        }
        inflateReset(&zs);
        zs.next_in = (uint8_t *)c + pos;
        zs.avail_in = (uInt)(n - pos);
        int zr;
        do {
            if (len == cap) {
                if (cap >= GZ_REF_MAX) goto done; /* too big to compare */
                uint8_t *g = realloc(o, cap * 2);
                FZ_CHECK(g != NULL, "out of memory");
                o = g;
                cap *= 2;
            }
            zs.next_out = o + len;
            zs.avail_out = (uInt)(cap - len);
            zr = inflate(&zs, Z_NO_FLUSH);
            len = cap - zs.avail_out;
        } while (zr == Z_OK || (zr == Z_BUF_ERROR && zs.avail_out == 0));
        if (zr != Z_STREAM_END) goto done; /* corrupt or truncated */
        pos = n - zs.avail_in;
        members++;
    }
done:
    inflateEnd(&zs);
    if (!ok) {
        free(o);
        return len >= GZ_REF_MAX ? -2 : -1;
    }
    *out = o;
    *outlen = len;
    return 0;
}

static int any_line(void *ctx, const em_rec *r) {
    (*(size_t *)ctx)++;
    return 0;
}

static void fuzz_gz(const uint8_t *c, size_t n, size_t max_line) {
    const char *path = fz_write_file("in.gz", c, n);
    char pathcopy[512];
    snprintf(pathcopy, sizeof pathcopy, "%s", path);
    uint8_t *raw = NULL;
    size_t rawlen = 0;
    int ref = gunzip_ref(c, n, &raw, &rawlen);
    if (ref == -2) return; /* a bomb: nothing to compare against */
    text_split s = {pathcopy, 0, n, 1};
    fz_line *lines = NULL;
    size_t nl = ref == 0 ? fz_split_lines(raw, rawlen, &lines) : 0;
    expect e = {pathcopy, raw, lines, nl, 0};
    if (ref == 0) {
        size_t bad = first_long(lines, nl, max_line);
        int rc = text_read_split(&s, max_line, check_line, &e, NULL);
        if (bad < nl) FZ_CHECK(rc == EM_ETOOBIG, "line %zu is too long but was read (%d)", bad, rc);
        else FZ_CHECK(rc == 0, "zlib reads this file, the reader fails: %d %s", rc, em_errmsg());
        FZ_CHECK(e.next == bad, "%zu lines read, expected %zu", e.next, bad);
        check_line_number(pathcopy, lines, nl, raw, 1);
    } else {
        /* Only the outcome is checked: how many lines before the damage
         * are read depends on zlib's buffering. */
        size_t count = 0;
        int rc = text_read_split(&s, max_line, any_line, &count, NULL);
        FZ_CHECK(rc == EM_ECORRUPT || rc == EM_ETOOBIG, "zlib rejects this file, the reader returns %d: %s", rc,
                 em_errmsg());
        FZ_CHECK(!strncmp(em_errmsg(), "text_file: ", 11) && strstr(em_errmsg(), pathcopy),
                 "message \"%s\" does not name the file", em_errmsg());
        int64_t got = em_text_line_number(pathcopy, UINT64_MAX);
        FZ_CHECK(got >= 1 || em_errmsg()[0], "em_text_line_number failed without a message");
    }
    free(lines);
    free(raw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const int reps[8] = {1, 1, 1, 1, 3, 17, 100, 300};
    if (size < 3) return 0;
    int mmap_mode = data[0] & 1, rep = reps[(data[0] >> 1) & 7];
    size_t max_line = data[1] < 128 ? 0 : (size_t)data[1] - 127;
    int ncuts = data[2] % 8;
    if (size < 3 + (size_t)ncuts) return 0;
    const uint8_t *cuts = data + 3, *c = data + 3 + ncuts;
    size_t n = size - 3 - (size_t)ncuts;
    uint8_t *content = malloc(n * (size_t)rep + 1);
    FZ_CHECK(content != NULL, "out of memory");
    for (int i = 0; i < rep; i++)
        if (n) memcpy(content + (size_t)i * n, c, n);
    n *= (size_t)rep;
    text_reader_mmap = mmap_mode;
    if (n >= 2 && content[0] == 0x1f && content[1] == 0x8b) fuzz_gz(content, n, max_line);
    else fuzz_plain(content, n, cuts, ncuts, max_line);
    text_reader_mmap = 0;
    free(content);
    return 0;
}
