/*
 * readers.c -- data sets from text: LIBSVM and CSV.
 *
 * Design.  A task parses the lines of its text splits straight into a
 * block builder and emits a block every ml_block_rows rows:
 *
 *   driver: text_plan(path) -> splits, packed into the argument blob
 *   tasks:  em_range(0, splits, partitions) --flat_map(ml_text_blocks)-->
 *           blocks (cached), a run of consecutive splits per partition
 *           ml_text_blocks: text_read_split(split i) -> line sink -> builder
 *
 * This uses the engine's own planner and line reader (engine/textfile.h,
 * engine/text_reader.h), so splitting, directories, globs, gzip and
 * line boundaries are exactly those of em_text_file, and em_task_input
 * works in the sink: a malformed line fails the task with "FILE:LINE:
 * reason".  What it avoids is the public route's per-partition buffers:
 * with em_text_file, turning lines into blocks needs map_partitions (a
 * flat_map cannot emit at the end of its partition), which first copies
 * the whole split into a growing buffer (rows, or lines).  Where a fresh
 * page is expensive to fault in (virtual machines), that buffer costs more
 * than the parsing (bench/RESULTS.md, "mllib loading").
 *
 * No copies of the values.  The values are parsed straight into the block
 * where it will be kept: at the end of the cache's buffer when the blocks
 * are cached (block.h's ml_block_home), so a block is neither copied from
 * a builder into a block nor from the block into the cache, and the only
 * memory the load faults in is the cache's.  That works because a block's
 * big array (x, or CSR's val) starts at a fixed offset whatever the block's
 * rows turn out to be; when the block ends, a LIBSVM block stored dense
 * spreads its rows' values out over zeros in place (nothing to do for full
 * rows), a CSR one gets its indexes and offsets after the values, and
 * either gets its labels last.  A LIBSVM block's column indexes wait in
 * its room too, past the values', so the only big memory a load takes is
 * the cache's.  Measured on the 1.44 GB LIBSVM form of the 10k x 10k set
 * (bench/libsvm_load), this took the two copies (a pass of 800 MB each)
 * and 2 x 36 MB of builder buffers out of every load.
 * Unlike em_text_file, these reads are not counted in em_stats.input_bytes.
 *
 * LIBSVM: "label index:value ..." with 1-based, strictly ascending indices;
 * '#' starts a comment; labels are 0 or 1, and -1 is read as 0, or with
 * em_ml_load_opts.classes class labels 0..K-1 (any other label fails
 * naming its line).  Blocks
 * whose cols is one past their largest index (or num_features when
 * given), CSR, or dense when over 2/3 full (ml_block_dense_better); the
 * data set's cols is the largest of them, and it is sparse whatever its
 * blocks' layout (em_ml_is_sparse: scaled without centering).
 * CSV: comma-separated numbers (blanks around them allowed), blank lines
 * skipped; the number of fields is that of the first row, found on the
 * driver by reading the first split up to its first row, and any other
 * width fails naming the line; the label must be 0 or 1 (or a class
 * label, as for LIBSVM).  Dense blocks.
 *
 * Numbers are parsed by parse.h (exact, as strtod, without strtod in the
 * common case).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigbuf.h"
#include "block.h"
#include "conf.h"
#include "ctx.h"
#include "data.h"
#include "err.h"
#include "mlutil.h"
#include "parse.h"
#include "text_reader.h"
#include "textfile.h"

/* Blocks hold about this many bytes of arrays at most (as ml_block_rows). */
#define BLOCK_BYTES (16 * 1024 * 1024)

enum { FMT_LIBSVM = 1, FMT_CSV = 2 };

static const em_ml_load_opts default_opts = {0, 0, -1, 0, 0, 0};

/* em_ml_load_opts.classes resolved for text_arg.classes: 0 for binary
 * labels, else the number of class labels allowed; -1 (message set) for a
 * bad value. */
static int64_t resolve_classes(const char *fn, int classes) {
    if (classes == 0 || classes == 2) return 0;
    if (classes == EM_ML_ANY_CLASSES) return EM_ML_MAX_CLASSES;
    if (classes > 2 && classes <= EM_ML_MAX_CLASSES) return classes;
    em__seterr(EM_EINVAL, "%s: classes %d (0 or 2: binary labels; 3 to %d; or EM_ML_ANY_CLASSES)", fn, classes,
               EM_ML_MAX_CLASSES);
    return -1;
}

