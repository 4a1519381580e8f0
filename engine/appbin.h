/*
 * appbin.h -- the application's binary as it travels to workers: the
 * driver sends its own executable (/proc/self/exe) in chunks after an
 * M_BINARY message carrying its length and the BLAKE2b-256 hash of its
 * contents; a worker keeps it under <dir>/<hex of the binary hash>, the
 * hash that also covers libember (fnref_binary_hash), and checks the
 * contents' hash before it keeps or runs anything.
 */
#ifndef EM_APPBIN_H
#define EM_APPBIN_H

#include <stddef.h>
#include <stdint.h>

/* The contents hash and size of a file.  0 or EM_EIO (message naming it). */
int appbin_hash_file(const char *path, uint8_t out[32], uint64_t *size);
/* 64 hex digits and a NUL. */
void appbin_hex(const uint8_t h[32], char out[65]);

#endif
