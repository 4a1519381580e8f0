/*
 * appbin.h -- the application's binary as it travels to workers: the
 * driver sends its own executable (/proc/self/exe) in chunks after an
 * M_BINARY message carrying its length and the BLAKE2b-256 hash of its
 * contents; a worker keeps it under <dir>/<hex of the binary hash>, the
 * hash that also covers libember (fnref_binary_hash), and checks the
 * contents' hash before it keeps or runs anything.
 *
 * A program linked against libember.so needs that library to start at
 * all (the executor's takeover lives in it), and a worker need not have
 * it: the driver sends it first, after an M_LIBRARY message naming the
 * file the program asks the dynamic loader for (libember.so.0), with its
 * length and contents hash; the worker keeps it as
 * <dir>/<hex of its contents hash>/<that name> and starts the executor
 * with that directory first on LD_LIBRARY_PATH.  A program with libember
 * linked in statically sends its binary alone.
 */
#ifndef EM_APPBIN_H
#define EM_APPBIN_H

#include <stddef.h>
#include <stdint.h>

/* The contents hash and size of a file.  0 or EM_EIO (message naming it). */
int appbin_hash_file(const char *path, uint8_t out[32], uint64_t *size);
/* 64 hex digits and a NUL. */
void appbin_hex(const uint8_t h[32], char out[65]);

/* The shared libember this process runs with: 1, with the file mapped
 * (its real path, from /proc/self/maps) in file (fcap bytes) and the name
 * the program asks the dynamic loader for (the soname, "libember.so.0")
 * in name (ncap bytes); 0 when libember is part of the main program
 * (nothing to send but the binary); EM_EIO when the file cannot be found
 * or no longer is the one mapped (removed or replaced since the program
 * started), with a message saying so.  Nothing is written on 0. */
int appbin_library(char *file, size_t fcap, char *name, size_t ncap);

/* Whether name (len bytes) may name a library file beside the cached
 * binary: 1 to 255 bytes of letters, digits, '.', '_', '+' and '-', not
 * starting with '.' (no path, nothing hidden, no "." or ".."). */
int appbin_libname_ok(const char *name, size_t len);

#endif
