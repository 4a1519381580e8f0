/*
 * crc32c.h -- CRC-32C (Castagnoli, the iSCSI / ext4 / Kafka checksum), the
 * checksum of shuffle and spill blocks (blockfile.h).
 *
 * zlib, a dependency, has only the other CRC-32, at about half the speed
 * (over the uncompressed map outputs local[N] keeps in memory, a large
 * part of a reduce_by_key); CRC-32C has an instruction of its own since
 * SSE4.2, which this uses, three streams at once, when the CPU has it (checked once
 * at run time), else a table loop.  Intel's ISA-L has the same function,
 * but Debian ships it only as a shared library and ember links fully
 * static too (make test-link).
 */
#ifndef EM_CRC32C_H
#define EM_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32C of the bytes whose CRC is crc followed by p[0, n): start
 * with 0; crc32c(crc32c(0, a, na), b, nb) is the CRC of a then b.  The
 * standard check value: crc32c(0, "123456789", 9) == 0xe3069283.  Never
 * fails; thread-safe. */
uint32_t crc32c(uint32_t crc, const void *p, size_t n);

/* The same with the table loop whatever the CPU (tests compare the two). */
uint32_t crc32c_sw(uint32_t crc, const void *p, size_t n);

#endif
