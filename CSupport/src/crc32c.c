/*
 * CRC-32C (Castagnoli), the checksum btrfs keeps of every data block: what
 * courierd computes of a finished download it hands over before the bytes
 * are flushed, to tell after a power cut whether they reached the disk (the
 * threat is a lost write, not an adversary). On SSE4.2's crc32 instruction,
 * eight bytes at a time (several times faster than SHA-256 on SHA-NI);
 * elsewhere a byte-wise table. COURIER_SHA_PORTABLE=1 uses the table too.
 */
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

__attribute__((target("sse4.2"))) static uint32_t update_sse42(
    uint32_t crc, const unsigned char* p, size_t length) {
  uint64_t value = crc;
  while (length >= 8) {
    uint64_t word;
    memcpy(&word, p, 8);
    value = _mm_crc32_u64(value, word);
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
