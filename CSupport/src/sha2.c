/*
 * SHA-256 and SHA-512 as FIPS 180-4 specifies them, and SHA-256 on the x86
 * SHA extensions. Checked against swift-crypto at every padding boundary
 * (Tests/CourierEngineTests/DigestTests.swift, on the path the CPU takes).
 */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "sha2.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define CR_SHA_NI 1
#endif

static const uint32_t k256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static const uint64_t k512[80] = {
    0x428a2f98d728ae22ULL, 0x7137449123ef65cdULL, 0xb5c0fbcfec4d3b2fULL,
    0xe9b5dba58189dbbcULL, 0x3956c25bf348b538ULL, 0x59f111f1b605d019ULL,
    0x923f82a4af194f9bULL, 0xab1c5ed5da6d8118ULL, 0xd807aa98a3030242ULL,
    0x12835b0145706fbeULL, 0x243185be4ee4b28cULL, 0x550c7dc3d5ffb4e2ULL,
    0x72be5d74f27b896fULL, 0x80deb1fe3b1696b1ULL, 0x9bdc06a725c71235ULL,
    0xc19bf174cf692694ULL, 0xe49b69c19ef14ad2ULL, 0xefbe4786384f25e3ULL,
    0x0fc19dc68b8cd5b5ULL, 0x240ca1cc77ac9c65ULL, 0x2de92c6f592b0275ULL,
    0x4a7484aa6ea6e483ULL, 0x5cb0a9dcbd41fbd4ULL, 0x76f988da831153b5ULL,
    0x983e5152ee66dfabULL, 0xa831c66d2db43210ULL, 0xb00327c898fb213fULL,
    0xbf597fc7beef0ee4ULL, 0xc6e00bf33da88fc2ULL, 0xd5a79147930aa725ULL,
    0x06ca6351e003826fULL, 0x142929670a0e6e70ULL, 0x27b70a8546d22ffcULL,
    0x2e1b21385c26c926ULL, 0x4d2c6dfc5ac42aedULL, 0x53380d139d95b3dfULL,
    0x650a73548baf63deULL, 0x766a0abb3c77b2a8ULL, 0x81c2c92e47edaee6ULL,
    0x92722c851482353bULL, 0xa2bfe8a14cf10364ULL, 0xa81a664bbc423001ULL,
    0xc24b8b70d0f89791ULL, 0xc76c51a30654be30ULL, 0xd192e819d6ef5218ULL,
    0xd69906245565a910ULL, 0xf40e35855771202aULL, 0x106aa07032bbd1b8ULL,
    0x19a4c116b8d2d0c8ULL, 0x1e376c085141ab53ULL, 0x2748774cdf8eeb99ULL,
    0x34b0bcb5e19b48a8ULL, 0x391c0cb3c5c95a63ULL, 0x4ed8aa4ae3418acbULL,
    0x5b9cca4f7763e373ULL, 0x682e6ff3d6b2b8a3ULL, 0x748f82ee5defb2fcULL,
    0x78a5636f43172f60ULL, 0x84c87814a1f0ab72ULL, 0x8cc702081a6439ecULL,
    0x90befffa23631e28ULL, 0xa4506cebde82bde9ULL, 0xbef9a3f7b2c67915ULL,
    0xc67178f2e372532bULL, 0xca273eceea26619cULL, 0xd186b8c721c0c207ULL,
    0xeada7dd6cde0eb1eULL, 0xf57d4f7fee6ed178ULL, 0x06f067aa72176fbaULL,
    0x0a637dc5a2c898a6ULL, 0x113f9804bef90daeULL, 0x1b710b35131c471bULL,
    0x28db77f523047d84ULL, 0x32caab7b40c72493ULL, 0x3c9ebe0a15c9bebcULL,
    0x431d67c49c100d4cULL, 0x4cc5d4becb3e42b6ULL, 0x597f299cfc657e2aULL,
    0x5fcb6fab3ad6faecULL, 0x6c44198c4a475817ULL};

