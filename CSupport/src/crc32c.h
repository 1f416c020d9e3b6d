/* CRC-32C (Castagnoli polynomial, reflected), for CR_DIGEST_CRC32C. */
#ifndef COURIER_CRC32C_H
#define COURIER_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)
/* Continues `crc` (start with 0xffffffff; the checksum is the final value
 * inverted) over `length` bytes. */
uint32_t cr__crc32c_update(uint32_t crc, const void* data, size_t length);
#pragma GCC visibility pop

#endif
