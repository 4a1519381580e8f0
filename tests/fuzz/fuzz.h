/*
 * fuzz.h -- what the fuzz targets share (see docs/testing.md).
 *
 * A target is tests/fuzz/fuzz_NAME.c defining LLVMFuzzerTestOneInput, with
 * its seed corpus in tests/fuzz/corpus/NAME/.  The same object is linked
 * twice: with libFuzzer by `make fuzz` (clang, ASan+UBSan), and with
 * replay.c by `make test`, which runs it over every file of its corpus as
 * an ordinary deterministic test.  A target checks its properties with
 * FZ_CHECK, which aborts: libFuzzer then saves the input as a crash, and the
 * replay fails naming the file.
 *
 * Helpers here are for the targets only; they are not part of ember.
 */
#ifndef EM_FUZZ_H
#define EM_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* The libFuzzer entry point every target defines.  Returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Report a broken property and abort (so that libFuzzer keeps the input). */
void fz_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
#define FZ_CHECK(cond, ...)                                                        \
    do {                                                                           \
        if (!(cond)) fz_fail(__FILE__, __LINE__, __VA_ARGS__);                     \
    } while (0)

/* This process's scratch directory, created on first use and removed (with
 * everything in it) at exit.  Aborts if it cannot be created. */
const char *fz_tmpdir(void);
/* Write p[0, n) to fz_tmpdir()/name, replacing any earlier file of that
 * name; returns the path (static storage, overwritten by the next call).
 * Aborts on I/O errors: they are the machine's, not the input's. */
const char *fz_write_file(const char *name, const void *p, size_t n);

/* The lines of text as the engine documents them (executor/text_reader.h),
 * cut by a deliberately simple splitter: split on '\n'; a line that had a
 * '\n' loses one trailing '\r'; a final line without '\n' is a line as it
 * is; an empty text has no lines.  *out is malloc'd (free it), NULL when
 * there are no lines; returns the count. */
typedef struct fz_line {
    const uint8_t *p;
    size_t len;
} fz_line;
size_t fz_split_lines(const uint8_t *p, size_t n, fz_line **out);

/* A number as parse.h documents it: [+-]digits[.digits][(e|E)[+-]digits]
 * with digits on at least one side of the point, its value taken by
 * strtod on a copy.  Returns the length of the number at p (0 if none is
 * well formed or the value is not finite) and sets *v. */
size_t fz_number(const char *p, const char *end, double *v);

/* Check ml_parse_f64 (mllib/parse.h) against fz_number at every place a
 * number may start in p[0, n): its start, and after every blank, ':', ','
 * and '\n'.  Both must agree on whether a number is there, on where it
 * ends, and on its value, bit for bit. */
void fz_check_numbers(const char *p, size_t n);

/* One record as engine/recfmt.h lays it out, by an independent decoder:
 * varint(klen + 1) key | varint(0), then varint(vlen) value, varints
 * LEB128 of at most 10 bytes (bits past 64 dropped).  Sets *r to views
 * into p (no key: key NULL, klen 0); returns the bytes used, 0 if
 * malformed or truncated. */
struct em_rec;
size_t fz_record(const uint8_t *p, size_t n, struct em_rec *r);
/* The same encoded, for targets that build inputs: appends to *buf
 * (realloc'd; *len and *cap updated).  Aborts when out of memory. */
void fz_record_put(uint8_t **buf, size_t *len, size_t *cap, const struct em_rec *r);

/* A context for targets that need one: local[1], opened on first use with
 * its scratch files under fz_tmpdir(), one attempt per task, no progress
 * bar; replaced by a new one every 1000 calls (a context keeps its RDDs
 * until closed) and closed at exit.  Aborts if it cannot be opened.  The
 * caller frees what it made on the context before its next call. */
struct em_ctx;
struct em_ctx *fz_context(void);

#endif