static uint32_t ror32(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
static uint64_t ror64(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

static void block256(uint32_t h[8], const unsigned char* p) {
  uint32_t w[64], a, b, c, d, e, f, g, k, t1, t2;
  int i;
  for (i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
           (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
  for (i = 16; i < 64; i++) {
    uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  a = h[0]; b = h[1]; c = h[2]; d = h[3];
  e = h[4]; f = h[5]; g = h[6]; k = h[7];
  for (i = 0; i < 64; i++) {
    t1 = k + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) +
         k256[i] + w[i];
    t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) +
         ((a & b) ^ (a & c) ^ (b & c));
    k = g; g = f; f = e; e = d + t1;
    d = c; c = b; b = a; a = t1 + t2;
  }
  h[0] += a; h[1] += b; h[2] += c; h[3] += d;
  h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

static void block512(uint64_t h[8], const unsigned char* p) {
  uint64_t w[80], a, b, c, d, e, f, g, k, t1, t2;
  int i, j;
  for (i = 0; i < 16; i++) {
    w[i] = 0;
    for (j = 0; j < 8; j++)
      w[i] = w[i] << 8 | p[8 * i + j];
  }
  for (i = 16; i < 80; i++) {
    uint64_t s0 = ror64(w[i - 15], 1) ^ ror64(w[i - 15], 8) ^ (w[i - 15] >> 7);
    uint64_t s1 = ror64(w[i - 2], 19) ^ ror64(w[i - 2], 61) ^ (w[i - 2] >> 6);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  a = h[0]; b = h[1]; c = h[2]; d = h[3];
  e = h[4]; f = h[5]; g = h[6]; k = h[7];
  for (i = 0; i < 80; i++) {
    t1 = k + (ror64(e, 14) ^ ror64(e, 18) ^ ror64(e, 41)) +
         ((e & f) ^ (~e & g)) + k512[i] + w[i];
    t2 = (ror64(a, 28) ^ ror64(a, 34) ^ ror64(a, 39)) +
         ((a & b) ^ (a & c) ^ (b & c));
    k = g; g = f; f = e; e = d + t1;
    d = c; c = b; b = a; a = t1 + t2;
  }
  h[0] += a; h[1] += b; h[2] += c; h[3] += d;
  h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}


#ifdef CR_SHA_NI
/* SHA-256 with the x86 SHA extensions (SHA-NI), `blocks` blocks at once:
 * the structure of Intel's reference code, the schedule written as a loop.
 * Used when CPUID says the processor has them (sha_available()). */
__attribute__((target("sha,sse4.1,ssse3"))) static void
block256_ni(uint32_t h[8], const unsigned char* p, size_t blocks) {
  const __m128i mask =
      _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i tmp = _mm_loadu_si128((const __m128i*)&h[0]);
  __m128i state1 = _mm_loadu_si128((const __m128i*)&h[4]);
  __m128i state0;
  tmp = _mm_shuffle_epi32(tmp, 0xB1);          /* CDAB */
  state1 = _mm_shuffle_epi32(state1, 0x1B);    /* EFGH */
  state0 = _mm_alignr_epi8(tmp, state1, 8);    /* ABEF */
  state1 = _mm_blend_epi16(state1, tmp, 0xF0); /* CDGH */
  while (blocks--) {
    __m128i abef = state0, cdgh = state1, w[4], msg;
    int g;
    for (g = 0; g < 4; g++)
      w[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i*)(p + 16 * g)),
                              mask);
    for (g = 0; g < 16; g++) {
      msg = _mm_add_epi32(w[g % 4],
                          _mm_loadu_si128((const __m128i*)&k256[4 * g]));
      state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
      if (g >= 3 && g <= 14) {
        tmp = _mm_alignr_epi8(w[g % 4], w[(g + 3) % 4], 4);
        w[(g + 1) % 4] = _mm_add_epi32(w[(g + 1) % 4], tmp);
        w[(g + 1) % 4] = _mm_sha256msg2_epu32(w[(g + 1) % 4], w[g % 4]);
      }
      msg = _mm_shuffle_epi32(msg, 0x0E);
      state0 = _mm_sha256rnds2_epu32(state0, state1, msg);
      if (g >= 1 && g <= 12)
        w[(g + 3) % 4] = _mm_sha256msg1_epu32(w[(g + 3) % 4], w[g % 4]);
    }
    state0 = _mm_add_epi32(state0, abef);
    state1 = _mm_add_epi32(state1, cdgh);
    p += 64;
  }
  tmp = _mm_shuffle_epi32(state0, 0x1B);       /* FEBA */
  state1 = _mm_shuffle_epi32(state1, 0xB1);    /* DCHG */
  state0 = _mm_blend_epi16(tmp, state1, 0xF0); /* DCBA */
  state1 = _mm_alignr_epi8(state1, tmp, 8);    /* ABEF */
  _mm_storeu_si128((__m128i*)&h[0], state0);
  _mm_storeu_si128((__m128i*)&h[4], state1);
}

/* CPUID: SHA (leaf 7, EBX bit 29), SSE4.1 and SSSE3 (leaf 1, ECX bits 19, 9).
 * COURIER_SHA_PORTABLE=1 in the environment uses the portable code (tests). */
static int sha_available(void) {
  static atomic_int known = -1;
  unsigned a, b, c, d;
  int found = 0;
  if (atomic_load(&known) >= 0)
    return atomic_load(&known);
  if (getenv("COURIER_SHA_PORTABLE") == NULL &&
      __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 19)) && (c & (1u << 9)) &&
      __get_cpuid_count(7, 0, &a, &b, &c, &d))
    found = (b >> 29) & 1;
  atomic_store(&known, found);
  return found;
}
#endif

static size_t block_size(const cr_sha2_t* context) {
  return context->kind == CR_DIGEST_SHA512 ? 128 : 64;
}

/* `blocks` consecutive blocks. */
static void compress(cr_sha2_t* context, const unsigned char* block,
                     size_t blocks) {
  size_t size = block_size(context);
#ifdef CR_SHA_NI
  if (context->kind != CR_DIGEST_SHA512 && sha_available()) {
    block256_ni(context->state.w32, block, blocks);
    return;
  }
#endif
  for (; blocks > 0; blocks--, block += size) {
    if (context->kind == CR_DIGEST_SHA512)
      block512(context->state.w64, block);
    else
      block256(context->state.w32, block);
  }
}

void cr__sha2_init(cr_sha2_t* context, cr_digest_t kind) {
  static const uint32_t h256[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                   0xa54ff53a, 0x510e527f, 0x9b05688c,
                                   0x1f83d9ab, 0x5be0cd19};
  static const uint64_t h512[8] = {
      0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
      0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
      0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};
  memset(context, 0, sizeof(*context));
  if (kind == CR_DIGEST_CRC32C) {
    context->kind = CR_DIGEST_CRC32C;
    context->state.w32[0] = 0xffffffffu;
    return;
  }
  context->kind = kind == CR_DIGEST_SHA512 ? CR_DIGEST_SHA512 : CR_DIGEST_SHA256;
  if (context->kind == CR_DIGEST_SHA512)
    memcpy(context->state.w64, h512, sizeof(h512));
  else
    memcpy(context->state.w32, h256, sizeof(h256));
}

void cr__sha2_update(cr_sha2_t* context, const void* data, size_t length) {
  const unsigned char* p = data;
  size_t size = block_size(context);
  if (context->kind == CR_DIGEST_CRC32C) {
    context->state.w32[0] = cr__crc32c_update(context->state.w32[0], data, length);
    return;
  }
  uint64_t before = context->length_low;
  context->length_low += length;
  if (context->length_low < before)
    context->length_high++;
  if (context->buffered > 0) {
    size_t take = size - context->buffered;
    if (take > length)
      take = length;
    memcpy(context->buffer + context->buffered, p, take);
    context->buffered += take;
    p += take;
    length -= take;
    if (context->buffered < size)
      return;
    compress(context, context->buffer, 1);
    context->buffered = 0;
  }
  if (length >= size) {
    size_t blocks = length / size;
    compress(context, p, blocks);
    p += blocks * size;
    length -= blocks * size;
  }
  memcpy(context->buffer, p, length);
  context->buffered = length;
}

size_t cr__sha2_final(cr_sha2_t* context, unsigned char out[64]) {
  size_t size = block_size(context);
  if (context->kind == CR_DIGEST_CRC32C) {
    uint32_t crc = ~context->state.w32[0];
    out[0] = (unsigned char)(crc >> 24);
    out[1] = (unsigned char)(crc >> 16);
    out[2] = (unsigned char)(crc >> 8);
    out[3] = (unsigned char)crc;
    return 4;
  }
  size_t length_bytes = size == 128 ? 16 : 8;
  uint64_t bits_low = context->length_low << 3;
  uint64_t bits_high = context->length_high << 3 | context->length_low >> 61;
  size_t i;
  context->buffer[context->buffered++] = 0x80;
  if (context->buffered > size - length_bytes) {
    memset(context->buffer + context->buffered, 0, size - context->buffered);
    compress(context, context->buffer, 1);
    context->buffered = 0;
  }
  memset(context->buffer + context->buffered, 0, size - context->buffered);
  for (i = 0; i < 8; i++) {
    context->buffer[size - 1 - i] = (unsigned char)(bits_low >> (8 * i));
    if (length_bytes == 16)
      context->buffer[size - 9 - i] = (unsigned char)(bits_high >> (8 * i));
  }
  compress(context, context->buffer, 1);
  if (context->kind == CR_DIGEST_SHA512) {
    for (i = 0; i < 64; i++)
      out[i] = (unsigned char)(context->state.w64[i / 8] >> (56 - 8 * (i % 8)));
    return 64;
  }
  for (i = 0; i < 32; i++)
    out[i] = (unsigned char)(context->state.w32[i / 4] >> (24 - 8 * (i % 4)));
  return 32;
}

int cr__sha2_update_from_file(cr_sha2_t* context, int fd, int64_t from,
                              int64_t to) {
  enum { chunk = 256 * 1024 };
  unsigned char* buffer;
  int result = 0;
  if (from >= to)
    return 0;
  buffer = malloc(chunk);
  if (buffer == NULL)
    return ENOMEM;
  while (from < to) {
    size_t want = to - from < chunk ? (size_t)(to - from) : chunk;
    ssize_t n = pread(fd, buffer, want, (off_t)from);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      result = n < 0 ? errno : EIO;
      break;
    }
    cr__sha2_update(context, buffer, (size_t)n);
    from += n;
  }
  free(buffer);
  return result;
}

size_t cr_file_digest(const char* path, int64_t length, cr_digest_t kind,
                      unsigned char out[64]) {
  cr_sha2_t context;
  int fd, result;
  if (kind != CR_DIGEST_SHA256 && kind != CR_DIGEST_SHA512 && kind != CR_DIGEST_CRC32C)
    return 0;
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  cr__sha2_init(&context, kind);
  result = cr__sha2_update_from_file(&context, fd, 0, length);
  close(fd);
  return result == 0 ? cr__sha2_final(&context, out) : 0;
}

size_t cr_bytes_digest(const void* bytes, size_t length, cr_digest_t kind, unsigned char out[64]) {
  cr_sha2_t context;
  if (kind != CR_DIGEST_SHA256 && kind != CR_DIGEST_SHA512 && kind != CR_DIGEST_CRC32C)
    return 0;
  cr__sha2_init(&context, kind);
  cr__sha2_update(&context, bytes, length);
  return cr__sha2_final(&context, out);
}
