/*
 * ctest_compression.h: the test server's content encoders (gzip, deflate,
 * br, zstd) over the system's zlib, brotli and zstd libraries, so that
 * Courier's decoding is tested against bodies real encoders made.
 * Test support only: nothing in the library links it.
 */
#ifndef CTEST_COMPRESSION_H
#define CTEST_COMPRESSION_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Encodes `length` bytes of `input` with `coding`: "gzip" (RFC 1952),
 * "deflate" (the zlib format of RFC 1950, as HTTP's "deflate" means),
 * "br" (RFC 7932) or "zstd" (RFC 8878). Returns a malloc'd buffer the
 * caller frees and sets *encoded_length; NULL for an unknown coding or a
 * failure. */
unsigned char* ctc_encode(const char* coding, const void* input, size_t length,
                          size_t* encoded_length);

/* gzip (at `level`, 1-9) of `block` repeated `repeats` times, without the
 * whole input in memory: a body that decodes to gigabytes from a few
 * megabytes. Returns a malloc'd buffer the caller frees and sets
 * *encoded_length; NULL when out of memory. */
unsigned char* ctc_gzip_repeated(const void* block, size_t block_length,
                                 size_t repeats, int level,
                                 size_t* encoded_length);

#ifdef __cplusplus
}
#endif

#endif /* CTEST_COMPRESSION_H */