/* Whether label is a class label below limit (an integer). */
static int class_label_ok(double label, int64_t limit) {
    return label >= 0 && label < (double)limit && label == (double)(int64_t)label;
}

/* The task's argument: this header, nsplits split entries, then the paths
 * (NUL-terminated, at path_off from the start of the blob). */
typedef struct text_arg {
    int32_t format;
    int32_t skip_header;
    int64_t label_col;    /* CSV, resolved: 0 <= label_col < fields */
    int64_t fields;       /* CSV: fields of every row */
    int64_t num_features; /* LIBSVM: 0 = unknown */
    int64_t max_rows;     /* rows per block */
    int64_t max_nnz;      /* LIBSVM: nonzeros per block (a block ends after the row crossing it) */
    int64_t max_line;
    int64_t nsplits;
    int64_t classes;      /* 0: labels 0/1 (LIBSVM: -1 read as 0); else class labels 0..classes-1 */
} text_arg;

typedef struct split_ent {
    uint64_t off, len;
    uint64_t path_off;
    int64_t gz;
} split_ent;

/* ------------------------------------------------------------- errors */

/* Fail with "FILE:LINE: reason" for the line being read: inside a line
 * sink only (it needs em_task_input). */
static int line_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int line_fail(const char *fmt, ...) {
    char why[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    const char *path;
    uint64_t off;
    if (em_task_input(&path, &off)) return em_fail("%s", why);
    int64_t line = em_text_line_number(path, off);
    if (line < 0) return em_fail("%s: line at offset %llu: %s", path, (unsigned long long)off, why);
    return em_fail("%s:%lld: %s", path, (long long)line, why);
}

/* v in the fewest significant digits that read back as v (as written in
 * most files: 17.99, not 17.989999999999998): for messages. */
static const char *fmt_f64(char *buf, size_t len, double v) {
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

/* Length of the token at p (up to a blank or sep), at most 40: for messages. */
static int toklen(const char *p, const char *end, char sep) {
    int n = 0;
    while (p + n < end && n < 40 && !ml_is_space(p[n]) && p[n] != sep) n++;
    return n;
}

/* ----------------------------------------------------------- builder */

/* Rows being gathered into one block.  The values go straight into the
 * block's big array, at ML_BLOCK_ARRAYS in the block's home (ml_block_home:
 * the cache's buffer, or home); LIBSVM's column indexes right after the
 * values' room (cap_nnz values), in the home too, so a load takes no big
 * buffer of its own besides the cache's (an 8 MB index array of its own
 * took a parked 400 MB mapping from bigbuf's cache, and the cache then
 * faulted in fresh memory instead); the labels and LIBSVM's row offsets
 * (and CSV's fields of one line) into small arrays of the builder's,
 * reused for every block of the task. */
typedef struct builder {
    const text_arg *a;
    em_emitter *out;
    int64_t rows, nnz, cols; /* cols: LIBSVM, one past the largest index */
    double *y;
    int64_t *indptr;         /* LIBSVM */
    int32_t *idx;            /* LIBSVM */
    double *val;             /* the block's big array: LIBSVM values; CSV rows x (fields - 1) */
    int64_t cap_nnz;         /* LIBSVM: values val and idx have room for */
    double *row;             /* CSV: the fields of one line */
    int64_t cap_row;
    uint8_t *at;             /* the block's home (NULL: none yet), room bytes */
    size_t room;
    ebuf yb, ipb;            /* the memory of y, indptr */
    ebuf home;               /* blocks not cached are built here */
    int stopped;
} builder;

/* Room for len bytes of block at its home, keeping the first keep. */
static int home_room(builder *b, size_t len, size_t keep) {
    uint8_t *at = ml_block_home(b->out, &b->home, len, keep);
    if (!at) return em__lasterr();
    b->at = at;
    b->room = len;
    b->val = (double *)(at + ML_BLOCK_ARRAYS);
    b->idx = (int32_t *)(at + ML_BLOCK_ARRAYS + sizeof(double) * (size_t)b->cap_nnz);
    return 0;
}

/* Bytes of a LIBSVM block's home while it is parsed: cap values, then
 * their cap indexes. */
static size_t parse_room(int64_t cap) { return ML_BLOCK_ARRAYS + 12 * (size_t)cap; }

/* Start a block: a home for its values. */
static int start_block(builder *b) {
    if (b->a->format == FMT_CSV) {
        size_t n = ml_block_size(ML_DENSE, b->a->max_rows, b->a->fields - 1, 0);
        if (!n) return em_fail("mllib: a block of %lld rows of %lld fields is too large", (long long)b->a->max_rows,
                               (long long)b->a->fields);
        return home_room(b, n, 0);
    }
    int64_t cap = 4096;
    while (cap < b->a->max_nnz + 4096) cap *= 2; /* a block and most of a row */
    b->cap_nnz = cap;
    b->nnz = 0;
    return home_room(b, parse_room(cap), 0);
}

/* Room for need nonzeros, keeping the first keep values and indexes (the
 * indexes move up past the values' new room). */
static int grow_nnz(builder *b, int64_t keep, int64_t need) {
    int64_t old = b->cap_nnz, cap = old;
    while (cap < need) cap *= 2;
    int rc = home_room(b, parse_room(cap), parse_room(old));
    if (rc) return rc;
    uint8_t *from = (uint8_t *)b->idx; /* home_room placed idx for the old cap */
    b->cap_nnz = cap;
    b->idx = (int32_t *)(b->at + ML_BLOCK_ARRAYS + sizeof(double) * (size_t)cap);
    memmove(b->idx, from, sizeof(int32_t) * (size_t)keep);
    return 0;
}

static int grow_row(builder *b, int64_t need) {
    int64_t cap = b->cap_row ? b->cap_row : 256;
    while (cap < need) cap *= 2;
    double *r = realloc(b->row, sizeof *r * (size_t)cap);
    if (!r) return em_fail("mllib: out of memory for a row of %lld fields", (long long)cap);
    b->row = r;
    b->cap_row = cap;
    return 0;
}

/* Lay out the LIBSVM rows gathered as a block, around the values already
 * in place: CSR, or dense when ml_block_dense_better says (the same
 * numbers; rows holding every feature are already where they go, the
 * others are spread out over zeros). */
static int libsvm_block(builder *b, ml_block *k) {
    int64_t cols = b->a->num_features > 0 ? b->a->num_features : b->cols, rows = b->rows, nnz = b->nnz;
    int kind = ml_block_dense_better(rows, cols, nnz) ? ML_DENSE : ML_CSR, rc;
    size_t n = ml_block_size(kind, rows, cols, kind == ML_CSR ? nnz : 0), up = ML_BLOCK_ARRAYS;
    if (!n) return em_fail("mllib: a block of %lld rows of %lld columns is too large", (long long)rows, (long long)cols);
    /* The indexes are read until the arrays are in place: for a dense
     * block wider than the values' room, they first move past x. */
    if (kind == ML_DENSE && rows * cols > b->cap_nnz) up += (sizeof(double) * (size_t)(rows * cols) + 15) & ~(size_t)15;
    size_t need = up > ML_BLOCK_ARRAYS ? up + sizeof(int32_t) * (size_t)nnz : 0;
    if (need < n) need = n;
    if (need > b->room && (rc = home_room(b, need, parse_room(b->cap_nnz)))) return rc;
    if (up > ML_BLOCK_ARRAYS) {
        memmove(b->at + up, b->idx, sizeof(int32_t) * (size_t)nnz);
        b->idx = (int32_t *)(b->at + up);
    }
    if (kind == ML_CSR) {
        /* The indexes move down to just after the values (up16(8 nnz) <=
         * 8 cap_nnz), before the layout zeroes the gaps around them. */
        int32_t *to = (int32_t *)(b->at + ML_BLOCK_ARRAYS + ((sizeof(double) * (size_t)nnz + 15) & ~(size_t)15));
        memmove(to, b->idx, sizeof(int32_t) * (size_t)nnz);
        if ((rc = ml_block_lay(b->at, kind, rows, cols, nnz, k))) return rc;
        memcpy(k->indptr, b->indptr, sizeof(int64_t) * (size_t)(rows + 1));
        return 0;
    }
    if (nnz != rows * cols) {
        /* Spread in place, from the last value back: value j of row i goes
         * to x[i * cols + idx[j]], never below j (row i's values start at
         * indptr[i] <= i * cols, its indexes ascend from 0), so a value is
         * read before anything is written over it. */
        double *x = b->val;
        for (int64_t i = rows; i-- > 0;) {
            int64_t lo = b->indptr[i], at = cols;
            double *xr = x + i * cols;
            for (int64_t j = b->indptr[i + 1]; j-- > lo;) {
                int64_t d = b->idx[j];
                double v = x[j];
                memset(xr + d + 1, 0, sizeof(double) * (size_t)(at - d - 1));
                xr[d] = v;
                at = d;
            }
            memset(xr, 0, sizeof(double) * (size_t)at);
        }
    } /* else every row is full: x is the values as parsed */
    return ml_block_lay(b->at, kind, rows, cols, 0, k); /* the indexes are done with */
}

/* Emit the rows gathered so far as one block. */
static int flush(builder *b) {
    if (!b->rows) return 0;
    ml_block k;
    int rc;
    if (b->a->format == FMT_LIBSVM) {
        if ((rc = libsvm_block(b, &k))) return rc;
    } else if ((rc = ml_block_lay(b->at, ML_DENSE, b->rows, b->a->fields - 1, 0, &k))) {
        return rc;
    }
    memcpy(k.y, b->y, sizeof(double) * (size_t)b->rows);
    rc = ml_block_emit(b->out, &k);
    b->rows = b->nnz = b->cols = 0;
    b->at = NULL; /* the next block's home is after this one */
    if (rc == EM_STOP) b->stopped = 1;
    return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------- LIBSVM */

/* Parse one LIBSVM line into the builder. */
static int libsvm_line(builder *b, const char *p, const char *end) {
    while (p < end && ml_is_space(*p)) p++;
    if (p == end || *p == '#') return 0; /* blank or comment */
    int rc;
    if (!b->at && (rc = start_block(b))) return rc;
    double label;
    const char *q = ml_parse_f64(p, end, &label);
    if (!q || (q < end && !ml_is_space(*q))) return line_fail("bad label '%.*s'", toklen(p, end, 0), p);
    if (b->a->classes ? !class_label_ok(label, b->a->classes) : label != 0 && label != 1 && label != -1) {
        if (b->a->classes)
            return line_fail("label '%.*s' (labels must be integers 0 to %lld)", toklen(p, end, 0), p,
                             (long long)b->a->classes - 1);
        return line_fail("label '%.*s' (labels must be 0 or 1; -1 is read as 0)", toklen(p, end, 0), p);
    }
    p = q;
    int64_t prev = 0, k = b->nnz, nf = b->a->num_features;
    for (;;) {
        while (p < end && ml_is_space(*p)) p++;
        if (p == end || *p == '#') break;
        int64_t idx;
        double v;
        const char *tok = p;
        if ((q = ml_libsvm_pair(p, end, &idx, &v)) && idx > prev && (nf <= 0 || idx <= nf)) {
            p = q; /* the common token; anything else (or any error) goes the general way */
            goto store;
        }
        uint64_t run = 0;
        int nd = np_digit_run(p, end, &run);
        idx = (int64_t)run;
        p += nd;
        if (nd > 9) { /* maybe too large, or leading zeros: digit by digit */
            p = tok;
            idx = 0;
            while (p < end && (unsigned)(unsigned char)*p - '0' <= 9) {
                idx = idx * 10 + (*p++ - '0');
                if (idx > INT32_MAX) return line_fail("index '%.*s' too large", toklen(tok, end, ':'), tok);
            }
        }
        if (p == tok || p == end || *p != ':')
            return line_fail("bad feature '%.*s' (expected index:value)", toklen(tok, end, 0), tok);
        if (idx < 1) return line_fail("index 0 (indices are 1-based)");
        if (idx <= prev)
            return line_fail("index %lld after %lld (indices must be ascending)", (long long)idx, (long long)prev);
        if (nf > 0 && idx > nf) return line_fail("index %lld > num_features %lld", (long long)idx, (long long)nf);
        p++;
        q = ml_parse_f64(p, end, &v);
        if (!q || (q < end && !ml_is_space(*q)))
            return line_fail("bad value '%.*s' for index %lld", toklen(p, end, 0), p, (long long)idx);
        p = q;
    store:
        if (k == b->cap_nnz && grow_nnz(b, k, k + 1)) return EM_EUSER;
        b->idx[k] = (int32_t)(idx - 1);
        b->val[k++] = v;
        prev = idx;
    }
    b->y[b->rows] = label == -1 ? 0 : label;
    b->indptr[++b->rows] = b->nnz = k;
    if (prev > b->cols) b->cols = prev;
    return (b->rows == b->a->max_rows || b->nnz >= b->a->max_nnz) ? flush(b) : 0;
}

/* ---------------------------------------------------------------- CSV */

/* Parse the comma-separated fields of [p, end) into b->row; *nf gets their
 * count, 0 for a blank line. */
static int csv_fields(builder *b, const char *p, const char *end, int64_t *nf) {
    const char *s = p;
    *nf = 0;
    while (s < end && ml_is_space(*s)) s++;
    if (s == end) return 0;
    int64_t n = 0;
    for (;;) {
        while (p < end && ml_is_space(*p)) p++;
        const char *field = p;
        double v;
        const char *q = ml_parse_f64(p, end, &v);
        if (!q) {
            if (p == end || *p == ',') return line_fail("empty field %lld", (long long)n + 1);
            return line_fail("bad number '%.*s' in field %lld", toklen(p, end, ','), p, (long long)n + 1);
        }
        p = q;
        while (p < end && ml_is_space(*p)) p++;
        if (p < end && *p != ',')
            return line_fail("bad number '%.*s' in field %lld", toklen(field, end, ','), field, (long long)n + 1);
        if (n == b->cap_row && grow_row(b, n + 1)) return EM_EUSER;
        b->row[n++] = v;
        if (p == end) break;
        p++; /* the comma */
    }
    *nf = n;
    return 0;
}

static int csv_skip(const text_arg *a) {
    uint64_t off;
    return a->skip_header && em_task_input(NULL, &off) == 0 && off == 0;
}

static int csv_line(builder *b, const char *p, const char *end) {
    const text_arg *a = b->a;
    int64_t nf;
    if (csv_skip(a)) return 0;
    int rc = csv_fields(b, p, end, &nf);
    if (rc || nf == 0) return rc;
    if (nf != a->fields)
        return line_fail("%lld fields, expected %lld as in the first row", (long long)nf, (long long)a->fields);
    int64_t cols = a->fields - 1, lc = a->label_col;
    if (!b->at && (rc = start_block(b))) return rc;
    double *x = b->val + b->rows * cols;
    if (a->classes ? !class_label_ok(b->row[lc], a->classes) : b->row[lc] != 0 && b->row[lc] != 1) {
        char num[32];
        if (a->classes)
            return line_fail("label %s in field %lld (labels must be integers 0 to %lld)",
                             fmt_f64(num, sizeof num, b->row[lc]), (long long)lc + 1, (long long)a->classes - 1);
        return line_fail("label %s in field %lld (labels must be 0 or 1)", fmt_f64(num, sizeof num, b->row[lc]),
                         (long long)lc + 1);
    }
    b->y[b->rows] = b->row[lc];
    memcpy(x, b->row, sizeof(double) * (size_t)lc);
    memcpy(x + lc, b->row + lc + 1, sizeof(double) * (size_t)(cols - lc));
    return ++b->rows == a->max_rows ? flush(b) : 0;
}

/* ------------------------------------------------------------ the task */

static int line_sink(void *ctx, const em_rec *r) {
    builder *b = ctx;
    const char *p = r->val, *end = p + r->vlen;
    int rc = b->a->format == FMT_LIBSVM ? libsvm_line(b, p, end) : csv_line(b, p, end);
    if (rc < 0) return rc;
    return b->stopped ? EM_STOP : 0;
}

/* flat_map over split indexes: the blocks of one split. */
int ml_text_blocks(const em_rec *in, em_emitter *out, const void *arg);
int ml_text_blocks(const em_rec *in, em_emitter *out, const void *arg) {
    const text_arg *a = arg;
    int64_t i = em_i64_dec(in->val);
    if (i < 0 || i >= a->nsplits) return em_fail("mllib: split %lld of %lld", (long long)i, (long long)a->nsplits);
    const split_ent *e = (const split_ent *)(a + 1) + i;
    text_split s = {(char *)arg + e->path_off, e->off, e->len, (int)e->gz};
    builder b;
    memset(&b, 0, sizeof b);
    b.a = a;
    b.out = out;
    int rc = 0;
    if (bb_reserve(&b.yb, sizeof(double) * (size_t)a->max_rows) ||
        bb_reserve(&b.ipb, sizeof(int64_t) * (size_t)(a->max_rows + 1)))
        rc = em_fail("mllib: out of memory");
    if (!rc) {
        b.y = (double *)b.yb.p;
        b.indptr = (int64_t *)b.ipb.p;
        b.indptr[0] = 0;
        rc = text_read_split(&s, (size_t)a->max_line, line_sink, &b, NULL);
    }
    if (!rc && !b.stopped) rc = flush(&b);
    bb_free(&b.home);
    bb_free(&b.yb);
    bb_free(&b.ipb);
    free(b.row);
    return rc;
}

/* Plan the splits of path and pack the task argument (header h, filled in
 * here with the splits).  *arg is malloc'd.  NULL (message set) on failure. */
static int plan(em_ctx *ctx, const char *path, int parts, text_arg *h, uint8_t **arg, size_t *alen,
                text_split **splits) {
    int n = 0;
    /* Typed reads: the settings accept size suffixes ("8mb"). */
    if (parts <= 0) parts = ml_default_parallelism(ctx);
    uint64_t max_split = (uint64_t)conf_size(ctx->conf, "ember.files.maxPartitionBytes");
    int rc = text_plan(path, parts, max_split, splits, &n);
    if (rc) return rc;
    /* run() gives each partition as many consecutive splits; when they do
     * not share out evenly (a 95 MB file in 32 MB splits is 3 splits for 2
     * partitions: one partition would hold twice the other's rows, and
     * every training pass would wait for it), cut the files again into a
     * multiple of the partitions, each split no bigger than before. */
    if (n > parts && n % parts) {
        int64_t want = ((int64_t)n + parts - 1) / parts * parts;
        if (want <= INT32_MAX) {
            text_split *again = NULL;
            int m = 0;
            if (text_plan(path, (int)want, max_split, &again, &m) == 0) {
                text_splits_free(*splits, n);
                *splits = again;
                n = m;
            }
        }
    }
    h->nsplits = n;
    h->max_line = conf_size(ctx->conf, "ember.record.maxBytes");
    size_t len = sizeof *h + sizeof(split_ent) * (size_t)n;
    for (int i = 0; i < n; i++) len += strlen((*splits)[i].path) + 1;
    uint8_t *p = malloc(len);
    if (!p) return em__seterr(EM_ENOMEM, "mllib: out of memory");
    memcpy(p, h, sizeof *h);
    split_ent *e = (split_ent *)(p + sizeof *h);
    size_t at = sizeof *h + sizeof(split_ent) * (size_t)n;
    for (int i = 0; i < n; i++) {
        const text_split *s = &(*splits)[i];
        size_t pl = strlen(s->path) + 1;
        split_ent se = {s->off, s->len, at, s->gz};
        memcpy(&e[i], &se, sizeof se);
        memcpy(p + at, s->path, pl);
        at += pl;
    }
    *arg = p;
    *alen = len;
    return 0;
}

/* The blocks of the planned splits, in parts partitions (<= 0: the
 * default parallelism), each a run of consecutive splits: a file cut
 * finer than that by ember.files.maxPartitionBytes still makes that many
 * partitions.  The cached data set's partition count is what every
 * training iteration pays for (a task and a partial aggregate each), and
 * the reading is as parallel either way. */
static em_ml_data *run(em_ctx *ctx, const uint8_t *arg, size_t alen, int parts, int64_t cols, int sparse,
                       const char *name) {
    text_arg h;
    memcpy(&h, arg, sizeof h);
    if (parts <= 0) parts = ml_default_parallelism(ctx);
    if (parts > h.nsplits) parts = h.nsplits > 0 ? (int)h.nsplits : 1;
    em_rdd *idx = em_range(ctx, 0, h.nsplits, 1, parts);
    em_rdd *blocks = idx ? em_flat_map(idx, ml_text_blocks, arg, alen) : NULL;
    if (blocks) em_set_name(blocks, name);
    return ml_data_wrap(ctx, blocks, cols, sparse);
}

static em_ml_data *ml_read_libsvm_unguarded(em_ctx *ctx, const char *path, const em_ml_load_opts *o) {
    if (!o) o = &default_opts;
    if (!ctx || !path || o->num_features < 0 || o->num_features > INT32_MAX) {
        em__seterr(EM_EINVAL, "em_ml_read_libsvm: bad arguments");
        return NULL;
    }
    text_arg h = {FMT_LIBSVM, 0, 0, 0, o->num_features, ml_block_rows(1, 1, o->block_rows), BLOCK_BYTES / 12, 0, 0, 0};
    if ((h.classes = resolve_classes("em_ml_read_libsvm", o->classes)) < 0) return NULL;
    text_split *splits = NULL;
    uint8_t *arg = NULL;
    size_t alen = 0;
    em_ml_data *d = NULL;
    if (plan(ctx, path, o->partitions, &h, &arg, &alen, &splits) == 0)
        d = run(ctx, arg, alen, o->partitions, o->num_features > 0 ? o->num_features : -1, 1, "libsvm blocks");
    text_splits_free(splits, (int)h.nsplits);
    free(arg);
    return d;
}

em_ml_data *em_ml_read_libsvm(em_ctx *ctx, const char *path, const em_ml_load_opts *o) {
    CTX_GUARDED_PTR(ctx, ml_read_libsvm_unguarded(ctx, path, o));
}

/* The driver's look at the first row: its field count. */
typedef struct probe {
    builder b;
    int64_t fields;
    int found;
} probe;

static int probe_sink(void *ctx, const em_rec *r) {
    probe *p = ctx;
    if (csv_skip(p->b.a)) return 0;
    int rc = csv_fields(&p->b, r->val, (const char *)r->val + r->vlen, &p->fields);
    if (rc) return rc;
    p->found = p->fields > 0;
    return p->found ? EM_STOP : 0;
}

static em_ml_data *ml_read_csv_unguarded(em_ctx *ctx, const char *path, const em_ml_load_opts *o) {
    if (!o) o = &default_opts;
    if (!ctx || !path || o->label_col < -1) {
        em__seterr(EM_EINVAL, "em_ml_read_csv: bad arguments");
        return NULL;
    }
    text_arg h = {FMT_CSV, o->skip_header != 0, o->label_col, 0, 0, 0, 0, 0, 0, 0};
    if ((h.classes = resolve_classes("em_ml_read_csv", o->classes)) < 0) return NULL;
    text_split *splits = NULL;
    uint8_t *arg = NULL;
    size_t alen = 0;
    em_ml_data *d = NULL;
    if (plan(ctx, path, o->partitions, &h, &arg, &alen, &splits)) goto done;
    /* The first row sets the width: read on the driver, split by split,
     * up to it (the splits are in file order). */
    probe pr;
    memset(&pr, 0, sizeof pr);
    pr.b.a = &h;
    int rc = 0;
    for (int64_t i = 0; i < h.nsplits && !pr.found && !rc; i++)
        rc = text_read_split(&splits[i], (size_t)h.max_line, probe_sink, &pr, NULL);
    free(pr.b.row);
    if (rc) goto done;
    int64_t fields = pr.found ? pr.fields : 1, lc = o->label_col < 0 ? fields - 1 : o->label_col;
    if (lc >= fields) {
        em__seterr(EM_EINVAL, "em_ml_read_csv: %s: no label column %lld in rows of %lld fields", path,
                   (long long)lc + 1, (long long)fields);
        goto done;
    }
    h.fields = fields;
    h.label_col = lc;
    h.max_rows = ml_block_rows(fields - 1, 1, o->block_rows);
    memcpy(arg, &h, sizeof h);
    d = run(ctx, arg, alen, o->partitions, fields - 1, 0, "csv blocks");
done:
    text_splits_free(splits, (int)h.nsplits);
    free(arg);
    return d;
}

em_ml_data *em_ml_read_csv(em_ctx *ctx, const char *path, const em_ml_load_opts *o) {
    CTX_GUARDED_PTR(ctx, ml_read_csv_unguarded(ctx, path, o));
}
