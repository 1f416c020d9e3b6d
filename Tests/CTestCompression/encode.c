/*
 * One-shot encoders for the test server's /encoded route (see
 * ctest_compression.h).
 */
#include <stdlib.h>
#include <string.h>

#include <brotli/encode.h>
#include <zlib.h>
#include <zstd.h>

#include "ctest_compression.h"

/* gzip and the zlib format differ only in deflateInit2's window bits. */
static unsigned char* encode_zlib(const void* input, size_t length,
                                  int window_bits, size_t* encoded_length) {
  z_stream stream;
  unsigned char* output;
  uLong bound;

  memset(&stream, 0, sizeof(stream));
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window_bits, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK)
    return NULL;
  bound = deflateBound(&stream, (uLong)length) + 32; /* + the gzip header */
  output = malloc(bound);
  if (output == NULL) {
    deflateEnd(&stream);
    return NULL;
  }
  stream.next_in = (Bytef*)input;
  stream.avail_in = (uInt)length;
  stream.next_out = output;
  stream.avail_out = (uInt)bound;
  if (deflate(&stream, Z_FINISH) != Z_STREAM_END) {
    deflateEnd(&stream);
    free(output);
    return NULL;
  }
  *encoded_length = stream.total_out;
  deflateEnd(&stream);
  return output;
}

static unsigned char* encode_brotli(const void* input, size_t length,
                                    size_t* encoded_length) {
  size_t bound = BrotliEncoderMaxCompressedSize(length);
  unsigned char* output;
  if (bound == 0)
    bound = length + 1024;
  output = malloc(bound);
  if (output == NULL)
    return NULL;
  *encoded_length = bound;
  if (!BrotliEncoderCompress(5, BROTLI_DEFAULT_WINDOW,
                             BROTLI_MODE_GENERIC, length, input,
                             encoded_length, output)) {
    free(output);
    return NULL;
  }
  return output;
}

/* With the content checksum the zstd tool writes by default, so that a
 * corrupt frame is detected (ZSTD_compress() writes none). */
static unsigned char* encode_zstd(const void* input, size_t length,
                                  size_t* encoded_length) {
  size_t bound = ZSTD_compressBound(length);
  unsigned char* output = malloc(bound);
  ZSTD_CCtx* context = ZSTD_createCCtx();
  size_t written = 0;
  if (output == NULL || context == NULL ||
      ZSTD_isError(ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, 3)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1)) ||
      ZSTD_isError(written = ZSTD_compress2(context, output, bound, input, length))) {
    ZSTD_freeCCtx(context);
    free(output);
    return NULL;
  }
  ZSTD_freeCCtx(context);
  *encoded_length = written;
  return output;
}

unsigned char* ctc_encode(const char* coding, const void* input, size_t length,
                          size_t* encoded_length) {
  if (strcmp(coding, "gzip") == 0)
    return encode_zlib(input, length, 15 + 16, encoded_length);
  if (strcmp(coding, "deflate") == 0)
    return encode_zlib(input, length, 15, encoded_length);
  if (strcmp(coding, "br") == 0)
    return encode_brotli(input, length, encoded_length);
  if (strcmp(coding, "zstd") == 0)
    return encode_zstd(input, length, encoded_length);
  return NULL;
}

unsigned char* ctc_gzip_repeated(const void* block, size_t block_length,
                                 size_t repeats, int level,
                                 size_t* encoded_length) {
  z_stream stream;
  size_t capacity = 1 << 20, length = 0;
  unsigned char* output = malloc(capacity);
  size_t done = 0;
  int flush;

  if (output == NULL)
    return NULL;
  memset(&stream, 0, sizeof stream);
  if (deflateInit2(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    free(output);
    return NULL;
  }
  do {
    flush = done + 1 >= repeats ? Z_FINISH : Z_NO_FLUSH;
    stream.next_in = (Bytef*)block;
    stream.avail_in = (uInt)block_length;
    do {
      if (capacity - length < 65536) {
        unsigned char* grown = realloc(output, capacity * 2);
        if (grown == NULL) {
          deflateEnd(&stream);
          free(output);
          return NULL;
        }
        output = grown;
        capacity *= 2;
      }
      stream.next_out = output + length;
      stream.avail_out = (uInt)(capacity - length);
      deflate(&stream, flush);
      length = capacity - stream.avail_out;
    } while (stream.avail_in > 0 || (flush == Z_FINISH && stream.avail_out == 0));
    done++;
  } while (done < repeats);
  deflateEnd(&stream);
  *encoded_length = length;
  return output;
}
