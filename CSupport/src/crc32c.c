/*
 * CRC-32C (Castagnoli), the checksum btrfs keeps of every data block: what
 * courierd computes of a finished download it hands over before the bytes
 * are flushed, to tell after a power cut whether they reached the disk (the
 * threat is a lost write, not an adversary). On SSE4.2's crc32 instruction,
 * eight bytes at a time, three streams at once; elsewhere a byte-wise table.
 * COURIER_SHA_PORTABLE=1 uses the table too.
 *
 * Three streams: the instruction takes three cycles and can start one each
 * cycle, so one chain of it runs at a third of what the unit can do (6 % of
 * courierd's CPU in W4, 200 downloads of 8 MiB). A block of 3 × n bytes is
 * taken as three runs of n, each from its own register (the second and third
 * from zero), then joined: CRC is linear, so the CRC of A then B is the CRC of
 * A moved past |B| zero bytes, xor the CRC of B from zero. Moving a CRC past n
 * zero bytes is a 32 × 32 matrix over GF(2), applied through four tables of
 * 256 entries (one per byte of the CRC), made once for n = 8192 and n = 256.
 * This is the method of Mark Adler's crc32c.c (the zlib licence).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "crc32c.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#include <string.h>
#define CR_CRC32C_SSE42 1

/* CPUID leaf 1, ECX bit 20. */
static int sse42_available(void) {
  static atomic_int known = -1;
  unsigned a, b, c, d;
  int found = 0;
  if (atomic_load(&known) >= 0)
    return atomic_load(&known);
  if (getenv("COURIER_SHA_PORTABLE") == NULL && __get_cpuid(1, &a, &b, &c, &d))
    found = (c >> 20) & 1;
  atomic_store(&known, found);
  return found;
}

#define CR_CRC32C_POLY 0x82f63b78u
#define CR_CRC32C_LONG 8192
#define CR_CRC32C_SHORT 256

/* The CRC register moved past LONG and SHORT zero bytes: the xor of one
 * entry of each table, indexed by the register's bytes. */
static uint32_t zeros_long[4][256];
static uint32_t zeros_short[4][256];
static pthread_once_t zeros_once = PTHREAD_ONCE_INIT;

/* `vector` times the GF(2) matrix whose columns are `matrix`. */
static uint32_t matrix_times(const uint32_t* matrix, uint32_t vector) {
  uint32_t sum = 0;
  while (vector) {
    if (vector & 1)
      sum ^= *matrix;
    vector >>= 1;
    matrix++;
  }
  return sum;
}

static void matrix_square(uint32_t* square, const uint32_t* matrix) {
  int n;
  for (n = 0; n < 32; n++)
    square[n] = matrix_times(matrix, matrix[n]);
}

/* The operator that moves a CRC past `length` zero bytes; `length` is a
 * power of two. */
static void zeros_operator(uint32_t* even, size_t length) {
  uint32_t odd[32], row = 1;
  int n;
  odd[0] = CR_CRC32C_POLY; /* one zero bit */
  for (n = 1; n < 32; n++) {
    odd[n] = row;
    row <<= 1;
  }
  matrix_square(even, odd); /* two zero bits */
  matrix_square(odd, even); /* four */
  /* The first square makes one zero byte, in `even`; each next one doubles. */
  do {
    matrix_square(even, odd);
    length >>= 1;
    if (length == 0)
      return;
    matrix_square(odd, even);
    length >>= 1;
  } while (length);
  memcpy(even, odd, sizeof odd);
}

static void make_zeros_table(uint32_t zeros[4][256], size_t length) {
  uint32_t operator[32];
  uint32_t n;
  zeros_operator(operator, length);
  for (n = 0; n < 256; n++) {
    zeros[0][n] = matrix_times(operator, n);
    zeros[1][n] = matrix_times(operator, n << 8);
    zeros[2][n] = matrix_times(operator, n << 16);
    zeros[3][n] = matrix_times(operator, n << 24);
  }
}

static void make_zeros_tables(void) {
  make_zeros_table(zeros_long, CR_CRC32C_LONG);
  make_zeros_table(zeros_short, CR_CRC32C_SHORT);
}

static uint32_t shift(uint32_t zeros[4][256], uint32_t crc) {
  return zeros[0][crc & 0xff] ^ zeros[1][(crc >> 8) & 0xff] ^
         zeros[2][(crc >> 16) & 0xff] ^ zeros[3][crc >> 24];
}

static inline uint64_t load64(const unsigned char* p) {
  uint64_t word;
  memcpy(&word, p, 8);
  return word;
}

/* `crc` over `count` blocks of three runs of `run` bytes, from `*p`. */
__attribute__((target("sse4.2"))) static uint64_t three_streams(
    uint64_t crc, const unsigned char** p, size_t count, size_t run,
    uint32_t zeros[4][256]) {
  const unsigned char* next = *p;
  while (count-- > 0) {
    uint64_t second = 0, third = 0;
    const unsigned char* end = next + run;
    do {
      crc = _mm_crc32_u64(crc, load64(next));
      second = _mm_crc32_u64(second, load64(next + run));
      third = _mm_crc32_u64(third, load64(next + 2 * run));
      next += 8;
    } while (next < end);
    crc = shift(zeros, (uint32_t)crc) ^ (uint32_t)second;
    crc = shift(zeros, (uint32_t)crc) ^ (uint32_t)third;
    next += 2 * run;
  }
  *p = next;
  return crc;
}

__attribute__((target("sse4.2"))) static uint32_t update_sse42(
    uint32_t crc, const unsigned char* p, size_t length) {
  uint64_t value = crc;
  if (length >= 3 * CR_CRC32C_SHORT) {
    pthread_once(&zeros_once, make_zeros_tables);
    value = three_streams(value, &p, length / (3 * CR_CRC32C_LONG),
                          CR_CRC32C_LONG, zeros_long);
    length %= 3 * CR_CRC32C_LONG;
    value = three_streams(value, &p, length / (3 * CR_CRC32C_SHORT),
                          CR_CRC32C_SHORT, zeros_short);
    length %= 3 * CR_CRC32C_SHORT;
  }
  while (length >= 8) {
    value = _mm_crc32_u64(value, load64(p));
    p += 8;
    length -= 8;
  }
  crc = (uint32_t)value;
  while (length-- > 0)
    crc = _mm_crc32_u8(crc, *p++);
  return crc;
}
#endif

static uint32_t table[256];
static atomic_int table_ready;

static void make_table(void) {
  uint32_t i, bit;
  for (i = 0; i < 256; i++) {
    uint32_t value = i;
    for (bit = 0; bit < 8; bit++)
      value = value & 1 ? (value >> 1) ^ 0x82f63b78u : value >> 1;
    table[i] = value;
  }
  atomic_store(&table_ready, 1);
}

uint32_t cr__crc32c_update(uint32_t crc, const void* data, size_t length) {
  const unsigned char* p = data;
#ifdef CR_CRC32C_SSE42
  if (sse42_available())
    return update_sse42(crc, p, length);
#endif
  if (!atomic_load(&table_ready))
    make_table(); /* idempotent: racing threads write the same values */
  while (length-- > 0)
    crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}
