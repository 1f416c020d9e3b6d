/*
 * SHA-256 and SHA-512 (FIPS 180-4), for the digest a file-sink transfer
 * computes while its body is written (cr_request_t.digest). No library
 * (libcurl's TLS library is not a build dependency of Courier): portable C,
 * and SHA-256 on x86's SHA extensions where CPUID has them (about 8 times
 * faster; COURIER_SHA_PORTABLE=1 turns them off).
 */
#ifndef COURIER_SHA2_H
#define COURIER_SHA2_H

#include <stddef.h>
#include <stdint.h>

#include "courier_engine.h"

/* One state for each digest a file sink computes: CR_DIGEST_CRC32C keeps its
 * value in state.w32[0] (crc32c.h) and uses nothing else. */
typedef struct {
  cr_digest_t kind;          /* CR_DIGEST_SHA256, _SHA512 or _CRC32C       */
  uint64_t length_low;       /* bytes hashed (SHA-512 counts 128 bits)     */
  uint64_t length_high;
  size_t buffered;
  union {
    uint32_t w32[8];
    uint64_t w64[8];
  } state;
  unsigned char buffer[128];
} cr_sha2_t;

#pragma GCC visibility push(hidden)
void cr__sha2_init(cr_sha2_t* context, cr_digest_t kind);
void cr__sha2_update(cr_sha2_t* context, const void* data, size_t length);
/* Hashes bytes [from, to) of the file fd with pread; 0, or an errno (EIO
 * for a file shorter than `to`). */
int cr__sha2_update_from_file(cr_sha2_t* context, int fd, int64_t from,
                              int64_t to);
/* Writes the digest to out (32, 64, or 4 bytes) and returns its length. */
size_t cr__sha2_final(cr_sha2_t* context, unsigned char out[64]);
#pragma GCC visibility pop

#endif
